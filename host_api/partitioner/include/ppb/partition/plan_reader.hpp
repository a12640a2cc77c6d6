// ppb/partition/plan_reader.hpp — a saved plan read back, the one reader of a "ppb.partition/1"
// document (what `ppb partition --json` printed and ppb.partition returns; plan_document.hpp
// writes it). Two views of it, each checking what it needs and nothing more, so that a plan
// written by an older or newer ppb, or edited by hand, still reads as long as it says that:
//   - read_plan_stages: its stages as the placements a memory model is asked about. `ppb compare
//     --partition PLAN` predicts them beside the measurements of a dry run of the plan; `ppb
//     import snapshot --plan PLAN` places the ranks of a dry run of it.
//   - read_plan_times: its schedule and per stage and chunk the times (and, when the plan has
//     them, the memory) the schedule simulator runs: `ppb simulate` and ppb.simulate
//     (simulate_saved_plan.hpp).
// Both check the format, the pipeline's degree and its schedule alike.
//
// read_plan_stages reads, and nothing else: "format", "num_stages", "micro_batches" (needed when a
// stage has several chunks; read when given), "schedule", "groups" (names, in model order) and, for
// each stage, "stage", "layers" and "in_flight" or a list of "chunks" each with both, and "groups"
// (layers per group and kind). The other members a plan document carries (memory, the frameworks'
// settings, the simulation) are the planner's opinion, not the placement, and are left alone.
//
// Every refusal is a ppb::InputError naming the source and the JSON path: a stage outside the
// pipeline, counts outside ppb/limits.hpp, an unknown kind, schedule or group,
// groups that do not add up to the stage's layers, chunk counts the schedule does not run.
#ifndef PPB_PARTITION_PLAN_READER_HPP
#define PPB_PARTITION_PLAN_READER_HPP

#include <ppb/in_flight_profile.hpp>
#include <ppb/partition/request_error.hpp>
#include <ppb/placement.hpp>
#include <ppb/schedule.hpp>
#include <ppb/simulator.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

// One stage of a plan. A chunked stage carries its schedule's in-flight profile
// (ppb::in_flight_profile, counts of 0 included): its memory is the largest over the vectors
// (ppb::predict_over_profile), and its "in_flight" counts are only those of the vector where the
// planning model put the peak, 0 where a chunk then holds none.
struct PlannedStage {
    StagePlacement placement;
    std::vector<InFlightVector> profile;  // empty for a stage of one chunk
};

struct PlanStages {
    // The pipeline: its degree, schedule and micro-batches per iteration (when the document gives
    // them).
    std::uint32_t num_stages = 1;
    Schedule schedule = Schedule::one_f_one_b;
    std::optional<std::uint32_t> micro_batches;
    // The groups of each placement's group_layers, in model order; empty when the plan counts
    // layers without groups.
    std::vector<std::string> groups;
    // In the document's order. A stage may appear more than once: a list of placements to
    // compare need not be one plan (tests/cli/test_cli_sapp.cpp compares a grid this way).
    std::vector<PlannedStage> stages;
};

// Reads the document `text`; `source` names it in messages (a file name).
[[nodiscard]] PlanStages read_plan_stages(std::string_view text, std::string_view source);

// What a simulation replaces of the plan (fields "schedule", "micro_batches", "comm_time"): the
// command's --schedule, --micro-batches and --comm-time.
struct PlanOverrides {
    std::optional<Schedule> schedule = std::nullopt;
    std::optional<std::uint32_t> micro_batches = std::nullopt;
    std::vector<double> comm_time = {};  // empty: the plan's own "comm_time", if any
};

struct PlanTimes {
    // The schedule, P, v, M, the transfers between stages and per stage and chunk the costs of
    // one micro-batch; with_memory, each chunk's activation_mb and each stage's static_mb when
    // the plan gives every stage's memory_mb and every chunk's activation_mb and in_flight.
    SimulationInput input;
    // The planned peak memory of each stage when the plan has memory (for comparison), else
    // empty.
    std::vector<double> planned_memory_mb;
    // The plan's "time_unit": "ms" for times from a model shape's FLOPs; empty (null or absent,
    // as in plans written before it) for the layer file's own unit.
    std::string time_unit;
};

// The plan's iteration as the simulator takes it. The document gives "num_stages",
// "micro_batches", optionally "schedule" (1f1b), "num_chunks" (1), "time_unit" and "comm_time" (a
// number for every boundary, or one per boundary), and its stages in order, each with
// "forward_time" and "backward_time" (optionally "recompute_time", "weight_time", "activation_mb",
// "in_flight" and "memory_mb"), or a list of "chunks" with each chunk's. A zero-bubble plan
// without a chunk's weight_time takes half its backward less recomputation (the default
// weight-gradient share). InputError naming the source and the JSON path of anything missing or
// wrong; a RequestError naming the override (in `name`'s words) that makes the plan one its
// schedule cannot run.
[[nodiscard]] PlanTimes read_plan_times(std::string_view text, std::string_view source,
                                        const PlanOverrides& overrides, const FieldName& name);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_PLAN_READER_HPP
