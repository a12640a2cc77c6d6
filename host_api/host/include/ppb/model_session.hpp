// ppb/model_session.hpp — the steps every host that uses a memory model shares, whatever its
// interface (the ppb command, the Python module): opening the model the user named and fitting it
// to a dry-run file, with the file's name in the model's complaints about its data.
#ifndef PPB_MODEL_SESSION_HPP
#define PPB_MODEL_SESSION_HPP

#include <ppb/discovery.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/profile_fit.hpp>

#include <string_view>
#include <vector>

namespace ppb {

// Opens the model `spec` (NAME[@VERSION]) with the options `options_json`, from the plugins that
// `candidates` lists: the highest usable version matching the pin (select_plugin). When the
// options were read from a file, `options_source` names it and prefixes the plugin's complaints
// about them. Throws ppb::InputError for a malformed spec, ppb::PluginError when no plugin matches
// or it fails to load, ModelError when the model refuses its options.
[[nodiscard]] MemoryModel open_model_spec(const std::vector<PluginCandidate>& candidates,
                                          std::string_view spec, std::string_view options_json,
                                          std::string_view options_source = {});

// Fits `model` to the observations of `dryrun`; a model's complaint about the data names
// `source` (the file). A ppb.dryrun/3 set (layers counted per group) is fitted with fit_grouped
// and the file's groups; a plugin older than API 1.3 refuses more than one group (ppb::InputError).
// Observations whose peak is the largest row of an in-flight profile are fitted by alternating
// (ppb/profile_fit.hpp); the result says at which vector each was fitted.
ProfileFit fit_model(MemoryModel& model, const DryRunSet& dryrun, std::string_view source);

}  // namespace ppb

#endif  // PPB_MODEL_SESSION_HPP
