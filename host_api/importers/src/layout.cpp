#include <ppb/importers/layout.hpp>
#include <ppb/kinds.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
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
    std::string text;
    for (std::size_t s = 0; s < layout.stages.size(); ++s) {
        text += fmt::format("{}stage {}: ", text.empty() ? "" : "; ", s);
        if (layout.chunks.empty()) {
            text += describe_layers(layout.stages[s]);
            continue;
        }
        for (std::size_t c = 0; c < layout.chunks.at(s).size(); ++c) {
            text += fmt::format("{}chunk {} {}", c == 0 ? "" : ", ", c,
                                describe_layers(layout.chunks[s][c]));
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
