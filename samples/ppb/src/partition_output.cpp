#include "partition_output.hpp"

#include "text_table.hpp"

#include <ppb/kinds.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

namespace ppb::cli {
namespace json = boost::json;
using partition::Plan;
using partition::Problem;

namespace {

json::array one_chunk(const std::vector<std::int64_t>& row) {
    json::array inner;
    for (const auto v : row)
        inner.push_back(v);
    return json::array{inner};
}

// "[[1, 0, -1]]": the arrays as they are written into a MindFormers YAML file.
std::string array_text(const json::value& v) {
    if (!v.is_array())
        return json::serialize(v);
    std::string out = "[";
    for (const auto& item : v.get_array()) {
        out += (out.size() > 1 ? ", " : "") + array_text(item);
    }
    return out + "]";
}

std::string_view rule_name(partition::RecomputeRule rule) {
    return rule == partition::RecomputeRule::mindformers ? "mindformers" : "any";
}

}  // namespace

std::optional<json::object> mindformers_arrays(const Problem& problem, const Plan& plan) {
    const std::int64_t base = problem.time.body_layers / problem.num_stages;
    std::vector<std::int64_t> offset, recompute, select, comm;
    for (const auto& s : plan.stages) {
        const auto counts = partition::mindformers_counts(s.layers);
        if (!counts)
            return std::nullopt;
        offset.push_back(static_cast<std::int64_t>(s.total_layers()) - base);
        recompute.push_back(counts->recompute);
        select.push_back(counts->select_recompute);
        comm.push_back(counts->select_comm_recompute);
    }
    return json::object{{"offset", one_chunk(offset)},
                        {"recompute", one_chunk(recompute)},
                        {"select_recompute", one_chunk(select)},
                        {"select_comm_recompute", one_chunk(comm)}};
}

json::object partition_document(const Problem& problem, const Plan& plan,
                                const PartitionContext& context) {
    json::array stages;
    for (const auto& s : plan.stages) {
        json::object layers;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            layers[kind_names[k]] = s.layers[k];
        stages.push_back(
            json::object{{"stage", s.stage},
                         {"layers", std::move(layers)},
                         {"in_flight", s.in_flight},
                         {"memory_mb", s.memory_mb},
                         {"uncertainty_margin_mb", s.margin_mb},
                         {"headroom_mb", problem.budget_mb() - s.memory_mb - s.margin_mb},
                         {"time", s.time}});
    }
    json::object doc;
    doc["format"] = "ppb.partition/1";
    doc["model"] = json::object{{"name", context.model_name}, {"version", context.model_version}};
    doc["num_stages"] = problem.num_stages;
    doc["micro_batches"] = problem.micro_batches;
    doc["num_layers"] = problem.time.body_layers;
    doc["memory_limit_mb"] = problem.memory_limit_mb;
    doc["memory_margin_mb"] = problem.memory_margin_mb;
    doc["recompute_rule"] = rule_name(problem.rule);
    doc["memory_margin_sigma"] = problem.memory_margin_sigma;
    doc["iteration_time"] = plan.iteration_time;
    doc["stages"] = std::move(stages);
    if (auto arrays = mindformers_arrays(problem, plan)) {
        doc["mindformers"] = std::move(*arrays);
    } else {
        doc["mindformers"] = nullptr;
    }
    return doc;
}

std::string render_partition(const Problem& problem, const Plan& plan,
                             const PartitionContext& context) {
    std::string out =
        fmt::format("{} '{}' layers over {} stages, {} micro-batches, 1F1B; memory limit {}",
                    problem.time.body_layers, problem.time.body_name, problem.num_stages,
                    problem.micro_batches, format_mb(problem.memory_limit_mb));
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
    std::vector<std::string> header = {"STAGE", "LAYERS", "NONE",      "SELECT", "COMM",
                                       "BOTH",  "FULL",   "IN FLIGHT", "MEMORY"};
    if (sigma)
        header.emplace_back("MARGIN");  // K standard errors, shown only when K > 0
    header.emplace_back("HEADROOM");
    header.emplace_back("TIME");
    TextTable table(header, std::vector<A>(header.size(), A::right));
    for (const auto& s : plan.stages) {
        std::vector<std::string> row = {fmt::format("{}", s.stage),
                                        fmt::format("{}", s.total_layers())};
        for (const auto n : s.layers)
            row.push_back(fmt::format("{}", n));
        row.push_back(fmt::format("{}", s.in_flight));
        row.push_back(format_mb(s.memory_mb));
        if (sigma)
            row.push_back(format_mb(s.margin_mb));
        row.push_back(format_mb(problem.budget_mb() - s.memory_mb - s.margin_mb));
        row.push_back(fmt::format("{:.1f}", s.time));
        table.add_row(std::move(row));
    }
    out += table.render(2);
    out += fmt::format(
        "\nIteration time estimate: {:.1f} (sum of stage times + {} x the slowest stage; stage "
        "times are forward + backward per micro-batch, in the layer file's unit)\n",
        plan.iteration_time, problem.micro_batches - 1);

    const auto arrays = mindformers_arrays(problem, plan);
    if (!arrays) {
        std::string stages;
        for (const auto& s : plan.stages) {
            if (!partition::expressible(s.layers, partition::RecomputeRule::mindformers))
                stages += fmt::format("{}{}", stages.empty() ? "" : ", ", s.stage);
        }
        out += fmt::format(
            "\nMindFormers / SAPP configuration: none (stage{} {} mix{} 'select' and 'comm' "
            "layers, which MindFormers' recompute counts cannot build; plan with --recompute-rule "
            "mindformers for a plan it can)\n",
            stages.find(',') == std::string::npos ? "" : "s", stages,
            stages.find(',') == std::string::npos ? "es" : "");
        return out;
    }
    out += "\nMindFormers / SAPP configuration:\n";
    for (const char* key : {"offset", "recompute", "select_recompute", "select_comm_recompute"}) {
        out += fmt::format("  {}: {}\n", key, array_text(arrays->at(key)));
    }
    return out;
}

}  // namespace ppb::cli
