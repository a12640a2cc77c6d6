// ppb/plugin/placement_checks.hpp — the structural checks of what crosses the plugin boundary.
//
// The C table that PPB_EXPORT_MEMORY_MODEL generates runs these before every call into the
// model (predict, predict_batch, predict_std_error, and fit for each observation), so a model
// only ever sees well-formed placements and observations and keeps only its own checks (a kind
// it cannot predict, more layers than the model has, ...). None allocates unless it throws.
#ifndef PPB_PLUGIN_PLACEMENT_CHECKS_HPP
#define PPB_PLUGIN_PLACEMENT_CHECKS_HPP

#include <ppb/abi.h>

#include <cstddef>
#include <span>
#include <string_view>

namespace ppb::plugin {

// Throws ppb::plugin::InvalidInput, its message "<context>: <problem>", unless num_stages >= 1,
// every count is within its range in ppb/limits.hpp (stages, chunks, in_flight, layers),
// stage < num_stages, num_chunks >= 1, chunks is not null and every chunk has in_flight >= 1.
// `context` names the placement for the reader: "placement", "observation 3".
void check_placement(const ppb_placement& placement, std::string_view context = "placement");

// Every placement as above; messages name the offending one: "placement 2: ...".
void check_placements(std::span<const ppb_placement> placements);

// Every observation's placement as above plus a finite peak_memory_mb > 0; messages name the
// offending one: "observation 3: ...". An empty span passes (whether a fit needs observations is
// the model's to say).
void check_observations(std::span<const ppb_observation> observations);

// A grouped placement (API 1.3): its placement as check_placement(), num_groups within
// limits::groups, group_layers not null, and every chunk's per-group counts summing to the
// chunk's layers of each kind.
void check_grouped_placement(const ppb_grouped_placement& placement,
                             std::string_view context = "placement");
void check_grouped_placements(std::span<const ppb_grouped_placement> placements);

// Grouped observations as check_observations() does plain ones.
void check_grouped_observations(std::span<const ppb_grouped_observation> observations);

}  // namespace ppb::plugin

#endif  // PPB_PLUGIN_PLACEMENT_CHECKS_HPP
