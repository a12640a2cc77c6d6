// ppb/partition/design_one_gpu.hpp — a designed dry run made on one GPU per rank: the commands
// that run each of its stages as the rank that holds it in the full job, with PyTorch memory
// snapshots, under Megatron-LM and torchtitan, and the ppb command that imports the snapshots.
//
// Megatron-LM (core 0.16 and newer; NVIDIA/Megatron-LM megatron/training/initialize.py and
// training.py at d98e8a64ddf34856e74b24714e3bedb2f5a39553): --fake-process-group initialises a
// fake process group, so one GPU runs the rank RANK of a WORLD_SIZE-rank job with no
// communication (the ranks come from the environment, arguments.py: RANK, WORLD_SIZE;
// LOCAL_RANK picks the GPU); --record-memory-history records the caching allocator's trace and
// the snapshot is written as <--memory-snapshot-path stem>_<rank>.pickle at every logged
// iteration (on an out-of-memory error, <stem>_oom_rank_<rank>.pickle).
//
// torchtitan (pytorch/torchtitan run_train.sh, torchtitan/distributed/utils.py and
// torchtitan/tools/profiler.py at b5bcd76c66d0acb1a08b176d9639425bc55e0b2a): COMM_MODE=fake_backend
// runs rank RANK of NGPU ranks on one GPU for one training step; --profiler.enable_memory_snapshot
// with --profiler.memory_snapshot_freq 1 writes
// <folder>/step_000000000001/<rank:06d>_step_1.pickle.
//
// Both order ranks with the pipeline outermost (Megatron's default "tp-cp-ep-dp-pp", torchtitan's
// mesh ["pp", "dp_replicate", "dp_shard", "cp", "tp"]): stage s runs ranks s·W/P .. (s+1)·W/P − 1,
// the rule `ppb import snapshot` reads them back by. One rank per stage measures the stage: the
// first.
#ifndef PPB_PARTITION_DESIGN_ONE_GPU_HPP
#define PPB_PARTITION_DESIGN_ONE_GPU_HPP

#include <ppb/partition/design.hpp>
#include <ppb/partition/framework_args.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppb::partition {

struct OneGpuRuns {
    std::uint32_t world_size = 0;
    std::uint32_t ranks_per_stage = 0;
    std::vector<std::uint32_t> ranks;  // per stage, the rank that measures it (its first)

    // Megatron-LM: the flags to add to the job's own (the run's layout and recompute, the fake
    // process group, the snapshot), and the files they write; nullopt when Megatron's one
    // recompute setting cannot give the run's stages.
    std::optional<std::vector<std::string>> megatron_args;
    std::string megatron_snapshots;  // e.g. "run-1_*.pickle"

    // torchtitan: the run's model parts and activation checkpointing (nullopt with
    // torchtitan_why_not when it cannot express them), the arguments to add to run_train.sh's,
    // and the files they write.
    std::vector<std::vector<std::string>> torchtitan_parts;
    std::optional<TorchtitanCheckpoint> torchtitan_checkpoint;
    std::string torchtitan_why_not;
    std::vector<std::string> torchtitan_args;
    std::string torchtitan_snapshots;  // e.g. "run-1/step_000000000001"

    // ppb import snapshot's arguments without the files (the run's Megatron layout flags,
    // --world-size, --num-microbatches, --label): what either framework's snapshots are imported
    // with; empty when Megatron's flags cannot describe the run.
    std::vector<std::string> import_args;
};

// The commands for `run` of a design of `num_layers` layers and `micro_batches` micro-batches
// on `world_size` ranks. Throws InputError when world_size is not a multiple of the run's stages.
[[nodiscard]] OneGpuRuns one_gpu_runs(const DesignRun& run, std::uint32_t num_layers,
                                      std::uint32_t micro_batches, std::uint32_t world_size);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_DESIGN_ONE_GPU_HPP
