// What a Megatron-LM flag that the analytic mapping does not read means for memory: the curated
// half of 'ppb import megatron-options' (megatron_flags.hpp says which flags exist; the mapping,
// megatron_arguments.cpp, reads the ones it models). Internal to ppb_importers.
//
//   neutral     cannot change the memory of the tensors on the GPU: logging, data and checkpoint
//               paths, learning-rate schedules, seeds, inference-only settings, communication
//               settings that reuse the same buffers, ... Read silently.
//   layout      the placement's: layers per stage and recompute (ppb predict / partition take
//               them from 'ppb import megatron' or the command line). Read silently.
//   unmodelled  changes memory in a way the analytic model leaves out: named on stderr, with the
//               reason, when the run gives it a value other than the release's default.
// A flag in none of these draws the generic warning (Megatron-LM has it, ppb does not know what
// it does to memory), never silence.
#ifndef PPB_IMPORTERS_SRC_MEGATRON_FLAG_ROLES_HPP
#define PPB_IMPORTERS_SRC_MEGATRON_FLAG_ROLES_HPP

#include <optional>
#include <string_view>

namespace ppb::importers::detail {

enum class MegatronFlagRole { neutral, layout, unmodelled };

struct MegatronFlagRoleOf {
    MegatronFlagRole role;
    std::string_view reason;  // for unmodelled flags: what changes
};

// The role of `flag` ("--log-interval"), nullopt for a flag the lists do not classify.
[[nodiscard]] std::optional<MegatronFlagRoleOf> megatron_flag_role(std::string_view flag);

}  // namespace ppb::importers::detail

#endif  // PPB_IMPORTERS_SRC_MEGATRON_FLAG_ROLES_HPP
