// MindFormers' model configuration keys as MindFormers reads them: the several names one setting
// goes by, and which models it builds experts (MoE layers) for. The one owner of these rules for
// 'ppb import mindformers-options' (mindformers_options.cpp) and 'ppb import mindspore --config'
// (mindspore.cpp). Internal to ppb_importers.
//
// Spellings. MindFormers' current ("mcore") models turn the model configuration into a
// TransformerConfig through one table, COMMON_CONFIG_MAPPING (mindspore-lab/mindformers,
// mindformers/parallel_core/transformer_config_utils.py at commit
// f52743ca27a5a8af5fbc77c5b2037c1147c7004c), in which the HuggingFace names of the current
// configurations (configs/qwen3/pretrain_qwen3_32b_4k.yaml: num_hidden_layers,
// num_attention_heads, num_key_value_heads, intermediate_size, params_dtype, ...) and the older
// names of the LLaMA-style configurations (num_layers, num_heads, n_kv_heads, param_init_type,
// ...) map to one field. GLM-4's training configuration (configs/glm4/finetune_glm4_9b.yaml,
// ChatGLM2Config in mindformers/models/glm2/glm2_config.py at the same commit) names the
// vocabulary padded_vocab_size (its vocab_size is set from it) and the key/value heads
// multi_query_group_num, which ChatGLM2Config takes as n_kv_heads when multi_query_attention is
// on (its default). MindFormers' converter refuses two names of one field given together
// ("Multiple Config"); ppb reads any of them, takes several that agree, and refuses several that
// disagree naming both keys, both values and both lines.
//
// Experts. MindFormers builds MoE layers when the model's expert count is set:
// TransformerConfig.num_moe_experts (from num_experts, num_moe_experts, n_routed_experts or
// expert_num; mindformers/parallel_core/training_graph/base_models/gpt/gpt_layer_specs.py,
// get_mlp_module_spec: no count, a dense MLP), and the classic models' moe_config.expert_num
// (MoEConfig: expert_num 1, its default, is no experts). moe_config's keys are the model's for the
// mcore models (mindformers/models/build_model.py merges the section into the model's settings),
// so each MoE setting is read from moe_config and from the model's section, the spellings agreeing.
// A model type whose configuration class builds experts by default is MoE without a count
// (configuration_qwen3_moe.py: Qwen3MoeConfig num_experts=128; configuration_deepseek_v3.py:
// DeepseekV3Config n_routed_experts=256, first_k_dense_replace=3; configuration_glm4_moe.py:
// Glm4MoeConfig n_routed_experts=128, first_k_dense_replace=1), and so is a model section giving a
// setting only experts have (moe_intermediate_size, num_experts_per_tok, n_shared_experts, ...)
// without a count: the count then comes from the model's own files (pretrained_model_dir), which
// ppb does not read.
#ifndef PPB_IMPORTERS_SRC_MINDFORMERS_KEYS_HPP
#define PPB_IMPORTERS_SRC_MINDFORMERS_KEYS_HPP

#include "yaml_config.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers::detail {

// The names of one setting, the name ppb's messages use first (COMMON_CONFIG_MAPPING's keys of
// one field, in the order: the older name, the HuggingFace name, the others).
namespace spellings {
inline constexpr std::array<std::string_view, 3> num_layers = {"num_layers", "num_hidden_layers",
                                                               "n_layer"};
inline constexpr std::array<std::string_view, 3> num_heads = {"num_heads", "num_attention_heads",
                                                              "n_head"};
inline constexpr std::array<std::string_view, 3> kv_heads = {"n_kv_heads", "num_key_value_heads",
                                                             "num_query_groups"};
inline constexpr std::array<std::string_view, 2> ffn_width = {"intermediate_size",
                                                              "ffn_hidden_size"};
inline constexpr std::array<std::string_view, 2> vocab = {"vocab_size", "padded_vocab_size"};
inline constexpr std::array<std::string_view, 2> head_dim = {"head_dim", "kv_channels"};
inline constexpr std::array<std::string_view, 2> param_dtype = {"param_init_type", "params_dtype"};
inline constexpr std::array<std::string_view, 3> qkv_bias = {"qkv_has_bias", "attention_bias",
                                                             "add_qkv_bias"};
inline constexpr std::array<std::string_view, 2> qk_norm = {"qk_layernorm", "use_qk_norm"};
inline constexpr std::array<std::string_view, 3> mtp_layers = {
    "mtp_depth", "num_nextn_predict_layers", "mtp_num_layers"};
inline constexpr std::array<std::string_view, 2> chunks = {"pp_interleave_num",
                                                           "virtual_pipeline_model_parallel_size"};
inline constexpr std::array<std::string_view, 4> experts = {"expert_num", "num_experts",
                                                            "num_moe_experts", "n_routed_experts"};
inline constexpr std::array<std::string_view, 3> experts_chosen = {
    "num_experts_chosen", "num_experts_per_tok", "moe_router_topk"};
inline constexpr std::array<std::string_view, 1> first_k_dense = {"first_k_dense_replace"};
inline constexpr std::array<std::string_view, 1> moe_layer_freq = {"moe_layer_freq"};
inline constexpr std::array<std::string_view, 2> expert_inner = {"moe_intermediate_size",
                                                                 "moe_ffn_hidden_size"};
inline constexpr std::array<std::string_view, 2> shared_experts = {"n_shared_experts",
                                                                   "shared_expert_num"};
inline constexpr std::array<std::string_view, 1> shared_inner = {
    "moe_shared_expert_intermediate_size"};
inline constexpr std::array<std::string_view, 2> capacity_factor = {"capacity_factor",
                                                                    "moe_expert_capacity_factor"};
inline constexpr std::array<std::string_view, 2> mla_qk_head = {"qk_nope_head_dim", "qk_head_dim"};
inline constexpr std::array<std::string_view, 2> mla_rope_head = {"qk_rope_head_dim",
                                                                  "qk_pos_emb_head_dim"};
// Settings only MoE layers have (shapes of the experts), besides the count.
inline constexpr std::array<std::string_view, 7> expert_shape = {
    "moe_intermediate_size",
    "moe_ffn_hidden_size",
    "num_experts_per_tok",
    "moe_router_topk",
    "n_shared_experts",
    "shared_expert_num",
    "moe_shared_expert_intermediate_size"};
}  // namespace spellings

// A key path in the configuration: {"model", "model_config"}.
using KeyPath = std::vector<std::string_view>;

// Where MindFormers keeps the model's settings: model.model_config in the training YAML, and
// model_config in the newer (LLMTrainer) layout.
[[nodiscard]] std::span<const KeyPath> model_sections();
// Where the MoE settings are: moe_config, then the model's sections.
[[nodiscard]] std::span<const KeyPath> moe_sections();

// The setting that `names` give in `sections` of `config`: absent when no name is given (a null
// value is not given), the one given, or the first (sections, then names, in order) of several
// that agree. Several that disagree are an InputError naming both keys, their values and lines:
// "<file>:<line>: model.model_config.num_layers is 32, but <file>:<line>:
// model.model_config.num_hidden_layers is 40: MindFormers reads both as <meaning>; ...".
[[nodiscard]] Setting spelled(const Config& config, std::span<const KeyPath> sections,
                              std::span<const std::string_view> names, std::string_view meaning);

// The InputError for two settings of one meaning that disagree.
[[noreturn]] void spellings_disagree(const Setting& a, const Setting& b, std::string_view meaning);

// "model.model_config.num_layers (or num_hidden_layers, n_layer)", for messages about a missing
// setting.
[[nodiscard]] std::string spelled_path(std::span<const std::string_view> names);

// The value of a setting as the file writes it ("40", "[1, 0]"), for messages.
[[nodiscard]] std::string value_text(const Setting& setting);

// Whether MindFormers builds experts for the model, and from what.
struct Experts {
    bool moe = false;
    Setting because;                     // the key that makes the model MoE (or absent: dense)
    std::string why;                     // "128 experts per MoE layer", for messages after the key
    std::optional<std::uint32_t> count;  // experts per MoE layer, when the configuration says
    std::string count_name;              // the key the count is read from ("num_experts")
    // The model type builds every layer as an MoE layer whatever first_k_dense_replace and
    // moe_layer_freq say (MindFormers' Qwen3-MoE: modeling_qwen3_moe_train.py builds its decoder
    // from one layer spec).
    bool every_layer = false;
    std::optional<std::uint32_t> first_k_default;  // the model type's first_k_dense_replace
    // The model type's num_experts_per_tok, moe_intermediate_size and n_shared_experts.
    std::optional<std::uint32_t> experts_chosen_default;
    std::optional<std::uint32_t> expert_inner_default;
    std::optional<std::uint32_t> shared_experts_default;
    std::string model_type;  // for messages
};

// The experts of the model of `config` (may be null: flags only) whose expert count is `count`:
// a flag, or spelled(..., spellings::experts, ...); absent when neither gives it. A count above
// 1 makes the model MoE and one of 1 or less dense, whatever else the file says.
[[nodiscard]] Experts model_experts(const Config* config, const Setting& count);

// "--expert-num" for a flag, "<file>:<line>: moe_config.expert_num" for a key: where a setting
// came from, for messages.
[[nodiscard]] std::string source_of(const Setting& setting);

// Which layers of a model with `experts` are MoE layers, by MindFormers' rule (mindspore-lab/
// mindformers at commit f52743ca27a5a8af5fbc77c5b2037c1147c7004c: mindformers/parallel_core/
// training_graph/base_models/gpt/gpt_layer_specs.py get_gpt_decoder_block_spec, and
// transformer_config.py TransformerConfig.__post_init__; the classic DeepSeek models build a dense
// FFN for layer_id < first_k_dense_replace): the first first_k_dense_replace layers dense and the
// others MoE when it is above 0 (the model type's default when absent), else by moe_layer_freq
// (default 1: every layer MoE). first_k_dense_replace with moe_layer_freq above 1, or with a list
// other than its own pattern, is refused as MindFormers refuses it, and so are either of them
// without experts. A model type that builds every layer as an MoE layer (Qwen3-MoE:
// modeling_qwen3_moe_train.py has one layer spec) does so whatever they, and the HuggingFace keys
// `ignored_hf` (decoder_sparse_step, mlp_only_layers), say: noted.
struct MoeLayers {
    std::vector<bool> is_moe;        // per layer in model order; empty without experts
    std::string placement;           // "the first 3 layers dense (...), the other 58 MoE", or
                                     // empty when every layer is an MoE layer
    std::vector<std::string> notes;  // settings given but not used
};
[[nodiscard]] MoeLayers moe_layers(const Experts& experts, const Setting& first_k,
                                   const Setting& freq, std::span<const Setting> ignored_hf,
                                   std::uint32_t num_layers, std::string_view count_text);

}  // namespace ppb::importers::detail

#endif  // PPB_IMPORTERS_SRC_MINDFORMERS_KEYS_HPP
