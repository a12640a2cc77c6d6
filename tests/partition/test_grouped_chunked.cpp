// Several groups of body layers with two chunks per stage (interleaved, dualpipe-v), proved
// against exhaustive enumeration: every cut of the layer sequence into 2P contiguous ranges in
// the schedule's position order (written out here from the schedules' definitions), in every
// (stage, chunk) every mix the rule admits (any: every count of each kind in each group;
// mindformers: MindFormers' counts applied by position within the chunk), each stage's memory the
// most it holds at any moment of its order (ppb::stage_order executed step by step), and the
// documented objectives. Through a linear source and through a probed one.
#include "brute_force.hpp"

#include <ppb/errors.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>
#include <ppb/simulator.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::Schedule;
using ppb::partition::ChunkObjective;
using ppb::partition::Infeasible;
using ppb::partition::KindCounts;
using ppb::partition::MegatronRecompute;
using ppb::partition::MemorySource;
using ppb::partition::Plan;
using ppb::partition::Problem;
using ppb::partition::RecomputeRule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace grouped_chunked_tests {

namespace {

constexpr std::size_t K = PPB_KIND_COUNT;
using Mix = std::vector<KindCounts>;  // [group]

struct Instance {
    Problem problem;
    std::vector<ppb_linear_parameters> c;  // per group; const, head and tail from group 0
    bool probed = false;                   // planned through predictions, not coefficients
    std::string text;
    // For the enumeration under one recompute setting per run (RecomputeRule::megatron,
    // torchtitan): the setting every chunk follows.
    std::optional<MegatronRecompute> setting = std::nullopt;
};

// Position q's (stage, chunk), from the schedules' definitions (zb-v runs the V of dualpipe-v).
std::pair<std::uint32_t, std::uint32_t> stage_chunk(const Problem& p, std::uint32_t q) {
    const std::uint32_t P = p.num_stages;
    if (p.schedule == Schedule::dualpipe_v || p.schedule == Schedule::zb_v)
        return q < P ? std::pair{q, 0u} : std::pair{2 * P - 1 - q, 1u};
    return {q % P, q / P};
}

// The positions of the layer sequence: v per stage.
std::uint32_t positions(const Problem& p) {
    return p.chunks * p.num_stages;
}

// The stage holding the first position holds the embedding; the one holding the last, the head.
// chunks[c]: chunk c's mix, for every chunk of the stage.
double stage_memory(const Instance& in, std::uint32_t s, const std::vector<Mix>& chunks) {
    const Problem& p = in.problem;
    const std::uint32_t tail_stage = stage_chunk(p, positions(p) - 1).first;
    double peak = -pt::infinity;
    for (const auto& f : pt::executed_states(p, s)) {
        double m = in.c[0].const_mb + (s == 0 ? in.c[0].head_mb : 0.0) +
                   (s == tail_stage ? in.c[0].tail_mb : 0.0);
        for (std::size_t c = 0; c < chunks.size(); ++c) {
            for (std::size_t g = 0; g < in.c.size(); ++g) {
                for (std::size_t k = 0; k < K; ++k) {
                    m += chunks[c][g][k] * (in.c[g].per_layer_mb + in.c[g].activation_mb[k] * f[c]);
                }
            }
        }
        peak = std::max(peak, m);
    }
    return peak;
}

double chunk_time(const Instance& in, std::uint32_t q, const Mix& mix) {
    const Problem& p = in.problem;
    double t = (q == 0 ? p.time.head_time : 0.0) + (q + 1 == positions(p) ? p.time.tail_time : 0.0);
    for (std::size_t g = 0; g < mix.size(); ++g) {
        for (std::size_t k = 0; k < K; ++k)
            t += mix[g][k] * p.time.groups[g].time[k];
    }
    return t;
}

bool allowed(const Instance& in, std::size_t g, std::size_t k) {
    return (in.problem.kinds & PPB_KIND_BIT(k)) != 0 &&
           (in.c[g].identified & PPB_PARAM_ACTIVATION(k)) != 0;
}

// Every mix of layers [a, b) the rule admits.
std::vector<Mix> mixes(const Instance& in, std::uint32_t a, std::uint32_t b) {
    const std::size_t G = in.c.size();
    const auto& seq = in.problem.time.sequence;
    std::vector<Mix> out;
    const std::uint32_t n = b - a;
    if (in.setting) {
        // The setting's one mix, layer by layer.
        Mix mix(G, KindCounts{});
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::size_t kind = pt::setting_kind_at(*in.setting, i);
            if (!allowed(in, seq[a + i], kind))
                return out;
            ++mix[seq[a + i]][kind];
        }
        out.push_back(mix);
        return out;
    }
    if (in.problem.rule == RecomputeRule::mindformers) {
        for (std::uint32_t r = 0; r <= n; ++r) {
            for (std::uint32_t sel = r; sel <= n; ++sel) {
                for (std::uint32_t comm = r; comm <= n; ++comm) {
                    Mix mix(G, KindCounts{});
                    bool ok = true;
                    for (std::uint32_t i = 0; i < n && ok; ++i) {
                        const std::size_t kind = i < r                     ? PPB_KIND_FULL
                                                 : i < std::min(sel, comm) ? PPB_KIND_BOTH
                                                 : i < sel                 ? PPB_KIND_SELECT
                                                 : i < comm                ? PPB_KIND_COMM
                                                                           : PPB_KIND_NONE;
                        ok = allowed(in, seq[a + i], kind);
                        ++mix[seq[a + i]][kind];
                    }
                    if (ok)
                        out.push_back(mix);
                }
            }
        }
        return out;
    }
    // Layer by layer, every allowed kind (mixes repeat; they are equal, which is harmless).
    out.push_back(Mix(G, KindCounts{}));
    for (std::uint32_t i = a; i < b; ++i) {
        std::vector<Mix> next;
        std::map<Mix, bool> seen;
        for (const Mix& m : out) {
            for (std::size_t k = 0; k < K; ++k) {
                if (!allowed(in, seq[i], k))
                    continue;
                Mix q = m;
                ++q[seq[i]][k];
                if (seen.emplace(q, true).second)
                    next.push_back(q);
            }
        }
        out = std::move(next);
    }
    return out;
}

struct Outcome {
    double total;
    double slowest;
};

// The least objective over every cut and every stage's mixes, or infinity.
double oracle(const Instance& in) {
    const Problem& p = in.problem;
    const std::uint32_t P = p.num_stages;
    const std::uint32_t L = p.time.body_layers;
    const std::uint32_t Q = 2 * P;
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>,
             std::vector<Outcome>>
        memo;
    // A stage's outcomes holding [a0, b0) in chunk 0 and [a1, b1) in chunk 1 (Pareto in both).
    const auto outcomes = [&](std::uint32_t s, std::uint32_t a0, std::uint32_t b0, std::uint32_t a1,
                              std::uint32_t b1) -> const std::vector<Outcome>& {
        auto [it, added] = memo.try_emplace({s, a0, b0, a1, b1});
        if (!added)
            return it->second;
        std::uint32_t q0 = 0, q1 = 0;
        for (std::uint32_t q = 0; q < Q; ++q) {
            const auto [stage, chunk] = stage_chunk(p, q);
            if (stage == s)
                (chunk == 0 ? q0 : q1) = q;
        }
        std::vector<Outcome> all;
        const auto first = mixes(in, a0, b0);
        const auto second = mixes(in, a1, b1);
        for (const Mix& m0 : first) {
            for (const Mix& m1 : second) {
                if (!pt::fits_budget(stage_memory(in, s, {m0, m1}), p.budget_mb()))
                    continue;
                const double t0 = chunk_time(in, q0, m0);
                const double t1 = chunk_time(in, q1, m1);
                all.push_back({t0 + t1, std::max(t0, t1)});
            }
        }
        std::sort(all.begin(), all.end(), [](const Outcome& x, const Outcome& y) {
            return x.total != y.total ? x.total < y.total : x.slowest < y.slowest;
        });
        for (const Outcome& o : all) {
            if (it->second.empty() || o.slowest < it->second.back().slowest)
                it->second.push_back(o);
        }
        return it->second;
    };
    double best = pt::infinity;
    pt::for_each_cut(Q, L, [&](const std::vector<std::uint32_t>& cut) {
        std::vector<const std::vector<Outcome>*> lists;
        for (std::uint32_t s = 0; s < P; ++s) {
            std::uint32_t q0 = 0, q1 = 0;
            for (std::uint32_t q = 0; q < Q; ++q) {
                const auto [stage, chunk] = stage_chunk(p, q);
                if (stage == s)
                    (chunk == 0 ? q0 : q1) = q;
            }
            const auto& list = outcomes(s, cut[q0], cut[q0 + 1], cut[q1], cut[q1 + 1]);
            if (list.empty())
                return;
            lists.push_back(&list);
        }
        std::vector<std::size_t> index(P, 0);
        while (true) {
            std::vector<std::vector<double>> times;
            for (std::uint32_t s = 0; s < P; ++s) {
                const Outcome& o = (*lists[s])[index[s]];
                // Two chunk times with this total and slowest chunk.
                times.push_back({o.slowest, o.total - o.slowest});
            }
            best = std::min(
                best, ppb::partition::schedule_iteration_time(times, p.micro_batches, p.objective));
            std::uint32_t s = 0;
            while (s < P && ++index[s] == lists[s]->size())
                index[s++] = 0;
            if (s == P)
                break;
        }
    });
    return best;
}

// The smallest budget some plan fits: the least over cuts of the largest over stages of the least
// peak over the stage's mixes (whatever their times).
double least_feasible_budget(const Instance& in) {
    const Problem& p = in.problem;
    const std::uint32_t P = p.num_stages;
    const std::uint32_t L = p.time.body_layers;
    const std::uint32_t Q = 2 * P;
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>,
             double>
        memo;
    const auto least_peak = [&](std::uint32_t s, std::uint32_t a0, std::uint32_t b0,
                                std::uint32_t a1, std::uint32_t b1) {
        auto [it, added] = memo.try_emplace({s, a0, b0, a1, b1}, pt::infinity);
        if (added) {
            for (const Mix& m0 : mixes(in, a0, b0)) {
                for (const Mix& m1 : mixes(in, a1, b1))
                    it->second = std::min(it->second, stage_memory(in, s, {m0, m1}));
            }
        }
        return it->second;
    };
    double best = pt::infinity;
    pt::for_each_cut(Q, L, [&](const std::vector<std::uint32_t>& cut) {
        double most = -pt::infinity;
        for (std::uint32_t s = 0; s < P; ++s) {
            std::uint32_t q0 = 0, q1 = 0;
            for (std::uint32_t r = 0; r < Q; ++r) {
                const auto [stage, chunk] = stage_chunk(p, r);
                if (stage == s)
                    (chunk == 0 ? q0 : q1) = r;
            }
            most = std::max(most, least_peak(s, cut[q0], cut[q0 + 1], cut[q1], cut[q1 + 1]));
        }
        best = std::min(best, most);
    });
    return best;
}

// `bounded` false: two chunks, interleaved or dualpipe-v, P 2 or 3 (planned exactly). True: what
// is planned through one group that bounds the groups: interleaved with 3 or 4 chunks, zb-v or
// zb-h1, P = 2, one or two kinds, so that the enumeration of every plan, each simulated, stays
// small.
Instance random_instance(std::mt19937& rng, bool bounded = false) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    Instance in;
    Problem& p = in.problem;
    p.num_stages = bounded ? 2 : pt::int_in(rng, 2, 3);
    if (bounded) {
        const std::uint32_t shape = pt::int_in(rng, 0, 3);
        p.schedule = shape < 2    ? Schedule::interleaved
                     : shape == 2 ? Schedule::zb_v
                                  : Schedule::zb_h1;
        p.chunks = shape < 2 ? 3 + shape : shape == 2 ? 2 : 1;
    } else {
        p.schedule = unit(rng) < 0.5 ? Schedule::dualpipe_v : Schedule::interleaved;
        p.chunks = 2;
    }
    const std::uint32_t chunks = p.chunks;
    p.micro_batches = p.schedule == Schedule::interleaved ? p.num_stages * pt::int_in(rng, 1, 2)
                      : p.schedule == Schedule::zb_h1     ? p.num_stages + pt::int_in(rng, 0, 2)
                                                      : 2 * p.num_stages + pt::int_in(rng, 0, 2);
    p.rule = unit(rng) < 0.5 ? RecomputeRule::any : RecomputeRule::mindformers;
    p.objective = unit(rng) < 0.5 ? ChunkObjective::stages : ChunkObjective::slots;
    const std::size_t G = pt::int_in(rng, 2, 3);
    const std::uint32_t L = chunks == 2 ? pt::int_in(rng, 2 * p.num_stages - 1,
                                                     2 * p.num_stages + (p.num_stages == 2 ? 3 : 1))
                                        : pt::int_in(rng, positions(p) - 1, positions(p) + 1);
    const int shape = static_cast<int>(pt::int_in(rng, 0, 2));  // blocks, alternating, random
    for (std::uint32_t i = 0; i < L; ++i) {
        std::uint32_t g = 0;
        if (shape == 0)
            g = static_cast<std::uint32_t>(i * G / L);
        else if (shape == 1)
            g = static_cast<std::uint32_t>(i % G);
        else
            g = pt::int_in(rng, 0, static_cast<std::uint32_t>(G - 1));
        p.time.sequence.push_back(g);
    }
    // Two or three kinds (one or two when bounded), so that the enumeration stays small.
    const int fewest = bounded ? 1 : 2;
    const int most = bounded ? 2 : 3;
    std::uint32_t mask = 0;
    while (__builtin_popcount(mask) < fewest || __builtin_popcount(mask) > most)
        mask = pt::int_in(rng, 0, PPB_ALL_KINDS);
    p.kinds = mask;
    p.time.head_time = 1.0 + 3.0 * unit(rng);
    p.time.tail_time = 1.0 + 3.0 * unit(rng);
    p.time.head_forward = p.time.head_time / 3.0;
    p.time.tail_forward = p.time.tail_time / 3.0;
    p.time.body_layers = L;
    for (std::size_t g = 0; g < G; ++g) {
        ppb::partition::BodyGroupTime group;
        group.name = fmt::format("g{}", g);
        const double base = 1.0 + 4.0 * unit(rng);
        group.forward = base / 3.0;
        double rise = 0.0;
        for (std::size_t k = 0; k < K; ++k) {
            rise += 0.3 * unit(rng) * (k == 0 ? 0.0 : 1.0);
            group.time[k] = pt::sixty_fourths(base * (1.0 + rise));
        }
        p.time.groups.push_back(group);
        ppb_linear_parameters c{};
        c.struct_size = sizeof(c);
        c.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
        c.const_mb = 100.0;
        c.head_mb = pt::sixty_fourths(40.0 + 40.0 * unit(rng));
        c.tail_mb = pt::sixty_fourths(40.0 + 40.0 * unit(rng));
        c.per_layer_mb = pt::sixty_fourths(10.0 + 30.0 * unit(rng));
        double activation = 20.0 + 30.0 * unit(rng);
        for (std::size_t k = 0; k < K; ++k) {
            c.activation_mb[k] = pt::sixty_fourths(activation);
            activation *= 0.4 + 0.5 * unit(rng);
            c.identified |= PPB_PARAM_ACTIVATION(k);
        }
        in.c.push_back(c);
    }
    for (auto& c : in.c) {
        c.const_mb = in.c[0].const_mb;
        c.head_mb = in.c[0].head_mb;
        c.tail_mb = in.c[0].tail_mb;
    }
    for (const std::uint32_t g : p.time.sequence)
        ++p.time.groups[g].layers;
    p.time.body_time = p.time.groups[0].time;
    p.time.body_forward = p.time.groups[0].forward;
    // A limit from loose to tight: the fullest stage's activations at every layer 'none'.
    const double full = 100.0 + 80.0 + L * (40.0 + 50.0 * p.micro_batches) / p.num_stages;
    p.memory_limit_mb = 150.0 + (full - 150.0) * (0.15 + 1.0 * unit(rng));
    in.text = fmt::format(
        "P={} v={} M={} L={} G={} shape={} kinds={:#x} limit={:.3f} {} rule={} {}", p.num_stages,
        p.chunks, p.micro_batches, L, G, shape, mask, p.memory_limit_mb,
        ppb::schedule_name(p.schedule), p.rule == RecomputeRule::any ? "any" : "mindformers",
        p.objective == ChunkObjective::stages ? "stages" : "slots");
    return in;
}

MemorySource linear_source(const Instance& in) {
    MemorySource memory;
    memory.group_linear = in.c;
    return memory;
}

// The same model known only by its predictions, asked through the plugin contract: the
// embedding on stage 0 and the LM head on stage num_stages - 1 of the placement as the host
// describes it (ppb::abi_stage).
MemorySource probed_source(const Instance& in) {
    MemorySource memory;
    memory.predict_grouped_batch = [in](std::span<const ppb_grouped_placement> batch) {
        std::vector<double> out;
        for (const auto& gp : batch) {
            const ppb_placement& pl = gp.placement;
            double m = in.c[0].const_mb + (pl.stage == 0 ? in.c[0].head_mb : 0.0) +
                       (pl.stage + 1 == pl.num_stages ? in.c[0].tail_mb : 0.0);
            for (std::uint32_t c = 0; c < pl.num_chunks; ++c) {
                BOOST_TEST_REQUIRE(pl.chunks[c].in_flight >= 1u);
                for (std::uint32_t g = 0; g < gp.num_groups; ++g) {
                    for (std::size_t k = 0; k < K; ++k) {
                        const double n = gp.group_layers[(c * gp.num_groups + g) * K + k];
                        m += n * (in.c[g].per_layer_mb +
                                  in.c[g].activation_mb[k] * pl.chunks[c].in_flight);
                    }
                }
            }
            out.push_back(m);
        }
        return out;
    };
    return memory;
}

// The plan's chunks are contiguous in position order and cover the sequence, each chunk's groups
// are its range's, its memory is the enumeration's, its estimate is its own.
void check_plan(const Instance& in, const Plan& plan) {
    const Problem& p = in.problem;
    BOOST_TEST_REQUIRE(plan.stages.size() == p.num_stages);
    std::uint32_t next = 0;
    std::vector<std::vector<double>> times(p.num_stages);
    for (std::uint32_t q = 0; q < positions(p); ++q) {
        const auto [s, c] = stage_chunk(p, q);
        const auto& chunk = plan.stages[s].chunks.at(c);
        BOOST_TEST(chunk.first_layer == next, in.text << " position " << q);
        std::uint32_t n = 0;
        std::vector<std::uint32_t> in_range(in.c.size(), 0);
        for (std::size_t g = 0; g < in.c.size(); ++g) {
            for (std::size_t k = 0; k < K; ++k) {
                n += chunk.group_layers.at(g)[k];
                if (chunk.group_layers[g][k] != 0)
                    BOOST_TEST(allowed(in, g, k), in.text);
            }
        }
        for (std::uint32_t i = next; i < next + n; ++i)
            ++in_range.at(p.time.sequence.at(i));
        for (std::size_t g = 0; g < in.c.size(); ++g) {
            std::uint32_t held = 0;
            for (std::size_t k = 0; k < K; ++k)
                held += chunk.group_layers[g][k];
            BOOST_TEST(held == in_range[g], in.text);
        }
        if (p.rule == RecomputeRule::megatron || p.rule == RecomputeRule::torchtitan) {
            // One setting for every chunk, its 'full' layers first (the groups by position).
            BOOST_TEST_REQUIRE(plan.recompute_setting.has_value(), in.text);
            BOOST_TEST((chunk.layers == pt::setting_mix(*plan.recompute_setting, n)),
                       in.text << " " << ppb::partition::describe(*plan.recompute_setting)
                               << " n=" << n << " none=" << chunk.layers[0]
                               << " sel=" << chunk.layers[1] << " full=" << chunk.layers[4]);
            Instance one = in;
            one.setting = plan.recompute_setting;
            const std::vector<Mix> only = mixes(one, next, next + n);
            BOOST_TEST_REQUIRE(only.size() == 1u, in.text);
            BOOST_TEST((only.front() == chunk.group_layers), in.text);
        }
        if (p.rule == RecomputeRule::mindformers) {
            const auto counts = ppb::partition::mindformers_counts(chunk.layers);
            BOOST_TEST_REQUIRE(counts.has_value(), in.text);
            BOOST_TEST((ppb::partition::positional_group_layers(p, next, n, *counts) ==
                        chunk.group_layers),
                       in.text);
        }
        BOOST_TEST(pt::close(chunk_time(in, q, chunk.group_layers), chunk.time()), in.text);
        next += n;
    }
    BOOST_TEST(next == p.time.body_layers, in.text);
    for (const auto& stage : plan.stages) {
        BOOST_TEST_REQUIRE(stage.chunks.size() == p.chunks);
        std::vector<Mix> chunks;
        for (const auto& chunk : stage.chunks) {
            chunks.push_back(chunk.group_layers);
            times[stage.stage].push_back(chunk.time());
        }
        const double m = stage_memory(in, stage.stage, chunks);
        BOOST_TEST(pt::close(m, stage.memory_mb), in.text << " stage " << stage.stage);
        BOOST_TEST(pt::fits_budget(m, p.budget_mb()), in.text);
    }
    BOOST_TEST(
        pt::close(ppb::partition::schedule_iteration_time(times, p.micro_batches, p.objective),
                  plan.iteration_time),
        in.text);
}

void prove(std::uint32_t seed, int count, bool probed) {
    std::mt19937 rng(seed);
    int solved = 0;
    int infeasible = 0;
    int exact_limits = 0;
    for (int i = 0; i < count; ++i) {
        Instance in = random_instance(rng);
        in.probed = probed;
        const double best = oracle(in);
        try {
            const Plan plan =
                ppb::partition::solve(in.problem, probed ? probed_source(in) : linear_source(in));
            BOOST_TEST_REQUIRE(std::isfinite(best), in.text << ": the enumeration finds no plan");
            check_plan(in, plan);
            BOOST_TEST(pt::close(plan.iteration_time, best),
                       in.text << ": " << plan.iteration_time << " vs " << best);
            ++solved;
        } catch (const Infeasible& e) {
            BOOST_TEST(!std::isfinite(best), in.text << ": infeasible but the best is " << best);
            ++infeasible;
            // The smallest feasible limit: the enumeration's when the message says so, else a
            // limit below which nothing fits.
            const double least = least_feasible_budget(in) + in.problem.memory_margin_mb;
            const std::string message = e.what();
            if (message.find("the smallest memory limit that would be feasible is") !=
                std::string::npos) {
                BOOST_TEST(pt::close(e.smallest_feasible_limit_mb(), least, 1e-9),
                           in.text << ": " << message << " vs " << least);
                ++exact_limits;
            } else {
                BOOST_TEST(message.find("no memory limit below") != std::string::npos, message);
                BOOST_TEST(e.smallest_feasible_limit_mb() <= least * (1.0 + 1e-9),
                           in.text << ": " << message << " vs " << least);
            }
        }
    }
    BOOST_TEST_MESSAGE(fmt::format("{} solved, {} infeasible ({} with the exact smallest limit)",
                                   solved, infeasible, exact_limits));
    BOOST_TEST(solved > count / 2);
    BOOST_TEST(infeasible > 0);
    BOOST_TEST(exact_limits > 0);
}

// ---- more than two chunks: planned through one group that bounds them --------------------

// What every plan of an instance with any number of chunks reaches, by enumeration: every cut of
// the sequence into v P ranges in position order, every mix of each range, each plan whose stages
// all fit simulated by ppb::simulate (whose makespan the partitioner's bound is about).
struct Reached {
    double simulated = pt::infinity;     // the least simulated iteration of a plan that fits
    double least_budget = pt::infinity;  // the least budget some plan fits
    long plans = 0;                      // plans that fit
};

// The plan of a cut and a mix per position, as the simulator takes it.
Plan plan_of_cut(const Instance& in, const std::vector<std::uint32_t>& cut,
                 const std::vector<const Mix*>& mix) {
    const Problem& p = in.problem;
    Plan plan;
    plan.stages.resize(p.num_stages);
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        plan.stages[s].stage = s;
        plan.stages[s].chunks.resize(p.chunks);
    }
    for (std::uint32_t q = 0; q < positions(p); ++q) {
        const auto [s, c] = stage_chunk(p, q);
        auto& chunk = plan.stages[s].chunks[c];
        chunk.chunk = c;
        chunk.first_layer = cut[q];
        chunk.group_layers = *mix[q];
        chunk.forward_time = (q == 0 ? p.time.head_forward : 0.0) +
                             (q + 1 == positions(p) ? p.time.tail_forward : 0.0);
        for (std::size_t g = 0; g < mix[q]->size(); ++g) {
            for (std::size_t k = 0; k < K; ++k) {
                chunk.layers[k] += (*mix[q])[g][k];
                chunk.forward_time += (*mix[q])[g][k] * p.time.groups[g].forward;
            }
        }
        chunk.backward_time = chunk_time(in, q, *mix[q]) - chunk.forward_time;
    }
    return plan;
}

Reached reached(const Instance& in) {
    const Problem& p = in.problem;
    const std::uint32_t P = p.num_stages;
    const std::uint32_t L = p.time.body_layers;
    const std::uint32_t Q = positions(p);
    Reached out;
    pt::for_each_cut(Q, L, [&](const std::vector<std::uint32_t>& cut) {
        std::vector<std::vector<Mix>> range(Q);
        for (std::uint32_t q = 0; q < Q; ++q) {
            range[q] = mixes(in, cut[q], cut[q + 1]);
            if (range[q].empty())
                return;  // a range no admitted mix fills (a kind its groups may not take)
        }
        // Per stage, every choice of its chunks' mixes that fits; and its least peak.
        std::vector<std::vector<std::vector<const Mix*>>> fitting(P);  // [s][choice][c]
        double fullest = -pt::infinity;
        for (std::uint32_t s = 0; s < P; ++s) {
            std::vector<std::uint32_t> at(p.chunks);
            for (std::uint32_t q = 0; q < Q; ++q) {
                const auto [stage, chunk] = stage_chunk(p, q);
                if (stage == s)
                    at[chunk] = q;
            }
            double least = pt::infinity;
            std::vector<std::size_t> index(p.chunks, 0);
            while (true) {
                std::vector<Mix> chunks;
                std::vector<const Mix*> choice;
                for (std::uint32_t c = 0; c < p.chunks; ++c) {
                    chunks.push_back(range[at[c]][index[c]]);
                    choice.push_back(&range[at[c]][index[c]]);
                }
                const double m = stage_memory(in, s, chunks);
                least = std::min(least, m);
                if (pt::fits_budget(m, p.budget_mb()))
                    fitting[s].push_back(choice);
                std::uint32_t c = 0;
                while (c < p.chunks && ++index[c] == range[at[c]].size())
                    index[c++] = 0;
                if (c == p.chunks)
                    break;
            }
            fullest = std::max(fullest, least);
        }
        out.least_budget = std::min(out.least_budget, fullest);
        for (std::uint32_t s = 0; s < P; ++s) {
            if (fitting[s].empty())
                return;
        }
        std::vector<std::size_t> index(P, 0);
        std::vector<const Mix*> mix(Q);
        while (true) {
            for (std::uint32_t q = 0; q < Q; ++q) {
                const auto [s, c] = stage_chunk(p, q);
                mix[q] = fitting[s][index[s]][c];
            }
            ppb::SimulationInput input =
                ppb::partition::simulation_input(p, plan_of_cut(in, cut, mix));
            input.with_memory = false;
            out.simulated = std::min(out.simulated, ppb::simulate(input).makespan);
            ++out.plans;
            std::uint32_t s = 0;
            while (s < P && ++index[s] == fitting[s].size())
                index[s++] = 0;
            if (s == P)
                break;
        }
    });
    return out;
}

// What every plan reaches under one setting per run: the least over the rule's settings.
Reached reached_by_setting(const Instance& in) {
    Reached out;
    for (const MegatronRecompute& setting :
         pt::oracle_settings(in.problem.rule, in.problem.time.body_layers)) {
        Instance one = in;
        one.setting = setting;
        const Reached r = reached(one);
        out.simulated = std::min(out.simulated, r.simulated);
        out.least_budget = std::min(out.least_budget, r.least_budget);
        out.plans += r.plans;
    }
    return out;
}

// With more than two chunks the plan is not exact but bounded: it fits (every stage's memory the
// enumeration's, per group), its groups and times are its ranges', its simulated iteration is no
// better than the best any plan reaches, and its proven bound is no worse. When nothing fits the
// envelope, the limit it names is one at which a plan exists and is planned, and the limit below
// which it says nothing fits is one below which the enumeration finds nothing.
// `one_setting`: the instances take Megatron-LM's or torchtitan's rule (one recompute setting
// per run, planned through one group with two chunks too), with 'none' and 'full' or 'select'.
void prove_bounded(std::uint32_t seed, int count, bool probed, bool one_setting = false) {
    std::mt19937 rng(seed);
    int solved = 0;
    int optimal = 0;
    int infeasible = 0;
    int missed = 0;  // the enumeration finds a plan that fits, the envelope none
    double worst = 0.0;
    double worst_bound = 0.0;
    for (int i = 0; i < count; ++i) {
        Instance in = random_instance(rng, true);
        in.probed = probed;
        if (one_setting) {
            in.problem.rule =
                pt::int_in(rng, 0, 1) == 0 ? RecomputeRule::megatron : RecomputeRule::torchtitan;
            in.problem.kinds =
                PPB_KIND_BIT(PPB_KIND_NONE) |
                PPB_KIND_BIT(pt::int_in(rng, 0, 1) == 0 ? PPB_KIND_FULL : PPB_KIND_SELECT);
            // Two chunks too: half the zb-v instances run dualpipe-v (the same V), which the
            // exact planner would weigh every mix for.
            if (in.problem.schedule == Schedule::zb_v && pt::int_in(rng, 0, 1) == 0)
                in.problem.schedule = Schedule::dualpipe_v;
            in.text += in.problem.rule == RecomputeRule::megatron ? " megatron" : " torchtitan";
        }
        const MemorySource memory = probed ? probed_source(in) : linear_source(in);
        const Reached best = one_setting ? reached_by_setting(in) : reached(in);
        try {
            const ppb::partition::PlannedPartition planned =
                ppb::partition::plan_with_memory(in.problem, memory);
            BOOST_TEST_REQUIRE(std::isfinite(best.simulated),
                               in.text << ": the enumeration finds no plan");
            Instance as_planned = in;
            as_planned.problem.objective = planned.problem.objective;
            check_plan(as_planned, planned.plan);
            BOOST_TEST(!planned.plan.not_exact_because.empty(), in.text);
            BOOST_TEST_REQUIRE(planned.lower_bound.has_value(), in.text);
            const double makespan = planned.simulation.makespan;
            BOOST_TEST(*planned.lower_bound <= best.simulated * (1.0 + 1e-9),
                       in.text << ": bound " << *planned.lower_bound << " vs " << best.simulated);
            BOOST_TEST(best.simulated <= makespan * (1.0 + 1e-9),
                       in.text << ": " << makespan << " vs " << best.simulated);
            worst = std::max(worst, makespan / best.simulated - 1.0);
            worst_bound = std::max(worst_bound, 1.0 - *planned.lower_bound / best.simulated);
            optimal += pt::close(makespan, best.simulated) ? 1 : 0;
            ++solved;
        } catch (const Infeasible& e) {
            ++infeasible;
            const double margin = in.problem.memory_margin_mb;
            const double at = e.smallest_feasible_limit_mb();
            if (std::isfinite(best.simulated))
                ++missed;
            const std::string message = e.what();
            const bool feasible_named =
                message.find("a memory limit that would be feasible is") != std::string::npos;
            BOOST_TEST(
                (feasible_named || message.find("no memory limit below") != std::string::npos),
                message);
            // A limit named feasible is at least the least any plan fits, and is planned; one
            // named a bound is at most it.
            if (feasible_named) {
                BOOST_TEST(at >= (best.least_budget + margin) * (1.0 - 1e-9),
                           in.text << ": " << message << " vs " << best.least_budget);
            } else {
                BOOST_TEST(at <= (best.least_budget + margin) * (1.0 + 1e-9),
                           in.text << ": " << message << " vs " << best.least_budget);
            }
            if (feasible_named) {
                Instance looser = in;
                looser.problem.memory_limit_mb = at;
                const Plan plan = ppb::partition::solve(
                    looser.problem, probed ? probed_source(looser) : linear_source(looser));
                check_plan(looser, plan);
            }
            const std::string none = "; none fits below ";
            if (const auto below = message.find(none); below != std::string::npos) {
                const double none_below = std::stod(message.substr(below + none.size()));
                BOOST_TEST(none_below <= (best.least_budget + margin) * (1.0 + 1e-6) + 0.05,
                           in.text << ": " << message << " vs " << best.least_budget);
            }
        }
    }
    BOOST_TEST_MESSAGE(fmt::format(
        "{}: {} planned ({} at the best simulated iteration of any plan, the worst {:.2f} % above "
        "it, the bound at most {:.2f} % below it), {} with nothing fitting the envelope ({} of "
        "them with a plan the enumeration finds)",
        one_setting ? "one setting per run (3 or 4 chunks, dualpipe-v, zb-v, zb-h1)"
                    : "bounded (3 or 4 chunks, zb-v, zb-h1)",
        solved, optimal, 100.0 * worst, 100.0 * worst_bound, infeasible, missed));
    BOOST_TEST(solved > count / 2);
    BOOST_TEST(infeasible > 0);
}

// Two chunks, as `ppb partition` plans them (plan_with_memory): the exact optimum of the estimate,
// then searched on the simulated iteration and bounded through one group that bounds the groups.
// The plan fits and is checked as the exact ones are; it simulates no slower than the estimate's
// optimum and no faster than the best plan the enumeration finds, and the bound is at most that
// best. P = 2 and at most two kinds, so that every plan can be simulated.
void prove_refined(std::uint32_t seed, int count) {
    std::mt19937 rng(seed);
    int planned_count = 0;
    int improved = 0;
    int at_best = 0;
    double worst_bound = 0.0;
    while (planned_count < count) {
        Instance in = random_instance(rng);
        if (in.problem.num_stages != 2)
            continue;
        // The two lowest kinds of the instance's.
        std::uint32_t kinds = in.problem.kinds;
        if (__builtin_popcount(kinds) > 2)
            kinds &= ~(1u << (31 - __builtin_clz(kinds)));
        in.problem.kinds = kinds;
        in.text += fmt::format(" (kinds {:#x})", kinds);
        const MemorySource memory = linear_source(in);
        const Reached best = reached(in);
        try {
            // The better estimate's exact optimum (`ppb partition --fast`), then the local search
            // from it.
            const ppb::partition::PlannedPartition exact = ppb::partition::plan_with_memory(
                in.problem, memory, {.refine = false, .lower_bound = false});
            const double before = exact.simulation.makespan;
            const ppb::partition::PlannedPartition planned = ppb::partition::plan_with_memory(
                in.problem, memory, {.refine = true, .lower_bound = true, .solved = &exact});
            BOOST_TEST_REQUIRE(std::isfinite(best.simulated), in.text);
            Instance as_planned = in;
            as_planned.problem.objective = planned.problem.objective;
            check_plan(as_planned, exact.plan);
            check_plan(as_planned, planned.plan);
            const double makespan = planned.simulation.makespan;
            BOOST_TEST(makespan <= before * (1.0 + 1e-9),
                       in.text << ": " << makespan << " vs " << before);
            BOOST_TEST(best.simulated <= makespan * (1.0 + 1e-9),
                       in.text << ": " << makespan << " vs " << best.simulated);
            BOOST_TEST_REQUIRE(planned.lower_bound.has_value(), in.text);
            BOOST_TEST(*planned.lower_bound <= best.simulated * (1.0 + 1e-9),
                       in.text << ": bound " << *planned.lower_bound << " vs " << best.simulated);
            improved += makespan < before * (1.0 - 1e-9) ? 1 : 0;
            at_best += pt::close(makespan, best.simulated) ? 1 : 0;
            worst_bound = std::max(worst_bound, 1.0 - *planned.lower_bound / best.simulated);
            ++planned_count;
        } catch (const Infeasible&) {
            BOOST_TEST(!std::isfinite(best.simulated), in.text);
        }
    }
    BOOST_TEST_MESSAGE(fmt::format(
        "two chunks, searched and bounded: {} planned, {} faster than the estimate's optimum, {} "
        "at the best simulated iteration of any plan, the bound at most {:.2f} % below it",
        planned_count, improved, at_best, 100.0 * worst_bound));
    BOOST_TEST(improved > 0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(grouped_chunked)

BOOST_AUTO_TEST_CASE(two_chunks_are_searched_and_bounded_against_enumeration) {
    prove_refined(20261207, 60);
}

BOOST_AUTO_TEST_CASE(optimal_against_enumeration) {
    prove(20261202, 400, false);
}

BOOST_AUTO_TEST_CASE(probed_models_are_optimal_too) {
    prove(1202, 150, true);
}

BOOST_AUTO_TEST_CASE(more_chunks_are_bounded_against_enumeration) {
    prove_bounded(20261206, 60, false);
}

BOOST_AUTO_TEST_CASE(more_chunks_of_a_probed_model_are_bounded_too) {
    prove_bounded(1206, 25, true);
}

BOOST_AUTO_TEST_CASE(one_setting_per_run_is_bounded_against_enumeration) {
    prove_bounded(61206, 40, false, true);
}

BOOST_AUTO_TEST_CASE(what_is_not_planned_is_refused_by_name) {
    std::mt19937 rng(5);
    Instance in = random_instance(rng, true);
    // No kind every group may take: the layers above have no kind to be planned with.
    in.problem.rule = RecomputeRule::any;
    in.problem.kinds = PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_FULL);
    in.c[0].identified &= ~PPB_PARAM_ACTIVATION(PPB_KIND_FULL);
    in.c[1].identified &= ~PPB_PARAM_ACTIVATION(PPB_KIND_NONE);
    BOOST_CHECK_EXCEPTION(
        (void)ppb::partition::solve(in.problem, linear_source(in)), ppb::InputError,
        [](const ppb::InputError& e) {
            return std::string(e.what()).find("needs a recompute kind every group may take") !=
                   std::string::npos;
        });
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace grouped_chunked_tests
