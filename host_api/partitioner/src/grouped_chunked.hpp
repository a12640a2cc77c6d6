// Internal: planning a model of several groups of body layers with two chunks per stage
// (interleaved, interleaved-less-memory, dualpipe-v): host_api/docs/design.md, "Groups of layers
// with chunks". The shared pieces of four files, each with one job:
//   grouped_chunk_affine.cpp    each stage's memory as an affine function of its layers per
//                               (chunk, group, kind) and its chunks' in-flight counts;
//   grouped_chunk_options.cpp   a chunk's candidate mixes of recompute kinds and a stage's options
//                               for a pair of ranges;
//   grouped_chunked_solver.cpp  the knapsack over stages whose state is two cut points;
//   grouped_chunked_limit.cpp   when nothing fits: why, and the smallest limit that would.
//
// The layout. The L body layers keep model order and are cut into 2P contiguous ranges, one per
// position (stage, chunk) in the schedule's order (ppb::model_position): a cut is
// 0 = a_0 <= a_1 <= ... <= a_2P = L, position q holding [a_q, a_{q+1}). Stage s holds two
// positions, chunk 0 at q = s and chunk 1 at q = P + s (interleaved) or q = 2P - 1 - s
// (dualpipe-v). Its memory couples the two (the largest row over its in-flight profile,
// profile_memory.hpp), so the stage's choice depends on both ranges at once.
#ifndef PPB_PARTITION_GROUPED_CHUNKED_HPP
#define PPB_PARTITION_GROUPED_CHUNKED_HPP

#include "profile_memory.hpp"

#include <ppb/partition/problem.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace ppb::partition::detail {

// How many recomputation kinds a placement counts per group (none, comm, select, both, full).
inline constexpr std::size_t kind_count = PPB_KIND_COUNT;

using UnitArray = std::array<double, PPB_KIND_COUNT>;

// A stage's layers per chunk and group: [c][g], each a count per kind.
using ChunkGroups = std::vector<std::vector<KindCounts>>;

// ---- the affine description of each stage (grouped_chunk_affine.cpp) ------------------------

// What a stage holds with no body layer (per row of its profile), and per layer of each group and
// kind in each of its chunks (as many as Problem::chunks: two for the exact planner, any number
// for the bounding one, grouped_envelope.hpp): fixed MB and MB per in-flight micro-batch.
struct GroupedAffineStage {
    StageRows rows;
    std::vector<std::vector<UnitArray>> fixed;       // [c][g][k]
    std::vector<std::vector<UnitArray>> activation;  // [c][g][k]
    // MB per micro-batch in flight in chunk c with no body layer (the ends' activations of a
    // probed model; 0 for a linear one): in the rows' bases, and in the plan's activation_mb
    // (AffineStage::base_activation).
    std::vector<double> base_activation;
};

// From the model's coefficients per group (`c[g]`), exactly, over the stage's exact profile.
[[nodiscard]] GroupedAffineStage linear_grouped_stage(const Problem& problem,
                                                      std::span<const ppb_linear_parameters> c,
                                                      std::uint32_t stage);

// From probes of a model without coefficients (`kinds[g]`: the kinds group g may take); throws
// InputError when the model is not affine in the counts.
[[nodiscard]] GroupedAffineStage probed_grouped_stage(
    const Problem& problem, const MemorySource& memory, std::uint32_t stage,
    const std::vector<std::vector<std::size_t>>& kinds);

class GroupedProbe {
  public:
    GroupedProbe(const Problem& problem, std::uint32_t stage, std::size_t groups)
        : problem_(problem), stage_(stage), groups_(groups) {}

    // layers[c][g]: chunk c's layers of group g, for every chunk of the stage; in_flight[c] (at
    // least 1: the plugin contract), plus `extra` on chunk `more`.
    void add(const ChunkGroups& layers, const InFlightVector& in_flight, std::uint32_t more = 0,
             std::uint32_t extra = 0) {
        std::vector<ppb_chunk> chunks(layers.size());
        std::vector<std::uint32_t> counts;
        for (std::uint32_t c = 0; c < layers.size(); ++c) {
            chunks[c].in_flight = in_flight[c] + (c == more ? extra : 0);
            for (std::size_t g = 0; g < groups_; ++g) {
                for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                    chunks[c].layers[k] += layers[c][g][k];
                    counts.push_back(layers[c][g][k]);
                }
            }
        }
        chunks_.push_back(chunks);
        counts_.push_back(std::move(counts));
        layers_.push_back(layers);
        in_flight_.push_back(in_flight);
    }

    // The placements that give the model's answer for `layers` at the true `counts` (0 allowed:
    // ppb::zero_count_probes); returns how many, to hand to ppb::answer_at_counts.
    std::size_t add_at_counts(const ChunkGroups& layers, const InFlightVector& counts) {
        const std::vector<InFlightVector> asked = zero_count_probes(counts);
        for (const InFlightVector& v : asked)
            add(layers, v);
        return asked.size();
    }

    [[nodiscard]] std::vector<double> predict(const MemorySource& memory) const {
        const AbiStage view =
            abi_stage(problem_.schedule, problem_.num_stages, problem_.chunks, stage_);
        std::vector<ppb_grouped_placement> placements;
        for (std::size_t i = 0; i < chunks_.size(); ++i) {
            placements.push_back(ppb_grouped_placement{
                ppb_placement{view.num_stages, view.stage,
                              static_cast<std::uint32_t>(chunks_[i].size()), chunks_[i].data()},
                static_cast<std::uint32_t>(groups_), counts_[i].data()});
        }
        return memory.predict_grouped_batch(placements);
    }

    [[nodiscard]] const ChunkGroups& layers(std::size_t i) const { return layers_[i]; }
    [[nodiscard]] const InFlightVector& in_flight(std::size_t i) const { return in_flight_[i]; }
    [[nodiscard]] std::size_t size() const { return chunks_.size(); }

  private:
    const Problem& problem_;
    std::uint32_t stage_;
    std::size_t groups_;
    std::vector<std::vector<ppb_chunk>> chunks_;
    std::vector<std::vector<std::uint32_t>> counts_;
    std::vector<ChunkGroups> layers_;
    std::vector<InFlightVector> in_flight_;
};

// A probed model's own prediction of stage `stage` holding `layers` ([c][g]) over `profile` (the
// stage's in-flight profile): its largest, at the true counts (ppb::zero_count_probes where a chunk
// holds none), and the vector where it is.
[[nodiscard]] StageRows::Peak predicted_peak(const Problem& problem, const MemorySource& memory,
                                             std::uint32_t stage, const ChunkGroups& layers,
                                             const std::vector<InFlightVector>& profile);

// ---- a chunk's mixes and a stage's options (grouped_chunk_options.cpp) ----------------------

// One mix of a chunk's layers: its body time, memory and layers per group and kind.
struct GroupMix {
    double time = 0.0;
    ChunkMemory memory;
    std::vector<KindCounts> groups;
};

// One way to fill a stage holding given ranges in its two chunks.
struct GroupedOption {
    double total = 0.0;
    double slowest = 0.0;
    double memory = 0.0;  // the largest row
    std::array<const GroupMix*, 2> mixes{};
    std::array<double, 2> chunk_times{};
};

struct Layout {
    explicit Layout(const Problem& p) : problem(p) {}

    const Problem& problem;
    std::uint32_t layers = 0;
    std::size_t groups = 0;
    std::vector<std::vector<std::size_t>> kinds;     // [g]
    std::vector<std::vector<std::uint32_t>> prefix;  // [g][i]: layers of g among the first i
    std::vector<GroupedAffineStage> affine;

    [[nodiscard]] double layer_time(std::size_t g, std::size_t k) const {
        return problem.time.groups[g].time[k];
    }

    // One mix: `counts[g][k]` layers of group g and kind k in chunk `chunk` of stage `stage`.
    [[nodiscard]] GroupMix mix_of(std::uint32_t stage, std::uint32_t chunk,
                                  const std::vector<KindCounts>& counts) const;
    // Every mix of counts[g] layers of each group (any rule), grown one layer at a time and kept
    // Pareto-optimal after each.
    [[nodiscard]] std::vector<GroupMix> any_mixes(std::uint32_t stage, std::uint32_t chunk,
                                                  const std::vector<std::uint32_t>& counts) const;
    // MindFormers' positional mixes of layers [first, first + n): the first r full, then 'both'
    // up to p2, then 'select' (or 'comm') up to p3, then 'none'; a mix giving a group a kind it
    // may not take is left out.
    [[nodiscard]] std::vector<GroupMix> positional_mixes(std::uint32_t stage, std::uint32_t chunk,
                                                         std::uint32_t first,
                                                         std::uint32_t n) const;
};

// Per stage: an id for each range a chunk may hold (ranges alike share it), each id's mixes,
// and the options of each pair of ids, built when first asked.
class StageOptions {
  public:
    StageOptions(const Layout& layout, std::uint32_t stage, std::uint32_t width);

    [[nodiscard]] double ends_time(std::uint32_t c) const { return ends_time_[c]; }
    [[nodiscard]] double ends_forward(std::uint32_t c) const { return ends_forward_[c]; }

    // The options of chunk 0 holding [a0, a0 + n0) and chunk 1 [a1, a1 + n1), Pareto-optimal in
    // (total, slowest) by increasing total; empty when nothing fits.
    const std::vector<GroupedOption>& options(std::uint32_t a0, std::uint32_t n0, std::uint32_t a1,
                                              std::uint32_t n1);

    // Every option built so far (their totals and slowest chunks are the thresholds).
    [[nodiscard]] const std::deque<std::vector<GroupedOption>>& built() const { return lists_; }

  private:
    // For each mix of chunk 0 the fastest of chunk 1 with which every row fits; those
    // Pareto-optimal in (total, slowest), by increasing total.
    [[nodiscard]] std::vector<GroupedOption> combine(const std::vector<GroupMix>& first,
                                                     const std::vector<GroupMix>& second) const;

    const Layout& layout_;
    std::uint32_t stage_;
    std::uint32_t width_;
    std::array<double, 2> ends_time_{};
    std::array<double, 2> ends_forward_{};
    std::array<std::vector<std::int32_t>, 2> range_id_;
    std::array<std::deque<std::vector<GroupMix>>, 2> mixes_;
    std::vector<std::int32_t> pair_;
    std::deque<std::vector<GroupedOption>> lists_;
};

// ---- when nothing fits (grouped_chunked_limit.cpp) ------------------------------------------

// The least over cuts of the largest stage's least need (each layer at its lightest kind in every
// row of its stage's in-flight profile): below it nothing fits; it is the smallest feasible budget
// when `exact`. Not `searched` when some layer would need less than 0 MB.
struct LeastLimit {
    bool searched = false;
    bool exact = false;
    double need = 0.0;                // infinity: no budget fits (the fewest layers never fit)
    std::uint32_t fullest_stage = 0;  // the stage needing `need` in such a cut
};
[[nodiscard]] LeastLimit least_limit(const Layout& layout);

// Throws Infeasible saying which stage cannot hold even its empty chunks, or that no cut fits, and
// `least` as the smallest limit that would.
[[noreturn]] void explain_grouped_chunked(const Layout& layout, const LeastLimit& least);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_GROUPED_CHUNKED_HPP
