// "[[1, 0, -1]]": an array as it is written into a MindFormers YAML file, for the partition
// table's "MindFormers / SAPP configuration" lines and the report's copy buttons alike.
#ifndef PPB_CLI_ARRAY_TEXT_HPP
#define PPB_CLI_ARRAY_TEXT_HPP

#include <boost/json/value.hpp>

#include <string>

namespace ppb::cli {

// Nested arrays with ", " between elements; anything else as its JSON.
[[nodiscard]] std::string array_text(const boost::json::value& v);

}  // namespace ppb::cli

#endif  // PPB_CLI_ARRAY_TEXT_HPP
