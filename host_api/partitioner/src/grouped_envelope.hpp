// Internal: a model of several groups of body layers with more than two chunks per stage, or under
// a zero-bubble schedule, planned through one group of layers that bounds it
// (host_api/docs/design.md, "Groups of layers with many chunks, or a zero-bubble schedule"). The
// exact planner of groups with chunks (grouped_chunked.hpp) keeps one cut point per chunk of a
// stage in its state, which grows as L^v, and its estimate leaves out the zero-bubble schedules'
// weight-gradient passes (ppb::partition::planned_through_one_group). Instead, with each
// position's window (the layers it can hold in any plan: every other position holds at least its
// fewest) and the groups in it:
//
//   above  Every layer of chunk c of stage s is taken at the most any group of its position's
//          window needs there for its kind (fixed MB and MB per in-flight micro-batch, each the
//          largest over those groups), of the kinds every group may take, at those groups' mean
//          time (Problem::position_times; weighted by their share of an even cut). The stage's
//          memory of this one-group problem is at least that of any grouped plan with the same
//          counts, since every term of the affine sum is at least as large and the in-flight
//          counts are not negative. So its exact optimum (the one-group chunked planner) is a plan
//          of the grouped problem that fits: its layers are given their groups by model order and
//          their kinds by position (full, both, select, comm, none, as MindFormers applies its
//          counts), and its memory and times are then taken exactly, per group.
//   below  Every layer at the least any group of its position's window needs and takes for its
//          kind (forward and backward each the least), of the kinds any group may take. Every
//          grouped plan that fits is a plan of this problem that fits, and simulates no faster
//          here (each operation of the schedule is no longer); so simulated_lower_bound of this
//          problem bounds every grouped plan's simulated iteration. So does the same problem with
//          each layer at the most time its position can take and a credit per position for what
//          the faster layers of its window could save (PositionTime::offset); with a short prefix
//          before the sequence's last run (dense layers before MoE ones), the least over the
//          cases of where that prefix falls, each credited exactly; and M x the mean stage (each
//          layer at its fastest kind). The bound is the largest, and the plan's gap is stated.
//
// The local search (refine.hpp) moves layers on the problem above, on the best case's own problem
// above (with a short prefix), and around the best plan (each window its range and a layer each
// way), and keeps a result when the grouped plan it gives fits and simulates faster.
#ifndef PPB_PARTITION_GROUPED_ENVELOPE_HPP
#define PPB_PARTITION_GROUPED_ENVELOPE_HPP

#include <ppb/partition/problem.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ppb::partition::detail {

// The plan when planned_through_one_group(problem): the exact optimum of the problem above, its
// groups and memory taken exactly. Plan::not_exact_because says so. Throws Infeasible
// when nothing fits the problem above (with the least limit at which something does, and the
// limit below which nothing can), InputError when no kind is open to every group.
[[nodiscard]] Plan solve_grouped_through_envelope(
    const Problem& problem, const MemorySource& memory,
    const std::vector<std::vector<std::size_t>>& kinds);

// The local search on the simulated iteration from `start` (a plan of `problem` as above): the
// moves of refine_by_simulation on the problem above, kept when the grouped plan simulates
// faster than `start`.
[[nodiscard]] Plan refine_grouped_through_envelope(const Problem& problem,
                                                   const MemorySource& memory, const Plan& start,
                                                   std::uint32_t max_moves);

// A value no grouped plan of `problem` (planned_through_one_group) that fits beats in
// ppb::simulate's makespan: the larger of simulated_lower_bound of the problem below and M x the
// mean stage; `upper` as there.
[[nodiscard]] double grouped_simulated_lower_bound(const Problem& problem,
                                                   const MemorySource& memory, double upper);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_GROUPED_ENVELOPE_HPP
