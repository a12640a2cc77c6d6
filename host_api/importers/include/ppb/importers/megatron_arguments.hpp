// ppb/importers/megatron_arguments.hpp — the analytic plugin's options from a Megatron-LM run's
// own arguments (`pretrain_gpt.py --num-layers 32 --hidden-size 4096 ...`), so that nobody maps
// twenty flags by hand.
//
// The argument list is read as Megatron's argparse reads it: "--flag value", "--flag=value", or
// "--flag" alone for a switch (a token that does not start with "--" after a flag is its value).
// Each flag falls in one of four classes:
//   modelled   -> an analytic option (table in host_api/docs/megatron-arguments.md);
//   refused    -> a run the analytic model does not cover (custom FP8 recipes, CUDA
//                 graphs): FlagError naming it;
//   unmodelled -> changes memory but the model leaves it out: a warning naming it;
//   neutral    -> known not to change the memory of the tensors (logging, paths, learning
//                 rate, ...): accepted silently.
// A flag in none of the classes draws a warning too ("not known to ppb"), never silence.
//
// The vocabulary is padded as Megatron-LM pads it (megatron/training/tokenizer/tokenizer.py,
// _vocab_size_with_padding): up to a multiple of --make-vocab-size-divisible-by (default 128)
// times the tensor-parallel size, from --vocab-size (NullTokenizer adds its end-of-document
// token: vocab_size + 1), the tokenizer size the caller gives, or GPT-2's 50 257 for
// GPT2BPETokenizer.
#ifndef PPB_IMPORTERS_MEGATRON_ARGUMENTS_HPP
#define PPB_IMPORTERS_MEGATRON_ARGUMENTS_HPP

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
};

struct MegatronAnalyticOptions {
    std::string options_json;           // the analytic plugin's options, one JSON object
    std::vector<std::string> warnings;  // flags that change memory but are not modelled, ...
    // The layout, for placing the stages (ppb import megatron reads the same flags).
    std::uint32_t pipeline_size = 1;
    std::uint32_t data_parallel = 1;
    std::optional<std::uint32_t> micro_batches;  // --global-batch-size / (b * d)
};

// Throws FlagError (ppb/importers/logs.hpp) naming the flag for a refused run, a missing
// required flag, a value that is not a number where one is needed, or flags that contradict
// each other (--bf16 with --fp16, a world size not divisible by t * p).
[[nodiscard]] MegatronAnalyticOptions analytic_options_from_megatron(
    std::span<const std::string> arguments, const MegatronRunContext& context);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MEGATRON_ARGUMENTS_HPP
