// ppb/json_output.hpp — writing JSON for people and machines.
#ifndef PPB_JSON_OUTPUT_HPP
#define PPB_JSON_OUTPUT_HPP

#include <boost/json/value.hpp>

#include <string>

namespace ppb {

// Indented JSON text (two spaces, one member per line, short arrays of numbers on one line),
// ending with a newline. Doubles are written so that they read back to the same value.
// Throws std::domain_error for a non-finite number: JSON has no NaN or infinity, and ppb never
// writes one.
[[nodiscard]] std::string to_pretty_json(const boost::json::value& value);

}  // namespace ppb

#endif  // PPB_JSON_OUTPUT_HPP
