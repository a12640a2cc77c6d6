// Internal: per-stage options when stages hold several chunks (interleaved, dualpipe-v).
//
// Every model ppb plans with several chunks is affine in the layer counts of a stage and in its
// chunks' in-flight counts once the stage and its ends are fixed: at vector j of the stage's
// in-flight profile (counts f_jc) its memory is
//     base_s,j + sum_c sum_k (fixed_s[c][k] + f_jc x activation_s[c][k]) x n_{c,k},
// and the stage's memory is the largest of these rows (profile_memory.hpp). Linear models give
// base and units from their coefficients; other models are probed through predict_batch and the
// probes are checked at every vector (chunk_tables.cpp).
#ifndef PPB_PARTITION_CHUNK_TABLES_HPP
#define PPB_PARTITION_CHUNK_TABLES_HPP

#include "profile_memory.hpp"

#include <ppb/partition/problem.hpp>

#include <boost/container/small_vector.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace ppb::partition::detail {

struct AffineStage {
    // MB with no body layer at each vector of the stage's profile (constant, ends), and the
    // profile.
    StageRows rows;
    // MB per body layer of kind k in chunk c whatever is in flight: fixed[c][k]; and MB per such
    // layer and in-flight micro-batch: activation[c][k]. Only candidate kinds are meaningful.
    std::vector<std::array<double, PPB_KIND_COUNT>> fixed;
    std::vector<std::array<double, PPB_KIND_COUNT>> activation;
    // MB per micro-batch in flight in chunk c with no body layer: the embedding's or the LM
    // head's activations where the chunk holds them (a probed model's; 0 for a linear model,
    // whose ends are constants). Already in the rows' bases; the plan adds it to the chunk's
    // activation_mb, so that the simulator's memory over time is the model's.
    std::vector<double> base_activation;

    // What chunk c holding `layers` keeps.
    [[nodiscard]] ChunkMemory chunk_memory(std::size_t c, const KindCounts& layers) const {
        ChunkMemory m;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (layers[k] == 0)
                continue;
            m.fixed += fixed[c][k] * layers[k];
            m.activation += activation[c][k] * layers[k];
        }
        return m;
    }
};

// One way to fill a stage: per chunk, its layers of each kind.
struct StageOption {
    double total = 0.0;    // sum of the chunks' times
    double slowest = 0.0;  // the slowest chunk's time
    double memory = 0.0;   // the stage's memory: its largest row over the profile
    // Inline up to 8 chunks (no allocation per option: the tables make and copy many).
    boost::container::small_vector<KindCounts, 8> chunks;
    boost::container::small_vector<double, 8> chunk_times;  // per chunk, the ends' time included
};

// options[n]: for a stage holding n body layers, the options that fit the budget and are
// Pareto-optimal in (total, slowest), by increasing total (so decreasing slowest); empty above the
// stage's cap (build_chunked_stages). least_memory[n] is the least memory of any n layers on the
// stage (infinity below the stage's minimum), for every n up to L whatever the cap.
struct ChunkedStage {
    std::uint32_t stage = 0;
    AffineStage affine;
    std::vector<std::vector<StageOption>> options;
    // alternatives[n]: with two chunks, every option that fits and is Pareto-optimal in the
    // pair of chunk times (a superset of options[n]); with more, options[n]. For searching the
    // simulated makespan, where which chunk is slow matters.
    std::vector<std::vector<StageOption>> alternatives;
    std::vector<double> least_memory;
    ppb_kind least_memory_kind = PPB_KIND_NONE;
};

// The affine description of every stage (throws InputError for a model that is not affine per
// stage, naming the stage and the placements that show it).
[[nodiscard]] std::vector<AffineStage> affine_stages(const Problem& problem,
                                                     const MemorySource& memory,
                                                     std::uint32_t kinds);

// While one is in scope on this thread, affine_stages() remembers what it derives for `memory` —
// the probes a model without coefficients answers, the in-flight profiles — by the layout and the
// kinds it was asked for (schedule, stages, chunks, micro-batches, body layers, kinds: all the
// description depends on besides the source). One configuration's plan asks for the same few
// again and again: both objectives, the smaller problem under each of Megatron's recompute
// settings (one kind set for every Block N), the local search and the bound. Another source
// within the scope is not remembered; an inner scope for another source governs until it ends,
// one for the same source leaves the outer one remembering.
class ScopedAffineStages {
  public:
    explicit ScopedAffineStages(const MemorySource& memory);
    ~ScopedAffineStages();
    ScopedAffineStages(const ScopedAffineStages&) = delete;
    ScopedAffineStages& operator=(const ScopedAffineStages&) = delete;

    using Key = std::array<std::uint32_t, 6>;
    [[nodiscard]] const MemorySource* memory() const noexcept { return memory_; }
    [[nodiscard]] std::map<Key, std::vector<AffineStage>>& remembered() noexcept {
        return remembered_;
    }

  private:
    const MemorySource* memory_;
    std::map<Key, std::vector<AffineStage>> remembered_;
    ScopedAffineStages* outer_;
    bool installed_ = false;
};

// While one is in scope on this thread, build_chunked_stages() remembers each stage's options for
// `memory` and gives them again when asked for the same stage, cap, rule, recompute setting,
// balance, kinds and limit: the options do not depend on the objective, and plan_with_memory
// solves one problem under both estimates (and, when it is too large, the smaller problem under
// both, each under every recompute setting). The scope is for one problem of one group of layers:
// everything else the options depend on (times, positions, ends, fewest layers) must not change
// within it. A stage given again charges the ExactWorkBudget in scope what building it did, so
// an exact attempt gives up exactly where it did without the scope.
class ScopedChunkedStageOptions {
  public:
    explicit ScopedChunkedStageOptions(const MemorySource& memory);
    ~ScopedChunkedStageOptions();
    ScopedChunkedStageOptions(const ScopedChunkedStageOptions&) = delete;
    ScopedChunkedStageOptions& operator=(const ScopedChunkedStageOptions&) = delete;

    // rule, setting (method + 1, 0: none), block count, balanced, kinds, stage, cap, and the
    // limit's bits.
    using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, bool, std::uint32_t,
                           std::uint32_t, std::uint32_t, std::uint64_t>;
    struct Remembered {
        ChunkedStage stage;
        std::size_t partial_options = 0;  // the work building it took
        std::size_t comparisons = 0;
    };
    [[nodiscard]] const MemorySource* memory() const noexcept { return memory_; }
    [[nodiscard]] std::map<Key, Remembered>& remembered() noexcept { return remembered_; }

  private:
    const MemorySource* memory_;
    std::map<Key, Remembered> remembered_;
    ScopedChunkedStageOptions* outer_;
};

// The options of every stage, exactly: per chunk a Pareto frontier over (time, memory) of the
// mixes `rule` admits, combined chunk by chunk. Stage s holds at most max_layers[s] body layers
// (L or more: no cap): its options stop there, and every option kept is exact among the plans
// within the caps. The arrays keep L + 1 entries.
// `memory` is the source `affine` was derived from (what a ScopedChunkedStageOptions remembers
// for).
[[nodiscard]] std::vector<ChunkedStage> build_chunked_stages(
    const Problem& problem, const MemorySource& memory, std::vector<AffineStage> affine,
    std::uint32_t kinds, const std::vector<std::uint32_t>& max_layers);

// A body layer's times in chunk c of stage s: Problem::position_times' where it gives them, else
// the time model's.
struct LayerTimes {
    const std::array<double, PPB_KIND_COUNT>& time;
    double forward;
    double offset;  // PositionTime::offset
};
[[nodiscard]] LayerTimes layer_times(const Problem& problem, std::uint32_t stage,
                                     std::uint32_t chunk);
// Per kind, the least time of a body layer at any position (bounds: relaxations of every chunk).
[[nodiscard]] std::array<double, PPB_KIND_COUNT> least_layer_times(const Problem& problem);

// Time of chunk c of stage s holding `layers`: the body layers, plus the embedding's and the LM
// head's time where the chunk holds them.
[[nodiscard]] double chunk_time(const Problem& problem, std::uint32_t stage, std::uint32_t chunk,
                                const KindCounts& layers);
// Its forward part.
[[nodiscard]] double chunk_forward_time(const Problem& problem, std::uint32_t stage,
                                        std::uint32_t chunk, const KindCounts& layers);

// The plan holding options[s] on stage s (memory from the model, times, in-flight counts, the
// objective).
[[nodiscard]] Plan plan_from_options(const Problem& problem, const MemorySource& memory,
                                     const std::vector<ChunkedStage>& stages,
                                     const std::vector<const StageOption*>& options);

// Megatron-LM's default layout of a problem of one group of layers, L / (P v) body layers in every
// chunk without recompute (the embedding with the first chunk, the LM head with the last), as a
// plan: none when L is not a multiple of P v (Megatron-LM then needs a layout of its own), when
// 'none' is not a candidate kind of the problem and its model (or its recompute setting is
// another), or when a stage does not fit the budget.
[[nodiscard]] std::optional<Plan> even_layout_plan(const Problem& problem,
                                                   const MemorySource& memory);

// The fastest body layer among `kinds`: infinity when there is none.
[[nodiscard]] double fastest_body_layer(const Problem& problem, std::uint32_t kinds);

// The most body layers each stage can hold in a plan worth at most `value` (lower_bound.cpp), for
// every estimate the chunked solvers bound a stage's count by: either chunk objective and the
// simulated iteration. Each is at least M x a stage's time (the stage runs M micro-batches
// through all its chunks), which is at least its ends plus n x `fastest_layer`, the fastest
// candidate body layer. L for every stage when that says nothing (no positive fastest layer, an
// infinite value). (1F1B's solver bounds its counts more tightly: solver.cpp.)
[[nodiscard]] std::vector<std::uint32_t> most_layers_within(const Problem& problem,
                                                            double fastest_layer, double value);

// Throws InputError when the chunked problem cannot be planned: chunks out of range, micro-batches
// the schedule's order cannot run, an uncertainty margin, fewer layers than positions need.
void validate_chunked(const Problem& problem);

// What the chunk tables may do, together, while a ScopedExactWorkBudget is in scope on this thread:
// partial options made and comparisons among them, over every stage, setting and rebuild. solve()
// gives its exact attempt one, so that a problem too large to plan exactly (many chunks and kinds)
// throws TooLargeToPlanExactly in a fraction of a second. Without one, each stage's own limits
// apply (chunk_tables.cpp). Within another's scope a budget does nothing: the outermost governs.
struct ExactWorkBudget {
    std::size_t partial_options = 0;
    std::size_t comparisons = 0;
};
class ScopedExactWorkBudget {
  public:
    explicit ScopedExactWorkBudget(ExactWorkBudget budget);
    // No budget in this scope, whatever is outside it (the smaller problem solve() plans when
    // the exact one is too large: each stage's own limits only).
    struct Unlimited {};
    explicit ScopedExactWorkBudget(Unlimited);
    ~ScopedExactWorkBudget();
    ScopedExactWorkBudget(const ScopedExactWorkBudget&) = delete;
    ScopedExactWorkBudget& operator=(const ScopedExactWorkBudget&) = delete;

  private:
    ExactWorkBudget budget_;
    ExactWorkBudget* outer_;
};

// The work solve() allows its exact attempt, simulated_lower_bound its tables and the local search
// its own (each about half a second).
inline constexpr ExactWorkBudget default_exact_work_budget{250'000, 25'000'000};

// How solve_chunked() bounded each stage's layer count (what the tests of its bounds read).
struct ChunkedBounds {
    std::uint32_t first_cap = 0;  // the cap of the first plan (L: none)
    std::uint32_t builds = 0;     // how many times the stages' options were built
    // Whether the plan returned came from options capped below L on some stage, and whether
    // a second, wider plan within the bound the first plan's objective sets was needed.
    bool capped = false;
    bool widened = false;
};

// The optimal plan with several chunks per stage (chunked_solver.cpp): solve() for
// problem.chunked(), with the candidate kinds `kinds`; how it bounded the stages goes to
// `bounds` when given.
[[nodiscard]] Plan solve_chunked(const Problem& problem, const MemorySource& memory,
                                 std::uint32_t kinds, ChunkedBounds* bounds = nullptr);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_CHUNK_TABLES_HPP
