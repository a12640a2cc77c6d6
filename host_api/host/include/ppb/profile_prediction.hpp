// ppb/profile_prediction.hpp — a chunked stage's predicted peak: the largest prediction over its
// in-flight profile (host_api/docs/design.md, "In-flight profiles").
//
// The plugin boundary is unchanged (ppb/abi.h, API 1.3): a placement carries one in-flight count
// per chunk, so a model is asked about the stage once per vector of the profile, all in one
// predict_batch (or predict_grouped_batch) call (a profile of one vector: one predict call), and
// the host keeps the largest answer. A model never sees a profile; a linear model's answer is
// base + max_j Σ_c a_c · count_jc either way. A count of 0 (a chunk holding no micro-batch at
// that moment) cannot be asked about: the answer there is the answer as asked less that chunk's
// memory per micro-batch, from a linear model's coefficients or another model's own slope
// (ppb/in_flight_profile.hpp, "A count of 0").
#ifndef PPB_PROFILE_PREDICTION_HPP
#define PPB_PROFILE_PREDICTION_HPP

#include <ppb/in_flight_profile.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/placement.hpp>

#include <cstddef>
#include <optional>
#include <vector>

namespace ppb {

// `placement` with the chunks' in-flight counts set to `counts` (one per chunk).
[[nodiscard]] StagePlacement with_in_flight(StagePlacement placement, const InFlightVector& counts);

// The model's predictions of `placements` (all grouped, or none), in one batch call.
[[nodiscard]] std::vector<double> predict_placements(const MemoryModel& model,
                                                     const std::vector<StagePlacement>& placements);

// Chunk c's activation MB per micro-batch, a_c = Σ_g Σ_k A_gk · n_cgk, from the model's linear
// coefficients (group_parameters of each group when `placement` is grouped), or nullopt when the
// model has none or leaves one the placement needs unidentified.
[[nodiscard]] std::optional<std::vector<double>> chunk_activations(const MemoryModel& model,
                                                                   const StagePlacement& placement);

struct ProfilePeak {
    double memory_mb = 0.0;               // the largest prediction
    std::vector<InFlightVector> profile;  // the true profile given, counts of 0 included
    std::size_t active = 0;          // the vector of `profile` where it is reached (first on a tie)
    std::vector<double> per_vector;  // the model's prediction at each vector of `profile`
};

// The model's prediction of `placement` at every vector of the true `profile` (not empty; counts
// of 0 allowed), and the largest. The model is asked at each vector as asked
// (ppb::asked_in_flight); a linear model's answer is then corrected to the true counts by
// Σ_c a_c · (count_c − asked_c) (chunk_activations); a model without coefficients is also asked
// with one more micro-batch on each chunk holding none (ppb::zero_count_probes) and its answer
// corrected by its own slope (ppb::answer_at_counts). All in one batch; a grouped placement is
// asked with predict_grouped_batch; a profile of one vector with one predict (predict_grouped)
// call.
[[nodiscard]] ProfilePeak predict_over_profile(const MemoryModel& model,
                                               const StagePlacement& placement,
                                               const std::vector<InFlightVector>& profile);

}  // namespace ppb

#endif  // PPB_PROFILE_PREDICTION_HPP
