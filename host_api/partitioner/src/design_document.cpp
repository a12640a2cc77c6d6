#include <ppb/partition/design_document.hpp>

#include <ppb/kinds.hpp>
#include <ppb/partition/design_megatron.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>

namespace ppb::partition {
namespace json = boost::json;

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
