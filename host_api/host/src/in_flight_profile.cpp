// In-flight profiles (ppb/in_flight_profile.hpp): the states of a stage's program order, reduced
// to the Pareto set. The order is ppb::stage_order's — Megatron-LM's interleaved order for
// "interleaved" (schedule_order.cpp) — so a change of that order changes the profiles with it.
#include <ppb/errors.hpp>
#include <ppb/in_flight_profile.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

namespace ppb {
namespace {

// a >= b in every chunk.
bool covers(const InFlightVector& a, const InFlightVector& b) {
    for (std::size_t c = 0; c < a.size(); ++c) {
        if (a[c] < b[c])
            return false;
    }
    return true;
}

// The states of `order` that may be on the profile: each held just before a release that follows
// one or more forwards (and the last, if the order ended on a forward). Every other state is
// dominated by a neighbour — the one before a release holds one more on that chunk, the one
// after a forward one less than the next — so the Pareto set of these is that of all states
// (in_flight_states), found without a vector per step of a long order.
std::vector<InFlightVector> peak_states(const std::vector<StageStep>& order,
                                        std::uint32_t num_chunks) {
    std::vector<InFlightVector> peaks;
    InFlightVector held(num_chunks, 0);
    const Pass release = releasing_pass(order);
    bool rising = false;
    for (const StageStep& step : order) {
        std::uint32_t& h = held.at(step.chunk);
        if (step.pass == Pass::forward) {
            ++h;
            rising = true;
            continue;
        }
        if (step.pass != release)
            continue;  // an input gradient B before its W: still held
        if (h == 0)
            throw std::logic_error("a backward before its forward in a stage's order");
        if (rising)
            peaks.push_back(held);
        rising = false;
        --h;
    }
    if (rising)
        peaks.push_back(held);
    return peaks;
}

// The profiles asked for on this thread, by shape: a search asks for the same few thousand again
// for every recompute setting and plan it weighs. Bounded; only valid shapes are kept, so a
// refusal is worded afresh each time.
using ProfileKey = std::tuple<Schedule, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>;
constexpr std::size_t max_remembered_profiles = 4096;
thread_local std::map<ProfileKey, std::vector<InFlightVector>> remembered_profiles;

}  // namespace

std::vector<InFlightVector> in_flight_states(const std::vector<StageStep>& order,
                                             std::uint32_t num_chunks) {
    std::vector<InFlightVector> states;
    states.reserve(order.size());
    InFlightVector held(num_chunks, 0);
    const Pass release = releasing_pass(order);
    for (const StageStep& step : order) {
        std::uint32_t& h = held.at(step.chunk);
        if (step.pass == Pass::forward)
            ++h;
        else if (step.pass != release)
            continue;  // an input gradient B before its W: still held
        else if (h == 0)
            throw std::logic_error("a backward before its forward in a stage's order");
        else
            --h;
        states.push_back(held);
    }
    return states;
}

std::vector<InFlightVector> pareto_in_flight(std::vector<InFlightVector> vectors) {
    // Largest first: a vector can only be dominated by one before it in this order.
    std::sort(vectors.begin(), vectors.end(), std::greater<>());
    vectors.erase(std::unique(vectors.begin(), vectors.end()), vectors.end());
    std::vector<InFlightVector> kept;
    for (InFlightVector& v : vectors) {
        const bool dominated = std::any_of(kept.begin(), kept.end(),
                                           [&](const InFlightVector& k) { return covers(k, v); });
        if (!dominated)
            kept.push_back(std::move(v));
    }
    return kept;
}

std::vector<InFlightVector> in_flight_profile(Schedule schedule, std::uint32_t num_stages,
                                              std::uint32_t stage, std::uint32_t micro_batches,
                                              std::uint32_t chunks) {
    const ProfileKey key{schedule, num_stages, stage, micro_batches, chunks};
    if (const auto it = remembered_profiles.find(key); it != remembered_profiles.end())
        return it->second;
    // in_flight_counts checks the shape and words the refusals; its counts are not used.
    (void)in_flight_counts(schedule, num_stages, stage, micro_batches, chunks);
    const std::uint32_t m = micro_batches == 0 ? 4 * num_stages : micro_batches;
    std::vector<InFlightVector> profile =
        pareto_in_flight(peak_states(stage_order(schedule, num_stages, chunks, m, stage), chunks));
    if (remembered_profiles.size() >= max_remembered_profiles)
        remembered_profiles.clear();
    remembered_profiles.emplace(key, profile);
    return profile;
}

InFlightVector asked_in_flight(InFlightVector counts) {
    for (std::uint32_t& f : counts)
        f = std::max<std::uint32_t>(f, 1);
    return counts;
}

std::vector<InFlightVector> zero_count_probes(const InFlightVector& counts) {
    std::vector<InFlightVector> out{asked_in_flight(counts)};
    for (std::size_t c = 0; c < counts.size(); ++c) {
        if (counts[c] == 0) {
            InFlightVector more = out.front();
            ++more[c];
            out.push_back(std::move(more));
        }
    }
    return out;
}

double answer_at_counts(std::span<const double> answers) {
    if (answers.empty())
        throw std::invalid_argument("no answer to take a count of 0 from");
    double at = answers.front();
    for (std::size_t i = 1; i < answers.size(); ++i)
        at -= answers[i] - answers.front();
    return at;
}

bool heavier_than(double sum, double best) {
    return sum - best > 1e-12 * std::max(1.0, std::abs(best));
}

HeaviestVector heaviest_vector(const std::vector<InFlightVector>& profile,
                               std::span<const double> weights) {
    if (profile.empty())
        throw std::invalid_argument("an in-flight profile has at least one vector");
    HeaviestVector best{0, 0.0};
    for (std::size_t j = 0; j < profile.size(); ++j) {
        if (profile[j].size() != weights.size()) {
            throw std::invalid_argument("an in-flight vector of " +
                                        std::to_string(profile[j].size()) + " chunks weighed by " +
                                        std::to_string(weights.size()) + " weights");
        }
        double sum = 0.0;
        for (std::size_t c = 0; c < weights.size(); ++c)
            sum += weights[c] * profile[j][c];
        if (j == 0 || heavier_than(sum, best.sum))
            best = {j, sum};
    }
    return best;
}

InFlightVector profile_maxima(const std::vector<InFlightVector>& profile) {
    InFlightVector out = profile.empty() ? InFlightVector{} : profile.front();
    for (const InFlightVector& v : profile) {
        for (std::size_t c = 0; c < out.size(); ++c)
            out[c] = std::max(out[c], v.at(c));
    }
    return out;
}

}  // namespace ppb
