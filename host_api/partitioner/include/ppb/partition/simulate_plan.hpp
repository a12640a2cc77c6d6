// ppb/partition/simulate_plan.hpp — a plan as the schedule simulator's input (ppb/simulator.hpp),
// so that the partitioner's objective can be checked against the simulated iteration.
#ifndef PPB_PARTITION_SIMULATE_PLAN_HPP
#define PPB_PARTITION_SIMULATE_PLAN_HPP

#include <ppb/partition/problem.hpp>
#include <ppb/simulator.hpp>

namespace ppb::partition {

// Per (stage, chunk): the chunk's forward and backward time, the recomputation part of the
// backward (sum over its layers of the kind's time beyond a layer without recompute), and its
// activation MB per micro-batch; per stage the memory that does not grow with micro-batches
// (memory_mb minus every chunk's in-flight count times its activation MB). With memory when
// every chunk's activation MB is known (linear models), otherwise without.
[[nodiscard]] SimulationInput simulation_input(const Problem& problem, const Plan& plan);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SIMULATE_PLAN_HPP
