// ppb/placement.hpp — host-side owning forms of the boundary's plain data.
//
// ppb_placement and ppb_observation (ppb/abi.h) point at chunk arrays they do not own. The
// types here own their chunks and hand out boundary views that stay valid while they live.
#ifndef PPB_PLACEMENT_HPP
#define PPB_PLACEMENT_HPP

#include <ppb/abi.h>
#include <ppb/schedule.hpp>

#include <cstdint>
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
    // stage is described to the model by the ends it holds (ppb::abi_stage): under dualpipe-v
    // stage 0 holds the embedding and the LM head, stage P - 1 neither.
    [[nodiscard]] ppb_placement view() const& noexcept {
        std::uint32_t p = num_stages;
        std::uint32_t s = stage;
        if (schedule == Schedule::dualpipe_v && chunks.size() == 2) {
            if (s == 0)
                p = 1;
            else if (s + 1 == p)
                p = num_stages + 1;
        }
        return ppb_placement{p, s, static_cast<std::uint32_t>(chunks.size()), chunks.data()};
    }
    ppb_placement view() const&& = delete;
    [[nodiscard]] std::uint64_t total_layers() const noexcept {
        std::uint64_t n = 0;
        for (const auto& c : chunks) {
            for (auto k : c.layers)
                n += k;
        }
        return n;
    }
};

struct Observation {
    StagePlacement placement;
    double peak_memory_mb = 0.0;
    std::string config;               // the user's label of the dry run, for messages only
    std::uint32_t micro_batches = 0;  // 0 = not given

    [[nodiscard]] ppb_observation view() const& noexcept {
        return ppb_observation{placement.view(), peak_memory_mb};
    }
    ppb_observation view() const&& = delete;
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
