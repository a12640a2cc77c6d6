// ppb/partition/simulate_saved_plan.hpp — a saved plan's iteration simulated.
//
// `ppb simulate PLAN` and Python's ppb.simulate(plan) do the same: read the plan's schedule and
// times (plan_reader.hpp, read_plan_times), replace what the request overrides, run the schedule
// simulator (ppb/simulator.hpp) and answer with the ppb.simulation/1 document. This is their one
// owner; the hosts only read the plan's text, word the fields (request_error.hpp) and show the
// answer (the command as a table or JSON, Python as a dict).
#ifndef PPB_PARTITION_SIMULATE_SAVED_PLAN_HPP
#define PPB_PARTITION_SIMULATE_SAVED_PLAN_HPP

#include <ppb/partition/plan_reader.hpp>
#include <ppb/partition/request_error.hpp>
#include <ppb/simulator.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

// What to simulate instead of the plan's own settings; each unset field keeps the plan's.
struct SimulationRequest {
    std::optional<std::string> schedule = std::nullopt;         // a schedule's name
    std::optional<std::uint32_t> micro_batches = std::nullopt;  // micro-batches per iteration
    // One transfer time for every stage boundary, or one per boundary, in the plan's time unit.
    std::vector<double> comm_time = {};
};

struct SavedPlanSimulation {
    std::string source;  // the plan's name in messages and in the document's "plan"
    PlanTimes plan;
    Simulation simulation;
};

// The iteration of the plan `text` (named `source`). RequestError for a request's field (an
// unknown schedule, micro-batches out of range, a transfer time that is no time or whose count
// the schedule does not take, an override the plan's shape cannot run), in `name`'s words;
// InputError naming the source and the JSON path of what is wrong in the plan.
[[nodiscard]] SavedPlanSimulation simulate_saved_plan(std::string_view text,
                                                      std::string_view source,
                                                      const SimulationRequest& request,
                                                      const FieldName& name);

// The ppb.simulation/1 document: the plan's source, the schedule's shape, the transfers, the
// iteration broken down, the makespan and bubble, per stage its busy and idle time, the peak
// micro-batches in flight per chunk and (null without the plan's memory) its simulated and
// planned peak memory, and every operation's start and end (host_api/docs/formats.md).
[[nodiscard]] boost::json::object simulation_document(const SavedPlanSimulation& simulated);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SIMULATE_SAVED_PLAN_HPP
