#include "design.hpp"

#include <vector>

namespace ppb::dryrun_lsq {

namespace {

std::uint64_t total_layers(const ppb_chunk& chunk) noexcept {
    std::uint64_t n = 0;
    for (const std::uint32_t k : chunk.layers)
        n += k;
    return n;
}

std::uint64_t total_layers(const ppb_placement& placement) noexcept {
    std::uint64_t n = 0;
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c)
        n += total_layers(placement.chunks[c]);
    return n;
}

bool is_head(const ppb_placement& p) noexcept {
    return p.stage == 0;
}
bool is_tail(const ppb_placement& p) noexcept {
    return p.stage + 1 == p.num_stages;
}
bool is_body(const ppb_placement& p) noexcept {
    return !is_head(p) && !is_tail(p);
}

}  // namespace

ParameterVector design_row(const ppb_placement& placement) noexcept {
    ParameterVector x{};
    x[index(Parameter::const_mb)] = 1.0;
    x[index(Parameter::head_mb)] = is_head(placement) ? 1.0 : 0.0;
    x[index(Parameter::tail_mb)] = is_tail(placement) ? 1.0 : 0.0;
    x[index(Parameter::param_per_layer_mb)] = static_cast<double>(total_layers(placement));
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
        const ppb_chunk& chunk = placement.chunks[c];
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            x[index(activation(static_cast<ppb_kind>(k)))] +=
                static_cast<double>(chunk.layers[k]) * static_cast<double>(chunk.in_flight);
        }
    }
    return x;
}

ParameterVector design_row(const ppb_grouped_placement& grouped) noexcept {
    const ppb_placement& placement = grouped.placement;
    ParameterVector x{};
    x[index(Parameter::const_mb)] = 1.0;
    x[index(Parameter::head_mb)] = is_head(placement) ? 1.0 : 0.0;
    x[index(Parameter::tail_mb)] = is_tail(placement) ? 1.0 : 0.0;
    const std::uint32_t groups = grouped.num_groups;
    // Summed as design_row(ppb_placement) sums, so that one group gives the same row bit for bit.
    for (std::uint32_t g = 0; g < groups; ++g) {
        std::uint64_t n = 0;
        for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                n += grouped.group_layers[(c * groups + g) * PPB_KIND_COUNT + k];
        }
        x[index(Unknown(Parameter::param_per_layer_mb, g))] = static_cast<double>(n);
    }
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
        const double in_flight = static_cast<double>(placement.chunks[c].in_flight);
        for (std::uint32_t g = 0; g < groups; ++g) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                const std::uint32_t layers =
                    grouped.group_layers[(c * groups + g) * PPB_KIND_COUNT + k];
                x[index(Unknown(activation(static_cast<ppb_kind>(k)), g))] +=
                    static_cast<double>(layers) * in_flight;
            }
        }
    }
    return x;
}

ObservationSummary summarize_group(std::span<const ppb_grouped_observation> observations,
                                   std::uint32_t group) {
    std::vector<std::vector<ppb_chunk>> chunks;
    chunks.reserve(observations.size());
    std::vector<ppb_observation> projected;
    projected.reserve(observations.size());
    for (const ppb_grouped_observation& o : observations) {
        const ppb_grouped_placement& grouped = o.placement;
        std::vector<ppb_chunk>& own = chunks.emplace_back();
        for (std::uint32_t c = 0; c < grouped.placement.num_chunks; ++c) {
            ppb_chunk chunk = grouped.placement.chunks[c];
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                chunk.layers[k] =
                    grouped.group_layers[(c * grouped.num_groups + group) * PPB_KIND_COUNT + k];
            }
            own.push_back(chunk);
        }
        ppb_placement placement = grouped.placement;
        placement.chunks = own.data();
        projected.push_back(ppb_observation{placement, o.peak_memory_mb});
    }
    return summarize(projected);
}

ObservationSummary summarize(std::span<const ppb_observation> observations) {
    ObservationSummary s;
    s.rows = observations.size();
    bool body_layers_differ = false;
    bool in_flight_differs = false;
    bool any_head = false;
    bool any_tail = false;
    bool head_in_multi_stage = false;
    bool tail_in_multi_stage = false;
    std::array<bool, PPB_KIND_COUNT> kind_off_head{};
    std::array<bool, PPB_KIND_COUNT> kind_off_tail{};

    for (const ppb_observation& o : observations) {
        const ppb_placement& p = o.placement;
        const bool single_stage = p.num_stages == 1;
        s.all_single_stage = s.all_single_stage && single_stage;
        any_head = any_head || is_head(p);
        any_tail = any_tail || is_tail(p);
        head_in_multi_stage = head_in_multi_stage || (is_head(p) && !single_stage);
        tail_in_multi_stage = tail_in_multi_stage || (is_tail(p) && !single_stage);

        if (is_body(p)) {
            const std::uint64_t n = total_layers(p);
            if (!s.any_body_stage) {
                s.common_body_layers = n;
            } else if (s.common_body_layers != n) {
                body_layers_differ = true;
            }
            s.any_body_stage = true;
        }
        for (std::uint32_t c = 0; c < p.num_chunks; ++c) {
            const ppb_chunk& chunk = p.chunks[c];
            if (total_layers(chunk) != 0) {
                if (!s.common_in_flight) {
                    s.common_in_flight = chunk.in_flight;
                } else if (*s.common_in_flight != chunk.in_flight) {
                    in_flight_differs = true;
                }
            }
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                if (chunk.layers[k] == 0)
                    continue;
                s.kind_observed[k] = true;
                kind_off_head[k] = kind_off_head[k] || !is_head(p);
                kind_off_tail[k] = kind_off_tail[k] || !is_tail(p);
            }
        }
    }
    if (body_layers_differ)
        s.common_body_layers.reset();
    if (in_flight_differs)
        s.common_in_flight.reset();
    s.head_only_in_single_stage = any_head && !head_in_multi_stage;
    s.tail_only_in_single_stage = any_tail && !tail_in_multi_stage;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        s.kind_only_on_head[k] = s.kind_observed[k] && !kind_off_head[k];
        s.kind_only_on_tail[k] = s.kind_observed[k] && !kind_off_tail[k];
    }
    return s;
}

}  // namespace ppb::dryrun_lsq
