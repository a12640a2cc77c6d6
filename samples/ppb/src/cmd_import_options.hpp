// ppb import megatron-options and mindformers-options: their own subcommands of 'ppb import',
// declared apart from the log importers (cmd_import.cpp) so that each keeps its own argument
// parsing.
#ifndef PPB_CMD_IMPORT_OPTIONS_HPP
#define PPB_CMD_IMPORT_OPTIONS_HPP

#include "cli.hpp"

namespace ppb::cli {

void add_megatron_options(CLI::App& import, Commands& commands);
void add_mindformers_options(CLI::App& import, Commands& commands);
void add_torchtitan_options(CLI::App& import, Commands& commands);

}  // namespace ppb::cli

#endif  // PPB_CMD_IMPORT_OPTIONS_HPP
