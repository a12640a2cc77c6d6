// Synthetic dry runs for the fit tests: observations generated from known coefficients with the
// model equation of host_api/docs/design.md, "The memory model", written here independently of the
// code under test.
#ifndef PPB_TESTS_FIT_SUPPORT_HPP
#define PPB_TESTS_FIT_SUPPORT_HPP

#include "lsq_fit.hpp"

#include <ppb/abi.h>
#include <ppb/placement.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace ppb::fit_test {

using dryrun_lsq::Parameter;
using Layers = std::array<std::uint32_t, PPB_KIND_COUNT>;

// Ground truth, in MB, in the order of the design's columns.
struct Truth {
    double const_mb = 2048.0;
    double head_mb = 7188.0;
    double tail_mb = 3746.0;
    double per_layer_mb = 1710.0;
    std::array<double, PPB_KIND_COUNT> activation_mb = {994.0, 739.0, 560.0, 403.0, 32.0};

    [[nodiscard]] double value(Parameter p) const {
        switch (p) {
            case Parameter::const_mb:
                return const_mb;
            case Parameter::head_mb:
                return head_mb;
            case Parameter::tail_mb:
                return tail_mb;
            case Parameter::param_per_layer_mb:
                return per_layer_mb;
            default:
                return activation_mb[static_cast<std::size_t>(dryrun_lsq::kind_of(p))];
        }
    }

    // Peak memory of a placement by the model equation.
    [[nodiscard]] double memory(const ppb_placement& placement) const {
        double m = const_mb;
        if (placement.stage == 0)
            m += head_mb;
        if (placement.stage + 1 == placement.num_stages)
            m += tail_mb;
        for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
            const ppb_chunk& chunk = placement.chunks[c];
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                m += per_layer_mb * chunk.layers[k];
                m += activation_mb[k] * chunk.layers[k] * chunk.in_flight;
            }
        }
        return m;
    }
};

// 1F1B: stage s of p holds the activations of min(p - s, m) micro-batches at its peak.
inline std::uint32_t one_f_one_b(std::uint32_t p, std::uint32_t s, std::uint32_t m) {
    return std::min(p - s, m);
}

// One chunk per stage, in-flight count by 1F1B.
inline StagePlacement stage(std::uint32_t p, std::uint32_t s, const Layers& layers,
                            std::uint32_t micro_batches) {
    StagePlacement placement;
    placement.num_stages = p;
    placement.stage = s;
    ppb_chunk chunk{};
    std::copy(layers.begin(), layers.end(), chunk.layers);
    chunk.in_flight = one_f_one_b(p, s, micro_batches);
    placement.chunks.push_back(chunk);
    return placement;
}

// A set of observations that owns its chunks, with boundary views for fit().
class DryRuns {
  public:
    explicit DryRuns(Truth truth = {}) : truth_(truth) {}

    // Observes `placement` with the truth's memory plus `noise_mb`.
    void observe(StagePlacement placement, double noise_mb = 0.0) {
        Observation o;
        o.placement = std::move(placement);
        o.peak_memory_mb = truth_.memory(o.placement.view()) + noise_mb;
        observations_.push_back(std::move(o));
    }
    // Stage s of a 1F1B dry run.
    void observe(std::uint32_t p, std::uint32_t s, const Layers& layers,
                 std::uint32_t micro_batches, double noise_mb = 0.0) {
        observe(stage(p, s, layers, micro_batches), noise_mb);
    }
    void append(const DryRuns& other) {
        observations_.insert(observations_.end(), other.observations_.begin(),
                             other.observations_.end());
    }

    [[nodiscard]] std::vector<ppb_observation> views() const { return ppb::views(observations_); }
    [[nodiscard]] const std::vector<Observation>& observations() const { return observations_; }
    [[nodiscard]] const Truth& truth() const { return truth_; }
    [[nodiscard]] std::size_t size() const { return observations_.size(); }

    [[nodiscard]] dryrun_lsq::FitResult fit(dryrun_lsq::FitOptions options = {}) const {
        const auto v = views();
        return dryrun_lsq::fit(v, options);
    }

  private:
    Truth truth_;
    std::vector<Observation> observations_;
};

// Layers with a count in [low, high] of each kind in `kinds` (a PPB_KIND_BIT mask), 0 otherwise.
inline Layers random_layers(std::mt19937& rng, std::uint32_t kinds, std::uint32_t low,
                            std::uint32_t high) {
    Layers layers{};
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((kinds & PPB_KIND_BIT(k)) != 0)
            layers[k] = low + rng() % (high - low + 1);
    }
    return layers;
}

// `total` layers spread at random over the kinds in `kinds`.
inline Layers random_split(std::mt19937& rng, std::uint32_t kinds, std::uint32_t total) {
    std::vector<std::size_t> present;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((kinds & PPB_KIND_BIT(k)) != 0)
            present.push_back(k);
    }
    Layers layers{};
    for (std::uint32_t i = 0; i < total; ++i)
        ++layers[present[rng() % present.size()]];
    return layers;
}

// Standard normal numbers from a fixed-seed engine (Box-Muller on the engine's raw bits, so the
// sequence is the same with every standard library).
class Gaussian {
  public:
    explicit Gaussian(std::uint64_t seed) : rng_(seed) {}
    double operator()() {
        const double u1 = uniform_open();
        const double u2 = uniform_open();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
    }

  private:
    double uniform_open() { return (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53; }
    std::mt19937_64 rng_;
};

inline constexpr std::array<Parameter, dryrun_lsq::parameter_count> all_parameters = {
    Parameter::const_mb,           Parameter::head_mb,         Parameter::tail_mb,
    Parameter::param_per_layer_mb, Parameter::activation_none, Parameter::activation_select,
    Parameter::activation_comm,    Parameter::activation_both, Parameter::activation_full};

inline bool close(double actual, double expected, double relative = 1e-9) {
    return std::abs(actual - expected) <= relative * std::max(std::abs(expected), 1.0);
}

// The estimate of `p` exists and equals `expected` to relative `tolerance`.
inline void check_estimate(const dryrun_lsq::FitResult& fit, Parameter p, double expected,
                           double tolerance = 1e-9) {
    const auto& estimate = fit.estimates[dryrun_lsq::index(p)];
    BOOST_TEST_CONTEXT("parameter " << dryrun_lsq::name(p)) {
        BOOST_TEST_REQUIRE(estimate.has_value());
        BOOST_TEST(close(*estimate, expected, tolerance),
                   "estimate " << *estimate << " != truth " << expected);
    }
}

inline void check_null(const dryrun_lsq::FitResult& fit, Parameter p) {
    BOOST_TEST(!fit.estimates[dryrun_lsq::index(p)].has_value(), dryrun_lsq::name(p)
                                                                     << " should be null");
}

inline bool mentions(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

// `n` layers that recompute nothing.
constexpr Layers none(std::uint32_t n) {
    return {n, 0, 0, 0, 0};
}

}  // namespace ppb::fit_test

#endif  // PPB_TESTS_FIT_SUPPORT_HPP
