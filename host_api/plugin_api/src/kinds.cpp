// The message for a name that is no recompute kind (ppb/kinds.hpp).
#include <ppb/kinds.hpp>

#include <ppb/json_input.hpp>

#include <fmt/format.h>

#include <span>
#include <string>

namespace ppb {

std::string unknown_kind(std::string_view name) {
    const auto guess = closest_name(name, std::span<const std::string_view>(kind_names));
    return fmt::format("unknown recompute kind '{}' ({}expected none, select, comm, both or full)",
                       name, guess ? fmt::format("did you mean '{}'? ", *guess) : std::string());
}

}  // namespace ppb
