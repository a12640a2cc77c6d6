// ppb/partition/simulate_plan.hpp — a plan as the schedule simulator's input (ppb/simulator.hpp),
// so that the partitioner's objective can be checked against the simulated iteration.
#ifndef PPB_PARTITION_SIMULATE_PLAN_HPP
#define PPB_PARTITION_SIMULATE_PLAN_HPP

#include <ppb/partition/problem.hpp>
#include <ppb/simulator.hpp>

#include <cstdint>
#include <span>

namespace ppb::partition {

// Per (stage, chunk): the chunk's forward and backward time, the recomputation part of the
// backward (sum over its layers of the kind's time beyond a layer without recompute), and its
// activation MB per micro-batch; per stage the memory that does not grow with micro-batches
// (memory_mb minus every chunk's in-flight count times its activation MB). With memory when
// every chunk's activation MB is known (linear models), otherwise without.
// The problem's communication times (Problem::comm_time) go with it.
[[nodiscard]] SimulationInput simulation_input(const Problem& problem, const Plan& plan);

// Which of the model's ends (the HEAD entries, the TAIL entries) chunk `chunk` of stage `stage`
// holds: the first and the last position of the schedule's model order.
struct ChunkEnds {
    bool head = false;
    bool tail = false;
};
[[nodiscard]] ChunkEnds chunk_ends(const Problem& problem, std::uint32_t stage,
                                   std::uint32_t chunk);

// One chunk's costs as simulation_input gives them, activation MB aside: its forward and backward
// times, the recomputation part (its layers' kinds' time beyond 'none', per group), and the
// weight-gradient pass W read by the zero-bubble schedules: per layer the layer file's
// weight_grad_time where given, else the problem's weight_grad_share of the layer's backward
// without recomputation, and the same for the ends the chunk holds (TimeModel's weight-gradient
// members). `group_layers` holds the chunk's counts per group of the time model, one entry for a
// model of one group. The partitioner's local search times its candidates with the same costs.
[[nodiscard]] ChunkCost chunk_cost(const Problem& problem, std::span<const KindCounts> group_layers,
                                   ChunkEnds ends, double forward_time, double backward_time);

// What communication adds to the iteration estimate: the makespan of the plan's pipeline with
// every (stage, chunk) at the plan's mean forward and backward, with the problem's communication
// times less without them (communication_of_balanced). 0 without communication. Exact for evenly
// loaded stages: 1F1B's 2c(P − 1 + ⌊(P − 1)(M − 1)/P⌋) with c on every boundary.
[[nodiscard]] double communication_estimate(const Problem& problem, const Plan& plan);

// The plan's iteration broken down (ppb::iteration_breakdown of its simulation).
[[nodiscard]] IterationBreakdown plan_iteration_breakdown(const Problem& problem, const Plan& plan,
                                                          const Simulation& simulation);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SIMULATE_PLAN_HPP
