// ppb/kinds.hpp — names of the recompute kinds and of the linear model's parameters.
#ifndef PPB_KINDS_HPP
#define PPB_KINDS_HPP

#include <ppb/abi.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace ppb {

inline constexpr std::array<std::string_view, PPB_KIND_COUNT> kind_names = {"none", "select",
                                                                            "comm", "both", "full"};

// The kind called `name` in the file formats, or nullopt.
[[nodiscard]] constexpr std::optional<ppb_kind> kind_from_name(std::string_view name) noexcept {
    for (std::size_t k = 0; k < kind_names.size(); ++k) {
        if (kind_names[k] == name)
            return static_cast<ppb_kind>(k);
    }
    return std::nullopt;
}

[[nodiscard]] constexpr std::string_view kind_name(ppb_kind kind) noexcept {
    return kind_names[static_cast<std::size_t>(kind)];
}

// What every reader says of a name that is no recompute kind: "unknown recompute kind 'ful' (did
// you mean 'full'? expected none, select, comm, both or full)".
[[nodiscard]] std::string unknown_kind(std::string_view name);

}  // namespace ppb

#endif  // PPB_KINDS_HPP
