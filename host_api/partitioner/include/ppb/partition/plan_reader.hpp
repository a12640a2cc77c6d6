// ppb/partition/plan_reader.hpp — a saved plan read back: the stages of a "ppb.partition/1"
// document (what `ppb partition --json` printed; plan_document.hpp writes it) as the placements
// a memory model is asked about. `ppb compare --partition PLAN` predicts them beside the
// measurements of a dry run of the plan; `ppb import snapshot --plan PLAN` places the ranks of a
// dry run of it.
//
// What is read, and nothing else: "format", "num_stages", "micro_batches" (needed when a stage
// has several chunks; read when given), "schedule", "groups" (names, in model order) and, for each
// stage, "stage", "layers" and "in_flight" or a list of "chunks" each with both, and "groups"
// (layers per group and kind). The other members a plan document carries (memory, the frameworks'
// settings, the simulation) are the planner's opinion, not the placement, and are left alone.
//
// Every refusal is a ppb::InputError naming the source and the JSON path: a stage outside the
// pipeline, counts outside ppb/limits.hpp, an unknown kind, schedule or group,
// groups that do not add up to the stage's layers, chunk counts the schedule does not run.
#ifndef PPB_PARTITION_PLAN_READER_HPP
#define PPB_PARTITION_PLAN_READER_HPP

#include <ppb/in_flight_profile.hpp>
#include <ppb/placement.hpp>
#include <ppb/schedule.hpp>

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

}  // namespace ppb::partition

#endif  // PPB_PARTITION_PLAN_READER_HPP
