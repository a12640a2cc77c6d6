// Mixes MindFormers can build: RecomputeRule::mindformers, expressible() and
// mindformers_counts() against MindFormers' layer-by-layer rule (brute_force.hpp's
// mindformers_build), and solve() keeping to the rule where the unrestricted optimum breaks it.
#include "brute_force.hpp"

#include <ppb/abi.h>
#include <ppb/partition/problem.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>

namespace pt = ppb::partition::test;
using ppb::partition::KindCounts;
using ppb::partition::MemorySource;
using ppb::partition::Problem;
using ppb::partition::RecomputeRule;

BOOST_AUTO_TEST_SUITE(partition_expressible)

BOOST_AUTO_TEST_CASE(mindformers_builds_the_first_layers_of_a_stage) {
    // 10 layers: the first 3 full; of the others select below 7 and comm below 5: layers 3, 4
    // both, 5, 6 select-only, the rest none.
    BOOST_TEST((pt::mindformers_build(10, 3, 7, 5) == KindCounts{3, 2, 0, 2, 3}));
    // comm beyond select: comm-only layers.
    BOOST_TEST((pt::mindformers_build(10, 0, 2, 6) == KindCounts{4, 0, 4, 2, 0}));
    // Full wins over select and comm; counts above the stage mean every layer.
    BOOST_TEST((pt::mindformers_build(4, 3, 2, 9) == KindCounts{0, 0, 1, 0, 3}));
    BOOST_TEST((pt::mindformers_build(0, 3, 3, 3) == KindCounts{}));
}

// expressible() is exactly "some counts build it", and mindformers_counts() gives such counts,
// for every mix of up to 9 layers.
BOOST_AUTO_TEST_CASE(expressible_is_what_some_counts_build) {
    std::size_t expressible = 0;
    std::size_t not_expressible = 0;
    for (std::uint32_t n = 0; n <= 9; ++n) {
        pt::for_each_composition(n, PPB_ALL_KINDS, [&](const KindCounts& mix) {
            const bool oracle = pt::oracle_expressible(mix, RecomputeRule::mindformers);
            BOOST_TEST(ppb::partition::expressible(mix, RecomputeRule::mindformers) == oracle,
                       pt::counts_text(mix));
            BOOST_TEST(ppb::partition::expressible(mix, RecomputeRule::any));
            const auto counts = ppb::partition::mindformers_counts(mix);
            BOOST_TEST(counts.has_value() == oracle, pt::counts_text(mix));
            if (counts) {
                ++expressible;
                BOOST_TEST(pt::mindformers_build(n, counts->recompute, counts->select_recompute,
                                                 counts->select_comm_recompute) == mix,
                           pt::counts_text(mix));
            } else {
                ++not_expressible;
                BOOST_TEST(mix[PPB_KIND_SELECT] > 0u);
                BOOST_TEST(mix[PPB_KIND_COMM] > 0u);
            }
        });
    }
    BOOST_TEST(expressible > 0u);
    BOOST_TEST(not_expressible > 0u);
}

BOOST_AUTO_TEST_CASE(the_oracle_counts_expressible_plans) {
    pt::Coefficients c;
    c.time.body_time = {1, 2, 3, 4, 5};
    c.memory = pt::all_identified(c.memory);
    auto count = [&](std::uint32_t stages, std::uint32_t layers, RecomputeRule rule) {
        c.time.body_layers = layers;
        const Problem problem = pt::make_problem(stages, 2, PPB_ALL_KINDS, c, 1e12, rule);
        return pt::brute_force(problem, PPB_ALL_KINDS, pt::canonical_memory(c.memory, problem))
            .plans;
    };
    // 15 mixes of 2 layers over 5 kinds, less select + comm.
    BOOST_TEST(count(1, 2, RecomputeRule::any) == 15u);
    BOOST_TEST(count(1, 2, RecomputeRule::mindformers) == 14u);
    // 330 mixes of 7 layers, less those with select and comm (mixes of 5 over 5: C(9,4) = 126).
    BOOST_TEST(count(1, 7, RecomputeRule::mindformers) == 204u);
}

// One stage, 2 layers, kinds select and comm. Select is fast and heavy, comm slow and light:
// select + select needs 40 MB, select + comm 30, comm + comm 20. Within 30 MB the unrestricted
// optimum mixes them; MindFormers can only take comm + comm.
BOOST_AUTO_TEST_CASE(solve_keeps_to_the_rule_where_the_free_optimum_breaks_it) {
    pt::Coefficients c;
    c.time.body_layers = 2;
    c.time.body_time = {1, 1, 2, 3, 4};
    c.memory = pt::all_identified(c.memory);
    pt::set_activation(c.memory, {30, 20, 10, 5, 1});
    const std::uint32_t kinds = PPB_KIND_BIT(PPB_KIND_SELECT) | PPB_KIND_BIT(PPB_KIND_COMM);
    for (const bool linear : {true, false}) {
        for (const RecomputeRule rule : {RecomputeRule::any, RecomputeRule::mindformers}) {
            const Problem problem = pt::make_problem(1, 1, kinds, c, 30, rule);
            auto log = std::make_shared<pt::BatchLog>();
            MemorySource memory = pt::batch_source(c.memory, problem, PPB_ALL_KINDS, log);
            if (linear)
                memory.linear = c.memory;
            const auto plan = ppb::partition::solve(problem, memory);
            BOOST_TEST_REQUIRE(plan.stages.size() == 1u);
            const KindCounts expected =
                rule == RecomputeRule::any ? KindCounts{0, 1, 1, 0, 0} : KindCounts{0, 0, 2, 0, 0};
            BOOST_TEST(plan.stages[0].layers == expected, pt::describe(plan));
            BOOST_TEST(plan.iteration_time == (rule == RecomputeRule::any ? 3.0 : 4.0));
            BOOST_TEST(pt::plan_defects(plan, problem, kinds, c.memory).empty());
        }
    }
}

// Under the rule the least memory of a stage (for an infeasible limit's message) is still that
// of all its layers on the lightest kind, which is always expressible.
BOOST_AUTO_TEST_CASE(infeasibility_under_the_rule_names_the_same_smallest_limit) {
    pt::Coefficients c;
    c.time.body_layers = 3;
    c.time.body_time = {1, 1, 2, 3, 4};
    c.memory = pt::all_identified(c.memory);
    pt::set_activation(c.memory, {30, 20, 10, 5, 1});
    double smallest[2] = {0, 0};
    for (const RecomputeRule rule : {RecomputeRule::any, RecomputeRule::mindformers}) {
        const Problem problem = pt::make_problem(2, 4, PPB_ALL_KINDS, c, 1, rule);
        MemorySource memory;
        memory.linear = c.memory;
        try {
            (void)ppb::partition::solve(problem, memory);
            BOOST_FAIL("a 1 MB budget cannot fit");
        } catch (const ppb::partition::Infeasible& e) {
            smallest[rule == RecomputeRule::any ? 0 : 1] = e.smallest_feasible_limit_mb();
        }
    }
    BOOST_TEST(smallest[0] == smallest[1]);
}

BOOST_AUTO_TEST_SUITE_END()
