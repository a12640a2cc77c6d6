// ppb/json_output.hpp — writing JSON for people and machines: the one writer of every JSON text
// ppb and its plugins write (documents, options, reports). Boost.JSON's own serializer writes
// doubles as 2E0 and 1E-1; these never do.
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

// The same on one line without spaces ({"param_bytes":2,"rank_tolerance":1e-10}), no newline:
// numbers as to_pretty_json writes them. For JSON embedded in other text or handed to a program
// (a model's options, a plugin's report).
[[nodiscard]] std::string to_compact_json(const boost::json::value& value);

}  // namespace ppb

#endif  // PPB_JSON_OUTPUT_HPP
