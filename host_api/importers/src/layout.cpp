#include <ppb/importers/layout.hpp>
#include <ppb/kinds.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

namespace ppb::importers {

std::uint32_t total_layers(const KindCounts& counts) noexcept {
    return std::accumulate(counts.begin(), counts.end(), std::uint32_t{0});
}

std::string describe_layers(const KindCounts& counts) {
    const std::uint32_t total = total_layers(counts);
    std::string text = fmt::format("{} layer{}", total, total == 1 ? "" : "s");
    std::string parts;
    // Most recomputed first, as configurations list them.
    for (std::size_t k = counts.size(); k-- > 0;) {
        if (counts[k] == 0)
            continue;
        parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", kind_names[k], counts[k]);
    }
    if (!parts.empty())
        text += " (" + parts + ")";
    return text;
}

std::string describe_stages(const PipelineLayout& layout) {
    // With groups: "stage 0: 4 layers (full 1, none 3) [dense 3 (none 3), moe 1 (full 1)]".
    const auto groups_of = [&](std::size_t s, std::size_t c) {
        if (layout.group_layers.empty())
            return std::string();
        return " [" + describe_group_layers(layout.groups, layout.group_layers.at(s).at(c)) + "]";
    };
    std::string text;
    for (std::size_t s = 0; s < layout.stages.size(); ++s) {
        text += fmt::format("{}stage {}: ", text.empty() ? "" : "; ", s);
        if (layout.chunks.empty()) {
            text += describe_layers(layout.stages[s]) + groups_of(s, 0);
            continue;
        }
        for (std::size_t c = 0; c < layout.chunks.at(s).size(); ++c) {
            text += fmt::format("{}chunk {} {}{}", c == 0 ? "" : ", ", c,
                                describe_layers(layout.chunks[s][c]), groups_of(s, c));
        }
    }
    return text;
}

KindCounts split_recompute(std::uint32_t layers, std::uint32_t full, std::uint32_t select,
                           std::uint32_t comm) noexcept {
    full = std::min(full, layers);
    select = std::min(select, layers);
    comm = std::min(comm, layers);
    const std::uint32_t select_beyond = select > full ? select - full : 0;
    const std::uint32_t comm_beyond = comm > full ? comm - full : 0;
    KindCounts counts{};
    counts[PPB_KIND_FULL] = full;
    counts[PPB_KIND_BOTH] = std::min(select_beyond, comm_beyond);
    counts[PPB_KIND_SELECT] = select_beyond - counts[PPB_KIND_BOTH];
    counts[PPB_KIND_COMM] = comm_beyond - counts[PPB_KIND_BOTH];
    // full + max(select_beyond, comm_beyond) <= layers, so this does not wrap.
    counts[PPB_KIND_NONE] = layers - full - std::max(select_beyond, comm_beyond);
    return counts;
}

LayerGroups moe_groups(const std::vector<bool>& is_moe) {
    LayerGroups groups;
    std::optional<std::uint32_t> dense;
    std::optional<std::uint32_t> moe;
    for (const bool layer_is_moe : is_moe) {
        std::optional<std::uint32_t>& index = layer_is_moe ? moe : dense;
        if (!index) {
            index = static_cast<std::uint32_t>(groups.names.size());
            groups.names.emplace_back(layer_is_moe ? "moe" : "dense");
        }
        groups.group_of.push_back(*index);
    }
    return groups;
}

void split_into_groups(PipelineLayout& layout, const LayerGroups& groups) {
    layout.groups.clear();
    layout.group_layers.clear();
    if (groups.names.size() < 2)
        return;
    const std::size_t num_groups = groups.names.size();
    const std::uint32_t chunks = layout.num_chunks;
    const auto chunk_kinds = [&](std::size_t s, std::size_t c) -> const KindCounts& {
        return layout.chunks.empty() ? layout.stages.at(s) : layout.chunks.at(s).at(c);
    };
    // The kinds by position within a chunk, the most recomputed first.
    constexpr std::array<ppb_kind, PPB_KIND_COUNT> position_order = {
        PPB_KIND_FULL, PPB_KIND_BOTH, PPB_KIND_SELECT, PPB_KIND_COMM, PPB_KIND_NONE};
    std::vector<std::vector<std::vector<KindCounts>>> out(
        layout.stages.size(),
        std::vector<std::vector<KindCounts>>(chunks, std::vector<KindCounts>(num_groups)));
    std::size_t next_layer = 0;
    for (std::uint32_t c = 0; c < chunks; ++c) {
        for (std::size_t s = 0; s < layout.stages.size(); ++s) {
            const KindCounts& kinds = chunk_kinds(s, c);
            for (const ppb_kind kind : position_order) {
                for (std::uint32_t i = 0; i < kinds[kind]; ++i) {
                    if (next_layer >= groups.group_of.size()) {
                        throw std::logic_error(
                            "split_into_groups: the layout holds more layers than the groups");
                    }
                    ++out[s][c][groups.group_of[next_layer++]][kind];
                }
            }
        }
    }
    if (next_layer != groups.group_of.size())
        throw std::logic_error("split_into_groups: the layout holds fewer layers than the groups");
    layout.groups = groups.names;
    layout.group_layers = std::move(out);
}

std::string describe_group_layers(const std::vector<std::string>& names,
                                  const std::vector<KindCounts>& counts) {
    std::string text;
    for (std::size_t g = 0; g < names.size(); ++g) {
        std::string parts;
        for (std::size_t k = PPB_KIND_COUNT; k-- > 0;) {
            if (counts.at(g)[k] != 0)
                parts +=
                    fmt::format("{}{} {}", parts.empty() ? "" : ", ", kind_names[k], counts[g][k]);
        }
        text += fmt::format("{}{} {}{}", g == 0 ? "" : ", ", names[g], total_layers(counts[g]),
                            parts.empty() ? std::string() : " (" + parts + ")");
    }
    return text;
}

void add_note(Messages& messages, std::string text) {
    messages.push_back({Message::Level::note, std::move(text)});
}

void add_warning(Messages& messages, std::string text) {
    messages.push_back({Message::Level::warning, std::move(text)});
}

std::string describe_numbers(std::vector<std::uint32_t> numbers) {
    std::sort(numbers.begin(), numbers.end());
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    std::string text;
    for (std::size_t i = 0; i < numbers.size();) {
        std::size_t j = i;
        while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1)
            ++j;
        if (!text.empty())
            text += ", ";
        if (j >= i + 2) {
            text += fmt::format("{}-{}", numbers[i], numbers[j]);
            i = j + 1;
        } else {
            text += fmt::format("{}", numbers[i]);
            ++i;
        }
    }
    return text;
}

}  // namespace ppb::importers
