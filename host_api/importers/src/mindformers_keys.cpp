// MindFormers' model configuration keys: see mindformers_keys.hpp.
#include "mindformers_keys.hpp"

#include <ppb/errors.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace ppb::importers::detail {
namespace {

// Model types whose configuration class builds experts without a count in the file
// (mindspore-lab/mindformers at commit f52743ca27a5a8af5fbc77c5b2037c1147c7004c,
// mindformers/models/<type>/configuration_<type>.py: the defaults of __init__).
// The experts chosen per token, one routed expert's inner size and the shared experts are the
// class's defaults too (0: the class's default is not known to ppb; Qwen3MoeConfig
// num_experts_per_tok=8, moe_intermediate_size=768; DeepseekV3Config num_experts_per_tok=8,
// moe_intermediate_size=2048, n_shared_experts=1, at mindspore-lab/mindformers commit
// fd4deebc1606a02fd24c3b359a889cd0c966e72b).
struct MoeModelType {
    std::string_view type;
    std::string_view config_class;
    std::uint32_t experts;
    std::uint32_t first_k_dense;
    bool every_layer;
    std::uint32_t experts_chosen;
    std::uint32_t expert_inner;
    std::uint32_t shared_experts;
};
constexpr MoeModelType moe_model_types[] = {
    {"qwen3_moe", "Qwen3MoeConfig", 128, 0, true, 8, 768, 0},
    {"deepseek_v3", "DeepseekV3Config", 256, 3, false, 8, 2048, 1},
    {"glm4_moe", "Glm4MoeConfig", 128, 1, false, 0, 0, 0},
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
        if (type->experts_chosen > 0)
            out.experts_chosen_default = type->experts_chosen;
        if (type->expert_inner > 0)
            out.expert_inner_default = type->expert_inner;
        if (type->experts_chosen > 0)
            out.shared_experts_default = type->shared_experts;
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

std::string source_of(const Setting& setting) {
    return setting.from_flag() ? setting.path() : setting.where();
}

namespace {

// MindFormers' moe_layer_freq: an integer N (layer i is an MoE layer when i % N == 0), or a list
// of one 0 / 1 per layer (1: MoE). Checked as TransformerConfig.__post_init__ checks it.
std::vector<bool> moe_layer_pattern(const Setting& freq, std::uint32_t num_layers) {
    std::vector<bool> is_moe(num_layers, true);
    if (!given(freq))
        return is_moe;
    const YAML::Node& node = freq.node();
    if (const auto n = integer_of(node); n && !boolean_of(node)) {
        if (*n < 1 || *n > static_cast<std::int64_t>(num_layers)) {
            freq.fail(fmt::format("{} is not from 1 to num_layers {} (MindFormers refuses it)", *n,
                                  num_layers));
        }
        for (std::uint32_t i = 0; i < num_layers; ++i)
            is_moe[i] = i % static_cast<std::uint64_t>(*n) == 0;
        return is_moe;
    }
    if (!node.IsSequence()) {
        freq.fail(
            fmt::format("expected an integer N (every N-th layer an MoE layer) or a list of "
                        "one 0 or 1 per layer, got {}",
                        describe(node)));
    }
    if (node.size() != num_layers) {
        freq.fail(
            fmt::format("has {} entries, but num_layers is {}: give one 0 or 1 per layer "
                        "(MindFormers refuses another length)",
                        node.size(), num_layers));
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
        const auto bit = integer_of(node[i]);
        if (!bit || (*bit != 0 && *bit != 1))
            freq.element(i).fail("expected 0 (dense) or 1 (MoE), got " + describe(node[i]));
        is_moe[i] = *bit == 1;
    }
    return is_moe;
}

}  // namespace

MoeLayers moe_layers(const Experts& experts, const Setting& first_k, const Setting& freq,
                     std::span<const Setting> ignored_hf, std::uint32_t num_layers,
                     std::string_view count_text) {
    MoeLayers out;
    std::optional<std::uint32_t> dense;
    if (given(first_k)) {
        const auto value = integer_of(first_k.node());
        if (!value || boolean_of(first_k.node()) || *value < 0 ||
            *value > static_cast<std::int64_t>(limits::layers.max)) {
            first_k.fail(
                fmt::format("expected the number of dense layers before the MoE layers "
                            "(an integer, 0 to {}), got {}",
                            limits::layers.max, describe(first_k.node())));
        }
        dense = static_cast<std::uint32_t>(*value);
    }
    const bool freq_given =
        given(freq) && !(integer_of(freq.node()) == 1 && !boolean_of(freq.node()));
    if (!experts.moe) {
        const std::string no_experts =
            experts.count ? std::string(count_text) : std::string("expert_num is not given");
        if (dense.value_or(0) > 0) {
            first_k.fail(fmt::format(
                "{} dense layers before the MoE layers, but {}: MindFormers builds MoE layers "
                "only with experts (give moe_config.expert_num or model.model_config.num_experts "
                "above 1)",
                *dense, no_experts));
        }
        if (freq_given) {
            freq.fail(
                fmt::format("{} says which layers are MoE layers, but {}: MindFormers builds "
                            "MoE layers only with experts",
                            value_text(freq), no_experts));
        }
        return out;
    }

    std::vector<bool>& is_moe = out.is_moe;
    is_moe.assign(num_layers, true);
    std::string& placement = out.placement;
    if (experts.every_layer) {
        const auto not_used = [&](const Setting& ignored) {
            out.notes.push_back(
                fmt::format("{} is not used: MindFormers' model '{}' builds every layer as an "
                            "MoE layer (its decoder has one layer spec), and so does this "
                            "import",
                            ignored.where(), experts.model_type));
        };
        if (dense.value_or(0) > 0)
            not_used(first_k);
        if (freq_given)
            not_used(freq);
        for (const Setting& s : ignored_hf) {
            const bool sparse_step = s.path().ends_with("decoder_sparse_step");
            if (given(s) && !(sparse_step ? integer_of(s.node()) == 1
                                          : s.node().IsSequence() && s.node().size() == 0)) {
                out.notes.push_back(
                    fmt::format("{} is not used: MindFormers' Qwen3MoeConfig drops it "
                                "(configuration_qwen3_moe.py), every layer is an MoE layer",
                                s.where()));
            }
        }
    } else {
        const std::uint32_t k = dense.value_or(experts.first_k_default.value_or(0));
        const std::string k_source =
            dense ? source_of(first_k)
                  : fmt::format("the default of model_type '{}'", experts.model_type);
        if (k > 0 && freq_given) {
            const std::vector<bool> pattern = moe_layer_pattern(freq, num_layers);
            std::vector<bool> expected(num_layers, true);
            std::fill(expected.begin(), expected.begin() + std::min(k, num_layers), false);
            if (!freq.node().IsSequence() || pattern != expected) {
                freq.fail(fmt::format(
                    "{} with first_k_dense_replace {} ({}): MindFormers refuses the two "
                    "together unless moe_layer_freq is first_k_dense_replace's own pattern "
                    "(a list of {} zeros then ones)",
                    value_text(freq), k, k_source, k));
            }
        }
        if (k >= num_layers) {
            const std::string message = fmt::format(
                "{} dense layers leave no MoE layer of the model's {}, but {}: "
                "first_k_dense_replace must be below num_layers",
                k, num_layers, experts.count ? count_text : experts.why);
            if (dense)
                first_k.fail(message);
            experts.because.fail(message);
        }
        if (k > 0) {
            std::fill(is_moe.begin(), is_moe.begin() + k, false);
            placement = fmt::format(
                "the first {} layers dense (first_k_dense_replace{}), the "
                "other {} MoE",
                k, dense ? "" : ", " + k_source, num_layers - k);
        } else if (freq_given) {
            is_moe = moe_layer_pattern(freq, num_layers);
            const auto moe =
                static_cast<std::uint32_t>(std::count(is_moe.begin(), is_moe.end(), true));
            if (moe == 0) {
                freq.fail(fmt::format("{} makes no layer an MoE layer, but {}", value_text(freq),
                                      experts.count ? count_text : experts.why));
            }
            placement = fmt::format("{} MoE and {} dense layers (moe_layer_freq {}, {})", moe,
                                    num_layers - moe, value_text(freq), freq.where());
        }
    }
    return out;
}

}  // namespace ppb::importers::detail
