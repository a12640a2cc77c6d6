// What a planned stage's memory is made of (memory_breakdown): for a linear model the parts are
// the coefficients times the plan's counts and add up to the memory the partitioner planned, on
// random instances under every schedule (the in-flight count of each chunk its own); without
// coefficients only the probed activations are known, and the rest is the remainder.
#include "brute_force.hpp"

#include <ppb/partition/memory_breakdown.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/schedule.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <memory>
#include <numeric>
#include <random>

namespace pt = ppb::partition::test;
using ppb::Schedule;
using ppb::partition::MemoryBreakdown;
using ppb::partition::MemorySource;
using ppb::partition::Plan;
using ppb::partition::Problem;

BOOST_AUTO_TEST_SUITE(memory_breakdown)

BOOST_AUTO_TEST_CASE(linear_parts_add_up_to_the_planned_memory) {
    std::mt19937 rng(2026);
    std::size_t checked = 0;
    for (const Schedule schedule : {Schedule::one_f_one_b, Schedule::interleaved,
                                    Schedule::interleaved_less_memory, Schedule::dualpipe_v}) {
        for (int round = 0; round < 40; ++round) {
            const std::uint32_t stages = pt::int_in(rng, 2, 4);
            const std::uint32_t chunks = schedule == Schedule::one_f_one_b ? 1 : 2;
            const std::uint32_t micro_batches = stages * pt::int_in(rng, 2, 4);
            const pt::Coefficients c =
                pt::draw(rng, pt::Variant::real, PPB_ALL_KINDS, stages * chunks * 3, false);
            Problem p = pt::make_problem(stages, micro_batches, PPB_ALL_KINDS, c, 1e9);
            p.schedule = schedule;
            p.chunks = chunks;
            MemorySource memory;
            memory.linear = c.memory;
            const Plan plan = ppb::partition::solve(p, memory);
            const auto parts = ppb::partition::memory_breakdown(p, plan, memory);
            BOOST_TEST_REQUIRE(parts.size() == plan.stages.size());
            for (const auto& stage : plan.stages) {
                const MemoryBreakdown& b = parts[stage.stage];
                const std::string where = fmt::format(
                    "{} stage {} of {}", ppb::schedule_name(schedule), stage.stage, stages);
                BOOST_TEST(b.itemised, where);
                BOOST_TEST(b.constant_mb == c.memory.const_mb, where);
                // The ends where the schedule puts them: under dualpipe-v the V comes back to
                // stage 0 with the LM head.
                const std::uint32_t tail_stage = schedule == Schedule::dualpipe_v ? 0 : stages - 1;
                BOOST_TEST(b.head_mb == (stage.stage == 0 ? c.memory.head_mb : 0.0), where);
                BOOST_TEST(b.tail_mb == (stage.stage == tail_stage ? c.memory.tail_mb : 0.0),
                           where);
                double layers = 0.0;
                for (const auto n : stage.layers)
                    layers += n;
                BOOST_TEST(pt::close(b.parameters_mb, layers * c.memory.per_layer_mb), where);
                const double activations =
                    std::accumulate(b.activation_mb.begin(), b.activation_mb.end(), 0.0);
                BOOST_TEST_REQUIRE(b.activations_total_mb.has_value());
                BOOST_TEST(pt::close(*b.activations_total_mb, activations), where);
                const double total =
                    b.constant_mb + b.head_mb + b.tail_mb + b.parameters_mb + activations;
                BOOST_TEST(pt::close(total, stage.memory_mb, 1e-9 * stage.memory_mb), where);
                ++checked;
            }
        }
    }
    BOOST_TEST(checked > 400u);
}

BOOST_AUTO_TEST_CASE(without_coefficients_only_probed_activations_are_known) {
    std::mt19937 rng(7);
    const pt::Coefficients c = pt::draw(rng, pt::Variant::real, PPB_ALL_KINDS, 12, false);
    Problem p = pt::make_problem(4, 8, PPB_ALL_KINDS, c, 1e9);
    const MemorySource memory =
        pt::batch_source(c.memory, p, PPB_ALL_KINDS, std::make_shared<pt::BatchLog>());
    const Plan plan = ppb::partition::solve(p, memory);
    const auto parts = ppb::partition::memory_breakdown(p, plan, memory);
    BOOST_TEST_REQUIRE(parts.size() == (plan.activations_known ? plan.stages.size() : 0u));
    for (const auto& stage : plan.stages) {
        if (!plan.activations_known)
            break;
        const MemoryBreakdown& b = parts[stage.stage];
        BOOST_TEST(!b.itemised);
        double probed = 0.0;
        for (const auto& chunk : stage.chunks)
            probed += chunk.activation_mb * chunk.in_flight;
        BOOST_TEST(*b.activations_total_mb == probed);
        BOOST_TEST(pt::close(b.other_mb + probed, stage.memory_mb));
    }
}

BOOST_AUTO_TEST_SUITE_END()
