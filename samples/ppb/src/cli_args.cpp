#include "cli_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>

namespace ppb::cli {

Args::Args(std::span<const std::string> args, std::span<const OptionSpec> specs) {
    bool only_positional = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& word = args[i];
        if (only_positional || word == "-" || word.size() < 2 || word[0] != '-') {
            positional_.push_back(word);
            continue;
        }
        if (word == "--") {
            only_positional = true;
            continue;
        }
        std::string name;
        std::optional<std::string> inline_value;
        if (word == "-h") {
            name = "help";
        } else if (word.rfind("--", 0) == 0) {
            const std::size_t eq = word.find('=');
            name = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
            if (eq != std::string::npos)
                inline_value = word.substr(eq + 1);
        } else {
            throw UsageError(fmt::format("unknown option '{}'", word));
        }
        const auto spec = std::find_if(specs.begin(), specs.end(),
                                       [&](const OptionSpec& s) { return s.name == name; });
        if (spec == specs.end())
            throw UsageError(fmt::format("unknown option '--{}'", name));
        auto& slot = options_[name];
        if (!slot.empty() && !spec->repeatable) {
            throw UsageError(fmt::format("option '--{}' is given more than once", name));
        }
        if (!spec->takes_value) {
            if (inline_value)
                throw UsageError(fmt::format("option '--{}' takes no value", name));
            slot.emplace_back();
            continue;
        }
        if (inline_value) {
            slot.push_back(*inline_value);
        } else if (i + 1 < args.size()) {
            slot.push_back(args[++i]);
        } else {
            throw UsageError(fmt::format("option '--{}' needs a value", name));
        }
    }
}

bool Args::flag(std::string_view name) const {
    return options_.find(name) != options_.end();
}

std::optional<std::string> Args::value(std::string_view name) const {
    const auto it = options_.find(name);
    if (it == options_.end())
        return std::nullopt;
    return it->second.back();
}

std::vector<std::string> Args::values(std::string_view name) const {
    const auto it = options_.find(name);
    return it == options_.end() ? std::vector<std::string>{} : it->second;
}

std::uint32_t parse_uint(std::string_view text, std::string_view what, std::uint32_t min) {
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        throw UsageError(fmt::format("{}: expected a whole number, got '{}'", what, text));
    }
    if (value < min) {
        throw UsageError(fmt::format("{}: expected at least {}, got {}", what, min, value));
    }
    return value;
}

std::optional<std::uint32_t> Args::uint_value(std::string_view name, std::uint32_t min) const {
    const auto text = value(name);
    if (!text)
        return std::nullopt;
    return parse_uint(*text, fmt::format("--{}", name), min);
}

std::optional<double> Args::double_value(std::string_view name) const {
    const auto text = value(name);
    if (!text)
        return std::nullopt;
    double v = 0.0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (text->empty() || ec != std::errc{} || end != text->data() + text->size() ||
        !std::isfinite(v)) {
        throw UsageError(fmt::format("--{}: expected a number, got '{}'", name, *text));
    }
    return v;
}

}  // namespace ppb::cli
