// ppb import snapshot and ppb import torchtitan: dry-run files from what PyTorch's caching
// allocator reports — memory snapshots (Megatron-LM's --record-memory-history, torchtitan's
// profiling.enable_memory_snapshot) and torchtitan's step lines — placed by the plan the dry run
// ran or by Megatron's layout flags.
#include "cmd_import_snapshot.hpp"

#include "import_common.hpp"
#include "megatron_layout_options.hpp"
#include "plan_layout.hpp"

#include <ppb/importers/megatron.hpp>
#include <ppb/importers/snapshot_import.hpp>
#include <ppb/importers/torchtitan.hpp>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace ppb::cli {
namespace {

namespace imp = ppb::importers;

struct PyTorchImportArgs {
    CommonArgs common;
    std::string plan;
    imp::MegatronFlags flags;  // Megatron's layout flags, --world-size and --num-microbatches
};

// Whether any of Megatron's flags that describe the layout itself was given.
bool layout_flags_given(const imp::MegatronFlags& f) {
    return f.pipeline_size || f.num_layers || f.first_stage_layers || f.last_stage_layers ||
           f.layers_per_virtual_stage || f.virtual_stages || f.layout || f.account_for_embedding ||
           f.account_for_loss || f.mtp_layers || f.recompute_granularity || f.recompute_method ||
           f.recompute_num_layers || f.overlap_moe_expert_parallel_comm || f.num_experts ||
           f.moe_layer_freq || f.first_k_dense_replace || f.num_layer_list || f.noop_layers;
}

// The dry run's layout: the plan it ran, or Megatron's flags.
imp::PipelineLayout placement(const PyTorchImportArgs& args, const std::string& command,
                              imp::Messages& messages) {
    if (!args.plan.empty()) {
        if (layout_flags_given(args.flags) || args.flags.micro_batches) {
            throw UsageError(
                "--plan gives the whole placement: leave out Megatron's layout flags and "
                "--num-microbatches (or leave out --plan)",
                command);
        }
        return plan_layout(args.plan, args.flags.world_size, messages);
    }
    if (!layout_flags_given(args.flags)) {
        throw UsageError(
            "missing the placement: --plan PLAN.json (the ppb plan the dry run ran), or the "
            "run's layout in Megatron-LM's flags (--pipeline-model-parallel-size P --num-layers "
            "L --world-size N ...)",
            command);
    }
    imp::MegatronScan no_logs;
    no_logs.logs_read = false;
    return imp::megatron_layout(args.flags, no_logs, messages);
}

void add_placement_options(CLI::App& app, PyTorchImportArgs& args) {
    app.add_option("--plan", args.plan,
                   "the ppb plan (ppb.partition/1, 'ppb partition --json') the dry\n"
                   "run ran: its stages' layers, chunks, schedule and micro-batches;\n"
                   "rank r runs stage r / (N / P) with --world-size N (default P)")
        ->group("Placement (a plan, or Megatron's flags)")
        ->type_name("PLAN.json")
        ->check(CLI::ExistingFile);
    add_megatron_layout_options(app, args.flags, "Placement (a plan, or Megatron's flags)",
                                "MoE layers (Megatron's flags)", false);
}

int import_snapshots(const PyTorchImportArgs& args) {
    imp::Messages messages;
    // The placement first: a mistake in it is found before any snapshot is read.
    const imp::PipelineLayout layout = placement(args, "ppb import snapshot", messages);
    messages.insert(messages.begin(), {imp::Message::Level::note, layout_summary(layout)});
    const auto files =
        imp::collect_files(args.common.logs, rank_assignments(args.common), imp::snapshot_files());
    const auto readings = imp::scan_snapshots(files, messages);
    auto observations = imp::stage_observations(layout, readings, messages, "snapshot");
    const std::string comment = fmt::format(
        "imported by 'ppb import snapshot' from {} PyTorch memory snapshot{}{}: peak_memory_mb "
        "is the peak allocated memory over each trace (the sizes requested), reserved_mb the "
        "peak reserved memory (the caching allocator's segments)",
        files.size(), files.size() == 1 ? "" : "s",
        args.plan.empty() ? std::string() : fmt::format(" of a dry run of {}", args.plan));
    return finish(args.common, layout, std::move(observations), comment, files.size(), messages,
                  "snapshot");
}

int import_torchtitan(const PyTorchImportArgs& args) {
    imp::Messages messages;
    const imp::PipelineLayout layout = placement(args, "ppb import torchtitan", messages);
    messages.insert(messages.begin(), {imp::Message::Level::note, layout_summary(layout)});
    const auto logs = imp::collect_logs(args.common.logs, rank_assignments(args.common));
    const auto readings = imp::scan_torchtitan_logs(logs, messages);
    auto observations = imp::stage_observations(layout, readings, messages);
    const std::string comment = fmt::format(
        "imported by 'ppb import torchtitan' from {} log file{}{}; memory: the step lines' "
        "'memory:' figure, the peak reserved memory (torchtitan logs no allocated figure)",
        logs.size(), logs.size() == 1 ? "" : "s",
        args.plan.empty() ? std::string() : fmt::format(" of a dry run of {}", args.plan));
    return finish(args.common, layout, std::move(observations), comment, logs.size(), messages);
}

const char* const placement_help =
    "The placement: --plan PLAN.json, the ppb plan the dry run ran (rank r runs stage\n"
    "r / (N / P) of its P stages with --world-size N, default one rank per stage), or the\n"
    "run's layout in Megatron-LM's flags, read as 'ppb import megatron' reads them\n"
    "(--pipeline-model-parallel-size, --num-layers, --world-size, the recompute flags, ...).\n"
    "Of several ranks of one stage the largest peak; stages without a file are left out.\n"
    "stderr says each time.\n\n";

}  // namespace

void add_snapshot_imports(CLI::App& import, Commands& commands) {
    auto snapshot = std::make_shared<PyTorchImportArgs>();
    CLI::App* sn = add_command(
        import, "snapshot", "PyTorch CUDA memory snapshots of a dry run",
        std::string(
            "Reads each rank's peak allocated and peak reserved memory from the PyTorch memory\n"
            "snapshots of a dry run (torch.cuda.memory._snapshot(), pickled: Megatron-LM's\n"
            "--record-memory-history and torchtitan's profiling.enable_memory_snapshot write\n"
            "them) and writes one ppb.dryrun/1 observation per pipeline stage: peak_memory_mb\n"
            "the peak allocated memory, reserved_mb the peak reserved memory.\n\n"
            "A snapshot is read as plain data only: a pickle that would import, call or build\n"
            "anything is refused, naming the opcode and its offset, and nothing it asks for is\n"
            "ever run. The peaks are those of the snapshot's trace (its last max_entries\n"
            "allocator events), replayed from the blocks and segments live at its start, which\n"
            "are found by working back from the snapshot; a trace that begins with memory\n"
            "allocated is warned about (an earlier peak would not be seen). An out-of-memory\n"
            "dump is left out, warned. Of several snapshots of a rank (one per step), the\n"
            "largest peaks.\n\n"
            "A snapshot's rank comes from --rank, else from its name: Megatron-LM's\n"
            "<base>_<rank>.pickle and <base>_oom_rank_<rank>.pickle, torchtitan's\n"
            "step_<N>/<rank>_step_<N>.pickle and rank<rank>_memory_snapshot.pickle, a rank_<id>/\n"
            "directory.\n\n") +
            placement_help +
            "Exit status: 0 imported, 2 invalid input or usage (the message names the file and\n"
            "the place in it), 1 other errors.");
    add_inputs(*sn, snapshot->common, "SNAPSHOT",
               "a memory snapshot, or a directory searched for *.pickle, *.pkl");
    add_placement_options(*sn, *snapshot);
    add_output_and_ranks(*sn, snapshot->common,
                         "the rank that wrote snapshot FILE (repeatable; wins over the name)");
    commands.push_back({sn, runner(import_snapshots, snapshot), {}});

    auto titan = std::make_shared<PyTorchImportArgs>();
    CLI::App* tt = add_command(
        import, "torchtitan", "torchtitan logs: the peak reserved memory of each logged step",
        std::string(
            "Reads the peak reserved memory torchtitan logs at each logged step,\n"
            "  [rank0]:[titan] ... - INFO - step:  1  loss: ...  memory: 19.05GiB(20.06%)  ...\n"
            "(with or without colour codes), takes each rank's largest, and writes one\n"
            "ppb.dryrun/1 observation per pipeline stage whose peak_memory_mb and reserved_mb\n"
            "are that figure: torchtitan logs no allocated memory (its memory snapshots do:\n"
            "'ppb import snapshot').\n\n"
            "A line's rank is torchrun's '[rankN]:' prefix (the rank on its node), else the\n"
            "log's: --rank FILE=ID, or the path (rank_<id>/..., rank_<id>.log). Only the ranks\n"
            "LOG_RANK lets log are read.\n\n") +
            placement_help +
            "Exit status: 0 imported, 2 invalid input or usage (the message names the file and\n"
            "line), 1 other errors.");
    add_inputs(*tt, titan->common, "LOG",
               "a log file, or a directory searched for *.log, *.txt, *.out");
    add_placement_options(*tt, *titan);
    add_output_and_ranks(*tt, titan->common,
                         "the rank that wrote log FILE (repeatable; wins over the path)");
    commands.push_back({tt, runner(import_torchtitan, titan), {}});
}

}  // namespace ppb::cli
