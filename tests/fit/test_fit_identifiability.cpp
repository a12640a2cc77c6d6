// What the data do not determine is reported, explained, and never predicted from; what they
// do determine is exact.
#include "fit_support.hpp"

#include <ppb/plugin.hpp>

#include <boost/test/unit_test.hpp>

using namespace ppb::fit_test;
using ppb::dryrun_lsq::FitResult;
using ppb::dryrun_lsq::index;
using ppb::dryrun_lsq::predict;
using ppb::plugin::InvalidInput;
using ppb::plugin::NotEstimable;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace fit_identifiability_tests {

namespace {

// An 8-stage 1F1B run of `none` layers whose body stages hold different counts.
void observe_separable_run(DryRuns& runs, bool head = true, bool tail = true) {
    const std::array<std::uint32_t, 8> counts = {2, 3, 4, 3, 5, 4, 3, 2};
    for (std::uint32_t s = 0; s < 8; ++s) {
        if ((s == 0 && !head) || (s == 7 && !tail))
            continue;
        runs.observe(8, s, none(counts[s]), 8);
    }
}

const ppb::dryrun_lsq::UnidentifiedParameter& entry_for(const FitResult& fit, Parameter p) {
    const auto* e = fit.why_not_identified(p);
    BOOST_TEST_REQUIRE(e != nullptr, "no not_identifiable entry for " << ppb::dryrun_lsq::name(p));
    return *e;
}

bool fit_is_rank_deficient(const FitResult& fit) {
    return fit.rank < fit.unknowns.size() + (fit.const_folded ? 1 : 0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(identifiability)

// Run A (p = 4) has equal body counts; run B (p = 8) too, with another kind and count. Each
// alone confounds const_mb with the per-layer memory; together they determine everything.
BOOST_AUTO_TEST_CASE(two_dry_runs_identify_together_what_neither_does_alone) {
    DryRuns a;
    a.observe(4, 0, none(2), 8);
    a.observe(4, 1, none(3), 8);
    a.observe(4, 2, none(3), 8);
    a.observe(4, 3, none(2), 8);
    DryRuns b;
    const Layers select_2 = {0, 2, 0, 0, 0};
    b.observe(8, 0, {0, 1, 0, 0, 0}, 8);
    for (std::uint32_t s = 1; s < 7; ++s)
        b.observe(8, s, select_2, 8);
    b.observe(8, 7, {0, 1, 0, 0, 0}, 8);

    for (const DryRuns* alone : {&a, &b}) {
        const FitResult fit = alone->fit();
        BOOST_TEST(fit_is_rank_deficient(fit));
        BOOST_TEST(fit.const_folded);
        check_null(fit, Parameter::const_mb);
    }

    DryRuns joint;
    joint.append(a);
    joint.append(b);
    const FitResult fit = joint.fit();
    BOOST_TEST(!fit_is_rank_deficient(fit));
    BOOST_TEST(!fit.const_folded);
    BOOST_TEST(fit.not_identifiable.empty());
    for (const Parameter p : {Parameter::const_mb, Parameter::head_mb, Parameter::tail_mb,
                              Parameter::param_per_layer_mb, Parameter::activation_none,
                              Parameter::activation_select}) {
        check_estimate(fit, p, joint.truth().value(p));
    }
}

// select layers only on stage 0: head_mb and activation_mb.select are confounded, and each
// entry names the other. Everything else is exact, and so is any prediction that does not need
// them apart.
BOOST_AUTO_TEST_CASE(kind_seen_only_on_the_head_stage_gives_a_partial_result) {
    DryRuns runs;
    const Layers head = {2, 2, 0, 0, 0};
    runs.observe(8, 0, head, 8);
    observe_separable_run(runs, /*head=*/false);
    const FitResult fit = runs.fit();
    const Truth& t = runs.truth();

    check_null(fit, Parameter::head_mb);
    check_null(fit, Parameter::activation_select);
    BOOST_TEST(mentions(entry_for(fit, Parameter::head_mb).reason, "activation_mb.select"));
    BOOST_TEST(mentions(entry_for(fit, Parameter::activation_select).reason, "head_mb"));
    BOOST_TEST(!entry_for(fit, Parameter::activation_select).suggestion.empty());
    BOOST_TEST(fit.not_identifiable.size() == 2u);
    for (const Parameter p : {Parameter::const_mb, Parameter::tail_mb,
                              Parameter::param_per_layer_mb, Parameter::activation_none}) {
        check_estimate(fit, p, t.value(p));
    }
    // What the data determine: stage 0's head plus its select activations (2 layers x 8).
    BOOST_TEST_REQUIRE(fit.estimable_combinations.size() == 1u);
    BOOST_TEST(fit.estimable_combinations[0] == "head_mb + 16 * activation_mb.select");

    const auto body = stage(8, 3, none(6), 8);
    BOOST_TEST(close(predict(fit, body.view()), t.memory(body.view())));
    // Stage 0 as observed, or with other none layers, only needs head + 16 select: estimable.
    const auto as_observed = stage(8, 0, head, 8);
    BOOST_TEST(close(predict(fit, as_observed.view()), t.memory(as_observed.view())));
    const auto more_none = stage(8, 0, {5, 2, 0, 0, 0}, 8);
    BOOST_TEST(close(predict(fit, more_none.view()), t.memory(more_none.view())));
    // Stage 0 with another number of select layers, or none, needs them apart.
    const auto more_select = stage(8, 0, {2, 3, 0, 0, 0}, 8);
    BOOST_CHECK_THROW(static_cast<void>(predict(fit, more_select.view())), NotEstimable);
    const auto no_select = stage(8, 0, none(3), 8);
    try {
        static_cast<void>(predict(fit, no_select.view()));
        BOOST_ERROR("predicting stage 0 without select layers should not be estimable");
    } catch (const NotEstimable& e) {
        BOOST_TEST(mentions(e.what(), "stage 0"));
        BOOST_TEST(mentions(e.what(), "head_mb"));
    }
}

// A single-stage pipeline holds head and tail on one stage with every in-flight count 1.
BOOST_AUTO_TEST_CASE(single_stage_observations_alone_identify_nothing) {
    DryRuns runs;
    runs.observe(1, 0, {4, 0, 0, 0, 0}, 4);
    runs.observe(1, 0, {2, 3, 0, 0, 0}, 4);
    runs.observe(1, 0, {5, 1, 0, 0, 0}, 4);
    runs.observe(1, 0, {1, 6, 0, 0, 0}, 4);
    try {
        static_cast<void>(runs.fit());
        BOOST_ERROR("a fit of p = 1 observations alone should identify nothing");
    } catch (const InvalidInput& e) {
        const std::string message = e.what();
        BOOST_TEST(mentions(message, "identify no single parameter"));
        BOOST_TEST(mentions(message, "p = 1"));
        BOOST_TEST(mentions(message, "const_mb + head_mb + tail_mb"));
        BOOST_TEST(mentions(message, "p >= 3"));
    }
}

BOOST_AUTO_TEST_CASE(single_stage_observations_join_a_multi_stage_fit) {
    DryRuns runs;
    runs.observe(1, 0, {4, 0, 0, 0, 0}, 4);
    runs.observe(1, 0, {2, 0, 0, 0, 0}, 4);
    observe_separable_run(runs);
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.not_identifiable.empty());
    for (const Parameter p : {Parameter::const_mb, Parameter::head_mb, Parameter::tail_mb,
                              Parameter::param_per_layer_mb, Parameter::activation_none}) {
        check_estimate(fit, p, runs.truth().value(p));
    }
    const auto single = stage(1, 0, none(7), 4);
    BOOST_TEST(close(predict(fit, single.view()), runs.truth().memory(single.view())));
}

BOOST_AUTO_TEST_CASE(missing_head_observation_leaves_head_mb_undetermined) {
    DryRuns runs;
    observe_separable_run(runs, /*head=*/false);
    const FitResult fit = runs.fit();
    check_null(fit, Parameter::head_mb);
    BOOST_TEST(entry_for(fit, Parameter::head_mb).reason == "no observation of stage 0");
    BOOST_TEST(mentions(entry_for(fit, Parameter::head_mb).suggestion, "stage 0"));
    for (const Parameter p : {Parameter::const_mb, Parameter::tail_mb,
                              Parameter::param_per_layer_mb, Parameter::activation_none}) {
        check_estimate(fit, p, runs.truth().value(p));
    }
    const auto head = stage(8, 0, none(2), 8);
    try {
        static_cast<void>(predict(fit, head.view()));
        BOOST_ERROR("stage 0 should not be predictable without a stage 0 observation");
    } catch (const NotEstimable& e) {
        BOOST_TEST(mentions(e.what(), "head_mb"));
        BOOST_TEST(mentions(e.what(), "no observation of stage 0"));
    }
}

BOOST_AUTO_TEST_CASE(missing_tail_observation_leaves_tail_mb_undetermined) {
    DryRuns runs;
    observe_separable_run(runs, /*head=*/true, /*tail=*/false);
    const FitResult fit = runs.fit();
    check_null(fit, Parameter::tail_mb);
    BOOST_TEST(entry_for(fit, Parameter::tail_mb).reason == "no observation of the last stage");
    check_estimate(fit, Parameter::head_mb, runs.truth().head_mb);
    check_estimate(fit, Parameter::const_mb, runs.truth().const_mb);
}

BOOST_AUTO_TEST_CASE(missing_head_and_tail_observations_still_fit_the_body) {
    DryRuns runs;
    observe_separable_run(runs, /*head=*/false, /*tail=*/false);
    const FitResult fit = runs.fit();
    check_null(fit, Parameter::head_mb);
    check_null(fit, Parameter::tail_mb);
    BOOST_TEST(fit.not_identifiable.size() == 2u);
    for (const Parameter p :
         {Parameter::const_mb, Parameter::param_per_layer_mb, Parameter::activation_none}) {
        check_estimate(fit, p, runs.truth().value(p));
    }
}

// With every observed layer held with the same in-flight count (last stages only), per-layer
// parameter memory and activation memory cannot be told apart.
BOOST_AUTO_TEST_CASE(equal_in_flight_counts_confound_parameters_with_activations) {
    DryRuns runs;
    for (const std::uint32_t p : {2u, 4u, 8u}) {
        runs.observe(p, p - 1, none(p), 8);
    }
    runs.observe(8, 7, none(5), 8);
    const FitResult fit = runs.fit();
    check_null(fit, Parameter::param_per_layer_mb);
    check_null(fit, Parameter::activation_none);
    BOOST_TEST(mentions(entry_for(fit, Parameter::param_per_layer_mb).reason, "in-flight count"));
    BOOST_TEST(mentions(entry_for(fit, Parameter::activation_none).reason, "param_per_layer_mb"));
    // Their sum per layer is what the data determine: predictions of last stages work.
    const auto last = stage(6, 5, none(7), 8);
    BOOST_TEST(close(predict(fit, last.view()), runs.truth().memory(last.view())));
}

// Stages hold ~1000 none and as many select layers, one stage a single select layer more: the
// two activation columns differ by about 1e-4 of their norm. The default tolerance separates
// them exactly; a rank tolerance of 1e-2 declares them dependent.
BOOST_AUTO_TEST_CASE(rank_tolerance_option_is_honoured) {
    DryRuns runs;
    for (std::uint32_t s = 0; s < 8; ++s) {
        const std::uint32_t n = 1000 + 100 * (s % 3);
        runs.observe(8, s, {n, s == 4 ? n + 1 : n, 0, 0, 0}, 8);
    }
    const FitResult strict = runs.fit();
    BOOST_TEST(strict.rank == 6u);
    BOOST_TEST(strict.not_identifiable.empty());
    check_estimate(strict, Parameter::activation_select,
                   runs.truth().activation_mb[PPB_KIND_SELECT], 1e-6);

    const FitResult loose = runs.fit({.rank_tolerance = 1e-2});
    BOOST_TEST(loose.rank == 5u);
    BOOST_TEST(loose.rank_tolerance == 1e-2);
    check_null(loose, Parameter::activation_none);
    check_null(loose, Parameter::activation_select);
    BOOST_TEST(
        mentions(entry_for(loose, Parameter::activation_none).reason, "activation_mb.select"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fit_identifiability_tests
