// DryRunLsqModel, the class behind the plugin boundary, and the C table that
// PPB_EXPORT_MEMORY_MODEL generates for it, driven through the host's MemoryModel wrapper.
#define PPB_PLUGIN_NAME "dryrun-lsq"
#define PPB_PLUGIN_VERSION "1.0.0"

#include "../common/c_boundary.hpp"
#include "fit_support.hpp"
#include "model.hpp"

#include <ppb/memory_model.hpp>
#include <ppb/plugin.hpp>
#include <ppb/profile_prediction.hpp>

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>

// The same table the plugin module exports, compiled into this test.
PPB_EXPORT_MEMORY_MODEL_WITH_OPTIONS(ppb::dryrun_lsq::DryRunLsqModel,
                                     ppb::dryrun_lsq::model_description,
                                     ppb::dryrun_lsq::model_kinds, ppb::dryrun_lsq::model_flags,
                                     ppb::dryrun_lsq::model_options_help)

using namespace ppb::fit_test;
using ppb::dryrun_lsq::DryRunLsqModel;
using ppb::plugin::InvalidInput;
using ppb::plugin::NotEstimable;
using ppb::plugin::NotFitted;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace model_tests {

namespace {

DryRuns separable_run() {
    DryRuns runs;
    const std::array<Layers, 8> layers = {
        Layers{2, 1, 0, 0, 0}, none(3), Layers{2, 2, 0, 0, 0}, none(5),
        Layers{1, 3, 0, 0, 0}, none(4), Layers{3, 1, 0, 0, 0}, none(2)};
    for (std::uint32_t s = 0; s < 8; ++s)
        runs.observe(8, s, layers[s], 8);
    return runs;
}

DryRuns equal_body_run() {
    DryRuns runs;
    runs.observe(8, 0, none(2), 8);
    // Every body stage holds 4 layers, in varying mixes of none and select.
    const std::array<Layers, 6> body = {Layers{1, 3, 0, 0, 0}, Layers{2, 2, 0, 0, 0},
                                        Layers{3, 1, 0, 0, 0}, Layers{2, 2, 0, 0, 0},
                                        Layers{1, 3, 0, 0, 0}, Layers{3, 1, 0, 0, 0}};
    for (std::uint32_t s = 1; s < 7; ++s)
        runs.observe(8, s, body[s - 1], 8);
    runs.observe(8, 7, Layers{1, 1, 0, 0, 0}, 8);
    return runs;
}

// What a host evaluates inline from the coefficients (ppb/abi.h), unset bits counting 0.
double evaluate(const ppb_linear_parameters& c, const ppb_placement& placement) {
    double m = c.const_mb;
    if (placement.stage == 0)
        m += c.head_mb;
    if (placement.stage + 1 == placement.num_stages)
        m += c.tail_mb;
    for (std::uint32_t i = 0; i < placement.num_chunks; ++i) {
        const ppb_chunk& chunk = placement.chunks[i];
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            m += c.per_layer_mb * chunk.layers[k] +
                 c.activation_mb[k] * chunk.layers[k] * chunk.in_flight;
        }
    }
    return m;
}

std::shared_ptr<const ppb_memory_model_api> generated_table() {
    // Statically allocated: nothing to release.
    return {&ppb_plugin_generated::table, [](const ppb_memory_model_api*) {}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(model)

BOOST_AUTO_TEST_CASE(everything_but_fit_needs_a_fit_first) {
    const DryRunLsqModel model("{}");
    const auto placement = stage(4, 1, none(3), 4);
    const std::array<ppb_placement, 1> batch = {placement.view()};
    std::array<double, 1> out{};
    BOOST_CHECK_THROW(static_cast<void>(model.predict(placement.view())), NotFitted);
    BOOST_CHECK_THROW(model.predict_batch(batch, out), NotFitted);
    BOOST_CHECK_THROW(static_cast<void>(model.parameters()), NotFitted);
    BOOST_CHECK_THROW(static_cast<void>(model.report()), NotFitted);
}

BOOST_AUTO_TEST_CASE(options_are_parsed) {
    BOOST_TEST(DryRunLsqModel("{}").options().rank_tolerance == 1e-10);
    BOOST_TEST(DryRunLsqModel(R"({"rank_tolerance": 1e-6})").options().rank_tolerance == 1e-6);
    BOOST_TEST(DryRunLsqModel(R"( { "rank_tolerance" : 0.25 } )").options().rank_tolerance == 0.25);
}

BOOST_AUTO_TEST_CASE(invalid_options_are_rejected_naming_the_key) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"rank_tol": 1e-8})", "'rank_tol'"},
        {R"({"rank_tolerance": "1e-8"})", "'rank_tolerance' must be a number, got a string"},
        {R"({"rank_tolerance": null})", "'rank_tolerance' must be a number, got null"},
        {R"({"rank_tolerance": -1e-8})", "'rank_tolerance' must be a number in (0, 1)"},
        {R"({"rank_tolerance": 0})", "'rank_tolerance' must be a number in (0, 1)"},
        {R"({"rank_tolerance": 1})", "'rank_tolerance' must be a number in (0, 1)"},
        {R"([1e-8])", "must be a JSON object"},
        {R"({"rank_tolerance": )", "not valid JSON"},
        {"", "not valid JSON"},
    };
    for (const auto& [options, expected] : cases) {
        BOOST_TEST_CONTEXT("options " << options) {
            BOOST_CHECK_EXCEPTION(
                DryRunLsqModel{options}, InvalidInput,
                [&](const InvalidInput& e) { return mentions(e.what(), expected); });
        }
    }
}

BOOST_AUTO_TEST_CASE(a_repeated_option_key_is_refused) {
    // Boost.JSON alone would keep the last value; ppb::parse_json refuses the document.
    try {
        DryRunLsqModel model(R"({"rank_tolerance": 1e-8, "rank_tolerance": 0.5})");
        BOOST_ERROR("a repeated option was accepted: rank_tolerance "
                    << model.options().rank_tolerance);
    } catch (const InvalidInput& e) {
        const std::string message = e.what();
        BOOST_TEST(message.starts_with("dryrun-lsq options are not valid JSON: line 1, column "),
                   message);
        BOOST_TEST(message.ends_with(": duplicate field 'rank_tolerance' (a JSON object must not "
                                     "repeat a key)"),
                   message);
    }
}

// The coefficients carry a bit for exactly what predict() uses: the identified parameters and,
// when folded, const_mb as 0. A host evaluating them inline gets predict()'s answer.
BOOST_AUTO_TEST_CASE(coefficients_evaluate_like_predict) {
    for (const DryRuns& runs : {separable_run(), equal_body_run()}) {
        DryRunLsqModel model("{}");
        const auto views = runs.views();
        model.fit(views);
        const auto& fit = model.fitted();
        // Only const_mb may be undetermined, so that every placement below is predictable.
        BOOST_TEST(fit.not_identifiable.size() == (fit.const_folded ? 1u : 0u));
        const ppb_linear_parameters c = *model.parameters();
        BOOST_TEST(c.struct_size == sizeof(ppb_linear_parameters));
        for (const Parameter p : all_parameters) {
            const bool used = fit.identified(p) || (p == Parameter::const_mb && fit.const_folded);
            BOOST_TEST(((c.identified & ppb::dryrun_lsq::abi_bit(p)) != 0) == used,
                       "identified bit of " << ppb::dryrun_lsq::name(p));
        }
        BOOST_TEST((c.identified & PPB_PARAM_CONST) != 0u);
        if (fit.const_folded)
            BOOST_TEST(c.const_mb == 0.0);
        BOOST_TEST(c.activation_mb[PPB_KIND_COMM] == 0.0);

        for (std::uint32_t s = 0; s < 8; ++s) {
            const auto placement = stage(8, s, {s % 3, 1 + s % 2, 0, 0, 0}, 8);
            BOOST_TEST(close(evaluate(c, placement.view()), model.predict(placement.view())));
        }
    }
}

BOOST_AUTO_TEST_CASE(predict_batch_matches_predict_and_names_the_failing_placement) {
    const DryRuns runs = separable_run();
    DryRunLsqModel model("{}");
    const auto views = runs.views();
    model.fit(views);

    std::vector<ppb::StagePlacement> owned;
    for (std::uint32_t s = 0; s < 8; ++s)
        owned.push_back(stage(8, s, {s, 2, 0, 0, 0}, 8));
    std::vector<ppb_placement> batch;
    for (const auto& p : owned)
        batch.push_back(p.view());
    std::vector<double> out(batch.size());
    model.predict_batch(batch, out);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        BOOST_TEST(out[i] == model.predict(batch[i]));
        BOOST_TEST(close(out[i], runs.truth().memory(batch[i])));
    }

    batch[2].stage = 9;
    // Malformed placements are refused at the C boundary, naming the index.
    ppb::test::ThroughBoundary<DryRunLsqModel> boundary("{}");
    boundary.fit(views);
    BOOST_CHECK_EXCEPTION(boundary.predict_batch(batch, out), InvalidInput,
                          [](const InvalidInput& e) {
                              return mentions(e.what(), "placement 2: stage 9 is out of range");
                          });
    batch[2].stage = 2;
    ppb_chunk comm = *owned[5].chunks.data();
    comm.layers[PPB_KIND_COMM] = 1;
    batch[5].chunks = &comm;
    BOOST_CHECK_EXCEPTION(model.predict_batch(batch, out), NotEstimable, [](const NotEstimable& e) {
        return mentions(e.what(), "placement 5: ") &&
               mentions(e.what(), "activation_mb.comm was never observed");
    });
}

BOOST_AUTO_TEST_CASE(a_failed_fit_leaves_the_model_unfitted) {
    DryRunLsqModel model("{}");
    const DryRuns good = separable_run();
    const auto good_views = good.views();
    model.fit(good_views);
    // A fit the model refuses (malformed observations never reach it: the boundary refuses them).
    BOOST_CHECK_THROW(model.fit({}), InvalidInput);
    const auto placement = stage(8, 3, none(3), 8);
    BOOST_CHECK_THROW(static_cast<void>(model.predict(placement.view())), NotFitted);
}

BOOST_AUTO_TEST_CASE(generated_c_table_round_trip) {
    const auto api = generated_table();
    BOOST_TEST(api->struct_size == sizeof(ppb_memory_model_api));
    BOOST_TEST(api->abi_major == PPB_ABI_MAJOR);
    BOOST_TEST(std::string(api->name) == "dryrun-lsq");
    BOOST_TEST(std::string(api->version) == "1.0.0");
    BOOST_TEST(api->kinds == PPB_ALL_KINDS);
    BOOST_TEST(api->api_minor == std::uint32_t{PPB_API_MINOR});
    BOOST_TEST(ppb::options_help(*api).value_or("").find("rank_tolerance") != std::string::npos);

    // Options errors surface as a status with the plugin's message.
    try {
        ppb::MemoryModel bad(api, R"({"tolerance": 1})");
        BOOST_ERROR("unknown option accepted");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(mentions(e.what(), "'tolerance'"));
    }

    ppb::MemoryModel model(api, "{}");
    BOOST_TEST(model.needs_fit());
    const auto body = stage(8, 3, none(3), 8);
    try {
        static_cast<void>(model.predict(body.view()));
        BOOST_ERROR("predict before fit succeeded");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_NOT_FITTED);
    }

    // A fit that identifies nothing is an input error, with the reason.
    DryRuns single_stage;
    single_stage.observe(1, 0, none(3), 1);
    single_stage.observe(1, 0, none(4), 1);
    try {
        model.fit(single_stage.views());
        BOOST_ERROR("p = 1 data alone were fitted");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(mentions(e.what(), "identify no single parameter"));
    }

    // A partial fit: select only on stage 0.
    DryRuns runs;
    runs.observe(8, 0, {2, 2, 0, 0, 0}, 8);
    const std::array<std::uint32_t, 7> counts = {3, 4, 3, 5, 4, 3, 2};
    for (std::uint32_t s = 1; s < 8; ++s)
        runs.observe(8, s, none(counts[s - 1]), 8);
    model.fit(runs.views());
    BOOST_TEST(close(model.predict(body.view()), runs.truth().memory(body.view())));
    const auto head = stage(8, 0, none(2), 8);
    try {
        static_cast<void>(model.predict(head.view()));
        BOOST_ERROR("stage 0 without its select layers was predicted");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_NOT_ESTIMABLE);
        BOOST_TEST(mentions(e.what(), "head_mb"));
    }
    const auto last_body = stage(8, 6, none(1), 8);
    const std::array<ppb_placement, 2> batch = {body.view(), last_body.view()};
    const auto out = model.predict_batch(batch);
    BOOST_TEST_REQUIRE(out.size() == 2u);
    BOOST_TEST(close(out[0], runs.truth().memory(body.view())));
    BOOST_TEST(close(out[1], runs.truth().memory(last_body.view())));

    const auto params = model.parameters();
    BOOST_TEST_REQUIRE(params.has_value());
    BOOST_TEST((params->identified & PPB_PARAM_HEAD) == 0u);
    BOOST_TEST((params->identified & PPB_PARAM_PER_LAYER) != 0u);
    BOOST_TEST(close(params->per_layer_mb, runs.truth().per_layer_mb));

    const auto report = boost::json::parse(model.report()).as_object();
    BOOST_TEST(report.at("parameters").at("head_mb").is_null());

    // Null arguments are input errors, not crashes.
    BOOST_TEST(api->fit(nullptr, nullptr, 0) == PPB_ERR_INVALID_INPUT);
    BOOST_TEST(mentions(api->last_error(), "null argument"));
}

BOOST_AUTO_TEST_CASE(a_byte_order_mark_before_the_options_is_accepted) {
    // ppb::parse_json skips a UTF-8 byte-order mark, like every reader.
    const DryRunLsqModel model("\xEF\xBB\xBF{\"rank_tolerance\": 0.5}");
    BOOST_TEST(model.options().rank_tolerance == 0.5);
}

// A chunked stage's peak over its in-flight profile (ppb::predict_over_profile): wherever every
// count is at least 1 it is the model's own prediction; at a count of 0, which the model cannot
// be asked about, a linear model's coefficients give it exactly, and a model without
// coefficients gives it by its own slope there (ppb/in_flight_profile.hpp, "A count of 0"): the
// same number when the model is affine in the counts, as this one is.
BOOST_AUTO_TEST_CASE(profile_peaks_are_exact_at_counts_of_zero) {
    const DryRuns runs = separable_run();
    ppb::MemoryModel model(generated_table(), "{}");
    model.fit(runs.views());
    const auto params = model.parameters();
    BOOST_TEST_REQUIRE(params.has_value());
    ppb::StagePlacement placement = stage(4, 2, Layers{2, 1, 0, 0, 0}, 8);
    placement.schedule = ppb::Schedule::interleaved;
    ppb_chunk second{};
    second.layers[0] = 1;
    placement.chunks.push_back(second);
    // Stage 2 of P = 4, v = 2, M = 8: {(7, 0), (6, 1), (5, 2), (4, 3)}.
    const auto profile = ppb::in_flight_profile(ppb::Schedule::interleaved, 4, 2, 8, 2);
    BOOST_TEST_REQUIRE(profile.size() == 4u);
    BOOST_TEST((profile.front() == ppb::InFlightVector{7, 0}));
    const auto peak = ppb::predict_over_profile(model, placement, profile);
    BOOST_TEST((peak.profile == profile));
    BOOST_TEST_REQUIRE(peak.per_vector.size() == profile.size());
    double largest = 0.0;
    for (std::size_t j = 0; j < profile.size(); ++j) {
        const auto at = ppb::with_in_flight(placement, profile[j]);
        // The formula inline at the true counts, zeros included.
        BOOST_TEST(close(peak.per_vector[j], evaluate(*params, at.view())), "vector " << j);
        if (profile[j][1] != 0)
            BOOST_TEST(std::abs(peak.per_vector[j] - model.predict(at.view())) <=
                           1e-9 * peak.per_vector[j],
                       "vector " << j);
        largest = std::max(largest, peak.per_vector[j]);
    }
    BOOST_TEST(peak.memory_mb == largest);
    // Below the 0-as-1 row by exactly chunk 1's activation of one micro-batch.
    const auto asked = ppb::with_in_flight(placement, {7, 1});
    BOOST_TEST(
        close(model.predict(asked.view()) - peak.per_vector[0], params->activation_mb[0] * 1));

    // The same model without coefficients: asked with one more micro-batch on chunk 1 where it
    // holds none, its answer there less that slope: every vector, zeros included, as the
    // coefficients give it.
    ppb_memory_model_api opaque = *generated_table();
    opaque.parameters = [](const ppb_model*, ppb_linear_parameters*) -> ppb_status {
        return PPB_ERR_UNSUPPORTED;
    };
    ppb::MemoryModel unlinear(
        std::shared_ptr<const ppb_memory_model_api>(&opaque, [](const ppb_memory_model_api*) {}),
        "{}");
    unlinear.fit(runs.views());
    BOOST_TEST(!unlinear.parameters().has_value());
    const auto probed = ppb::predict_over_profile(unlinear, placement, profile);
    BOOST_TEST((probed.profile == profile));
    BOOST_TEST_REQUIRE(probed.per_vector.size() == profile.size());
    for (std::size_t j = 0; j < profile.size(); ++j) {
        const auto at = ppb::with_in_flight(placement, profile[j]);
        BOOST_TEST(close(probed.per_vector[j], evaluate(*params, at.view())), "vector " << j);
    }
    const auto two = ppb::with_in_flight(placement, {7, 2});
    BOOST_TEST(
        close(probed.per_vector[0], 2 * model.predict(asked.view()) - model.predict(two.view())));
    BOOST_TEST(probed.active == peak.active);
    BOOST_TEST(close(probed.memory_mb, peak.memory_mb));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace model_tests
