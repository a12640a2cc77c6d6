// A dry run's layout from the plan it ran (plan_layout.hpp).
#include "plan_layout.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/partition/plan_reader.hpp>

#include <fmt/format.h>

#include <vector>

namespace ppb::cli {

namespace imp = ppb::importers;

imp::PipelineLayout plan_layout(const std::string& path, std::optional<std::uint32_t> world_size,
                                imp::Messages& messages) {
    const std::string source = source_name(path);
    const partition::PlanStages plan = partition::read_plan_stages(read_text_file(path), source);
    const std::uint32_t p = plan.num_stages;
    std::vector<const StagePlacement*> by_stage(p, nullptr);
    for (const partition::PlannedStage& planned : plan.stages) {
        const StagePlacement& placement = planned.placement;
        if (by_stage[placement.stage] != nullptr) {
            throw InputError(fmt::format(
                "{}: stage {} appears twice: a plan a dry run ran places each stage once", source,
                placement.stage));
        }
        by_stage[placement.stage] = &placement;
    }
    for (std::uint32_t s = 0; s < p; ++s) {
        if (by_stage[s] == nullptr) {
            throw InputError(
                fmt::format("{}: the plan of {} stages places no stage {}", source, p, s));
        }
    }
    const auto chunks = static_cast<std::uint32_t>(by_stage.front()->chunks.size());

    imp::PipelineLayout layout;
    layout.num_stages = p;
    layout.schedule = plan.schedule;
    layout.micro_batches = plan.micro_batches;
    layout.num_chunks = chunks;
    layout.groups = plan.groups;
    for (std::uint32_t s = 0; s < p; ++s) {
        const StagePlacement& stage = *by_stage[s];
        if (stage.chunks.size() != chunks) {
            throw InputError(
                fmt::format("{}: stage {} holds {} chunks, stage 0 {}: a plan's "
                            "stages hold as many chunks each",
                            source, s, stage.chunks.size(), chunks));
        }
        imp::KindCounts total{};
        std::vector<imp::KindCounts> per_chunk;
        std::vector<std::vector<imp::KindCounts>> per_group;
        for (std::size_t c = 0; c < chunks; ++c) {
            imp::KindCounts counts{};
            for (std::size_t k = 0; k < counts.size(); ++k) {
                counts[k] = stage.chunks[c].layers[k];
                total[k] += counts[k];
            }
            per_chunk.push_back(counts);
            if (!plan.groups.empty()) {
                std::vector<imp::KindCounts> groups(plan.groups.size());
                for (std::size_t g = 0; g < plan.groups.size(); ++g) {
                    for (std::size_t k = 0; k < groups[g].size(); ++k)
                        groups[g][k] = stage.group_layer(c, g, k);
                }
                per_group.push_back(std::move(groups));
            }
        }
        layout.stages.push_back(total);
        if (chunks > 1)
            layout.chunks.push_back(std::move(per_chunk));
        if (!plan.groups.empty())
            layout.group_layers.push_back(std::move(per_group));
    }

    if (world_size) {
        if (*world_size % p != 0) {
            throw imp::FlagError(fmt::format(
                "--world-size {} is not a multiple of the plan's {} stages", *world_size, p));
        }
        layout.ranks_per_stage = *world_size / p;
        layout.ranks_explained =
            fmt::format("world size {} / the plan's {} stages", *world_size, p);
    } else {
        layout.ranks_explained = "no --world-size: one rank per stage";
        imp::add_note(messages,
                      fmt::format("no --world-size: rank s runs stage s of the plan's {} (give "
                                  "--world-size N when the job had more ranks than stages)",
                                  p));
    }
    return layout;
}

}  // namespace ppb::cli
