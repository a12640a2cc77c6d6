// Over-determined, noisy observations: least squares with honest standard errors.
#include "fit_support.hpp"

#include <boost/test/unit_test.hpp>

using namespace ppb::fit_test;
using ppb::dryrun_lsq::FitResult;
using ppb::dryrun_lsq::index;

BOOST_AUTO_TEST_SUITE(noisy_observations)

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
