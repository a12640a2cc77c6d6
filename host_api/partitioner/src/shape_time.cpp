// The layers' compute times from a model shape (ppb/partition/shape_time.hpp): FLOPs per
// micro-batch and tensor-parallel rank, written as a SAPP layer file and read by the time model's
// own reader.
#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>
#include <ppb/model_shape_keys.hpp>
#include <ppb/number_text.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/sapp/layer_file.hpp>

#include <boost/json/value.hpp>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ppb::partition {
namespace {

namespace json = boost::json;

// The keys of the analytic model's options (plugin/analytic/README.md, "Options"; every key its
// parser reads, plugin/analytic/src/options.cpp). The time model reads the shape's sizes,
// num_kv_heads, kv_channels, gated_mlp, moe, mla, mtp_num_layers, context_parallel and the loss's
// kernels (cross_entropy_loss_fusion, cross_entropy_fusion_impl) (and, for
// the transfers' sizes, sequence_parallel, distributed_optimizer, data_parallel_sharding,
// param_bytes, grad_bytes, position_embeddings and untie_embeddings); the
// others are the memory model's and are accepted without being read. A key not among them is
// refused with a "did you mean", as the analytic model refuses it: a misspelt gated_mlp or
// num_kv_heads would otherwise change the times unnoticed. The test of the real runs checks that
// every shape `ppb import megatron-options` writes is read here (tests/analytic).
// Those keys (cpu_offloading_num_layers among them: its copies run under the other layers'
// passes, not timed) and the "mla" and "moe" members are ppb/model_shape_keys.hpp's, the list the
// analytic plugin reads too.
constexpr const auto& shape_keys = model_shape::keys;
constexpr const auto& mla_keys = model_shape::mla_keys;
constexpr const auto& moe_keys = model_shape::moe_keys;

// The names of the generated HEAD and TAIL entries (SAPP's own).
constexpr std::string_view head_name = "embedding";
constexpr std::string_view tail_name = "lm_head";
// The one group of a dense shape: the analytic model's name for it (its layer_groups()).
constexpr std::string_view dense_shape_group = "body";

struct Moe {
    double experts = 0.0;     // E
    double top_k = 0.0;       // k
    double expert_ffn = 0.0;  // F_e
    double shared = 0.0;      // shared experts
    double shared_ffn = 0.0;  // F_s
    std::string dense_group = "dense";
    std::string moe_group = "moe";
    std::vector<bool> moe_layer;  // per layer in model order: MoE?
};

// What the time model reads of a shape, sizes as doubles (each an integer of at most 2^32, so
// every product below is finite).
// Multi-latent attention's widths (the analytic model's "mla").
struct Mla {
    double q_lora_rank = 0.0;  // 0: the queries are projected from h directly
    double kv_lora_rank = 0.0;
    double qk_head = 0.0;
    double qk_pos = 0.0;
    double v_head = 0.0;
};

// The kernels of the loss over the logits (Megatron-LM's --cross-entropy-loss-fusion and
// --cross-entropy-fusion-impl).
enum class LossKernels { unfused, native, te };

struct Shape {
    double hidden = 0.0;    // h
    double heads = 0.0;     // a
    double kv_heads = 0.0;  // num_kv_heads, default a
    double head = 0.0;      // kv_channels: the channels of a head, default h/a
    double ffn = 0.0;       // F
    double seq = 0.0;       // s
    double batch = 0.0;     // b
    double vocab = 0.0;     // V
    double tp = 0.0;        // t
    double cp = 1.0;        // context_parallel: each rank holds s / cp of a sequence's tokens
    std::uint32_t layers = 0;
    std::uint32_t mtp_layers = 0;  // mtp_num_layers, on the last stage
    bool gated_mlp = true;
    LossKernels loss = LossKernels::unfused;  // Megatron-LM's default: no fusion
    std::optional<Moe> moe;
    std::optional<Mla> mla;
};

double size_of(const JsonObject& object, std::string_view key) {
    return static_cast<double>(object.required(key).as_uint32(1));
}

std::string group_name(const JsonNode& node) {
    const std::string_view name = node.as_string();
    if (name.empty())
        node.fail("expected a group name (a non-empty string), got \"\"");
    if (name == head_name || name == tail_name) {
        node.fail(
            fmt::format("'{}' is the name of the generated {} entry: give the group another "
                        "name",
                        name, name == head_name ? "HEAD" : "TAIL"));
    }
    return std::string(name);
}

// moe.layer_freq as a list: one 0 (dense) or 1 (MoE) per layer.
std::vector<bool> layer_list(const JsonArray& list, std::uint32_t layers) {
    if (list.size() != layers) {
        list.fail(
            fmt::format("a moe.layer_freq list has one 0 or 1 per layer: {} entries, but "
                        "num_layers is {}",
                        list.size(), layers));
    }
    std::vector<bool> out;
    out.reserve(layers);
    for (const JsonNode& entry : list.elements()) {
        const double x = entry.is_number() ? entry.as_number() : -1.0;
        if (x != 0.0 && x != 1.0) {
            entry.fail(
                fmt::format("expected 0 (dense) or 1 (MoE), got {}", describe_json(entry.value())));
        }
        out.push_back(x == 1.0);
    }
    return out;
}

// The "moe" object, with the analytic model's defaults and layout (its README, "Layout").
Moe read_moe(const JsonNode& node, double ffn, std::uint32_t layers) {
    const JsonObject object = node.as_object();
    object.allow_only(moe_keys, "member");
    Moe moe;
    // A mixture of one expert is a dense MLP; the analytic model refuses it too.
    const std::uint32_t experts = object.required("num_experts").as_uint32(2);
    const JsonNode top_k = object.required("top_k");
    const std::uint32_t k = top_k.as_uint32(1);
    if (k > experts) {
        top_k.fail(
            fmt::format("{} exceeds moe.num_experts {}: a token is routed to top_k "
                        "distinct experts",
                        k, experts));
    }
    moe.experts = static_cast<double>(experts);
    moe.top_k = static_cast<double>(k);
    const auto optional_size = [&](std::string_view key, double fallback) {
        const auto member = object.optional(key);
        return member ? static_cast<double>(member->as_uint32(1)) : fallback;
    };
    moe.expert_ffn = optional_size("moe_ffn_hidden_size", ffn);
    if (const auto shared = object.optional("shared_experts"))
        moe.shared = static_cast<double>(shared->as_uint32(0));
    moe.shared_ffn = optional_size("shared_expert_ffn_hidden_size", moe.expert_ffn);
    if (const auto name = object.optional("dense_group"))
        moe.dense_group = group_name(*name);
    if (const auto name = object.optional("moe_group"))
        moe.moe_group = group_name(*name);

    // The layout: Megatron-LM's --moe-layer-freq (layer i, from 0, is MoE when i % N = 0, or
    // when the list's i-th entry is 1) with DeepSeek's first_k_dense_replace (the first k layers
    // are dense).
    const auto first_k = object.optional("first_k_dense");
    const std::uint32_t first_k_dense = first_k ? first_k->as_uint32(0) : 0;
    if (first_k && first_k_dense >= layers) {
        first_k->fail(
            fmt::format("{} is not below num_layers {}: no layer would be MoE (drop "
                        "'moe' for a dense model)",
                        first_k_dense, layers));
    }
    const auto freq = object.optional("layer_freq");
    if (freq && freq->value().is_array()) {
        moe.moe_layer = layer_list(freq->as_array(), layers);
        std::uint32_t leading_dense = 0;
        while (leading_dense < layers && !moe.moe_layer[leading_dense])
            ++leading_dense;
        if (first_k && leading_dense != first_k_dense) {
            first_k->fail(
                fmt::format("{} disagrees with the moe.layer_freq list, which starts "
                            "with {} dense layers: give one of the two, or make them "
                            "agree",
                            first_k_dense, leading_dense));
        }
    } else {
        if (freq && !freq->is_number()) {
            freq->fail(
                fmt::format("expected an integer N (every N-th layer is MoE) or a list of "
                            "0/1, one per layer, got {}",
                            describe_json(freq->value())));
        }
        const std::uint32_t every = freq ? freq->as_uint32(1) : 1;
        moe.moe_layer.resize(layers);
        for (std::uint32_t i = 0; i < layers; ++i)
            moe.moe_layer[i] = i >= first_k_dense && i % every == 0;
    }
    bool any_moe = false;
    bool any_dense = false;
    for (const bool m : moe.moe_layer)
        (m ? any_moe : any_dense) = true;
    if (!any_moe) {
        (freq ? *freq : node)
            .fail(
                "no layer is MoE (an integer N makes layers 0, N, 2N, ... MoE, from "
                "first_k_dense on): drop 'moe' for a dense model");
    }
    if (any_dense && moe.dense_group == moe.moe_group) {
        node.fail(
            fmt::format("dense_group and moe_group are both '{}': the two groups of body "
                        "layers need two names",
                        moe.dense_group));
    }
    return moe;
}

Shape read_shape(std::string_view options_json, std::string_view source) {
    const json::value root = parse_json(options_json, source);
    const JsonNode node(root, source);
    if (!root.is_object()) {
        node.fail(
            fmt::format("expected a model shape (an object: hidden_size, "
                        "num_attention_heads, ...), got {}",
                        describe_json(root)));
    }
    const JsonObject object = node.as_object();
    if (object.contains(sapp::list_field)) {
        node.fail(
            "this holds 'layers_description': that is a SAPP layer file, which gives the "
            "times itself, not a model shape (hidden_size, num_attention_heads, ...)");
    }
    object.allow_only(shape_keys);
    Shape shape;
    shape.hidden = size_of(object, "hidden_size");
    shape.heads = size_of(object, "num_attention_heads");
    shape.ffn = size_of(object, "ffn_hidden_size");
    shape.seq = size_of(object, "seq_length");
    shape.batch = size_of(object, "micro_batch_size");
    shape.vocab = size_of(object, "vocab_size");
    // At most as many layers as a layer file holds.
    shape.layers = object.required("num_layers").as_count(limits::layers);
    shape.tp = size_of(object, "tensor_parallel");
    shape.kv_heads = shape.heads;
    if (const auto kv = object.optional("num_kv_heads")) {
        const std::uint32_t kv_heads = kv->as_uint32(1);
        const std::uint32_t heads = object.required("num_attention_heads").as_uint32(1);
        if (kv_heads > heads) {
            kv->fail(
                fmt::format("{} exceeds num_attention_heads {}: each key/value head serves "
                            "one or more query heads",
                            kv_heads, heads));
        }
        shape.kv_heads = static_cast<double>(kv_heads);
    }
    shape.head = shape.hidden / shape.heads;
    if (const auto channels = object.optional("kv_channels"))
        shape.head = static_cast<double>(channels->as_uint32(1));
    if (const auto gated = object.optional("gated_mlp"))
        shape.gated_mlp = gated->as_bool();
    if (const auto moe = object.optional("moe"))
        shape.moe = read_moe(*moe, shape.ffn, shape.layers);
    if (const auto cp = object.optional("context_parallel"))
        shape.cp = static_cast<double>(cp->as_uint32(1));
    if (const auto mtp = object.optional("mtp_num_layers"))
        shape.mtp_layers = mtp->as_uint32(0);
    const auto fusion = object.optional("cross_entropy_loss_fusion");
    const auto impl = object.optional("cross_entropy_fusion_impl");
    if (fusion && fusion->as_bool())
        shape.loss = LossKernels::native;  // Megatron-LM's default implementation
    if (impl) {
        const std::string_view name = impl->as_string();
        if (name != "native" && name != "te") {
            impl->fail(
                fmt::format("expected \"native\" or \"te\" (Megatron-LM's "
                            "--cross-entropy-fusion-impl), got \"{}\"",
                            name));
        }
        if (shape.loss == LossKernels::native && name == "te")
            shape.loss = LossKernels::te;
    }
    if (const auto mla = object.optional("mla")) {
        const JsonObject m = mla->as_object();
        m.allow_only(mla_keys, "member");
        Mla out;
        if (const auto q = m.optional("q_lora_rank"))
            out.q_lora_rank = static_cast<double>(q->as_uint32(0));
        out.kv_lora_rank = static_cast<double>(m.required("kv_lora_rank").as_uint32(1));
        out.qk_head = static_cast<double>(m.required("qk_head_dim").as_uint32(1));
        out.qk_pos = static_cast<double>(m.required("qk_pos_emb_head_dim").as_uint32(0));
        out.v_head = static_cast<double>(m.required("v_head_dim").as_uint32(1));
        if (const auto norm = m.optional("qk_layernorm"))
            (void)norm->as_bool();
        shape.mla = out;
    }
    return shape;
}

// ---- FLOPs of one micro-batch, forward, on one tensor-parallel rank ----

// The attention block: the QKV projection (Q a x head channels wide, K and V h_kv each), the
// scores QK^T and the context (scores x V), each a x s x s x head-channels multiply-adds per
// sequence, and the output projection. The causal mask's zeros are counted (kernels skip at
// most half of them).
double attention_flops(const Shape& m) {
    const double bs = m.batch * m.seq;
    if (m.mla) {
        // Multi-latent attention (Megatron-LM's MLASelfAttention): the queries through their
        // low-rank latent (or from h), keys and values up-projected from the kv latent, the
        // rotary part of the keys projected from h beside it; scores over qk + pos channels,
        // the context over v channels per head.
        const Mla& l = *m.mla;
        const double qk = l.qk_head + l.qk_pos;
        const double a = m.heads;
        const double queries = l.q_lora_rank > 0.0
                                   ? 2.0 * bs * (m.hidden * l.q_lora_rank + l.q_lora_rank * a * qk)
                                   : 2.0 * bs * m.hidden * a * qk;
        return queries + 2.0 * bs * m.hidden * (l.kv_lora_rank + l.qk_pos)  // kv down
               + 2.0 * bs * l.kv_lora_rank * a * (l.qk_head + l.v_head)     // kv up
               + 2.0 * bs * m.seq * a * qk                                  // scores
               + 2.0 * bs * m.seq * a * l.v_head                            // context
               + 2.0 * bs * a * l.v_head * m.hidden;                        // output projection
    }
    const double h = m.hidden;
    const double q = m.heads * m.head;
    const double h_kv = m.kv_heads * m.head;
    return 2.0 * bs * h * (q + 2.0 * h_kv)  // QKV
           + 2.0 * bs * m.seq * q           // scores
           + 2.0 * bs * m.seq * q           // context
           + 2.0 * bs * q * h;              // output projection
}

// The attention's core alone (scores and context) on one rank: what the context-parallel ring's
// sends run under.
double core_attention_flops(const Shape& m) {
    const double bs = m.batch * m.seq;
    const double qk = m.mla ? m.heads * (m.mla->qk_head + m.mla->qk_pos) : m.heads * m.head;
    const double v = m.mla ? m.heads * m.mla->v_head : m.heads * m.head;
    return 2.0 * bs * m.seq * (qk + v) / (m.tp * m.cp);
}

// An MLP of inner size `ffn`: three h x ffn matrices when gated (gate, up, down), else two.
double mlp_flops(const Shape& m, double ffn) {
    return (m.gated_mlp ? 6.0 : 4.0) * m.batch * m.seq * m.hidden * ffn;
}

// A dense layer, split over the t ranks (heads and the MLP's inner dimension) and the cp ranks
// (each holds s / cp of the tokens, and its queries meet every key: a cp-th of the scores).
double dense_layer_flops(const Shape& m) {
    return (attention_flops(m) + mlp_flops(m, m.ffn)) / (m.tp * m.cp);
}

// An MoE layer. Its router scores every token against E experts; each token passes through
// top_k routed experts and every shared expert. The routed experts are taken at their balanced
// expectation (every rank gets the average number of tokens; capacity padding and an
// unbalanced router are not counted), so their work is divided by t as well: each rank owns
// s x b / t tokens (MoE with t > 1 runs with sequence parallelism), and however experts are
// spread (expert_parallel) or sliced (expert_tensor_parallel), a rank computes, on average, its
// share 1 / t of one micro-batch's expert work per micro-batch.
double moe_layer_flops(const Shape& m) {
    const Moe& moe = *m.moe;
    const double router = 2.0 * m.batch * m.seq * m.hidden * moe.experts;
    const double routed = moe.top_k * mlp_flops(m, moe.expert_ffn);
    const double shared = moe.shared * mlp_flops(m, moe.shared_ffn);
    return (attention_flops(m) + router + routed + shared) / (m.tp * m.cp);
}

// The LM head: one h x V matrix, split over the vocabulary (and the tokens over cp).
double lm_head_flops(const Shape& m) {
    return 2.0 * m.batch * m.seq * m.hidden * m.vocab / (m.tp * m.cp);
}

// The bytes the loss moves through device memory, forward and backward, per micro-batch on one
// rank: its passes over the s / cp x b x V / t logits, memory-bound kernels the matrix rate does
// not time. Counted from the code, per logit:
//  - unfused (megatron/core/tensor_parallel/cross_entropy.py at d98e8a64dd, Megatron-LM's
//    default): forward 38 bytes (the 16-bit logits cast to fp32, 2 read + 4 written; the maximum,
//    4 read; its subtraction in place, 4 + 4; exp in place, 4 + 4; the sum, 4; the division into
//    the saved softmax, 4 + 4), backward 14 (the gradient scaled in place, 4 + 4; cast back to
//    16 bits, 4 + 2);
//  - --cross-entropy-loss-fusion, native (megatron/core/fusions/fused_cross_entropy.py at
//    d98e8a64dd; each step one compiled kernel under jit_fuser): forward 22 (cast and maximum,
//    2 + 4; subtraction, exp and sum, 4 + 4; division, 4 + 4), backward 10 (the scaled gradient
//    written back, 4 + 4, and cast to bf16, 2);
//  - --cross-entropy-fusion-impl te (Transformer Engine's Triton kernels,
//    transformer_engine/common/triton/cross_entropy.py and pytorch/triton/cross_entropy.py at
//    d0067d0da6): forward 8 (the online softmax reads the logits, 2; the second pass reads them
//    again and writes the fp32 gradient, 2 + 4), backward 14 (the gradient scaled in place,
//    4 + 4, and cast to the logits' 16 bits, 4 + 2).
// Each multi-token prediction layer's loss is another pass of the same size.
struct LossBytes {
    double forward = 0.0;
    double backward = 0.0;
};

LossBytes loss_bytes(const Shape& m) {
    const double logits = m.seq / m.cp * m.batch * m.vocab / m.tp * (1.0 + m.mtp_layers);
    switch (m.loss) {
        case LossKernels::unfused:
            return {38.0 * logits, 14.0 * logits};
        case LossKernels::native:
            return {22.0 * logits, 10.0 * logits};
        case LossKernels::te:
            return {8.0 * logits, 14.0 * logits};
    }
    return {};
}

// The multi-token prediction layers on the last stage: each a transformer layer of the model's
// last layer's kind, its projection of the two normalised inputs (2h to h) and its own pass
// through the LM head.
double mtp_flops(const Shape& m) {
    if (m.mtp_layers == 0)
        return 0.0;
    const bool moe = m.moe && m.moe->moe_layer.back();
    const double layer = moe ? moe_layer_flops(m) : dense_layer_flops(m);
    const double projection = 2.0 * m.batch * m.seq * 2.0 * m.hidden * m.hidden / (m.tp * m.cp);
    return m.mtp_layers * (layer + projection + lm_head_flops(m));
}

// The rate of the 16-bit matrix products: the cluster's rate scaled by the 16-bit over the FP8
// peak when the cluster runs FP8 (the same achievable fraction), else the rate itself.
double sixteen_bit_rate(const ShapeTimeSettings& settings) noexcept {
    if (!settings.cluster || settings.cluster->precision != MatrixPrecision::fp8)
        return settings.device_tflops;
    const DeviceSpec& d = settings.cluster->device;
    return d.bf16_tflops > 0.0 && d.fp8_tflops > 0.0
               ? settings.device_tflops * d.bf16_tflops / d.fp8_tflops
               : settings.device_tflops;
}

// One layer's entry: time = its forward, from its FLOPs, as today's SAPP reads `time`
// (TimeConvention::hyper_parallel: the backward base is 2 x time, the backward computing the
// gradients of the inputs and of the weights, each as much work as the forward).
// With `communication` (a cluster's), forward_time is the forward with its collectives and time
// the FLOPs' forward plus half the backward's collectives: the reader's backward, 2 x time, is
// then the FLOPs' backward plus the backward's collectives.
// Of `flops`, `sixteen_bit_flops` run in 16 bits whatever the cluster's precision: under FP8
// Megatron-LM runs the attention's core in Transformer Engine's 16-bit kernels (its
// fp8_dot_product_attention is off by default) and the LM head as a plain ColumnParallelLinear
// outside Transformer Engine's FP8 autocast (megatron/core/transformer/transformer_config.py,
// megatron/core/models/gpt/gpt_model.py at 4e85d74ae9); they take the 16-bit peak times the same
// achievable fraction (sixteen_bit_tflops). `core_flops` (the attention's core, what the
// context-parallel ring runs under) is part of them. `streamed` are the bytes of memory-bound
// kernels (the loss's), timed at the cluster's streamed bandwidth outside the backward = 2 x
// forward rule.
sapp::Entry timed_entry(std::string name, sapp::EntryType type, std::uint32_t layers, double flops,
                        const ShapeTimeSettings& settings, std::string_view source,
                        const LayerCommunication& communication = {}, double core_flops = 0.0,
                        double sixteen_bit_flops = 0.0, const LossBytes& streamed = {}) {
    const auto ms = [&](double f) { return f / (settings.device_tflops * 1e12) * 1e3; };
    const double sixteen_bit_tflops = sixteen_bit_rate(settings);
    const auto ms16 = [&](double f) { return f / (sixteen_bit_tflops * 1e12) * 1e3; };
    // One rate: the FLOPs at once, as they always were (the same doubles for the same shape).
    const double compute = sixteen_bit_tflops == settings.device_tflops
                               ? ms(flops)
                               : ms(flops - sixteen_bit_flops) + ms16(sixteen_bit_flops);
    const double core = ms16(core_flops);
    // A body layer's fixed time per micro-batch on a cluster (Cluster::layer_overhead_us): part
    // of its compute, the backward's twice the forward's as its kernels are.
    const double fixed = settings.cluster && type == sapp::EntryType::body
                             ? settings.cluster->layer_overhead_us / 1e3
                             : 0.0;
    // An overlapped collective costs its exposed share (Cluster::overlap_exposed_fraction: the
    // pieces waited for, the SMs it takes) and what of the rest outlasts the products under it.
    // With --tp-comm-overlap the tensor-parallel collectives run under the layer's matrix
    // products; the context-parallel ring's sends always run under the attention's core.
    const double share = settings.cluster ? settings.cluster->overlap_exposed_fraction : 0.0;
    const auto overlapped = [&](double collectives, double products) {
        return share * collectives + std::max((1.0 - share) * collectives - products, 0.0);
    };
    const auto tensor_parallel = [&](double collectives, double products) {
        return settings.tp_comm_overlap ? overlapped(collectives, products) : collectives;
    };
    // With the combined 1F1B (ShapeTimeSettings::expert_overlap), a forward's all-to-all runs
    // under the paired backward's compute (2 x compute) and a backward's under the paired
    // forward's.
    const auto expert = [&](double collectives, double paired) {
        return settings.expert_overlap ? overlapped(collectives, paired) : collectives;
    };
    const double forward_collectives =
        tensor_parallel(communication.tensor_parallel_forward, compute) +
        expert(communication.expert_forward, 2.0 * compute) +
        overlapped(communication.context_parallel_forward, core);
    const double backward_collectives =
        tensor_parallel(communication.tensor_parallel_backward, 2.0 * compute) +
        expert(communication.expert_backward, compute) +
        overlapped(communication.context_parallel_backward, 2.0 * core);
    const double bandwidth = settings.cluster ? settings.cluster->streamed_bytes_per_second() : 0.0;
    const auto streamed_ms = [&](double bytes) {
        return bandwidth > 0.0 ? bytes / bandwidth * 1e3 : 0.0;
    };
    const double forward_streamed = streamed_ms(streamed.forward);
    const double backward_streamed = streamed_ms(streamed.backward);
    const double forward = compute + fixed + forward_collectives + forward_streamed;
    const double backward = 2.0 * (compute + fixed) + backward_collectives + backward_streamed;
    const double time = forward + backward;
    if (type == sapp::EntryType::body && !(time > 0.0)) {
        throw InputError(located_message(
            source, "",
            fmt::format("the time of one BODY layer '{}' would be 0 ms ({} FLOPs at {} TFLOP/s): "
                        "device_tflops is too large for this shape",
                        name, flops, settings.device_tflops)));
    }
    if (!limits::time.contains(time)) {
        throw InputError(located_message(
            source, "",
            fmt::format("the forward + backward time of one {} layer '{}' would be {}, beyond "
                        "a layer file's range ({}): device_tflops {} is too small for this shape",
                        sapp::type_name(type), name, format_time(time, "ms"),
                        limits::describe(limits::time), settings.device_tflops)));
    }
    if (forward_collectives == 0.0 && backward_collectives == 0.0 && forward_streamed == 0.0 &&
        backward_streamed == 0.0)
        return sapp::Entry{
            .name = std::move(name), .type = type, .nb_layer = layers, .time = compute + fixed};
    // A HEAD or TAIL with its own forward time would be timed one way by SAPP's solver (3 x time)
    // and another by its simulator: its whole, forward + backward, is 3 x time, split as SAPP
    // splits it (the loss's passes, a few per cent of the LM head, do not follow the 1 : 2 split
    // exactly).
    if (type != sapp::EntryType::body) {
        return sapp::Entry{
            .name = std::move(name), .type = type, .nb_layer = layers, .time = time / 3.0};
    }
    return sapp::Entry{.name = std::move(name),
                       .type = type,
                       .nb_layer = layers,
                       .time = backward / 2.0,
                       .forward_time = forward};
}

}  // namespace

json::object layer_file_from_shape(std::string_view options_json, std::string_view source,
                                   const ShapeTimeSettings& settings) {
    if (!std::isfinite(settings.device_tflops) || !(settings.device_tflops > 0.0)) {
        throw InputError(
            fmt::format("device_tflops: expected a finite number greater than 0 "
                        "(the achieved TFLOP/s of one device) to time {}, got {}",
                        source, settings.device_tflops));
    }
    const Shape shape = read_shape(options_json, source);

    // Each layer's group in model order: the analytic model's group names.
    const auto group_of = [&](std::uint32_t i) -> std::pair<std::string_view, bool> {
        if (!shape.moe)
            return {dense_shape_group, false};
        const bool moe = shape.moe->moe_layer[i];
        return {moe ? shape.moe->moe_group : shape.moe->dense_group, moe};
    };

    sapp::LayerFile file;
    file.comment = fmt::format(
        "Generated by ppb from the model shape {} at {} TFLOP/s per device: times are ms per "
        "micro-batch on one tensor-parallel rank, from the FLOPs of the matrix products "
        "(time the forward, as today's SAPP reads it, backward = 2 x time{}; "
        "MoE experts at their balanced expectation; recompute kinds "
        "by SAPP's default coefficients).",
        source, settings.device_tflops,
        settings.cluster
            ? fmt::format(", with each body layer's tensor-parallel collectives and expert "
                          "all-to-all on {} {} per node and its fixed {:g} us a forward "
                          "(forward_time the forward with its collectives){}",
                          settings.cluster->devices_per_node, settings.cluster->device.name,
                          settings.cluster->layer_overhead_us,
                          settings.cluster->streamed_bytes_per_second() > 0.0
                              ? fmt::format(", and the TAIL's loss over the logits at {:g} TB/s",
                                            settings.cluster->streamed_bytes_per_second() / 1e12)
                              : std::string())
            : std::string(", no communication"));
    file.pre_defined_layer = {{std::string(head_name), 0}, {std::string(tail_name), -1}};

    // The embedding is a lookup: no matrix product, time 0 (the reader accepts a HEAD of 0).
    file.entries.push_back(
        timed_entry(std::string(head_name), sapp::EntryType::head, 1, 0.0, settings, source));
    // One BODY entry per run of consecutive layers of one group, with its collectives on the
    // cluster's links when there is one.
    std::optional<ShapeSizes> sizes;
    if (settings.cluster)
        sizes = shape_sizes(options_json, source);
    // Megatron-LM overlaps the tensor-parallel collectives only with sequence parallelism
    // (megatron/training/arguments.py at d98e8a64dd asserts it for --tp-comm-overlap, and with
    // one tensor-parallel rank turns sequence parallelism off): without it the collectives are
    // waited for.
    ShapeTimeSettings body_settings = settings;
    body_settings.tp_comm_overlap = settings.tp_comm_overlap && sizes && sizes->sequence_parallel;
    const auto communication_of = [&](std::string_view name) {
        if (sizes) {
            for (const ShapeSizes::Group& g : sizes->groups) {
                if (g.name == name)
                    return layer_communication_ms(*sizes, g, *settings.cluster);
            }
        }
        return LayerCommunication{};
    };
    const double dense_flops = dense_layer_flops(shape);
    const double moe_flops = shape.moe ? moe_layer_flops(shape) : 0.0;
    for (std::uint32_t i = 0; i < shape.layers;) {
        const auto [name, moe] = group_of(i);
        std::uint32_t end = i + 1;
        while (end < shape.layers && group_of(end).second == moe)
            ++end;
        file.entries.push_back(timed_entry(std::string(name), sapp::EntryType::body, end - i,
                                           moe ? moe_flops : dense_flops, body_settings, source,
                                           communication_of(name), core_attention_flops(shape),
                                           core_attention_flops(shape)));
        // auto_partition_layer: each group once, in order of first appearance, all its layers.
        auto it = file.auto_partition_layer.begin();
        while (it != file.auto_partition_layer.end() && it->name != name)
            ++it;
        if (it == file.auto_partition_layer.end())
            file.auto_partition_layer.push_back({std::string(name), end - i});
        else
            it->value += end - i;
        i = end;
    }
    // The LM head (and each MTP layer's pass through it, and its attention's core) in 16 bits.
    const double tail_sixteen_bit = (1.0 + shape.mtp_layers) * lm_head_flops(shape) +
                                    shape.mtp_layers * core_attention_flops(shape);
    file.entries.push_back(timed_entry(std::string(tail_name), sapp::EntryType::tail, 1,
                                       lm_head_flops(shape) + mtp_flops(shape), settings, source,
                                       {}, 0.0, tail_sixteen_bit, loss_bytes(shape)));
    return sapp::to_json(file);
}

ShapeSizes shape_sizes(std::string_view options_json, std::string_view source) {
    const Shape shape = read_shape(options_json, source);  // validates the whole shape
    const json::value root = parse_json(options_json, source);
    const JsonObject object = JsonNode(root, source).as_object();
    const auto flag = [&](std::string_view key, bool fallback) {
        const auto member = object.optional(key);
        return member ? member->as_bool() : fallback;
    };
    const auto bytes = [&](std::string_view key, double fallback) {
        const auto member = object.optional(key);
        return member ? member->as_number_in({0.0, 64.0, false, "bytes"}) : fallback;
    };
    ShapeSizes out;
    out.tensor_parallel = shape.tp;
    out.context_parallel = shape.cp;
    out.sequence_parallel = flag("sequence_parallel", false) && shape.tp > 1.0;
    const bool distributed_optimizer = flag("distributed_optimizer", false);
    out.sharding =
        distributed_optimizer ? DataParallelSharding::optim : DataParallelSharding::no_shard;
    if (const auto member = object.optional("data_parallel_sharding")) {
        const std::string_view name = member->as_string();
        const std::optional<DataParallelSharding> sharding = sharding_from_name(name);
        if (!sharding) {
            member->fail(
                fmt::format("expected one of {} (Megatron-LM's "
                            "--data-parallel-sharding-strategy), got \"{}\"",
                            fmt::join(sharding_names, ", "), name));
        }
        out.sharding = *sharding;
        if (out.sharding == DataParallelSharding::no_shard && distributed_optimizer) {
            member->fail(
                "no_shard with distributed_optimizer: the distributed optimizer shards the "
                "optimizer state (optim); give one of the two");
        }
    }
    out.param_bytes = bytes("param_bytes", 2.0);
    out.grad_bytes = bytes("grad_bytes", 4.0);
    out.hidden_states = shape.seq / shape.cp * shape.batch * shape.hidden;
    {
        const double channels =
            shape.mla ? shape.heads * (shape.mla->qk_head + shape.mla->qk_pos + shape.mla->v_head)
                      : 2.0 * shape.kv_heads * shape.head;
        out.key_value_elements =
            shape.cp > 1.0 ? shape.seq / shape.cp * shape.batch * channels / shape.tp : 0.0;
    }
    out.tokens_per_micro_batch = shape.seq * shape.batch;
    {
        double forward = lm_head_flops(shape) + mtp_flops(shape);
        for (std::uint32_t i = 0; i < shape.layers; ++i) {
            const bool moe = shape.moe && shape.moe->moe_layer[i];
            forward += moe ? moe_layer_flops(shape) : dense_layer_flops(shape);
        }
        out.model_flops_per_micro_batch = 3.0 * forward * shape.tp * shape.cp;
    }
    const double h = shape.hidden;
    const double vocabulary = shape.vocab / shape.tp * h;
    double positions = 0.0;
    if (const auto p = object.optional("position_embeddings"))
        positions = static_cast<double>(p->as_uint32(0)) * h;
    out.embedding_parameters = vocabulary + positions;
    // An untied LM head has its own weights; a tied one reads the embedding's, whose gradient
    // the last stage reduces too when it is another stage (counted there as well: p > 1).
    out.lm_head_parameters = vocabulary + h;
    out.final_norm_parameters = h;
    out.tied_embeddings = !flag("untie_embeddings", true);
    const double q = shape.heads * shape.head;
    const double h_kv = shape.kv_heads * shape.head;
    const double attention = (h * (q + 2.0 * h_kv) + q * h) / shape.tp + 2.0 * h;  // + 2 norms
    const double mlp_matrices = shape.gated_mlp ? 3.0 : 2.0;
    if (!shape.moe) {
        out.groups.push_back({std::string(dense_shape_group),
                              attention + mlp_matrices * h * shape.ffn / shape.tp, 0.0, 0.0});
        return out;
    }
    const Moe& moe = *shape.moe;
    const JsonObject moe_object = object.required("moe").as_object();
    const auto degree = [&](std::string_view key, double fallback) {
        const auto member = moe_object.optional(key);
        return member ? static_cast<double>(member->as_uint32(1)) : fallback;
    };
    out.expert_parallel = degree("expert_parallel", 1.0);
    out.expert_tensor_parallel = degree("expert_tensor_parallel", shape.tp);
    out.num_experts = moe.experts;
    out.top_k = moe.top_k;
    if (const auto dispatcher = moe_object.optional("token_dispatcher")) {
        const std::string_view name = dispatcher->as_string();
        if (name != "alltoall" && name != "flex") {
            dispatcher->fail(
                fmt::format("expected \"alltoall\" or \"flex\" (Megatron-LM's "
                            "--moe-token-dispatcher-type; flex: DeepEP or HybridEP), got \"{}\"",
                            name));
        }
        out.dispatch_once_per_node = name == "flex";
    }
    const double shared = moe.shared * mlp_matrices * h * moe.shared_ffn / shape.tp;
    const double routed = moe.experts * mlp_matrices * h * moe.expert_ffn /
                          (out.expert_parallel * out.expert_tensor_parallel);
    bool dense_seen = false;
    bool moe_seen = false;
    for (const bool is_moe : moe.moe_layer) {
        if (is_moe && !moe_seen) {
            out.groups.push_back({moe.moe_group, attention + h * moe.experts + shared, routed,
                                  moe.top_k * shape.seq * shape.batch / shape.tp * h});
            moe_seen = true;
        } else if (!is_moe && !dense_seen) {
            out.groups.push_back(
                {moe.dense_group, attention + mlp_matrices * h * shape.ffn / shape.tp, 0.0, 0.0});
            dense_seen = true;
        }
    }
    return out;
}

TimeModel time_model_from_shape(std::string_view options_json, std::string_view source,
                                const ShapeTimeSettings& settings) {
    const json::value document = layer_file_from_shape(options_json, source, settings);
    return time_model(sapp::read_layer_file(JsonNode(document, source)), source,
                      TimeConvention::hyper_parallel);
}

}  // namespace ppb::partition
