// Internal: the plan of a model of several groups of body layers (grouped_solver.cpp).
#ifndef PPB_PARTITION_GROUPED_SOLVER_HPP
#define PPB_PARTITION_GROUPED_SOLVER_HPP

#include <ppb/partition/problem.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ppb::partition::detail {

// The optimal plan when problem.time.grouped(): each stage a contiguous range of the layer
// sequence, its kinds chosen per layer (RecomputeRule::any), by MindFormers' positional counts, or
// given by Problem::recompute_setting (one setting for the whole model, under 1F1B: what
// solve_megatron asks for each setting), memory from MemorySource::group_linear. `kinds`: the
// candidate kinds before each group's own (those whose activation coefficient the group has).
[[nodiscard]] Plan solve_grouped(const Problem& problem, const MemorySource& memory,
                                 std::uint32_t kinds);

// The optimal plan when problem.time.grouped() and problem.chunked(), with two chunks per stage
// (grouped_chunked_solver.cpp): each (stage, chunk) a contiguous range of the layer sequence in
// the schedule's position order. `kinds[g]`: the kinds group g may take.
[[nodiscard]] Plan solve_grouped_chunked(const Problem& problem, const MemorySource& memory,
                                         const std::vector<std::vector<std::size_t>>& kinds);

// The kinds each group of the time model may take: allowed by the problem and predictable by the
// model (a group's activation coefficient, when the model gives coefficients).
[[nodiscard]] std::vector<std::vector<std::size_t>> group_kinds(const Problem& problem,
                                                                const MemorySource& memory);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_GROUPED_SOLVER_HPP
