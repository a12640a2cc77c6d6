// Checked reading of JSON documents: parsing with locations, typed access with JSON paths.
#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>

#include "json_text.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value_stack.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <system_error>
#include <unordered_set>

#include <sys/stat.h>

namespace ppb {
namespace {

namespace json = boost::json;

constexpr std::size_t max_nesting = 64;

// ---------------------------------------------------------------------------------------------
// Parsing

// A basic_parser handler that builds the value as Boost.JSON's own parser does (value_stack)
// and also refuses what Boost.JSON accepts silently: repeated keys (it keeps the last) and
// numbers that overflow a double (it makes them infinite). It tracks the path of the value
// being parsed so that its refusals say where.
class CheckingHandler {
  public:
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    CheckingHandler() { stack_.reset(); }

    [[nodiscard]] json::value release() { return stack_.release(); }
    // Why the handler stopped the parse; empty when it did not.
    [[nodiscard]] const std::string& problem() const noexcept { return problem_; }
    // How many bytes before the parser's stopping point the problem starts.
    [[nodiscard]] std::size_t backup() const noexcept { return backup_; }

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }

    bool on_object_begin(json::error_code&) {
        frames_.push_back(Frame{true, 0, {}, {}});
        return true;
    }
    bool on_object_end(std::size_t n, json::error_code&) {
        stack_.push_object(n);
        frames_.pop_back();
        value_done();
        return true;
    }
    bool on_array_begin(json::error_code&) {
        frames_.push_back(Frame{false, 0, {}, {}});
        return true;
    }
    bool on_array_end(std::size_t n, json::error_code&) {
        stack_.push_array(n);
        frames_.pop_back();
        value_done();
        return true;
    }

    bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
        stack_.push_chars(s);
        key_.append(s.data(), s.size());
        return true;
    }
    bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
        stack_.push_key(s);
        key_.append(s.data(), s.size());
        Frame& frame = frames_.back();
        if (!frame.keys.insert(key_).second) {
            const std::string where = path(frames_.size() - 1);
            problem_ = (where.empty() ? std::string() : where + ": ") + "duplicate field '" + key_ +
                       "' (a JSON object must not repeat a key)";
            ec = json::error::exception;
            return false;
        }
        frame.key = std::move(key_);
        key_.clear();
        return true;
    }

    bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
        stack_.push_chars(s);
        return true;
    }
    bool on_string(json::string_view s, std::size_t, json::error_code&) {
        stack_.push_string(s);
        value_done();
        return true;
    }

    bool on_number_part(json::string_view s, json::error_code&) {
        number_.append(s.data(), s.size());
        return true;
    }
    bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
        number_.clear();
        stack_.push_int64(i);
        value_done();
        return true;
    }
    bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
        number_.clear();
        stack_.push_uint64(u);
        value_done();
        return true;
    }
    bool on_double(double d, json::string_view s, json::error_code& ec) {
        number_.append(s.data(), s.size());
        // Boost.JSON before 1.83 converts decimal text to double quickly but not always
        // correctly rounded (123456789.12345679 reads as 123456789.12345681), so a number
        // written in the shortest round-trip form would not read back the same. std::from_chars
        // rounds correctly; it reports overflow and underflow alike as out of range, so
        // Boost's value decides those cases (infinite: overflow, refused below; else the
        // underflowed value).
        double exact = 0.0;
        const char* const first = number_.data();
        const char* const last = first + number_.size();
        const auto [end, error] = std::from_chars(first, last, exact);
        if (error == std::errc() && end == last)
            d = exact;
        if (!std::isfinite(d)) {
            const std::string where = path(frames_.size());
            problem_ = (where.empty() ? std::string() : where + ": ") +
                       "number out of range: " + number_ + " does not fit a double";
            backup_ = number_.size();  // point at the number's start, not its end
            ec = json::error::exception;
            return false;
        }
        number_.clear();
        stack_.push_double(d);
        value_done();
        return true;
    }

    bool on_bool(bool b, json::error_code&) {
        stack_.push_bool(b);
        value_done();
        return true;
    }
    bool on_null(json::error_code&) {
        stack_.push_null();
        value_done();
        return true;
    }
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }

  private:
    struct Frame {
        bool is_object;
        std::size_t index;  // arrays: the element being parsed
        std::string key;    // objects: the member being parsed
        std::unordered_set<std::string> keys;
    };

    void value_done() {
        if (!frames_.empty() && !frames_.back().is_object)
            ++frames_.back().index;
    }

    // Path of the value being parsed at nesting depth `depth`.
    [[nodiscard]] std::string path(std::size_t depth) const {
        std::string out;
        for (std::size_t i = 0; i < depth && i < frames_.size(); ++i) {
            out = frames_[i].is_object ? json_path_member(out, frames_[i].key)
                                       : json_path_element(out, frames_[i].index);
        }
        return out;
    }

    json::value_stack stack_;
    std::vector<Frame> frames_;
    std::string key_;
    std::string number_;
    std::string problem_;
    std::size_t backup_ = 0;
};

// 1-based line and column (in UTF-8 characters) of byte `offset` of `text`.
std::pair<std::size_t, std::size_t> line_and_column(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    std::size_t line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++line;
            line_start = i + 1;
        }
    }
    std::size_t column = 1;
    for (std::size_t i = line_start; i < offset; ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0u) != 0x80u)
            ++column;
    }
    return {line, column};
}

std::string location(std::string_view source, std::string_view text, std::size_t offset) {
    const auto [line, column] = line_and_column(text, offset);
    if (source.empty())
        return fmt::format("line {}, column {}", line, column);
    return fmt::format("{}:{}:{}", source, line, column);
}

// The character at `offset` for a message: 'x', a UTF-8 sequence, or a byte in hex.
std::string character_at(std::string_view text, std::size_t offset) {
    if (offset >= text.size())
        return "end of input";
    const auto c = static_cast<unsigned char>(text[offset]);
    if (c >= 0x20 && c < 0x7f)
        return fmt::format("'{}'", static_cast<char>(c));
    if (c == '\n')
        return "end of line";
    if (c < 0x20 || c == 0x7f)
        return fmt::format("control character 0x{:02x}", static_cast<unsigned>(c));
    // A whole UTF-8 sequence (overlong forms and surrogates aside), else the byte itself.
    const std::size_t length = c >= 0xC2 && c <= 0xDF   ? 2
                               : c >= 0xE0 && c <= 0xEF ? 3
                               : c >= 0xF0 && c <= 0xF4 ? 4
                                                        : 0;
    bool valid = length != 0 && offset + length <= text.size();
    for (std::size_t i = 1; valid && i < length; ++i) {
        valid = (static_cast<unsigned char>(text[offset + i]) & 0xC0u) == 0x80u;
    }
    if (valid)
        return fmt::format("'{}'", text.substr(offset, length));
    return fmt::format("byte 0x{:02x} (not UTF-8)", static_cast<unsigned>(c));
}

std::string parse_error_text(const json::error_code& ec, std::string_view text,
                             std::size_t offset) {
    if (ec == json::error::syntax)
        return "syntax error at " + character_at(text, offset);
    if (ec == json::error::incomplete) {
        if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
            return "the input is empty";
        }
        return "unexpected end of input";
    }
    if (ec == json::error::extra_data)
        return "unexpected text after the JSON document";
    if (ec == json::error::exponent_overflow)
        return "number out of range";
    if (ec == json::error::too_deep) {
        return fmt::format("nested more than {} levels deep", max_nesting);
    }
    return ec.message();
}

// ---------------------------------------------------------------------------------------------
// Messages

bool is_plain_name(std::string_view key) {
    if (key.empty())
        return false;
    const auto alpha = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    };
    if (!alpha(key.front()))
        return false;
    return std::all_of(key.begin(), key.end(),
                       [&](char c) { return alpha(c) || (c >= '0' && c <= '9') || c == '-'; });
}

std::string integer_expectation(std::int64_t min, std::int64_t max) {
    constexpr auto top = std::numeric_limits<std::int64_t>::max();
    constexpr auto u32 = static_cast<std::int64_t>(std::numeric_limits<std::uint32_t>::max());
    if (max == top || max == u32) {
        if (min == 0)
            return "a non-negative integer";
        if (min == 1)
            return "a positive integer";
        if (min == std::numeric_limits<std::int64_t>::min())
            return "an integer";
        return fmt::format("an integer of at least {}", min);
    }
    if (min == max)
        return fmt::format("the integer {}", min);
    return fmt::format("an integer from {} to {}", min, max);
}

[[noreturn]] void cannot_read(const std::filesystem::path& path, int error) {
    std::string reason = std::generic_category().message(error);
    if (error == ENAMETOOLONG && path.native().size() >= PATH_MAX) {
        reason = "path too long (" + std::to_string(path.native().size()) +
                 " bytes, the limit is PATH_MAX=" + std::to_string(PATH_MAX) + ")";
    }
    throw InputError(source_name(path) + ": cannot read: " + reason);
}

}  // namespace

// 'key' for messages; keys with quotes or control characters are shown as JSON strings.
std::string quoted_key(std::string_view key) {
    const bool plain = std::all_of(key.begin(), key.end(), [](char c) {
        return static_cast<unsigned char>(c) >= 0x20 && c != '\'' && c != 0x7f;
    });
    if (plain)
        return "'" + std::string(key) + "'";
    return json::serialize(json::string_view(key.data(), key.size()));
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] =
                std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0u : 1u)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::optional<std::string_view> closest_name(std::string_view unknown,
                                             std::span<const std::string_view> known) {
    std::optional<std::string_view> best;
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    for (const auto name : known) {
        const std::size_t d = edit_distance(unknown, name);
        const bool prefix =
            unknown.size() >= 3 && (name.starts_with(unknown) || unknown.starts_with(name));
        const bool close = d <= std::max<std::size_t>(2, name.size() / 3) && d < name.size();
        if ((close || prefix) && d < best_distance) {
            best = name;
            best_distance = d;
        }
    }
    return best;
}

// ---------------------------------------------------------------------------------------------

json::value parse_json(std::string_view text, std::string_view source) {
    std::size_t start = 0;
    if (text.starts_with("\xEF\xBB\xBF"))
        start = 3;  // UTF-8 byte-order mark
    json::parse_options options;
    options.max_depth = max_nesting;
    json::basic_parser<CheckingHandler> parser(options);
    json::error_code ec;
    const std::size_t consumed =
        parser.write_some(false, text.data() + start, text.size() - start, ec);
    const std::size_t offset = start + consumed;
    if (ec) {
        const std::string& problem = parser.handler().problem();
        if (!problem.empty()) {
            const std::size_t at = offset - std::min(parser.handler().backup(), consumed);
            throw InputError(location(source, text, at) + ": " + problem);
        }
        throw InputError(location(source, text, offset) +
                         ": malformed JSON: " + parse_error_text(ec, text, offset));
    }
    if (offset < text.size()) {
        throw InputError(location(source, text, offset) + ": malformed JSON: " +
                         parse_error_text(json::error::extra_data, text, offset));
    }
    return parser.handler().release();
}

std::string read_text_file(const std::filesystem::path& path) {
    const bool is_stdin = path == "-";
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned(nullptr, &std::fclose);
    std::FILE* file = stdin;
    if (!is_stdin) {
        errno = 0;
        owned.reset(std::fopen(path.c_str(), "rb"));
        if (!owned)
            cannot_read(path, errno != 0 ? errno : EIO);
        file = owned.get();
        struct stat info {};
        if (::fstat(::fileno(file), &info) == 0 && S_ISDIR(info.st_mode))
            cannot_read(path, EISDIR);
    }
    std::string text;
    char buffer[65536];
    for (;;) {
        errno = 0;
        const std::size_t n = std::fread(buffer, 1, sizeof buffer, file);
        text.append(buffer, n);
        if (text.size() > limits::text_file_bytes) {
            // A character device such as /dev/zero or /dev/full never ends.
            throw InputError(fmt::format(
                "{}: cannot read: more than {} bytes, larger than any file ppb reads (a device "
                "such as /dev/zero never ends)",
                source_name(path), limits::text_file_bytes));
        }
        if (n < sizeof buffer) {
            if (std::ferror(file) != 0) {
                const int error = errno != 0 ? errno : EIO;
                if (is_stdin)
                    std::clearerr(file);
                cannot_read(path, error);
            }
            break;
        }
    }
    if (is_stdin)
        std::clearerr(file);  // leave stdin usable after EOF
    return text;
}

std::string source_name(const std::filesystem::path& path) {
    return path == "-" ? std::string("<stdin>") : path.string();
}

std::string json_path_member(std::string_view path, std::string_view key) {
    if (is_plain_name(key)) {
        if (path.empty())
            return std::string(key);
        return std::string(path) + "." + std::string(key);
    }
    return std::string(path) + "[" + json::serialize(json::string_view(key.data(), key.size())) +
           "]";
}

std::string json_path_element(std::string_view path, std::size_t index) {
    return fmt::format("{}[{}]", path, index);
}

std::string describe_json(const json::value& value) {
    switch (value.kind()) {
        case json::kind::double_:
            // Only in a value built by code, or by Boost.JSON's own parser: parse_json refuses
            // a number a double cannot hold.
            if (!std::isfinite(value.get_double()))
                return "a number out of range";
            break;
        case json::kind::string: {
            constexpr std::size_t max_length = 40;
            std::string_view s = value.get_string();
            if (s.size() <= max_length)
                break;
            std::size_t cut = max_length - 3;
            while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0u) == 0x80u)
                --cut;
            std::string shown = json::serialize(json::string_view(s.data(), cut));
            shown.insert(shown.size() - 1, "...");
            return shown;
        }
        case json::kind::array:
            return value.get_array().empty() ? "an empty array" : "an array";
        case json::kind::object:
            return value.get_object().empty() ? "an empty object" : "an object";
        default:
            break;
    }
    return json_scalar_text(value);
}

// ---------------------------------------------------------------------------------------------
// JsonNode

std::string located_message(std::string_view source, std::string_view path,
                            std::string_view problem) {
    std::string out;
    if (!source.empty())
        out.append(source).append(": ");
    if (!path.empty())
        out.append(path).append(": ");
    out.append(problem);
    return out;
}

std::string JsonNode::message(std::string_view problem) const {
    return located_message(source_, path_, problem);
}

void JsonNode::fail(std::string_view problem) const {
    throw InputError(message(problem));
}

JsonObject JsonNode::as_object() const {
    return JsonObject(*this);
}

JsonArray JsonNode::as_array() const {
    return JsonArray(*this);
}

std::string_view JsonNode::as_string() const {
    if (!value_->is_string())
        fail("expected a string, got " + describe_json(*value_));
    return value_->get_string();
}

bool JsonNode::as_bool() const {
    if (!value_->is_bool())
        fail("expected true or false, got " + describe_json(*value_));
    return value_->get_bool();
}

double JsonNode::as_number() const {
    switch (value_->kind()) {
        case json::kind::int64:
            return static_cast<double>(value_->get_int64());
        case json::kind::uint64:
            return static_cast<double>(value_->get_uint64());
        case json::kind::double_: {
            const double d = value_->get_double();
            if (!std::isfinite(d))
                fail("number out of range: " + json_number_text(value_->get_double()));
            return d;
        }
        default:
            fail("expected a number, got " + describe_json(*value_));
    }
}

double JsonNode::as_positive_number() const {
    if (!value_->is_number())
        fail("expected a positive number, got " + describe_json(*value_));
    const double d = as_number();
    if (!(d > 0.0))
        fail("expected a positive number, got " + describe_json(*value_));
    return d;
}

double JsonNode::as_non_negative_number() const {
    if (!value_->is_number()) {
        fail("expected a non-negative number, got " + describe_json(*value_));
    }
    const double d = as_number();
    if (!(d >= 0.0))
        fail("expected a non-negative number, got " + describe_json(*value_));
    return d;
}

std::int64_t JsonNode::as_integer(std::int64_t min, std::int64_t max) const {
    const std::string expectation = integer_expectation(min, max);
    const auto wrong = [&]() -> std::int64_t {
        fail("expected " + expectation + ", got " + describe_json(*value_));
    };
    // Beyond `max`: out of range when `max` is a type's limit, else just not what is expected.
    const auto too_large = [&]() -> std::int64_t {
        constexpr auto u32 = static_cast<std::int64_t>(std::numeric_limits<std::uint32_t>::max());
        if (max == std::numeric_limits<std::int64_t>::max() || max == u32) {
            fail(fmt::format("number out of range: {} is more than {}", describe_json(*value_),
                             max));
        }
        return wrong();
    };
    std::int64_t v = 0;
    switch (value_->kind()) {
        case json::kind::int64:
            v = value_->get_int64();
            break;
        case json::kind::uint64: {
            const std::uint64_t u = value_->get_uint64();
            if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                return too_large();
            }
            v = static_cast<std::int64_t>(u);
            break;
        }
        case json::kind::double_: {
            const double d = value_->get_double();
            if (!std::isfinite(d))
                fail("number out of range: " + json_number_text(value_->get_double()));
            if (d != std::floor(d))
                return wrong();
            constexpr double two_63 = 9223372036854775808.0;
            if (d >= two_63)
                return too_large();
            if (d < -two_63)
                return wrong();
            v = static_cast<std::int64_t>(d);
            break;
        }
        default:
            return wrong();
    }
    if (v < min)
        return wrong();
    if (v > max)
        return too_large();
    return v;
}

std::uint32_t JsonNode::as_uint32(std::uint32_t min) const {
    return static_cast<std::uint32_t>(
        as_integer(min, static_cast<std::int64_t>(std::numeric_limits<std::uint32_t>::max())));
}

std::uint32_t JsonNode::as_count(const limits::CountRange& range) const {
    const auto wrong = [&] {
        fail(fmt::format("expected an integer, {}, got {}", limits::describe(range),
                         describe_json(*value_)));
    };
    if (!value_->is_number())
        wrong();
    const double d = as_number();
    if (d != std::floor(d))
        wrong();
    if (!(d >= static_cast<double>(range.min) && d <= static_cast<double>(range.max)))
        fail(limits::out_of_range(describe_json(*value_), range));
    return static_cast<std::uint32_t>(as_integer(range.min, range.max));
}

double JsonNode::as_number_in(const limits::RealRange& range) const {
    if (!value_->is_number()) {
        fail(fmt::format("expected a number, {}, got {}", limits::describe(range),
                         describe_json(*value_)));
    }
    const double d = as_number();
    if (!range.contains(d))
        fail(limits::out_of_range(describe_json(*value_), range));
    return d;
}

// ---------------------------------------------------------------------------------------------
// JsonObject

JsonObject::JsonObject(const JsonNode& node) : node_(node), object_(node.value().if_object()) {
    if (object_ == nullptr)
        node_.fail("expected an object, got " + describe_json(node.value()));
}

bool JsonObject::contains(std::string_view key) const noexcept {
    return object_->contains(json::string_view(key.data(), key.size()));
}

JsonNode JsonObject::required(std::string_view key) const {
    auto member = optional(key);
    if (!member)
        node_.fail("missing required field " + quoted_key(key));
    return *member;
}

std::optional<JsonNode> JsonObject::optional(std::string_view key) const {
    const json::value* member = object_->if_contains(json::string_view(key.data(), key.size()));
    if (member == nullptr)
        return std::nullopt;
    return JsonNode(*member, node_.source(), json_path_member(node_.path(), key));
}

void JsonObject::allow_only(std::span<const std::string_view> known, std::string_view what) const {
    for (const auto& member : *object_) {
        const std::string_view key = member.key();
        if (std::find(known.begin(), known.end(), key) != known.end())
            continue;
        std::string problem = fmt::format("unknown {} {} (", what, quoted_key(key));
        if (const auto guess = closest_name(key, known)) {
            problem += fmt::format("did you mean '{}'? ", *guess);
        }
        if (known.empty()) {
            problem += "none are allowed here)";
        } else {
            problem += "expected one of: ";
            for (std::size_t i = 0; i < known.size(); ++i) {
                if (i != 0)
                    problem += ", ";
                problem += known[i];
            }
            problem += ")";
        }
        node_.fail(problem);
    }
}

std::vector<std::pair<std::string_view, JsonNode>> JsonObject::members() const {
    std::vector<std::pair<std::string_view, JsonNode>> out;
    out.reserve(object_->size());
    for (const auto& member : *object_) {
        const std::string_view key = member.key();
        out.emplace_back(
            key, JsonNode(member.value(), node_.source(), json_path_member(node_.path(), key)));
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// JsonArray

JsonArray::JsonArray(const JsonNode& node) : node_(node), array_(node.value().if_array()) {
    if (array_ == nullptr)
        node_.fail("expected an array, got " + describe_json(node.value()));
}

JsonNode JsonArray::at(std::size_t index) const {
    return JsonNode(array_->at(index), node_.source(), json_path_element(node_.path(), index));
}

std::vector<JsonNode> JsonArray::elements() const {
    std::vector<JsonNode> out;
    out.reserve(array_->size());
    for (std::size_t i = 0; i < array_->size(); ++i)
        out.push_back(at(i));
    return out;
}

}  // namespace ppb
