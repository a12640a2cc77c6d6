// ppb/plugin/report_support.hpp — what every model's report() and messages are written with: the
// {"parameters", "diagnostics"} object, numbers that JSON can carry, lists of words.
#ifndef PPB_PLUGIN_REPORT_SUPPORT_HPP
#define PPB_PLUGIN_REPORT_SUPPORT_HPP

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ppb::plugin {

// `v` unchanged when finite. JSON has no NaN or infinity: a report never carries one, so this
// throws std::runtime_error (PPB_ERR_INTERNAL at the boundary) for one.
[[nodiscard]] double finite(double v);

// A finite number, or JSON null for nullopt (a coefficient the model does not determine).
[[nodiscard]] boost::json::value number_or_null(const std::optional<double>& v);

// A JSON array of the texts, in order.
[[nodiscard]] boost::json::array strings(const std::vector<std::string>& texts);

// The report() text: {"parameters": parameters, "diagnostics": diagnostics}.
[[nodiscard]] std::string make_report(boost::json::object parameters,
                                      boost::json::object diagnostics);

// A number as people read it: up to `digits` significant digits, no trailing zeros, "0" for -0.
[[nodiscard]] std::string format_number(double value, int digits = 6);

// "a", "a and b", "a, b and c".
[[nodiscard]] std::string join_words(std::span<const std::string> words);

}  // namespace ppb::plugin

#endif  // PPB_PLUGIN_REPORT_SUPPORT_HPP
