// ppb simulate: time one iteration of a plan's pipeline schedule, and draw it.
#include "breakdown_output.hpp"
#include "commands.hpp"
#include "simulation_output.hpp"

#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/partition/simulate_saved_plan.hpp>
#include <ppb/schedule.hpp>
#include <ppb/timeline_svg.hpp>

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

namespace ppb::cli {
namespace {

struct SimulateArgs {
    std::string plan;
    std::string timeline;
    bool json = false;
    std::string schedule;
    std::optional<std::uint32_t> micro_batches;
    std::vector<double> comm_time;
};

int run_simulate(const SimulateArgs& args) {
    // The checks a flag's user is told to fix with --help: the schedule by CLI11, the times here.
    check_comm_times(args.comm_time);
    partition::SimulationRequest request;
    if (!args.schedule.empty())
        request.schedule = args.schedule;
    request.micro_batches = args.micro_batches;
    request.comm_time = args.comm_time;
    const std::string source = source_name(args.plan);
    const partition::SavedPlanSimulation simulated = partition::simulate_saved_plan(
        read_text_file(args.plan), source, request, partition::flag_name);
    if (!args.timeline.empty())
        write_output_file(args.timeline, timeline_svg(simulated.simulation));
    write_stdout(args.json ? to_pretty_json(partition::simulation_document(simulated))
                           : render_simulation(simulated));
    return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<SimulateArgs>();
    CLI::App* cmd = add_command(
        app, "simulate", "time one iteration of a plan's pipeline schedule, and draw it",
        "Reads a plan (ppb.partition/1: its schedule, num_stages, num_chunks, micro_batches and\n"
        "per stage each chunk's forward_time and backward_time, or the stage's own for one\n"
        "chunk; an optional recompute_time says how much of a backward is recomputation) and\n"
        "runs every forward and backward in the order the schedule gives each stage:\n"
        "an operation starts when its stage is free and its input is ready, a transfer between\n"
        "stages taking the plan's comm_time or --comm-time (default none). Prints the\n"
        "iteration broken down (work, ideal bubble, imbalance, communication, recompute), per "
        "stage the busy and idle time, the peak micro-batches in flight per\n"
        "chunk and, when the plan gives memory_mb and each chunk's activation_mb and in_flight,\n"
        "the peak memory. --timeline writes the iteration as an SVG picture: one row per stage,\n"
        "blocks coloured by chunk (backwards darker, recomputation hatched), memory beneath."
        "\n\n"
        "Exit status: 0 simulated, 2 invalid plan or usage (the message names the JSON path or\n"
        "what the schedule requires), 1 other errors.");
    cmd->add_option("PLAN", args->plan, "the plan (ppb.partition/1); '-' reads stdin")
        ->type_name("PLAN.json")
        ->required();
    cmd->add_option("--timeline", args->timeline, "also write the timeline as SVG to FILE")
        ->type_name("FILE.svg");
    cmd->add_option("--schedule", args->schedule, "simulate this schedule instead of the plan's")
        ->type_name("NAME")
        ->check(schedule_choice());
    cmd->add_option("--micro-batches", args->micro_batches,
                    "simulate M micro-batches instead of the plan's")
        ->type_name("M")
        ->check(count_in(limits::micro_batches));
    as_comma_list(cmd->add_option("--comm-time", args->comm_time,
                                  "point-to-point time of one transfer between neighbouring\n"
                                  "stages (one value for every boundary, or one per boundary),\n"
                                  "instead of the plan's comm_time (default: none)"))
        ->type_name("T,...");
    cmd->add_flag("--json", args->json, "print ppb.simulation/1 JSON instead of a table");
    commands.push_back({cmd, [args] { return run_simulate(*args); }, {}});
}

}  // namespace ppb::cli
