#include "json_reader.hpp"

#include <ppb/plugin.hpp>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value_stack.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ppb::table {

namespace {

namespace json = boost::json;
using ppb::plugin::InvalidInput;

constexpr std::size_t max_nesting = 64;

// A basic_parser handler that builds the value as boost::json::parse does (value_stack) and
// also: reads decimal numbers correctly rounded (Boost.JSON 1.81 converts them quickly but not
// always exactly: 123456789.12345679 reads as 123456789.12345681), refuses repeated keys (Boost
// keeps the last) and numbers that overflow a double (Boost makes them infinite). It tracks the
// path of the value being parsed so that its refusals say where.
class ExactHandler {
  public:
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    ExactHandler() { stack_.reset(); }

    [[nodiscard]] json::value release() { return stack_.release(); }
    // Why the handler stopped the parse; empty when it did not.
    [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

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
            fail(frames_.size() - 1,
                 "duplicate field " + quoted_key(key_) + " (a JSON object must not repeat a key)",
                 ec);
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
        // std::from_chars rounds correctly. It reports overflow and underflow alike as out of
        // range, so Boost's value decides those (infinite: overflow, refused; else underflow).
        double exact = 0.0;
        const char* const first = number_.data();
        const char* const last = first + number_.size();
        const auto [end, error] = std::from_chars(first, last, exact);
        if (error == std::errc() && end == last)
            d = exact;
        if (!std::isfinite(d)) {
            fail(frames_.size(), "number out of range: " + number_ + " does not fit a double", ec);
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
            out = frames_[i].is_object ? member_path(out, frames_[i].key)
                                       : element_path(out, frames_[i].index);
        }
        return out;
    }

    void fail(std::size_t depth, const std::string& what, json::error_code& ec) {
        const std::string where = path(depth);
        problem_ = where.empty() ? what : where + ": " + what;
        ec = json::error::exception;
    }

    json::value_stack stack_;
    std::vector<Frame> frames_;
    std::string key_;
    std::string number_;
    std::string problem_;
};

// "line L, column C" (1-based; columns in UTF-8 characters) of byte `offset` of `text`.
std::string location(std::string_view text, std::size_t offset) {
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
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string syntax_problem(const json::error_code& ec, std::string_view text, std::size_t offset) {
    if (ec == json::error::incomplete) {
        if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
            return "the text is empty";
        return "unexpected end of the text";
    }
    if (ec == json::error::extra_data)
        return "unexpected text after the JSON document";
    if (ec == json::error::too_deep)
        return "nested more than " + std::to_string(max_nesting) + " levels deep";
    if (ec == json::error::syntax && offset < text.size()) {
        const auto c = static_cast<unsigned char>(text[offset]);
        if (c >= 0x20 && c < 0x7f)
            return std::string("syntax error at '") + static_cast<char>(c) + "'";
    }
    return ec.message();
}

[[noreturn]] void malformed(std::string_view text, std::size_t offset, const std::string& what) {
    throw InvalidInput("the options are not valid JSON (" + location(text, offset) + "): " + what);
}

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

std::string shortest(double d) {
    char buffer[32];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, d);
    if (ec != std::errc())
        return "?";
    return std::string(buffer, end);
}

}  // namespace

json::value parse_json_exact(std::string_view text) {
    std::size_t start = 0;
    if (text.starts_with("\xEF\xBB\xBF"))
        start = 3;  // UTF-8 byte-order mark
    json::parse_options options;
    options.max_depth = max_nesting;
    json::basic_parser<ExactHandler> parser(options);
    json::error_code ec;
    const std::size_t consumed =
        parser.write_some(false, text.data() + start, text.size() - start, ec);
    const std::size_t offset = start + consumed;
    if (ec) {
        const std::string& problem = parser.handler().problem();
        if (!problem.empty())
            throw InvalidInput(problem);
        malformed(text, offset, syntax_problem(ec, text, offset));
    }
    if (offset < text.size())
        malformed(text, offset, syntax_problem(json::error::extra_data, text, offset));
    return parser.handler().release();
}

std::string member_path(std::string_view path, std::string_view key) {
    if (is_plain_name(key)) {
        if (path.empty())
            return std::string(key);
        return std::string(path) + "." + std::string(key);
    }
    return std::string(path) + "[" + json::serialize(json::string_view(key.data(), key.size())) +
           "]";
}

std::string element_path(std::string_view path, std::size_t index) {
    return std::string(path) + "[" + std::to_string(index) + "]";
}

std::string describe_json(const json::value& value) {
    switch (value.kind()) {
        case json::kind::null:
            return "null";
        case json::kind::bool_:
            return value.get_bool() ? "true" : "false";
        case json::kind::int64:
            return std::to_string(value.get_int64());
        case json::kind::uint64:
            return std::to_string(value.get_uint64());
        case json::kind::double_:
            return shortest(value.get_double());
        case json::kind::string: {
            constexpr std::size_t max_length = 40;
            const std::string_view s = value.get_string();
            if (s.size() <= max_length)
                return json::serialize(value.get_string());
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
    }
    return "a value";
}

std::string quoted_key(std::string_view key) {
    const bool plain = std::all_of(key.begin(), key.end(), [](char c) {
        return static_cast<unsigned char>(c) >= 0x20 && c != '\'' && c != 0x7f;
    });
    if (plain)
        return "'" + std::string(key) + "'";
    return json::serialize(json::string_view(key.data(), key.size()));
}

std::string_view closest_name(std::string_view unknown, std::span<const std::string_view> known) {
    std::string_view best;
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    for (const std::string_view name : known) {
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

}  // namespace ppb::table
