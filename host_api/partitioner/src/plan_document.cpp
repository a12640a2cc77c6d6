#include <ppb/partition/plan_document.hpp>

#include <ppb/kinds.hpp>

#include <boost/json.hpp>

#include <cstdint>

namespace ppb::partition {
namespace json = boost::json;

std::string_view rule_name(RecomputeRule rule) noexcept {
    return rule == RecomputeRule::mindformers ? "mindformers" : "any";
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
            // With several groups MindFormers applies the counts by position in the stage,
            // whatever each layer's group: they describe the plan only if that rebuilds it.
            if (!s.group_layers.empty() &&
                positional_group_layers(problem, s.first_layer, s.total_layers(), *counts) !=
                    s.group_layers)
                return std::nullopt;
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

json::object breakdown_object(const MemoryBreakdown& b) {
    json::object out;
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
    return out;
}

json::object partition_document(const Problem& problem, const Plan& plan,
                                const PartitionContext& context, const Simulation& simulation,
                                std::span<const MemoryBreakdown> breakdown) {
    const auto kinds_object = [](const KindCounts& counts) {
        json::object layers;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            layers[kind_names[k]] = counts[k];
        return layers;
    };
    json::array stages;
    for (const auto& s : plan.stages) {
        json::array chunks;
        for (const auto& c : s.chunks) {
            json::object chunk{{"chunk", c.chunk},
                               {"layers", kinds_object(c.layers)},
                               {"in_flight", c.in_flight},
                               {"forward_time", c.forward_time},
                               {"backward_time", c.backward_time}};
            if (plan.activations_known)
                chunk["activation_mb"] = c.activation_mb;
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
        if (s.stage < breakdown.size())
            stage["memory_breakdown_mb"] = breakdown_object(breakdown[s.stage]);
        if (!s.group_layers.empty()) {
            // The stage's range of the layer sequence and its layers per group.
            stage["first_layer"] = s.first_layer;
            stage["last_layer"] = s.first_layer + s.total_layers() - 1;
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
    doc["memory_margin_mb"] = problem.memory_margin_mb;
    doc["recompute_rule"] = rule_name(problem.rule);
    doc["memory_margin_sigma"] = problem.memory_margin_sigma;
    doc["objective"] =
        problem.objective == ChunkObjective::slots && problem.chunked() ? "slots" : "stages";
    doc["iteration_time"] = plan.iteration_time;
    doc["simulated"] = json::object{{"makespan", simulation.makespan},
                                    {"bubble_fraction", simulation.bubble_fraction}};
    doc["stages"] = std::move(stages);
    if (auto arrays = mindformers_arrays(problem, plan)) {
        doc["mindformers"] = std::move(*arrays);
    } else {
        doc["mindformers"] = nullptr;
    }
    return doc;
}

}  // namespace ppb::partition
