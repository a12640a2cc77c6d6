// The text of JSON scalars, shared by the writer (json_output.cpp) and the descriptions of values
// in messages (describe_json, json_input.cpp). Private to ppb_plugin_api.
#ifndef PPB_PLUGIN_API_JSON_TEXT_HPP
#define PPB_PLUGIN_API_JSON_TEXT_HPP

#include <boost/json/value.hpp>

#include <string>

namespace ppb {

// The shortest text that reads back to `d`, with ".0" appended when it would look like an
// integer (2048.0), so that a double reads back as a double. A non-finite `d` gives "inf",
// "-inf" or "nan" (not JSON: the writer refuses them before).
[[nodiscard]] std::string json_number_text(double d);

// The JSON text of a scalar (null, true, 12, 2.5, "text"); "" for an array or an object.
[[nodiscard]] std::string json_scalar_text(const boost::json::value& value);

}  // namespace ppb

#endif  // PPB_PLUGIN_API_JSON_TEXT_HPP
