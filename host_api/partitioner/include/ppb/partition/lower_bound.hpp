// ppb/partition/lower_bound.hpp — a proven lower bound on the simulated iteration of every plan.
//
// The partitioner's plans with chunks are the exact optima of estimates and then a local search on
// the simulated iteration; neither says how far the plan can be from the best simulated iteration
// any plan within the memory limit reaches. This bound does (host_api/docs/design.md, "A lower
// bound on the simulated iteration"): no plan of the problem that fits memory simulates faster.
#ifndef PPB_PARTITION_LOWER_BOUND_HPP
#define PPB_PARTITION_LOWER_BOUND_HPP

#include <ppb/partition/problem.hpp>

namespace ppb::partition {

// For problems with several chunks per stage (problem.chunked()): a value no plan of `problem`
// (every stage within the memory limit, under its recompute rule) beats in ppb::simulate's
// makespan. `upper`: the simulated makespan of some plan of the problem (bounds the search; the
// result is at most `upper`). Throws ppb::InputError for a problem solve() refuses.
[[nodiscard]] double simulated_lower_bound(const Problem& problem, const MemorySource& memory,
                                           double upper);

// The plan's gap to the bound, as MIP solvers report it: (makespan - bound) / makespan, 0 for a
// makespan of 0.
[[nodiscard]] inline double bound_gap(double makespan, double bound) {
    return makespan > 0.0 ? (makespan - bound) / makespan : 0.0;
}

}  // namespace ppb::partition

#endif  // PPB_PARTITION_LOWER_BOUND_HPP
