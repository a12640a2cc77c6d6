// The frameworks' configurations of a plan (framework_config.hpp): each read from the document's
// members with the checked reader, then written in the framework's own syntax.
#include "framework_config.hpp"

#include "array_text.hpp"

#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>
#include <ppb/partition/configuration_flags.hpp>
#include <ppb/partition/framework_args.hpp>
#include <ppb/partition/plan_document.hpp>

#include <fmt/format.h>
#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <utility>

namespace ppb::cli {
namespace {

// A recompute count or an offset: within the layers a model may have, either sign.
void check_count_rows(const JsonNode& node) {
    for (const JsonNode& row : node.as_array().elements()) {
        for (const JsonNode& n : row.as_array().elements())
            (void)n.as_integer(-std::int64_t{limits::layers.max}, limits::layers.max);
    }
}

// MindFormers' keys as a block of its training YAML; with a searched configuration's `degrees`,
// its parallel_config and runner_config too.
FrameworkConfig mindformers(const JsonObject& plan, const FrameworkDegrees* degrees) {
    FrameworkConfig config{"mindformers", "MindFormers / SAPP configuration", {}, {}, "yaml"};
    if (degrees && !degrees->mindformers_why_not.empty()) {
        config.why_not = degrees->mindformers_why_not;
        return config;
    }
    const JsonNode arrays = plan.required("mindformers");
    if (arrays.is_null()) {
        config.why_not = std::string(plan.required("mindformers_why_not").as_string());
        return config;
    }
    const JsonObject members = arrays.as_object();
    constexpr std::array<std::string_view, 4> keys = {"offset", "recompute", "select_recompute",
                                                      "select_comm_recompute"};
    members.allow_only(keys, "MindFormers array");
    std::array<std::string, 4> text;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const JsonNode array = members.required(keys[i]);
        check_count_rows(array);
        text[i] = array_text(array.value());
    }
    // The degrees: model.model_config's beside the offset, the other sections between the model
    // and recompute_config, in the order given.
    std::string model_config;
    std::string sections;
    std::string section;
    for (const auto& [key, value] :
         degrees ? degrees->mindformers : std::vector<std::pair<std::string, std::uint64_t>>()) {
        constexpr std::string_view model_prefix = "model.model_config.";
        if (key.starts_with(model_prefix)) {
            model_config += fmt::format("    {}: {}\n", key.substr(model_prefix.size()), value);
            continue;
        }
        const std::size_t dot = key.find('.');
        if (key.substr(0, dot) != section) {
            section = key.substr(0, dot);
            sections += section + ":\n";
        }
        sections += fmt::format("  {}: {}\n", key.substr(dot + 1), value);
    }
    config.text = fmt::format(
        "model:\n  model_config:\n{}    offset: {}\n{}recompute_config:\n  recompute: {}\n"
        "  select_recompute: {}\n  select_comm_recompute: {}",
        model_config, text[0], sections, text[1], text[2], text[3]);
    return config;
}

// Flags as one shell line from `args` (a list of strings), or why none from `why_key`; after
// `degrees` (a searched configuration's), without the plan's flags they already give.
FrameworkConfig flags(const JsonObject& object, std::string_view args_key, std::string_view why_key,
                      std::string framework, std::string title,
                      const std::vector<std::string>& degrees) {
    FrameworkConfig config{std::move(framework), std::move(title), {}, {}, "shell"};
    const JsonNode args = object.required(args_key);
    if (args.is_null()) {
        config.why_not = std::string(object.required(why_key).as_string());
        return config;
    }
    std::vector<std::string> plan_tokens;
    for (const JsonNode& token : args.as_array().elements())
        plan_tokens.emplace_back(token.as_string());
    if (plan_tokens.empty())
        args.fail("expected the framework's flags, got none");
    std::vector<std::string> tokens = degrees;
    for (std::size_t i = 0; i < plan_tokens.size(); ++i) {
        // A flag the degrees give, with its values if it takes any (no value of a plan's flag
        // starts with "--": counts, names, the layout string), and the switches without one
        // (--overlap-moe-expert-parallel-comm) alone.
        if (plan_tokens[i].starts_with("--") &&
            std::ranges::find(degrees, plan_tokens[i]) != degrees.end()) {
            while (i + 1 < plan_tokens.size() && !plan_tokens[i + 1].starts_with("--"))
                ++i;
            continue;
        }
        tokens.push_back(plan_tokens[i]);
    }
    config.text = partition::shell_line(tokens);
    return config;
}

// The settings of `degrees` in `section` ("parallelism", "training") as TOML lines.
std::string toml_settings(const FrameworkDegrees& degrees, std::string_view section) {
    std::string out;
    for (const auto& [key, value] : degrees.torchtitan) {
        const std::size_t dot = key.find('.');
        if (std::string_view(key).substr(0, dot) == section)
            out += fmt::format("{} = {}\n", key.substr(dot + 1), value);
    }
    return out;
}

// A TOML basic string: in double quotes, with '"', '\' and control characters escaped.
std::string toml_string(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\')
            out += fmt::format("\\{}", c);
        else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            out += fmt::format("\\u{:04X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        else
            out += c;
    }
    return out + "\"";
}

// torchtitan's job configuration: the tables that exist as one TOML block, and why any is missing;
// with a searched configuration's `degrees`, those first in [parallelism] and [training].
void torchtitan(const JsonObject& plan, const FrameworkDegrees* degrees,
                std::vector<FrameworkConfig>& out) {
    if (degrees && !degrees->torchtitan_why_not.empty()) {
        out.push_back({"torchtitan",
                       "torchtitan job configuration (TOML)",
                       {},
                       degrees->torchtitan_why_not,
                       "toml"});
        return;
    }
    const JsonObject titan = plan.required("torchtitan").as_object();
    std::string toml = degrees ? toml_settings(*degrees, "parallelism") : std::string();
    std::vector<FrameworkConfig> missing;
    const JsonNode parts = titan.required("module_fqns_per_model_part");
    if (parts.is_null()) {
        missing.push_back({"torchtitan-parallelism",
                           "torchtitan [parallelism]",
                           {},
                           std::string(titan.required("why_not").as_string()),
                           "toml"});
    } else if (const std::uint32_t stages =
                   titan.required("pipeline_parallel_degree").as_count(limits::stages);
               stages > 1 || parts.as_array().size() > 1) {
        // (One stage of one part: torchtitan does not pipeline, nothing to say of it.)
        if (!degrees)
            toml += fmt::format("pipeline_parallel_degree = {}\n", stages);
        toml += fmt::format("pipeline_parallel_schedule = {}\nmodule_fqns_per_model_part = [\n",
                            toml_string(titan.required("pipeline_parallel_schedule").as_string()));
        for (const JsonNode& part : parts.as_array().elements()) {
            std::string names;
            for (const JsonNode& name : part.as_array().elements())
                names += (names.empty() ? "" : ", ") + toml_string(name.as_string());
            toml += fmt::format("  [{}],\n", names);
        }
        toml += "]\n";
    }
    if (!toml.empty())
        toml = "[parallelism]\n" + toml;
    if (degrees) {
        if (const std::string training = toml_settings(*degrees, "training"); !training.empty())
            toml += "[training]\n" + training;
    }
    const JsonNode ac = titan.required("activation_checkpoint");
    if (ac.is_null()) {
        missing.push_back({"torchtitan-activation-checkpoint",
                           "torchtitan [activation_checkpoint]",
                           {},
                           std::string(titan.required("activation_checkpoint_why_not").as_string()),
                           "toml"});
    } else {
        const JsonObject setting = ac.as_object();
        toml += fmt::format("[activation_checkpoint]\nmode = {}\n",
                            toml_string(setting.required("mode").as_string()));
        if (const auto option = setting.optional("selective_ac_option"))
            toml += fmt::format("selective_ac_option = {}\n", toml_string(option->as_string()));
    }
    if (!toml.empty()) {
        toml.pop_back();  // the block's last newline
        out.push_back(
            {"torchtitan", "torchtitan job configuration (TOML)", std::move(toml), {}, "toml"});
    }
    for (FrameworkConfig& config : missing)
        out.push_back(std::move(config));
}

std::string indented(std::string_view text) {
    std::string out = "  ";
    for (const char c : text) {
        out += c;
        if (c == '\n')
            out += "  ";
    }
    return out;
}

}  // namespace

std::vector<FrameworkConfig> framework_configs(const boost::json::object& plan,
                                               std::string_view source) {
    const boost::json::value document(plan);
    return framework_configs(JsonNode(document, source));
}

namespace {

std::vector<FrameworkConfig> configs_of(const JsonNode& plan, const FrameworkDegrees* degrees) {
    const JsonObject members = plan.as_object();
    const JsonNode rule_node = members.required("recompute_rule");
    const auto rule = partition::rule_from_name(rule_node.as_string());
    if (!rule)
        rule_node.fail("expected a recompute rule (any, mindformers, megatron, torchtitan)");
    std::vector<FrameworkConfig> out = {mindformers(members, degrees)};
    // Under the rules made for them, the other frameworks' settings; for a searched
    // configuration every framework's, its degrees at least, and why the plan is not one it runs.
    if (degrees || *rule == partition::RecomputeRule::megatron ||
        *rule == partition::RecomputeRule::torchtitan) {
        const std::vector<std::string> flag_degrees =
            degrees ? degrees->megatron : std::vector<std::string>();
        const JsonObject megatron = members.required("megatron").as_object();
        out.push_back(
            flags(megatron, "args", "why_not", "megatron", "Megatron-LM flags", flag_degrees));
        out.push_back(flags(megatron, "legacy_args", "legacy_why_not", "megatron-legacy",
                            "Megatron-LM before --pipeline-model-parallel-layout", flag_degrees));
        out.push_back(flags(members.required("mindspeed_llm").as_object(), "args", "why_not",
                            "mindspeed-llm", "MindSpeed-LLM flags", flag_degrees));
        torchtitan(members, degrees, out);
    }
    return out;
}

}  // namespace

std::vector<FrameworkConfig> framework_configs(const JsonNode& plan) {
    return configs_of(plan, nullptr);
}

std::vector<FrameworkConfig> framework_configs(const JsonNode& plan,
                                               const FrameworkDegrees& degrees) {
    return configs_of(plan, &degrees);
}

FrameworkDegrees framework_degrees(const partition::Configuration& configuration,
                                   const partition::AssumedSettings& assumed) {
    FrameworkDegrees out;
    out.megatron = partition::megatron_configuration_args(configuration, assumed).args;
    partition::KeyedSettings titan = partition::torchtitan_configuration(configuration);
    out.torchtitan = std::move(titan.settings);
    out.torchtitan_why_not = std::move(titan.why_not);
    partition::KeyedSettings mindformers = partition::mindformers_configuration(configuration);
    out.mindformers = std::move(mindformers.settings);
    out.mindformers_why_not = std::move(mindformers.why_not);
    return out;
}

namespace {

// ("section.key", count) members of a document's settings object.
std::vector<std::pair<std::string, std::uint64_t>> keyed_settings(const JsonNode& node,
                                                                  std::string_view framework) {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    for (const auto& [key, value] : node.as_object().members()) {
        if (key.find('.') == std::string_view::npos || key.front() == '.' || key.back() == '.')
            value.fail(
                fmt::format("expected a \"section.key\" name of {}'s configuration", framework));
        out.emplace_back(std::string(key), static_cast<std::uint64_t>(value.as_integer(
                                               0, std::numeric_limits<std::int64_t>::max())));
    }
    return out;
}

}  // namespace

FrameworkDegrees framework_degrees(const JsonNode& ranking_entry) {
    const JsonObject entry = ranking_entry.as_object();
    FrameworkDegrees out;
    for (const JsonNode& token : entry.required("megatron_parallelism").as_array().elements())
        out.megatron.emplace_back(token.as_string());
    if (const JsonNode titan = entry.required("torchtitan_parallelism"); titan.is_null()) {
        out.torchtitan_why_not =
            std::string(entry.required("torchtitan_parallelism_why_not").as_string());
    } else {
        out.torchtitan = keyed_settings(titan, "torchtitan");
    }
    if (const auto mindformers = entry.optional("mindformers_parallelism")) {
        if (mindformers->is_null()) {
            out.mindformers_why_not =
                std::string(entry.required("mindformers_parallelism_why_not").as_string());
        } else {
            out.mindformers = keyed_settings(*mindformers, "MindFormers");
        }
    }
    return out;
}

std::string framework_configs_text(const std::vector<FrameworkConfig>& configs) {
    std::string out;
    for (std::size_t i = 0; i < configs.size(); ++i) {
        const FrameworkConfig& config = configs[i];
        // MindFormers' block, then the other frameworks' together.
        if (i < 2)
            out += "\n";
        out +=
            config.title + ":\n" +
            indented(config.text.empty() ? fmt::format("none ({})", config.why_not) : config.text) +
            "\n";
    }
    return out;
}

}  // namespace ppb::cli
