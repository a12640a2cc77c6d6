// Megatron-LM's layout flags on a 'ppb import' command line, as Megatron spells them: declared
// once for every importer that places Megatron's ranks (ppb import megatron, snapshot,
// torchtitan), into importers::MegatronFlags (ppb/importers/megatron.hpp reads them).
#ifndef PPB_MEGATRON_LAYOUT_OPTIONS_HPP
#define PPB_MEGATRON_LAYOUT_OPTIONS_HPP

#include "cli.hpp"

#include <ppb/importers/megatron.hpp>

#include <string>

namespace ppb::cli {

// Declares the layout flags in the help group `group`, the MoE flags in `moe_group`; with
// `from_logs`, the help says that a flag left out takes the logs' value.
void add_megatron_layout_options(CLI::App& app, importers::MegatronFlags& flags,
                                 const std::string& group, const std::string& moe_group,
                                 bool from_logs);

}  // namespace ppb::cli

#endif  // PPB_MEGATRON_LAYOUT_OPTIONS_HPP
