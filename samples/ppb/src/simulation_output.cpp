#include "simulation_output.hpp"

#include "breakdown_output.hpp"
#include "text_table.hpp"

#include <ppb/partition/plan_document.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <string>
#include <vector>

namespace ppb::cli {
namespace json = boost::json;

namespace {

std::string counts_text(const std::vector<std::uint32_t>& counts) {
    std::string out;
    for (const auto c : counts)
        out += fmt::format("{}{}", out.empty() ? "" : ", ", c);
    return out;
}

}  // namespace

std::string render_simulation(const Simulation& sim, const SimulationPlan& plan,
                              std::string_view source) {
    const std::string_view unit = plan.time_unit;
    std::string out = fmt::format(
        "{} schedule, {} stages, {} chunk{} per stage, {} micro-batches ({})\n"
        "makespan {}, bubble {:.1f}% of stage time (communication between stages: {}); times "
        "{}\n\n",
        schedule_name(sim.schedule), sim.num_stages, sim.num_chunks, sim.num_chunks == 1 ? "" : "s",
        sim.micro_batches, source, format_time(sim.makespan, unit), 100.0 * sim.bubble_fraction,
        comm_time_text(sim.comm_time, sim.num_stages, unit), time_unit_phrase(unit));
    using A = TextTable::Align;
    std::vector<std::string> header = {"STAGE", "BUSY", "IDLE", "PEAK IN FLIGHT"};
    if (sim.with_memory) {
        header.emplace_back("PEAK MEMORY");
        header.emplace_back("AT");
        header.emplace_back("IN FLIGHT AT PEAK");
        header.emplace_back("PLANNED");
    }
    TextTable table(header, std::vector<A>(header.size(), A::right));
    for (std::uint32_t s = 0; s < sim.num_stages; ++s) {
        const StageSimulation& st = sim.stages[s];
        std::vector<std::string> row = {fmt::format("{}", s), fmt::format("{:.1f}", st.busy_time),
                                        fmt::format("{:.1f}", st.idle_time),
                                        counts_text(st.peak_in_flight)};
        if (sim.with_memory) {
            row.push_back(format_mb(st.peak_memory_mb));
            row.push_back(fmt::format("{:.1f}", st.peak_memory_time));
            row.push_back(counts_text(st.in_flight_at_peak));
            row.push_back(format_mb(plan.planned_memory_mb[s]));
        }
        table.add_row(std::move(row));
    }
    out += table.render(2);
    out += fmt::format(
        "\nPEAK IN FLIGHT: per chunk, the most micro-batches whose activations the stage holds "
        "at once.\n");
    if (sim.with_memory) {
        out +=
            "PEAK MEMORY: the plan's static memory (planned peak less its in-flight activations) "
            "plus the activations held, at the worst moment (AT), when each chunk holds IN FLIGHT "
            "AT "
            "PEAK micro-batches.\n";
    }
    out += render_iteration_breakdown(iteration_breakdown(plan.input, sim), unit);
    return out;
}

json::object simulation_document(const Simulation& sim, const SimulationPlan& plan,
                                 std::string_view source) {
    json::array stages;
    for (std::uint32_t s = 0; s < sim.num_stages; ++s) {
        const StageSimulation& st = sim.stages[s];
        json::array peaks;
        for (const auto c : st.peak_in_flight)
            peaks.push_back(c);
        json::object stage{{"stage", s},
                           {"busy_time", st.busy_time},
                           {"idle_time", st.idle_time},
                           {"peak_in_flight", std::move(peaks)}};
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
    doc["plan"] = source;
    doc["schedule"] = schedule_name(sim.schedule);
    doc["num_stages"] = sim.num_stages;
    doc["num_chunks"] = sim.num_chunks;
    doc["micro_batches"] = sim.micro_batches;
    doc["time_unit"] = plan.time_unit.empty() ? json::value(nullptr) : json::value(plan.time_unit);
    doc["communication_time"] = json::array(sim.comm_time.begin(), sim.comm_time.end());
    doc["iteration_breakdown"] =
        partition::iteration_breakdown_object(iteration_breakdown(plan.input, sim));
    doc["makespan"] = sim.makespan;
    doc["bubble_fraction"] = sim.bubble_fraction;
    doc["stages"] = std::move(stages);
    doc["operations"] = std::move(operations);
    return doc;
}

}  // namespace ppb::cli
