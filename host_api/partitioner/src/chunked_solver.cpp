// The partitioner with several chunks per stage (host_api/docs/design.md, "Every schedule").
//
// The objective, with T_s the sum of stage s's chunk times and m_s its slowest chunk:
//     Phi = M x max_s T_s + sum_s m_s - max_s m_s.
// Write sum_s m_s - max_s m_s as min over one stage s* of sum_{s != s*} m_s (dropping the largest
// term is the least sum of all but one). Then for a threshold A on max_s T_s,
//     D(A) = min over plans with every T_s <= A and a stage s* of sum_{s != s*} m_s
// is a knapsack over stages with one extra bit (s* chosen or not), where a stage holding n layers
// costs the least slowest chunk among its options with total <= A (chunk_tables.cpp keeps them
// Pareto-optimal in (total, slowest)), or 0 as s*. Every value M x A + D(A) is at least the
// objective of the plan it comes from, and at A = the optimum's max T_s with s* its slowest-chunk
// stage it equals the optimum: so min over A of M x A + D(A) is the optimum. A is swept upwards
// over the totals that occur, from the smallest feasible one, until M x A + D(infinity) cannot
// beat the best value found (D only falls as A grows).
//
// Bounding each stage's layer count. Both objectives are at least M x max_s T_s ('slots':
// (M v - 1) max m + sum m >= M v max m >= M max T, since T_s <= v m_s), and T_s is at least the
// stage's ends plus n_s times the fastest body layer. So a first plan, with every stage capped at
// about twice the balanced count, bounds the optimum's objective and through it every stage's
// count; the options are built again up to those bounds only where the cap fell short.
#include "assignment.hpp"
#include "cap_then_widen.hpp"
#include "chunk_tables.hpp"
#include "plan_checks.hpp"
#include "stage_table.hpp"
#include "threshold_sweep.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/schedule_order.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>
#include <variant>
#include <vector>

namespace ppb::partition::detail {

void validate_chunked(const Problem& problem) {
    const std::uint32_t p = problem.num_stages;
    const std::uint32_t v = problem.chunks;
    if (!limits::chunks.contains(v)) {
        throw InputError("the number of chunks per stage: " +
                         limits::out_of_range(std::to_string(v), limits::chunks));
    }
    // What the schedule's order needs (ppb/schedule_order.hpp), said as the simulator says it.
    if (const std::string problem_text =
            schedule_shape_problem(problem.schedule, p, v, problem.micro_batches);
        !problem_text.empty()) {
        throw InputError(problem_text);
    }
    // A dualpipe-v stage holding neither end is described to the model as a middle stage of
    // P + 1 (ppb::abi_stage).
    if (v_shaped(problem.schedule) && p >= limits::stages.max) {
        throw InputError(fmt::format("{} plans at most {} stages, not {}",
                                     schedule_name(problem.schedule), limits::stages.max - 1, p));
    }
    std::uint32_t needed = 0;
    for (std::uint32_t s = 0; s < p; ++s)
        needed += problem.min_layers(s);
    if (problem.time.body_layers < needed) {
        throw InputError(fmt::format(
            "{} stages of {} chunks need at least {} body layers (every chunk holds one, but the "
            "model's first and last), but the model has {}",
            p, v, needed, problem.time.body_layers));
    }
}

namespace {

// The least slowest chunk among stage s's options of n layers with total <= A (the last such
// option), or nullptr.
const StageOption* best_under(const ChunkedStage& stage, std::uint32_t n, double threshold) {
    const auto& options = stage.options[n];
    const auto it =
        std::upper_bound(options.begin(), options.end(), threshold,
                         [](double a, const StageOption& option) { return a < option.total; });
    return it == options.begin() ? nullptr : &*std::prev(it);
}

// The least option of a stage by its slowest chunk: the last of the Pareto list.
const StageOption* least_slowest(const ChunkedStage& stage, std::uint32_t n) {
    const auto& options = stage.options[n];
    return options.empty() ? nullptr : &options.back();
}

struct Knapsack {
    double value = infinity;  // D(A)
    std::vector<std::uint32_t> layers;
};

// D(A), and with `trace` the layers per stage that reach it.
Knapsack least_other_slowest(const Problem& problem, const std::vector<ChunkedStage>& stages,
                             double threshold, bool trace) {
    const std::uint32_t total = problem.time.body_layers;
    const std::size_t width = total + 1;
    // best[flag][j]: least sum over the stages so far holding j layers; flag: s* among them.
    std::vector<double> best0(width, infinity), best1(width, infinity);
    best0[0] = 0.0;
    struct Step {
        std::uint32_t n = 0;
        std::uint8_t from_flag = 0;
    };
    std::vector<std::vector<Step>> steps0, steps1;  // per stage, per j (trace only)
    std::vector<double> next0(width), next1(width);
    for (const ChunkedStage& stage : stages) {
        std::fill(next0.begin(), next0.end(), infinity);
        std::fill(next1.begin(), next1.end(), infinity);
        std::vector<Step> s0(trace ? width : 0), s1(trace ? width : 0);
        for (std::uint32_t n = problem.fewest_layers(stage.stage); n <= total; ++n) {
            const StageOption* option = best_under(stage, n, threshold);
            if (option == nullptr)
                continue;
            for (std::uint32_t j = 0; j + n <= total; ++j) {
                if (best0[j] < infinity) {
                    const double as_other = best0[j] + option->slowest;
                    if (as_other < next0[j + n]) {
                        next0[j + n] = as_other;
                        if (trace)
                            s0[j + n] = {n, 0};
                    }
                    if (best0[j] < next1[j + n]) {  // this stage is s*
                        next1[j + n] = best0[j];
                        if (trace)
                            s1[j + n] = {n, 0};
                    }
                }
                if (best1[j] < infinity) {
                    const double as_other = best1[j] + option->slowest;
                    if (as_other < next1[j + n]) {
                        next1[j + n] = as_other;
                        if (trace)
                            s1[j + n] = {n, 1};
                    }
                }
            }
        }
        best0.swap(next0);
        best1.swap(next1);
        if (trace) {
            steps0.push_back(std::move(s0));
            steps1.push_back(std::move(s1));
        }
    }
    Knapsack out;
    out.value = best1[total];
    if (!trace || !(out.value < infinity))
        return out;
    out.layers.assign(stages.size(), 0);
    std::uint32_t j = total;
    std::uint8_t flag = 1;
    for (std::size_t s = stages.size(); s-- > 0;) {
        const Step step = flag ? steps1[s][j] : steps0[s][j];
        out.layers[s] = step.n;
        j -= step.n;
        flag = step.from_flag;
    }
    return out;
}

// Whether some plan has every stage's total <= A.
bool feasible_under(const Problem& problem, const std::vector<ChunkedStage>& stages,
                    double threshold) {
    std::vector<std::vector<std::uint32_t>> allowed(stages.size());
    for (const ChunkedStage& stage : stages) {
        for (std::uint32_t n = problem.fewest_layers(stage.stage); n <= problem.time.body_layers;
             ++n) {
            if (best_under(stage, n, threshold) != nullptr)
                allowed[stage.stage].push_back(n);
        }
    }
    return can_sum_to(allowed, problem.time.body_layers);
}

[[noreturn]] void explain(const Problem& problem, const std::vector<ChunkedStage>& stages) {
    std::vector<StageTable> tables;
    for (const ChunkedStage& stage : stages) {
        StageTable table;
        table.stage = stage.stage;
        table.least_memory = stage.least_memory;
        table.least_memory_kind = stage.least_memory_kind;
        table.fastest.assign(stage.least_memory.size(), std::nullopt);
        tables.push_back(std::move(table));
    }
    explain_infeasible(problem, tables);
}

}  // namespace

Plan plan_from_options(const Problem& problem, const MemorySource& memory,
                       const std::vector<ChunkedStage>& stages,
                       const std::vector<const StageOption*>& options) {
    Plan plan;
    std::vector<std::vector<double>> chunk_times;
    std::vector<std::vector<ppb_chunk>> placements_chunks;
    for (const ChunkedStage& stage : stages) {
        const StageOption* option = options.at(stage.stage);
        if (option == nullptr)
            throw std::logic_error("the chosen plan has a stage without an option");
        // The in-flight counts of the plan are those of the vector of the stage's profile where
        // its memory peaks (the model's own peak for a probed model, below).
        std::vector<ChunkMemory> memories;
        for (std::uint32_t c = 0; c < problem.chunks; ++c)
            memories.push_back(stage.affine.chunk_memory(c, option->chunks[c]));
        const InFlightVector& at_peak =
            stage.affine.rows.profile()[stage.affine.rows.peak(memories).row];
        StagePlan sp;
        sp.stage = stage.stage;
        sp.in_flight = at_peak[0];
        sp.memory_mb = option->memory;
        std::vector<double> times;
        std::vector<ppb_chunk> abi_chunks(problem.chunks);
        for (std::uint32_t c = 0; c < problem.chunks; ++c) {
            const KindCounts& mix = option->chunks[c];
            ChunkPlan chunk;
            chunk.chunk = c;
            chunk.layers = mix;
            chunk.in_flight = at_peak[c];
            const double t = chunk_time(problem, stage.stage, c, mix);
            chunk.forward_time = chunk_forward_time(problem, stage.stage, c, mix);
            chunk.backward_time = t - chunk.forward_time;
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                sp.layers[k] += mix[k];
                chunk.activation_mb += mix[k] * stage.affine.activation[c][k];
            }
            chunk.activation_mb += stage.affine.base_activation.at(c);
            std::copy(mix.begin(), mix.end(), abi_chunks[c].layers);
            abi_chunks[c].in_flight = chunk.in_flight;
            sp.time += t;
            times.push_back(t);
            sp.chunks.push_back(chunk);
        }
        chunk_times.push_back(std::move(times));
        placements_chunks.push_back(std::move(abi_chunks));
        plan.stages.push_back(std::move(sp));
    }
    // A probed model reports its own prediction for the plan, its largest over each stage's
    // profile (it agreed with the affine sum on the probes; any rounding is the model's own),
    // at the true counts (ppb::zero_count_probes where a chunk holds none).
    if (!memory.linear) {
        std::vector<std::vector<ppb_chunk>> rows;
        std::vector<std::uint32_t> row_stage;
        std::vector<std::size_t> first_row;  // the answers of (stage, vector) i start here
        std::vector<std::pair<std::uint32_t, const InFlightVector*>> at;
        for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
            for (const InFlightVector& v : stages[s].affine.rows.profile()) {
                first_row.push_back(rows.size());
                at.emplace_back(s, &v);
                for (const InFlightVector& asked : zero_count_probes(v)) {
                    std::vector<ppb_chunk> chunks = placements_chunks[s];
                    for (std::uint32_t c = 0; c < problem.chunks; ++c)
                        chunks[c].in_flight = asked[c];
                    rows.push_back(std::move(chunks));
                    row_stage.push_back(s);
                }
            }
        }
        first_row.push_back(rows.size());
        std::vector<ppb_placement> placements;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const AbiStage view =
                abi_stage(problem.schedule, problem.num_stages, problem.chunks, row_stage[i]);
            placements.push_back(
                ppb_placement{view.num_stages, view.stage, problem.chunks, rows[i].data()});
        }
        const std::vector<double> predicted = memory.predict_batch(placements);
        std::vector<bool> seen(problem.num_stages, false);
        for (std::size_t i = 0; i < at.size(); ++i) {
            const double answer = answer_at_counts(std::span<const double>(predicted).subspan(
                first_row[i], first_row[i + 1] - first_row[i]));
            StagePlan& sp = plan.stages[at[i].first];
            if (seen[at[i].first] && answer <= sp.memory_mb)
                continue;
            seen[at[i].first] = true;
            const InFlightVector& v = *at[i].second;
            sp.memory_mb = answer;
            sp.in_flight = v[0];
            for (std::uint32_t c = 0; c < problem.chunks; ++c)
                sp.chunks[c].in_flight = v[c];
        }
    }
    plan.iteration_time =
        schedule_iteration_time(chunk_times, problem.micro_batches, problem.objective);
    plan.activations_known = true;
    check_finite(plan);
    return plan;
}

std::optional<Plan> even_layout_plan(const Problem& problem, const MemorySource& memory) {
    const std::uint32_t layers = problem.time.body_layers;
    const std::uint32_t chunks = problem.num_stages * problem.chunks;
    const std::uint32_t kinds = candidate_kinds(problem, memory);
    if (!problem.chunked() || problem.time.grouped() || chunks == 0 || layers % chunks != 0 ||
        (kinds & PPB_KIND_BIT(PPB_KIND_NONE)) == 0 ||
        (problem.recompute_setting &&
         problem.recompute_setting->method != MegatronRecompute::Method::none))
        return std::nullopt;
    KindCounts per_chunk{};
    per_chunk[PPB_KIND_NONE] = layers / chunks;
    std::vector<AffineStage> affine = affine_stages(problem, memory, kinds);
    std::vector<ChunkedStage> stages(problem.num_stages);
    std::vector<StageOption> options(problem.num_stages);
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        ChunkedStage& stage = stages[s];
        stage.stage = s;
        stage.affine = std::move(affine[s]);
        std::vector<ChunkMemory> memories;
        StageOption& option = options[s];
        for (std::uint32_t c = 0; c < problem.chunks; ++c) {
            if (per_chunk[PPB_KIND_NONE] < problem.min_layers(s, c))
                return std::nullopt;
            memories.push_back(stage.affine.chunk_memory(c, per_chunk));
            option.chunks.push_back(per_chunk);  // plan_from_options times them
        }
        option.memory = stage.affine.rows.peak(memories).memory;
        if (!within_budget(option.memory, problem.budget_mb()))
            return std::nullopt;
    }
    std::vector<const StageOption*> chosen;
    for (const StageOption& option : options)
        chosen.push_back(&option);
    Plan plan = plan_from_options(problem, memory, stages, chosen);
    for (const StagePlan& stage : plan.stages) {
        if (!within_budget(stage.memory_mb, problem.budget_mb()))
            return std::nullopt;  // a probed model's own answer at the true counts
    }
    if (problem.rule == RecomputeRule::megatron || problem.rule == RecomputeRule::torchtitan ||
        problem.recompute_setting)
        plan.recompute_setting = MegatronRecompute{};
    plan.balanced_chunks = problem.balanced_chunks;
    return plan;
}

namespace {

// The plan of `layers` per stage: each stage's option with total <= `threshold` and the least
// slowest chunk, or (by_slowest) its option with the least slowest chunk.
Plan make_chunked_plan(const Problem& problem, const MemorySource& memory,
                       const std::vector<ChunkedStage>& stages,
                       const std::vector<std::uint32_t>& layers, double threshold,
                       bool by_slowest) {
    std::vector<const StageOption*> options;
    for (const ChunkedStage& stage : stages) {
        options.push_back(by_slowest ? least_slowest(stage, layers[stage.stage])
                                     : best_under(stage, layers[stage.stage], threshold));
    }
    return plan_from_options(problem, memory, stages, options);
}

// The chunk-slot objective, (M v - 1) max_s m_s + sum_s m_s: 1F1B's form over the stages'
// slowest chunks, so 1F1B's exact sweep (solver.cpp) applies with the cost m_s(n). No value when
// no plan exists.
std::optional<std::vector<std::uint32_t>> solve_slots(const Problem& problem,
                                                      const std::vector<ChunkedStage>& stages) {
    const std::uint32_t layers = problem.time.body_layers;
    std::vector<std::vector<double>> cost(stages.size(), std::vector<double>(layers + 1, infinity));
    std::vector<double> thresholds;
    for (const ChunkedStage& stage : stages) {
        for (std::uint32_t n = problem.fewest_layers(stage.stage); n <= layers; ++n) {
            if (const StageOption* o = least_slowest(stage, n)) {
                cost[stage.stage][n] = o->slowest;
                thresholds.push_back(o->slowest);
            }
        }
    }
    const auto under = [&](double threshold) {
        std::vector<std::vector<std::uint32_t>> allowed(stages.size());
        for (std::uint32_t s = 0; s < stages.size(); ++s) {
            for (std::uint32_t n = problem.fewest_layers(s); n <= layers; ++n) {
                if (cost[s][n] <= threshold)
                    allowed[s].push_back(n);
            }
        }
        return allowed;
    };
    const auto unconstrained = min_sum_assignment(under(infinity), layers, cost);
    if (!unconstrained)
        return std::nullopt;
    using Counts = std::vector<std::uint32_t>;
    const double wait = static_cast<double>(problem.micro_batches) * problem.chunks - 1.0;
    const auto found = sweep_thresholds<Counts>(
        std::move(thresholds), {unconstrained->sum, wait}, infinity,
        [&](double threshold) { return can_sum_to(under(threshold), layers); },
        [&](double threshold) -> std::optional<Scored<Counts>> {
            auto assignment = min_sum_assignment(under(threshold), layers, cost);
            if (!assignment)
                return std::nullopt;
            double most = 0.0;
            for (std::uint32_t s = 0; s < stages.size(); ++s)
                most = std::max(most, cost[s][assignment->layers[s]]);
            return Scored<Counts>{assignment->sum + wait * most, std::move(assignment->layers)};
        });
    return found ? found->candidate : unconstrained->layers;
}

// The optimal plan among those the stages' options allow (each stage's count within its cap), or
// no value when there is none.
std::optional<Plan> best_plan(const Problem& problem, const MemorySource& memory,
                              const std::vector<ChunkedStage>& stages) {
    if (problem.objective == ChunkObjective::slots) {
        const auto layers = solve_slots(problem, stages);
        if (!layers)
            return std::nullopt;
        return make_chunked_plan(problem, memory, stages, *layers, infinity, true);
    }
    const Knapsack unconstrained = least_other_slowest(problem, stages, infinity, false);
    if (!(unconstrained.value < infinity))
        return std::nullopt;

    std::vector<double> thresholds;
    for (const ChunkedStage& stage : stages) {
        for (const auto& options : stage.options) {
            for (const StageOption& option : options)
                thresholds.push_back(option.total);
        }
    }
    // The objective M A + (the least sum of the other chunks' slowest under A).
    const double m = problem.micro_batches;
    const auto found = sweep_thresholds<std::monostate>(
        std::move(thresholds), {unconstrained.value, m}, infinity,
        [&](double a) { return feasible_under(problem, stages, a); },
        [&](double a) -> std::optional<Scored<std::monostate>> {
            const Knapsack k = least_other_slowest(problem, stages, a, false);
            if (!(k.value < infinity))
                return std::nullopt;
            return Scored<std::monostate>{m * a + k.value, {}};
        });
    // (Some key always beats infinity: the largest allows every option.)
    const double best_threshold = found ? found->key : infinity;
    const Knapsack chosen = least_other_slowest(problem, stages, best_threshold, true);
    return make_chunked_plan(problem, memory, stages, chosen.layers, best_threshold, false);
}

}  // namespace

Plan solve_chunked(const Problem& problem, const MemorySource& memory, std::uint32_t kinds,
                   ChunkedBounds* bounds) {
    validate_chunked(problem);
    if (!memory.linear && !memory.predict_batch)
        throw InputError("the memory model offers no way to predict");
    const std::uint32_t layers = problem.time.body_layers;
    const std::uint32_t p = problem.num_stages;
    const std::vector<AffineStage> affine = affine_stages(problem, memory, kinds);
    ChunkedBounds untold;
    ChunkedBounds& trace = bounds != nullptr ? *bounds : untold;
    trace = ChunkedBounds{};
    const auto build = [&](const std::vector<std::uint32_t>& most) {
        ++trace.builds;
        return build_chunked_stages(problem, memory, affine, kinds, most);
    };
    const std::vector<std::uint32_t> all(p, layers);

    // Cap, then widen (cap_then_widen.hpp).
    std::vector<ChunkedStage> stages;
    trace.first_cap = first_cap(problem);
    const auto capped = plan_capped<Plan>(
        problem, all,
        [&](const std::vector<std::uint32_t>& most) {
            stages = build(most);
            return best_plan(problem, memory, stages);
        },
        [&] {
            std::vector<std::vector<std::uint32_t>> fits(p);
            for (const ChunkedStage& stage : stages) {
                for (std::uint32_t n = problem.fewest_layers(stage.stage); n <= layers; ++n) {
                    if (within_budget(stage.least_memory[n], problem.budget_mb()))
                        fits[stage.stage].push_back(n);
                }
            }
            return !can_sum_to(fits, layers);
        });
    if (!capped.plan)
        explain(problem, stages);
    if (capped.most == all)
        return *capped.plan;
    trace.capped = true;
    // Counts above the cap whose least memory does not fit are out of reach anyway.
    std::vector<std::uint32_t> bound = most_layers_within(
        problem, fastest_body_layer(problem, kinds), capped.plan->iteration_time);
    for (const ChunkedStage& stage : stages) {
        std::uint32_t& n = bound[stage.stage];
        while (n > capped.most[stage.stage] &&
               !within_budget(stage.least_memory[n], problem.budget_mb()))
            --n;
    }
    return widen(
        capped.most, bound, *capped.plan,
        [&](const std::vector<std::uint32_t>& most) {
            trace.widened = true;
            trace.capped = most != all;
            stages = build(most);
            return best_plan(problem, memory, stages);
        },
        [](const Plan& plan) { return plan.iteration_time; });
}

}  // namespace ppb::partition::detail
