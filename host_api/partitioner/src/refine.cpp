// Local search on the simulated makespan (ppb/partition/refine.hpp).
#include "chunk_tables.hpp"
#include "makespan_graph.hpp"
#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/partition/refine.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/simulator.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ppb::partition {
namespace {

using detail::ChunkedStage;
using detail::StageOption;

// The makespan of the plan holding `choice[s]` on each stage, as ppb::simulate times it
// (through the schedule's dependency graph, makespan_graph.hpp).
class Timer {
  public:
    explicit Timer(const Problem& problem)
        : problem_(problem),
          graph_(problem.schedule, problem.num_stages, problem.chunks, problem.micro_batches,
                 problem.comm_time),
          costs_(problem.num_stages, std::vector<ChunkCost>(problem.chunks)) {}
    double operator()(const std::vector<const StageOption*>& choice,
                      double cutoff = std::numeric_limits<double>::infinity()) {
        for (std::uint32_t s = 0; s < problem_.num_stages; ++s) {
            for (std::uint32_t c = 0; c < problem_.chunks; ++c) {
                const double forward =
                    detail::chunk_forward_time(problem_, s, c, choice[s]->chunks[c]);
                costs_[s][c] =
                    chunk_cost(problem_, {&choice[s]->chunks[c], 1}, chunk_ends(problem_, s, c),
                               forward, choice[s]->chunk_times[c] - forward);
            }
        }
        return graph_.makespan(costs_, cutoff);
    }

  private:
    const Problem& problem_;
    detail::MakespanGraph graph_;
    std::vector<std::vector<ChunkCost>> costs_;
};

std::uint32_t layers_of(const StageOption& option) {
    std::uint32_t n = 0;
    for (const auto& chunk : option.chunks) {
        for (const auto k : chunk)
            n += k;
    }
    return n;
}

}  // namespace

Plan refine_by_simulation(const Problem& problem, const MemorySource& memory, const Plan& start,
                          std::uint32_t max_moves, std::chrono::milliseconds budget) {
    if (!problem.chunked())
        return start;
    // A plan of one recompute setting (RecomputeRule::megatron, torchtitan) moves within it.
    // So does a plan of balanced chunks (solve()'s fallback when planning every split is too
    // large).
    if ((!problem.recompute_setting && start.recompute_setting) ||
        (!problem.balanced_chunks && start.balanced_chunks)) {
        Problem fixed = problem;
        if (start.recompute_setting) {
            fixed.recompute_setting = start.recompute_setting;
            fixed.kinds = problem.kinds & start.recompute_setting->kinds();
        }
        fixed.balanced_chunks = fixed.balanced_chunks || start.balanced_chunks;
        Plan refined = refine_by_simulation(fixed, memory, start, max_moves, budget);
        refined.balanced_chunks = start.balanced_chunks;
        return refined;
    }
    const auto now = std::chrono::steady_clock::now();
    const auto deadline = budget >= std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::time_point::max() - now)
                              ? std::chrono::steady_clock::time_point::max()
                              : now + budget;
    const std::uint32_t kinds = detail::candidate_kinds(problem, memory);
    // A move may take a stage to any count with which the iteration can still be faster than
    // the start's: the simulated iteration is at least M x every stage's time (design, "The
    // default plan with chunks").
    SimulationInput at_start = simulation_input(problem, start);
    at_start.with_memory = false;
    std::vector<ChunkedStage> stages;
    try {
        const detail::ScopedExactWorkBudget work(detail::default_exact_work_budget);
        stages = detail::build_chunked_stages(
            problem, detail::affine_stages(problem, memory, kinds), kinds,
            detail::most_layers_within(problem, detail::fastest_body_layer(problem, kinds),
                                       simulate(at_start).makespan));
    } catch (const TooLargeToPlanExactly&) {
        return start;  // the neighbours are too many to weigh: the start stands
    }

    // The start, as options of the stages. The solver builds its options within bounds on the
    // layer counts, so where equal times leave a choice it may have kept another mix, and even
    // another order of the same chunk times, than these tables: such a stage keeps its own.
    std::vector<const StageOption*> choice;
    std::vector<StageOption> own;
    own.reserve(start.stages.size());  // choice points into it
    for (const StagePlan& sp : start.stages) {
        const auto& list = stages.at(sp.stage).alternatives.at(sp.total_layers());
        const auto it = std::find_if(list.begin(), list.end(), [&](const StageOption& o) {
            for (std::uint32_t c = 0; c < problem.chunks; ++c) {
                if (o.chunks[c] != sp.chunks.at(c).layers)
                    return false;
            }
            return true;
        });
        // A start outside the alternatives (equal times, another mix): the option with the
        // same chunk times.
        const auto same_times = std::find_if(list.begin(), list.end(), [&](const StageOption& o) {
            for (std::uint32_t c = 0; c < problem.chunks; ++c) {
                if (o.chunk_times[c] != sp.chunks.at(c).time())
                    return false;
            }
            return true;
        });
        if (it != list.end()) {
            choice.push_back(&*it);
        } else if (same_times != list.end()) {
            choice.push_back(&*same_times);
        } else {
            if (sp.chunks.size() != problem.chunks)
                throw std::invalid_argument(
                    "refine_by_simulation: the start is not a plan of the problem");
            StageOption option;
            option.memory = sp.memory_mb;
            for (std::uint32_t c = 0; c < problem.chunks; ++c) {
                const double t = detail::chunk_time(problem, sp.stage, c, sp.chunks[c].layers);
                option.chunks.push_back(sp.chunks[c].layers);
                option.chunk_times.push_back(t);
                option.total += t;
                option.slowest = std::max(option.slowest, t);
            }
            own.push_back(std::move(option));
            choice.push_back(&own.back());
        }
    }

    Timer makespan(problem);
    double best = makespan(choice);
    const std::uint32_t p = problem.num_stages;
    for (std::uint32_t move = 0; move < max_moves && std::chrono::steady_clock::now() < deadline;
         ++move) {
        std::vector<const StageOption*> best_neighbour;
        double best_value = best;
        const auto consider = [&](std::vector<const StageOption*>& candidate) {
            // A candidate that cannot beat the best so far stops being timed once it cannot.
            const double value = makespan(candidate, best_value * (1.0 - 1e-12));
            if (value < best_value * (1.0 - 1e-12)) {
                best_value = value;
                best_neighbour = candidate;
            }
        };
        std::vector<const StageOption*> candidate = choice;
        const auto out_of_time = [&] { return std::chrono::steady_clock::now() >= deadline; };
        // Another option of one stage with the same layers: with two chunks every split that is
        // Pareto-optimal in the chunk times, since which chunk is slow matters to the order.
        for (std::uint32_t s = 0; s < p && !out_of_time(); ++s) {
            for (const StageOption& o : stages[s].alternatives[layers_of(*choice[s])]) {
                if (&o == choice[s])
                    continue;
                candidate[s] = &o;
                consider(candidate);
            }
            candidate[s] = choice[s];
        }
        // One layer from stage a to stage b, each taking one of its options Pareto-optimal in
        // (total, slowest chunk) — few per stage, so a round stays O(P^2).
        for (std::uint32_t a = 0; a < p && !out_of_time(); ++a) {
            const std::uint32_t na = layers_of(*choice[a]);
            if (na == 0)
                continue;
            for (std::uint32_t b = 0; b < p; ++b) {
                const std::uint32_t nb = layers_of(*choice[b]);
                if (a == b || nb + 1 >= stages[b].options.size())
                    continue;
                for (const StageOption& oa : stages[a].options[na - 1]) {
                    for (const StageOption& ob : stages[b].options[nb + 1]) {
                        candidate[a] = &oa;
                        candidate[b] = &ob;
                        consider(candidate);
                    }
                }
                candidate[a] = choice[a];
                candidate[b] = choice[b];
            }
        }
        if (best_neighbour.empty())
            break;
        choice = std::move(best_neighbour);
        best = best_value;
    }
    Plan refined = detail::plan_from_options(problem, memory, stages, choice);
    refined.recompute_setting = problem.recompute_setting;
    return refined;
}

}  // namespace ppb::partition
