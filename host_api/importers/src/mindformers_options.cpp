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
    "kv_lora_rank", "q_lora_rank", "multi_latent_attention", "v_head_dim", "add_bias_linear",
    "gated_linear_unit", "multi_query_attention", "multi_query_group_num",
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
    // MoE routing and kernels (the routed tokens' memory is moe.routing_imbalance's or the
    // capacity's), MLA's and MTP's settings that keep the tensors' sizes
    "moe_grouped_gemm", "router_dense_type", "norm_topk_prob", "moe_router_pre_softmax",
    "moe_token_drop_policy", "routed_scaling_factor", "router_aux_loss_coef", "moe_aux_loss_coeff",
    "moe_router_load_balancing_type", "moe_router_score_function", "moe_router_enable_expert_bias",
    "moe_router_bias_update_rate", "moe_router_num_groups", "moe_router_group_topk",
    "moe_router_topk_scaling_factor", "moe_z_loss_coeff", "topk_method", "n_group", "topk_group",
    "scoring_func", "aux_loss_alpha", "seq_aux", "output_router_logits", "mtp_loss_factor",
    "mtp_loss_scaling_factor", "return_extra_loss", "auto_register", "input_sliced_sig",
    "mla_qkv_concat", "rope_interleave", "mscale", "mscale_all_dim",
    // GLM-4's (ChatGLM2Config, mindformers/models/glm2/glm2_config.py)
    "rope_ratio", "rmsnorm", "apply_residual_connection_post_layernorm", "post_layer_norm",
    "bias_dropout_fusion", "apply_query_key_layer_scaling", "attention_softmax_in_fp32",
    "quantization_bit", "pre_seq_len", "prefix_projection", "mlp_concat", "use_rearrange_rope",
    "mask_generate", "gmask_token_id", "enable_high_performance"};

bool known_model_key(std::string_view key) {
    if (std::ranges::find(neutral_model_keys, key) != std::end(neutral_model_keys))
        return true;
    using Names = std::span<const std::string_view>;
    const Names read[] = {
        spellings::num_layers,      spellings::num_heads,      spellings::kv_heads,
        spellings::ffn_width,       spellings::vocab,          spellings::head_dim,
        spellings::param_dtype,     spellings::qkv_bias,       spellings::qk_norm,
        spellings::mtp_layers,      spellings::experts,        spellings::chunks,
        spellings::experts_chosen,  spellings::first_k_dense,  spellings::moe_layer_freq,
        spellings::expert_inner,    spellings::shared_experts, spellings::shared_inner,
        spellings::capacity_factor, spellings::mla_qk_head,    spellings::mla_rope_head};
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

bool given_setting(const Setting& s) {
    return s.present() && !s.node().IsNull();
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

// Which MindFormers builds the model: the current ("mcore") models (mindformers/parallel_core,
// chosen by use_legacy: False, or a HuggingFace model_type without a classic config class), or
// the classic ones (mindformers/models/llama, research/deepseek3: model_config.type names the
// class). Their experts, MLA and context parallelism differ (see add_moe, add_mla, add_cp).
struct Family {
    bool mcore = false;
    bool classic_deepseek = false;  // research/deepseek3 (DeepseekV2Config, DeepseekV3Config)
};

Family family_of(const Config& config) {
    Family out;
    const std::string type =
        optional_text(config.lookup({"model", "model_config", "type"})).value_or("");
    if (const Setting legacy = config.lookup({"use_legacy"}); legacy.present())
        out.mcore = !switch_on(legacy, true);
    else
        out.mcore =
            type.empty() && config.lookup({"model", "model_config", "model_type"}).present();
    out.classic_deepseek = !out.mcore && type.starts_with("Deepseek");
    return out;
}

Setting moe_setting(const Config& config, std::span<const std::string_view> names,
                    std::string_view meaning) {
    return detail::spelled(config, detail::moe_sections(), names, meaning);
}

// The parallel setting by its classic name or TransformerConfig's (COMMON_CONFIG_MAPPING).
Setting parallel_setting(const Config& config, std::string_view classic, std::string_view mcore) {
    const Setting a = config.lookup({"parallel_config", classic});
    const Setting b = config.lookup({"parallel_config", mcore});
    if (a.present() && !a.node().IsNull() && b.present() && !b.node().IsNull() &&
        optional_count(a) != optional_count(b))
        detail::spellings_disagree(a, b, "one parallel degree");
    return a.present() && !a.node().IsNull() ? a : b;
}

// Mixture of experts (mindspore-lab/mindformers at commit
// fd4deebc1606a02fd24c3b359a889cd0c966e72b; the current models' behaviour is the same at
// 477621fde7ff9cd6b131470d3b093b49cd272c65, whose Qwen3-MoE configuration the tests read):
//   * experts and experts chosen: the count under any of its names (mindformers_keys.hpp), the
//     chosen ones by num_experts_chosen / num_experts_per_tok / moe_router_topk, defaults the
//     model type's, else MoEConfig's 1 (classic, mindformers/modules/transformer/moe.py) or
//     TransformerConfig's 2 (mcore, mindformers/parallel_core/transformer_config.py);
//   * one routed expert's inner size: the model's intermediate_size in the classic LLaMA-style
//     layers (models/llama/llama_transformer.py builds the experts from it), moe_intermediate_size
//     in research/deepseek3 with shared experts (deepseek2_model.py), and in the current models
//     (TransformerConfig.moe_ffn_hidden_size, default ffn_hidden_size);
//   * shared experts: one merged MLP, int(routed inner x shared_expert_num) wide in the classic
//     models (llama_layer.py: LlamaFeedForward(intermediate_size=int(intermediate_size *
//     shared_expert_num))), moe_shared_expert_intermediate_size or moe_ffn_hidden_size x
//     n_shared_experts in the current ones (transformer_config.py, shared_experts.py); whole on
//     every model_parallel rank under use_seq_parallel (both);
//   * expert parallelism: parallel_config.expert_parallel; each expert's inner dimension split
//     over model_parallel in the classic MoE (llama_layer.py: w1 sharded (ep, mp, 1)) unless
//     moe_config.expert_model_parallel is 1, whole in the grouped-matmul MoE of use_gmm
//     (moev3.py) and in the current models (training_graph/transformer/moe/ffn.py);
//   * capacity: the classic MoE pads and drops to ceil(k x tokens x capacity_factor / E)
//     (moe.py, capacity_factor default 1.1; 0 or less: each step's largest load, no drops); the
//     grouped-matmul MoE ("Capacity factor is ignored", moev3.py) and the current models
//     (an AlltoAllV dispatch, token_dispatcher.py) drop nothing: routing_imbalance's default;
//   * which layers: mindformers_keys.hpp's moe_layers.
void add_moe(const Config& config, const Family& family, const detail::Experts& experts,
             std::uint32_t num_layers, std::uint32_t ffn, std::uint32_t t, bool sequence_parallel,
             json::object& o, std::vector<std::string>& warnings) {
    if (!experts.count) {
        experts.because.fail(experts.why +
                             ": give the experts' count (moe_config.expert_num or "
                             "model.model_config.num_experts), which ppb cannot read from the "
                             "model's own files");
    }
    json::object moe;
    const std::uint32_t E = *experts.count;
    moe["num_experts"] = E;
    const Setting chosen = moe_setting(config, spellings::experts_chosen, "the experts chosen");
    const std::uint32_t k = optional_count(chosen).value_or(
        experts.experts_chosen_default.value_or(family.mcore ? 2U : 1U));
    if (k > E) {
        fail_at(config, chosen,
                fmt::format("{} experts chosen per token, but the model has {} experts "
                            "(MindFormers refuses it)",
                            k, E));
    }
    moe["top_k"] = k;

    const bool grouped_matmul =
        !family.mcore && switch_on(config.lookup({"moe_config", "use_gmm"}), false);
    const Setting shared_count = moe_setting(config, spellings::shared_experts, "shared experts");
    double shared = 0.0;
    if (shared_count.present() && !shared_count.node().IsNull()) {
        const auto n = number_of(shared_count.node());
        if (!n || *n < 0.0 || *n > 1024.0 || boolean_of(shared_count.node()))
            shared_count.fail("expected a number of shared experts (0 to 1024), got " +
                              describe(shared_count.node()));
        shared = *n;
    } else {
        shared = experts.shared_experts_default.value_or(0);
    }
    const Setting inner = moe_setting(config, spellings::expert_inner, "one expert's inner size");
    std::uint32_t expert_inner = ffn;
    if (family.mcore || (family.classic_deepseek && shared > 0.0))
        expert_inner = optional_count(inner).value_or(experts.expert_inner_default.value_or(
            family.mcore ? ffn : 1407U));  // MoEConfig's moe_intermediate_size default
    moe["moe_ffn_hidden_size"] = expert_inner;
    if (shared > 0.0) {
        std::uint64_t shared_inner = 0;
        const Setting total = moe_setting(config, spellings::shared_inner, "the shared experts");
        if (family.mcore && optional_count(total))
            shared_inner = *optional_count(total);
        else if (family.mcore)
            shared_inner =
                static_cast<std::uint64_t>(expert_inner) * static_cast<std::uint64_t>(shared);
        else
            shared_inner = static_cast<std::uint64_t>(expert_inner * shared);
        if (shared_inner == 0 || shared_inner > 2147483647U)
            shared_count.fail(
                fmt::format("the shared experts' inner size {} is out of range", shared_inner));
        moe["shared_experts"] = 1;
        moe["shared_expert_ffn_hidden_size"] = shared_inner;
        // With use_seq_parallel MindFormers keeps the shared experts whole on every
        // model_parallel rank, each running its sequence shard (llama_layer.py:
        // parallel_config_sp.model_parallel = 1; shared_experts.py: dp = dp * tp, tp = 1).
        if (sequence_parallel && t > 1)
            moe["shared_experts_replicated"] = true;
    }
    const Setting ep = parallel_setting(config, "expert_parallel", "expert_model_parallel_size");
    moe["expert_parallel"] = optional_count(ep).value_or(1);
    std::uint32_t etp = 1;
    if (!family.mcore && !grouped_matmul) {
        const Setting expert_mp = config.lookup({"moe_config", "expert_model_parallel"});
        etp = optional_count(expert_mp).value_or(t) == 1 ? 1 : t;
    }
    moe["expert_tensor_parallel"] = etp;
    // Where MindFormers weighs the expert outputs has not been read from its code: the analytic
    // model's count from before moe.routing_weights existed is kept (the combine keeps the
    // rank's own weighted outputs).
    moe["routing_weights"] = "combine";
    if (!family.mcore && !grouped_matmul) {
        const Setting cf = moe_setting(config, spellings::capacity_factor, "the capacity factor");
        const double factor = cf.present() && !cf.node().IsNull()
                                  ? number_of(cf.node()).value_or(-1.0)
                                  : 1.1;  // MoEConfig's default
        if (cf.present() && !cf.node().IsNull() && !number_of(cf.node()))
            cf.fail("expected a number, got " + describe(cf.node()));
        if (factor > 0.0)
            moe["capacity_factor"] = factor;
    }
    if (!experts.every_layer) {
        const Setting first_k = moe_setting(config, spellings::first_k_dense, "the dense layers");
        const Setting freq = moe_setting(config, spellings::moe_layer_freq, "the MoE layers");
        const std::array<std::string_view, 1> sparse_step = {"decoder_sparse_step"};
        const std::array<std::string_view, 1> mlp_only = {"mlp_only_layers"};
        const Setting ignored[] = {model_setting(config, sparse_step, "decoder_sparse_step"),
                                   model_setting(config, mlp_only, "mlp_only_layers")};
        const detail::MoeLayers layers =
            detail::moe_layers(experts, first_k, freq, ignored, num_layers,
                               fmt::format("{} is {}", experts.count_name, E));
        warnings.insert(warnings.end(), layers.notes.begin(), layers.notes.end());
        const auto first_moe = std::ranges::find(layers.is_moe, true);
        if (std::find(first_moe, layers.is_moe.end(), false) == layers.is_moe.end()) {
            // Dense layers first, then MoE layers only (DeepSeek's first_k_dense_replace).
            if (first_moe != layers.is_moe.begin())
                moe["first_k_dense"] = first_moe - layers.is_moe.begin();
        } else {
            json::array pattern;
            for (const bool is_moe : layers.is_moe)
                pattern.emplace_back(is_moe ? 1 : 0);
            moe["layer_freq"] = std::move(pattern);
        }
    }
    o["moe"] = std::move(moe);
}

// Multi-latent attention: the classic DeepSeek models (research/deepseek3/deepseek2_model.py)
// always project the query through its latent and normalise both latents (q_lora_rank 1536,
// kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128 by default:
// deepseek3_config.py); the current ones (MLATransformerConfig, transformer_config.py) take
// q_lora_rank null as no query latent and have the latent norms with qk_layernorm (the DeepSeek-V3
// model type's default: configuration_deepseek_v3.py). The heads' widths are MLA's own:
// num_kv_heads and head_dim are not used.
bool add_mla(const Config& config, const Family& family, const detail::Experts& experts,
             json::object& o) {
    const std::array<std::string_view, 1> q_lora_name = {"q_lora_rank"};
    const std::array<std::string_view, 1> kv_lora_name = {"kv_lora_rank"};
    const std::array<std::string_view, 1> flag_name = {"multi_latent_attention"};
    const std::array<std::string_view, 1> v_head_name = {"v_head_dim"};
    const Setting q_lora = model_setting(config, q_lora_name, "the query latent");
    const Setting kv_lora = model_setting(config, kv_lora_name, "the key/value latent");
    const Setting flag = model_setting(config, flag_name, "MLA");
    const bool deepseek_type = family.mcore && experts.model_type == "deepseek_v3";
    const bool given = (q_lora.present() && !q_lora.node().IsNull()) ||
                       (kv_lora.present() && !kv_lora.node().IsNull());
    if (!(given || switch_on(flag, false) || deepseek_type || family.classic_deepseek))
        return false;
    json::object mla;
    // spelled() takes a null as not given: look for the explicit null itself.
    const bool q_lora_null = std::ranges::any_of(detail::model_sections(), [&](const auto& path) {
        detail::KeyPath key = path;
        key.push_back("q_lora_rank");
        const Setting raw = config.lookup(std::span<const std::string_view>(key));
        return raw.present() && raw.node().IsNull();
    });
    if (family.mcore && q_lora_null) {
        // no query latent
    } else {
        mla["q_lora_rank"] =
            optional_count(q_lora).value_or(family.mcore && !deepseek_type ? 512U : 1536U);
    }
    mla["kv_lora_rank"] = optional_count(kv_lora).value_or(512);
    mla["qk_head_dim"] =
        optional_count(model_setting(config, spellings::mla_qk_head, "the query/key head"))
            .value_or(128);
    mla["qk_pos_emb_head_dim"] =
        optional_count(model_setting(config, spellings::mla_rope_head, "the rotary head"))
            .value_or(64);
    mla["v_head_dim"] =
        optional_count(model_setting(config, v_head_name, "the value head")).value_or(128);
    mla["qk_layernorm"] =
        !family.mcore ||
        switch_on(model_setting(config, spellings::qk_norm, "the latent norms"), deepseek_type);
    o["mla"] = std::move(mla);
    return true;
}

// Context parallelism (parallel_config.context_parallel, context_parallel_algo, and
// use_ring_attention): the classic models gather K and V over the context-parallel ranks
// (colossalai_cp, the default: Q split (dp, cp, mp), K and V (dp, 1, mp) in
// modules/flash_attention.py), pass them round a ring with use_ring_attention, split the heads
// by an all-to-all (ulysses_cp), or both (hybrid_cp: ulysses_degree_in_cp ranks by all-to-all,
// the others by the ring, counted as a2a+p2p over all ranks, an upper bound of its gather); the
// current models map colossalai_cp to all_gather and ulysses_cp to a2a and refuse hybrid_cp
// (transformer_config_utils.py get_cp_comm_type). Both need flash attention.
void add_cp(const Config& config, const Family& family, json::object& o,
            std::vector<std::string>& warnings) {
    const Setting cp = parallel_setting(config, "context_parallel", "context_parallel_size");
    const std::uint32_t c = optional_count(cp).value_or(1);
    if (c <= 1)
        return;
    if (!switch_on(config.lookup({"model", "model_config", "use_flash_attention"}), false)) {
        cp.fail(
            fmt::format("{} context-parallel ranks need model.model_config."
                        "use_flash_attention: True (MindFormers runs context parallelism in "
                        "flash attention only)",
                        c));
    }
    const Setting algo = config.lookup({"parallel_config", "context_parallel_algo"});
    const std::string name = optional_text(algo).value_or("colossalai_cp");
    const bool ring =
        switch_on(config.lookup({"model", "model_config", "use_ring_attention"}), false) ||
        switch_on(config.lookup({"parallel_config", "use_ring_attention"}), false);
    std::string type;
    if (name == "colossalai_cp") {
        type = ring ? "p2p" : "all_gather";
    } else if (name == "ulysses_cp") {
        type = "a2a";
    } else if (name == "hybrid_cp") {
        if (family.mcore)
            algo.fail(
                "hybrid_cp: MindFormers' current models refuse it "
                "(transformer_config_utils.py, get_cp_comm_type); use colossalai_cp or "
                "ulysses_cp");
        type = "a2a+p2p";
        if (!ring)
            warnings.push_back(fmt::format(
                "{}: hybrid_cp without ring attention gathers keys and values over the ranks "
                "outside the all-to-all; counted as an all-to-all with a ring over all {} ranks "
                "(a2a+p2p, an upper bound)",
                algo.where(), c));
    } else {
        algo.fail(fmt::format("expected colossalai_cp, ulysses_cp or hybrid_cp, got '{}'", name));
    }
    o["context_parallel"] = c;
    o["cp_comm_type"] = type;
}

// Multi-token prediction: mtp_depth (or its other names) MTP layers on the last stage, each a
// layer of the model's last layer's kind with its own fuser (two norms and a 2h -> h linear) and
// norm, sharing the embedding and the output layer (research/deepseek3/deepseek2_model.py;
// training_graph/transformer/multi_token_prediction.py). The current models take at most one
// (transformer_config.py refuses more).
std::uint32_t add_mtp(const Config& config, const Family& family, json::object& o) {
    const Setting mtp = model_setting(config, spellings::mtp_layers, "the MTP layers");
    if (!mtp.present() || mtp.node().IsNull())
        return 0;
    const auto depth = integer_of(mtp.node());
    if (!depth || *depth < 0 || *depth > 64 || boolean_of(mtp.node()))
        mtp.fail("expected a count of layers (0 to 64), got " + describe(mtp.node()));
    if (family.mcore && *depth > 1)
        mtp.fail(
            fmt::format("{} MTP layers: MindFormers' current models take at most one "
                        "(transformer_config.py refuses more)",
                        *depth));
    if (*depth > 0)
        o["mtp_num_layers"] = *depth;
    return static_cast<std::uint32_t>(*depth);
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

    const Family family = family_of(config);
    // Mixture of experts wherever MindFormers builds experts (mindformers_keys.hpp): by the
    // expert count under any of its names, the model type, or a setting only experts have.
    const detail::Experts experts = detail::model_experts(
        &config, detail::spelled(config, detail::moe_sections(), spellings::experts,
                                 "the number of experts"));

    const std::uint32_t L = required(config, spellings::num_layers, "the transformer layers");
    const std::array<std::string_view, 1> hidden = {"hidden_size"};
    const std::uint32_t h = required(config, hidden, "the hidden size");
    const std::uint32_t a = required(config, spellings::num_heads, "the attention heads");
    const std::array<std::string_view, 1> sequence = {"seq_length"};
    // The sequence length: the model's; the current models' configurations give it in the
    // dataset's section only (configs/qwen3_moe/pretrain_qwen3_30b_a3b_4k.yaml:
    // train_dataset.data_loader.config.seq_length), the samples the graph is built for; without
    // either, MFModelConfig's default 4096 (mindformers/parallel_core/mf_model_config.py).
    const Setting dataset_sequence =
        config.lookup({"train_dataset", "data_loader", "config", "seq_length"});
    const bool model_sequence = given_setting(model_setting(config, sequence, "the sequence"));
    std::uint32_t s = 0;
    if (model_sequence || (!family.mcore && !given_setting(dataset_sequence))) {
        s = required(config, sequence, "the sequence length");
    } else if (given_setting(dataset_sequence)) {
        s = positive_integer(dataset_sequence);
    } else {
        s = 4096;
        out.warnings.push_back(fmt::format(
            "{}: no seq_length in model.model_config or train_dataset.data_loader.config: taken "
            "as MFModelConfig's default 4096",
            config.name()));
    }
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
    const bool mla = add_mla(config, family, experts, o);
    o["hidden_size"] = h;
    o["num_attention_heads"] = a;
    o["ffn_hidden_size"] = F;
    o["seq_length"] = s;
    o["micro_batch_size"] = b;
    o["vocab_size"] = V;
    o["num_layers"] = L;
    o["tensor_parallel"] = t;
    if (kv_heads != a && !mla)
        o["num_kv_heads"] = kv_heads;
    // The heads' width when it is not hidden_size / num_heads (Qwen3: 64 heads of 128 on a
    // hidden size of 5 120): TransformerConfig.kv_channels, which COMMON_CONFIG_MAPPING fills from
    // head_dim (mindformers_keys.hpp).
    if (const Setting head_dim = model_setting(config, spellings::head_dim, "the head dimension");
        !mla && head_dim.present() && !head_dim.node().IsNull()) {
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
    add_cp(config, family, o, out.warnings);
    if (experts.moe) {
        add_moe(config, family, experts, L, static_cast<std::uint32_t>(F), t,
                o.at("sequence_parallel").as_bool(), o, out.warnings);
    }
    out.mtp_layers = add_mtp(config, family, o);

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
    // Query/key norms (the current models' qk_layernorm, TransformerConfig's): each keeps its
    // input; MLA's are its latents' (add_mla).
    if (!mla && switch_on(model_setting(config, spellings::qk_norm, "the query/key norms"), false))
        o["qk_layernorm"] = true;
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
