// ppb/partition/problem.hpp — what the partitioner is asked, and what it answers.
#ifndef PPB_PARTITION_PROBLEM_HPP
#define PPB_PARTITION_PROBLEM_HPP

#include <ppb/abi.h>
#include <ppb/allocator_reserve.hpp>
#include <ppb/errors.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/memory_part.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/schedule.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppb::partition {

using KindCounts = std::array<std::uint32_t, PPB_KIND_COUNT>;

// How the partitioner learns a stage's memory. With `linear` (a linear model's coefficients)
// memory is evaluated inline: kinds whose activation bit is unset are not candidates, and an
// unset const, per-layer, head or tail bit is an InputError (the model cannot predict every
// stage). Without it each candidate mix goes through `predict_batch` (non-linear models).
//
// `std_error` gives the standard error in MB of each placement's predicted memory; it is needed
// only when the problem plans against the uncertainty (Problem::memory_margin_sigma > 0), and it
// may throw (e.g. ppb::InputError when the model has no estimate).
struct MemorySource {
    std::optional<ppb_linear_parameters> linear;
    std::function<std::vector<double>(std::span<const ppb_placement>)> predict_batch;
    std::uint32_t kinds = PPB_ALL_KINDS;  // kinds the model can predict
    std::function<std::vector<double>(std::span<const ppb_placement>)> std_error = {};
    // A model of several groups of body layers (Problem::time.grouped()): the coefficients of
    // each group of the time model, in its order, as plugin API 1.3's group_parameters gives them
    // (const, head and tail shared, per-layer and activation the group's). `linear` and
    // `predict_batch` are then unused.
    std::vector<ppb_linear_parameters> group_linear = {};
    // Or, for a model that gives no coefficients, its predictions of placements whose groups are
    // the time model's, in its order: the partitioner probes each stage and plans exactly when
    // the model is affine in the layer counts at every stage (and refuses it otherwise).
    std::function<std::vector<double>(std::span<const ppb_grouped_placement>)>
        predict_grouped_batch = {};
    // The model's own terms of a placement's prediction (plugin API 1.4), whose groups are the
    // time model's, in its order (one group when the time model has one): nullopt when the model
    // gives none. Only for showing a plan's memory (memory_breakdown.hpp), never for planning.
    std::function<std::optional<std::vector<MemoryPart>>(const ppb_grouped_placement&)>
        predict_parts = {};
    // Set when the model predicts reserved memory (ppb/allocator_reserve.hpp): its coefficients
    // and predictions include the allocator's reserve, which a plan's breakdown shows apart.
    std::optional<AllocatorReserve> reserve = {};
};

// Which mixes of recompute kinds a stage may hold.
//   any:         every mix (what a Megatron-style runtime can apply layer by layer).
//   mindformers: only mixes MindFormers can build from its per-stage counts. MindFormers
//                recomputes the first `recompute` layers of a stage fully; of the others, a
//                layer below both the `select_recompute` and the `select_comm_recompute` count
//                is 'both', below only one of them 'select' or 'comm', below neither 'none'. So a
//                stage holds 'select' layers or 'comm' layers, never both (with any number of
//                'none', 'both' and 'full' layers).
//   megatron:    one recompute setting for the whole model, as Megatron-LM and torchtitan apply
//                it (MegatronRecompute below): every chunk's mix follows from its layer count and
//                that one setting. The solver plans each setting exactly and keeps the fastest
//                (megatron_recompute.cpp); per (stage, chunk) this admits only all 'none', all
//                'select', all 'full', or 'full' followed by 'none'.
//   torchtitan:  the same without Megatron's block method, which torchtitan's one
//                activation_checkpoint setting cannot apply: every layer 'none', every layer
//                'select' (selective, op) or every layer 'full'.
enum class RecomputeRule { any, mindformers, megatron, torchtitan };

// The model's multi-token prediction layers (Megatron-LM's --mtp-num-layers; the analytic model's
// mtp_num_layers and mtp_stage_offset). The plan does not place them: the memory and time models
// count them on their stage. A framework's layout names them: Megatron-LM's 'm', after every
// decoder layer, in the last chunk of stage P - 1 - stage_offset
// (megatron/core/transformer/pipeline_parallel_layer_layout.py at d98e8a64dd,
// validate_layer_layout: a layout without them is refused when --mtp-num-layers is set).
struct MtpLayers {
    std::uint32_t layers = 0;
    std::uint32_t stage_offset = 0;  // counted back from the last stage
};

// One recompute setting for the whole model, in Megatron-LM's terms (its flags:
// megatron_args.hpp). Megatron applies --recompute-method to each TransformerBlock, and each model
// chunk (virtual pipeline stage) is one block (megatron/core/transformer/transformer_block.py,
// NVIDIA/Megatron-LM commit 767a8a81dce870c23d284f1571fca1d5898d624d, _checkpointed_forward:
// the loop runs over the block's own layers):
//   none:      no recompute; every layer 'none'.
//   selective: --recompute-granularity selective; every layer 'select'.
//   block:     --recompute-granularity full --recompute-method block --recompute-num-layers N:
//              the first N layers of every chunk 'full', the others 'none' (a chunk of fewer than
//              N layers recomputes all of them).
//   uniform:   --recompute-granularity full --recompute-method uniform: every layer 'full'.
struct MegatronRecompute {
    enum class Method { none, selective, block, uniform };
    Method method = Method::none;
    std::uint32_t num_layers = 0;  // block's N (at least 1); 0 otherwise

    // The mix of a chunk holding n layers.
    [[nodiscard]] KindCounts chunk_layers(std::uint32_t n) const;
    // The kinds it uses (a PPB_KIND_BIT mask).
    [[nodiscard]] std::uint32_t kinds() const;
    friend bool operator==(const MegatronRecompute&, const MegatronRecompute&) = default;
};

// "no recompute", "selective recompute (every layer 'select')", "full recompute of the first 2
// layers of every chunk (block)", "full recompute of every layer (uniform)".
[[nodiscard]] std::string describe(const MegatronRecompute& setting);

// The iteration-time estimate minimised with several chunks per stage (host_api/docs/design.md,
// "Every schedule"), with T_s the sum of stage s's chunk times and m_s its slowest chunk; both
// are 1F1B's sum_s t_s + (M - 1) max_s t_s with one chunk.
//   stages: M max_s T_s + sum_s m_s - max_s m_s — M micro-batches through the busiest stage,
//           plus one micro-batch's way through the other stages' slowest chunks.
//   slots:  (M v - 1) max_s m_s + sum_s m_s — 1F1B over M v chunk slots, each as long as the
//           slowest chunk: what the interleaved orders pay when one chunk index is slow on one
//           stage, since every stage runs chunk c of a micro-batch group in the same window.
enum class ChunkObjective { stages, slots };

// Whether a stage holding `layers` can be configured under `rule`.
[[nodiscard]] bool expressible(const KindCounts& layers, RecomputeRule rule);

// A stage's MindFormers counts: the first `recompute` layers fully recomputed, selective
// recompute on the first `select_recompute`, communication recompute on the first
// `select_comm_recompute` (the full layers counted in both, as the SAPP tools write them).
struct MindFormersCounts {
    std::uint32_t recompute = 0;
    std::uint32_t select_recompute = 0;
    std::uint32_t select_comm_recompute = 0;
};

// The counts that make MindFormers build exactly `layers`, or nullopt when no counts do (the
// stage holds both 'select' and 'comm' layers).
[[nodiscard]] std::optional<MindFormersCounts> mindformers_counts(const KindCounts& layers);

// A body layer's times at one position of the model (ppb::model_position): forward + backward per
// kind, and the forward part.
struct PositionTime {
    std::array<double, PPB_KIND_COUNT> time{};
    double forward = 0.0;
    // Added to the time of the chunk at this position whatever it holds (not to its forward): 0
    // but in the one-group problems that bound a model of several groups from below, where it
    // may be negative (grouped_envelope.hpp; they are never simulated).
    double offset = 0.0;
};

struct Problem {
    std::uint32_t num_stages = 1;     // P
    std::uint32_t micro_batches = 1;  // M
    double memory_limit_mb = 0.0;     // X
    double memory_margin_mb = 0.0;    // Y: plan against X - Y
    // K: every stage's predicted memory + K x its standard error must fit X - Y (0: the
    // prediction alone, and MemorySource::std_error is never called).
    double memory_margin_sigma = 0.0;
    TimeModel time;                           // L = time.body_layers
    std::uint32_t kinds = PPB_ALL_KINDS;      // candidate kinds (also limited by the memory source)
    RecomputeRule rule = RecomputeRule::any;  // candidate mixes of kinds per (stage, chunk)
    // When set, every (stage, chunk) holding n layers holds exactly recompute_setting->
    // chunk_layers(n) (and `kinds` must allow its kinds): the plans of one Megatron setting.
    // RecomputeRule::megatron's solver sets it for each setting in turn.
    std::optional<MegatronRecompute> recompute_setting;
    // When set, the chunks of a stage hold as many body layers as each other, give or take one
    // (Megatron-LM's even layout within a stage): the plans solve() falls back to when planning
    // every split exactly is too large (TooLargeToPlanExactly).
    bool balanced_chunks = false;
    // The pipeline schedule and its chunks per stage v (ppb/schedule.hpp: 1 for 1F1B, at least 2
    // for the interleaved schedules, 2 for dualpipe-v). Each (stage, chunk) holds one contiguous
    // block of the model's layers, in the schedule's position order.
    Schedule schedule = Schedule::one_f_one_b;
    std::uint32_t chunks = 1;
    ChunkObjective objective = ChunkObjective::stages;
    // Point-to-point time per stage boundary, in the layer file's unit (SimulationInput::comm_time:
    // empty none, one value every boundary, or one per boundary). The plan's simulated iteration
    // includes it; the estimate adds it as the communication of evenly loaded stages
    // (communication_estimate in ppb/partition/simulate_plan.hpp).
    std::vector<double> comm_time = {};
    // The zero-bubble schedules (ppb::splits_backward) run each backward as its input gradient B
    // and its weight gradient W: W takes this share of a chunk's backward without recomputation
    // (the layer file gives no split; 0.5: B = W, the paper's T_B = T_W), B the rest with the
    // recomputation. The other schedules ignore it.
    double weight_grad_share = 0.5;
    // With chunks and one group of body layers (not time.grouped()): a body layer's times at
    // each of the P x v positions, in model order, when they differ by position; empty:
    // time.body_time and time.body_forward everywhere. (A zero-bubble schedule's weight-gradient
    // pass is still time.body_weight_grad's, or weight_grad_share of the backward without
    // recomputation at time.body_time.) The one-group
    // problems that bound a model of several groups give each position the times of the groups
    // its layers can be (host_api/docs/design.md, "Groups of layers with many chunks").
    std::vector<PositionTime> position_times = {};
    // The model's multi-token prediction layers, for the frameworks' layouts (MtpLayers).
    MtpLayers mtp = {};
    // How an MoE model's tokens reach their experts, for Megatron-LM's flags of a combined-1f1b
    // plan: Megatron-LM refuses --overlap-moe-expert-parallel-comm with its default dispatcher,
    // allgather (transformer_config.py at d98e8a64dd), so the plan names the one it was timed
    // with: the model shape's moe.token_dispatcher, else alltoall (as the time model takes it).
    std::string token_dispatcher = "alltoall";

    [[nodiscard]] double budget_mb() const { return memory_limit_mb - memory_margin_mb; }
    // 1F1B in-flight count of stage s: min(P - s, M).
    [[nodiscard]] std::uint32_t in_flight(std::uint32_t stage) const;
    // The schedule's in-flight count of chunk c of stage s (ppb::in_flight_counts, capped at M):
    // the chunk's own largest count, which other chunks' peaks need not share.
    [[nodiscard]] std::uint32_t in_flight(std::uint32_t stage, std::uint32_t chunk) const;
    // The vectors of in-flight counts stage s passes through (ppb::in_flight_profile, the true
    // counts, 0 included): its memory is the largest over them, a count of 0 evaluated as
    // ppb/in_flight_profile.hpp's "A count of 0" says. One vector, {in_flight(s)}, without chunks.
    [[nodiscard]] std::vector<InFlightVector> in_flight_profile(std::uint32_t stage) const;
    // Fewest body layers stage s may hold: the sum over its chunks.
    [[nodiscard]] std::uint32_t min_layers(std::uint32_t stage) const;
    // Fewest body layers chunk c of stage s may hold: 0 where it holds the model's first or last
    // block (beside the embedding or the LM head), 1 elsewhere.
    [[nodiscard]] std::uint32_t min_layers(std::uint32_t stage, std::uint32_t chunk) const;
    // Fewest body layers stage s may hold in a plan: every one with one stage, else
    // min_layers(s) (the solvers' lower end of each stage's count).
    [[nodiscard]] std::uint32_t fewest_layers(std::uint32_t stage) const {
        return num_stages == 1 ? time.body_layers : min_layers(stage);
    }
    // Whether the plan has several chunks per stage or a schedule other than 1F1B (the chunked
    // solver), rather than one chunk under 1F1B.
    [[nodiscard]] bool chunked() const { return chunks != 1 || schedule != Schedule::one_f_one_b; }
};

// One chunk of a stage in a plan.
struct ChunkPlan {
    std::uint32_t chunk = 0;
    KindCounts layers{};
    std::uint32_t in_flight = 0;
    // Per micro-batch, in the layer file's unit, the embedding's and LM head's where this chunk
    // holds them. The backward includes recompute's repeated forward.
    double forward_time = 0.0;
    double backward_time = 0.0;
    // MB of activations this chunk holds per in-flight micro-batch (linear models; 0 when the
    // model does not say), for drawing memory over time.
    double activation_mb = 0.0;
    // With several groups of body layers and several chunks per stage: the chunk's first body
    // layer in model order (it holds first_layer .. first_layer + its layers - 1) and its layers
    // per group of the time model and kind; empty otherwise.
    std::uint32_t first_layer = 0;
    std::vector<KindCounts> group_layers = {};
    [[nodiscard]] double time() const { return forward_time + backward_time; }
};

struct StagePlan {
    std::uint32_t stage = 0;
    KindCounts layers{};            // over all chunks
    std::uint32_t in_flight = 0;    // chunk 0's
    double memory_mb = 0.0;         // the model's prediction
    double time = 0.0;              // over all chunks
    double margin_mb = 0.0;         // K x the standard error of memory_mb (0 when K = 0)
    std::vector<ChunkPlan> chunks;  // one per chunk (one for 1F1B)
    // With several groups of body layers: the stage's first body layer in model order (0-based;
    // with one chunk it holds layers first_layer .. first_layer + total_layers() - 1; with
    // several, chunk 0's first layer, each chunk's range in ChunkPlan) and its layers per group
    // of the time model and kind (over all chunks).
    std::uint32_t first_layer = 0;
    std::vector<KindCounts> group_layers = {};
    [[nodiscard]] std::uint32_t total_layers() const;
};

struct Plan {
    std::vector<StagePlan> stages;
    // The objective: 1F1B's sum_s t_s + (M - 1) max_s t_s, or with chunks
    // schedule_iteration_time().
    double iteration_time = 0.0;
    // Whether every ChunkPlan::activation_mb is the model's (linear and probed models), not 0
    // for want of it.
    bool activations_known = false;
    // The one recompute setting every chunk follows, when the plan was made under
    // RecomputeRule::megatron or Problem::recompute_setting.
    std::optional<MegatronRecompute> recompute_setting;
    // Empty for the exact optimum of the problem. Otherwise why it is not: planning its rule's
    // mixes exactly was too large (TooLargeToPlanExactly), and the plan is the exact optimum
    // under one recompute setting for the whole model (recompute_setting), a plan the rule also
    // admits, with balanced chunks if need be; simulated_lower_bound() bounds what the exact
    // plan could gain.
    std::string not_exact_because;
    // Whether the plan was made with Problem::balanced_chunks (the fallback above, when even one
    // recompute setting was too large to plan with every split of a stage's layers over its
    // chunks); its local search keeps it.
    bool balanced_chunks = false;
};

// The problem solve() plans when `problem` is too large to plan exactly (TooLargeToPlanExactly):
// the plans of one recompute setting for the whole model (RecomputeRule::megatron unless the rule
// is already one setting) whose stages hold as many layers in each chunk as in every other
// (Problem::balanced_chunks, Megatron-LM's even layout within a stage). Every rule admits them,
// and they are few enough to plan exactly in milliseconds.
[[nodiscard]] Problem smaller_to_plan_exactly(const Problem& problem);

// Planning a problem with several chunks per stage exactly would weigh more partial options of a
// stage than ppb allows (seconds and gigabytes: many chunks, many kinds, a limit that binds
// loosely). solve() catches it and plans under one recompute setting (Plan::not_exact_because).
class TooLargeToPlanExactly : public InputError {
  public:
    using InputError::InputError;
};

// No placement satisfies the memory limit. what() says why in numbers: the tightest
// constraint and the smallest limit that would be feasible.
class Infeasible : public std::runtime_error {
  public:
    Infeasible(const std::string& message, double smallest_feasible_limit_mb)
        : std::runtime_error(message), smallest_limit_mb_(smallest_feasible_limit_mb) {}
    // The smallest --memory-limit-mb (margin included) for which a placement exists; infinity
    // when none exists at any limit (e.g. a model whose memory does not depend on the limit).
    // With memory_margin_sigma > 0 it is a limit at which a placement exists, not always the
    // least (the least need of a mix of many layers is not searched for exactly).
    [[nodiscard]] double smallest_feasible_limit_mb() const noexcept { return smallest_limit_mb_; }

  private:
    double smallest_limit_mb_;
};

// The iteration-time estimate the partitioner minimises, for any plan (also for tests).
[[nodiscard]] double iteration_time(std::span<const double> stage_times,
                                    std::uint32_t micro_batches);

// The objective with chunks (host_api/docs/design.md, "Every schedule"): with T_s the sum of stage
// s's chunk times and m_s its slowest chunk,
//     M x max_s T_s + sum_s m_s - max_s m_s:
// M micro-batches through the busiest stage, plus one micro-batch's way through the others'
// slowest chunks. With one chunk per stage it is 1F1B's iteration_time(). `chunk_times[s]` holds
// stage s's chunk times.
[[nodiscard]] double schedule_iteration_time(std::span<const std::vector<double>> chunk_times,
                                             std::uint32_t micro_batches,
                                             ChunkObjective objective = ChunkObjective::stages);

// Time of one stage holding `layers` (head on stage 0, tail on the last), as the solver counts it.
[[nodiscard]] double stage_time(const Problem& problem, std::uint32_t stage,
                                const KindCounts& layers);

// With several groups of body layers (Problem::time.grouped()): the time and the memory (from each
// group's coefficients, MemorySource::group_linear) of a stage holding group_layers[g] layers of
// group g of the time model.
[[nodiscard]] double grouped_stage_time(const Problem& problem, std::uint32_t stage,
                                        std::span<const KindCounts> group_layers);
[[nodiscard]] double grouped_linear_stage_memory(std::span<const ppb_linear_parameters> c,
                                                 const Problem& problem, std::uint32_t stage,
                                                 std::span<const KindCounts> group_layers);
// What MindFormers builds from `counts` on a stage holding body layers first .. first + n - 1
// of the model: its recompute applies by position within the stage (the first `recompute` layers
// fully, ...), whatever group each layer belongs to. Per group of the time model and kind.
[[nodiscard]] std::vector<KindCounts> positional_group_layers(const Problem& problem,
                                                              std::uint32_t first, std::uint32_t n,
                                                              const MindFormersCounts& counts);

// Whether a stage needing `memory_mb` fits `budget_mb`: memory <= budget + 1e-9 max(1, |budget|),
// so that rounding in the last bits never turns a plan that fits exactly into one that does not.
// Inline: the planners ask it for every row of every option they weigh.
// The most memory within_budget() admits under `budget_mb` (for loops that weigh many
// memories against one budget).
[[nodiscard]] inline double budget_ceiling(double budget_mb) {
    const double magnitude = budget_mb < 0.0 ? -budget_mb : budget_mb;
    return budget_mb + 1e-9 * (magnitude > 1.0 ? magnitude : 1.0);
}
[[nodiscard]] inline bool within_budget(double memory_mb, double budget_mb) {
    return memory_mb <= budget_ceiling(budget_mb);
}

// Whether solve() plans `problem` through one group of layers that bounds its groups, not exactly
// (host_api/docs/design.md, "Groups of layers with many chunks"): several groups of body layers
// with chunks, and more than two of them per stage, or a schedule that splits the backward, or
// one recompute setting for the whole model (RecomputeRule::megatron, torchtitan). Its plan then
// says why (Plan::not_exact_because), and the lower bound says how far it can be.
[[nodiscard]] bool planned_through_one_group(const Problem& problem);

// Whether a (stage, chunk) of `problem` may hold `layers`: expressible under problem.rule and,
// with a recompute_setting, the setting's mix of that many layers.
[[nodiscard]] bool admits(const Problem& problem, const KindCounts& layers);

// The one Megatron setting that builds every chunk of `plan` (its recompute_setting when it has
// one), or nullopt when none does. Of several that do, the simplest: none, selective, uniform,
// then block with the smallest N.
[[nodiscard]] std::optional<MegatronRecompute> megatron_recompute_of(const Plan& plan);

// Memory of one stage holding `layers` from linear coefficients, as the solver counts it.
[[nodiscard]] double linear_stage_memory(const ppb_linear_parameters& c, const Problem& problem,
                                         std::uint32_t stage, const KindCounts& layers);

// The optimal plan: every body layer placed, every stage's memory_mb + margin_mb within budget_mb()
// (margin_mb = memory_margin_sigma x the stage's standard error), every stage but the first and
// last with at least one layer, every stage's mix expressible under `rule`, minimum
// iteration_time (the optimum over the plans `rule` admits). Throws Infeasible when no plan
// exists, ppb::InputError for an impossible problem (no candidate kinds, P = 0, ...).
[[nodiscard]] Plan solve(const Problem& problem, const MemorySource& memory);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_PROBLEM_HPP
