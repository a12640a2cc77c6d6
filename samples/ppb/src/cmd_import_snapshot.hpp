// ppb import snapshot and ppb import torchtitan: their own subcommands of 'ppb import'
// (cmd_import_snapshot.cpp), the importers of what PyTorch's caching allocator reports.
#ifndef PPB_CMD_IMPORT_SNAPSHOT_HPP
#define PPB_CMD_IMPORT_SNAPSHOT_HPP

#include "cli.hpp"

namespace ppb::cli {

void add_snapshot_imports(CLI::App& import, Commands& commands);

}  // namespace ppb::cli

#endif  // PPB_CMD_IMPORT_SNAPSHOT_HPP
