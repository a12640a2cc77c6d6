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

// The least z in [0, upper] at which `feasible` holds, to a relative 1e-9 (feasibility is monotone
// in z): the largest z found infeasible, so never above the true threshold. `upper` when even it
// is infeasible (no plan within the caps beats it: rounding).
template <class Feasible>
double least_feasible(double upper, Feasible feasible) {
    double lo = 0.0;
    double hi = upper;
    if (!feasible(hi))
        return upper;
    while (hi - lo > 1e-9 * hi) {
        const double mid = 0.5 * (lo + hi);
        if (feasible(mid))
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

// The least time of n body layers on a stage whose memory row j may hold `room[j]` MB beyond its
// base, a layer of kind k adding at least unit[j][k] there (its least over the chunks), relaxed
// to real counts: for each row alone a linear programme with two constraints (n layers, the
// row's room), whose optimum is at a vertex holding at most two kinds; the largest over the rows.
// Every plan's stage of n layers takes at least this long. Infinity when no row admits n layers.
double relaxed_least_time(std::uint32_t n, const std::vector<std::size_t>& kinds,
                          const std::vector<double>& time,
                          const std::vector<std::vector<double>>& unit,
                          const std::vector<double>& room) {
    double least = 0.0;
    for (std::size_t j = 0; j < room.size(); ++j) {
        double row = detail::infinity;
        const double slack = 1e-9 * std::max(1.0, std::abs(room[j]));
        for (std::size_t a = 0; a < kinds.size(); ++a) {
            if (n * unit[j][a] <= room[j] + slack)
                row = std::min(row, n * time[a]);
            for (std::size_t b = 0; b < kinds.size(); ++b) {
                if (!(unit[j][b] > unit[j][a]))
                    continue;
                // x_a + x_b = n with the row exactly full: x_b = (room - n u_a) / (u_b - u_a).
                const double x_b = (room[j] - n * unit[j][a]) / (unit[j][b] - unit[j][a]);
                if (x_b < 0.0 || x_b > n)
                    continue;
                row = std::min(row, (n - x_b) * time[a] + x_b * time[b]);
            }
        }
        least = std::max(least, row);
    }
    return least;
}

// simulated_lower_bound where the stages' options are too many to build (TooLargeToPlanExactly):
// the same claim, makespan >= M T_s + sum_{q < s} t_q0, with each T_s at least its ends plus
// relaxed_least_time of its layers under the memory limit, and each t_q0 at least chunk 0's ends
// and fewest layers at the fastest kind. A weaker bound, as cheap as the affine stages.
double relaxed_lower_bound(const Problem& problem, const MemorySource& memory, double upper) {
    const std::uint32_t p = problem.num_stages;
    const std::uint32_t layers = problem.time.body_layers;
    const double m = problem.micro_batches;
    const std::uint32_t kinds = detail::candidate_kinds(problem, memory);
    const std::vector<std::size_t> list = detail::kind_list(kinds);
    const std::vector<detail::AffineStage> affine = detail::affine_stages(problem, memory, kinds);
    const bool chains = paths_through_chunk_zero(problem);
    // least[s][n]: M T_s at least, plus the chunk-0 times of the stages before s.
    std::vector<std::vector<double>> least(p, std::vector<double>(layers + 1, detail::infinity));
    double before = 0.0;
    for (std::uint32_t s = 0; s < p; ++s) {
        // A layer's least time per kind on this stage (over its chunks, whose times may differ
        // by position: Problem::position_times), and chunk 0's fastest layer.
        std::vector<double> time(list.size(), detail::infinity);
        for (std::uint32_t c = 0; c < problem.chunks; ++c) {
            const detail::LayerTimes at = detail::layer_times(problem, s, c);
            for (std::size_t i = 0; i < list.size(); ++i)
                time[i] = std::min(time[i], at.time[list[i]]);
        }
        double fastest = detail::infinity;
        for (const std::size_t k : list)
            fastest = std::min(fastest, detail::layer_times(problem, s, 0).time[k]);
        if (!(fastest > 0.0))
            fastest = 0.0;
        const detail::AffineStage& a = affine[s];
        const std::size_t row_count = a.rows.size();
        std::vector<double> base;
        a.rows.rows(std::vector<detail::ChunkMemory>(problem.chunks), base);
        std::vector<double> room(row_count);
        std::vector<std::vector<double>> unit(row_count, std::vector<double>(list.size()));
        for (std::size_t j = 0; j < row_count; ++j) {
            room[j] = problem.budget_mb() - base[j];
            for (std::size_t i = 0; i < list.size(); ++i) {
                double u = detail::infinity;
                for (std::uint32_t c = 0; c < problem.chunks; ++c) {
                    u = std::min(
                        u, a.fixed[c][list[i]] + a.rows.count(j, c) * a.activation[c][list[i]]);
                }
                unit[j][i] = u;
            }
        }
        double ends = 0.0;
        for (std::uint32_t c = 0; c < problem.chunks; ++c)
            ends += detail::chunk_time(problem, s, c, KindCounts{});
        const std::uint32_t fewest = p == 1 ? layers : problem.min_layers(s);
        for (std::uint32_t n = fewest; n <= layers; ++n)
            least[s][n] = m * (ends + relaxed_least_time(n, list, time, unit, room)) + before;
        if (chains) {
            before += detail::chunk_time(problem, s, 0, KindCounts{}) +
                      problem.min_layers(s, 0) * fastest;
        }
    }
    // Whether every stage can keep its term within z with the layers summing to L: a stage's
    // least time grows with its layers, so its admissible counts run from its fewest to a most.
    const auto feasible = [&](double z) {
        std::uint64_t lowest = 0;
        std::uint64_t highest = 0;
        for (std::uint32_t s = 0; s < p; ++s) {
            const std::uint32_t fewest = p == 1 ? layers : problem.min_layers(s);
            if (!(least[s][fewest] <= z))
                return false;
            std::uint32_t n = fewest;
            while (n < layers && least[s][n + 1] <= z)
                ++n;
            lowest += fewest;
            highest += n;
        }
        return lowest <= layers && layers <= highest;
    };
    return least_feasible(upper, feasible);
}

}  // namespace

namespace detail {

double fastest_body_layer(const Problem& problem, std::uint32_t kinds) {
    double fastest = infinity;
    const auto least = least_layer_times(problem);
    for (const std::size_t k : kind_list(kinds))
        fastest = std::min(fastest, least[k]);
    return fastest;
}

std::vector<std::uint32_t> most_layers_within(const Problem& problem, double fastest_layer,
                                              double value) {
    const std::uint32_t layers = problem.time.body_layers;
    std::vector<std::uint32_t> most(problem.num_stages, layers);
    if (!(fastest_layer > 0.0) || !std::isfinite(value))
        return most;
    const double m = problem.micro_batches;
    const double slack = 1e-9 * std::max(1.0, std::abs(value));  // rounding never excludes
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        double ends = 0.0;
        for (std::uint32_t c = 0; c < problem.chunks; ++c)
            ends += chunk_time(problem, s, c, KindCounts{});
        std::uint32_t n = problem.fewest_layers(s);
        while (n < layers && m * (ends + (n + 1) * fastest_layer) <= value + slack)
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
    const double fastest = detail::fastest_body_layer(problem, kinds);
    // Stage s holds at most the layers with which M T_s can stay within `upper`.
    const std::vector<std::uint32_t> most = detail::most_layers_within(problem, fastest, upper);
    std::vector<ChunkedStage> stages;
    try {
        const detail::ScopedExactWorkBudget budget(detail::default_exact_work_budget);
        stages = detail::build_chunked_stages(
            problem, memory, detail::affine_stages(problem, memory, kinds), kinds, most);
    } catch (const TooLargeToPlanExactly&) {
        return relaxed_lower_bound(problem, memory, upper);
    }

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
    return least_feasible(upper, feasible);
}

}  // namespace ppb::partition
