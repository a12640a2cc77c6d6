// Suggestions for mistyped names (suggest.hpp).
#include "suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace ppb::cli {
namespace {

std::string_view without_dashes(std::string_view s) {
    while (!s.empty() && s.front() == '-')
        s.remove_prefix(1);
    return s;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // d[i][j]: edits from a's first i characters to b's first j, three rows kept.
    std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        previous[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            row[j] = std::min({previous[j] + 1, row[j - 1] + 1, substitute});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                row[j] = std::min(row[j], before[j - 2] + 1);
        }
        std::swap(before, previous);
        std::swap(previous, row);
    }
    return previous[b.size()];
}

std::vector<std::string> closest_names(std::string_view word,
                                       const std::vector<std::string>& names) {
    const std::string_view bare = without_dashes(word);
    if (bare.size() < 2)
        return {};  // one letter is one edit from every other: nothing to go by
    const std::size_t allowed = 1 + bare.size() / 4;
    std::size_t best = std::numeric_limits<std::size_t>::max();
    std::vector<std::string> out;
    for (const std::string& name : names) {
        const std::string_view candidate = without_dashes(name);
        if (candidate == bare || candidate.empty())
            continue;
        std::size_t d = edit_distance(bare, candidate);
        // A word that starts the name: as close as one edit.
        if (bare.size() >= 3 && candidate.starts_with(bare))
            d = std::min<std::size_t>(d, 1);
        if (d > allowed || d > best)
            continue;
        if (d < best) {
            best = d;
            out.clear();
        }
        if (std::find(out.begin(), out.end(), name) == out.end())
            out.push_back(name);
    }
    return out;
}

std::string did_you_mean(const std::vector<std::string>& suggestions) {
    if (suggestions.empty())
        return {};
    std::string list;
    for (std::size_t i = 0; i < suggestions.size(); ++i) {
        const char* separator = i == 0 ? "" : i + 1 == suggestions.size() ? " or " : ", ";
        list += fmt::format("{}'{}'", separator, suggestions[i]);
    }
    return fmt::format("; did you mean {}?", list);
}

}  // namespace ppb::cli
