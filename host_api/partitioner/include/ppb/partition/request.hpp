// ppb/partition/request.hpp — a partition problem as a host is asked for it.
//
// `ppb partition` and Python's ppb.partition take the same settings (stages, the memory limit
// and its margins, the recompute kinds and rule, the schedule and its chunks, the objective, the
// transfers between stages, the weight-gradient share, the local search) and must check and
// read them alike. This is their one owner: the host fills a PartitionRequest from what it was
// given, and problem_of checks every field and builds the Problem (all but its times and its
// micro-batch count, which come from the layer file or the model shape, and from the dry run).
// The times too have one owner here: a TimesRequest (a SAPP layer file, or a model shape's FLOPs
// on a device or a cluster) read by times_of, and set_times putting them in the problem with the
// transfers a shape's configuration makes on the cluster's links.
//
// Errors carry the field they are about (RequestError::field(), the Python keyword's name,
// "memory_margin_mb"); their message names fields in the host's own words, through the host's
// FieldName ("--memory-margin-mb" for the command, "memory_margin_mb" for Python), so that no
// user is told about a flag they never typed.
#ifndef PPB_PARTITION_REQUEST_HPP
#define PPB_PARTITION_REQUEST_HPP

#include <ppb/errors.hpp>
#include <ppb/partition/cluster.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/request_error.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

struct PartitionRequest {
    std::uint32_t stages = 1;
    double memory_limit_mb = 0.0;
    double memory_margin_mb = 0.0;
    double memory_margin_sigma = 0.0;
    std::vector<std::string> kinds = {};  // recompute kinds' names; empty: every kind
    std::string recompute_rule = "mindformers";
    std::string schedule = "1f1b";
    std::optional<std::uint32_t> chunks = std::nullopt;  // default_chunks(schedule)
    std::string objective = "auto";                      // auto, stages or slots
    // One time for every stage boundary or one per boundary, in the layer times' unit.
    std::vector<double> comm_time = {};
    double weight_grad_share = 0.5;
    bool refine = false;  // kept for scripts: the local search is the default
    bool fast = false;    // the exact optimum alone, no local search
};

// The memory limit, its margin in MB and in standard errors checked (memory_limit_mb,
// memory_margin_mb, memory_margin_sigma), and the rule of recompute_rule read: what every
// request that plans shares.
void check_limit_and_margins(double memory_limit_mb, double memory_margin_mb,
                             double memory_margin_sigma, const FieldName& name);
[[nodiscard]] RecomputeRule recompute_rule_of(std::string_view text, const FieldName& name);

// The problem `request` asks for, every field checked (RequestError naming the first wrong one,
// in `name`'s words); its `time` empty and its `micro_batches` 1, for the host to set.
[[nodiscard]] Problem problem_of(const PartitionRequest& request, const FieldName& name);

// The micro-batches per iteration: `given` (checked), else the dry run's (`dryrun`: nullopt
// without a dry run, 0 when the dry run does not give them), else a RequestError naming
// micro_batches and why there are none.
[[nodiscard]] std::uint32_t micro_batches_of(std::optional<std::uint64_t> given,
                                             std::optional<std::uint32_t> dryrun,
                                             const FieldName& name);

// How plan_with_model plans `problem` (problem_of's) for `request`: the objective chosen by
// simulation when it is "auto", the local search unless `fast`. RequestError for refine with
// fast, or refine on a problem without chunks (whose plans are exact already).
[[nodiscard]] PlanWithModelOptions plan_options_of(const PartitionRequest& request,
                                                   const Problem& problem, const FieldName& name);

// Where the layers' times come from: the SAPP layer file `layer_file` when given, else the model
// shape `shape_json` (the analytic model's options) timed from its FLOPs at `device_tflops`, or on
// `cluster` (its device's rate x achievable fraction, each layer's collectives on its links).
struct TimesRequest {
    std::string layer_file;                          // field "model_desc"
    std::string time_convention = "hyper-parallel";  // field "sapp_time_convention"
    std::string shape_json;                          // field "model_options"
    std::string shape_source = "model_options";      // the shape's name in messages (a file's path)
    double device_tflops = 400.0;
    std::optional<Cluster> cluster = std::nullopt;
    // Megatron-LM's overlaps, timed on the cluster: --tp-comm-overlap, --overlap-grad-reduce,
    // --overlap-param-gather.
    bool tp_comm_overlap = false;
    bool overlap_grad_reduce = false;
    bool overlap_param_gather = false;
    // Megatron-LM's --overlap-moe-expert-parallel-comm, which the combined-1f1b schedule runs
    // (the host sets it from the schedule): a model shape's MoE layers on the cluster have their
    // expert all-to-all under the paired pass's compute (ShapeTimeSettings::expert_overlap).
    bool expert_overlap = false;
};

// Why Megatron-LM does not run the combined 1F1B (--overlap-moe-expert-parallel-comm) for the
// model shape `shape_json`, or "" when it does: the shape has no MoE layers, expert parallelism
// 1, or more than one multi-token prediction layer (transformer_config.py at d98e8a64dd).
// Nothing is said of a malformed shape, which its reader names.
[[nodiscard]] std::string expert_overlap_refusal(std::string_view shape_json);

// What a model shape's own settings let a plan hold, as the framework runs them: Megatron-LM's
// layer-level CPU offloading (cpu_offloading_num_layers, --cpu-offloading-num-layers) runs on one
// pipeline stage and without recomputation (transformer_config.py at d98e8a64dd, __post_init__),
// so such a shape's plans hold the kind none only, on one stage. `why` names the setting (empty
// when the shape limits nothing, or is not a shape: its reader names a malformed one).
struct ShapeLimits {
    std::uint32_t kinds = PPB_ALL_KINDS;
    bool one_stage = false;
    std::string why;
};
[[nodiscard]] ShapeLimits shape_limits(std::string_view shape_json);

struct RequestTimes {
    TimeModel time;
    std::string source;  // "samples/data/llama70b-layers.json", "FLOPs of SHAPE at 400 TFLOP/s"
    std::string unit;    // "ms" from a shape; empty: the layer file's own unit
    // A model shape's layers on a cluster: what its transfers move, over `replicas` data-parallel
    // replicas (the shape's data_parallel); nullopt otherwise.
    std::optional<ShapeSizes> sizes = std::nullopt;
    std::uint32_t replicas = 1;
    // The multi-token prediction layers the model shape (the options, when they are one) gives,
    // for the frameworks' layouts (Problem::mtp); none without a shape.
    MtpLayers mtp = {};
    // The MoE token dispatcher the layers are timed with (Problem::token_dispatcher).
    std::string token_dispatcher = "alltoall";
    // What the model shape lets a plan hold (set_times applies it).
    ShapeLimits limits = {};
};

// The MoE token dispatcher a model shape's layers are timed with: its moe.token_dispatcher
// ("alltoall" or "flex", which the time model checks), else "alltoall"; "alltoall" for a dense
// shape or anything that is not a shape.
[[nodiscard]] std::string token_dispatcher_of(std::string_view shape_json);

// Whether `options_json` is a model shape (a JSON object holding tensor_parallel, as the analytic
// model's options do).
[[nodiscard]] bool is_model_shape(std::string_view options_json);

// The times `request` asks for. RequestError: neither a layer file nor a shape, an unknown time
// convention, the overlaps without a shape on a cluster, --overlap-param-gather without the
// distributed optimizer, the expert overlap for a shape Megatron-LM does not run it with
// (expert_overlap_refusal, on field "schedule"). InputError for a bad layer file or shape (named by
// its source).
[[nodiscard]] RequestTimes times_of(const TimesRequest& request, const FieldName& name);

// The memory limit: `given`, else the cluster's device memory, else a RequestError naming
// memory_limit_mb, the device and the cluster (and `alternatives`, in the host's words).
[[nodiscard]] double memory_limit_of(std::optional<double> given,
                                     const std::optional<Cluster>& cluster, const FieldName& name,
                                     std::string_view alternatives = {});

// `times` into `problem` (problem_of's: its stages and schedule set). A shape's layers on a
// cluster also carry what their sharded weights and gradients move (with_sharded_transfers), and
// unless the host was given the times between stages (`comm_time_given`), each stage boundary
// its transfer on the cluster's links (pipeline_transfer_ms). The shape's limits narrow the
// kinds, with a warning in problem.time.warnings when that leaves out a kind asked for;
// RequestError on "kinds" when none is left, on "stages" for several stages of a one-stage shape.
void set_times(Problem& problem, const RequestTimes& times, const Cluster* cluster,
               bool comm_time_given, const FieldName& name);

// A shape's data-parallel synchronisation after the iteration of `plan` (data_parallel_sync_ms,
// with the request's overlaps), when its layers are timed on a cluster; nullopt otherwise.
[[nodiscard]] std::optional<double> data_parallel_sync_of(const RequestTimes& times,
                                                          const TimesRequest& request,
                                                          const Problem& problem, const Plan& plan);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_REQUEST_HPP
