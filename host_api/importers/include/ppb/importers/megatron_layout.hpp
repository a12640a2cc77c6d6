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

// Body layers per (stage, chunk) as Megatron builds them from the layout flags, or nullopt when
// none of them is given (Megatron's even split, --decoder-first/last-pipeline-num-layers and the
// virtual-pipeline flags then say it: megatron_layout()):
//   --pipeline-model-parallel-layout: the layout's decoder layers (validated as Megatron does,
//     with flags.mtp_layers; its 'm' layers are noted, not body layers);
//   --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split: the
//     embedding (loss) counted as a layer, (L + 1 [+ 1]) / P per rank, which must divide, split
//     evenly over the rank's chunks, the first (last) virtual stage holding one layer fewer.
// Conflicting flags are refused as Megatron refuses them, naming both: the layout beside
// --decoder-first/last-pipeline-num-layers, the --account-for flags or the virtual-pipeline flags;
// the --account-for flags beside --decoder-first/last-pipeline-num-layers. Result [stage][chunk].
[[nodiscard]] std::optional<std::vector<std::vector<std::uint32_t>>> megatron_layout_flag_counts(
    const MegatronFlags& flags, Messages& messages);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MEGATRON_LAYOUT_HPP
