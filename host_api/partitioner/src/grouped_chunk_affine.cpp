// The affine description of one stage of a model of several groups of body layers, chunk by chunk
// (grouped_chunked.hpp): at row j of the stage's in-flight profile (counts f_jc) its memory is
//     base_j + sum_c sum_g sum_k n_{c,g,k} (fixed_{c,g,k} + f_jc activation_{c,g,k}),
// the stage's memory the largest row. A model with coefficients per group gives every term
// exactly (the shared constant and ends from group 0, API 1.3's group_parameters). Any other
// model is probed as the one-group chunked path probes it (chunk_tables.cpp), per group, and the
// probes are checked: a model that is not affine is refused rather than planned wrongly.
#include "chunk_tables.hpp"
#include "grouped_chunked.hpp"
#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace ppb::partition::detail {

GroupedAffineStage linear_grouped_stage(const Problem& problem,
                                        std::span<const ppb_linear_parameters> c,
                                        std::uint32_t stage) {
    const StageEnds ends = stage_ends(problem.schedule, problem.num_stages, problem.chunks, stage);
    const double base =
        c[0].const_mb + (ends.head ? c[0].head_mb : 0.0) + (ends.tail ? c[0].tail_mb : 0.0);
    std::vector<InFlightVector> profile = problem.in_flight_profile(stage);
    GroupedAffineStage a;
    std::vector<double> bases(profile.size(), base);
    a.rows = StageRows(std::move(bases), std::move(profile));
    a.fixed.resize(problem.chunks);
    a.activation.resize(problem.chunks);
    a.base_activation.assign(problem.chunks, 0.0);  // a linear model's ends hold no activations
    for (std::size_t chunk = 0; chunk < problem.chunks; ++chunk) {
        for (const ppb_linear_parameters& group : c) {
            UnitArray fixed{};
            fixed.fill(group.per_layer_mb);
            UnitArray activation{};
            std::copy(std::begin(group.activation_mb), std::end(group.activation_mb),
                      activation.begin());
            a.fixed[chunk].push_back(fixed);
            a.activation[chunk].push_back(activation);
        }
    }
    return a;
}

// A model without coefficients, probed as the one-group chunked path probes it (chunk_tables.cpp),
// per group: the empty stage at every vector of the profile (at the true counts:
// ppb::zero_count_probes where a chunk holds none); at the first vector as asked one layer of each
// group and kind in each chunk, and the same with one more micro-batch in flight on that chunk,
// and the empty stage with one more; then checks, at every vector as asked, of up to three layers
// of each group, kind and chunk and of a mix of every group and kind, which an affine model
// predicts exactly. A model that fails them is refused.
GroupedAffineStage probed_grouped_stage(const Problem& problem, const MemorySource& memory,
                                        std::uint32_t stage,
                                        const std::vector<std::vector<std::size_t>>& kinds) {
    const std::size_t G = kinds.size();
    const std::uint32_t v = problem.chunks;
    std::vector<InFlightVector> profile = problem.in_flight_profile(stage);
    const InFlightVector first = asked_in_flight(profile.front());
    const ChunkGroups empty(v, std::vector<KindCounts>(G));
    GroupedProbe probe(problem, stage, G);
    std::vector<std::size_t> base_rows;  // vector j's bases: base_rows[j] .. base_rows[j + 1] - 1
    for (const InFlightVector& vector : profile) {
        base_rows.push_back(probe.size());
        (void)probe.add_at_counts(empty, vector);
    }
    base_rows.push_back(probe.size());
    probe.add(empty, first);
    const std::size_t first_unit = probe.size();
    for (std::uint32_t c = 0; c < v; ++c) {
        for (std::size_t g = 0; g < G; ++g) {
            for (const std::size_t k : kinds[g]) {
                auto one = empty;
                one[c][g][k] = 1;
                probe.add(one, first);
                probe.add(one, first, c, 1);
            }
        }
        probe.add(empty, first, c, 1);
    }
    // The checks hold no more layers of a group than the model has (a model may refuse more).
    const std::size_t first_check = probe.size();
    std::vector<std::size_t> check_row;
    auto all = empty;
    for (std::size_t g = 0; g < G; ++g) {
        std::uint32_t left = problem.time.groups[g].layers;
        for (std::uint32_t c = 0; c < v; ++c) {
            for (const std::size_t k : kinds[g]) {
                if (left == 0)
                    break;
                all[c][g][k] = 1;
                --left;
            }
        }
    }
    for (std::size_t row = 0; row < profile.size(); ++row) {
        const InFlightVector asked = asked_in_flight(profile[row]);
        for (std::uint32_t c = 0; c < v; ++c) {
            for (std::size_t g = 0; g < G; ++g) {
                const std::uint32_t some =
                    std::min<std::uint32_t>(3, problem.time.groups[g].layers);
                for (const std::size_t k : kinds[g]) {
                    auto several = empty;
                    several[c][g][k] = some;
                    probe.add(several, asked);
                    check_row.push_back(row);
                }
            }
        }
        probe.add(all, asked);
        check_row.push_back(row);
    }
    const std::vector<double> predicted = probe.predict(memory);

    std::vector<double> base;
    for (std::size_t j = 0; j < profile.size(); ++j) {
        base.push_back(answer_at_counts(std::span<const double>(predicted).subspan(
            base_rows[j], base_rows[j + 1] - base_rows[j])));
    }
    const double base_first = predicted[first_unit - 1];
    GroupedAffineStage a;
    a.fixed.resize(v);
    a.activation.resize(v);
    a.base_activation.assign(v, 0.0);
    std::size_t i = first_unit;
    for (std::uint32_t c = 0; c < v; ++c) {
        std::vector<UnitArray> unit(G, UnitArray{});
        std::vector<UnitArray> with_more(G, UnitArray{});
        for (std::size_t g = 0; g < G; ++g) {
            for (const std::size_t k : kinds[g]) {
                unit[g][k] = predicted[i] - base_first;
                with_more[g][k] = predicted[i + 1];
                i += 2;
            }
        }
        const double empty_more = predicted[i++];
        a.base_activation[c] = empty_more - base_first;
        a.fixed[c].assign(G, UnitArray{});
        a.activation[c].assign(G, UnitArray{});
        for (std::size_t g = 0; g < G; ++g) {
            for (const std::size_t k : kinds[g]) {
                a.activation[c][g][k] = (with_more[g][k] - empty_more) - unit[g][k];
                a.fixed[c][g][k] = unit[g][k] - first[c] * a.activation[c][g][k];
            }
        }
    }
    for (std::size_t check = first_check; check < predicted.size(); ++check) {
        const auto& layers = probe.layers(check);
        const InFlightVector& vector = probe.in_flight(check);
        double affine = predicted[base_rows[check_row[check - first_check]]];
        for (std::uint32_t c = 0; c < v; ++c) {
            for (std::size_t g = 0; g < G; ++g) {
                for (std::size_t k = 0; k < kind_count; ++k) {
                    affine +=
                        (a.fixed[c][g][k] + vector[c] * a.activation[c][g][k]) * layers[c][g][k];
                }
            }
        }
        if (!affine_agrees(affine, predicted[check])) {
            throw InputError(fmt::format(
                "the memory model is not affine in the layer counts of stage {} (a probe with "
                "several groups in its chunks predicted {:.6g} MB, the sum of its parts {:.6g} "
                "MB); planning several groups of body layers with chunks needs a model whose "
                "stage memory is a constant plus a cost per layer of each group, kind and chunk, "
                "and per layer and micro-batch in flight",
                stage, predicted[check], affine));
        }
    }
    a.rows = StageRows(std::move(base), std::move(profile));
    return a;
}

StageRows::Peak predicted_peak(const Problem& problem, const MemorySource& memory,
                               std::uint32_t stage, const ChunkGroups& layers,
                               const std::vector<InFlightVector>& profile) {
    const std::size_t groups = layers.empty() ? 0 : layers.front().size();
    GroupedProbe probe(problem, stage, groups);
    std::vector<std::size_t> first{0};
    for (const InFlightVector& v : profile)
        first.push_back(first.back() + probe.add_at_counts(layers, v));
    const std::vector<double> answers = probe.predict(memory);
    StageRows::Peak peak{-std::numeric_limits<double>::infinity(), 0};
    for (std::size_t j = 0; j < profile.size(); ++j) {
        const double at = answer_at_counts(
            std::span<const double>(answers).subspan(first[j], first[j + 1] - first[j]));
        if (at > peak.memory)
            peak = {at, j};
    }
    return peak;
}

}  // namespace ppb::partition::detail
