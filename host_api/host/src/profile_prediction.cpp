// A stage's peak over its in-flight profile (ppb/profile_prediction.hpp).
#include <ppb/profile_prediction.hpp>

#include <algorithm>
#include <span>
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

std::vector<double> predict_placements(const MemoryModel& model,
                                       const std::vector<StagePlacement>& placements) {
    if (!placements.empty() && placements.front().grouped()) {
        std::vector<ppb_grouped_placement> views;
        for (const StagePlacement& p : placements)
            views.push_back(p.grouped_view());
        return model.predict_grouped_batch(views);
    }
    std::vector<ppb_placement> views;
    for (const StagePlacement& p : placements)
        views.push_back(p.view());
    return model.predict_batch(views);
}

std::optional<std::vector<double>> chunk_activations(const MemoryModel& model,
                                                     const StagePlacement& placement) {
    const std::uint32_t groups = placement.grouped() ? placement.num_groups() : 1;
    std::vector<ppb_linear_parameters> coefficients;
    for (std::uint32_t g = 0; g < groups; ++g) {
        const std::optional<ppb_linear_parameters> c =
            placement.grouped() ? model.group_parameters(g) : model.parameters();
        if (!c)
            return std::nullopt;
        coefficients.push_back(*c);
    }
    if (placement.grouped()) {
        const ppb_grouped_placement view = placement.grouped_view();
        return linear_chunk_activations(view.placement, view.group_layers, groups, coefficients);
    }
    return linear_chunk_activations(placement.view(), nullptr, 1, coefficients);
}

ProfilePeak predict_over_profile(const MemoryModel& model, const StagePlacement& placement,
                                 const std::vector<InFlightVector>& profile) {
    if (profile.empty())
        throw std::invalid_argument("an in-flight profile has at least one vector");
    // The coefficients are read only when a count of 0 needs them (ppb/in_flight_profile.hpp,
    // "A count of 0"); a model without them is asked its own slope at each such count.
    const bool any_zero = std::any_of(profile.begin(), profile.end(), [](const InFlightVector& v) {
        return std::find(v.begin(), v.end(), 0u) != v.end();
    });
    const std::optional<std::vector<double>> activations =
        any_zero ? chunk_activations(model, placement) : std::nullopt;
    ProfilePeak out;
    out.profile = profile;
    // Vector j's answers are rows first[j] .. first[j + 1] - 1.
    std::vector<StagePlacement> rows;
    std::vector<std::size_t> first;
    for (const InFlightVector& v : profile) {
        first.push_back(rows.size());
        if (activations) {
            rows.push_back(with_in_flight(placement, asked_in_flight(v)));
            continue;
        }
        for (const InFlightVector& asked : zero_count_probes(v))
            rows.push_back(with_in_flight(placement, asked));
    }
    first.push_back(rows.size());
    std::vector<double> answers;
    if (rows.size() == 1) {
        // One vector (one chunk, or a profile of one): the model's single prediction, as
        // before profiles, whose errors name the stage.
        const StagePlacement& p = rows.front();
        answers = {p.grouped() ? model.predict_grouped(p.grouped_view()) : model.predict(p.view())};
    } else {
        answers = predict_placements(model, rows);
    }
    for (std::size_t j = 0; j < profile.size(); ++j) {
        double at = 0.0;
        if (activations) {
            // The linear model at the true counts: its answer as asked, less the activations of
            // the micro-batches it was asked about and the chunk does not hold.
            at = answers[first[j]];
            for (std::size_t c = 0; c < profile[j].size(); ++c) {
                const std::uint32_t asked = rows[first[j]].chunks[c].in_flight;
                at -= (*activations)[c] * (asked - profile[j][c]);
            }
        } else {
            at = answer_at_counts(
                std::span<const double>(answers).subspan(first[j], first[j + 1] - first[j]));
        }
        out.per_vector.push_back(at);
        if (j == 0 || heavier_than(at, out.memory_mb)) {
            out.memory_mb = at;
            out.active = j;
        }
    }
    return out;
}

}  // namespace ppb
