// Internal: choosing how many layers each stage holds, given each stage's table.
#ifndef PPB_PARTITION_ASSIGNMENT_HPP
#define PPB_PARTITION_ASSIGNMENT_HPP

#include <cstdint>
#include <optional>
#include <vector>

namespace ppb::partition::detail {

// allowed[s]: the layer counts stage s may take, ascending. Whether one count per stage can sum
// to `total` (a reachability table over stages, in time linear in `total` when each stage's
// counts form a few runs of consecutive values).
[[nodiscard]] bool can_sum_to(const std::vector<std::vector<std::uint32_t>>& allowed,
                              std::uint32_t total);

// Some counts, one per stage from `allowed`, summing to `total`, or nullopt; as fast as
// can_sum_to.
[[nodiscard]] std::optional<std::vector<std::uint32_t>> any_assignment(
    const std::vector<std::vector<std::uint32_t>>& allowed, std::uint32_t total);

struct Assignment {
    std::vector<std::uint32_t> layers;  // per stage
    double sum = 0.0;                   // sum of the stages' costs, added in stage order
};

// The counts (one per stage, from `allowed`) summing to `total` whose costs cost[s][n] add up
// to the least, or nullopt. Ties keep the first found.
[[nodiscard]] std::optional<Assignment> min_sum_assignment(
    const std::vector<std::vector<std::uint32_t>>& allowed, std::uint32_t total,
    const std::vector<std::vector<double>>& cost);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_ASSIGNMENT_HPP
