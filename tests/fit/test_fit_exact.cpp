// Noise-free observations: the fit recovers the generating coefficients exactly, for every set
// of recompute kinds, with and without a separable constant, with several chunks per stage and
// with pipeline degrees mixed.
#include "fit_support.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <bit>

namespace bdata = boost::unit_test::data;
using namespace ppb::fit_test;
using ppb::dryrun_lsq::FitResult;
using ppb::dryrun_lsq::index;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace fit_exact_tests {

namespace {

constexpr std::uint32_t stages = 16;
constexpr std::uint32_t micro_batches = 32;

bool kind_in(std::uint32_t mask, std::size_t k) {
    return (mask & PPB_KIND_BIT(k)) != 0;
}

// The activations of kinds in `mask` are exact, the others null and not considered.
void check_activations(const FitResult& fit, std::uint32_t mask, const Truth& truth) {
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const auto p = ppb::dryrun_lsq::activation(static_cast<ppb_kind>(k));
        BOOST_TEST(fit.kind_considered[k] == kind_in(mask, k));
        if (kind_in(mask, k)) {
            check_estimate(fit, p, truth.activation_mb[k]);
        } else {
            check_null(fit, p);
        }
    }
}

// Every observed placement is predicted exactly.
void check_reproduces(const FitResult& fit, const DryRuns& runs) {
    for (const auto& o : runs.observations()) {
        BOOST_TEST(close(ppb::dryrun_lsq::predict(fit, o.placement.view()), o.peak_memory_mb));
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(exact_recovery)

// Body stages hold different numbers of layers, so const_mb is separable from the rest.
BOOST_DATA_TEST_CASE(separable_const_for_every_set_of_kinds, bdata::xrange(1u, 32u), mask) {
    std::mt19937 rng(1000 + mask);
    DryRuns runs;
    for (std::uint32_t s = 0; s < stages; ++s) {
        runs.observe(stages, s, random_layers(rng, mask, 1, 3), micro_batches);
    }
    const FitResult fit = runs.fit();
    const Truth& truth = runs.truth();

    BOOST_TEST(!fit.const_folded);
    BOOST_TEST(fit.not_identifiable.empty());
    BOOST_TEST(fit.rank == 4u + static_cast<unsigned>(std::popcount(mask)));
    BOOST_TEST(fit.unknowns.size() == fit.rank);
    check_estimate(fit, Parameter::const_mb, truth.const_mb);
    check_estimate(fit, Parameter::head_mb, truth.head_mb);
    check_estimate(fit, Parameter::tail_mb, truth.tail_mb);
    check_estimate(fit, Parameter::param_per_layer_mb, truth.per_layer_mb);
    check_activations(fit, mask, truth);
    BOOST_TEST(fit.max_abs_residual_mb < 1e-6);

    // A placement that was never observed is predicted from the recovered coefficients.
    const auto unseen = stage(stages, 5, random_layers(rng, mask, 4, 6), micro_batches);
    BOOST_TEST(close(ppb::dryrun_lsq::predict(fit, unseen.view()), truth.memory(unseen.view())));
}

// Every body stage holds 6 layers: const_mb cannot be told apart from 6 * param_per_layer_mb.
// The fit falls back to const_mb = 0; the other parameters absorb it as the model equation
// dictates, activations are unaffected, and the observations are still reproduced.
BOOST_DATA_TEST_CASE(folded_const_for_every_set_of_kinds, bdata::xrange(1u, 32u), mask) {
    constexpr std::uint32_t body_layers = 6;
    std::mt19937 rng(2000 + mask);
    DryRuns runs;
    const Layers head = random_layers(rng, mask, 1, 3);
    const Layers tail = random_layers(rng, mask, 1, 3);
    runs.observe(stages, 0, head, micro_batches);
    for (std::uint32_t s = 1; s + 1 < stages; ++s) {
        runs.observe(stages, s, random_split(rng, mask, body_layers), micro_batches);
    }
    runs.observe(stages, stages - 1, tail, micro_batches);
    const FitResult fit = runs.fit();
    const Truth& t = runs.truth();

    BOOST_TEST(fit.const_folded);
    check_null(fit, Parameter::const_mb);
    BOOST_TEST_REQUIRE(fit.not_identifiable.size() == 1u);
    BOOST_TEST((fit.not_identifiable[0].parameter == Parameter::const_mb));
    BOOST_TEST(mentions(fit.not_identifiable[0].reason, "n = 6"));

    // With C = 0 the body stages' C + 6 P becomes 6 P', and the end stages keep their totals.
    const auto n = [](const Layers& l) {
        return static_cast<double>(l[0] + l[1] + l[2] + l[3] + l[4]);
    };
    const double c_share = t.const_mb / body_layers;
    check_estimate(fit, Parameter::param_per_layer_mb, t.per_layer_mb + c_share);
    check_estimate(fit, Parameter::head_mb, t.head_mb + t.const_mb - n(head) * c_share);
    check_estimate(fit, Parameter::tail_mb, t.tail_mb + t.const_mb - n(tail) * c_share);
    check_activations(fit, mask, t);
    check_reproduces(fit, runs);
}

// Interleaved schedules: two chunks per stage, each with its own counts and in-flight count
// (dualpipe-V: chunk 0 holds min(2p - s, m) micro-batches, chunk 1 min(s + 1, m)).
BOOST_AUTO_TEST_CASE(several_chunks_per_stage) {
    constexpr std::uint32_t p = 4;
    constexpr std::uint32_t m = 16;
    std::mt19937 rng(31);
    DryRuns runs;
    for (int run = 0; run < 4; ++run) {
        for (std::uint32_t s = 0; s < p; ++s) {
            ppb::StagePlacement placement;
            placement.num_stages = p;
            placement.stage = s;
            for (const std::uint32_t f : {std::min(2 * p - s, m), std::min(s + 1, m)}) {
                ppb_chunk chunk{};
                const Layers layers = random_layers(rng, PPB_ALL_KINDS, 0, 2);
                std::copy(layers.begin(), layers.end(), chunk.layers);
                chunk.in_flight = f;
                placement.chunks.push_back(chunk);
            }
            runs.observe(std::move(placement));
        }
    }
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.not_identifiable.empty());
    for (const Parameter p_ : all_parameters)
        check_estimate(fit, p_, runs.truth().value(p_));
    check_reproduces(fit, runs);
}

// Dry runs at p = 2, 3 and 6 in one fit; a placement at p = 12, never observed, is predicted.
BOOST_AUTO_TEST_CASE(pipeline_degrees_mixed_in_one_fit) {
    constexpr std::uint32_t kinds =
        PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_SELECT) | PPB_KIND_BIT(PPB_KIND_FULL);
    std::mt19937 rng(7);
    DryRuns runs;
    for (const std::uint32_t p : {2u, 3u, 6u}) {
        for (std::uint32_t s = 0; s < p; ++s)
            runs.observe(p, s, random_layers(rng, kinds, 1, 4), 8);
    }
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.not_identifiable.empty());
    BOOST_TEST(!fit.const_folded);
    check_estimate(fit, Parameter::const_mb, runs.truth().const_mb);
    check_estimate(fit, Parameter::head_mb, runs.truth().head_mb);
    check_estimate(fit, Parameter::tail_mb, runs.truth().tail_mb);
    check_estimate(fit, Parameter::param_per_layer_mb, runs.truth().per_layer_mb);
    check_activations(fit, kinds, runs.truth());

    const auto unseen = stage(12, 3, {2, 1, 0, 0, 1}, 8);
    BOOST_TEST(
        close(ppb::dryrun_lsq::predict(fit, unseen.view()), runs.truth().memory(unseen.view())));
}

// As many observations as unknowns, in general position: solved, no standard errors.
BOOST_AUTO_TEST_CASE(exactly_determined_fit_is_solved) {
    DryRuns runs;
    const Layers none_3 = {3, 0, 0, 0, 0};
    runs.observe(8, 0, {2, 0, 0, 0, 0}, 8);
    runs.observe(8, 1, none_3, 8);
    runs.observe(8, 2, {4, 0, 0, 0, 0}, 8);
    runs.observe(8, 3, {5, 0, 0, 0, 0}, 8);
    runs.observe(8, 7, none_3, 8);
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.rows == 5u);
    BOOST_TEST(fit.rank == 5u);
    BOOST_TEST(fit.degrees_of_freedom() == 0u);
    for (const auto& se : fit.std_errors)
        BOOST_TEST(!se.has_value());
    check_estimate(fit, Parameter::const_mb, runs.truth().const_mb);
    check_estimate(fit, Parameter::head_mb, runs.truth().head_mb);
    check_estimate(fit, Parameter::tail_mb, runs.truth().tail_mb);
    check_estimate(fit, Parameter::param_per_layer_mb, runs.truth().per_layer_mb);
    check_estimate(fit, Parameter::activation_none, runs.truth().activation_mb[PPB_KIND_NONE]);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fit_exact_tests
