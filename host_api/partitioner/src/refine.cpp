// Local search on the simulated makespan (ppb/partition/refine.hpp).
#include "chunk_tables.hpp"
#include "makespan_graph.hpp"
#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/partition/refine.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/schedule.hpp>
#include <ppb/simulator.hpp>

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
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

std::uint32_t layers_of(const KindCounts& chunk) {
    return std::accumulate(chunk.begin(), chunk.end(), 0u);
}

std::uint32_t layers_of(const StageOption& option) {
    std::uint32_t n = 0;
    for (const auto& chunk : option.chunks)
        n += layers_of(chunk);
    return n;
}

// Chunk c of stage s's `option` holding `delta` more layers of kind `kind`: under a recompute
// setting, the mix the setting gives the new count. False when the chunk would hold fewer layers
// than it must (Problem::min_layers) or the rule cannot build its mix.
bool add_layers(const Problem& problem, std::uint32_t s, StageOption& option, std::uint32_t c,
                std::size_t kind, int delta) {
    KindCounts& layers = option.chunks[c];
    if (delta < 0 && (layers[kind] < static_cast<std::uint32_t>(-delta) ||
                      layers_of(layers) < problem.min_layers(s, c) - delta))
        return false;
    layers[kind] = static_cast<std::uint32_t>(static_cast<int>(layers[kind]) + delta);
    if (problem.recompute_setting)
        layers = problem.recompute_setting->chunk_layers(layers_of(layers));
    else if (problem.rule != RecomputeRule::any && !expressible(layers, problem.rule))
        return false;
    option.chunk_times[c] = detail::chunk_time(problem, s, c, layers);
    return true;
}

// `option`'s total, slowest chunk and memory after add_layers; whether it fits the budget.
bool settle(const Problem& problem, const ChunkedStage& stage, StageOption& option) {
    option.total = std::accumulate(option.chunk_times.begin(), option.chunk_times.end(), 0.0);
    option.slowest = *std::max_element(option.chunk_times.begin(), option.chunk_times.end());
    std::vector<detail::ChunkMemory> chunks;
    chunks.reserve(option.chunks.size());
    for (std::size_t c = 0; c < option.chunks.size(); ++c)
        chunks.push_back(stage.affine.chunk_memory(c, option.chunks[c]));
    option.memory = stage.affine.rows.peak(chunks).memory;
    return within_budget(option.memory, problem.budget_mb());
}

// One body layer from chunk `from` to chunk `to`.
struct ChunkMove {
    ppb::StageChunk from;
    ppb::StageChunk to;
};

// The moves of single layers between chunks the search weighs beside the tables' options: across
// each boundary between neighbouring positions in model order (the position's last layer to the
// next position, or back), and with more than two chunks a stage's layer from any of its chunks
// to any other. The tables keep one split per (total, slowest chunk) of a stage with more than two
// chunks, and one count per stage, where the simulated iteration weighs which chunk is slow and
// which positions of the model's order the stage's layers sit in. (With two chunks a stage's
// alternatives are already every split Pareto-optimal in its two chunk times.) A plan of balanced
// chunks keeps them balanced: none.
std::vector<ChunkMove> chunk_moves_of(const Problem& problem) {
    std::vector<ChunkMove> moves;
    if (problem.balanced_chunks)
        return moves;
    const std::uint32_t p = problem.num_stages;
    const std::uint32_t v = problem.chunks;
    for (std::uint32_t q = 0; q + 1 < p * v; ++q) {
        const ppb::StageChunk here = ppb::position_at(problem.schedule, p, v, q);
        const ppb::StageChunk next = ppb::position_at(problem.schedule, p, v, q + 1);
        if (here.stage == next.stage)
            continue;  // a V's turn: the stage's own split
        moves.push_back({here, next});
        moves.push_back({next, here});
    }
    if (v > 2) {
        for (std::uint32_t s = 0; s < p; ++s) {
            for (std::uint32_t c = 0; c < v; ++c) {
                for (std::uint32_t d = 0; d < v; ++d) {
                    if (c != d)
                        moves.push_back({{s, c}, {s, d}});
                }
            }
        }
    }
    return moves;
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
            problem, memory, detail::affine_stages(problem, memory, kinds), kinds,
            detail::most_layers_within(problem, detail::fastest_body_layer(problem, kinds),
                                       simulate(at_start).makespan));
    } catch (const TooLargeToPlanExactly&) {
        return start;  // the neighbours are too many to weigh: the start stands
    }

    // The start, as options of the stages. The solver builds its options within bounds on the
    // layer counts, so where equal times leave a choice it may have kept another mix, and even
    // another order of the same chunk times, than these tables: such a stage keeps its own.
    std::vector<const StageOption*> choice;
    std::deque<StageOption> own;  // choice points into it
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

    const std::vector<ChunkMove> chunk_moves = chunk_moves_of(problem);
    Timer makespan(problem);
    double best = makespan(choice);
    const std::uint32_t p = problem.num_stages;
    for (std::uint32_t move = 0; move < max_moves && std::chrono::steady_clock::now() < deadline;
         ++move) {
        std::vector<const StageOption*> best_neighbour;
        double best_value = best;
        // The stage options a layer moved between chunks makes (not in the tables): the best
        // neighbour's are kept.
        std::optional<StageOption> best_made_a;
        std::optional<StageOption> best_made_b;
        const auto consider = [&](std::vector<const StageOption*>& candidate) {
            // A candidate that cannot beat the best so far stops being timed once it cannot.
            const double value = makespan(candidate, best_value * (1.0 - 1e-12));
            if (value < best_value * (1.0 - 1e-12)) {
                best_value = value;
                best_neighbour = candidate;
                return true;
            }
            return false;
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
        // One layer from one chunk to another (chunk_moves), each stage checked against the
        // budget and the rule.
        StageOption made_a;
        StageOption made_b;
        const double micro_batches = problem.micro_batches;
        for (const ChunkMove& shift : chunk_moves) {
            if (out_of_time())
                break;
            const auto [a, ca] = shift.from;
            const auto [b, cb] = shift.to;
            const KindCounts& from = choice[a]->chunks[ca];
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                if (from[k] == 0)
                    continue;
                made_a = *choice[a];
                if (!add_layers(problem, a, made_a, ca, k, -1))
                    continue;
                StageOption& target = a == b ? made_a : (made_b = *choice[b]);
                // The iteration is at least M x each stage's time: a stage that slow cannot be
                // in a faster plan, and need not be simulated.
                if (!add_layers(problem, b, target, cb, k, +1) ||
                    !settle(problem, stages[a], made_a) ||
                    (a != b && !settle(problem, stages[b], made_b)) ||
                    micro_batches * target.total >= best_value * (1.0 - 1e-12))
                    continue;
                candidate[a] = &made_a;
                candidate[b] = a == b ? &made_a : &made_b;
                if (consider(candidate)) {
                    best_made_a = made_a;
                    best_made_b = a != b ? std::optional(made_b) : std::nullopt;
                    best_neighbour[a] = &*best_made_a;
                    if (a != b)
                        best_neighbour[b] = &*best_made_b;
                }
                candidate[a] = choice[a];
                candidate[b] = choice[b];
                if (problem.recompute_setting)
                    break;  // the setting gives the mix: one move per pair of chunks
            }
        }
        if (best_neighbour.empty())
            break;
        for (const StageOption*& o : best_neighbour) {
            if (best_made_a && o == &*best_made_a)
                o = &own.emplace_back(*best_made_a);
            else if (best_made_b && o == &*best_made_b)
                o = &own.emplace_back(*best_made_b);
        }
        choice = std::move(best_neighbour);
        best = best_value;
    }
    Plan refined = detail::plan_from_options(problem, memory, stages, choice);
    refined.recompute_setting = problem.recompute_setting;
    return refined;
}

}  // namespace ppb::partition
