// ppb import: build a dry-run file (ppb.dryrun/1) from the logs of a dry run and the
// configuration that produced it (MindSpore / MindFormers, Megatron-LM).
#include "cmd_import_options.hpp"
#include "cmd_import_snapshot.hpp"
#include "commands.hpp"
#include "import_common.hpp"
#include "megatron_layout_options.hpp"
#include "plugin_session.hpp"

#include <limits>
#include <ppb/dryrun_format.hpp>
#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/mindspore.hpp>
#include <ppb/importers/sapp.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ppb::cli {
namespace {

namespace imp = ppb::importers;

// Declares what every log format shares: LOG..., --memory (one of `memories`, the first the
// default), the output options, --rank and --duplicate-tolerance.
void add_common_options(CLI::App& app, CommonArgs& args, const std::vector<std::string>& memories,
                        const std::string& memory_help, const std::string& rank_help) {
    args.memory = memories.front();
    add_inputs(app, args, "LOG", "a log file, or a directory searched for *.log, *.txt, *.out");
    app.add_option("--memory", args.memory, memory_help)
        ->group("Memory")
        ->type_name("FIGURE")
        ->capture_default_str()
        ->check(CLI::IsMember(memories));
    add_output_and_ranks(app, args, rank_help);
}

std::vector<imp::LogFile> collect_logs(const CommonArgs& args) {
    return imp::collect_logs(args.logs, rank_assignments(args));
}

struct MindSporeArgs {
    CommonArgs common;
    std::string config;
    imp::MindSporeFlags flags;
};

struct SappArgs {
    CommonArgs common;
    std::string init;
};

struct MegatronArgs {
    CommonArgs common;
    imp::MegatronFlags flags;
};

int import_mindspore(const MindSporeArgs& args) {
    const imp::MindSporeMemory memory = *imp::mindspore_memory_from_name(args.common.memory);
    imp::Messages messages;
    const std::optional<std::filesystem::path> config_path =
        args.config.empty() ? std::nullopt : std::optional<std::filesystem::path>(args.config);
    const auto logs = collect_logs(args.common);
    const imp::PipelineLayout layout =
        imp::mindspore_layout(config_path, args.flags, messages, imp::mindspore_log_layout(logs));
    messages.insert(messages.begin(), {imp::Message::Level::note, layout_summary(layout)});
    const auto readings = imp::scan_mindspore_logs(logs, memory, messages);
    auto observations = imp::stage_observations(layout, readings, messages);
    std::string marker(imp::mindspore_memory_marker(memory));
    marker.pop_back();  // the colon
    const std::string comment =
        fmt::format("imported by 'ppb import mindspore' from {} and {} log file{}; memory: {}",
                    args.config.empty() ? std::string("command-line flags") : args.config,
                    logs.size(), logs.size() == 1 ? "" : "s", marker);
    return finish(args.common, layout, std::move(observations), comment, logs.size(), messages);
}

int import_megatron(const MegatronArgs& args) {
    const imp::MegatronMemory memory = *imp::megatron_memory_from_name(args.common.memory);
    imp::Messages messages;
    const auto logs = collect_logs(args.common);
    const imp::MegatronScan scan = imp::scan_megatron_logs(logs, memory, messages);
    const imp::PipelineLayout layout = imp::megatron_layout(args.flags, scan, messages);
    messages.insert(messages.begin(), {imp::Message::Level::note, layout_summary(layout)});
    auto observations = imp::stage_observations(layout, scan.readings, messages);
    const std::string comment =
        fmt::format("imported by 'ppb import megatron' from {} log file{}; memory: {}", logs.size(),
                    logs.size() == 1 ? "" : "s", imp::megatron_memory_field(memory));
    return finish(args.common, layout, std::move(observations), comment, logs.size(), messages);
}

int import_sapp(const SappArgs& args) {
    imp::Messages messages;
    const imp::SappDryRuns runs = imp::read_sapp_init(args.init, messages);
    const std::size_t rounds = runs.rounds.size();
    std::vector<imp::ImportedDryRun> documents;
    std::string summary;
    for (std::size_t r = 0; r < rounds; ++r) {
        imp::ImportedDryRun run;
        run.num_stages = runs.num_stages;
        run.label =
            rounds == 1 ? args.common.label : fmt::format("{}-{}", args.common.label, r + 1);
        run.comment = fmt::format(
            "imported by 'ppb import sapp' from {} (a SAPP -init "
            "description{})",
            args.init, rounds == 1 ? std::string() : fmt::format(", {} dry runs", rounds));
        run.observations = runs.rounds[r].observations;
        run.body_layers = runs.num_layers;
        run.layer_times = runs.times;
        std::string stages;
        for (std::size_t s = 0; s < runs.rounds[r].stages.size(); ++s) {
            stages += fmt::format("{}stage {}: {}", stages.empty() ? "" : "; ", s,
                                  imp::describe_layers(runs.rounds[r].stages[s]));
        }
        std::vector<std::uint32_t> measured;
        for (const auto& o : run.observations)
            measured.push_back(o.stage);
        messages.insert(
            messages.begin() + static_cast<std::ptrdiff_t>(r),
            {imp::Message::Level::note,
             fmt::format("dry run {} of {} (config '{}'): {} stages, {}; memory of "
                         "stage{} {}",
                         r + 1, rounds, run.label, runs.num_stages, stages,
                         measured.size() == 1 ? "" : "s", imp::describe_numbers(measured))});
        summary += fmt::format("{}{} ('{}')", summary.empty() ? "" : ", ", run.observations.size(),
                               run.label);
        documents.push_back(std::move(run));
    }
    add_note(messages,
             "each stage's in-flight count is taken as pipeline_num - stage, as SAPP's -init "
             "counts a dry run's activations (a pipeline_config.micro_batch_num is the planning "
             "problem's: 'ppb partition --sapp-config')");
    const std::string where = write_runs(args.common, documents, messages);
    print_messages(messages);
    std::size_t total = 0;
    for (const auto& d : documents)
        total += d.observations.size();
    fmt::print(stderr, "ppb: imported {} observation{} of {} dry run{} ({}) from {} to {}\n", total,
               total == 1 ? "" : "s", rounds, rounds == 1 ? "" : "s", summary, args.init, where);
    return 0;
}

void add_mindspore(CLI::App& import, Commands& commands) {
    auto args = std::make_shared<MindSporeArgs>();
    CLI::App* ms = add_command(
        import, "mindspore", "MindSpore dry-run logs and the MindFormers configuration",
        "Reads each rank's peak memory from MindSpore dry-run logs and the pipeline layout from\n"
        "the MindFormers training configuration that produced them, and writes one ppb.dryrun/1\n"
        "observation per pipeline stage.\n\n"
        "A log's rank comes from its path (rank_<id>/..., rank_<id>.log, worker_<id>.log) or\n"
        "from --rank; its stage is rank / (data_parallel x model_parallel x context_parallel).\n"
        "Of several memory lines in a log the last is taken; of several ranks of one stage the\n"
        "largest peak; stages without a log are left out. stderr says each time."
        "\n\n"
        "Layout values are written as in the YAML: 4, [1,0,0,-1] (or 1,0,0,-1), [[1,0,0,-1]],\n"
        "true. A LIST has one entry per stage; an integer means that many layers of every stage;\n"
        "true or false (also as an entry) all or none of a stage's layers. Kinds per stage, as\n"
        "the public SAPP tool reads them: full = recompute; both = min(select, comm) - full (at\n"
        "least 0); select and comm the rest of their counts; none the remaining layers.\n"
        "With pp_interleave_num v > 1 each stage runs v chunks (schedule 'interleaved', written\n"
        "as ppb.dryrun/2): chunk c of stage s holds L // (P x v) + offset[c][s] layers, and\n"
        "settings take one row per chunk ([[...], [...]]); one entry per stage means that offset\n"
        "for every chunk, or that recompute count spread over the stage's chunks from chunk 0.\n\n"
        "Model settings are read under every name MindFormers accepts (num_layers or\n"
        "num_hidden_layers, ...); two names that disagree are refused.\n"
        "MoE models: wherever MindFormers builds experts (moe_config.expert_num or the model's\n"
        "num_experts, n_routed_experts, ... above 1; an MoE model_type) the MoE layers are all\n"
        "but the first first_k_dense_replace, else those of moe_layer_freq (Qwen3-MoE: every\n"
        "layer); with dense and MoE layers, each stage's layers are counted per group 'dense'\n"
        "and 'moe' by their index in the model, each layer's recompute kind by its position in\n"
        "its chunk (the first layers are the recomputed ones), written as ppb.dryrun/3.\n\n"
        "Exit status: 0 imported, 2 invalid input or usage (the message names the file and\n"
        "line), 1 other errors.");
    add_common_options(*ms, args->common, {"used", "actual"},
                       "which peak to read: 'used' ('Used peak memory usage (without\n"
                       "fragments)') is the memory the tensors need, which the layout\n"
                       "and recompute choices determine (the figure MindFormers says to\n"
                       "compare with device memory); 'actual' ('with fragments') adds\n"
                       "the allocator's fragmentation, which does not scale with\n"
                       "layers: plan for it with --memory-margin-mb instead",
                       "the rank that wrote log FILE (repeatable; wins over the path)");
    const std::string group = "Layout (a flag wins over CONFIG)";
    const auto layout = [&](const char* name, std::optional<std::string>& field, const char* help,
                            const char* value_name) {
        return ms->add_option(name, field, help)->group(group)->type_name(value_name);
    };
    ms->add_option("--config", args->config, "the MindFormers training configuration")
        ->group(group)
        ->type_name("CONFIG.yaml")
        ->check(CLI::ExistingFile);
    layout("--pipeline-stage", args->flags.pipeline_stage,
           "parallel_config.pipeline_stage (required)", "P");
    layout("--data-parallel", args->flags.data_parallel,
           "parallel_config.data_parallel (default 1)", "N");
    layout("--model-parallel", args->flags.model_parallel,
           "parallel_config.model_parallel (default 1)", "N");
    layout("--context-parallel", args->flags.context_parallel,
           "parallel_config.context_parallel (default 1)", "N");
    layout("--micro-batch-num", args->flags.micro_batch_num, "parallel_config.micro_batch_num",
           "M");
    layout("--num-layers", args->flags.num_layers,
           "model.model_config.num_layers, or num_hidden_layers (required)", "L");
    layout("--pp-interleave-num", args->flags.pp_interleave_num,
           "model.model_config.pp_interleave_num: chunks per stage\n"
           "(interleaved schedule when above 1; default 1)",
           "V");
    layout("--offset", args->flags.offset,
           "model.model_config.offset: stage s holds L // P + offset[s]\n"
           "layers; the stages must sum to L (default 0)",
           "LIST");
    layout("--recompute", args->flags.recompute,
           "recompute_config.recompute: layers fully recomputed per stage", "LIST");
    layout("--select-recompute", args->flags.select_recompute, "recompute_config.select_recompute",
           "LIST");
    layout("--select-comm-recompute", args->flags.select_comm_recompute,
           "recompute_config.select_comm_recompute", "LIST");
    layout("--expert-num", args->flags.expert_num,
           "moe_config.expert_num, or the model's num_experts: MoE layers\n"
           "when above 1 (default 1)",
           "E");
    layout("--num-experts-chosen", args->flags.num_experts_chosen,
           "moe_config.num_experts_chosen (at most expert_num)", "K");
    layout("--first-k-dense-replace", args->flags.first_k_dense_replace,
           "moe_config.first_k_dense_replace: the first K layers dense,\n"
           "the rest MoE (default 0)",
           "K");
    commands.push_back({ms, runner(import_mindspore, args), {}});
}

void add_megatron(CLI::App& import, Commands& commands) {
    auto args = std::make_shared<MegatronArgs>();
    CLI::App* mg = add_command(
        import, "megatron", "Megatron-LM logs and training flags",
        "Reads each rank's peak memory from the lines Megatron-LM prints,\n"
        "  [Rank N] (after K iterations) memory (MB) | allocated: ... | max allocated: ... | ...\n"
        "and writes one ppb.dryrun/1 observation per pipeline stage, with the layout given by\n"
        "Megatron's own flags and by what the logs state about the run: the argument dump\n"
        "Megatron (or MindSpeed-LLM) prints at start-up, the 'using world size' line and the\n"
        "'setting number of microbatches' line. A flag left out takes the logs' value (stderr\n"
        "says from which line); a flag that contradicts the logs is refused, naming both.\n\n"
        "The rank is each line's [Rank N], so one combined log of all ranks works (a memory line\n"
        "without it takes the log's rank from --rank or the path: rank_<id>/..., rank_<id>.log,\n"
        "worker_<id>.log). A rank's stage is rank / (world size / P), Megatron's default rank\n"
        "order. Of several memory lines of a rank the last is taken; of several ranks of one\n"
        "stage (tensor- and data-parallel replicas) the largest peak; stages without a line are\n"
        "left out. stderr says each time."
        "\n\n"
        "Layers per stage: L / P (must divide), unless the first and/or last stage's count is\n"
        "given; the other stages share the rest evenly (must divide). With virtual pipeline\n"
        "chunks (interleaved schedule, written as ppb.dryrun/2) each stage's layers split evenly\n"
        "over its chunks. Recompute kinds: selective granularity, every layer 'select'; full +\n"
        "uniform, every layer 'full'; full + block, the first N layers of each stage (of each\n"
        "chunk) 'full', the rest 'none'; no granularity, every layer 'none'.\n\n"
        "MindSpeed-LLM: --num-layer-list gives each stage's layers; --noop-layers names layers\n"
        "that hold no transformer block, left out of the stages' counts.\n\n"
        "MoE models: with --num-experts, --moe-layer-freq (or --first-k-dense-replace) says\n"
        "which layers are MoE layers; when some are dense, each stage's layers are counted per\n"
        "group 'dense' and 'moe' by their index in the model (each chunk's recomputed layers\n"
        "are its first), written as ppb.dryrun/3.\n\n"
        "Exit status: 0 imported, 2 invalid input or usage (the message names the file and\n"
        "line), 1 other errors.");
    add_common_options(*mg, args->common,
                       {"max-allocated", "allocated", "reserved", "max-reserved"},
                       "allocated, max-allocated, reserved or max-reserved: max-allocated\n"
                       "is the peak of the memory the tensors occupied, which the layout\n"
                       "and recompute choices determine; 'reserved' adds what PyTorch's\n"
                       "caching allocator keeps besides, which does not scale with\n"
                       "layers: plan for it with --memory-margin-mb",
                       "the rank of a log whose memory lines lack [Rank N] (repeatable)");
    add_megatron_layout_options(*mg, args->flags,
                                "Layout (Megatron's flags; left out, the logs' values)",
                                "MoE layers (Megatron's flags)", true);
    commands.push_back({mg, runner(import_megatron, args), {}});
}

void add_sapp(CLI::App& import, Commands& commands) {
    auto args = std::make_shared<SappArgs>();
    CLI::App* sapp = add_command(
        import, "sapp", "the dry runs of a SAPP -init description",
        "Reads the YAML that the public SAPP pipeline balancer (hyper-parallel's sapp_ppb,\n"
        "earlier MindFormers toolkit/pipeline_balance) takes with -init, and writes one\n"
        "ppb.dryrun/1 observation per stage whose peak memory it gives:\n"
        "  pipeline_config:  pipeline_num P, num_layer L, offset\n"
        "  recompute_config: recompute, select_recompute, select_comm_recompute\n"
        "  memory_usage:     head_memory (stage 0), tail_memory (stage P-1),\n"
        "                    body_memories: stage_id and memories (other stages)\n"
        "  time_config:      head, body, tail: the time of one such layer\n"
        "The file also carries L (body_layers) and time_config (layer_times), so that 'ppb fit\n"
        "- --export-sapp OUT' writes the whole layer file SAPP's -init writes. A\n"
        "profiling_config (a profiler timeline) is not read: give time_config instead.\n"
        "Stage s holds L // P + offset[s] body layers (the stages must\n"
        "sum to L). Recompute settings give per stage the layers recomputed that way (true:\n"
        "all, false or 0: none); kinds as SAPP reads them: full = recompute; both =\n"
        "min(select, comm) - full (at least 0); select and comm the rest of their counts; none\n"
        "the remaining layers. Memories are whole stages' peaks in MB."
        "\n\n"
        "Several dry runs are lists of such lists, one per dry run; they become configs\n"
        "NAME-1, NAME-2, ... (NAME is --label). A single head_memory / tail_memory then belongs\n"
        "to the last dry run, as SAPP reads it; a list gives one per dry run.\n\n"
        "Exit status: 0 imported, 2 invalid input or usage (the message names the file, line\n"
        "and key), 1 other errors.");
    sapp->add_option("INIT", args->init, "SAPP's -init YAML")
        ->required()
        ->type_name("INIT.yaml")
        ->check(CLI::ExistingFile);
    add_output_options(*sapp, args->common);
    commands.push_back({sapp, runner(import_sapp, args), {}});
}

}  // namespace

void add_import_command(CLI::App& app, Commands& commands) {
    CLI::App* import = add_command(
        app, "import",
        "build a dry-run file from MindSpore, Megatron or torchtitan logs and\n"
        "configs, PyTorch memory snapshots, or SAPP's dry-run description",
        "Builds a dry-run file (ppb.dryrun/1) from the logs of a dry run and the configuration\n"
        "that produced it: one observation per pipeline stage, with the stage's body layers per\n"
        "recompute kind and its peak memory (and its peak reserved memory where the logs give\n"
        "it), ready for 'ppb fit' and 'ppb partition'. The file goes to stdout, to -o FILE, or\n"
        "is appended to an existing dry-run file with --append FILE --label NAME."
        "\n\n"
        "'ppb import snapshot' reads PyTorch memory snapshots, 'ppb import torchtitan'\n"
        "torchtitan's step lines; 'ppb import sapp INIT.yaml' reads the dry runs that the public\n"
        "SAPP pipeline balancer's -init YAML describes.\n\n"
        "Run 'ppb import mindspore --help', 'ppb import megatron --help', 'ppb import\n"
        "torchtitan --help', 'ppb import snapshot --help' or 'ppb import sapp --help' for each\n"
        "format's options.");
    commands.push_back({import,
                        []() -> int {
                            throw UsageError(
                                "missing the log format: 'ppb import mindspore ...', 'ppb "
                                "import megatron ...', 'ppb import torchtitan ...', 'ppb import "
                                "snapshot ...' or 'ppb import sapp ...'");
                        },
                        "log format"});
    add_mindspore(*import, commands);
    add_megatron(*import, commands);
    add_megatron_options(*import, commands);
    add_mindformers_options(*import, commands);
    add_torchtitan_options(*import, commands);
    add_sapp(*import, commands);
    add_snapshot_imports(*import, commands);
}

}  // namespace ppb::cli
