// The formulas of the analytic model: parameter and activation memory of one tensor-parallel rank
// from the transformer's shape, after Korthikanti et al. 2022, "Reducing Activation Recomputation
// in Large Transformer Models" (arXiv:2205.05198), §4. README.md derives every term.
#ifndef PPB_ANALYTIC_TERMS_HPP
#define PPB_ANALYTIC_TERMS_HPP

#include "options.hpp"

#include <ppb/abi.h>

#include <array>
#include <optional>

namespace ppb::analytic {

inline constexpr double bytes_per_mb = 1024.0 * 1024.0;  // MB = 2^20 bytes

// Activation bytes stored for backward by one layer for one micro-batch, as whole tensors (before
// any division by t), grouped by how tensor and sequence parallelism split them. Their sum with
// the right divisions gives the paper's sbh(34 + 5as/h) family of formulas.
struct LayerActivationTerms {
    // Not split by tensor parallelism, split by sequence parallelism: the inputs of the two norms
    // (4sbh), the inputs of the QKV and first MLP linears (2sbh each), the two dropout masks
    // after the attention projection and the MLP (sbh each, when dropout is on). Paper: 10sbh.
    double replicated = 0.0;
    // Split by tensor parallelism: Q (2sbh), K and V (2sbh each; 2sb*h_kv each with flash
    // attention and GQA), the attention projection's input (2sbh), the MLP's inner activations
    // (4sbF, or 6sbF gated). Paper: 24sbh.
    double tensor_parallel = 0.0;
    // Split by tensor parallelism, dropped by selective recompute and by flash attention: the
    // softmax output (2as^2b), its dropout mask (as^2b) and the dropout output (2as^2b).
    // Paper: 5as^2b.
    double attention_core = 0.0;
    // The part of `replicated` that the two column-parallel linears (QKV, first MLP) receive
    // through an all-gather under sequence parallelism: 4sbh.
    double gathered_inputs = 0.0;
    // The layer's input, all that full recompute keeps: 2sbh.
    double layer_input = 0.0;
};

// Bytes Transformer Engine keeps of a linear layer (README.md, "FP8 and FP4"): per element of
// the input it saves for backward, and per parameter of the quantized weight copies it caches.
// Without FP8: the 16-bit input, no copies.
struct LinearBytes {
    bool quantized = false;
    double column_input = 2.0;  // input of a column-parallel linear (all-gathered under SP)
    double input = 2.0;         // input of a row-parallel, duplicated or expert linear
    double weight_copy = 0.0;   // the quantized copies of a weight (data, transposes, scales)
    // Megatron-FSDP sharding FP8 weights (optim_grads_params with fp8_param_gather, delayed or
    // tensorwise scaling): a weight's FP8 data is its parameter, sharded as the weights are, and
    // its transpose is dropped after each module (linear_bytes); weight_copy is then per rank of
    // the shard, divided by the ranks sharding that weight.
    bool sharded_copy = false;
    // Delayed scaling: the output projection keeps a quantized copy of its input beside the
    // 16-bit one the attention keeps (Megatron-LM saves the original input for the others).
    double projection_copy = 0.0;
};

[[nodiscard]] LinearBytes linear_bytes(const ShapeOptions& options) noexcept;

// Bytes one rank holds per parameter: the weight, its gradient and the optimizer's state, each
// divided by the ranks that shard it (README.md, "Parameters" and "Sharded data parallelism").
struct ParameterBytes {
    double weight = 0.0;
    double gradient = 0.0;
    double optimizer = 0.0;
    // Per parameter of an FSDP unit while it is unsharded for computing (its all-gathered
    // weight, its unsharded gradient before the reduce-scatter): 0 without FSDP.
    double unsharded = 0.0;
    [[nodiscard]] double total() const noexcept { return weight + gradient + optimizer; }
};

// One layer's attention block, as whole tensors: parameters and the activations it keeps beyond
// the norms' inputs (README.md, "Multi-latent attention"), for one set of recompute modules.
struct AttentionTerms {
    double split_parameters = 0.0;       // sliced over t: the column- and row-parallel linears
    double replicated_parameters = 0.0;  // whole on every tensor-parallel rank (MLA's
                                         // down-projections and latent norms)
    double replicated_linear_parameters = 0.0;  // of those, the linears' (MLA's down-projections)
    // Split by sequence parallelism only: what its linears keep of the normalised input (the QKV
    // projection's input, MLA's down-projections'; 2 bytes an element in 16 bits), and MLA's
    // latents with their norms' outputs, kept for the up-projections.
    double input = 0.0;
    double latent = 0.0;
    // Split by tensor parallelism: Q, K and V as the core attention keeps them, the output
    // projection's input (the core's output), and what context parallelism's exchange keeps
    // beyond them.
    double qkv = 0.0;
    double projection = 0.0;
    double cp_kept = 0.0;
    // With query/key norms: their inputs, Q and K as the QKV projection made them.
    double qk_norm_inputs = 0.0;
    // The inputs of its column-parallel linears, all-gathered under sequence parallelism.
    double gathered = 0.0;
    // Context parallelism: the buffers one layer's attention holds while it runs forward and
    // backward (held once, split by tensor parallelism).
    double cp_forward_buffers = 0.0;
    double cp_backward_buffers = 0.0;

    [[nodiscard]] double split() const noexcept {
        return qkv + projection + cp_kept + qk_norm_inputs;
    }
};

// What a mixture-of-experts layer holds beyond the dense layer's terms (README.md, "Mixture of
// experts"). Its `layer` terms are those of its attention block, norms and shared experts, split
// as a dense layer's are; the routed experts' activations are per rank already.
struct MoeLayerTerms {
    // replicated: the dense layer's plus the router's scores and routing map; tensor_parallel:
    // attention as a dense layer's plus the shared experts' inner activations; gathered_inputs:
    // the QKV input, plus the shared experts' input when there are shared experts.
    LayerActivationTerms layer;
    LayerActivationTerms layer_selective;  // what a 'select' MoE layer keeps of `layer`
    double router = 0.0;          // router scores (fp32) and routing map (1 byte), whole: 5sbE
    double shared_experts = 0.0;  // inner activations of the shared experts, whole
    // Tokens (copies) entering this rank's local experts per micro-batch: the balanced share
    // top_k * s*b / t * ETP, times capacity_factor when given.
    double routed_tokens = 0.0;
    // Bytes per rank per micro-batch of the routed experts: their inputs (2 bytes x h per routed
    // token), inner activations (6 or 4 bytes x moe_ffn_hidden_size / ETP per routed token) and
    // the expert outputs the combine keeps (2 bytes x h per token copy of this rank's own tokens);
    // and what a 'select' MoE layer keeps of them.
    double routed_experts = 0.0;
    double routed_experts_selective = 0.0;
    std::array<double, PPB_KIND_COUNT> activation_bytes{};

    // Parameters one rank holds per MoE layer: sharded like dense parameters (attention and shared
    // experts over t, norms and router replicated), and the routed experts (E/EP experts sliced
    // over ETP), whose optimizer state the distributed optimizer shards over the expert data
    // parallel ranks instead of d.
    double dense_parameters = 0.0;
    double dense_linear_parameters = 0.0;  // of dense_parameters, the linears' (FP8 copies)
    double expert_parameters = 0.0;
    double expert_data_parallel = 0.0;  // t * d * c / (EP * ETP)
    double bytes_per_expert_parameter = 0.0;
    ParameterBytes expert_parameter_bytes;  // bytes_per_expert_parameter's parts
    double offloaded_bytes = 0.0;  // per rank per micro-batch, as MemoryTerms::offloaded_bytes
};

// The multi-token prediction layers (README.md, "Multi-token prediction"): on their stage, per
// MTP layer, and what the last stage keeps for their losses.
struct MtpTerms {
    bool moe = false;  // each is an MoE layer (the model's last layer is one)
    // Parameters of one MTP layer on one rank besides its transformer layer's: the projection
    // eh_proj (2h -> h, column parallel) and the enorm, hnorm and final norms.
    double own_parameters = 0.0;
    double own_linear_parameters = 0.0;  // eh_proj's
    // The copy of the word (and position) embeddings the MTP stage holds for the shifted tokens
    // (shared with stage 0's; none when the MTP layers are in stage 0's only chunk).
    double embedding_parameters = 0.0;
    // Activation bytes of one MTP layer per micro-batch on one rank besides its transformer
    // layer's, by the recompute kind of the MTP module (mtp_recompute): the embedding's dropout
    // mask, the inputs of enorm, hnorm, eh_proj and the final norm; 'full' keeps the module's
    // two inputs instead.
    std::array<double, PPB_KIND_COUNT> own_activation_bytes{};
    // What the last stage keeps per micro-batch for all the MTP layers' losses: their LM head
    // inputs and logits (and, with the MTP layers on an earlier stage, their final norm inputs).
    double tail_activation_bytes = 0.0;
    double tail_logits_bytes = 0.0;  // the logits' part of it
};

struct MemoryTerms {
    LayerActivationTerms layer;
    // What a layer of kind 'select' keeps: `layer` without what the recompute modules re-make
    // (recompute_modules; by default core attention: attention_core is 0).
    LayerActivationTerms layer_selective;
    AttentionTerms attention;
    // Activation bytes per layer per in-flight micro-batch on one rank, for each recompute kind.
    std::array<double, PPB_KIND_COUNT> activation_bytes{};
    // Extra activation bytes per in-flight micro-batch of stage 0 (embedding dropout mask) and of
    // the last stage (final norm input, LM head input, fp32 logits).
    double head_activation_bytes = 0.0;
    double tail_activation_bytes = 0.0;
    // The part of tail_activation_bytes that is the logits the loss keeps (its fp32 softmax).
    double tail_logits_bytes = 0.0;
    // Held on the last stage for the iteration, not per micro-batch in flight: the LM head's
    // output gradients and inputs of the micro-batches whose weight gradient is deferred
    // (deferred_wgrad_micro_batches).
    double deferred_wgrad_bytes = 0.0;
    // Activation bytes per layer per micro-batch on one rank that fine-grained offloading moves
    // to the host (of a 'none' layer): out of activation_bytes, one layer's back on the device
    // while it runs backward (in layer_transient_bytes).
    double offloaded_bytes = 0.0;
    // Of those, the second copies its reload brings back of the tensors two autograd nodes save
    // (MLA's input-norm output, unfused attention's softmax output without dropout): offloading
    // copies a tensor once per save (in layer_transient_bytes).
    double reloaded_twice_bytes = 0.0;
    // Transformer Engine's CUDA graphs of the attention (cuda_graph_scope; README.md, "CUDA
    // graphs"), per layer per in-flight micro-batch on one rank: what the captured attention
    // saves for backward, by recompute kind (in the graphs' pool: allocated while the graphs are
    // captured, not while they replay; part of activation_bytes); the static input buffers of
    // each graphed layer and micro-batch in flight (the hidden states and the attention mask,
    // allocated for the whole run); the output the capture holds until its backward is captured.
    std::array<double, PPB_KIND_COUNT> graph_kept_bytes{};
    double graph_input_bytes = 0.0;
    double graph_output_bytes = 0.0;
    // Held once at a stage's peak, not per micro-batch: the gradients of one layer's backward
    // (every stage) and, on the last stage, the logits' 16-bit copy at the loss.
    // The peak takes the larger of the two, as they do not exist at the same time.
    double layer_transient_bytes = 0.0;
    double tail_transient_bytes = 0.0;

    // Parameters held by one rank.
    double layer_parameters = 0.0;              // per body layer
    double layer_linear_parameters = 0.0;       // of those, the linears' (FP8 weight copies)
    double embedding_parameters = 0.0;          // stage 0: word embeddings
    double tail_parameters = 0.0;               // last stage of p > 1: final norm + LM head
    double tail_parameters_single_stage = 0.0;  // p = 1: tied LM head shares the embedding
    // Parameters of the whole model (every rank, counted once): for checking against its size.
    double model_parameters = 0.0;
    // Parameters a token passes through: model_parameters with top_k of the routed experts of each
    // MoE layer (= model_parameters without MoE).
    double active_parameters = 0.0;
    double bytes_per_parameter = 0.0;
    ParameterBytes parameter_bytes;  // bytes_per_parameter's parts
    LinearBytes linear;              // what the linears keep (FP8 or 16-bit)

    // With the `moe` option: the terms of an MoE layer (`layer`, `activation_bytes` and
    // `layer_parameters` above are those of a dense layer).
    std::optional<MoeLayerTerms> moe;
    // With mtp_num_layers > 0.
    std::optional<MtpTerms> mtp;
};

// Evaluates every formula for valid options (parse_options() has checked divisibility).
[[nodiscard]] MemoryTerms memory_terms(const ShapeOptions& options) noexcept;

}  // namespace ppb::analytic

#endif  // PPB_ANALYTIC_TERMS_HPP
