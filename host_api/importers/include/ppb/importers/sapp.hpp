// ppb/importers/sapp.hpp — the dry runs that the public SAPP pipeline balancer's users describe in
// its "-init" YAML (today mindspore-ai/hyper-parallel, hyper_parallel/auto_parallel/sapp_ppb,
// utils/config.py: memory_parser and time_parser; earlier MindFormers toolkit/pipeline_balance):
//
//   pipeline_config:  {pipeline_num: P, num_layer: L, offset: ...}
//   recompute_config: {recompute: ..., select_recompute: ..., select_comm_recompute: ...}
//   memory_usage:     {head_memory: MB, tail_memory: MB,
//                      body_memories: {stage_id: [...], memories: [...]}}
//   time_config:      {head: T, body: T, tail: T}
//
// One dry run ("round") gives offset and each recompute setting as a list of one entry per stage;
// several rounds give lists of such lists, one per round (an entry may be 0 for offsets, or
// true / false / 0 for recompute settings: every layer / none). Stage s of a round holds
// L // P + offset[s] body layers (the stages must sum to L); its recompute kinds are
// split_recompute() (layout.hpp) of its recompute counts, as SAPP splits them. The memories are
// peak memories in MB of whole stages: head_memory is stage 0's, tail_memory stage P-1's, and
// body_memories lists other stages by id. With several rounds, a single head_memory /
// tail_memory belongs to the last round (as SAPP reads it); a list gives one per round.
//
// time_config gives the time of one HEAD, BODY and TAIL layer, which SAPP's -init writes as the
// `time` of each entry of the layer file it dumps (today's SAPP reads a layer's `time` as its
// forward time). SAPP reads time_config when it gives all three and otherwise measures the times
// in a profiler timeline (profiling_config: folder_path, micro_batch_num, layer names), which ppb
// does not read: such a file is refused naming profiling_config, saying what to give instead.
// The rest of pipeline_config (micro_batch_num, num_of_interleave, memory_limit, ...) is the
// planning problem, not the dry run: read by read_sapp_problem() (sapp_problem.hpp).
#ifndef PPB_IMPORTERS_SAPP_HPP
#define PPB_IMPORTERS_SAPP_HPP

#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/importers/layout.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace ppb::importers {

struct SappRound {
    std::vector<KindCounts> stages;              // layers per kind of every stage
    std::vector<StageObservation> observations;  // the stages with a memory, by stage
};

struct SappDryRuns {
    std::uint32_t num_stages = 2;
    std::uint32_t num_layers = 1;
    std::vector<SappRound> rounds;           // in file order
    std::optional<HeadBodyTailTimes> times;  // time_config, when the file gives it
};

// Reads a SAPP -init YAML. Throws InputError "<file>:<line>: <key path>: <problem>" for
// anything SAPP would not read, or that contradicts itself (lists whose lengths disagree,
// offsets that do not sum to num_layer, a stage given twice, a time_config without one of its
// three times, ...), and for profiling_config where time_config does not give every time.
[[nodiscard]] SappDryRuns read_sapp_init(const std::filesystem::path& file, Messages& messages);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_SAPP_HPP
