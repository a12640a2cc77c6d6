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
// exact). The active sets seen are remembered: if one comes back (a cycle) or 50 fits pass, the
// visited set whose fit leaves the least squared error between measured and predicted peaks is
// fitted again and kept, and the result says it did not converge.
#ifndef PPB_PROFILE_FIT_HPP
#define PPB_PROFILE_FIT_HPP

#include <ppb/dryrun_format.hpp>
#include <ppb/memory_model.hpp>

#include <algorithm>
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

// `dryrun` with every observation's in-flight counts set to `active[i]` of its profile.
[[nodiscard]] DryRunSet at_vectors(const DryRunSet& dryrun, const std::vector<std::size_t>& active);

// Fits `model` as above; `fit_once` fits a model to a set whose observations are single rows
// (ppb::fit_model's own step). Errors of the fits propagate.
template <class FitOnce>
ProfileFit fit_over_profiles(MemoryModel& model, const DryRunSet& dryrun, FitOnce fit_once);

// The model's prediction of every vector of every profiled observation, observation by
// observation (a single row for one without a profile), in one predict_batch or
// predict_grouped_batch call.
[[nodiscard]] std::vector<std::vector<double>> predict_profiles(const MemoryModel& model,
                                                                const DryRunSet& dryrun);

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
    std::vector<std::pair<std::vector<std::size_t>, double>> visited;
    out.fits = 0;
    for (;;) {
        fit_once(at_vectors(dryrun, active));
        ++out.fits;
        const auto predictions = predict_profiles(model, dryrun);
        visited.emplace_back(active, squared_error(dryrun, predictions));
        std::vector<std::size_t> next = heaviest_vectors(predictions, active);
        if (next == active) {
            out.active = std::move(active);
            return out;
        }
        const bool seen = std::any_of(visited.begin(), visited.end(),
                                      [&](const auto& v) { return v.first == next; });
        if (seen || out.fits == most_fits)
            break;
        active = std::move(next);
    }
    const auto best =
        std::min_element(visited.begin(), visited.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    out.active = best->first;
    out.converged = false;
    fit_once(at_vectors(dryrun, out.active));
    ++out.fits;
    return out;
}

}  // namespace ppb

#endif  // PPB_PROFILE_FIT_HPP
