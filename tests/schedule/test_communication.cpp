// Communication between stages in the simulator (ppb::SimulationInput::comm_time) and the
// iteration's breakdown (ppb::iteration_breakdown): closed forms of evenly loaded pipelines, and
// the parts adding up to the simulated iteration on uneven ones.
#include "../common/error_testing.hpp"

#include <ppb/errors.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>
#include <ppb/simulator.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using ppb::Schedule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace communication_tests {

namespace {

ppb::SimulationInput even(Schedule schedule, std::uint32_t p, std::uint32_t v, std::uint32_t m,
                          double forward, double backward, std::vector<double> comm = {}) {
    ppb::SimulationInput in;
    in.schedule = schedule;
    in.num_stages = p;
    in.num_chunks = v;
    in.micro_batches = m;
    in.costs.assign(p, std::vector<ppb::ChunkCost>(v, ppb::ChunkCost{forward, backward, 0.0, 0.0}));
    in.comm_time = std::move(comm);
    return in;
}

// 1F1B, every stage f and b, every boundary c: (M + P − 1)(f + b) + 2c(P − 1 + ⌊(P − 1)(M − 1)/P⌋).
// A micro-batch goes down P − 1 boundaries and back up: 2(P − 1)c on its round trip (M = 1 and
// M = 2 pay that alone). In the steady state stage 0's forward of micro-batch k + P waits for the
// backward of k, whose round trip through every later stage crosses the 2(P − 1) transfers that
// the stages' own work does not cover: every P micro-batches another 2(P − 1)c, spread as the
// floor shows (the term does not depend on f and b: each stall is a chain of transfers).
double one_f_one_b_closed_form(std::uint32_t p, std::uint32_t m, double f, double b, double c) {
    return (m + p - 1) * (f + b) + 2.0 * c * ((p - 1) + ((p - 1) * (m - 1)) / p);
}

constexpr Schedule all_schedules[] = {Schedule::one_f_one_b, Schedule::interleaved,
                                      Schedule::interleaved_less_memory, Schedule::dualpipe_v};

std::uint32_t chunks_of(Schedule s) {
    return s == Schedule::one_f_one_b ? 1 : 2;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(communication)

BOOST_AUTO_TEST_CASE(one_f_one_b_even_stages_match_the_closed_form) {
    const struct {
        double f, b, c;
    } cases[] = {{1.0, 2.0, 0.1}, {3.0, 1.0, 3.5}, {1.0, 2.0, 10.0}, {5.0, 1.0, 1.0 / 7}};
    for (const auto& [f, b, c] : cases) {
        for (std::uint32_t p = 1; p <= 8; ++p) {
            for (std::uint32_t m = 1; m <= 3 * p + 2; ++m) {
                const auto in = even(Schedule::one_f_one_b, p, 1, m, f, b, {c});
                const auto sim = ppb::simulate(in);
                BOOST_TEST_CONTEXT("P=" << p << " M=" << m << " f=" << f << " b=" << b
                                        << " c=" << c) {
                    BOOST_TEST(sim.makespan == one_f_one_b_closed_form(p, m, f, b, c),
                               boost::test_tools::tolerance(1e-9));
                    // Broken down: the work M(f + b), the ideal bubble (P − 1)(f + b), no
                    // imbalance, the communication as above, no recomputation.
                    const auto parts = ppb::iteration_breakdown(in, sim);
                    BOOST_TEST(parts.work == m * (f + b), boost::test_tools::tolerance(1e-9));
                    BOOST_TEST(parts.ideal == (p - 1) * (f + b),
                               boost::test_tools::tolerance(1e-9));
                    BOOST_TEST(std::abs(parts.imbalance) < 1e-9 * sim.makespan);
                    BOOST_TEST(parts.communication == 2.0 * c * ((p - 1) + ((p - 1) * (m - 1)) / p),
                               boost::test_tools::tolerance(1e-9));
                    BOOST_TEST(parts.recompute == 0.0);
                    // The estimate's communication is exact for even stages.
                    BOOST_TEST(ppb::communication_of_balanced(in) == parts.communication,
                               boost::test_tools::tolerance(1e-9));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(one_micro_batch_crosses_every_boundary_twice) {
    // M = 1: nothing overlaps, the iteration is the micro-batch's way down and back up,
    // P(f + b) + 2 Σ_b c_b, with any time per boundary — and under DualPipe-V's V (M = 2P) each
    // boundary is crossed down and up by each chunk's path, its turn at the last stage free.
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> time(0.0, 2.0);
    for (std::uint32_t p = 1; p <= 8; ++p) {
        std::vector<double> comm(p == 1 ? 0 : p - 1);
        double sum = 0.0;
        for (double& c : comm) {
            c = time(rng);
            sum += c;
        }
        const auto sim = ppb::simulate(even(Schedule::one_f_one_b, p, 1, 1, 1.0, 2.0, comm));
        BOOST_TEST(sim.makespan == p * 3.0 + 2.0 * sum, boost::test_tools::tolerance(1e-9));
        BOOST_TEST(sim.comm_time == (comm.empty() ? std::vector<double>{} : comm));
    }
}

BOOST_AUTO_TEST_CASE(one_stage_has_nothing_to_send) {
    // Every chunk on one stage (the interleaved wrap and DualPipe-V's turn stay on stage 0).
    for (const auto schedule : all_schedules) {
        const std::uint32_t v = chunks_of(schedule);
        const auto without = ppb::simulate(even(schedule, 1, v, 4, 1.0, 2.0));
        const auto with = ppb::simulate(even(schedule, 1, v, 4, 1.0, 2.0, {5.0}));
        BOOST_TEST(with.makespan == without.makespan);
    }
}

BOOST_AUTO_TEST_CASE(the_parts_add_up_to_the_simulated_iteration) {
    std::mt19937 rng(17);
    std::uniform_real_distribution<double> time(0.1, 3.0);
    std::uniform_real_distribution<double> share(0.0, 0.5);
    for (const auto schedule : all_schedules) {
        const std::uint32_t v = chunks_of(schedule);
        for (std::uint32_t p = 2; p <= 6; ++p) {
            const std::uint32_t m = schedule == Schedule::one_f_one_b ? p + 3 : 2 * p;
            auto in = even(schedule, p, v, m, 0.0, 0.0);
            for (auto& stage : in.costs) {
                for (auto& c : stage) {
                    c.forward_time = time(rng);
                    c.backward_time = 2.0 * time(rng);
                    c.recompute_time = share(rng) * c.backward_time;
                }
            }
            in.comm_time.assign(ppb::comm_boundaries(schedule, p), 0.0);
            for (double& c : in.comm_time)
                c = share(rng);
            const auto sim = ppb::simulate(in);
            const auto parts = ppb::iteration_breakdown(in, sim);
            BOOST_TEST_CONTEXT(ppb::schedule_name(schedule) << " P=" << p) {
                BOOST_TEST(parts.iteration == sim.makespan);
                BOOST_TEST(parts.work + parts.ideal + parts.imbalance + parts.communication +
                                   parts.recompute ==
                               sim.makespan,
                           boost::test_tools::tolerance(1e-9));
                BOOST_TEST(parts.communication > 0.0);
                BOOST_TEST(parts.ideal >= 0.0);
                BOOST_TEST(parts.recompute > 0.0);
                // Communication never makes the iteration shorter, stage by stage.
                auto without = in;
                without.comm_time.clear();
                BOOST_TEST(ppb::simulate(without).makespan <= sim.makespan);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(bad_communication_times_are_refused) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    PPB_CHECK_ERROR(ppb::InputError,
                    ppb::simulate(even(Schedule::one_f_one_b, 4, 1, 4, 1.0, 2.0, {-1.0})),
                    "communication time 1 is -1", "at least 0");
    PPB_CHECK_ERROR(ppb::InputError,
                    ppb::simulate(even(Schedule::one_f_one_b, 4, 1, 4, 1.0, 2.0, {nan})), "finite");
    PPB_CHECK_ERROR(ppb::InputError,
                    ppb::simulate(even(Schedule::one_f_one_b, 4, 1, 4, 1.0, 2.0, {1, 2})),
                    "2 communication times given", "3");
    // The interleaved schedules take P: the last from stage P − 1 back to stage 0.
    PPB_CHECK_ERROR(ppb::InputError,
                    ppb::simulate(even(Schedule::interleaved, 4, 2, 4, 1.0, 2.0, {1, 2, 3})), "4",
                    "back to stage 0");
    BOOST_TEST(
        ppb::simulate(even(Schedule::interleaved, 4, 2, 4, 1.0, 2.0, {1, 2, 3, 4})).comm_time ==
        (std::vector<double>{1, 2, 3, 4}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace communication_tests
