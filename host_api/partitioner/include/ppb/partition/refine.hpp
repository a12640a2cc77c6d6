// ppb/partition/refine.hpp — a local search on the simulated iteration, from a plan.
//
// The partitioner's objectives are estimates; the schedule simulator (ppb/simulator.hpp) times
// the schedule's real order. This search starts from a plan (the exact optimum of an estimate)
// and moves to neighbouring plans while the simulated makespan falls: another option of the same
// stage with the same layers (another split between its chunks or mix of kinds), one layer moved
// from one stage to another (each taking one of its options Pareto-optimal in total and slowest
// chunk), or one layer moved from one chunk to another (across a boundary of model order, or
// between two chunks of a stage with three or more), each stage keeping to the memory limit, the
// recompute rule and a layer in every chunk that must hold one. It takes the best
// neighbour each round and stops at a plan no neighbour improves, after `max_moves` moves, or when
// `budget` has passed (a budget makes the result depend on the machine; moves alone do not).
#ifndef PPB_PARTITION_REFINE_HPP
#define PPB_PARTITION_REFINE_HPP

#include <ppb/partition/problem.hpp>

#include <chrono>
#include <cstdint>

namespace ppb::partition {

// For problems with several chunks per stage (problem.chunked()); `start` must be a plan of
// `problem`. The returned plan's iteration_time is the problem's objective for it, as every
// plan's; it simulates no slower than `start`.
[[nodiscard]] Plan refine_by_simulation(
    const Problem& problem, const MemorySource& memory, const Plan& start, std::uint32_t max_moves,
    std::chrono::milliseconds budget = std::chrono::milliseconds::max());

}  // namespace ppb::partition

#endif  // PPB_PARTITION_REFINE_HPP
