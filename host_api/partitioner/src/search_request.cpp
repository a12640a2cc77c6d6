// A search as a host is asked for it (ppb/partition/search_request.hpp).
#include <ppb/partition/search_request.hpp>

#include <ppb/errors.hpp>
#include <ppb/json_output.hpp>
#include <ppb/limits.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/schedule.hpp>

#include "shape_count.hpp"

#include <boost/json/parse.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

namespace ppb::partition {
namespace {

namespace json = boost::json;

// Every value of a list within `range` (check_count).
void check_counts(std::string_view field, const std::vector<std::uint32_t>& values,
                  const limits::CountRange& range, const FieldName& name) {
    for (const std::uint32_t v : values)
        check_count(field, v, range, name);
}

using detail::shape_count;

// What the ranking assumes beyond each configuration's degrees (AssumedSettings): the shape's
// sequence parallelism, its sharding and expert degree where the search does not vary them, and
// the overlaps it times.
AssumedSettings assumed_settings(const std::optional<json::object>& shape,
                                 const SearchRequest& request, const SearchSpace& space) {
    AssumedSettings out;
    out.tp_comm_overlap = request.times.tp_comm_overlap;
    out.overlap_grad_reduce = request.times.overlap_grad_reduce;
    out.overlap_param_gather = request.times.overlap_param_gather;
    if (!shape)
        return out;
    const auto flag = [&](std::string_view key) {
        const json::value* v = shape->if_contains(key);
        return v != nullptr && v->is_bool() && v->as_bool();
    };
    out.sequence_parallel = flag("sequence_parallel");
    if (space.shardings.empty()) {
        const json::value* named = shape->if_contains("data_parallel_sharding");
        if (named != nullptr && named->is_string())
            out.sharding = sharding_from_name(named->as_string());
        else if (flag("distributed_optimizer"))
            out.sharding = DataParallelSharding::optim;
    }
    if (const json::value* moe = shape->if_contains("moe"); moe != nullptr && moe->is_object()) {
        out.moe = true;
        const auto ep = shape_count(moe->as_object(), "expert_parallel");
        if (space.expert_parallel_degrees.empty() && ep && *ep > 1)
            out.expert_parallel = ep;
        if (space.expert_tensor_parallel_degrees.empty())
            out.expert_tensor_parallel = shape_count(moe->as_object(), "expert_tensor_parallel");
        // The shape's dispatcher is checked where its times are built (shape_time.cpp).
        out.token_dispatcher = token_dispatcher_of(to_compact_json(*shape));
    }
    return out;
}

// A model shape with data parallelism sharding as `sharding` says: data_parallel_sharding, and
// distributed_optimizer with every sharding but no_shard (Megatron-FSDP requires the distributed
// optimizer; the analytic model refuses no_shard with it).
void set_sharding(json::object& shape, DataParallelSharding sharding) {
    shape["data_parallel_sharding"] = sharding_name(sharding);
    shape["distributed_optimizer"] = sharding != DataParallelSharding::no_shard;
}

// A model shape whose MoE layers spread their experts over `expert_parallel` ranks.
void set_expert_parallel(json::object& shape, std::uint32_t expert_parallel) {
    shape["moe"].as_object()["expert_parallel"] = expert_parallel;
}

// A model shape whose MoE layers slice each expert over `expert_tensor_parallel` ranks.
void set_expert_tensor_parallel(json::object& shape, std::uint32_t expert_tensor_parallel) {
    shape["moe"].as_object()["expert_tensor_parallel"] = expert_tensor_parallel;
}

// The degrees a configuration's memory and times depend on: t, cp, b, d, the sharding, EP and
// ETP (none: the shape's own).
struct DegreeKey {
    std::uint32_t tensor_parallel = 1;
    std::uint32_t context_parallel = 1;
    std::uint32_t micro_batch_size = 1;
    std::uint32_t data_parallel = 1;
    std::optional<DataParallelSharding> sharding;
    std::optional<std::uint32_t> expert_parallel;
    std::optional<std::uint32_t> expert_tensor_parallel;
    // The times of the combined 1F1B (TimesRequest::expert_overlap); the memory is every
    // schedule's.
    bool expert_overlap = false;
    auto operator<=>(const DegreeKey&) const = default;
};

DegreeKey key_of(const Configuration& c, bool with_data_parallel) {
    return {c.tensor_parallel,
            c.context_parallel,
            c.micro_batch_size,
            with_data_parallel ? c.data_parallel : 0,
            c.sharding,
            c.expert_parallel,
            c.expert_tensor_parallel};
}

// `shape` with the degrees of `key` (its data-parallel degree too when it is set).
json::object with_degrees(json::object shape, const DegreeKey& key) {
    shape["tensor_parallel"] = key.tensor_parallel;
    shape["micro_batch_size"] = key.micro_batch_size;
    shape["context_parallel"] = key.context_parallel;
    if (key.data_parallel != 0)
        shape["data_parallel"] = key.data_parallel;
    if (key.sharding)
        set_sharding(shape, *key.sharding);
    if (key.expert_parallel)
        set_expert_parallel(shape, *key.expert_parallel);
    if (key.expert_tensor_parallel)
        set_expert_tensor_parallel(shape, *key.expert_tensor_parallel);
    return shape;
}

// The memory model of each configuration's degrees. A model configured by a shape (options
// holding `tensor_parallel`, as the analytic model's do) is made once per (t, cp, b, d, sharding,
// EP) with those set, since its memory depends on them (the distributed optimizer's share shrinks
// as d grows); any other model is made (and fitted) once and serves every configuration.
class ModelsByDegree {
  public:
    ModelsByDegree(const ModelMaker& make, const std::string& options,
                   const std::optional<json::object>& shape, const Problem& base,
                   const std::vector<Configuration>& configurations)
        : per_degree_(shape.has_value()) {
        if (!per_degree_) {
            auto entry = std::make_unique<Entry>();
            entry->made.emplace(make(options));
            entry->memory = model_memory_source(base, entry->made->model);
            entries_[DegreeKey{}] = std::move(entry);
            return;
        }
        for (const Configuration& c : configurations) {
            const DegreeKey k = key_of(c, true);
            if (entries_.contains(k))
                continue;
            auto entry = std::make_unique<Entry>();
            try {
                entry->made.emplace(make(to_compact_json(with_degrees(*shape, k))));
                entry->memory = model_memory_source(base, entry->made->model);
            } catch (const ModelError& e) {
                if (!e.is_input_error())
                    throw;
                entry->refused = fmt::format(
                    "the memory model refuses tensor_parallel = {}, micro_batch_size = {}, "
                    "data_parallel = {}, context_parallel = {}{}: {}",
                    k.tensor_parallel, k.micro_batch_size, k.data_parallel, k.context_parallel,
                    (k.expert_parallel
                         ? fmt::format(", moe.expert_parallel = {}", *k.expert_parallel)
                         : std::string()) +
                        (k.expert_tensor_parallel ? fmt::format(", moe.expert_tensor_parallel = {}",
                                                                *k.expert_tensor_parallel)
                                                  : std::string()) +
                        (k.sharding ? fmt::format(", data_parallel_sharding = {}",
                                                  sharding_name(*k.sharding))
                                    : std::string()),
                    e.what());
            }
            entries_[k] = std::move(entry);
        }
    }

    // The model that describes the search (the first one made).
    [[nodiscard]] const SearchModel* any() const {
        for (const auto& [k, entry] : entries_) {
            if (entry->made)
                return &*entry->made;
        }
        return nullptr;
    }
    [[nodiscard]] std::string first_refusal() const {
        for (const auto& [k, entry] : entries_) {
            if (!entry->refused.empty())
                return entry->refused;
        }
        return {};
    }

    [[nodiscard]] SearchOutcome plan(const Problem& base, const Configuration& c, bool refine,
                                     bool bound, const SearchOutcome* before,
                                     const AddedToIteration& added = {}) const {
        const Entry& entry = *entries_.at(per_degree_ ? key_of(c, true) : DegreeKey{});
        if (!entry.made) {
            SearchOutcome out;
            out.configuration = c;
            out.status = SearchOutcome::Status::invalid;
            out.message = entry.refused;
            return out;
        }
        return plan_configuration(base, c, entry.memory, refine, bound, before, added);
    }

  private:
    struct Entry {
        std::optional<SearchModel> made;
        MemorySource memory;
        std::string refused;
    };
    bool per_degree_;
    std::map<DegreeKey, std::unique_ptr<Entry>> entries_;
};

// How the data-parallel ranks synchronise, for the search's header.
std::string_view sync_description(DataParallelSharding sharding) {
    switch (sharding) {
        case DataParallelSharding::no_shard:
            return " (all-reduce)";
        case DataParallelSharding::optim:
            return " (reduce-scatter + all-gather)";
        case DataParallelSharding::optim_grads:
            return " (the weights' all-gather; optim_grads: the gradients reduce-scattered in "
                   "every "
                   "backward)";
        case DataParallelSharding::optim_grads_params:
            return " (none left: optim_grads_params gathers each layer's weights before its "
                   "forward "
                   "and backward and reduce-scatters its gradients after it)";
    }
    return "";
}

// What the iteration times include of communication on `cluster`, for the search's header;
// `several_shardings`: each configuration's own.
std::string communication_description(const ShapeSizes& sizes, const Cluster& cluster,
                                      const SyncOverlap& overlap, bool several_shardings) {
    return fmt::format(
        "communication on {} {} per node ({:g} GB/s inside, {:g} GB/s across nodes): transfers "
        "between stages in the schedule, the data-parallel synchronisation after it{}{}",
        cluster.devices_per_node, cluster.device.name, cluster.intra_node_gb_s,
        cluster.network_gb_s,
        several_shardings ? " (as each configuration's sharding makes it)"
                          : sync_description(sizes.sharding),
        overlap.grad_reduce && overlap.param_gather
            ? ", overlapped with the last backward and the next forward"
        : overlap.grad_reduce ? ", the gradients' overlapped with the last backward"
                              : "");
}

// "P=2 d=32 M=2 1f1b recompute any: <why>" of the first configuration that cannot be planned.
std::string first_refusal(const SearchResult& result) {
    for (const SearchOutcome& o : result.outcomes) {
        if (o.status == SearchOutcome::Status::invalid)
            return fmt::format("{}: {}", describe(o.configuration), o.message);
    }
    return {};
}

// No configuration has a plan: Infeasible with the smallest limit that fits one (or InputError
// when none could be planned at any limit).
[[noreturn]] void throw_nothing_fits(const Problem& base, const SearchResult& result,
                                     const FieldName& name) {
    const SearchOutcome* closest = nullptr;
    for (const SearchOutcome& o : result.outcomes) {
        if (o.status == SearchOutcome::Status::infeasible &&
            (closest == nullptr ||
             o.smallest_feasible_limit_mb < closest->smallest_feasible_limit_mb)) {
            closest = &o;
        }
    }
    if (closest == nullptr) {
        throw InputError(fmt::format(
            "no configuration can be planned ({} tried); the first: {}: {}", result.outcomes.size(),
            describe(result.outcomes.front().configuration), result.outcomes.front().message));
    }
    const std::string fits =
        std::isfinite(closest->smallest_feasible_limit_mb)
            ? fmt::format("the smallest limit that fits one is {:.1f} MB ({})",
                          closest->smallest_feasible_limit_mb, describe(closest->configuration))
            : "no limit fits any of them";
    const std::size_t refused = count_outcomes(result).invalid;
    const std::string tried =
        refused == 0 ? fmt::format("{} configurations tried", result.outcomes.size())
                     : fmt::format("{} configurations tried, {} of them cannot be planned: {}",
                                   result.outcomes.size(), refused, first_refusal(result));
    throw Infeasible(
        fmt::format("no configuration fits {} {:.1f}{} ({}): {}", name("memory_limit_mb"),
                    base.memory_limit_mb,
                    base.memory_margin_mb > 0.0
                        ? fmt::format(" with a margin of {:.1f} MB", base.memory_margin_mb)
                        : std::string(),
                    tried, fits),
        closest->smallest_feasible_limit_mb);
}

// Each name of `names` once, in order, read by `from_name` (nullopt: not one), or a RequestError
// naming `field` and the names it takes.
template <typename T, typename FromName>
std::vector<T> distinct(const std::vector<std::string>& names, std::string_view field,
                        const FieldName& name, FromName from_name, std::string_view expected) {
    std::vector<T> out;
    for (const std::string& text : names) {
        const std::optional<T> value = from_name(text);
        if (!value)
            refuse(field, name, fmt::format("unknown value '{}' (expected {})", text, expected));
        if (std::find(out.begin(), out.end(), *value) == out.end())
            out.push_back(*value);
    }
    return out;
}

}  // namespace

std::vector<std::string> default_search_schedules(bool moe_on_cluster) {
    std::vector<std::string> out = {"1f1b", "interleaved", "dualpipe-v"};
    if (moe_on_cluster)
        out.emplace_back("combined-1f1b");
    return out;
}

const PlannedPartition* SearchAnswer::best() const {
    const auto first = ranked(result);
    return first.empty() ? nullptr : &*first.front()->planned;
}

SearchAnswer search_request(const SearchRequest& request, const ModelMaker& make,
                            const FieldName& name, const SearchRunOptions& run,
                            const SearchMessages& messages) {
    const std::optional<Cluster>& cluster = request.times.cluster;
    const bool layer_file = !request.times.layer_file.empty();
    // Every field checked before any model is made.
    if (request.times.tp_comm_overlap && !cluster) {
        refuse("tp_comm_overlap", name,
               fmt::format("the layers' collectives are timed on a cluster's links only: give {} "
                           "or {}",
                           name("device"), name("cluster")));
    }
    const bool overlaps = request.times.overlap_grad_reduce || request.times.overlap_param_gather;
    const std::string_view overlap_field =
        request.times.overlap_grad_reduce ? "overlap_grad_reduce" : "overlap_param_gather";
    if (overlaps && (!cluster || layer_file)) {
        refuse(overlap_field, name,
               fmt::format("the data-parallel synchronisation is timed on a cluster's links only, "
                           "for a model shape's layers: give {} or {}, and {} without {}",
                           name("device"), name("cluster"), name("model_options"),
                           name("model_desc")));
    }
    if (cluster && request.comm_time && !layer_file) {
        refuse("comm_time", name,
               fmt::format("the cluster's links time the transfers between stages of a model "
                           "shape's layers ({}, {}): give one of them",
                           name("device"), name("cluster")));
    }
    const std::optional<json::object> shape =
        is_model_shape(request.model_options)
            ? std::optional<json::object>(json::parse(request.model_options).as_object())
            : std::nullopt;
    const bool shape_times = shape.has_value() && !layer_file;
    const bool moe_shape = shape_times && shape->contains("moe") && shape->at("moe").is_object();
    for (const auto& [field, degrees] :
         {std::pair<std::string_view, const std::vector<std::uint32_t>*>{"expert_parallel",
                                                                         &request.expert_parallel},
          {"expert_tensor_parallel", &request.expert_tensor_parallel}}) {
        if (!degrees->empty() && !moe_shape) {
            refuse(field, name,
                   fmt::format("the experts' degree changes the memory and the expert all-to-all, "
                               "which need a model shape with \"moe\" ({} without {}) to size "
                               "for each",
                               name("model_options"), name("model_desc")));
        }
    }
    if (!request.data_parallel_sharding.empty() && !shape_times) {
        refuse("data_parallel_sharding", name,
               fmt::format("the sharding changes the memory and the transfers, which need a model "
                           "shape ({} without {}) to size for each",
                           name("model_options"), name("model_desc")));
    }
    if (request.times.overlap_param_gather && shape && request.data_parallel_sharding.empty()) {
        const json::value* sharded = shape->if_contains("distributed_optimizer");
        const json::value* sharding = shape->if_contains("data_parallel_sharding");
        const bool gathers =
            (sharded != nullptr && sharded->is_bool() && sharded->as_bool()) ||
            (sharding != nullptr && sharding->is_string() && sharding->as_string() != "no_shard");
        if (!gathers) {
            refuse(
                "overlap_param_gather", name,
                "the weights are gathered with the distributed optimizer only (Megatron-LM "
                "requires --use-distributed-optimizer); the model options have no "
                "\"distributed_optimizer\": true and no \"data_parallel_sharding\" but no_shard");
        }
    }
    if (request.devices)
        check_count("devices", *request.devices, {1, 1'000'000, "devices"}, name);
    check_counts("pipeline_degrees", request.pipeline_degrees, limits::stages, name);
    check_counts("tensor_parallel", request.tensor_parallel, {1, 1'000'000, "devices"}, name);
    check_counts("micro_batch_size", request.micro_batch_size, {1, 1'000'000, "samples"}, name);
    check_counts("context_parallel", request.context_parallel, {1, 1'000'000, "devices"}, name);
    check_counts("expert_parallel", request.expert_parallel, {1, 1'000'000, "devices"}, name);
    check_counts("expert_tensor_parallel", request.expert_tensor_parallel,
                 {1, 1'000'000, "devices"}, name);
    check_counts("chunks", request.chunks, {2, limits::chunks.max, "chunks"}, name);
    if (request.data_parallel)
        check_count("data_parallel", *request.data_parallel, {1, 1'000'000, "replicas"}, name);
    check_count("global_batch", request.global_batch, {1, 1'000'000'000, "samples"}, name);
    check_count("top", request.top, {0, 1'000'000, "configurations"}, name);
    check_count("jobs", run.jobs, {0, 1024, "threads"}, name);

    const double memory_limit_mb = memory_limit_of(request.memory_limit_mb, cluster, name);
    if (!request.memory_limit_mb && messages.note) {
        messages.note(fmt::format("{} {:g} from {}", name("memory_limit_mb"), memory_limit_mb,
                                  cluster->describe_memory()));
    }
    check_limit_and_margins(memory_limit_mb, request.memory_margin_mb, request.memory_margin_sigma,
                            name);
    if (!request.devices && request.pipeline_degrees.empty()) {
        throw RequestError("devices", fmt::format("give {} or {} (or both)", name("devices"),
                                                  name("pipeline_degrees")));
    }
    if (request.devices && request.data_parallel) {
        refuse("data_parallel", name,
               fmt::format("with {} every pipeline degree P has its own, N / (P x t)",
                           name("devices")));
    }
    // What every configuration's problem shares: the limit, the margins, the rule.
    Problem common;
    common.memory_limit_mb = memory_limit_mb;
    common.memory_margin_mb = request.memory_margin_mb;
    common.memory_margin_sigma = request.memory_margin_sigma;
    common.rule = recompute_rule_of(request.recompute_rule, name);
    if (request.comm_time) {
        if (!std::isfinite(*request.comm_time) || *request.comm_time < 0.0) {
            refuse("comm_time", name,
                   fmt::format("{} is not a time: give a finite number, at least 0, in the layer "
                               "times' unit",
                               *request.comm_time));
        }
        common.comm_time = {*request.comm_time};  // every boundary of every pipeline degree
    }
    // The schedules: each of `schedules` (the default's without one), the interleaved ones with
    // each of `chunks`.
    const json::value* moe = shape ? shape->if_contains("moe") : nullptr;
    const bool default_schedules = request.schedules.empty();
    const std::vector<Schedule> schedules = distinct<Schedule>(
        default_schedules
            ? default_search_schedules(shape_times && cluster && moe != nullptr && moe->is_object())
            : request.schedules,
        "schedules", name, [](std::string_view text) { return schedule_from_name(text); },
        names_or(schedule_names()));
    std::vector<ScheduleChoice> schedule_list;
    for (const Schedule s : schedules) {
        const std::optional<std::uint32_t> fixed = fixed_chunks(s);
        std::vector<std::uint32_t> chunk_list =
            fixed ? std::vector<std::uint32_t>{*fixed} : request.chunks;
        // The combined 1F1B also runs one chunk, on one stage (Megatron-LM without a pipeline).
        if (s == Schedule::combined_1f1b)
            chunk_list.insert(chunk_list.begin(), 1);
        for (const std::uint32_t v : chunk_list) {
            const ScheduleChoice choice{s, v};
            if (std::find(schedule_list.begin(), schedule_list.end(), choice) ==
                schedule_list.end())
                schedule_list.push_back(choice);
        }
    }
    std::vector<RecomputePolicy> recompute;
    for (const std::string& text : request.recompute) {
        RecomputePolicy policy;
        try {
            policy = recompute_policy(text);
        } catch (const InputError& e) {
            refuse("recompute", name, e.what());
        }
        if (std::find(recompute.begin(), recompute.end(), policy) == recompute.end())
            recompute.push_back(policy);
    }
    const std::vector<DataParallelSharding> sharding_list = distinct<DataParallelSharding>(
        request.data_parallel_sharding, "data_parallel_sharding", name,
        [](std::string_view text) { return sharding_from_name(text); },
        "no_shard, optim, optim_grads or optim_grads_params");
    const auto distinct_degrees = [](const std::vector<std::uint32_t>& degrees) {
        std::vector<std::uint32_t> out;
        for (const std::uint32_t d : degrees) {
            if (std::find(out.begin(), out.end(), d) == out.end())
                out.push_back(d);
        }
        return out;
    };
    const std::vector<std::uint32_t> ep_list = distinct_degrees(request.expert_parallel);
    const std::vector<std::uint32_t> etp_list = distinct_degrees(request.expert_tensor_parallel);
    // The tensor-parallel degrees, context-parallel degrees and micro-batch sizes: the
    // request's lists, else the shape's; with a layer file's times, which are for one t, cp and
    // b, one that agrees with the memory model's shape.
    if ((request.tensor_parallel.size() > 1 || request.micro_batch_size.size() > 1 ||
         request.context_parallel.size() > 1) &&
        !shape_times) {
        const std::string_view field = request.tensor_parallel.size() > 1    ? "tensor_parallel"
                                       : request.micro_batch_size.size() > 1 ? "micro_batch_size"
                                                                             : "context_parallel";
        refuse(field, name,
               fmt::format("several values need a model shape's layers ({} without {}), timed and "
                           "sized for each; a layer file's times are for one",
                           name("model_options"), name("model_desc")));
    }
    const auto one_or_shapes = [&](const std::vector<std::uint32_t>& given, std::string_view field,
                                   std::string_view key) {
        if (given.size() > 1 || (shape_times && !given.empty()))
            return given;
        const std::optional<std::uint32_t> in_shape =
            shape ? shape_count(*shape, key) : std::nullopt;
        if (!given.empty() && in_shape && given.front() != *in_shape) {
            throw RequestError(
                std::string(field),
                fmt::format("{} {} contradicts the model options' {} = {}: give one of them, or "
                            "the same value",
                            name(field), given.front(), key, *in_shape));
        }
        return std::vector<std::uint32_t>{given.empty() ? in_shape.value_or(1) : given.front()};
    };
    const std::vector<std::uint32_t> tps =
        one_or_shapes(request.tensor_parallel, "tensor_parallel", "tensor_parallel");
    const std::vector<std::uint32_t> sizes =
        one_or_shapes(request.micro_batch_size, "micro_batch_size", "micro_batch_size");
    const std::vector<std::uint32_t> cps =
        one_or_shapes(request.context_parallel, "context_parallel", "context_parallel");

    if (cluster && layer_file && messages.note) {
        messages.note(fmt::format(
            "the layer file's times are in its own unit: communication is not timed from the "
            "cluster ({} gives the transfers between stages)",
            name("comm_time")));
    }
    // Per t, cp, b, sharding, EP and ETP: the layer times (and the shape's sizes for the cluster's
    // transfers), in a problem of their own.
    struct Variant {
        RequestTimes times;
        Problem base;
        std::string refused;  // why Megatron-LM does not run these degrees' combined 1F1B
    };
    const bool combined = std::any_of(
        schedule_list.begin(), schedule_list.end(),
        [](const ScheduleChoice& choice) { return choice.schedule == Schedule::combined_1f1b; });
    // With a shape, the combined 1F1B's own times (its all-to-all overlapped on a cluster), and
    // Megatron-LM's refusals of it, cluster or not.
    std::vector<bool> expert_overlaps = {false};
    if (combined && shape_times)
        expert_overlaps.push_back(true);
    std::vector<std::optional<std::uint32_t>> eps(ep_list.begin(), ep_list.end());
    if (eps.empty())
        eps.emplace_back(std::nullopt);
    std::vector<std::optional<std::uint32_t>> etps(etp_list.begin(), etp_list.end());
    if (etps.empty())
        etps.emplace_back(std::nullopt);
    // Each expert-parallel degree with each expert-tensor-parallel degree.
    std::vector<std::pair<std::optional<std::uint32_t>, std::optional<std::uint32_t>>> experts;
    for (const std::optional<std::uint32_t>& ep : eps) {
        for (const std::optional<std::uint32_t>& etp : etps)
            experts.emplace_back(ep, etp);
    }
    std::vector<std::optional<DataParallelSharding>> shardings(sharding_list.begin(),
                                                               sharding_list.end());
    if (shardings.empty())
        shardings.emplace_back(std::nullopt);
    std::map<DegreeKey, Variant> variants;
    for (const std::uint32_t t : tps) {
        for (const std::uint32_t cp : cps) {
            for (const std::uint32_t b : sizes) {
                for (const std::optional<DataParallelSharding>& sharding : shardings) {
                    for (const auto& [ep, etp] : experts) {
                        for (const bool expert_overlap : expert_overlaps) {
                            const DegreeKey key{t, cp, b, 0, sharding, ep, etp, expert_overlap};
                            TimesRequest times = request.times;
                            times.overlap_grad_reduce = false;  // checked above, applied per plan
                            times.overlap_param_gather = false;
                            if (shape_times)
                                times.shape_json = to_compact_json(with_degrees(*shape, key));
                            std::string refused;
                            if (expert_overlap)
                                refused = expert_overlap_refusal(times.shape_json);
                            times.expert_overlap = expert_overlap && refused.empty();
                            Variant v{times_of(times, name), common, std::move(refused)};
                            v.base.time = v.times.time;
                            v.base.mtp = v.times.mtp;
                            v.base.token_dispatcher = v.times.token_dispatcher;
                            variants.emplace(key, std::move(v));
                        }
                    }
                }
            }
        }
    }
    const Variant& first = variants.begin()->second;
    if (messages.warning) {
        for (const std::string& warning : first.base.time.warnings)
            messages.warning(warning);
    }
    // The micro-batch size `first` is sized for (its tokens and FLOPs per sample are every
    // variant's: t and cp split a sample's work, they do not change it).
    const double first_b = variants.begin()->first.micro_batch_size;

    SearchAnswer answer;
    SearchSpace& space = answer.space;
    space.devices = request.devices;
    space.pipeline_degrees = request.pipeline_degrees;
    space.tensor_parallel = tps.front();
    space.micro_batch_size = sizes.front();
    if (tps.size() > 1)
        space.tensor_parallel_degrees = tps;
    if (sizes.size() > 1)
        space.micro_batch_sizes = sizes;
    space.context_parallel = cps.front();
    if (cps.size() > 1)
        space.context_parallel_degrees = cps;
    space.shardings = sharding_list;
    space.expert_parallel_degrees = ep_list;
    space.expert_tensor_parallel_degrees = etp_list;
    if (moe != nullptr && moe->is_object()) {
        if (const auto etp = shape_count(moe->as_object(), "expert_tensor_parallel"))
            space.expert_tensor_parallel = *etp;
        // The analytic model's default EP is 1.
        space.expert_parallel = shape_count(moe->as_object(), "expert_parallel").value_or(1);
    }
    space.data_parallel = request.data_parallel.value_or(
        shape ? shape_count(*shape, "data_parallel").value_or(1) : 1);
    space.global_batch = request.global_batch;
    space.schedules = schedule_list;
    space.recompute = recompute;
    // The shape's own limits are every variant's (its degrees do not change them).
    if (const ShapeLimits& limits = first.times.limits; !limits.why.empty()) {
        space.kinds = limits.kinds;
        space.one_stage = limits.one_stage;
        space.limits_why = limits.why;
        // A warning, not a note: the search is narrower than the one asked for.
        if (messages.warning) {
            messages.warning(
                fmt::format("{}: its configurations are searched on one stage with "
                            "the kind none only",
                            limits.why));
        }
    }
    answer.plan = search_configurations(space, first.base.time);
    answer.base = first.base;
    // The default's combined 1F1B is only where Megatron-LM runs it: the configurations of
    // degrees it refuses (one expert-parallel rank, several MTP layers) are left out; named, they
    // are listed with why.
    if (default_schedules && expert_overlaps.size() > 1) {
        std::erase_if(answer.plan.configurations, [&](const Configuration& c) {
            return c.schedule.schedule == Schedule::combined_1f1b &&
                   !variants
                        .at(DegreeKey{c.tensor_parallel, c.context_parallel, c.micro_batch_size, 0,
                                      c.sharding, c.expert_parallel, c.expert_tensor_parallel,
                                      true})
                        .refused.empty();
        });
    }

    const ModelsByDegree models(make, request.model_options, shape, first.base,
                                answer.plan.configurations);
    const SyncOverlap overlap{request.times.overlap_grad_reduce,
                              request.times.overlap_param_gather};
    // `before`: the configuration's first plan, which planning it again with the local search
    // starts from rather than solving it again.
    const auto plan_one = [&](const Configuration& c, bool refine, const SearchOutcome* before) {
        const bool expert_overlap =
            c.schedule.schedule == Schedule::combined_1f1b && expert_overlaps.size() > 1;
        const Variant& v = variants.at(
            DegreeKey{c.tensor_parallel, c.context_parallel, c.micro_batch_size, 0, c.sharding,
                      c.expert_parallel, c.expert_tensor_parallel, expert_overlap});
        if (!v.refused.empty()) {
            SearchOutcome refused;
            refused.configuration = c;
            refused.status = SearchOutcome::Status::invalid;
            refused.message = v.refused;
            return refused;
        }
        // The bounds say which configurations the local search must plan again; fast plans
        // none again and needs none.
        const bool bound = !request.fast;
        if (v.times.sizes && cluster) {
            return plan_with_communication(
                *v.times.sizes, *cluster, overlap, v.base, c,
                [&](const Problem& problem, const Configuration& configuration,
                    const AddedToIteration& added) {
                    return models.plan(problem, configuration, refine, bound, before, added);
                });
        }
        return models.plan(v.base, c, refine, bound, before);
    };
    const SearchModel* described = models.any();
    if (described == nullptr)
        throw InputError(models.first_refusal());

    answer.result = run_search(
        answer.plan.configurations,
        [&](const Configuration& c) { return plan_one(c, false, nullptr); }, run);
    // The best configurations with chunks, and every other one that could still be among them,
    // planned again with the local search on the simulated iteration (the plan `ppb partition`
    // makes); fast keeps the exact optima.
    if (!request.fast && !answer.result.stopped) {
        (void)refine_best(answer.result, refined_configurations,
                          [&](const Configuration& c, const SearchOutcome& before) {
                              return plan_one(c, true, &before);
                          },
                          {.jobs = run.jobs, .stop = run.stop});
    }
    const std::optional<ShapeSizes>& sizes_of_first = first.times.sizes;
    answer.context = SearchContext{
        {described->model.name(), described->model.version(), described->source, first.times.unit},
        first.times.source,
        first.times.unit,
        request.top,
        request.show_infeasible,
        sizes_of_first && cluster ? communication_description(*sizes_of_first, *cluster, overlap,
                                                              space.shardings.size() > 1)
                                  : std::string(),
        sizes_of_first && cluster
            ? std::optional<Throughput>(Throughput{
                  sizes_of_first->tokens_per_micro_batch / first_b,
                  sizes_of_first->model_flops_per_micro_batch / first_b, cluster->peak_tflops()})
            : std::nullopt,
        assumed_settings(shape, request, space)};
    // Nothing fits: the smallest limit that fits a configuration.
    if (!answer.result.stopped && ranked(answer.result).empty())
        throw_nothing_fits(answer.base, answer.result, name);
    return answer;
}

}  // namespace ppb::partition
