#include "partition_output.hpp"

#include "framework_config.hpp"
#include "text_table.hpp"

#include <ppb/kinds.hpp>
#include <ppb/partition/lower_bound.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>

namespace ppb::cli {
namespace json = boost::json;
using partition::Plan;
using partition::Problem;

std::string render_partition(const Problem& problem, const Plan& plan,
                             const PartitionContext& context, const Simulation& simulation,
                             std::optional<double> lower_bound, std::string_view after_simulation) {
    const bool chunked = problem.chunked();
    const std::string schedule =
        chunked ? fmt::format("{}, {} chunk{} per stage", schedule_name(problem.schedule),
                              problem.chunks, problem.chunks == 1 ? "" : "s")
                : std::string("1F1B");
    std::string what = fmt::format("'{}'", problem.time.body_name);
    if (problem.time.grouped()) {
        what.clear();
        for (const auto& g : problem.time.groups)
            what += fmt::format("{}{} '{}'", what.empty() ? "(" : ", ", g.layers, g.name);
        what += ")";
    }
    std::string out =
        fmt::format("{} {} layers over {} stages, {} micro-batches, {}; memory limit {}",
                    problem.time.body_layers, what, problem.num_stages, problem.micro_batches,
                    schedule, format_mb(problem.memory_limit_mb));
    if (context.reserve)
        out += " of reserved memory";
    if (problem.memory_margin_mb > 0.0) {
        out += fmt::format(" with a {} margin", format_mb(problem.memory_margin_mb));
    }
    const bool sigma = problem.memory_margin_sigma > 0.0;
    if (sigma) {
        out += fmt::format("{} {:g} standard errors of each stage's prediction (MARGIN)",
                           problem.memory_margin_mb > 0.0 ? " and" : " with",
                           problem.memory_margin_sigma);
    }
    out += fmt::format("\nmemory model {} {} ({})\n\n", context.model_name, context.model_version,
                       context.source);

    using A = TextTable::Align;
    std::vector<std::string> header = {"STAGE"};
    if (chunked)
        header.emplace_back("CHUNK");  // one row per (stage, chunk)
    for (const char* h :
         {"LAYERS", "NONE", "SELECT", "COMM", "BOTH", "FULL", "IN FLIGHT", "MEMORY"})
        header.emplace_back(h);
    if (sigma)
        header.emplace_back("MARGIN");  // K standard errors, shown only when K > 0
    header.emplace_back("HEADROOM");
    header.emplace_back(context.time_unit.empty() ? std::string("TIME")
                                                  : fmt::format("TIME ({})", context.time_unit));
    const bool grouped = problem.time.grouped();
    if (grouped) {
        header.emplace_back("RANGE");   // the stage's layers in model order
        header.emplace_back("GROUPS");  // its layers per group
    }
    std::vector<A> align(header.size(), A::right);
    if (grouped)
        align.back() = A::left;
    TextTable table(header, align);
    for (const auto& s : plan.stages) {
        for (const auto& c : s.chunks) {
            // With chunks, the stage's memory and headroom on its first chunk's row.
            const bool first = c.chunk == 0;
            std::vector<std::string> row = {first ? fmt::format("{}", s.stage) : std::string()};
            if (chunked)
                row.push_back(fmt::format("{}", c.chunk));
            const auto& layers = chunked ? c.layers : s.layers;
            std::uint32_t total = 0;
            for (const auto n : layers)
                total += n;
            row.push_back(fmt::format("{}", total));
            for (const auto n : layers)
                row.push_back(fmt::format("{}", n));
            row.push_back(fmt::format("{}", chunked ? c.in_flight : s.in_flight));
            row.push_back(first ? format_mb(s.memory_mb) : std::string());
            if (sigma)
                row.push_back(format_mb(s.margin_mb));
            row.push_back(first ? format_mb(problem.budget_mb() - s.memory_mb - s.margin_mb)
                                : std::string());
            row.push_back(fmt::format("{:.1f}", chunked ? c.time() : s.time));
            if (grouped) {
                // With chunks, each chunk's own range and groups.
                const bool own = !c.group_layers.empty();
                const std::uint32_t n = own ? total : s.total_layers();
                const std::uint32_t from = own ? c.first_layer : s.first_layer;
                const auto& of_groups = own ? c.group_layers : s.group_layers;
                row.push_back(n == 0 ? std::string("-") : fmt::format("{}-{}", from, from + n - 1));
                std::string groups;
                for (std::size_t g = 0; g < of_groups.size(); ++g) {
                    std::uint32_t count = 0;
                    for (const auto k : of_groups[g])
                        count += k;
                    if (count != 0) {
                        groups += fmt::format("{}{} {}", groups.empty() ? "" : ", ",
                                              problem.time.groups[g].name, count);
                    }
                }
                row.push_back(groups);
            }
            table.add_row(std::move(row));
        }
    }
    out += table.render(2);
    // The iteration as the schedule runs it first; then what the partitioner minimised, a
    // different number (an estimate that ignores how operations wait for each other).
    const std::string_view unit = context.time_unit;
    out += fmt::format("\nSimulated iteration ({} order): {}, bubble {:.1f}%{}\n",
                       schedule_name(problem.schedule), format_time(simulation.makespan, unit),
                       100.0 * simulation.bubble_fraction,
                       unit.empty() ? "; times in the layer file's unit" : "");
    std::string objective;
    if (chunked && problem.objective == partition::ChunkObjective::stages) {
        objective = fmt::format("{} x the busiest stage + the other stages' slowest chunks",
                                problem.micro_batches);
    } else if (chunked) {
        objective = fmt::format(
            "{} x the slowest chunk + every stage's slowest chunk: {} micro-batches x {} chunks "
            "as slots",
            problem.micro_batches * problem.chunks - 1, problem.micro_batches, problem.chunks);
    } else {
        objective =
            fmt::format("sum of stage times + {} x the slowest stage", problem.micro_batches - 1);
    }
    out += fmt::format(
        "Partitioner objective: {} (the estimate the plan minimises: {}; {} times are forward + "
        "backward per micro-batch)\n",
        format_time(plan.iteration_time, unit), objective, chunked ? "chunk" : "stage");
    if (lower_bound) {
        out += fmt::format(
            "Lower bound: {} (no plan within the memory limit simulates faster); this plan is "
            "within {:.2f}% of it\n",
            format_time(*lower_bound, unit),
            100.0 * partition::bound_gap(simulation.makespan, *lower_bound));
    }
    if (!plan.not_exact_because.empty()) {
        // Planned under one recompute setting when planning every mix was too large (balanced
        // chunks mark that fallback); several groups with more than two chunks say how in their
        // reason.
        out += fmt::format(
            "Not the exact optimum: {}{}, the lower bound above bounding what any other plan "
            "could gain\n",
            plan.not_exact_because,
            plan.balanced_chunks
                ? "; planned under one recompute setting for the whole model with each stage's "
                  "chunks holding as many layers as each other instead (a plan the rule admits)"
                : "");
    }
    out += after_simulation;  // communication and the iteration's breakdown, when asked for

    if (const auto& setting = plan.recompute_setting)
        out += fmt::format("Recompute: {}, the one setting of every chunk\n", describe(*setting));
    // MindFormers' keys and, under the rules made for them, the other frameworks' settings (all
    // of them always in --json).
    out += framework_configs_text(
        framework_configs(partition::framework_settings(problem, plan), "the plan"));
    return out;
}

}  // namespace ppb::cli
