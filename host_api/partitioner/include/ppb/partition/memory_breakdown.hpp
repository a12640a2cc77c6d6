// ppb/partition/memory_breakdown.hpp — what a planned stage's memory is made of, for people (the
// report's stacked bars, ppb.partition/1's "memory_breakdown_mb").
//
// A linear model (its coefficients C, H, T, P and A_r, per group of body layers when it has
// several) predicts stage s of P holding n_{c,r} layers of kind r in chunk c, with f_c
// micro-batches in flight in that chunk, as
//     C + H [s holds the head] + T [s holds the tail] + P n + sum_c sum_r A_r n_{c,r} f_c
// (the head on stage 0, the tail on the last stage, or on stage 0 under dualpipe-v: stage_ends),
// so the stage's memory is itemised exactly: the constant, the head (embedding) or the tail (LM
// head, loss), the body layers' parameters (and gradients and optimizer state, all in P), and the
// activations of each recompute kind. A model without coefficients predicts the whole: when it
// gives the terms of its predictions (plugin API 1.4, MemorySource::predict_parts; the analytic
// model does), the stage's memory is those terms of the stage's placement as the plan holds it
// (its chunks' layers and in-flight counts, where its memory peaks), which add up to the stage's
// memory; otherwise, when the partitioner probed its activations per layer
// (Plan::activations_known), the activations are sum_c activation_mb_c f_c and the rest is not
// itemised; otherwise nothing is.
#ifndef PPB_PARTITION_MEMORY_BREAKDOWN_HPP
#define PPB_PARTITION_MEMORY_BREAKDOWN_HPP

#include <ppb/partition/problem.hpp>

#include <array>
#include <optional>
#include <vector>

namespace ppb::partition {

struct MemoryBreakdown {
    // From the model's coefficients: every part below is the model's. Otherwise only
    // activations_total_mb (when known) and other_mb are.
    bool itemised = false;
    double constant_mb = 0.0;
    double head_mb = 0.0;                                // on stage 0
    double tail_mb = 0.0;                                // on the last stage
    double parameters_mb = 0.0;                          // the body layers' P n
    std::array<double, PPB_KIND_COUNT> activation_mb{};  // per recompute kind, all in flight
    std::optional<double> activations_total_mb;          // sum of activation_mb, or probed
    double other_mb = 0.0;  // not itemised: the stage's memory less its known activations
    // On reserved memory (MemorySource::reserve): the allocator's reserve, κ + ρ × the stage's
    // activations, apart from the allocated parts above (the constant without κ, the activations
    // without ρ's share). Nullopt on allocated memory, and with the model's own terms, which hold
    // it as their part "allocator_reserve".
    std::optional<double> reserve_mb = {};
    // The model's own terms (MemorySource::predict_parts): when not empty, the breakdown is these,
    // in the model's order, and nothing above is set.
    std::vector<MemoryPart> parts = {};
};

// One per stage of `plan`, or none when the model says nothing about the parts of its memory
// (no coefficients and no probed activations). On reserved memory the allocator's reserve is a
// part of its own.
[[nodiscard]] std::vector<MemoryBreakdown> memory_breakdown(const Problem& problem,
                                                            const Plan& plan,
                                                            const MemorySource& memory);

// A stage's allocated memory when its breakdown shows the allocator's reserve (reserve_mb, or the
// model's term "allocator_reserve"): its memory less the reserve; nullopt otherwise.
[[nodiscard]] std::optional<double> allocated_memory_mb(double memory_mb,
                                                        const MemoryBreakdown& breakdown);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_MEMORY_BREAKDOWN_HPP
