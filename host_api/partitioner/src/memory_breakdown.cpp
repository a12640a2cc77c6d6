#include <ppb/partition/memory_breakdown.hpp>

#include <ppb/in_flight_profile.hpp>
#include <ppb/schedule.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <optional>
#include <span>

namespace ppb::partition {
namespace {

// The stage's constant, head and tail (shared by every group: API 1.3's group_parameters).
MemoryBreakdown fixed_parts(const ppb_linear_parameters& c, const Problem& problem,
                            std::uint32_t stage) {
    // Where the schedule puts the model's ends (under dualpipe-v both on stage 0).
    const StageEnds ends = stage_ends(problem.schedule, problem.num_stages, problem.chunks, stage);
    MemoryBreakdown b;
    b.itemised = true;
    b.constant_mb = c.const_mb;
    if (ends.head)
        b.head_mb = c.head_mb;
    if (ends.tail)
        b.tail_mb = c.tail_mb;
    return b;
}

void total_activations(MemoryBreakdown& b) {
    b.activations_total_mb = std::accumulate(b.activation_mb.begin(), b.activation_mb.end(), 0.0);
}

// One group: each chunk's layers with that chunk's in-flight count.
MemoryBreakdown linear_parts(const ppb_linear_parameters& c, const Problem& problem,
                             const StagePlan& stage) {
    MemoryBreakdown b = fixed_parts(c, problem, stage.stage);
    for (const ChunkPlan& chunk : stage.chunks) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            const double n = chunk.layers[k];
            b.parameters_mb += n * c.per_layer_mb;
            b.activation_mb[k] += n * c.activation_mb[k] * chunk.in_flight;
        }
    }
    total_activations(b);
    return b;
}

// Several groups: each group's layers with its own coefficients, with the in-flight count of the
// chunk that holds them (with one chunk, the stage's layers per group and its 1F1B count; with
// several, each chunk's layers per group at the peak's counts, ChunkPlan::in_flight).
MemoryBreakdown grouped_parts(std::span<const ppb_linear_parameters> c, const Problem& problem,
                              const StagePlan& stage) {
    MemoryBreakdown b = fixed_parts(c[0], problem, stage.stage);
    const auto add = [&](const std::vector<KindCounts>& group_layers, double in_flight) {
        for (std::size_t g = 0; g < group_layers.size() && g < c.size(); ++g) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                const double n = group_layers[g][k];
                b.parameters_mb += n * c[g].per_layer_mb;
                b.activation_mb[k] += n * c[g].activation_mb[k] * in_flight;
            }
        }
    };
    const bool per_chunk =
        std::any_of(stage.chunks.begin(), stage.chunks.end(),
                    [](const ChunkPlan& chunk) { return !chunk.group_layers.empty(); });
    if (per_chunk) {
        for (const ChunkPlan& chunk : stage.chunks)
            add(chunk.group_layers, chunk.in_flight);
    } else {
        add(stage.group_layers, problem.in_flight(stage.stage));
    }
    total_activations(b);
    return b;
}

// The stage's placement as the plan holds it, as the model is asked about it (ppb::abi_stage):
// each chunk's layers and in-flight count, its layers per group of the time model (one group
// when the time model has one).
struct StagePlacementOfPlan {
    std::vector<ppb_chunk> chunks;
    std::vector<std::uint32_t> group_layers;
    ppb_grouped_placement view = {};
};

void place(const Problem& problem, const StagePlan& stage, StagePlacementOfPlan& out) {
    const std::size_t groups = problem.time.grouped() ? problem.time.groups.size() : 1;
    out.chunks.assign(stage.chunks.size(), ppb_chunk{});
    out.group_layers.assign(stage.chunks.size() * groups * PPB_KIND_COUNT, 0);
    for (std::size_t c = 0; c < stage.chunks.size(); ++c) {
        const ChunkPlan& chunk = stage.chunks[c];
        std::copy(chunk.layers.begin(), chunk.layers.end(), out.chunks[c].layers);
        out.chunks[c].in_flight = chunk.in_flight;
        // With one chunk the stage's layers per group are the chunk's.
        const std::vector<KindCounts>& per_group =
            !chunk.group_layers.empty() ? chunk.group_layers : stage.group_layers;
        for (std::size_t g = 0; g < groups; ++g) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                out.group_layers[(c * groups + g) * PPB_KIND_COUNT + k] =
                    problem.time.grouped() ? (g < per_group.size() ? per_group[g][k] : 0)
                                           : chunk.layers[k];
            }
        }
    }
    const AbiStage abi =
        abi_stage(problem.schedule, problem.num_stages, problem.chunks, stage.stage);
    out.view = ppb_grouped_placement{
        ppb_placement{abi.num_stages, abi.stage, static_cast<std::uint32_t>(out.chunks.size()),
                      out.chunks.data()},
        static_cast<std::uint32_t>(groups), out.group_layers.data()};
}

// The model's terms of a stage placed as the plan holds it. A chunk may hold no micro-batch where
// the stage peaks, which a model is never asked about (ppb/in_flight_profile.hpp, "A count of
// 0"): each term is then taken by the same rule as the stage's memory, from the model's terms at
// ppb::zero_count_probes (the counts with each 0 as 1, then one more on each such chunk) combined
// by ppb::answer_at_counts, term by term (a term missing from one answer counts 0 there). The
// rule is linear, so the terms still add up to the memory the rule gives.
std::optional<std::vector<MemoryPart>> parts_at_counts(const MemorySource& memory,
                                                       StagePlacementOfPlan& placement) {
    InFlightVector counts;
    for (const ppb_chunk& chunk : placement.chunks)
        counts.push_back(chunk.in_flight);
    const std::vector<InFlightVector> probes = zero_count_probes(counts);
    std::vector<std::vector<MemoryPart>> answers;
    for (const InFlightVector& asked : probes) {
        for (std::size_t c = 0; c < placement.chunks.size(); ++c)
            placement.chunks[c].in_flight = asked[c];
        std::optional<std::vector<MemoryPart>> parts = memory.predict_parts(placement.view);
        if (!parts || parts->empty())
            return std::nullopt;
        answers.push_back(std::move(*parts));
    }
    for (std::size_t c = 0; c < placement.chunks.size(); ++c)
        placement.chunks[c].in_flight = counts[c];
    if (answers.size() == 1)
        return std::move(answers.front());
    std::vector<MemoryPart> out;  // every term once, in the order it first appears
    for (const auto& answer : answers) {
        for (const MemoryPart& part : answer) {
            if (std::none_of(out.begin(), out.end(),
                             [&](const MemoryPart& p) { return p.name == part.name; }))
                out.push_back(MemoryPart{part.name, part.label, 0.0});
        }
    }
    std::vector<double> values(answers.size());
    for (MemoryPart& part : out) {
        for (std::size_t i = 0; i < answers.size(); ++i) {
            const auto found =
                std::find_if(answers[i].begin(), answers[i].end(),
                             [&](const MemoryPart& p) { return p.name == part.name; });
            values[i] = found == answers[i].end() ? 0.0 : found->mb;
        }
        part.mb = answer_at_counts(values);
    }
    return out;
}

// The model's terms of every stage of `plan`, or none when it gives none for some stage or when
// a stage's terms do not add up to its memory in the plan (the plan's memory is then not one
// prediction of the placement it holds, and the terms would not describe it).
std::vector<MemoryBreakdown> model_parts(const Problem& problem, const Plan& plan,
                                         const MemorySource& memory) {
    std::vector<MemoryBreakdown> out;
    StagePlacementOfPlan placement;
    for (const StagePlan& stage : plan.stages) {
        place(problem, stage, placement);
        std::optional<std::vector<MemoryPart>> parts = parts_at_counts(memory, placement);
        if (!parts || parts->empty())
            return {};
        double sum = 0.0;
        for (const MemoryPart& part : *parts)
            sum += part.mb;
        if (std::abs(sum - stage.memory_mb) > 1e-9 * std::max(1.0, std::abs(stage.memory_mb)))
            return {};
        MemoryBreakdown b;
        b.parts = std::move(*parts);
        out.push_back(std::move(b));
    }
    return out;
}

// The allocator's reserve taken out of parts computed on reserved memory: the coefficients'
// constant holds κ and every activation coefficient (1 + ρ) times the allocated one, so the
// allocated parts are the constant less κ and the activations over (1 + ρ), and the reserve is
// κ + ρ × those activations (ppb/allocator_reserve.hpp).
void separate_reserve(MemoryBreakdown& b, const AllocatorReserve& reserve) {
    const double share = 1.0 + reserve.activation_ratio;
    double activations = 0.0;
    if (b.itemised) {
        b.constant_mb -= reserve.constant_mb;
        for (double& a : b.activation_mb)
            a /= share;
        total_activations(b);
        activations = *b.activations_total_mb;
    } else if (b.activations_total_mb) {
        activations = *b.activations_total_mb / share;
        b.activations_total_mb = activations;
    }
    b.reserve_mb = reserve.reserve_mb(activations);
    if (!b.itemised)
        b.other_mb -= *b.reserve_mb - reserve.activation_ratio * activations;
}

}  // namespace

std::vector<MemoryBreakdown> memory_breakdown(const Problem& problem, const Plan& plan,
                                              const MemorySource& memory) {
    std::vector<MemoryBreakdown> out;
    const bool grouped = problem.time.grouped() && !memory.group_linear.empty();
    if (!grouped && !memory.linear && memory.predict_parts) {
        out = model_parts(problem, plan, memory);
        if (!out.empty())
            return out;
    }
    if (!grouped && !memory.linear && !plan.activations_known)
        return out;
    for (const StagePlan& stage : plan.stages) {
        if (grouped) {
            out.push_back(grouped_parts(memory.group_linear, problem, stage));
        } else if (memory.linear) {
            out.push_back(linear_parts(*memory.linear, problem, stage));
        } else {
            MemoryBreakdown b;
            double activations = 0.0;
            for (const ChunkPlan& chunk : stage.chunks)
                activations += chunk.activation_mb * chunk.in_flight;
            b.activations_total_mb = activations;
            b.other_mb = stage.memory_mb - activations;
            out.push_back(b);
        }
        if (memory.reserve)
            separate_reserve(out.back(), *memory.reserve);
    }
    return out;
}

std::optional<double> allocated_memory_mb(double memory_mb, const MemoryBreakdown& breakdown) {
    if (breakdown.reserve_mb)
        return memory_mb - *breakdown.reserve_mb;
    for (const MemoryPart& part : breakdown.parts) {
        if (part.name == allocator_reserve_part)
            return memory_mb - part.mb;
    }
    return std::nullopt;
}

}  // namespace ppb::partition
