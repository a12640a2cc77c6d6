// Internal: cap, then widen — how every solver keeps its stage tables small (design.md, "Cost").
//
// A generous limit lets every stage take any count up to L, and the tables (or options) a solver
// builds would range over all of them. So each solver first plans with every stage capped at
// about twice the balanced count, 2 ceil(L / P) + v for v chunks, doubling the cap while nothing
// fits (straight to the widest when even each count's least memory cannot place every layer:
// then the widest problem is the uncapped one, and so is its explanation). The plan found bounds
// the optimum's objective, and with it every stage's count (`most_layers_within`); where every
// bound is within its cap the first plan is the optimum, else the solver plans once more within
// the bounds, where the optimum lies, and keeps the first plan should rounding say the second is
// slower.
#ifndef PPB_PARTITION_CAP_THEN_WIDEN_HPP
#define PPB_PARTITION_CAP_THEN_WIDEN_HPP

#include <ppb/partition/problem.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace ppb::partition::detail {

// The first cap on every stage's count.
[[nodiscard]] inline std::uint32_t first_cap(const Problem& problem) {
    const std::uint32_t layers = problem.time.body_layers;
    const std::uint32_t p = problem.num_stages;
    return std::min(layers, 2 * ((layers + p - 1) / p) + problem.chunks);
}

// Each stage's most layers under `cap`: at most its `ceiling` (the most that can fit it; L when
// unknown), at least its fewest.
[[nodiscard]] inline std::vector<std::uint32_t> capped_counts(
    const Problem& problem, std::uint32_t cap, const std::vector<std::uint32_t>& ceiling) {
    std::vector<std::uint32_t> most(problem.num_stages);
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        most[s] = std::max(std::min({cap, problem.time.body_layers, ceiling[s]}),
                           problem.fewest_layers(s));
    }
    return most;
}

// The first plan and the caps it was found within.
template <class Solution>
struct CappedPlan {
    std::vector<std::uint32_t> most;
    std::optional<Solution> plan;  // none: nothing fits even at the widest cap
};

// Plans with every stage capped (`attempt(most)` -> std::optional<Solution>), doubling the cap
// while nothing fits, up to the widest `ceiling`. After a failed attempt `hopeless()` says
// whether even each count's least memory cannot place every layer (then the cap goes straight to
// the widest; a solver that explains that case itself may throw from it).
template <class Solution, class Attempt, class Hopeless>
[[nodiscard]] CappedPlan<Solution> plan_capped(const Problem& problem,
                                               const std::vector<std::uint32_t>& ceiling,
                                               Attempt&& attempt, Hopeless&& hopeless) {
    const std::uint32_t widest =
        std::min(problem.time.body_layers, *std::max_element(ceiling.begin(), ceiling.end()));
    std::uint32_t cap = first_cap(problem);
    CappedPlan<Solution> out;
    out.most = capped_counts(problem, cap, ceiling);
    out.plan = attempt(out.most);
    while (!out.plan && cap < widest) {
        cap = hopeless() ? widest : std::min(widest, 2 * cap);
        out.most = capped_counts(problem, cap, ceiling);
        out.plan = attempt(out.most);
    }
    return out;
}

// The optimum, from the first plan: `bound` is each stage's most layers in a plan no slower than
// the first (trimmed by the caller to what can fit). Where every bound is within `most`, the first
// plan; else `attempt(bound)`'s, unless `value` says it is slower than the first.
template <class Solution, class Attempt, class Value>
[[nodiscard]] Solution widen(const std::vector<std::uint32_t>& most,
                             const std::vector<std::uint32_t>& bound, Solution first,
                             Attempt&& attempt, Value&& value) {
    bool within = true;
    for (std::size_t s = 0; s < most.size(); ++s)
        within = within && bound[s] <= most[s];
    if (within)
        return first;
    std::optional<Solution> best = attempt(bound);
    if (best && value(*best) <= value(first))
        return std::move(*best);
    return first;
}

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_CAP_THEN_WIDEN_HPP
