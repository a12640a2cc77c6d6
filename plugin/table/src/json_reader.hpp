// Strict reading of the options JSON: ppb::json's reader (exact numbers, no repeated keys, no
// overflowing numbers, JSON paths for messages) with its errors as the plugin's InvalidInput.
#ifndef PPB_TABLE_JSON_READER_HPP
#define PPB_TABLE_JSON_READER_HPP

#include <boost/json/value.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace ppb::table {

// Parses one JSON document. Unlike boost::json::parse in Boost 1.81 it reads every decimal
// number correctly rounded (std::from_chars), so a double written in its shortest round-trip
// form reads back bit for bit. Throws ppb::plugin::InvalidInput for malformed JSON (with line
// and column), a repeated key and a number that does not fit a double (1e400), the last two
// naming the JSON path ("layers_description[1].memory_activation: ...").
[[nodiscard]] boost::json::value parse_json_exact(std::string_view text);

// JSON paths as ppb writes them: "a.b[2].c"; a key that is not a plain name is quoted: a["x y"].
[[nodiscard]] std::string member_path(std::string_view path, std::string_view key);
[[nodiscard]] std::string element_path(std::string_view path, std::size_t index);

// A value for a message: numbers in their shortest round-trip form, strings quoted (and cut
// when long), "an object", "an array", "null", "true".
[[nodiscard]] std::string describe_json(const boost::json::value& value);

// 'key', or the key as a JSON string when it holds quotes or control characters.
[[nodiscard]] std::string quoted_key(std::string_view key);

// The name in `known` that `unknown` was probably meant to be, or "" when none is close.
[[nodiscard]] std::string_view closest_name(std::string_view unknown,
                                            std::span<const std::string_view> known);

}  // namespace ppb::table

#endif  // PPB_TABLE_JSON_READER_HPP
