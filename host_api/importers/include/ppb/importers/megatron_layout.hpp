// ppb/importers/megatron_layout.hpp — Megatron-LM's --pipeline-model-parallel-layout, read as
// Megatron reads it, and the (stage, chunk) layer counts of the layout flags ppb imports.
//
// The grammar (NVIDIA/Megatron-LM, megatron/core/transformer/pipeline_parallel_layer_layout.py,
// commit 00caa53af30912914981c86f39db123961678bbd, parse_str_to_list and validate_layer_layout):
// commas are removed (they are cosmetic); then every "(body)*n" — body the characters up to the
// first ')', at least one — becomes n copies of body, left to right; then every "x*n", x any one
// character, becomes n copies of x; what remains is split at '|' into virtual stages, each a
// string of 'E' (embedding), 't' (decoder layer), 'm' (multi-token-prediction layer) and 'L'
// (loss). Virtual stage q is chunk q / P of pipeline rank q mod P (VPP-major order), so the
// layout holds a multiple of P virtual stages; a virtual stage may be empty. Megatron then
// requires, in that order: 'E' first and 'L' last, each exactly once; as many 't' as
// --num-layers; as many 'm' as --mtp-num-layers (none without it), every 'm' after every 't',
// all in one virtual stage, the last chunk of its rank.
//
// Example (Megatron's documentation, docs/source/api-guide/pipeline_parallel_layout.md):
// "Et*3|(tt|)*29,m|L" with --pipeline-model-parallel-size 16 is 32 virtual stages, two chunks per
// rank: the embedding and 3 decoder layers on chunk 0 of rank 0, 2 decoder layers on each of the
// next 29 virtual stages, the MTP layer on chunk 1 of rank 14 and the loss on chunk 1 of rank 15.
#ifndef PPB_IMPORTERS_MEGATRON_LAYOUT_HPP
#define PPB_IMPORTERS_MEGATRON_LAYOUT_HPP

#include <ppb/importers/layout.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers {

struct MegatronFlags;

// What one virtual stage holds.
struct LayoutStage {
    std::uint32_t embedding = 0;  // 'E'
    std::uint32_t decoders = 0;   // 't'
    std::uint32_t mtp = 0;        // 'm'
    std::uint32_t loss = 0;       // 'L'
    std::string layers;           // its characters, in order
    friend bool operator==(const LayoutStage&, const LayoutStage&) = default;
};

// The virtual stages of `text`, in its order, by Megatron's expansion (above). Throws FlagError
// naming --pipeline-model-parallel-layout: a character other than E, t, m, L, '|', or a layout
// that expands to more than a million characters (no real model comes near).
[[nodiscard]] std::vector<LayoutStage> parse_megatron_layout(std::string_view text);

// MindSpeed-LLM's layout flags (Ascend/MindSpeed-LLM, commit
// c77308a14bfcb1aa7ca61da9c1aa24a893cb1b91; --noop-layers from Ascend/MindSpeed, commit
// 028de58ca629d035185b00ff7d1eb7eff4f7fd48):
//   --num-layer-list "a,b,..." (mindspeed_llm/features_manager/pipeline_parallel/num_layer_list.py,
//     mindspeed_llm/training/arguments.py core_transformer_config_from_args_wrapper and
//     mindspeed_llm/core/transformer/transformer_block.py get_num_layers_to_build): stage s builds
//     the s-th count (Python's int() of each comma-separated item), its layers following the
//     earlier stages'; MindSpeed-LLM requires one count per stage, a pipeline of 2 or more stages,
//     no --num-layers-per-virtual-pipeline-stage, and counts summing to --num-layers;
//   --noop-layers "i,j,..." (mindspeed/features_manager/pipeline_parallel/noop_layers.py): a set
//     of 0-based layer indices, each digits only and below --num-layers; those layers are built as
//     NoopTransformerLayer (no weights, the input passed through). MindSpeed refuses it beside
//     --pipeline-model-parallel-layout, and MindSpeed-LLM drops --num-layer-list when it is given.
// The dump prints them as str(): "7,9,10" (or a list "[7, 9, 10]"), and the no-op layers, once
// validated, as a set "{61, 62, 63}" — both read here. `source` names the flag, or where the
// log states it, in messages. Throw FlagError.
[[nodiscard]] std::vector<std::uint32_t> parse_num_layer_list(std::string_view text,
                                                              std::string_view source);
// Sorted, each index once; `num_layers` bounds them.
[[nodiscard]] std::vector<std::uint32_t> parse_noop_layers(std::string_view text,
                                                           std::uint32_t num_layers,
                                                           std::string_view source);

// Body layers per (stage, chunk) as Megatron builds them from the layout flags, or nullopt when
// none of them is given (Megatron's even split, --decoder-first/last-pipeline-num-layers and the
// virtual-pipeline flags then say it: megatron_layout()):
//   --pipeline-model-parallel-layout: the layout's decoder layers (validated as Megatron does,
//     with flags.mtp_layers; its 'm' layers are noted, not body layers);
//   --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split: the
//     embedding (loss) counted as a layer, (L + 1 [+ 1]) / P per rank, which must divide, split
//     evenly over the rank's chunks, the first (last) virtual stage holding one layer fewer.
//   --num-layer-list (MindSpeed-LLM): each stage's count, one chunk per stage, checked as
//     MindSpeed-LLM checks it; refused, naming both, beside the layout, the first/last, the
//     --account-for and the virtual-pipeline flags, which say the stages' layers too
//     (MindSpeed-LLM's get_num_layers_to_build takes the list and ignores them, or gives every
//     chunk the stage's whole count).
// Conflicting flags are refused as Megatron refuses them, naming both: the layout beside
// --decoder-first/last-pipeline-num-layers, the --account-for flags or the virtual-pipeline flags;
// the --account-for flags beside --decoder-first/last-pipeline-num-layers. Result [stage][chunk].
[[nodiscard]] std::optional<std::vector<std::vector<std::uint32_t>>> megatron_layout_flag_counts(
    const MegatronFlags& flags, Messages& messages);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MEGATRON_LAYOUT_HPP
