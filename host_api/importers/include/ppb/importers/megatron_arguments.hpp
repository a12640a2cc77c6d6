// ppb/importers/megatron_arguments.hpp — the analytic plugin's options from a Megatron-LM run's
// own arguments (`pretrain_gpt.py --num-layers 32 --hidden-size 4096 ...`), so that nobody maps
// twenty flags by hand.
//
// The argument list is read as the run's Megatron-LM release reads it (megatron_argparse.hpp):
// every flag that release's argparse knows, with its nargs, type, choices and default; the
// release is the one the caller names, else the newest whose parser accepts the list. A flag no
// release knows, a value argparse would refuse, or flags of different releases together are
// errors before anything else is looked at. Each flag then falls in one of these classes:
//   modelled   -> read by the mapping below (table in host_api/docs/megatron-arguments.md);
//   refused    -> a run the analytic model does not cover: another model family (hybrid Mamba
//                 models, encoder-decoder, RETRO, vision, linear or experimental attention,
//                 heterogeneous layers, reinforcement learning) or a feature without a term
//                 (custom FP8 / FP4 recipes, Megatron-LM's own CUDA graphs, hybrid context
//                 parallelism):
//                 FlagError naming the flag and what it is;
//                 the newer features' flags (MLA, MTP, context parallelism, FP8 and FP4,
//                 FSDP, recompute modules, offloading) are mapped by megatron_features.cpp;
//   unmodelled -> changes memory but the model leaves it out: a warning naming it, when the run
//                 gives it a value other than its release's default;
//   neutral    -> cannot change the memory of the tensors (logging, paths, learning rate, ...),
//                 or the placement's (layers per stage, recompute): read silently.
// A known flag in none of the classes draws a warning too ("ppb does not know what it does to
// memory"), never silence.
//
// Defaults are those of the run's release (megatron_release_defaults.hpp): --transformer-impl
// local up to 0.5, the legacy GPT model up to 0.7 unless --use-mcore-models, query-key layer
// scaling on up to 23.06, the NullTokenizer's extra token up to 0.17, ... When the arguments fit
// several releases whose defaults give different options, a warning names the releases and what
// differs, and the newest release's options are written.
//
// The vocabulary is padded as Megatron-LM pads it (_vocab_size_with_padding): up to a multiple
// of --make-vocab-size-divisible-by (default 128) times the tensor-parallel size, from
// --vocab-size (the NullTokenizer adds its end-of-document token up to 0.17), the tokenizer size
// the caller gives, or GPT-2's 50 257 for GPT2BPETokenizer; --padded-vocab-size gives it whole.
#ifndef PPB_IMPORTERS_MEGATRON_ARGUMENTS_HPP
#define PPB_IMPORTERS_MEGATRON_ARGUMENTS_HPP

#include <ppb/importers/setting_words.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ppb::importers {

// What the arguments do not say: Megatron derives the data-parallel size from the world size.
struct MegatronRunContext {
    std::optional<std::uint32_t> world_size;      // ranks of the run (WORLD_SIZE)
    std::optional<std::uint32_t> tokenizer_size;  // the tokenizer's vocabulary, unpadded
    // The GPU's CUDA compute capability, major version (8 Ampere, 9 Hopper, 10 Blackwell):
    // Transformer Engine's cuBLAS workspaces are 32 MiB from 9 on, 4 MiB before.
    std::uint32_t compute_capability = 9;
    // The run's Megatron-LM release ("0.8", "core_r0.8.0", "23.04", "main"; see
    // megatron::release_named), or nullopt to recognise it from the flags.
    std::optional<std::string> megatron_version = std::nullopt;
    // Flags the run's Megatron-LM has and no release ppb knows does (a branch, a fork, a
    // script's extra_args_provider): "my-flag", "my-flag:0" (a switch), ":N", ":*", ":+"
    // (megatron::declared_flag). Read, never modelled: a warning names each one given.
    std::vector<std::string> declared_flags = {};
    // How messages name these settings: the command's flags (--world-size) or Python's keywords.
    SettingWords words = SettingWords::flags;
};

struct MegatronAnalyticOptions {
    std::string options_json;           // the analytic plugin's options, one JSON object
    std::vector<std::string> warnings;  // flags that change memory but are not modelled, ...
    std::vector<std::string> notes;     // the release whose flags and defaults were taken, why
    std::string release;                // that release ("0.8 (core_v0.8.0)")
    // The layout, for placing the stages (ppb import megatron reads the same flags).
    std::uint32_t pipeline_size = 1;
    std::uint32_t data_parallel = 1;
    std::optional<std::uint32_t> micro_batches;  // --global-batch-size / (b * d)
};

// Throws FlagError (ppb/importers/layout.hpp) for arguments the release's argparse refuses (every
// unknown flag named, with a "did you mean"), a refused run (naming the flag and what it is), a
// missing required flag, flags that contradict each other or the release named (--bf16 with
// --fp16, a world size not divisible by t * p, a flag the release does not have).
[[nodiscard]] MegatronAnalyticOptions analytic_options_from_megatron(
    std::span<const std::string> arguments, const MegatronRunContext& context);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MEGATRON_ARGUMENTS_HPP
