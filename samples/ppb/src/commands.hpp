// The ppb subcommands. Each takes the words after its name, writes its result to stdout only
// when it has fully succeeded, and reports failure by throwing (main.cpp maps exceptions to
// exit statuses).
#ifndef PPB_COMMANDS_HPP
#define PPB_COMMANDS_HPP

#include <span>
#include <string>

namespace ppb::cli {

int run_plugins(std::span<const std::string> args);
int run_fit(std::span<const std::string> args);
int run_predict(std::span<const std::string> args);
int run_partition(std::span<const std::string> args);
int run_compare(std::span<const std::string> args);
int run_import(std::span<const std::string> args);
// The child-process side of 'ppb plugins --check' (hidden command __probe-plugin).
int run_probe_plugin(std::span<const std::string> args);

}  // namespace ppb::cli

#endif  // PPB_COMMANDS_HPP
