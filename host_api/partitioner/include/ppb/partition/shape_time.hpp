// ppb/partition/shape_time.hpp — the layers' compute times from a model shape, without a layer
// file.
//
// The shape is the analytic memory model's options object (plugin/analytic/README.md, "Options":
// hidden_size, num_attention_heads, ffn_hidden_size, seq_length, micro_batch_size, vocab_size,
// num_layers, tensor_parallel, optionally num_kv_heads, gated_mlp and moe). Its FLOPs per
// micro-batch and tensor-parallel rank, at an achieved rate per device, give a SAPP layer file
// (ppb/sapp/layer_file.hpp) with HEAD "embedding", one BODY entry per run of consecutive layers
// of one group, and TAIL "lm_head"; read by the time model's reader, it is the TimeModel the
// partitioner plans with. The BODY names are the analytic model's groups: "body" for a dense
// shape, moe.dense_group and moe.moe_group ("dense" and "moe" by default) with `moe`.
//
// Counted (multiply-add = 2 FLOPs; b micro_batch_size, s seq_length, h hidden_size, a heads,
// h_kv = num_kv_heads x h / a, F ffn_hidden_size, V vocab_size, t tensor_parallel), forward:
//   attention      2bsh(h + 2h_kv) (QKV) + 2bs^2h (scores) + 2bs^2h (context) + 2bsh^2 (output)
//   dense MLP      6bshF gated (gated_mlp, the default), else 4bshF
//   MoE block      2bshE (router) + top_k x 6bshF_e (routed experts, at the balanced expectation)
//                  + shared_experts x 6bshF_s (4 instead of 6 without gated_mlp)
//   LM head        2bshV
// each divided by t. A body layer's time is its forward, FLOPs / (device_tflops x 1e12) in ms,
// as today's SAPP reads `time` (its forward + backward without recompute is 3 x that, the
// time model's TimeConvention::hyper_parallel); the recompute kinds follow the
// reader's default SAPP coefficients. The embedding is a lookup: time 0. With a cluster
// (ShapeTimeSettings::cluster) a body layer's entry also carries its collectives: forward_time
// = FLOPs time + forward collectives, time = FLOPs time + half the backward collectives (so the
// reader's backward, 2 x time, is twice the FLOPs time plus the backward collectives); with a
// cluster whose precision is FP8, the attention's core and the LM head run at the 16-bit rate,
// as Megatron-LM runs them (shape_time.cpp, timed_entry). Not counted: the ends'
// collectives, other communication (the pipeline's and the data-parallel
// synchronisation are the search's), element-wise work (norms, softmax, activations), the causal
// mask's savings, flash attention's recomputation in backward, capacity padding.
// host_api/docs/design.md, "Times from a model shape", gives the reasons.
#ifndef PPB_PARTITION_SHAPE_TIME_HPP
#define PPB_PARTITION_SHAPE_TIME_HPP

#include <ppb/partition/cluster.hpp>
#include <ppb/partition/sharding.hpp>
#include <ppb/partition/time_model.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

struct ShapeTimeSettings {
    double device_tflops = 400.0;  // achieved dense bf16 TFLOP/s per device
    // With a cluster, each body layer's forward and backward also take its tensor-parallel
    // collectives and an MoE layer's expert all-to-all on the cluster's links
    // (ppb/partition/communication.hpp, layer_communication_ms).
    std::optional<Cluster> cluster = std::nullopt;
    // Megatron-LM's --tp-comm-overlap (Transformer Engine's userbuffers): the tensor-parallel
    // collectives run under the layer's matrix products: the cluster's exposed share of them
    // (Cluster::overlap_exposed_fraction) and what of the rest outlasts the products are waited
    // for (the expert all-to-all is not overlapped by it). Only with the shape's sequence
    // parallelism, as Megatron-LM runs it (without, --tp-comm-overlap is refused there).
    bool tp_comm_overlap = false;
    // Megatron-LM's --overlap-moe-expert-parallel-comm (the combined-1f1b schedule): each MoE
    // layer's expert all-to-all runs beside another micro-batch's pass of a layer like it, the
    // forward's under that backward's compute, the backward's under that forward's. Each costs
    // the cluster's exposed share and what of the rest outlasts the compute under it, as the
    // tensor-parallel overlap does. Every pass of the schedule is timed so, the warm-up forwards
    // and the last backwards, which run alone, too.
    bool expert_overlap = false;
};

// A SAPP layer file ({"layers_description": [...]}, with comment, pre_defined_layer and
// auto_partition_layer) whose times (ms per micro-batch) come from the shape's FLOPs. Throws
// ppb::InputError "<source>: <JSON path>: <problem>" for malformed JSON, a shape that is not an
// object, a missing required key, a value of the wrong type or range (sizes are positive
// integers), a key the shape does not have (a "did you mean"; the analytic model's memory-only
// keys are accepted and ignored), num_kv_heads > num_attention_heads, moe.top_k >
// moe.num_experts, a moe.layer_freq list of the wrong length or not of 0/1, moe.first_k_dense
// disagreeing with the list or leaving no MoE layer, group names that clash, and for
// device_tflops not finite and positive or a time beyond the layer file's range. `source`
// names the shape in messages.
[[nodiscard]] boost::json::object layer_file_from_shape(std::string_view options_json,
                                                        std::string_view source,
                                                        const ShapeTimeSettings& settings);

// That layer file read as a TimeModel (ppb::sapp::read_layer_file, then time_model()), so the
// times follow exactly the reader's rules. Throws as layer_file_from_shape().
[[nodiscard]] TimeModel time_model_from_shape(std::string_view options_json,
                                              std::string_view source,
                                              const ShapeTimeSettings& settings);

// What a configuration's transfers move, from the same shape (ppb/partition/communication.hpp
// times them). Counts are elements on one tensor-parallel rank; bytes per element are the
// shape's: activations 2 (16-bit), gradients grad_bytes (default 4), parameters param_bytes
// (default 2), as the analytic model reads them.
struct ShapeSizes {
    double tensor_parallel = 1.0;   // t
    double context_parallel = 1.0;  // cp: a sequence's tokens split over cp ranks
    bool sequence_parallel = false;
    // What the data-parallel ranks shard (ppb/partition/sharding.hpp): data_parallel_sharding,
    // else optim with distributed_optimizer, else no_shard.
    DataParallelSharding sharding = DataParallelSharding::no_shard;
    // Every sharding but no_shard gathers the weights (after the step, or per layer).
    [[nodiscard]] bool distributed_optimizer() const noexcept {
        return sharding != DataParallelSharding::no_shard;
    }
    double param_bytes = 2.0;
    double grad_bytes = 4.0;
    // One micro-batch's hidden states on a rank's cp-th of the tokens, s / cp x b x h: what a
    // layer's tensor-parallel collectives and the pipeline's transfers between stages move.
    double hidden_states = 0.0;
    // With context parallelism: the keys and values of a rank's tokens, s / cp x b x (key +
    // value channels) / t, that the attention's ring passes to the next cp rank at each step.
    double key_value_elements = 0.0;
    // The parameters each tensor-parallel rank holds and reduces over the data-parallel ranks:
    // the embedding (stage 0: V/t x h, + s x h learned positions when the shape has them), the
    // LM head (last stage: V/t x h + h; also the tied embedding's copy when p > 1).
    double embedding_parameters = 0.0;
    double lm_head_parameters = 0.0;
    double final_norm_parameters = 0.0;  // h, part of lm_head_parameters
    bool tied_embeddings = false;        // untie_embeddings false
    struct Group {
        std::string name;         // the layer file's BODY name: "body", "dense", "moe"
        double parameters = 0.0;  // one layer's, besides its routed experts, per rank
        // An MoE layer's routed experts on one rank (num_experts / expert_parallel of them,
        // sliced over expert_tensor_parallel), reduced over the expert-data-parallel ranks.
        double expert_parameters = 0.0;
        // An MoE layer's all-to-all per micro-batch and direction: the routed token copies a
        // rank sends (top_k x s x b / t tokens of h), over expert_parallel ranks.
        double routed_elements = 0.0;
    };
    std::vector<Group> groups;
    double expert_parallel = 1.0;         // EP
    double expert_tensor_parallel = 1.0;  // ETP (default t)
    // An MoE shape's experts (E) and the experts each token is routed to (k), and whether its
    // dispatcher sends a token once to each node, and each rank of its own node, that holds one
    // of its experts (moe.token_dispatcher "flex": DeepEP, HybridEP) rather than once per expert
    // ("alltoall", the default).
    double num_experts = 0.0;
    double top_k = 0.0;
    bool dispatch_once_per_node = false;
    // The model's FLOPs for one micro-batch, forward and backward (3 x the forward's matrix
    // products counted above, over all its layers and the LM head, on all t ranks together):
    // what a model-FLOPs utilisation divides; and the tokens of one micro-batch, s x b.
    double model_flops_per_micro_batch = 0.0;
    double tokens_per_micro_batch = 0.0;
};

// The sizes of the shape in `options_json`. Throws as layer_file_from_shape().
[[nodiscard]] ShapeSizes shape_sizes(std::string_view options_json, std::string_view source);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SHAPE_TIME_HPP
