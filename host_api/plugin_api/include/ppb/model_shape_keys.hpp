// ppb/model_shape_keys.hpp — the keys of a model shape: the analytic model's options
// (plugin/analytic/README.md), which the analytic plugin reads and the host's time model reads
// too (ppb/partition/shape_time.hpp, which refuses any other key, so that a misspelt one cannot
// change the times unnoticed). One list for both readers: the plugin's tests check that its
// option tables hold exactly these keys, and a key added to the format is added here.
#ifndef PPB_MODEL_SHAPE_KEYS_HPP
#define PPB_MODEL_SHAPE_KEYS_HPP

#include <array>
#include <string_view>

namespace ppb::model_shape {

// The shape's own keys, in the plugin's order of its options.
inline constexpr std::array<std::string_view, 53> keys = {"hidden_size",
                                                          "num_attention_heads",
                                                          "ffn_hidden_size",
                                                          "seq_length",
                                                          "micro_batch_size",
                                                          "vocab_size",
                                                          "num_layers",
                                                          "tensor_parallel",
                                                          "num_kv_heads",
                                                          "kv_channels",
                                                          "data_parallel",
                                                          "position_embeddings",
                                                          "context_parallel",
                                                          "deferred_wgrad_micro_batches",
                                                          "sequence_parallel",
                                                          "distributed_optimizer",
                                                          "gated_mlp",
                                                          "flash_attention",
                                                          "untie_embeddings",
                                                          "dropout",
                                                          "keep_gathered_inputs",
                                                          "linear_biases",
                                                          "backward_transient",
                                                          "softmax_in_fp32",
                                                          "fp8_param_gather",
                                                          "fp8_transposes",
                                                          "fused_norms",
                                                          "qk_layernorm",
                                                          "cross_entropy_loss_fusion",
                                                          "param_bytes",
                                                          "grad_bytes",
                                                          "optimizer_bytes",
                                                          "constant_mb",
                                                          "runtime_mb",
                                                          "logits_bytes",
                                                          "logits_transient_bytes",
                                                          "relative_std_error",
                                                          "activation_offload_fraction",
                                                          "optimizer_offload_fraction",
                                                          "moe",
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

// The members of "mla" (multi-latent attention).
inline constexpr std::array<std::string_view, 6> mla_keys = {"q_lora_rank", "kv_lora_rank",
                                                             "qk_head_dim", "qk_pos_emb_head_dim",
                                                             "v_head_dim",  "qk_layernorm"};

// The members of "moe" (the experts).
inline constexpr std::array<std::string_view, 17> moe_keys = {"num_experts",
                                                              "top_k",
                                                              "moe_ffn_hidden_size",
                                                              "shared_experts",
                                                              "shared_expert_ffn_hidden_size",
                                                              "shared_experts_replicated",
                                                              "expert_parallel",
                                                              "expert_tensor_parallel",
                                                              "capacity_factor",
                                                              "routing_imbalance",
                                                              "routing_weights",
                                                              "activation_fused",
                                                              "first_k_dense",
                                                              "layer_freq",
                                                              "dense_group",
                                                              "moe_group",
                                                              "token_dispatcher"};

}  // namespace ppb::model_shape

#endif  // PPB_MODEL_SHAPE_KEYS_HPP
