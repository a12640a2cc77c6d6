// ppb/profile_fit.hpp — fitting dry runs whose peak is the largest row of an in-flight profile
// (host_api/docs/design.md, "Fitting observations with a profile").
//
// An observation of a chunked schedule whose in-flight counts come from the schedule
// (Observation::in_flight_profile) measured the largest memory over the iteration: the maximum,
// over the profile's vectors, of the model's memory at that vector. That is not one linear row,
// so it is fitted by alternating, through the plugin's own fit():
//   0. each such observation starts at the vector whose counts weigh its chunks' body layers
//      most (every layer alike);
//   1. fit the observations, each at its current vector;
//   2. predict every vector of every profile (one predict_batch) and move each observation to
//      the vector whose prediction is largest (staying on a tie);
//   3. repeat from 1 until no observation moves.
// At the end every observation is fitted at the vector where the fitted model puts its peak, so
// the fit is the model's own exact fit of those rows (dryrun-lsq: exact when the dry runs are
// exact).
// A vector may hold a count of 0 (a chunk holding no micro-batch at that moment), which a plugin
// cannot be asked about (ppb/in_flight_profile.hpp, "A count of 0"). The model is evaluated
// there as ppb::predict_over_profile evaluates it; its row is fitted at the vector as asked
// (ppb::asked_in_flight), with the measurement raised by the activations the current fit puts on
// the micro-batches asked about and not held (Σ_c a_c · (asked_c − count_c) for a linear model,
// the model's own slope otherwise). Step 1 repeats until those corrections are stable too: true
// coefficients are a fixed point, so exact dry runs are fitted exactly. The active
// sets seen are remembered: if one comes back (a cycle) or 50 fits pass, the visited set whose fit
// leaves the least squared error between measured and predicted peaks is fitted again and kept, and
// the result says it did not converge.
#ifndef PPB_PROFILE_FIT_HPP
#define PPB_PROFILE_FIT_HPP

#include <ppb/dryrun_format.hpp>
#include <ppb/memory_model.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace ppb {

struct ProfileFit {
    // Whether any observation has a profile of several vectors (otherwise one plain fit ran and
    // the rest is trivial).
    bool alternated = false;
    std::size_t fits = 1;   // fits run, the last included
    bool converged = true;  // the active vectors were stable at the end
    // Per observation, the index into its profile of the vector it was fitted at (0 for an
    // observation without a profile).
    std::vector<std::size_t> active;
};

// `dryrun` with every observation's in-flight counts set to `active[i]` of its profile as a
// model may be asked about it (ppb::asked_in_flight), and corrections[i] added to its peak
// (empty: none).
[[nodiscard]] DryRunSet at_vectors(const DryRunSet& dryrun, const std::vector<std::size_t>& active,
                                   const std::vector<double>& corrections = {});

// Fits `model` as above; `fit_once` fits a model to a set whose observations are single rows
// (ppb::fit_model's own step). Errors of the fits propagate.
template <class FitOnce>
ProfileFit fit_over_profiles(MemoryModel& model, const DryRunSet& dryrun, FitOnce fit_once);

// The model's prediction of every vector of every profiled observation, observation by
// observation (a single row for one without a profile), in one predict_batch or
// predict_grouped_batch call; at a count of 0 exact for a linear model, as 1 otherwise.
[[nodiscard]] std::vector<std::vector<double>> predict_profiles(const MemoryModel& model,
                                                                const DryRunSet& dryrun);

// Per observation, the MB its row at `active[i]` is raised by: what the model's answer as asked
// exceeds its answer at the true counts (Σ_c a_c · (asked_c − count_c) under a linear model's
// coefficients, the model's own slope at each chunk holding none otherwise; 0 without a count
// of 0).
[[nodiscard]] std::vector<double> zero_corrections(const MemoryModel& model,
                                                   const DryRunSet& dryrun,
                                                   const std::vector<std::size_t>& active);

// The first active set: per observation the vector weighing its chunks' layers most.
[[nodiscard]] std::vector<std::size_t> initial_vectors(const DryRunSet& dryrun);

// Each observation's vector of largest prediction, keeping `current` on a tie.
[[nodiscard]] std::vector<std::size_t> heaviest_vectors(
    const std::vector<std::vector<double>>& predictions, const std::vector<std::size_t>& current);

// Σ_i (measured_i − max_j predicted_ij)².
[[nodiscard]] double squared_error(const DryRunSet& dryrun,
                                   const std::vector<std::vector<double>>& predictions);

template <class FitOnce>
ProfileFit fit_over_profiles(MemoryModel& model, const DryRunSet& dryrun, FitOnce fit_once) {
    ProfileFit out;
    out.active.assign(dryrun.observations.size(), 0);
    for (const Observation& o : dryrun.observations)
        out.alternated = out.alternated || o.in_flight_profile.size() > 1;
    if (!out.alternated) {
        fit_once(at_vectors(dryrun, out.active));
        return out;
    }
    constexpr std::size_t most_fits = 50;
    std::vector<std::size_t> active = initial_vectors(dryrun);
    // Each fit's active set, its corrections and its squared error.
    struct Visit {
        std::vector<std::size_t> active;
        std::vector<double> corrections;
        double error;
    };
    std::vector<Visit> visited;
    std::vector<double> corrections(dryrun.observations.size(), 0.0);
    const auto same = [&](const std::vector<double>& a, const std::vector<double>& b) {
        for (std::size_t i = 0; i < a.size(); ++i) {
            const double scale = std::max(1.0, std::abs(dryrun.observations[i].peak_memory_mb));
            if (std::abs(a[i] - b[i]) > 1e-10 * scale)
                return false;
        }
        return true;
    };
    out.fits = 0;
    for (;;) {
        fit_once(at_vectors(dryrun, active, corrections));
        ++out.fits;
        const auto predictions = predict_profiles(model, dryrun);
        visited.push_back({active, corrections, squared_error(dryrun, predictions)});
        std::vector<std::size_t> next = heaviest_vectors(predictions, active);
        // The corrections for counts of 0 under this fit at the next rows.
        std::vector<double> next_corrections = zero_corrections(model, dryrun, next);
        if (next == active && same(next_corrections, corrections)) {
            out.active = std::move(active);
            return out;
        }
        // A cycle: the same rows with the same corrections again.
        const bool seen = std::any_of(visited.begin(), visited.end(), [&](const Visit& v) {
            return v.active == next && same(v.corrections, next_corrections);
        });
        if (seen || out.fits == most_fits)
            break;
        active = std::move(next);
        corrections = std::move(next_corrections);
    }
    const auto best =
        std::min_element(visited.begin(), visited.end(),
                         [](const Visit& a, const Visit& b) { return a.error < b.error; });
    out.active = best->active;
    out.converged = false;
    fit_once(at_vectors(dryrun, out.active, best->corrections));
    ++out.fits;
    return out;
}

}  // namespace ppb

#endif  // PPB_PROFILE_FIT_HPP
