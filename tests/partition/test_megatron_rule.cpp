// RecomputeRule::megatron and ::torchtitan proved against exhaustive enumeration: every one
// recompute setting for the whole model (none, selective, uniform, and Megatron-LM's block
// method recomputing the first N layers of every model chunk, as
// megatron/core/transformer/transformer_block.py of NVIDIA/Megatron-LM, commit
// 767a8a81dce870c23d284f1571fca1d5898d624d, applies it per TransformerBlock), every spread of the
// layers over the (stage, chunk) positions of 1F1B and interleaved 1F1B, the memory (with chunks,
// the largest over the states of the stage's executed program order) and the objective written
// out here; solve() must find the least iteration time, with every chunk
// following one setting.
#include "brute_force.hpp"

#include <ppb/errors.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/schedule.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::Schedule;
using ppb::partition::Infeasible;
using ppb::partition::KindCounts;
using ppb::partition::MegatronRecompute;
using ppb::partition::MemorySource;
using ppb::partition::Plan;
using ppb::partition::Problem;
using ppb::partition::RecomputeRule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_rule_tests {

namespace {

struct Linear {
    double c = 0, h = 0, t = 0, per_layer = 0;
    std::array<double, PPB_KIND_COUNT> a{};
};

// In flight: every state stage s passes through, executing its order (pt::executed_states);
// the model here is linear, so its answer at a count of 0 is exact (ppb::ZeroCounts::exact).
// The stage's memory is its largest over these states.

struct Best {
    double objective = pt::infinity;
    std::optional<MegatronRecompute> setting;
};

// The least objective over every setting and spread; position q is chunk q / P of stage q mod P.
Best enumerate(const Problem& p, const Linear& k, std::uint32_t allowed, bool with_block) {
    const std::uint32_t P = p.num_stages;
    const std::uint32_t v = p.chunks;
    const std::uint32_t Q = P * v;
    const std::uint32_t L = p.time.body_layers;
    const std::vector<MegatronRecompute> settings = pt::allowed_settings(
        with_block ? RecomputeRule::megatron : RecomputeRule::torchtitan, L, allowed);
    Best best;
    std::vector<std::uint32_t> counts(Q, 0);
    std::vector<std::vector<std::vector<std::uint32_t>>> states;
    for (std::uint32_t s = 0; s < P; ++s)
        states.push_back(pt::executed_states(p, s));
    const auto evaluate = [&](const MegatronRecompute& setting) {
        std::vector<double> total(P, 0.0), slowest(P, 0.0);
        for (std::uint32_t s = 0; s < P; ++s) {
            double fixed = k.c + (s == 0 ? k.h : 0.0) + (s + 1 == P ? k.t : 0.0);
            std::vector<double> activation(v, 0.0);  // per micro-batch in flight
            for (std::uint32_t c = 0; c < v; ++c) {
                const std::uint32_t q = c * P + s;
                const KindCounts mix = pt::setting_mix(setting, counts[q]);
                double t =
                    (q == 0 ? p.time.head_time : 0.0) + (q + 1 == Q ? p.time.tail_time : 0.0);
                for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
                    t += mix[kind] * p.time.body_time[kind];
                    fixed += mix[kind] * k.per_layer;
                    activation[c] += mix[kind] * k.a[kind];
                }
                total[s] += t;
                slowest[s] = std::max(slowest[s], t);
            }
            double memory = -pt::infinity;
            for (const auto& f : states[s]) {
                double m = fixed;
                for (std::uint32_t c = 0; c < v; ++c)
                    m += activation[c] * f[c];
                memory = std::max(memory, m);
            }
            if (!pt::fits_budget(memory, p.budget_mb()))
                return;
        }
        double objective = 0.0;
        if (v == 1) {
            objective = std::accumulate(total.begin(), total.end(), 0.0) +
                        (p.micro_batches - 1) * *std::max_element(total.begin(), total.end());
        } else {
            objective = p.micro_batches * *std::max_element(total.begin(), total.end()) +
                        std::accumulate(slowest.begin(), slowest.end(), 0.0) -
                        *std::max_element(slowest.begin(), slowest.end());
        }
        if (objective < best.objective - 1e-9 * std::max(1.0, objective)) {
            best.objective = objective;
            best.setting = setting;
        }
    };
    pt::for_each_cut(Q, L, [&](const std::vector<std::uint32_t>& cut) {
        for (std::uint32_t q = 0; q < Q; ++q)
            counts[q] = cut[q + 1] - cut[q];
        for (const MegatronRecompute& setting : settings)
            evaluate(setting);
    });
    return best;
}

// Every chunk follows the plan's one setting.
std::string setting_defects(const Plan& plan) {
    if (!plan.recompute_setting)
        return "the plan has no recompute setting";
    for (const auto& s : plan.stages) {
        for (const auto& c : s.chunks) {
            const std::uint32_t n = std::accumulate(c.layers.begin(), c.layers.end(), 0u);
            if (plan.recompute_setting->chunk_layers(n) != c.layers)
                return fmt::format("stage {} chunk {} does not follow {}", s.stage, c.chunk,
                                   describe(*plan.recompute_setting));
        }
    }
    return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partition_megatron_rule)

BOOST_AUTO_TEST_CASE(one_setting_per_model_matches_enumeration) {
    std::mt19937 rng(22);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::size_t instances = 0, infeasible = 0, blocks = 0, chunked = 0;
    const std::array<std::uint32_t, 4> masks = {0x1f, 0x11, 0x13, 0x12};
    for (int trial = 0; trial < 420; ++trial) {
        Problem p;
        const bool interleaved = trial % 3 == 2;
        p.num_stages = interleaved ? 2 + trial % 2 : 1 + trial % 4;
        p.schedule = interleaved ? Schedule::interleaved : Schedule::one_f_one_b;
        p.chunks = interleaved ? 2 : 1;
        p.micro_batches = interleaved ? p.num_stages * (1 + trial % 3) : 1 + trial % 7;
        const std::uint32_t positions = p.num_stages * p.chunks;
        const std::uint32_t fewest = positions >= 2 ? positions - 2 : 1;  // middle positions
        p.time.body_layers =
            std::max<std::uint32_t>(fewest + trial % 3, 1 + trial % (interleaved ? 6 : 8));
        p.rule = trial % 5 == 4 ? RecomputeRule::torchtitan : RecomputeRule::megatron;
        const std::uint32_t allowed = masks[trial % masks.size()];
        p.kinds = allowed;
        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
            p.time.body_time[kind] = 1.0 + std::round(8.0 * unit(rng)) / 2.0 + 0.5 * kind;
        p.time.head_time = std::round(6.0 * unit(rng)) / 2.0;
        p.time.tail_time = std::round(6.0 * unit(rng)) / 2.0;
        p.time.body_forward = 0.25;
        Linear k;
        k.c = 100.0 * unit(rng);
        k.h = 150.0 * unit(rng);
        k.t = 150.0 * unit(rng);
        k.per_layer = 5.0 + 30.0 * unit(rng);
        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
            k.a[kind] = (10.0 + 40.0 * unit(rng)) * (1.0 - 0.18 * kind);
        // A budget between the lightest and the heaviest plausible stage.
        const double heavy =
            k.c + k.h + k.t + p.time.body_layers * (k.per_layer + k.a[0] * p.micro_batches);
        p.memory_limit_mb = k.c + (heavy - k.c) * (0.08 + 0.7 * unit(rng));

        ppb_linear_parameters c{};
        c.const_mb = k.c;
        c.head_mb = k.h;
        c.tail_mb = k.t;
        c.per_layer_mb = k.per_layer;
        pt::set_activation(c, k.a);
        c = pt::all_identified(c);
        MemorySource memory;
        memory.linear = c;

        const Best oracle = enumerate(p, k, allowed, p.rule == RecomputeRule::megatron);
        const std::string what =
            fmt::format("trial {} P={} v={} L={} M={} rule={} kinds=0x{:02x} limit={}", trial,
                        p.num_stages, p.chunks, p.time.body_layers, p.micro_batches,
                        p.rule == RecomputeRule::megatron ? "megatron" : "torchtitan", allowed,
                        p.memory_limit_mb);
        ++instances;
        chunked += interleaved ? 1 : 0;
        try {
            const Plan plan = ppb::partition::solve(p, memory);
            BOOST_TEST_REQUIRE(std::isfinite(oracle.objective), what << ": solve found a plan");
            BOOST_TEST(pt::close(plan.iteration_time, oracle.objective),
                       what << ": " << plan.iteration_time << " vs " << oracle.objective);
            BOOST_TEST(setting_defects(plan).empty(), what << ": " << setting_defects(plan));
            for (const auto& s : plan.stages)
                BOOST_TEST(pt::fits_budget(s.memory_mb, p.budget_mb()), what);
            if (p.rule == RecomputeRule::torchtitan)
                BOOST_TEST((plan.recompute_setting->method != MegatronRecompute::Method::block),
                           what);
            blocks += plan.recompute_setting->method == MegatronRecompute::Method::block;
        } catch (const Infeasible&) {
            ++infeasible;
            BOOST_TEST(!std::isfinite(oracle.objective),
                       what << ": infeasible, but the oracle found " << oracle.objective);
        }
    }
    BOOST_TEST_MESSAGE(fmt::format("{} instances ({} interleaved), {} infeasible, {} block plans",
                                   instances, chunked, infeasible, blocks));
    BOOST_TEST(infeasible > 10u);
    BOOST_TEST(infeasible < instances / 2);
    BOOST_TEST(blocks > 10u);  // the block method is chosen, not only the simple settings
}

BOOST_AUTO_TEST_CASE(block_recomputes_the_first_layers_of_every_chunk) {
    const MegatronRecompute block{MegatronRecompute::Method::block, 2};
    BOOST_TEST((block.chunk_layers(5) == KindCounts{3, 0, 0, 0, 2}));
    // A chunk of fewer layers than N recomputes all of them.
    BOOST_TEST((block.chunk_layers(1) == KindCounts{0, 0, 0, 0, 1}));
    BOOST_TEST((block.chunk_layers(0) == KindCounts{}));
    BOOST_TEST((ppb::partition::expressible({3, 0, 0, 0, 2}, RecomputeRule::megatron)));
    BOOST_TEST((!ppb::partition::expressible({3, 0, 0, 0, 2}, RecomputeRule::torchtitan)));
    BOOST_TEST((!ppb::partition::expressible({1, 1, 0, 0, 0}, RecomputeRule::megatron)));
    BOOST_TEST((ppb::partition::expressible({0, 4, 0, 0, 0}, RecomputeRule::torchtitan)));
}

BOOST_AUTO_TEST_CASE(the_setting_of_a_plan_is_recovered) {
    Plan plan;
    plan.stages.resize(2);
    plan.stages[0].chunks = {{0, {2, 0, 0, 0, 3}}, {1, {0, 0, 0, 0, 2}}};
    plan.stages[1].chunks = {{0, {1, 0, 0, 0, 3}}, {1, {0, 0, 0, 0, 3}}};
    const auto setting = ppb::partition::megatron_recompute_of(plan);
    BOOST_TEST_REQUIRE(setting.has_value());
    BOOST_TEST((*setting == MegatronRecompute{MegatronRecompute::Method::block, 3}));
    plan.stages[1].chunks[1].layers = {1, 0, 0, 0, 2};  // 2 full then none: not block 3
    BOOST_TEST(!ppb::partition::megatron_recompute_of(plan).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_rule_tests
