#include "assignment.hpp"

#include <algorithm>
#include <limits>

namespace ppb::partition::detail {

bool can_sum_to(const std::vector<std::vector<std::uint32_t>>& allowed, std::uint32_t total) {
    std::vector<char> reachable(total + 1, 0);
    reachable[0] = 1;
    std::vector<char> next(total + 1);
    for (const auto& counts : allowed) {
        std::fill(next.begin(), next.end(), 0);
        for (std::uint32_t j = 0; j <= total; ++j) {
            if (reachable[j] == 0)
                continue;
            for (const std::uint32_t n : counts) {
                if (j + n > total)
                    break;
                next[j + n] = 1;
            }
        }
        reachable.swap(next);
    }
    return reachable[total] != 0;
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
