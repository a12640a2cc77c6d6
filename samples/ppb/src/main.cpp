// ppb — the reference host: a command-line front end to ppb's memory-model plugins.
//
// Exit statuses (design.md §4): 0 success, 1 anything unexpected, 2 invalid input or usage,
// 3 no usable plugin / plugin failed to load / plugin failed while running, 4 no feasible
// partition. Results go to stdout only on success; diagnostics always go to stderr.
#include "cli_args.hpp"
#include "commands.hpp"

#include <ppb/abi.h>
#include <ppb/errors.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/partition/problem.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#ifndef PPB_VERSION
#define PPB_VERSION "unknown"
#endif

namespace {

constexpr int exit_ok = 0;
constexpr int exit_other = 1;
constexpr int exit_input = 2;
constexpr int exit_plugin = 3;
constexpr int exit_infeasible = 4;

constexpr std::string_view usage = R"(Usage: ppb COMMAND [ARGS...]

ppb plans pipeline-parallel training with pluggable memory models: it fits a model to a few
dry-run measurements of peak memory per stage and predicts any other placement.

Commands:
  plugins    list the memory-model plugins found and whether they can be used
  fit        fit a memory model to a dry-run file and print its parameters (MB)
  predict    fit, then predict the peak memory of one stage placement
  partition  choose layers and recompute kinds per stage under a memory limit
  compare    several models' predictions beside measured memory, with their errors
  import     build a dry-run file from MindSpore or Megatron logs and configs

Run 'ppb COMMAND --help' for a command's options.

Options:
  -h, --help     show this help
  --version      show ppb's version and plugin API

Exit status: 0 success, 2 invalid input or usage, 3 no usable plugin or a plugin failed,
4 no feasible partition, 1 anything else.
)";

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> words(argv + 1, argv + argc);
    try {
        if (words.empty()) {
            fmt::print(stderr, "{}", usage);
            return exit_input;
        }
        const std::string command = words.front();
        const std::span<const std::string> rest(words.data() + 1, words.size() - 1);
        if (command == "-h" || command == "--help" || command == "help") {
            fmt::print("{}", usage);
            return exit_ok;
        }
        if (command == "--version") {
            fmt::print("ppb {} (plugin ABI {}, API {}.{})\n", PPB_VERSION, PPB_ABI_MAJOR,
                       PPB_ABI_MAJOR, PPB_API_MINOR);
            return exit_ok;
        }
        if (command == "plugins")
            return ppb::cli::run_plugins(rest);
        if (command == "fit")
            return ppb::cli::run_fit(rest);
        if (command == "predict")
            return ppb::cli::run_predict(rest);
        if (command == "partition")
            return ppb::cli::run_partition(rest);
        if (command == "compare")
            return ppb::cli::run_compare(rest);
        if (command == "import")
            return ppb::cli::run_import(rest);
        if (command == "__probe-plugin")
            return ppb::cli::run_probe_plugin(rest);
        throw ppb::cli::UsageError(fmt::format("unknown command '{}'", command));
    } catch (const ppb::cli::UsageError& e) {
        fmt::print(stderr, "ppb: error: {}\nTry 'ppb --help'.\n", e.what());
        return exit_input;
    } catch (const ppb::InputError& e) {
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return exit_input;
    } catch (const ppb::PluginError& e) {
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return exit_plugin;
    } catch (const ppb::ModelError& e) {
        // The model refused the user's data (invalid or not determining the answer): the input
        // is at fault. Anything else is the plugin's failure.
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return e.is_input_error() ? exit_input : exit_plugin;
    } catch (const ppb::partition::Infeasible& e) {
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return exit_infeasible;
    } catch (const std::exception& e) {
        fmt::print(stderr, "ppb: internal error: {}\n", e.what());
        return exit_other;
    }
}
