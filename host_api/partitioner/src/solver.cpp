// The partitioner: optimal layer placement and recompute per stage under a memory limit
// (host_api/docs/design.md, "The partitioner").
//
// Each stage, for each number n of body layers it might hold, uses the fastest mix of recompute
// kinds that fits the memory budget (stage_table.cpp): a slower mix never lowers the sum of the
// stage times nor their maximum. What remains is choosing n per stage to minimise
//     sum_s t_s(n_s) + (M - 1) max_s t_s(n_s).
// For a threshold T on the maximum, the least sum with every t_s <= T is a knapsack over stages
// (assignment.cpp). The optimum is min over T of that sum + (M - 1) T, with T ranging over the
// stage times that occur; T is swept upwards from the smallest feasible value and the sweep
// stops once (least unconstrained sum) + (M - 1) T cannot beat the best plan found.
#include "assignment.hpp"
#include "cap_then_widen.hpp"
#include "chunk_tables.hpp"
#include "grouped_solver.hpp"
#include "infeasible.hpp"
#include "megatron_solver.hpp"
#include "plan_checks.hpp"
#include "stage_table.hpp"
#include "threshold_sweep.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/request_error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace ppb::partition {
namespace {

using detail::StageTable;

void validate(const Problem& problem) {
    if (problem.num_stages == 0)
        throw InputError("a pipeline has at least one stage");
    if (problem.micro_batches == 0)
        throw InputError("at least one micro-batch is needed");
    // The documented ranges (ppb/limits.hpp) keep the stage tables bounded and every sum finite.
    if (!limits::stages.contains(problem.num_stages)) {
        throw InputError("the number of stages: " +
                         limits::out_of_range(std::to_string(problem.num_stages), limits::stages));
    }
    if (!limits::micro_batches.contains(problem.micro_batches)) {
        throw InputError(
            "the number of micro-batches: " +
            limits::out_of_range(std::to_string(problem.micro_batches), limits::micro_batches));
    }
    if (!limits::layers.contains(problem.time.body_layers)) {
        throw InputError(
            "the number of body layers: " +
            limits::out_of_range(std::to_string(problem.time.body_layers), limits::layers));
    }
    if (!std::isfinite(problem.memory_limit_mb) || problem.memory_limit_mb <= 0.0) {
        throw InputError(fmt::format("the memory limit must be a positive number of MB, not {}",
                                     problem.memory_limit_mb));
    }
    if (!std::isfinite(problem.memory_margin_mb) || problem.memory_margin_mb < 0.0 ||
        problem.memory_margin_mb >= problem.memory_limit_mb) {
        throw InputError(fmt::format(
            "the memory margin must be at least 0 and below the limit ({:.1f} MB), not {}",
            problem.memory_limit_mb, problem.memory_margin_mb));
    }
    if (!std::isfinite(problem.memory_margin_sigma) || problem.memory_margin_sigma < 0.0) {
        throw InputError(fmt::format(
            "the uncertainty margin must be a finite number of standard errors, at least 0, not {}",
            problem.memory_margin_sigma));
    }
    // A stage's standard error is not a sum over its layers or its chunks: the search against it
    // (sigma_table.cpp) enumerates one chunk's mixes of one group.
    if (problem.memory_margin_sigma > 0.0 && (problem.chunked() || problem.time.grouped())) {
        throw RequestError(
            "memory_margin_sigma",
            fmt::format("a margin of standard errors is not supported yet with {}; give the margin "
                        "in MB instead",
                        problem.time.grouped()
                            ? "several groups of body layers"
                            : "several chunks per stage or a schedule other than 1f1b"));
    }
    if (const auto& setting = problem.recompute_setting) {
        if (setting->method == MegatronRecompute::Method::block && setting->num_layers == 0)
            throw InputError("a block recompute setting recomputes at least one layer per chunk");
        if ((setting->kinds() & ~problem.kinds) != 0) {
            throw InputError(
                fmt::format("the recompute setting ({}) uses kinds the problem does "
                            "not allow",
                            describe(*setting)));
        }
        // Several groups with chunks take one setting per run through one group that bounds
        // them (grouped_envelope.hpp), whose one-group problems carry the setting.
        if (problem.time.grouped() && problem.chunked()) {
            throw InputError(
                "one recompute setting for the whole model (Problem::recompute_setting) is given "
                "to models of several groups of body layers under 1f1b only; with chunks the "
                "settings are weighed through one group that bounds them");
        }
    }
    const std::uint32_t p = problem.num_stages;
    const std::uint32_t needed = p >= 2 ? p - 2 : 0;
    if (problem.time.body_layers < needed) {
        throw InputError(fmt::format(
            "{} stages need at least {} body layers (every stage but the first and the last holds "
            "one), but the model has {}",
            p, needed, problem.time.body_layers));
    }
    if (!problem.position_times.empty()) {
        if (problem.time.grouped() || !problem.chunked() ||
            problem.position_times.size() != std::size_t{p} * problem.chunks) {
            throw InputError(fmt::format(
                "times per position are planned with chunks and one group of body layers, one per "
                "position ({}), not {}",
                std::size_t{p} * problem.chunks, problem.position_times.size()));
        }
        for (std::size_t q = 0; q < problem.position_times.size(); ++q) {
            const PositionTime& at = problem.position_times[q];
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                if ((problem.kinds & PPB_KIND_BIT(k)) != 0 &&
                    !(std::isfinite(at.time[k]) && at.time[k] > 0.0 && at.forward >= 0.0 &&
                      std::isfinite(at.offset))) {
                    throw InputError(fmt::format(
                        "the time of a '{}' body layer at position {} must be positive, not {}",
                        kind_name(static_cast<ppb_kind>(k)), q, at.time[k]));
                }
            }
        }
    }
    // With several groups each group's times are checked by the grouped solver.
    for (std::size_t k = 0; k < PPB_KIND_COUNT && !problem.time.grouped(); ++k) {
        const double t = problem.time.body_time[k];
        if ((problem.kinds & PPB_KIND_BIT(k)) != 0 && !(std::isfinite(t) && t > 0.0)) {
            throw InputError(fmt::format("the time of a '{}' body layer must be positive, not {}",
                                         kind_name(static_cast<ppb_kind>(k)), t));
        }
    }
}

void check_memory_source(const Problem& problem, const MemorySource& memory, std::uint32_t kinds) {
    if (kinds == 0) {
        throw InputError(
            "no recompute kind can be used: none is both allowed and predictable by the memory "
            "model (for a fitted model, a kind must occur in its observations)");
    }
    if (!memory.linear) {
        if (!memory.predict_batch)
            throw InputError("the memory model offers no way to predict");
        return;
    }
    const struct {
        const char* name;
        std::uint32_t bit;
    } required[] = {
        {"const_mb", PPB_PARAM_CONST},
        {"param_per_layer_mb", PPB_PARAM_PER_LAYER},
        {"head_mb", PPB_PARAM_HEAD},
        {"tail_mb", PPB_PARAM_TAIL},
    };
    for (const auto& r : required) {
        if ((memory.linear->identified & r.bit) == 0) {
            throw InputError(fmt::format(
                "the memory model cannot predict every stage of a {}-stage pipeline: its {} is not "
                "determined (see 'ppb fit' for why and which dry run would determine it)",
                problem.num_stages, r.name));
        }
    }
}

// Counts each stage may take: at least its minimum, and `usable(stage, n)`.
template <class Usable>
std::vector<std::vector<std::uint32_t>> allowed_counts(const Problem& problem,
                                                       const std::vector<StageTable>& tables,
                                                       Usable usable) {
    std::vector<std::vector<std::uint32_t>> allowed(tables.size());
    for (std::uint32_t s = 0; s < tables.size(); ++s) {
        for (std::uint32_t n = problem.fewest_layers(s); n <= problem.time.body_layers; ++n) {
            if (usable(s, n))
                allowed[s].push_back(n);
        }
    }
    return allowed;
}

std::string layer_phrase(std::uint32_t n, const std::optional<ppb_kind>& kind) {
    if (n == 0)
        return "no body layer";
    const std::string k = kind ? fmt::format(" at '{}'", kind_name(*kind)) : std::string();
    return n == 1 ? "one layer" + k : fmt::format("{} layers{}", n, k);
}

// The stage that needs the whole of `budget` in a placement that fits it, `budget` being the
// smallest feasible one: every placement within it has a stage needing exactly `budget` (the
// largest need of a placement is itself a candidate budget, and no smaller one is feasible).
std::uint32_t fullest_stage(const Problem& problem, const std::vector<StageTable>& tables,
                            double budget) {
    const auto counts = detail::any_assignment(
        allowed_counts(problem, tables,
                       [&](std::uint32_t s, std::uint32_t n) {
                           return within_budget(tables[s].least_memory[n], budget);
                       }),
        problem.time.body_layers);
    std::uint32_t fullest = 0;
    double most = -detail::infinity;
    for (std::uint32_t s = 0; counts && s < tables.size(); ++s) {
        const double m = tables[s].least_memory[(*counts)[s]];
        if (m > most) {
            most = m;
            fullest = s;
        }
    }
    return fullest;
}

}  // namespace

// Why nothing fits, in numbers, and the smallest limit that would.
void detail::explain_infeasible(const Problem& problem, const std::vector<StageTable>& tables) {
    const double budget = problem.budget_mb();
    const std::uint32_t layers = problem.time.body_layers;

    std::vector<double> needs;
    for (const auto& t : tables) {
        for (std::uint32_t n = problem.fewest_layers(t.stage); n <= layers; ++n) {
            if (std::isfinite(t.least_memory[n]))
                needs.push_back(t.least_memory[n]);
        }
    }
    const auto fits_in = [&](double z) {
        return detail::can_sum_to(allowed_counts(problem, tables,
                                                 [&](std::uint32_t s, std::uint32_t n) {
                                                     return within_budget(tables[s].least_memory[n],
                                                                          z);
                                                 }),
                                  layers);
    };
    const std::vector<double> keys = detail::distinct_sorted(std::move(needs));
    const std::size_t first = detail::first_feasible(keys, fits_in);
    const bool some_budget_fits = first < keys.size();
    const double least_budget = some_budget_fits ? keys[first] : detail::infinity;

    // With an uncertainty margin a stage's need is its memory + K standard errors.
    const std::string need_text =
        problem.memory_margin_sigma > 0.0
            ? fmt::format(" (memory + {:g} standard errors)", problem.memory_margin_sigma)
            : std::string();
    std::string reason;
    double worst_excess = 0.0;
    for (const auto& t : tables) {
        const std::uint32_t n = problem.fewest_layers(t.stage);
        const double need = t.least_memory[n];
        if (!within_budget(need, budget) && need - budget > worst_excess) {
            worst_excess = need - budget;
            reason = fmt::format(
                "stage {} needs at least {:.1f} MB{} even with {}, more than the {:.1f} MB "
                "available",
                t.stage, need, need_text, layer_phrase(n, t.least_memory_kind), budget);
        }
    }
    if (reason.empty()) {
        std::uint32_t capacity = 0;
        std::string per_stage;
        for (const auto& t : tables) {
            std::uint32_t most = 0;
            for (std::uint32_t n = 0; n <= layers; ++n) {
                if (within_budget(t.least_memory[n], budget))
                    most = n;
            }
            capacity += most;
            per_stage += fmt::format("{}{}", per_stage.empty() ? "" : ", ", most);
        }
        const auto& kind = tables.front().least_memory_kind;
        reason = fmt::format(
            "within {:.1f} MB the {} stages hold at most {} of the {} body layers, even with every "
            "layer{} (per stage at most: {})",
            budget, problem.num_stages, capacity, layers,
            kind ? fmt::format(" at '{}'", kind_name(*kind)) : std::string(), per_stage);
    }
    detail::LeastFeasibleBudget least;
    // With K standard errors a stage's least need is the least among the mixes whose standard
    // error was asked for (sigma_table.cpp): a need some mix has, so the limit is feasible, but
    // a mix never asked about might need less.
    least.certainty = problem.memory_margin_sigma > 0.0
                          ? detail::LeastFeasibleBudget::Certainty::feasible
                          : detail::LeastFeasibleBudget::Certainty::exact;
    if (some_budget_fits) {
        least.need_mb = least_budget;
        least.fullest_stage = fullest_stage(problem, tables, least_budget);
    }
    detail::throw_infeasible(problem, reason, least);
}

namespace {

Plan make_plan(const Problem& problem, const MemorySource& memory,
               const std::vector<StageTable>& tables, const std::vector<std::uint32_t>& counts) {
    Plan plan;
    std::vector<double> times;
    for (std::uint32_t s = 0; s < tables.size(); ++s) {
        const auto& choice = *tables[s].fastest[counts[s]];
        StagePlan stage{
            s, choice.layers, problem.in_flight(s), choice.memory, choice.time, choice.margin, {}};
        const double forward = detail::chunk_forward_time(problem, s, 0, choice.layers);
        ChunkPlan chunk{0, choice.layers, stage.in_flight, forward, choice.time - forward, 0.0};
        if (memory.linear) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                chunk.activation_mb += choice.layers[k] * memory.linear->activation_mb[k];
        }
        stage.chunks.push_back(chunk);
        plan.stages.push_back(std::move(stage));
        times.push_back(choice.time);
    }
    plan.iteration_time = iteration_time(times, problem.micro_batches);
    plan.activations_known = memory.linear.has_value();
    detail::check_finite(plan);
    return plan;
}

// The best plan over the stage tables (counts of each stage limited to where its table has a
// choice), or nullopt when none exists.
struct Sweep {
    std::vector<std::uint32_t> counts;
    double objective = 0.0;
};

std::optional<Sweep> sweep(const Problem& problem, const std::vector<StageTable>& tables) {
    const std::uint32_t layers = problem.time.body_layers;
    std::vector<std::vector<double>> cost(tables.size());
    for (std::size_t s = 0; s < tables.size(); ++s) {
        cost[s].resize(layers + 1);
        for (std::uint32_t n = 0; n <= layers; ++n) {
            cost[s][n] = tables[s].time(n);
        }
    }
    const auto objective_of = [&](const std::vector<std::uint32_t>& counts) {
        std::vector<double> times;
        for (std::size_t s = 0; s < tables.size(); ++s)
            times.push_back(cost[s][counts[s]]);
        return iteration_time(times, problem.micro_batches);
    };
    const auto fits = allowed_counts(problem, tables, [&](std::uint32_t s, std::uint32_t n) {
        return std::isfinite(cost[s][n]);
    });
    const auto unconstrained = detail::min_sum_assignment(fits, layers, cost);
    if (!unconstrained)
        return std::nullopt;
    if (problem.micro_batches == 1)
        return Sweep{unconstrained->layers, objective_of(unconstrained->layers)};

    const auto under = [&](double threshold) {
        return allowed_counts(problem, tables, [&](std::uint32_t s, std::uint32_t n) {
            return cost[s][n] <= threshold;
        });
    };
    std::vector<double> thresholds;
    for (std::size_t s = 0; s < fits.size(); ++s) {
        for (const std::uint32_t n : fits[s])
            thresholds.push_back(cost[s][n]);
    }
    using Counts = std::vector<std::uint32_t>;
    const auto found = detail::sweep_thresholds<Counts>(
        std::move(thresholds), {unconstrained->sum, static_cast<double>(problem.micro_batches - 1)},
        detail::infinity, [&](double t) { return detail::can_sum_to(under(t), layers); },
        [&](double t) -> std::optional<detail::Scored<Counts>> {
            auto assignment = detail::min_sum_assignment(under(t), layers, cost);
            if (!assignment)
                return std::nullopt;
            const double objective = objective_of(assignment->layers);
            return detail::Scored<Counts>{objective, std::move(assignment->layers)};
        });
    if (!found)
        return Sweep{unconstrained->layers, detail::infinity};
    return Sweep{found->candidate, found->value};
}

// The most layers each stage can hold in a plan no slower than `objective`. A stage's time is at
// least its time with every layer at the fastest kind, and Φ = Σ t + (M − 1) max t is at least
// M · t_s + Σ_{o ≠ s} (the least time of o), so a stage whose fastest time for n layers exceeds
// (objective − Σ_{o ≠ s} least time of o) / M cannot hold n layers in such a plan.
std::vector<std::uint32_t> most_layers_within(const Problem& problem, std::uint32_t kinds,
                                              double objective) {
    const std::uint32_t p = problem.num_stages;
    const std::uint32_t layers = problem.time.body_layers;
    std::size_t fastest = PPB_KIND_COUNT;
    for (const std::size_t k : detail::kind_list(kinds)) {
        if (fastest == PPB_KIND_COUNT ||
            problem.time.body_time[k] < problem.time.body_time[fastest])
            fastest = k;
    }
    const auto least_time = [&](std::uint32_t s, std::uint32_t n) {
        KindCounts mix{};
        mix[fastest] = n;
        return stage_time(problem, s, mix);
    };
    double least_sum = 0.0;
    for (std::uint32_t s = 0; s < p; ++s)
        least_sum += least_time(s, problem.fewest_layers(s));
    std::vector<std::uint32_t> most(p, layers);
    for (std::uint32_t s = 0; s < p; ++s) {
        const double others = least_sum - least_time(s, problem.fewest_layers(s));
        const double bound = (objective - others) / problem.micro_batches;
        // A little slack, so that rounding never excludes a count the optimum uses.
        const double slack = 1e-9 * std::max(1.0, std::abs(objective));
        std::uint32_t n = problem.fewest_layers(s);
        while (n < layers && least_time(s, n + 1) <= bound + slack)
            ++n;
        most[s] = n;
    }
    return most;
}

Plan solve_validated(const Problem& problem, const MemorySource& memory) {
    if (problem.time.grouped())
        return detail::solve_grouped(problem, memory, problem.kinds & memory.kinds & PPB_ALL_KINDS);
    const std::uint32_t kinds = detail::candidate_kinds(problem, memory);
    check_memory_source(problem, memory, kinds);
    if (problem.chunked())
        return detail::solve_chunked(problem, memory, kinds);
    const std::uint32_t layers = problem.time.body_layers;
    const std::uint32_t p = problem.num_stages;
    // Against the uncertainty the stage tables are searched differently (sigma_table.cpp), for
    // every count; the rest of the solver is the same, with memory + margin as each mix's need.
    if (problem.memory_margin_sigma > 0.0) {
        const auto tables = detail::build_sigma_tables(problem, memory, kinds);
        const auto best = sweep(problem, tables);
        if (!best)
            detail::explain_infeasible(problem, tables);
        return make_plan(problem, memory, tables, best->counts);
    }
    // Cap, then widen (cap_then_widen.hpp): the tables and the knapsack range over about twice
    // the balanced count per stage first.
    std::vector<StageTable> tables;
    const auto capped = detail::plan_capped<Sweep>(
        problem, std::vector<std::uint32_t>(p, layers),
        [&](const std::vector<std::uint32_t>& most) {
            tables = detail::build_stage_tables(problem, memory, kinds, most);
            return sweep(problem, tables);
        },
        [&] {
            return !detail::can_sum_to(allowed_counts(problem, tables,
                                                      [&](std::uint32_t s, std::uint32_t n) {
                                                          return within_budget(
                                                              tables[s].least_memory[n],
                                                              problem.budget_mb());
                                                      }),
                                       layers);
        });
    if (!capped.plan)
        detail::explain_infeasible(problem, tables);
    // Where the memory limit, not the cap, ended a stage's table, more layers cannot fit anyway.
    std::vector<std::uint32_t> bound = most_layers_within(problem, kinds, capped.plan->objective);
    for (std::uint32_t s = 0; s < p; ++s) {
        if (tables[s].exhausted)
            bound[s] = std::min(bound[s], capped.most[s]);
    }
    const Sweep best = detail::widen(
        capped.most, bound, *capped.plan,
        [&](const std::vector<std::uint32_t>& most) {
            tables = detail::build_stage_tables(problem, memory, kinds, most);
            return sweep(problem, tables);
        },
        [](const Sweep& plan) { return plan.objective; });
    return make_plan(problem, memory, tables, best.counts);
}

}  // namespace

Problem smaller_to_plan_exactly(const Problem& problem) {
    Problem smaller = problem;
    if (problem.rule != RecomputeRule::megatron && problem.rule != RecomputeRule::torchtitan)
        smaller.rule = RecomputeRule::megatron;
    smaller.balanced_chunks = true;
    return smaller;
}

Plan solve(const Problem& problem, const MemorySource& memory) {
    validate(problem);
    // The exact attempt, the smaller problem and each of Megatron's settings weigh the same
    // stages of `memory`.
    const detail::ScopedAffineStages remembered(memory);
    const bool one_setting =
        problem.rule == RecomputeRule::megatron || problem.rule == RecomputeRule::torchtitan;
    try {
        // The exact attempt may do this much work in the chunk tables, all stages and settings
        // together (about half a second); a smaller problem's plan follows when it needs more.
        // (A problem already balanced is the smaller one: planned whatever it takes.)
        std::optional<detail::ScopedExactWorkBudget> budget;
        if (problem.balanced_chunks)
            budget.emplace(detail::ScopedExactWorkBudget::Unlimited{});
        else
            budget.emplace(detail::default_exact_work_budget);
        // Several groups with chunks take one setting per run through one group that bounds
        // them (grouped_envelope.hpp), whose planner weighs the settings.
        Plan plan = one_setting && !problem.recompute_setting && !planned_through_one_group(problem)
                        ? detail::solve_megatron(problem, memory)
                        : solve_validated(problem, memory);
        if (problem.recompute_setting)
            plan.recompute_setting = problem.recompute_setting;
        plan.balanced_chunks = problem.balanced_chunks;
        return plan;
    } catch (const TooLargeToPlanExactly& e) {
        if (problem.recompute_setting || problem.balanced_chunks)
            throw;
        // The smaller problem, planned without a budget (it is balanced); the lower bound
        // (simulated_lower_bound) says what the exact plan could gain.
        Plan plan = solve(smaller_to_plan_exactly(problem), memory);
        plan.not_exact_because = e.what();
        return plan;
    }
}

}  // namespace ppb::partition
