// The texts of the documented ranges (ppb/limits.hpp).
#include <ppb/limits.hpp>

#include <fmt/core.h>

namespace ppb::limits {

std::string bound_text(double x) {
    std::string text = fmt::format("{:g}", x);  // 1e+09, 1000, 0.5
    const auto e = text.find("e+");
    if (e != std::string::npos) {
        std::size_t digits = e + 2;
        while (digits + 1 < text.size() && text[digits] == '0')
            ++digits;
        text = text.substr(0, e + 1) + text.substr(digits);
    }
    return text;
}

std::string describe(const CountRange& range) {
    if (range.unit.empty())
        return fmt::format("{} to {}", range.min, range.max);
    return fmt::format("{} to {} {}", range.min, range.max, range.unit);
}

std::string describe(const RealRange& range) {
    const std::string unit = range.unit.empty() ? std::string() : " " + std::string(range.unit);
    if (range.min_exclusive) {
        return fmt::format("greater than {}, at most {}{}", bound_text(range.min),
                           bound_text(range.max), unit);
    }
    return fmt::format("{} to {}{}", bound_text(range.min), bound_text(range.max), unit);
}

std::string out_of_range(std::string_view value, const CountRange& range) {
    return fmt::format("{} is out of range ({})", value, describe(range));
}

std::string out_of_range(std::string_view value, const RealRange& range) {
    return fmt::format("{} is out of range ({})", value, describe(range));
}

}  // namespace ppb::limits
