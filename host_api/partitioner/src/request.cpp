// A partition problem as a host is asked for it (ppb/partition/request.hpp).
#include <ppb/partition/request.hpp>

#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/schedule.hpp>
#include <ppb/simulator.hpp>

#include "shape_count.hpp"

#include <boost/json/parse.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace ppb::partition {
void check_limit_and_margins(double memory_limit_mb, double memory_margin_mb,
                             double memory_margin_sigma, const FieldName& name) {
    if (!(memory_limit_mb > 0.0) || !std::isfinite(memory_limit_mb))
        refuse("memory_limit_mb", name, "expected a positive number of MB");
    if (!(memory_margin_mb >= 0.0) || memory_margin_mb >= memory_limit_mb) {
        refuse("memory_margin_mb", name,
               fmt::format("expected at least 0 and less than {}", name("memory_limit_mb")));
    }
    if (!limits::margin_sigma.contains(memory_margin_sigma)) {
        refuse("memory_margin_sigma", name,
               limits::out_of_range(fmt::format("{}", memory_margin_sigma), limits::margin_sigma));
    }
}

RecomputeRule recompute_rule_of(std::string_view text, const FieldName& name) {
    const auto rule = rule_from_name(text);
    if (!rule) {
        refuse("recompute_rule", name,
               fmt::format("expected 'mindformers', 'any', 'megatron' or 'torchtitan', got '{}'",
                           text));
    }
    return *rule;
}

Problem problem_of(const PartitionRequest& request, const FieldName& name) {
    Problem problem;
    check_count("stages", request.stages, limits::stages, name);
    problem.num_stages = request.stages;
    check_limit_and_margins(request.memory_limit_mb, request.memory_margin_mb,
                            request.memory_margin_sigma, name);
    problem.memory_limit_mb = request.memory_limit_mb;
    problem.memory_margin_mb = request.memory_margin_mb;
    problem.memory_margin_sigma = request.memory_margin_sigma;
    if (!request.kinds.empty()) {
        std::uint32_t mask = 0;
        for (const std::string& kind_text : request.kinds) {
            const auto kind = kind_from_name(kind_text);
            if (!kind) {
                refuse("kinds", name, unknown_kind(kind_text));
            }
            mask |= PPB_KIND_BIT(*kind);
        }
        problem.kinds = mask;
    }
    problem.rule = recompute_rule_of(request.recompute_rule, name);
    problem.schedule = schedule_named(request.schedule, name);
    problem.kinds = schedule_kinds(problem.schedule, problem.kinds);
    if (problem.kinds == 0)
        refuse("kinds", name, full_recompute_refusal(problem.schedule));
    problem.chunks = request.chunks.value_or(problem.schedule == Schedule::combined_1f1b &&
                                                     problem.num_stages == 1
                                                 ? 1
                                                 : default_chunks(problem.schedule));
    check_count("chunks", problem.chunks, limits::chunks, name);
    if (request.objective != "auto" && request.objective != "stages" &&
        request.objective != "slots") {
        refuse("objective", name,
               fmt::format("expected 'auto', 'stages' or 'slots', got '{}'", request.objective));
    }
    problem.objective =
        request.objective == "slots" ? ChunkObjective::slots : ChunkObjective::stages;
    for (const double c : request.comm_time) {
        if (!std::isfinite(c) || c < 0.0) {
            refuse("comm_time", name,
                   fmt::format("{} is not a time: give a finite number, at least 0, in the layer "
                               "times' unit (one for every stage boundary, or one per boundary)",
                               c));
        }
    }
    problem.comm_time = request.comm_time;
    try {
        (void)boundary_comm_times(problem.schedule, problem.num_stages, problem.comm_time);
    } catch (const InputError& e) {
        refuse("comm_time", name, e.what());
    }
    if (!(request.weight_grad_share >= 0.0 && request.weight_grad_share <= 1.0)) {
        refuse(
            "weight_grad_share", name,
            fmt::format("{} is not a share: give a number from 0 to 1", request.weight_grad_share));
    }
    problem.weight_grad_share = request.weight_grad_share;
    return problem;
}

PlanWithModelOptions plan_options_of(const PartitionRequest& request, const Problem& problem,
                                     const FieldName& name) {
    if (request.refine && !problem.chunked())
        refuse("refine", name, "1f1b plans are exact already; it is for the schedules with chunks");
    if (request.refine && request.fast) {
        throw RequestError("refine", fmt::format("{} and {}: the local search is the default; {} "
                                                 "skips it",
                                                 name("refine"), name("fast"), name("fast")));
    }
    return {.choose_objective = request.objective == "auto", .refine = !request.fast};
}

namespace {

// The options as a JSON object, parsed without judging them (their reader names what is wrong),
// or nothing.
std::optional<boost::json::object> options_object(std::string_view options_json) {
    boost::system::error_code ec;
    boost::json::value parsed = boost::json::parse(options_json, ec);
    if (ec || !parsed.is_object())
        return std::nullopt;
    return std::move(parsed.as_object());
}

// A model shape's options: an object holding tensor_parallel, as the analytic model's do.
std::optional<boost::json::object> shape_object(std::string_view options_json) {
    std::optional<boost::json::object> out = options_object(options_json);
    if (out && !out->contains("tensor_parallel"))
        return std::nullopt;
    return out;
}

// The multi-token prediction layers of a model shape: its mtp_num_layers and mtp_stage_offset
// (the analytic model's keys, whose reader refuses bad values), none where the shape has none.
MtpLayers mtp_in(const boost::json::object& shape) {
    const std::uint32_t layers = detail::shape_count(shape, "mtp_num_layers").value_or(0);
    if (layers == 0)
        return {};
    return {layers, detail::shape_count(shape, "mtp_stage_offset").value_or(0)};
}

std::string expert_overlap_refusal_in(const boost::json::object& shape) {
    const boost::json::value* moe = shape.if_contains("moe");
    if (moe == nullptr || !moe->is_object()) {
        return "combined-1f1b overlaps the expert all-to-all of MoE layers, and the model options "
               "have none (no \"moe\")";
    }
    if (detail::shape_count(moe->as_object(), "expert_parallel").value_or(1) == 1) {
        return "Megatron-LM runs --overlap-moe-expert-parallel-comm (combined-1f1b) with expert "
               "parallelism only, and moe.expert_parallel is 1";
    }
    if (const std::uint32_t mtp = detail::shape_count(shape, "mtp_num_layers").value_or(0);
        mtp > 1) {
        return fmt::format(
            "Megatron-LM runs --overlap-moe-expert-parallel-comm (combined-1f1b) with at most one "
            "multi-token prediction layer, and mtp_num_layers is {}",
            mtp);
    }
    return {};
}

std::string token_dispatcher_in(const boost::json::object& shape) {
    const boost::json::value* moe = shape.if_contains("moe");
    const boost::json::value* dispatcher = moe != nullptr && moe->is_object()
                                               ? moe->as_object().if_contains("token_dispatcher")
                                               : nullptr;
    return dispatcher != nullptr && dispatcher->is_string() ? std::string(dispatcher->as_string())
                                                            : std::string("alltoall");
}

ShapeLimits shape_limits_in(const boost::json::object& shape) {
    const std::uint32_t offloaded =
        detail::shape_count(shape, "cpu_offloading_num_layers").value_or(0);
    if (offloaded == 0)
        return {};
    return {.kinds = PPB_KIND_BIT(PPB_KIND_NONE),
            .one_stage = true,
            .why = fmt::format(
                "the model shape offloads the activations of {} layer{} to the host "
                "(cpu_offloading_num_layers), which Megatron-LM runs on one pipeline stage and "
                "without recomputation",
                offloaded, offloaded == 1 ? "" : "s")};
}

}  // namespace

std::string expert_overlap_refusal(std::string_view shape_json) {
    const std::optional<boost::json::object> shape = options_object(shape_json);
    return shape ? expert_overlap_refusal_in(*shape) : std::string();
}

std::string token_dispatcher_of(std::string_view shape_json) {
    const std::optional<boost::json::object> shape = options_object(shape_json);
    return shape ? token_dispatcher_in(*shape) : std::string("alltoall");
}

ShapeLimits shape_limits(std::string_view shape_json) {
    const std::optional<boost::json::object> shape = options_object(shape_json);
    return shape ? shape_limits_in(*shape) : ShapeLimits{};
}

bool is_model_shape(std::string_view options_json) {
    return shape_object(options_json).has_value();
}

RequestTimes times_of(const TimesRequest& request, const FieldName& name) {
    const auto convention = time_convention_from_name(request.time_convention);
    if (!convention) {
        refuse("sapp_time_convention", name,
               fmt::format("expected 'hyper-parallel' or 'toolkit', got '{}'",
                           request.time_convention));
    }
    if (request.tp_comm_overlap && !request.cluster) {
        refuse("tp_comm_overlap", name,
               fmt::format("the layers' collectives are timed on a cluster's links only: give {} "
                           "or {}",
                           name("device"), name("cluster")));
    }
    RequestTimes out;
    // The shape read once for what the host takes from it; its reader (the time model, the
    // memory model) names what is wrong in it.
    const std::optional<boost::json::object> shape = shape_object(request.shape_json);
    if (shape) {
        out.mtp = mtp_in(*shape);
        out.token_dispatcher = token_dispatcher_in(*shape);
        out.limits = shape_limits_in(*shape);
    }
    if (!request.layer_file.empty()) {
        out.time = read_time_model(request.layer_file, *convention);
        out.source = request.layer_file;
    } else {
        if (!shape) {
            throw RequestError(
                "model_desc",
                fmt::format("the layers' times are needed: give {} (a SAPP layer file), or a "
                            "model shape as {} (the analytic model's options: its FLOPs time the "
                            "layers)",
                            name("model_desc"), name("model_options")));
        }
        if (request.expert_overlap) {
            if (std::string why = expert_overlap_refusal_in(*shape); !why.empty())
                refuse("schedule", name, why);
        }
        const Cluster* cluster = request.cluster ? &*request.cluster : nullptr;
        const double tflops = cluster ? cluster->achieved_tflops() : request.device_tflops;
        out.time = time_model_from_shape(
            request.shape_json, request.shape_source,
            ShapeTimeSettings{.device_tflops = tflops,
                              .cluster = request.cluster,
                              .tp_comm_overlap = request.tp_comm_overlap && cluster,
                              .expert_overlap = request.expert_overlap && cluster});
        out.source = fmt::format("FLOPs of {} at {:g} TFLOP/s{}", request.shape_source, tflops,
                                 cluster ? ", collectives on the cluster's links" : "");
        out.unit = "ms";
        if (cluster) {
            if (const boost::json::value* d = shape->if_contains("data_parallel");
                d != nullptr && d->is_int64() && d->as_int64() > 0) {
                out.replicas = static_cast<std::uint32_t>(d->as_int64());
            }
            out.sizes = shape_sizes(request.shape_json, request.shape_source);
            // The analytic model counts Hopper's FP8 transposes unless told otherwise: said
            // where the device keeps none, for the user to set (their file is taken as it is).
            const boost::json::object& o = *shape;
            const boost::json::value* recipe = o.if_contains("fp8_recipe");
            if (!cluster->device.fp8_transposes && !o.contains("fp8_transposes") &&
                recipe != nullptr && recipe->is_string() &&
                (recipe->as_string() == "delayed" || recipe->as_string() == "tensorwise")) {
                out.time.warnings.push_back(fmt::format(
                    "{}: the memory model counts the FP8 transposes of the weights and inputs "
                    "(fp8_transposes, true unless given: Hopper's), which the {}'s FP8 products "
                    "do not need: set \"fp8_transposes\": false",
                    request.shape_source, cluster->device.name));
            }
            if (request.overlap_param_gather && !out.sizes->distributed_optimizer()) {
                refuse("overlap_param_gather", name,
                       "the weights are gathered with the distributed optimizer only (Megatron-LM "
                       "requires --use-distributed-optimizer); the model options have no "
                       "\"distributed_optimizer\": true and no \"data_parallel_sharding\" but "
                       "no_shard");
            }
        }
    }
    if ((request.overlap_grad_reduce || request.overlap_param_gather) && !out.sizes) {
        const std::string_view field =
            request.overlap_grad_reduce ? "overlap_grad_reduce" : "overlap_param_gather";
        refuse(field, name,
               fmt::format("the data-parallel synchronisation is timed for a model shape's layers "
                           "only: give {} without {}{}",
                           name("model_options"), name("model_desc"),
                           request.cluster ? ""
                                           : fmt::format(", on a cluster ({} or {})",
                                                         name("device"), name("cluster"))));
    }
    return out;
}

double memory_limit_of(std::optional<double> given, const std::optional<Cluster>& cluster,
                       const FieldName& name, std::string_view alternatives) {
    if (given)
        return *given;
    if (!cluster) {
        throw RequestError(
            "memory_limit_mb",
            fmt::format("{} is required (or {} or {}, whose device memory gives "
                        "it{})",
                        name("memory_limit_mb"), name("device"), name("cluster"), alternatives));
    }
    return cluster->memory_mb();
}

std::uint32_t micro_batches_of(std::optional<std::uint64_t> given,
                               std::optional<std::uint32_t> dryrun, const FieldName& name) {
    if (given) {
        check_count("micro_batches", *given, limits::micro_batches, name);
        return static_cast<std::uint32_t>(*given);
    }
    if (dryrun && *dryrun != 0)
        return *dryrun;
    refuse("micro_batches", name,
           dryrun ? "missing, and the dry-run file does not give micro_batches"
                  : "missing: give the micro-batches per iteration (a dry run would give them)");
}

void set_times(Problem& problem, const RequestTimes& times, const Cluster* cluster,
               bool comm_time_given, const FieldName& name) {
    problem.time = times.time;
    problem.mtp = times.mtp;
    problem.token_dispatcher = times.token_dispatcher;
    if (const ShapeLimits& limits = times.limits; !limits.why.empty()) {
        if (limits.one_stage && problem.num_stages > 1) {
            refuse("stages", name,
                   fmt::format("{}: give 1 stage, not {}", limits.why, problem.num_stages));
        }
        const std::uint32_t kept = problem.kinds & limits.kinds;
        if (kept == 0) {
            refuse("kinds", name, fmt::format("{}: give {} none", limits.why, name("kinds")));
        }
        if (kept != problem.kinds) {
            problem.time.warnings.push_back(
                fmt::format("{}: planned with the kind none only", limits.why));
        }
        problem.kinds = kept;
    }
    if (!times.sizes || cluster == nullptr)
        return;
    // Sharded gradients or weights (Megatron-FSDP, FSDP2) move per layer: the layers' times
    // carry what of it their compute does not hide, as in ppb search.
    const ParallelLayout layout{problem.num_stages, times.replicas};
    problem.time = with_sharded_transfers(problem.time, *times.sizes, *cluster, layout);
    if (!comm_time_given)
        problem.comm_time = pipeline_transfer_ms(*times.sizes, *cluster, layout, problem.schedule);
}

std::optional<double> data_parallel_sync_of(const RequestTimes& times, const TimesRequest& request,
                                            const Problem& problem, const Plan& plan) {
    if (!times.sizes || !request.cluster)
        return std::nullopt;
    return data_parallel_sync_ms(*times.sizes, *request.cluster,
                                 {problem.num_stages, times.replicas}, problem.time, plan,
                                 {request.overlap_grad_reduce, request.overlap_param_gather});
}

}  // namespace ppb::partition
