#include <ppb/partition/configuration_flags.hpp>
#include <ppb/partition/search_document.hpp>

#include <ppb/kinds.hpp>

#include <boost/json/array.hpp>

#include <cmath>
#include <string>
#include <string_view>

namespace ppb::partition {
namespace {

namespace json = boost::json;

json::array kind_names_of(std::uint32_t mask) {
    json::array out;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((mask & (1u << k)) != 0)
            out.emplace_back(kind_names[k]);
    }
    return out;
}

// A framework's settings as entry[name] ({"section.key": value}), or null and name + "_why_not".
void keyed_member(json::object& entry, std::string_view name, const KeyedSettings& settings) {
    if (!settings.why_not.empty()) {
        entry[name] = nullptr;
        entry[std::string(name) + "_why_not"] = settings.why_not;
        return;
    }
    json::object members;
    for (const auto& [key, value] : settings.settings)
        members[key] = value;
    entry[name] = std::move(members);
}

json::object configuration_object(const Configuration& c) {
    json::object out{{"pipeline_parallel", c.pipeline},
                     {"data_parallel", c.data_parallel},
                     {"micro_batches", c.micro_batches},
                     {"schedule", schedule_name(c.schedule.schedule)},
                     {"chunks", c.schedule.chunks},
                     {"recompute", c.recompute.name},
                     {"recompute_kinds", kind_names_of(c.recompute.kinds)},
                     {"tensor_parallel", c.tensor_parallel},
                     {"micro_batch_size", c.micro_batch_size},
                     {"context_parallel", c.context_parallel}};
    if (c.expert_parallel)
        out["expert_parallel"] = *c.expert_parallel;
    if (c.expert_tensor_parallel)
        out["expert_tensor_parallel"] = *c.expert_tensor_parallel;
    if (c.sharding)
        out["data_parallel_sharding"] = sharding_name(*c.sharding);
    return out;
}

// A limit in MB, or null when no limit fits (JSON has no infinity).
json::value limit_value(double mb) {
    return std::isfinite(mb) ? json::value(mb) : json::value(nullptr);
}

}  // namespace

ConfigurationThroughput throughput_of(const SearchOutcome& outcome, const Throughput& throughput) {
    const Configuration& c = outcome.configuration;
    const double seconds = outcome.iteration_time() / 1e3;
    const double samples =
        static_cast<double>(c.micro_batches) * c.data_parallel * c.micro_batch_size;
    const double devices =
        static_cast<double>(c.pipeline) * c.data_parallel * c.tensor_parallel * c.context_parallel;
    if (!(seconds > 0.0) || !std::isfinite(seconds))
        return {};
    return ConfigurationThroughput{samples * throughput.tokens_per_sample / seconds / devices,
                                   samples * throughput.model_flops_per_sample /
                                       (seconds * devices * throughput.peak_tflops * 1e12)};
}

std::vector<const SearchOutcome*> top_ranked(const SearchResult& result, std::size_t top) {
    std::vector<const SearchOutcome*> out = ranked(result);
    if (top != 0 && out.size() > top)
        out.resize(top);
    return out;
}

json::object search_document(const SearchSpace& space, const Problem& base, const SearchPlan& plan,
                             const SearchResult& result, const SearchContext& context) {
    json::object doc;
    doc["format"] = "ppb.search/1";
    doc["model"] =
        json::object{{"name", context.model.model_name}, {"version", context.model.model_version}};
    doc["num_layers"] = base.time.body_layers;
    doc["time_unit"] =
        context.time_unit.empty() ? json::value(nullptr) : json::value(context.time_unit);

    json::object searched;
    searched["devices"] = space.devices ? json::value(*space.devices) : json::value(nullptr);
    searched["tensor_parallel"] = space.tensor_parallel;
    searched["context_parallel"] = space.context_parallel;
    if (!space.expert_parallel_degrees.empty()) {
        json::array eps;
        for (const std::uint32_t ep : space.expert_parallel_degrees)
            eps.emplace_back(ep);
        searched["expert_parallel"] = std::move(eps);
    }
    if (!space.expert_tensor_parallel_degrees.empty()) {
        json::array etps;
        for (const std::uint32_t etp : space.expert_tensor_parallel_degrees)
            etps.emplace_back(etp);
        searched["expert_tensor_parallel"] = std::move(etps);
    }
    if (!space.shardings.empty()) {
        json::array shardings;
        for (const DataParallelSharding sharding : space.shardings)
            shardings.emplace_back(sharding_name(sharding));
        searched["data_parallel_sharding"] = std::move(shardings);
    }
    searched["global_batch"] = space.global_batch;
    searched["micro_batch_size"] = space.micro_batch_size;
    json::array degrees;
    std::vector<std::uint32_t> seen;
    for (const Configuration& c : plan.configurations) {
        if (std::find(seen.begin(), seen.end(), c.pipeline) == seen.end()) {
            seen.push_back(c.pipeline);
            degrees.push_back(c.pipeline);
        }
    }
    searched["pipeline_degrees"] = std::move(degrees);
    json::array schedules;
    for (const ScheduleChoice& s : space.schedules)
        schedules.push_back(
            json::object{{"schedule", schedule_name(s.schedule)}, {"chunks", s.chunks}});
    searched["schedules"] = std::move(schedules);
    json::array policies;
    for (const RecomputePolicy& r : space.recompute)
        policies.emplace_back(r.name);
    searched["recompute"] = std::move(policies);
    searched["recompute_rule"] = rule_name(base.rule);
    searched["memory_limit_mb"] = base.memory_limit_mb;
    searched["memory_margin_mb"] = base.memory_margin_mb;
    searched["memory_margin_sigma"] = base.memory_margin_sigma;
    doc["search"] = std::move(searched);

    const SearchCounts counts = count_outcomes(result);
    doc["configurations"] = plan.configurations.size();
    doc["planned"] = counts.planned;
    doc["infeasible"] = counts.infeasible;
    doc["invalid"] = counts.invalid;
    doc["skipped"] = plan.skipped.size();
    doc["stopped"] = result.stopped;
    doc["communication"] =
        context.communication.empty() ? json::value(nullptr) : json::value(context.communication);

    json::array ranking;
    std::size_t rank = 0;
    for (const SearchOutcome* o : top_ranked(result, context.top)) {
        json::object entry{{"rank", ++rank}};
        for (auto& [key, value] : configuration_object(o->configuration))
            entry[key] = value;
        const PlannedPartition& p = *o->planned;
        entry["iteration_time"] = o->iteration_time();
        entry["data_parallel_sync_time"] = o->data_parallel_sync;
        if (context.throughput) {
            const ConfigurationThroughput t = throughput_of(*o, *context.throughput);
            entry["tokens_per_second_per_device"] = t.tokens_per_second_per_device;
            entry["model_flops_utilisation"] = t.model_flops_utilisation;
        }
        // Whether the plan is the configuration's exact optimum (else "plan"."not_exact_because").
        entry["exact"] = p.plan.not_exact_because.empty();
        entry["partitioner_objective"] = p.plan.iteration_time;
        entry["bubble_fraction"] = p.simulation.bubble_fraction;
        entry["peak_memory_mb"] = o->peak_memory_mb;
        entry["headroom_mb"] = o->headroom_mb;
        // The configuration in the frameworks' own settings, beside the plan's layout and
        // recompute (its "megatron", "torchtitan").
        json::array megatron;
        for (const std::string& a :
             megatron_configuration_args(o->configuration, context.megatron_assumed).args)
            megatron.emplace_back(a);
        entry["megatron_parallelism"] = std::move(megatron);
        keyed_member(entry, "torchtitan_parallelism",
                     torchtitan_configuration(o->configuration, context.megatron_assumed));
        keyed_member(entry, "mindformers_parallelism",
                     mindformers_configuration(o->configuration, context.megatron_assumed));
        entry["plan"] = partition_document(p.problem, p.plan, context.model, p.simulation,
                                           p.breakdown, p.lower_bound);
        ranking.push_back(std::move(entry));
    }
    doc["ranking"] = std::move(ranking);

    // What did not fit is listed when asked (with the smallest limit that would fit); what could
    // not be planned at all, and what was left out of the space, always.
    json::array too_big, cannot;
    for (const SearchOutcome& o : result.outcomes) {
        if (o.status == SearchOutcome::Status::planned)
            continue;
        json::object entry = configuration_object(o.configuration);
        if (o.status == SearchOutcome::Status::infeasible)
            entry["smallest_feasible_limit_mb"] = limit_value(o.smallest_feasible_limit_mb);
        entry["reason"] = o.message;
        (o.status == SearchOutcome::Status::infeasible ? too_big : cannot)
            .push_back(std::move(entry));
    }
    if (context.with_infeasible)
        doc["not_fitting"] = std::move(too_big);
    doc["not_planned"] = std::move(cannot);
    json::array skipped;
    for (const SkippedConfiguration& s : plan.skipped)
        skipped.push_back(json::object{{"configuration", s.configuration}, {"reason", s.reason}});
    doc["skipped_configurations"] = std::move(skipped);
    return doc;
}

}  // namespace ppb::partition
