// ppb search: which pipeline configuration to run. Every combination of pipeline degree (with
// the micro-batch count a fixed global batch gives it), schedule and chunks, and recompute
// policy is planned exactly on a pool of threads and ranked by its simulated iteration time.
#include "commands.hpp"
#include "layer_times.hpp"
#include "plugin_session.hpp"
#include "report_html.hpp"
#include "search_output.hpp"
#include "search_progress.hpp"

#include <ppb/json_output.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/partition/search.hpp>
#include <ppb/partition/search_document.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/timeline_svg.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <map>
#include <memory>
#include <optional>

namespace ppb::cli {
namespace {

namespace json = boost::json;

struct SearchArgs {
    std::string model_desc;
    std::string time_convention{partition::name_of(partition::TimeConvention::hyper_parallel)};
    std::string dryrun;
    ModelChoice choice;
    DryRunReadOptions read;
    std::optional<std::uint32_t> devices;
    std::vector<std::uint32_t> pipeline_degrees;
    std::vector<std::uint32_t> tensor_parallel;
    std::optional<std::uint32_t> data_parallel;
    std::uint64_t global_batch = 0;
    std::vector<std::uint32_t> micro_batch_size;
    std::vector<std::uint32_t> context_parallel;
    std::vector<std::string> sharding;
    std::vector<std::uint32_t> expert_parallel;
    std::vector<std::string> schedules = {"1f1b", "interleaved", "dualpipe-v"};
    std::vector<std::uint32_t> chunks = {2};
    std::vector<std::string> recompute = {"any"};
    std::string recompute_rule = "mindformers";
    std::optional<double> memory_limit_mb;
    double memory_margin_mb = 0.0;
    double memory_margin_sigma = 0.0;
    std::size_t top = 10;
    bool show_infeasible = false;
    bool json = false;
    std::string report;
    unsigned jobs = 0;
    bool fast = false;
    std::string progress = "auto";
    DeviceOptions device;
    std::optional<double> comm_time;
};

// Set by SIGINT: the search stops taking configurations. A second SIGINT ends the process the
// default way.
std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_interrupt(int) {
    if (interrupted.exchange(true)) {
        std::signal(SIGINT, SIG_DFL);
        std::raise(SIGINT);
    }
}

// SIGINT handled by on_interrupt while it lives; the previous handler restored after.
class InterruptScope {
  public:
    InterruptScope() {
        interrupted = false;
        struct sigaction action {};
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &previous_);
    }
    ~InterruptScope() { sigaction(SIGINT, &previous_, nullptr); }
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

  private:
    struct sigaction previous_ {};
};

// The schedules to consider: each of --schedules, the interleaved ones with each of --chunks.
std::vector<partition::ScheduleChoice> schedule_choices(const SearchArgs& args) {
    std::vector<partition::ScheduleChoice> out;
    for (const std::string& name : args.schedules) {
        const Schedule schedule = *schedule_from_name(name);  // checked by CLI11
        const std::optional<std::uint32_t> fixed = fixed_chunks(schedule);
        const std::vector<std::uint32_t> chunks =
            fixed ? std::vector<std::uint32_t>{*fixed} : args.chunks;
        for (const std::uint32_t v : chunks) {
            const partition::ScheduleChoice choice{schedule, v};
            if (std::find(out.begin(), out.end(), choice) == out.end())
                out.push_back(choice);
        }
    }
    return out;
}

// A whole number of the model's options (a shape), if it has one there.
std::optional<std::uint32_t> shape_count(const json::object& shape, std::string_view key) {
    const json::value* v = shape.if_contains(key);
    if (v == nullptr)
        return std::nullopt;
    if (v->is_int64() && v->as_int64() > 0 && v->as_int64() <= 0x7fffffff)
        return static_cast<std::uint32_t>(v->as_int64());
    if (v->is_uint64() && v->as_uint64() <= 0x7fffffff && v->as_uint64() > 0)
        return static_cast<std::uint32_t>(v->as_uint64());
    return std::nullopt;  // the model names its own wrong types
}

// `given` on the command line or the model's options' value of `key`; both must agree.
std::uint32_t agreed(std::optional<std::uint32_t> given, std::string_view option,
                     const json::object* shape, std::string_view key, std::uint32_t fallback) {
    const std::optional<std::uint32_t> in_shape =
        shape != nullptr ? shape_count(*shape, key) : std::nullopt;
    if (given && in_shape && *given != *in_shape) {
        throw UsageError(fmt::format(
            "{} {} contradicts the model options' {} = {}: give one of them, or the same value",
            option, *given, key, *in_shape));
    }
    return given.value_or(in_shape.value_or(fallback));
}

// A model shape with data parallelism sharding as `sharding` says: data_parallel_sharding, and
// distributed_optimizer with every sharding but no_shard (Megatron-FSDP requires the distributed
// optimizer; the analytic model refuses no_shard with it).
void set_sharding(json::object& shape, partition::DataParallelSharding sharding) {
    shape["data_parallel_sharding"] = partition::sharding_name(sharding);
    shape["distributed_optimizer"] = sharding != partition::DataParallelSharding::no_shard;
}

// A model shape whose MoE layers spread their experts over `expert_parallel` ranks.
void set_expert_parallel(json::object& shape, std::uint32_t expert_parallel) {
    shape["moe"].as_object()["expert_parallel"] = expert_parallel;
}

// The memory model of each configuration's tensor-parallel degree, micro-batch size and
// data-parallel degree. A model configured by a shape (options holding `tensor_parallel`, as the
// analytic model's do) is created once per (t, b, d, cp) with its `tensor_parallel`,
// `micro_batch_size`, `data_parallel` and `context_parallel` set to them, since its memory depends
// on them (the distributed optimizer's share shrinks as d grows); any other model is created (and
// fitted) once and used for every configuration.
class ModelsByDegree {
  public:
    struct Key {
        std::uint32_t tensor_parallel = 1;
        std::uint32_t micro_batch_size = 1;
        std::uint32_t data_parallel = 1;
        std::uint32_t context_parallel = 1;
        std::optional<partition::DataParallelSharding> sharding;  // none: the shape's own
        std::optional<std::uint32_t> expert_parallel;             // none: the shape's own
        auto operator<=>(const Key&) const = default;
    };
    // The one model of every configuration, when the model is not configured by a shape.
    static constexpr Key every_configuration{0, 0, 0, 0, std::nullopt, std::nullopt};
    [[nodiscard]] static Key key_of(const partition::Configuration& c) {
        return {c.tensor_parallel,  c.micro_batch_size, c.data_parallel,
                c.context_parallel, c.sharding,         c.expert_parallel};
    }

    ModelsByDegree(const SearchArgs& args, const std::optional<DryRunSet>& dryrun,
                   const ModelOptions& options, const std::optional<json::object>& shape,
                   const partition::Problem& base, const std::vector<Key>& keys)
        : per_degree_(shape.has_value()) {
        const auto candidates = discover_from_args(args.choice.plugin_paths);
        const auto prepare = [&](const ModelOptions& text) {
            return prepare_model(open_model_spec(candidates, args.choice.model, text),
                                 dryrun ? &*dryrun : nullptr, args.dryrun, "--dryrun FILE");
        };
        if (!per_degree_) {
            auto entry = std::make_unique<Entry>();
            entry->prepared.emplace(prepare(options));
            entry->memory = partition::model_memory_source(base, entry->prepared->model);
            entries_[every_configuration] = std::move(entry);
            return;
        }
        for (const Key& k : keys) {
            auto entry = std::make_unique<Entry>();
            json::object with_degree = *shape;
            with_degree["tensor_parallel"] = k.tensor_parallel;
            with_degree["micro_batch_size"] = k.micro_batch_size;
            with_degree["data_parallel"] = k.data_parallel;
            with_degree["context_parallel"] = k.context_parallel;
            if (k.sharding)
                set_sharding(with_degree, *k.sharding);
            if (k.expert_parallel)
                set_expert_parallel(with_degree, *k.expert_parallel);
            try {
                entry->prepared.emplace(
                    prepare(ModelOptions{to_compact_json(with_degree), options.file}));
                entry->memory = partition::model_memory_source(base, entry->prepared->model);
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
                        (k.sharding ? fmt::format(", data_parallel_sharding = {}",
                                                  partition::sharding_name(*k.sharding))
                                    : std::string()),
                    e.what());
            }
            entries_[k] = std::move(entry);
        }
    }

    // The model that describes the search (the first one created).
    [[nodiscard]] const PreparedModel* any() const {
        for (const auto& [k, entry] : entries_) {
            if (entry->prepared)
                return &*entry->prepared;
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

    [[nodiscard]] partition::SearchOutcome plan(
        const partition::Problem& base, const partition::Configuration& c, bool refine = false,
        bool bound = true, const partition::SearchOutcome* before = nullptr) const {
        const Entry& entry = *entries_.at(per_degree_ ? key_of(c) : every_configuration);
        if (!entry.prepared) {
            partition::SearchOutcome out;
            out.configuration = c;
            out.status = partition::SearchOutcome::Status::invalid;
            out.message = entry.refused;
            return out;
        }
        return partition::plan_configuration(base, c, entry.memory, refine, bound, before);
    }

  private:
    struct Entry {
        std::optional<PreparedModel> prepared;
        partition::MemorySource memory;
        std::string refused;
    };
    bool per_degree_;
    // By configuration; one entry, at {0, 0, 0}, when the model serves every configuration.
    std::map<Key, std::unique_ptr<Entry>> entries_;
};

// How the data-parallel ranks synchronise, for the search's header.
std::string_view sync_description(partition::DataParallelSharding sharding) {
    switch (sharding) {
        case partition::DataParallelSharding::no_shard:
            return " (all-reduce)";
        case partition::DataParallelSharding::optim:
            return " (reduce-scatter + all-gather)";
        case partition::DataParallelSharding::optim_grads:
            return " (the weights' all-gather; optim_grads: the gradients reduce-scattered in "
                   "every "
                   "backward)";
        case partition::DataParallelSharding::optim_grads_params:
            return " (none left: optim_grads_params gathers each layer's weights before its "
                   "forward "
                   "and backward and reduce-scatters its gradients after it)";
    }
    return "";
}

// The transfers a configuration makes, timed on the cluster (ppb/partition/communication.hpp):
// with --device or --cluster and a model shape's times (ms). A layer file's times are in its own
// unit, which the cluster's cannot be added to.
struct CommunicationTiming {
    partition::ShapeSizes sizes;
    partition::Cluster cluster;
    partition::SyncOverlap overlap;

    // Plans `c` with the transfers between its stages, then adds its data-parallel
    // synchronisation.
    [[nodiscard]] partition::SearchOutcome plan(const ModelsByDegree& models,
                                                const partition::Problem& base,
                                                const partition::Configuration& c, bool refine,
                                                bool bound,
                                                const partition::SearchOutcome* before) const {
        return partition::plan_with_communication(
            sizes, cluster, overlap, base, c,
            [&](const partition::Problem& problem, const partition::Configuration& configuration) {
                return models.plan(problem, configuration, refine, bound, before);
            });
    }

    // For the search's header; `several_shardings`: each configuration's own.
    [[nodiscard]] std::string description(bool several_shardings) const {
        return fmt::format(
            "communication on {} {} per node ({:g} GB/s inside, {:g} GB/s across nodes): "
            "transfers between stages in the schedule, the data-parallel synchronisation after "
            "it{}{}",
            cluster.devices_per_node, cluster.device.name, cluster.intra_node_gb_s,
            cluster.network_gb_s,
            several_shardings ? " (as each configuration's sharding makes it)"
                              : sync_description(sizes.sharding),
            overlap.grad_reduce && overlap.param_gather
                ? ", overlapped with the last backward and the next forward"
            : overlap.grad_reduce ? ", the gradients' overlapped with the last backward"
                                  : "");
    }
};

// "P=2 d=32 M=2 1f1b recompute any: <why>" of the first configuration that cannot be planned.
std::string first_refusal(const partition::SearchResult& result) {
    for (const partition::SearchOutcome& o : result.outcomes) {
        if (o.status == partition::SearchOutcome::Status::invalid)
            return fmt::format("{}: {}", describe(o.configuration), o.message);
    }
    return {};
}

// No configuration has a plan: exit 4 with the smallest limit that fits one (or 2 when none
// could be planned at any limit).
[[noreturn]] void throw_nothing_fits(const partition::Problem& base,
                                     const partition::SearchResult& result) {
    const partition::SearchOutcome* closest = nullptr;
    for (const partition::SearchOutcome& o : result.outcomes) {
        if (o.status == partition::SearchOutcome::Status::infeasible &&
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
    const std::size_t refused = partition::count_outcomes(result).invalid;
    const std::string tried =
        refused == 0 ? fmt::format("{} configurations tried", result.outcomes.size())
                     : fmt::format("{} configurations tried, {} of them cannot be planned: {}",
                                   result.outcomes.size(), refused, first_refusal(result));
    throw partition::Infeasible(
        fmt::format("no configuration fits --memory-limit-mb {:.1f}{} ({}): {}",
                    base.memory_limit_mb,
                    base.memory_margin_mb > 0.0
                        ? fmt::format(" with a margin of {:.1f} MB", base.memory_margin_mb)
                        : std::string(),
                    tried, fits),
        closest->smallest_feasible_limit_mb);
}

int run_search_command(const SearchArgs& args) {
    // Everything the user typed is checked before any plugin is loaded.
    const std::optional<partition::Cluster> cluster = chosen_cluster(args.device);
    if ((args.device.overlap_grad_reduce || args.device.overlap_param_gather) &&
        !args.model_desc.empty()) {
        throw UsageError(fmt::format(
            "{}: the data-parallel synchronisation is timed on a cluster's links only, for a model "
            "shape's layers: give --device NAME or --cluster FILE, and --model-options SHAPE "
            "without --model-desc",
            args.device.overlap_grad_reduce ? "--overlap-grad-reduce" : "--overlap-param-gather"));
    }
    if (cluster && args.comm_time && args.model_desc.empty()) {
        throw UsageError(
            "--comm-time: the cluster's links time the transfers between stages of a model "
            "shape's layers (--device, --cluster): give one of them");
    }
    const ModelOptions options = args.choice.options.empty()
                                     ? ModelOptions{}
                                     : options_text(args.choice.options, "--model-options");
    const std::optional<json::object> shape = model_shape(options);
    // The degrees only a model shape's layers are sized and timed for (checked before anything is
    // said of the search).
    if (!args.expert_parallel.empty() &&
        (!shape || !args.model_desc.empty() || !shape->contains("moe") ||
         !shape->at("moe").is_object())) {
        throw UsageError(
            "--expert-parallel: the experts' degree changes the memory and the expert "
            "all-to-all, which need a model shape with \"moe\" (--model-options SHAPE without "
            "--model-desc) to size for each");
    }
    if (!args.sharding.empty() && (!shape || !args.model_desc.empty())) {
        throw UsageError(
            "--data-parallel-sharding: the sharding changes the memory and the transfers, which "
            "need a model shape (--model-options SHAPE without --model-desc) to size for each");
    }
    if (args.device.overlap_param_gather && shape && args.sharding.empty()) {
        const json::value* sharded = shape->if_contains("distributed_optimizer");
        const json::value* sharding = shape->if_contains("data_parallel_sharding");
        const bool gathers =
            (sharded != nullptr && sharded->is_bool() && sharded->as_bool()) ||
            (sharding != nullptr && sharding->is_string() && sharding->as_string() != "no_shard");
        if (!gathers) {
            throw UsageError(
                "--overlap-param-gather: the weights are gathered with the distributed optimizer "
                "only (Megatron-LM requires --use-distributed-optimizer); the model options have "
                "no \"distributed_optimizer\": true and no \"data_parallel_sharding\" but "
                "no_shard");
        }
    }
    const double memory_limit_mb = memory_limit_of(args.memory_limit_mb, cluster, "");
    if (args.memory_margin_mb >= memory_limit_mb)
        throw UsageError("--memory-margin-mb: expected less than --memory-limit-mb");
    if (!args.devices && args.pipeline_degrees.empty())
        throw UsageError("give --devices N or --pipeline-degrees P,... (or both)");
    if (args.devices && args.data_parallel) {
        throw UsageError(
            "--data-parallel: with --devices every pipeline degree P has its own, N / (P x t)");
    }
    // What every configuration's problem shares: the limit, the margins, the rule.
    partition::Problem common;
    common.memory_limit_mb = memory_limit_mb;
    common.memory_margin_mb = args.memory_margin_mb;
    common.memory_margin_sigma = args.memory_margin_sigma;
    common.rule = *partition::rule_from_name(args.recompute_rule);  // checked by CLI11
    if (args.comm_time) {
        if (!std::isfinite(*args.comm_time) || *args.comm_time < 0.0) {
            throw UsageError(fmt::format(
                "--comm-time: {} is not a time: give a finite number, at least 0, in the layer "
                "times' unit",
                *args.comm_time));
        }
        common.comm_time = {*args.comm_time};  // every boundary of every pipeline degree
    }
    // The tensor-parallel degrees and micro-batch sizes: the flags' lists, else the shape's.
    const bool shape_times = shape.has_value() && args.model_desc.empty();
    if ((args.tensor_parallel.size() > 1 || args.micro_batch_size.size() > 1 ||
         args.context_parallel.size() > 1) &&
        !shape_times) {
        throw UsageError(fmt::format(
            "{}: several values need a model shape's layers (--model-options SHAPE without "
            "--model-desc), timed and sized for each; a layer file's times are for one",
            args.tensor_parallel.size() > 1    ? "--tensor-parallel"
            : args.micro_batch_size.size() > 1 ? "--micro-batch-size"
                                               : "--context-parallel"));
    }
    // With a shape's times the flags' values replace the shape's; with a layer file's, whose
    // times are for one t and b, they must agree with the memory model's shape.
    const auto one_or_shapes = [&](const std::vector<std::uint32_t>& given, std::string_view flag,
                                   std::string_view key) {
        if (given.size() > 1 || (shape_times && !given.empty()))
            return given;
        return std::vector<std::uint32_t>{
            agreed(given.empty() ? std::nullopt : std::optional<std::uint32_t>(given.front()), flag,
                   shape ? &*shape : nullptr, key, 1)};
    };
    const std::vector<std::uint32_t> tps =
        one_or_shapes(args.tensor_parallel, "--tensor-parallel", "tensor_parallel");
    const std::vector<std::uint32_t> sizes =
        one_or_shapes(args.micro_batch_size, "--micro-batch-size", "micro_batch_size");
    const std::vector<std::uint32_t> cps =
        one_or_shapes(args.context_parallel, "--context-parallel", "context_parallel");
    // --data-parallel-sharding: each a configuration, its memory from the shape with that
    // sharding, its transfers timed for it.
    std::vector<partition::DataParallelSharding> sharding_list;
    for (const std::string& name : args.sharding) {
        const auto sharding = *partition::sharding_from_name(name);  // checked by CLI11
        if (std::find(sharding_list.begin(), sharding_list.end(), sharding) == sharding_list.end())
            sharding_list.push_back(sharding);
    }
    // --expert-parallel: each EP a configuration, the shape's MoE layers spread over it.
    std::vector<std::uint32_t> ep_list;
    for (const std::uint32_t ep : args.expert_parallel) {
        if (std::find(ep_list.begin(), ep_list.end(), ep) == ep_list.end())
            ep_list.push_back(ep);
    }
    const json::value* moe = shape ? shape->if_contains("moe") : nullptr;

    if (cluster && !args.model_desc.empty()) {
        fmt::print(stderr,
                   "ppb: note: the layer file's times are in its own unit: communication is not "
                   "timed from the cluster (--comm-time gives the transfers between stages)\n");
    }
    // Per tensor-parallel degree, context-parallel degree and micro-batch size: the layer times
    // (and the shape's sizes for the cluster's transfers), in a problem of their own.
    struct Variant {
        ModelOptions options;
        LayerTimes times;
        partition::Problem base;
        std::optional<CommunicationTiming> communication;
    };
    // t, cp, b, the sharding and EP (none: the shape's own).
    using VariantKey =
        std::tuple<std::uint32_t, std::uint32_t, std::uint32_t,
                   std::optional<partition::DataParallelSharding>, std::optional<std::uint32_t>>;
    std::vector<std::optional<std::uint32_t>> eps(ep_list.begin(), ep_list.end());
    if (eps.empty())
        eps.emplace_back(std::nullopt);
    std::vector<std::optional<partition::DataParallelSharding>> shardings;
    for (const partition::DataParallelSharding s : sharding_list)
        shardings.emplace_back(s);
    if (shardings.empty())
        shardings.emplace_back(std::nullopt);
    std::map<VariantKey, Variant> variants;
    for (const std::uint32_t t : tps) {
        for (const std::uint32_t cp : cps) {
            for (const std::uint32_t b : sizes) {
                for (const std::optional<partition::DataParallelSharding>& sharding : shardings) {
                    for (const std::optional<std::uint32_t>& ep : eps) {
                        ModelOptions variant_options = options;
                        if (shape_times) {
                            json::object with = *shape;
                            with["tensor_parallel"] = t;
                            with["micro_batch_size"] = b;
                            with["context_parallel"] = cp;
                            if (sharding)
                                set_sharding(with, *sharding);
                            if (ep)
                                set_expert_parallel(with, *ep);
                            variant_options.json = to_compact_json(with);
                        }
                        Variant v{
                            variant_options,
                            read_layer_times(args.model_desc, variant_options,
                                             achieved_tflops(args.device, cluster), cluster,
                                             args.time_convention, args.device.tp_comm_overlap),
                            common, std::nullopt};
                        v.base.time = v.times.time;
                        if (cluster && shape_times) {
                            v.communication = CommunicationTiming{
                                partition::shape_sizes(variant_options.json, options.file.empty()
                                                                                 ? "--model-options"
                                                                                 : options.file),
                                *cluster,
                                {args.device.overlap_grad_reduce,
                                 args.device.overlap_param_gather}};
                        }
                        variants.emplace(VariantKey{t, cp, b, sharding, ep}, std::move(v));
                    }
                }
            }
        }
    }
    const Variant& first = variants.begin()->second;
    for (const std::string& warning : first.base.time.warnings)
        fmt::print(stderr, "ppb: warning: {}\n", warning);
    const LayerTimes& times = first.times;
    const std::optional<CommunicationTiming>& communication = first.communication;
    // The micro-batch size `first` is sized for (its tokens and FLOPs per sample are every
    // variant's: t and cp split a sample's work, they do not change it).
    const double first_b = std::get<2>(variants.begin()->first);

    partition::SearchSpace space;
    space.devices = args.devices;
    space.pipeline_degrees = args.pipeline_degrees;
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
    if (moe != nullptr && moe->is_object()) {
        if (const auto etp = shape_count(moe->as_object(), "expert_tensor_parallel"))
            space.expert_tensor_parallel = *etp;
    }
    space.data_parallel =
        args.data_parallel.value_or(shape ? shape_count(*shape, "data_parallel").value_or(1) : 1);
    space.global_batch = args.global_batch;
    space.schedules = schedule_choices(args);
    space.recompute.clear();
    for (const std::string& name : args.recompute) {
        const partition::RecomputePolicy policy = partition::recompute_policy(name);
        if (std::find(space.recompute.begin(), space.recompute.end(), policy) ==
            space.recompute.end()) {
            space.recompute.push_back(policy);
        }
    }
    const partition::SearchPlan plan = partition::search_configurations(space, first.base.time);

    const std::optional<DryRunSet> dryrun = read_optional_dryrun(args.dryrun, args.read);
    std::vector<ModelsByDegree::Key> keys;
    for (const partition::Configuration& c : plan.configurations) {
        const ModelsByDegree::Key k = ModelsByDegree::key_of(c);
        if (std::find(keys.begin(), keys.end(), k) == keys.end())
            keys.push_back(k);
    }
    const ModelsByDegree models(args, dryrun, options, shape, first.base, keys);
    // `before`: the configuration's first plan, which planning it again with the local search
    // starts from rather than solving it again.
    const auto plan_one = [&](const partition::Configuration& c, bool refine,
                              const partition::SearchOutcome* before) {
        const Variant& v =
            variants.at(VariantKey{c.tensor_parallel, c.context_parallel, c.micro_batch_size,
                                   c.sharding, c.expert_parallel});
        // The bounds say which configurations the local search must plan again; --fast plans
        // none again and needs none.
        const bool bound = !args.fast;
        return v.communication ? v.communication->plan(models, v.base, c, refine, bound, before)
                               : models.plan(v.base, c, refine, bound, before);
    };
    const partition::Problem& base = first.base;
    const PreparedModel* described = models.any();
    if (described == nullptr)
        throw InputError(models.first_refusal());

    ProgressBar bar(progress_mode(args.progress), "configurations");
    partition::SearchResult result;
    {
        const InterruptScope scope;
        result = partition::run_search(
            plan.configurations,
            [&](const partition::Configuration& c) { return plan_one(c, false, nullptr); },
            {.jobs = args.jobs,
             .on_progress =
                 [&](const partition::SearchProgress& p) { bar.update(p.done, p.total); },
             .stop = &interrupted});
        // The best configurations with chunks, and every other one that could still be among
        // them, planned again with the local search on the simulated iteration (the plan `ppb
        // partition` makes); --fast keeps the exact optima.
        if (!args.fast && !result.stopped) {
            (void)partition::refine_best(
                result, partition::refined_configurations,
                [&](const partition::Configuration& c, const partition::SearchOutcome& before) {
                    return plan_one(c, true, &before);
                },
                {.jobs = args.jobs, .stop = &interrupted});
        }
        bar.finish();
    }

    const partition::SearchContext context{
        {described->model.name(), described->model.version(), described->source, times.unit},
        times.source,
        times.unit,
        args.top,
        args.show_infeasible,
        communication ? communication->description(space.shardings.size() > 1) : std::string(),
        communication ? std::optional<partition::Throughput>(partition::Throughput{
                            communication->sizes.tokens_per_micro_batch / first_b,
                            communication->sizes.model_flops_per_micro_batch / first_b,
                            communication->cluster.peak_tflops()})
                      : std::nullopt};
    if (!result.stopped) {
        // Nothing fits: the smallest limit that fits a configuration, and exit 4 (or 2 when no
        // configuration could be planned at all).
        if (partition::ranked(result).empty())
            throw_nothing_fits(base, result);
    }
    if (!args.report.empty()) {
        // Every planned configuration on the page (the chart has one point each), and the best
        // plan's timeline with its memory, which the search did not trace.
        partition::SearchContext all = context;
        all.top = 0;
        std::string timeline;
        if (const auto best = partition::ranked(result); !best.empty()) {
            const partition::PlannedPartition& p = *best.front()->planned;
            timeline = timeline_svg(simulate(partition::simulation_input(p.problem, p.plan)),
                                    report_timeline_options());
        }
        write_output_file(
            args.report,
            search_report_html(partition::search_document(space, base, plan, result, all), timeline,
                               {described->source, times.unit}));
    }
    write_stdout(
        args.json ? to_pretty_json(partition::search_document(space, base, plan, result, context))
                  : render_search(space, base, plan, result, context));
    if (result.stopped) {
        fmt::print(stderr,
                   "ppb: interrupted: planned {} of {} configurations; the ranking covers those\n",
                   result.outcomes.size(), plan.configurations.size());
        return 128 + SIGINT;
    }
    return 0;
}

}  // namespace

void add_search_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<SearchArgs>();
    CLI::App* search = add_command(
        app, "search", "rank pipeline configurations by their planned iteration time",
        "Plans every combination of pipeline degree P, schedule (and chunks) and recompute\n"
        "policy exactly, as 'ppb partition' does, and ranks them by the simulated iteration\n"
        "time of their optimal plans (one iteration processes the global batch B): with N\n"
        "devices and tensor parallel t, P makes d = N / (P t) data-parallel replicas, each\n"
        "running M = B / (b d) micro-batches of b samples; with a model shape, several t and b\n"
        "(--tensor-parallel 2,4,8 --micro-batch-size 1,2) are searched too. Each line shows the "
        "memory headroom\n"
        "of the plan's fullest stage. The layer times are the layer file's, for its micro-batch\n"
        "size and tensor parallel (the times do not change with P). With --device or --cluster\n"
        "and a model shape, the transfers between stages and the data-parallel gradient\n"
        "synchronisation are timed on the cluster's links (host_api/docs/cluster.md); otherwise\n"
        "--comm-time alone. A model configured by a shape\n"
        "(options holding tensor_parallel, like the analytic model's) is given each\n"
        "configuration's data_parallel; a model fitted to dry runs predicts as it was fitted.\n"
        "Configurations are planned on every core (--jobs); the results do not depend on it.\n"
        "A progress bar shows on a terminal after a second; Ctrl-C stops the search and prints\n"
        "the ranking of the configurations planned so far (exit status 130)."
        "\n\n"
        "Exit status: 0 ranked, 2 invalid input or usage (a global batch the micro-batch size\n"
        "and data-parallel degree do not divide, pipeline degrees that do not divide the\n"
        "devices, an empty search space), 3 plugin not found or failed, 4 no configuration fits\n"
        "the memory limit (stderr gives the smallest limit that fits one), 130 interrupted, 1\n"
        "other errors.");
    search
        ->add_option("--model-desc", args->model_desc,
                     "layer file in the SAPP shape (HEAD / BODY / TAIL entries with nb_layer\n"
                     "and times); without it, the model shape of --model-options is timed\n"
                     "from its FLOPs (ms at --device-tflops)")
        ->type_name("FILE");
    add_device_options(*search, args->device);
    add_time_convention_option(*search, args->time_convention);
    search->add_option("--devices", args->devices, "devices in all, N (every P dividing N / t)")
        ->type_name("N")
        ->check(count_in({1, 1'000'000, "devices"}));
    as_comma_list(search->add_option("--pipeline-degrees,--stages", args->pipeline_degrees,
                                     "the pipeline degrees to consider (default: every P\n"
                                     "dividing N / t that leaves each stage a layer)"))
        ->type_name("P,...")
        ->check(count_in(limits::stages));
    as_comma_list(
        search->add_option("--tensor-parallel", args->tensor_parallel,
                           "tensor-parallel degrees t to consider (default: the model options'\n"
                           "tensor_parallel, or 1); several need a model shape (--model-options)"))
        ->type_name("T,...")
        ->check(count_in({1, 1'000'000, "devices"}));
    search
        ->add_option("--data-parallel", args->data_parallel,
                     "data-parallel degree without --devices (default: the model options'\n"
                     "data_parallel, or 1)")
        ->type_name("D")
        ->check(count_in({1, 1'000'000, "replicas"}));
    search
        ->add_option("--global-batch,--global-batch-size", args->global_batch,
                     "samples per iteration, B")
        ->type_name("B")
        ->required()
        ->check(count_in({1, 1'000'000'000, "samples"}));
    as_comma_list(
        search->add_option("--micro-batch-size", args->micro_batch_size,
                           "samples per micro-batch b to consider (default: the model options'\n"
                           "micro_batch_size, or 1); several need a model shape"))
        ->type_name("b,...")
        ->check(count_in({1, 1'000'000, "samples"}));
    as_comma_list(
        search->add_option("--context-parallel", args->context_parallel,
                           "context-parallel degrees cp to consider (default: the model options'\n"
                           "context_parallel, or 1); several need a model shape"))
        ->type_name("CP,...")
        ->check(count_in({1, 1'000'000, "devices"}));
    as_comma_list(search->add_option(
                      "--expert-parallel", args->expert_parallel,
                      "expert-parallel degrees EP of an MoE shape to consider, each a\n"
                      "configuration (default: the model options' moe.expert_parallel); EP x ETP\n"
                      "must divide t x cp x d"))
        ->type_name("EP,...")
        ->check(count_in({1, 1'000'000, "devices"}));
    as_comma_list(
        search->add_option(
            "--data-parallel-sharding", args->sharding,
            "what data parallelism shards, each a configuration (default: the model options'):\n"
            "no_shard, optim (the distributed optimizer), optim_grads, optim_grads_params\n"
            "(Megatron-FSDP, FSDP2); needs a model shape"))
        ->type_name("S,...")
        ->check(CLI::IsMember(std::vector<std::string>(partition::sharding_names.begin(),
                                                       partition::sharding_names.end())));
    as_comma_list(
        search->add_option("--schedules,--schedule", args->schedules, "schedules to consider"))
        ->type_name("NAME,...")
        ->capture_default_str()
        ->check(CLI::IsMember(
            {"1f1b", "interleaved", "interleaved-less-memory", "dualpipe-v", "zb-h1", "zb-v"}));
    as_comma_list(search->add_option("--chunks", args->chunks,
                                     "chunks per stage to consider for the interleaved schedules"))
        ->type_name("V,...")
        ->capture_default_str()
        ->check(count_in({2, limits::chunks.max, "chunks"}));
    as_comma_list(search->add_option(
                      "--recompute", args->recompute,
                      "recompute policies to consider: 'any' (the best kind per layer among\n"
                      "all the model predicts), a kind (every layer: none, select, comm, both,\n"
                      "full) or kinds joined by '+' (none+full)"))
        ->type_name("POLICY,...")
        ->capture_default_str();
    search
        ->add_option("--recompute-rule", args->recompute_rule,
                     "mixes of kinds a stage may hold (as for 'ppb partition')")
        ->type_name("RULE")
        ->capture_default_str()
        ->check(CLI::IsMember({"mindformers", "any", "megatron", "torchtitan"}));
    search
        ->add_option("--memory-limit-mb", args->memory_limit_mb,
                     "device memory available to a stage, MB (default: the memory of --device\n"
                     "or --cluster)")
        ->type_name("X")
        ->check(number_in(limits::positive_memory_mb));
    search->add_option("--memory-margin-mb", args->memory_margin_mb, "plan against X - Y")
        ->type_name("Y")
        ->capture_default_str()
        ->check(number_in(limits::memory_mb));
    search
        ->add_option("--memory-margin-sigma", args->memory_margin_sigma,
                     "plan against the prediction + K standard errors (1f1b)")
        ->type_name("K")
        ->capture_default_str()
        ->check(number_in(limits::margin_sigma));
    add_model_options(*search, args->choice);
    search
        ->add_option("--dryrun", args->dryrun,
                     "dry-run observations to fit the model to (dryrun-lsq)")
        ->type_name("FILE");
    add_duplicate_tolerance_option(*search, args->read);
    search->add_option("--top", args->top, "configurations listed (0: all)")
        ->type_name("N")
        ->capture_default_str()
        ->check(count_in({0, 1'000'000, "configurations"}));
    search->add_flag("--show-infeasible", args->show_infeasible,
                     "also list the configurations that do not fit, with the smallest\n"
                     "limit that would, and the combinations left out and why");
    search
        ->add_option("--jobs", args->jobs,
                     "threads planning configurations (default 0: one per core)")
        ->type_name("J")
        ->capture_default_str()
        ->check(count_in({0, 1024, "threads"}));
    search
        ->add_option("--progress", args->progress,
                     "progress bar on stderr: 'auto' (on a terminal, after a second),\n"
                     "'always' or 'never'")
        ->type_name("WHEN")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "always", "never"}));
    search
        ->add_option("--comm-time", args->comm_time,
                     "point-to-point time of one transfer between neighbouring stages, in\n"
                     "the layer times' unit (the layer file's; ms for times from a model\n"
                     "shape), on every boundary of every configuration:\n"
                     "each plan's simulated iteration (the ranking) waits for it")
        ->type_name("T");
    search->add_flag("--fast", args->fast,
                     "skip the local search on the simulated iteration that plans again the 8\n"
                     "best configurations with chunks and every other that could still be among\n"
                     "them (each configuration is then the exact optimum of the better\n"
                     "estimate, as ppb partition --fast)");
    search->add_flag("--json", args->json, "print ppb.search/1 JSON instead of a table");
    search
        ->add_option("--report", args->report,
                     "also write the search as one self-contained HTML page to FILE: the\n"
                     "ranking, iteration time against headroom, the best plan")
        ->type_name("FILE.html");
    commands.push_back({search, [args] { return run_search_command(*args); }, {}});
}

}  // namespace ppb::cli
