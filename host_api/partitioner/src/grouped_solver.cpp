// Planning a model of several groups of body layers (host_api/docs/design.md, "Groups of layers"):
// dense and MoE layers, an encoder and a decoder. The layers keep model order, so each stage
// holds one contiguous range of the whole layer sequence and may straddle a group boundary; its
// time and memory are sums over its layers, each by its group and recompute kind.
//
// For stage s and range [a, b) the fastest choice of kinds within the budget is a small exact
// search (below); what remains is the 1F1B objective
//     sum_s t_s + (M - 1) max_s t_s
// over the ways to cut the sequence into P ranges. As in the one-group solver, for a threshold T
// on the maximum the least sum is a shortest path over (stage, cut position), and the optimum is
// the least over thresholds T of that sum + (M - 1) T, T swept upwards from the smallest feasible
// value until (least unconstrained sum) + (M - 1) T cannot beat the best plan found.
//
// The fastest choice for a range:
//   any:         only the counts per group and kind matter. Each group's Pareto frontier over
//                (time, memory) of its mixes of n layers is built layer by layer (as for one
//                group) and the groups' frontiers are combined: the fastest sum within the budget.
//                Ranges with the same counts per group share the answer.
//   mindformers: MindFormers applies its per-stage counts by position within the stage: the first
//                r layers full, then 'both', then 'select' (or 'comm'), then 'none', whatever
//                group each layer is of. The choice is then four cut points in the range, each
//                option's time and memory a difference of prefix sums: all options are searched,
//                the scan over the last cut stopping at the first that fits when a later one can
//                only be slower.
//   one setting: Megatron-LM and torchtitan apply one recompute setting to the whole model
//                (RecomputeRule::megatron, torchtitan; problem.hpp, MegatronRecompute), so the
//                range's kinds follow from its length and the setting: block N recomputes the
//                stage's first N layers fully, whatever group each is of. There is nothing to
//                choose; solve_megatron plans each setting so (Problem::recompute_setting) and
//                keeps the fastest plan, exactly as for one group.
#include "grouped_solver.hpp"
#include "infeasible.hpp"
#include "pareto.hpp"
#include "plan_checks.hpp"

#include "stage_table.hpp"
#include "threshold_sweep.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/number_text.hpp>
#include <ppb/partition/problem.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ppb::partition::detail {
namespace {

constexpr std::size_t kinds_count = PPB_KIND_COUNT;
using UnitArray = std::array<double, kinds_count>;

struct Choice {
    std::vector<KindCounts> groups;
    double time = infinity;
    double memory = 0.0;
};

// What every stage shares: the sequence, the groups' costs and which kinds each group may take.
struct Groups {
    const Problem& problem;
    std::span<const ppb_linear_parameters> c;
    std::uint32_t layers = 0;
    std::size_t count = 0;
    std::vector<std::array<bool, kinds_count>> allowed;  // [g][k]
    std::vector<std::vector<std::size_t>> kinds;         // [g]: the allowed kinds
    std::vector<UnitArray> time;                         // [g][k]
    // Prefix counts per group: prefix[g][i] layers of group g among the first i.
    std::vector<std::vector<std::uint32_t>> prefix;

    // `coefficients` empty: a model probed through predict_grouped_batch, whose kinds are
    // `candidate_kinds` for every group.
    Groups(const Problem& p, std::span<const ppb_linear_parameters> coefficients,
           std::uint32_t candidate_kinds)
        : problem(p), c(coefficients), layers(p.time.body_layers), count(p.time.groups.size()) {
        for (std::size_t g = 0; g < count; ++g) {
            std::array<bool, kinds_count> a{};
            std::vector<std::size_t> list;
            for (std::size_t k = 0; k < kinds_count; ++k) {
                a[k] = (candidate_kinds & PPB_KIND_BIT(k)) != 0 &&
                       (c.empty() || (c[g].identified & PPB_PARAM_ACTIVATION(k)) != 0);
                if (a[k])
                    list.push_back(k);
            }
            allowed.push_back(a);
            kinds.push_back(std::move(list));
            time.push_back(p.time.groups[g].time);
        }
        prefix.assign(count, std::vector<std::uint32_t>(layers + 1, 0));
        for (std::uint32_t i = 0; i < layers; ++i) {
            for (std::size_t g = 0; g < count; ++g)
                prefix[g][i + 1] = prefix[g][i] + (p.time.sequence[i] == g ? 1 : 0);
        }
    }

    [[nodiscard]] std::uint32_t in_range(std::size_t g, std::uint32_t a, std::uint32_t b) const {
        return prefix[g][b] - prefix[g][a];
    }
};

// Memory of one more layer of each group and kind at a stage, and the stage's fixed memory: a
// stage's memory is base_memory + sum over its layers of memory[g][k], from linear coefficients
// or from probing the model (stage_costs()).
struct StageCosts {
    std::uint32_t stage = 0;
    double base_memory = 0.0;
    double base_time = 0.0;
    std::vector<UnitArray> memory;  // [g][k]
    std::vector<double> least;      // [g]: the least memory of one layer of the group
    bool monotone = true;           // no candidate layer frees memory

    StageCosts(const Groups& groups, std::uint32_t s) : stage(s) {
        const Problem& p = groups.problem;
        base_time = grouped_stage_time(p, s, {});
        if (groups.c.empty())
            return;  // probed: filled by stage_costs()
        const double f = p.in_flight(s);
        base_memory = groups.c[0].const_mb + (s == 0 ? groups.c[0].head_mb : 0.0) +
                      (s + 1 == p.num_stages ? groups.c[0].tail_mb : 0.0);
        for (std::size_t g = 0; g < groups.count; ++g) {
            UnitArray m{};
            for (const std::size_t k : groups.kinds[g])
                m[k] = groups.c[g].per_layer_mb + groups.c[g].activation_mb[k] * f;
            memory.push_back(m);
        }
        finish(groups);
    }

    void finish(const Groups& groups) {
        least.clear();
        monotone = true;
        for (std::size_t g = 0; g < groups.count; ++g) {
            double lowest = infinity;
            for (const std::size_t k : groups.kinds[g]) {
                lowest = std::min(lowest, memory[g][k]);
                monotone = monotone && memory[g][k] >= 0.0;
            }
            least.push_back(lowest);
        }
    }

    [[nodiscard]] double memory_of(const std::vector<KindCounts>& counts) const {
        double m = base_memory;
        for (std::size_t g = 0; g < counts.size(); ++g) {
            for (std::size_t k = 0; k < kinds_count; ++k)
                m += counts[g][k] * memory[g][k];
        }
        return m;
    }
};

// Placements of one chunk per stage with counts per group, for predict_grouped_batch.
class GroupedPlacements {
  public:
    explicit GroupedPlacements(std::size_t groups) : groups_(groups) {}
    void add(const Problem& problem, std::uint32_t stage, const std::vector<KindCounts>& counts) {
        stages_.push_back(stage);
        ppb_chunk chunk{};
        chunk.in_flight = problem.in_flight(stage);
        for (std::size_t g = 0; g < groups_; ++g) {
            for (std::size_t k = 0; k < kinds_count; ++k) {
                chunk.layers[k] += counts[g][k];
                layers_.push_back(counts[g][k]);
            }
        }
        chunks_.push_back(chunk);
    }
    [[nodiscard]] std::vector<double> predict(const Problem& problem,
                                              const MemorySource& memory) const {
        std::vector<ppb_grouped_placement> views;
        views.reserve(chunks_.size());
        for (std::size_t i = 0; i < chunks_.size(); ++i) {
            views.push_back(ppb_grouped_placement{
                ppb_placement{problem.num_stages, stages_[i], 1, &chunks_[i]},
                static_cast<std::uint32_t>(groups_), layers_.data() + i * groups_ * kinds_count});
        }
        return memory.predict_grouped_batch(views);
    }

  private:
    std::size_t groups_;
    std::vector<std::uint32_t> stages_;
    std::vector<ppb_chunk> chunks_;
    std::vector<std::uint32_t> layers_;
};

// Each stage's costs: from the coefficients, or by probing the model (no layer, then one layer of
// each group and kind) and checking exactly that it is affine in the counts at that stage (two
// layers of each group and kind, and a mix of every group and kind): the search below is exact
// for such a model, and a model that is not is refused rather than planned wrongly.
std::vector<StageCosts> stage_costs(const Problem& problem, const Groups& groups,
                                    const MemorySource& memory) {
    std::vector<StageCosts> costs;
    for (std::uint32_t s = 0; s < problem.num_stages; ++s)
        costs.emplace_back(groups, s);
    if (!groups.c.empty())
        return costs;
    // One layer of every group and kind at once (as far as each group has layers).
    std::vector<KindCounts> mix(groups.count, KindCounts{});
    for (std::size_t g = 0; g < groups.count; ++g) {
        std::uint32_t left = problem.time.groups[g].layers;
        for (const std::size_t k : groups.kinds[g]) {
            if (left == 0)
                break;
            mix[g][k] = 1;
            --left;
        }
    }
    GroupedPlacements probes(groups.count);
    const auto single = [&](std::size_t g, std::size_t k, std::uint32_t n) {
        std::vector<KindCounts> counts(groups.count, KindCounts{});
        counts[g][k] = n;
        return counts;
    };
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        probes.add(problem, s, std::vector<KindCounts>(groups.count, KindCounts{}));
        for (std::size_t g = 0; g < groups.count; ++g) {
            const std::uint32_t twice = std::min<std::uint32_t>(2, problem.time.groups[g].layers);
            for (const std::size_t k : groups.kinds[g]) {
                probes.add(problem, s, single(g, k, 1));
                probes.add(problem, s, single(g, k, twice));
            }
        }
        probes.add(problem, s, mix);
    }
    const std::vector<double> predicted = probes.predict(problem, memory);
    std::size_t i = 0;
    const auto affine_check = [&](std::uint32_t s, double expected, double got) {
        if (!affine_agrees(expected, got)) {
            throw InputError(fmt::format(
                "the memory model is not affine in the layer counts at stage {} (a probe predicted "
                "{:.6g} MB where the one-layer probes imply {:.6g} MB): ppb plans several groups "
                "of body layers with models whose memory at a stage is a constant plus a memory "
                "per layer of each group and kind",
                s, got, expected));
        }
    };
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        StageCosts& c = costs[s];
        c.base_memory = predicted[i++];
        c.memory.assign(groups.count, UnitArray{});
        for (std::size_t g = 0; g < groups.count; ++g) {
            const std::uint32_t twice = std::min<std::uint32_t>(2, problem.time.groups[g].layers);
            for (const std::size_t k : groups.kinds[g]) {
                c.memory[g][k] = predicted[i++] - c.base_memory;
                affine_check(s, c.base_memory + twice * c.memory[g][k], predicted[i++]);
            }
        }
        affine_check(s, c.memory_of(mix), predicted[i++]);
        c.finish(groups);
    }
    return costs;
}

// A stage's memory: the linear model's own formula, or the probed costs.
double memory_of(const Groups& groups, const StageCosts& costs,
                 const std::vector<KindCounts>& counts) {
    if (!groups.c.empty())
        return grouped_linear_stage_memory(groups.c, groups.problem, costs.stage, counts);
    return costs.memory_of(counts);
}

// ---- any mix per group --------------------------------------------------------------------

struct Point {
    double time;
    double memory;
    KindCounts layers;
};

class AnyMixStage {
  public:
    AnyMixStage(const Groups& groups, const StageCosts& costs)
        : groups_(groups), costs_(costs), frontiers_(groups.count) {
        for (std::size_t g = 0; g < groups.count; ++g) {
            useful_.push_back(undominated(groups.kinds[g], groups.time[g], costs_.memory[g]));
            frontiers_[g].push_back({Point{0.0, 0.0, {}}});
        }
    }

    [[nodiscard]] const StageCosts& costs() const { return costs_; }

    // The fastest mix of the range's layers within the budget (time infinity when none fits).
    Choice fastest(std::uint32_t a, std::uint32_t b) {
        key_.clear();
        for (std::size_t g = 0; g < groups_.count; ++g)
            key_.push_back(groups_.in_range(g, a, b));
        if (const auto it = memo_.find(key_); it != memo_.end())
            return it->second;
        Choice choice = solve(key_);
        memo_.emplace(key_, choice);
        return choice;
    }

  private:
    struct KeyHash {
        std::size_t operator()(const std::vector<std::uint32_t>& key) const noexcept {
            std::size_t h = 0;
            for (const std::uint32_t v : key)
                h = h * 1'000'003u + v;
            return h;
        }
    };

    [[nodiscard]] bool fits(double memory) const {
        return within_budget(costs_.base_memory + memory, groups_.problem.budget_mb());
    }

    // Group g's frontier of n layers, pruned to what fits when memory only grows.
    const std::vector<Point>& frontier(std::size_t g, std::uint32_t n) {
        auto& list = frontiers_[g];
        while (list.size() <= n) {
            std::vector<Point> next;
            for (const Point& p : list.back()) {
                for (const std::size_t k : useful_[g]) {
                    Point q = p;
                    q.time += groups_.time[g][k];
                    q.memory += costs_.memory[g][k];
                    ++q.layers[k];
                    if (costs_.monotone && !fits(q.memory))
                        continue;
                    next.push_back(q);
                }
            }
            keep_time_memory_frontier(next);
            list.push_back(std::move(next));
        }
        return list[n];
    }

    Choice solve(const std::vector<std::uint32_t>& counts) {
        std::vector<std::size_t> active;
        for (std::size_t g = 0; g < counts.size(); ++g) {
            if (counts[g] != 0)
                active.push_back(g);
        }
        Choice best;
        best.groups.assign(groups_.count, KindCounts{});
        if (active.empty()) {
            if (fits(0.0)) {
                best.time = costs_.base_time;
                best.memory = costs_.base_memory;
            }
            return best;
        }
        // Fold every active group but the last into one Pareto set; each point remembers its
        // index in every folded group's frontier.
        struct Folded {
            double time;
            double memory;
            std::vector<std::uint32_t> index;
        };
        std::vector<Folded> folded = {Folded{0.0, 0.0, {}}};
        for (std::size_t i = 0; i + 1 < active.size(); ++i) {
            const auto& f = frontier(active[i], counts[active[i]]);
            std::vector<Folded> next;
            for (const Folded& p : folded) {
                for (std::uint32_t j = 0; j < f.size(); ++j) {
                    const double m = p.memory + f[j].memory;
                    if (costs_.monotone && !fits(m))
                        continue;
                    Folded q{p.time + f[j].time, m, p.index};
                    q.index.push_back(j);
                    next.push_back(std::move(q));
                }
            }
            std::sort(next.begin(), next.end(), [](const Folded& x, const Folded& y) {
                return x.time != y.time ? x.time < y.time : x.memory < y.memory;
            });
            folded.clear();
            for (Folded& q : next) {
                if (folded.empty() || q.memory < folded.back().memory)
                    folded.push_back(std::move(q));
            }
        }
        // The last group: for each folded point the fastest of its frontier that still fits. Its
        // frontier's memory falls as time rises, so that is the first point that fits.
        const std::size_t last = active.back();
        const auto& f = frontier(last, counts[last]);
        const Folded* best_folded = nullptr;
        std::size_t best_j = 0;
        for (const Folded& p : folded) {
            const auto it = std::partition_point(
                f.begin(), f.end(), [&](const Point& q) { return !fits(p.memory + q.memory); });
            if (it == f.end())
                continue;
            const double t = p.time + it->time;
            if (t < best.time) {
                best.time = t;
                best_folded = &p;
                best_j = static_cast<std::size_t>(it - f.begin());
            }
        }
        if (best_folded == nullptr) {
            best.time = infinity;
            return best;
        }
        for (std::size_t i = 0; i + 1 < active.size(); ++i) {
            best.groups[active[i]] =
                frontier(active[i], counts[active[i]])[best_folded->index[i]].layers;
        }
        best.groups[last] = f[best_j].layers;
        best.time = grouped_stage_time(groups_.problem, costs_.stage, best.groups);
        best.memory = memory_of(groups_, costs_, best.groups);
        if (!within_budget(best.memory, groups_.problem.budget_mb()))
            best.time = infinity;  // rounding in the sums put it over: keep the plan honest
        return best;
    }

    const Groups& groups_;
    const StageCosts& costs_;
    std::vector<std::vector<std::size_t>> useful_;
    std::vector<std::vector<std::vector<Point>>> frontiers_;  // [g][n]
    std::unordered_map<std::vector<std::uint32_t>, Choice, KeyHash> memo_;
    std::vector<std::uint32_t> key_;
};

// ---- MindFormers' positional counts ----------------------------------------------------------

// Prefix sums over the sequence of each kind's time, and of the layers that may not take the kind.
struct Prefixes {
    std::array<std::vector<double>, kinds_count> time;
    std::array<std::vector<std::uint32_t>, kinds_count> barred;
    std::vector<double> fastest;  // each layer at its group's fastest allowed kind

    explicit Prefixes(const Groups& groups) {
        const std::uint32_t n = groups.layers;
        fastest.assign(n + 1, 0.0);
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::size_t g = groups.problem.time.sequence[i];
            double t = infinity;
            for (const std::size_t k : groups.kinds[g])
                t = std::min(t, groups.time[g][k]);
            fastest[i + 1] = fastest[i] + t;
        }
        for (std::size_t k = 0; k < kinds_count; ++k) {
            time[k].assign(n + 1, 0.0);
            barred[k].assign(n + 1, 0);
        }
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::size_t g = groups.problem.time.sequence[i];
            for (std::size_t k = 0; k < kinds_count; ++k) {
                const bool ok = groups.allowed[g][k];
                time[k][i + 1] = time[k][i] + (ok ? groups.time[g][k] : 0.0);
                barred[k][i + 1] = barred[k][i] + (ok ? 0 : 1);
            }
        }
    }
};

class PositionalStage {
  public:
    PositionalStage(const Groups& groups, const Prefixes& prefixes, const StageCosts& costs)
        : groups_(groups), prefixes_(prefixes), costs_(costs) {
        // This stage's memory of each kind over the sequence, as prefix sums.
        for (std::size_t k = 0; k < kinds_count; ++k) {
            memory_[k].assign(groups.layers + 1, 0.0);
            for (std::uint32_t i = 0; i < groups.layers; ++i) {
                const std::size_t g = groups.problem.time.sequence[i];
                memory_[k][i + 1] =
                    memory_[k][i] + (groups.allowed[g][k] ? costs.memory[g][k] : 0.0);
            }
        }
        least_.assign(groups.layers + 1, 0.0);
        for (std::uint32_t i = 0; i < groups.layers; ++i)
            least_[i + 1] = least_[i] + costs.least[groups.problem.time.sequence[i]];
        // A later last cut is never faster when, for every group, 'select' (or 'comm') is no
        // faster than 'none': then the scan stops at the first cut that fits. When it also never
        // needs more memory, the first cut that fits is found by bisection.
        for (const std::size_t v : {std::size_t{PPB_KIND_SELECT}, std::size_t{PPB_KIND_COMM}}) {
            bool slower = true;
            bool leaner = true;
            for (std::size_t g = 0; g < groups.count; ++g) {
                if (groups.allowed[g][v] && groups.allowed[g][PPB_KIND_NONE]) {
                    slower = slower && groups.time[g][v] >= groups.time[g][PPB_KIND_NONE];
                    leaner = leaner && costs.memory[g][v] <= costs.memory[g][PPB_KIND_NONE];
                }
            }
            monotone_scan_[v] = slower;
            bisect_[v] = slower && leaner;
        }
    }

    [[nodiscard]] const StageCosts& costs() const { return costs_; }

    Choice fastest(std::uint32_t a, std::uint32_t b) {
        const double budget = groups_.problem.budget_mb();
        double best_time = infinity;
        std::array<std::uint32_t, 4> best_cuts{};
        std::size_t best_variant = PPB_KIND_SELECT;
        const auto usable = [&](std::size_t k, std::uint32_t i, std::uint32_t j) {
            return i == j || prefixes_.barred[k][j] - prefixes_.barred[k][i] == 0;
        };
        const auto time_of = [&](std::size_t k, std::uint32_t i, std::uint32_t j) {
            return prefixes_.time[k][j] - prefixes_.time[k][i];
        };
        const auto memory_of_run = [&](std::size_t k, std::uint32_t i, std::uint32_t j) {
            return memory_[k][j] - memory_[k][i];
        };
        const double fixed = costs_.base_memory;
        // Lower bounds of the rest of the range from position i: each layer at its fastest kind,
        // at its least-memory kind. A prefix of full (or 'both') layers only grows the first as
        // it grows, so once it cannot beat the best, no longer prefix can.
        const auto fastest_rest = [&](std::uint32_t i) {
            return prefixes_.fastest[b] - prefixes_.fastest[i];
        };
        const auto least_rest = [&](std::uint32_t i) { return least_[b] - least_[i]; };
        const auto& barred_none = prefixes_.barred[PPB_KIND_NONE];
        for (std::uint32_t p1 = a; p1 <= b; ++p1) {
            if (!usable(PPB_KIND_FULL, a, p1))
                break;
            const double t1 = time_of(PPB_KIND_FULL, a, p1);
            const double m1 = memory_of_run(PPB_KIND_FULL, a, p1);
            if (costs_.base_time + t1 + fastest_rest(p1) >= best_time)
                break;
            if (!within_budget(fixed + m1 + least_rest(p1), budget))
                continue;
            for (std::uint32_t p2 = p1; p2 <= b; ++p2) {
                if (!usable(PPB_KIND_BOTH, p1, p2))
                    break;
                const double t2 = t1 + time_of(PPB_KIND_BOTH, p1, p2);
                const double m2 = m1 + memory_of_run(PPB_KIND_BOTH, p1, p2);
                if (costs_.base_time + t2 + fastest_rest(p2) >= best_time)
                    break;
                if (!within_budget(fixed + m2 + least_rest(p2), budget))
                    continue;
                // 'none' from the last cut on: it may not start before the range's last layer
                // that cannot be 'none'.
                const auto lo = static_cast<std::uint32_t>(
                    std::lower_bound(barred_none.begin() + p2, barred_none.begin() + b + 1,
                                     barred_none[b]) -
                    barred_none.begin());
                for (const std::size_t v :
                     {std::size_t{PPB_KIND_SELECT}, std::size_t{PPB_KIND_COMM}}) {
                    // 'v' from p2 up to the last cut: no further than its first barred layer.
                    const auto& barred = prefixes_.barred[v];
                    const auto hi = static_cast<std::uint32_t>(
                        std::upper_bound(barred.begin() + p2, barred.begin() + b + 1, barred[p2]) -
                        barred.begin() - 1);
                    if (lo > hi)
                        continue;
                    const auto time_at = [&](std::uint32_t p3) {
                        return costs_.base_time + t2 + time_of(v, p2, p3) +
                               time_of(PPB_KIND_NONE, p3, b);
                    };
                    const auto fits_at = [&](std::uint32_t p3) {
                        return within_budget(fixed + m2 + memory_of_run(v, p2, p3) +
                                                 memory_of_run(PPB_KIND_NONE, p3, b),
                                             budget);
                    };
                    const auto consider = [&](std::uint32_t p3) {
                        const double t = time_at(p3);
                        if (t < best_time) {
                            best_time = t;
                            best_cuts = {p1, p2, p3, b};
                            best_variant = v;
                        }
                    };
                    if (bisect_[v]) {
                        // Memory falls and time rises with the cut: the first that fits.
                        std::uint32_t first = lo;
                        std::uint32_t last = hi + 1;
                        while (first < last) {
                            const std::uint32_t mid = first + (last - first) / 2;
                            if (fits_at(mid))
                                last = mid;
                            else
                                first = mid + 1;
                        }
                        if (first <= hi)
                            consider(first);
                        continue;
                    }
                    for (std::uint32_t p3 = lo; p3 <= hi; ++p3) {
                        if (!fits_at(p3))
                            continue;
                        consider(p3);
                        if (monotone_scan_[v])
                            break;
                    }
                }
            }
        }
        Choice choice;
        choice.groups.assign(groups_.count, KindCounts{});
        if (!std::isfinite(best_time))
            return choice;
        const MindFormersCounts counts{
            best_cuts[0] - a,
            best_cuts[1] - a + (best_variant == PPB_KIND_SELECT ? best_cuts[2] - best_cuts[1] : 0),
            best_cuts[1] - a + (best_variant == PPB_KIND_COMM ? best_cuts[2] - best_cuts[1] : 0)};
        choice.groups = positional_group_layers(groups_.problem, a, b - a, counts);
        choice.time = grouped_stage_time(groups_.problem, costs_.stage, choice.groups);
        choice.memory = memory_of(groups_, costs_, choice.groups);
        if (!within_budget(choice.memory, budget))
            choice.time = infinity;
        return choice;
    }

  private:
    const Groups& groups_;
    const Prefixes& prefixes_;
    const StageCosts& costs_;
    std::array<std::vector<double>, kinds_count> memory_;  // [k][i]
    std::vector<double> least_;  // each layer at its group's least-memory kind, at this stage
    std::array<bool, kinds_count> monotone_scan_{};
    std::array<bool, kinds_count> bisect_{};
};

// ---- one recompute setting for the whole model -------------------------------------------------

// The kinds of the range [a, b) under `setting`, per group: the chunk's mix of b - a layers
// (MegatronRecompute::chunk_layers), its 'full' layers first in model order (block N recomputes
// a block's first N layers; the other settings give every layer one kind).
std::vector<KindCounts> setting_group_layers(const Groups& groups, const MegatronRecompute& setting,
                                             std::uint32_t a, std::uint32_t b) {
    const KindCounts mix = setting.chunk_layers(b - a);
    const std::uint32_t full_end = a + mix[PPB_KIND_FULL];
    std::size_t rest = PPB_KIND_NONE;
    for (std::size_t k = 0; k < kinds_count; ++k) {
        if (k != PPB_KIND_FULL && mix[k] != 0)
            rest = k;
    }
    std::vector<KindCounts> out(groups.count, KindCounts{});
    for (std::size_t g = 0; g < groups.count; ++g) {
        out[g][PPB_KIND_FULL] = groups.in_range(g, a, full_end);
        out[g][rest] += groups.in_range(g, full_end, b);
    }
    return out;
}

// Whether every layer of `layers` takes a kind its group may take.
bool takes_allowed_kinds(const Groups& groups, const std::vector<KindCounts>& layers) {
    for (std::size_t g = 0; g < groups.count; ++g) {
        for (std::size_t k = 0; k < kinds_count; ++k) {
            if (layers[g][k] != 0 && !groups.allowed[g][k])
                return false;
        }
    }
    return true;
}

class SettingStage {
  public:
    SettingStage(const Groups& groups, const StageCosts& costs, const MegatronRecompute& setting)
        : groups_(groups), costs_(costs), setting_(setting) {}

    // The range's one mix, when its kinds are its groups' and it fits (time infinity otherwise).
    Choice fastest(std::uint32_t a, std::uint32_t b) const {
        Choice choice;
        choice.groups = setting_group_layers(groups_, setting_, a, b);
        if (!takes_allowed_kinds(groups_, choice.groups))
            return choice;
        choice.memory = memory_of(groups_, costs_, choice.groups);
        if (within_budget(choice.memory, groups_.problem.budget_mb()))
            choice.time = grouped_stage_time(groups_.problem, costs_.stage, choice.groups);
        return choice;
    }

  private:
    const Groups& groups_;
    const StageCosts& costs_;
    const MegatronRecompute& setting_;
};

// ---- the cut of the sequence into stages ------------------------------------------------------

// Each stage's fastest time for every range it may take: time[s][a * width + n] for the range of
// n layers from a (infinity where nothing fits), n from the stage's fewest layers up to `width`
// - 1.
struct RangeTimes {
    std::uint32_t width = 0;
    std::vector<std::vector<double>> time;
    [[nodiscard]] double at(std::uint32_t s, std::uint32_t a, std::uint32_t n) const {
        return n < width ? time[s][std::size_t{a} * width + n] : infinity;
    }
};

struct Cut {
    std::vector<std::uint32_t> first;  // per stage, its first layer; first[P] = L
    double sum = 0.0;
};

// The cut whose stage times, each at most `threshold`, add up to the least; nullopt if none.
std::optional<Cut> least_sum_cut(const Problem& problem, const RangeTimes& ranges,
                                 double threshold) {
    const std::uint32_t P = problem.num_stages;
    const std::uint32_t L = problem.time.body_layers;
    std::vector<double> previous(L + 1, infinity);
    std::vector<double> current(L + 1, infinity);
    std::vector<std::vector<std::uint32_t>> from(P, std::vector<std::uint32_t>(L + 1, 0));
    previous[0] = 0.0;  // before stage 0, no layer is placed
    for (std::uint32_t s = 0; s < P; ++s) {
        std::fill(current.begin(), current.end(), infinity);
        const std::uint32_t fewest = problem.fewest_layers(s);
        for (std::uint32_t a = 0; a <= L; ++a) {
            if (!std::isfinite(previous[a]))
                continue;
            const std::uint32_t most = std::min(ranges.width - 1, L - a);
            for (std::uint32_t n = fewest; n <= most; ++n) {
                const double t = ranges.at(s, a, n);
                if (!(t <= threshold))
                    continue;
                const double sum = previous[a] + t;
                if (sum < current[a + n]) {
                    current[a + n] = sum;
                    from[s][a + n] = a;
                }
            }
        }
        std::swap(previous, current);
    }
    if (!std::isfinite(previous[L]))
        return std::nullopt;
    Cut cut;
    cut.sum = previous[L];
    cut.first.assign(P + 1, L);
    std::uint32_t end = L;
    for (std::uint32_t s = P; s-- > 0;) {
        cut.first[s] = from[s][end];
        end = cut.first[s];
    }
    return cut;
}

// Why nothing fits: the least limit is the least over cuts of the largest stage need,
// need(s, a, b) being what stage s needs at least holding [a, b) (infinity: it cannot hold it);
// `held` says how its layers were taken. A min-max shortest path over every range.
template <typename Need>
[[noreturn]] void explain_grouped_infeasible(const Problem& problem, const Groups& groups,
                                             const std::vector<StageCosts>& costs,
                                             std::string_view held, Need&& need) {
    const std::uint32_t P = problem.num_stages;
    const std::uint32_t L = problem.time.body_layers;
    const double budget = problem.budget_mb();
    std::vector<double> previous(L + 1, infinity);
    std::vector<double> current(L + 1, infinity);
    std::vector<std::vector<std::uint32_t>> from(P, std::vector<std::uint32_t>(L + 1, 0));
    previous[0] = -infinity;
    std::string reason;
    for (std::uint32_t s = 0; s < P; ++s) {
        std::fill(current.begin(), current.end(), infinity);
        const std::uint32_t fewest = problem.fewest_layers(s);
        for (std::uint32_t a = 0; a <= L; ++a) {
            if (previous[a] == infinity)
                continue;
            for (std::uint32_t b = a + fewest; b <= L; ++b) {
                const double worst = std::max(previous[a], need(s, a, b));
                if (worst < current[b]) {
                    current[b] = worst;
                    from[s][b] = a;
                }
            }
        }
        if (fewest == 0 && !within_budget(costs[s].base_memory, budget) && reason.empty()) {
            reason = fmt::format(
                "stage {} needs {:.1f} MB even with no body layer, more than the {:.1f} MB "
                "available",
                s, costs[s].base_memory, budget);
        }
        std::swap(previous, current);
    }
    if (reason.empty()) {
        reason = fmt::format(
            "within {:.1f} MB no cut of the {} body layers ({} groups) into {} stages fits, {}",
            budget, L, groups.count, P, held);
    }
    LeastFeasibleBudget least;
    least.need_mb = previous[L];
    if (std::isfinite(least.need_mb)) {
        std::uint32_t end = L;
        double most = -infinity;
        for (std::uint32_t s = P; s-- > 0;) {
            const std::uint32_t a = from[s][end];
            const double stage_need = need(s, a, end);
            if (stage_need >= most) {
                most = stage_need;
                least.fullest_stage = s;
            }
            end = a;
        }
    }
    throw_infeasible(problem, reason, least);
}

// Every layer at its group's least-memory kind (exact for linear models).
[[noreturn]] void explain_grouped_infeasible(const Problem& problem, const Groups& groups,
                                             const std::vector<StageCosts>& costs) {
    const std::uint32_t L = problem.time.body_layers;
    std::vector<std::vector<double>> least_prefix(costs.size(), std::vector<double>(L + 1, 0.0));
    for (std::size_t s = 0; s < costs.size(); ++s) {
        for (std::uint32_t i = 0; i < L; ++i) {
            least_prefix[s][i + 1] = least_prefix[s][i] + costs[s].least[problem.time.sequence[i]];
        }
    }
    explain_grouped_infeasible(
        problem, groups, costs, "even with every layer at its group's least-memory recompute kind",
        [&](std::uint32_t s, std::uint32_t a, std::uint32_t b) {
            return costs[s].base_memory + least_prefix[s][b] - least_prefix[s][a];
        });
}

// Under one setting for the whole model: each range's one mix (infinity where a layer would take
// a kind its group may not).
[[noreturn]] void explain_grouped_infeasible(const Problem& problem, const Groups& groups,
                                             const std::vector<StageCosts>& costs,
                                             const MegatronRecompute& setting) {
    explain_grouped_infeasible(problem, groups, costs, fmt::format("with {}", describe(setting)),
                               [&](std::uint32_t s, std::uint32_t a, std::uint32_t b) {
                                   const auto layers = setting_group_layers(groups, setting, a, b);
                                   return takes_allowed_kinds(groups, layers)
                                              ? memory_of(groups, costs[s], layers)
                                              : infinity;
                               });
}

void check_group_count(const Problem& problem, const MemorySource& memory) {
    const std::size_t G = problem.time.groups.size();
    if (memory.group_linear.empty() && memory.predict_grouped_batch)
        return;  // probed
    if (memory.group_linear.size() != G) {
        throw InputError(fmt::format(
            "planning {} groups of body layers needs each group's linear coefficients or grouped "
            "predictions from the memory model (plugin API 1.3); this model gives {}",
            G,
            memory.group_linear.empty() ? "neither" : std::to_string(memory.group_linear.size())));
    }
}

void check_sources(const Problem& problem, const MemorySource& memory, const Groups& groups) {
    const std::size_t G = problem.time.groups.size();
    const struct {
        std::uint32_t bit;
        const char* name;
    } shared[] = {
        {PPB_PARAM_CONST, "const_mb"}, {PPB_PARAM_HEAD, "head_mb"}, {PPB_PARAM_TAIL, "tail_mb"}};
    for (const auto& r : shared) {
        if (!memory.group_linear.empty() && (memory.group_linear[0].identified & r.bit) == 0) {
            throw InputError(fmt::format(
                "the memory model cannot predict every stage of a {}-stage pipeline: its {} is "
                "not determined (see 'ppb fit' for why and which dry run would determine it)",
                problem.num_stages, r.name));
        }
    }
    for (std::size_t g = 0; g < G; ++g) {
        const std::string& name = problem.time.groups[g].name;
        if (problem.time.groups[g].layers == 0)
            continue;
        if (!memory.group_linear.empty() &&
            (memory.group_linear[g].identified & PPB_PARAM_PER_LAYER) == 0) {
            throw InputError(fmt::format(
                "the memory model cannot predict a stage holding '{}' layers: the parameter "
                "memory of that group is not determined (see 'ppb fit')",
                name));
        }
        // Under one setting a group without its kinds only makes the ranges holding its layers
        // infeasible (SettingStage).
        if (groups.kinds[g].empty() && !problem.recompute_setting) {
            throw InputError(fmt::format(
                "no recompute kind can be used for the '{}' layers: none is both allowed and "
                "predictable by the memory model for that group",
                name));
        }
        for (const std::size_t k : groups.kinds[g]) {
            const double t = problem.time.groups[g].time[k];
            if (!(std::isfinite(t) && t > 0.0)) {
                throw InputError(
                    fmt::format("the time of a '{}' layer of group '{}' must be positive, not {}",
                                kind_name(static_cast<ppb_kind>(k)), name, t));
            }
        }
    }
}

}  // namespace

std::vector<std::vector<std::size_t>> group_kinds(const Problem& problem,
                                                  const MemorySource& memory) {
    return Groups(problem, memory.group_linear, problem.kinds & memory.kinds & PPB_ALL_KINDS).kinds;
}

Plan solve_grouped(const Problem& problem, const MemorySource& memory, std::uint32_t kinds) {
    check_group_count(problem, memory);
    const Groups groups(problem, memory.group_linear, kinds);
    check_sources(problem, memory, groups);
    if (problem.chunked())
        return solve_grouped_chunked(problem, memory, groups.kinds);
    const std::uint32_t P = problem.num_stages;
    const std::uint32_t L = problem.time.body_layers;
    const double budget = problem.budget_mb();

    const std::vector<StageCosts> costs = stage_costs(problem, groups, memory);

    // The longest range any stage may take: its layers all at their least-memory kind must fit.
    std::uint32_t width = 1;
    std::vector<std::vector<std::uint32_t>> longest(P, std::vector<std::uint32_t>(L + 1, 0));
    for (std::uint32_t s = 0; s < P; ++s) {
        const StageCosts& c = costs[s];
        for (std::uint32_t a = 0; a <= L; ++a) {
            std::uint32_t n = 0;
            double need = c.base_memory;
            if (c.monotone) {
                while (a + n < L) {
                    need += c.least[problem.time.sequence[a + n]];
                    if (!within_budget(need, budget))
                        break;
                    ++n;
                }
            } else {
                n = L - a;
            }
            longest[s][a] = n;
            width = std::max(width, n + 1);
        }
    }

    RangeTimes ranges;
    ranges.width = width;
    ranges.time.assign(P, std::vector<double>(std::size_t{L + 1} * width, infinity));
    std::optional<Prefixes> prefixes;
    if (problem.rule == RecomputeRule::mindformers)
        prefixes.emplace(groups);
    const auto fill = [&](auto& stage, std::uint32_t s) {
        const std::uint32_t fewest = problem.fewest_layers(s);
        for (std::uint32_t a = 0; a <= L; ++a) {
            for (std::uint32_t n = fewest; n <= longest[s][a]; ++n)
                ranges.time[s][std::size_t{a} * width + n] = stage.fastest(a, a + n).time;
        }
    };
    // Stage s's choices under the rule, handed to `use`.
    const auto with_stage = [&](std::uint32_t s, auto&& use) {
        if (problem.recompute_setting) {
            SettingStage stage(groups, costs[s], *problem.recompute_setting);
            return use(stage);
        }
        if (prefixes) {
            PositionalStage stage(groups, *prefixes, costs[s]);
            return use(stage);
        }
        AnyMixStage stage(groups, costs[s]);
        return use(stage);
    };
    const auto choice_of = [&](std::uint32_t s, std::uint32_t a, std::uint32_t b) {
        return with_stage(s, [&](auto& stage) { return stage.fastest(a, b); });
    };
    for (std::uint32_t s = 0; s < P; ++s)
        with_stage(s, [&](auto& stage) { fill(stage, s); });

    const auto unconstrained = least_sum_cut(problem, ranges, infinity);
    if (!unconstrained && problem.recompute_setting)
        explain_grouped_infeasible(problem, groups, costs, *problem.recompute_setting);
    if (!unconstrained)
        explain_grouped_infeasible(problem, groups, costs);

    const auto times_of = [&](const Cut& cut) {
        std::vector<double> times;
        for (std::uint32_t s = 0; s < P; ++s)
            times.push_back(ranges.at(s, cut.first[s], cut.first[s + 1] - cut.first[s]));
        return times;
    };
    Cut best_cut = *unconstrained;
    if (problem.micro_batches > 1) {
        std::vector<double> thresholds;
        for (const auto& stage : ranges.time) {
            for (const double t : stage) {
                if (std::isfinite(t))
                    thresholds.push_back(t);
            }
        }
        // The unconstrained cut is the plan to beat.
        const auto found = sweep_thresholds<Cut>(
            std::move(thresholds),
            {unconstrained->sum, static_cast<double>(problem.micro_batches - 1)},
            iteration_time(times_of(best_cut), problem.micro_batches),
            [&](double t) { return least_sum_cut(problem, ranges, t).has_value(); },
            [&](double t) -> std::optional<Scored<Cut>> {
                auto cut = least_sum_cut(problem, ranges, t);
                if (!cut)
                    return std::nullopt;
                const double objective = iteration_time(times_of(*cut), problem.micro_batches);
                return Scored<Cut>{objective, std::move(*cut)};
            });
        if (found)
            best_cut = found->candidate;
    }

    Plan plan;
    std::vector<double> times;
    for (std::uint32_t s = 0; s < P; ++s) {
        const std::uint32_t a = best_cut.first[s];
        const std::uint32_t b = best_cut.first[s + 1];
        const Choice choice = choice_of(s, a, b);
        StagePlan stage;
        stage.stage = s;
        stage.in_flight = problem.in_flight(s);
        stage.memory_mb = choice.memory;
        stage.time = choice.time;
        stage.first_layer = a;
        stage.group_layers = choice.groups;
        double forward = 0.0;
        if (s == 0)
            forward += problem.time.head_forward;
        if (s + 1 == P)
            forward += problem.time.tail_forward;
        double activation = 0.0;
        for (std::size_t g = 0; g < groups.count; ++g) {
            for (std::size_t k = 0; k < kinds_count; ++k) {
                stage.layers[k] += choice.groups[g][k];
                forward += choice.groups[g][k] * problem.time.groups[g].forward;
                if (!memory.group_linear.empty())
                    activation += choice.groups[g][k] * memory.group_linear[g].activation_mb[k];
            }
        }
        stage.chunks.push_back(ChunkPlan{0, stage.layers, stage.in_flight, forward,
                                         choice.time - forward, activation});
        times.push_back(choice.time);
        plan.stages.push_back(std::move(stage));
    }
    plan.iteration_time = iteration_time(times, problem.micro_batches);
    plan.activations_known = !memory.group_linear.empty();
    check_finite(plan);
    if (memory.group_linear.empty()) {
        // A probed model: the memory shown is the model's own prediction of each stage.
        GroupedPlacements chosen(groups.count);
        for (const StagePlan& stage : plan.stages)
            chosen.add(problem, stage.stage, stage.group_layers);
        const std::vector<double> predicted = chosen.predict(problem, memory);
        for (std::size_t s = 0; s < plan.stages.size(); ++s) {
            if (!within_budget(predicted[s], budget)) {
                throw InputError(fmt::format(
                    "the memory model predicts {} for stage {} of the plan, over the {} "
                    "budget its probes implied it fits: it is not affine in the layer counts",
                    format_mb(predicted[s]), s, format_mb(budget)));
            }
            plan.stages[s].memory_mb = predicted[s];
        }
    }
    return plan;
}

}  // namespace ppb::partition::detail
