#include <ppb/partition/design_document.hpp>

#include <ppb/kinds.hpp>
#include <ppb/partition/design_megatron.hpp>
#include <ppb/partition/design_one_gpu.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>

namespace ppb::partition {

namespace json = boost::json;

namespace {

json::array string_array(const std::vector<std::string>& words) {
    json::array out;
    for (const auto& w : words)
        out.emplace_back(w);
    return out;
}

// "one_gpu": how the run is made on one GPU per rank (ppb/partition/design_one_gpu.hpp).
json::object one_gpu_document(const OneGpuRuns& runs) {
    json::array ranks(runs.ranks.begin(), runs.ranks.end());
    json::object megatron;
    json::value megatron_value = nullptr;
    if (runs.megatron_args) {
        megatron_value = json::object{{"args", string_array(*runs.megatron_args)},
                                      {"snapshots", runs.megatron_snapshots}};
    }
    json::array parts;
    for (const auto& part : runs.torchtitan_parts)
        parts.push_back(string_array(part));
    json::value checkpoint = nullptr;
    if (runs.torchtitan_checkpoint) {
        json::object c{{"mode", runs.torchtitan_checkpoint->mode}};
        if (!runs.torchtitan_checkpoint->option.empty())
            c["selective_ac_option"] = runs.torchtitan_checkpoint->option;
        checkpoint = std::move(c);
    }
    json::object torchtitan{{"module_fqns_per_model_part", std::move(parts)},
                            {"activation_checkpoint", std::move(checkpoint)},
                            {"args", string_array(runs.torchtitan_args)},
                            {"snapshots", runs.torchtitan_snapshots}};
    if (!runs.torchtitan_why_not.empty())
        torchtitan["why_not"] = runs.torchtitan_why_not;
    return json::object{
        {"world_size", runs.world_size},
        {"ranks", std::move(ranks)},
        {"megatron", std::move(megatron_value)},
        {"torchtitan", std::move(torchtitan)},
        {"import_args", runs.import_args.empty() ? json::value(nullptr)
                                                 : json::value(string_array(runs.import_args))}};
}

}  // namespace

namespace {

struct Arrays {
    std::vector<std::int64_t> offset;
    std::vector<std::uint32_t> recompute, select, comm;
};

std::optional<Arrays> arrays_of(const DesignRun& run, std::uint32_t num_layers) {
    Arrays a;
    const std::int64_t base = num_layers / run.num_stages;
    for (const DesignStage& s : run.stages) {
        const auto counts = mindformers_counts(s.layers);
        if (!counts)
            return std::nullopt;
        a.offset.push_back(static_cast<std::int64_t>(s.total_layers()) - base);
        a.recompute.push_back(counts->recompute);
        a.select.push_back(counts->select_recompute);
        a.comm.push_back(counts->select_comm_recompute);
    }
    return a;
}

template <typename T>
std::string yaml_list(const std::vector<T>& values) {
    return fmt::format("[{}]", fmt::join(values, ", "));
}

}  // namespace

std::optional<json::object> design_mindformers_arrays(const DesignRun& run,
                                                      std::uint32_t num_layers) {
    const auto a = arrays_of(run, num_layers);
    if (!a)
        return std::nullopt;
    const auto row = [](const auto& v) {
        json::array r;
        for (const auto x : v)
            r.push_back(x);
        return json::array{r};
    };
    return json::object{{"offset", row(a->offset)},
                        {"recompute", row(a->recompute)},
                        {"select_recompute", row(a->select)},
                        {"select_comm_recompute", row(a->comm)}};
}

std::optional<std::string> design_sapp_init(const DesignRun& run, std::uint32_t num_layers) {
    const auto a = arrays_of(run, num_layers);
    if (!a)
        return std::nullopt;
    std::vector<std::uint32_t> body;
    for (std::uint32_t s = 1; s + 1 < run.num_stages; ++s)
        body.push_back(s);
    const std::vector<std::string> nulls(body.size(), "null");
    std::string text = fmt::format(
        "# {}: replace each null by that stage's measured peak memory in MB, then\n"
        "#   ppb import sapp THIS.yaml --label {}\n"
        "pipeline_config:\n"
        "  pipeline_num: {}\n"
        "  num_layer: {}\n"
        "  offset: {}\n"
        "recompute_config:\n"
        "  recompute: {}\n"
        "  select_recompute: {}\n"
        "  select_comm_recompute: {}\n"
        "memory_usage:\n",
        run.label, run.label, run.num_stages, num_layers, yaml_list(a->offset),
        yaml_list(a->recompute), yaml_list(a->select), yaml_list(a->comm));
    text += "  head_memory: null\n";
    if (run.num_stages > 1)
        text += "  tail_memory: null\n";
    text += fmt::format("  body_memories:\n    stage_id: {}\n    memories: {}\n", yaml_list(body),
                        yaml_list(nulls));
    return text;
}

json::object design_document(const DesignRequest& request, const Design& design,
                             const std::string& prior_model) {
    json::array degrees;
    for (const auto p : request.stages)
        degrees.push_back(p);
    json::array kinds;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((request.kinds & PPB_KIND_BIT(k)) != 0)
            kinds.emplace_back(kind_names[k]);
    }
    json::array runs;
    for (const DesignRun& run : design.runs) {
        json::array stages;
        for (const DesignStage& s : run.stages) {
            json::object layers;
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                if (s.layers[k] != 0)
                    layers[kind_names[k]] = s.layers[k];
            }
            json::object stage{
                {"stage", s.stage}, {"layers", std::move(layers)}, {"in_flight", s.in_flight}};
            if (s.prior_mb)
                stage["prior_memory_mb"] = *s.prior_mb;
            stages.push_back(std::move(stage));
        }
        json::object r{
            {"label", run.label}, {"num_stages", run.num_stages}, {"stages", std::move(stages)}};
        if (auto arrays = design_mindformers_arrays(run, request.num_layers))
            r["mindformers"] = std::move(*arrays);
        else
            r["mindformers"] = nullptr;
        if (const auto args = megatron_design_args(run, request.num_layers)) {
            json::array a;
            for (const auto& s : *args)
                a.emplace_back(s);
            r["megatron"] = json::object{{"args", std::move(a)}};
        } else {
            r["megatron"] = nullptr;
        }
        if (const auto init = design_sapp_init(run, request.num_layers))
            r["sapp_init"] = *init;
        else
            r["sapp_init"] = nullptr;
        if (request.world_size != 0)
            r["one_gpu"] = one_gpu_document(
                one_gpu_runs(run, request.num_layers, design.micro_batches, request.world_size));
        runs.push_back(std::move(r));
    }
    json::object errors;
    for (const CoefficientError& e : design.std_errors)
        errors[e.name] = e.std_error_mb;
    json::object doc{{"format", "ppb.design/1"},
                     {"num_stages", std::move(degrees)},
                     {"num_layers", request.num_layers},
                     {"micro_batches", design.micro_batches},
                     {"kinds", std::move(kinds)},
                     {"recompute_rule", design_rule_name(request.rule)},
                     {"noise_mb", request.noise_mb},
                     {"fewest_runs", design.fewest_runs},
                     {"runs", std::move(runs)},
                     {"std_errors_mb", std::move(errors)},
                     {"worst_prediction_std_error_mb", design.worst_prediction_std_error_mb},
                     {"placements", design.placements}};
    if (request.memory_limit_mb > 0.0)
        doc["memory_limit_mb"] = request.memory_limit_mb;
    else
        doc["memory_limit_mb"] = nullptr;
    doc["prior_model"] = prior_model.empty() ? json::value(nullptr) : json::value(prior_model);
    return doc;
}

}  // namespace ppb::partition
