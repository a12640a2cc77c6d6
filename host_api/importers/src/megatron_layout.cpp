// Megatron-LM's layout flags (ppb/importers/megatron_layout.hpp gives the grammar and the rules).
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_layout.hpp>
#include <ppb/limits.hpp>

#include "launcher_words.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace ppb::importers {
namespace {

constexpr std::string_view flag = "--pipeline-model-parallel-layout";
// Longer than any layout of a real model: refused before repetition could exhaust memory.
constexpr std::size_t max_expanded = 1'000'000;

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// The count of "*n" at text[at] (at just past the '*'), and where its digits end; nullopt when no
// digit follows. Counts beyond max_expanded are capped there (the expansion is then refused).
std::optional<std::pair<std::size_t, std::size_t>> count_at(std::string_view text, std::size_t at) {
    if (at >= text.size() || !is_digit(text[at]))
        return std::nullopt;
    std::size_t n = 0;
    std::size_t end = at;
    while (end < text.size() && is_digit(text[end])) {
        n = std::min(max_expanded + 1, n * 10 + static_cast<std::size_t>(text[end] - '0'));
        ++end;
    }
    return std::pair{n, end};
}

void append_copies(std::string& out, std::string_view what, std::size_t n) {
    if (n != 0 && (what.size() > max_expanded || n > (max_expanded - out.size()) / what.size())) {
        throw FlagError(
            fmt::format("{}: the layout expands to more than {} characters", flag, max_expanded));
    }
    for (std::size_t i = 0; i < n; ++i)
        out += what;
}

// Python's re.sub(r'\(([^)]+)\)\*(\d+)', ...) over `text`, left to right: at a '(' the body runs
// to the first ')' (at least one character) and must be followed by "*" and digits.
std::string expand_groups(std::string_view text) {
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '(') {
            const std::size_t close = text.find(')', i + 1);
            if (close != std::string_view::npos && close > i + 1 && close + 1 < text.size() &&
                text[close + 1] == '*') {
                if (const auto count = count_at(text, close + 2)) {
                    append_copies(out, text.substr(i + 1, close - i - 1), count->first);
                    i = count->second;
                    continue;
                }
            }
        }
        append_copies(out, text.substr(i, 1), 1);
        ++i;
    }
    return out;
}

// Python's re.sub(r'(.)\*(\d+)', ...): any one character but a newline, then "*" and digits.
std::string expand_characters(std::string_view text) {
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] != '\n' && i + 1 < text.size() && text[i + 1] == '*') {
            if (const auto count = count_at(text, i + 2)) {
                append_copies(out, text.substr(i, 1), count->first);
                i = count->second;
                continue;
            }
        }
        append_copies(out, text.substr(i, 1), 1);
        ++i;
    }
    return out;
}

std::string printable(char c) {
    if (std::isprint(static_cast<unsigned char>(c)) != 0)
        return fmt::format("'{}'", c);
    return fmt::format("byte 0x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
}

}  // namespace

std::vector<LayoutStage> parse_megatron_layout(std::string_view text) {
    std::string without_commas;
    for (const char c : text) {
        if (c != ',')
            without_commas += c;
    }
    const std::string expanded = expand_characters(expand_groups(without_commas));
    std::vector<LayoutStage> stages(1);
    for (const char c : expanded) {
        LayoutStage& stage = stages.back();
        switch (c) {
            case '|':
                stages.emplace_back();
                break;
            case 'E':
                stage.layers += c;
                ++stage.embedding;
                break;
            case 't':
                stage.layers += c;
                ++stage.decoders;
                break;
            case 'm':
                stage.layers += c;
                ++stage.mtp;
                break;
            case 'L':
                stage.layers += c;
                ++stage.loss;
                break;
            default:
                throw FlagError(fmt::format(
                    "{} '{}': invalid layer character {} in virtual stage {} (after expanding the "
                    "repeats); the characters are E (embedding), t (decoder layer), m (MTP layer), "
                    "L (loss) and | between virtual stages",
                    flag, text, printable(c), stages.size() - 1));
        }
    }
    return stages;
}

namespace {

// The layout's decoder layers per (stage, chunk), checked as Megatron checks the layout.
std::vector<std::vector<std::uint32_t>> counts_from_layout(const MegatronFlags& flags,
                                                           Messages& messages) {
    const std::string_view text = *flags.layout;
    const std::uint32_t p = *flags.pipeline_size;
    const std::vector<LayoutStage> stages = parse_megatron_layout(text);
    const std::size_t q = stages.size();
    if (q % p != 0) {
        throw FlagError(
            fmt::format("{} '{}' has {} virtual stages, which is not a multiple of "
                        "--pipeline-model-parallel-size {} (Megatron requires it)",
                        flag, text, q, p));
    }
    const auto v = static_cast<std::uint32_t>(q / p);
    std::uint32_t embeddings = 0, decoders = 0, mtp = 0, losses = 0;
    for (const auto& s : stages) {
        embeddings += s.embedding;
        decoders += s.decoders;
        mtp += s.mtp;
        losses += s.loss;
    }
    if (embeddings != 1 || losses != 1) {
        throw FlagError(fmt::format(
            "{} '{}' holds {} embedding{} ('E') and {} loss{} ('L'); Megatron requires each "
            "exactly once",
            flag, text, embeddings, embeddings == 1 ? "" : "s", losses, losses == 1 ? "" : "es"));
    }
    // The flattened layout is the virtual stages' characters in their order.
    std::string flat;
    for (const auto& s : stages)
        flat += s.layers;
    if (flat.front() != 'E' || flat.back() != 'L') {
        throw FlagError(fmt::format(
            "{} '{}': the first layer must be the embedding ('E') and the last the loss ('L'), "
            "as Megatron requires",
            flag, text));
    }
    if (decoders != *flags.num_layers) {
        throw FlagError(fmt::format(
            "{} '{}' holds {} decoder layer{} ('t'), but --num-layers is {} (Megatron requires "
            "them to match)",
            flag, text, decoders, decoders == 1 ? "" : "s", *flags.num_layers));
    }
    const std::uint32_t mtp_wanted = flags.mtp_layers.value_or(0);
    if (mtp != mtp_wanted) {
        throw FlagError(
            flags.mtp_layers
                ? fmt::format("{} '{}' holds {} MTP layer{} ('m'), but --mtp-num-layers is {} "
                              "(Megatron requires them to match)",
                              flag, text, mtp, mtp == 1 ? "" : "s", mtp_wanted)
                : fmt::format("{} '{}' holds {} MTP layer{} ('m'), but --mtp-num-layers is not "
                              "given (Megatron requires them to match: give --mtp-num-layers {})",
                              flag, text, mtp, mtp == 1 ? "" : "s", mtp));
    }
    if (mtp > 0) {
        if (flat.find('t', flat.find('m')) != std::string::npos) {
            throw FlagError(fmt::format(
                "{} '{}': decoder layers ('t') follow an MTP layer ('m'); Megatron places every "
                "MTP layer after the decoder layers",
                flag, text));
        }
        for (std::size_t i = 0; i < q; ++i) {
            if (stages[i].mtp > 0 && (i / p + 1 != v || stages[i].mtp != mtp)) {
                throw FlagError(fmt::format(
                    "{} '{}': Megatron requires all MTP layers ('m') in one virtual stage, the "
                    "last chunk of its rank, but virtual stage {} (stage {} chunk {}) holds {} of "
                    "the {}",
                    flag, text, i, i % p, i / p, stages[i].mtp, mtp));
            }
        }
    }
    std::vector<std::vector<std::uint32_t>> counts(p, std::vector<std::uint32_t>(v, 0));
    for (std::size_t i = 0; i < q; ++i)
        counts[i % p][i / p] = stages[i].decoders;
    if (mtp > 0) {
        const auto holder = std::find_if(stages.begin(), stages.end(),
                                         [](const LayoutStage& s) { return s.mtp > 0; });
        const auto at = static_cast<std::size_t>(holder - stages.begin());
        add_note(messages,
                 fmt::format("the layout's {} MTP layer{} ('m', stage {} chunk {}) {} not body "
                             "layers: {} memory is part of that stage's measured memory",
                             mtp, mtp == 1 ? "" : "s", at % p, at / p, mtp == 1 ? "is" : "are",
                             mtp == 1 ? "its" : "their"));
    }
    return counts;
}

}  // namespace

namespace {

using detail::trimmed;

// `text` without the brackets of a Python list or set repr; whether it had them.
std::pair<std::string_view, bool> without_brackets(std::string_view text) {
    text = trimmed(text);
    if (text.size() >= 2 && ((text.front() == '[' && text.back() == ']') ||
                             (text.front() == '{' && text.back() == '}'))) {
        return {text.substr(1, text.size() - 2), true};
    }
    return {text, false};
}

std::vector<std::string_view> comma_items(std::string_view text) {
    std::vector<std::string_view> items;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        items.push_back(text.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos)
            return items;
        start = comma + 1;
    }
}

std::optional<std::uint32_t> digits_value(std::string_view text) {
    if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit))
        return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : text) {
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
        if (value > limits::layers.max)
            return std::nullopt;
    }
    return static_cast<std::uint32_t>(value);
}

}  // namespace

std::vector<std::uint32_t> parse_num_layer_list(std::string_view text, std::string_view source) {
    const auto [body, bracketed] = without_brackets(text);
    std::vector<std::uint32_t> counts;
    const auto items = comma_items(body);
    for (std::size_t i = 0; i < items.size(); ++i) {
        // Python's int() takes the item with spaces around it.
        std::string_view item = trimmed(items[i]);
        if (item.starts_with('+'))
            item.remove_prefix(1);
        const auto n = digits_value(item);
        if (!n) {
            throw FlagError(fmt::format(
                "{} '{}': item {} '{}' is not a count of layers from 0 to {} (MindSpeed-LLM reads "
                "the comma-separated counts of the stages with int())",
                source, text, i + 1, items[i], limits::layers.max));
        }
        counts.push_back(*n);
    }
    return counts;
}

std::vector<std::uint32_t> parse_noop_layers(std::string_view text, std::uint32_t num_layers,
                                             std::string_view source) {
    const auto [body, bracketed] = without_brackets(text);
    if (trimmed(text) == "set()")
        return {};
    std::vector<std::uint32_t> layers;
    for (const std::string_view raw : comma_items(body)) {
        // The flag's items are digits only (MindSpeed: x.isdigit()); a printed set or list puts a
        // space after each comma.
        const std::string_view item = bracketed ? trimmed(raw) : raw;
        const auto n = digits_value(item);
        if (!n && !item.empty() && std::all_of(item.begin(), item.end(), is_digit)) {
            throw FlagError(fmt::format(
                "{} '{}': layer {} is not below --num-layers {} (MindSpeed requires every no-op "
                "layer to be from 0 to num_layers - 1)",
                source, text, item, num_layers));
        }
        if (!n) {
            throw FlagError(fmt::format(
                "{} '{}': '{}' is not a layer index (MindSpeed requires digits only, separated "
                "by commas, such as 61,62,63)",
                source, text, raw));
        }
        if (*n >= num_layers) {
            throw FlagError(fmt::format(
                "{} '{}': layer {} is not below --num-layers {} (MindSpeed requires every no-op "
                "layer to be from 0 to num_layers - 1)",
                source, text, *n, num_layers));
        }
        layers.push_back(*n);
    }
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    return layers;
}

namespace {

// MindSpeed-LLM's --num-layer-list: one count per stage, checked as MindSpeed-LLM checks it.
std::vector<std::vector<std::uint32_t>> counts_from_num_layer_list(const MegatronFlags& flags) {
    constexpr std::string_view list_flag = "--num-layer-list";
    const std::string_view text = *flags.num_layer_list;
    const char* other = flags.layout                  ? "--pipeline-model-parallel-layout"
                        : flags.first_stage_layers    ? "--decoder-first-pipeline-num-layers"
                        : flags.last_stage_layers     ? "--decoder-last-pipeline-num-layers"
                        : flags.account_for_embedding ? "--account-for-embedding-in-pipeline-split"
                        : flags.account_for_loss      ? "--account-for-loss-in-pipeline-split"
                                                      : nullptr;
    if (other != nullptr) {
        throw FlagError(
            fmt::format("{} and {} must not be given together: both say the stages' layers, and "
                        "MindSpeed-LLM builds each stage from --num-layer-list alone (its "
                        "get_num_layers_to_build); give one",
                        list_flag, other));
    }
    if (flags.layers_per_virtual_stage) {
        throw FlagError(fmt::format(
            "{} and --num-layers-per-virtual-pipeline-stage must not be given together "
            "(MindSpeed-LLM refuses it: \"Dynamic pipeline model and virtual pipeline cannot be "
            "enabled at the same time\")",
            list_flag));
    }
    if (flags.virtual_stages) {
        throw FlagError(fmt::format(
            "{} and --num-virtual-stages-per-pipeline-rank must not be given together: "
            "MindSpeed-LLM's --num-layer-list gives each stage one block of layers (with virtual "
            "pipeline chunks its get_num_layers_to_build would give every chunk the stage's "
            "whole count)",
            list_flag));
    }
    const std::uint32_t p = *flags.pipeline_size;
    if (p < 2) {
        throw FlagError(fmt::format(
            "{} needs --pipeline-model-parallel-size 2 or more (MindSpeed-LLM: \"Dynamic pipeline "
            "model should work with pipeline parallel\")",
            list_flag));
    }
    const std::vector<std::uint32_t> list = parse_num_layer_list(text, list_flag);
    if (list.size() != p) {
        throw FlagError(fmt::format(
            "{} '{}' gives {} count{}, but --pipeline-model-parallel-size is {}: MindSpeed-LLM "
            "requires one per stage",
            list_flag, text, list.size(), list.size() == 1 ? "" : "s", p));
    }
    std::uint64_t sum = 0;
    for (const std::uint32_t n : list)
        sum += n;
    if (sum != *flags.num_layers) {
        throw FlagError(fmt::format(
            "{} '{}' sums to {} layers, but --num-layers is {}: MindSpeed-LLM requires them to "
            "match",
            list_flag, text, sum, *flags.num_layers));
    }
    std::vector<std::vector<std::uint32_t>> counts;
    for (const std::uint32_t n : list)
        counts.push_back({n});
    return counts;
}

}  // namespace

std::optional<std::vector<std::vector<std::uint32_t>>> megatron_layout_flag_counts(
    const MegatronFlags& flags, Messages& messages) {
    if (flags.noop_layers && flags.layout) {
        throw FlagError(
            "--noop-layers and --pipeline-model-parallel-layout must not be given together "
            "(MindSpeed refuses it: \"--pipeline-model-parallel-layout is incompatible with "
            "--noop-layers\")");
    }
    if (flags.num_layer_list)
        return counts_from_num_layer_list(flags);
    const bool embedding = flags.account_for_embedding;
    const bool loss = flags.account_for_loss;
    const char* first_last = flags.first_stage_layers ? "--decoder-first-pipeline-num-layers"
                                                      : "--decoder-last-pipeline-num-layers";
    const bool uneven = flags.first_stage_layers || flags.last_stage_layers;
    const char* account = embedding ? "--account-for-embedding-in-pipeline-split"
                                    : "--account-for-loss-in-pipeline-split";
    if (flags.layout) {
        // megatron/core/transformer/transformer_config.py (commit
        // d2c5e8b4f4fa0062d8cd9cbe18a7fca7cf1f99a3): "pipeline_model_parallel_layout cannot be
        // set with other pipeline layout arguments"; megatron/training/arguments.py (commit
        // 307dcf37f03d44da131ba21999278abe4112d2ad): no more than one of the layout and the
        // virtual-pipeline flags.
        const char* other = uneven              ? first_last
                            : embedding || loss ? account
                            : flags.layers_per_virtual_stage
                                ? "--num-layers-per-virtual-pipeline-stage"
                            : flags.virtual_stages ? "--num-virtual-stages-per-pipeline-rank"
                                                   : nullptr;
        if (other != nullptr) {
            throw FlagError(fmt::format(
                "{} and {} must not be given together (Megatron refuses the layout beside other "
                "pipeline layout arguments): the layout says every stage's layers",
                flag, other));
        }
        return counts_from_layout(flags, messages);
    }
    if (!embedding && !loss)
        return std::nullopt;
    if (uneven) {
        throw FlagError(fmt::format(
            "{} and {} must not be given together (Megatron refuses uneven first and last "
            "stages beside the embedding or loss counted in the split)",
            account, first_last));
    }
    const std::uint32_t p = *flags.pipeline_size;
    const std::uint32_t layers = *flags.num_layers;
    const std::uint32_t counted = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
    const std::string counted_text =
        fmt::format("--num-layers {}{}{} = {}", layers, embedding ? " + the embedding" : "",
                    loss ? " + the loss" : "", counted);
    if (counted % p != 0) {
        throw FlagError(
            fmt::format("{} does not divide into {} stages (Megatron requires it with {})",
                        counted_text, p, embedding && loss ? "the --account-for flags" : account));
    }
    const std::uint32_t per_rank = counted / p;
    std::uint32_t v = 1;
    if (flags.layers_per_virtual_stage) {
        const std::uint32_t n = *flags.layers_per_virtual_stage;
        if (n == 0 || per_rank % n != 0) {
            throw FlagError(fmt::format(
                "--num-layers-per-virtual-pipeline-stage {} does not divide the {} layers of each "
                "stage ({} / {}), as Megatron requires",
                n, per_rank, counted_text, p));
        }
        v = per_rank / n;
    } else if (flags.virtual_stages) {
        v = *flags.virtual_stages;
        if (per_rank % v != 0) {
            throw FlagError(fmt::format(
                "--num-virtual-stages-per-pipeline-rank {}: each stage holds {} layers ({} / {}), "
                "which do not split evenly into {} chunks (Megatron requires it)",
                v, per_rank, counted_text, p, v));
        }
    }
    std::vector<std::vector<std::uint32_t>> counts(p, std::vector<std::uint32_t>(v, per_rank / v));
    // The first virtual stage holds the embedding in place of a layer, the last the loss.
    const auto take_one = [&](std::uint32_t& n, const char* what, const char* which) {
        if (n == 0) {
            throw FlagError(fmt::format(
                "{} leaves the {} virtual stage no decoder layer to give up for the {} ({} layers "
                "per virtual stage)",
                account, which, what, per_rank / v));
        }
        --n;
    };
    if (embedding)
        take_one(counts.front().front(), "embedding", "first");
    if (loss)
        take_one(counts.back().back(), "loss", "last");
    return counts;
}

}  // namespace ppb::importers
