// The partitioner with several groups of body layers, proved against exhaustive enumeration:
// every cut of the layer sequence into contiguous stage ranges, and in every stage every choice
// of kinds the rule admits — any: every count of each kind in each group; mindformers: every
// (recompute, select_recompute, select_comm_recompute) MindFormers could be given, applied by
// position within the stage; megatron and torchtitan: one setting for the whole model (no
// recompute, selective, full of every layer, and Megatron's block N for every N: the first N
// layers of each stage full), every setting's every cut — with the memory written out from each
// group's coefficients here.
#include "brute_force.hpp"

#include <ppb/errors.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/partition/problem.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::partition::Infeasible;
using ppb::partition::KindCounts;
using ppb::partition::MegatronRecompute;
using ppb::partition::MemorySource;
using ppb::partition::MindFormersCounts;
using ppb::partition::Plan;
using ppb::partition::Problem;
using ppb::partition::RecomputeRule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace grouped_tests {

namespace {

constexpr std::size_t K = PPB_KIND_COUNT;

struct Instance {
    Problem problem;
    std::vector<ppb_linear_parameters> c;  // per group
    std::vector<std::uint32_t> sequence;
    std::string text;
};

// Memory of stage s holding `groups` (kinds per group), written out from the coefficients.
double memory_of(const Instance& in, std::uint32_t s, const std::vector<KindCounts>& groups) {
    const Problem& p = in.problem;
    const double f = std::min(p.num_stages - s, p.micro_batches);
    double m = in.c[0].const_mb + (s == 0 ? in.c[0].head_mb : 0.0) +
               (s + 1 == p.num_stages ? in.c[0].tail_mb : 0.0);
    for (std::size_t g = 0; g < groups.size(); ++g) {
        for (std::size_t k = 0; k < K; ++k)
            m += groups[g][k] * (in.c[g].per_layer_mb + in.c[g].activation_mb[k] * f);
    }
    return m;
}

double time_of(const Instance& in, std::uint32_t s, const std::vector<KindCounts>& groups) {
    const Problem& p = in.problem;
    double t = (s == 0 ? p.time.head_time : 0.0) + (s + 1 == p.num_stages ? p.time.tail_time : 0.0);
    for (std::size_t g = 0; g < groups.size(); ++g) {
        for (std::size_t k = 0; k < K; ++k)
            t += groups[g][k] * p.time.groups[g].time[k];
    }
    return t;
}

bool allowed(const Instance& in, std::size_t g, std::size_t k) {
    return (in.problem.kinds & PPB_KIND_BIT(k)) != 0 &&
           (in.c[g].identified & PPB_PARAM_ACTIVATION(k)) != 0;
}

// Every way to give `n` layers of group g kinds (allowed ones only).
void spread(const Instance& in, std::size_t g, std::uint32_t n, std::size_t k, KindCounts& current,
            std::vector<KindCounts>& out) {
    if (k + 1 == K) {
        if (n == 0 || allowed(in, g, k)) {
            current[k] = n;
            out.push_back(current);
            current[k] = 0;
        }
        return;
    }
    const std::uint32_t most = allowed(in, g, k) ? n : 0;
    for (std::uint32_t i = 0; i <= most; ++i) {
        current[k] = i;
        spread(in, g, n - i, k + 1, current, out);
    }
    current[k] = 0;
}

// The time of stage s over [a, b) under `setting`; infinity if a layer's group cannot take its
// kind or the stage does not fit.
double under_setting(const Instance& in, std::uint32_t s, std::uint32_t a, std::uint32_t b,
                     const MegatronRecompute& setting) {
    std::vector<KindCounts> groups(in.c.size(), KindCounts{});
    for (std::uint32_t i = a; i < b; ++i) {
        const std::size_t kind = pt::setting_kind_at(setting, i - a);
        const std::size_t g = in.sequence[i];
        if (!allowed(in, g, kind))
            return pt::infinity;
        ++groups[g][kind];
    }
    if (!pt::fits_budget(memory_of(in, s, groups), in.problem.budget_mb()))
        return pt::infinity;
    return time_of(in, s, groups);
}

// The fastest choice of stage s over [a, b) within the budget, by enumeration; infinity if none.
double fastest(const Instance& in, std::uint32_t s, std::uint32_t a, std::uint32_t b) {
    const std::size_t G = in.c.size();
    const double budget = in.problem.budget_mb();
    double best = pt::infinity;
    if (in.problem.rule == RecomputeRule::mindformers) {
        const std::uint32_t n = b - a;
        for (std::uint32_t r = 0; r <= n; ++r) {
            for (std::uint32_t sel = r; sel <= n; ++sel) {
                for (std::uint32_t comm = r; comm <= n; ++comm) {
                    // Position i of the stage takes MindFormers' kind for these counts.
                    std::vector<KindCounts> groups(G, KindCounts{});
                    bool ok = true;
                    for (std::uint32_t i = 0; i < n && ok; ++i) {
                        const std::size_t kind = pt::mindformers_kind_at(i, r, sel, comm);
                        const std::size_t g = in.sequence[a + i];
                        ok = allowed(in, g, kind);
                        ++groups[g][kind];
                    }
                    if (ok && pt::fits_budget(memory_of(in, s, groups), budget))
                        best = std::min(best, time_of(in, s, groups));
                }
            }
        }
        return best;
    }
    std::vector<std::vector<KindCounts>> options(G);
    for (std::size_t g = 0; g < G; ++g) {
        std::uint32_t n = 0;
        for (std::uint32_t i = a; i < b; ++i)
            n += in.sequence[i] == g ? 1 : 0;
        KindCounts current{};
        spread(in, g, n, 0, current, options[g]);
    }
    std::vector<std::size_t> index(G, 0);
    while (true) {
        std::vector<KindCounts> groups;
        bool empty = false;
        for (std::size_t g = 0; g < G; ++g) {
            if (options[g].empty()) {
                empty = true;
                break;
            }
            groups.push_back(options[g][index[g]]);
        }
        if (empty)
            return pt::infinity;
        if (pt::fits_budget(memory_of(in, s, groups), budget))
            best = std::min(best, time_of(in, s, groups));
        std::size_t g = 0;
        while (g < G && ++index[g] == options[g].size())
            index[g++] = 0;
        if (g == G)
            break;
    }
    return best;
}

// The least iteration time over every cut where stage s over [a, b) takes stage_time(s, a, b)
// (infinity: it cannot), or infinity.
template <typename StageTime>
double least_over_cuts(const Instance& in, StageTime&& stage_time) {
    const Problem& p = in.problem;
    const std::uint32_t P = p.num_stages;
    const std::uint32_t L = p.time.body_layers;
    std::vector<std::vector<std::vector<double>>> t(
        P, std::vector<std::vector<double>>(L + 1, std::vector<double>(L + 1, pt::infinity)));
    for (std::uint32_t s = 0; s < P; ++s) {
        for (std::uint32_t a = 0; a <= L; ++a) {
            for (std::uint32_t b = a; b <= L; ++b)
                t[s][a][b] = stage_time(s, a, b);
        }
    }
    double best = pt::infinity;
    // Every cut: stage s takes [cut[s], cut[s + 1]).
    pt::for_each_cut(P, L, [&](const std::vector<std::uint32_t>& cut) {
        std::vector<double> times;
        for (std::uint32_t s = 0; s < P; ++s) {
            const double ts = t[s][cut[s]][cut[s + 1]];
            if (!std::isfinite(ts))
                return;
            times.push_back(ts);
        }
        best = std::min(best, ppb::partition::iteration_time(times, p.micro_batches));
    });
    return best;
}

// The least iteration time over every plan the rule admits, or infinity.
double oracle(const Instance& in) {
    const RecomputeRule rule = in.problem.rule;
    if (rule != RecomputeRule::megatron && rule != RecomputeRule::torchtitan) {
        return least_over_cuts(in, [&](std::uint32_t s, std::uint32_t a, std::uint32_t b) {
            return fastest(in, s, a, b);
        });
    }
    double best = pt::infinity;
    for (const MegatronRecompute& setting :
         pt::oracle_settings(in.problem.rule, in.problem.time.body_layers)) {
        best = std::min(best,
                        least_over_cuts(in, [&](std::uint32_t s, std::uint32_t a, std::uint32_t b) {
                            return under_setting(in, s, a, b, setting);
                        }));
    }
    return best;
}

// `physical`: recompute costs time and saves memory, kind by kind; otherwise each kind's time and
// memory are drawn independently (no order the solver could lean on).
Instance random_instance(std::mt19937& rng, RecomputeRule rule, bool physical = true) {
    std::uniform_int_distribution<std::uint32_t> stages(1, 4), groups(2, 3), micro(1, 6);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    Instance in;
    Problem& p = in.problem;
    p.rule = rule;
    p.num_stages = stages(rng);
    p.micro_batches = micro(rng);
    const std::size_t G = groups(rng);
    const std::uint32_t L = std::max<std::uint32_t>(
        p.num_stages >= 2 ? p.num_stages - 2 : 0,
        std::uniform_int_distribution<std::uint32_t>(2, p.num_stages <= 2 ? 7 : 6)(rng));
    // The sequence: blocks (dense then MoE), alternating, or random.
    const int shape = std::uniform_int_distribution<int>(0, 2)(rng);
    for (std::uint32_t i = 0; i < L; ++i) {
        std::uint32_t g = 0;
        if (shape == 0)
            g = static_cast<std::uint32_t>(i * G / L);
        else if (shape == 1)
            g = static_cast<std::uint32_t>(i % G);
        else
            g = std::uniform_int_distribution<std::uint32_t>(0, G - 1)(rng);
        in.sequence.push_back(g);
    }
    // Kinds: a random subset of at least two, the same for every group or one group missing one.
    std::uint32_t mask = 0;
    while (__builtin_popcount(mask) < 2)
        mask = std::uniform_int_distribution<std::uint32_t>(0, PPB_ALL_KINDS)(rng);
    p.kinds = mask;
    p.time.head_time = 1.0 + 3.0 * unit(rng);
    p.time.tail_time = 1.0 + 3.0 * unit(rng);
    p.time.body_layers = L;
    p.time.sequence = in.sequence;
    for (std::size_t g = 0; g < G; ++g) {
        ppb::partition::BodyGroupTime group;
        group.name = fmt::format("g{}", g);
        const double base = 1.0 + 4.0 * unit(rng);
        group.forward = base / 3.0;
        // Recompute costs time and saves memory: times rise, activations fall, with the kind.
        double rise = 0.0;
        for (std::size_t k = 0; k < K; ++k) {
            rise += 0.3 * unit(rng) * (k == 0 ? 0.0 : 1.0);
            group.time[k] = physical ? base * (1.0 + rise) : base * (0.5 + unit(rng));
        }
        in.problem.time.groups.push_back(group);
        ppb_linear_parameters c{};
        c.struct_size = sizeof(c);
        c.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
        c.const_mb = 100.0;
        c.head_mb = 40.0 + 40.0 * unit(rng);
        c.tail_mb = 40.0 + 40.0 * unit(rng);
        c.per_layer_mb = 10.0 + 30.0 * unit(rng);
        double activation = 20.0 + 30.0 * unit(rng);
        for (std::size_t k = 0; k < K; ++k) {
            c.activation_mb[k] = physical ? activation : 5.0 + 45.0 * unit(rng);
            activation *= 0.4 + 0.5 * unit(rng);
            // One group in four lacks a kind the others have.
            if (!(g == 1 && k == 2 && unit(rng) < 0.25))
                c.identified |= PPB_PARAM_ACTIVATION(k);
        }
        in.c.push_back(c);
    }
    for (auto& c : in.c) {
        c.const_mb = in.c[0].const_mb;
        c.head_mb = in.c[0].head_mb;
        c.tail_mb = in.c[0].tail_mb;
    }
    for (const std::uint32_t g : in.sequence)
        ++p.time.groups[g].layers;
    p.time.groups[0].name = "dense";
    p.time.body_time = p.time.groups[0].time;
    p.time.body_forward = p.time.groups[0].forward;
    p.time.head_forward = p.time.head_time / 3.0;
    p.time.tail_forward = p.time.tail_time / 3.0;
    // A limit between what the leanest and the fullest stage would need.
    const double full = 100.0 + 80.0 + L * (40.0 + 50.0 * p.micro_batches) / p.num_stages;
    p.memory_limit_mb = 120.0 + (full - 120.0) * (0.2 + 1.2 * unit(rng));
    in.text = fmt::format("P={} M={} L={} G={} shape={} kinds={:#x} limit={:.3f} rule={}{}",
                          p.num_stages, p.micro_batches, L, G, shape, mask, p.memory_limit_mb,
                          ppb::partition::rule_name(rule), physical ? "" : " unordered kinds");
    return in;
}

// The plan keeps model order, places every layer, fits, and its numbers are its own.
void check_plan(const Instance& in, const Plan& plan) {
    const Problem& p = in.problem;
    BOOST_TEST_REQUIRE(plan.stages.size() == p.num_stages);
    std::uint32_t next = 0;
    std::vector<double> times;
    for (const auto& stage : plan.stages) {
        BOOST_TEST(stage.first_layer == next, in.text);
        BOOST_TEST_REQUIRE(stage.group_layers.size() == in.c.size());
        std::vector<std::uint32_t> in_range(in.c.size(), 0);
        for (std::uint32_t i = 0; i < stage.total_layers(); ++i)
            ++in_range.at(in.sequence.at(next + i));
        for (std::size_t g = 0; g < in.c.size(); ++g) {
            std::uint32_t n = 0;
            for (std::size_t k = 0; k < K; ++k) {
                n += stage.group_layers[g][k];
                if (stage.group_layers[g][k] != 0)
                    BOOST_TEST(allowed(in, g, k), in.text);
            }
            BOOST_TEST(n == in_range[g], in.text);
        }
        const double m = memory_of(in, stage.stage, stage.group_layers);
        BOOST_TEST(pt::close(m, stage.memory_mb), in.text);
        BOOST_TEST(pt::fits_budget(m, p.budget_mb()), in.text);
        BOOST_TEST(pt::close(time_of(in, stage.stage, stage.group_layers), stage.time), in.text);
        if (p.rule == RecomputeRule::mindformers) {
            // MindFormers' counts of the stage rebuild its groups' kinds by position.
            const auto counts = ppb::partition::mindformers_counts(stage.layers);
            BOOST_TEST_REQUIRE(counts.has_value(), in.text);
            const auto rebuilt = ppb::partition::positional_group_layers(
                p, stage.first_layer, stage.total_layers(), *counts);
            BOOST_TEST((rebuilt == stage.group_layers), in.text);
        }
        if (p.rule == RecomputeRule::megatron || p.rule == RecomputeRule::torchtitan) {
            // The plan's one setting gives every stage its kinds by position: a block's 'full'
            // layers first, then one kind.
            BOOST_TEST_REQUIRE(plan.recompute_setting.has_value(), in.text);
            BOOST_TEST(
                (pt::setting_mix(*plan.recompute_setting, stage.total_layers()) == stage.layers),
                in.text);
            std::vector<KindCounts> rebuilt(in.c.size(), KindCounts{});
            for (std::uint32_t i = 0; i < stage.total_layers(); ++i) {
                ++rebuilt[in.sequence.at(stage.first_layer + i)]
                         [pt::setting_kind_at(*plan.recompute_setting, i)];
            }
            BOOST_TEST((rebuilt == stage.group_layers), in.text);
            if (p.rule == RecomputeRule::torchtitan) {
                BOOST_TEST((plan.recompute_setting->method !=
                            ppb::partition::MegatronRecompute::Method::block),
                           in.text);
            }
        }
        times.push_back(stage.time);
        next += stage.total_layers();
    }
    BOOST_TEST(next == p.time.body_layers, in.text);
    BOOST_TEST(
        pt::close(ppb::partition::iteration_time(times, p.micro_batches), plan.iteration_time),
        in.text);
}

MemorySource source_of(const Instance& in) {
    MemorySource memory;
    memory.group_linear = in.c;
    return memory;
}

// The same model seen only through its predictions (as the host probes a model that gives no
// coefficients); `extra` adds a term that is not affine in the counts.
MemorySource probed_source_of(const Instance& in, double extra = 0.0) {
    MemorySource memory;
    memory.predict_grouped_batch = [in, extra](std::span<const ppb_grouped_placement> batch) {
        std::vector<double> out;
        for (const auto& p : batch) {
            std::vector<KindCounts> groups(p.num_groups, KindCounts{});
            double n = 0.0;
            for (std::uint32_t g = 0; g < p.num_groups; ++g) {
                for (std::size_t k = 0; k < K; ++k) {
                    groups[g][k] = p.group_layers[g * K + k];
                    n += groups[g][k];
                }
            }
            BOOST_TEST_REQUIRE(
                p.placement.chunks[0].in_flight ==
                std::min(p.placement.num_stages - p.placement.stage, in.problem.micro_batches));
            out.push_back(memory_of(in, p.placement.stage, groups) + extra * n * n);
        }
        return out;
    };
    return memory;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(grouped)

BOOST_AUTO_TEST_CASE(positional_counts_follow_the_stage_order) {
    Problem p;
    p.time.groups.resize(2);
    // dense dense moe moe moe: a stage of layers 1..4 (dense, moe, moe, moe).
    p.time.sequence = {0, 0, 1, 1, 1};
    // recompute 2 (full), select 3 (so one 'select'), comm 0.
    const auto groups =
        ppb::partition::positional_group_layers(p, 1, 4, MindFormersCounts{2, 3, 0});
    BOOST_TEST_REQUIRE(groups.size() == 2u);
    BOOST_TEST(groups[0][PPB_KIND_FULL] == 1u);  // layer 1, dense
    BOOST_TEST(groups[1][PPB_KIND_FULL] == 1u);  // layer 2, moe
    BOOST_TEST(groups[1][PPB_KIND_SELECT] == 1u);
    BOOST_TEST(groups[1][PPB_KIND_NONE] == 1u);
    BOOST_TEST(groups[0][PPB_KIND_NONE] == 0u);
    // select 3 and comm 4: positions 2 'both', 3 'comm'.
    const auto both = ppb::partition::positional_group_layers(p, 1, 4, MindFormersCounts{2, 3, 4});
    BOOST_TEST(both[1][PPB_KIND_BOTH] == 1u);
    BOOST_TEST(both[1][PPB_KIND_COMM] == 1u);
}

// Every random instance, under each rule: the solver's plan is valid and as fast as the best of
// all plans, or both find none and the limit the solver names is the least with a plan (under
// 'any', whose least need of a layer is its group's least-memory kind, and under one setting per
// run, whose ranges each have one mix: a plan at it, none just below). One setting per run
// (Megatron-LM's and torchtitan's rule) plans a setting's best cut for each setting and keeps the
// fastest; with none of the kinds a setting uses allowed, it is refused with them.
BOOST_AUTO_TEST_CASE(optimal_against_enumeration) {
    std::mt19937 rng(20261201);
    constexpr std::array rules = {RecomputeRule::any, RecomputeRule::mindformers,
                                  RecomputeRule::megatron, RecomputeRule::torchtitan};
    constexpr std::uint32_t setting_kinds =
        PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_SELECT) | PPB_KIND_BIT(PPB_KIND_FULL);
    std::array<int, rules.size()> solved{};
    std::array<int, rules.size()> infeasible{};
    int recomputed = 0;  // one setting per run, planned with a setting that recomputes
    int refused = 0;
    for (int i = 0; i < 1600; ++i) {
        const std::size_t r = static_cast<std::size_t>(i) % rules.size();
        const RecomputeRule rule = rules[r];
        const bool one_setting =
            rule == RecomputeRule::megatron || rule == RecomputeRule::torchtitan;
        Instance in = random_instance(rng, rule, i % 3 != 2);
        const double best = oracle(in);
        if (one_setting && (in.problem.kinds & setting_kinds) == 0) {
            BOOST_CHECK_EXCEPTION((void)ppb::partition::solve(in.problem, source_of(in)),
                                  ppb::InputError, [](const ppb::InputError& e) {
                                      return std::string(e.what()).find(
                                                 "needs the kind 'none', 'select' or 'full'") !=
                                             std::string::npos;
                                  });
            ++refused;
            continue;
        }
        try {
            const Plan plan = ppb::partition::solve(in.problem, source_of(in));
            BOOST_TEST_REQUIRE(std::isfinite(best), in.text << ": the enumeration finds no plan");
            check_plan(in, plan);
            BOOST_TEST(pt::close(plan.iteration_time, best),
                       in.text << ": " << plan.iteration_time << " vs " << best);
            ++solved[r];
            if (one_setting &&
                plan.recompute_setting->method != ppb::partition::MegatronRecompute::Method::none)
                ++recomputed;
        } catch (const Infeasible& e) {
            BOOST_TEST(!std::isfinite(best), in.text << ": infeasible but the best is " << best);
            ++infeasible[r];
            if (one_setting) {
                BOOST_TEST(
                    std::string(e.what()).find(
                        "under every one of Megatron's recompute settings") != std::string::npos,
                    e.what());
            }
            if ((rule == RecomputeRule::any || one_setting) &&
                std::isfinite(e.smallest_feasible_limit_mb())) {
                Instance at = in;
                at.problem.memory_limit_mb = e.smallest_feasible_limit_mb();
                BOOST_TEST(std::isfinite(oracle(at)), in.text << ": " << e.what());
                at.problem.memory_limit_mb = e.smallest_feasible_limit_mb() * (1.0 - 1e-6) - 1e-3;
                BOOST_TEST(!std::isfinite(oracle(at)), in.text << ": " << e.what());
            }
        }
    }
    for (std::size_t r = 0; r < rules.size(); ++r) {
        BOOST_TEST_MESSAGE(fmt::format("{}: {} solved, {} infeasible",
                                       ppb::partition::rule_name(rules[r]), solved[r],
                                       infeasible[r]));
        BOOST_TEST(solved[r] > 200);
        BOOST_TEST(infeasible[r] > 20);
    }
    BOOST_TEST_MESSAGE(
        fmt::format("one setting per run: {} recomputing, {} refused", recomputed, refused));
    BOOST_TEST(recomputed > 100);
    BOOST_TEST(refused > 5);
}

// The same through a model known only by its predictions: every stage probed, the plan as fast as
// the best of all plans.
BOOST_AUTO_TEST_CASE(probed_models_are_optimal_too) {
    std::mt19937 rng(1201);
    int solved = 0;
    constexpr std::array rules = {RecomputeRule::any, RecomputeRule::mindformers,
                                  RecomputeRule::megatron, RecomputeRule::torchtitan};
    for (int i = 0; i < 300; ++i) {
        const RecomputeRule rule = rules[static_cast<std::size_t>(i) % rules.size()];
        Instance in = random_instance(rng, rule, i % 3 != 2);
        for (auto& c : in.c)
            c.identified |= PPB_PARAM_ACTIVATION(2);  // a probed model predicts every kind
        // Every kind a setting uses (no setting's kinds would be refused: the test above).
        in.problem.kinds |= PPB_KIND_BIT(PPB_KIND_NONE);
        const double best = oracle(in);
        try {
            const Plan plan = ppb::partition::solve(in.problem, probed_source_of(in));
            BOOST_TEST_REQUIRE(std::isfinite(best), in.text);
            check_plan(in, plan);
            BOOST_TEST(pt::close(plan.iteration_time, best),
                       in.text << ": " << plan.iteration_time << " vs " << best);
            BOOST_TEST(!plan.activations_known);
            ++solved;
        } catch (const Infeasible&) {
            BOOST_TEST(!std::isfinite(best), in.text);
        }
    }
    BOOST_TEST(solved > 150);
    // A model that is not affine in the counts is refused, not planned wrongly.
    Instance in = random_instance(rng, RecomputeRule::any);
    in.problem.memory_limit_mb = 1e6;
    BOOST_CHECK_EXCEPTION((void)ppb::partition::solve(in.problem, probed_source_of(in, 0.5)),
                          ppb::InputError, [](const ppb::InputError& e) {
                              return std::string(e.what()).find(
                                         "the memory model is not affine in the layer counts at "
                                         "stage 0") != std::string::npos;
                          });
}

BOOST_AUTO_TEST_CASE(what_groups_cannot_do_yet_is_refused) {
    std::mt19937 rng(7);
    Instance in = random_instance(rng, RecomputeRule::any);
    in.problem.num_stages = 2;
    // Schedules with chunks are planned: test_grouped_chunked.cpp.
    MemorySource none;
    BOOST_CHECK_EXCEPTION(
        (void)ppb::partition::solve(in.problem, none), ppb::InputError,
        [](const ppb::InputError& e) {
            return std::string(e.what()).find("needs each group's linear coefficients") !=
                   std::string::npos;
        });
    MemorySource unknown = source_of(in);
    const std::uint32_t holder = in.problem.time.sequence.front();  // a group with layers
    unknown.group_linear[holder].identified &= ~PPB_PARAM_PER_LAYER;
    BOOST_CHECK_EXCEPTION((void)ppb::partition::solve(in.problem, unknown), ppb::InputError,
                          [](const ppb::InputError& e) {
                              return std::string(e.what()).find(
                                         "the parameter memory of that group is not determined") !=
                                     std::string::npos;
                          });
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace grouped_tests
