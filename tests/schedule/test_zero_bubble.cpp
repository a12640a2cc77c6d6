// The zero-bubble schedules (zb-h1, zb-v): PyTorch's program orders, their timing with each
// backward split into the input gradient B and the weight gradient W, the paper's closed forms,
// and the in-flight counts with activations held until W.
#include "../common/error_testing.hpp"

#include <ppb/errors.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>
#include <ppb/simulator.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

using ppb::Pass;
using ppb::Schedule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace zero_bubble_tests {

namespace {

// Every (stage, chunk) at F, B + W (the backward) with W its weight gradient.
ppb::SimulationInput even(Schedule schedule, std::uint32_t p, std::uint32_t m, double f, double b,
                          double w) {
    ppb::SimulationInput in;
    in.schedule = schedule;
    in.num_stages = p;
    in.num_chunks = schedule == Schedule::zb_v ? 2 : 1;
    in.micro_batches = m;
    ppb::ChunkCost cost;
    cost.forward_time = f;
    cost.backward_time = b + w;
    cost.weight_time = w;
    in.costs.assign(p, std::vector<ppb::ChunkCost>(in.num_chunks, cost));
    return in;
}

struct Times {
    double f, b, w;
};
constexpr Times cases[] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {3, 1, 0.5}, {1, 2, 0.5}};

}  // namespace

BOOST_AUTO_TEST_SUITE(zero_bubble)

BOOST_AUTO_TEST_CASE(names_and_shapes) {
    BOOST_TEST(ppb::schedule_name(Schedule::zb_h1) == "zb-h1");
    BOOST_TEST(ppb::schedule_name(Schedule::zb_v) == "zb-v");
    BOOST_TEST((ppb::schedule_from_name("zb-v") == Schedule::zb_v));
    BOOST_TEST(ppb::splits_backward(Schedule::zb_h1));
    BOOST_TEST(!ppb::splits_backward(Schedule::dualpipe_v));
    BOOST_TEST(ppb::schedule_shape_problem(Schedule::zb_h1, 4, 2, 8) ==
               "zb-h1 runs one chunk per stage, got 2");
    BOOST_TEST(ppb::schedule_shape_problem(Schedule::zb_v, 4, 1, 8) ==
               "zb-v runs two chunks per stage, got 1");
    // zb-v places the chunks in a V, as dualpipe-v.
    BOOST_TEST(ppb::pipeline_position(Schedule::zb_v, 4, 1, 1) == 6u);
}

BOOST_AUTO_TEST_CASE(every_order_runs_each_pass_once_and_w_after_its_b) {
    for (const auto schedule : {Schedule::zb_h1, Schedule::zb_v}) {
        const std::uint32_t v = schedule == Schedule::zb_v ? 2 : 1;
        for (std::uint32_t p = 1; p <= 6; ++p) {
            for (std::uint32_t m = 1; m <= 4 * p + 1; ++m) {
                for (std::uint32_t s = 0; s < p; ++s) {
                    const auto order = ppb::stage_order(schedule, p, v, m, s);
                    BOOST_TEST_REQUIRE(order.size() == 3u * v * m);
                    std::set<std::tuple<std::uint32_t, std::uint32_t, Pass>> seen;
                    for (const auto& step : order) {
                        BOOST_TEST(seen.insert({step.chunk, step.micro_batch, step.pass}).second);
                        if (step.pass != Pass::forward) {
                            const Pass before =
                                step.pass == Pass::weight ? Pass::backward : Pass::forward;
                            BOOST_TEST(seen.count({step.chunk, step.micro_batch, before}) == 1u);
                        }
                    }
                }
                // No order waits on another in a cycle: every M runs (PyTorch drops the
                // operations of micro-batches beyond M from its order for 2P - 1).
                BOOST_TEST(ppb::simulate(even(schedule, p, m, 1, 1, 1)).makespan > 0.0);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(zb_h1_stage_s_defers_s_weight_passes) {
    // P = 4, M = 6, stage 1: 2 warm-up forwards, then F B per micro-batch, W from the second B.
    std::string text;
    for (const auto& step : ppb::stage_order(Schedule::zb_h1, 4, 1, 6, 1))
        text += std::string(1, "FBW"[static_cast<int>(step.pass)]) +
                std::to_string(step.micro_batch) + " ";
    BOOST_TEST(text == "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 B4 W3 B5 W4 W5 ");
}

BOOST_AUTO_TEST_CASE(zb_h1_matches_the_papers_bubble) {
    // Qi et al. (ICLR 2024), ZB-H1: with W no longer than F or B, the bubble shrinks from 1F1B's
    // (P - 1)(F + B + W) to (P - 1)(F + B - W). In general, under PyTorch's order, for M >= P:
    // iteration = M(F + B + W) + (P - 1)(F + B - min(F, B, W)).
    for (const auto& [f, b, w] : cases) {
        for (std::uint32_t p = 1; p <= 8; ++p) {
            for (std::uint32_t m = p; m <= 3 * p + 1; ++m) {
                const auto sim = ppb::simulate(even(Schedule::zb_h1, p, m, f, b, w));
                const double zb = m * (f + b + w) + (p - 1) * (f + b - std::min({f, b, w}));
                BOOST_TEST_CONTEXT("P=" << p << " M=" << m << " F=" << f << " B=" << b
                                        << " W=" << w) {
                    BOOST_TEST(sim.makespan == zb, boost::test_tools::tolerance(1e-9));
                    // 1F1B runs the same work with the backward whole.
                    auto one = even(Schedule::one_f_one_b, p, m, f, b, w);
                    BOOST_TEST(ppb::simulate(one).makespan == (m + p - 1) * (f + b + w),
                               boost::test_tools::tolerance(1e-9));
                    if (w <= std::min(f, b)) {
                        BOOST_TEST(sim.makespan - m * (f + b + w) == (p - 1) * (f + b - w),
                                   boost::test_tools::tolerance(1e-9));
                    }
                    // The ideal bubble of the breakdown is the schedule's own.
                    const auto parts =
                        ppb::iteration_breakdown(even(Schedule::zb_h1, p, m, f, b, w), sim);
                    BOOST_TEST(parts.ideal == (p - 1) * (f + b - std::min({f, b, w})),
                               boost::test_tools::tolerance(1e-9));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(zb_v_with_equal_passes_idles_p_minus_1_passes) {
    // Equal F, B and W per chunk: ZB-V's steady state has no bubble; under ppb's execution model
    // (no communication) PyTorch's order leaves (P - 1) passes of idle time per stage from
    // M = 2P - 1 on, the warm-up's and cool-down's (the paper's figure counts ~0: its T are a
    // stage's, both chunks). Each micro-batch more adds exactly its work, 2(F + B + W).
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 2 * p - 1; m <= 3 * p + 2; ++m) {
            const auto sim = ppb::simulate(even(Schedule::zb_v, p, m, 1, 1, 1));
            BOOST_TEST(sim.makespan == 6.0 * m + (p - 1), "P=" << p << " M=" << m);
        }
    }
}

BOOST_AUTO_TEST_CASE(activations_are_held_until_w) {
    // ZB-H1 holds up to P micro-batches on every stage (1F1B: P - s): stage s defers s weight
    // passes, each keeping its micro-batch.
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 3 * p; ++m) {
            auto in = even(Schedule::zb_h1, p, m, 1, 1, 1);
            in.with_memory = true;
            for (auto& stage : in.costs)
                stage[0].activation_mb = 10.0;
            const auto sim = ppb::simulate(in);
            for (std::uint32_t s = 0; s < p; ++s) {
                const auto counts = ppb::in_flight_counts(Schedule::zb_h1, p, s, m);
                BOOST_TEST(counts == (std::vector<std::uint32_t>{std::min(p, m)}));
                BOOST_TEST(sim.stages[s].peak_in_flight == counts);
                BOOST_TEST(sim.stages[s].peak_memory_mb == 10.0 * std::min(p, m));
                BOOST_TEST(ppb::in_flight_profile(Schedule::zb_h1, p, s, m) ==
                           (std::vector<ppb::InFlightVector>{{std::min(p, m)}}));
            }
        }
    }
    // ZB-V: the counts are the simulated peaks, and the profile's maxima.
    for (std::uint32_t p = 1; p <= 6; ++p) {
        for (std::uint32_t m = 1; m <= 3 * p; ++m) {
            const auto sim = ppb::simulate(even(Schedule::zb_v, p, m, 1, 2, 1));
            for (std::uint32_t s = 0; s < p; ++s) {
                const auto counts = ppb::in_flight_counts(Schedule::zb_v, p, s, m, 2);
                BOOST_TEST(sim.stages[s].peak_in_flight == counts);
                BOOST_TEST(ppb::profile_maxima(
                               ppb::in_flight_profile(Schedule::zb_v, p, s, m, 2)) == counts);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_weight_pass_longer_than_the_backward_is_refused) {
    auto in = even(Schedule::zb_h1, 4, 8, 1, 1, 1);
    in.costs[2][0].weight_time = 3.0;  // backward 2
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(in), "stage 2 chunk 0",
                    "weight-gradient time 3 exceeds the backward time 2");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace zero_bubble_tests
