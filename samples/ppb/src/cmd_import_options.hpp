// ppb import megatron-options: its own subcommand of 'ppb import', declared apart from the log
// importers (cmd_import.cpp) so that each keeps its own argument parsing.
#ifndef PPB_CMD_IMPORT_OPTIONS_HPP
#define PPB_CMD_IMPORT_OPTIONS_HPP

#include "cli.hpp"

namespace ppb::cli {

void add_megatron_options(CLI::App& import, Commands& commands);

}  // namespace ppb::cli

#endif  // PPB_CMD_IMPORT_OPTIONS_HPP
