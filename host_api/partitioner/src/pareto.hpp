// Internal: the Pareto frontiers the stage tables keep (design.md, "Stage tables").
//
// A mix of recompute kinds is worth keeping only if no other mix of as many layers is at once no
// slower and needs no more memory. The frontiers are kept by increasing time, so that the first
// mix that fits a budget is the fastest that does; among equal times the one needing less memory
// comes first, and of two equal points the first found stays (the sort's order then decides which
// plan among equals a solver returns: keep it stable across callers).
#ifndef PPB_PARTITION_PARETO_HPP
#define PPB_PARTITION_PARETO_HPP

#include <algorithm>
#include <utility>
#include <vector>

namespace ppb::partition::detail {

// Points with `.time` and `.memory` (one number): sorted by (time, memory), each kept when it
// needs less memory than every faster one kept.
template <class Point>
void keep_time_memory_frontier(std::vector<Point>& points) {
    std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
        return a.time != b.time ? a.time < b.time : a.memory < b.memory;
    });
    std::size_t kept = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (kept == 0 || points[i].memory < points[kept - 1].memory)
            points[kept++] = std::move(points[i]);
    }
    points.resize(kept);
}

// The order of the (time, fixed, activation) frontier: by time, then fixed memory, then
// activation, for any points with `.time` and `.memory.fixed`, `.memory.activation`.
struct ByTimeFixedActivation {
    template <class Point>
    bool operator()(const Point& a, const Point& b) const {
        if (a.time != b.time)
            return a.time < b.time;
        if (a.memory.fixed != b.memory.fixed)
            return a.memory.fixed < b.memory.fixed;
        return a.memory.activation < b.memory.activation;
    }
};

// Points with `.time` and `.memory.fixed`, `.memory.activation` (memory that does not grow with
// the micro-batches in flight, and memory that does: no one of them orders the mixes for every
// in-flight count): sorted by (time, fixed, activation), each kept when no point kept before it
// needs no more of both.
template <class Point>
void keep_time_fixed_activation_frontier(std::vector<Point>& points) {
    std::sort(points.begin(), points.end(), ByTimeFixedActivation{});
    std::vector<Point> kept;
    for (Point& p : points) {
        // The latest kept are the likeliest to dominate (the closest in time): look there first.
        const bool beaten = std::any_of(kept.rbegin(), kept.rend(), [&](const Point& k) {
            return k.memory.fixed <= p.memory.fixed && k.memory.activation <= p.memory.activation;
        });
        if (!beaten)
            kept.push_back(std::move(p));
    }
    points = std::move(kept);
}

// Two keys kept Pareto-optimal as the points come, without sorting them all: the kept points by
// increasing `first`, each with a smaller `second` than every point before it. A point is kept
// unless one kept has no larger first and no larger second; it drops the kept points it has no
// larger keys than. The set kept is the one a stable sort by (first, second) and a pass keeping
// each point whose second beats every earlier one would keep, in the same order, in O(log kept) per
// point instead of a sort of every point. A point with the same two keys as one kept takes its
// place when the caller's tie-break prefers it.
template <class Value>
class Staircase {
  public:
    struct Step {
        double first = 0.0;
        double second = 0.0;
        Value value;
    };

    // Whether (first, second) was kept. `better(value, kept)`, asked only of a point with the
    // same keys as one kept, whether it takes that one's place.
    template <class Better>
    bool offer(double first, double second, const Value& value, Better&& better) {
        // The kept points with first <= the new one's: the last of them has the least second.
        const auto after = std::upper_bound(steps_.begin(), steps_.end(), first,
                                            [](double f, const Step& s) { return f < s.first; });
        if (after != steps_.begin()) {
            Step& before = *std::prev(after);
            if (before.first == first && before.second == second && better(value, before.value)) {
                before.value = value;
                return true;
            }
            if (before.second <= second)
                return false;
        }
        // The kept points the new one beats: from the first with first >= its own, while their
        // second is no smaller (an equal first has a larger second, or the new one was beaten).
        auto from = std::lower_bound(steps_.begin(), steps_.end(), first,
                                     [](const Step& s, double f) { return s.first < f; });
        auto to = from;
        while (to != steps_.end() && to->second >= second)
            ++to;
        from = steps_.erase(from, to);
        steps_.insert(from, Step{first, second, value});
        return true;
    }

    [[nodiscard]] const std::vector<Step>& steps() const noexcept { return steps_; }

  private:
    std::vector<Step> steps_;
};

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_PARETO_HPP
