// ppb/profile_prediction.hpp — a chunked stage's predicted peak: the largest prediction over its
// in-flight profile (host_api/docs/design.md, "In-flight profiles").
//
// The plugin boundary is unchanged (ppb/abi.h, API 1.3): a placement carries one in-flight count
// per chunk, so a model is asked about the stage once per vector of the profile, all in one
// predict_batch (or predict_grouped_batch) call (a profile of one vector: one predict call), and
// the host keeps the largest answer. A model never sees a profile; a linear model's answer is
// base + max_j Σ_c a_c · count_jc either way.
#ifndef PPB_PROFILE_PREDICTION_HPP
#define PPB_PROFILE_PREDICTION_HPP

#include <ppb/in_flight_profile.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/placement.hpp>

#include <cstddef>
#include <vector>

namespace ppb {

// `placement` with the chunks' in-flight counts set to `counts` (one per chunk).
[[nodiscard]] StagePlacement with_in_flight(StagePlacement placement, const InFlightVector& counts);

struct ProfilePeak {
    double memory_mb = 0.0;  // the largest prediction
    std::size_t active = 0;  // the vector of the profile where it is reached (first on a tie)
    std::vector<double> per_vector;  // the model's prediction at each vector
};

// The model's prediction of `placement` at every vector of `profile` (not empty), and the
// largest. A grouped placement is asked with predict_grouped_batch; a profile of one vector
// with one predict (predict_grouped) call.
[[nodiscard]] ProfilePeak predict_over_profile(const MemoryModel& model,
                                               const StagePlacement& placement,
                                               const std::vector<InFlightVector>& profile);

}  // namespace ppb

#endif  // PPB_PROFILE_PREDICTION_HPP
