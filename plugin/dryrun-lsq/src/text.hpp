// Small helpers for the human-readable parts of messages and reports.
#ifndef PPB_DRYRUN_LSQ_TEXT_HPP
#define PPB_DRYRUN_LSQ_TEXT_HPP

#include "parameters.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::dryrun_lsq {

// A number as people read it: up to `digits` significant digits, no trailing zeros.
[[nodiscard]] std::string format_number(double value, int digits = 6);

// "a", "a and b", "a, b and c".
[[nodiscard]] std::string join_words(std::span<const std::string> words);
[[nodiscard]] std::string join_names(std::span<const Parameter> parameters);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_TEXT_HPP
