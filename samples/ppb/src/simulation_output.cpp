#include "simulation_output.hpp"

#include "breakdown_output.hpp"
#include "text_table.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace ppb::cli {
namespace {

std::string counts_text(const std::vector<std::uint32_t>& counts) {
    std::string out;
    for (const auto c : counts)
        out += fmt::format("{}{}", out.empty() ? "" : ", ", c);
    return out;
}

}  // namespace

std::string render_simulation(const partition::SavedPlanSimulation& simulated) {
    const Simulation& sim = simulated.simulation;
    const partition::PlanTimes& plan = simulated.plan;
    const std::string_view source = simulated.source;
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

}  // namespace ppb::cli
