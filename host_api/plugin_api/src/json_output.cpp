// Indented JSON for people and machines.
//
// Layout (pretty): two spaces per level, one object member or array element per line, members in
// the object's (insertion) order. An array of scalars is written on one line when that line stays
// within 100 columns ("residuals_mb": [1.5, -2.25, 0.75]); empty arrays and objects are [] and {}.
// Compact: the same without any space or line break.
//
// Numbers: integers as integers; doubles in the shortest form that reads back to the same double
// (fmt's "{}"), with ".0" appended when that form would look like an integer (2048.0, not 2048)
// so that a double reads back as a double and the type stays visible. Exponents are written as
// fmt writes them (1e+20, 1e-07), which is valid JSON.
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>

#include "json_text.hpp"

#include <boost/json/serialize.hpp>

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ppb {
namespace {

namespace json = boost::json;

constexpr std::size_t line_limit = 100;
constexpr std::size_t indent_width = 2;

// Where a value is, built into a JSON path only when a message needs it.
struct PathLink {
    const PathLink* parent;
    std::string_view key;  // a member, or
    std::size_t index;     // an element when `key` is null
    [[nodiscard]] std::string text() const {
        const std::string head = parent != nullptr ? parent->text() : std::string();
        return key.data() != nullptr ? json_path_member(head, key) : json_path_element(head, index);
    }
};

std::string double_text(double d, const PathLink* where) {
    if (!std::isfinite(d)) {
        throw std::domain_error(fmt::format(
            "cannot write {} as JSON{}{}: JSON has no NaN or infinity", d,
            where != nullptr ? " at " : "", where != nullptr ? where->text() : std::string()));
    }
    return json_number_text(d);
}

std::string string_text(std::string_view s) {
    return json::serialize(json::string_view(s.data(), s.size()));
}

class Writer {
  public:
    explicit Writer(bool compact) : compact_(compact) {}

    std::string out;

    void value(const json::value& v, std::size_t depth, std::size_t column, const PathLink* path) {
        switch (v.kind()) {
            case json::kind::object:
                object(v.get_object(), depth, path);
                break;
            case json::kind::array:
                array(v.get_array(), depth, column, path);
                break;
            default:
                out += scalar(v, path);
                break;
        }
    }

  private:
    bool compact_;

    static std::string scalar(const json::value& v, const PathLink* path) {
        if (v.is_double())
            return double_text(v.get_double(), path);
        return json_scalar_text(v);
    }

    void newline(std::size_t depth) {
        if (compact_)
            return;
        out += '\n';
        out.append(depth * indent_width, ' ');
    }

    void object(const json::object& o, std::size_t depth, const PathLink* path) {
        if (o.empty()) {
            out += "{}";
            return;
        }
        out += '{';
        bool first = true;
        for (const auto& member : o) {
            if (!first)
                out += ',';
            first = false;
            newline(depth + 1);
            const std::string key = string_text(member.key());
            out += key;
            out += compact_ ? ":" : ": ";
            const PathLink link{path, member.key(), 0};
            value(member.value(), depth + 1, (depth + 1) * indent_width + key.size() + 2, &link);
        }
        newline(depth);
        out += '}';
    }

    void array(const json::array& a, std::size_t depth, std::size_t column, const PathLink* path) {
        if (a.empty()) {
            out += "[]";
            return;
        }
        // Scalars only: try one line.
        bool scalars = true;
        for (const auto& element : a)
            scalars = scalars && !element.is_structured();
        if (scalars) {
            std::string line = "[";
            for (std::size_t i = 0; i < a.size(); ++i) {
                if (i != 0)
                    line += compact_ ? "," : ", ";
                const PathLink link{path, {}, i};
                line += scalar(a[i], &link);
            }
            line += ']';
            // +1: the comma that may follow.
            if (compact_ || column + line.size() + 1 <= line_limit) {
                out += line;
                return;
            }
        }
        out += '[';
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (i != 0)
                out += ',';
            newline(depth + 1);
            const PathLink link{path, {}, i};
            value(a[i], depth + 1, (depth + 1) * indent_width, &link);
        }
        newline(depth);
        out += ']';
    }
};

}  // namespace

std::string json_number_text(double d) {
    std::string text = fmt::format("{}", d);
    if (std::isfinite(d) && text.find_first_of(".eE") == std::string::npos)
        text += ".0";
    return text;
}

std::string json_scalar_text(const boost::json::value& v) {
    switch (v.kind()) {
        case json::kind::null:
            return "null";
        case json::kind::bool_:
            return v.get_bool() ? "true" : "false";
        case json::kind::int64:
            return std::to_string(v.get_int64());
        case json::kind::uint64:
            return std::to_string(v.get_uint64());
        case json::kind::double_:
            return json_number_text(v.get_double());
        case json::kind::string:
            return string_text(v.get_string());
        default:
            return {};
    }
}

std::string to_pretty_json(const boost::json::value& value) {
    Writer writer(false);
    writer.value(value, 0, 0, nullptr);
    writer.out += '\n';
    return std::move(writer.out);
}

std::string to_compact_json(const boost::json::value& value) {
    Writer writer(true);
    writer.value(value, 0, 0, nullptr);
    return std::move(writer.out);
}

}  // namespace ppb
