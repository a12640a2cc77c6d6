// A stage's peak over its in-flight profile (ppb/profile_prediction.hpp).
#include <ppb/profile_prediction.hpp>

#include <stdexcept>
#include <string>

namespace ppb {

StagePlacement with_in_flight(StagePlacement placement, const InFlightVector& counts) {
    if (counts.size() != placement.chunks.size()) {
        throw std::invalid_argument("an in-flight vector of " + std::to_string(counts.size()) +
                                    " chunks for a stage of " +
                                    std::to_string(placement.chunks.size()));
    }
    for (std::size_t c = 0; c < counts.size(); ++c)
        placement.chunks[c].in_flight = counts[c];
    return placement;
}

ProfilePeak predict_over_profile(const MemoryModel& model, const StagePlacement& placement,
                                 const std::vector<InFlightVector>& profile) {
    if (profile.empty())
        throw std::invalid_argument("an in-flight profile has at least one vector");
    std::vector<StagePlacement> rows;
    rows.reserve(profile.size());
    for (const InFlightVector& v : profile)
        rows.push_back(with_in_flight(placement, v));
    ProfilePeak out;
    if (rows.size() == 1) {
        // One vector (one chunk, or a profile of one): the model's single prediction, as
        // before profiles, whose errors name the stage.
        const StagePlacement& p = rows.front();
        out.per_vector = {p.grouped() ? model.predict_grouped(p.grouped_view())
                                      : model.predict(p.view())};
    } else if (placement.grouped()) {
        std::vector<ppb_grouped_placement> views;
        for (const StagePlacement& p : rows)
            views.push_back(p.grouped_view());
        out.per_vector = model.predict_grouped_batch(views);
    } else {
        std::vector<ppb_placement> views;
        for (const StagePlacement& p : rows)
            views.push_back(p.view());
        out.per_vector = model.predict_batch(views);
    }
    for (std::size_t j = 0; j < out.per_vector.size(); ++j) {
        if (j == 0 || out.per_vector[j] > out.memory_mb) {
            out.memory_mb = out.per_vector[j];
            out.active = j;
        }
    }
    return out;
}

}  // namespace ppb
