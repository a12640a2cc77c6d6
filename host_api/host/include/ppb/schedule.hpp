// ppb/schedule.hpp — in-flight micro-batch counts per pipeline schedule (host_api/docs/design.md,
// "In-flight micro-batch counts per schedule").
//
// The host computes these so that memory models stay schedule-agnostic: a placement reaches a
// plugin with the in-flight count of each chunk already filled in.
#ifndef PPB_SCHEDULE_HPP
#define PPB_SCHEDULE_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb {

enum class Schedule {
    one_f_one_b,              // "1f1b"
    interleaved,              // "interleaved": interleaved 1F1B, v > 1
    interleaved_less_memory,  // "interleaved-less-memory"
    dualpipe_v,               // "dualpipe-v": v = 2
    // Zero-bubble schedules (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): each
    // backward split into its input gradient B and its weight gradient W, W deferred to fill
    // bubbles. Program orders as PyTorch builds them (torch/distributed/pipelining/schedules.py).
    zb_h1,  // "zb-h1": one chunk, ScheduleInterleavedZeroBubble's order with one stage per rank
    zb_v,   // "zb-v": v = 2 in a V like dualpipe-v, ScheduleZBVZeroBubble's order
    // "combined-1f1b": Megatron-LM's schedule under --overlap-moe-expert-parallel-comm (v ≥ 2;
    // v = 1 only with one stage). One more warm-up forward than interleaved, then pairs that
    // run a backward beside the next forward, layer by layer, each one's expert all-to-all under
    // the other's compute (get_pp_rank_microbatches and combined_1f1b.py at d98e8a64dd). A pair
    // frees its backward's activations as its forward makes new ones; ppb orders it backward
    // first, so the extra warm-up forward is the first pair's and the order and in-flight counts
    // are interleaved's (1F1B's on one stage), as Megatron-LM's CI runs measure (design 4.1).
    combined_1f1b,
};

// Whether the schedule runs each backward as an input-gradient pass B and a weight-gradient pass
// W (the zero-bubble schedules).
[[nodiscard]] bool splits_backward(Schedule schedule) noexcept;
// Whether chunk 1 comes back up the stages (dualpipe-v, zb-v): stage s holds positions s and
// 2P − 1 − s.
[[nodiscard]] bool v_shaped(Schedule schedule) noexcept;
// The chunks per stage a schedule always runs: 1 for 1f1b and zb-h1, 2 for the V-shaped ones;
// nullopt for the interleaved schedules, which run any number from 2.
[[nodiscard]] std::optional<std::uint32_t> fixed_chunks(Schedule schedule) noexcept;
// The chunks per stage when none are given: the fixed count, else 2 (what every host plans,
// searches and simulates by default).
[[nodiscard]] std::uint32_t default_chunks(Schedule schedule) noexcept;
// The recompute kinds of `kinds` (a mask of PPB_KIND_BIT) a schedule runs: all but 'full' for
// combined-1f1b (Megatron-LM refuses full recomputation with --overlap-moe-expert-parallel-comm:
// transformer_config.py at d98e8a64dd), all of them for the others. Why a schedule leaves a kind
// out: full_recompute_refusal.
[[nodiscard]] std::uint32_t schedule_kinds(Schedule schedule, std::uint32_t kinds) noexcept;
[[nodiscard]] std::string full_recompute_refusal(Schedule schedule);

[[nodiscard]] std::optional<Schedule> schedule_from_name(std::string_view name) noexcept;
[[nodiscard]] std::string_view schedule_name(Schedule schedule) noexcept;
// Every schedule's name, in the one order every list of them is shown in; and those of the
// schedules that run several chunks per stage (every one but 1f1b and zb-h1).
[[nodiscard]] std::vector<std::string_view> schedule_names();
[[nodiscard]] std::vector<std::string_view> chunked_schedule_names();
// Names for a message: "a, b or c".
[[nodiscard]] std::string names_or(const std::vector<std::string_view>& names);
// What every reader says of a name that is no schedule: "unknown schedule 'interleave' (did you
// mean 'interleaved'? expected 1f1b, interleaved, ... or zb-v)".
[[nodiscard]] std::string unknown_schedule(std::string_view name);
// What every reader says of a stage outside the pipeline: "8 is not a stage of an 8-stage pipeline
// (expected 0..7)", the article as the number is said.
[[nodiscard]] std::string not_a_stage(std::uint32_t stage, std::uint32_t num_stages);

// In-flight count of each of the `chunks` chunks of `stage` in a `num_stages`-stage pipeline: the
// most micro-batches whose activations the chunk holds at once under the schedule's order
// (ppb/schedule_order.hpp; host_api/docs/design.md, "In-flight micro-batch counts per schedule"
// gives the closed forms). micro_batches == 0 means "not known": the counts of a long iteration,
// uncapped. Throws std::invalid_argument for an impossible combination: stage >= num_stages, a
// chunk count the schedule does not have, or a known micro-batch count the schedule cannot run (the
// message says what it requires).
[[nodiscard]] std::vector<std::uint32_t> in_flight_counts(Schedule schedule,
                                                          std::uint32_t num_stages,
                                                          std::uint32_t stage,
                                                          std::uint32_t micro_batches,
                                                          std::uint32_t chunks = 1);

// Where the model's layers go. A pipeline of P stages and v chunks per stage has P x v
// *positions*, each a (stage, chunk) holding one contiguous block of the model's layers, in model
// order: position 0 holds the first layers (after the embedding, the "head"), position P·v − 1
// the last (before the LM head and loss, the "tail").
//   1F1B and the interleaved schedules: position q is chunk q / P of stage q mod P (Megatron's
//     virtual pipeline: chunk c of stage s is position c·P + s).
//   dualpipe-v: chunk 0 runs down the stages and chunk 1 back up (a V): chunk 0 of stage s is
//     position s, chunk 1 of stage s is position 2P − 1 − s. So stage 0 holds the head and the
//     tail.
struct StageChunk {
    std::uint32_t stage = 0;
    std::uint32_t chunk = 0;
    friend bool operator==(const StageChunk&, const StageChunk&) = default;
};
[[nodiscard]] std::uint32_t model_position(Schedule schedule, std::uint32_t num_stages,
                                           std::uint32_t chunks, StageChunk at);
[[nodiscard]] StageChunk position_at(Schedule schedule, std::uint32_t num_stages,
                                     std::uint32_t chunks, std::uint32_t position);

// What a stage holds of the model's ends.
struct StageEnds {
    bool head = false;  // the embedding: stage 0, chunk 0, always
    bool tail = false;  // the LM head and loss: the stage of the last position
};
[[nodiscard]] StageEnds stage_ends(Schedule schedule, std::uint32_t num_stages,
                                   std::uint32_t chunks, std::uint32_t stage);

// How a stage is described to a memory model. The plugin contract (ppb/abi.h) says "stage 0
// holds the head, stage p − 1 the tail"; a model knows a stage's ends only from its
// (num_stages, stage). For 1F1B and the interleaved schedules that is the stage itself. For
// dualpipe-v, where stage 0 holds both ends and stage P − 1 neither, the host asks about the
// stage that holds the same ends: (1, 0) for a stage with both, (P + 1, s) for a stage s = P − 1
// with neither. Every in-flight count travels in the chunks, so nothing else changes.
struct AbiStage {
    std::uint32_t num_stages = 1;
    std::uint32_t stage = 0;
};
[[nodiscard]] AbiStage abi_stage(Schedule schedule, std::uint32_t num_stages, std::uint32_t chunks,
                                 std::uint32_t stage);

}  // namespace ppb

#endif  // PPB_SCHEDULE_HPP
