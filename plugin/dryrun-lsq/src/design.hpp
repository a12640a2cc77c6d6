// From what crosses the plugin boundary (checked there, ppb/plugin/placement_checks.hpp) to rows
// of the design matrix: the row of the model equation, and facts about the observed data that the
// explanations of unidentified parameters rely on.
#ifndef PPB_DRYRUN_LSQ_DESIGN_HPP
#define PPB_DRYRUN_LSQ_DESIGN_HPP

#include "parameters.hpp"

#include <ppb/abi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ppb::dryrun_lsq {

// The row x of the model equation M = x . theta for a valid placement:
//   x = (1, [s = 0], [s = p-1], n, sum_c n_c,none f_c, ..., sum_c n_c,full f_c),
// its layers all of group 0 (the plain model's).
[[nodiscard]] ParameterVector design_row(const ppb_placement& placement) noexcept;
// The row of a valid grouped placement: the shared entries as above, then for each group g its
// layers n_g and sum_c n_c,g,k f_c. For one group, the row of placement.placement.
[[nodiscard]] ParameterVector design_row(const ppb_grouped_placement& placement) noexcept;

// What the explanations of unidentified parameters need to know about the data.
struct ObservationSummary {
    std::size_t rows = 0;
    bool all_single_stage = true;  // every observation is of a pipeline with p = 1
    bool any_body_stage = false;   // some observation is of a stage neither first nor last
    // Set when body-stage observations exist and all hold this many layers.
    std::optional<std::uint64_t> common_body_layers;
    // Set when every chunk holding layers, in every observation, has this in-flight count.
    std::optional<std::uint32_t> common_in_flight;
    // Every observation of stage 0 (of the last stage) is of a single-stage pipeline.
    bool head_only_in_single_stage = false;
    bool tail_only_in_single_stage = false;
    std::array<bool, PPB_KIND_COUNT> kind_observed{};
    // The kind occurs, and only in observations of stage 0 (of the last stage).
    std::array<bool, PPB_KIND_COUNT> kind_only_on_head{};
    std::array<bool, PPB_KIND_COUNT> kind_only_on_tail{};
};

// For validated observations.
[[nodiscard]] ObservationSummary summarize(std::span<const ppb_observation> observations);
// The summary of the observations as if they held only the layers of group `group`: what the
// explanations of that group's parameters rely on.
[[nodiscard]] ObservationSummary summarize_group(
    std::span<const ppb_grouped_observation> observations, std::uint32_t group);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_DESIGN_HPP
