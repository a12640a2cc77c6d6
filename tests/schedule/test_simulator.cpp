// ppb/simulator.hpp and ppb/schedule_order.hpp: the orders of the four schedules, their timing
// under data dependencies, and the in-flight counts of ppb/schedule.hpp checked against them.
#include "../common/error_testing.hpp"

#include <ppb/errors.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>
#include <ppb/simulator.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using ppb::Pass;
using ppb::Schedule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace simulator_tests {

namespace {

constexpr Schedule all_schedules[] = {Schedule::one_f_one_b, Schedule::interleaved,
                                      Schedule::interleaved_less_memory, Schedule::dualpipe_v};

ppb::SimulationInput uniform(Schedule schedule, std::uint32_t p, std::uint32_t v, std::uint32_t m,
                             double forward, double backward) {
    ppb::SimulationInput in;
    in.schedule = schedule;
    in.num_stages = p;
    in.num_chunks = v;
    in.micro_batches = m;
    in.costs.assign(p, std::vector<ppb::ChunkCost>(v, ppb::ChunkCost{forward, backward, 0.0, 0.0}));
    return in;
}

// "F0:1 B1:0 ...": pass, chunk, micro-batch of each step.
std::string order_text(const std::vector<ppb::StageStep>& order) {
    std::string out;
    for (const auto& step : order) {
        if (!out.empty())
            out += ' ';
        out += (step.pass == Pass::forward ? "F" : "B") + std::to_string(step.chunk) + ":" +
               std::to_string(step.micro_batch);
    }
    return out;
}

// The (P, v, M) each schedule runs, for sweeps: P 1..8, v up to 4, M up to 4P.
std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> shapes(Schedule schedule) {
    std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> out;
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t v = 1; v <= 4; ++v) {
            for (std::uint32_t m = 1; m <= 4 * p + 3; ++m) {
                if (ppb::schedule_shape_problem(schedule, p, v, m).empty())
                    out.emplace_back(p, v, m);
            }
        }
    }
    return out;
}

// Checks what any simulation must satisfy: each (stage, chunk, micro-batch, pass) once, on its
// stage, one operation at a time, after its data, and each as early as its stage and its data
// allow (so the makespan is the one of the schedule's order, not of some slower one).
void check_consistent(const ppb::SimulationInput& in, const ppb::Simulation& sim) {
    const std::uint32_t p = in.num_stages;
    const std::uint32_t v = in.num_chunks;
    const std::uint32_t m = in.micro_batches;
    BOOST_TEST_REQUIRE(sim.operations.size() == 2ull * p * v * m);
    std::map<std::tuple<std::uint32_t, std::uint32_t, Pass>, double> end;  // (position, mb, pass)
    std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, Pass>> seen;
    for (const auto& op : sim.operations) {
        BOOST_TEST((seen.insert({op.stage, op.chunk, op.micro_batch, op.pass}).second));
        const auto q = ppb::pipeline_position(in.schedule, p, op.stage, op.chunk);
        end[{q, op.micro_batch, op.pass}] = op.end;
        const auto& cost = in.costs[op.stage][op.chunk];
        BOOST_TEST(op.end ==
                   op.start + (op.pass == Pass::forward ? cost.forward_time : cost.backward_time));
    }
    const std::size_t per_stage = 2ull * v * m;
    double makespan = 0.0;
    for (std::size_t i = 0; i < sim.operations.size(); ++i) {
        const auto& op = sim.operations[i];
        BOOST_TEST(op.stage == i / per_stage);
        const double stage_free = i % per_stage == 0 ? 0.0 : sim.operations[i - 1].end;
        double data = 0.0;
        const auto q = ppb::pipeline_position(in.schedule, p, op.stage, op.chunk);
        if (op.pass == Pass::forward && q > 0)
            data = end.at({q - 1, op.micro_batch, Pass::forward});
        if (op.pass == Pass::backward) {
            data = end.at({q, op.micro_batch, Pass::forward});
            if (q + 1 < p * v)
                data = std::max(data, end.at({q + 1, op.micro_batch, Pass::backward}));
        }
        BOOST_TEST(op.start == std::max(stage_free, data));
        makespan = std::max(makespan, op.end);
    }
    BOOST_TEST(sim.makespan == makespan);
    double idle = 0.0;
    for (std::uint32_t s = 0; s < p; ++s) {
        double busy = 0.0;
        for (std::size_t i = s * per_stage; i < (s + 1) * per_stage; ++i)
            busy += sim.operations[i].end - sim.operations[i].start;
        BOOST_TEST(sim.stages[s].busy_time == busy, boost::test_tools::tolerance(1e-9));
        BOOST_TEST(sim.stages[s].idle_time == makespan - busy, boost::test_tools::tolerance(1e-9));
        idle += makespan - busy;
    }
    BOOST_TEST(sim.bubble_fraction == idle / (p * makespan), boost::test_tools::tolerance(1e-9));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(orders)

BOOST_AUTO_TEST_CASE(one_f_one_b_warms_up_with_p_minus_s_minus_1_forwards) {
    BOOST_TEST(order_text(ppb::stage_order(Schedule::one_f_one_b, 3, 1, 4, 0)) ==
               "F0:0 F0:1 F0:2 B0:0 F0:3 B0:1 B0:2 B0:3");
    BOOST_TEST(order_text(ppb::stage_order(Schedule::one_f_one_b, 3, 1, 4, 2)) ==
               "F0:0 B0:0 F0:1 B0:1 F0:2 B0:2 F0:3 B0:3");
    BOOST_TEST(order_text(ppb::stage_order(Schedule::one_f_one_b, 3, 1, 1, 0)) == "F0:0 B0:0");
}

BOOST_AUTO_TEST_CASE(interleaved_is_megatrons_order) {
    // P = 2, v = 2, M = 4, stage 0: warm-up 2(P − 1) + (v − 1)P = 4; micro-batches in groups of
    // P through chunk 0 then chunk 1; backwards mirror the chunks.
    BOOST_TEST(order_text(ppb::stage_order(Schedule::interleaved, 2, 2, 4, 0)) ==
               "F0:0 F0:1 F1:0 F1:1 F0:2 B1:0 F0:3 B1:1 F1:2 B0:0 F1:3 B0:1 B1:2 B1:3 B0:2 B0:3");
    // Stage 1: warm-up (v − 1)P = 2.
    BOOST_TEST(order_text(ppb::stage_order(Schedule::interleaved, 2, 2, 4, 1)) ==
               "F0:0 F0:1 F1:0 B1:0 F1:1 B1:1 F0:2 B0:0 F0:3 B0:1 F1:2 B1:2 F1:3 B1:3 B0:2 B0:3");
    // M = P with a warm-up longer than the iteration: all forwards first.
    BOOST_TEST(order_text(ppb::stage_order(Schedule::interleaved, 3, 2, 3, 0)) ==
               "F0:0 F0:1 F0:2 F1:0 F1:1 F1:2 B1:0 B1:1 B1:2 B0:0 B0:1 B0:2");
}

BOOST_AUTO_TEST_CASE(less_memory_warms_up_with_v_p_minus_s_minus_1_forwards) {
    BOOST_TEST(order_text(ppb::stage_order(Schedule::interleaved_less_memory, 2, 2, 4, 0)) ==
               "F0:0 F0:1 F1:0 F1:1 B1:0 F0:2 B1:1 F0:3 B0:0 F1:2 B0:1 F1:3 B1:2 B1:3 B0:2 B0:3");
    BOOST_TEST(order_text(ppb::stage_order(Schedule::interleaved_less_memory, 2, 2, 4, 1)) ==
               "F0:0 F0:1 F1:0 B1:0 F1:1 B1:1 F0:2 B0:0 F0:3 B0:1 F1:2 B1:2 F1:3 B1:3 B0:2 B0:3");
}

BOOST_AUTO_TEST_CASE(dualpipe_v_follows_the_eight_steps) {
    // P = 2, M = 4, worked out by hand from DualPipe-V's steps.
    BOOST_TEST(order_text(ppb::stage_order(Schedule::dualpipe_v, 2, 2, 4, 0)) ==
               "F0:0 F0:1 F0:2 F1:0 B1:0 F1:1 F0:3 B1:1 F1:2 B0:0 B1:2 F1:3 B0:1 B1:3 B0:2 B0:3");
    BOOST_TEST(order_text(ppb::stage_order(Schedule::dualpipe_v, 2, 2, 4, 1)) ==
               "F0:0 F1:0 F0:1 F1:1 F0:2 B1:0 F1:2 B0:0 F0:3 B1:1 F1:3 B0:1 B1:2 B0:2 B1:3 B0:3");
}

BOOST_AUTO_TEST_CASE(every_order_runs_each_operation_once) {
    for (const auto schedule : all_schedules) {
        for (const auto& [p, v, m] : shapes(schedule)) {
            for (std::uint32_t s = 0; s < p; ++s) {
                const auto order = ppb::stage_order(schedule, p, v, m, s);
                std::set<std::tuple<std::uint32_t, std::uint32_t, Pass>> seen;
                bool backward_after_forward = true;
                for (const auto& step : order) {
                    seen.insert({step.chunk, step.micro_batch, step.pass});
                    if (step.pass == Pass::backward)
                        backward_after_forward &=
                            seen.count({step.chunk, step.micro_batch, Pass::forward}) == 1;
                }
                BOOST_TEST(order.size() == 2ull * v * m);
                BOOST_TEST(seen.size() == 2ull * v * m);
                BOOST_TEST(backward_after_forward);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(positions_follow_the_chunks) {
    BOOST_TEST(ppb::pipeline_position(Schedule::interleaved, 4, 1, 0) == 1u);
    BOOST_TEST(ppb::pipeline_position(Schedule::interleaved, 4, 1, 2) == 9u);
    BOOST_TEST(ppb::pipeline_position(Schedule::dualpipe_v, 4, 1, 0) == 1u);
    BOOST_TEST(ppb::pipeline_position(Schedule::dualpipe_v, 4, 1, 1) == 6u);
    BOOST_TEST(ppb::pipeline_position(Schedule::dualpipe_v, 4, 3, 1) == 4u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(timing)

BOOST_AUTO_TEST_CASE(one_f_one_b_uniform_makespan_is_m_plus_p_minus_1_rounds) {
    for (const auto& [forward, backward] : {std::pair{1.0, 2.0}, {1.5, 1.5}, {2.0, 1.0}}) {
        for (std::uint32_t p = 1; p <= 8; ++p) {
            for (std::uint32_t m = 1; m <= 20; ++m) {
                const auto sim =
                    ppb::simulate(uniform(Schedule::one_f_one_b, p, 1, m, forward, backward));
                BOOST_TEST(sim.makespan == (m + p - 1) * (forward + backward),
                           boost::test_tools::tolerance(1e-12));
                BOOST_TEST(sim.bubble_fraction == double(p - 1) / (m + p - 1),
                           boost::test_tools::tolerance(1e-12));
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(interleaved_uniform_makespan_is_megatrons) {
    // Per-chunk times f and b: M·v rounds of work plus P − 1 rounds of one chunk's bubble,
    // (M·v + P − 1)(f + b); the bubble fraction (P − 1) / (M·v + P − 1) is 1/v of 1F1B's.
    for (const auto schedule : {Schedule::interleaved, Schedule::interleaved_less_memory}) {
        for (const auto& [forward, backward] : {std::pair{1.0, 2.0}, {0.5, 0.5}}) {
            for (const auto& [p, v, m] : shapes(schedule)) {
                const auto sim = ppb::simulate(uniform(schedule, p, v, m, forward, backward));
                BOOST_TEST(sim.makespan == (m * v + p - 1) * (forward + backward),
                           boost::test_tools::tolerance(1e-12));
                BOOST_TEST(sim.bubble_fraction == double(p - 1) / (m * v + p - 1),
                           boost::test_tools::tolerance(1e-12));
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(dualpipe_v_steady_state_has_no_bubble) {
    // Each micro-batch more adds exactly its work, 2(f + b), to the makespan: the bubble is
    // the warm-up's and the cool-down's, independent of M.
    for (std::uint32_t p = 1; p <= 8; ++p) {
        double bubble = -1.0;
        for (std::uint32_t m = 2 * p; m <= 2 * p + 12; ++m) {
            const auto sim = ppb::simulate(uniform(Schedule::dualpipe_v, p, 2, m, 1.0, 2.0));
            const double extra = sim.makespan - 2.0 * m * 3.0;
            if (bubble < 0.0)
                bubble = extra;
            BOOST_TEST(extra == bubble);
            BOOST_TEST(extra >= 0.0);
        }
    }
    // P = 1: one stage runs everything back to back.
    BOOST_TEST(ppb::simulate(uniform(Schedule::dualpipe_v, 1, 2, 5, 1.0, 2.0)).makespan == 30.0);
}

BOOST_AUTO_TEST_CASE(every_schedule_respects_dependencies_with_uneven_times) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> time(0.0, 3.0);
    for (const auto schedule : all_schedules) {
        for (const auto& [p, v, m] : shapes(schedule)) {
            if (m > 2 * p + 4)
                continue;  // enough: the orders repeat beyond
            auto in = uniform(schedule, p, v, m, 0, 0);
            for (auto& stage : in.costs) {
                for (auto& c : stage)
                    c = {time(rng), time(rng), 0.0, 0.0};
            }
            const auto sim = ppb::simulate(in);
            BOOST_TEST_CONTEXT(ppb::schedule_name(schedule)
                               << " P=" << p << " v=" << v << " M=" << m) {
                check_consistent(in, sim);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_slow_stage_makes_the_others_wait) {
    // 1F1B, P = 2, M = 2, stage 1 three times slower: stage 0 idles while stage 1 works.
    auto in = uniform(Schedule::one_f_one_b, 2, 1, 2, 1.0, 2.0);
    in.costs[1][0] = {3.0, 6.0, 0.0, 0.0};
    const auto sim = ppb::simulate(in);
    // Stage 1: F0 1..4, B0 4..10, F1 10..13, B1 13..19. Stage 0: F0 0..1, F1 1..2, B0 10..12,
    // B1 19..21.
    BOOST_TEST(sim.makespan == 21.0);
    BOOST_TEST(sim.stages[0].busy_time == 6.0);
    BOOST_TEST(sim.stages[0].idle_time == 15.0);
    BOOST_TEST(sim.stages[1].busy_time == 18.0);
    BOOST_TEST(sim.bubble_fraction == 18.0 / 42.0, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(sim.operations[3].start == 19.0);  // stage 0's B1 waits for stage 1's
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(in_flight)

BOOST_AUTO_TEST_CASE(closed_forms_match_the_simulated_peaks) {
    for (const auto schedule : all_schedules) {
        for (const auto& [p, v, m] : shapes(schedule)) {
            const auto sim = ppb::simulate(uniform(schedule, p, v, m, 1.0, 2.0));
            for (std::uint32_t s = 0; s < p; ++s) {
                BOOST_TEST(
                    sim.stages[s].peak_in_flight == ppb::in_flight_counts(schedule, p, s, m, v),
                    boost::test_tools::per_element());
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(unknown_micro_batches_give_the_long_iteration_counts) {
    // M = 0 (unknown) is the peak of an iteration long enough that no count is capped.
    for (const auto schedule : all_schedules) {
        for (std::uint32_t p = 1; p <= 8; ++p) {
            for (std::uint32_t v = 1; v <= 4; ++v) {
                const std::uint32_t m = 6 * p;
                if (!ppb::schedule_shape_problem(schedule, p, v, m).empty())
                    continue;
                const auto sim = ppb::simulate(uniform(schedule, p, v, m, 1.0, 1.0));
                for (std::uint32_t s = 0; s < p; ++s) {
                    BOOST_TEST(
                        sim.stages[s].peak_in_flight == ppb::in_flight_counts(schedule, p, s, 0, v),
                        boost::test_tools::per_element());
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(peaks_do_not_depend_on_times) {
    // On one stage operations run one at a time, so the counts are the order's.
    auto in = uniform(Schedule::interleaved, 4, 3, 8, 1.0, 2.0);
    in.costs[2][1] = {7.0, 0.5, 0.0, 0.0};
    const auto sim = ppb::simulate(in);
    for (std::uint32_t s = 0; s < 4; ++s) {
        BOOST_TEST(sim.stages[s].peak_in_flight ==
                       ppb::peak_in_flight(ppb::stage_order(Schedule::interleaved, 4, 3, 8, s), 3),
                   boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(memory)

BOOST_AUTO_TEST_CASE(one_f_one_b_peak_is_static_plus_p_minus_s_activations) {
    auto in = uniform(Schedule::one_f_one_b, 4, 1, 8, 1.0, 2.0);
    in.with_memory = true;
    in.static_mb = {1000, 900, 800, 700};
    for (std::uint32_t s = 0; s < 4; ++s)
        in.costs[s][0].activation_mb = 10.0 * (s + 1);
    const auto sim = ppb::simulate(in);
    for (std::uint32_t s = 0; s < 4; ++s) {
        const auto& st = sim.stages[s];
        BOOST_TEST(st.peak_memory_mb == in.static_mb[s] + 10.0 * (s + 1) * (4 - s));
        BOOST_TEST_REQUIRE(!st.memory.empty());
        BOOST_TEST(st.memory.front().time == 0.0);
        BOOST_TEST(st.memory.back().mb == in.static_mb[s]);  // all freed at the end
        for (std::size_t i = 1; i < st.memory.size(); ++i)
            BOOST_TEST(st.memory[i].time > st.memory[i - 1].time);
    }
}

BOOST_AUTO_TEST_CASE(memory_follows_the_held_micro_batches) {
    // The curve at any time is static + Σ activation × micro-batches held then, held counted
    // from each forward's start to its backward's end.
    auto in = uniform(Schedule::dualpipe_v, 3, 2, 7, 1.0, 2.0);
    in.with_memory = true;
    in.static_mb = {50, 60, 70};
    for (std::uint32_t s = 0; s < 3; ++s)
        in.costs[s] = {{1.0, 2.0, 0.0, 3.0}, {1.5, 2.5, 0.5, 5.0}};
    const auto sim = ppb::simulate(in);
    for (std::uint32_t s = 0; s < 3; ++s) {
        for (const auto& point : sim.stages[s].memory) {
            const double t = point.time;
            double expected = in.static_mb[s];
            std::map<std::pair<std::uint32_t, std::uint32_t>, double> start;
            for (const auto& op : sim.operations) {
                if (op.stage == s && op.pass == Pass::forward)
                    start[{op.chunk, op.micro_batch}] = op.start;
            }
            for (const auto& op : sim.operations) {
                if (op.stage == s && op.pass == Pass::backward &&
                    start.at({op.chunk, op.micro_batch}) <= t && op.end > t)
                    expected += in.costs[s][op.chunk].activation_mb;
            }
            BOOST_TEST(point.mb == expected, boost::test_tools::tolerance(1e-12));
        }
    }
}

BOOST_AUTO_TEST_CASE(no_memory_unless_asked) {
    const auto sim = ppb::simulate(uniform(Schedule::one_f_one_b, 2, 1, 2, 1.0, 1.0));
    BOOST_TEST(!sim.with_memory);
    BOOST_TEST(sim.stages[0].memory.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bad_input)

BOOST_AUTO_TEST_CASE(shapes_the_schedule_cannot_run_name_what_it_requires) {
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(uniform(Schedule::one_f_one_b, 0, 1, 4, 1, 1)),
                    "at least one stage");
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(uniform(Schedule::one_f_one_b, 4, 2, 4, 1, 1)),
                    "1f1b runs one chunk per stage, got 2");
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(uniform(Schedule::interleaved, 4, 1, 4, 1, 1)),
                    "interleaved runs at least two chunks per stage, got 1");
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(uniform(Schedule::dualpipe_v, 4, 3, 8, 1, 1)),
                    "dualpipe-v runs two chunks per stage, got 3");
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(uniform(Schedule::dualpipe_v, 4, 2, 7, 1, 1)),
                    "dualpipe-v needs at least twice as many micro-batches as stages (2 x 4 = 8), "
                    "got 7");
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(uniform(Schedule::interleaved, 4, 2, 6, 1, 1)),
                    "interleaved needs a multiple of the 4 stages as micro-batches (4, 8, 12, ...",
                    "got 6");
    PPB_CHECK_ERROR(ppb::InputError,
                    ppb::simulate(uniform(Schedule::interleaved_less_memory, 4, 2, 2, 1, 1)),
                    "interleaved-less-memory needs a multiple of the 4 stages", "got 2");
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(uniform(Schedule::one_f_one_b, 4, 1, 0, 1, 1)),
                    "1f1b needs at least one micro-batch, got 0");
}

BOOST_AUTO_TEST_CASE(negative_or_nan_times_are_refused) {
    auto in = uniform(Schedule::one_f_one_b, 2, 1, 2, 1.0, 1.0);
    in.costs[1][0].forward_time = -1.0;
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(in), "stage 1 chunk 0: forward time is -1");
    in.costs[1][0].forward_time = 1.0;
    in.costs[0][0].backward_time = std::numeric_limits<double>::quiet_NaN();
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(in), "stage 0 chunk 0: backward time is nan");
    in.costs[0][0].backward_time = 1.0;
    in.costs[0][0].recompute_time = 2.0;
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(in), "recompute time 2 exceeds");
    in.costs[0][0].recompute_time = 0.0;
    in.with_memory = true;
    in.costs[0][0].activation_mb = std::numeric_limits<double>::infinity();
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(in), "activation memory is inf");
}

BOOST_AUTO_TEST_CASE(costs_of_the_wrong_shape_are_refused) {
    auto in = uniform(Schedule::interleaved, 2, 2, 2, 1.0, 1.0);
    in.costs[1].pop_back();
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(in), "stage 1: costs are given for 1 chunks");
    in.costs.pop_back();
    PPB_CHECK_ERROR(ppb::InputError, ppb::simulate(in), "costs are given for 1 stages");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace simulator_tests
