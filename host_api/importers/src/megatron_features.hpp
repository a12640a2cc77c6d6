// The analytic options of a Megatron-LM run's newer features — multi-latent attention, multi-token
// prediction, context parallelism, FP8 and FP4, sharded data parallelism, module recompute and
// offloading — from its flags (host_api/docs/megatron-arguments.md, "Modelled flags").
//
// The mapping (megatron_arguments.cpp) reads the flags as the run's release's argparse does
// (megatron_argparse.hpp) and writes the options of the base transformer; it then hands its view
// of the flags to add_megatron_features, which adds the options of these features and refuses by
// name what the model does not cover. Every flag asked through the view counts as read, so that
// the mapping does not warn about it (megatron_flag_roles.hpp classifies the others).
#ifndef PPB_IMPORTERS_MEGATRON_FEATURES_HPP
#define PPB_IMPORTERS_MEGATRON_FEATURES_HPP

#include <ppb/importers/megatron_arguments.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers::detail {

// The reader's view of the flags (names without "--"), as the run's release's argparse left
// them: a flag not given has its release's default, a flag the release lacks has none. Each
// throws FlagError for a value that is not what the flag takes.
struct MegatronFlagView {
    std::function<bool(std::string_view)> given;  // the flag itself was given
    std::function<bool(std::string_view)> on;     // a switch holding what the flag stores
    std::function<std::optional<std::string>(std::string_view)> text;  // its value; None: nullopt
    // The values of a list flag (argparse's nargs '*', '+', N: "--recompute-modules core_attn
    // mlp" gives two), each as text; empty for None.
    std::function<std::vector<std::string>(std::string_view)> words;
    // The integers of a list flag of integers, each of at least `min`; empty for None.
    std::function<std::vector<std::uint32_t>(std::string_view, std::uint32_t)> counts;
    // An integer of at least `min` (and at most 2^31 - 1).
    std::function<std::optional<std::uint32_t>(std::string_view, std::uint32_t)> count;
    std::function<std::optional<double>(std::string_view)> number;  // a number of at least 0
};

// The refusal of a run the analytic model does not cover, naming the flag (without "--") and
// what it is; one wording for every refusal of 'ppb import megatron-options'.
[[noreturn]] void refuse(std::string_view flag, std::string_view what);

// Adds the features' options to `options` (the analytic plugin's, base options written) and
// their notes to `result.warnings`. Throws FlagError naming the flag for a feature the model does
// not cover or for contradicting flags. Returns the flags it read without asking their values
// (settings that change no tensor's size): with those it asked, they are the modelled flags, and
// their warnings, if any, are its own.
std::set<std::string, std::less<>> add_megatron_features(const MegatronFlagView& flags,
                                                         const MegatronRunContext& context,
                                                         boost::json::object& options,
                                                         MegatronAnalyticOptions& result);

}  // namespace ppb::importers::detail

#endif  // PPB_IMPORTERS_MEGATRON_FEATURES_HPP
