// The analytic plugin's options from a MindFormers training YAML (see mindformers_options.hpp).
// Every value is read through yaml_config.hpp's Setting, so every message names the file, the
// line and the key path ("llama.yaml:140: model.model_config.num_heads: ..."); a setting
// MindFormers reads under several names is read through mindformers_keys.hpp.
#include "mindformers_keys.hpp"
#include "yaml_config.hpp"

#include <ppb/importers/mindformers_options.hpp>
#include <ppb/json_output.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>

namespace ppb::importers {
namespace {

namespace json = boost::json;
namespace spellings = detail::spellings;
using detail::boolean_of;
using detail::Config;
using detail::describe;
using detail::integer_of;
using detail::number_of;
using detail::positive_integer;
using detail::Setting;
using detail::value_text;

// model.model_config keys known to leave the tensors' memory alone, or read below, or the
// placement's (offsets, interleave: 'ppb import mindspore' reads them). The names in
// mindformers_keys.hpp's spellings are read too.
constexpr std::string_view neutral_model_keys[] = {
    // read below
    "hidden_size", "seq_length", "ffn_dim_multiplier", "multiple_of", "use_flash_attention",
    "compute_dtype", "tie_word_embeddings", "hidden_dropout_prob", "attention_dropout_prob",
    "hidden_dropout", "attention_dropout", "fine_grain_interleave", "use_ring_attention",
    "kv_lora_rank", "q_lora_rank", "multi_latent_attention", "add_bias_linear", "gated_linear_unit",
    "multi_query_attention", "multi_query_group_num",
    // the placement
    "offset",
    // no effect on the tensors' memory (dtypes of small tensors, token ids, decoding, names)
    "type", "batch_size", "rms_norm_eps", "bos_token_id", "eos_token_id", "pad_token_id",
    "ignore_token_id", "layernorm_compute_type", "softmax_compute_type", "rotary_dtype", "use_past",
    "scaling_factor", "theta", "extend_method", "checkpoint_name_or_path", "repetition_penalty",
    "max_decode_length", "top_k", "top_p", "do_sample", "max_position_embedding",
    "embedding_init_type", "hidden_act", "is_dynamic", "use_rope_slice",
    "use_attn_mask_compression", "use_eod_attn_mask_compression", "input_sliced_sig",
    "return_extra_loss", "init_method_std", "residual_dtype", "qkv_concat", "block_size",
    "num_blocks", "parallel_decoding_params", "auto_register", "use_past_shard", "rotary_pct",
    "rotary_emb_base",
    // the same for MindFormers' current (mcore) configurations: names, initialisation, rotary
    // and norm settings, weight layouts; untie_embeddings_and_output_weights is not what their
    // training models read (they tie by tie_word_embeddings: modeling_qwen3_train.py)
    "model_type", "architectures", "initializer_range", "use_cache", "rope_theta", "rope_scaling",
    "rotary_base", "partial_rotary_factor", "position_embedding_type", "max_position_embeddings",
    "original_max_position_embeddings", "layernorm_epsilon", "layer_norm_epsilon",
    "layernorm_compute_dtype", "softmax_compute_dtype", "fp32_residual_connection",
    "untie_embeddings_and_output_weights", "use_contiguous_weight_layout",
    "use_contiguous_weight_layout_attention", "use_interleaved_weight_layout_mlp", "normalization",
    "use_fused_rope", "apply_rope_fusion", "use_fused_swiglu", "bias_swiglu_fusion",
    "print_separate_loss",
    // GLM-4's (ChatGLM2Config, mindformers/models/glm2/glm2_config.py)
    "rope_ratio", "rmsnorm", "apply_residual_connection_post_layernorm", "post_layer_norm",
    "bias_dropout_fusion", "apply_query_key_layer_scaling", "attention_softmax_in_fp32",
    "quantization_bit", "pre_seq_len", "prefix_projection", "mlp_concat", "use_rearrange_rope",
    "mask_generate", "gmask_token_id", "enable_high_performance"};

bool known_model_key(std::string_view key) {
    if (std::ranges::find(neutral_model_keys, key) != std::end(neutral_model_keys))
        return true;
    using Names = std::span<const std::string_view>;
    const Names read[] = {spellings::num_layers,  spellings::num_heads, spellings::kv_heads,
                          spellings::ffn_width,   spellings::vocab,     spellings::head_dim,
                          spellings::param_dtype, spellings::qkv_bias,  spellings::qk_norm,
                          spellings::mtp_layers,  spellings::experts,   spellings::chunks};
    return std::ranges::any_of(
        read, [key](Names names) { return std::ranges::find(names, key) != names.end(); });
}

std::optional<std::uint32_t> optional_count(const Setting& s) {
    if (!s.present() || s.node().IsNull())
        return std::nullopt;
    return positive_integer(s);
}

bool switch_on(const Setting& s, bool fallback) {
    if (!s.present() || s.node().IsNull())
        return fallback;
    const auto value = boolean_of(s.node());
    if (!value)
        s.fail("expected true or false, got " + describe(s.node()));
    return *value;
}

std::optional<double> optional_number(const Setting& s) {
    if (!s.present() || s.node().IsNull())
        return std::nullopt;
    const auto value = number_of(s.node());
    if (!value || *value < 0.0)
        s.fail("expected a number of at least 0, got " + describe(s.node()));
    return value;
}

std::optional<std::string> optional_text(const Setting& s) {
    if (!s.present() || s.node().IsNull())
        return std::nullopt;
    if (!s.node().IsScalar())
        s.fail("expected a name, got " + describe(s.node()));
    return s.node().Scalar();
}

// A setting of the model by any of its names (mindformers_keys.hpp), or absent.
Setting model_setting(const Config& config, std::span<const std::string_view> names,
                      std::string_view meaning) {
    return detail::spelled(config, detail::model_sections(), names, meaning);
}

// A required count of the model by any of its names. Missing, the message names every name and,
// when the file takes the model from pretrained_model_dir (MindFormers' current configurations
// do), says that ppb does not read that directory.
std::uint32_t required(const Config& config, std::span<const std::string_view> names,
                       std::string_view meaning) {
    const Setting s = model_setting(config, names, meaning);
    if (!s.present() || s.node().IsNull()) {
        std::string hint;
        if (const Setting dir = config.lookup({"pretrained_model_dir"});
            dir.present() && dir.node().IsScalar()) {
            hint = fmt::format(
                "; the model's shape is read from pretrained_model_dir '{}' ({}), whose "
                "config.json ppb does not read: copy {} from it into model.model_config",
                dir.node().Scalar(), dir.where(), names.size() > 1 ? names[1] : names[0]);
        }
        throw InputError(fmt::format("{}: missing {}, {}{}", config.name(),
                                     detail::spelled_path(names), meaning, hint));
    }
    return positive_integer(s);
}

// Fails at `s` when it is in the file, else naming the file.
[[noreturn]] void fail_at(const Config& config, const Setting& s, std::string_view problem) {
    if (s.present())
        s.fail(problem);
    throw InputError(fmt::format("{}: {}", config.name(), problem));
}

// Bytes of one element of a MindSpore dtype name ("float16", "bfloat16", "float32").
double dtype_bytes(const Setting& s, double fallback) {
    const auto name = optional_text(s);
    if (!name)
        return fallback;
    if (*name == "float16" || *name == "bfloat16")
        return 2.0;
    if (*name == "float32")
        return 4.0;
    s.fail(fmt::format("expected float16, bfloat16 or float32, got '{}'", *name));
}

[[noreturn]] void refuse(const Setting& s, std::string_view why) {
    s.fail(
        fmt::format("{}; the analytic model does not cover it (measure with a dry run and "
                    "'ppb import mindspore')",
                    why));
}

}  // namespace

MindFormersAnalyticOptions analytic_options_from_mindformers(const std::filesystem::path& path) {
    const Config config(path, "a MindFormers training configuration");
    if (config.empty())
        throw InputError(
            fmt::format("{}: empty: expected a MindFormers training configuration", config.name()));
    const auto model = [&config](std::string_view key) {
        return config.lookup({"model", "model_config", key});
    };
    const auto parallel = [&config](std::string_view key) {
        return config.lookup({"parallel_config", key});
    };
    MindFormersAnalyticOptions out;

    // Runs the model does not cover: refused by name.
    if (const auto cp = optional_count(parallel("context_parallel")); cp && *cp > 1)
        refuse(parallel("context_parallel"), "context parallelism splits the sequence over ranks");
    if (switch_on(model("use_ring_attention"), false))
        refuse(model("use_ring_attention"), "ring attention splits the sequence over ranks");
    // Mixture of experts wherever MindFormers builds experts (mindformers_keys.hpp): by the
    // expert count under any of its names, the model type, or a setting only experts have.
    const detail::Experts experts = detail::model_experts(
        &config, detail::spelled(config, detail::moe_sections(), spellings::experts,
                                 "the number of experts"));
    if (experts.moe) {
        refuse(
            experts.because,
            experts.why + ": MindFormers' mixture of experts (capacity, dispatch) is not mapped");
    }
    for (const std::string_view mla : {"kv_lora_rank", "q_lora_rank"}) {
        if (const Setting s = model(mla); s.present() && !s.node().IsNull())
            refuse(s, "multi-latent attention (MLA) has other activations");
    }
    if (switch_on(model("multi_latent_attention"), false))
        refuse(model("multi_latent_attention"),
               "multi-latent attention (MLA) has other activations");
    if (const Setting mtp = model_setting(config, spellings::mtp_layers, "the MTP layers");
        mtp.present() && !mtp.node().IsNull()) {
        const auto depth = integer_of(mtp.node());
        if (!depth || *depth < 0)
            mtp.fail("expected a count of layers (0 or more), got " + describe(mtp.node()));
        if (*depth > 0)
            refuse(mtp, "multi-token prediction adds modules the model does not count");
    }

    const std::uint32_t L = required(config, spellings::num_layers, "the transformer layers");
    const std::array<std::string_view, 1> hidden = {"hidden_size"};
    const std::uint32_t h = required(config, hidden, "the hidden size");
    const std::uint32_t a = required(config, spellings::num_heads, "the attention heads");
    const std::array<std::string_view, 1> sequence = {"seq_length"};
    const std::uint32_t s = required(config, sequence, "the sequence length");
    const std::uint32_t V = required(config, spellings::vocab, "the vocabulary");

    // Key/value heads: any name of n_kv_heads, or GLM's multi_query_group_num, which
    // ChatGLM2Config takes as n_kv_heads when multi_query_attention is on (its default for that
    // class; its default group number is 2: mindformers/models/glm2/glm2_config.py).
    const std::string type = optional_text(model("type")).value_or("");
    const bool glm = type == "ChatGLM2Config";
    Setting kv_from = model_setting(config, spellings::kv_heads, "the key/value heads");
    std::optional<std::uint32_t> kv = optional_count(kv_from);
    bool default_groups = false;  // ChatGLM2Config's default group number
    if (switch_on(model("multi_query_attention"), glm)) {
        const Setting group = model("multi_query_group_num");
        const std::optional<std::uint32_t> groups = optional_count(group);
        if (kv && groups && *kv != *groups)
            detail::spellings_disagree(kv_from, group, "the key/value heads");
        if (!kv) {
            kv = groups.value_or(2);
            default_groups = !groups;
            kv_from = groups ? group : model("multi_query_attention");
        }
    }
    const std::uint32_t kv_heads = kv.value_or(a);
    if (a % kv_heads != 0) {
        fail_at(config, kv_from,
                fmt::format("{} is not a divisor of num_heads {}{}", kv_heads, a,
                            default_groups ? " (ChatGLM2Config's default multi_query_group_num 2 "
                                             "with multi_query_attention on)"
                                           : ""));
    }

    // LlamaFeedForward's width (see the header).
    const Setting width = model_setting(config, spellings::ffn_width, "the FFN width");
    std::uint64_t F = 0;
    if (const auto given_width = optional_count(width)) {
        F = *given_width;
    } else {
        const std::uint32_t multiple = optional_count(model("multiple_of")).value_or(256);
        double hidden_width = 4.0 * h;
        if (const auto multiplier = optional_number(model("ffn_dim_multiplier"))) {
            if (*multiplier > 1024.0)
                model("ffn_dim_multiplier").fail("expected a multiplier of at most 1024");
            hidden_width = std::floor((*multiplier + 0.01) * hidden_width);
        }
        const auto two_thirds = static_cast<std::uint64_t>(2.0 * hidden_width / 3.0);
        F = (two_thirds + multiple - 1) / multiple * multiple;
    }
    if (F == 0 || F > 2147483647U) {
        if (width.present())
            width.fail(fmt::format("the FFN width {} is out of range", F));
        throw InputError(fmt::format(
            "{}: the FFN width {} that model.model_config.hidden_size, ffn_dim_multiplier and "
            "multiple_of give is above 2147483647",
            config.name(), F));
    }

    const std::uint32_t d = optional_count(parallel("data_parallel")).value_or(1);
    const std::uint32_t t = optional_count(parallel("model_parallel")).value_or(1);
    const std::uint32_t p = optional_count(parallel("pipeline_stage")).value_or(1);
    out.pipeline_size = p;
    out.data_parallel = d;
    out.micro_batches = optional_count(parallel("micro_batch_num")).value_or(1);
    out.chunks = optional_count(model_setting(config, spellings::chunks, "the chunks per stage"))
                     .value_or(1);
    const std::uint32_t b =
        optional_count(config.lookup({"runner_config", "batch_size"})).value_or(1);

    // Precision. MindSpore keeps each parameter in param_init_type and casts it to compute_dtype
    // where it is used; the gradients have the parameters' type; there is no separate master
    // copy. Adam's two moments are fp32 for FP32StateAdamWeightDecay and AdamW (mindformers/core/
    // optim/adamw.py: AdamW.clone_state creates them as mstype.float32), the parameters' type for
    // AdamWeightDecay.
    const double param_bytes =
        dtype_bytes(model_setting(config, spellings::param_dtype, "the parameters' type"), 4.0);
    // The layers compute in compute_dtype: its activations are what they keep (float32: 4 bytes).
    const double activation_bytes = dtype_bytes(model("compute_dtype"), 2.0);
    const Setting optimizer = config.lookup({"optimizer", "type"});
    const std::string optimizer_type = optional_text(optimizer).value_or("AdamW");
    double optimizer_bytes = 8.0;
    if (optimizer_type == "AdamWeightDecay")
        optimizer_bytes = 2.0 * param_bytes;
    else if (optimizer_type != "AdamW" && optimizer_type != "FP32StateAdamWeightDecay" &&
             optimizer_type != "FusedAdamWeightDecay")
        out.warnings.push_back(
            fmt::format("{}: {}: its state is not modelled; counted as Adam's two fp32 moments",
                        optimizer.where(), optimizer_type));

    const Setting shard_switch = config.lookup({"parallel", "enable_parallel_optimizer"});
    const bool optimizer_shard =
        switch_on(shard_switch, false) || switch_on(parallel("optimizer_shard"), false);
    if (optimizer_shard && d > 1) {
        const Setting given =
            switch_on(shard_switch, false) ? shard_switch : parallel("optimizer_shard");
        out.warnings.push_back(fmt::format(
            "{}: taken as the optimizer state sharded over data_parallel (Megatron's distributed "
            "optimizer); MindSpore's optimizer parallelism also shards the parameters, which the "
            "model does not count (it over-predicts them)",
            given.where()));
    }

    double dropout_rate = 0.0;
    for (const std::string_view key :
         {"hidden_dropout_prob", "attention_dropout_prob", "hidden_dropout", "attention_dropout"})
        dropout_rate = std::max(dropout_rate, optional_number(model(key)).value_or(0.0));

    json::object o;
    o["hidden_size"] = h;
    o["num_attention_heads"] = a;
    o["ffn_hidden_size"] = F;
    o["seq_length"] = s;
    o["micro_batch_size"] = b;
    o["vocab_size"] = V;
    o["num_layers"] = L;
    o["tensor_parallel"] = t;
    if (kv_heads != a)
        o["num_kv_heads"] = kv_heads;
    // The heads' width when it is not hidden_size / num_heads (Qwen3: 64 heads of 128 on a
    // hidden size of 5 120): TransformerConfig.kv_channels, which COMMON_CONFIG_MAPPING fills from
    // head_dim (mindformers_keys.hpp).
    if (const Setting head_dim = model_setting(config, spellings::head_dim, "the head dimension");
        head_dim.present() && !head_dim.node().IsNull()) {
        const std::uint32_t channels = positive_integer(head_dim);
        if (std::uint64_t{channels} * a != h)
            o["kv_channels"] = channels;
    }
    o["sequence_parallel"] = switch_on(parallel("use_seq_parallel"), false) && t > 1;
    o["data_parallel"] = d;
    o["distributed_optimizer"] = optimizer_shard;
    o["param_bytes"] = param_bytes;
    o["grad_bytes"] = param_bytes;
    o["optimizer_bytes"] = optimizer_bytes;
    if (activation_bytes != 2.0)
        o["activation_bytes"] = activation_bytes;
    // MindFormers' current models say whether the MLP is gated and the linears have biases
    // (gated_linear_unit, add_bias_linear); LLaMA-shaped models without them are gated and
    // without biases.
    o["gated_mlp"] = switch_on(model("gated_linear_unit"), true);
    // Absent, the attention is taken as unfused: the larger activation memory.
    o["flash_attention"] = switch_on(model("use_flash_attention"), false);
    o["dropout"] = dropout_rate > 0.0;
    o["untie_embeddings"] = !switch_on(model("tie_word_embeddings"), false);
    o["linear_biases"] = switch_on(model("add_bias_linear"), false);

    // Keys that change memory but are not modelled.
    // A key not in the file is named with its default ("parallel_config.vocab_emb_dp (default
    // true)"), a key in the file with its file and line.
    const auto warn = [&out, &config](const Setting& key, std::string_view why,
                                      std::string_view default_path = {}) {
        const std::string where =
            key.present() ? key.where()
                          : fmt::format("{}: {} (default true)", config.name(), default_path);
        out.warnings.push_back(
            fmt::format("{} changes memory but is not modelled: {}", where, why));
    };
    // ChatGLM2Config's add_qkv_bias is on by default (glm2_config.py).
    if (const Setting bias = model_setting(config, spellings::qkv_bias, "the QKV biases");
        switch_on(bias, glm)) {
        const std::string where = bias.present()
                                      ? bias.where()
                                      : fmt::format(
                                            "{}: model.model_config.add_qkv_bias (ChatGLM2Config's "
                                            "default true)",
                                            config.name());
        out.warnings.push_back(
            fmt::format("{} changes memory but is not modelled: biases of the query, key and value "
                        "projections",
                        where));
    }
    if (const Setting norm = model_setting(config, spellings::qk_norm, "the query/key norms");
        switch_on(norm, false)) {
        warn(norm, "the query and key normalisation (its inputs are kept for backward)");
    }
    if (optional_count(model("fine_grain_interleave")).value_or(1) > 1)
        warn(model("fine_grain_interleave"), "each layer's activations split in slices");
    if (t > 1 && switch_on(parallel("vocab_emb_dp"), true))
        warn(parallel("vocab_emb_dp"),
             "the embedding and output layer are whole on every device (the model splits them "
             "over model_parallel)",
             "parallel_config.vocab_emb_dp");
    if (const Setting slicing = config.lookup({"recompute_config", "recompute_slice_activation"});
        t > 1 && switch_on(slicing, false))
        warn(slicing, "recompute boundaries' activations split over model_parallel");
    if (const Setting interleave = config.lookup({"micro_batch_interleave_num"});
        optional_count(interleave).value_or(1) > 1)
        warn(interleave, "two micro-batches interleaved in each step");
    if (const Setting accumulation =
            config.lookup({"runner_config", "gradient_accumulation_steps"});
        p == 1 && optional_count(accumulation).value_or(1) > 1)
        warn(accumulation, "a gradient accumulation buffer");
    if (const Setting shard_size =
            config.lookup({"parallel", "parallel_optimizer_config", "optimizer_weight_shard_size"});
        optimizer_shard && optional_count(shard_size))
        warn(shard_size, "the optimizer state sharded over fewer ranks than data_parallel");

    if (const Setting model_config = config.lookup({"model", "model_config"});
        model_config.present() && model_config.node().IsMap()) {
        for (const auto& entry : model_config.node()) {
            const std::string key = entry.first.as<std::string>("");
            if (!known_model_key(key))
                out.warnings.push_back(fmt::format(
                    "{} is not known to ppb: if it changes memory, the options do not include it",
                    model_config.member(entry.second, key).where()));
        }
    }
    out.options_json = to_compact_json(o);
    return out;
}

}  // namespace ppb::importers
