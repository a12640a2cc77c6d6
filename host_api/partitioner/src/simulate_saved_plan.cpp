// A saved plan's iteration simulated, and its document (ppb/partition/simulate_saved_plan.hpp).
#include <ppb/partition/simulate_saved_plan.hpp>

#include <ppb/errors.hpp>
#include <ppb/limits.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <utility>

namespace ppb::partition {
namespace json = boost::json;

SavedPlanSimulation simulate_saved_plan(std::string_view text, std::string_view source,
                                        const SimulationRequest& request, const FieldName& name) {
    PlanOverrides overrides;
    if (request.schedule)
        overrides.schedule = schedule_named(*request.schedule, name);
    if (request.micro_batches) {
        check_count("micro_batches", *request.micro_batches, limits::micro_batches, name);
        overrides.micro_batches = request.micro_batches;
    }
    // Checked by the reader, with the plan's schedule and stages: each a time, as many as it takes.
    overrides.comm_time = request.comm_time;
    PlanTimes plan = read_plan_times(text, source, overrides, name);
    Simulation simulation = simulate(plan.input);
    return {std::string(source), std::move(plan), std::move(simulation)};
}

json::object simulation_document(const SavedPlanSimulation& simulated) {
    const Simulation& sim = simulated.simulation;
    const PlanTimes& plan = simulated.plan;
    json::array stages;
    for (std::uint32_t s = 0; s < sim.num_stages; ++s) {
        const StageSimulation& st = sim.stages[s];
        json::object stage{
            {"stage", s},
            {"busy_time", st.busy_time},
            {"idle_time", st.idle_time},
            {"peak_in_flight", json::array(st.peak_in_flight.begin(), st.peak_in_flight.end())}};
        stage["peak_memory_mb"] = sim.with_memory ? json::value(st.peak_memory_mb) : nullptr;
        // When the peak is first reached, and what each chunk holds then.
        stage["peak_memory_time"] = sim.with_memory ? json::value(st.peak_memory_time) : nullptr;
        stage["in_flight_at_peak"] =
            sim.with_memory
                ? json::value(json::array(st.in_flight_at_peak.begin(), st.in_flight_at_peak.end()))
                : nullptr;
        stage["planned_memory_mb"] =
            sim.with_memory ? json::value(plan.planned_memory_mb[s]) : nullptr;
        stages.push_back(std::move(stage));
    }
    json::array operations;
    operations.reserve(sim.operations.size());
    for (const SimulatedOperation& op : sim.operations) {
        operations.push_back(json::object{{"stage", op.stage},
                                          {"chunk", op.chunk},
                                          {"micro_batch", op.micro_batch},
                                          {"pass", pass_name(op.pass)},
                                          {"start", op.start},
                                          {"end", op.end}});
    }
    json::object doc;
    doc["format"] = "ppb.simulation/1";
    doc["plan"] = simulated.source;
    doc["schedule"] = schedule_name(sim.schedule);
    doc["num_stages"] = sim.num_stages;
    doc["num_chunks"] = sim.num_chunks;
    doc["micro_batches"] = sim.micro_batches;
    doc["time_unit"] = plan.time_unit.empty() ? json::value(nullptr) : json::value(plan.time_unit);
    doc["communication_time"] = json::array(sim.comm_time.begin(), sim.comm_time.end());
    doc["iteration_breakdown"] = iteration_breakdown_object(iteration_breakdown(plan.input, sim));
    doc["makespan"] = sim.makespan;
    doc["bubble_fraction"] = sim.bubble_fraction;
    doc["stages"] = std::move(stages);
    doc["operations"] = std::move(operations);
    return doc;
}

}  // namespace ppb::partition
