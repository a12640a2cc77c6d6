// The simulated iteration broken down for people (ppb::IterationBreakdown): what `ppb simulate`
// prints always and `ppb partition` with --breakdown or --comm-time.
#ifndef PPB_BREAKDOWN_OUTPUT_HPP
#define PPB_BREAKDOWN_OUTPUT_HPP

#include <ppb/simulator.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::cli {

// "Iteration breakdown (...):" and a table of work, ideal, imbalance, communication, recompute
// and the iteration, each with its share, in the layer file's time unit.
[[nodiscard]] std::string render_iteration_breakdown(const IterationBreakdown& breakdown,
                                                     std::string_view unit = {});

// "none", "0.5 on every boundary" or "0.5, 0.2, 0.3 (per boundary 0-1, 1-2, 2-0)"; with a
// unit ("ms": times from a model shape) after the numbers, "0.5 ms on every boundary".
[[nodiscard]] std::string comm_time_text(const std::vector<double>& boundary,
                                         std::uint32_t num_stages, std::string_view unit = {});

// The values of --comm-time, checked: each finite and at least 0 (UsageError naming the option
// otherwise, exit 2).
void check_comm_times(const std::vector<double>& values);

}  // namespace ppb::cli

#endif  // PPB_BREAKDOWN_OUTPUT_HPP
