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

[[nodiscard]] constexpr std::size_t index(Parameter p) noexcept {
    return static_cast<std::size_t>(p);
}

// Groups of body layers (dense and MoE layers): const_mb, head_mb and tail_mb are the model's,
// shared by every group; param_per_layer_mb and the activations are each group's own. The
// unknowns of a model of G groups are the shared parameters, then the group parameters of group
// 0, of group 1, ...: with one group, unknown i is parameter i, so that a fit of one group is
// the fit of the plain model, column for column.
inline constexpr std::size_t shared_parameter_count = 3;
inline constexpr std::size_t group_parameter_count = parameter_count - shared_parameter_count;
inline constexpr std::size_t max_groups = 64;  // ppb::limits::groups
inline constexpr std::size_t max_unknowns =
    shared_parameter_count + group_parameter_count * max_groups;

[[nodiscard]] constexpr bool is_shared(Parameter p) noexcept {
    return index(p) < shared_parameter_count;
}
[[nodiscard]] constexpr std::size_t unknown_count(std::size_t groups) noexcept {
    return shared_parameter_count + group_parameter_count * groups;
}

// One unknown of the model: a parameter, and for a group parameter the group it belongs to.
// A bare Parameter is the unknown of group 0 (of the plain model).
struct Unknown {
    Parameter parameter = Parameter::const_mb;
    std::uint32_t group = 0;  // 0 for the shared parameters

    constexpr Unknown() noexcept = default;
    // NOLINTNEXTLINE(google-explicit-constructor): a Parameter is the plain model's unknown
    constexpr Unknown(Parameter p, std::uint32_t g = 0) noexcept
        : parameter(p), group(is_shared(p) ? 0 : g) {}

    // The unknown's column among unknown_count(groups) columns.
    [[nodiscard]] constexpr std::size_t column() const noexcept {
        if (is_shared(parameter))
            return index(parameter);
        return shared_parameter_count + group * group_parameter_count +
               (index(parameter) - shared_parameter_count);
    }
    friend constexpr bool operator==(const Unknown&, const Unknown&) = default;
    friend constexpr bool operator<(const Unknown& a, const Unknown& b) noexcept {
        return a.column() < b.column();
    }
};

[[nodiscard]] constexpr std::size_t index(Unknown u) noexcept {
    return u.column();
}
[[nodiscard]] constexpr Unknown unknown_at(std::size_t column) noexcept {
    if (column < shared_parameter_count)
        return Unknown(static_cast<Parameter>(column));
    const std::size_t in_groups = column - shared_parameter_count;
    return Unknown(
        static_cast<Parameter>(shared_parameter_count + in_groups % group_parameter_count),
        static_cast<std::uint32_t>(in_groups / group_parameter_count));
}

// One value per unknown, indexed by index(Unknown) (for one group, index(Parameter)): a design
// row or a coefficient vector. Of fixed size so that prediction never allocates; only the first
// unknown_count(groups) entries are used.
using ParameterVector = std::array<double, max_unknowns>;
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

// The name of an unknown in reports and messages: the parameter's own name in a model of one
// group (whatever the group is called) and for the shared parameters; with several groups, a
// group parameter's name followed by its group's in brackets: "param_per_layer_mb[moe]",
// "activation_mb.full[dense]".
[[nodiscard]] inline std::string name(Unknown u, std::span<const std::string> groups) {
    std::string text(name(u.parameter));
    if (groups.size() > 1 && !is_shared(u.parameter))
        text += "[" + groups[u.group] + "]";
    return text;
}

[[nodiscard]] inline std::string join_names(std::span<const Unknown> unknowns,
                                            std::span<const std::string> groups) {
    std::vector<std::string> words;
    words.reserve(unknowns.size());
    for (const Unknown u : unknowns)
        words.push_back(name(u, groups));
    return ppb::plugin::join_words(words);
}

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_PARAMETERS_HPP
