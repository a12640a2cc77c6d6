// MindFormers' model configuration keys: see mindformers_keys.hpp.
#include "mindformers_keys.hpp"

#include <ppb/errors.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace ppb::importers::detail {
namespace {

// Model types whose configuration class builds experts without a count in the file
// (mindspore-lab/mindformers at commit f52743ca27a5a8af5fbc77c5b2037c1147c7004c,
// mindformers/models/<type>/configuration_<type>.py: the defaults of __init__).
struct MoeModelType {
    std::string_view type;
    std::string_view config_class;
    std::uint32_t experts;
    std::uint32_t first_k_dense;
    bool every_layer;
};
constexpr MoeModelType moe_model_types[] = {
    {"qwen3_moe", "Qwen3MoeConfig", 128, 0, true},
    {"deepseek_v3", "DeepseekV3Config", 256, 3, false},
    {"glm4_moe", "Glm4MoeConfig", 128, 1, false},
};

// Two scalars are the same setting when they are the same integer, number or boolean, or the
// same text; other values when they are written alike.
bool same_value(const YAML::Node& a, const YAML::Node& b) {
    if (a.IsScalar() && b.IsScalar()) {
        if (const auto x = integer_of(a), y = integer_of(b); x && y)
            return *x == *y;
        if (const auto x = number_of(a), y = number_of(b); x && y)
            return *x == *y;
        if (const auto x = boolean_of(a), y = boolean_of(b); x && y)
            return *x == *y;
        return a.Scalar() == b.Scalar();
    }
    return YAML::Dump(a) == YAML::Dump(b);
}

bool given(const Setting& s) {
    return s.present() && !s.node().IsNull();
}

}  // namespace

std::span<const KeyPath> model_sections() {
    static const std::vector<KeyPath> sections = {{"model", "model_config"}, {"model_config"}};
    return sections;
}

std::span<const KeyPath> moe_sections() {
    static const std::vector<KeyPath> sections = {
        {"moe_config"}, {"model", "model_config"}, {"model_config"}};
    return sections;
}

std::string value_text(const Setting& setting) {
    const YAML::Node& node = setting.node();
    if (node.IsScalar())
        return node.Scalar();
    if (node.IsSequence() && node.size() <= 16) {
        std::string text;
        for (std::size_t i = 0; i < node.size(); ++i)
            text += (i == 0 ? "" : ", ") + (node[i].IsScalar() ? node[i].Scalar() : "...");
        return "[" + text + "]";
    }
    return describe(node);
}

void spellings_disagree(const Setting& a, const Setting& b, std::string_view meaning) {
    throw InputError(fmt::format(
        "{} is {}, but {} is {}: MindFormers reads both as {}; give one of them, or make them "
        "agree",
        a.where(), value_text(a), b.where(), value_text(b), meaning));
}

Setting spelled(const Config& config, std::span<const KeyPath> sections,
                std::span<const std::string_view> names, std::string_view meaning) {
    Setting first;
    for (const KeyPath& section : sections) {
        for (const std::string_view name : names) {
            KeyPath path = section;
            path.push_back(name);
            const Setting s = config.lookup(std::span<const std::string_view>(path));
            if (!given(s))
                continue;
            if (!given(first))
                first = s;
            else if (!same_value(first.node(), s.node()))
                spellings_disagree(first, s, meaning);
        }
    }
    return first;
}

std::string spelled_path(std::span<const std::string_view> names) {
    std::string text = fmt::format("model.model_config.{}", names.front());
    if (names.size() > 1)
        text += fmt::format(" (or {})", fmt::join(names.subspan(1), ", "));
    return text;
}

Experts model_experts(const Config* config, const Setting& count) {
    Experts out;
    const MoeModelType* type = nullptr;
    Setting type_setting;
    if (config != nullptr) {
        const std::array<std::string_view, 1> model_type = {"model_type"};
        type_setting = spelled(*config, model_sections(), model_type, "the model type");
        if (given(type_setting) && type_setting.node().IsScalar()) {
            out.model_type = type_setting.node().Scalar();
            const auto* found =
                std::find_if(std::begin(moe_model_types), std::end(moe_model_types),
                             [&](const MoeModelType& t) { return t.type == out.model_type; });
            if (found != std::end(moe_model_types))
                type = found;
        }
    }
    if (type != nullptr) {
        out.every_layer = type->every_layer;
        if (type->first_k_dense > 0)
            out.first_k_default = type->first_k_dense;
    }
    if (given(count)) {
        out.count = positive_integer(count);
        out.count_name = count.from_flag() ? "expert_num" : [&] {
            const std::string& path = count.path();
            return path.substr(path.rfind('.') + 1);
        }();
        out.moe = *out.count > 1;
        out.because = count;
        out.why = fmt::format("{} expert{} per MoE layer", *out.count, *out.count == 1 ? "" : "s");
        return out;
    }
    if (type != nullptr) {
        out.moe = true;
        out.count = type->experts;
        out.count_name = "the model type's default";
        out.because = type_setting;
        out.why = fmt::format("'{}': {} builds {} experts per MoE layer by default", type->type,
                              type->config_class, type->experts);
        return out;
    }
    if (config != nullptr) {
        for (const KeyPath& section : model_sections()) {
            for (const std::string_view name : spellings::expert_shape) {
                KeyPath path = section;
                path.push_back(name);
                const Setting s = config->lookup(std::span<const std::string_view>(path));
                if (!given(s))
                    continue;
                out.moe = true;
                out.because = s;
                out.why = std::string(
                    "a setting only MoE layers have (without an expert count in the file, "
                    "MindFormers takes it from the model's own files, which ppb does not read)");
                return out;
            }
        }
    }
    return out;
}

}  // namespace ppb::importers::detail
