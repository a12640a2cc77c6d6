// The analytic options of a Megatron-LM run's newer features — multi-latent attention, multi-token
// prediction, context parallelism, FP8 and FP4, sharded data parallelism, module recompute and
// offloading — from its flags (host_api/docs/megatron-arguments.md, "Modelled flags").
//
// The argument reader (megatron_arguments.cpp) reads the flags as Megatron's argparse does and
// writes the options of the base transformer; it then hands its view of the flags to
// add_megatron_features, which adds the options of these features, refuses by name what the
// model does not cover, and says which flags it read so that the reader does not warn about them.
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

// The reader's view of the flags (names without "--"). Each throws FlagError for a value that is
// not what the flag takes.
struct MegatronFlagView {
    std::function<bool(std::string_view)> given;  // present, with or without a value
    std::function<bool(std::string_view)> on;     // a switch given (or true)
    std::function<std::optional<std::string>(std::string_view)> text;  // its one value
    // The values of a flag Megatron reads with nargs='+' ("--recompute-modules core_attn mlp",
    // or as YAML configs write it, "[core_attn mlp]"); empty when absent.
    std::function<std::vector<std::string>(std::string_view)> values;
    // An integer of at least `min` (and at most 2^31 - 1).
    std::function<std::optional<std::uint32_t>(std::string_view, std::uint32_t)> count;
    std::function<std::optional<double>(std::string_view)> number;  // a number of at least 0
};

// Adds the features' options to `options` (the analytic plugin's, base options written) and
// their notes to `result.warnings`; may adjust `result`'s layout figures. Throws FlagError naming
// the flag for a feature the model does not cover or for contradicting flags. Returns the flags
// it read (their warnings, if any, are its own).
std::set<std::string, std::less<>> add_megatron_features(const MegatronFlagView& flags,
                                                         const MegatronRunContext& context,
                                                         boost::json::object& options,
                                                         MegatronAnalyticOptions& result);

}  // namespace ppb::importers::detail

#endif  // PPB_IMPORTERS_MEGATRON_FEATURES_HPP
