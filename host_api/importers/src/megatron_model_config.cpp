// A Megatron-LM run's arguments from its MODEL_ARGS file (ppb/importers/megatron_model_config.hpp
// states the rules and their sources).
#include <ppb/importers/megatron_model_config.hpp>

#include "launcher_words.hpp"
#include "yaml_config.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace ppb::importers {
namespace {

using detail::trimmed;

bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// `text` with its $NAME and ${NAME} replaced by the environment's values, as the launchers'
// shells do; an unset one is kept as written and its name added to `unset` (a path Megatron-LM
// reads but ppb does not, like ${DATA_CACHE_PATH}, needs no value; a count needs one, and
// argparse's reading of the text names the flag).
std::string substituted(std::string_view text, const Environment& environment,
                        std::vector<std::string>& unset) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '$' || i + 1 == text.size()) {
            out.push_back(text[i]);
            continue;
        }
        std::string_view name;
        std::size_t next = i + 1;
        if (text[next] == '{') {
            const std::size_t close = text.find('}', next);
            if (close == std::string_view::npos) {
                out.push_back(text[i]);
                continue;
            }
            name = text.substr(next + 1, close - next - 1);
            next = close + 1;
        } else {
            std::size_t end = next;
            while (end < text.size() && name_char(text[end]))
                ++end;
            name = text.substr(next, end - next);
            next = end;
        }
        if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0 ||
            !std::ranges::all_of(name, name_char)) {
            out.push_back(text[i]);
            continue;
        }
        if (const std::optional<std::string> value = environment(name)) {
            out += *value;
        } else {
            out += text.substr(i, next - i);
            unset.emplace_back(name);
        }
        i = next - 1;
    }
    return out;
}

}  // namespace

MegatronModelConfig megatron_model_config(const std::string& text, std::string source,
                                          const Environment& environment) {
    const detail::Config config(text, std::move(source),
                                "a Megatron-LM run configuration with MODEL_ARGS");
    const detail::Setting args = config.lookup({"MODEL_ARGS"});
    if (!args.present()) {
        throw InputError(fmt::format(
            "{}: no MODEL_ARGS (the mapping of Megatron-LM flags to values that Megatron-LM's "
            "functional tests and Megatron-MoE-ModelZoo's configurations launch a run with)",
            config.name()));
    }
    if (!args.node().IsMap()) {
        args.fail(fmt::format("expected a mapping of Megatron-LM flags to their values, got {}",
                              detail::describe(args.node())));
    }
    MegatronModelConfig out;
    // Said once each, after the entries: the flags `false` leaves out, and the variables the
    // environment does not set with the flags whose values hold them.
    struct UnsetVariable {
        std::string name;
        std::vector<std::string> flags;
    };
    std::vector<std::string> left_out;
    std::vector<UnsetVariable> unset_flags;
    for (const auto& entry : args.node()) {
        const YAML::Node& key = entry.first;
        const std::string flag = key.IsScalar() ? key.Scalar() : std::string();
        const detail::Setting value = args.member(entry.second, flag.empty() ? "?" : flag);
        if (!flag.starts_with("--") || flag.size() == 2) {
            args.member(key, flag.empty() ? "(a key)" : flag)
                .fail(fmt::format("expected a flag ('--num-layers') as the key, got {}",
                                  detail::describe(key)));
        }
        const YAML::Node& node = entry.second;
        if (node.IsNull()) {
            args.member(key, flag).fail(
                "no value: give true for a switch, or the flag's value (Megatron-LM's launcher "
                "would pass the word null)");
        }
        if (!node.IsScalar()) {
            value.fail(fmt::format(
                "expected one value, got {}: write several as Megatron-LM's configurations do, "
                "in one string (\"[a b c]\")",
                detail::describe(node)));
        }
        std::vector<std::string> unset;
        const std::string expanded = substituted(node.Scalar(), environment, unset);
        for (const std::string& name : unset) {
            auto at = std::ranges::find(unset_flags, name, &UnsetVariable::name);
            if (at == unset_flags.end())
                at = unset_flags.insert(unset_flags.end(), UnsetVariable{name, {}});
            if (std::ranges::find(at->flags, flag) == at->flags.end())
                at->flags.push_back(flag);
        }
        const std::string_view v = trimmed(expanded);
        if (v.empty()) {
            out.notes.push_back(
                fmt::format("{}: an empty value leaves the flag out, as "
                            "Megatron-LM's launcher does",
                            value.where()));
            continue;
        }
        if (v == "true") {
            out.arguments.push_back(flag);
            continue;
        }
        if (v == "false") {
            left_out.push_back(flag);
            continue;
        }
        out.arguments.push_back(flag);
        // A YAML list's words each an argument, any other value one.
        if (std::optional<std::vector<std::string>> words = detail::yaml_list_words(v))
            out.arguments.insert(out.arguments.end(), words->begin(), words->end());
        else
            out.arguments.emplace_back(v);
    }
    if (!left_out.empty()) {
        out.notes.push_back(
            fmt::format("{}: false leaves {} out, as Megatron-MoE-ModelZoo's runner does",
                        config.name(), fmt::join(left_out, ", ")));
    }
    if (!unset_flags.empty()) {
        std::vector<std::string> listed;
        for (const UnsetVariable& u : unset_flags)
            listed.push_back(fmt::format("${{{}}} ({})", u.name, fmt::join(u.flags, ", ")));
        out.notes.push_back(fmt::format(
            "{}: not set in the environment, kept as written (set those whose values ppb reads): "
            "{}",
            config.name(), fmt::join(listed, "; ")));
    }
    return out;
}

MegatronModelConfig megatron_model_config(const std::filesystem::path& path,
                                          const Environment& environment) {
    return megatron_model_config(read_text_file(path), source_name(path), environment);
}

std::optional<std::string> process_environment(std::string_view name) {
    const std::string key(name);
    const char* value = std::getenv(key.c_str());  // NOLINT(concurrency-mt-unsafe): read once
    if (value == nullptr)
        return std::nullopt;
    return std::string(value);
}

}  // namespace ppb::importers
