// Several groups of body layers with more than two chunks per stage, through one group above and
// one below (grouped_envelope.hpp explains both).
//
// The one-group problems are planned by the one-group chunked planner (chunk_tables.hpp) from
// affine stages this file derives from the grouped ones (grouped_chunked.hpp: the model's
// coefficients, or its probes, checked for affinity), handed to it through the remembered affine
// stages (ScopedAffineStages), so that the planner never asks the envelope to predict. Its
// predict_batch answers anyway, from the same affine stages, should a caller ask.
#include "grouped_envelope.hpp"

#include "chunk_tables.hpp"
#include "grouped_chunked.hpp"
#include "grouped_solver.hpp"
#include "infeasible.hpp"
#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/number_text.hpp>
#include <ppb/partition/lower_bound.hpp>
#include <ppb/partition/refine.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/schedule.hpp>
#include <ppb/simulator.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ppb::partition::detail {

namespace {

// above: a plan that fits; below: each layer at its position's least; below_credited: each layer
// at its position's most time, less a credit per position for the layers that are faster there
// (the least memory, as below). Both below are relaxations; the bound is the larger of theirs.
enum class Side { above, below, below_credited };

// Below, the time and memory of a kind no group of a position may take there: never chosen, and
// finite, so that sums of it stay numbers.
constexpr double kNever = 1e30;

// The grouped stages, exactly: from coefficients or probed.
std::vector<GroupedAffineStage> grouped_stages(const Problem& problem, const MemorySource& memory,
                                               const std::vector<std::vector<std::size_t>>& kinds) {
    std::vector<GroupedAffineStage> out;
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        out.push_back(memory.group_linear.empty()
                          ? probed_grouped_stage(problem, memory, s, kinds)
                          : linear_grouped_stage(problem, memory.group_linear, s));
    }
    return out;
}

// One group standing for all: its problem, its memory source and its stages.
struct Envelope {
    Problem problem;
    MemorySource memory;
    std::vector<AffineStage> affine;
    std::uint32_t kinds = 0;
};

// The layers position q can hold in any plan: every position before it holds its fewest
// (Problem::min_layers), and so does every one after it; [first, last], empty when first > last.
struct Window {
    std::uint32_t first = 0;
    std::uint32_t last = 0;
};

std::vector<Window> windows(const Problem& p) {
    const std::uint32_t Q = p.num_stages * p.chunks;
    std::vector<std::uint32_t> fewest(Q);
    for (std::uint32_t q = 0; q < Q; ++q) {
        const StageChunk at = position_at(p.schedule, p.num_stages, p.chunks, q);
        fewest[q] = p.min_layers(at.stage, at.chunk);
    }
    const std::uint32_t all = std::accumulate(fewest.begin(), fewest.end(), 0u);
    std::vector<Window> out;
    std::uint32_t before = 0;
    for (std::uint32_t q = 0; q < Q; ++q) {
        const std::uint32_t after = all - before - fewest[q];
        out.push_back({before, p.time.body_layers - 1 - std::min(after, p.time.body_layers - 1)});
        before += fewest[q];
    }
    return out;
}

// `given`: the windows to take instead of windows(grouped) (a case of the bound's split below).
Envelope envelope_of(const Problem& grouped, const std::vector<GroupedAffineStage>& stages,
                     const std::vector<std::vector<std::size_t>>& kinds, Side side,
                     const std::vector<Window>* given = nullptr,
                     const std::vector<Window>* held_ranges = nullptr) {
    const std::size_t G = grouped.time.groups.size();
    const std::uint32_t L = grouped.time.body_layers;
    const std::uint32_t Q = grouped.num_stages * grouped.chunks;
    const auto& sequence = grouped.time.sequence;
    const auto takes = [&](std::size_t g, std::size_t k) {
        return std::find(kinds[g].begin(), kinds[g].end(), k) != kinds[g].end();
    };
    const auto pick = [side](double a, double b) {
        return side == Side::above ? std::max(a, b) : std::min(a, b);
    };
    const bool below = side != Side::above;
    // Above, the kinds every group may take; below, those any group may.
    Envelope e;
    e.problem = grouped;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        bool every = true;
        bool any = false;
        for (std::size_t g = 0; g < G; ++g) {
            if (grouped.time.groups[g].layers == 0)
                continue;
            every = every && takes(g, k);
            any = any || takes(g, k);
        }
        if (below ? any : every && any)
            e.kinds |= PPB_KIND_BIT(k);
    }
    e.kinds &= grouped.kinds;
    e.problem.kinds = e.kinds;

    // Per position: the groups its window holds (all, for a window that holds none) and, above,
    // the share of each among the layers it holds when every position holds L / (P v) of them.
    const std::vector<Window> window = given != nullptr ? *given : windows(grouped);
    std::vector<std::vector<std::size_t>> can(Q);
    std::vector<std::vector<double>> share(Q, std::vector<double>(G, 0.0));
    for (std::uint32_t q = 0; q < Q; ++q) {
        std::vector<bool> seen(G, false);
        for (std::uint32_t i = window[q].first; i <= window[q].last && i < L; ++i)
            seen[sequence[i]] = true;
        for (std::size_t g = 0; g < G; ++g) {
            if (seen[g])
                can[q].push_back(g);
        }
        if (can[q].empty()) {
            for (std::size_t g = 0; g < G; ++g) {
                if (grouped.time.groups[g].layers != 0)
                    can[q].push_back(g);
            }
        }
        // The layers the position holds: `held`'s when given (a plan's), else an even cut's.
        const bool holds =
            held_ranges != nullptr && (*held_ranges)[q].first <= (*held_ranges)[q].last;
        const double from = holds ? (*held_ranges)[q].first : static_cast<double>(q) * L / Q;
        const double to = holds ? (*held_ranges)[q].last + 1.0 : static_cast<double>(q + 1) * L / Q;
        double held = 0.0;
        for (std::uint32_t i = static_cast<std::uint32_t>(from); i < L && i < to; ++i) {
            const double part = std::min<double>(i + 1, to) - std::max<double>(i, from);
            if (std::find(can[q].begin(), can[q].end(), sequence[i]) == can[q].end())
                continue;
            share[q][sequence[i]] += part;
            held += part;
        }
        for (const std::size_t g : can[q]) {
            if (held > 0.0)
                share[q][g] /= held;
            else
                share[q][g] = 1.0 / static_cast<double>(can[q].size());
        }
    }

    TimeModel& time = e.problem.time;
    time.groups.clear();
    time.sequence.clear();
    time.body_name = "envelope";
    time.body_weight_grad.reset();  // the groups' own are the plan's (simulate_plan.hpp)
    time.body_time = {};
    e.problem.position_times.assign(Q, PositionTime{});
    for (std::uint32_t q = 0; q < Q; ++q) {
        PositionTime& at = e.problem.position_times[q];
        if (side == Side::above) {
            // The mean time of the layers the position holds under an even cut (the plan's
            // times are then taken per group).
            for (const std::size_t g : can[q]) {
                at.forward += share[q][g] * grouped.time.groups[g].forward;
                for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                    at.time[k] += share[q][g] * grouped.time.groups[g].time[k];
            }
            continue;
        }
        // Below: the least forward and the least backward of any group the position can hold.
        at.forward = std::numeric_limits<double>::infinity();
        for (const std::size_t g : can[q])
            at.forward = std::min(at.forward, grouped.time.groups[g].forward);
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            double backward = std::numeric_limits<double>::infinity();
            for (const std::size_t g : can[q]) {
                if (takes(g, k))
                    backward = std::min(
                        backward, grouped.time.groups[g].time[k] - grouped.time.groups[g].forward);
            }
            // A kind no group here may take: never chosen here (its memory is the largest).
            at.time[k] = std::isfinite(backward) ? at.forward + backward : kNever;
        }
        if (side != Side::below_credited)
            continue;
        // Each layer at the most any group here takes for its kind, less what the layers that
        // can be here and take less could save: at most each group's layers in the window, each
        // saving at most its largest shortfall over the kinds. A chunk's time here is then at
        // most its true time whatever its layers, as every term below is.
        // In a case of the split (given windows: a position holds its window's layers and, past
        // them, nothing in a plan of the case), a layer beyond those is priced as the last run's
        // too, so that holding more than the case's layers gains nothing from the credit.
        std::vector<std::size_t> priced = can[q];
        if (given != nullptr &&
            std::find(priced.begin(), priced.end(), sequence.back()) == priced.end())
            priced.push_back(sequence.back());
        std::array<double, PPB_KIND_COUNT> most{};
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            most[k] = -std::numeric_limits<double>::infinity();
            for (const std::size_t g : priced) {
                if (takes(g, k))
                    most[k] = std::max(most[k], grouped.time.groups[g].time[k]);
            }
        }
        double credit = 0.0;
        for (const std::size_t g : can[q]) {
            double shortfall = 0.0;
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                if (takes(g, k) && std::isfinite(most[k]))
                    shortfall = std::max(shortfall, most[k] - grouped.time.groups[g].time[k]);
            }
            std::uint32_t held = 0;
            for (std::uint32_t i = window[q].first; i <= window[q].last && i < L; ++i)
                held += sequence[i] == g ? 1 : 0;
            credit += held * shortfall;
        }
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            at.time[k] = std::isfinite(most[k]) ? most[k] : kNever;
        at.offset = -credit;
    }
    // The time model's own: a layer's least over the positions (checked, and bounding).
    time.body_time = least_layer_times(e.problem);
    time.body_forward = std::numeric_limits<double>::infinity();
    for (const PositionTime& at : e.problem.position_times)
        time.body_forward = std::min(time.body_forward, at.forward);

    for (std::uint32_t s = 0; s < grouped.num_stages; ++s) {
        const GroupedAffineStage& from = stages[s];
        AffineStage a;
        a.rows = from.rows;
        a.base_activation = from.base_activation;
        a.fixed.assign(grouped.chunks, {});
        a.activation.assign(grouped.chunks, {});
        for (std::uint32_t c = 0; c < grouped.chunks; ++c) {
            const std::uint32_t q =
                model_position(grouped.schedule, grouped.num_stages, grouped.chunks, {s, c});
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                if ((e.kinds & PPB_KIND_BIT(k)) == 0)
                    continue;
                bool first = true;
                bool any = false;
                for (const std::size_t g : can[q]) {
                    if (!takes(g, k))
                        continue;
                    any = true;
                    a.fixed[c][k] =
                        first ? from.fixed[c][g][k] : pick(a.fixed[c][k], from.fixed[c][g][k]);
                    a.activation[c][k] = first ? from.activation[c][g][k]
                                               : pick(a.activation[c][k], from.activation[c][g][k]);
                    first = false;
                }
                if (!any) {
                    // No group this position can hold takes kind k (only below): a layer of it
                    // never fits here.
                    a.fixed[c][k] = kNever;
                    a.activation[c][k] = 0.0;
                }
            }
        }
        e.affine.push_back(std::move(a));
    }
    return e;
}

// The envelope's own answer for a placement (its affine stages extended to any in-flight counts:
// the empty stage is affine in them too, from the first vector of its profile).
std::vector<double> predict_envelope(const Problem& problem, const std::vector<AffineStage>& affine,
                                     std::span<const ppb_placement> placements) {
    std::vector<double> out;
    for (const ppb_placement& p : placements) {
        std::uint32_t stage = p.stage;
        // The placement names the stage as the plugin contract does (ppb::abi_stage): find it.
        for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
            const AbiStage view =
                abi_stage(problem.schedule, problem.num_stages, problem.chunks, s);
            if (view.num_stages == p.num_stages && view.stage == p.stage)
                stage = s;
        }
        const AffineStage& a = affine.at(stage);
        // rows.front(): the empty stage at the true counts of the profile's first vector.
        const InFlightVector& first = a.rows.profile().front();
        std::vector<ChunkMemory> none(problem.chunks);
        std::vector<double> rows;
        a.rows.rows(none, rows);
        double m = rows.front();
        for (std::uint32_t c = 0; c < p.num_chunks; ++c) {
            const double f = p.chunks[c].in_flight;
            m += (f - static_cast<double>(first[c])) * a.base_activation[c];
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                m += p.chunks[c].layers[k] * (a.fixed[c][k] + f * a.activation[c][k]);
        }
        out.push_back(m);
    }
    return out;
}

// While in scope, the one-group planners find `e`'s affine stages remembered for every set of
// kinds they may ask (ScopedAffineStages' key). `e` must outlive it and stay where it is.
class EnvelopeScope {
  public:
    explicit EnvelopeScope(Envelope& e) : scope_(e.memory) {
        e.memory.kinds = e.kinds;
        const std::shared_ptr<const std::vector<AffineStage>> affine =
            std::make_shared<const std::vector<AffineStage>>(e.affine);
        e.memory.predict_batch = [problem = e.problem,
                                  affine](std::span<const ppb_placement> placements) {
            return predict_envelope(problem, *affine, placements);
        };
        for (std::uint32_t kinds = e.kinds;; kinds = (kinds - 1) & e.kinds) {
            scope_.remembered().emplace(
                ScopedAffineStages::Key{static_cast<std::uint32_t>(e.problem.schedule),
                                        e.problem.num_stages, e.problem.chunks,
                                        e.problem.micro_batches, e.problem.time.body_layers, kinds},
                e.affine);
            if (kinds == 0)
                break;
        }
    }

  private:
    ScopedAffineStages scope_;
};

// Layers [first, first + n) with `layers` of each kind: per group, the kinds by position (full,
// both, select, comm, none: MindFormers' order, which any rule admits).
std::vector<KindCounts> by_position(const Problem& problem, std::uint32_t first,
                                    const KindCounts& layers) {
    static constexpr std::array<std::size_t, PPB_KIND_COUNT> order = {
        PPB_KIND_FULL, PPB_KIND_BOTH, PPB_KIND_SELECT, PPB_KIND_COMM, PPB_KIND_NONE};
    std::vector<KindCounts> out(problem.time.groups.size(), KindCounts{});
    std::uint32_t i = first;
    for (const std::size_t k : order) {
        for (std::uint32_t n = 0; n < layers[k]; ++n)
            ++out[problem.time.sequence.at(i++)][k];
    }
    return out;
}

// The grouped plan with the chunk counts of `one` (a plan of the problem above), its memory and
// times taken exactly.
// `fits` null: a stage over the budget is an error (the plan above always fits: only a model
// that is not affine gets there); else it is set to whether every stage fits.
Plan grouped_plan_of(const Problem& p, const MemorySource& memory,
                     const std::vector<GroupedAffineStage>& stages, const Plan& one,
                     bool* fits = nullptr) {
    if (fits != nullptr)
        *fits = true;
    const std::uint32_t P = p.num_stages;
    const std::uint32_t v = p.chunks;
    const std::size_t G = p.time.groups.size();
    Plan plan;
    plan.stages.resize(P);
    std::vector<std::vector<double>> chunk_times(P, std::vector<double>(v, 0.0));
    std::uint32_t next = 0;
    for (std::uint32_t q = 0; q < P * v; ++q) {
        const StageChunk at = position_at(p.schedule, P, v, q);
        const ChunkPlan& from = one.stages.at(at.stage).chunks.at(at.chunk);
        StagePlan& sp = plan.stages[at.stage];
        if (sp.chunks.empty()) {
            sp.stage = at.stage;
            sp.chunks.resize(v);
            sp.group_layers.assign(G, KindCounts{});
        }
        ChunkPlan& chunk = sp.chunks[at.chunk];
        chunk.chunk = at.chunk;
        chunk.layers = from.layers;
        chunk.first_layer = next;
        chunk.group_layers = by_position(p, next, from.layers);
        const GroupedAffineStage& a = stages[at.stage];
        chunk.forward_time = chunk_forward_time(p, at.stage, at.chunk, KindCounts{});
        double t = chunk_time(p, at.stage, at.chunk, KindCounts{});
        for (std::size_t g = 0; g < G; ++g) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                const std::uint32_t n = chunk.group_layers[g][k];
                if (n == 0)
                    continue;
                chunk.forward_time += n * p.time.groups[g].forward;
                t += n * p.time.groups[g].time[k];
                chunk.activation_mb += n * a.activation[at.chunk][g][k];
                sp.group_layers[g][k] += n;
                sp.layers[k] += n;
            }
        }
        chunk.activation_mb += a.base_activation[at.chunk];
        chunk.backward_time = t - chunk.forward_time;
        chunk_times[at.stage][at.chunk] = t;
        sp.time += t;
        next += std::accumulate(from.layers.begin(), from.layers.end(), 0u);
    }
    for (std::uint32_t s = 0; s < P; ++s) {
        StagePlan& sp = plan.stages[s];
        sp.first_layer = sp.chunks[0].first_layer;
        const GroupedAffineStage& a = stages[s];
        const auto& profile = a.rows.profile();
        StageRows::Peak peak;
        if (memory.group_linear.empty()) {
            ChunkGroups layers;
            for (const ChunkPlan& chunk : sp.chunks)
                layers.push_back(chunk.group_layers);
            peak = predicted_peak(p, memory, s, layers, profile);
        } else {
            std::vector<ChunkMemory> memories;
            for (std::uint32_t c = 0; c < v; ++c) {
                ChunkMemory m;
                for (std::size_t g = 0; g < G; ++g) {
                    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                        m.fixed += sp.chunks[c].group_layers[g][k] * a.fixed[c][g][k];
                        m.activation += sp.chunks[c].group_layers[g][k] * a.activation[c][g][k];
                    }
                }
                memories.push_back(m);
            }
            peak = a.rows.peak(memories);
        }
        if (fits != nullptr && !within_budget(peak.memory, p.budget_mb()))
            *fits = false;
        // Each term of the affine sum is at most the envelope's: only a model that is not affine
        // (a probed one that passed its checks by chance) gets here.
        if (fits == nullptr && !within_budget(peak.memory, p.budget_mb())) {
            throw InputError(fmt::format(
                "the memory model predicts {} for stage {} of the plan, over the {} budget its "
                "probes implied it fits: it is not affine in the layer counts",
                format_mb(peak.memory), s, format_mb(p.budget_mb())));
        }
        sp.memory_mb = peak.memory;
        sp.in_flight = profile[peak.row][0];
        for (std::uint32_t c = 0; c < v; ++c)
            sp.chunks[c].in_flight = profile[peak.row][c];
    }
    plan.iteration_time = schedule_iteration_time(chunk_times, p.micro_batches, p.objective);
    plan.activations_known = true;
    return plan;
}

// The plan of the problem above with the chunk counts of a grouped plan (for the local search).
Plan one_group_plan_of(const Problem& above, const Plan& grouped) {
    Plan plan;
    plan.recompute_setting = grouped.recompute_setting;
    plan.balanced_chunks = grouped.balanced_chunks;
    for (const StagePlan& from : grouped.stages) {
        StagePlan sp;
        sp.stage = from.stage;
        sp.memory_mb = from.memory_mb;
        sp.layers = from.layers;
        sp.in_flight = from.in_flight;
        for (const ChunkPlan& c : from.chunks) {
            ChunkPlan chunk;
            chunk.chunk = c.chunk;
            chunk.layers = c.layers;
            chunk.in_flight = c.in_flight;
            chunk.forward_time = chunk_forward_time(above, from.stage, c.chunk, c.layers);
            chunk.backward_time =
                chunk_time(above, from.stage, c.chunk, c.layers) - chunk.forward_time;
            sp.time += chunk.time();
            sp.chunks.push_back(chunk);
        }
        plan.stages.push_back(std::move(sp));
    }
    return plan;
}

std::string why_not_exact(const Problem& p) {
    std::string why;
    if (p.chunks > 2)
        why = "the exact planner's state, a cut point per chunk, is too large beyond 2 chunks";
    else if (splits_backward(p.schedule))
        why =
            "the exact planner's estimate leaves out the weight-gradient passes of the "
            "zero-bubble schedules";
    else
        why = "the exact planner weighs every mix of kinds, not one recompute setting per run";
    return fmt::format(
        "{} groups of body layers with {} chunk{} per stage under {} are planned through one group "
        "that bounds them (each layer at the most memory of a group its position can hold, at "
        "their mean time there; the plan's memory and times are then its groups' own): {}",
        p.time.groups.size(), p.chunks, p.chunks == 1 ? "" : "s", schedule_name(p.schedule), why);
}

double makespan_of(const Problem& p, const Plan& plan) {
    SimulationInput input = simulation_input(p, plan);
    input.with_memory = false;
    return simulate(input).makespan;
}

// Calls visit(windows) for each way the first `prefix` layers of the sequence (those before its
// last run, all of one group) can fall on the positions in order: a_0 >= 0 of them on position 0,
// then a_q >= 1 on each next one until all are placed, on position m. In such a plan position q <
// m holds exactly its a_q prefix layers, position m the last of them and some of the last run, and
// every later position the last run alone; a position holding none holds nothing.
template <typename Visit>
void for_each_prefix_case(const Problem& p, std::uint32_t prefix, Visit&& visit) {
    const std::uint32_t L = p.time.body_layers;
    const std::uint32_t Q = p.num_stages * p.chunks;
    std::vector<std::uint32_t> a;
    const auto walk = [&](auto&& self, std::uint32_t q, std::uint32_t left) -> void {
        if (q >= Q)
            return;
        for (std::uint32_t n = q == 0 ? 0 : 1; n <= left; ++n) {
            a.push_back(n);
            if (n == left && n > 0) {
                std::vector<Window> w(Q);
                std::uint32_t start = 0;
                for (std::uint32_t r = 0; r < Q; ++r) {
                    if (r + 1 < a.size())
                        w[r] = a[r] == 0 ? Window{L - 1, L - 1} : Window{start, start + a[r] - 1};
                    else if (r + 1 == a.size())
                        w[r] = {start, L - 1};
                    else
                        w[r] = {prefix, L - 1};
                    if (r < a.size())
                        start += a[r];
                }
                visit(w);
            } else if (n < left) {
                self(self, q + 1, left - n);
            }
            a.pop_back();
        }
    };
    walk(walk, 0, prefix);
}

// Cases of the split above are 2^prefix: split only for a short prefix (DeepSeek-V3's 3 dense
// layers, Kimi-K2's 1).
constexpr std::uint32_t most_prefix_split = 4;

// Rounds of the local search around the best plan (refine_grouped_through_envelope), each as long
// as the first search.
constexpr std::uint32_t local_rounds = 2;

// The layers before the sequence's last run (the dense layers before the MoE ones), when they are
// few enough to split into cases; 0 otherwise.
std::uint32_t short_prefix(const Problem& p) {
    const auto& sequence = p.time.sequence;
    std::uint32_t prefix = p.time.body_layers;
    while (prefix > 0 && sequence[prefix - 1] == sequence.back())
        --prefix;
    return prefix <= most_prefix_split ? prefix : 0;
}

// With a short prefix (the dense layers before the MoE ones), each case of the positions it is on
// has its own problem above, exact but where the prefix falls: calls visit(problem above, its
// plan) for each case whose problem above plans.
template <typename Visit>
void for_each_case_plan(const Problem& problem, const std::vector<GroupedAffineStage>& stages,
                        const std::vector<std::vector<std::size_t>>& kinds, Visit&& visit) {
    const std::uint32_t prefix = short_prefix(problem);
    if (prefix == 0)
        return;
    for_each_prefix_case(problem, prefix, [&](const std::vector<Window>& windows) {
        Envelope guided = envelope_of(problem, stages, kinds, Side::above, &windows);
        if (guided.kinds == 0)
            return;
        Plan one;
        try {
            const EnvelopeScope scope(guided);
            one = solve(guided.problem, guided.memory);
        } catch (const Infeasible&) {
            return;
        }
        visit(guided, std::move(one));
    });
}

}  // namespace

Plan solve_grouped_through_envelope(const Problem& problem, const MemorySource& memory,
                                    const std::vector<std::vector<std::size_t>>& kinds) {
    const std::vector<GroupedAffineStage> stages = grouped_stages(problem, memory, kinds);
    Envelope above = envelope_of(problem, stages, kinds, Side::above);
    if (above.kinds == 0) {
        throw InputError(fmt::format(
            "planning {} groups of body layers with {} chunks per stage needs a recompute kind "
            "every group may take; none is both allowed and predictable for all of them",
            problem.time.groups.size(), problem.chunks));
    }
    // The grouped plan of a one-group plan, saying why it is not exact.
    const auto grouped_of = [&](const Plan& one, bool* fits) {
        Plan plan = grouped_plan_of(problem, memory, stages, one, fits);
        plan.not_exact_because = why_not_exact(problem);
        if (!one.not_exact_because.empty())
            plan.not_exact_because += "; and within it, " + one.not_exact_because;
        plan.balanced_chunks = one.balanced_chunks;
        plan.recompute_setting = one.recompute_setting;
        return plan;
    };
    try {
        const EnvelopeScope scope(above);
        return grouped_of(solve(above.problem, above.memory), nullptr);
    } catch (const Infeasible& e) {
        // Nothing fits above. With a short prefix (the dense layers before the MoE ones), each
        // case of the positions it is on has its own problem above, exact but where the prefix
        // falls: the one of least estimate among their plans that fit as the groups fall.
        std::optional<Plan> found;
        for_each_case_plan(problem, stages, kinds, [&](Envelope&, Plan one) {
            bool fits = false;
            Plan plan = grouped_of(one, &fits);
            if (fits && (!found || plan.iteration_time < found->iteration_time))
                found = std::move(plan);
        });
        if (found)
            return *std::move(found);
        // Whether anything fits at all: below the problem below's least limit, nothing does.
        std::optional<double> none_below;
        Envelope below = envelope_of(problem, stages, kinds, Side::below);
        try {
            const EnvelopeScope scope(below);
            (void)solve(below.problem, below.memory);
        } catch (const Infeasible& none) {
            none_below = none.smallest_feasible_limit_mb();
        }
        // The limit the one-group planner names is the least for the problem above when one kind
        // is the lightest in every row; it is said to be feasible only when the plan above is
        // found there.
        const double at = std::ceil(e.smallest_feasible_limit_mb() * 10.0) / 10.0;
        bool plans_there = false;
        if (std::isfinite(at)) {
            Envelope there = above;
            there.problem.memory_limit_mb = at;
            try {
                const EnvelopeScope scope(there);
                (void)solve(there.problem, there.memory);
                plans_there = true;
            } catch (const Infeasible&) {
            }
        }
        LeastFeasibleBudget least;
        least.certainty = LeastFeasibleBudget::Certainty::feasible;
        least.need_mb = e.smallest_feasible_limit_mb() - problem.memory_margin_mb;
        least.fullest_known = false;
        if (!plans_there) {
            least.certainty = none_below ? LeastFeasibleBudget::Certainty::lower_bound
                                         : LeastFeasibleBudget::Certainty::unsearched;
            least.need_mb = none_below ? *none_below - problem.memory_margin_mb
                                       : std::numeric_limits<double>::infinity();
            least.unsearched_because = "no limit at which such a plan fits was found";
        }
        least.feasible_because = "the least at which such a plan fits";
        if (none_below && std::isfinite(*none_below)) {
            least.feasible_because +=
                fmt::format("; none fits below {:.1f} MB", std::floor(*none_below * 10.0) / 10.0);
        }
        throw_infeasible(
            problem,
            fmt::format("within {} no plan of the {} body layers ({} groups) into {} stages of {} "
                        "chunk{} under {} fits when each layer takes the most memory of a group "
                        "its position can hold, as ppb plans such models",
                        format_mb(problem.budget_mb()), problem.time.body_layers,
                        problem.time.groups.size(), problem.num_stages, problem.chunks,
                        problem.chunks == 1 ? "" : "s", schedule_name(problem.schedule)),
            least);
    }
}

Plan refine_grouped_through_envelope(const Problem& problem, const MemorySource& memory,
                                     const Plan& start, std::uint32_t max_moves) {
    const std::vector<std::vector<std::size_t>> kinds = group_kinds(problem, memory);
    const std::vector<GroupedAffineStage> stages = grouped_stages(problem, memory, kinds);
    Plan best = start;
    double fastest = makespan_of(problem, start);
    // The moves of the one-group local search from `from`, a plan of `above`; its grouped plan
    // kept when it fits and simulates faster than the best so far.
    // `from` keeps its own recompute setting and balance (a case's plan may take another setting
    // than the start's); the search moves within them.
    const auto search_from = [&](Envelope& above, Plan from) {
        Plan one;
        {
            const EnvelopeScope scope(above);
            one = refine_by_simulation(above.problem, above.memory, from, max_moves);
        }
        bool fits = false;
        Plan grouped = grouped_plan_of(problem, memory, stages, one, &fits);
        if (!fits)
            return;
        grouped.recompute_setting = one.recompute_setting;
        grouped.balanced_chunks = one.balanced_chunks;
        if (const double makespan = makespan_of(problem, grouped); makespan < fastest) {
            fastest = makespan;
            best = std::move(grouped);
        }
    };
    Envelope above = envelope_of(problem, stages, kinds, Side::above);
    search_from(above, one_group_plan_of(above.problem, start));  // the start's setting
    // With a short prefix (the dense layers before the MoE ones), each case of the positions it is
    // on (as the bound splits them) has its own problem above, exact but at those positions. The
    // plan of the case whose grouped plan fits and simulates fastest is searched the same way
    // (one search: each takes as long as the first).
    std::optional<Envelope> chosen;
    Plan chosen_one;
    double chosen_makespan = std::numeric_limits<double>::infinity();
    for_each_case_plan(problem, stages, kinds, [&](Envelope& guided, Plan one) {
        bool fits = false;
        const Plan grouped = grouped_plan_of(problem, memory, stages, one, &fits);
        if (!fits)
            return;
        if (const double makespan = makespan_of(problem, grouped); makespan < chosen_makespan) {
            chosen_makespan = makespan;
            chosen = std::move(guided);
            chosen_one = std::move(one);
        }
    });
    if (chosen)
        search_from(*chosen, std::move(chosen_one));
    // Then around the best plan: each position's window is its range widened by a layer each way,
    // its time that of the layers it holds, so that the moves weigh memory and time as the groups
    // fall, but for the layers crossing a boundary (a plan that does not fit is not kept).
    for (std::uint32_t round = 0; round < local_rounds; ++round) {
        std::vector<Window> ranges;
        std::vector<Window> windows;
        const std::uint32_t L = problem.time.body_layers;
        for (std::uint32_t q = 0; q < problem.num_stages * problem.chunks; ++q) {
            const StageChunk at =
                position_at(problem.schedule, problem.num_stages, problem.chunks, q);
            const ChunkPlan& chunk = best.stages.at(at.stage).chunks.at(at.chunk);
            const std::uint32_t n = std::accumulate(chunk.layers.begin(), chunk.layers.end(), 0u);
            const std::uint32_t first = chunk.first_layer;
            ranges.push_back(n == 0 ? Window{1, 0} : Window{first, first + n - 1});
            windows.push_back({first == 0 ? 0 : first - 1, std::min(L - 1, first + n)});
        }
        Envelope local = envelope_of(problem, stages, kinds, Side::above, &windows, &ranges);
        if (local.kinds == 0)
            break;
        const double before = fastest;
        search_from(local, one_group_plan_of(local.problem, best));
        if (!(fastest < before))
            break;
    }
    best.not_exact_because = start.not_exact_because;
    return best;
}

double grouped_simulated_lower_bound(const Problem& problem, const MemorySource& memory,
                                     double upper) {
    const std::vector<std::vector<std::size_t>> kinds = group_kinds(problem, memory);
    const std::vector<GroupedAffineStage> stages = grouped_stages(problem, memory, kinds);
    const auto bound_of = [&](Side side, const std::vector<Window>* windows) {
        Envelope below = envelope_of(problem, stages, kinds, side, windows);
        const EnvelopeScope scope(below);
        return simulated_lower_bound(below.problem, below.memory, upper);
    };
    double relaxed =
        std::max(bound_of(Side::below, nullptr), bound_of(Side::below_credited, nullptr));
    // A sequence whose last run is preceded by a few layers (dense layers before MoE ones): the
    // positions those few can be on are split into cases, each credited exactly; no plan beats
    // the least case's bound.
    if (const std::uint32_t prefix = short_prefix(problem); prefix > 0) {
        double least_case = upper;
        for_each_prefix_case(problem, prefix, [&](const std::vector<Window>& windows) {
            least_case = std::min(least_case, bound_of(Side::below_credited, &windows));
        });
        relaxed = std::max(relaxed, least_case);
    }
    // Every stage runs each of its chunks M times, one after another: the busiest stage, and so
    // the iteration, takes at least M times the mean stage, each layer at its fastest kind.
    double work = problem.time.head_time + problem.time.tail_time;
    for (const std::uint32_t g : problem.time.sequence) {
        double fastest = std::numeric_limits<double>::infinity();
        for (const std::size_t k : kinds[g])
            fastest = std::min(fastest, problem.time.groups[g].time[k]);
        work += fastest;
    }
    const double mean = problem.micro_batches * work / problem.num_stages;
    return std::min(upper, std::max(relaxed, mean));
}

}  // namespace ppb::partition::detail
