#include <ppb/errors.hpp>
#include <ppb/semver.hpp>

#include <charconv>
#include <system_error>

namespace ppb {
namespace {

// Parses a dot-separated list of 1..max_parts decimal numbers.
std::optional<std::vector<std::uint32_t>> parse_numbers(std::string_view text,
                                                        std::size_t max_parts) {
    std::vector<std::uint32_t> parts;
    std::size_t pos = 0;
    while (true) {
        const std::size_t dot = text.find('.', pos);
        const std::string_view part =
            text.substr(pos, dot == std::string_view::npos ? text.npos : dot - pos);
        if (part.empty() || part.size() > 9)
            return std::nullopt;
        std::uint32_t value = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (ec != std::errc{} || end != part.data() + part.size())
            return std::nullopt;
        parts.push_back(value);
        if (parts.size() > max_parts)
            return std::nullopt;
        if (dot == std::string_view::npos)
            break;
        pos = dot + 1;
    }
    return parts;
}

std::string join(const std::vector<std::uint32_t>& parts) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i != 0)
            out += '.';
        out += std::to_string(parts[i]);
    }
    return out;
}

}  // namespace

std::optional<SemVer> SemVer::parse(std::string_view text) {
    const auto parts = parse_numbers(text, 3);
    if (!parts || parts->size() != 3)
        return std::nullopt;
    return SemVer{(*parts)[0], (*parts)[1], (*parts)[2]};
}

std::string SemVer::to_string() const {
    return join({major, minor, patch});
}

bool VersionPin::matches(const SemVer& version) const noexcept {
    const std::uint32_t fields[3] = {version.major, version.minor, version.patch};
    for (std::size_t i = 0; i < parts.size() && i < 3; ++i) {
        if (parts[i] != fields[i])
            return false;
    }
    return true;
}

std::string VersionPin::to_string() const {
    return join(parts);
}

bool is_valid_plugin_name(std::string_view name) noexcept {
    if (name.empty())
        return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '-' && c != '_' && c != '.')))
            return false;
    }
    return true;
}

ModelSpec ModelSpec::parse(std::string_view text) {
    const std::size_t at = text.find('@');
    ModelSpec spec;
    spec.name = std::string(text.substr(0, at));
    if (spec.name.find('/') != std::string::npos || spec.name.find('\\') != std::string::npos) {
        throw InputError("model '" + std::string(text) +
                         "': a model is named, not given as a path (see 'ppb plugins')");
    }
    if (!is_valid_plugin_name(spec.name)) {
        throw InputError("model '" + std::string(text) +
                         "': expected NAME or NAME@VERSION, NAME being lower-case letters, "
                         "digits, '-', '_' or '.'");
    }
    if (at != std::string_view::npos) {
        const auto parts = parse_numbers(text.substr(at + 1), 3);
        if (!parts) {
            throw InputError("model '" + std::string(text) +
                             "': the version after '@' must be MAJOR, MAJOR.MINOR or "
                             "MAJOR.MINOR.PATCH (e.g. " +
                             spec.name + "@1.4)");
        }
        spec.pin.parts = *parts;
    }
    return spec;
}

std::string ModelSpec::to_string() const {
    return pin.parts.empty() ? name : name + "@" + pin.to_string();
}

}  // namespace ppb
