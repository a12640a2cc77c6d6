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
    out.input = out.column_input = o.activation_bytes;  // the input as it is, in params_dtype
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
    // Megatron-FSDP with FP8 parameters (optim_grads_params, fp8_param_gather): the weights are
    // Float8Tensors whose data FSDP shards like any parameter, and their transpose caches are
    // discarded after each module's forward and backward unless keep_fp8_transpose_cache, which
    // "will cause (number of parameter x 1 Byte) of memory overhead" (megatron/core/distributed/
    // fsdp/src/README.md; megatron_fsdp.py, release_params_fp8_transpose_cache, at d98e8a64dd).
    // Delayed and tensorwise scaling's Float8Tensor only: one byte a parameter, sharded.
    if (o.fp8_param_gather && o.sharding() == Sharding::optim_grads_params &&
        (*o.fp8_recipe == Fp8Recipe::delayed || *o.fp8_recipe == Fp8Recipe::tensorwise)) {
        out.weight_copy = 1.0;
        out.sharded_copy = true;
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

// Bytes per parameter on one rank, its state sharded over `ranks` data-parallel ranks as far as
// the sharding goes (README.md, "Sharded data parallelism"): the distributed optimizer (optim)
// shards the optimizer state; Megatron-FSDP and torch FSDP2 also the gradients (optim_grads) and
// the weights (optim_grads_params), and all-gather a unit's weights for its computation and hold
// its unsharded gradients until they are reduce-scattered. A share of the optimizer state may
// live in host memory (optimizer_offload_fraction).
ParameterBytes parameter_bytes(const ShapeOptions& o, double ranks) noexcept {
    const Sharding sharding = o.sharding();
    const bool optimizer = sharding != Sharding::no_shard;
    const bool gradients =
        sharding == Sharding::optim_grads || sharding == Sharding::optim_grads_params;
    const bool weights = sharding == Sharding::optim_grads_params;
    ParameterBytes out;
    out.weight = weights ? o.param_bytes / ranks : o.param_bytes;
    out.gradient = gradients ? o.grad_bytes / ranks : o.grad_bytes;
    out.optimizer = (optimizer ? o.optimizer_bytes / ranks : o.optimizer_bytes) *
                    (1.0 - o.optimizer_offload_fraction);
    out.unsharded = (weights ? o.param_bytes : 0.0) + (gradients ? o.grad_bytes : 0.0);
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
// With core attention recomputed the whole exchange is inside the checkpoint: nothing is kept.
void add_context_parallel(const ShapeOptions& o, const RecomputeModules& modules, double q,
                          double kv, double output, AttentionTerms& out) noexcept {
    const double c = o.context_parallel;
    if (c <= 1.0)
        return;
    const bool ring = o.cp_comm_type == CpCommType::p2p || o.cp_comm_type == CpCommType::a2a_p2p;
    const bool all_to_all =
        o.cp_comm_type == CpCommType::a2a || o.cp_comm_type == CpCommType::a2a_p2p;
    double kept = 0.0;
    if (ring) {
        kept += kv;
        out.cp_forward_buffers = std::max(out.cp_forward_buffers, c * (kv + output));
        out.cp_backward_buffers = std::max(out.cp_backward_buffers, 2.0 * q + 5.0 * kv);
    }
    if (all_to_all) {
        kept += output;
        out.cp_forward_buffers = std::max(out.cp_forward_buffers, q + kv + output);
        out.cp_backward_buffers = std::max(out.cp_backward_buffers, q + kv + output);
    }
    if (o.cp_comm_type == CpCommType::all_gather) {
        out.cp_forward_buffers = c * kv;
        out.cp_backward_buffers = 2.0 * c * kv;
    }
    out.cp_kept = modules.core_attn ? 0.0 : kept;
}

// The attention block of one layer (README.md, "Activations per layer" and "Multi-latent
// attention"), as a layer recomputing `modules` keeps it: `sb` tokens, whole tensors.
AttentionTerms attention_terms(const ShapeOptions& o, double sb, const LinearBytes& q,
                               const RecomputeModules& modules) noexcept {
    const double h = o.hidden_size;
    const double a = o.num_attention_heads;
    const double e = o.activation_bytes;  // bytes of an element in the training dtype
    AttentionTerms out;
    if (!o.mla) {
        // Q is a x head channels wide, K and V num_kv_heads x head channels each: h and h_kv
        // unless kv_channels widens the heads (Megatron-LM's Attention: query_projection_size =
        // kv_channels * num_attention_heads, kv_projection_size = kv_channels *
        // num_query_groups; megatron/core/transformer/attention.py at commit
        // d98e8a64ddf34856e74b24714e3bedb2f5a39553).
        const double q_width = o.query_width();
        const double h_kv = o.key_width();
        // Unfused attention expands K and V to all a heads before its batched matmuls and
        // autograd keeps the expanded copies; a fused (flash) kernel keeps the grouped K and V.
        const double kv_width = o.flash_attention ? h_kv : q_width;
        out.split_parameters = h * (q_width + 2.0 * h_kv) + q_width * h;  // QKV, output proj.
        out.input = q.column_input * sb * h;                              // the QKV linear's input
        out.qkv = e * sb * q_width + 2.0 * e * sb * kv_width;
        // The projection's input (with delayed FP8 scaling a quantized copy too).
        out.projection = (e + q.projection_copy) * sb * q_width;
        out.gathered = e * sb * h;
        // Query/key norms (Megatron-LM's Attention.get_query_key_value_tensors runs q_layernorm
        // and k_layernorm, Transformer Engine norms, on Q and K after the projection): each
        // keeps its input for backward, and the core keeps their outputs (counted in qkv).
        if (o.qk_layernorm)
            out.qk_norm_inputs = e * sb * (q_width + h_kv);
        add_context_parallel(o, modules, e * sb * q_width, 2.0 * e * sb * h_kv, e * sb * q_width,
                             out);
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
    // Recomputing the up-projections (CheckpointWithoutOutput) keeps only the checkpoint's
    // inputs, the 16-bit latents; Q, K and V are discarded after the core attention's forward
    // and re-made in backward (discard_output_and_register_recompute).
    const bool up_recomputed = modules.mla_up_proj;
    // The down-projections keep the input norm's output: one 16-bit tensor for both, or under FP8
    // each its own quantized copy.
    out.input = (q.quantized ? 2.0 * q.input : e) * sb * h;
    if (m.q_lora_rank) {
        const double q_lora = *m.q_lora_rank;
        out.split_parameters += q_lora * q_width;                 // linear_q_up_proj
        out.replicated_parameters += h * q_lora + norm * q_lora;  // linear_q_down_proj, norm
        out.replicated_linear_parameters += h * q_lora;
        // linear_q_up_proj keeps its input (the fused norm's, 16-bit; Transformer Engine's
        // LayerNormLinear saves inputmat and ln_out) and what its linear keeps of the norm's
        // output.
        out.latent += up_recomputed ? e * sb * q_lora : (e * norm + q.column_input) * sb * q_lora;
        out.gathered += e * sb * q_lora;
    } else {
        out.split_parameters += h * q_width;  // linear_q_proj
        // With qk_layernorm the query's projection fuses a norm of h (its output kept too).
        out.replicated_parameters += norm * h;
        out.latent += up_recomputed ? 0.0 : norm * q.column_input * sb * h;
        out.gathered += e * sb * h;
    }
    out.split_parameters += m.kv_lora_rank * kv_up_width + v_width * h;  // kv up, output
    out.replicated_parameters += h * kv_latent + norm * m.kv_lora_rank;  // kv down, norm
    out.replicated_linear_parameters += h * kv_latent;
    // linear_kv_up_proj's input is a view of the down-projection's output (kv_lora_rank +
    // qk_pos_emb_head_dim wide), which the fused norm keeps alive; its linear keeps the norm's
    // output. Without the norm the linear keeps the view itself, or under FP8 a quantized copy.
    if (up_recomputed)
        out.latent += e * sb * kv_latent;
    else if (norm > 0.0 || !q.quantized)
        out.latent += e * sb * kv_latent + norm * q.column_input * sb * m.kv_lora_rank;
    else
        out.latent += q.column_input * sb * m.kv_lora_rank;
    out.gathered += e * sb * m.kv_lora_rank;
    // The core attention keeps Q, K (q_width each) and V, and the output projection its input,
    // the core's output (which a fused kernel also saves: the same tensor).
    out.qkv = up_recomputed ? 0.0 : e * sb * (2.0 * q_width + v_width);
    out.projection = (e + q.projection_copy) * sb * v_width;
    add_context_parallel(o, modules, e * sb * q_width, e * sb * (q_width + v_width),
                         e * sb * v_width, out);
    return out;
}

double mlp_inner_bytes_per_token(const ShapeOptions& o, const LinearBytes& q,
                                 double inner_size) noexcept {
    // Gated: the activation's two inputs (gate and up, 16-bit) and the down projection's input;
    // two matrices: the activation's input and the second linear's input. 2 bytes each, the
    // second linear's input quantized under FP8.
    return ((o.gated_mlp ? 2.0 : 1.0) * o.activation_bytes + q.input) * inner_size;
}

double mlp_matrices(const ShapeOptions& o) noexcept {
    return o.gated_mlp ? 3.0 : 2.0;
}

// The tensors of one layer that do not depend on the MLP's kind, per micro-batch, whole: what the
// norms keep (their inputs), the dropout masks, the attention block, the attention core.
struct LayerCommon {
    double sbh = 0.0;
    double norm_input = 0.0;  // one norm's input: 2sbh
    double masks = 0.0;       // the two dropout masks after the attention and the MLP
    AttentionTerms attention;
    double attention_core = 0.0;
    bool separate_input_norm = false;  // the input norm is a module of its own
    // Core attention recomputed: its checkpoint runs outside the core_attn offloading context
    // (megatron/core/transformer/attention.py, forward), so its inputs stay on the device.
    bool core_recomputed = false;
    // Of attention_core, what two autograd nodes save: unfused attention's softmax output,
    // saved by the softmax for its backward and, without dropout (whose p = 0 returns its
    // input), by the attention-over-V matmul as its input (Transformer Engine's
    // UnfusedDotProductAttention: ScaledMaskedSoftmax.forward saves its output,
    // dot_product_attention/softmax.py; torch.bmm saves the same tensor, backends.py; at
    // NVIDIA/TransformerEngine 71bbefbf). One tensor in memory, but offloading copies it once
    // per save (see Offloaded).
    double core_saved_twice = 0.0;
};

// Fine-grained offloading of what `layer` keeps (README.md, "Activation offloading"): removes the
// offloaded modules' saved tensors, as a share `fraction` of them, and returns the bytes removed
// on one rank.
struct Offloaded {
    double replicated = 0.0;
    double tensor_parallel = 0.0;
    double attention_core = 0.0;
    // A tensor two autograd nodes save gets two tags from the saved-tensor hook, each copied to
    // the host and reloaded on its own (megatron/core/pipeline_parallel/
    // fine_grained_activation_offload.py at 4e85d74ae9: tensor_push per save, bulk_offload_group
    // and bulk_reload_group per tag): its reload brings it back twice. The second copies,
    // replicated (split by SP) and split by TP: MLA's input-norm output, which both
    // down-projections save (linear_q_down_proj or linear_q_proj, and linear_kv_down_proj), and
    // unfused attention's softmax output (LayerCommon::core_saved_twice).
    double reloaded_twice_replicated = 0.0;
    double reloaded_twice_tensor_parallel = 0.0;
};

void remove_offloaded(LayerActivationTerms& layer, const Offloaded& offloaded,
                      double fraction) noexcept {
    layer.replicated -= fraction * offloaded.replicated;
    layer.tensor_parallel -= fraction * offloaded.tensor_parallel;
    layer.attention_core -= fraction * offloaded.attention_core;
}

// The attention half's offloadable tensors (attn_norm, qkv_linear, core_attn, attn_proj).
Offloaded attention_offloaded(const ShapeOptions& o, const LayerCommon& c) noexcept {
    const OffloadModules& m = o.offload_modules;
    Offloaded out;
    // The input norm's input: offloaded with attn_norm where the norm is a module of its own,
    // or inside qkv_linear where Transformer Engine's LayerNormLinear saves it.
    if (c.separate_input_norm ? m.attn_norm : m.qkv_linear)
        out.replicated += c.norm_input;
    if (m.qkv_linear) {
        out.replicated += c.attention.input + c.attention.latent;
        if (o.mla)
            out.reloaded_twice_replicated += c.attention.input;
    }
    if (m.core_attn && !c.core_recomputed) {
        out.tensor_parallel += c.attention.qkv + c.attention.cp_kept;
        out.attention_core += c.attention_core;
        out.reloaded_twice_tensor_parallel += c.core_saved_twice;
    }
    if (m.attn_proj)
        out.tensor_parallel += c.attention.projection;
    return out;
}

// The terms of a layer whose `common` part is given and whose MLP keeps `mlp_input` (what its
// first linear or the router keeps of the normalised input, split by SP) and `mlp_inner` (split
// by TP), with `mlp_norm_offloaded` the pre-MLP norm's input when offloading takes it.
LayerActivationTerms layer_terms(const ShapeOptions& o, const LayerCommon& c, double mlp_input,
                                 double mlp_inner, double extra_replicated,
                                 const Offloaded& mlp_offloaded) noexcept {
    LayerActivationTerms out;
    out.replicated = 2.0 * c.norm_input + c.masks + c.attention.input + c.attention.latent +
                     mlp_input + extra_replicated;
    out.tensor_parallel = c.attention.split() + mlp_inner;
    out.attention_core = c.attention_core;
    out.gathered_inputs = c.attention.gathered + o.activation_bytes * c.sbh;
    out.layer_input = o.activation_bytes * c.sbh;
    Offloaded offloaded = attention_offloaded(o, c);
    offloaded.replicated += mlp_offloaded.replicated;
    remove_offloaded(out, offloaded, o.activation_offload_fraction);
    return out;
}

// A dense layer recomputing `modules` (README.md, "Recompute modules").
LayerActivationTerms dense_layer(const ShapeOptions& o, const LinearBytes& q, const LayerCommon& c,
                                 const RecomputeModules& modules, double sbF) noexcept {
    // The pre-MLP norm is fused into fc1 with Transformer Engine: fc1's LayerNormLinear keeps the
    // norm's input (the 2sbh counted with the norms) and its output; 'mlp' checkpoints the MLP
    // from the norm's input, dropping both fc1's output and the inner activations. With a norm of
    // its own (the local spec) the checkpoint keeps the norm's output, which 'layernorm' drops.
    double mlp_input = q.column_input * c.sbh;
    if ((modules.layernorm && !o.fused_norms) || (modules.mlp && o.fused_norms))
        mlp_input = 0.0;
    const double mlp_inner = modules.mlp ? 0.0 : sbF;
    Offloaded mlp_offloaded;
    if (o.offload_modules.mlp_norm && !o.fused_norms)
        mlp_offloaded.replicated = c.norm_input;
    return layer_terms(o, c, mlp_input, mlp_inner, 0.0, mlp_offloaded);
}

// What an MoE layer recomputing `modules` keeps, and its routed experts per rank.
struct MoeActivations {
    LayerActivationTerms layer;
    double routed_experts = 0.0;
    double routed_offloaded = 0.0;  // of those, what offloading moves to the host
};

// An MoE layer's terms (README.md, "Mixture of experts"), `c` its attention half.
MoeActivations moe_layer(const ShapeOptions& o, const MoeOptions& m, const LinearBytes& q,
                         const LayerCommon& c, const RecomputeModules& modules, double router,
                         double shared_inner_bytes, double routed_tokens,
                         double own_copies) noexcept {
    const double h = o.hidden_size;
    const double etp = m.expert_tensor_parallel;
    const bool shared = m.shared_experts > 0;
    // The MoE block's input, the separate pre-MLP norm's output, is kept 16-bit by the router
    // (and the dispatcher); under FP8 the shared experts' first linear keeps a quantized copy.
    // 'layernorm' drops the norm's output (Megatron-LM then has the shared experts save the
    // original input); 'moe' checkpoints the block from it; 'shared_experts' the shared experts.
    const double e = o.activation_bytes;
    double moe_input = modules.layernorm ? 0.0 : e * c.sbh;
    if (q.quantized && shared && !modules.layernorm && !modules.moe && !modules.shared_experts)
        moe_input += q.column_input * c.sbh;
    const double router_kept = modules.moe ? 0.0 : router;
    const double shared_kept = modules.moe || modules.shared_experts ? 0.0 : shared_inner_bytes;
    Offloaded mlp_offloaded;
    if (o.offload_modules.mlp_norm)
        mlp_offloaded.replicated = c.norm_input;
    MoeActivations out;
    out.layer = layer_terms(o, c, moe_input, shared_kept, router_kept, mlp_offloaded);
    out.layer.gathered_inputs += shared ? e * c.sbh : 0.0;
    out.layer.gathered_inputs -= e * c.sbh;  // no dense fc1: the QKV input and shared experts'
    if (modules.moe)
        return out;
    // The routed experts: their grouped linear's input (quantized under FP8), the activation's
    // input (16-bit) and fc2's input, which 'moe_act' drops (CheckpointWithoutOutput; under FP8
    // Megatron-LM has fc2 save the original), and what the routing weights keep for their
    // gradient. Megatron-LM before 2659630721: the combine's unpermute multiplies the rank's own
    // expert outputs by their weights and keeps them. From it (experts.py, bias_act_func): the
    // activation's output times the weights inside the experts; the fused weighted SwiGLU
    // (weighted_bias_swiglu_impl) keeps its input only, any other activation (GeLU, SwiGLU
    // unfused or Transformer Engine's) keeps its output for the multiplication, which 'moe_act'
    // recomputes and offloading the activation moves with its input.
    const double inner = static_cast<double>(m.moe_ffn_hidden_size) / etp;
    const double fc1_input = routed_tokens * q.input * h;
    const double activation_input = routed_tokens * (o.gated_mlp ? 2.0 : 1.0) * e * inner;
    const double fc2_input = modules.moe_act ? 0.0 : routed_tokens * q.input * inner;
    // torchtitan's combine multiplies an fp32 copy of the outputs (token_dispatcher.py, combine).
    double weighted = 0.0;
    if (m.routing_weights == RoutingWeights::combine)
        weighted = own_copies * (e * h);
    else if (m.routing_weights == RoutingWeights::combine_fp32)
        weighted = own_copies * (4.0 * h);
    else if (!(o.gated_mlp && m.activation_fused) && !modules.moe_act)
        weighted = routed_tokens * e * inner;
    out.routed_experts = fc1_input + activation_input + fc2_input + weighted;
    const bool weighted_in_activation = m.routing_weights == RoutingWeights::experts;
    const double fraction = o.activation_offload_fraction;
    out.routed_offloaded =
        fraction *
        ((o.offload_modules.expert_fc1 ? fc1_input : 0.0) +
         (o.offload_modules.moe_act ? activation_input + (weighted_in_activation ? weighted : 0.0)
                                    : 0.0));
    out.routed_experts -= out.routed_offloaded;
    return out;
}

// An MoE layer's terms and parameters (README.md, "Mixture of experts"). `c` and `selective` are
// the attention halves of a layer without and with the selective recompute modules.
MoeLayerTerms moe_layer_terms(const ShapeOptions& o, const MoeOptions& m, const LinearBytes& q,
                              const LayerCommon& c, const LayerCommon& selective,
                              const AttentionTerms& attention) noexcept {
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

    MoeLayerTerms out;
    // The router's fp32 scores (kept by the softmax or sigmoid for its backward) and the routing
    // map of one byte per token and expert, for this rank's tokens (sequence-sharded with SP).
    out.router = 5.0 * s * b * E;
    // The shared experts are one MLP of shared_experts * shared_expert_ffn_hidden_size, split
    // over t like a dense MLP.
    const double shared_inner =
        static_cast<double>(m.shared_experts) * m.shared_expert_ffn_hidden_size;
    out.shared_experts = s * b * mlp_inner_bytes_per_token(o, q, shared_inner);

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

    const RecomputeModules nothing{false, false, false, false, false, false, false};
    const MoeActivations kept = moe_layer(o, m, q, c, nothing, out.router, out.shared_experts,
                                          out.routed_tokens, own_copies);
    const MoeActivations recomputing =
        moe_layer(o, m, q, selective, o.recompute_modules, out.router, out.shared_experts,
                  out.routed_tokens, own_copies);
    out.layer = kept.layer;
    out.layer_selective = recomputing.layer;
    out.routed_experts = kept.routed_experts;
    out.routed_experts_selective = recomputing.routed_experts;
    out.activation_bytes = bytes_by_kind(out.layer, out.layer_selective, o);
    // Full recompute keeps only the layer's input: the experts are recomputed with the rest.
    for (const ppb_kind kind : {PPB_KIND_NONE, PPB_KIND_COMM})
        out.activation_bytes[kind] += out.routed_experts;
    for (const ppb_kind kind : {PPB_KIND_SELECT, PPB_KIND_BOTH})
        out.activation_bytes[kind] += out.routed_experts_selective;
    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    const auto on_rank = [&](const Offloaded& x) {
        return (split_sequence ? x.replicated / t : x.replicated) +
               (x.tensor_parallel + x.attention_core) / t;
    };
    Offloaded moe_norm;
    if (o.offload_modules.mlp_norm)
        moe_norm.replicated = c.norm_input;
    out.offloaded_bytes =
        o.activation_offload_fraction * (on_rank(attention_offloaded(o, c)) + on_rank(moe_norm)) +
        kept.routed_offloaded;

    const double norms = 2.0 * h;
    const double router_weight = h * E;  // replicated on every rank (Megatron-LM's TopKRouter)
    // The shared experts split over t like a dense MLP, or whole on every rank (each running
    // its sequence shard: the same activations per rank).
    const double shared = mlp_matrices(o) * h * shared_inner;
    const double shared_on_rank = m.shared_experts_replicated ? shared : shared / t;
    out.dense_parameters = attention.split_parameters / t + shared_on_rank +
                           attention.replicated_parameters + norms + router_weight;
    out.dense_linear_parameters =
        attention.split_parameters / t + shared_on_rank + attention.replicated_linear_parameters;
    out.expert_parameters = (E / ep) * mlp_matrices(o) * h * m.moe_ffn_hidden_size / etp;
    out.expert_data_parallel = t * d * cp / (ep * etp);
    out.expert_parameter_bytes = parameter_bytes(o, out.expert_data_parallel);
    out.bytes_per_expert_parameter = out.expert_parameter_bytes.total();
    return out;
}

}  // namespace

MemoryTerms memory_terms(const ShapeOptions& o) noexcept {
    const double h = o.hidden_size;
    const double a = o.num_attention_heads;
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
    const double h_kv = o.key_width();  // width of K (and of V): num_kv_heads * head channels
    // Bytes of an element the layers keep in the training dtype (Megatron-LM's params_dtype:
    // torch.float without --bf16 and --fp16, megatron/training/arguments.py at commit
    // adfb8ec7926215bfd0d5120aaf6b080de224d328): the residual stream, the norms' inputs, Q, K, V,
    // the MLP's inner activations. Dropout masks stay 1 byte, FP8 copies their format's.
    const double e = o.activation_bytes;

    MemoryTerms out;
    out.linear = linear_bytes(o);
    const LinearBytes& q = out.linear;
    const RecomputeModules nothing{false, false, false, false, false, false, false};

    // --- Activations of one layer for one micro-batch (README.md, "Activations per layer"):
    // the two norms' inputs (4sbh in 16 bits), the dropout masks, the attention block, what the
    // first MLP linear keeps of its normalised input (2sbh in 16 bits), the MLP's inner
    // activations. Unfused attention keeps the softmax output in the training dtype (e bytes),
    // and with dropout its mask (1) and output (e): 2 + 3 dropout bytes per a*s^2*b element in
    // 16 bits, 4 + 5 dropout in fp32. When a 16-bit softmax runs in fp32 outside the fused
    // kernel (Megatron's FusedScaleMaskSoftmax.forward_torch_softmax, megatron/core/fusions/
    // fused_softmax.py at commit 550f9c44589efb85af6c5a11da8fbc8c3491b636: input.float(),
    // torch softmax, then .half() or .bfloat16()), the softmax keeps its fp32 output for its
    // backward (4 bytes); with dropout, dropout keeps its mask (1) and the attention-over-V
    // matmul dropout's 16-bit output (2), the 16-bit cast is freed: 7 bytes. Without dropout
    // the matmul keeps the 16-bit cast: 6 bytes. An fp32 input takes no cast either way (the
    // casts are under input_in_float16; Transformer Engine's own copy of the class,
    // transformer_engine/pytorch/attention/dot_product_attention/softmax.py at commit
    // 2e559f062497bef768dfbe9d7e45548fadeca80a, runs fp32 inputs through the torch path too).
    LayerCommon common;
    common.sbh = sbh;
    common.norm_input = e * sbh;
    common.masks = 2.0 * dropout * sbh;
    common.attention = attention_terms(o, s * b, q, nothing);
    if (o.flash_attention)
        common.attention_core = 0.0;
    else if (o.softmax_in_fp32 && e < 4.0)
        common.attention_core = (4.0 + dropout + e) * a * s * s * b;
    else
        common.attention_core = (e + dropout * (1.0 + e)) * a * s * s * b;
    // Without dropout and without an fp32 softmax beside a 16-bit cast, the matmul's input is
    // the softmax's output itself.
    if (!o.flash_attention && !o.dropout && !(o.softmax_in_fp32 && e < 4.0))
        common.core_saved_twice = e * a * s * s * b;
    // MLA's input norm is a module of its own (layer spec: input_layernorm), as are both norms
    // of Megatron-LM's local spec; Transformer Engine's specs fuse it into the QKV projection.
    common.separate_input_norm = o.mla.has_value() || !o.fused_norms;
    // What a 'select' layer keeps: the modules Megatron-LM's selective recompute re-makes are
    // dropped (README.md, "Recompute modules").
    const RecomputeModules& modules = o.recompute_modules;
    LayerCommon selective = common;
    selective.attention = attention_terms(o, s * b, q, modules);
    if (modules.core_attn) {
        selective.attention_core = 0.0;
        selective.core_recomputed = true;
    }
    if (modules.layernorm && selective.separate_input_norm)
        selective.attention.input = 0.0;  // the input norm's output, re-made in backward
    out.attention = common.attention;
    const AttentionTerms& attention = out.attention;

    const double mlp_inner = s * b * mlp_inner_bytes_per_token(o, q, F);
    out.layer = dense_layer(o, q, common, nothing, mlp_inner);
    out.layer_selective = dense_layer(o, q, selective, modules, mlp_inner);
    const LayerActivationTerms& layer = out.layer;

    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    out.activation_bytes = bytes_by_kind(layer, out.layer_selective, o);
    {
        // What offloading moved off a dense layer, on one rank (one layer's comes back for its
        // backward: held once, below).
        Offloaded off = attention_offloaded(o, common);
        if (o.offload_modules.mlp_norm && !o.fused_norms)
            off.replicated += common.norm_input;
        out.offloaded_bytes = o.activation_offload_fraction *
                              ((split_sequence ? off.replicated / t : off.replicated) +
                               (off.tensor_parallel + off.attention_core) / t);
        out.reloaded_twice_bytes =
            o.activation_offload_fraction *
            ((split_sequence ? off.reloaded_twice_replicated / t : off.reloaded_twice_replicated) +
             off.reloaded_twice_tensor_parallel / t);
    }

    // --- Transformer Engine's CUDA graphs of the attention (README.md, "CUDA graphs"). The
    // captured callable is TransformerLayer._forward_attention: the input norm, the attention
    // and its bias-dropout-add (megatron/core/transformer/transformer_layer.py,
    // _te_cuda_graph_capture, at NVIDIA/Megatron-LM commit
    // 69ba8096f0daf65490b5c5a26e93b1d11367fd68). What it saves for backward is the attention half
    // of the layer's terms, less what offloading moves; full recompute keeps the layer's input
    // only, outside the graph. Its static inputs (get_layer_static_inputs, the same commit) are
    // the hidden states [s/t, b, h] in the training dtype and a boolean mask [b, 1, s/c, s].
    if (o.cuda_graph_scope.attn) {
        const auto attention_half = [&](const LayerCommon& c) {
            Offloaded half;
            half.replicated = c.norm_input + c.masks / 2.0 + c.attention.input + c.attention.latent;
            half.tensor_parallel = c.attention.split();
            half.attention_core = c.attention_core;
            const Offloaded off = attention_offloaded(o, c);
            const double f = o.activation_offload_fraction;
            return (split_sequence ? (half.replicated - f * off.replicated) / t
                                   : half.replicated - f * off.replicated) +
                   (half.tensor_parallel - f * off.tensor_parallel + half.attention_core -
                    f * off.attention_core) /
                       t;
        };
        out.graph_kept_bytes[PPB_KIND_NONE] = out.graph_kept_bytes[PPB_KIND_COMM] =
            attention_half(common);
        out.graph_kept_bytes[PPB_KIND_SELECT] = out.graph_kept_bytes[PPB_KIND_BOTH] =
            attention_half(selective);
        const double hidden = e * sbh * (split_sequence ? 1.0 / t : 1.0);
        out.graph_input_bytes = hidden + b * s * static_cast<double>(o.seq_length);
        out.graph_output_bytes = hidden;
    }

    // --- Head and tail activations per micro-batch (paper §4.3).
    const double sequence_share = split_sequence ? 1.0 / t : 1.0;
    out.head_activation_bytes = dropout * sbh * sequence_share;
    const double norm_input = e * sbh * sequence_share;
    const double lm_head_input = split_sequence && !o.keep_gathered_inputs ? e * sbh / t : e * sbh;
    // Megatron-core's vocab-parallel cross entropy (megatron/core/tensor_parallel/
    // cross_entropy.py, also the fused one in megatron/core/fusions/fused_cross_entropy.py)
    // saves the fp32 softmax of the logits for backward; the 16-bit logits exist next to it while
    // they are cast (GPTModel.compute_language_model_loss calls it on logits.float()), and in
    // backward the 16-bit gradient next to the fp32 one. With fp32 activations .float() returns
    // the logits themselves, which the loss turns into the softmax in place (calculate_logits_max
    // and calculate_predicted_logits at commit adfb8ec7926215bfd0d5120aaf6b080de224d328): no
    // copy, logits_transient_bytes 0 by default (options.cpp).
    const double logits = o.logits_bytes * s * b * V / t;
    out.tail_activation_bytes = norm_input + lm_head_input + logits;
    out.tail_logits_bytes = logits;
    out.tail_transient_bytes = o.logits_transient_bytes * s * b * V / t;
    // Megatron-LM's --defer-embedding-wgrad-compute: the LM head's backward keeps its output
    // gradient (cast to its input's dtype) and, in the model's embedding_activation_buffer, its
    // input, for each deferred micro-batch until the iteration's end computes their weight
    // gradient (LinearWithGradAccumulationAndAsyncCommunication.backward, grad_output_buffer;
    // megatron/core/pipeline_parallel/schedules.py, finish_embedding_wgrad_compute; at commit
    // d98e8a64ddf34856e74b24714e3bedb2f5a39553).
    out.deferred_wgrad_bytes = o.deferred_wgrad_micro_batches * (e * s * b * V / t + lm_head_input);
    // One layer's backward: unfused attention's gradients of the attention probabilities and of
    // the scores (two a*s^2*b tensors in the training dtype), the MLP's gradients of its inner
    // activation (two s*b*F tensors); split over t like the tensors they are the gradients of.
    if (o.backward_transient) {
        const double scores = o.flash_attention ? 0.0 : 2.0 * e * a * s * s * b;
        // Context parallelism's exchange buffers: its backward's beside the gradients, or its
        // forward's alone, whichever is larger.
        out.layer_transient_bytes =
            std::max(scores + 2.0 * e * s * b * F + attention.cp_backward_buffers,
                     attention.cp_forward_buffers) /
            t;
    }

    // --- Parameters (README.md, "Parameters").
    const double mlp = (o.gated_mlp ? 3.0 : 2.0) * h * F;
    const double norms = 2.0 * h;  // two norm weights, replicated on every rank
    // Linear biases: QKV's and the first MLP linear's are split over t (column parallel), the
    // attention projection's and the second MLP linear's are whole on every rank (row parallel).
    // MLA's projections other than the output have no bias (bias=False in Megatron-LM).
    const double qkv_bias = o.mla ? 0.0 : o.query_width() + 2.0 * h_kv;
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

    // Sharded over the data-parallel ranks with the context-parallel ones (Megatron-LM's
    // data-parallel group with context parallelism).
    out.parameter_bytes = parameter_bytes(o, d * o.context_parallel);
    out.bytes_per_parameter = out.parameter_bytes.total();

    if (o.moe) {
        const MoeOptions& m = *o.moe;
        out.moe = moe_layer_terms(o, m, q, common, selective, attention);
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
    // Fine-grained offloading brings one layer's offloaded tensors back while it runs backward
    // (and keeps the last group of each module on the device): held once, with that layer's
    // backward gradients, each tensor saved twice reloaded twice. Where a chunk's backward
    // ends, its reloading runs on into the next backward chunk: each group's start in its first
    // layer reloads one group of the next chunk's last layer (ChunkOffloadHandler.bulk_reload,
    // pre_reload_last_layer, at 4e85d74ae9), so all of that layer is back on the device, with
    // its second copies, through the forward step the schedule runs before that backward; that
    // forward's own transient (unfused attention's scores and softmax output, kept until the
    // attention returns) is the size of the backward's two gradients. Both moments come to
    // one layer's transient, the offloaded tensors and their second copies.
    if (o.offload_modules.any()) {
        const double offloaded =
            std::max(out.offloaded_bytes, out.moe ? out.moe->offloaded_bytes : 0.0);
        out.layer_transient_bytes += offloaded + out.reloaded_twice_bytes;
    }

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
        const double kept = (dropout + 3.0 * e) * sbh * sequence_share + eh_input;
        // Full recompute checkpoints the module from its two inputs (the hidden states and the
        // embedded, dropped-out shifted tokens), the dropout itself running outside.
        const double checkpointed = (dropout + 2.0 * e) * sbh * sequence_share;
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
            const double beside_experts = attention_whole + norms + h * m.num_experts +
                                          mlp_matrices(o) * h * m.shared_experts *
                                              static_cast<double>(m.shared_expert_ffn_hidden_size);
            layer_whole = beside_experts + m.num_experts * expert;
            layer_active = beside_experts + m.top_k * expert;
        }
        out.model_parameters += N * (layer_whole + 2.0 * h * h + 3.0 * h);
        out.active_parameters += N * (layer_active + 2.0 * h * h + 3.0 * h);
        out.mtp = mtp;
    }
    return out;
}

}  // namespace ppb::analytic
