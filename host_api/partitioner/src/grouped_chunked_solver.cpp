// Planning a model of several groups of body layers with two chunks per stage (interleaved,
// interleaved-less-memory, dualpipe-v), exactly: host_api/docs/design.md, "Groups of layers with
// chunks"; the layout and the files' jobs in grouped_chunked.hpp.
//
// A knapsack over stages whose state is two cut points. Take the stages in order. After stages
// 0 .. s - 1, the chunk-0 positions have consumed [0, a_s) and the chunk-1 positions a range
// that ends (dualpipe-v: starts) at a second cut point; stage s extends both. So the state is the
// pair of cut points (i, j):
//   dualpipe-v:  chunk 1 runs back up the stages, so it fills the sequence from the end: state
//                (a_s, a_{2P-s}) from (0, L); stage s takes [i, i + n0) and [j - n1, j); the plan
//                is complete when the two meet, i = j.
//   interleaved: chunk 1 of stage 0 starts where chunk 0 of stage P - 1 ends, at a_P = x: for
//                each x, state (a_s, a_{P+s}) from (0, x) to (x, L); stage s takes [i, i + n0)
//                and [j, j + n1).
// Every cut is one path and every path one cut, so the knapsack is exact over layouts.
//
// A stage's options for a pair of ranges (grouped_chunk_options.cpp): its mixes of recompute kinds
// per chunk, Pareto-optimal in (the stage's total time, its slowest chunk), each fitting every row
// of its in-flight profile.
//
// The objectives are the chunked solver's (problem.hpp, ChunkObjective), minimised as there:
//   stages: M max_s T_s + min_{s*} sum_{s != s*} m_s — for a threshold A on T_s the knapsack's
//           cost is each stage's least slowest chunk among its options with total <= A, plus one
//           bit for the stage s* whose slowest chunk is not counted; A swept upwards from the
//           smallest feasible total until M A + D(infinity) cannot beat the best;
//   slots:  (2M - 1) max_s m_s + sum_s m_s — a threshold on m_s, the cost m_s.
//
// Cost. States (L + 1)^2, per stage at most w^2 transitions (w the most layers a stage may hold),
// so O(P L^2 w^2) per threshold for dualpipe-v and L times that for interleaved (each x). Each
// stage's count is capped first at about twice the balanced count, and the plan found bounds it
// (M T_s is at most the objective), as in the chunked solver.
#include "cap_then_widen.hpp"
#include "chunk_tables.hpp"
#include "grouped_chunked.hpp"
#include "grouped_envelope.hpp"
#include "grouped_solver.hpp"
#include "plan_checks.hpp"
#include "stage_table.hpp"
#include "threshold_sweep.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/number_text.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

namespace ppb::partition::detail {
namespace {

// ---- the knapsack over stages ---------------------------------------------------------------

// The option a stage takes under a threshold: 'stages', the least slowest chunk among totals
// <= A (the last such); 'slots', the least slowest chunk if it is <= A.
const GroupedOption* pick(const std::vector<GroupedOption>& options, ChunkObjective objective,
                          double threshold) {
    if (options.empty())
        return nullptr;
    if (objective == ChunkObjective::slots)
        return options.back().slowest <= threshold ? &options.back() : nullptr;
    const auto it =
        std::upper_bound(options.begin(), options.end(), threshold,
                         [](double a, const GroupedOption& option) { return a < option.total; });
    return it == options.begin() ? nullptr : &*std::prev(it);
}

struct Layers {
    std::uint32_t n0 = 0;
    std::uint32_t n1 = 0;
};

struct Knapsack {
    double value = infinity;  // D(A): the least sum of slowest chunks (but s*'s for 'stages')
    std::uint32_t split = 0;  // interleaved: a_P
    std::vector<Layers> layers;
};

class GroupedKnapsack {
  public:
    GroupedKnapsack(const Layout& layout, std::vector<StageOptions>& stages,
                    std::vector<std::uint32_t> most)
        : layout_(layout), stages_(stages), most_(std::move(most)) {}

    // The least value under `threshold`, and with `trace` the layers per stage reaching it.
    Knapsack solve(ChunkObjective objective, double threshold, bool trace) {
        const Problem& p = layout_.problem;
        const std::uint32_t L = layout_.layers;
        Knapsack best;
        if (v_shaped(p.schedule))
            return run(objective, threshold, trace, 0, L, L);
        for (std::uint32_t x = 0; x <= L; ++x) {
            Knapsack k = run(objective, threshold, false, x, x, L);
            if (k.value < best.value) {
                best = k;
                best.split = x;
            }
        }
        if (trace && best.value < infinity) {
            const std::uint32_t x = best.split;
            best = run(objective, threshold, true, x, x, L);
            best.split = x;
        }
        return best;
    }

  private:
    // From state (0, start1) to the end state: dualpipe-v (i == j), interleaved (x, L).
    Knapsack run(ChunkObjective objective, double threshold, bool trace, std::uint32_t x,
                 std::uint32_t start1, std::uint32_t L) {
        const Problem& p = layout_.problem;
        const bool dual = v_shaped(p.schedule);
        const std::uint32_t P = p.num_stages;
        const std::size_t side = std::size_t{L} + 1;
        const std::size_t states = side * side;
        const bool free_stage = objective == ChunkObjective::stages;
        best0_.assign(states, infinity);
        best1_.assign(states, infinity);
        best0_[start1] = 0.0;  // (i, j) = (0, start1)
        struct Step {
            std::uint32_t from = 0;
            std::uint16_t n0 = 0;
            std::uint16_t n1 = 0;
            std::uint8_t from_flag = 0;
        };
        std::vector<std::vector<Step>> steps0, steps1;
        for (std::uint32_t s = 0; s < P; ++s) {
            next0_.assign(states, infinity);
            next1_.assign(states, infinity);
            std::vector<Step> t0(trace ? states : 0), t1(trace ? states : 0);
            StageOptions& stage = stages_[s];
            const std::uint32_t f0 = p.num_stages == 1 ? 0 : p.min_layers(s, 0);
            const std::uint32_t f1 = p.num_stages == 1 ? 0 : p.min_layers(s, 1);
            const std::uint32_t most = most_[s];
            for (std::uint32_t i = 0; i <= L; ++i) {
                for (std::uint32_t j = 0; j <= L; ++j) {
                    const std::size_t at = i * side + j;
                    const double v0 = best0_[at];
                    const double v1 = best1_[at];
                    if (!(v0 < infinity) && !(v1 < infinity))
                        continue;
                    // Room for chunk 0 (up to the meeting point or to x) and chunk 1.
                    const std::uint32_t end0 = dual ? j : x;
                    for (std::uint32_t n0 = f0; n0 <= most && i + n0 <= end0; ++n0) {
                        for (std::uint32_t n1 = f1; n0 + n1 <= most; ++n1) {
                            std::uint32_t a1 = 0;
                            std::uint32_t j_next = 0;
                            if (dual) {
                                if (i + n0 + n1 > j)
                                    break;
                                a1 = j - n1;
                                j_next = a1;
                            } else {
                                if (j + n1 > L)
                                    break;
                                a1 = j;
                                j_next = j + n1;
                            }
                            const GroupedOption* option =
                                pick(stage.options(i, n0, a1, n1), objective, threshold);
                            if (option == nullptr)
                                continue;
                            const std::size_t to = (i + n0) * side + j_next;
                            const Step step{static_cast<std::uint32_t>(at),
                                            static_cast<std::uint16_t>(n0),
                                            static_cast<std::uint16_t>(n1), 0};
                            if (v0 < infinity) {
                                const double as_other = v0 + option->slowest;
                                if (as_other < next0_[to]) {
                                    next0_[to] = as_other;
                                    if (trace)
                                        t0[to] = step;
                                }
                                if (free_stage && v0 < next1_[to]) {  // this stage is s*
                                    next1_[to] = v0;
                                    if (trace)
                                        t1[to] = step;
                                }
                            }
                            if (v1 < infinity && v1 + option->slowest < next1_[to]) {
                                next1_[to] = v1 + option->slowest;
                                if (trace) {
                                    t1[to] = step;
                                    t1[to].from_flag = 1;
                                }
                            }
                        }
                    }
                }
            }
            best0_.swap(next0_);
            best1_.swap(next1_);
            if (trace) {
                steps0.push_back(std::move(t0));
                steps1.push_back(std::move(t1));
            }
        }
        // The end states.
        Knapsack out;
        std::size_t end = 0;
        const std::vector<double>& last = free_stage ? best1_ : best0_;
        if (dual) {
            for (std::uint32_t i = 0; i <= L; ++i) {
                if (last[i * side + i] < out.value) {
                    out.value = last[i * side + i];
                    end = i * side + i;
                }
            }
        } else {
            end = x * side + L;
            out.value = last[end];
        }
        if (!trace || !(out.value < infinity))
            return out;
        out.layers.assign(P, Layers{});
        std::uint8_t flag = free_stage ? 1 : 0;
        for (std::uint32_t s = P; s-- > 0;) {
            const Step step = flag ? steps1[s][end] : steps0[s][end];
            out.layers[s] = Layers{step.n0, step.n1};
            end = step.from;
            flag = step.from_flag;
        }
        return out;
    }

    const Layout& layout_;
    std::vector<StageOptions>& stages_;
    std::vector<std::uint32_t> most_;
    std::vector<double> best0_, best1_, next0_, next1_;
};

// The chosen option of every stage, and where each chunk's range starts.
struct Chosen {
    std::vector<const GroupedOption*> options;
    std::vector<std::array<std::uint32_t, 2>> first;  // [s][c]
};

Chosen choose(const Layout& layout, std::vector<StageOptions>& stages, const Knapsack& k,
              ChunkObjective objective, double threshold) {
    const Problem& p = layout.problem;
    const std::uint32_t P = p.num_stages;
    const bool dual = v_shaped(p.schedule);
    Chosen out;
    std::uint32_t i = 0;
    std::uint32_t j = dual ? layout.layers : k.split;
    for (std::uint32_t s = 0; s < P; ++s) {
        const auto [n0, n1] = k.layers[s];
        const std::uint32_t a1 = dual ? j - n1 : j;
        out.options.push_back(pick(stages[s].options(i, n0, a1, n1), objective, threshold));
        out.first.push_back({i, a1});
        i += n0;
        j = dual ? a1 : j + n1;
    }
    return out;
}

double objective_of(const Problem& problem, const Chosen& chosen) {
    std::vector<std::vector<double>> times;
    for (const GroupedOption* o : chosen.options)
        times.push_back({o->chunk_times[0], o->chunk_times[1]});
    return schedule_iteration_time(times, problem.micro_batches, problem.objective);
}

// The exact optimum within the stages' caps, or nothing when no plan exists within them.
std::optional<Chosen> best_within(const Layout& layout, std::vector<StageOptions>& stages,
                                  const std::vector<std::uint32_t>& most) {
    const Problem& p = layout.problem;
    const ChunkObjective objective = p.objective;
    GroupedKnapsack knapsack(layout, stages, most);
    const Knapsack unconstrained = knapsack.solve(objective, infinity, false);
    if (!(unconstrained.value < infinity))
        return std::nullopt;
    // Every option the knapsack may take has been built by now: the thresholds are theirs.
    std::vector<double> thresholds;
    for (const StageOptions& stage : stages) {
        for (const auto& list : stage.built()) {
            for (const GroupedOption& o : list)
                thresholds.push_back(objective == ChunkObjective::slots ? o.slowest : o.total);
        }
    }
    // 'stages': M A + D(A); 'slots': (2M - 1) A + sum m.
    const double weight = objective == ChunkObjective::slots ? 2.0 * p.micro_batches - 1.0
                                                             : static_cast<double>(p.micro_batches);
    const auto found = sweep_thresholds<std::monostate>(
        std::move(thresholds), {unconstrained.value, weight}, infinity,
        [&](double a) { return knapsack.solve(objective, a, false).value < infinity; },
        [&](double a) -> std::optional<Scored<std::monostate>> {
            const Knapsack k = knapsack.solve(objective, a, true);
            if (!(k.value < infinity))
                return std::nullopt;
            return Scored<std::monostate>{objective_of(p, choose(layout, stages, k, objective, a)),
                                          {}};
        });
    // (Some key always beats infinity: the largest allows every option.)
    const double best_threshold = found ? found->key : infinity;
    const Knapsack k = knapsack.solve(objective, best_threshold, true);
    return choose(layout, stages, k, objective, best_threshold);
}

// The fastest candidate body layer of any group.
double fastest_layer(const Layout& layout) {
    double fastest = infinity;
    for (std::size_t g = 0; g < layout.groups; ++g) {
        for (const std::size_t k : layout.kinds[g])
            fastest = std::min(fastest, layout.layer_time(g, k));
    }
    return fastest;
}

// The most body layers stage s can hold within the budget whatever their ranges and kinds: in row
// j each layer costs at least the least of fixed + f_jc x activation over the chunks, groups and
// kinds, so n layers need at least base_j + n x that (with every such unit >= 0; L otherwise).
// A count above it has no option, so the cap loses nothing, and it keeps the ranges whose mixes
// are built (O(n^3) each under MindFormers' rule) to those that can fit.
std::vector<std::uint32_t> most_layers_that_fit(const Layout& layout) {
    const Problem& p = layout.problem;
    const double budget = p.budget_mb();
    std::vector<std::uint32_t> most(p.num_stages, layout.layers);
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        const GroupedAffineStage& affine = layout.affine[s];
        std::vector<double> base;
        const ChunkMemory none[2] = {};
        affine.rows.rows(none, base);
        std::uint32_t fits = layout.layers;
        for (std::size_t row = 0; row < affine.rows.size(); ++row) {
            double least = infinity;
            for (std::uint32_t c = 0; c < 2; ++c) {
                for (std::size_t g = 0; g < layout.groups; ++g) {
                    if (p.time.groups[g].layers == 0)
                        continue;
                    for (const std::size_t k : layout.kinds[g]) {
                        least =
                            std::min(least, affine.fixed[c][g][k] + affine.rows.count(row, c) *
                                                                        affine.activation[c][g][k]);
                    }
                }
            }
            if (!(least > 0.0) || !std::isfinite(least))
                continue;  // no bound from this row
            std::uint32_t n = 0;
            while (n < fits && within_budget(base[row] + (n + 1) * least, budget))
                ++n;
            fits = std::min(fits, n);
        }
        most[s] = std::max(fits, p.min_layers(s));
    }
    return most;
}

Plan plan_of(const Layout& layout, const MemorySource& memory, const Chosen& chosen) {
    const Problem& p = layout.problem;
    Plan plan;
    std::vector<std::vector<double>> chunk_times;
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        const GroupedOption& option = *chosen.options[s];
        const GroupedAffineStage& affine = layout.affine[s];
        const ChunkMemory memories[2] = {option.mixes[0]->memory, option.mixes[1]->memory};
        const StageRows::Peak peak = affine.rows.peak(memories);
        const InFlightVector& at_peak = affine.rows.profile()[peak.row];
        StagePlan sp;
        sp.stage = s;
        sp.in_flight = at_peak[0];
        sp.memory_mb = option.memory;
        sp.first_layer = chosen.first[s][0];
        sp.group_layers.assign(layout.groups, KindCounts{});
        for (std::uint32_t c = 0; c < 2; ++c) {
            const GroupMix& mix = *option.mixes[c];
            ChunkPlan chunk;
            chunk.chunk = c;
            chunk.in_flight = at_peak[c];
            chunk.first_layer = chosen.first[s][c];
            chunk.group_layers = mix.groups;
            chunk.forward_time = chunk_forward_time(p, s, c, KindCounts{});
            for (std::size_t g = 0; g < layout.groups; ++g) {
                for (std::size_t k = 0; k < kind_count; ++k) {
                    const std::uint32_t n = mix.groups[g][k];
                    chunk.layers[k] += n;
                    sp.layers[k] += n;
                    sp.group_layers[g][k] += n;
                    chunk.forward_time += n * p.time.groups[g].forward;
                    chunk.activation_mb += n * affine.activation[c][g][k];
                }
            }
            chunk.activation_mb += affine.base_activation[c];
            chunk.backward_time = option.chunk_times[c] - chunk.forward_time;
            sp.time += option.chunk_times[c];
            sp.chunks.push_back(std::move(chunk));
        }
        chunk_times.push_back({option.chunk_times[0], option.chunk_times[1]});
        plan.stages.push_back(std::move(sp));
    }
    if (memory.group_linear.empty()) {
        // A probed model reports its own prediction, its largest over each stage's profile at
        // the true counts (ppb::zero_count_probes where a chunk holds none).
        for (StagePlan& sp : plan.stages) {
            const ChunkGroups layers{sp.chunks[0].group_layers, sp.chunks[1].group_layers};
            const auto& profile = layout.affine[sp.stage].rows.profile();
            const StageRows::Peak peak = predicted_peak(p, memory, sp.stage, layers, profile);
            if (!within_budget(peak.memory, p.budget_mb())) {
                throw InputError(fmt::format(
                    "the memory model predicts {} for stage {} of the plan, over the {} "
                    "budget its probes implied it fits: it is not affine in the layer counts",
                    format_mb(peak.memory), sp.stage, format_mb(p.budget_mb())));
            }
            sp.memory_mb = peak.memory;
            sp.in_flight = profile[peak.row][0];
            for (std::uint32_t c = 0; c < 2; ++c)
                sp.chunks[c].in_flight = profile[peak.row][c];
        }
    }
    plan.iteration_time = schedule_iteration_time(chunk_times, p.micro_batches, p.objective);
    plan.activations_known = true;
    check_finite(plan);
    return plan;
}

}  // namespace

Plan solve_grouped_chunked(const Problem& problem, const MemorySource& memory,
                           const std::vector<std::vector<std::size_t>>& kinds) {
    validate_chunked(problem);
    // With more chunks the state below (a cut point per chunk) is too large, its estimate leaves
    // out the zero-bubble schedules' weight-gradient passes, and it weighs every mix, not one
    // setting per run: the plan is bounded instead (grouped_envelope.hpp).
    if (planned_through_one_group(problem))
        return solve_grouped_through_envelope(problem, memory, kinds);
    Layout layout(problem);
    layout.layers = problem.time.body_layers;
    layout.groups = problem.time.groups.size();
    layout.kinds = kinds;
    layout.prefix.assign(layout.groups, std::vector<std::uint32_t>(layout.layers + 1, 0));
    for (std::uint32_t i = 0; i < layout.layers; ++i) {
        for (std::size_t g = 0; g < layout.groups; ++g)
            layout.prefix[g][i + 1] = layout.prefix[g][i] + (problem.time.sequence[i] == g ? 1 : 0);
    }
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        layout.affine.push_back(memory.group_linear.empty()
                                    ? probed_grouped_stage(problem, memory, s, kinds)
                                    : linear_grouped_stage(problem, memory.group_linear, s));
    }
    const std::uint32_t P = problem.num_stages;
    // Cap, then widen (cap_then_widen.hpp); each stage's cap is also the most layers that can
    // fit it. A stage's options cover the ranges its cap allows (the knapsack asks no longer
    // ones), and a plan points into them: each set lives until the plan is made.
    const std::vector<std::uint32_t> fits = most_layers_that_fit(layout);
    const auto options_for = [&](const std::vector<std::uint32_t>& most) {
        std::vector<StageOptions> stages;
        stages.reserve(P);
        for (std::uint32_t s = 0; s < P; ++s)
            stages.emplace_back(layout, s, most[s]);
        return stages;
    };
    std::vector<StageOptions> stages;
    // Nothing fits within the cap: when even each layer at its lightest kind fits no cut, no cap
    // would help (and the widest caps cost the most), so say why now.
    std::optional<LeastLimit> least;
    const auto capped = plan_capped<Chosen>(
        problem, fits,
        [&](const std::vector<std::uint32_t>& most) {
            stages = options_for(most);
            return best_within(layout, stages, most);
        },
        [&] {
            if (!least) {
                least = least_limit(layout);
                if (least->searched && !within_budget(least->need, problem.budget_mb()))
                    explain_grouped_chunked(layout, *least);
            }
            return false;
        });
    if (!capped.plan)
        explain_grouped_chunked(layout, least ? *least : least_limit(layout));
    std::vector<std::uint32_t> bound =
        most_layers_within(problem, fastest_layer(layout), objective_of(problem, *capped.plan));
    for (std::uint32_t s = 0; s < P; ++s)
        bound[s] = std::max(std::min(bound[s], fits[s]), capped.most[s]);
    std::vector<StageOptions> wider;
    const Chosen best = widen(
        capped.most, bound, *capped.plan,
        [&](const std::vector<std::uint32_t>& most) {
            wider = options_for(most);
            return best_within(layout, wider, most);
        },
        [&](const Chosen& chosen) { return objective_of(problem, chosen); });
    return plan_of(layout, memory, best);
}

}  // namespace ppb::partition::detail
