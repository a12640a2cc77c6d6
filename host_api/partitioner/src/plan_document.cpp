#include <ppb/partition/plan_document.hpp>
#include <ppb/reserve_fit.hpp>

#include <ppb/kinds.hpp>
#include <ppb/partition/framework_args.hpp>
#include <ppb/partition/lower_bound.hpp>
#include <ppb/partition/simulate_plan.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace ppb::partition {
namespace json = boost::json;

std::string_view rule_name(RecomputeRule rule) noexcept {
    switch (rule) {
        case RecomputeRule::any:
            return "any";
        case RecomputeRule::mindformers:
            return "mindformers";
        case RecomputeRule::megatron:
            return "megatron";
        case RecomputeRule::torchtitan:
            return "torchtitan";
    }
    return "any";
}

std::optional<RecomputeRule> rule_from_name(std::string_view name) noexcept {
    for (const RecomputeRule rule : {RecomputeRule::any, RecomputeRule::mindformers,
                                     RecomputeRule::megatron, RecomputeRule::torchtitan}) {
        if (rule_name(rule) == name)
            return rule;
    }
    return std::nullopt;
}

std::optional<json::object> mindformers_arrays(const Problem& problem, const Plan& plan) {
    // MindFormers gives chunk c of stage s floor(L / (P v)) + offset[c][s] layers, and applies
    // each recompute count to the first layers of that (chunk, stage).
    const std::int64_t base = problem.time.body_layers / (problem.num_stages * problem.chunks);
    const auto rows = [&] { return json::array(problem.chunks, json::value(json::array())); };
    json::array offset = rows(), recompute = rows(), select = rows(), comm = rows();
    for (const auto& s : plan.stages) {
        for (const auto& chunk : s.chunks) {
            const auto counts = mindformers_counts(chunk.layers);
            if (!counts)
                return std::nullopt;
            // With several groups MindFormers applies the counts by position in the (chunk,
            // stage), whatever each layer's group: they describe the plan only if that rebuilds
            // it. With one chunk the stage's range is the chunk's.
            const bool own = !chunk.group_layers.empty();
            if (!s.group_layers.empty()) {
                const std::uint32_t first = own ? chunk.first_layer : s.first_layer;
                const std::uint32_t n =
                    std::accumulate(chunk.layers.begin(), chunk.layers.end(), 0u);
                if (positional_group_layers(problem, first, n, *counts) !=
                    (own ? chunk.group_layers : s.group_layers))
                    return std::nullopt;
            }
            std::int64_t layers = 0;
            for (const auto n : chunk.layers)
                layers += n;
            offset[chunk.chunk].as_array().push_back(layers - base);
            recompute[chunk.chunk].as_array().push_back(counts->recompute);
            select[chunk.chunk].as_array().push_back(counts->select_recompute);
            comm[chunk.chunk].as_array().push_back(counts->select_comm_recompute);
        }
    }
    return json::object{{"offset", std::move(offset)},
                        {"recompute", std::move(recompute)},
                        {"select_recompute", std::move(select)},
                        {"select_comm_recompute", std::move(comm)}};
}

std::string mindformers_why_not(const Problem& problem, const Plan& plan) {
    if (problem.time.grouped() && problem.rule == RecomputeRule::any) {
        return "MindFormers applies its recompute counts to the first layers of a stage whatever "
               "their group, which does not rebuild this plan's kinds per group; plan under "
               "the recompute rule 'mindformers' for a plan it can";
    }
    std::string stages;
    for (const auto& s : plan.stages) {
        const bool mixed = std::any_of(s.chunks.begin(), s.chunks.end(), [](const auto& c) {
            return !expressible(c.layers, RecomputeRule::mindformers);
        });
        if (mixed)
            stages += fmt::format("{}{}", stages.empty() ? "" : ", ", s.stage);
    }
    const bool one = stages.find(',') == std::string::npos;
    return fmt::format(
        "stage{} {} mix{} 'select' and 'comm' layers, which MindFormers' recompute counts cannot "
        "build; plan under the recompute rule 'mindformers' for a plan it can",
        one ? "" : "s", stages, one ? "es" : "");
}

namespace {

json::value strings(const std::vector<std::string>& list) {
    json::array out;
    for (const auto& s : list)
        out.emplace_back(s);
    return out;
}

// A framework's flags: "args" (null when it cannot run the plan) and "why_not" then.
void put_flags(json::object& into, std::string_view args_key, std::string_view why_key,
               const FrameworkFlags& flags) {
    if (flags.expressible()) {
        into[args_key] = strings(flags.args);
    } else {
        into[args_key] = nullptr;
        into[why_key] = flags.why_not;
    }
}

// "megatron", "mindspeed_llm" and "torchtitan": framework_args.hpp's writers.
void add_framework_settings(json::object& doc, const Problem& problem, const Plan& plan) {
    doc["recompute_rule"] = rule_name(problem.rule);
    if (auto arrays = mindformers_arrays(problem, plan)) {
        doc["mindformers"] = std::move(*arrays);
    } else {
        doc["mindformers"] = nullptr;
        doc["mindformers_why_not"] = mindformers_why_not(problem, plan);
    }
    const MegatronArgs megatron = megatron_args(problem, plan);
    json::object m;
    put_flags(m, "args", "why_not", megatron.args);
    put_flags(m, "legacy_args", "legacy_why_not", megatron.legacy_args);
    m["layout"] = megatron.layout ? json::value(*megatron.layout) : json::value(nullptr);
    if (const auto setting = megatron_recompute_of(plan))
        m["recompute"] = describe(*setting);
    else
        m["recompute"] = nullptr;
    doc["megatron"] = std::move(m);

    json::object mindspeed;
    put_flags(mindspeed, "args", "why_not", mindspeed_args(problem, plan));
    doc["mindspeed_llm"] = std::move(mindspeed);

    const TorchtitanPlan titan = torchtitan_plan(problem, plan);
    json::object t;
    if (titan.parts_why_not.empty()) {
        json::array parts;
        for (const auto& part : titan.module_fqns_per_model_part)
            parts.push_back(strings(part));
        t["module_fqns_per_model_part"] = std::move(parts);
        t["pipeline_parallel_schedule"] = titan.schedule;
        t["pipeline_parallel_degree"] = problem.num_stages;
    } else {
        t["module_fqns_per_model_part"] = nullptr;
        t["why_not"] = titan.parts_why_not;
    }
    if (titan.ac_why_not.empty()) {
        json::object ac{{"mode", titan.ac_mode}};
        if (!titan.ac_option.empty())
            ac["selective_ac_option"] = titan.ac_option;
        t["activation_checkpoint"] = std::move(ac);
    } else {
        t["activation_checkpoint"] = nullptr;
        t["activation_checkpoint_why_not"] = titan.ac_why_not;
    }
    doc["torchtitan"] = std::move(t);
}

}  // namespace

json::object framework_settings(const Problem& problem, const Plan& plan) {
    json::object settings;
    add_framework_settings(settings, problem, plan);
    return settings;
}

json::object breakdown_object(const MemoryBreakdown& b) {
    json::object out;
    if (!b.parts.empty()) {
        json::array parts;
        for (const MemoryPart& part : b.parts)
            parts.push_back(
                json::object{{"name", part.name}, {"label", part.label}, {"mb", part.mb}});
        out["parts"] = std::move(parts);
        return out;
    }
    if (b.itemised) {
        out["constant"] = b.constant_mb;
        out["head"] = b.head_mb;
        out["tail"] = b.tail_mb;
        out["parameters"] = b.parameters_mb;
        json::object activations;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            activations[kind_names[k]] = b.activation_mb[k];
        out["activations"] = std::move(activations);
    }
    if (b.activations_total_mb)
        out["activations_total"] = *b.activations_total_mb;
    if (!b.itemised)
        out["other"] = b.other_mb;
    if (b.reserve_mb)
        out[allocator_reserve_part] = *b.reserve_mb;
    return out;
}

json::object iteration_breakdown_object(const IterationBreakdown& b) {
    return json::object{{"iteration", b.iteration},
                        {"work", b.work},
                        {"ideal", b.ideal},
                        {"imbalance", b.imbalance},
                        {"communication", b.communication},
                        {"recompute", b.recompute}};
}

json::object partition_document(const Problem& problem, const Plan& plan,
                                const PartitionContext& context, const Simulation& simulation,
                                std::span<const MemoryBreakdown> breakdown,
                                std::optional<double> lower_bound) {
    const auto kinds_object = [](const KindCounts& counts) {
        json::object layers;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            layers[kind_names[k]] = counts[k];
        return layers;
    };
    // Each chunk's recomputation time, as the simulator takes it (part of backward_time).
    const SimulationInput timed = simulation_input(problem, plan);
    json::array stages;
    for (const auto& s : plan.stages) {
        json::array chunks;
        for (const auto& c : s.chunks) {
            json::object chunk{{"chunk", c.chunk},
                               {"layers", kinds_object(c.layers)},
                               {"in_flight", c.in_flight},
                               {"forward_time", c.forward_time},
                               {"backward_time", c.backward_time}};
            if (s.stage < timed.costs.size() && c.chunk < timed.costs[s.stage].size()) {
                const ChunkCost& cost = timed.costs[s.stage][c.chunk];
                chunk["recompute_time"] = cost.recompute_time;
                if (splits_backward(problem.schedule))
                    chunk["weight_time"] = cost.weight_time;  // W's part of backward_time
            }
            if (plan.activations_known)
                chunk["activation_mb"] = c.activation_mb;
            if (!c.group_layers.empty()) {
                // With several groups and chunks: the chunk's range of the layer sequence (empty
                // when it holds none: last_layer is then first_layer - 1) and its groups.
                const std::uint32_t n = std::accumulate(c.layers.begin(), c.layers.end(), 0u);
                chunk["first_layer"] = c.first_layer;
                chunk["last_layer"] = static_cast<std::int64_t>(c.first_layer) + n - 1;
                json::object groups;
                for (std::size_t g = 0; g < c.group_layers.size(); ++g)
                    groups[problem.time.groups[g].name] = kinds_object(c.group_layers[g]);
                chunk["groups"] = std::move(groups);
            }
            chunks.push_back(std::move(chunk));
        }
        json::object stage{{"stage", s.stage},
                           {"layers", kinds_object(s.layers)},
                           {"in_flight", s.in_flight},
                           {"memory_mb", s.memory_mb},
                           {"uncertainty_margin_mb", s.margin_mb},
                           {"headroom_mb", problem.budget_mb() - s.memory_mb - s.margin_mb},
                           {"time", s.time},
                           {"chunks", std::move(chunks)}};
        if (s.stage < breakdown.size()) {
            stage["memory_breakdown_mb"] = breakdown_object(breakdown[s.stage]);
            // On reserved memory, the stage's allocated memory beside it.
            if (const auto allocated = allocated_memory_mb(s.memory_mb, breakdown[s.stage]))
                stage["allocated_mb"] = *allocated;
        }
        if (!s.group_layers.empty()) {
            // The stage's range of the layer sequence (with chunks, each chunk's) and its layers
            // per group.
            if (s.chunks.size() == 1) {
                stage["first_layer"] = s.first_layer;
                stage["last_layer"] = s.first_layer + s.total_layers() - 1;
            }
            json::object groups;
            for (std::size_t g = 0; g < s.group_layers.size(); ++g)
                groups[problem.time.groups[g].name] = kinds_object(s.group_layers[g]);
            stage["groups"] = std::move(groups);
        }
        stages.push_back(std::move(stage));
    }
    json::object doc;
    doc["format"] = "ppb.partition/1";
    doc["model"] = json::object{{"name", context.model_name}, {"version", context.model_version}};
    doc["schedule"] = schedule_name(problem.schedule);
    doc["num_stages"] = problem.num_stages;
    doc["num_chunks"] = problem.chunks;
    doc["micro_batches"] = problem.micro_batches;
    doc["num_layers"] = problem.time.body_layers;
    if (problem.time.grouped()) {
        json::array groups;
        for (const auto& g : problem.time.groups)
            groups.push_back(json::object{{"name", g.name}, {"layers", g.layers}});
        doc["groups"] = std::move(groups);
    }
    doc["memory_limit_mb"] = problem.memory_limit_mb;
    doc["memory"] = context.reserve ? "reserved" : "allocated";
    if (context.reserve)
        doc["allocator_reserve"] = reserve_document(*context.reserve);
    doc["memory_margin_mb"] = problem.memory_margin_mb;
    doc["recompute_rule"] = rule_name(problem.rule);
    doc["memory_margin_sigma"] = problem.memory_margin_sigma;
    doc["objective"] =
        problem.objective == ChunkObjective::slots && problem.chunked() ? "slots" : "stages";
    // What the partitioner minimised (an estimate of the iteration, not the iteration: that is
    // "simulated"."makespan"); documents before it was named so called it "iteration_time".
    doc["partitioner_objective"] = plan.iteration_time;
    doc["time_unit"] =
        context.time_unit.empty() ? json::value(nullptr) : json::value(context.time_unit);
    json::object simulated{{"makespan", simulation.makespan},
                           {"bubble_fraction", simulation.bubble_fraction},
                           {"lower_bound", nullptr},
                           {"gap", nullptr}};
    if (lower_bound) {
        simulated["lower_bound"] = *lower_bound;
        simulated["gap"] = bound_gap(simulation.makespan, *lower_bound);
    }
    doc["simulated"] = std::move(simulated);
    // Whether the plan is the exact optimum of its estimate; when not, why (Plan::
    // not_exact_because: planned under one recompute setting, bounded by "lower_bound").
    doc["exact"] = plan.not_exact_because.empty();
    doc["not_exact_because"] =
        plan.not_exact_because.empty() ? json::value(nullptr) : json::value(plan.not_exact_because);
    doc["balanced_chunks"] = plan.balanced_chunks;
    // Communication per stage boundary (ppb::SimulationInput::comm_time), what it adds to the
    // estimate, and the simulated iteration broken down as SAPP reads it.
    doc["comm_time"] = json::array(simulation.comm_time.begin(), simulation.comm_time.end());
    doc["communication_estimate"] = communication_estimate(problem, plan);
    doc["iteration_breakdown"] =
        iteration_breakdown_object(plan_iteration_breakdown(problem, plan, simulation));
    doc["stages"] = std::move(stages);
    add_framework_settings(doc, problem, plan);
    if (context.data_parallel) {
        doc["data_parallel_replicas"] = context.data_parallel->replicas;
        doc["data_parallel_sync_time"] = context.data_parallel->sync_time;
    }
    return doc;
}

}  // namespace ppb::partition
