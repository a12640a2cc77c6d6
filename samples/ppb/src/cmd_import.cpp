// ppb import: build a dry-run file (ppb.dryrun/1) from the logs of a dry run and the
// configuration that produced it (MindSpore / MindFormers, Megatron-LM).
#include "cli_args.hpp"
#include "commands.hpp"

#include <ppb/dryrun_format.hpp>
#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/mindspore.hpp>
#include <ppb/json_input.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace ppb::cli {
namespace {

namespace imp = ppb::importers;

constexpr std::string_view overview =
    R"(Usage: ppb import mindspore --config CONFIG.yaml [options] LOG...
       ppb import megatron --pipeline-model-parallel-size P --num-layers L [options] LOG...

Builds a dry-run file (ppb.dryrun/1) from the logs of a dry run and the configuration that
produced it: one observation per pipeline stage, with the stage's body layers per recompute
kind and its peak memory, ready for 'ppb fit' and 'ppb partition'. The file goes to stdout,
to -o FILE, or is appended to an existing dry-run file with --append FILE --label NAME.

Run 'ppb import mindspore --help' or 'ppb import megatron --help' for each format's options.
)";

constexpr std::string_view mindspore_usage =
    R"(Usage: ppb import mindspore --config CONFIG.yaml [options] LOG...

Reads each rank's peak memory from MindSpore dry-run logs and the pipeline layout from the
MindFormers training configuration that produced them, and writes one ppb.dryrun/1
observation per pipeline stage.

A LOG is a file or a directory (searched for *.log, *.txt, *.out). A log's rank comes from
its path (rank_<id>/..., rank_<id>.log, worker_<id>.log) or from --rank; its stage is
rank / (data_parallel x model_parallel x context_parallel). Of several memory lines in a log
the last is taken; of several ranks of one stage the largest peak; stages without a log are
left out. stderr says each time.

Memory:
  --memory used|actual         which peak to read (default used): 'Used peak memory usage
                               (without fragments)' is the memory the tensors need, which the
                               layout and recompute choices determine (the figure MindFormers
                               says to compare with device memory); 'actual' ('with
                               fragments') adds the allocator's fragmentation, which does not
                               scale with layers: plan for it with --memory-margin-mb instead

Layout, where MindFormers keeps it in CONFIG; a flag wins over the file. Values are written
as in the YAML: 4, [1,0,0,-1] (or 1,0,0,-1), [[1,0,0,-1]], true:
  --config CONFIG.yaml         the MindFormers training configuration
  --pipeline-stage P           parallel_config.pipeline_stage (required)
  --data-parallel N            parallel_config.data_parallel (default 1)
  --model-parallel N           parallel_config.model_parallel (default 1)
  --context-parallel N         parallel_config.context_parallel (default 1)
  --micro-batch-num M          parallel_config.micro_batch_num
  --num-layers L               model.model_config.num_layers (required)
  --offset LIST                model.model_config.offset: stage s holds L // P + offset[s]
                               layers; the stages must sum to L (default 0)
  --recompute LIST             recompute_config.recompute: layers fully recomputed per stage
  --select-recompute LIST      recompute_config.select_recompute
  --select-comm-recompute LIST recompute_config.select_comm_recompute
A LIST has one entry per stage; an integer means that many layers of every stage; true or
false (also as an entry) all or none of a stage's layers. Kinds per stage, as the public SAPP
tool reads them: full = recompute; both = min(select, comm) - full (at least 0); select and
comm the rest of their counts; none the remaining layers. Interleaved layouts (several rows,
pp_interleave_num > 1) are refused: ppb.dryrun/1 has one chunk per stage.

Output:
  -o, --output FILE            write FILE (replaced atomically) instead of stdout
  --append FILE                add the observations to the dry-run FILE in place
  --label NAME                 the observations' config label (default A; required with
                               --append, and new to FILE)
  --rank FILE=ID               the rank that wrote log FILE (repeatable; wins over the path)
  --duplicate-tolerance X      see 'ppb fit --help' (the file written is checked with it)
  -h, --help                   show this help

Exit status: 0 imported, 2 invalid input or usage (the message names the file and line),
1 other errors.
)";

constexpr std::string_view megatron_usage =
    R"(Usage: ppb import megatron --pipeline-model-parallel-size P --num-layers L [options] LOG...

Reads each rank's peak memory from the lines Megatron-LM prints,
  [Rank N] (after K iterations) memory (MB) | allocated: ... | max allocated: ... | ...
and writes one ppb.dryrun/1 observation per pipeline stage, with the layout given by
Megatron's own flags (copy them from the training command).

A LOG is a file or a directory (searched for *.log, *.txt, *.out). The rank is each line's
[Rank N], so one combined log of all ranks works (a memory line without it takes the log's
rank from --rank or the path: rank_<id>/..., rank_<id>.log, worker_<id>.log). A rank's stage
is rank / (world size / P), Megatron's default rank order. Of several memory lines of a rank
the last is taken; of several ranks of one stage (tensor- and data-parallel replicas) the
largest peak; stages without a line are left out. stderr says each time.

Memory:
  --memory FIGURE              allocated, max-allocated, reserved or max-reserved (default
                               max-allocated: the peak of the memory the tensors occupied,
                               which the layout and recompute choices determine; 'reserved'
                               adds what PyTorch's caching allocator keeps besides, which does
                               not scale with layers: plan for it with --memory-margin-mb)

Layout, as Megatron's flags (required: the first two):
  --pipeline-model-parallel-size P
  --num-layers L                         L / P layers per stage (must divide), unless:
  --decoder-first-pipeline-num-layers N  the first stage holds N, and/or
  --decoder-last-pipeline-num-layers N   the last stage holds N; the other stages share the
                                         rest evenly (must divide)
  --recompute-granularity full|selective selective: every layer 'select'
  --recompute-method uniform|block       full + uniform: every layer 'full'; full + block:
  --recompute-num-layers N               the first N layers of each stage 'full', the rest
                                         'none'; no granularity: every layer 'none'
and what Megatron derives from its environment and batch sizes:
  --world-size N               number of ranks (default: the log's 'using world size' line)
  --num-microbatches M         micro-batches per iteration (global batch size / (micro batch
                               size x data-parallel size))

Output:
  -o, --output FILE            write FILE (replaced atomically) instead of stdout
  --append FILE                add the observations to the dry-run FILE in place
  --label NAME                 the observations' config label (default A; required with
                               --append, and new to FILE)
  --rank FILE=ID               the rank of a log whose memory lines lack [Rank N] (repeatable)
  --duplicate-tolerance X      see 'ppb fit --help' (the file written is checked with it)
  -h, --help                   show this help

Exit status: 0 imported, 2 invalid input or usage (the message names the file and line),
1 other errors.
)";

constexpr OptionSpec common_specs[] = {
    {"help"},
    {"memory", true},
    {"label", true},
    {"output", true},
    {"append", true},
    {"rank", true, true},
    {"duplicate-tolerance", true},
};

constexpr OptionSpec mindspore_specs[] = {
    {"config", true},
    {"pipeline-stage", true},
    {"data-parallel", true},
    {"model-parallel", true},
    {"context-parallel", true},
    {"micro-batch-num", true},
    {"num-layers", true},
    {"offset", true},
    {"recompute", true},
    {"select-recompute", true},
    {"select-comm-recompute", true},
};

constexpr OptionSpec megatron_specs[] = {
    {"pipeline-model-parallel-size", true},
    {"num-layers", true},
    {"decoder-first-pipeline-num-layers", true},
    {"decoder-last-pipeline-num-layers", true},
    {"recompute-granularity", true},
    {"recompute-method", true},
    {"recompute-num-layers", true},
    {"world-size", true},
    {"num-microbatches", true},
};

std::vector<OptionSpec> specs_with(std::span<const OptionSpec> own) {
    std::vector<OptionSpec> specs(std::begin(common_specs), std::end(common_specs));
    specs.insert(specs.end(), own.begin(), own.end());
    return specs;
}

// "-o FILE" is "--output FILE"; Args knows long options only.
std::vector<std::string> expand_short_options(std::span<const std::string> words,
                                              std::span<const OptionSpec> specs) {
    std::vector<std::string> out;
    bool value_next = false;
    bool only_positional = false;
    for (const std::string& word : words) {
        if (value_next || only_positional) {
            out.push_back(word);
            value_next = false;
            continue;
        }
        if (word == "--")
            only_positional = true;
        if (word == "-o") {
            out.emplace_back("--output");
            value_next = true;
            continue;
        }
        if (word.rfind("--", 0) == 0 && word.find('=') == std::string::npos) {
            for (const OptionSpec& spec : specs) {
                if (spec.takes_value && word.substr(2) == spec.name)
                    value_next = true;
            }
        }
        out.push_back(word);
    }
    return out;
}

// What every format shares: logs, label, where the result goes.
struct Destination {
    std::optional<std::string> output;
    std::optional<std::string> append;
    std::string label = "A";
    DryRunReadOptions options;
};

Destination read_destination(const Args& args) {
    Destination d;
    d.output = args.value("output");
    d.append = args.value("append");
    if (d.output && d.append)
        throw UsageError("give either -o/--output FILE or --append FILE, not both");
    const auto label = args.value("label");
    if (d.append && !label) {
        throw UsageError(
            "--append FILE needs --label NAME, the config label of the appended dry run");
    }
    if (d.append && !std::filesystem::exists(*d.append)) {
        throw UsageError(fmt::format(
            "--append {}: no such file (write a new dry-run file with -o FILE first)", *d.append));
    }
    if (label) {
        if (label->empty())
            throw UsageError("--label: the label must not be empty");
        d.label = *label;
    }
    if (const auto tolerance = args.double_value("duplicate-tolerance")) {
        if (*tolerance < 0.0 || *tolerance >= 1.0) {
            throw UsageError(
                "--duplicate-tolerance: expected a fraction in [0, 1), e.g. 0.01 for 1 %");
        }
        d.options.duplicate_tolerance = *tolerance;
    }
    return d;
}

std::vector<imp::LogFile> read_log_arguments(const Args& args) {
    if (args.positional().empty()) {
        throw UsageError("missing LOG arguments (the dry run's log files or directories)");
    }
    std::vector<imp::RankAssignment> assignments;
    for (const std::string& text : args.values("rank"))
        assignments.push_back(imp::parse_rank_assignment(text));
    return imp::collect_logs(args.positional(), assignments);
}

std::string layout_summary(const imp::PipelineLayout& layout) {
    std::string stages;
    for (std::size_t s = 0; s < layout.stages.size(); ++s) {
        stages += fmt::format("{}stage {}: {}", stages.empty() ? "" : "; ", s,
                              imp::describe_layers(layout.stages[s]));
    }
    return fmt::format("layout: {} stage{} of {} rank{} ({}), {}; {}", layout.num_stages,
                       layout.num_stages == 1 ? "" : "s", layout.ranks_per_stage,
                       layout.ranks_per_stage == 1 ? "" : "s", layout.ranks_explained,
                       layout.micro_batches ? fmt::format("{} micro-batches", *layout.micro_batches)
                                            : std::string("micro-batch count not given"),
                       stages);
}

void print_messages(const imp::Messages& messages) {
    for (const imp::Message& m : messages) {
        fmt::print(stderr, "ppb: {}: {}\n",
                   m.level == imp::Message::Level::note ? "note" : "warning", m.text);
    }
}

// Builds the document, checks it, writes it where the user asked, and tells what was done.
int finish(const Destination& destination, const imp::PipelineLayout& layout,
           std::vector<imp::StageObservation> observations, std::string comment,
           std::size_t log_count, imp::Messages& messages) {
    imp::ImportedDryRun run;
    run.num_stages = layout.num_stages;
    run.micro_batches = layout.micro_batches;
    run.label = destination.label;
    run.comment = std::move(comment);
    run.observations = std::move(observations);

    std::string text;
    std::string where = "stdout";
    if (destination.append) {
        const std::filesystem::path file(*destination.append);
        text = imp::appended_dryrun_text(read_text_file(file), source_name(file), run,
                                         destination.options, messages);
        imp::write_file_atomically(file, text);
        where = fmt::format("{} (appended)", *destination.append);
    } else {
        text = imp::new_dryrun_text(run, destination.options);
        if (destination.output && *destination.output != "-") {
            imp::write_file_atomically(*destination.output, text);
            where = *destination.output;
        } else {
            fmt::print("{}", text);
            std::fflush(stdout);
        }
    }
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

int import_mindspore(std::span<const std::string> words) {
    const auto specs = specs_with(mindspore_specs);
    const Args args(expand_short_options(words, specs), specs);
    if (args.flag("help")) {
        fmt::print("{}", mindspore_usage);
        return 0;
    }
    const Destination destination = read_destination(args);
    imp::MindSporeMemory memory = imp::MindSporeMemory::used;
    if (const auto name = args.value("memory")) {
        const auto chosen = imp::mindspore_memory_from_name(*name);
        if (!chosen)
            throw UsageError(fmt::format("--memory: expected used or actual, got '{}'", *name));
        memory = *chosen;
    }
    imp::MindSporeFlags flags;
    flags.pipeline_stage = args.value("pipeline-stage");
    flags.data_parallel = args.value("data-parallel");
    flags.model_parallel = args.value("model-parallel");
    flags.context_parallel = args.value("context-parallel");
    flags.micro_batch_num = args.value("micro-batch-num");
    flags.num_layers = args.value("num-layers");
    flags.offset = args.value("offset");
    flags.recompute = args.value("recompute");
    flags.select_recompute = args.value("select-recompute");
    flags.select_comm_recompute = args.value("select-comm-recompute");
    const auto config = args.value("config");
    if (args.positional().empty()) {
        throw UsageError("missing LOG arguments (the dry run's log files or directories)");
    }

    imp::Messages messages;
    const std::optional<std::filesystem::path> config_path =
        config ? std::optional<std::filesystem::path>(*config) : std::nullopt;
    const imp::PipelineLayout layout = imp::mindspore_layout(config_path, flags, messages);
    messages.insert(messages.begin(), {imp::Message::Level::note, layout_summary(layout)});
    const auto logs = read_log_arguments(args);
    const auto readings = imp::scan_mindspore_logs(logs, memory, messages);
    auto observations = imp::stage_observations(layout, readings, messages);
    std::string marker(imp::mindspore_memory_marker(memory));
    marker.pop_back();  // the colon
    const std::string comment =
        fmt::format("imported by 'ppb import mindspore' from {} and {} log file{}; memory: {}",
                    config ? *config : std::string("command-line flags"), logs.size(),
                    logs.size() == 1 ? "" : "s", marker);
    return finish(destination, layout, std::move(observations), comment, logs.size(), messages);
}

int import_megatron(std::span<const std::string> words) {
    const auto specs = specs_with(megatron_specs);
    const Args args(expand_short_options(words, specs), specs);
    if (args.flag("help")) {
        fmt::print("{}", megatron_usage);
        return 0;
    }
    const Destination destination = read_destination(args);
    imp::MegatronMemory memory = imp::MegatronMemory::max_allocated;
    if (const auto name = args.value("memory")) {
        const auto chosen = imp::megatron_memory_from_name(*name);
        if (!chosen) {
            throw UsageError(fmt::format(
                "--memory: expected allocated, max-allocated, reserved or max-reserved, got '{}'",
                *name));
        }
        memory = *chosen;
    }
    imp::MegatronFlags flags;
    flags.pipeline_size = args.uint_value("pipeline-model-parallel-size", 1);
    flags.num_layers = args.uint_value("num-layers", 1);
    flags.first_stage_layers = args.uint_value("decoder-first-pipeline-num-layers", 0);
    flags.last_stage_layers = args.uint_value("decoder-last-pipeline-num-layers", 0);
    flags.recompute_granularity = args.value("recompute-granularity");
    flags.recompute_method = args.value("recompute-method");
    flags.recompute_num_layers = args.uint_value("recompute-num-layers", 1);
    flags.world_size = args.uint_value("world-size", 1);
    flags.micro_batches = args.uint_value("num-microbatches", 1);
    if (!flags.pipeline_size)
        throw UsageError("missing --pipeline-model-parallel-size P");
    if (!flags.num_layers)
        throw UsageError("missing --num-layers L");
    if (args.positional().empty()) {
        throw UsageError("missing LOG arguments (the run's log files or directories)");
    }

    imp::Messages messages;
    const auto logs = read_log_arguments(args);
    const imp::MegatronScan scan = imp::scan_megatron_logs(logs, memory, messages);
    const imp::PipelineLayout layout = imp::megatron_layout(flags, scan, messages);
    messages.insert(messages.begin(), {imp::Message::Level::note, layout_summary(layout)});
    auto observations = imp::stage_observations(layout, scan.readings, messages);
    const std::string comment =
        fmt::format("imported by 'ppb import megatron' from {} log file{}; memory: {}", logs.size(),
                    logs.size() == 1 ? "" : "s", imp::megatron_memory_field(memory));
    return finish(destination, layout, std::move(observations), comment, logs.size(), messages);
}

}  // namespace

int run_import(std::span<const std::string> words) {
    if (words.empty()) {
        throw UsageError(
            "missing the log format: 'ppb import mindspore ...' or 'ppb import megatron ...'");
    }
    const std::string& format = words.front();
    if (format == "-h" || format == "--help") {
        fmt::print("{}", overview);
        return 0;
    }
    const std::span<const std::string> rest = words.subspan(1);
    try {
        if (format == "mindspore")
            return import_mindspore(rest);
        if (format == "megatron")
            return import_megatron(rest);
    } catch (const imp::FlagError& e) {
        throw UsageError(e.what());
    }
    throw UsageError(
        fmt::format("unknown log format '{}' (expected mindspore or megatron)", format));
}

}  // namespace ppb::cli
