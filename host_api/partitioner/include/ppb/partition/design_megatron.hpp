// ppb/partition/design_megatron.hpp — the Megatron-LM flags of a designed dry run: the pipeline
// degree, the layers, every stage's layers as --pipeline-model-parallel-layout (Megatron-LM's
// grammar: E embedding, t decoder layer, L loss, '|' between stages, "t*n" for n layers), and the
// run's one recompute setting. `ppb import megatron` reads the same flags back.
#ifndef PPB_PARTITION_DESIGN_MEGATRON_HPP
#define PPB_PARTITION_DESIGN_MEGATRON_HPP

#include <ppb/partition/design.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ppb::partition {

// The one Megatron setting that gives every stage of `run` its kinds, or nullopt when none does
// (a stage mixing kinds otherwise than 'full' first layers and 'none', stages that differ).
[[nodiscard]] std::optional<MegatronRecompute> megatron_setting_of(const DesignRun& run);

// The run's flags, or nullopt when Megatron cannot run it (megatron_setting_of), written by the
// plan writers of ppb/partition/framework_args.hpp (megatron_layout_string,
// megatron_recompute_args). Full recompute of every layer is the uniform method; block recompute
// of the first N layers the block method.
[[nodiscard]] std::optional<std::vector<std::string>> megatron_design_args(
    const DesignRun& run, std::uint32_t num_layers);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_DESIGN_MEGATRON_HPP
