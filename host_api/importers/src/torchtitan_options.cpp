// The analytic plugin's options from a torchtitan training configuration (see
// torchtitan_options.hpp). The meanings are torchtitan's (pytorch/torchtitan commit
// 238fa9953e4aec2a62582121564273d7cbb1e9f1 unless said):
//   * parallel dimensions (torchtitan/distributed/parallel_dims.py): data_parallel_shard_degree
//     -1 is the world size over the other degrees, whose product must be the world size; FSDP2
//     shards over dp_shard x cp (fsdp_enabled = dp_shard > 1 or cp > 1), the replicas of
//     data_parallel_replicate_degree hold the same shards (HSDP); tensor parallelism always
//     shards the sequence between layers (sequence parallelism, no switch); the experts fold
//     dp_shard x cp x tp into ep x etp x expert-FSDP, etp 1 or tp;
//   * precision (torchtitan/config/job_config.py): training.dtype float32 keeps the parameters,
//     their gradients and AdamW's two moments in fp32 (4 + 4 + 8 bytes a parameter), bfloat16 in
//     bf16; FSDP2 computes in mixed_precision_param (bf16 by default), so the activations are
//     2 bytes; without FSDP, tensor or pipeline parallelism turns mixed precision off
//     (torchtitan/distributed/utils.py, maybe_enable_amp): fp32 activations;
//   * micro-batches (torchtitan/distributed/pipeline_parallel.py): local_batch_size /
//     pipeline_parallel_microbatch_size with pipeline parallelism, each of
//     pipeline_parallel_microbatch_size samples; without it the step runs local_batch_size at
//     once; the looped schedules hold 2 stages per rank unless pipeline_parallel_layers_per_stage
//     says otherwise;
//   * attention: SDPA (cuDNN or flash) or flex attention, none of which keeps the s^2 scores;
//     context parallelism rotates keys and values round the ring (alltoall) or all-gathers them
//     (allgather, the default: context_parallel_rotate_method);
//   * the loss: cross entropy on the fp32 logits, vocabulary-parallel with tensor parallelism
//     unless disable_loss_parallel;
//   * float8 (torchtitan/components/quantization/float8.py): the "quantize.linear.float8"
//     converter (or its old name "float8") trains the linears in FP8 with torchao's tensorwise
//     scaling (recipe_name absent) or rowwise; "quantize.linear.mx" in MXFP8;
//   * activation checkpointing (torchtitan/distributed/activation_checkpoint.py): full
//     checkpoints every block, selective with an integer N every N-th block, selective "op"
//     saves chosen ops' outputs (matmuls, attention, collectives) and recomputes the rest.
#include "toml_config.hpp"
#include "torchtitan_flavours.hpp"

#include <ppb/errors.hpp>
#include <ppb/importers/layout.hpp>
#include <ppb/importers/torchtitan_options.hpp>
#include <ppb/json_output.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>

namespace ppb::importers {
namespace {

namespace json = boost::json;
using detail::TomlConfig;
using detail::TomlValue;
using detail::TorchtitanFlavour;

constexpr std::int64_t max_degree = 1 << 20;

// The keys of each section read; any other key of these sections draws a warning.
struct Section {
    std::string_view name;
    std::span<const std::string_view> keys;
};
// The fields of JobConfig's sections (torchtitan/config/job_config.py at
// 238fa9953e4aec2a62582121564273d7cbb1e9f1), read or known not to change memory.
constexpr std::array<std::string_view, 6> model_keys = {
    "name", "flavor", "hf_assets_path", "tokenizer_path", "converters", "print_after_conversion"};
constexpr std::array<std::string_view, 14> training_keys = {"dataset",
                                                            "dataset_path",
                                                            "local_batch_size",
                                                            "global_batch_size",
                                                            "seq_len",
                                                            "max_norm",
                                                            "steps",
                                                            "enable_cpu_offload",
                                                            "dtype",
                                                            "mixed_precision_param",
                                                            "mixed_precision_reduce",
                                                            "gc_freq",
                                                            "gc_debug",
                                                            "dataloader"};
constexpr std::array<std::string_view, 21> parallelism_keys = {
    "data_parallel_replicate_degree",
    "data_parallel_shard_degree",
    "fsdp_reshard_after_forward",
    "tensor_parallel_degree",
    "disable_loss_parallel",
    "enable_async_tensor_parallel",
    "pipeline_parallel_degree",
    "module_fqns_per_model_part",
    "pipeline_parallel_first_stage_less_layers",
    "pipeline_parallel_last_stage_less_layers",
    "pipeline_parallel_layers_per_stage",
    "pipeline_parallel_schedule",
    "pipeline_parallel_schedule_csv",
    "pipeline_parallel_microbatch_size",
    "pipeline_parallel_expert_parallel_overlap",
    "context_parallel_degree",
    "context_parallel_load_balancer",
    "context_parallel_rotate_method",
    "expert_parallel_degree",
    "expert_tensor_parallel_degree",
    "expert_parallel_comm_backend"};
constexpr std::array<std::string_view, 9> checkpoint_keys = {
    "mode",
    "selective_ac_option",
    "per_op_sac_force_recompute_mm_shapes_by_fqns",
    "early_stop",
    "memory_budget",
    "visualize_memory_budget_pareto",
    "preserve_rng_state",
    "determinism_check",
    "debug"};

void warn_unknown_keys(const TomlConfig& config, std::string_view section,
                       std::span<const std::string_view> known, std::vector<std::string>& out) {
    const TomlValue table = config.lookup({section});
    for (const TomlValue& member : table.members()) {
        if (std::ranges::find(known, member.key()) == known.end()) {
            out.push_back(fmt::format(
                "{} is not known to ppb: if it changes memory, the options do not include it",
                member.where()));
        }
    }
}

const TorchtitanFlavour& flavour_of(const TomlConfig& config) {
    const TomlValue name = config.lookup({"model", "name"});
    const TomlValue flavor = config.lookup({"model", "flavor"});
    const std::string model = name.text().value_or("llama3");  // JobConfig's defaults
    const std::string which = flavor.text().value_or("debugmodel");
    const auto all = detail::torchtitan_flavours();
    std::vector<std::string> models;
    for (const TorchtitanFlavour& f : all) {
        if (std::ranges::find(models, f.model) == models.end())
            models.emplace_back(f.model);
    }
    if (std::ranges::find(models, model) == models.end()) {
        const std::string message =
            fmt::format("model '{}' is not one ppb knows the shapes of; known: {}", model,
                        fmt::join(models, ", "));
        if (name.present())
            name.fail(message);
        throw InputError(
            fmt::format("{}: [model] name absent: JobConfig's default 'llama3'", config.name()));
    }
    std::vector<std::string_view> flavours;
    for (const TorchtitanFlavour& f : all) {
        if (f.model != model)
            continue;
        if (f.flavor == which)
            return f;
        flavours.push_back(f.flavor);
    }
    const std::string message = fmt::format("{} has no flavour '{}'; its flavours: {}", model,
                                            which, fmt::join(flavours, ", "));
    if (flavor.present())
        flavor.fail(message);
    throw InputError(fmt::format("{}: [model] flavor absent: {}", config.name(), message));
}

// A degree of [parallelism]: at least 1, or -1 where torchtitan takes "the rest".
std::int64_t degree(const TomlConfig& config, std::string_view key, std::int64_t fallback,
                    bool rest_allowed) {
    const TomlValue v = config.lookup({"parallelism", key});
    const auto value = v.integer_in(rest_allowed ? -1 : 1, max_degree);
    if (value && *value == 0)
        v.fail(rest_allowed ? "expected -1 (the rest of the world) or a degree of at least 1"
                            : "expected a degree of at least 1");
    return value.value_or(fallback);
}

// torchtitan's schedule names and ppb's, with whether the schedule holds several stages a rank.
struct ScheduleName {
    std::string_view torchtitan;
    std::string_view ppb;  // empty: ppb has no such schedule
    bool multi_stage;
};
constexpr std::array<ScheduleName, 7> schedules = {{
    {"1F1B", "1f1b", false},
    {"GPipe", "", false},
    {"Interleaved1F1B", "interleaved", true},
    {"LoopedBFS", "", true},
    {"InterleavedZeroBubble", "", true},
    {"ZBVZeroBubble", "zb-v", true},
    {"DualPipeV", "dualpipe-v", true},
}};

}  // namespace

TorchtitanAnalyticOptions analytic_options_from_torchtitan(const std::filesystem::path& path,
                                                           const TorchtitanRunContext& context) {
    const TomlConfig config(path);
    TorchtitanAnalyticOptions out;
    const TorchtitanFlavour& f = flavour_of(config);
    const std::array<Section, 4> sections = {{{"model", model_keys},
                                              {"training", training_keys},
                                              {"parallelism", parallelism_keys},
                                              {"activation_checkpoint", checkpoint_keys}}};
    for (const Section& section : sections)
        warn_unknown_keys(config, section.name, section.keys, out.warnings);

    // --- Parallel dimensions.
    const std::int64_t replicate = degree(config, "data_parallel_replicate_degree", 1, false);
    std::int64_t shard = degree(config, "data_parallel_shard_degree", -1, true);
    const std::int64_t tp = degree(config, "tensor_parallel_degree", 1, false);
    const std::int64_t pp = degree(config, "pipeline_parallel_degree", 1, false);
    const std::int64_t cp = degree(config, "context_parallel_degree", 1, false);
    const std::int64_t ep = degree(config, "expert_parallel_degree", 1, false);
    const std::int64_t etp = degree(config, "expert_tensor_parallel_degree", 1, false);
    const std::int64_t others = replicate * tp * pp * cp;
    if (shard == -1) {
        if (!context.world_size) {
            throw FlagError(fmt::format(
                "{}: parallelism.data_parallel_shard_degree is -1 (JobConfig's default: the rest "
                "of the world): give the number of GPUs with {}",
                config.name(), setting_name("world_size", context.words)));
        }
        if (*context.world_size % others != 0) {
            throw FlagError(
                fmt::format("{} {} is not a multiple of data_parallel_replicate x tensor x "
                            "pipeline x context parallel = {} ({})",
                            setting_name("world_size", context.words), *context.world_size, others,
                            config.name()));
        }
        shard = *context.world_size / others;
    } else if (context.world_size && *context.world_size != shard * others) {
        throw FlagError(fmt::format(
            "{} {}, but {} gives {} GPUs (data_parallel_replicate {} x shard {} x "
            "tensor {} x pipeline {} x context {}): torchtitan requires the product to be the "
            "world size",
            setting_name("world_size", context.words), *context.world_size, config.name(),
            shard * others, replicate, shard, tp, pp, cp));
    }
    if (f.n_heads % tp != 0 || (f.n_kv_heads != 0 && f.n_kv_heads % tp != 0)) {
        config.lookup({"parallelism", "tensor_parallel_degree"})
            .fail(fmt::format("{} does not divide {} {}'s {} heads ({} key/value heads)", tp,
                              f.model, f.flavor, f.n_heads,
                              f.n_kv_heads == 0 ? f.n_heads : f.n_kv_heads));
    }
    const bool fsdp = shard > 1 || cp > 1;

    // --- Batch.
    const TomlValue local_batch = config.lookup({"training", "local_batch_size"});
    const std::int64_t local = local_batch.integer_in(1, max_degree).value_or(8);
    const std::int64_t seq =
        config.lookup({"training", "seq_len"}).integer_in(1, 1 << 30).value_or(2048);
    std::int64_t micro_batch = local;
    out.pipeline_size = static_cast<std::uint32_t>(pp);
    const TomlValue schedule_value = config.lookup({"parallelism", "pipeline_parallel_schedule"});
    out.schedule_given = schedule_value.text().value_or("1F1B");
    if (pp > 1) {
        const TomlValue mb = config.lookup({"parallelism", "pipeline_parallel_microbatch_size"});
        micro_batch = mb.integer_in(1, max_degree).value_or(1);
        if (local % micro_batch != 0) {
            mb.fail(
                fmt::format("{} does not divide training.local_batch_size {} (torchtitan "
                            "requires it)",
                            micro_batch, local));
        }
        out.micro_batches = static_cast<std::uint32_t>(local / micro_batch);
        const auto* known =
            std::ranges::find(schedules, out.schedule_given, &ScheduleName::torchtitan);
        if (known == schedules.end()) {
            std::vector<std::string_view> names;
            for (const ScheduleName& s : schedules)
                names.push_back(s.torchtitan);
            schedule_value.fail(fmt::format("'{}' is not a torchtitan schedule ppb knows: {}",
                                            out.schedule_given, fmt::join(names, ", ")));
        }
        out.schedule = known->ppb;
        out.stages_per_rank = known->multi_stage ? 2U : 1U;
        const TomlValue per_stage =
            config.lookup({"parallelism", "pipeline_parallel_layers_per_stage"});
        if (const auto layers = per_stage.integer_in(1, 1 << 20)) {
            // The embedding and the output count as one layer each (input_weight,
            // output_weight 1): ceil((n_layers + 2) / layers) virtual stages.
            const std::int64_t stages = (f.n_layers + 2 + *layers - 1) / *layers;
            if (stages % pp != 0) {
                per_stage.fail(
                    fmt::format("{} layers a stage make {} stages, not a multiple of "
                                "pipeline_parallel_degree {} (torchtitan refuses it)",
                                *layers, stages, pp));
            }
            out.stages_per_rank = static_cast<std::uint32_t>(stages / pp);
        }
    }

    // --- Precision.
    const TomlValue dtype = config.lookup({"training", "dtype"});
    const std::string dtype_name = dtype.text().value_or("float32");
    double state_bytes = 4.0;
    if (dtype_name == "bfloat16")
        state_bytes = 2.0;
    else if (dtype_name != "float32")
        dtype.fail(fmt::format("expected float32 or bfloat16, got '{}'", dtype_name));
    const TomlValue compute = config.lookup({"training", "mixed_precision_param"});
    const std::string compute_name = compute.text().value_or("bfloat16");
    if (compute_name != "bfloat16" && compute_name != "float32")
        compute.fail(fmt::format("expected bfloat16 or float32, got '{}'", compute_name));
    double activation_bytes = compute_name == "float32" ? 4.0 : 2.0;
    if (!fsdp && (tp > 1 || pp > 1) && dtype_name == "float32") {
        activation_bytes = 4.0;
        out.warnings.push_back(fmt::format(
            "{}: without FSDP (data_parallel_shard_degree 1, no context parallelism) and with "
            "tensor or pipeline parallelism torchtitan turns mixed precision off: the layers "
            "compute and keep their activations in fp32",
            config.name()));
    }

    json::object o;
    const std::uint32_t head_channels = f.head_dim != 0 ? f.head_dim : f.dim / f.n_heads;
    o["hidden_size"] = f.dim;
    o["num_attention_heads"] = f.n_heads;
    o["ffn_hidden_size"] = f.hidden_dim != 0 ? f.hidden_dim : detail::llama3_ffn_width(f);
    o["seq_length"] = seq;
    o["micro_batch_size"] = micro_batch;
    o["vocab_size"] = f.vocab_size;
    o["num_layers"] = f.n_layers;
    o["tensor_parallel"] = tp;
    if (!f.mla) {
        if (f.n_kv_heads != 0 && f.n_kv_heads != f.n_heads)
            o["num_kv_heads"] = f.n_kv_heads;
        if (std::uint64_t{head_channels} * f.n_heads != f.dim)
            o["kv_channels"] = head_channels;
    }
    o["sequence_parallel"] = tp > 1;
    o["data_parallel"] = shard;
    o["param_bytes"] = state_bytes;
    o["grad_bytes"] = state_bytes;
    o["optimizer_bytes"] = 2.0 * state_bytes;
    if (activation_bytes != 2.0)
        o["activation_bytes"] = activation_bytes;
    if (fsdp)
        o["data_parallel_sharding"] = "optim_grads_params";
    o["gated_mlp"] = true;
    o["flash_attention"] = true;
    o["dropout"] = false;
    o["untie_embeddings"] = !f.tied_embeddings;
    o["linear_biases"] = false;
    if (f.qk_norm)
        o["qk_layernorm"] = true;  // Qwen3's q_norm and k_norm keep their inputs
    if (f.mla) {
        json::object mla;
        if (f.mla->q_lora_rank != 0)
            mla["q_lora_rank"] = f.mla->q_lora_rank;
        mla["kv_lora_rank"] = f.mla->kv_lora_rank;
        mla["qk_head_dim"] = f.mla->qk_nope_head_dim;
        mla["qk_pos_emb_head_dim"] = f.mla->qk_rope_head_dim;
        mla["v_head_dim"] = f.mla->v_head_dim;
        mla["qk_layernorm"] = true;  // kv_norm, and q_norm with a query latent
        o["mla"] = std::move(mla);
    }
    if (f.moe) {
        json::object moe;
        moe["num_experts"] = f.moe->experts;
        moe["top_k"] = f.moe->top_k;
        moe["moe_ffn_hidden_size"] = f.moe->inner;
        if (f.moe->shared > 0) {
            moe["shared_experts"] = 1;
            moe["shared_expert_ffn_hidden_size"] = f.moe->shared * f.moe->inner;
        }
        moe["expert_parallel"] = ep;
        if (etp != 1 && etp != tp) {
            config.lookup({"parallelism", "expert_tensor_parallel_degree"})
                .fail(fmt::format("expected 1 or tensor_parallel_degree {} (torchtitan "
                                  "requires one of them)",
                                  tp));
        }
        moe["expert_tensor_parallel"] = etp;
        // torchtitan weighs the expert outputs in its combine (torchtitan/models/common/
        // token_dispatcher.py at b5bcd76c66, combine: routed_output.to(float32) times the sorted
        // top-k scores), which keeps the fp32 copy for the scores' gradient.
        moe["routing_weights"] = "combine_fp32";
        if (f.moe->dense_layers > 0)
            moe["first_k_dense"] = f.moe->dense_layers;
        o["moe"] = std::move(moe);
    } else if (ep > 1) {
        config.lookup({"parallelism", "expert_parallel_degree"})
            .fail(fmt::format("{} {} has no experts", f.model, f.flavor));
    }
    if (cp > 1) {
        o["context_parallel"] = cp;
        const TomlValue rotate = config.lookup({"parallelism", "context_parallel_rotate_method"});
        const std::string method = rotate.text().value_or("allgather");
        if (method == "allgather")
            o["cp_comm_type"] = "all_gather";
        else if (method == "alltoall")
            o["cp_comm_type"] = "p2p";
        else
            rotate.fail(fmt::format("expected allgather or alltoall, got '{}'", method));
    }

    // --- FP8 and MX converters.
    const TomlValue converters = config.lookup({"model", "converters"});
    for (const std::string& converter : converters.texts().value_or(std::vector<std::string>{})) {
        if (converter == "float8" || converter == "quantize.linear.float8") {
            const TomlValue recipe = config.lookup({"quantize", "linear", "float8", "recipe_name"});
            const std::string name = recipe.text().value_or("tensorwise");
            if (name != "tensorwise" && name != "rowwise" && name != "rowwise_with_gw_hp")
                recipe.fail(
                    fmt::format("expected rowwise or rowwise_with_gw_hp (absent: "
                                "tensorwise), got '{}'",
                                name));
            o["fp8_recipe"] = "tensorwise";
            if (name != "tensorwise") {
                out.warnings.push_back(fmt::format(
                    "{}: {} scaling is counted as tensorwise (its per-row scales are not)",
                    recipe.where(), name));
            }
        } else if (converter == "quantize.linear.mx" || converter == "mx") {
            o["fp8_recipe"] = "mxfp8";
        } else if (converter == "quantize.grouped_mm.float8" ||
                   converter == "quantize.grouped_mm.mx") {
            out.warnings.push_back(
                fmt::format("{}: '{}' changes the experts' memory but is not modelled",
                            converters.where(), converter));
        } else {
            converters.fail(
                fmt::format("'{}' is not a converter ppb knows (float8, "
                            "quantize.linear.float8, quantize.linear.mx, "
                            "quantize.grouped_mm.float8)",
                            converter));
        }
    }
    if (o.contains("fp8_recipe"))
        o["fp8_transposes"] = context.compute_capability < 10;

    // --- What changes memory but is not modelled.
    if (config.lookup({"training", "enable_cpu_offload"}).boolean().value_or(false)) {
        out.warnings.push_back(fmt::format(
            "{}: FSDP's CPU offload keeps the parameters, gradients and optimizer state in host "
            "memory; the model counts them on the device (it over-predicts)",
            config.lookup({"training", "enable_cpu_offload"}).where()));
    }
    if (tp > 1 &&
        config.lookup({"parallelism", "disable_loss_parallel"}).boolean().value_or(false)) {
        out.warnings.push_back(fmt::format(
            "{}: the logits are whole on every tensor-parallel rank; the model splits them",
            config.lookup({"parallelism", "disable_loss_parallel"}).where()));
    }

    // --- Activation checkpointing: the layers' recompute kind for --layers.
    const TomlValue mode_value = config.lookup({"activation_checkpoint", "mode"});
    const std::string mode = mode_value.text().value_or("selective");
    const TomlValue option = config.lookup({"activation_checkpoint", "selective_ac_option"});
    if (mode == "none") {
        out.layer_kind = "none";
    } else if (mode == "full") {
        out.layer_kind = "full";
    } else if (mode == "selective") {
        const std::string every = option.text().value_or("2");
        if (every == "op") {
            out.layer_kind = "none";
            out.layer_kind_note =
                "op-level selective checkpointing saves most matmul outputs and the attention's: "
                "counted as no recompute, an upper bound";
        } else {
            std::int64_t n = 0;
            const auto [end, ec] = std::from_chars(every.data(), every.data() + every.size(), n);
            if (ec != std::errc() || end != every.data() + every.size() || n < 1)
                option.fail(fmt::format("expected 'op' or a positive integer, got '{}'", every));
            out.layer_kind = "full";
            out.layer_kind_note =
                n == 1 ? ""
                       : fmt::format(
                             "every {}-th block checkpointed (the others none): give "
                             "each stage's count of each",
                             n);
        }
    } else if (mode == "memory_budget") {
        out.layer_kind = "none";
        out.layer_kind_note =
            "memory_budget lets the compiler choose what to recompute: counted as no recompute, "
            "an upper bound";
    } else {
        mode_value.fail(
            fmt::format("expected none, selective, full or memory_budget, got '{}'", mode));
    }

    out.options_json = to_compact_json(o);
    return out;
}

}  // namespace ppb::importers
