// ppb/in_flight_profile.hpp — what a stage holds at each moment of an iteration, per chunk
// (host_api/docs/design.md, "In-flight profiles").
//
// With several chunks per stage a stage's peak memory is the largest weighted sum
//     base + Σ_c a_c · count_c(t)
// over the moments t of the iteration, a_c being chunk c's activation MB per micro-batch. The
// chunks' own peaks (ppb::in_flight_counts) do not happen at the same moment, so adding them
// over-counts. A stage's *profile* is the set of in-flight vectors (count_0(t), …, count_{v-1}(t))
// that occur while it runs its program order (ppb::stage_order), reduced to those not dominated
// by another (the Pareto set): only they can hold the maximum of a sum with non-negative
// weights. With one chunk the profile is the one vector (min(P − s, M)).
#ifndef PPB_IN_FLIGHT_PROFILE_HPP
#define PPB_IN_FLIGHT_PROFILE_HPP

#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ppb {

// Micro-batches whose activations each chunk of a stage holds at one moment.
using InFlightVector = std::vector<std::uint32_t>;

// Every state a stage passes through while running `order`, after each step: +1 on the chunk
// of a forward, −1 on the chunk of a backward (ppb::peak_in_flight's accounting).
[[nodiscard]] std::vector<InFlightVector> in_flight_states(const std::vector<StageStep>& order,
                                                           std::uint32_t num_chunks);

// The vectors of `vectors` that no other vector dominates (at least as large in every chunk),
// each once, in decreasing lexicographic order (chunk 0 first).
[[nodiscard]] std::vector<InFlightVector> pareto_in_flight(std::vector<InFlightVector> vectors);

// The profile of `stage`: pareto_in_flight(in_flight_states(stage_order(...))).
// micro_batches == 0 means "not known": the profile of a long iteration (the steady state repeats,
// so 4P micro-batches show every vector a longer one does). Throws std::invalid_argument for what
// ppb::in_flight_counts refuses, with the same messages.
[[nodiscard]] std::vector<InFlightVector> in_flight_profile(Schedule schedule,
                                                            std::uint32_t num_stages,
                                                            std::uint32_t stage,
                                                            std::uint32_t micro_batches,
                                                            std::uint32_t chunks = 1);

// A count of 0. The plugin contract (ppb/abi.h, API 1.3) has every chunk of a placement hold
// at least one micro-batch, yet a chunk may hold none at some moment of the schedule (its
// activations all freed), and the stage's true peak may be at such a moment. The one rule,
// for every model and every host use of profiles (predict, compare, the Python module, the
// partitioner, the fit, and so the simulator's memory of a plan): a model is asked at the
// vector with each 0 as 1 (asked_in_flight), and for each chunk holding none its memory per
// micro-batch is taken off — a linear model's a_c = Σ_k A_k n_ck from its coefficients
// (ppb::chunk_activations), any other model's own slope there, its answer with one more
// micro-batch on that chunk less its answer as asked (zero_count_probes, answer_at_counts). The
// answer is exact for every model affine in each chunk's in-flight count: every linear model,
// the analytic model (whose embedding and LM-head activations grow with their chunk's count),
// and every model the chunked partitioner accepts (it checks the affinity).

// `counts` as a model may be asked about them: every count of 0 as 1.
[[nodiscard]] InFlightVector asked_in_flight(InFlightVector counts);

// The vectors a model without coefficients is asked about for the true `counts`:
// asked_in_flight(counts) first, then, for each chunk holding none (in chunk order), that vector
// with one more micro-batch on that chunk. Just the asked vector when no count is 0.
[[nodiscard]] std::vector<InFlightVector> zero_count_probes(const InFlightVector& counts);

// The model's answer at the true counts from its answers at zero_count_probes(counts), in that
// order: answers[0] less each zero chunk's slope, answers[i] − answers[0].
[[nodiscard]] double answer_at_counts(std::span<const double> answers);

// Whether a moment's memory `sum` is larger than `best` beyond rounding. Two moments whose memory
// differs only in the last bits of a double (a tie, whose sums a model or the zero-count rule
// happened to add up in another order) are equal: the earlier vector of the profile stays the
// stage's peak, so the moment reported does not depend on rounding.
[[nodiscard]] bool heavier_than(double sum, double best);

// The vector of `profile` where Σ_c weights[c] · count_c is largest, and that sum (the first
// such vector on a tie, heavier_than). `profile` must not be empty; weights has one entry per
// chunk.
struct HeaviestVector {
    std::size_t index = 0;
    double sum = 0.0;
};
[[nodiscard]] HeaviestVector heaviest_vector(const std::vector<InFlightVector>& profile,
                                             std::span<const double> weights);

// Each chunk's largest count over the profile: ppb::in_flight_counts of the same stage.
[[nodiscard]] InFlightVector profile_maxima(const std::vector<InFlightVector>& profile);

}  // namespace ppb

#endif  // PPB_IN_FLIGHT_PROFILE_HPP
