// What every ppb command that uses a memory model shares: where plugins are, which one the
// user selected, an instance of it, and the observations it is fitted to.
#ifndef PPB_PLUGIN_SESSION_HPP
#define PPB_PLUGIN_SESSION_HPP

#include "cli_args.hpp"

#include <ppb/discovery.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/memory_model.hpp>

#include <boost/json/object.hpp>

#include <optional>
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

// `text` as options for a model: a JSON object as it is, otherwise the contents of that file.
// `what` names the option in messages.
[[nodiscard]] std::string options_text(const std::string& text, std::string_view what);

// Opens the model `spec` (NAME[@VERSION]) with the given options, from the plugins that
// `candidates` lists.
[[nodiscard]] MemoryModel open_model_spec(const std::vector<PluginCandidate>& candidates,
                                          std::string_view spec, const std::string& options);

// Selects --model (default dryrun-lsq) and creates it with --model-options.
[[nodiscard]] MemoryModel open_selected_model(const Args& args);

// Reads FILE (the single positional argument) as ppb.dryrun/1 honouring --duplicate-tolerance.
[[nodiscard]] DryRunSet read_dryrun_argument(const Args& args, std::string& path_out);

// Reads `path` as ppb.dryrun/1 honouring --duplicate-tolerance.
[[nodiscard]] DryRunSet read_dryrun(const Args& args, const std::string& path);

// Fits `model` to the observations read from `source`; a model's complaint about the data
// names that file.
void fit_model(MemoryModel& model, const DryRunSet& dryrun, std::string_view source);

// A model ready to predict, and a phrase saying where its numbers come from.
struct PreparedModel {
    MemoryModel model;
    std::string source;  // "fitted to 13 observations of FILE" or "configured by its options"
};

// Fits a model that needs observations to `dryrun` (an error when there is none); a model
// configured by its options is used as it is. `how` says how to give observations, for the
// error message ("a dry-run FILE", "--dryrun FILE").
[[nodiscard]] PreparedModel prepare_model(MemoryModel model, const DryRunSet* dryrun,
                                          const std::string& dryrun_path, std::string_view how);

struct FittedModel {
    MemoryModel model;
    boost::json::object document;  // ppb.fit/1
};

// Opens the selected model and fits it to the observations read from `source` (`ppb fit`):
// a model configured by its options, not fitted, is a usage error.
[[nodiscard]] FittedModel fit_selected_model(const Args& args, const DryRunSet& dryrun,
                                             std::string_view source);

}  // namespace ppb::cli

#endif  // PPB_PLUGIN_SESSION_HPP
