// Internal: the exact optimum under RecomputeRule::megatron (megatron_recompute.cpp).
#ifndef PPB_PARTITION_MEGATRON_SOLVER_HPP
#define PPB_PARTITION_MEGATRON_SOLVER_HPP

#include <ppb/partition/problem.hpp>

namespace ppb::partition::detail {

// The settings RecomputeRule::megatron chooses among for `problem` whose candidate kinds are
// `kinds`, in the order of preference on ties: none, selective, block N for N = 1 .. L - 1
// (not under RecomputeRule::torchtitan) up to the first N no chunk can hold more layers than
// (every larger N builds the same plans), uniform (block N >= L is uniform: no chunk holds more
// than L layers).
[[nodiscard]] std::vector<MegatronRecompute> megatron_settings(const Problem& problem,
                                                               std::uint32_t kinds);

// solve() under RecomputeRule::megatron or torchtitan without a fixed setting: every setting
// planned exactly (Problem::recompute_setting), the fastest plan kept. Throws Infeasible when no
// setting has a plan (the message of the setting that comes closest, its smallest feasible limit).
// A model of several groups of body layers is planned so under 1F1B (grouped_solver.cpp); with
// chunks solve() takes it through one group that bounds it instead (grouped_envelope.hpp).
[[nodiscard]] Plan solve_megatron(const Problem& problem, const MemorySource& memory);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_MEGATRON_SOLVER_HPP
