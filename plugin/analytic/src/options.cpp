#include "options.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/model_shape_keys.hpp>
#include <ppb/plugin.hpp>
#include <ppb/plugin/report_support.hpp>

#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ppb::analytic {

namespace {

using ppb::plugin::InvalidInput;
namespace json = boost::json;

constexpr std::int64_t max_integer = 2147483647;  // keeps every product finite and exact enough

struct IntegerOption {
    std::string_view key;
    std::uint32_t ShapeOptions::*member;
    bool required;
    std::string_view meaning;
    std::int64_t max = max_integer;
};

struct BoolOption {
    std::string_view key;
    bool ShapeOptions::*member;
};

struct NumberOption {
    std::string_view key;
    double ShapeOptions::*member;
    double min;  // inclusive unless min_exclusive
    bool min_exclusive;
    double max;
};

constexpr std::array<IntegerOption, 14> integer_options = {{
    {"hidden_size", &ShapeOptions::hidden_size, true, "the hidden size h"},
    {"num_attention_heads", &ShapeOptions::num_attention_heads, true,
     "the number of attention (query) heads a"},
    {"ffn_hidden_size", &ShapeOptions::ffn_hidden_size, true, "the MLP's inner size F"},
    {"seq_length", &ShapeOptions::seq_length, true, "the sequence length s"},
    {"micro_batch_size", &ShapeOptions::micro_batch_size, true, "the micro-batch size b"},
    {"vocab_size", &ShapeOptions::vocab_size, true, "the vocabulary size V"},
    {"num_layers", &ShapeOptions::num_layers, true, "the number of transformer layers L",
     ppb::limits::layers.max},
    {"tensor_parallel", &ShapeOptions::tensor_parallel, true, "the tensor-parallel degree t"},
    {"num_kv_heads", &ShapeOptions::num_kv_heads, false, "the number of key/value heads"},
    {"kv_channels", &ShapeOptions::kv_channels, false, "the channels of one attention head"},
    {"data_parallel", &ShapeOptions::data_parallel, false, "the data-parallel degree d"},
    {"position_embeddings", &ShapeOptions::position_embeddings, false,
     "the positions of learned absolute position embeddings"},
    {"context_parallel", &ShapeOptions::context_parallel, false, "the context-parallel degree"},
    {"deferred_wgrad_micro_batches", &ShapeOptions::deferred_wgrad_micro_batches, false,
     "the micro-batches whose LM-head output gradient the last stage keeps for its deferred "
     "weight gradient"},
}};

constexpr std::array<BoolOption, 15> bool_options = {{
    {"sequence_parallel", &ShapeOptions::sequence_parallel},
    {"distributed_optimizer", &ShapeOptions::distributed_optimizer},
    {"gated_mlp", &ShapeOptions::gated_mlp},
    {"flash_attention", &ShapeOptions::flash_attention},
    {"untie_embeddings", &ShapeOptions::untie_embeddings},
    {"dropout", &ShapeOptions::dropout},
    {"keep_gathered_inputs", &ShapeOptions::keep_gathered_inputs},
    {"linear_biases", &ShapeOptions::linear_biases},
    {"backward_transient", &ShapeOptions::backward_transient},
    {"softmax_in_fp32", &ShapeOptions::softmax_in_fp32},
    {"fp8_param_gather", &ShapeOptions::fp8_param_gather},
    {"fp8_transposes", &ShapeOptions::fp8_transposes},
    {"fused_norms", &ShapeOptions::fused_norms},
    {"qk_layernorm", &ShapeOptions::qk_layernorm},
    {"cross_entropy_loss_fusion", &ShapeOptions::cross_entropy_loss_fusion},
}};

constexpr std::array<NumberOption, 10> number_options = {{
    {"param_bytes", &ShapeOptions::param_bytes, 0.0, true, 64.0},
    {"grad_bytes", &ShapeOptions::grad_bytes, 0.0, false, 64.0},
    {"optimizer_bytes", &ShapeOptions::optimizer_bytes, 0.0, false, 256.0},
    {"constant_mb", &ShapeOptions::constant_mb, 0.0, false, ppb::limits::memory_mb.max},
    {"runtime_mb", &ShapeOptions::runtime_mb, 0.0, false, ppb::limits::memory_mb.max},
    {"logits_bytes", &ShapeOptions::logits_bytes, 0.0, false, 64.0},
    {"logits_transient_bytes", &ShapeOptions::logits_transient_bytes, 0.0, false, 64.0},
    {"relative_std_error", &ShapeOptions::relative_std_error, 0.0, false, 1.0},
    {"activation_offload_fraction", &ShapeOptions::activation_offload_fraction, 0.0, false, 1.0},
    {"optimizer_offload_fraction", &ShapeOptions::optimizer_offload_fraction, 0.0, false, 1.0},
}};

// Options parsed on their own, after the shape they depend on: objects, lists, and the
// multi-token prediction layers' placement.
constexpr std::array<std::string_view, 14> separate_options = {"moe",
                                                               "mla",
                                                               "recompute_modules",
                                                               "mtp_num_layers",
                                                               "mtp_stage_offset",
                                                               "mtp_recompute",
                                                               "cp_comm_type",
                                                               "activation_bytes",
                                                               "fp8_recipe",
                                                               "offload_modules",
                                                               "data_parallel_sharding",
                                                               "cuda_graph_scope",
                                                               "cross_entropy_fusion_impl",
                                                               "cpu_offloading_num_layers"};

// A number as people write it: 8192.5, 0.1, 1e+12.
std::string format_number(double x) {
    return ppb::plugin::format_number(x, 15);
}

std::string quoted(std::string_view key) {
    return "analytic option '" + std::string(key) + "'";
}

std::string known_options() {
    std::string out;
    for (const std::string_view key : option_names())
        out += (out.empty() ? "" : ", ") + std::string(key);
    return out;
}

// The known option a misspelt key was probably meant to be (ppb::json's rule).
std::optional<std::string_view> closest_key(std::string_view key) {
    const std::vector<std::string_view> known = option_names();
    return ppb::closest_name(key, known);
}

// Options that are another model's input given to this one by mistake.
void reject_foreign_document(const json::object& root) {
    if (root.contains("layers_description")) {
        throw InvalidInput(
            "analytic options hold 'layers_description': that is a SAPP layer file: use --model "
            "table (the analytic model takes the transformer's shape: hidden_size, "
            "num_attention_heads, ...)");
    }
    const json::value* format = root.if_contains("format");
    const std::string format_name =
        format != nullptr && format->is_string() ? std::string(format->get_string()) : "";
    if (root.contains("observations") || format_name.starts_with("ppb.dryrun")) {
        throw InvalidInput(
            std::string("analytic options hold '") +
            (root.contains("observations") ? "observations" : "format") +
            "': that is a dry-run file (ppb.dryrun/1): fit it with --model dryrun-lsq; the "
            "analytic model takes the transformer's shape (hidden_size, num_attention_heads, ...)");
    }
    if (format_name.starts_with("ppb.fit")) {
        throw InvalidInput("analytic options hold 'format': \"" + format_name +
                           "\": that is a fit result (ppb.fit/1), not the transformer's shape");
    }
    if (format != nullptr) {
        throw InvalidInput(
            "analytic options hold 'format': that is a ppb document, not the transformer's shape "
            "(hidden_size, num_attention_heads, ...)");
    }
    if (root.contains("rank_tolerance")) {
        throw InvalidInput(
            "analytic has no option 'rank_tolerance': that is an option of the dryrun-lsq model");
    }
}

std::uint32_t parse_integer(const json::value& v, std::string_view key, std::int64_t max) {
    const std::string range = " must be an integer from 1 to " + std::to_string(max);
    std::int64_t n = 0;
    if (v.is_int64()) {
        n = v.get_int64();
    } else if (v.is_uint64()) {
        throw InvalidInput(quoted(key) + range + ", got " + describe_json(v));
    } else if (v.is_double()) {
        const double d = v.get_double();
        if (!std::isfinite(d) || d != std::floor(d) || d < 1.0 || d > static_cast<double>(max)) {
            throw InvalidInput(quoted(key) + range + ", got " + describe_json(v));
        }
        n = static_cast<std::int64_t>(d);
    } else {
        throw InvalidInput(quoted(key) + range + ", got " + describe_json(v));
    }
    if (n < 1 || n > max) {
        throw InvalidInput(quoted(key) + range + ", got " + describe_json(v));
    }
    return static_cast<std::uint32_t>(n);
}

bool parse_bool(const json::value& v, std::string_view key) {
    if (!v.is_bool()) {
        throw InvalidInput(quoted(key) + " must be true or false, got " + describe_json(v));
    }
    return v.get_bool();
}

// The training dtype's bytes: 2 (bf16, fp16) or 4 (fp32); the formulas know no other.
double parse_activation_bytes(const json::value& v) {
    json::error_code ec;
    const double x = v.is_number() ? v.to_number<double>(ec) : 0.0;
    if (!v.is_number() || ec || (x != 2.0 && x != 4.0)) {
        throw InvalidInput(quoted("activation_bytes") +
                           " must be 2 (bf16, fp16 activations) or 4 (fp32), got " +
                           describe_json(v));
    }
    return x;
}

double parse_number(const json::value& v, const NumberOption& option) {
    const std::string range =
        std::string(" must be a number ") + (option.min_exclusive ? "greater than " : "from ") +
        format_number(option.min) + (option.min_exclusive ? " and at most " : " to ") +
        format_number(option.max);
    if (!v.is_number()) {
        throw InvalidInput(quoted(option.key) + range + ", got " + describe_json(v));
    }
    json::error_code ec;
    const double x = v.to_number<double>(ec);
    const bool below = option.min_exclusive ? x <= option.min : x < option.min;
    if (ec || !std::isfinite(x) || below || x > option.max) {
        throw InvalidInput(quoted(option.key) + range + ", got " + describe_json(v));
    }
    return x;
}

void require_divisible(std::uint64_t n, std::string_view n_key, std::uint64_t d,
                       std::string_view d_key, std::string_view why) {
    if (n % d != 0) {
        throw InvalidInput("analytic options: " + std::string(n_key) + " " + std::to_string(n) +
                           " is not divisible by " + std::string(d_key) + " " + std::to_string(d) +
                           ": " + std::string(why));
    }
}

void check_shape(const ShapeOptions& o) {
    const std::uint32_t kv = o.kv_heads();
    if (kv > o.num_attention_heads) {
        throw InvalidInput("analytic options: num_kv_heads " + std::to_string(kv) +
                           " exceeds num_attention_heads " + std::to_string(o.num_attention_heads) +
                           ": each key/value head serves one or more query heads");
    }
    // Multi-latent attention gives its heads their own widths (checked with 'mla'), as
    // kv_channels does.
    if (!o.mla && o.kv_channels == 0) {
        require_divisible(o.hidden_size, "hidden_size", o.num_attention_heads,
                          "num_attention_heads", "every head has h/a channels");
    }
    require_divisible(o.num_attention_heads, "num_attention_heads", kv, "num_kv_heads",
                      "grouped-query attention gives each key/value head a/num_kv_heads query "
                      "heads");
    require_divisible(o.num_attention_heads, "num_attention_heads", o.tensor_parallel,
                      "tensor_parallel", "tensor parallelism splits the attention heads");
    require_divisible(kv, "num_kv_heads", o.tensor_parallel, "tensor_parallel",
                      "tensor parallelism splits the key/value heads (as Megatron-LM requires)");
    require_divisible(o.ffn_hidden_size, "ffn_hidden_size", o.tensor_parallel, "tensor_parallel",
                      "tensor parallelism splits the MLP's inner dimension");
    require_divisible(o.vocab_size, "vocab_size", o.tensor_parallel, "tensor_parallel",
                      "the embedding and the LM head are split over the vocabulary; give the "
                      "padded vocabulary size your framework allocates (Megatron-LM pads to a "
                      "multiple of 128 * tensor_parallel)");
    const std::uint32_t c = o.context_parallel;
    if (c > 1) {
        require_divisible(o.seq_length, "seq_length", 2ULL * c, "2 * context_parallel",
                          "context parallelism gives each rank two chunks of the sequence (one "
                          "from each end, for causal attention's balance; Megatron-LM requires "
                          "it)");
        if (!o.flash_attention) {
            throw InvalidInput(
                "analytic options: context_parallel " + std::to_string(c) +
                " needs flash_attention: Transformer Engine runs context-parallel attention in "
                "its fused kernels only");
        }
    }
    if (o.sequence_parallel && c == 1) {
        require_divisible(o.seq_length, "seq_length", o.tensor_parallel, "tensor_parallel",
                          "sequence parallelism splits the sequence over the tensor-parallel "
                          "ranks");
    } else if (o.sequence_parallel && c > 1) {  // c is at least 1 (parse_integer)
        require_divisible(o.seq_length / c, "seq_length / context_parallel", o.tensor_parallel,
                          "tensor_parallel",
                          "sequence parallelism splits each context-parallel rank's sequence "
                          "over the tensor-parallel ranks");
    }
}

// ---- The "moe" object ----

// The members of "moe": ppb/model_shape_keys.hpp, the host's time model's list too.
constexpr const auto& moe_keys = ppb::model_shape::moe_keys;

std::string moe_key(std::string_view key) {
    return "moe." + std::string(key);
}

// A count that may be 0 (shared_experts, first_k_dense).
std::uint32_t parse_count(const json::value& v, std::string_view key) {
    if (v.is_int64() && v.get_int64() == 0)
        return 0;
    if (v.is_double() && v.get_double() == 0.0)
        return 0;
    return parse_integer(v, key, max_integer);
}

// A recompute kind by its name (none, select, comm, both, full).
ppb_kind parse_kind(const json::value& v, std::string_view key) {
    if (v.is_string()) {
        if (const auto kind = ppb::kind_from_name(v.get_string()))
            return *kind;
    }
    throw InvalidInput(quoted(key) +
                       " must be a recompute kind (none, select, comm, both or full), got " +
                       describe_json(v));
}

// Transformer Engine's names (Megatron-LM also writes all_gather as allgather).
CpCommType parse_cp_comm_type(const json::value& v) {
    if (v.is_string()) {
        const std::string_view name = v.get_string();
        if (name == "p2p")
            return CpCommType::p2p;
        if (name == "all_gather" || name == "allgather")
            return CpCommType::all_gather;
        if (name == "a2a")
            return CpCommType::a2a;
        if (name == "a2a+p2p")
            return CpCommType::a2a_p2p;
    }
    throw InvalidInput(quoted("cp_comm_type") +
                       " must be one of p2p, all_gather, a2a, a2a+p2p (Transformer Engine's "
                       "context-parallel communication), got " +
                       describe_json(v));
}

// Megatron-LM's --fp8-recipe names, and nvfp4 for --fp4-format's recipe.
Fp8Recipe parse_fp8_recipe(const json::value& v) {
    if (v.is_string()) {
        const std::string_view name = v.get_string();
        if (name == "delayed")
            return Fp8Recipe::delayed;
        if (name == "tensorwise")
            return Fp8Recipe::tensorwise;
        if (name == "blockwise")
            return Fp8Recipe::blockwise;
        if (name == "mxfp8")
            return Fp8Recipe::mxfp8;
        if (name == "nvfp4")
            return Fp8Recipe::nvfp4;
    }
    throw InvalidInput(quoted("fp8_recipe") +
                       " must be one of delayed, tensorwise, blockwise, mxfp8, nvfp4 (Transformer "
                       "Engine's recipes as Megatron-LM names them), got " +
                       describe_json(v));
}

// Megatron-LM's --data-parallel-sharding-strategy names.
Sharding parse_sharding(const json::value& v) {
    if (v.is_string()) {
        const std::string_view name = v.get_string();
        if (name == "no_shard")
            return Sharding::no_shard;
        if (name == "optim")
            return Sharding::optim;
        if (name == "optim_grads")
            return Sharding::optim_grads;
        if (name == "optim_grads_params")
            return Sharding::optim_grads_params;
    }
    throw InvalidInput(quoted("data_parallel_sharding") +
                       " must be one of no_shard, optim, optim_grads, optim_grads_params "
                       "(Megatron-LM's --data-parallel-sharding-strategy), got " +
                       describe_json(v));
}

std::string parse_group_name(const json::value& v, std::string_view key) {
    if (!v.is_string() || v.get_string().empty()) {
        throw InvalidInput(quoted(key) + " must be a group name (a non-empty string), got " +
                           describe_json(v));
    }
    return std::string(v.get_string());
}

// --moe-layer-freq as a 0/1 list of one entry per layer.
std::vector<bool> parse_layer_list(const json::array& list, std::uint32_t num_layers) {
    if (list.size() != num_layers) {
        throw InvalidInput(quoted("moe.layer_freq") +
                           " as a list has one 0 or 1 per layer: " + std::to_string(list.size()) +
                           " entries, but num_layers is " + std::to_string(num_layers));
    }
    std::vector<bool> out;
    out.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json::value& e = list[i];
        const bool zero =
            (e.is_int64() && e.get_int64() == 0) || (e.is_double() && e.get_double() == 0.0);
        const bool one =
            (e.is_int64() && e.get_int64() == 1) || (e.is_double() && e.get_double() == 1.0);
        if (!zero && !one) {
            throw InvalidInput(quoted("moe.layer_freq") + " entry " + std::to_string(i) +
                               " must be 0 (dense) or 1 (MoE), got " + describe_json(e));
        }
        out.push_back(one);
    }
    return out;
}

MoeOptions parse_moe(const json::value& value, const ShapeOptions& shape) {
    if (!value.is_object()) {
        throw InvalidInput(quoted("moe") + " must be an object (num_experts, top_k, ...), got " +
                           describe_json(value));
    }
    MoeOptions m;
    bool has_ffn = false;
    bool has_shared_ffn = false;
    bool has_etp = false;
    bool has_first_k = false;
    bool has_imbalance = false;
    const json::array* layer_list = nullptr;
    for (const auto& [key, v] : value.get_object()) {
        const std::string name = moe_key(key);
        if (key == "num_experts") {
            m.num_experts = parse_integer(v, name, max_integer);
        } else if (key == "top_k") {
            m.top_k = parse_integer(v, name, max_integer);
        } else if (key == "moe_ffn_hidden_size") {
            m.moe_ffn_hidden_size = parse_integer(v, name, max_integer);
            has_ffn = true;
        } else if (key == "shared_experts") {
            m.shared_experts = parse_count(v, name);
        } else if (key == "shared_expert_ffn_hidden_size") {
            m.shared_expert_ffn_hidden_size = parse_integer(v, name, max_integer);
            has_shared_ffn = true;
        } else if (key == "shared_experts_replicated") {
            if (!v.is_bool())
                throw InvalidInput(quoted(std::string_view(name)) + " expects true or false, got " +
                                   describe_json(v));
            m.shared_experts_replicated = v.as_bool();
        } else if (key == "expert_parallel") {
            m.expert_parallel = parse_integer(v, name, max_integer);
        } else if (key == "expert_tensor_parallel") {
            m.expert_tensor_parallel = parse_integer(v, name, max_integer);
            has_etp = true;
        } else if (key == "capacity_factor") {
            m.capacity_factor =
                parse_number(v, NumberOption{"moe.capacity_factor", nullptr, 0.0, true, 1024.0});
        } else if (key == "routing_imbalance") {
            m.routing_imbalance =
                parse_number(v, NumberOption{"moe.routing_imbalance", nullptr, 1.0, false, 1024.0});
            has_imbalance = true;
        } else if (key == "routing_weights") {
            if (v.is_string() && v.get_string() == "combine") {
                m.routing_weights = RoutingWeights::combine;
            } else if (v.is_string() && v.get_string() == "combine_fp32") {
                m.routing_weights = RoutingWeights::combine_fp32;
            } else if (v.is_string() && v.get_string() == "experts") {
                m.routing_weights = RoutingWeights::experts;
            } else {
                throw InvalidInput(quoted(std::string_view(name)) +
                                   " must be \"experts\" (the weights applied inside the experts' "
                                   "activation), \"combine\" (by the combine) or "
                                   "\"combine_fp32\" (by the combine, in fp32), got " +
                                   describe_json(v));
            }
        } else if (key == "activation_fused") {
            if (!v.is_bool())
                throw InvalidInput(quoted(std::string_view(name)) + " expects true or false, got " +
                                   describe_json(v));
            m.activation_fused = v.as_bool();
        } else if (key == "first_k_dense") {
            m.first_k_dense = parse_count(v, name);
            has_first_k = true;
        } else if (key == "layer_freq") {
            if (v.is_array()) {
                layer_list = &v.get_array();
                m.layer_freq_list = true;
            } else if (v.is_number()) {
                m.layer_freq_every = parse_integer(v, name, max_integer);
            } else {
                throw InvalidInput((quoted)(name) +
                                   " must be an integer N (every N-th layer is MoE) or a list of "
                                   "0/1, one per layer, got " +
                                   describe_json(v));
            }
        } else if (key == "dense_group") {
            m.dense_group = parse_group_name(v, name);
        } else if (key == "moe_group") {
            m.moe_group = parse_group_name(v, name);
        } else if (key == "token_dispatcher") {
            // How tokens reach their experts: a time matter (ppb's time model,
            // host_api/docs/cluster.md); DeepEP's pre-allocated buffers are not modelled.
            if (!v.is_string() || (v.get_string() != "alltoall" && v.get_string() != "flex")) {
                throw InvalidInput(quoted(std::string_view(name)) +
                                   " must be \"alltoall\" (Megatron-LM's all-to-all dispatcher) "
                                   "or \"flex\" (DeepEP or HybridEP), got " +
                                   describe_json(v));
            }
        } else {
            const std::vector<std::string_view> known(moe_keys.begin(), moe_keys.end());
            std::string message = "analytic option 'moe' has no member '" + std::string(key) + "'";
            if (const auto suggestion = ppb::closest_name(key, known))
                message += " (did you mean '" + std::string(*suggestion) + "'?)";
            std::string list;
            for (const auto k : known)
                list += (list.empty() ? "" : ", ") + std::string(k);
            throw InvalidInput(message + "; its members: " + list);
        }
    }
    if (m.num_experts == 0)
        throw InvalidInput("analytic: missing required option 'moe.num_experts' (routed experts)");
    if (m.top_k == 0) {
        throw InvalidInput(
            "analytic: missing required option 'moe.top_k' (experts each token is routed to)");
    }
    if (m.num_experts == 1) {
        throw InvalidInput(
            "analytic options: moe.num_experts is 1: a mixture of one expert is a dense MLP; "
            "drop 'moe' (and give its size as ffn_hidden_size)");
    }
    if (m.top_k > m.num_experts) {
        throw InvalidInput("analytic options: moe.top_k " + std::to_string(m.top_k) +
                           " exceeds moe.num_experts " + std::to_string(m.num_experts) +
                           ": a token is routed to top_k distinct experts");
    }
    if (has_imbalance && m.capacity_factor) {
        throw InvalidInput(
            "analytic options: moe.routing_imbalance and moe.capacity_factor together: with a "
            "capacity factor every expert holds exactly that many tokens; give one");
    }
    if (has_shared_ffn && m.shared_experts == 0) {
        throw InvalidInput(
            "analytic options: moe.shared_expert_ffn_hidden_size is given but moe.shared_experts "
            "is 0 (the default): give the number of shared experts, or drop their size");
    }
    if (!has_ffn)
        m.moe_ffn_hidden_size = shape.ffn_hidden_size;
    if (!has_shared_ffn)
        m.shared_expert_ffn_hidden_size = m.moe_ffn_hidden_size;
    if (!has_etp)
        m.expert_tensor_parallel = shape.tensor_parallel;  // Megatron-LM's default

    // Layout: Megatron-LM's --moe-layer-freq (layer i is MoE when i % N == 0, or the list's
    // i-th entry), with DeepSeek's first_k_dense_replace making the first k layers dense.
    const std::uint32_t L = shape.num_layers;
    if (has_first_k && m.first_k_dense >= L) {
        throw InvalidInput("analytic options: moe.first_k_dense " +
                           std::to_string(m.first_k_dense) + " is not below num_layers " +
                           std::to_string(L) +
                           ": no layer would be MoE (drop 'moe' for a dense "
                           "model)");
    }
    if (layer_list != nullptr) {
        m.moe_layer = parse_layer_list(*layer_list, L);
        if (has_first_k) {
            std::uint32_t leading_dense = 0;
            while (leading_dense < L && !m.moe_layer[leading_dense])
                ++leading_dense;
            if (leading_dense != m.first_k_dense) {
                throw InvalidInput("analytic options: moe.first_k_dense " +
                                   std::to_string(m.first_k_dense) +
                                   " disagrees with the moe.layer_freq list, which starts with " +
                                   std::to_string(leading_dense) +
                                   " dense layers: give one of the two, or make them agree");
            }
        }
    } else {
        const std::uint32_t every = m.layer_freq_every.value_or(1);
        m.moe_layer.resize(L);
        for (std::uint32_t i = 0; i < L; ++i)
            m.moe_layer[i] = i >= m.first_k_dense && i % every == 0;
    }
    if (m.moe_layers() == 0) {
        throw InvalidInput("analytic options: moe.layer_freq" +
                           std::string(has_first_k ? " with moe.first_k_dense" : "") +
                           " makes no layer MoE (an integer N makes layers 0, N, 2N, ... MoE, from "
                           "first_k_dense on): drop 'moe' for a dense model");
    }
    if (m.moe_layers() < L && m.dense_group == m.moe_group) {
        throw InvalidInput("analytic options: moe.dense_group and moe.moe_group are both '" +
                           m.dense_group + "': the two groups of body layers need two names");
    }

    // Splits the formulas need (README.md, "Mixture of experts").
    require_divisible(m.num_experts, "moe.num_experts", m.expert_parallel, "moe.expert_parallel",
                      "expert parallelism gives every rank num_experts / expert_parallel whole "
                      "experts (Megatron-LM requires it)");
    require_divisible(m.moe_ffn_hidden_size, "moe.moe_ffn_hidden_size", m.expert_tensor_parallel,
                      "moe.expert_tensor_parallel",
                      "expert tensor parallelism splits each routed expert's inner dimension");
    if (m.shared_experts > 0 && !m.shared_experts_replicated) {
        require_divisible(
            static_cast<std::uint64_t>(m.shared_experts) * m.shared_expert_ffn_hidden_size,
            "moe.shared_experts * moe.shared_expert_ffn_hidden_size", shape.tensor_parallel,
            "tensor_parallel",
            "the shared experts are one MLP of that inner size, split like a dense "
            "MLP");
    }
    const std::uint64_t expert_grid =
        static_cast<std::uint64_t>(m.expert_parallel) * m.expert_tensor_parallel;
    const std::uint64_t dense_grid = static_cast<std::uint64_t>(shape.tensor_parallel) *
                                     shape.data_parallel * shape.context_parallel;
    if (dense_grid % expert_grid != 0) {
        throw InvalidInput(
            "analytic options: tensor_parallel * data_parallel" +
            std::string(shape.context_parallel > 1 ? " * context_parallel" : "") + " = " +
            std::to_string(dense_grid) +
            " is not divisible by moe.expert_parallel * moe.expert_tensor_parallel = " +
            std::to_string(expert_grid) +
            ": the expert layers fold the same ranks of a pipeline stage into expert-tensor x "
            "expert x expert-data parallel groups (Megatron-LM requires its world size to be a "
            "multiple of ETP * EP * PP); give data_parallel");
    }
    if (shape.tensor_parallel > 1 && !shape.sequence_parallel) {
        throw InvalidInput(
            "analytic options: 'moe' with tensor_parallel " +
            std::to_string(shape.tensor_parallel) +
            " needs sequence_parallel: Megatron-LM requires sequence parallelism for MoE with "
            "tensor parallelism, and the token counts of the experts assume it");
    }
    return m;
}

// ---- The "mla" object ----

// The members of "mla": ppb/model_shape_keys.hpp.
constexpr const auto& mla_keys = ppb::model_shape::mla_keys;

MlaOptions parse_mla(const json::value& value, const ShapeOptions& shape) {
    if (!value.is_object()) {
        throw InvalidInput(quoted("mla") +
                           " must be an object (kv_lora_rank, qk_head_dim, ...), got " +
                           describe_json(value));
    }
    MlaOptions m;
    for (const auto& [key, v] : value.get_object()) {
        const std::string name = "mla." + std::string(key);
        if (key == "q_lora_rank") {
            m.q_lora_rank = parse_integer(v, name, max_integer);
        } else if (key == "kv_lora_rank") {
            m.kv_lora_rank = parse_integer(v, name, max_integer);
        } else if (key == "qk_head_dim") {
            m.qk_head_dim = parse_integer(v, name, max_integer);
        } else if (key == "qk_pos_emb_head_dim") {
            m.qk_pos_emb_head_dim = parse_integer(v, name, max_integer);
        } else if (key == "v_head_dim") {
            m.v_head_dim = parse_integer(v, name, max_integer);
        } else if (key == "qk_layernorm") {
            m.qk_layernorm = parse_bool(v, name);
        } else {
            const std::vector<std::string_view> known(mla_keys.begin(), mla_keys.end());
            std::string message = "analytic option 'mla' has no member '" + std::string(key) + "'";
            if (const auto suggestion = ppb::closest_name(key, known))
                message += " (did you mean '" + std::string(*suggestion) + "'?)";
            std::string list;
            for (const auto k : known)
                list += (list.empty() ? "" : ", ") + std::string(k);
            throw InvalidInput(message + "; its members: " + list);
        }
    }
    const std::pair<std::string_view, std::uint32_t> required[] = {
        {"kv_lora_rank", m.kv_lora_rank},
        {"qk_head_dim", m.qk_head_dim},
        {"qk_pos_emb_head_dim", m.qk_pos_emb_head_dim},
        {"v_head_dim", m.v_head_dim}};
    for (const auto& [key, n] : required) {
        if (n == 0) {
            throw InvalidInput("analytic: missing required option 'mla." + std::string(key) +
                               "' (multi-latent attention's head widths and latent rank)");
        }
    }
    if (shape.num_kv_heads != 0 && shape.num_kv_heads != shape.num_attention_heads) {
        throw InvalidInput(
            "analytic options: num_kv_heads " + std::to_string(shape.num_kv_heads) +
            " with 'mla': multi-latent attention has one key/value head per query head, made from "
            "the latent (Megatron-LM refuses grouped-query attention with it); drop num_kv_heads");
    }
    if (shape.qk_layernorm) {
        throw InvalidInput(
            "analytic options: qk_layernorm with 'mla': multi-latent attention's norms are its "
            "latents' (mla.qk_layernorm); drop the top-level qk_layernorm");
    }
    if (shape.kv_channels != 0) {
        throw InvalidInput(
            "analytic options: kv_channels " + std::to_string(shape.kv_channels) +
            " with 'mla': multi-latent attention's heads have the widths 'mla' gives "
            "(qk_head_dim, qk_pos_emb_head_dim, v_head_dim); drop kv_channels");
    }
    return m;
}

// ---- "recompute_modules" ----

// Megatron-LM's module names (megatron/core/transformer/transformer_config.py,
// recompute_modules, at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553) that the model counts,
// and those of other architectures it does not.
constexpr std::array<std::pair<std::string_view, bool RecomputeModules::*>, 7> recompute_names = {{
    {"core_attn", &RecomputeModules::core_attn},
    {"mla_up_proj", &RecomputeModules::mla_up_proj},
    {"layernorm", &RecomputeModules::layernorm},
    {"mlp", &RecomputeModules::mlp},
    {"moe", &RecomputeModules::moe},
    {"moe_act", &RecomputeModules::moe_act},
    {"shared_experts", &RecomputeModules::shared_experts},
}};
constexpr std::array<std::string_view, 4> other_recompute_modules = {"gdn_norm_out", "gdp_in_proj",
                                                                     "gdp_qkv", "mhc"};

// Megatron-LM's fine-grained offloading modules (docs/user-guide/features/
// fine_grained_activation_offloading.md, the same commit); fused_group_mlp needs Transformer
// Engine's operation fuser and is not counted.
constexpr std::array<std::pair<std::string_view, bool OffloadModules::*>, 7> offload_names = {{
    {"attn_norm", &OffloadModules::attn_norm},
    {"qkv_linear", &OffloadModules::qkv_linear},
    {"core_attn", &OffloadModules::core_attn},
    {"attn_proj", &OffloadModules::attn_proj},
    {"mlp_norm", &OffloadModules::mlp_norm},
    {"expert_fc1", &OffloadModules::expert_fc1},
    {"moe_act", &OffloadModules::moe_act},
}};

// The parts of a layer Megatron-LM's CUDA graph scopes name (CudaGraphScope in
// megatron/core/transformer/enums.py at NVIDIA/Megatron-LM commit
// 69ba8096f0daf65490b5c5a26e93b1d11367fd68); the attention's is counted.
constexpr std::array<std::pair<std::string_view, bool CudaGraphScope::*>, 1> graph_scope_names = {{
    {"attn", &CudaGraphScope::attn},
}};
constexpr std::array<std::string_view, 6> other_graph_scopes = {
    "mlp", "moe", "moe_router", "moe_preprocess", "mamba", "full_iteration"};

// A list of module names into the flags of `Modules` (`names` gives each name's member).
template <class Modules, std::size_t N>
Modules parse_module_list(const json::value& value, std::string_view key,
                          const std::array<std::pair<std::string_view, bool Modules::*>, N>& names,
                          std::span<const std::string_view> not_counted, Modules out) {
    if (!value.is_array()) {
        throw InvalidInput(quoted(key) + " must be a list of module names (e.g. [\"" +
                           std::string(names.front().first) + "\"]), got " + describe_json(value));
    }
    for (std::size_t i = 0; i < value.get_array().size(); ++i) {
        const json::value& e = value.get_array()[i];
        const std::string where = std::string(key) + " entry " + std::to_string(i);
        if (!e.is_string()) {
            throw InvalidInput("analytic option '" + where + "' must be a module name, got " +
                               describe_json(e));
        }
        const std::string_view name = e.get_string();
        const auto it =
            std::ranges::find(names, name, &std::pair<std::string_view, bool Modules::*>::first);
        if (it != names.end()) {
            out.*(it->second) = true;
            continue;
        }
        if (std::ranges::find(not_counted, name) != not_counted.end()) {
            throw InvalidInput("analytic option '" + where + "': '" + std::string(name) +
                               "' is a module of Megatron-LM the analytic model does not count");
        }
        std::vector<std::string_view> known;
        for (const auto& [n, member] : names)
            known.push_back(n);
        std::string message =
            "analytic option '" + where + "': no module '" + std::string(name) + "'";
        if (const auto suggestion = ppb::closest_name(name, known))
            message += " (did you mean '" + std::string(*suggestion) + "'?)";
        std::string list;
        for (const auto k : known)
            list += (list.empty() ? "" : ", ") + std::string(k);
        throw InvalidInput(message + "; the modules counted: " + list);
    }
    return out;
}

RecomputeModules parse_recompute_modules(const json::value& value, const ShapeOptions& shape) {
    RecomputeModules none;
    none.core_attn = false;
    const RecomputeModules out = parse_module_list(value, "recompute_modules", recompute_names,
                                                   other_recompute_modules, none);
    if (out.mla_up_proj && !shape.mla) {
        throw InvalidInput(
            "analytic option 'recompute_modules': mla_up_proj recomputes multi-latent attention's "
            "up-projections, but there is no 'mla' (Megatron-LM refuses it too)");
    }
    return out;
}

OffloadModules parse_offload_modules(const json::value& value) {
    constexpr std::array<std::string_view, 1> fused = {"fused_group_mlp"};
    return parse_module_list(value, "offload_modules", offload_names, fused, OffloadModules{});
}

// Megatron-LM's --cross-entropy-fusion-impl: true for "te" (Transformer Engine's kernels), false
// for "native" (Megatron-LM's own, the default).
bool parse_cross_entropy_impl(const json::value& value) {
    if (value.is_string() && (value.as_string() == "native" || value.as_string() == "te"))
        return value.as_string() == "te";
    throw InvalidInput(quoted("cross_entropy_fusion_impl") +
                       " must be \"native\" or \"te\" (Megatron-LM's "
                       "--cross-entropy-fusion-impl), got " +
                       describe_json(value));
}

CudaGraphScope parse_cuda_graph_scope(const json::value& value) {
    return parse_module_list(value, "cuda_graph_scope", graph_scope_names, other_graph_scopes,
                             CudaGraphScope{});
}

// Megatron-LM's rules for layer-level CPU offloading (megatron/core/transformer/
// transformer_config.py at d98e8a64dd): fewer layers than the model's, and not beside the
// fine-grained offloading. CUDA graphs of the layers with it are not modelled.
void check_cpu_offloading(const ShapeOptions& o) {
    const std::uint32_t n = o.cpu_offloading_num_layers;
    if (n == 0)
        return;
    if (n >= o.num_layers) {
        throw InvalidInput("analytic option 'cpu_offloading_num_layers' is " + std::to_string(n) +
                           ": Megatron-LM offloads fewer layers than the model's " +
                           std::to_string(o.num_layers) + " (num_layers)");
    }
    if (o.offload_modules.any()) {
        throw InvalidInput(
            "analytic options 'cpu_offloading_num_layers' and 'offload_modules': Megatron-LM "
            "refuses the fine-grained activation offloading beside CPU offloading of layers");
    }
    if (o.cuda_graph_scope.any()) {
        throw InvalidInput(
            "analytic options 'cpu_offloading_num_layers' and 'cuda_graph_scope': CUDA graphs of "
            "layers whose activations are offloaded are not modelled");
    }
}

}  // namespace

std::vector<std::string_view> option_names() {
    std::vector<std::string_view> out;
    for (const auto& o : integer_options)
        out.push_back(o.key);
    for (const auto& o : bool_options)
        out.push_back(o.key);
    for (const auto& o : number_options)
        out.push_back(o.key);
    for (const auto name : separate_options)
        out.push_back(name);
    return out;
}

ShapeOptions parse_options(std::string_view options_json) {
    // ppb::parse_json, like every plugin's options: it also refuses a repeated key, which
    // Boost.JSON alone would silently resolve to the last value.
    json::value root;
    try {
        root = ppb::parse_json(options_json, {});
    } catch (const ppb::InputError& e) {
        throw InvalidInput(std::string("analytic options are not valid JSON: ") + e.what());
    }
    if (!root.is_object()) {
        throw InvalidInput("analytic options must be a JSON object, got " + describe_json(root));
    }
    const json::object& object = root.get_object();
    reject_foreign_document(object);

    ShapeOptions options;
    std::array<bool, integer_options.size()> seen{};
    const json::value* moe = nullptr;
    const json::value* mla = nullptr;
    const json::value* recompute_modules = nullptr;
    bool has_mtp_offset = false;
    bool has_mtp_recompute = false;
    for (const auto& [key, value] : object) {
        bool known = true;
        if (key == "moe")
            moe = &value;
        else if (key == "mla")
            mla = &value;
        else if (key == "recompute_modules")
            recompute_modules = &value;
        else if (key == "mtp_num_layers")
            options.mtp_num_layers = parse_count(value, key);
        else if (key == "mtp_stage_offset")
            options.mtp_stage_offset = parse_count(value, key), has_mtp_offset = true;
        else if (key == "mtp_recompute")
            options.mtp_recompute = parse_kind(value, key), has_mtp_recompute = true;
        else if (key == "cp_comm_type")
            options.cp_comm_type = parse_cp_comm_type(value);
        else if (key == "activation_bytes")
            options.activation_bytes = parse_activation_bytes(value);
        else if (key == "fp8_recipe")
            options.fp8_recipe = parse_fp8_recipe(value);
        else if (key == "offload_modules")
            options.offload_modules = parse_offload_modules(value);
        else if (key == "data_parallel_sharding")
            options.data_parallel_sharding = parse_sharding(value);
        else if (key == "cuda_graph_scope")
            options.cuda_graph_scope = parse_cuda_graph_scope(value);
        else if (key == "cross_entropy_fusion_impl")
            options.te_cross_entropy = parse_cross_entropy_impl(value);
        else if (key == "cpu_offloading_num_layers")
            options.cpu_offloading_num_layers = parse_count(value, key);
        else
            known = false;
        for (std::size_t i = 0; i < integer_options.size(); ++i) {
            if (integer_options[i].key == key) {
                options.*(integer_options[i].member) =
                    parse_integer(value, key, integer_options[i].max);
                seen[i] = true;
                known = true;
            }
        }
        for (const auto& o : bool_options) {
            if (o.key == key) {
                options.*(o.member) = parse_bool(value, key);
                known = true;
            }
        }
        for (const auto& o : number_options) {
            if (o.key == key) {
                options.*(o.member) = parse_number(value, o);
                known = true;
            }
        }
        if (!known) {
            std::string message = "analytic has no option '" + std::string(key) + "'";
            if (const auto suggestion = closest_key(key))
                message += " (did you mean '" + std::string(*suggestion) + "'?)";
            throw InvalidInput(message + "; known options: " + known_options());
        }
    }
    // The 16-bit logits cast to fp32 at the loss (README.md, "Peak"): with fp32 activations the
    // logits are fp32 already and Tensor.float() returns them as they are.
    // Megatron-LM's native fused loss (--cross-entropy-loss-fusion) returns new tensors from its
    // compiled steps rather than working in place: one more fp32 logits-sized buffer.
    if (!object.contains("logits_transient_bytes")) {
        options.logits_transient_bytes =
            (options.activation_bytes < 4.0 ? options.activation_bytes : 0.0) +
            (options.cross_entropy_loss_fusion && !options.te_cross_entropy ? 4.0 : 0.0);
    }
    for (std::size_t i = 0; i < integer_options.size(); ++i) {
        if (integer_options[i].required && !seen[i]) {
            throw InvalidInput("analytic: missing required option '" +
                               std::string(integer_options[i].key) + "' (" +
                               std::string(integer_options[i].meaning) + ")");
        }
    }
    if (mla != nullptr)
        options.mla = parse_mla(*mla, options);
    check_shape(options);
    if (moe != nullptr)
        options.moe = parse_moe(*moe, options);
    if (recompute_modules != nullptr)
        options.recompute_modules = parse_recompute_modules(*recompute_modules, options);
    if (options.offload_modules.attn_proj && !options.offload_modules.core_attn) {
        throw InvalidInput(
            "analytic option 'offload_modules': attn_proj without core_attn: the output "
            "projection's input is the core attention's output, which the core attention keeps "
            "too (Megatron-LM requires the two together)");
    }
    if (options.data_parallel_sharding && options.distributed_optimizer &&
        *options.data_parallel_sharding == Sharding::no_shard) {
        throw InvalidInput(
            "analytic options: distributed_optimizer with data_parallel_sharding no_shard: the "
            "distributed optimizer shards the optimizer state (give one of the two)");
    }
    if (options.fp8_param_gather && !options.fp8_recipe) {
        throw InvalidInput(
            "analytic option 'fp8_param_gather' without fp8_recipe: the weights are kept in FP8 "
            "only when the layers train in FP8 (give the recipe)");
    }
    check_cpu_offloading(options);
    if (options.mtp_num_layers == 0 && (has_mtp_offset || has_mtp_recompute)) {
        throw InvalidInput(std::string("analytic option '") +
                           (has_mtp_offset ? "mtp_stage_offset" : "mtp_recompute") +
                           "' without mtp_num_layers: there are no multi-token prediction layers "
                           "to place");
    }
    return options;
}

std::vector<LayerGroup> layer_groups(const ShapeOptions& o) {
    if (!o.moe)
        return {LayerGroup{"body", false, o.num_layers}};
    std::vector<LayerGroup> out;
    for (const bool moe : o.moe->moe_layer) {
        const std::string& name = moe ? o.moe->moe_group : o.moe->dense_group;
        auto it =
            std::find_if(out.begin(), out.end(), [&](const LayerGroup& g) { return g.moe == moe; });
        if (it == out.end()) {
            out.push_back(LayerGroup{name, moe, 0});
            it = out.end() - 1;
        }
        ++it->layers;
    }
    return out;
}

std::vector<std::string> option_warnings(const ShapeOptions& o) {
    std::vector<std::string> out;
    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    if (o.sequence_parallel && o.tensor_parallel == 1) {
        out.emplace_back(
            "sequence_parallel has no effect with tensor_parallel = 1 (Megatron-LM turns it off)");
    }
    if (o.keep_gathered_inputs && !split_sequence) {
        out.emplace_back(
            "keep_gathered_inputs has no effect without sequence parallelism over more than one "
            "rank: there is no all-gather in front of the column-parallel linears");
    }
    if (!o.fp8_recipe && !o.fp8_transposes) {
        out.emplace_back("fp8_transposes has no effect without fp8_recipe");
    }
    if (o.softmax_in_fp32 && o.activation_bytes >= 4.0) {
        out.emplace_back(
            "softmax_in_fp32 has no effect with activation_bytes 4: the softmax runs in fp32 "
            "anyway, with no 16-bit copy of its output");
    }
    if (o.context_parallel == 1 && o.cp_comm_type != CpCommType::p2p) {
        out.emplace_back("cp_comm_type has no effect with context_parallel = 1");
    }
    if (!o.offload_modules.any() && o.activation_offload_fraction != 1.0) {
        out.emplace_back("activation_offload_fraction has no effect without offload_modules");
    }
    if (o.distributed_optimizer && o.data_parallel == 1) {
        out.emplace_back(
            "distributed_optimizer with data_parallel = 1 shards nothing: the optimizer state is "
            "counted in full");
    }
    return out;
}

}  // namespace ppb::analytic
