// The steps of the alternating fit of profiled observations (ppb/profile_fit.hpp).
#include <ppb/profile_fit.hpp>
#include <ppb/profile_prediction.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace ppb {
namespace {

// What the model's answer as asked exceeds its answer at the true counts at vector j of o's
// profile (ppb/in_flight_profile.hpp, "A count of 0"): Σ_c a_c · (asked_c − count_c) from a
// linear model's coefficients, else the model's own slope at each chunk holding none; 0 without
// a count of 0.
double zero_correction(const MemoryModel& model, const Observation& o, std::size_t j) {
    const InFlightVector& v = o.in_flight_profile.at(j);
    if (std::find(v.begin(), v.end(), 0u) == v.end())
        return 0.0;
    if (const std::optional<std::vector<double>> a = chunk_activations(model, o.placement)) {
        const InFlightVector asked = asked_in_flight(v);
        double sum = 0.0;
        for (std::size_t c = 0; c < v.size(); ++c)
            sum += (*a)[c] * (asked[c] - v[c]);
        return sum;
    }
    std::vector<StagePlacement> rows;
    for (const InFlightVector& asked : zero_count_probes(v))
        rows.push_back(with_in_flight(o.placement, asked));
    const std::vector<double> answers = predict_placements(model, rows);
    return answers.front() - answer_at_counts(answers);
}

}  // namespace

DryRunSet at_vectors(const DryRunSet& dryrun, const std::vector<std::size_t>& active,
                     const std::vector<double>& corrections) {
    DryRunSet out = dryrun;
    for (std::size_t i = 0; i < out.observations.size(); ++i) {
        Observation& o = out.observations[i];
        if (o.in_flight_profile.empty())
            continue;
        if (!corrections.empty())
            o.peak_memory_mb += corrections.at(i);
        const InFlightVector v = asked_in_flight(o.in_flight_profile.at(active.at(i)));
        for (std::size_t c = 0; c < o.placement.chunks.size(); ++c)
            o.placement.chunks[c].in_flight = v.at(c);
    }
    return out;
}

std::vector<std::vector<double>> predict_profiles(const MemoryModel& model,
                                                  const DryRunSet& dryrun) {
    // Placements of every row, then their predictions handed back observation by observation.
    std::vector<StagePlacement> rows;
    std::vector<std::size_t> counts;
    for (const Observation& o : dryrun.observations) {
        if (o.in_flight_profile.empty()) {
            rows.push_back(o.placement);
            counts.push_back(1);
            continue;
        }
        for (const InFlightVector& true_counts : o.in_flight_profile) {
            const InFlightVector v = asked_in_flight(true_counts);
            StagePlacement p = o.placement;
            for (std::size_t c = 0; c < p.chunks.size(); ++c)
                p.chunks[c].in_flight = v.at(c);
            rows.push_back(std::move(p));
        }
        counts.push_back(o.in_flight_profile.size());
    }
    std::vector<double> flat;
    if (dryrun.groups.empty()) {
        std::vector<ppb_placement> views;
        for (const StagePlacement& p : rows)
            views.push_back(p.view());
        flat = model.predict_batch(views);
    } else {
        std::vector<ppb_grouped_placement> views;
        for (const StagePlacement& p : rows)
            views.push_back(p.grouped_view());
        flat = model.predict_grouped_batch(views);
    }
    std::vector<std::vector<double>> out;
    std::size_t next = 0;
    for (const std::size_t n : counts) {
        out.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(next),
                         flat.begin() + static_cast<std::ptrdiff_t>(next + n));
        next += n;
    }
    // At a count of 0 the answer as asked less the activations not held.
    for (std::size_t i = 0; i < out.size(); ++i) {
        const Observation& o = dryrun.observations[i];
        for (std::size_t j = 0; j < o.in_flight_profile.size(); ++j) {
            out[i][j] -= zero_correction(model, o, j);
        }
    }
    return out;
}

std::vector<double> zero_corrections(const MemoryModel& model, const DryRunSet& dryrun,
                                     const std::vector<std::size_t>& active) {
    std::vector<double> out(dryrun.observations.size(), 0.0);
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (!dryrun.observations[i].in_flight_profile.empty())
            out[i] = zero_correction(model, dryrun.observations[i], active.at(i));
    }
    return out;
}

std::vector<std::size_t> initial_vectors(const DryRunSet& dryrun) {
    std::vector<std::size_t> out;
    for (const Observation& o : dryrun.observations) {
        if (o.in_flight_profile.empty()) {
            out.push_back(0);
            continue;
        }
        std::vector<double> layers;
        for (const ppb_chunk& chunk : o.placement.chunks) {
            double n = 0.0;
            for (const std::uint32_t k : chunk.layers)
                n += k;
            layers.push_back(n);
        }
        out.push_back(heaviest_vector(o.in_flight_profile, layers).index);
    }
    return out;
}

std::vector<std::size_t> heaviest_vectors(const std::vector<std::vector<double>>& predictions,
                                          const std::vector<std::size_t>& current) {
    std::vector<std::size_t> out = current;
    for (std::size_t i = 0; i < predictions.size(); ++i) {
        const auto& row = predictions[i];
        const auto best =
            static_cast<std::size_t>(std::max_element(row.begin(), row.end()) - row.begin());
        // Stay on a tie (up to rounding): moving between equal rows would not change the fit.
        const double tolerance = 1e-9 * std::max(1.0, std::abs(row[best]));
        if (row[best] > row.at(current[i]) + tolerance)
            out[i] = best;
    }
    return out;
}

double squared_error(const DryRunSet& dryrun, const std::vector<std::vector<double>>& predictions) {
    double sum = 0.0;
    for (std::size_t i = 0; i < predictions.size(); ++i) {
        const double peak = *std::max_element(predictions[i].begin(), predictions[i].end());
        const double e = dryrun.observations[i].peak_memory_mb - peak;
        sum += e * e;
    }
    return sum;
}

}  // namespace ppb
