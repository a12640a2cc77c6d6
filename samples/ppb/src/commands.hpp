// The ppb subcommands. Each declares its options on a CLI11 subcommand of `app` and adds what
// runs it to `commands`. A command writes its result to stdout only when it has fully
// succeeded, and reports failure by throwing (main.cpp maps exceptions to exit statuses).
#ifndef PPB_COMMANDS_HPP
#define PPB_COMMANDS_HPP

#include "cli.hpp"

namespace ppb::cli {

void add_plugins_command(CLI::App& app, Commands& commands);
void add_fit_command(CLI::App& app, Commands& commands);
void add_predict_command(CLI::App& app, Commands& commands);
void add_partition_command(CLI::App& app, Commands& commands);
void add_compare_command(CLI::App& app, Commands& commands);
void add_import_command(CLI::App& app, Commands& commands);
void add_simulate_command(CLI::App& app, Commands& commands);
void add_search_command(CLI::App& app, Commands& commands);
void add_design_command(CLI::App& app, Commands& commands);
void add_devices_command(CLI::App& app, Commands& commands);
// The child-process side of 'ppb plugins --check' (hidden command __probe-plugin).
void add_probe_plugin_command(CLI::App& app, Commands& commands);

}  // namespace ppb::cli

#endif  // PPB_COMMANDS_HPP
