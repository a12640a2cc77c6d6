// The defects of the original tool's memory fit (the public Python ComputeMemory class the model
// started from), each shown fixed.
#include "fit_support.hpp"
#include "model.hpp"

#include <ppb/plugin.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace ppb::fit_test;
using ppb::dryrun_lsq::FitResult;
using ppb::dryrun_lsq::index;
using ppb::dryrun_lsq::predict;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace original_tool_defects_tests {

namespace {

// A 6-stage run of one configuration: body stages with an offset of layers.
DryRuns config(std::uint32_t p, const std::vector<Layers>& layers_per_stage) {
    DryRuns runs;
    for (std::uint32_t s = 0; s < p; ++s)
        runs.observe(p, s, layers_per_stage[s], 16);
    return runs;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(original_tool_defects)

// Original tool: configuration B could not be given to the constructor and was never fitted alone.
BOOST_AUTO_TEST_CASE(config_b_alone_is_fitted) {
    const DryRuns b = config(6, {none(2), none(3), none(5), none(4), none(3), none(2)});
    const FitResult fit = b.fit();
    BOOST_TEST(fit.not_identifiable.empty());
    for (const Parameter p : {Parameter::const_mb, Parameter::head_mb, Parameter::tail_mb,
                              Parameter::param_per_layer_mb, Parameter::activation_none}) {
        check_estimate(fit, p, b.truth().value(p));
    }
}

// Original tool: kinds were collected from configuration A only, so a kind used only in B was
// dropped and its memory leaked into a wrong per-layer value.
BOOST_AUTO_TEST_CASE(kinds_used_only_in_config_b_are_kept) {
    DryRuns joint = config(6, {none(2), none(3), none(5), none(4), none(3), none(2)});
    const Layers full_mix = {1, 0, 0, 0, 3};
    joint.append(config(4, {full_mix, {2, 0, 0, 0, 2}, {1, 0, 0, 0, 4}, full_mix}));
    const FitResult fit = joint.fit();
    BOOST_TEST(fit.kind_considered[PPB_KIND_FULL]);
    check_estimate(fit, Parameter::activation_full, joint.truth().activation_mb[PPB_KIND_FULL]);
    check_estimate(fit, Parameter::param_per_layer_mb, joint.truth().per_layer_mb);
}

// Original tool: with fewer than 5 observations per configuration activation memory was "not
// implemented" and came back 0. Four body stages determine const, per-layer and activation.
BOOST_AUTO_TEST_CASE(few_observations_still_give_activation_memory) {
    DryRuns runs;
    runs.observe(8, 1, none(3), 8);
    runs.observe(8, 2, none(4), 8);
    runs.observe(8, 3, none(3), 8);
    runs.observe(8, 4, none(5), 8);
    const FitResult fit = runs.fit();
    check_estimate(fit, Parameter::activation_none, runs.truth().activation_mb[PPB_KIND_NONE]);
    check_estimate(fit, Parameter::param_per_layer_mb, runs.truth().per_layer_mb);
    check_estimate(fit, Parameter::const_mb, runs.truth().const_mb);
}

// Original tool: const was fitted when there were at least (kinds + 4) observations, whatever they
// were. Here it is fitted when the design determines it, and only then.
BOOST_AUTO_TEST_CASE(const_is_decided_by_rank_not_by_counting_stages) {
    // Three observations, one kind: too few for the original tool's count, enough for the rank.
    DryRuns few;
    few.observe(8, 2, none(2), 8);
    few.observe(8, 3, none(3), 8);
    few.observe(8, 4, none(5), 8);
    const FitResult separable = few.fit();
    BOOST_TEST(!separable.const_folded);
    check_estimate(separable, Parameter::const_mb, few.truth().const_mb);

    // Ten observations, one kind, but the same body count everywhere: not determined.
    DryRuns many;
    for (int repeat = 0; repeat < 2; ++repeat) {
        for (std::uint32_t s = 1; s < 6; ++s)
            many.observe(8, s, none(4), 8);
    }
    const FitResult confounded = many.fit();
    BOOST_TEST(confounded.const_folded);
    check_null(confounded, Parameter::const_mb);
    // Repeating observations adds rows, not rank.
    BOOST_TEST(confounded.rows == 10u);
    BOOST_TEST(confounded.rank == 2u);
}

// Original tool: a kind seen only on the head stage made its system singular (numpy raised).
BOOST_AUTO_TEST_CASE(kind_only_on_the_head_stage_does_not_crash) {
    const DryRuns runs = config(6, {{2, 0, 1, 0, 0}, none(3), none(5), none(4), none(3), none(2)});
    const FitResult fit = runs.fit();
    check_null(fit, Parameter::activation_comm);
    check_null(fit, Parameter::head_mb);
    check_estimate(fit, Parameter::activation_none, runs.truth().activation_mb[PPB_KIND_NONE]);
    check_estimate(fit, Parameter::const_mb, runs.truth().const_mb);
}

// Original tool: equal layer counts refused the fit with const enabled. Now: fall back to const
// folded.
BOOST_AUTO_TEST_CASE(equal_layer_counts_fall_back_instead_of_refusing) {
    const DryRuns runs = config(6, {none(4), none(4), none(4), none(4), none(4), none(4)});
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.const_folded);
    const auto* why = fit.why_not_identified(Parameter::const_mb);
    BOOST_TEST_REQUIRE(why != nullptr);
    BOOST_TEST(mentions(why->reason, "same number of layers"));
    BOOST_TEST(mentions(why->suggestion, "different numbers of layers"));
    check_estimate(fit, Parameter::activation_none, runs.truth().activation_mb[PPB_KIND_NONE]);
    for (const auto& o : runs.observations()) {
        BOOST_TEST(close(predict(fit, o.placement.view()), o.peak_memory_mb));
    }
}

// Original tool: failures came back as 0, NaN or None and success was tested as P != 0.
BOOST_AUTO_TEST_CASE(failures_are_exceptions_with_messages_never_zero_or_nan) {
    DryRuns single_stage;
    single_stage.observe(1, 0, none(3), 1);
    single_stage.observe(1, 0, none(5), 1);
    BOOST_CHECK_EXCEPTION(static_cast<void>(single_stage.fit()), ppb::plugin::InvalidInput,
                          [](const auto& e) { return std::string(e.what()).size() > 40; });

    ppb::dryrun_lsq::DryRunLsqModel model("{}");
    const auto placement = stage(4, 1, none(3), 4);
    BOOST_CHECK_THROW(static_cast<void>(model.predict(placement.view())), ppb::plugin::NotFitted);

    // A partial fit reports undetermined parameters as absent, not as 0 or NaN.
    const DryRuns partial =
        config(6, {{2, 0, 1, 0, 0}, none(3), none(5), none(4), none(3), none(2)});
    const auto views = partial.views();
    model.fit(views);
    const ppb_linear_parameters params = *model.parameters();
    BOOST_TEST((params.identified & PPB_PARAM_HEAD) == 0u);
    BOOST_TEST((params.identified & PPB_PARAM_ACTIVATION(PPB_KIND_COMM)) == 0u);
    BOOST_TEST((params.identified & PPB_PARAM_PER_LAYER) != 0u);
    for (const double v : {params.const_mb, params.head_mb, params.tail_mb, params.per_layer_mb}) {
        BOOST_TEST(std::isfinite(v));
    }
    for (const double v : params.activation_mb)
        BOOST_TEST(std::isfinite(v));
    BOOST_TEST(!mentions(model.report(), "nan"));
    BOOST_TEST(!mentions(model.report(), "inf"));
}

// Original tool: no input validation (negative or NaN memory passed). See also test_validation.cpp.
BOOST_AUTO_TEST_CASE(invalid_memory_is_rejected) {
    for (const double bad : {-1.0, 0.0, std::nan(""), HUGE_VAL}) {
        DryRuns runs;
        runs.observe(4, 1, none(3), 4);
        auto views = runs.views();
        views[0].peak_memory_mb = bad;
        BOOST_CHECK_THROW(static_cast<void>(ppb::dryrun_lsq::fit(views, {})),
                          ppb::plugin::InvalidInput);
    }
}

// Original tool: the kinds considered were computed once, in the constructor. A refit of the same
// model object must consider exactly the kinds of its own observations.
BOOST_AUTO_TEST_CASE(refit_does_not_reuse_stale_kinds) {
    ppb::dryrun_lsq::DryRunLsqModel model("{}");
    const DryRuns first = config(6, {{1, 2, 0, 0, 0},
                                     {3, 1, 0, 0, 0},
                                     {2, 3, 0, 0, 0},
                                     {4, 1, 0, 0, 0},
                                     {1, 2, 0, 0, 0},
                                     {2, 2, 0, 0, 0}});
    const auto first_views = first.views();
    model.fit(first_views);
    BOOST_TEST(model.fitted().kind_considered[PPB_KIND_SELECT]);

    const DryRuns second = config(6, {{1, 0, 0, 0, 2},
                                      {3, 0, 0, 0, 1},
                                      {2, 0, 0, 0, 3},
                                      {4, 0, 0, 0, 1},
                                      {1, 0, 0, 0, 2},
                                      {2, 0, 0, 0, 2}});
    const auto second_views = second.views();
    model.fit(second_views);
    const FitResult& fit = model.fitted();
    BOOST_TEST(!fit.kind_considered[PPB_KIND_SELECT]);
    BOOST_TEST(fit.kind_considered[PPB_KIND_FULL]);
    check_null(fit, Parameter::activation_select);
    check_estimate(fit, Parameter::activation_full, second.truth().activation_mb[PPB_KIND_FULL]);
    check_estimate(fit, Parameter::param_per_layer_mb, second.truth().per_layer_mb);
    const auto with_select = stage(6, 2, {1, 1, 0, 0, 0}, 16);
    BOOST_CHECK_THROW(static_cast<void>(model.predict(with_select.view())),
                      ppb::plugin::NotEstimable);
}

// Original tool: the in-flight count ignored the micro-batch count (p - s, uncapped). The host
// computes f = min(p - s, m), and the fit uses it as given.
BOOST_AUTO_TEST_CASE(in_flight_count_capped_by_micro_batches_is_honoured) {
    DryRuns runs;
    const std::array<std::uint32_t, 8> counts = {2, 3, 4, 3, 5, 4, 3, 2};
    for (std::uint32_t s = 0; s < 8; ++s)
        runs.observe(8, s, none(counts[s]), /*m=*/4);
    BOOST_TEST(runs.observations()[0].placement.chunks[0].in_flight == 4u);
    const FitResult fit = runs.fit();
    for (const Parameter p : {Parameter::const_mb, Parameter::head_mb, Parameter::tail_mb,
                              Parameter::param_per_layer_mb, Parameter::activation_none}) {
        check_estimate(fit, p, runs.truth().value(p));
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace original_tool_defects_tests
