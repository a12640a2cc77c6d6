// TOML values that know where they are: see toml_config.hpp.
#include "toml_config.hpp"

#include <ppb/errors.hpp>

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace ppb::importers::detail {

std::string TomlValue::where() const {
    if (file_ == nullptr)
        return path_;
    if (node_ != nullptr && node_->source().begin.line > 0)
        return fmt::format("{}:{}: {}", *file_, node_->source().begin.line, path_);
    return fmt::format("{}: {}", *file_, path_);
}

void TomlValue::fail(std::string_view problem) const {
    throw InputError(fmt::format("{}: {}", where(), problem));
}

std::string TomlValue::key() const {
    const std::size_t dot = path_.rfind('.');
    return dot == std::string::npos ? path_ : path_.substr(dot + 1);
}

std::string TomlValue::described() const {
    if (node_ == nullptr)
        return "nothing";
    if (const auto* s = node_->as_string())
        return fmt::format("the string \"{}\"", s->get());
    if (const auto* i = node_->as_integer())
        return fmt::format("the integer {}", i->get());
    if (const auto* f = node_->as_floating_point())
        return fmt::format("the number {}", f->get());
    if (const auto* b = node_->as_boolean())
        return b->get() ? "true" : "false";
    if (node_->is_array())
        return "an array";
    if (node_->is_table())
        return "a table";
    return "a date or time";
}

std::optional<std::int64_t> TomlValue::integer() const {
    if (node_ == nullptr)
        return std::nullopt;
    if (const auto* i = node_->as_integer())
        return i->get();
    fail("expected an integer, got " + described());
}

std::optional<double> TomlValue::number() const {
    if (node_ == nullptr)
        return std::nullopt;
    if (const auto* i = node_->as_integer())
        return static_cast<double>(i->get());
    if (const auto* f = node_->as_floating_point(); f != nullptr && std::isfinite(f->get()))
        return f->get();
    fail("expected a finite number, got " + described());
}

std::optional<bool> TomlValue::boolean() const {
    if (node_ == nullptr)
        return std::nullopt;
    if (const auto* b = node_->as_boolean())
        return b->get();
    fail("expected true or false, got " + described());
}

std::optional<std::string> TomlValue::text() const {
    if (node_ == nullptr)
        return std::nullopt;
    if (const auto* s = node_->as_string())
        return s->get();
    fail("expected a string, got " + described());
}

std::optional<std::vector<std::string>> TomlValue::texts() const {
    if (node_ == nullptr)
        return std::nullopt;
    const auto* array = node_->as_array();
    if (array == nullptr)
        fail("expected an array of strings, got " + described());
    std::vector<std::string> out;
    for (std::size_t i = 0; i < array->size(); ++i) {
        const auto* s = array->get(i)->as_string();
        if (s == nullptr) {
            TomlValue(file_, array->get(i), fmt::format("{}[{}]", path_, i))
                .fail("expected a string, got " + TomlValue(file_, array->get(i), "").described());
        }
        out.push_back(s->get());
    }
    return out;
}

std::optional<std::int64_t> TomlValue::integer_in(std::int64_t min, std::int64_t max) const {
    const auto value = integer();
    if (value && (*value < min || *value > max))
        fail(fmt::format("expected an integer from {} to {}, got {}", min, max, *value));
    return value;
}

std::vector<TomlValue> TomlValue::members() const {
    std::vector<TomlValue> out;
    if (node_ == nullptr)
        return out;
    const auto* table = node_->as_table();
    if (table == nullptr)
        fail("expected a table, got " + described());
    for (const auto& [key, value] : *table)
        out.emplace_back(file_, &value, fmt::format("{}.{}", path_, key.str()));
    return out;
}

TomlConfig::TomlConfig(const std::filesystem::path& file) : name_(file.string()) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw InputError(fmt::format("{}: cannot read the file", name_));
    std::ostringstream text;
    text << in.rdbuf();
    try {
        root_ = std::make_unique<toml::table>(toml::parse(text.str(), name_));
    } catch (const toml::parse_error& e) {
        throw InputError(fmt::format("{}:{}:{}: not TOML: {}", name_, e.source().begin.line,
                                     e.source().begin.column, e.description()));
    }
}

TomlConfig::~TomlConfig() = default;

TomlValue TomlConfig::lookup(std::initializer_list<std::string_view> path) const {
    const toml::node* node = root_.get();
    std::string at;
    for (const std::string_view part : path) {
        const auto* table = node->as_table();
        if (table == nullptr)
            TomlValue(&name_, node, at).fail("expected a table (a [section])");
        at += at.empty() ? std::string(part) : "." + std::string(part);
        node = table->get(part);
        if (node == nullptr)
            return TomlValue(&name_, nullptr, at);
    }
    return TomlValue(&name_, node, at);
}

}  // namespace ppb::importers::detail
