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

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_PARETO_HPP
