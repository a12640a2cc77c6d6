// The table plugin reads its options with ppb::json, the same checked reader the host uses
// (exact numbers, no repeated keys, no overflowing numbers, JSON paths); here its errors become
// the plugin's InvalidInput status.
#include "json_reader.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/plugin.hpp>

namespace ppb::table {

boost::json::value parse_json_exact(std::string_view text) {
    try {
        return ppb::parse_json(text, {});
    } catch (const ppb::InputError& e) {
        const std::string what = e.what();
        if (what.find("malformed JSON") == std::string::npos)
            throw ppb::plugin::InvalidInput(what);
        throw ppb::plugin::InvalidInput("the options (a SAPP layer file) are not valid JSON: " +
                                        what);
    }
}

std::string member_path(std::string_view path, std::string_view key) {
    return ppb::json_path_member(path, key);
}

std::string element_path(std::string_view path, std::size_t index) {
    return ppb::json_path_element(path, index);
}

std::string describe_json(const boost::json::value& value) {
    return ppb::describe_json(value);
}

std::string quoted_key(std::string_view key) {
    return ppb::quoted_key(key);
}

std::string_view closest_name(std::string_view unknown, std::span<const std::string_view> known) {
    return ppb::closest_name(unknown, known).value_or(std::string_view{});
}

}  // namespace ppb::table
