// Internal: the threshold sweep every solver runs (design.md, "The partitioner").
//
// Each objective the partitioner minimises has the form
//     weight x (the largest of one key over the stages) + (what the stages add up to),
// 1F1B's  sum t + (M - 1) max t  being the first. Fix a threshold A on the key: the least sum
// with every stage's key at most A is a knapsack over the stages, and the optimum is the least,
// over A, of that knapsack's plan. Only keys that occur can be the optimum's largest one, so A
// ranges over them:
//  - feasibility is monotone in A (a larger threshold allows more), so the first feasible key is
//    found by bisection;
//  - the sum only falls as A grows, down to `floor` (the least sum without a threshold), so no
//    key with  floor + weight x A >= best  can beat the best plan found: the sweep stops there.
// Each caller says what a key's plan is worth (its `evaluate`); a candidate replaces the best
// only when strictly better, so among equal plans the smallest key's stays.
#ifndef PPB_PARTITION_THRESHOLD_SWEEP_HPP
#define PPB_PARTITION_THRESHOLD_SWEEP_HPP

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace ppb::partition::detail {

// `keys` sorted, each once.
[[nodiscard]] inline std::vector<double> distinct_sorted(std::vector<double> keys) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
}

// The index of the smallest of `keys` (sorted) for which `feasible` holds, feasible being
// monotone; keys.size() when none does.
template <class Feasible>
[[nodiscard]] std::size_t first_feasible(const std::vector<double>& keys, Feasible&& feasible) {
    std::size_t lo = 0;
    std::size_t hi = keys.size();
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (feasible(keys[mid]))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

// A key's plan: what it is worth and what it is.
template <class Candidate>
struct Scored {
    double value = 0.0;
    Candidate candidate;
};

// The best plan of the sweep and the key it was found at.
template <class Candidate>
struct Swept {
    double key = 0.0;
    double value = 0.0;
    Candidate candidate;
};

// No key with floor + weight x key >= the best value can beat it.
struct SweepStop {
    double floor = 0.0;
    double weight = 0.0;
};

// Sweeps `keys` (any order, repeats allowed) upwards from the first feasible one and returns the
// plan strictly better than `best` with the least value (the first found among equals), or no
// value when none beats `best`. `evaluate(key)` returns std::optional<Scored<Candidate>>: no
// value when the key has no plan.
template <class Candidate, class Feasible, class Evaluate>
[[nodiscard]] std::optional<Swept<Candidate>> sweep_thresholds(std::vector<double> keys,
                                                               SweepStop stop, double best,
                                                               Feasible&& feasible,
                                                               Evaluate&& evaluate) {
    keys = distinct_sorted(std::move(keys));
    // Keys past the stop need not be searched for the first feasible one either: the sweep would
    // end at once there.
    keys.erase(std::find_if(keys.begin(), keys.end(),
                            [&](double key) { return stop.floor + stop.weight * key >= best; }),
               keys.end());
    std::optional<Swept<Candidate>> found;
    for (std::size_t i = first_feasible(keys, feasible); i < keys.size(); ++i) {
        if (stop.floor + stop.weight * keys[i] >= best)
            break;  // no later key can do better
        std::optional<Scored<Candidate>> scored = evaluate(keys[i]);
        if (scored && scored->value < best) {
            best = scored->value;
            found = Swept<Candidate>{keys[i], scored->value, std::move(scored->candidate)};
        }
    }
    return found;
}

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_THRESHOLD_SWEEP_HPP
