// What every ppb command that uses a memory model shares: where plugins are, which one the
// user selected, an instance of it, and the observations it is fitted to.
#ifndef PPB_PLUGIN_SESSION_HPP
#define PPB_PLUGIN_SESSION_HPP

#include "cli.hpp"

#include <ppb/discovery.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/model_session.hpp>
#include <ppb/reserve_fit.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ppb::cli {

inline constexpr std::string_view default_model = "dryrun-lsq";

// What selects and configures the memory model: --plugin-path, --model, --model-options.
struct ModelChoice {
    std::vector<std::string> plugin_paths;
    std::string model{default_model};  // NAME[@VERSION]
    std::string options;               // JSON text or a file holding it; empty: none
};

// Declares --plugin-path DIR (repeatable) on `app`.
void add_plugin_path_option(CLI::App& app, std::vector<std::string>& paths);
// Declares --model, --model-options and --plugin-path on `app`.
void add_model_options(CLI::App& app, ModelChoice& choice);
// Declares the dry-run FILE argument ('-' reads stdin) on `app`.
CLI::Option* add_dryrun_file_argument(CLI::App& app, std::string& file);
// Declares --duplicate-tolerance X on `app`.
void add_duplicate_tolerance_option(CLI::App& app, DryRunReadOptions& options);
// Checks NAME[@VERSION] (the part before any '=').
[[nodiscard]] CLI::Validator model_spec();

// The search path from --plugin-path, PPB_PLUGIN_PATH and the install location; skipped
// entries are reported on stderr. PPB_DEBUG_PLUGINS=1 traces discovery on stderr.
[[nodiscard]] std::vector<PluginCandidate> discover_from_args(
    const std::vector<std::string>& plugin_paths, SearchPath* search_path_out = nullptr);

// Options for a model: the JSON text, and the file it came from (empty when given inline).
struct ModelOptions {
    std::string json = "{}";
    std::string file;
};

// `text` as options for a model: a JSON object as it is, otherwise the contents of that file
// (a directory, a missing or unreadable file: an error naming the path and why). `what` names
// the option in messages.
[[nodiscard]] ModelOptions options_text(const std::string& text, std::string_view what);

// Opens the model `spec` (NAME[@VERSION]) with the given options, from the plugins that
// `candidates` lists. The plugin's complaints about options read from a file name the file.
[[nodiscard]] MemoryModel open_model_spec(const std::vector<PluginCandidate>& candidates,
                                          std::string_view spec, const ModelOptions& options);

// Selects --model (default dryrun-lsq) and creates it with --model-options.
[[nodiscard]] MemoryModel open_selected_model(const ModelChoice& choice);

// Reads `path` as ppb.dryrun/1; none when `path` is empty.
[[nodiscard]] std::optional<DryRunSet> read_optional_dryrun(const std::string& path,
                                                            const DryRunReadOptions& options);

// Fits a model to a dry-run file: ppb::fit_model (ppb/model_session.hpp).
using ppb::fit_model;

// A model ready to predict, and a phrase saying where its numbers come from.
struct PreparedModel {
    MemoryModel model;
    std::string source;  // "fitted to 13 observations of FILE" or "configured by its options"
    // The allocator reserve fitted to the observations that give reserved_mb
    // (ppb/reserve_fit.hpp), whether or not the model predicts reserved memory with it
    // (model.basis() says).
    std::optional<AllocatorReserve> reserve;
};

// Which memory a command plans or predicts: --memory allocated|reserved, or neither given.
enum class BasisChoice { automatic, allocated, reserved };

// Declares --memory allocated|reserved on `app` (`what` completes "plan against ...").
void add_memory_basis_option(CLI::App& app, BasisChoice& choice, std::string_view what);

// Fits a model that needs observations to `dryrun` (an error when there is none); a model
// configured by its options is used as it is. `how` says how to give observations, for the
// error message ("a dry-run FILE", "--dryrun FILE"). With observations that give reserved_mb
// the allocator reserve is fitted too (PreparedModel::reserve); `basis` says whether the model
// then predicts reserved memory: automatic does when the reserve was fitted (and says so on
// stderr), reserved must have it (a usage error otherwise), allocated never does.
[[nodiscard]] PreparedModel prepare_model(MemoryModel model, const DryRunSet* dryrun,
                                          const std::string& dryrun_path, std::string_view how,
                                          BasisChoice basis = BasisChoice::allocated);

// Opens the selected model and prepares it (prepare_model): the steps 'ppb predict' and
// 'ppb partition' share once the command line is checked.
[[nodiscard]] PreparedModel prepare_selected_model(const ModelChoice& choice,
                                                   const std::optional<DryRunSet>& dryrun,
                                                   const std::string& dryrun_path,
                                                   std::string_view how,
                                                   BasisChoice basis = BasisChoice::allocated);

struct FittedModel {
    MemoryModel model;
    boost::json::object document;  // ppb.fit/1
};

// Opens the selected model and fits it to the observations read from `source` (`ppb fit`):
// a model configured by its options, not fitted, is a usage error.
[[nodiscard]] FittedModel fit_selected_model(const ModelChoice& choice, const DryRunSet& dryrun,
                                             std::string_view source);

}  // namespace ppb::cli

#endif  // PPB_PLUGIN_SESSION_HPP
