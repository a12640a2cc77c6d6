// SAPP's planning problem in its -init YAML: see sapp_problem.hpp. The checks are SAPP's
// validator's (yaml_parser.py: _validate_int, _to_bool, YamlOptimizationConfig.validate), in its
// order, each message naming the key and saying what SAPP takes.
#include "yaml_config.hpp"

#include <ppb/importers/sapp_problem.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace ppb::importers {
namespace {

using detail::boolean_of;
using detail::Config;
using detail::describe;
using detail::integer_of;
using detail::number_of;
using detail::plain_scalar;
using detail::Setting;

std::string lower_trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n\f\v");
    if (first == std::string_view::npos)
        return {};
    const auto last = text.find_last_not_of(" \t\r\n\f\v");
    std::string out(text.substr(first, last - first + 1));
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// A plain integer PyYAML reads in another base than ppb would (010 is octal 8 to it).
bool other_base(std::string_view text) {
    if (text.starts_with('+') || text.starts_with('-'))
        text.remove_prefix(1);
    return text.size() > 1 && text.front() == '0';
}

// SAPP's _validate_int: an integer, not a float and not a boolean (Python's int() of a quoted
// string of digits is an integer too).
std::int64_t sapp_integer(const Setting& setting) {
    const YAML::Node& node = setting.node();
    if (node.IsNull())
        setting.fail("must be an integer, got nothing (SAPP's int() of None fails)");
    if (!node.IsScalar())
        setting.fail("must be an integer, got " + describe(node));
    const std::string& text = node.Scalar();
    if (plain_scalar(node)) {
        if (const auto flag = boolean_of(node)) {
            setting.fail(fmt::format(
                "must be an integer, got the boolean {} (SAPP refuses a bool where it wants an "
                "integer)",
                text));
        }
        if (const auto value = integer_of(node)) {
            if (other_base(text)) {
                setting.fail(fmt::format(
                    "{} has a leading 0, which the YAML reader SAPP uses (PyYAML) reads as an "
                    "octal number: write the integer without it",
                    text));
            }
            return *value;
        }
        if (const auto value = number_of(node)) {
            setting.fail(fmt::format(
                "must be an integer, got {}, a float (SAPP refuses a float where it wants an "
                "integer{})",
                text,
                std::floor(*value) == *value ? fmt::format(", even {}: write {}", text, *value)
                                             : std::string()));
        }
        setting.fail(fmt::format("must be an integer, got {}", describe(node)));
    }
    YAML::Node trimmed(lower_trimmed(text));
    if (const auto value = integer_of(trimmed))
        return *value;
    setting.fail(fmt::format("must be an integer, got the string {}", describe(node)));
}

// SAPP's _to_bool: YAML's booleans, 0 / 1, 0.0 / 1.0, and the strings true, yes, 1, false, no,
// 0 in any case.
bool sapp_boolean(const Setting& setting) {
    const YAML::Node& node = setting.node();
    const std::string accepted = "expected true, false, yes, no, 1 or 0";
    if (node.IsNull())
        setting.fail("cannot be read as a boolean: got nothing; " + accepted);
    if (!node.IsScalar())
        setting.fail(
            fmt::format("cannot be read as a boolean: got {}; {}", describe(node), accepted));
    if (plain_scalar(node)) {
        if (const auto flag = boolean_of(node))
            return *flag;
        if (const auto value = number_of(node)) {
            if (*value == 0.0 || *value == 1.0)
                return *value == 1.0;
            setting.fail(fmt::format("cannot be read as a boolean: {} is neither 0 nor 1; {}",
                                     node.Scalar(), accepted));
        }
    }
    const std::string word = lower_trimmed(node.Scalar());
    if (word == "true" || word == "yes" || word == "1")
        return true;
    if (word == "false" || word == "no" || word == "0")
        return false;
    setting.fail(fmt::format("cannot be read as a boolean: got {}; {}", describe(node), accepted));
}

// sim_comm_time: Python's float() of the value, finite and not negative.
double sapp_time(const Setting& setting) {
    const YAML::Node& node = setting.node();
    if (!node.IsScalar() || (plain_scalar(node) && boolean_of(node))) {
        setting.fail("must be a finite number of ms (0 or more), got " + describe(node));
    }
    const std::string text = plain_scalar(node) ? node.Scalar() : lower_trimmed(node.Scalar());
    const auto value = number_of(YAML::Node(text));
    if (!value) {
        const std::string word = lower_trimmed(text);
        if (word.find("nan") != std::string::npos || word.find("inf") != std::string::npos)
            setting.fail(fmt::format("must be a finite number of ms, got {}", text));
        setting.fail("must be a finite number of ms (0 or more), got " + describe(node));
    }
    if (*value < 0.0)
        setting.fail(fmt::format("must be non-negative, got {}", text));
    return *value;
}

Setting lookup(const Config& config, std::string_view key) {
    return config.lookup({"pipeline_config", key});
}

bool given(const Setting& setting) {
    return setting.present();
}

template <typename T>
SappValue<T> value_at(const Setting& setting, T value) {
    return {value, setting.where()};
}

// An integer field within [min, max]; SAPP's own lower bound words the message.
std::uint64_t bounded(const Setting& setting, std::int64_t value, std::int64_t min,
                      std::int64_t max, std::string_view what) {
    if (value < min) {
        setting.fail(
            fmt::format("must be {}, got {}", min == 0 ? "non-negative" : "positive", value));
    }
    if (value > max)
        setting.fail(
            fmt::format("{} is more than ppb plans for ({} at most {})", value, what, max));
    return static_cast<std::uint64_t>(value);
}

SappValue<std::uint32_t> count(const Setting& setting, const limits::CountRange& range) {
    const std::int64_t value = sapp_integer(setting);
    return value_at(setting,
                    static_cast<std::uint32_t>(bounded(setting, value, 1, range.max, range.unit)));
}

}  // namespace

SappProblem read_sapp_problem(const std::filesystem::path& file) {
    const Config config(file, "a SAPP -init description");
    SappProblem problem;
    problem.file = config.name();
    const Setting section = config.lookup({"pipeline_config"});
    if (section.present() && !section.node().IsMap()) {
        section.fail("expected a mapping (SAPP's pipeline_config section), got " +
                     describe(section.node()));
    }

    // pipeline_num and micro_batch_num, which SAPP requires: whoever uses the problem refuses
    // them missing unless its flags give them (SAPP's null is missing too).
    if (const Setting s = lookup(config, "pipeline_num"); given(s) && !s.node().IsNull())
        problem.pipeline_num = count(s, limits::stages);
    if (const Setting s = lookup(config, "num_layer"); given(s) && !s.node().IsNull())
        problem.num_layer = count(s, limits::layers);
    if (const Setting s = lookup(config, "micro_batch_num"); given(s) && !s.node().IsNull())
        problem.micro_batch_num = count(s, limits::micro_batches);

    if (const Setting s = lookup(config, "num_of_interleave"); given(s))
        problem.num_of_interleave = count(s, limits::chunks);
    if (const Setting s = lookup(config, "vpp_less_memory"); given(s))
        problem.vpp_less_memory = value_at(s, sapp_boolean(s));
    if (const Setting s = lookup(config, "optimization_level"); given(s)) {
        const std::int64_t level = sapp_integer(s);
        if (level < 0 || level > 2)
            s.fail(fmt::format("must be 0, 1, or 2, got {}", level));
        problem.optimization_level = value_at(s, static_cast<std::uint32_t>(level));
    }
    const auto memory = [&](std::string_view key, SappValue<std::uint64_t>& out) {
        if (const Setting s = lookup(config, key); given(s)) {
            const auto max = static_cast<std::int64_t>(limits::memory_mb.max);
            out = value_at(s, bounded(s, sapp_integer(s), 0, max, "MB"));
        }
    };
    memory("memory_limit", problem.memory_limit);
    memory("constant_memory", problem.constant_memory);
    if (const Setting s = lookup(config, "enable_simulation"); given(s))
        problem.enable_simulation = value_at(s, sapp_boolean(s));
    if (const Setting s = lookup(config, "sim_comm_time"); given(s))
        problem.sim_comm_time = value_at(s, sapp_time(s));
    if (const Setting s = lookup(config, "use_backward_time"); given(s))
        problem.use_backward_time = value_at(s, sapp_boolean(s));
    // SAPP's SeqPipe: each micro-batch split into seq_split_num parts along the sequence. ppb's
    // schedules hold whole micro-batches, so a split is refused by name (1, no split, is read).
    if (const Setting s = lookup(config, "seq_split_num"); given(s)) {
        const std::int64_t split = sapp_integer(s);
        if (split != 1) {
            s.fail(fmt::format(
                "{}: SeqPipe (each micro-batch split into {} parts along the sequence) is not "
                "modelled by ppb, whose schedules and in-flight counts hold whole micro-batches; "
                "plan with seq_split_num 1 or leave it out",
                split, split));
        }
    }
    return problem;
}

std::optional<std::string> sapp_reserved_name(std::span<const std::string> body_names) {
    for (const std::string& name : body_names) {
        if (std::find(sapp_solver_names.begin(), sapp_solver_names.end(), name) !=
            sapp_solver_names.end())
            return name;
    }
    return std::nullopt;
}

}  // namespace ppb::importers
