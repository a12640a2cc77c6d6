// Options of the analytic model: the shape of the transformer and how it is trained, as given to
// create() in JSON (see README.md for each key and its default).
#ifndef PPB_ANALYTIC_OPTIONS_HPP
#define PPB_ANALYTIC_OPTIONS_HPP

#include <ppb/abi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::analytic {

// Where the router's probabilities weigh the routed experts' outputs, which decides what is kept
// for their gradient (README.md, "Activations of an MoE layer"): in the combine that brings the
// expert outputs back, which keeps them in the activations' dtype (Megatron-LM before core 0.13)
// or in fp32 (torchtitan), or inside the experts' activation (Megatron-LM from 2659630721,
// 2025-04-09, core 0.13).
enum class RoutingWeights { combine, combine_fp32, experts };

// The optional "moe" object: a mixture of experts in place of the MLP of some or all layers.
// parse_options() resolves every default, so each member holds the value the formulas use.
struct MoeOptions {
    std::uint32_t num_experts = 0;                    // E, routed experts per MoE layer
    std::uint32_t top_k = 0;                          // experts each token is routed to
    std::uint32_t moe_ffn_hidden_size = 0;            // inner size of one routed expert (default F)
    std::uint32_t shared_experts = 0;                 // experts every token passes through
    std::uint32_t shared_expert_ffn_hidden_size = 0;  // inner size of one shared expert
    // The shared experts whole on every tensor-parallel rank, each running its sequence shard
    // (MindFormers under sequence parallelism); false: split over t like a dense MLP.
    bool shared_experts_replicated = false;
    std::uint32_t expert_parallel = 1;         // EP: ranks the routed experts are spread over
    std::uint32_t expert_tensor_parallel = 0;  // ETP: ranks one routed expert is sliced over
    // Tokens per expert as a multiple of the balanced share; nullopt: dropless routing, taken
    // at its balanced expectation.
    std::optional<double> capacity_factor;
    // Without a capacity factor: tokens this rank's experts receive, as a multiple of the
    // balanced share (the busiest experts of a dropless router; default 1.2, README.md).
    double routing_imbalance = 1.2;
    RoutingWeights routing_weights = RoutingWeights::experts;
    // With the weights inside the experts: a gated activation and its weighting run as one fused
    // kernel (Megatron-LM's weighted bias-SwiGLU), which keeps its input only; false, or a GeLU
    // expert: the weighting keeps the activation's output.
    bool activation_fused = true;
    std::uint32_t first_k_dense = 0;  // DeepSeek's first_k_dense_replace
    // Megatron-LM's --moe-layer-freq as given: an integer N, or a 0/1 list (nullopt: none given).
    std::optional<std::uint32_t> layer_freq_every;
    bool layer_freq_list = false;
    std::string dense_group = "dense";
    std::string moe_group = "moe";
    // The resolved layout: moe_layer[i] says whether layer i (0-based, model order) is MoE.
    std::vector<bool> moe_layer;

    [[nodiscard]] std::uint32_t moe_layers() const noexcept {
        std::uint32_t n = 0;
        for (const bool m : moe_layer)
            n += m ? 1U : 0U;
        return n;
    }
};

// The optional "mla" object: multi-latent attention (DeepSeek-V2/V3; Megatron-LM's
// --multi-latent-attention) in place of multi-head attention in every layer, the MTP layers'
// included. Its heads have their own widths: keys and queries qk_head_dim + qk_pos_emb_head_dim
// channels, values v_head_dim.
struct MlaOptions {
    // Rank of the query's down-projection; nullopt: the query is projected from h directly.
    std::optional<std::uint32_t> q_lora_rank;
    std::uint32_t kv_lora_rank = 0;         // rank of the key/value down-projection (the latent)
    std::uint32_t qk_head_dim = 0;          // channels of a query/key head without rotary part
    std::uint32_t qk_pos_emb_head_dim = 0;  // channels of the rotary part of a query/key head
    std::uint32_t v_head_dim = 0;           // channels of a value head
    // Norms of the query and key/value latents (Megatron-LM's --qk-layernorm with MLA; DeepSeek's
    // q_a_layernorm and kv_a_layernorm): fused into the up-projections by Transformer Engine.
    bool qk_layernorm = true;
};

// The modules Megatron-LM's selective recompute recomputes (--recompute-modules): what a layer
// of kind 'select' (and 'both') drops. Megatron-LM's default is core attention alone.
struct RecomputeModules {
    bool core_attn = true;        // the attention core: softmax, dropout, attention over V
    bool mla_up_proj = false;     // MLA's up-projections and rotary embedding: Q, K, V re-made
    bool layernorm = false;       // the norms that are modules of their own: their outputs
    bool mlp = false;             // a dense layer's MLP, from its input
    bool moe = false;             // an MoE layer's MoE block, from its input
    bool moe_act = false;         // the routed experts' activation function: its output
    bool shared_experts = false;  // the shared experts, from their input
};

// Megatron-LM's fine-grained activation offloading (--fine-grained-activation-offloading,
// --offload-modules): the modules whose saved inputs go to the host after forward and come back
// for backward.
struct OffloadModules {
    bool attn_norm = false;   // the input norm (a module of its own: MLA, Megatron-LM's local spec)
    bool qkv_linear = false;  // the QKV projection (MLA: the down- and up-projections)
    bool core_attn = false;   // the attention core: Q, K, V (and unfused attention's scores)
    bool attn_proj = false;   // the output projection's input
    bool mlp_norm = false;    // the pre-MLP norm (a module of its own: MoE layers, the local spec)
    bool expert_fc1 = false;  // the routed experts' first linear's input
    bool moe_act = false;     // the routed experts' activation's input
    [[nodiscard]] bool any() const noexcept {
        return attn_norm || qkv_linear || core_attn || attn_proj || mlp_norm || expert_fc1 ||
               moe_act;
    }
};

// Transformer Engine's CUDA graphs (Megatron-LM's --cuda-graph-impl transformer_engine with
// --cuda-graph-scope), the parts of each layer captured, when no eager iteration ran before the
// capture (--cuda-graph-warmup-steps 0): what the captured parts save for backward then lives in
// the graphs' memory pool, allocated while the graphs are captured and not while they replay.
struct CudaGraphScope {
    bool attn = false;  // TransformerLayer._forward_attention: input norm, attention, its residual
    [[nodiscard]] bool any() const noexcept { return attn; }
};

// How context-parallel attention exchanges keys and values (Transformer Engine's cp_comm_type):
// a ring of key/value chunks, an all-gather of them, an all-to-all of Q, K, V and the output
// (heads split over the ranks instead of the sequence), or all-to-all inside groups with a ring
// between them.
enum class CpCommType { p2p, all_gather, a2a, a2a_p2p };

// Transformer Engine's low-precision recipes as Megatron-LM applies them (--fp8-recipe with
// --fp8-format, or --fp4-format's NVFP4): how linear layers quantize their weights and the inputs
// they keep for backward.
enum class Fp8Recipe { delayed, tensorwise, blockwise, mxfp8, nvfp4 };

// What data parallelism shards (Megatron-LM's --data-parallel-sharding-strategy with its FSDP):
// nothing, the optimizer state (the distributed optimizer, ZeRO-1), and the gradients (ZeRO-2),
// and the parameters (ZeRO-3).
enum class Sharding { no_shard, optim, optim_grads, optim_grads_params };

// One group of body layers as the model names it: dense layers or MoE layers.
struct LayerGroup {
    std::string name;
    bool moe = false;
    std::uint32_t layers = 0;  // layers of the group in the whole model
};

struct ShapeOptions {
    // Required.
    std::uint32_t hidden_size = 0;          // h
    std::uint32_t num_attention_heads = 0;  // a (query heads)
    std::uint32_t ffn_hidden_size = 0;      // F
    std::uint32_t seq_length = 0;           // s
    std::uint32_t micro_batch_size = 0;     // b
    std::uint32_t vocab_size = 0;           // V, as the framework allocates it (padded)
    std::uint32_t num_layers = 0;           // L
    std::uint32_t tensor_parallel = 0;      // t

    // Optional.
    std::uint32_t num_kv_heads = 0;  // key/value heads (GQA); 0 in the text means "= a"
    // Channels of one attention head (Megatron-LM's --kv-channels, HF's head_dim); 0 means h/a.
    // Qwen3's heads are wider than h/a: 32 heads of 128 make its 30B-A3B attention 4096 wide on
    // a hidden size of 2048.
    std::uint32_t kv_channels = 0;
    // Norms of the query and key heads (Megatron-LM's --qk-layernorm, Qwen3's q_norm and
    // k_norm; not with MLA, whose latent norms are mla.qk_layernorm): each keeps its input.
    bool qk_layernorm = false;
    std::uint32_t data_parallel = 1;
    bool sequence_parallel = false;
    bool distributed_optimizer = false;
    bool gated_mlp = true;         // SwiGLU-style MLP: three matrices h x F
    bool flash_attention = false;  // a fused attention kernel: no a*s^2 tensors stored
    bool untie_embeddings = true;  // the LM head has its own weights
    bool dropout = true;           // dropout layers present (their 1-byte masks are stored)
    // With sequence parallelism: a layer that does not recompute communication keeps the
    // all-gathered full-sequence inputs of its column-parallel linears for backward.
    bool keep_gathered_inputs = false;
    double param_bytes = 2.0;
    double grad_bytes = 4.0;
    // Bytes per element of the activations the layers keep in the training dtype (Megatron-LM's
    // params_dtype): 2 for bf16 and fp16, 4 for fp32 (README.md, "Activations per layer"). Dropout
    // masks, FP8 copies, the router's fp32 scores and the fp32 logits do not follow it.
    double activation_bytes = 2.0;
    double optimizer_bytes = 12.0;
    double constant_mb = 0.0;
    // Learned absolute position embeddings: positions x h parameters on stage 0, not split by
    // tensor parallelism (0: none, e.g. rotary embeddings).
    std::uint32_t position_embeddings = 0;
    // Biases of the linear layers (Megatron-LM's default; --disable-bias-linear drops them).
    bool linear_biases = false;
    // Allocated memory of every device outside the model's tensors: cuBLAS and Transformer
    // Engine workspaces, the batch, communication scratch (README.md, "Runtime").
    double runtime_mb = 100.0;
    // Bytes per element of the last stage's s*b*V/t logits: kept for backward per in-flight
    // micro-batch (the cross entropy's fp32 softmax), and held once more at the peak (the
    // 16-bit logits while they are cast, and the 16-bit gradient while it is cast back).
    // logits_transient_bytes defaults to activation_bytes, 0 with fp32 activations (no cast).
    double logits_bytes = 4.0;
    double logits_transient_bytes = 2.0;
    // The gradients that exist only while one layer runs its backward (README.md, "Peak").
    bool backward_transient = true;
    // Unfused attention whose softmax runs in fp32 outside Megatron's fused kernel (its torch
    // fallback, e.g. --no-masked-softmax-fusion with --attention-softmax-in-fp32): the fp32
    // probabilities are kept for backward (README.md, "Activations per layer").
    bool softmax_in_fp32 = false;
    // A prediction's standard error as a fraction of it: the root mean square of the relative
    // errors on the measured runs of tests/data/real (README.md, "How sure a prediction is").
    double relative_std_error = 0.02;
    std::optional<MoeOptions> moe;
    std::optional<MlaOptions> mla;
    RecomputeModules recompute_modules;
    // Multi-token prediction (Megatron-LM's --mtp-num-layers): this many MTP layers, all on the
    // stage mtp_stage_offset stages before the last (its last chunk), each a transformer layer of
    // the model's last layer's kind with its projection and norms; their recompute kind.
    std::uint32_t mtp_num_layers = 0;
    std::uint32_t mtp_stage_offset = 0;
    ppb_kind mtp_recompute = PPB_KIND_NONE;
    // Context parallelism (Megatron-LM's --context-parallel-size, --cp-comm-type): the sequence
    // split over this many ranks, and how attention exchanges keys and values between them.
    std::uint32_t context_parallel = 1;
    CpCommType cp_comm_type = CpCommType::p2p;
    // FP8 / FP4 training of the body layers' linears (nullopt: 16-bit), whether the weights are
    // kept in that format only (--fp8-param-gather: no 16-bit copy), and whether the GPU's FP8
    // GEMMs need transposed copies (Hopper and earlier; not Blackwell).
    std::optional<Fp8Recipe> fp8_recipe;
    bool fp8_param_gather = false;
    bool fp8_transposes = true;
    // The norms before the QKV and first MLP linears are fused into them (Transformer Engine's
    // LayerNormLinear in Megatron-LM's TE layer specs); false: modules of their own (the local
    // spec). MLA's input norm and an MoE layer's pre-MLP norm are always modules of their own.
    bool fused_norms = true;
    // Megatron-LM's --cross-entropy-loss-fusion and --cross-entropy-fusion-impl te: which kernels
    // run the loss. The native fusion keeps one more fp32 logits-sized buffer at the loss (the
    // default logits_transient_bytes); the time model times the loss's passes from them.
    bool cross_entropy_loss_fusion = false;
    bool te_cross_entropy = false;
    OffloadModules offload_modules;
    // Megatron-LM's --defer-embedding-wgrad-compute: the micro-batches whose LM-head output
    // gradient (and input) the last stage keeps until the iteration's end, where their weight
    // gradient is computed (--wgrad-deferral-limit, or every micro-batch of the iteration).
    std::uint32_t deferred_wgrad_micro_batches = 0;
    // The share of the offloaded groups Megatron-LM offloads (--activation-offload-fraction).
    double activation_offload_fraction = 1.0;
    // The parts of each layer Transformer Engine's CUDA graphs capture, counted as the allocator
    // reports them (README.md, "CUDA graphs"); none: the eager run's memory.
    CudaGraphScope cuda_graph_scope;
    // Megatron-LM's layer-level CPU offloading (--cpu-offloading-num-layers N, through
    // Transformer Engine's get_cpu_offload_context): the saved activations of the model's first
    // N body layers go to the host after their forward and come back for their backward, so
    // that one stage holds the other layers' (README.md, "CPU offloading of layers"). 0: none.
    std::uint32_t cpu_offloading_num_layers = 0;
    // The share of the optimizer state kept in host memory (--optimizer-cpu-offload with
    // --optimizer-offload-fraction); 0: all on the device.
    double optimizer_offload_fraction = 0.0;
    // Sharded data parallelism (FSDP); nullopt: `distributed_optimizer` says (optim or
    // no_shard). With gradients or parameters sharded, the two largest units' unsharded buffers
    // are held at the peak.
    std::optional<Sharding> data_parallel_sharding;

    // The sharding in effect.
    [[nodiscard]] Sharding sharding() const noexcept {
        if (data_parallel_sharding)
            return *data_parallel_sharding;
        return distributed_optimizer ? Sharding::optim : Sharding::no_shard;
    }

    // Key/value heads with the default applied.
    [[nodiscard]] std::uint32_t kv_heads() const noexcept {
        return num_kv_heads == 0 ? num_attention_heads : num_kv_heads;
    }
    // The channels of a head with the default applied, and the widths of Q (and of the core
    // attention's output, the output projection's input) and of K (and of V) that follow.
    [[nodiscard]] double head_channels() const noexcept {
        return kv_channels == 0 ? static_cast<double>(hidden_size) / num_attention_heads
                                : static_cast<double>(kv_channels);
    }
    [[nodiscard]] double query_width() const noexcept {
        return num_attention_heads * head_channels();
    }
    [[nodiscard]] double key_width() const noexcept { return kv_heads() * head_channels(); }
};

// Parses the options object. Throws ppb::plugin::InvalidInput naming the offending key for
// malformed JSON, unknown keys, a missing required key, wrong types, values out of range, shapes
// the formulas cannot split (divisibility), and options that belong to another model's input.
[[nodiscard]] ShapeOptions parse_options(std::string_view options_json);

// Every option parse_options() reads, in the order of its tables (the model shape's keys,
// ppb/model_shape_keys.hpp, which the tests check these are).
[[nodiscard]] std::vector<std::string_view> option_names();

// The groups of body layers in model order of first appearance: one group "body" without `moe`;
// with it the groups the layout holds ("dense" then "moe" for DeepSeek-V3, only "moe" when every
// layer is MoE).
[[nodiscard]] std::vector<LayerGroup> layer_groups(const ShapeOptions& options);

// Remarks about options that are valid but have no effect ("sequence_parallel has no effect
// with tensor_parallel = 1"), for the report's warnings.
[[nodiscard]] std::vector<std::string> option_warnings(const ShapeOptions& options);

}  // namespace ppb::analytic

#endif  // PPB_ANALYTIC_OPTIONS_HPP
