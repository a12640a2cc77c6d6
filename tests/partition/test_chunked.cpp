// The partitioner with several chunks per stage (interleaved, interleaved-less-memory,
// dualpipe-v), proved against exhaustive enumeration: every way to spread the layers over the
// (stage, chunk) positions and every mix of kinds in every chunk, evaluated with the documented
// objective M max_s T_s + sum_s m_s - max_s m_s, the memory written out from the coefficients
// here (the ends where the schedule puts them), and compared with solve() through both a linear
// source and predict_batch (where the host probes the model and describes dualpipe-v stages by
// their ends).
#include "brute_force.hpp"
#include "chunk_tables.hpp"    // detail::solve_chunked, detail::ChunkedBounds
#include "makespan_graph.hpp"  // detail::MakespanGraph
#include "pareto.hpp"          // detail::Staircase
#include "stage_table.hpp"     // detail::candidate_kinds

#include <ppb/errors.hpp>
#include <ppb/partition/lower_bound.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/refine.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/schedule.hpp>
#include <ppb/simulator.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::Schedule;
using ppb::partition::Infeasible;
using ppb::partition::KindCounts;
using ppb::partition::MemorySource;
using ppb::partition::Plan;
using ppb::partition::Problem;
using ppb::partition::RecomputeRule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace chunked_tests {

namespace {

struct Coefficients {
    double c = 0, h = 0, t = 0, per_layer = 0;
    std::array<double, PPB_KIND_COUNT> a{};
    // The embedding's memory also grows with the square of its chunk's in-flight count: not a
    // linear model (only predict_batch can give it), yet affine in each stage's layer counts.
    double h_squared = 0;
};

// Memory of stage s holding `chunks` (kinds per chunk) while `f` micro-batches are in flight in
// each chunk, written out: the constant, the embedding on stage 0, the LM head on the stage of
// the model's last position, and per layer its parameters and its activations times its chunk's
// in-flight count.
double memory_at(const Coefficients& k, const Problem& p, std::uint32_t s,
                 const std::vector<KindCounts>& chunks, const std::vector<std::uint32_t>& f) {
    const std::uint32_t last_stage =
        ppb::v_shaped(p.schedule) ? 0 : p.num_stages - 1;  // V comes back to stage 0
    double m = k.c + (s == last_stage ? k.t : 0.0);
    if (s == 0) {
        const double f0 = f[0];
        m += k.h + k.h_squared * f0 * f0;
    }
    for (std::uint32_t c = 0; c < chunks.size(); ++c) {
        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
            m += chunks[c][kind] * (k.per_layer + k.a[kind] * f[c]);
    }
    return m;
}

// The stage's peak: the most it holds at any moment of its order.
double stage_memory(const Coefficients& k, const Problem& p, std::uint32_t s,
                    const std::vector<KindCounts>& chunks) {
    double peak = -std::numeric_limits<double>::infinity();
    for (const auto& f : pt::executed_states(p, s))
        peak = std::max(peak, memory_at(k, p, s, chunks, f));
    return peak;
}

// The same through the plugin contract: head on stage 0, tail on stage num_stages - 1 of the
// placement as the host describes it.
double placement_memory(const Coefficients& k, const ppb_placement& p) {
    double m = k.c + (p.stage + 1 == p.num_stages ? k.t : 0.0);
    if (p.stage == 0) {
        const double f0 = p.chunks[0].in_flight;
        m += k.h + k.h_squared * f0 * f0;
    }
    for (std::uint32_t c = 0; c < p.num_chunks; ++c) {
        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
            m += p.chunks[c].layers[kind] * (k.per_layer + k.a[kind] * p.chunks[c].in_flight);
    }
    return m;
}

double chunk_time(const Problem& p, std::uint32_t s, std::uint32_t c, const KindCounts& mix) {
    const std::uint32_t q = ppb::pipeline_position(p.schedule, p.num_stages, s, c);
    double t = (q == 0 ? p.time.head_time : 0.0) +
               (q + 1 == p.num_stages * p.chunks ? p.time.tail_time : 0.0);
    for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
        t += mix[kind] * p.time.body_time[kind];
    return t;
}

// Its forward part: the ends' forward and each body layer's, whatever its kind.
double chunk_forward(const Problem& p, std::uint32_t s, std::uint32_t c, const KindCounts& mix) {
    const std::uint32_t q = ppb::pipeline_position(p.schedule, p.num_stages, s, c);
    double t = (q == 0 ? p.time.head_forward : 0.0) +
               (q + 1 == p.num_stages * p.chunks ? p.time.tail_forward : 0.0);
    for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
        t += mix[kind] * p.time.body_forward;
    return t;
}

std::uint32_t min_layers(const Problem& p, std::uint32_t s, std::uint32_t c) {
    const std::uint32_t q = ppb::pipeline_position(p.schedule, p.num_stages, s, c);
    return (q == 0 || q + 1 == p.num_stages * p.chunks) ? 0 : 1;
}

// One stage's feasible outcomes: n layers, total T, slowest chunk m. Both objectives only grow
// with any stage's T and m, so for each n only the outcomes no other of the same n beats in both
// can be optimal; the others are left out.
struct Outcome {
    std::uint32_t n;
    double total;
    double slowest;
};

std::vector<Outcome> stage_outcomes(const Problem& p, const Coefficients& k, std::uint32_t s,
                                    std::uint32_t allowed) {
    std::map<std::tuple<std::uint32_t, double, double>, bool> seen;
    std::vector<KindCounts> chunks(p.chunks);
    const std::uint32_t layers = p.time.body_layers;
    auto rec = [&](auto& self, std::uint32_t c, std::uint32_t used) -> void {
        if (c == p.chunks) {
            if (p.num_stages == 1 && used != layers)
                return;
            if (!ppb::partition::within_budget(stage_memory(k, p, s, chunks), p.budget_mb()))
                return;
            double total = 0, slowest = 0;
            for (std::uint32_t i = 0; i < p.chunks; ++i) {
                const double t = chunk_time(p, s, i, chunks[i]);
                total += t;
                slowest = std::max(slowest, t);
            }
            seen[{used, total, slowest}] = true;
            return;
        }
        for (std::uint32_t n = min_layers(p, s, c); used + n <= layers; ++n) {
            pt::for_each_composition(n, allowed, [&](const KindCounts& mix) {
                if (!pt::oracle_expressible(mix, p.rule))
                    return;
                chunks[c] = mix;
                self(self, c + 1, used + n);
            });
        }
        chunks[c] = KindCounts{};
    };
    rec(rec, 0, 0);
    // By n, then total, then slowest: an outcome is kept when its slowest chunk is below every
    // kept one's of the same n (those are no slower in total).
    std::vector<Outcome> out;
    for (const auto& [key, unused] : seen) {
        const Outcome o{std::get<0>(key), std::get<1>(key), std::get<2>(key)};
        if (out.empty() || out.back().n != o.n || o.slowest < out.back().slowest)
            out.push_back(o);
    }
    return out;
}

// The most memory any stage needs holding every layer in chunk 0 without recompute: the scale of
// the tests' memory limits (from generous to tight as fractions of it).
double heaviest_stage_of_no_recompute(const Problem& p, const Coefficients& k) {
    double spread = 0.0;
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        std::vector<KindCounts> even(p.chunks);
        even[0][PPB_KIND_NONE] = p.time.body_layers;
        spread = std::max(spread, stage_memory(k, p, s, even));
    }
    return spread;
}

// The least objective over every plan, or infinity: 'stages' (M max_s T_s + sum_s m_s -
// max_s m_s) and 'slots' ((M v - 1) max_s m_s + sum_s m_s).
struct Optima {
    double stages = std::numeric_limits<double>::infinity();
    double slots = std::numeric_limits<double>::infinity();
    [[nodiscard]] double of(ppb::partition::ChunkObjective objective) const {
        return objective == ppb::partition::ChunkObjective::slots ? slots : stages;
    }
};

Optima brute_force_both(const Problem& p, const Coefficients& k, std::uint32_t allowed) {
    std::vector<std::vector<Outcome>> stages;
    for (std::uint32_t s = 0; s < p.num_stages; ++s)
        stages.push_back(stage_outcomes(p, k, s, allowed));
    Optima best;
    const double m = p.micro_batches;
    auto rec = [&](auto& self, std::uint32_t s, std::uint32_t left, double max_total,
                   double sum_slowest, double max_slowest) -> void {
        if (s == p.num_stages) {
            if (left == 0) {
                best.stages = std::min(best.stages, m * max_total + sum_slowest - max_slowest);
                best.slots = std::min(best.slots, (m * p.chunks - 1.0) * max_slowest + sum_slowest);
            }
            return;
        }
        for (const Outcome& o : stages[s]) {
            if (o.n > left)
                continue;
            self(self, s + 1, left - o.n, std::max(max_total, o.total), sum_slowest + o.slowest,
                 std::max(max_slowest, o.slowest));
        }
    };
    rec(rec, 0, p.time.body_layers, 0.0, 0.0, 0.0);
    return best;
}

// p.objective's.
double brute_force(const Problem& p, const Coefficients& k, std::uint32_t allowed) {
    return brute_force_both(p, k, allowed).of(p.objective);
}

struct Case {
    Schedule schedule;
    std::uint32_t chunks;
};

// The coefficients as a linear model, and through predict_batch (the host probes it).
MemorySource linear_source(const Coefficients& k) {
    MemorySource linear;
    ppb_linear_parameters params{};
    params.struct_size = sizeof params;
    params.identified = 0xFFu | 0x1F0u;
    params.const_mb = k.c;
    params.head_mb = k.h;
    params.tail_mb = k.t;
    params.per_layer_mb = k.per_layer;
    std::copy(k.a.begin(), k.a.end(), params.activation_mb);
    linear.linear = params;
    return linear;
}

MemorySource probed_source(const Coefficients& k) {
    MemorySource probed;
    probed.predict_batch = [k](std::span<const ppb_placement> placements) {
        std::vector<double> out;
        for (const auto& placement : placements)
            out.push_back(placement_memory(k, placement));
        return out;
    };
    return probed;
}

// The plan solve() returns obeys every rule, and its objective is what it says.
std::string check_plan(const Plan& plan, const Problem& p, const Coefficients& k,
                       std::uint32_t allowed) {
    std::uint32_t layers = 0;
    std::vector<std::vector<double>> chunk_times;
    for (const auto& stage : plan.stages) {
        std::vector<KindCounts> mixes;
        std::vector<double> times;
        for (const auto& chunk : stage.chunks) {
            for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
                if (chunk.layers[kind] != 0 && (allowed & PPB_KIND_BIT(kind)) == 0)
                    return "a kind that is not allowed";
                layers += chunk.layers[kind];
            }
            if (!pt::oracle_expressible(chunk.layers, p.rule))
                return fmt::format("stage {} chunk {}: a mix the rule does not admit", stage.stage,
                                   chunk.chunk);
            const std::uint32_t n = std::accumulate(chunk.layers.begin(), chunk.layers.end(), 0u);
            if (p.num_stages > 1 && n < min_layers(p, stage.stage, chunk.chunk))
                return fmt::format("stage {} chunk {} is empty", stage.stage, chunk.chunk);
            const double t = chunk_time(p, stage.stage, chunk.chunk, chunk.layers);
            if (std::abs(t - chunk.time()) > 1e-9 * std::max(1.0, t))
                return fmt::format("stage {} chunk {}: time {} != {}", stage.stage, chunk.chunk,
                                   chunk.time(), t);
            mixes.push_back(chunk.layers);
            times.push_back(t);
        }
        const double memory = stage_memory(k, p, stage.stage, mixes);
        // The plan's in-flight counts are a moment of the order at which the stage holds its peak.
        std::vector<std::uint32_t> at_peak;
        for (const auto& chunk : stage.chunks)
            at_peak.push_back(chunk.in_flight);
        const auto& states = pt::executed_states(p, stage.stage);
        if (std::find(states.begin(), states.end(), at_peak) == states.end())
            return fmt::format("stage {}: in-flight counts that never occur", stage.stage);
        const double there = memory_at(k, p, stage.stage, mixes, at_peak);
        if (std::abs(there - memory) > 1e-6 * std::max(1.0, std::abs(memory)))
            return fmt::format(
                "stage {}: the in-flight counts are not those of the peak ({} != {})", stage.stage,
                there, memory);
        if (std::abs(memory - stage.memory_mb) > 1e-6 * std::max(1.0, std::abs(memory)))
            return fmt::format("stage {}: memory {} != {}", stage.stage, stage.memory_mb, memory);
        if (!ppb::partition::within_budget(memory, p.budget_mb()))
            return fmt::format("stage {} over budget", stage.stage);
        chunk_times.push_back(times);
    }
    if (layers != p.time.body_layers)
        return fmt::format("{} layers placed of {}", layers, p.time.body_layers);
    const double objective =
        ppb::partition::schedule_iteration_time(chunk_times, p.micro_batches, p.objective);
    if (std::abs(objective - plan.iteration_time) > 1e-9 * std::max(1.0, objective))
        return fmt::format("iteration_time {} but the plan's objective is {}", plan.iteration_time,
                           objective);
    return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partition_chunked)

BOOST_AUTO_TEST_CASE(solve_matches_enumeration_for_every_schedule) {
    const std::array<Case, 4> cases = {{{Schedule::interleaved, 2},
                                        {Schedule::interleaved_less_memory, 2},
                                        {Schedule::dualpipe_v, 2},
                                        {Schedule::interleaved, 3}}};
    const std::array<std::uint32_t, 4> masks = {0x01, 0x11, 0x13, 0x07};
    std::mt19937 rng(2026);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::size_t instances = 0, infeasible = 0, seq = 0;
    std::map<std::string, std::size_t> per_schedule;
    for (const Case& c : cases) {
        for (std::uint32_t stages = 1; stages <= 3; ++stages) {
            const std::uint32_t max_layers = c.chunks == 3 ? 5 : (stages <= 2 ? 9 : 6);
            for (std::uint32_t layers = 1; layers <= max_layers; ++layers) {
                for (const std::uint32_t allowed : masks) {
                    ++seq;
                    Problem p;
                    p.schedule = c.schedule;
                    p.chunks = c.chunks;
                    p.num_stages = stages;
                    p.rule = seq % 2 ? RecomputeRule::mindformers : RecomputeRule::any;
                    // Micro-batches the schedule can run: a multiple of P, or at least 2P.
                    p.micro_batches = c.schedule == Schedule::dualpipe_v
                                          ? 2 * stages + static_cast<std::uint32_t>(seq % 3)
                                          : stages * (1 + static_cast<std::uint32_t>(seq % 3));
                    p.kinds = allowed;
                    p.time.body_layers = layers;
                    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                        p.time.body_time[k] = 1.0 + std::round(9.0 * unit(rng)) / 2.0;
                    p.time.head_time = std::round(8.0 * unit(rng)) / 2.0;
                    p.time.tail_time = std::round(8.0 * unit(rng)) / 2.0;
                    p.time.body_forward = 0.25;
                    Coefficients k;
                    k.c = 100.0 * unit(rng);
                    k.h = 200.0 * unit(rng);
                    k.t = 200.0 * unit(rng);
                    k.per_layer = 10.0 + 40.0 * unit(rng);
                    for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
                        k.a[kind] = 40.0 * unit(rng) * (1.0 - 0.18 * kind);
                    std::vector<KindCounts> none(c.chunks);
                    if (!ppb::schedule_shape_problem(p.schedule, p.num_stages, p.chunks,
                                                     p.micro_batches)
                             .empty())
                        continue;
                    // Too few layers for the positions: refused, not planned.
                    std::uint32_t needed = 0;
                    for (std::uint32_t s = 0; s < stages; ++s)
                        for (std::uint32_t ch = 0; ch < c.chunks; ++ch)
                            needed += min_layers(p, s, ch);
                    // Budgets from generous to tight: the largest memory of an even spread,
                    // scaled.
                    const double spread = heaviest_stage_of_no_recompute(p, k);
                    for (const double scale : {1.2, 0.8, 0.55, 0.35}) {
                        p.memory_limit_mb = spread * scale;
                        MemorySource linear;
                        ppb_linear_parameters params{};
                        params.struct_size = sizeof params;
                        params.identified = 0xFFu | 0x1F0u;
                        params.const_mb = k.c;
                        params.head_mb = k.h;
                        params.tail_mb = k.t;
                        params.per_layer_mb = k.per_layer;
                        std::copy(k.a.begin(), k.a.end(), params.activation_mb);
                        linear.linear = params;
                        MemorySource probed;
                        probed.predict_batch = [k](std::span<const ppb_placement> placements) {
                            std::vector<double> out;
                            for (const auto& placement : placements)
                                out.push_back(placement_memory(k, placement));
                            return out;
                        };
                        const std::string context =
                            fmt::format("{} v={} P={} L={} M={} kinds={:#x} rule={} limit={}",
                                        ppb::schedule_name(c.schedule), c.chunks, stages, layers,
                                        p.micro_batches, allowed,
                                        p.rule == RecomputeRule::any ? "any" : "mindformers",
                                        p.memory_limit_mb);
                        if (layers < needed) {
                            BOOST_CHECK_THROW((void)ppb::partition::solve(p, linear),
                                              ppb::InputError);
                            continue;
                        }
                        ++instances;
                        ++per_schedule[std::string(ppb::schedule_name(c.schedule))];
                        for (const MemorySource* source : {&linear, &probed}) {
                            const Coefficients& ks = k;
                            const double expected = brute_force(p, ks, allowed);
                            BOOST_TEST_CONTEXT(context
                                               << (source == &linear ? " linear" : " probed")) {
                                try {
                                    const Plan plan = ppb::partition::solve(p, *source);
                                    BOOST_TEST(std::isfinite(expected));
                                    BOOST_TEST(plan.iteration_time == expected,
                                               boost::test_tools::tolerance(1e-9));
                                    const std::string defect = check_plan(plan, p, ks, allowed);
                                    BOOST_TEST(defect.empty(), defect);
                                } catch (const Infeasible& e) {
                                    BOOST_TEST(!std::isfinite(expected), e.what());
                                    if (source == &linear)
                                        ++infeasible;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(
        fmt::format("chunked enumeration: {} instances, {} infeasible", instances, infeasible));
    // The sweep covers what it claims: every schedule, and some budgets that leave no plan.
    for (const Case& c : cases)
        BOOST_TEST(per_schedule[std::string(ppb::schedule_name(c.schedule))] > 20u);
    BOOST_TEST(infeasible > 0u);
    BOOST_TEST(infeasible < instances / 2);
}

// The chunk tables keep each count's options as they come (detail::Staircase). Against its
// definition: of the points offered, those whose keys no other point's are both at most (an
// equal pair counting once: of it, the point needing least memory, the first offered on a tie),
// by increasing first key. Small integer keys make ties and dominated points common.
BOOST_AUTO_TEST_CASE(options_kept_as_they_come_are_the_pareto_set) {
    std::mt19937 rng(2026);
    struct Offered {
        double first, second, memory;
    };
    for (int trial = 0; trial < 2000; ++trial) {
        std::uniform_int_distribution<int> key(0, 2 + trial % 12);
        std::uniform_int_distribution<int> mem(0, 3);
        std::vector<Offered> offered(static_cast<std::size_t>(1 + trial % 40));
        for (Offered& o : offered)
            o = {double(key(rng)), double(key(rng)), double(mem(rng))};

        ppb::partition::detail::Staircase<std::size_t> kept;
        for (std::size_t i = 0; i < offered.size(); ++i) {
            kept.offer(offered[i].first, offered[i].second, i, [&](std::size_t a, std::size_t b) {
                return offered[a].memory < offered[b].memory;
            });
        }

        std::vector<std::size_t> expected;
        for (std::size_t i = 0; i < offered.size(); ++i) {
            bool out = false;
            for (std::size_t j = 0; j < offered.size() && !out; ++j) {
                if (j == i)
                    continue;
                const Offered& a = offered[j];
                const Offered& b = offered[i];
                const bool no_larger = a.first <= b.first && a.second <= b.second;
                const bool equal = a.first == b.first && a.second == b.second;
                const bool preferred = a.memory < b.memory || (a.memory == b.memory && j < i);
                out = no_larger && (!equal || preferred);
            }
            if (!out)
                expected.push_back(i);
        }
        std::sort(expected.begin(), expected.end(), [&](std::size_t a, std::size_t b) {
            return offered[a].first < offered[b].first;
        });
        std::vector<std::size_t> got;
        for (const auto& step : kept.steps()) {
            got.push_back(step.value);
            BOOST_TEST(step.first == offered[step.value].first);
            BOOST_TEST(step.second == offered[step.value].second);
        }
        BOOST_TEST(got == expected, "trial " << trial);
    }
}

BOOST_AUTO_TEST_CASE(uniform_layers_balance_the_chunks) {
    // 16 identical layers, 2 stages, 2 chunks, no memory pressure: 4 layers per chunk, so that
    // no chunk is slower than it must be (the sum over stages of their slowest chunk counts).
    Problem p;
    p.schedule = Schedule::interleaved;
    p.chunks = 2;
    p.num_stages = 2;
    p.micro_batches = 4;
    p.time.body_layers = 16;
    p.time.body_time = {3.0, 3.0, 3.0, 3.0, 3.0};
    p.time.body_forward = 1.0;
    p.kinds = 0x01;
    p.memory_limit_mb = 1e6;
    MemorySource source;
    ppb_linear_parameters params{};
    params.struct_size = sizeof params;
    params.identified = 0xFFu | 0x1F0u;
    params.per_layer_mb = 10.0;
    params.activation_mb[0] = 1.0;
    source.linear = params;
    const Plan plan = ppb::partition::solve(p, source);
    for (const auto& stage : plan.stages) {
        for (const auto& chunk : stage.chunks) {
            BOOST_TEST(chunk.layers[PPB_KIND_NONE] == 4u);
            BOOST_TEST(chunk.forward_time == 4.0);
            BOOST_TEST(chunk.backward_time == 8.0);
        }
    }
    // M x 24 (the busiest stage) + 12 (the other stage's slowest chunk) = 108: what the
    // simulator gives for uniform chunks, (M v + P - 1) x chunk time = (8 + 1) x 12.
    BOOST_TEST(plan.iteration_time == 4.0 * 24.0 + 12.0);
}

BOOST_AUTO_TEST_CASE(a_stage_may_hold_more_than_the_first_cap) {
    // dualpipe-v, 6 stages: chunk 1 of stage 0 (the model's last block) has one micro-batch in
    // flight, every other stage's chunks 13 between them. With memory in activations only and a
    // limit of 13 layer-activations, every other stage holds one layer per chunk, and stage 0 the
    // other 13, beyond the first cap (2 x 4 + 2): the cap is doubled to 20, and the plan is the
    // only one. Its 'stages' objective bounds every stage within that cap; its 'slots' objective,
    // (M v - 1) x the slowest chunk with 13 layers in one chunk, allows about v times as many
    // layers, but no stage fits more than 13 even at its least memory, so the options are not
    // built again.
    Problem p;
    p.schedule = Schedule::dualpipe_v;
    p.chunks = 2;
    p.num_stages = 6;
    p.micro_batches = 12;
    p.time.body_layers = 23;
    p.time.body_time = {3.0, 3.0, 3.0, 3.0, 3.0};
    p.time.head_time = 1.0;
    p.time.tail_time = 2.0;
    p.time.body_forward = 1.0;
    p.kinds = 0x01;
    Coefficients k;
    k.a[PPB_KIND_NONE] = 10.0;
    p.memory_limit_mb = 130.0;
    const MemorySource linear = linear_source(k);
    const MemorySource probed = probed_source(k);
    for (const auto objective :
         {ppb::partition::ChunkObjective::stages, ppb::partition::ChunkObjective::slots}) {
        p.objective = objective;
        for (const MemorySource* source : {&linear, &probed}) {
            const Coefficients& ks = k;
            const double expected = brute_force(p, ks, p.kinds);
            ppb::partition::detail::ChunkedBounds bounds;
            const Plan plan = ppb::partition::detail::solve_chunked(
                p, *source, ppb::partition::detail::candidate_kinds(p, *source), &bounds);
            BOOST_TEST(bounds.first_cap == 10u);
            BOOST_TEST(bounds.builds == 2u);
            BOOST_TEST(bounds.capped);
            BOOST_TEST(!bounds.widened);
            BOOST_TEST(plan.stages[0].total_layers() == 13u);
            BOOST_TEST(plan.iteration_time == expected, boost::test_tools::tolerance(1e-12));
            BOOST_TEST(check_plan(plan, p, ks, p.kinds).empty());
        }
    }
}

BOOST_AUTO_TEST_CASE(refine_starts_from_any_plan_of_the_problem) {
    // The solver builds its options within bounds on each stage's layer count, the search on the
    // simulated makespan over every count, so where equal times leave a choice the start may hold
    // a mix the search's tables do not. A start no table holds at all (a slower kind than any
    // option uses) stands for it: the search starts from it and leaves it.
    Problem p;
    p.schedule = Schedule::interleaved;
    p.chunks = 2;
    p.num_stages = 2;
    p.micro_batches = 4;
    p.time.body_layers = 16;
    p.time.body_time = {3.0, 3.0, 3.0, 3.0, 4.5};
    p.time.body_forward = 1.0;
    p.kinds = 0x11;
    p.memory_limit_mb = 1e6;
    Coefficients k;
    k.per_layer = 10.0;
    k.a = {1.0, 1.0, 1.0, 1.0, 0.5};
    const MemorySource source = linear_source(k);
    Plan start = ppb::partition::solve(p, source);
    BOOST_TEST(start.stages[0].chunks[0].layers[PPB_KIND_NONE] == 4u);
    const auto to_full = [](KindCounts& mix) {
        --mix[PPB_KIND_NONE];
        ++mix[PPB_KIND_FULL];
    };
    to_full(start.stages[0].chunks[0].layers);
    to_full(start.stages[0].layers);
    start.stages[0].chunks[0].backward_time += 1.5;
    start.stages[0].time += 1.5;
    const Plan refined = ppb::partition::refine_by_simulation(p, source, start, 10);
    BOOST_TEST(check_plan(refined, p, k, p.kinds).empty());
    for (const auto& stage : refined.stages)
        BOOST_TEST(stage.layers[PPB_KIND_FULL] == 0u);
    BOOST_TEST(refined.iteration_time == 4.0 * 24.0 + 12.0);
}

BOOST_AUTO_TEST_CASE(many_chunks_are_placed_by_the_simulated_iteration) {
    // LLaMA-3 70B on 64 H100s as NeMo's recipe runs it (TP 4, PP 4, VP 5, CP 2, 64 micro-batches;
    // tests/data/tuned/published.json), its times as `ppb search` has them in ms: a layer 2.575
    // forward and 4.925 backward, the LM head and loss 4.8 and 9.7 on the last chunk, 0.336 per
    // transfer between stages. 80 layers in 20 chunks: the chunk estimates tie on many plans,
    // which differ in which chunk of a stage is slow and where the spare layers sit in model
    // order; the local search's moves of one layer between chunks settle them on the simulated
    // iteration. Its plan simulates within 1 % of the proven bound (without those moves: 5.3 %).
    Problem p;
    p.schedule = Schedule::interleaved;
    p.chunks = 5;
    p.num_stages = 4;
    p.micro_batches = 64;
    p.rule = RecomputeRule::any;
    p.kinds = PPB_KIND_BIT(PPB_KIND_NONE);
    p.time.body_layers = 80;
    p.time.body_forward = 2.575;
    p.time.body_time = {7.5, 7.5, 7.5, 7.5, 7.5};
    p.time.head_forward = 0.0;
    p.time.head_time = 0.0;
    p.time.tail_forward = 4.8;
    p.time.tail_time = 14.5;
    p.comm_time = {0.336};
    p.memory_limit_mb = 1e6;
    Coefficients k;
    k.per_layer = 1.0;
    const MemorySource source = linear_source(k);
    const ppb::partition::PlannedPartition planned = ppb::partition::plan_with_memory(p, source);
    BOOST_TEST(check_plan(planned.plan, planned.problem, k, p.kinds).empty());
    BOOST_TEST_REQUIRE(planned.lower_bound.has_value());
    const double gap = planned.simulation.makespan / *planned.lower_bound - 1.0;
    BOOST_TEST_MESSAGE(fmt::format("VP5: {:.1f} ms simulated, bound {:.1f} ms, gap {:.2f} %",
                                   planned.simulation.makespan, *planned.lower_bound, 100.0 * gap));
    BOOST_TEST(gap >= 0.0);
    BOOST_TEST(gap <= 0.01);
}

BOOST_AUTO_TEST_CASE(shapes_the_schedule_cannot_run_are_refused) {
    Problem p;
    p.num_stages = 4;
    p.micro_batches = 6;
    p.time.body_layers = 16;
    p.time.body_time = {3.0, 3.0, 3.0, 3.0, 3.0};
    p.memory_limit_mb = 1e6;
    MemorySource source;
    ppb_linear_parameters params{};
    params.struct_size = sizeof params;
    params.identified = 0xFFu | 0x1F0u;
    params.per_layer_mb = 1.0;
    source.linear = params;
    const auto refused = [&](Schedule schedule, std::uint32_t chunks, std::uint32_t m,
                             const std::string& text) {
        p.schedule = schedule;
        p.chunks = chunks;
        p.micro_batches = m;
        try {
            (void)ppb::partition::solve(p, source);
            BOOST_ERROR("no error for " << text);
        } catch (const ppb::InputError& e) {
            BOOST_TEST(std::string(e.what()).find(text) != std::string::npos, e.what());
        }
    };
    refused(Schedule::interleaved, 2, 6,
            "interleaved needs a multiple of the 4 stages as micro-batches");
    refused(Schedule::interleaved, 1, 8, "interleaved runs at least two chunks per stage, got 1");
    refused(Schedule::dualpipe_v, 3, 8, "dualpipe-v runs two chunks per stage, got 3");
    refused(Schedule::dualpipe_v, 2, 7,
            "dualpipe-v needs at least twice as many micro-batches as stages (2 x 4 = 8), got 7");
    refused(Schedule::one_f_one_b, 2, 8, "1f1b runs one chunk per stage, got 2");
    refused(Schedule::interleaved, 65, 8, "65 is out of range (1 to 64 chunks)");
    // Too few layers for every chunk but the model's first and last to hold one.
    p.time.body_layers = 5;
    refused(Schedule::interleaved, 2, 8, "4 stages of 2 chunks need at least 6 body layers");
}

BOOST_AUTO_TEST_CASE(generous_limits_match_enumeration) {
    // Limits that do not bind (1e9 MB) or only just bind, where the solver first plans with each
    // stage's layer count capped at about twice the balanced count and widens the cap only as far
    // as that plan's objective bounds it (host_api/docs/design.md, "Cost"). Many more layers than
    // positions, so that the cap is below L; both objectives, both rules, a linear model, the
    // same probed, and a probed one that is not linear.
    struct Shape {
        Schedule schedule;
        std::uint32_t chunks;
        std::uint32_t stages;
        std::vector<std::uint32_t> layers;
    };
    const std::vector<Shape> shapes = {
        {Schedule::interleaved, 2, 3, {9, 12, 16}}, {Schedule::interleaved, 2, 4, {11, 14}},
        {Schedule::interleaved, 3, 3, {12, 15}},    {Schedule::dualpipe_v, 2, 3, {9, 12, 16}},
        {Schedule::dualpipe_v, 2, 4, {11, 14}},
    };
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::size_t instances = 0, solves = 0, capped = 0, widened = 0, doubled = 0, seq = 0;
    std::size_t binding = 0;  // instances of a peak limit whose optimum is slower than at 1e9 MB
    for (const Shape& shape : shapes) {
        const std::vector<std::uint32_t> masks = shape.chunks == 3
                                                     ? std::vector<std::uint32_t>{0x11, 0x06}
                                                     : std::vector<std::uint32_t>{0x11, 0x13, 0x07};
        for (const std::uint32_t layers : shape.layers) {
            for (const std::uint32_t allowed : masks) {
                for (const RecomputeRule rule : {RecomputeRule::any, RecomputeRule::mindformers}) {
                    for (const bool light : {false, true}) {
                        ++seq;
                        Problem p;
                        p.schedule = shape.schedule;
                        p.chunks = shape.chunks;
                        p.num_stages = shape.stages;
                        p.rule = rule;
                        p.micro_batches =
                            shape.schedule == Schedule::dualpipe_v
                                ? 2 * shape.stages + static_cast<std::uint32_t>(seq % 2)
                                : shape.stages * (1 + static_cast<std::uint32_t>(seq % 2));
                        p.kinds = allowed;
                        p.time.body_layers = layers;
                        // Times and memory at random; or (light) each kind slower and lighter than
                        // the one before, by much: under a tight limit most layers then recompute,
                        // so the first plan's objective allows many layers of the fastest kind per
                        // stage, and they fit at the lightest.
                        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
                            p.time.body_time[kind] =
                                light ? 1.0 + kind + std::round(2.0 * unit(rng)) / 2.0
                                      : 1.0 + std::round(9.0 * unit(rng)) / 2.0;
                        }
                        p.time.head_time = std::round(8.0 * unit(rng)) / 2.0;
                        p.time.tail_time = std::round(8.0 * unit(rng)) / 2.0;
                        p.time.body_forward = 0.25;
                        Coefficients k;
                        k.c = 100.0 * unit(rng);
                        k.h = 200.0 * unit(rng);
                        k.t = 200.0 * unit(rng);
                        k.per_layer = light ? 1.0 + 2.0 * unit(rng) : 10.0 + 40.0 * unit(rng);
                        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
                            k.a[kind] = light ? 40.0 * std::pow(0.4, kind) * (0.5 + unit(rng))
                                              : 40.0 * unit(rng) * (1.0 - 0.18 * kind);
                        }
                        k.h_squared = seq % 3 == 0 ? 5.0 * unit(rng) : 0.0;
                        BOOST_REQUIRE(ppb::schedule_shape_problem(p.schedule, p.num_stages,
                                                                  p.chunks, p.micro_batches)
                                          .empty());
                        const MemorySource linear = linear_source(k);
                        const MemorySource probed = probed_source(k);
                        std::vector<const MemorySource*> sources = {&probed};
                        if (k.h_squared == 0.0)
                            sources.push_back(&linear);
                        // The limits: 1e9 MB, then the most memory of a stage in the plan found at
                        // 1e9 (it just fits), a little less and less again; with light recompute,
                        // limits that leave only a few layers without it.
                        p.memory_limit_mb = 1e9;
                        double peak = 0.0;
                        for (const auto& stage : ppb::partition::solve(p, probed).stages)
                            peak = std::max(peak, stage.memory_mb);
                        const std::vector<double> limits =
                            light ? std::vector<double>{0.5 * peak, 0.3 * peak, 0.2 * peak}
                                  : std::vector<double>{1e9, peak, 0.97 * peak, 0.85 * peak};
                        Optima generous;
                        for (const double limit : limits) {
                            p.memory_limit_mb = limit;
                            // One oracle for both sources: the true counts.
                            const Optima expected = brute_force_both(p, k, allowed);
                            const Optima& exact = expected;
                            if (limit == 1e9)
                                generous = expected;
                            else if (!light && expected.stages > generous.stages * (1 + 1e-12))
                                ++binding;
                            ++instances;
                            for (const auto objective : {ppb::partition::ChunkObjective::stages,
                                                         ppb::partition::ChunkObjective::slots}) {
                                p.objective = objective;
                                for (const MemorySource* source : sources) {
                                    const Coefficients& ks = k;
                                    const Optima& optima = source == &linear ? exact : expected;
                                    BOOST_TEST_CONTEXT(fmt::format(
                                        "{} v={} P={} L={} M={} kinds={:#x} rule={} limit={} {} {}",
                                        ppb::schedule_name(p.schedule), p.chunks, p.num_stages,
                                        layers, p.micro_batches, allowed,
                                        rule == RecomputeRule::any ? "any" : "mindformers", limit,
                                        objective == ppb::partition::ChunkObjective::slots
                                            ? "slots"
                                            : "stages",
                                        source == &linear ? "linear" : "probed")) {
                                        try {
                                            namespace detail = ppb::partition::detail;
                                            detail::ChunkedBounds bounds;
                                            const Plan plan = detail::solve_chunked(
                                                p, *source, detail::candidate_kinds(p, *source),
                                                &bounds);
                                            ++solves;
                                            BOOST_TEST(bounds.first_cap < layers);
                                            capped += bounds.capped ? 1 : 0;
                                            widened += bounds.widened ? 1 : 0;
                                            // The first cap left no plan and was doubled.
                                            doubled += bounds.builds > (bounds.widened ? 2u : 1u);
                                            BOOST_TEST(plan.iteration_time == optima.of(objective),
                                                       boost::test_tools::tolerance(1e-9));
                                            const std::string defect =
                                                check_plan(plan, p, ks, allowed);
                                            BOOST_TEST(defect.empty(), defect);
                                            // The search on the simulated makespan starts from it
                                            // (its tables cover every count).
                                            const Plan refined =
                                                ppb::partition::refine_by_simulation(p, *source,
                                                                                     plan, 3);
                                            BOOST_TEST(check_plan(refined, p, ks, allowed).empty());
                                        } catch (const Infeasible& e) {
                                            BOOST_TEST(!std::isfinite(optima.of(objective)),
                                                       e.what());
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(
        fmt::format("chunked, generous limits: {} instances ({} binding), {} solves, {} from "
                    "capped options, {} widened, {} with the first cap doubled",
                    instances, binding, solves, capped, widened, doubled));
    // The capped path is what was checked: most answers came from options capped below L, and
    // some needed the wider bound of a first plan's objective.
    BOOST_TEST(capped > solves / 2);
    BOOST_TEST(widened > 0u);
    BOOST_TEST(binding > 0u);
}

// Each stage's ways to hold its layers, for the simulated minimum: per count n, the chunk costs
// (forward, backward) of every mix that fits, kept when no other of the same n is no slower in
// every chunk's forward and backward (the simulated makespan never falls when an operation takes
// longer, so a dominated option never beats the one dominating it).
using ChunkCosts = std::vector<ppb::ChunkCost>;
std::vector<std::vector<ChunkCosts>> stage_costs(const Problem& p, const Coefficients& k,
                                                 std::uint32_t s, std::uint32_t allowed) {
    const std::uint32_t layers = p.time.body_layers;
    std::vector<std::vector<ChunkCosts>> by_count(layers + 1);
    std::vector<KindCounts> chunks(p.chunks);
    auto rec = [&](auto& self, std::uint32_t c, std::uint32_t used) -> void {
        if (c == p.chunks) {
            if (!ppb::partition::within_budget(stage_memory(k, p, s, chunks), p.budget_mb()))
                return;
            ChunkCosts costs;
            for (std::uint32_t i = 0; i < p.chunks; ++i) {
                const double f = chunk_forward(p, s, i, chunks[i]);
                costs.push_back(ppb::partition::chunk_cost(p, {&chunks[i], 1},
                                                           ppb::partition::chunk_ends(p, s, i), f,
                                                           chunk_time(p, s, i, chunks[i]) - f));
            }
            by_count[used].push_back(std::move(costs));
            return;
        }
        for (std::uint32_t n = min_layers(p, s, c); used + n <= layers; ++n) {
            pt::for_each_composition(n, allowed, [&](const KindCounts& mix) {
                if (!pt::oracle_expressible(mix, p.rule))
                    return;
                chunks[c] = mix;
                self(self, c + 1, used + n);
            });
        }
        chunks[c] = KindCounts{};
    };
    rec(rec, 0, 0);
    const auto no_slower = [](const ChunkCosts& a, const ChunkCosts& b) {
        for (std::size_t c = 0; c < a.size(); ++c) {
            // The zero-bubble schedules run B (backward less W) and W apart: each no slower.
            if (a[c].forward_time > b[c].forward_time || a[c].backward_time > b[c].backward_time ||
                a[c].weight_time > b[c].weight_time ||
                a[c].backward_time - a[c].weight_time > b[c].backward_time - b[c].weight_time)
                return false;
        }
        return true;
    };
    for (auto& list : by_count) {
        std::vector<ChunkCosts> kept;
        for (std::size_t i = 0; i < list.size(); ++i) {
            bool dominated = false;
            for (std::size_t j = 0; j < list.size() && !dominated; ++j) {
                dominated = j != i && no_slower(list[j], list[i]) &&
                            (!no_slower(list[i], list[j]) || j < i);
            }
            if (!dominated)
                kept.push_back(list[i]);
        }
        list = std::move(kept);
    }
    return by_count;
}

// The least simulated makespan over every plan that fits (infinity when none does), each plan
// timed through the simulator's dependency graph; `checked` plans also through ppb::simulate.
double least_simulated(const Problem& p, const Coefficients& k, std::uint32_t allowed,
                       std::size_t& checked) {
    std::vector<std::vector<std::vector<ChunkCosts>>> stages;
    for (std::uint32_t s = 0; s < p.num_stages; ++s)
        stages.push_back(stage_costs(p, k, s, allowed));
    const ppb::partition::detail::MakespanGraph graph(p.schedule, p.num_stages, p.chunks,
                                                      p.micro_batches, p.comm_time);
    double best = std::numeric_limits<double>::infinity();
    std::vector<ChunkCosts> plan(p.num_stages);
    auto rec = [&](auto& self, std::uint32_t s, std::uint32_t left) -> void {
        if (s == p.num_stages) {
            if (left != 0)
                return;
            const double makespan = graph.makespan(plan);
            if (checked % 7 == 0) {
                ppb::SimulationInput input;
                input.schedule = p.schedule;
                input.num_stages = p.num_stages;
                input.num_chunks = p.chunks;
                input.micro_batches = p.micro_batches;
                input.costs = plan;
                input.comm_time = p.comm_time;
                BOOST_TEST(ppb::simulate(input).makespan == makespan,
                           boost::test_tools::tolerance(1e-12));
            }
            ++checked;
            best = std::min(best, makespan);
            return;
        }
        const std::uint32_t fewest = p.num_stages == 1 ? left : 0;
        for (std::uint32_t n = fewest; n <= left; ++n) {
            for (const ChunkCosts& costs : stages[s][n]) {
                plan[s] = costs;
                self(self, s + 1, left - n);
            }
        }
    };
    rec(rec, 0, p.time.body_layers);
    return best;
}

// Times on a half-unit grid (forward 1, the ends fixed) and memory coefficients for a random
// instance of the lower-bound and fallback tests; the layer count and schedule are the caller's.
Coefficients random_times_and_memory(Problem& p, std::mt19937& rng) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    p.time.body_forward = 1.0;
    p.time.head_forward = 0.5;
    p.time.tail_forward = 1.0;
    for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
        p.time.body_time[kind] = 3.0 + std::round(6.0 * unit(rng)) / 2.0;
    p.time.head_time = 1.5;
    p.time.tail_time = 3.0;
    Coefficients k;
    k.c = 100.0 * unit(rng);
    k.h = 200.0 * unit(rng);
    k.t = 200.0 * unit(rng);
    k.per_layer = 10.0 + 40.0 * unit(rng);
    for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
        k.a[kind] = 40.0 * unit(rng) * (1.0 - 0.18 * kind);
    return k;
}

// The lower bound on the simulated iteration is at most the least simulated makespan of every
// plan that fits (enumerated: every spread over the positions and every mix), and the plan
// ppb partition makes (both estimates' optima, then the local search) lies between them.
BOOST_AUTO_TEST_CASE(lower_bound_is_at_most_every_plans_simulated_iteration) {
    const std::array<Case, 6> cases = {{{Schedule::interleaved, 2},
                                        {Schedule::interleaved_less_memory, 2},
                                        {Schedule::dualpipe_v, 2},
                                        {Schedule::interleaved, 3},
                                        {Schedule::zb_h1, 1},
                                        {Schedule::zb_v, 2}}};
    std::mt19937 rng(2027);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::size_t instances = 0, plans = 0, tight = 0, within = 0, seq = 0, optimal = 0;
    double worst_gap = 0.0;
    for (const Case& c : cases) {
        for (std::uint32_t stages = 2; stages <= 3; ++stages) {
            if (c.chunks == 3 && stages == 3)
                continue;  // too many mixes to enumerate in a test
            // From the fewest the positions take (every one but the first and last holds one).
            // (at least one: zb-h1 has one chunk).
            const std::uint32_t fewest = std::max(1u, stages * c.chunks - 2);
            for (std::uint32_t layers = fewest; layers <= fewest + (stages == 2 ? 4 : 2);
                 ++layers) {
                for (const std::uint32_t allowed : {0x11u, 0x13u}) {
                    ++seq;
                    Problem p;
                    p.schedule = c.schedule;
                    p.chunks = c.chunks;
                    p.num_stages = stages;
                    p.rule = seq % 2 ? RecomputeRule::mindformers : RecomputeRule::any;
                    p.micro_batches =
                        c.schedule == Schedule::dualpipe_v || c.schedule == Schedule::zb_v
                            ? 2 * stages + static_cast<std::uint32_t>(seq % 2)
                            : stages * (1 + static_cast<std::uint32_t>(seq % 2));
                    // Communication between stages: none, one time for every boundary, or one
                    // per boundary (the evaluator and the bound must hold with it too).
                    p.comm_time.clear();
                    if (seq % 3 == 1) {
                        p.comm_time = {0.7};
                    } else if (seq % 3 == 2) {
                        for (std::uint32_t b = 0; b < ppb::comm_boundaries(p.schedule, stages); ++b)
                            p.comm_time.push_back(0.25 + 0.5 * b);
                    }
                    p.weight_grad_share = seq % 2 ? 0.5 : 0.3;
                    p.kinds = allowed;
                    p.time.body_layers = layers;
                    const Coefficients k = random_times_and_memory(p, rng);
                    if (!ppb::schedule_shape_problem(p.schedule, p.num_stages, p.chunks,
                                                     p.micro_batches)
                             .empty())
                        continue;
                    const double spread = heaviest_stage_of_no_recompute(p, k);
                    for (const double scale : {1.2, 0.6}) {
                        p.memory_limit_mb = spread * scale;
                        const MemorySource linear = linear_source(k);
                        BOOST_TEST_CONTEXT(
                            fmt::format("{} v={} P={} L={} M={} kinds={:#x} limit={} comm={}",
                                        ppb::schedule_name(c.schedule), c.chunks, stages, layers,
                                        p.micro_batches, allowed, p.memory_limit_mb,
                                        fmt::join(p.comm_time, ","))) {
                            const double least = least_simulated(p, k, allowed, plans);
                            if (!std::isfinite(least))
                                continue;
                            ++instances;
                            Plan plan;
                            try {
                                plan = ppb::partition::solve(p, linear);
                            } catch (const Infeasible& e) {
                                BOOST_TEST(false, e.what());
                                continue;
                            }
                            const Plan refined =
                                ppb::partition::refine_by_simulation(p, linear, plan, 100);
                            const double made =
                                ppb::simulate(ppb::partition::simulation_input(p, refined))
                                    .makespan;
                            const double bound =
                                ppb::partition::simulated_lower_bound(p, linear, made);
                            BOOST_TEST(bound > 0.0);
                            BOOST_TEST(bound <= least * (1 + 1e-9), bound << " > " << least);
                            BOOST_TEST(made >= least * (1 - 1e-9));
                            optimal += made <= least * (1 + 1e-9) ? 1 : 0;
                            worst_gap = std::max(worst_gap, made / least - 1.0);
                            tight += bound >= least * (1 - 1e-6) ? 1 : 0;
                            within += bound >= least * 0.9 ? 1 : 0;
                        }
                    }
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(
        fmt::format("lower bound: {} instances, {} plans simulated, {} tight, {} within 10 %; "
                    "the local search's plan optimal in {}, at most {:.2f} % above the optimum",
                    instances, plans, tight, within, optimal, 100.0 * worst_gap));
    BOOST_TEST(instances > 40u);
    // Measured: optimal in 159 of the 162 instances, at most 5.7 % above (151 and 12.3 % before
    // the search moved single layers between chunks).
    BOOST_TEST(optimal >= 159u);
    BOOST_TEST(worst_gap <= 0.06);
}

// The least 'stages' objective over the plans of one recompute setting whose stages hold as many
// layers in each chunk as in every other, give or take one (Problem::balanced_chunks): every
// setting, every count per stage, every choice of the chunks holding one more.
double brute_force_balanced_one_setting(const Problem& p, const Coefficients& k,
                                        std::uint32_t allowed) {
    const std::uint32_t v = p.chunks;
    double best = std::numeric_limits<double>::infinity();
    for (const auto& setting :
         pt::allowed_settings(RecomputeRule::megatron, p.time.body_layers, allowed)) {
        // Per stage and count: (total, slowest) of every balanced split that fits.
        std::vector<std::vector<std::vector<std::pair<double, double>>>> options(p.num_stages);
        for (std::uint32_t s = 0; s < p.num_stages; ++s) {
            options[s].resize(p.time.body_layers + 1);
            for (std::uint32_t n = 0; n <= p.time.body_layers; ++n) {
                const std::uint32_t q = n / v;
                const std::uint32_t r = n % v;
                for (std::uint32_t more = 0; more < (1u << v); ++more) {
                    if (static_cast<std::uint32_t>(std::popcount(more)) != r)
                        continue;
                    std::vector<KindCounts> mixes;
                    bool possible = true;
                    double total = 0.0, slowest = 0.0;
                    for (std::uint32_t c = 0; c < v; ++c) {
                        const std::uint32_t count = q + ((more >> c) & 1u);
                        if (p.num_stages > 1 && count < min_layers(p, s, c))
                            possible = false;
                        mixes.push_back(pt::setting_mix(setting, count));
                        const double t = chunk_time(p, s, c, mixes.back());
                        total += t;
                        slowest = std::max(slowest, t);
                    }
                    if (possible &&
                        ppb::partition::within_budget(stage_memory(k, p, s, mixes), p.budget_mb()))
                        options[s][n].emplace_back(total, slowest);
                }
            }
        }
        const double m = p.micro_batches;
        auto rec = [&](auto& self, std::uint32_t s, std::uint32_t left, double max_total,
                       double sum_slowest, double max_slowest) -> void {
            if (s == p.num_stages) {
                if (left == 0)
                    best = std::min(best, m * max_total + sum_slowest - max_slowest);
                return;
            }
            for (std::uint32_t n = 0; n <= left; ++n) {
                for (const auto& [total, slowest] : options[s][n]) {
                    self(self, s + 1, left - n, std::max(max_total, total), sum_slowest + slowest,
                         std::max(max_slowest, slowest));
                }
            }
        };
        rec(rec, 0, p.time.body_layers, 0.0, 0.0, 0.0);
    }
    return best;
}

// A problem too large to plan exactly (here: no work allowed at all, so that small instances can
// be enumerated) is planned under one recompute setting with balanced chunks: the plan is that
// smaller problem's exact optimum, admitted by the problem's own rule, says why it is not the
// exact one, and its lower bound (the relaxed one: the tables cannot be built either) is at most
// the least simulated iteration of every plan of the problem.
// plan_with_memory solves one problem under both estimates with each stage's options built once
// (detail::ScopedChunkedStageOptions). A stage given again charges the exact attempt's budget
// what building it did, so the second estimate's plan is the one it gets alone: exact under the
// same budgets, too large to plan exactly (then the smaller problem's) under the same others.
BOOST_AUTO_TEST_CASE(options_built_once_plan_as_if_built_again) {
    namespace pd = ppb::partition::detail;
    std::mt19937 rng(2029);
    const std::array<pd::ExactWorkBudget, 5> budgets = {
        {{0, 0}, {30, 3'000}, {300, 30'000}, {3'000, 300'000}, pd::default_exact_work_budget}};
    std::size_t exact = 0, too_large = 0, instances = 0;
    for (const std::uint32_t chunks : {3u, 4u}) {
        for (std::uint32_t layers = 2 * chunks + 1; layers <= 2 * chunks + 5; ++layers) {
            Problem p;
            p.schedule = Schedule::interleaved;
            p.chunks = chunks;
            p.num_stages = 2;
            p.rule = layers % 2 ? RecomputeRule::mindformers : RecomputeRule::any;
            p.micro_batches = 4;
            p.kinds = 0x13u;
            p.time.body_layers = layers;
            const Coefficients k = random_times_and_memory(p, rng);
            p.memory_limit_mb = heaviest_stage_of_no_recompute(p, k) * 0.8;
            const MemorySource source = linear_source(k);
            Problem by_stages = p;
            by_stages.objective = ppb::partition::ChunkObjective::stages;
            Problem by_slots = p;
            by_slots.objective = ppb::partition::ChunkObjective::slots;
            // A plan's layout and iteration, or why there is none.
            const auto outcome = [&](const Problem& problem) -> std::string {
                try {
                    const Plan plan = ppb::partition::solve(problem, source);
                    std::string out =
                        fmt::format("{:.12g} [{}]", plan.iteration_time, plan.not_exact_because);
                    for (const auto& stage : plan.stages) {
                        for (const auto& chunk : stage.chunks)
                            out += fmt::format(" {}", fmt::join(chunk.layers, ","));
                    }
                    return out;
                } catch (const Infeasible& e) {
                    return std::string("infeasible: ") + e.what();
                }
            };
            for (const pd::ExactWorkBudget& budget : budgets) {
                BOOST_TEST_CONTEXT(fmt::format("v={} L={} budget={},{}", chunks, layers,
                                               budget.partial_options, budget.comparisons)) {
                    std::string alone;
                    {
                        const pd::ScopedExactWorkBudget b(budget);
                        alone = outcome(by_slots);
                    }
                    std::string after;
                    {
                        const pd::ScopedChunkedStageOptions built_once(source);
                        {
                            const pd::ScopedExactWorkBudget b(budget);
                            (void)outcome(by_stages);
                        }
                        const pd::ScopedExactWorkBudget b(budget);
                        after = outcome(by_slots);
                    }
                    BOOST_TEST(after == alone);
                    ++instances;
                    (alone.find("chunks per stage exactly") == std::string::npos ? exact
                                                                                 : too_large)++;
                }
            }
        }
    }
    // Both outcomes are met: the budgets straddle what these problems take.
    BOOST_TEST(exact > 0u);
    BOOST_TEST(too_large > 0u);
    BOOST_TEST_MESSAGE(
        fmt::format("{} instances: {} exact, {} too large", instances, exact, too_large));
}

BOOST_AUTO_TEST_CASE(too_large_problems_plan_one_setting_with_balanced_chunks) {
    const std::array<Case, 2> cases = {{{Schedule::interleaved, 3}, {Schedule::interleaved, 4}}};
    std::mt19937 rng(2028);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::size_t instances = 0, plans = 0, seq = 0, with_recompute = 0;
    for (const Case& c : cases) {
        for (std::uint32_t stages = 2; stages <= (c.chunks == 3 ? 3u : 2u); ++stages) {
            const std::uint32_t fewest = stages * c.chunks - 2;
            for (std::uint32_t layers = fewest + 1; layers <= fewest + (c.chunks == 3 ? 4 : 2);
                 ++layers) {
                for (const std::uint32_t allowed : {0x11u, 0x13u}) {
                    ++seq;
                    Problem p;
                    p.schedule = c.schedule;
                    p.chunks = c.chunks;
                    p.num_stages = stages;
                    p.rule = seq % 2 ? RecomputeRule::mindformers : RecomputeRule::any;
                    p.micro_batches = stages * (1 + static_cast<std::uint32_t>(seq % 2));
                    p.kinds = allowed;
                    p.time.body_layers = layers;
                    const Coefficients k = random_times_and_memory(p, rng);
                    p.time.body_time[PPB_KIND_NONE] = 3.0;
                    if (!ppb::schedule_shape_problem(p.schedule, p.num_stages, p.chunks,
                                                     p.micro_batches)
                             .empty())
                        continue;
                    const double spread = heaviest_stage_of_no_recompute(p, k);
                    for (const double scale : {1.2, 0.7, 0.5}) {
                        p.memory_limit_mb = spread * scale;
                        for (const MemorySource& source : {linear_source(k), probed_source(k)}) {
                            BOOST_TEST_CONTEXT(fmt::format(
                                "v={} P={} L={} M={} kinds={:#x} rule={} limit={} {}", c.chunks,
                                stages, layers, p.micro_batches, allowed,
                                p.rule == RecomputeRule::any ? "any" : "mindformers",
                                p.memory_limit_mb, source.linear ? "linear" : "probed")) {
                                const double expected =
                                    brute_force_balanced_one_setting(p, k, allowed);
                                const ppb::partition::detail::ScopedExactWorkBudget nothing(
                                    ppb::partition::detail::ExactWorkBudget{0, 0});
                                Plan plan;
                                try {
                                    plan = ppb::partition::solve(p, source);
                                } catch (const Infeasible&) {
                                    BOOST_TEST(!std::isfinite(expected));
                                    continue;
                                }
                                ++instances;
                                BOOST_TEST(plan.iteration_time == expected,
                                           boost::test_tools::tolerance(1e-9));
                                BOOST_TEST(!plan.not_exact_because.empty());
                                BOOST_TEST(plan.not_exact_because.find(
                                               "chunks per stage exactly") != std::string::npos);
                                BOOST_TEST(plan.balanced_chunks);
                                BOOST_TEST_REQUIRE(plan.recompute_setting.has_value());
                                with_recompute += plan.recompute_setting->method !=
                                                  ppb::partition::MegatronRecompute::Method::none;
                                const std::string defect = check_plan(plan, p, k, allowed);
                                BOOST_TEST(defect.empty(), defect);
                                for (const auto& stage : plan.stages) {
                                    std::uint32_t lo = layers, hi = 0;
                                    for (const auto& chunk : stage.chunks) {
                                        const std::uint32_t n = std::accumulate(
                                            chunk.layers.begin(), chunk.layers.end(), 0u);
                                        lo = std::min(lo, n);
                                        hi = std::max(hi, n);
                                    }
                                    BOOST_TEST(hi - lo <= 1u);
                                }
                                // The local search keeps to the smaller problem's plans.
                                const Plan refined =
                                    ppb::partition::refine_by_simulation(p, source, plan, 100);
                                BOOST_TEST(refined.balanced_chunks);
                                BOOST_TEST(check_plan(refined, p, k, allowed).empty());
                                const double made =
                                    ppb::simulate(ppb::partition::simulation_input(p, refined))
                                        .makespan;
                                const double bound =
                                    ppb::partition::simulated_lower_bound(p, source, made);
                                BOOST_TEST(bound > 0.0);
                                BOOST_TEST(bound <= made * (1 + 1e-9));
                                // Every plan enumerated where that stays quick (3 chunks over 2
                                // stages).
                                if (c.chunks == 3 && stages == 2) {
                                    const double least = least_simulated(p, k, allowed, plans);
                                    BOOST_TEST(bound <= least * (1 + 1e-9),
                                               bound << " > " << least);
                                    BOOST_TEST(made >= least * (1 - 1e-9));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(
        fmt::format("too large to plan exactly: {} instances, {} with recompute, "
                    "{} plans simulated",
                    instances, with_recompute, plans));
    BOOST_TEST(instances > 30u);
    BOOST_TEST(with_recompute > 5u);
}

// With two chunks nothing is combined nor charged: under a budget of nothing, every 2-chunk plan
// (interleaved, DualPipe-V; MindFormers' rule and Megatron's one setting, whose spread's least
// memory is the charge from 3 chunks on) is still the exact optimum, equal to the enumeration.
BOOST_AUTO_TEST_CASE(two_chunks_are_planned_exactly_whatever_the_budget) {
    std::mt19937 rng(2029);
    std::size_t instances = 0;
    for (const Schedule schedule : {Schedule::interleaved, Schedule::dualpipe_v}) {
        for (const RecomputeRule rule : {RecomputeRule::mindformers, RecomputeRule::megatron}) {
            for (std::uint32_t layers = 4; layers <= 8; ++layers) {
                Problem p;
                p.schedule = schedule;
                p.chunks = 2;
                p.num_stages = 2;
                p.rule = rule;
                p.micro_batches = 4;
                p.kinds = 0x11u;
                p.time.body_layers = layers;
                const Coefficients k = random_times_and_memory(p, rng);
                p.memory_limit_mb = 0.8 * heaviest_stage_of_no_recompute(p, k);
                const ppb::partition::detail::ScopedExactWorkBudget nothing(
                    ppb::partition::detail::ExactWorkBudget{0, 0});
                BOOST_TEST_CONTEXT(
                    fmt::format("{} L={} rule={}", ppb::schedule_name(schedule), layers,
                                rule == RecomputeRule::megatron ? "megatron" : "mindformers")) {
                    try {
                        const Plan plan = ppb::partition::solve(p, linear_source(k));
                        BOOST_TEST(plan.not_exact_because.empty(), plan.not_exact_because);
                        BOOST_TEST(!plan.balanced_chunks);
                        if (rule == RecomputeRule::mindformers) {
                            BOOST_TEST(plan.iteration_time == brute_force(p, k, 0x11u),
                                       boost::test_tools::tolerance(1e-9));
                        }
                        ++instances;
                    } catch (const Infeasible&) {
                    }
                }
            }
        }
    }
    BOOST_TEST(instances > 10u);
}

// Megatron-LM's default layout (L / (P v) body layers in every chunk, no recompute) is one of the
// plans plan_with_memory weighs: where it fits, the plan handed on never simulates slower, with or
// without the local search; where it does not, the plan still fits. (Without the candidate, the
// 4 stages of 10 one-layer chunks under the heaviest LM head fail: 198.8 against 197.2.)
BOOST_AUTO_TEST_CASE(no_plan_simulates_slower_than_megatrons_default_layout) {
    std::mt19937 rng(2031);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::size_t compared = 0, chosen = 0, tight = 0;
    for (const Case c :
         {Case{Schedule::interleaved, 2}, Case{Schedule::interleaved, 3},
          Case{Schedule::interleaved, 10}, Case{Schedule::interleaved_less_memory, 2},
          Case{Schedule::dualpipe_v, 2}}) {
        for (std::uint32_t stages = 2; stages <= 4; ++stages) {
            for (std::uint32_t per_chunk = 1; per_chunk <= (c.chunks > 3 ? 1u : 3u); ++per_chunk) {
                for (const RecomputeRule rule :
                     {RecomputeRule::mindformers, RecomputeRule::megatron}) {
                    Problem p;
                    p.schedule = c.schedule;
                    p.chunks = c.chunks;
                    p.num_stages = stages;
                    p.rule = rule;
                    p.micro_batches = 2 * stages;
                    p.kinds = 0x11u;  // none and full
                    p.time.body_layers = stages * c.chunks * per_chunk;
                    p.comm_time = {0.3};
                    const Coefficients k = random_times_and_memory(p, rng);
                    // An LM head and loss of up to 6 layers' work, as with a large vocabulary:
                    // where the estimates' optima empty the last chunk and the default does not.
                    p.time.tail_forward = 1.0 + std::round(10.0 * unit(rng)) / 2.0;
                    p.time.tail_time = 3.0 * p.time.tail_forward;
                    if (!ppb::schedule_shape_problem(p.schedule, p.num_stages, p.chunks,
                                                     p.micro_batches)
                             .empty())
                        continue;
                    // The default layout as the test builds it: its memory and simulated iteration.
                    Plan even;
                    double even_memory = 0.0;
                    for (std::uint32_t s = 0; s < stages; ++s) {
                        std::vector<KindCounts> mixes(c.chunks);
                        ppb::partition::StagePlan stage;
                        stage.stage = s;
                        for (std::uint32_t ch = 0; ch < c.chunks; ++ch) {
                            mixes[ch][PPB_KIND_NONE] = per_chunk;
                            const ppb::partition::ChunkEnds ends =
                                ppb::partition::chunk_ends(p, s, ch);
                            ppb::partition::ChunkPlan chunk;
                            chunk.chunk = ch;
                            chunk.layers = mixes[ch];
                            chunk.forward_time = per_chunk * p.time.body_forward +
                                                 (ends.head ? p.time.head_forward : 0.0) +
                                                 (ends.tail ? p.time.tail_forward : 0.0);
                            chunk.backward_time =
                                chunk_time(p, s, ch, mixes[ch]) - chunk.forward_time;
                            stage.chunks.push_back(chunk);
                        }
                        even.stages.push_back(stage);
                        even_memory = std::max(even_memory, stage_memory(k, p, s, mixes));
                    }
                    ppb::SimulationInput even_input = ppb::partition::simulation_input(p, even);
                    even_input.with_memory = false;
                    const double even_makespan = ppb::simulate(even_input).makespan;
                    // Under a limit it fits and under one it does not.
                    for (const double limit : {1.02 * even_memory, 0.9 * even_memory}) {
                        p.memory_limit_mb = limit;
                        const MemorySource source = linear_source(k);
                        for (const bool refine : {false, true}) {
                            BOOST_TEST_CONTEXT(fmt::format(
                                "{} v={} P={} L={} rule {} limit {:.1f} refine {}",
                                ppb::schedule_name(p.schedule), c.chunks, stages,
                                p.time.body_layers, static_cast<int>(rule), limit, refine)) {
                                ppb::partition::PlannedPartition planned;
                                try {
                                    planned = ppb::partition::plan_with_memory(
                                        p, source, {.refine = refine, .lower_bound = false});
                                } catch (const Infeasible&) {
                                    BOOST_TEST(limit < even_memory);
                                    continue;
                                }
                                BOOST_TEST(
                                    check_plan(planned.plan, planned.problem, k, p.kinds).empty());
                                if (limit < even_memory) {
                                    ++tight;
                                    continue;
                                }
                                ++compared;
                                BOOST_TEST(planned.simulation.makespan <=
                                           even_makespan * (1.0 + 1e-12));
                                bool same = true;
                                for (const auto& stage : planned.plan.stages) {
                                    for (const auto& chunk : stage.chunks)
                                        same = same && chunk.layers == stage.chunks[0].layers &&
                                               chunk.layers[PPB_KIND_NONE] == per_chunk;
                                }
                                chosen += !refine && same ? 1 : 0;
                            }
                        }
                    }
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(
        fmt::format("{} plans compared with the default layout, {} of them it "
                    "(without the local search); {} under a limit it exceeds",
                    compared, chosen, tight));
    // The default layout is sometimes the plan (where neither estimate's optimum is as fast), and
    // the limits bind.
    BOOST_TEST(chosen > 0u);
    BOOST_TEST(tight > 0u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace chunked_tests
