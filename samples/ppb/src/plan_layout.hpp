// The layout of a dry run that ran a ppb plan: `ppb import snapshot --plan PLAN` (and `ppb import
// torchtitan --plan PLAN`) place each rank's measurement by the plan's stages, for the runs no
// layout flags describe (torchtitan's module_fqns_per_model_part, ppb's own plans).
#ifndef PPB_PLAN_LAYOUT_HPP
#define PPB_PLAN_LAYOUT_HPP

#include <ppb/importers/layout.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace ppb::cli {

// The plan's stages (ppb::partition::read_plan_stages: its pipeline degree P, schedule, micro-
// batches, each stage's layers per kind, chunk and group) run by `world_size` ranks, P stages of
// world_size / P consecutive ranks (Megatron's and torchtitan's rank order: pipeline parallelism
// outermost); without `world_size`, one rank per stage (noted). Throws InputError naming the plan
// for a stage it places twice or not at all, FlagError for a world size that P does not divide.
[[nodiscard]] importers::PipelineLayout plan_layout(const std::string& path,
                                                    std::optional<std::uint32_t> world_size,
                                                    importers::Messages& messages);

}  // namespace ppb::cli

#endif  // PPB_PLAN_LAYOUT_HPP
