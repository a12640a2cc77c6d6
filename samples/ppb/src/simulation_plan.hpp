// Reading a plan (ppb.partition/1, as `ppb partition --json` writes it) into what the schedule
// simulator needs: the schedule, P, v, M, and per stage and chunk the forward and backward
// times and, when the plan has them, the activation memory and the stage's static memory.
#ifndef PPB_SIMULATION_PLAN_HPP
#define PPB_SIMULATION_PLAN_HPP

#include <ppb/schedule.hpp>
#include <ppb/simulator.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::cli {

struct PlanOverrides {
    std::optional<Schedule> schedule;
    std::optional<std::uint32_t> micro_batches;
    // --comm-time: replaces the plan's "comm_time" (non-empty when given).
    std::vector<double> comm_time;
};

struct SimulationPlan {
    SimulationInput input;
    // The planned peak memory of each stage, when the plan has memory (for comparison).
    std::vector<double> planned_memory_mb;
    // The plan's "time_unit": "ms" for times from a model shape's FLOPs; empty (null or absent,
    // as in plans written before it) for the layer file's own unit.
    std::string time_unit;
};

// The plan's optional "comm_time" (a number for every boundary, or one per boundary, as `ppb
// partition --json` writes it) becomes SimulationInput::comm_time.
// Throws ppb::InputError naming the source and the JSON path of anything missing or wrong, or
// the override that makes the plan one its schedule cannot run.
[[nodiscard]] SimulationPlan read_simulation_plan(std::string_view text, std::string_view source,
                                                  const PlanOverrides& overrides);

}  // namespace ppb::cli

#endif  // PPB_SIMULATION_PLAN_HPP
