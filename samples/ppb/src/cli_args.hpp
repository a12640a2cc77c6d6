// Command-line parsing for ppb: long options, "--name value" or "--name=value", positionals.
#ifndef PPB_CLI_ARGS_HPP
#define PPB_CLI_ARGS_HPP

#include <ppb/errors.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::cli {

// A usage mistake: exit status 2, with a hint to read --help.
class UsageError : public InputError {
  public:
    using InputError::InputError;
};

struct OptionSpec {
    std::string_view name;  // without the leading "--"
    bool takes_value = false;
    bool repeatable = false;
};

class Args {
  public:
    // Parses `args` (the words after the command name) against `specs`. "-h" means "--help".
    // Throws UsageError for unknown options, missing values and repeated single options.
    Args(std::span<const std::string> args, std::span<const OptionSpec> specs);

    [[nodiscard]] bool flag(std::string_view name) const;
    [[nodiscard]] std::optional<std::string> value(std::string_view name) const;
    [[nodiscard]] std::vector<std::string> values(std::string_view name) const;
    [[nodiscard]] const std::vector<std::string>& positional() const noexcept {
        return positional_;
    }

    // Typed values; the message names the option.
    [[nodiscard]] std::optional<std::uint32_t> uint_value(std::string_view name,
                                                          std::uint32_t min = 0) const;
    [[nodiscard]] std::optional<double> double_value(std::string_view name) const;

  private:
    std::map<std::string, std::vector<std::string>, std::less<>> options_;
    std::vector<std::string> positional_;
};

// Parses a non-negative integer word for messages about `what`; throws UsageError.
[[nodiscard]] std::uint32_t parse_uint(std::string_view text, std::string_view what,
                                       std::uint32_t min = 0);

}  // namespace ppb::cli

#endif  // PPB_CLI_ARGS_HPP
