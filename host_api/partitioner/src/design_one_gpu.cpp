// A designed dry run on one GPU per rank (ppb/partition/design_one_gpu.hpp).
#include <ppb/partition/design_megatron.hpp>
#include <ppb/partition/design_one_gpu.hpp>

#include <ppb/errors.hpp>

#include <fmt/format.h>

namespace ppb::partition {

OneGpuRuns one_gpu_runs(const DesignRun& run, std::uint32_t num_layers, std::uint32_t micro_batches,
                        std::uint32_t world_size) {
    if (world_size == 0 || world_size % run.num_stages != 0) {
        throw InputError(fmt::format(
            "--world-size {}: {} has {} pipeline stages, and a job's ranks split evenly over its "
            "stages (a multiple of {})",
            world_size, run.label, run.num_stages, run.num_stages));
    }
    OneGpuRuns out;
    out.world_size = world_size;
    out.ranks_per_stage = world_size / run.num_stages;
    for (std::uint32_t s = 0; s < run.num_stages; ++s)
        out.ranks.push_back(s * out.ranks_per_stage);

    if (auto args = megatron_design_args(run, num_layers)) {
        out.import_args = {"--world-size", std::to_string(world_size), "--num-microbatches",
                           std::to_string(micro_batches)};
        out.import_args.insert(out.import_args.end(), args->begin(), args->end());
        out.import_args.insert(out.import_args.end(), {"--label", run.label});
        args->insert(args->end(), {"--fake-process-group", "--record-memory-history",
                                   "--memory-snapshot-path", run.label + ".pickle"});
        out.megatron_args = std::move(*args);
        out.megatron_snapshots = run.label + "_*.pickle";
    }

    std::vector<std::uint32_t> positions;
    for (const DesignStage& s : run.stages)
        positions.push_back(s.total_layers());
    out.torchtitan_parts = torchtitan_module_fqns(positions);
    const auto setting = run.megatron ? run.megatron : megatron_setting_of(run);
    if (setting)
        out.torchtitan_checkpoint = torchtitan_checkpoint(*setting);
    if (!out.torchtitan_checkpoint) {
        out.torchtitan_why_not =
            setting ? fmt::format(
                          "the run recomputes the first {} layers of each stage, and "
                          "torchtitan's activation_checkpoint applies one setting to "
                          "every layer",
                          setting->num_layers)
                    : std::string(
                          "the run's stages mix recompute kinds, and torchtitan's "
                          "activation_checkpoint applies one setting to every layer");
    }
    out.torchtitan_args = {"--parallelism.pipeline_parallel_degree",
                           std::to_string(run.num_stages),
                           "--parallelism.pipeline_parallel_schedule",
                           "1F1B",
                           "--profiler.enable_memory_snapshot",
                           "--profiler.memory_snapshot_freq",
                           "1",
                           "--profiler.save_memory_snapshot_folder",
                           run.label};
    out.torchtitan_snapshots = run.label + "/step_000000000001";
    return out;
}

}  // namespace ppb::partition
