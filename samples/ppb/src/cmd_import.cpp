// ppb import: build a dry-run file (ppb.dryrun/1) from the logs of a dry run and the
// configuration that produced it (MindSpore / MindFormers, Megatron-LM).
#include "cmd_import_options.hpp"
#include "commands.hpp"
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

// What every format shares: the logs, the memory figure, where the result goes.
struct CommonArgs {
    std::vector<std::string> logs;
    std::string memory;
    std::string output;
    std::string append;
    std::string label = "A";
    std::vector<std::string> ranks;  // FILE=ID
    DryRunReadOptions read;
};

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

CLI::Validator existing_dryrun_file() {
    return CLI::Validator(
        [](std::string& file) -> std::string {
            if (std::filesystem::exists(file))
                return {};
            return fmt::format("no such file '{}' (write a new dry-run file with -o FILE first)",
                               file);
        },
        "", "existing dry-run file");
}

CLI::Validator non_empty() {
    return CLI::Validator(
        [](std::string& text) { return text.empty() ? std::string("must not be empty") : ""; }, "",
        "non-empty");
}

// Declares where the result goes: -o, --label, --append and --duplicate-tolerance.
void add_output_options(CLI::App& app, CommonArgs& args) {
    const std::string output_group = "Output";
    auto* output = app.add_option("-o,--output", args.output,
                                  "write FILE instead of stdout (a file is replaced atomically;\n"
                                  "a FIFO or device is written to; '-' is stdout)")
                       ->group(output_group)
                       ->type_name("FILE");
    auto* label = app.add_option("--label", args.label,
                                 "the observations' config label (required with --append,\n"
                                 "and new to its FILE)")
                      ->group(output_group)
                      ->type_name("NAME")
                      ->capture_default_str()
                      ->check(non_empty());
    app.add_option("--append", args.append, "add the observations to the dry-run FILE in place")
        ->group(output_group)
        ->type_name("FILE")
        ->excludes(output)
        ->needs(label)
        ->check(existing_dryrun_file());
    add_duplicate_tolerance_option(app, args.read);
    app.get_option("--duplicate-tolerance")->group(output_group);
}

// Declares what every log format shares: LOG..., --memory (one of `memories`, the first the
// default), the output options, --rank and --duplicate-tolerance.
void add_common_options(CLI::App& app, CommonArgs& args, const std::vector<std::string>& memories,
                        const std::string& memory_help, const std::string& rank_help) {
    args.memory = memories.front();
    app.add_option("LOG", args.logs, "a log file, or a directory searched for *.log, *.txt, *.out")
        ->required();
    app.add_option("--memory", args.memory, memory_help)
        ->group("Memory")
        ->type_name("FIGURE")
        ->capture_default_str()
        ->check(CLI::IsMember(memories));
    add_output_options(app, args);
    app.add_option("--rank", args.ranks, rank_help)
        ->group("Output")
        ->type_name("FILE=ID")
        ->allow_extra_args(false);
}

std::string layout_summary(const imp::PipelineLayout& layout) {
    return fmt::format("layout: {} stage{} of {} rank{} ({}), {}{}; {}", layout.num_stages,
                       layout.num_stages == 1 ? "" : "s", layout.ranks_per_stage,
                       layout.ranks_per_stage == 1 ? "" : "s", layout.ranks_explained,
                       layout.micro_batches ? fmt::format("{} micro-batches", *layout.micro_batches)
                                            : std::string("micro-batch count not given"),
                       layout.num_chunks == 1
                           ? std::string()
                           : fmt::format(", {} chunks per stage ({} schedule)", layout.num_chunks,
                                         schedule_name(layout.schedule)),
                       imp::describe_stages(layout));
}

void print_messages(const imp::Messages& messages) {
    for (const imp::Message& m : messages) {
        fmt::print(stderr, "ppb: {}: {}\n",
                   m.level == imp::Message::Level::note ? "note" : "warning", m.text);
    }
}

// Builds the document of `runs` (the first a new document or appended to --append FILE, the
// others appended to it), checks it, writes it where the user asked; returns where it went.
std::string write_runs(const CommonArgs& destination, const std::vector<imp::ImportedDryRun>& runs,
                       imp::Messages& messages) {
    std::string text;
    std::string where = "stdout";
    std::string source = "<import>";
    bool have_document = false;
    if (!destination.append.empty()) {
        have_document = true;
        const std::filesystem::path file(destination.append);
        text = read_text_file(file);
        source = source_name(file);
        where = fmt::format("{} (appended)", destination.append);
    }
    for (const imp::ImportedDryRun& run : runs) {
        text = have_document
                   ? imp::appended_dryrun_text(text, source, run, destination.read, messages)
                   : imp::new_dryrun_text(run, destination.read);
        have_document = true;
    }
    if (!destination.append.empty()) {
        write_output_file(destination.append, text);
    } else if (!destination.output.empty() && destination.output != "-") {
        write_output_file(destination.output, text);
        where = destination.output;
    } else {
        write_stdout(text);
    }
    return where;
}

// Builds the document, checks it, writes it where the user asked, and tells what was done.
int finish(const CommonArgs& destination, const imp::PipelineLayout& layout,
           std::vector<imp::StageObservation> observations, std::string comment,
           std::size_t log_count, imp::Messages& messages) {
    imp::ImportedDryRun run;
    run.num_stages = layout.num_stages;
    run.micro_batches = layout.micro_batches;
    run.schedule = layout.schedule;
    run.num_chunks = layout.num_chunks;
    run.groups = layout.groups;
    run.label = destination.label;
    run.comment = std::move(comment);
    run.observations = std::move(observations);

    const std::string where = write_runs(destination, {run}, messages);
    std::vector<std::uint32_t> stages;
    for (const auto& o : run.observations)
        stages.push_back(o.stage);
    print_messages(messages);
    fmt::print(stderr,
               "ppb: imported {} observation{} (config '{}', stage{} {} of {}) from {} log "
               "file{} to {}\n",
               run.observations.size(), run.observations.size() == 1 ? "" : "s", run.label,
               stages.size() == 1 ? "" : "s", imp::describe_numbers(stages), layout.num_stages,
               log_count, log_count == 1 ? "" : "s", where);
    return 0;
}

std::vector<imp::LogFile> collect_logs(const CommonArgs& args) {
    std::vector<imp::RankAssignment> assignments;
    for (const std::string& text : args.ranks)
        assignments.push_back(imp::parse_rank_assignment(text));
    return imp::collect_logs(args.logs, assignments);
}

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

// Importer complaints about flags are usage errors.
template <typename Import, typename Args>
std::function<int()> runner(Import import, std::shared_ptr<Args> args) {
    return [import, args] {
        try {
            return import(*args);
        } catch (const imp::FlagError& e) {
            throw UsageError(e.what());
        }
    };
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
    const std::string group = "Layout (Megatron's flags; left out, the logs' values)";
    const auto count = [&](const char* name, std::optional<std::uint32_t>& field, const char* help,
                           const char* value_name, const limits::CountRange& range) {
        return mg->add_option(name, field, help)
            ->group(group)
            ->type_name(value_name)
            ->check(count_in(range));
    };
    count("--pipeline-model-parallel-size", args->flags.pipeline_size, "pipeline degree", "P",
          limits::stages);
    count("--num-layers", args->flags.num_layers, "transformer layers", "L", limits::layers);
    count("--decoder-first-pipeline-num-layers,--num-layers-in-first-pipeline-stage",
          args->flags.first_stage_layers, "layers of the first stage", "N", limits::layers_or_none);
    count("--decoder-last-pipeline-num-layers,--num-layers-in-last-pipeline-stage",
          args->flags.last_stage_layers, "layers of the last stage", "N", limits::layers_or_none);
    count("--num-layers-per-virtual-pipeline-stage", args->flags.layers_per_virtual_stage,
          "layers per virtual pipeline chunk: each stage runs\n"
          "L / P / N chunks (interleaved schedule)",
          "N", limits::layers);
    count("--num-virtual-stages-per-pipeline-rank,--virtual-pipeline-model-parallel-size",
          args->flags.virtual_stages,
          "virtual pipeline chunks per stage (interleaved schedule\n"
          "when above 1); each stage's layers split evenly over them",
          "V", limits::chunks);
    mg->add_option("--pipeline-model-parallel-layout", args->flags.layout,
                   "every (stage, chunk)'s layers in Megatron's grammar, e.g.\n"
                   "'Et*3|(tt|)*29,m|L': E embedding, t decoder layer, m MTP\n"
                   "layer, L loss, | between virtual stages (chunk c of rank r is\n"
                   "virtual stage c*P + r), x*n and (...)*n repeats")
        ->group(group)
        ->type_name("LAYOUT");
    mg->add_flag("--account-for-embedding-in-pipeline-split", args->flags.account_for_embedding,
                 "the embedding counts as a layer in the even split (the first\n"
                 "virtual stage holds one layer fewer)")
        ->group(group);
    mg->add_flag("--account-for-loss-in-pipeline-split", args->flags.account_for_loss,
                 "the loss counts as a layer in the even split (the last\n"
                 "virtual stage holds one layer fewer)")
        ->group(group);
    mg->add_option("--num-layer-list", args->flags.num_layer_list,
                   "MindSpeed-LLM: each stage's layers, e.g. 7,9,10,6 (summing to\n"
                   "--num-layers)")
        ->group(group)
        ->type_name("a,b,...");
    mg->add_option("--noop-layers", args->flags.noop_layers,
                   "MindSpeed-LLM: 0-based indices of layers that hold no transformer\n"
                   "block (counted in --num-layers, not in the stages' layers)")
        ->group(group)
        ->type_name("i,j,...");
    count("--mtp-num-layers", args->flags.mtp_layers,
          "multi-token-prediction layers: the layout's 'm' count", "N", limits::layers_or_none);
    mg->add_option("--recompute-granularity", args->flags.recompute_granularity,
                   "full or selective")
        ->group(group)
        ->type_name("full|selective")
        ->check(CLI::IsMember({"full", "selective"}));
    mg->add_option("--recompute-method", args->flags.recompute_method,
                   "with full granularity: uniform or block")
        ->group(group)
        ->type_name("uniform|block")
        ->check(CLI::IsMember({"uniform", "block"}));
    count("--recompute-num-layers", args->flags.recompute_num_layers,
          "with the block method: layers fully recomputed per stage", "N", limits::layers);
    const std::string moe_group = "MoE layers (Megatron's flags)";
    mg->add_option("--num-experts", args->flags.num_experts,
                   "experts per MoE layer: the model has MoE layers")
        ->group(moe_group)
        ->type_name("N")
        ->check(count_in({1, std::numeric_limits<std::uint32_t>::max(), "experts"}));
    mg->add_option("--moe-layer-freq", args->flags.moe_layer_freq,
                   "which layers are MoE layers: an integer N (layer i when\n"
                   "i % N == 0; default 1, every layer) or a list of 0/1 per\n"
                   "layer such as '[0]*3+[1]*58'")
        ->group(moe_group)
        ->type_name("N|LIST");
    mg->add_option("--first-k-dense-replace", args->flags.first_k_dense_replace,
                   "the first K layers dense, the rest MoE (MindSpeed-LLM)")
        ->group(moe_group)
        ->type_name("K")
        ->check(count_in(limits::layers_or_none));
    count("--world-size", args->flags.world_size, "number of ranks (left out, the logs')", "N",
          {1, std::numeric_limits<std::uint32_t>::max(), "ranks"});
    count("--num-microbatches", args->flags.micro_batches,
          "micro-batches per iteration (global batch size / (micro batch\n"
          "size x data-parallel size); left out, the logs'",
          "M", limits::micro_batches);
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
        "build a dry-run file from MindSpore or Megatron logs and configs,\n"
        "or from SAPP's dry-run description",
        "Builds a dry-run file (ppb.dryrun/1) from the logs of a dry run and the configuration\n"
        "that produced it: one observation per pipeline stage, with the stage's body layers per\n"
        "recompute kind and its peak memory, ready for 'ppb fit' and 'ppb partition'. The file\n"
        "goes to stdout, to -o FILE, or is appended to an existing dry-run file with\n"
        "--append FILE --label NAME."
        "\n\n"
        "'ppb import sapp INIT.yaml' reads the dry runs that the public SAPP pipeline balancer's\n"
        "-init YAML describes.\n\n"
        "Run 'ppb import mindspore --help', 'ppb import megatron --help' or 'ppb import sapp\n"
        "--help' for each format's options.");
    commands.push_back({import,
                        []() -> int {
                            throw UsageError(
                                "missing the log format: 'ppb import mindspore ...', 'ppb "
                                "import megatron ...' or 'ppb import sapp ...'");
                        },
                        "log format"});
    add_mindspore(*import, commands);
    add_megatron(*import, commands);
    add_megatron_options(*import, commands);
    add_mindformers_options(*import, commands);
    add_sapp(*import, commands);
}

}  // namespace ppb::cli
