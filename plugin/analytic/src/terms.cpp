#include "terms.hpp"

#include <algorithm>

namespace ppb::analytic {

// Transformer Engine's quantized tensors (transformer_engine/pytorch/tensor/, NVIDIA/
// TransformerEngine commit d0067d0da6cb01811b8072a7d304f0e00344ce2b): Float8Tensor one byte a
// value with one fp32 scale (delayed and tensorwise scaling), its transpose kept beside it where
// the GEMMs need one (Hopper: FP8 GEMMs take one layout only); Float8BlockwiseQTensor one byte a
// value, an fp32 scale per 1x128 block of an activation and per 128x128 block of a weight, row-
// and column-wise copies; MXFP8Tensor one byte a value and an E8M0 scale per 32, row- and
// column-wise; NVFP4Tensor half a byte a value and an E4M3 scale per 16, row- and column-wise.
// What a linear keeps of its input (module/linear.py, layernorm_linear.py, grouped_linear.py):
// the column-wise copy its weight gradient needs, and for delayed and tensorwise scaling under
// sequence parallelism the row-wise one too, which backward all-gathers (MXFP8 and blockwise
// gather column-wise data). A weight is cast once per step and cached (Megatron-LM passes
// is_first_microbatch): its row-wise copy for forward, its column-wise one for backward.
LinearBytes linear_bytes(const ShapeOptions& o) noexcept {
    LinearBytes out;
    if (!o.fp8_recipe)
        return out;
    out.quantized = true;
    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    switch (*o.fp8_recipe) {
        case Fp8Recipe::delayed:
        case Fp8Recipe::tensorwise:
            out.input = 1.0;
            out.column_input = o.fp8_transposes && split_sequence ? 2.0 : 1.0;
            out.weight_copy = o.fp8_transposes ? 2.0 : 1.0;
            break;
        case Fp8Recipe::blockwise:
            out.input = out.column_input = 1.0 + 4.0 / 128.0;
            out.weight_copy = 2.0 * (1.0 + 4.0 / (128.0 * 128.0));
            break;
        case Fp8Recipe::mxfp8:
            out.input = out.column_input = 1.0 + 1.0 / 32.0;
            out.weight_copy = 2.0 * (1.0 + 1.0 / 32.0);
            break;
        case Fp8Recipe::nvfp4:
            out.input = out.column_input = 0.5 + 1.0 / 16.0;
            out.weight_copy = 2.0 * (0.5 + 1.0 / 16.0);
            break;
    }
    // Megatron-LM's Attention sets the output projection to save its original (16-bit) input for
    // every recipe but delayed scaling (megatron/core/transformer/attention.py, commit
    // d98e8a64ddf34856e74b24714e3bedb2f5a39553, set_save_original_input(self.linear_proj)).
    if (*o.fp8_recipe == Fp8Recipe::delayed)
        out.projection_copy = out.input;
    return out;
}

namespace {

// Activation bytes per layer per micro-batch on one rank for each recompute kind, from a layer's
// whole-tensor terms without recompute (`kept`) and with its selective recompute modules
// (`selective`) (README.md, the table "Per layer and micro-batch on one rank").
std::array<double, PPB_KIND_COUNT> bytes_by_kind(const LayerActivationTerms& kept,
                                                 const LayerActivationTerms& selective,
                                                 const ShapeOptions& o) noexcept {
    const double t = o.tensor_parallel;
    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    // One rank's share of a layer's terms: the replicated ones are split by sequence parallelism
    // only, the others by tensor parallelism.
    const auto on_rank = [&](const LayerActivationTerms& layer) {
        const double replicated = split_sequence ? layer.replicated / t : layer.replicated;
        return replicated + (layer.tensor_parallel + layer.attention_core) / t;
    };
    // Under sequence parallelism, what keeping the all-gathered inputs adds to the shards.
    const auto gathered = [&](const LayerActivationTerms& layer) {
        return split_sequence && o.keep_gathered_inputs ? layer.gathered_inputs * (1.0 - 1.0 / t)
                                                        : 0.0;
    };
    std::array<double, PPB_KIND_COUNT> out{};
    out[PPB_KIND_NONE] = on_rank(kept) + gathered(kept);
    out[PPB_KIND_SELECT] = on_rank(selective) + gathered(selective);
    out[PPB_KIND_COMM] = on_rank(kept);
    out[PPB_KIND_BOTH] = on_rank(selective);
    out[PPB_KIND_FULL] = split_sequence ? kept.layer_input / t : kept.layer_input;
    return out;
}

// Context-parallel attention (README.md, "Context parallelism"), from the bytes of one rank's Q,
// of its K and V together, and of the attention's output (whole over tensor parallelism). What
// Transformer Engine's functions (transformer_engine/pytorch/attention/dot_product_attention/
// context_parallel.py at NVIDIA/TransformerEngine commit
// d0067d0da6cb01811b8072a7d304f0e00344ce2b) keep beyond Q, K, V and the output, and the buffers
// one layer holds while it runs:
//   p2p (AttnFuncWithCPAndKVP2P): keeps the last key/value chunk received (a buffer of K and V's
//     size; Q stays a view of the QKV projection's output, which holds K and V too); forward
//     keeps every step's received chunk and partial output until it ends (c of each), backward
//     a Q-sized dq buffer and per-step dq, two double buffers of K and V for the chunks and their
//     gradients, and per-step dk, dv;
//   all_gather (AttnFuncWithCPAndKVAllGather): keeps the local Q, K, V; the gathered K and V
//     (c times the local) exist in forward, and again with their gradients in backward;
//   a2a (AttnFuncWithCPAndQKVOA2A): keeps Q, K, V and the output in the all-to-all's layout, the
//     output projection the output after the all-to-all back: one output more; the all-to-all's
//     buffers are Q, K, V and the output once more while it runs;
//   a2a+p2p: both (the ring taken over all c ranks: an upper bound).
// With core attention recomputed the whole exchange is inside the checkpoint.
void add_context_parallel(const ShapeOptions& o, double q, double kv, double output,
                          AttentionTerms& out) noexcept {
    const double c = o.context_parallel;
    if (c <= 1.0)
        return;
    const bool ring = o.cp_comm_type == CpCommType::p2p || o.cp_comm_type == CpCommType::a2a_p2p;
    const bool all_to_all =
        o.cp_comm_type == CpCommType::a2a || o.cp_comm_type == CpCommType::a2a_p2p;
    if (ring) {
        out.cp_kept += kv;
        out.cp_forward_buffers = std::max(out.cp_forward_buffers, c * (kv + output));
        out.cp_backward_buffers = std::max(out.cp_backward_buffers, 2.0 * q + 5.0 * kv);
    }
    if (all_to_all) {
        out.cp_kept += output;
        out.cp_forward_buffers = std::max(out.cp_forward_buffers, q + kv + output);
        out.cp_backward_buffers = std::max(out.cp_backward_buffers, q + kv + output);
    }
    if (o.cp_comm_type == CpCommType::all_gather) {
        out.cp_forward_buffers = c * kv;
        out.cp_backward_buffers = 2.0 * c * kv;
    }
    out.split += out.cp_kept;
    if (!o.recompute_modules.core_attn)
        out.split_selective += out.cp_kept;
}

// The attention block of one layer (README.md, "Activations per layer" and "Multi-latent
// attention"): `sb` tokens of `s` positions, whole tensors, 2 bytes per element.
AttentionTerms attention_terms(const ShapeOptions& o, double sb, const LinearBytes& q) noexcept {
    const double h = o.hidden_size;
    const double a = o.num_attention_heads;
    AttentionTerms out;
    if (!o.mla) {
        const double h_kv = o.kv_heads() * h / a;
        // Unfused attention expands K and V to all a heads before its batched matmuls and
        // autograd keeps the expanded copies; a fused (flash) kernel keeps the grouped K and V.
        const double kv_width = o.flash_attention ? h_kv : h;
        out.split_parameters = h * (h + 2.0 * h_kv) + h * h;  // QKV and output projection
        out.input = q.column_input * sb * h;                  // the QKV linear's input
        // Q, K and V, and the projection's input (with delayed FP8 scaling a quantized copy too).
        out.split = 2.0 * sb * h + 4.0 * sb * kv_width + (2.0 + q.projection_copy) * sb * h;
        out.split_selective = out.split;
        out.gathered = 2.0 * sb * h;  // the QKV linear's input
        add_context_parallel(o, 2.0 * sb * h, 4.0 * sb * h_kv, 2.0 * sb * h, out);
        return out;
    }
    // Multi-latent attention as Megatron-LM builds it (megatron/core/transformer/
    // multi_latent_attention.py, MLASelfAttention, at NVIDIA/Megatron-LM commit
    // d98e8a64ddf34856e74b24714e3bedb2f5a39553; layer spec megatron/core/models/gpt/
    // gpt_layer_specs.py): the down-projections are 'duplicated' linears, whole on every
    // tensor-parallel rank and run on its sequence shard; the up-projections are column
    // parallel (with the latent norms fused in as Transformer Engine LayerNormLinear when
    // qk_layernorm), the output projection row parallel.
    const MlaOptions& m = *o.mla;
    const double q_head = static_cast<double>(m.qk_head_dim) + m.qk_pos_emb_head_dim;
    const double q_width = a * q_head;  // Q and K
    const double kv_up_width = a * (static_cast<double>(m.qk_head_dim) + m.v_head_dim);
    const double v_width = a * static_cast<double>(m.v_head_dim);  // V, the core's output
    const double kv_latent = static_cast<double>(m.kv_lora_rank) + m.qk_pos_emb_head_dim;
    const double norm = m.qk_layernorm ? 1.0 : 0.0;
    // The down-projections keep the input norm's output: one 16-bit tensor for both, or under FP8
    // each its own quantized copy.
    out.input = (q.quantized ? 2.0 * q.input : 2.0) * sb * h;
    if (m.q_lora_rank) {
        const double q_lora = *m.q_lora_rank;
        out.split_parameters += q_lora * q_width;                 // linear_q_up_proj
        out.replicated_parameters += h * q_lora + norm * q_lora;  // linear_q_down_proj, norm
        out.replicated_linear_parameters += h * q_lora;
        // linear_q_up_proj keeps its input (the fused norm's, 16-bit; Transformer Engine's
        // LayerNormLinear saves inputmat and ln_out) and what its linear keeps of the norm's
        // output; recomputing the up-projections keeps only the input, which the checkpoint
        // holds.
        out.latent += (2.0 * norm + q.column_input) * sb * q_lora;
        out.latent_selective += 2.0 * sb * q_lora;
        out.gathered += 2.0 * sb * q_lora;
    } else {
        out.split_parameters += h * q_width;  // linear_q_proj
        // With qk_layernorm the query's projection fuses a norm of h (its output kept too).
        out.replicated_parameters += norm * h;
        out.latent += norm * q.column_input * sb * h;
        out.gathered += 2.0 * sb * h;
    }
    out.split_parameters += m.kv_lora_rank * kv_up_width + v_width * h;  // kv up, output
    out.replicated_parameters += h * kv_latent + norm * m.kv_lora_rank;  // kv down, norm
    out.replicated_linear_parameters += h * kv_latent;
    // linear_kv_up_proj's input is a view of the down-projection's output (kv_lora_rank +
    // qk_pos_emb_head_dim wide), which the fused norm keeps alive; its linear keeps the norm's
    // output. Without the norm the linear keeps the view itself, or under FP8 a quantized copy.
    out.latent += norm > 0.0 || !q.quantized
                      ? 2.0 * sb * kv_latent + norm * q.column_input * sb * m.kv_lora_rank
                      : q.column_input * sb * m.kv_lora_rank;
    out.latent_selective += 2.0 * sb * kv_latent;
    out.gathered += 2.0 * sb * m.kv_lora_rank;
    // The core attention keeps Q, K (q_width each) and V, and the output projection its input,
    // the core's output (which a fused kernel also saves: the same tensor). With mla_up_proj,
    // Q, K and V are discarded after the core attention's forward and re-made in backward
    // (CheckpointWithoutOutput.discard_output_and_register_recompute).
    const double projection_input = (2.0 + q.projection_copy) * sb * v_width;
    out.split = 2.0 * sb * (2.0 * q_width + v_width) + projection_input;
    out.split_selective = o.recompute_modules.mla_up_proj ? projection_input : out.split;
    if (!o.recompute_modules.mla_up_proj)
        out.latent_selective = out.latent;
    add_context_parallel(o, 2.0 * sb * q_width, 2.0 * sb * (q_width + v_width), 2.0 * sb * v_width,
                         out);
    return out;
}

double mlp_inner_bytes_per_token(const ShapeOptions& o, const LinearBytes& q,
                                 double inner_size) noexcept {
    // Gated: the activation's two inputs (gate and up, 16-bit) and the down projection's input;
    // two matrices: the activation's input and the second linear's input. 2 bytes each, the
    // second linear's input quantized under FP8.
    return ((o.gated_mlp ? 4.0 : 2.0) + q.input) * inner_size;
}

double mlp_matrices(const ShapeOptions& o) noexcept {
    return o.gated_mlp ? 3.0 : 2.0;
}

// An MoE layer's terms (README.md, "Mixture of experts"). `dense` is a dense layer's, whose
// attention block, norms and their activations the MoE layer shares.
MoeLayerTerms moe_layer_terms(const ShapeOptions& o, const MoeOptions& m,
                              const LayerActivationTerms& dense,
                              const LayerActivationTerms& dense_selective,
                              const AttentionTerms& attention, const LinearBytes& q) noexcept {
    const double h = o.hidden_size;
    const double s = static_cast<double>(o.seq_length) / o.context_parallel;  // per rank
    const double b = o.micro_batch_size;
    const double t = o.tensor_parallel;
    const double d = o.data_parallel;
    const double cp = o.context_parallel;
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
    // The dense layer's replicated terms hold what the first MLP linear keeps of the MLP's
    // input; the MoE block's input is kept 16-bit by the router, and under FP8 the shared
    // experts' first linear keeps its own quantized copy.
    const double moe_input = 2.0 * sbh - q.column_input * sbh +
                             (q.quantized && m.shared_experts > 0 ? q.column_input * sbh : 0.0);
    layer.replicated = dense.replicated + moe_input + out.router;
    // The shared experts are one MLP of shared_experts * shared_expert_ffn_hidden_size, split
    // over t like a dense MLP; the dense MLP's inner activations are not there.
    const double shared_inner =
        static_cast<double>(m.shared_experts) * m.shared_expert_ffn_hidden_size;
    out.shared_experts = s * b * mlp_inner_bytes_per_token(o, q, shared_inner);
    layer.tensor_parallel = attention.split + out.shared_experts;
    layer.attention_core = dense.attention_core;
    // Column-parallel linears whose input is all-gathered under SP: QKV, and the shared experts'
    // first linear. The router runs on the sequence shard; the routed experts receive their
    // tokens by all-to-all.
    layer.gathered_inputs = attention.gathered + (m.shared_experts > 0 ? 2.0 * sbh : 0.0);
    layer.layer_input = dense.layer_input;
    // A 'select' MoE layer: the attention block as a dense layer's selective terms.
    out.layer_selective = layer;
    out.layer_selective.replicated = dense_selective.replicated + moe_input + out.router;
    out.layer_selective.tensor_parallel = attention.split_selective + out.shared_experts;
    out.layer_selective.attention_core = dense_selective.attention_core;

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
    // The experts' grouped linear keeps its input (quantized under FP8).
    out.routed_experts =
        out.routed_tokens * (q.input * h) +
        out.routed_tokens * mlp_inner_bytes_per_token(o, q, m.moe_ffn_hidden_size) / etp +
        own_copies * (2.0 * h);
    out.activation_bytes = bytes_by_kind(layer, out.layer_selective, o);
    for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
        // Full recompute keeps only the layer's input: the experts are recomputed with the rest.
        if (kind != PPB_KIND_FULL)
            out.activation_bytes[kind] += out.routed_experts;
    }

    const double norms = 2.0 * h;
    const double router = h * E;  // replicated on every rank (Megatron-LM's TopKRouter weight)
    const double shared = mlp_matrices(o) * h * shared_inner;
    out.dense_parameters = (attention.split_parameters + shared) / t +
                           attention.replicated_parameters + norms + router;
    out.dense_linear_parameters =
        (attention.split_parameters + shared) / t + attention.replicated_linear_parameters;
    out.expert_parameters = (E / ep) * mlp_matrices(o) * h * m.moe_ffn_hidden_size / etp;
    out.expert_data_parallel = t * d * cp / (ep * etp);
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
    // The positions on one rank: context parallelism splits the sequence (attention over the
    // whole of it needs a fused kernel, so no term below grows with s^2 when c > 1).
    const double s = static_cast<double>(o.seq_length) / o.context_parallel;
    const double b = o.micro_batch_size;
    const double V = o.vocab_size;
    const double L = o.num_layers;
    const double t = o.tensor_parallel;
    const double d = o.data_parallel;
    const double dropout = o.dropout ? 1.0 : 0.0;
    const double sbh = s * b * h;
    const double h_kv = kv * h / a;  // width of K (and of V): num_kv_heads * head dimension

    MemoryTerms out;
    out.linear = linear_bytes(o);
    const LinearBytes& q = out.linear;
    out.attention = attention_terms(o, s * b, q);
    const AttentionTerms& attention = out.attention;

    // --- Activations of one layer for one micro-batch (README.md, "Activations per layer").
    // The norms' inputs 4sbh, the masks, what the attention's and the first MLP linear's keep
    // of the normalised inputs (2sbh each in 16 bits), MLA's latents.
    LayerActivationTerms& layer = out.layer;
    const double norms_and_masks = (4.0 + 2.0 * dropout) * sbh;
    const double mlp_input = q.column_input * sbh;
    layer.replicated = norms_and_masks + attention.input + mlp_input + attention.latent;
    const double mlp_inner = s * b * mlp_inner_bytes_per_token(o, q, F);
    layer.tensor_parallel = attention.split + mlp_inner;
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
    layer.gathered_inputs = attention.gathered + 2.0 * sbh;  // and the first MLP linear's input
    layer.layer_input = 2.0 * sbh;

    // What a 'select' layer keeps: the modules Megatron-LM's selective recompute re-makes are
    // dropped (core_attn: the attention core; mla_up_proj: MLA's Q, K, V and latent norms).
    LayerActivationTerms& selective = out.layer_selective;
    selective = layer;
    selective.replicated =
        norms_and_masks + attention.input + mlp_input + attention.latent_selective;
    selective.tensor_parallel = attention.split_selective + mlp_inner;
    if (o.recompute_modules.core_attn)
        selective.attention_core = 0.0;

    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    out.activation_bytes = bytes_by_kind(layer, selective, o);

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
        // Context parallelism's exchange buffers: its backward's beside the gradients, or its
        // forward's alone, whichever is larger.
        out.layer_transient_bytes =
            std::max(scores + 4.0 * s * b * F + attention.cp_backward_buffers,
                     attention.cp_forward_buffers) /
            t;
    }

    // --- Parameters (README.md, "Parameters").
    const double mlp = (o.gated_mlp ? 3.0 : 2.0) * h * F;
    const double norms = 2.0 * h;  // two norm weights, replicated on every rank
    // Linear biases: QKV's and the first MLP linear's are split over t (column parallel), the
    // attention projection's and the second MLP linear's are whole on every rank (row parallel).
    // MLA's projections other than the output have no bias (bias=False in Megatron-LM).
    const double qkv_bias = o.mla ? 0.0 : h + 2.0 * h_kv;
    const double biases =
        o.linear_biases ? (qkv_bias + (o.gated_mlp ? 2.0 : 1.0) * F) / t + 2.0 * h : 0.0;
    out.layer_parameters =
        (attention.split_parameters + mlp) / t + attention.replicated_parameters + norms + biases;
    out.layer_linear_parameters =
        (attention.split_parameters + mlp) / t + attention.replicated_linear_parameters;
    // One layer's attention, counted once for the whole model.
    const double attention_whole = attention.split_parameters + attention.replicated_parameters;
    // Learned absolute position embeddings (Megatron-LM's LanguageModelEmbedding): a plain
    // torch.nn.Embedding, whole on every tensor-parallel rank of stage 0.
    const double positions = static_cast<double>(o.position_embeddings) * h;
    out.embedding_parameters = V * h / t + positions;
    const double lm_head = V * h / t;
    out.tail_parameters = h + lm_head;
    out.tail_parameters_single_stage = o.untie_embeddings ? h + lm_head : h;
    const double embeddings = V * h * (o.untie_embeddings ? 2.0 : 1.0) + h + positions;
    out.model_parameters = L * (attention_whole + mlp + norms) + embeddings;
    out.active_parameters = out.model_parameters;

    // The distributed optimizer shards over the data-parallel ranks with the context-parallel
    // ones (Megatron-LM's data-parallel group with context parallelism).
    const double optimizer_share =
        o.distributed_optimizer ? o.optimizer_bytes / (d * o.context_parallel) : o.optimizer_bytes;
    out.bytes_per_parameter = o.param_bytes + o.grad_bytes + optimizer_share;

    if (o.moe) {
        const MoeOptions& m = *o.moe;
        out.moe = moe_layer_terms(o, m, layer, selective, attention, q);
        const double moe_layers = m.moe_layers();
        const double dense_layers = L - moe_layers;
        const double expert = mlp_matrices(o) * h * m.moe_ffn_hidden_size;
        const double moe_common = attention_whole + norms + h * m.num_experts +
                                  mlp_matrices(o) * h * m.shared_experts *
                                      static_cast<double>(m.shared_expert_ffn_hidden_size);
        out.model_parameters = dense_layers * (attention_whole + mlp + norms) +
                               moe_layers * (moe_common + m.num_experts * expert) + embeddings;
        out.active_parameters = dense_layers * (attention_whole + mlp + norms) +
                                moe_layers * (moe_common + m.top_k * expert) + embeddings;
    }

    // --- Multi-token prediction (README.md, "Multi-token prediction"): Megatron-LM's
    // MultiTokenPredictionLayer (megatron/core/transformer/multi_token_prediction.py at commit
    // d98e8a64ddf34856e74b24714e3bedb2f5a39553) embeds the tokens shifted by one with the
    // model's embedding, normalises them (enorm) and the previous hidden states (hnorm),
    // concatenates the two (2h) into eh_proj (a column-parallel 2h -> h linear), runs a
    // transformer layer built from the decoder's last layer's spec, and a final norm; the
    // model's output layer then gives each MTP layer its own logits and loss.
    if (o.mtp_num_layers > 0) {
        MtpTerms mtp;
        const double N = o.mtp_num_layers;
        mtp.moe = o.moe && o.moe->moe_layer.back();
        mtp.own_parameters = 2.0 * h * h / t + 3.0 * h;
        mtp.own_linear_parameters = 2.0 * h * h / t;
        mtp.embedding_parameters = out.embedding_parameters;
        // eh_proj keeps its input like any column-parallel linear: the sequence shard under
        // sequence parallelism (re-gathered in backward) unless gathered inputs are kept.
        const double eh_input = split_sequence && !o.keep_gathered_inputs
                                    ? 2.0 * q.column_input * sbh / t
                                    : 2.0 * q.column_input * sbh;
        // The embedding's dropout mask, enorm's and hnorm's inputs, eh_proj's input and the
        // final norm's input; the norms' outputs are copied by the concatenation and freed.
        const double kept = (dropout + 2.0 + 2.0 + 2.0) * sbh * sequence_share + eh_input;
        // Full recompute checkpoints the module from its two inputs (the hidden states and the
        // embedded, dropped-out shifted tokens), the dropout itself running outside.
        const double checkpointed = (dropout + 2.0 + 2.0) * sbh * sequence_share;
        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
            mtp.own_activation_bytes[kind] = kind == PPB_KIND_FULL ? checkpointed : kept;
        // process_mtp_loss: each MTP layer's hidden states (a view of the concatenation the
        // output layer keeps) and the fp32 softmax of its logits; with the MTP layers on an
        // earlier stage the last stage's final norm runs on the concatenation too.
        mtp.tail_logits_bytes = N * logits;
        mtp.tail_activation_bytes =
            N * (lm_head_input + logits) + (o.mtp_stage_offset > 0 ? N * norm_input : 0.0);
        out.tail_activation_bytes += mtp.tail_activation_bytes;
        out.tail_logits_bytes += mtp.tail_logits_bytes;
        // The whole model: N transformer layers of the last layer's kind, eh_proj and norms.
        double layer_whole = attention_whole + mlp + norms;
        double layer_active = layer_whole;
        if (mtp.moe) {
            const MoeOptions& m = *o.moe;
            const double expert = mlp_matrices(o) * h * m.moe_ffn_hidden_size;
            const double common = attention_whole + norms + h * m.num_experts +
                                  mlp_matrices(o) * h * m.shared_experts *
                                      static_cast<double>(m.shared_expert_ffn_hidden_size);
            layer_whole = common + m.num_experts * expert;
            layer_active = common + m.top_k * expert;
        }
        out.model_parameters += N * (layer_whole + 2.0 * h * h + 3.0 * h);
        out.active_parameters += N * (layer_active + 2.0 * h * h + 3.0 * h);
        out.mtp = mtp;
    }
    return out;
}

}  // namespace ppb::analytic
