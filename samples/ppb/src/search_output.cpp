#include "search_output.hpp"

#include "framework_config.hpp"
#include "text_table.hpp"

#include <ppb/partition/lower_bound.hpp>
#include <ppb/partition/plan_document.hpp>

#include <boost/json/value.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace ppb::cli {
namespace {

using partition::SearchOutcome;

std::string space_line(const partition::SearchSpace& space, const partition::Problem& base,
                       const partition::SearchContext& context) {
    std::string out;
    if (space.devices)
        out += fmt::format("{} devices, ", *space.devices);
    else
        out += fmt::format("data parallel {}, ", space.data_parallel);
    const auto listed = [](const std::vector<std::uint32_t>& values, std::uint32_t one) {
        if (values.size() <= 1)
            return std::to_string(values.empty() ? one : values.front());
        std::string text;
        for (const std::uint32_t v : values)
            text += (text.empty() ? "" : ",") + std::to_string(v);
        return text;
    };
    out += fmt::format(
        "tensor parallel {}{}, global batch {} (micro-batches of {}), memory limit {}",
        listed(space.tensor_parallel_degrees, space.tensor_parallel),
        space.context_parallel > 1 || space.context_parallel_degrees.size() > 1
            ? fmt::format(", context parallel {}",
                          listed(space.context_parallel_degrees, space.context_parallel))
            : std::string(),
        space.global_batch, listed(space.micro_batch_sizes, space.micro_batch_size),
        format_mb(base.memory_limit_mb));
    if (!space.expert_parallel_degrees.empty())
        out += fmt::format(", expert parallel {}", listed(space.expert_parallel_degrees, 1));
    if (!space.expert_tensor_parallel_degrees.empty()) {
        out += fmt::format(", expert tensor parallel {}",
                           listed(space.expert_tensor_parallel_degrees, 1));
    }
    if (!space.shardings.empty()) {
        std::string names;
        for (const partition::DataParallelSharding s : space.shardings)
            names += fmt::format("{}{}", names.empty() ? "" : ",", partition::sharding_name(s));
        out += fmt::format(", data-parallel sharding {}", names);
    }
    if (base.memory_margin_mb > 0.0)
        out += fmt::format(" with a {} margin", format_mb(base.memory_margin_mb));
    if (base.memory_margin_sigma > 0.0)
        out += fmt::format(" and {:g} standard errors", base.memory_margin_sigma);
    if (!context.communication.empty()) {
        out += "\n" + context.communication;
    } else if (!base.comm_time.empty() && base.comm_time.front() > 0.0) {
        out += fmt::format(", {} per transfer between stages", format_time(base.comm_time.front()));
    }
    return out;
}

}  // namespace

std::string render_search(const partition::SearchSpace& space, const partition::Problem& base,
                          const partition::SearchPlan& plan, const partition::SearchResult& result,
                          const partition::SearchContext& context) {
    std::string out = fmt::format(
        "{} configurations of {} body layers ({}); memory model {} {} ({})\n{}\n\n",
        plan.configurations.size(), base.time.body_layers, context.layers, context.model.model_name,
        context.model.model_version, context.model.source, space_line(space, base, context));

    using A = TextTable::Align;
    std::vector<std::string> headers = {"RANK",     "PP",          "DP",        "M",
                                        "SCHEDULE", "RECOMPUTE",   "ITERATION", "OBJECTIVE",
                                        "BUBBLE",   "PEAK MEMORY", "HEADROOM"};
    std::vector<A> align = {A::right, A::right, A::right, A::right, A::left, A::left,
                            A::right, A::right, A::right, A::right, A::right};
    if (context.throughput) {
        // With a cluster's devices: throughput beside the iteration.
        headers.insert(headers.begin() + 7, {"TOKENS/S/DEVICE", "MFU"});
        align.insert(align.begin() + 7, {A::right, A::right});
    }
    // Several tensor-parallel degrees or micro-batch sizes searched: each line's.
    const bool per_line_tp_b =
        space.tensor_parallel_degrees.size() > 1 || space.micro_batch_sizes.size() > 1;
    if (per_line_tp_b) {
        headers.insert(headers.begin() + 3, {"TP", "MBS"});
        align.insert(align.begin() + 3, {A::right, A::right});
    }
    // Several context-parallel degrees: each line's, after TP.
    const bool per_line_cp = space.context_parallel_degrees.size() > 1;
    if (per_line_cp) {
        headers.insert(headers.begin() + 3 + (per_line_tp_b ? 1 : 0), "CP");
        align.insert(align.begin() + 3 + (per_line_tp_b ? 1 : 0), A::right);
    }
    // Several expert-parallel degrees: each line's, after the other degrees.
    const bool per_line_ep = space.expert_parallel_degrees.size() > 1;
    const std::size_t ep_column = 3 + (per_line_tp_b ? 2 : 0) + (per_line_cp ? 1 : 0);
    if (per_line_ep) {
        headers.insert(headers.begin() + static_cast<std::ptrdiff_t>(ep_column), "EP");
        align.insert(align.begin() + static_cast<std::ptrdiff_t>(ep_column), A::right);
    }
    // Several expert-tensor-parallel degrees: each line's, after EP.
    const bool per_line_etp = space.expert_tensor_parallel_degrees.size() > 1;
    const std::size_t etp_column = ep_column + (per_line_ep ? 1 : 0);
    if (per_line_etp) {
        headers.insert(headers.begin() + static_cast<std::ptrdiff_t>(etp_column), "ETP");
        align.insert(align.begin() + static_cast<std::ptrdiff_t>(etp_column), A::right);
    }
    // Several shardings: each line's, after the degrees.
    const bool per_line_sharding = space.shardings.size() > 1;
    const std::size_t sharding_column = etp_column + (per_line_etp ? 1 : 0);
    if (per_line_sharding) {
        headers.insert(headers.begin() + static_cast<std::ptrdiff_t>(sharding_column), "SHARDING");
        align.insert(align.begin() + static_cast<std::ptrdiff_t>(sharding_column), A::left);
    }
    TextTable table(headers, align);
    const auto ranking = partition::top_ranked(result, context.top);
    std::size_t rank = 0;
    for (const SearchOutcome* o : ranking) {
        const auto& c = o->configuration;
        const auto& p = *o->planned;
        std::vector<std::string> row = {
            std::to_string(++rank),
            std::to_string(c.pipeline),
            std::to_string(c.data_parallel),
            std::to_string(c.micro_batches),
            partition::describe(c.schedule),
            c.recompute.name + (p.plan.not_exact_because.empty() ? "" : "*"),
            format_time(o->iteration_time(), context.time_unit),
            format_time(p.plan.iteration_time, context.time_unit),
            fmt::format("{:.1f} %", 100.0 * p.simulation.bubble_fraction),
            format_mb(o->peak_memory_mb),
            format_mb(o->headroom_mb)};
        if (context.throughput) {
            const partition::ConfigurationThroughput t =
                partition::throughput_of(*o, *context.throughput);
            row.insert(row.begin() + 7,
                       {fmt::format("{:.0f}", t.tokens_per_second_per_device),
                        fmt::format("{:.1f} %", 100.0 * t.model_flops_utilisation)});
        }
        if (per_line_tp_b) {
            row.insert(row.begin() + 3,
                       {std::to_string(c.tensor_parallel), std::to_string(c.micro_batch_size)});
        }
        if (per_line_cp)
            row.insert(row.begin() + 3 + (per_line_tp_b ? 1 : 0),
                       std::to_string(c.context_parallel));
        if (per_line_ep) {
            row.insert(row.begin() + static_cast<std::ptrdiff_t>(ep_column),
                       c.expert_parallel ? std::to_string(*c.expert_parallel) : "");
        }
        if (per_line_etp) {
            row.insert(row.begin() + static_cast<std::ptrdiff_t>(etp_column),
                       c.expert_tensor_parallel ? std::to_string(*c.expert_tensor_parallel) : "");
        }
        if (per_line_sharding) {
            row.insert(row.begin() + static_cast<std::ptrdiff_t>(sharding_column),
                       c.sharding ? std::string(partition::sharding_name(*c.sharding)) : "");
        }
        table.add_row(row);
    }
    out += table.render();
    // Which plans shown are not their exact optimum, and how far they can be from the best plan:
    // those planned under one recompute setting because planning every mix was too large, and
    // those of several groups of layers with more than two chunks, planned through one group that
    // bounds the groups (either may be both).
    std::vector<std::string> too_large;
    std::vector<std::string> through_one_group;
    rank = 0;
    for (const SearchOutcome* o : ranking) {
        ++rank;
        const partition::PlannedPartition& p = *o->planned;
        if (p.plan.not_exact_because.empty())
            continue;
        const std::string item =
            p.lower_bound
                ? fmt::format("{} (within {:.1f} % of a proven bound)", rank,
                              100.0 * partition::bound_gap(p.simulation.makespan, *p.lower_bound))
                : std::to_string(rank);
        if (p.plan.balanced_chunks)
            too_large.push_back(item);
        if (partition::planned_through_one_group(p.problem))
            through_one_group.push_back(item);
    }
    if (!too_large.empty()) {
        out += fmt::format(
            "\n*: too large to plan exactly under the policy (every mix of kinds and split of "
            "layers over the chunks); the exact plan of one recompute setting with as many layers "
            "in each chunk of a stage as in the others, a plan the policy admits. {} {}.\n",
            too_large.size() == 1 ? "Rank" : "Ranks", fmt::join(too_large, ", "));
    }
    if (!through_one_group.empty()) {
        out += fmt::format(
            "{}*: several groups of body layers with more than 2 chunks per stage, a zero-bubble "
            "schedule or one recompute setting per run (Megatron-LM's and torchtitan's rules), "
            "planned through one group that bounds them (each layer at the most memory of a group "
            "its position can hold), then taken per group. {} {}.\n",
            too_large.empty() ? "\n" : "", through_one_group.size() == 1 ? "Rank" : "Ranks",
            fmt::join(through_one_group, ", "));
    }

    const auto [planned, infeasible, invalid] = partition::count_outcomes(result);
    out += fmt::format(
        "\nITERATION: the plan's iteration as its schedule runs it (simulated{}), per global "
        "batch, {}; {}OBJECTIVE: the partitioner objective, the estimate each plan minimises "
        "(not the iteration).\n",
        context.communication.empty() ? "" : ", then the data-parallel synchronisation",
        time_unit_phrase(context.time_unit),
        context.throughput
            ? fmt::format("TOKENS/S/DEVICE: the global batch's tokens per second of it and "
                          "device; MFU: the model's FLOPs (forward and backward, no "
                          "recomputation) over the devices' {:g} TFLOP/s peak; ",
                          context.throughput->peak_tflops)
            : std::string());
    std::string summary = fmt::format("{} planned", planned);
    if (ranking.size() < planned)
        summary += fmt::format(" (the best {} shown; --top 0 shows all)", ranking.size());
    if (infeasible > 0)
        summary += fmt::format(", {} do not fit{}", infeasible,
                               context.with_infeasible ? "" : " (--show-infeasible lists them)");
    if (invalid > 0)
        summary += fmt::format(", {} cannot be planned", invalid);
    if (!plan.skipped.empty())
        summary += fmt::format("; {} combination{} left out{}", plan.skipped.size(),
                               plan.skipped.size() == 1 ? "" : "s",
                               context.with_infeasible ? "" : " (--show-infeasible says why)");
    if (result.stopped) {
        summary += fmt::format("; interrupted: {} of {} configurations planned",
                               result.outcomes.size(), plan.configurations.size());
    }
    out += summary + ".\n";
    if (!ranking.empty()) {
        // The first configuration as each framework takes it, its degrees with its plan.
        const SearchOutcome& first = *ranking.front();
        const boost::json::value settings =
            partition::framework_settings(first.planned->problem, first.planned->plan);
        std::string configs = framework_configs_text(
            framework_configs(JsonNode(settings, "rank 1's plan"),
                              framework_degrees(first.configuration, context.megatron_assumed)));
        if (configs.starts_with('\n'))
            configs.erase(0, 1);
        out += "\nRank 1 as each framework takes it (every rank's in --json):\n" + configs;
    }

    if (context.with_infeasible && infeasible > 0) {
        // The degrees searched several ways, each line's, as in the ranking.
        std::vector<std::string> misfit_headers = {"PP", "DP"};
        std::vector<A> misfit_align = {A::right, A::right};
        const auto degree = [&](bool shown, const char* header, A a) {
            if (shown) {
                misfit_headers.emplace_back(header);
                misfit_align.push_back(a);
            }
        };
        degree(per_line_tp_b, "TP", A::right);
        degree(per_line_cp, "CP", A::right);
        degree(per_line_tp_b, "MBS", A::right);
        degree(per_line_ep, "EP", A::right);
        degree(per_line_etp, "ETP", A::right);
        degree(per_line_sharding, "SHARDING", A::left);
        misfit_headers.insert(misfit_headers.end(),
                              {"M", "SCHEDULE", "RECOMPUTE", "SMALLEST LIMIT THAT FITS"});
        misfit_align.insert(misfit_align.end(), {A::right, A::left, A::left, A::right});
        TextTable misfits(misfit_headers, misfit_align);
        for (const SearchOutcome& o : result.outcomes) {
            if (o.status != SearchOutcome::Status::infeasible)
                continue;
            const auto& c = o.configuration;
            std::vector<std::string> row = {std::to_string(c.pipeline),
                                            std::to_string(c.data_parallel)};
            if (per_line_tp_b)
                row.push_back(std::to_string(c.tensor_parallel));
            if (per_line_cp)
                row.push_back(std::to_string(c.context_parallel));
            if (per_line_tp_b)
                row.push_back(std::to_string(c.micro_batch_size));
            if (per_line_ep)
                row.push_back(c.expert_parallel ? std::to_string(*c.expert_parallel) : "");
            if (per_line_etp) {
                row.push_back(c.expert_tensor_parallel ? std::to_string(*c.expert_tensor_parallel)
                                                       : "");
            }
            if (per_line_sharding)
                row.emplace_back(c.sharding ? partition::sharding_name(*c.sharding) : "");
            row.insert(row.end(), {std::to_string(c.micro_batches), partition::describe(c.schedule),
                                   c.recompute.name,
                                   std::isfinite(o.smallest_feasible_limit_mb)
                                       ? format_mb(o.smallest_feasible_limit_mb)
                                       : std::string("none")});
            misfits.add_row(row);
        }
        out +=
            fmt::format("\nDo not fit {}:\n", format_mb(base.memory_limit_mb)) + misfits.render();
    }
    if (invalid > 0) {
        // One line per reason, in the order first met: a degree the memory model refuses makes
        // every configuration with it fail the same way (the reason names the degrees).
        std::vector<std::pair<std::string, std::vector<std::string>>> reasons;
        for (const SearchOutcome& o : result.outcomes) {
            if (o.status != SearchOutcome::Status::invalid)
                continue;
            auto it =
                std::ranges::find_if(reasons, [&](const auto& r) { return r.first == o.message; });
            if (it == reasons.end())
                it = reasons.insert(reasons.end(), {o.message, {}});
            it->second.push_back(partition::describe(o.configuration));
        }
        constexpr std::size_t named = 3;
        out += "\nCannot be planned:\n";
        for (const auto& [message, which] : reasons) {
            std::string list;
            for (std::size_t i = 0; i < which.size() && i < named; ++i)
                list += (i == 0 ? "" : ", ") + which[i];
            if (which.size() > named)
                list += fmt::format(" and {} more", which.size() - named);
            out += fmt::format("  {}: {}\n", list, message);
        }
    }
    if (context.with_infeasible && !plan.skipped.empty()) {
        out += "\nLeft out:\n";
        for (const auto& s : plan.skipped)
            out += fmt::format("  {}: {}\n", s.configuration, s.reason);
    }
    return out;
}

}  // namespace ppb::cli
