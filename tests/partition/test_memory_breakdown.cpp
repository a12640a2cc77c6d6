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
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

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

namespace {

// C + H [s = 0] + T [s = P - 1] + sum_c sum_k (per_layer + A_k f_c) n_{c,k}, as a model would
// predict a placement (the ends by its (num_stages, stage), as the host describes a stage).
double affine_prediction(const ppb_linear_parameters& c, const ppb_placement& p) {
    double m = c.const_mb + (p.stage == 0 ? c.head_mb : 0.0) +
               (p.stage + 1 == p.num_stages ? c.tail_mb : 0.0);
    for (std::uint32_t chunk = 0; chunk < p.num_chunks; ++chunk) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            const double n = p.chunks[chunk].layers[k];
            m += (c.per_layer_mb + c.activation_mb[k] * p.chunks[chunk].in_flight) * n;
        }
    }
    return m;
}

// A model without coefficients that predicts affine_prediction() and gives its terms: the
// constant, the head, the tail, the layers' parameters and the activations, each of `extra_mb`
// more in its last term (a model whose terms do not add up to its predictions).
MemorySource model_with_terms(const ppb_linear_parameters& c, double extra_mb) {
    MemorySource memory;
    memory.predict_batch = [c](std::span<const ppb_placement> placements) {
        std::vector<double> out;
        for (const ppb_placement& p : placements)
            out.push_back(affine_prediction(c, p));
        return out;
    };
    memory.predict_parts = [c, extra_mb](const ppb_grouped_placement& g) {
        const ppb_placement& p = g.placement;
        BOOST_TEST_REQUIRE(g.num_groups == 1u);
        double layers = 0.0;
        double activations = 0.0;
        for (std::uint32_t chunk = 0; chunk < p.num_chunks; ++chunk) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                const double n = g.group_layers[chunk * PPB_KIND_COUNT + k];
                BOOST_TEST(n == p.chunks[chunk].layers[k]);
                layers += n;
                activations += c.activation_mb[k] * p.chunks[chunk].in_flight * n;
            }
        }
        return std::optional<std::vector<ppb::MemoryPart>>(std::vector<ppb::MemoryPart>{
            {"constant", "constant", c.const_mb},
            {"head", "embedding", p.stage == 0 ? c.head_mb : 0.0},
            {"tail", "LM head", p.stage + 1 == p.num_stages ? c.tail_mb : 0.0},
            {"parameters", "layers' parameters", c.per_layer_mb * layers},
            {"activations", "activations", activations + extra_mb}});
    };
    return memory;
}

}  // namespace

// A model that gives the terms of its predictions (plugin API 1.4) has each stage broken into its
// terms of the stage's placement as the plan holds it: each chunk's layers at its in-flight count
// where the stage peaks, the ends where the schedule puts them.
BOOST_AUTO_TEST_CASE(a_model_that_gives_its_terms_is_broken_into_them) {
    std::mt19937 rng(2027);
    std::size_t checked = 0;
    for (const Schedule schedule :
         {Schedule::one_f_one_b, Schedule::interleaved, Schedule::dualpipe_v}) {
        for (int round = 0; round < 10; ++round) {
            const std::uint32_t stages = pt::int_in(rng, 2, 4);
            const std::uint32_t chunks = schedule == Schedule::one_f_one_b ? 1 : 2;
            const std::uint32_t micro_batches = stages * pt::int_in(rng, 2, 4);
            const pt::Coefficients c =
                pt::draw(rng, pt::Variant::real, PPB_ALL_KINDS, stages * chunks * 3, false);
            Problem p = pt::make_problem(stages, micro_batches, PPB_ALL_KINDS, c, 1e9);
            p.schedule = schedule;
            p.chunks = chunks;
            const MemorySource memory = model_with_terms(c.memory, 0.0);
            const Plan plan = ppb::partition::solve(p, memory);
            const auto parts = ppb::partition::memory_breakdown(p, plan, memory);
            BOOST_TEST_REQUIRE(parts.size() == plan.stages.size());
            const std::uint32_t tail_stage = schedule == Schedule::dualpipe_v ? 0 : stages - 1;
            for (const auto& stage : plan.stages) {
                const std::string where = fmt::format(
                    "{} stage {} of {}", ppb::schedule_name(schedule), stage.stage, stages);
                const MemoryBreakdown& b = parts[stage.stage];
                BOOST_TEST(!b.itemised, where);
                BOOST_TEST_REQUIRE(b.parts.size() == 5u, where);
                double layers = 0.0;
                double activations = 0.0;
                for (const auto& chunk : stage.chunks) {
                    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                        layers += chunk.layers[k];
                        activations +=
                            c.memory.activation_mb[k] * chunk.in_flight * chunk.layers[k];
                    }
                }
                BOOST_TEST(b.parts[0].mb == c.memory.const_mb, where);
                BOOST_TEST(b.parts[1].mb == (stage.stage == 0 ? c.memory.head_mb : 0.0), where);
                BOOST_TEST(b.parts[2].mb == (stage.stage == tail_stage ? c.memory.tail_mb : 0.0),
                           where);
                BOOST_TEST(pt::close(b.parts[3].mb, layers * c.memory.per_layer_mb), where);
                BOOST_TEST(pt::close(b.parts[4].mb, activations), where);
                double total = 0.0;
                for (const auto& part : b.parts)
                    total += part.mb;
                BOOST_TEST(pt::close(total, stage.memory_mb, 1e-9 * stage.memory_mb), where);
                ++checked;
            }
        }
    }
    BOOST_TEST(checked > 60u);

    // Terms that do not add up to the plan's memory do not describe it: the stages are broken
    // down as a model's without terms.
    std::mt19937 again(11);
    const pt::Coefficients c = pt::draw(again, pt::Variant::real, PPB_ALL_KINDS, 12, false);
    const Problem p = pt::make_problem(4, 8, PPB_ALL_KINDS, c, 1e9);
    const MemorySource off = model_with_terms(c.memory, 1.0);
    const Plan plan = ppb::partition::solve(p, off);
    for (const MemoryBreakdown& b : ppb::partition::memory_breakdown(p, plan, off))
        BOOST_TEST(b.parts.empty());
}

BOOST_AUTO_TEST_SUITE_END()
