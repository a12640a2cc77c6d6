#include "assignment.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace ppb::partition::detail {

namespace {

// `counts` (ascending) as runs of consecutive values [first, last]. A physical model's memory
// grows with the layer count, so the counts a stage may take under a budget are usually one run.
std::vector<std::pair<std::uint32_t, std::uint32_t>> runs_of(
    const std::vector<std::uint32_t>& counts) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> runs;
    for (const std::uint32_t n : counts) {
        if (!runs.empty() && runs.back().second + 1 == n) {
            runs.back().second = n;
        } else {
            runs.emplace_back(n, n);
        }
    }
    return runs;
}

// reach[s][j]: whether stages 0..s-1 can hold exactly j layers. A count j is reachable after
// stage s when some run [a, b] of its counts has a reachable j - b .. j - a before it, which a
// prefix count of the previous row answers in O(1): O(total x runs) per stage, not
// O(total x counts).
std::vector<std::vector<char>> reachability(const std::vector<std::vector<std::uint32_t>>& allowed,
                                            std::uint32_t total) {
    std::vector<std::vector<char>> reach(allowed.size() + 1, std::vector<char>(total + 1, 0));
    reach[0][0] = 1;
    std::vector<std::uint64_t> before(static_cast<std::size_t>(total) + 2);  // before[i]: # < i
    for (std::size_t s = 0; s < allowed.size(); ++s) {
        const auto& row = reach[s];
        for (std::uint32_t i = 0; i <= total; ++i)
            before[i + 1] = before[i] + static_cast<std::uint64_t>(row[i]);
        const auto runs = runs_of(allowed[s]);
        auto& next = reach[s + 1];
        for (std::uint32_t j = 0; j <= total; ++j) {
            for (const auto& [a, b] : runs) {
                if (a > j)
                    break;
                const std::uint32_t lo = j - std::min(b, j);  // j - b, clamped at 0
                const std::uint32_t hi = j - a;
                if (before[hi + 1] > before[lo]) {
                    next[j] = 1;
                    break;
                }
            }
        }
    }
    return reach;
}

}  // namespace

bool can_sum_to(const std::vector<std::vector<std::uint32_t>>& allowed, std::uint32_t total) {
    return reachability(allowed, total).back()[total] != 0;
}

std::optional<std::vector<std::uint32_t>> any_assignment(
    const std::vector<std::vector<std::uint32_t>>& allowed, std::uint32_t total) {
    const auto reach = reachability(allowed, total);
    if (reach.back()[total] == 0)
        return std::nullopt;
    std::vector<std::uint32_t> layers(allowed.size(), 0);
    std::uint32_t j = total;
    for (std::size_t s = allowed.size(); s-- > 0;) {
        for (const std::uint32_t n : allowed[s]) {
            if (n > j)
                break;
            if (reach[s][j - n] != 0) {
                layers[s] = n;
                j -= n;
                break;
            }
        }
    }
    return layers;
}

std::optional<Assignment> min_sum_assignment(const std::vector<std::vector<std::uint32_t>>& allowed,
                                             std::uint32_t total,
                                             const std::vector<std::vector<double>>& cost) {
    constexpr double unreachable = std::numeric_limits<double>::infinity();
    const std::size_t stages = allowed.size();
    // best[j]: least cost of the stages so far holding j layers; choice[s][j]: stage s's count.
    std::vector<double> best(total + 1, unreachable);
    std::vector<double> next(total + 1);
    std::vector<std::vector<std::uint32_t>> choice(stages,
                                                   std::vector<std::uint32_t>(total + 1, 0));
    best[0] = 0.0;
    for (std::size_t s = 0; s < stages; ++s) {
        std::fill(next.begin(), next.end(), unreachable);
        for (std::uint32_t j = 0; j <= total; ++j) {
            if (best[j] == unreachable)
                continue;
            for (const std::uint32_t n : allowed[s]) {
                if (j + n > total)
                    break;
                const double value = best[j] + cost[s][n];
                if (value < next[j + n]) {
                    next[j + n] = value;
                    choice[s][j + n] = n;
                }
            }
        }
        best.swap(next);
    }
    if (best[total] == unreachable)
        return std::nullopt;
    Assignment out;
    out.sum = best[total];
    out.layers.assign(stages, 0);
    std::uint32_t j = total;
    for (std::size_t s = stages; s-- > 0;) {
        out.layers[s] = choice[s][j];
        j -= choice[s][j];
    }
    return out;
}

}  // namespace ppb::partition::detail
