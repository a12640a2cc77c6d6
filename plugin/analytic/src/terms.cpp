#include "terms.hpp"

namespace ppb::analytic {

namespace {

// Activation bytes per layer per micro-batch on one rank for each recompute kind, from a layer's
// whole-tensor terms (README.md, the table "Per layer and micro-batch on one rank").
std::array<double, PPB_KIND_COUNT> bytes_by_kind(const LayerActivationTerms& layer,
                                                 const ShapeOptions& o) noexcept {
    const double t = o.tensor_parallel;
    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    // Under sequence parallelism, what keeping the all-gathered inputs adds to the shards.
    const double kept_gathered =
        split_sequence && o.keep_gathered_inputs ? layer.gathered_inputs * (1.0 - 1.0 / t) : 0.0;
    double with_core = 0.0;     // attention core stored
    double without_core = 0.0;  // attention core recomputed (selective) or never stored (flash)
    if (split_sequence) {
        without_core = (layer.replicated + layer.tensor_parallel) / t;
        with_core = without_core + layer.attention_core / t;
    } else {
        without_core = layer.replicated + layer.tensor_parallel / t;
        with_core = without_core + layer.attention_core / t;
    }
    std::array<double, PPB_KIND_COUNT> out{};
    out[PPB_KIND_NONE] = with_core + kept_gathered;
    out[PPB_KIND_SELECT] = without_core + kept_gathered;
    out[PPB_KIND_COMM] = with_core;
    out[PPB_KIND_BOTH] = without_core;
    out[PPB_KIND_FULL] = split_sequence ? layer.layer_input / t : layer.layer_input;
    return out;
}

double mlp_inner_bytes_per_token(const ShapeOptions& o, double inner_size) noexcept {
    // Gated: the activation's two inputs (gate and up) and the down projection's input;
    // two matrices: the activation's input and the second linear's input. 2 bytes each.
    return (o.gated_mlp ? 6.0 : 4.0) * inner_size;
}

double mlp_matrices(const ShapeOptions& o) noexcept {
    return o.gated_mlp ? 3.0 : 2.0;
}

// An MoE layer's terms (README.md, "Mixture of experts"). `dense` is a dense layer's, whose
// attention block, norms and their activations the MoE layer shares.
MoeLayerTerms moe_layer_terms(const ShapeOptions& o, const MoeOptions& m,
                              const LayerActivationTerms& dense, double attention_parameters,
                              double attention_activations) noexcept {
    const double h = o.hidden_size;
    const double s = o.seq_length;
    const double b = o.micro_batch_size;
    const double t = o.tensor_parallel;
    const double d = o.data_parallel;
    const double E = m.num_experts;
    const double k = m.top_k;
    const double ep = m.expert_parallel;
    const double etp = m.expert_tensor_parallel;
    const double sbh = s * b * h;

    MoeLayerTerms out;
    LayerActivationTerms& layer = out.layer;
    // The router's fp32 scores (kept by the softmax or sigmoid for its backward) and the routing
    // map of one byte per token and expert, for this rank's tokens (sequence-sharded with SP).
    out.router = 5.0 * s * b * E;
    layer.replicated = dense.replicated + out.router;
    // The shared experts are one MLP of shared_experts * shared_expert_ffn_hidden_size, split
    // over t like a dense MLP; the dense MLP's inner activations are not there.
    const double shared_inner =
        static_cast<double>(m.shared_experts) * m.shared_expert_ffn_hidden_size;
    out.shared_experts = s * b * mlp_inner_bytes_per_token(o, shared_inner);
    layer.tensor_parallel = attention_activations + out.shared_experts;
    layer.attention_core = dense.attention_core;
    // Column-parallel linears whose input is all-gathered under SP: QKV, and the shared experts'
    // first linear. The router runs on the sequence shard; the routed experts receive their
    // tokens by all-to-all.
    layer.gathered_inputs = 2.0 * sbh + (m.shared_experts > 0 ? 2.0 * sbh : 0.0);
    layer.layer_input = dense.layer_input;

    // Routed tokens on this rank: its s*b/t tokens (MoE with t > 1 requires SP) go top_k times
    // each to the experts, the all-to-all over EP ranks keeps the balanced count per rank, and the
    // all-gather over the ETP ranks of one expert multiplies it by ETP.
    // Dropless routing is not balanced: the experts of a rank receive more than the balanced
    // share (routing_imbalance, README.md "Activations of an MoE layer"), while the rank's own
    // token copies, which the combine keeps, stay k * s*b/t. With a capacity factor every
    // expert is padded or cut to that many tokens.
    const double own_tokens = s * b / t;
    const double factor = m.capacity_factor.value_or(1.0);
    const double own_copies = factor * k * own_tokens;
    out.routed_tokens = own_copies * etp * (m.capacity_factor ? 1.0 : m.routing_imbalance);
    out.routed_experts =
        out.routed_tokens * (2.0 * h) +
        out.routed_tokens * mlp_inner_bytes_per_token(o, m.moe_ffn_hidden_size) / etp +
        own_copies * (2.0 * h);
    out.activation_bytes = bytes_by_kind(layer, o);
    for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
        // Full recompute keeps only the layer's input: the experts are recomputed with the rest.
        if (kind != PPB_KIND_FULL)
            out.activation_bytes[kind] += out.routed_experts;
    }

    const double norms = 2.0 * h;
    const double router = h * E;  // replicated on every rank (Megatron-LM's TopKRouter weight)
    const double shared = mlp_matrices(o) * h * shared_inner;
    out.dense_parameters = (attention_parameters + shared) / t + norms + router;
    out.expert_parameters = (E / ep) * mlp_matrices(o) * h * m.moe_ffn_hidden_size / etp;
    out.expert_data_parallel = t * d / (ep * etp);
    const double optimizer_share =
        o.distributed_optimizer ? o.optimizer_bytes / out.expert_data_parallel : o.optimizer_bytes;
    out.bytes_per_expert_parameter = o.param_bytes + o.grad_bytes + optimizer_share;
    return out;
}

}  // namespace

MemoryTerms memory_terms(const ShapeOptions& o) noexcept {
    const double h = o.hidden_size;
    const double a = o.num_attention_heads;
    const double kv = o.kv_heads();
    const double F = o.ffn_hidden_size;
    const double s = o.seq_length;
    const double b = o.micro_batch_size;
    const double V = o.vocab_size;
    const double L = o.num_layers;
    const double t = o.tensor_parallel;
    const double d = o.data_parallel;
    const double dropout = o.dropout ? 1.0 : 0.0;
    const double sbh = s * b * h;
    const double h_kv = kv * h / a;  // width of K (and of V): num_kv_heads * head dimension

    MemoryTerms out;

    // --- Activations of one layer for one micro-batch (README.md, "Activations per layer").
    LayerActivationTerms& layer = out.layer;
    layer.replicated = (8.0 + 2.0 * dropout) * sbh;
    // Unfused attention expands K and V to all a heads before its batched matmuls and autograd
    // keeps the expanded copies; a fused (flash) kernel keeps the grouped K and V.
    const double kv_width = o.flash_attention ? h_kv : h;
    const double mlp_inner = (o.gated_mlp ? 6.0 : 4.0) * s * b * F;
    // Q, K and V, and the projection's input: the attention block's share, which MoE layers keep.
    const double attention_activations = 2.0 * sbh + 4.0 * s * b * kv_width + 2.0 * sbh;
    layer.tensor_parallel = attention_activations + mlp_inner;
    // Unfused attention keeps the 16-bit softmax output, and with dropout its mask and output:
    // (2 + 3 dropout) bytes per a*s^2*b element. When the softmax runs in fp32 outside the fused
    // kernel (Megatron's FusedScaleMaskSoftmax.forward_torch_softmax, megatron/core/fusions/
    // fused_softmax.py at commit 550f9c44589efb85af6c5a11da8fbc8c3491b636: input.float(),
    // torch softmax, then .half() or .bfloat16()), the softmax keeps its fp32 output for its
    // backward (4 bytes); with dropout, dropout keeps its mask (1) and the attention-over-V
    // matmul dropout's 16-bit output (2), the 16-bit cast is freed: 7 bytes. Without dropout
    // the matmul keeps the 16-bit cast: 6 bytes.
    if (o.flash_attention)
        layer.attention_core = 0.0;
    else if (o.softmax_in_fp32)
        layer.attention_core = (o.dropout ? 7.0 : 6.0) * a * s * s * b;
    else
        layer.attention_core = (2.0 + 3.0 * dropout) * a * s * s * b;
    layer.gathered_inputs = 4.0 * sbh;
    layer.layer_input = 2.0 * sbh;

    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    out.activation_bytes = bytes_by_kind(layer, o);

    // --- Head and tail activations per micro-batch (paper §4.3).
    const double sequence_share = split_sequence ? 1.0 / t : 1.0;
    out.head_activation_bytes = dropout * sbh * sequence_share;
    const double norm_input = 2.0 * sbh * sequence_share;
    const double lm_head_input =
        split_sequence && !o.keep_gathered_inputs ? 2.0 * sbh / t : 2.0 * sbh;
    // Megatron-core's vocab-parallel cross entropy (megatron/core/tensor_parallel/
    // cross_entropy.py, also the fused one in megatron/core/fusions/fused_cross_entropy.py)
    // saves the fp32 softmax of the logits for backward; the 16-bit logits exist next to it while
    // they are cast (GPTModel.compute_language_model_loss calls it on logits.float()), and in
    // backward the 16-bit gradient next to the fp32 one.
    const double logits = o.logits_bytes * s * b * V / t;
    out.tail_activation_bytes = norm_input + lm_head_input + logits;
    out.tail_logits_bytes = logits;
    out.tail_transient_bytes = o.logits_transient_bytes * s * b * V / t;
    // One layer's backward: unfused attention's gradients of the attention probabilities and of
    // the scores (two 16-bit a*s^2*b tensors), the MLP's gradients of its inner activation (two
    // 16-bit s*b*F tensors); split over t like the tensors they are the gradients of.
    if (o.backward_transient) {
        const double scores = o.flash_attention ? 0.0 : 4.0 * a * s * s * b;
        out.layer_transient_bytes = (scores + 4.0 * s * b * F) / t;
    }

    // --- Parameters (README.md, "Parameters").
    const double attention = h * (h + 2.0 * h_kv) + h * h;  // QKV and output projection
    const double mlp = (o.gated_mlp ? 3.0 : 2.0) * h * F;
    const double norms = 2.0 * h;  // two norm weights, replicated on every rank
    // Linear biases: QKV's and the first MLP linear's are split over t (column parallel), the
    // attention projection's and the second MLP linear's are whole on every rank (row parallel).
    const double biases =
        o.linear_biases ? (h + 2.0 * h_kv + (o.gated_mlp ? 2.0 : 1.0) * F) / t + 2.0 * h : 0.0;
    out.layer_parameters = (attention + mlp) / t + norms + biases;
    // Learned absolute position embeddings (Megatron-LM's LanguageModelEmbedding): a plain
    // torch.nn.Embedding, whole on every tensor-parallel rank of stage 0.
    const double positions = static_cast<double>(o.position_embeddings) * h;
    out.embedding_parameters = V * h / t + positions;
    const double lm_head = V * h / t;
    out.tail_parameters = h + lm_head;
    out.tail_parameters_single_stage = o.untie_embeddings ? h + lm_head : h;
    const double embeddings = V * h * (o.untie_embeddings ? 2.0 : 1.0) + h + positions;
    out.model_parameters = L * (attention + mlp + norms) + embeddings;
    out.active_parameters = out.model_parameters;

    const double optimizer_share =
        o.distributed_optimizer ? o.optimizer_bytes / d : o.optimizer_bytes;
    out.bytes_per_parameter = o.param_bytes + o.grad_bytes + optimizer_share;

    if (o.moe) {
        const MoeOptions& m = *o.moe;
        out.moe = moe_layer_terms(o, m, layer, attention, attention_activations);
        const double moe_layers = m.moe_layers();
        const double dense_layers = L - moe_layers;
        const double expert = mlp_matrices(o) * h * m.moe_ffn_hidden_size;
        const double moe_common = attention + norms + h * m.num_experts +
                                  mlp_matrices(o) * h * m.shared_experts *
                                      static_cast<double>(m.shared_expert_ffn_hidden_size);
        out.model_parameters = dense_layers * (attention + mlp + norms) +
                               moe_layers * (moe_common + m.num_experts * expert) + embeddings;
        out.active_parameters = dense_layers * (attention + mlp + norms) +
                                moe_layers * (moe_common + m.top_k * expert) + embeddings;
    }
    return out;
}

}  // namespace ppb::analytic
