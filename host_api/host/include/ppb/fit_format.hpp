// ppb/fit_format.hpp — the fit result document "ppb.fit/1" (host_api/docs/design.md, "ppb.fit/1").
#ifndef PPB_FIT_FORMAT_HPP
#define PPB_FIT_FORMAT_HPP

#include <ppb/dryrun_format.hpp>
#include <ppb/profile_fit.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace ppb {

inline constexpr std::string_view fit_format_v1 = "ppb.fit/1";

// Builds {"format": "ppb.fit/1", "model": {"name", "version"}, "parameters": {...},
// "diagnostics": {...}} from a plugin's report() text. The report is checked, since it comes
// from a plugin: it must be a JSON object with object members "parameters" and "diagnostics",
// the parameters must hold const_mb, head_mb, tail_mb, param_per_layer_mb (number or null) and
// activation_mb (an object of the five kinds, number or null), and no number may be non-finite.
// A model of several groups of body layers has, instead of param_per_layer_mb and
// activation_mb, "groups": {<group>: {"param_per_layer_mb", "activation_mb"}} in model order.
// Throws ppb::ModelError(PPB_ERR_INTERNAL, ...) naming the plugin and the defect otherwise.
[[nodiscard]] boost::json::object make_fit_document(std::string_view model_name,
                                                    std::string_view model_version,
                                                    std::string_view report_json);

// Adds "in_flight_profiles" to a fit document when `fit` alternated over observations' in-flight
// profiles (ppb/profile_fit.hpp): {"fits": N, "converged": bool, "observations": [{"index",
// "config", "stage", "in_flight": [...], "profile": [[...], ...]}, ...]}, one entry per observation
// with a profile of several vectors, "in_flight" being the vector it was fitted at (the active
// one). Nothing is added otherwise.
void add_profile_fit(boost::json::object& document, const ProfileFit& fit, const DryRunSet& dryrun);

}  // namespace ppb

#endif  // PPB_FIT_FORMAT_HPP
