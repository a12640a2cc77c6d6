// Over-determined, noisy observations: least squares with honest standard errors.
#include "fit_support.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <utility>
#include <vector>

using namespace ppb::fit_test;
using ppb::dryrun_lsq::FitResult;
using ppb::dryrun_lsq::index;

BOOST_AUTO_TEST_SUITE(noisy_observations)

// The standard error of a prediction is calibrated: over many independent noisy dry runs, the
// error of the prediction of a placement none of them observed, divided by its standard error,
// has a standard deviation of 1 (40 degrees of freedom: the t distribution is all but normal).
BOOST_AUTO_TEST_CASE(prediction_standard_errors_are_calibrated) {
    constexpr double noise_mb = 50.0;
    constexpr std::uint32_t p = 16;
    constexpr int trials = 400;
    std::mt19937 layout_rng(7);
    std::vector<std::pair<std::uint32_t, Layers>> layout;
    for (int run = 0; run < 3; ++run) {
        for (std::uint32_t s = 0; s < p; ++s) {
            layout.emplace_back(s, random_layers(layout_rng, PPB_ALL_KINDS, 0, 2));
        }
    }
    // Stage 5 of 12 with a mix no observation has, at another pipeline degree.
    const auto unseen = stage(12, 5, {1, 3, 0, 2, 4}, 32);
    Gaussian gaussian(99);
    double sum_z2 = 0.0;
    double sum_se = 0.0;
    for (int t = 0; t < trials; ++t) {
        DryRuns runs;
        for (const auto& [s, layers] : layout)
            runs.observe(p, s, layers, 32, noise_mb * gaussian());
        const FitResult fit = runs.fit();
        const double predicted = ppb::dryrun_lsq::predict(fit, unseen.view());
        const auto se = ppb::dryrun_lsq::predict_std_error(fit, unseen.view());
        BOOST_TEST_REQUIRE(se.has_value());
        BOOST_TEST_REQUIRE(*se > 0.0);
        const double z = (predicted - runs.truth().memory(unseen.view())) / *se;
        sum_z2 += z * z;
        sum_se += *se;
    }
    const double sd = std::sqrt(sum_z2 / trials);
    BOOST_TEST_MESSAGE("sd of z = " << sd << ", mean standard error " << sum_se / trials << " MB");
    BOOST_TEST(sd > 0.85, "sd of z = " << sd << ", mean se = " << sum_se / trials << " MB");
    BOOST_TEST(sd < 1.15, "sd of z = " << sd << ", mean se = " << sum_se / trials << " MB");
}

BOOST_AUTO_TEST_CASE(exact_fits_have_no_prediction_standard_error) {
    DryRuns runs;
    for (std::uint32_t s = 0; s < 4; ++s)
        runs.observe(4, s, {2 + s % 2, 0, 0, 0, 0}, 8);
    runs.observe(4, 1, {4, 0, 0, 0, 0}, 8);
    const FitResult fit = runs.fit();
    BOOST_TEST_REQUIRE(fit.degrees_of_freedom() == 0u);
    const auto body = stage(4, 2, {5, 0, 0, 0, 0}, 8);
    BOOST_TEST(!ppb::dryrun_lsq::predict_std_error(fit, body.view()).has_value());
}

// Three 16-stage dry runs (48 observations of ~20-60 GB) with Gaussian noise of 50 MB.
BOOST_AUTO_TEST_CASE(estimates_lie_within_four_standard_errors_of_the_truth) {
    constexpr double noise_mb = 50.0;
    constexpr std::uint32_t p = 16;
    std::mt19937 rng(42);
    Gaussian gaussian(4242);
    DryRuns runs;
    for (int run = 0; run < 3; ++run) {
        for (std::uint32_t s = 0; s < p; ++s) {
            runs.observe(p, s, random_layers(rng, PPB_ALL_KINDS, 0, 2), 32, noise_mb * gaussian());
        }
    }
    const FitResult fit = runs.fit();

    BOOST_TEST(fit.not_identifiable.empty());
    BOOST_TEST(fit.rows == runs.size());
    BOOST_TEST(fit.rank == 9u);
    BOOST_TEST(fit.degrees_of_freedom() == runs.size() - 9);
    BOOST_TEST(fit.residuals_mb.size() == runs.size());
    for (const Parameter param : all_parameters) {
        BOOST_TEST_CONTEXT("parameter " << ppb::dryrun_lsq::name(param)) {
            const auto& estimate = fit.estimates[index(param)];
            const auto& se = fit.std_errors[index(param)];
            BOOST_TEST_REQUIRE(estimate.has_value());
            BOOST_TEST_REQUIRE(se.has_value());
            BOOST_TEST(*se > 0.0);
            BOOST_TEST(std::abs(*estimate - runs.truth().value(param)) <= 4.0 * *se,
                       "estimate " << *estimate << " +- " << *se << ", truth "
                                   << runs.truth().value(param));
        }
    }
    // The residuals estimate the noise: rms = sigma * sqrt((rows - rank) / rows) on average.
    BOOST_TEST(fit.rms_residual_mb > 0.5 * noise_mb);
    BOOST_TEST(fit.rms_residual_mb < 1.5 * noise_mb);
    // The residuals are observed - fitted, in input order.
    const auto& observations = runs.observations();
    for (std::size_t i = 0; i < observations.size(); ++i) {
        const double fitted = ppb::dryrun_lsq::predict(fit, observations[i].placement.view());
        BOOST_TEST(close(fit.residuals_mb[i], observations[i].peak_memory_mb - fitted, 1e-6));
    }
    BOOST_TEST(fit.warnings.empty());
}

// Noise-free data fitted in excess still report (negligible) standard errors for every
// identified parameter.
BOOST_AUTO_TEST_CASE(over_determined_exact_data_have_tiny_standard_errors) {
    std::mt19937 rng(5);
    DryRuns runs;
    for (std::uint32_t s = 0; s < 8; ++s)
        runs.observe(8, s, random_layers(rng, 0b00011u, 1, 3), 8);
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.degrees_of_freedom() == 8u - 6u);
    for (const Parameter param : all_parameters) {
        const bool identified = fit.identified(param);
        BOOST_TEST(fit.std_errors[index(param)].has_value() == identified);
        if (identified)
            BOOST_TEST(*fit.std_errors[index(param)] < 1e-6);
    }
}

// A poor fit is flagged: one observation of a different configuration mixed in.
BOOST_AUTO_TEST_CASE(poor_fit_is_warned_about) {
    std::mt19937 rng(9);
    DryRuns runs;
    for (std::uint32_t s = 0; s < 8; ++s) {
        // Half the stages measured 20 GB too high: not something the model can explain.
        runs.observe(8, s, random_layers(rng, 0b00001u, 1, 3), 8, s % 2 == 0 ? 20000.0 : 0.0);
    }
    const FitResult fit = runs.fit();
    bool warned = false;
    for (const auto& w : fit.warnings)
        warned = warned || mentions(w, "poor fit");
    BOOST_TEST(warned);
}

BOOST_AUTO_TEST_SUITE_END()
