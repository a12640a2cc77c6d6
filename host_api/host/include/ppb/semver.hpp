// ppb/semver.hpp — plugin versions and the NAME[@VERSION] selection syntax.
#ifndef PPB_SEMVER_HPP
#define PPB_SEMVER_HPP

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb {

struct SemVer {
    std::uint32_t major = 0;
    std::uint32_t minor = 0;
    std::uint32_t patch = 0;

    // "MAJOR.MINOR.PATCH", decimal, no leading '+' or '-', or nullopt.
    [[nodiscard]] static std::optional<SemVer> parse(std::string_view text);
    [[nodiscard]] std::string to_string() const;
    auto operator<=>(const SemVer&) const = default;
};

// A version prefix: "" (any), "1", "1.4" or "1.4.2".
struct VersionPin {
    std::vector<std::uint32_t> parts;  // 0 to 3 numbers
    [[nodiscard]] bool matches(const SemVer& version) const noexcept;
    [[nodiscard]] std::string to_string() const;
};

// What the user asks for with --model: a plugin name and an optional version pin.
struct ModelSpec {
    std::string name;
    VersionPin pin;
    // Throws ppb::InputError for "", "@1", "name@", "name@x.y", "a/b", "name@1.2.3.4".
    [[nodiscard]] static ModelSpec parse(std::string_view text);
    [[nodiscard]] std::string to_string() const;
};

// True for a plugin name as ppb_add_plugin() accepts it: [a-z0-9][a-z0-9_.-]*.
[[nodiscard]] bool is_valid_plugin_name(std::string_view name) noexcept;

}  // namespace ppb

#endif  // PPB_SEMVER_HPP
