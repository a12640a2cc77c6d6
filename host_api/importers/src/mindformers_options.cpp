// The analytic plugin's options from a MindFormers training YAML (see mindformers_options.hpp).
// Every value is read through yaml_config.hpp's Setting, so every message names the file, the
// line and the key path ("llama.yaml:140: model.model_config.num_heads: ...").
#include "yaml_config.hpp"

#include <ppb/importers/mindformers_options.hpp>
#include <ppb/json_output.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace ppb::importers {
namespace {

namespace json = boost::json;
using detail::boolean_of;
using detail::Config;
using detail::describe;
using detail::integer_of;
using detail::number_of;
using detail::positive_integer;
using detail::Setting;

// model.model_config keys known to leave the tensors' memory alone, or read below, or the
// placement's (offsets, interleave: 'ppb import mindspore' reads them).
constexpr std::string_view neutral_model_keys[] = {
    // read below
    "num_layers", "hidden_size", "num_heads", "n_kv_heads", "seq_length", "vocab_size",
    "intermediate_size", "ffn_dim_multiplier", "multiple_of", "use_flash_attention",
    "compute_dtype", "param_init_type", "tie_word_embeddings", "hidden_dropout_prob",
    "attention_dropout_prob", "hidden_dropout", "attention_dropout", "qkv_has_bias",
    "fine_grain_interleave", "use_ring_attention", "kv_lora_rank", "q_lora_rank", "mtp_depth",
    // the placement
    "offset", "pp_interleave_num",
    // no effect on the tensors' memory (dtypes of small tensors, token ids, decoding, names)
    "type", "batch_size", "rms_norm_eps", "bos_token_id", "eos_token_id", "pad_token_id",
    "ignore_token_id", "layernorm_compute_type", "softmax_compute_type", "rotary_dtype", "use_past",
    "scaling_factor", "theta", "extend_method", "checkpoint_name_or_path", "repetition_penalty",
    "max_decode_length", "top_k", "top_p", "do_sample", "max_position_embedding",
    "embedding_init_type", "hidden_act", "is_dynamic", "use_rope_slice",
    "use_attn_mask_compression", "use_eod_attn_mask_compression", "input_sliced_sig",
    "return_extra_loss", "init_method_std", "residual_dtype", "qkv_concat", "block_size",
    "num_blocks", "parallel_decoding_params"};

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

std::uint32_t required(const Config& config, std::initializer_list<std::string_view> keys,
                       std::string_view meaning) {
    const Setting s = config.lookup(keys);
    if (!s.present() || s.node().IsNull()) {
        std::string path;
        for (const std::string_view k : keys)
            path += (path.empty() ? "" : ".") + std::string(k);
        throw InputError(fmt::format("{}: missing {} ({})", config.name(), path, meaning));
    }
    return positive_integer(s);
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
    if (const Setting experts = config.lookup({"moe_config", "expert_num"});
        optional_count(experts).value_or(1) > 1)
        refuse(experts, "MindFormers' mixture of experts (capacity, dispatch) is not mapped");
    for (const std::string_view mla : {"kv_lora_rank", "q_lora_rank"}) {
        if (const Setting s = model(mla); s.present() && !s.node().IsNull())
            refuse(s, "multi-latent attention (MLA) has other activations");
    }
    if (const Setting mtp = model("mtp_depth"); mtp.present() && !mtp.node().IsNull()) {
        const auto depth = integer_of(mtp.node());
        if (!depth || *depth < 0)
            mtp.fail("expected a count of layers (0 or more), got " + describe(mtp.node()));
        if (*depth > 0)
            refuse(mtp, "multi-token prediction adds modules the model does not count");
    }

    const std::uint32_t L =
        required(config, {"model", "model_config", "num_layers"}, "transformer layers");
    const std::uint32_t h =
        required(config, {"model", "model_config", "hidden_size"}, "the hidden size");
    const std::uint32_t a =
        required(config, {"model", "model_config", "num_heads"}, "attention heads");
    const std::uint32_t s =
        required(config, {"model", "model_config", "seq_length"}, "the sequence length");
    const std::uint32_t V =
        required(config, {"model", "model_config", "vocab_size"}, "the vocabulary");
    const std::uint32_t kv = optional_count(model("n_kv_heads")).value_or(a);
    if (a % kv != 0)
        model("n_kv_heads").fail(fmt::format("{} is not a divisor of num_heads {}", kv, a));

    // LlamaFeedForward's width (see the header).
    std::uint64_t F = 0;
    if (const auto width = optional_count(model("intermediate_size"))) {
        F = *width;
    } else {
        const std::uint32_t multiple = optional_count(model("multiple_of")).value_or(256);
        double hidden = 4.0 * h;
        if (const auto multiplier = optional_number(model("ffn_dim_multiplier"))) {
            if (*multiplier > 1024.0)
                model("ffn_dim_multiplier").fail("expected a multiplier of at most 1024");
            hidden = std::floor((*multiplier + 0.01) * hidden);
        }
        const auto two_thirds = static_cast<std::uint64_t>(2.0 * hidden / 3.0);
        F = (two_thirds + multiple - 1) / multiple * multiple;
    }
    if (F == 0 || F > 2147483647U) {
        if (model("intermediate_size").present())
            model("intermediate_size").fail(fmt::format("the FFN width {} is out of range", F));
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
    out.chunks = optional_count(model("pp_interleave_num")).value_or(1);
    const std::uint32_t b =
        optional_count(config.lookup({"runner_config", "batch_size"})).value_or(1);

    // Precision. MindSpore keeps each parameter in param_init_type and casts it to compute_dtype
    // where it is used; the gradients have the parameters' type; there is no separate master
    // copy. Adam's two moments are fp32 for FP32StateAdamWeightDecay and AdamW (mindformers/core/
    // optim/adamw.py: AdamW.clone_state creates them as mstype.float32), the parameters' type for
    // AdamWeightDecay.
    const double param_bytes = dtype_bytes(model("param_init_type"), 4.0);
    if (dtype_bytes(model("compute_dtype"), 2.0) > 2.0)
        out.warnings.push_back(
            fmt::format("{}: float32 activations: the model counts 16-bit activations",
                        model("compute_dtype").where()));
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
    if (kv != a)
        o["num_kv_heads"] = kv;
    o["sequence_parallel"] = switch_on(parallel("use_seq_parallel"), false) && t > 1;
    o["data_parallel"] = d;
    o["distributed_optimizer"] = optimizer_shard;
    o["param_bytes"] = param_bytes;
    o["grad_bytes"] = param_bytes;
    o["optimizer_bytes"] = optimizer_bytes;
    o["gated_mlp"] = true;
    // Absent, the attention is taken as unfused: the larger activation memory.
    o["flash_attention"] = switch_on(model("use_flash_attention"), false);
    o["dropout"] = dropout_rate > 0.0;
    o["untie_embeddings"] = !switch_on(model("tie_word_embeddings"), false);
    o["linear_biases"] = false;

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
    if (switch_on(model("qkv_has_bias"), false))
        warn(model("qkv_has_bias"), "biases of the query, key and value projections");
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
            if (std::ranges::find(neutral_model_keys, key) == std::end(neutral_model_keys))
                out.warnings.push_back(fmt::format(
                    "{}: model.model_config.{} is not known to ppb: if it changes memory, the "
                    "options do not include it",
                    config.name(), key));
        }
    }
    out.options_json = to_compact_json(o);
    return out;
}

}  // namespace ppb::importers
