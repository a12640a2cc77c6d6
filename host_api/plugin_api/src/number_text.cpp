// Numbers for people (ppb/number_text.hpp).
#include <ppb/number_text.hpp>

#include <fmt/format.h>

namespace ppb {

std::string format_mb(double mb) {
    return fmt::format("{:.1f} MB", mb);
}

std::string format_time(double time, std::string_view unit) {
    return unit.empty() ? fmt::format("{:.1f}", time) : fmt::format("{:.1f} {}", time, unit);
}

std::string time_unit_phrase(std::string_view unit) {
    return unit.empty() ? std::string("in the layer file's unit") : fmt::format("in {}", unit);
}

}  // namespace ppb
