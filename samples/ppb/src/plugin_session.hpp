// What every ppb command that uses a memory model shares: where plugins are, which one the
// user selected, and an instance of it.
#ifndef PPB_PLUGIN_SESSION_HPP
#define PPB_PLUGIN_SESSION_HPP

#include "cli_args.hpp"

#include <ppb/discovery.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/memory_model.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <vector>

namespace ppb::cli {

inline constexpr std::string_view default_model = "dryrun-lsq";

// The options every plugin-using command accepts.
inline constexpr OptionSpec plugin_option_specs[] = {
    {"plugin-path", true, true},
    {"model", true, false},
    {"model-options", true, false},
};

// The search path from --plugin-path, PPB_PLUGIN_PATH and the install location; skipped
// entries are reported on stderr. PPB_DEBUG_PLUGINS=1 traces discovery on stderr.
[[nodiscard]] std::vector<PluginCandidate> discover_from_args(
    const Args& args, SearchPath* search_path_out = nullptr);

// Selects --model (default dryrun-lsq) and creates it with --model-options (JSON text, or a
// file holding it).
[[nodiscard]] MemoryModel open_selected_model(const Args& args);

// Reads FILE (the single positional argument) as ppb.dryrun/1 honouring --duplicate-tolerance.
[[nodiscard]] DryRunSet read_dryrun_argument(const Args& args, std::string& path_out);

// Reads `path` as ppb.dryrun/1 honouring --duplicate-tolerance.
[[nodiscard]] DryRunSet read_dryrun(const Args& args, const std::string& path);

struct FittedModel {
    MemoryModel model;
    boost::json::object document;  // ppb.fit/1
};

// Fits `model` to the observations read from `source`; a model's complaint about the data
// names that file.
void fit_model(MemoryModel& model, const DryRunSet& dryrun, std::string_view source);

// Opens the selected model and fits it to the observations read from `source`; a model's
// complaint about the data names that file.
[[nodiscard]] FittedModel fit_selected_model(const Args& args, const DryRunSet& dryrun,
                                             std::string_view source);

}  // namespace ppb::cli

#endif  // PPB_PLUGIN_SESSION_HPP
