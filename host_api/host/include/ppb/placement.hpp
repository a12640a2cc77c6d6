// ppb/placement.hpp — host-side owning forms of the boundary's plain data.
//
// ppb_placement and ppb_observation (ppb/abi.h) point at chunk arrays they do not own. The
// types here own their chunks and hand out boundary views that stay valid while they live.
#ifndef PPB_PLACEMENT_HPP
#define PPB_PLACEMENT_HPP

#include <ppb/abi.h>
#include <ppb/errors.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/schedule.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppb {

struct StagePlacement {
    std::uint32_t num_stages = 1;
    std::uint32_t stage = 0;
    std::vector<ppb_chunk> chunks;  // one per virtual pipeline chunk; usually one
    // The schedule the stage runs: it decides which stage holds the model's ends.
    Schedule schedule = Schedule::one_f_one_b;

    // A view points into `chunks`: a temporary's would dangle, so only an lvalue gives one. The
    // stage is described to the model by the ends it holds (ppb::abi_stage): under the V-shaped
    // schedules (dualpipe-v, zb-v) stage 0 holds the embedding and the LM head, stage P - 1
    // neither.
    [[nodiscard]] ppb_placement view() const& noexcept {
        std::uint32_t p = num_stages;
        std::uint32_t s = stage;
        if (v_shaped(schedule) && chunks.size() == 2) {
            if (s == 0)
                p = 1;
            else if (s + 1 == p)
                p = num_stages + 1;
        }
        return ppb_placement{p, s, static_cast<std::uint32_t>(chunks.size()), chunks.data()};
    }
    ppb_placement view() const&& = delete;

    // Layers per group of body layers (plugin API 1.3), or empty when the layers are not counted
    // per group: num_groups() x PPB_KIND_COUNT counts per chunk, chunk by chunk, group by group,
    // as ppb_grouped_placement::group_layers. chunks[c].layers must be their sums over groups
    // (set_group_layers() keeps them so).
    std::vector<std::uint32_t> group_layers{};

    [[nodiscard]] std::uint32_t num_groups() const noexcept {
        if (group_layers.empty() || chunks.empty())
            return 1;
        return static_cast<std::uint32_t>(group_layers.size() / (chunks.size() * PPB_KIND_COUNT));
    }
    [[nodiscard]] bool grouped() const noexcept { return !group_layers.empty(); }
    [[nodiscard]] std::uint32_t group_layer(std::size_t chunk, std::size_t group,
                                            std::size_t kind) const noexcept {
        return group_layers[(chunk * num_groups() + group) * PPB_KIND_COUNT + kind];
    }
    // Sets the layers per group (`counts` as group_layers, for chunks.size() chunks) and each
    // chunk's layers to their sums.
    void set_group_layers(std::vector<std::uint32_t> counts) {
        group_layers = std::move(counts);
        const std::size_t groups = num_groups();
        for (std::size_t c = 0; c < chunks.size(); ++c) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                std::uint32_t sum = 0;
                for (std::size_t g = 0; g < groups; ++g)
                    sum += group_layer(c, g, k);
                chunks[c].layers[k] = sum;
            }
        }
    }
    // The grouped view (API 1.3) of a grouped() placement; it points into `chunks` and
    // `group_layers`.
    [[nodiscard]] ppb_grouped_placement grouped_view() const& noexcept {
        return ppb_grouped_placement{view(), num_groups(), group_layers.data()};
    }
    ppb_grouped_placement grouped_view() const&& = delete;

    [[nodiscard]] std::uint64_t total_layers() const noexcept {
        std::uint64_t n = 0;
        for (const auto& c : chunks) {
            for (auto k : c.layers)
                n += k;
        }
        return n;
    }
};

// `placement`'s layers per group, whose groups are `from` (in group_layers' order), recounted in
// the order of `to` (a group of `to` absent from `from` holds none). Throws ppb::InputError naming
// a group of `from` that `to` lacks and holds layers: the model cannot predict it.
[[nodiscard]] inline StagePlacement regrouped(const StagePlacement& placement,
                                              const std::vector<std::string>& from,
                                              const std::vector<std::string>& to) {
    std::vector<std::uint32_t> counts(placement.chunks.size() * to.size() * PPB_KIND_COUNT, 0);
    for (std::size_t g = 0; g < from.size(); ++g) {
        std::size_t target = to.size();
        for (std::size_t t = 0; t < to.size(); ++t) {
            if (to[t] == from[g])
                target = t;
        }
        for (std::size_t c = 0; c < placement.chunks.size(); ++c) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                const std::uint32_t n = placement.group_layer(c, g, k);
                if (n == 0)
                    continue;
                if (target == to.size()) {
                    std::string known;
                    for (const auto& name : to)
                        known += (known.empty() ? "'" : ", '") + name + "'";
                    throw InputError(
                        "the placement holds layers of group '" + from[g] +
                        "', which is not a group of the memory model (its groups: " + known + ")");
                }
                counts[(c * to.size() + target) * PPB_KIND_COUNT + k] += n;
            }
        }
    }
    StagePlacement out = placement;
    out.set_group_layers(std::move(counts));
    return out;
}

struct Observation {
    StagePlacement placement;
    double peak_memory_mb = 0.0;
    std::string config;               // the user's label of the dry run, for messages only
    std::uint32_t micro_batches = 0;  // 0 = not given
    // With several chunks whose counts the schedule gives: the stage's in-flight profile
    // (ppb::in_flight_profile), whose largest row is the observation's peak (ppb::fit_model fits
    // it by alternating, ppb/profile_fit.hpp). Empty: the chunks' in_flight are the one vector.
    // placement.chunks[c].in_flight hold the chunks' maxima over the profile.
    std::vector<InFlightVector> in_flight_profile{};
    // The peak reserved memory (the caching allocator's segments: allocated memory, its
    // fragmentation and cached blocks), when the file gives it; at least peak_memory_mb.
    std::optional<double> reserved_mb{};

    [[nodiscard]] ppb_observation view() const& noexcept {
        return ppb_observation{placement.view(), peak_memory_mb};
    }
    ppb_observation view() const&& = delete;
    [[nodiscard]] ppb_grouped_observation grouped_view() const& noexcept {
        return ppb_grouped_observation{placement.grouped_view(), peak_memory_mb};
    }
    ppb_grouped_observation grouped_view() const&& = delete;
};

// Boundary views of a set of observations; valid while `observations` is unchanged.
[[nodiscard]] inline std::vector<ppb_observation> views(
    const std::vector<Observation>& observations) {
    std::vector<ppb_observation> out;
    out.reserve(observations.size());
    for (const auto& o : observations)
        out.push_back(o.view());
    return out;
}
// The views would point into a temporary's placements.
std::vector<ppb_observation> views(const std::vector<Observation>&&) = delete;

}  // namespace ppb

#endif  // PPB_PLACEMENT_HPP
