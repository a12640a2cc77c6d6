// ppb/json_input.hpp — checked reading of JSON input documents, with precise error messages.
//
// Every reader of a ppb file format (ppb.dryrun/1, layer tables, partitions, a plugin's report)
// parses with parse_json() and then walks the document with JsonNode / JsonObject / JsonArray.
// Each node knows its JSON path ("observations[3].layers.full") and the document's source (a
// file name), so a reader states only the problem and the message says where:
//
//     dryrun.json: observations[3].stage: expected a non-negative integer, got 2.5
//     dryrun.json: observations[3]: missing required field 'peak_memory_mb'
//     dryrun.json: observations[3]: unknown field 'peak_mem' (did you mean 'peak_memory_mb'?
//         expected one of: config, num_stages, ...)
//
// All errors are ppb::InputError. Nodes refer to the parsed value and to the source string;
// both must outlive the nodes.
#ifndef PPB_JSON_INPUT_HPP
#define PPB_JSON_INPUT_HPP

#include <ppb/limits.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb {

// Parses one complete JSON document (RFC 8259; a leading UTF-8 byte-order mark is skipped).
// Throws ppb::InputError for
//   - malformed JSON, empty input, text after the document:
//         "<source>:<line>:<col>: malformed JSON: <what>"
//   - a key repeated within one object (Boost.JSON would silently keep the last one):
//         "<source>:<line>:<col>: <path>: duplicate field 'stage' ..."
//   - a number too large for a double (Boost.JSON would make it infinite):
//         "<source>:<line>:<col>: <path>: number out of range: 1e400"
// With an empty `source` the location reads "line <line>, column <col>: ...". Columns count
// UTF-8 characters from 1. Nesting is limited to 64 levels.
[[nodiscard]] boost::json::value parse_json(std::string_view text, std::string_view source);

// The whole content of `path`; "-" reads standard input. Throws ppb::InputError
// "<path>: cannot read: <reason>", also beyond limits::text_file_bytes.
[[nodiscard]] std::string read_text_file(const std::filesystem::path& path);

// How a file is named in messages: its path, or "<stdin>" for "-".
[[nodiscard]] std::string source_name(const std::filesystem::path& path);

// "<source>: <path>: <problem>", the parts that are empty left out: how every message about a
// place in a document reads (JsonNode::fail), for readers that find a problem after reading.
[[nodiscard]] std::string located_message(std::string_view source, std::string_view path,
                                          std::string_view problem);

// "a.b[3].c": `key` appended to a JSON path (bracketed and quoted when it is not a plain name).
[[nodiscard]] std::string json_path_member(std::string_view path, std::string_view key);
// "a.b[3]": `index` appended to a JSON path.
[[nodiscard]] std::string json_path_element(std::string_view path, std::size_t index);

// A short description of a value for messages: 2.5, -1, "text", true, null, an array, an
// object. Long strings are shortened.
[[nodiscard]] std::string describe_json(const boost::json::value& value);

// 'key' for messages; a key with quotes or control characters is shown as a JSON string.
[[nodiscard]] std::string quoted_key(std::string_view key);

// The name in `known` that `unknown` was probably meant to be (a small edit distance, or a
// prefix), if any: for "did you mean" in messages.
[[nodiscard]] std::optional<std::string_view> closest_name(std::string_view unknown,
                                                           std::span<const std::string_view> known);

class JsonObject;
class JsonArray;

// One value of a parsed document, with its path and the document's source name.
class JsonNode {
  public:
    // The document's root: an empty path.
    JsonNode(const boost::json::value& value, std::string_view source)
        : value_(&value), source_(source) {}
    JsonNode(const boost::json::value& value, std::string_view source, std::string path)
        : value_(&value), source_(source), path_(std::move(path)) {}

    [[nodiscard]] const boost::json::value& value() const noexcept { return *value_; }
    [[nodiscard]] std::string_view source() const noexcept { return source_; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

    // Throws ppb::InputError "<source>: <path>: <problem>" (parts that are empty left out).
    [[noreturn]] void fail(std::string_view problem) const;
    // The message fail() would throw, for callers that throw something else.
    [[nodiscard]] std::string message(std::string_view problem) const;

    [[nodiscard]] bool is_null() const noexcept { return value_->is_null(); }
    [[nodiscard]] bool is_number() const noexcept { return value_->is_number(); }

    // Typed access; each fails with "expected <what>, got <describe_json(value)>".
    [[nodiscard]] JsonObject as_object() const;
    [[nodiscard]] JsonArray as_array() const;
    [[nodiscard]] std::string_view as_string() const;
    [[nodiscard]] bool as_bool() const;
    // Any finite number (int64, uint64 or double). A non-finite double (only possible in a
    // value built by code, parse_json() refuses them) fails with "number out of range".
    [[nodiscard]] double as_number() const;
    [[nodiscard]] double as_positive_number() const;      // > 0
    [[nodiscard]] double as_non_negative_number() const;  // >= 0
    // An integer in [min, max]: int64, uint64, or a double with an integral value (3.0).
    // Fractional numbers fail with "expected <an integer in range>, got 2.5"; integers beyond
    // the range fail the same way, naming the range ("a non-negative integer", "a positive
    // integer", "an integer from 2 to 7", ...). Numbers beyond the type's range fail with
    // "number out of range".
    [[nodiscard]] std::int64_t as_integer(std::int64_t min, std::int64_t max) const;
    [[nodiscard]] std::uint32_t as_uint32(std::uint32_t min = 0) const;
    // A count within its documented range (ppb/limits.hpp): an integer beyond it fails with
    // "4294967295 is out of range (1 to 10000 layers)", anything else but an integer with
    // "expected an integer, 1 to 10000 layers, got 2.5".
    [[nodiscard]] std::uint32_t as_count(const limits::CountRange& range) const;
    // A number within its documented range: "1e+307 is out of range (0 to 1e9 MB)", or
    // "expected a number, 0 to 1e9 MB, got \"x\"".
    [[nodiscard]] double as_number_in(const limits::RealRange& range) const;

  private:
    const boost::json::value* value_;
    std::string_view source_;
    std::string path_;
};

// A node known to be an object.
class JsonObject {
  public:
    // Fails (via node.fail) when `node` is not an object.
    explicit JsonObject(const JsonNode& node);

    [[nodiscard]] const JsonNode& node() const noexcept { return node_; }
    [[nodiscard]] const boost::json::object& object() const noexcept { return *object_; }
    [[nodiscard]] std::size_t size() const noexcept { return object_->size(); }
    [[nodiscard]] bool empty() const noexcept { return object_->empty(); }
    [[nodiscard]] bool contains(std::string_view key) const noexcept;

    // A member that must be present: fails with "missing required field '<key>'" otherwise.
    [[nodiscard]] JsonNode required(std::string_view key) const;
    // A member that may be absent. A member whose value is null is present (and most typed
    // accessors refuse null); readers that want null to mean "absent" test is_null().
    [[nodiscard]] std::optional<JsonNode> optional(std::string_view key) const;

    // Fails for the first member (in document order) whose key is not in `known`:
    // "unknown field 'peak_mem' (did you mean 'peak_memory_mb'? expected one of: a, b, c)".
    // `what` names the members in the message ("field", "recompute kind", ...).
    void allow_only(std::span<const std::string_view> known, std::string_view what = "field") const;
    void allow_only(std::initializer_list<std::string_view> known,
                    std::string_view what = "field") const {
        allow_only(std::span<const std::string_view>(known.begin(), known.size()), what);
    }

    // All members in document order, as (key, node).
    [[nodiscard]] std::vector<std::pair<std::string_view, JsonNode>> members() const;

    [[noreturn]] void fail(std::string_view problem) const { node_.fail(problem); }

  private:
    JsonNode node_;
    const boost::json::object* object_;
};

// A node known to be an array.
class JsonArray {
  public:
    // Fails (via node.fail) when `node` is not an array.
    explicit JsonArray(const JsonNode& node);

    [[nodiscard]] const JsonNode& node() const noexcept { return node_; }
    [[nodiscard]] const boost::json::array& array() const noexcept { return *array_; }
    [[nodiscard]] std::size_t size() const noexcept { return array_->size(); }
    [[nodiscard]] bool empty() const noexcept { return array_->empty(); }
    // Element `index` (< size()).
    [[nodiscard]] JsonNode at(std::size_t index) const;
    // All elements in order.
    [[nodiscard]] std::vector<JsonNode> elements() const;

    [[noreturn]] void fail(std::string_view problem) const { node_.fail(problem); }

  private:
    JsonNode node_;
    const boost::json::array* array_;
};

}  // namespace ppb

#endif  // PPB_JSON_INPUT_HPP
