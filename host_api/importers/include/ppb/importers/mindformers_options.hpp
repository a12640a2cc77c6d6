// ppb/importers/mindformers_options.hpp — the analytic plugin's options from a MindFormers
// training YAML (the file `run_mindformer.py --config` takes), as ppb/importers/
// megatron_arguments.hpp builds them from Megatron-LM's arguments.
//
// The keys read, where MindFormers keeps them (configs/llama2/pretrain_llama2_7b.yaml and
// research/llama3_1/llama3_1_70b/finetune_llama3_1_70b.yaml of mindspore-lab/mindformers at
// commit 0e67b43f701a07bc73c9af4321757f778b0e29d0 show them all):
//   model.model_config.{num_layers, hidden_size, num_heads, n_kv_heads, seq_length, vocab_size,
//                       intermediate_size | ffn_dim_multiplier + multiple_of, use_flash_attention,
//                       compute_dtype, param_init_type, tie_word_embeddings, dropout rates}
//   parallel_config.{data_parallel, model_parallel, pipeline_stage, micro_batch_num,
//                    use_seq_parallel, optimizer_shard, context_parallel}
//   parallel.enable_parallel_optimizer, runner_config.batch_size (the micro-batch size),
//   optimizer.type.
// Each model setting under every name MindFormers reads it by (its current configurations'
// HuggingFace names num_hidden_layers, num_attention_heads, num_key_value_heads, ...; GLM-4's
// ChatGLM2Config names padded_vocab_size, multi_query_group_num): src/mindformers_keys.hpp,
// which also says when the model is MoE. Two names of one setting that disagree are refused.
// Each key falls in one of four classes, as Megatron's flags do:
//   modelled   -> an analytic option (table in host_api/docs/mindformers-options.md);
//   features   -> mixture of experts (wherever MindFormers builds experts), multi-latent
//                 attention, multi-token prediction and context parallelism, each as the classic
//                 models (models/llama, research/deepseek3) or the current ones
//                 (parallel_core) build it: the analytic model's moe, mla, mtp_num_layers,
//                 context_parallel and cp_comm_type (mindformers_options.cpp says how);
//   refused    -> what MindFormers itself refuses (hybrid_cp in the current models, more than
//                 one MTP layer there, more experts chosen than there are): InputError naming
//                 the key and its line;
//   unmodelled -> changes memory but the model leaves it out (vocab_emb_dp with model
//                 parallelism, fine-grained interleave, recompute_slice_activation, ...): a
//                 warning naming it;
//   neutral    -> known not to change memory (token ids, norm epsilon, decoding settings, ...).
// A model.model_config key in none of the classes draws a warning ("not known to ppb"); the
// file's other sections (datasets, callbacks, learning rate, ...) are not read.
//
// The FFN width without intermediate_size is MindFormers' LlamaFeedForward rule
// (mindformers/models/llama/llama_layer.py at commit 01982a667b3df58746ae064ad5665dc06c6c659d):
// from 4h, int((ffn_dim_multiplier + 0.01) * 4h) when a multiplier is given, then int(2/3 of
// it), rounded up to a multiple of multiple_of (default 256). The model is LLaMA-shaped: gated
// (SwiGLU) MLP, rotary positions, no linear biases, RMSNorm.
//
// The recompute settings (recompute_config) and offsets describe the placement, not the model:
// 'ppb import mindspore --config' reads them, 'ppb predict --layers' takes them.
#ifndef PPB_IMPORTERS_MINDFORMERS_OPTIONS_HPP
#define PPB_IMPORTERS_MINDFORMERS_OPTIONS_HPP

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ppb::importers {

struct MindFormersAnalyticOptions {
    std::string options_json;           // the analytic plugin's options, one JSON object
    std::vector<std::string> warnings;  // keys that change memory but are not modelled, ...
    // The layout, for placing the stages.
    std::uint32_t pipeline_size = 1;  // parallel_config.pipeline_stage
    std::uint32_t data_parallel = 1;  // parallel_config.data_parallel
    std::uint32_t micro_batches = 1;  // parallel_config.micro_batch_num
    std::uint32_t chunks = 1;         // model.model_config.pp_interleave_num
    // MTP layers (mtp_depth): on the last stage besides its body layers; MindFormers' offsets
    // count them among the stage's layers.
    std::uint32_t mtp_layers = 0;
};

// Throws InputError naming the file, line and key for a refused run, a missing required key, a
// value of the wrong kind, or a file that is not a MindFormers training YAML.
[[nodiscard]] MindFormersAnalyticOptions analytic_options_from_mindformers(
    const std::filesystem::path& config);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MINDFORMERS_OPTIONS_HPP
