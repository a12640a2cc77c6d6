// ppb/partition/plan_warnings.hpp — what a legal but degenerate request plans, said before anyone
// runs it (host_api/docs/commands.md, "Warnings").
//
// A plan is the exact optimum of what was asked; some requests make even the optimum a poor
// pipeline, and the plan alone does not show it: more stages than body layers leave a device
// with nothing but the embedding or the LM head; fewer micro-batches than stages, or a bubble
// over half the iteration, leave the devices waiting for each other most of the time. Each
// warning says what and why, with the figures; none changes the plan or the exit status.
#ifndef PPB_PARTITION_PLAN_WARNINGS_HPP
#define PPB_PARTITION_PLAN_WARNINGS_HPP

#include <ppb/partition/problem.hpp>
#include <ppb/simulator.hpp>

#include <string>
#include <vector>

namespace ppb::partition {

// The bubble above which a plan is said to be dominated by it: the devices idle more than they
// work.
inline constexpr double dominant_bubble = 0.5;

// The warnings for `plan` of `problem`, simulated as `simulation` (each one sentence, without the
// "ppb: warning: " prefix): stages holding no body layer, and a bubble that dominates the
// iteration (fewer micro-batches than stages, or a simulated bubble above dominant_bubble).
[[nodiscard]] std::vector<std::string> plan_warnings(const Problem& problem, const Plan& plan,
                                                     const Simulation& simulation);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_PLAN_WARNINGS_HPP
