// Megatron-LM's memory-relevant defaults and behaviours per release (see
// megatron_release_defaults.hpp). Every row was read from NVIDIA/Megatron-LM at the release
// commits of megatron_flags.cpp; `changed_by` was found with `git log -S` on the named file of
// main, and `git tag --contains` placed it (a change can reach a release through a cherry-pick:
// core_v0.6.0 already has e7b74a4b7e's default although the commit itself is first in
// core_v0.7.0).
//
// Checked and found unchanged across releases (no row needed for the mapping, listed in
// host_api/docs/megatron-arguments.md): the distributed optimizer's buffers (the parameter
// all-gather buffer shares the gradient buffer's storage at 23.04,
// megatron/optimizer/distrib_optimizer.py, and the parameters are views of one contiguous buffer
// later: no extra copy at any release); the vocabulary's padding rule
// (_vocab_size_with_padding: a multiple of --make-vocab-size-divisible-by times the
// tensor-parallel size at every release, which main can switch off with --no-pad-vocab-size).
#include <ppb/importers/megatron_release_defaults.hpp>

#include <algorithm>

namespace ppb::importers::megatron {
namespace {

constexpr std::string_view arguments_py =
    "megatron/training/arguments.py (megatron/arguments.py before 0.6)";

constexpr ReleaseDefault table[] = {
    // Which layers: Megatron's own ("local") or Transformer Engine's.
    {"transformer implementation", "transformer_impl", "", "2.6", "2.6", "local", "",
     "megatron/model/transformer.py (no Transformer Engine)"},
    {"transformer implementation", "transformer_impl", "--transformer-impl", "23.04", "0.5",
     "\"local\"", "3499542edd (2022-12-21)", arguments_py},
    {"transformer implementation", "transformer_impl", "--transformer-impl", "0.6", "main",
     "\"transformer_engine\"", "e7b74a4b7e (2024-04-03)", arguments_py},
    // Which GPT model pretrain_gpt.py builds.
    {"GPT model", "gpt_model", "", "2.6", "23.06", "legacy", "",
     "pretrain_gpt.py (megatron.model.GPTModel only)"},
    {"GPT model", "gpt_model", "", "0.4", "0.7", "legacy unless --use-mcore-models",
     "f3377899bc (2023-09-18)", "pretrain_gpt.py (model_provider: args.use_mcore_models)"},
    {"GPT model", "gpt_model", "", "0.8", "0.17", "core unless --use-legacy-models",
     "9ad1a56f82 (2024-05-25)", "pretrain_gpt.py (model_provider: args.use_legacy_models)"},
    {"GPT model", "gpt_model", "", "0.18", "main", "core", "39ec5ebeb4 (2026-05-06)",
     "pretrain_gpt.py (the legacy GPT code removed)"},
    // --use-flash-attn: FlashAttention in the legacy model's ParallelAttention only.
    {"--use-flash-attn in local layers", "use_flash_attn_effect", "", "23.04", "0.17",
     "legacy models only", "",
     "megatron/model/transformer.py, megatron/legacy/model/transformer.py from 0.6 "
     "(ParallelAttention.use_flash_attn); Megatron-core's local DotProductAttention never uses "
     "it"},
    {"--use-flash-attn in local layers", "use_flash_attn_effect", "", "0.18", "main", "none",
     "39ec5ebeb4 (2026-05-06)", "the legacy model removed: the flag is accepted and unused"},
    // Query-key layer scaling, which forces the softmax into fp32.
    {"query-key layer scaling", "apply_query_key_layer_scaling", "--no-query-key-layer-scaling",
     "2.6", "23.06", "true", "", arguments_py},
    {"query-key layer scaling", "apply_query_key_layer_scaling", "--apply-query-key-layer-scaling",
     "0.4", "main", "false", "94a3749f87 (2023-11-02)", arguments_py},
    // The fused masked softmax: up to which key length its kernel runs (longer sequences take
    // the PyTorch softmax, in fp32 when the softmax is in fp32).
    {"fused softmax kernel, legacy model: longest key", "legacy_softmax_max_keys", "", "2.6", "2.6",
     "2048", "", "megatron/model/fused_softmax.py (is_kernel_available)"},
    {"fused softmax kernel, legacy model: longest key", "legacy_softmax_max_keys", "", "23.04",
     "23.06", "4096", "7a77abd9b6 (2022-01-12)",
     "megatron/model/fused_softmax.py (is_kernel_available)"},
    {"fused softmax kernel, legacy model: longest key", "legacy_softmax_max_keys", "", "0.4",
     "0.17", "16384", "cd126362bb (2023-07-18)",
     "megatron/model/fused_softmax.py, megatron/legacy/model/fused_softmax.py from 0.6"},
    {"fused softmax kernel, core model: longest key", "core_softmax_max_keys", "", "0.4", "main",
     "4096", "9dce1fdbd0 (2023-03-15)", "megatron/core/fusions/fused_softmax.py"},
    {"masked softmax fusion", "masked_softmax_fusion", "--no-masked-softmax-fusion", "2.6", "main",
     "true", "", arguments_py},
    // Transformer Engine's attention backend.
    {"attention backend", "attention_backend", "", "23.04", "0.10", "Transformer Engine's choice",
     "", "Transformer Engine (NVTE_FLASH_ATTN, NVTE_FUSED_ATTN: on unless set to 0)"},
    {"attention backend", "attention_backend", "--attention-backend", "0.11", "main", "\"auto\"",
     "fa0dcc4872 (2024-12-07)", arguments_py},
    // The vocabulary of the NullTokenizer (--tokenizer-type NullTokenizer --vocab-size N).
    {"NullTokenizer vocabulary", "null_tokenizer_vocabulary", "", "23.04", "0.17", "vocab_size + 1",
     "",
     "megatron/tokenizer/tokenizer.py, megatron/training/tokenizer/tokenizer.py from 0.6, "
     "megatron/core/tokenizers/text/libraries/null_tokenizer.py from 0.15 (_NullTokenizer: "
     "the end-of-document token after the vocabulary)"},
    {"NullTokenizer vocabulary", "null_tokenizer_vocabulary", "", "0.18", "main", "vocab_size",
     "c9dfe34798 (2026-04-22)",
     "megatron/core/tokenizers/text/libraries/null_tokenizer.py (end of document = "
     "vocab_size - 1)"},
    // The vocab-parallel cross entropy's max-subtracted logits: in place, or a new tensor beside
    // the logits it is given (which stay alive through the loss's forward: one more fp32
    // logits-sized buffer at the last stage's peak).
    {"vocab-parallel cross entropy: max subtraction", "cross_entropy_subtraction", "", "2.6", "2.6",
     "in place", "", "megatron/mpu/cross_entropy.py (vocab_parallel_logits.sub_)"},
    {"vocab-parallel cross entropy: max subtraction", "cross_entropy_subtraction", "", "23.04",
     "0.7", "out of place", "55817ec9b9 (2022-09-27)",
     "megatron/core/tensor_parallel/cross_entropy.py (vocab_parallel_logits - logits_max)"},
    {"vocab-parallel cross entropy: max subtraction", "cross_entropy_subtraction", "", "0.8",
     "main", "in place", "9634c0e4a3 (2024-06-13)",
     "megatron/core/tensor_parallel/cross_entropy.py (vocab_parallel_logits -= logits_max)"},
    // The fused cross entropy.
    {"cross-entropy loss fusion", "cross_entropy_loss_fusion", "--cross-entropy-loss-fusion", "0.8",
     "main", "false", "7b4a6d76c9 (2024-06-14)", arguments_py},
    {"cross-entropy fusion implementation", "cross_entropy_fusion_impl",
     "--cross-entropy-fusion-impl", "0.12", "main", "\"native\"", "3b141a2471 (2025-04-05)",
     arguments_py},
    // Where an MoE layer's routing weights multiply the expert outputs, which sets what is kept
    // for their gradient: in the combine's unpermute (the rank's own weighted expert outputs), or
    // from 2659630721 inside the experts' activation (its output, unless the fused weighted
    // SwiGLU runs). `git tag --contains` places it first in core_v0.13.0.
    {"MoE routing weights applied", "moe_routing_weights", "", "0.4", "0.12", "combine", "",
     "megatron/core/transformer/moe/moe_utils.py (unpermute: permuted_tokens * permuted_probs)"},
    {"MoE routing weights applied", "moe_routing_weights", "", "0.13", "main", "experts",
     "2659630721 (2025-04-09)",
     "megatron/core/transformer/moe/experts.py (bias_act_func: the activation times "
     "permuted_probs)"},
    // Shape settings whose defaults held at every release (checked).
    {"position embeddings", "position_embedding_type", "--position-embedding-type", "0.4", "main",
     "\"learned_absolute\"", "c156ab1ee4 (2023-07-06)", arguments_py},
    {"rotary position embeddings", "use_rotary_position_embeddings",
     "--use-rotary-position-embeddings", "23.04", "main", "false", "", arguments_py},
    {"untied output layer", "untie_embeddings_and_output_weights",
     "--untie-embeddings-and-output-weights", "23.04", "main", "false", "", arguments_py},
    {"bias-GeLU fusion", "bias_gelu_fusion", "--no-bias-gelu-fusion", "2.6", "main", "true", "",
     arguments_py},
    {"persistent layer norm kernel", "no_persist_layer_norm", "--no-persist-layer-norm", "23.04",
     "main", "false", "", arguments_py},
    {"attention dropout", "attention_dropout", "--attention-dropout", "2.6", "main", "0.1", "",
     arguments_py},
    {"hidden dropout", "hidden_dropout", "--hidden-dropout", "2.6", "main", "0.1", "",
     arguments_py},
    {"vocabulary padding multiple", "make_vocab_size_divisible_by",
     "--make-vocab-size-divisible-by", "2.6", "main", "128", "", arguments_py},
};

ReleaseIndex index_of(std::string_view name) {
    const auto all = releases();
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].name == name)
            return static_cast<ReleaseIndex>(i);
    }
    return static_cast<ReleaseIndex>(all.size());  // never: the test checks every name
}

}  // namespace

std::span<const ReleaseDefault> release_defaults() {
    return table;
}

std::string_view release_default(std::string_view key, ReleaseIndex release) {
    const auto it = std::ranges::find_if(table, [&](const ReleaseDefault& row) {
        return row.key == key && index_of(row.first) <= release && release <= index_of(row.last);
    });
    return it == std::end(table) ? std::string_view() : it->value;
}

}  // namespace ppb::importers::megatron
