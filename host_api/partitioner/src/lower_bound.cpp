// A lower bound on the simulated iteration of every plan (ppb/partition/lower_bound.hpp;
// host_api/docs/design.md, "A lower bound on the simulated iteration").
//
// The simulator starts each operation when its stage is free and its inputs are there, so an
// operation ends no earlier than any operation it waits for ends plus its own time, and the
// makespan is at least the total time along any path of waits. One path per stage s: the forward
// of the first micro-batch through the pipeline positions before s's first operation, then every
// operation of stage s in its order, then the backward of the last micro-batch through the
// positions before s's last operation. In every schedule here a stage starts with the forward of
// chunk 0 and ends with the backward of chunk 0, at position s, and the positions before it are
// chunk 0 of the stages before s; so with T_s the stage's work per micro-batch (all its chunks,
// forward + backward) and t_q0 the forward + backward of chunk 0 of stage q,
//     makespan >= M T_s + sum_{q < s} t_q0        for every stage s.
// The bound is the least over plans that fit memory of the largest of these. For a threshold Z,
// whether some plan keeps every stage's term within Z is a knapsack over the stages in order,
// keeping for each count of layers placed the least sum of the chunk-0 times so far (a smaller
// sum only helps the stages after), each stage taking, for n layers, its option with the largest
// total within (Z - sum) / M among those Pareto-optimal in (total, chunk 0's time). Bisection on Z
// finds the least feasible threshold; the largest infeasible one found is the bound. Stages'
// counts are bounded as the solver bounds them: M T_s <= upper.
#include "chunk_tables.hpp"
#include "stage_table.hpp"

#include <ppb/partition/lower_bound.hpp>
#include <ppb/schedule_order.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ppb::partition {
namespace {

using detail::ChunkedStage;
using detail::StageOption;

struct Pair {
    double total = 0.0;
    double first = 0.0;  // chunk 0's time
};

// Whether every stage's path starts and ends at its own chunk 0, with chunk 0 of the stages before
// it on both chains (the schedules of ppb::stage_order; checked, not assumed).
bool paths_through_chunk_zero(const Problem& problem) {
    const std::uint32_t p = problem.num_stages;
    for (std::uint32_t s = 0; s < p; ++s) {
        if (pipeline_position(problem.schedule, p, s, 0) != s)
            return false;
        const std::vector<StageStep> order =
            stage_order(problem.schedule, p, problem.chunks, problem.micro_batches, s);
        if (order.empty() || order.front().pass != Pass::forward || order.front().chunk != 0 ||
            order.back().pass != Pass::backward || order.back().chunk != 0)
            return false;
    }
    return true;
}

}  // namespace

namespace detail {

std::vector<std::uint32_t> most_layers_within_makespan(const Problem& problem, std::uint32_t kinds,
                                                       double makespan) {
    const std::uint32_t layers = problem.time.body_layers;
    double fastest = infinity;
    for (const std::size_t k : kind_list(kinds))
        fastest = std::min(fastest, problem.time.body_time[k]);
    std::vector<std::uint32_t> most(problem.num_stages, layers);
    if (!(fastest > 0.0) || !std::isfinite(makespan))
        return most;
    const double m = problem.micro_batches;
    const double slack = 1e-9 * std::max(1.0, std::abs(makespan));  // rounding never excludes
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        double ends = 0.0;
        for (std::uint32_t c = 0; c < problem.chunks; ++c)
            ends += chunk_time(problem, s, c, KindCounts{});
        std::uint32_t n = problem.num_stages == 1 ? layers : problem.min_layers(s);
        while (n < layers && m * (ends + (n + 1) * fastest) <= makespan + slack)
            ++n;
        most[s] = n;
    }
    return most;
}

}  // namespace detail

double simulated_lower_bound(const Problem& given, const MemorySource& memory, double upper) {
    if (!given.chunked() || !(upper > 0.0) || !std::isfinite(upper))
        return 0.0;
    // One recompute setting for the whole model (megatron, torchtitan) is a subset of the mixes
    // every (stage, chunk) may hold under 'any': a bound over those holds for it.
    Problem problem = given;
    if (problem.rule == RecomputeRule::megatron || problem.rule == RecomputeRule::torchtitan ||
        problem.recompute_setting) {
        problem.rule = RecomputeRule::any;
        problem.recompute_setting.reset();
    }
    const std::uint32_t p = problem.num_stages;
    const std::uint32_t layers = problem.time.body_layers;
    const double m = problem.micro_batches;
    const std::uint32_t kinds = detail::candidate_kinds(problem, memory);
    double fastest = detail::infinity;
    for (const std::size_t k : detail::kind_list(kinds))
        fastest = std::min(fastest, problem.time.body_time[k]);
    // Stage s holds at most the layers with which M T_s can stay within `upper`.
    const std::vector<std::uint32_t> most =
        detail::most_layers_within_makespan(problem, kinds, upper);
    const std::vector<ChunkedStage> stages = detail::build_chunked_stages(
        problem, detail::affine_stages(problem, memory, kinds), kinds, most);

    const bool chains = paths_through_chunk_zero(problem);
    // pairs[s][n]: Pareto-optimal in (total, chunk 0's time), by increasing total. With two chunks
    // the alternatives hold every option Pareto-optimal in the two chunk times, a superset; with
    // more, chunk 0's time is taken at its least (its fewest layers at the fastest kind), which
    // only lowers the bound.
    std::vector<std::vector<std::vector<Pair>>> pairs(p);
    for (const ChunkedStage& stage : stages) {
        auto& by_count = pairs[stage.stage];
        by_count.resize(layers + 1);
        const double least_first =
            detail::chunk_time(problem, stage.stage, 0, KindCounts{}) +
            problem.min_layers(stage.stage, 0) * (fastest > 0.0 ? fastest : 0.0);
        for (std::uint32_t n = 0; n <= layers; ++n) {
            std::vector<Pair> list;
            for (const StageOption& o : stage.alternatives[n]) {
                const double first =
                    !chains ? 0.0 : (problem.chunks == 2 ? o.chunk_times[0] : least_first);
                list.push_back({o.total, first});
            }
            std::sort(list.begin(), list.end(), [](const Pair& a, const Pair& b) {
                return a.total != b.total ? a.total < b.total : a.first < b.first;
            });
            for (const Pair& pair : list) {
                if (by_count[n].empty() || pair.first < by_count[n].back().first)
                    by_count[n].push_back(pair);
            }
        }
    }

    std::vector<double> best(layers + 1), next(layers + 1);
    const auto feasible = [&](double z) {
        std::fill(best.begin(), best.end(), detail::infinity);
        best[0] = 0.0;
        for (std::uint32_t s = 0; s < p; ++s) {
            std::fill(next.begin(), next.end(), detail::infinity);
            const std::uint32_t fewest = p == 1 ? layers : problem.min_layers(s);
            for (std::uint32_t n = fewest; n <= layers; ++n) {
                const auto& list = pairs[s][n];
                if (list.empty())
                    continue;
                for (std::uint32_t j = 0; j + n <= layers; ++j) {
                    if (!(best[j] < detail::infinity))
                        continue;
                    const double before = best[j];
                    // The last option with M total + before <= z: the least chunk 0 among them.
                    const auto it = std::partition_point(
                        list.begin(), list.end(),
                        [&](const Pair& pair) { return m * pair.total + before <= z; });
                    if (it == list.begin())
                        continue;
                    next[j + n] = std::min(next[j + n], before + std::prev(it)->first);
                }
            }
            best.swap(next);
        }
        return best[layers] < detail::infinity;
    };
    double lo = 0.0;
    double hi = upper;
    if (!feasible(hi))
        return upper;  // no plan within the caps beats `upper` (rounding): `upper` is the bound
    while (hi - lo > 1e-9 * hi) {
        const double mid = 0.5 * (lo + hi);
        if (feasible(mid))
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

}  // namespace ppb::partition
