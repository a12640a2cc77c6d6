// The unknowns of the dry-run memory model (host_api/docs/design.md, "The memory model"), their
// names and their ABI bits.
#ifndef PPB_DRYRUN_LSQ_PARAMETERS_HPP
#define PPB_DRYRUN_LSQ_PARAMETERS_HPP

#include <ppb/abi.h>
#include <ppb/plugin/report_support.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::dryrun_lsq {

// In the fixed order of the design matrix's columns.
enum class Parameter : std::uint8_t {
    const_mb,
    head_mb,
    tail_mb,
    param_per_layer_mb,
    activation_none,
    activation_select,
    activation_comm,
    activation_both,
    activation_full,
};

inline constexpr std::size_t parameter_count = 9;

// Names as they appear in reports and in the ppb.fit/1 format.
inline constexpr std::array<std::string_view, parameter_count> parameter_names = {
    "const_mb",
    "head_mb",
    "tail_mb",
    "param_per_layer_mb",
    "activation_mb.none",
    "activation_mb.select",
    "activation_mb.comm",
    "activation_mb.both",
    "activation_mb.full",
};

// One value per parameter, indexed by index(Parameter): a design row or a coefficient vector.
using ParameterVector = std::array<double, parameter_count>;

[[nodiscard]] constexpr std::size_t index(Parameter p) noexcept {
    return static_cast<std::size_t>(p);
}
[[nodiscard]] constexpr Parameter parameter_at(std::size_t i) noexcept {
    return static_cast<Parameter>(i);
}
[[nodiscard]] constexpr std::string_view name(Parameter p) noexcept {
    return parameter_names[index(p)];
}
[[nodiscard]] constexpr Parameter activation(ppb_kind kind) noexcept {
    return parameter_at(index(Parameter::activation_none) + static_cast<std::size_t>(kind));
}
[[nodiscard]] constexpr bool is_activation(Parameter p) noexcept {
    return index(p) >= index(Parameter::activation_none);
}
// Only meaningful when is_activation(p).
[[nodiscard]] constexpr ppb_kind kind_of(Parameter p) noexcept {
    return static_cast<ppb_kind>(index(p) - index(Parameter::activation_none));
}

// The PPB_PARAM_* bit of ppb_linear_parameters::identified for `p`.
[[nodiscard]] constexpr std::uint32_t abi_bit(Parameter p) noexcept {
    switch (p) {
        case Parameter::const_mb:
            return PPB_PARAM_CONST;
        case Parameter::head_mb:
            return PPB_PARAM_HEAD;
        case Parameter::tail_mb:
            return PPB_PARAM_TAIL;
        case Parameter::param_per_layer_mb:
            return PPB_PARAM_PER_LAYER;
        default:
            return PPB_PARAM_ACTIVATION(static_cast<unsigned>(kind_of(p)));
    }
}

// "a", "a and b", "a, b and c" of the parameters' names.
[[nodiscard]] inline std::string join_names(std::span<const Parameter> parameters) {
    std::vector<std::string> words;
    words.reserve(parameters.size());
    for (const Parameter p : parameters)
        words.emplace_back(name(p));
    return ppb::plugin::join_words(words);
}

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_PARAMETERS_HPP
