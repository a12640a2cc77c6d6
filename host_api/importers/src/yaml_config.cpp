// Reading YAML configurations for the importers: see yaml_config.hpp.
#include "yaml_config.hpp"

#include <ppb/importers/logs.hpp>
#include <ppb/json_input.hpp>

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace ppb::importers::detail {

std::string describe(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Null:
            return "nothing";
        case YAML::NodeType::Scalar:
            return quote_excerpt(node.Scalar(), 40);
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Map:
            return "a mapping";
        default:
            return "an undefined value";
    }
}

bool plain_scalar(const YAML::Node& node) {
    return node.IsScalar() && node.Tag() != "!";
}

std::optional<std::int64_t> integer_of(const YAML::Node& node) {
    if (!plain_scalar(node))
        return std::nullopt;
    std::string_view text = node.Scalar();
    if (text.starts_with('+'))
        text.remove_prefix(1);
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

std::optional<bool> boolean_of(const YAML::Node& node) {
    if (!plain_scalar(node))
        return std::nullopt;
    const std::string& text = node.Scalar();
    for (const char* word : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
        if (text == word)
            return true;
    }
    for (const char* word : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
        if (text == word)
            return false;
    }
    return std::nullopt;
}

std::uint32_t positive_integer(const Setting& setting) {
    const auto value = integer_of(setting.node());
    if (!value || *value < 1 || *value > std::numeric_limits<std::uint32_t>::max())
        setting.fail(fmt::format("expected a positive integer, got {}", describe(setting.node())));
    return static_cast<std::uint32_t>(*value);
}

std::uint32_t count_in(const Setting& setting, const limits::CountRange& range) {
    const auto value = integer_of(setting.node());
    if (!value)
        setting.fail(fmt::format("expected a positive integer, got {}", describe(setting.node())));
    if (*value < range.min || *value > range.max)
        setting.fail(limits::out_of_range(std::to_string(*value), range));
    return static_cast<std::uint32_t>(*value);
}

std::optional<YAML::Node> find_member(const YAML::Node& map, std::string_view key) {
    std::optional<YAML::Node> found;
    for (const auto& member : map) {
        if (member.first.IsScalar() && member.first.Scalar() == key)
            found = member.second;
    }
    return found;
}

std::optional<double> number_of(const YAML::Node& node) {
    if (!plain_scalar(node))
        return std::nullopt;
    std::string_view text = node.Scalar();
    if (text.starts_with('+'))
        text.remove_prefix(1);
    double value = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() ||
        !std::isfinite(value))
        return std::nullopt;
    return value;
}

Config::Config(const std::filesystem::path& path, std::string_view what)
    : origin_{source_name(path), false} {
    load(read_text_file(path), what);
}

Config::Config(const std::string& text, std::string name, std::string_view what)
    : origin_{std::move(name), false} {
    load(text, what);
}

void Config::load(const std::string& text, std::string_view what) {
    const std::size_t bad = invalid_utf8_at(text);
    if (bad != std::string::npos) {
        const std::size_t line_start = text.rfind('\n', bad) + 1;  // npos + 1 == 0
        const auto line = 1 + std::count(text.begin(), text.begin() + line_start, '\n');
        const std::size_t line_end = text.find('\n', bad);
        throw InputError(fmt::format(
            "{}:{}: not UTF-8 text (byte 0x{:02X} at byte {} of the line: {}); a YAML file "
            "must be UTF-8",
            origin_.name, line, static_cast<unsigned char>(text[bad]), bad - line_start + 1,
            quote_excerpt(std::string_view(text).substr(line_start, line_end - line_start))));
    }
    try {
        root_.reset(YAML::Load(text));
    } catch (const YAML::DeepRecursion& e) {
        // yaml-cpp's own message for this is "bad file".
        throw InputError(fmt::format("{}:{}: not valid YAML: nesting deeper than {} levels",
                                     origin_.name, e.mark.line + 1, e.depth()));
    } catch (const YAML::ParserException& e) {
        throw InputError(fmt::format("{}:{}:{}: not valid YAML: {}", origin_.name, e.mark.line + 1,
                                     e.mark.column + 1, e.msg));
    } catch (const YAML::Exception& e) {
        throw InputError(fmt::format("{}: not valid YAML: {}", origin_.name, e.what()));
    }
    if (!root_.IsMap() && !root_.IsNull()) {
        throw InputError(fmt::format("{}: expected {} (a YAML mapping), got {}", origin_.name, what,
                                     describe(root_)));
    }
}

Setting Config::lookup(std::initializer_list<std::string_view> keys) const {
    return lookup(std::span<const std::string_view>(keys.begin(), keys.size()));
}

Setting Config::lookup(std::span<const std::string_view> keys) const {
    if (root_.IsNull())
        return {};
    Setting at(&origin_, root_, "");
    for (const std::string_view key : keys) {
        if (at.node().IsNull())
            return {};  // "recompute_config:" with nothing under it
        if (!at.node().IsMap()) {
            at.fail(
                fmt::format("expected a mapping (holding '{}'), got {}", key, describe(at.node())));
        }
        const auto member = find_member(at.node(), key);
        if (!member)
            return {};
        at = at.path().empty() ? Setting(&origin_, *member, std::string(key))
                               : at.member(*member, key);
    }
    return at;
}

std::vector<std::uint32_t> layer_counts(const std::vector<Setting>& entries,
                                        std::span<const std::uint32_t> layers) {
    std::vector<std::uint32_t> counts;
    std::size_t s = 0;
    for (const Setting& entry : entries) {
        const std::uint32_t stage_layers = layers[s++];
        if (const auto flag = boolean_of(entry.node())) {
            counts.push_back(*flag ? stage_layers : 0);
            continue;
        }
        const auto value = integer_of(entry.node());
        if (!value || *value < 0) {
            entry.fail("expected a count of layers (0 or more), true or false, got " +
                       describe(entry.node()));
        }
        counts.push_back(static_cast<std::uint32_t>(
            std::min<std::int64_t>(*value, static_cast<std::int64_t>(stage_layers))));
    }
    return counts;
}

}  // namespace ppb::importers::detail
