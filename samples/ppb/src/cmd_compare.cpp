// ppb compare: for a set of placements, each selected model's prediction beside the measured
// memory where one exists, with the error in MB and %: how a user decides which model to trust.
#include "commands.hpp"
#include "compare_output.hpp"
#include "import_common.hpp"
#include "plan_layout.hpp"
#include "plugin_session.hpp"

#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/importers/snapshot_files.hpp>
#include <ppb/importers/snapshot_import.hpp>
#include <ppb/importers/torchtitan.hpp>
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/partition/model_comparison.hpp>
#include <ppb/partition/plan_reader.hpp>
#include <ppb/semver.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>

namespace ppb::cli {
namespace {

struct CompareArgs {
    std::string file;
    std::vector<std::string> models;  // NAME[@VERSION][=OPTIONS]
    std::string partition;
    // A run of the plan: its dry-run file, or its memory snapshots or torchtitan logs.
    std::vector<std::string> measured;
    std::optional<std::uint32_t> world_size;  // the run's ranks (default: one per stage)
    bool cross_validate = false;
    std::vector<std::string> plugin_paths;
    DryRunReadOptions read;
    bool json = false;
};

struct ModelRequest {
    std::string spec;  // NAME[@VERSION]
    ModelOptions options;
};

ModelRequest parse_model_argument(const std::string& text) {
    const std::size_t eq = text.find('=');
    ModelRequest request{text.substr(0, eq), {}};
    (void)ModelSpec::parse(request.spec);
    if (eq != std::string::npos) {
        request.options =
            options_text(text.substr(eq + 1), fmt::format("--model {}", request.spec));
    }
    return request;
}

// Whether `path` is a JSON document (its first byte that is not white space is '{').
bool is_json_document(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char c = 0;
    while (in.get(c)) {
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return c == '{';
    }
    return false;
}

// Whether the arguments name PyTorch memory snapshots: a snapshot file, or a directory holding one.
bool names_snapshots(const std::vector<std::string>& paths) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const std::string& path : paths) {
        if (fs::is_directory(path, ec)) {
            for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end;
                 it.increment(ec)) {
                if (it->is_regular_file(ec) && importers::looks_like_snapshot(it->path()))
                    return true;
            }
        } else if (importers::looks_like_snapshot(path)) {
            return true;
        }
    }
    return false;
}

// The measured run of the plan `plan_path`: its dry-run file (ppb import's output), or its own
// PyTorch memory snapshots or torchtitan logs placed by the plan, rank r of `world_size` running
// stage r / (N / P), as 'ppb import snapshot --plan' and 'ppb import torchtitan --plan' read them.
DryRunSet measured_run(const std::vector<std::string>& paths, const std::string& plan_path,
                       std::optional<std::uint32_t> world_size, const DryRunReadOptions& read) {
    if (paths.size() == 1 && is_json_document(paths.front())) {
        if (world_size) {
            throw UsageError(
                "--world-size places snapshots and logs by the plan; the dry-run file of "
                "--measured has its own placements");
        }
        return read_dryrun_file(paths.front(), read);
    }
    importers::Messages messages;
    const importers::PipelineLayout layout = plan_layout(plan_path, world_size, messages);
    importers::ImportedDryRun run = imported_run(layout, "measured");
    if (names_snapshots(paths)) {
        const auto files = importers::collect_files(paths, {}, importers::snapshot_files());
        run.observations = importers::stage_observations(
            layout, importers::scan_snapshots(files, messages), messages, "snapshot");
    } else {
        const auto logs = importers::collect_logs(paths, {});
        run.observations = importers::stage_observations(
            layout, importers::scan_torchtitan_logs(logs, messages), messages);
        messages.push_back(
            {importers::Message::Level::note,
             "torchtitan's 'memory:' figures are the peak reserved memory (its logs give no "
             "allocated figure): compare them with predictions of reserved memory"});
    }
    print_messages(messages);
    return parse_dryrun(importers::new_dryrun_text(run, read), "the measured run", read);
}

int run_compare(const CompareArgs& args) {
    std::vector<ModelRequest> requests;
    for (const auto& m : args.models)
        requests.push_back(parse_model_argument(m));
    if (args.file.empty() && args.partition.empty()) {
        throw UsageError("give a dry-run FILE and/or --partition FILE: the placements to compare");
    }
    if (!args.measured.empty() && args.partition.empty())
        throw UsageError("--measured FILE holds the measurements of a plan: give --partition PLAN");
    if (args.world_size && args.measured.empty())
        throw UsageError("--world-size places the snapshots or logs of --measured: give them");
    if (args.cross_validate && args.file.empty())
        throw UsageError("--cross-validate needs a dry-run FILE");

    std::optional<DryRunSet> dryrun;
    if (!args.file.empty())
        dryrun = read_dryrun_file(args.file, args.read);
    std::optional<partition::PlanStages> plan;
    if (!args.partition.empty()) {
        plan = partition::read_plan_stages(read_text_file(args.partition),
                                           source_name(args.partition));
    }
    std::optional<DryRunSet> measured;
    if (!args.measured.empty())
        measured = measured_run(args.measured, args.partition, args.world_size, args.read);
    std::vector<std::string> notes;
    partition::Comparison comparison = partition::placements_to_compare(
        dryrun ? &*dryrun : nullptr, args.file, plan ? &*plan : nullptr, args.partition,
        measured ? &*measured : nullptr, fmt::format("{}", fmt::join(args.measured, ", ")), notes);
    for (const std::string& note : notes)
        fmt::print(stderr, "ppb: note: {}\n", note);
    comparison.cross_validated = args.cross_validate;

    // The dry run is the positional FILE; every other field is its flag.
    const partition::FieldName name = [](std::string_view field) {
        return field == "dryrun" ? std::string("a dry-run FILE") : partition::flag_name(field);
    };
    const auto candidates = discover_from_args(args.plugin_paths);
    for (const ModelRequest& request : requests) {
        partition::compare_model(
            comparison, [&] { return open_model_spec(candidates, request.spec, request.options); },
            dryrun ? &*dryrun : nullptr, args.file, "dryrun", name);
    }
    write_stdout(args.json ? to_pretty_json(partition::comparison_document(comparison))
                           : render_comparison(comparison));
    return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<CompareArgs>();
    CLI::App* compare = add_command(
        app, "compare", "several models' predictions beside measured memory, with their errors",
        "Predicts the peak memory of a set of placements with each model given, beside the\n"
        "measured memory where there is one, with the error in MB and %. The placements are the\n"
        "observations of the dry-run file FILE, and/or the stages of a partition (--partition).\n"
        "Models fitted to observations (dryrun-lsq) are fitted to FILE; OPTIONS (a JSON object,\n"
        "or a file holding one) configure the others, e.g.\n"
        "table=samples/data/llama70b-layers.json."
        "\n\n"
        "Exit status: 0 compared (a model that cannot predict a placement says why in its cell),\n"
        "2 invalid input or usage, 3 plugin not found or failed, 1 other errors.");
    add_dryrun_file_argument(*compare, args->file);
    compare->add_option("--model", args->models, "a model to compare (repeatable, at least one)")
        ->type_name("NAME[@VERSION][=OPTIONS]")
        ->allow_extra_args(false)
        ->required()
        ->check(model_spec());
    compare
        ->add_option("--partition", args->partition,
                     "also compare the stages of a ppb.partition/1 plan")
        ->type_name("FILE");
    compare
        ->add_option("--measured", args->measured,
                     "a run of the plan: its dry-run file (ppb import's output), or its\n"
                     "PyTorch memory snapshots (files, or directories of *.pickle) or\n"
                     "torchtitan logs, placed by the plan; each plan stage's measured\n"
                     "peak beside its predictions")
        ->type_name("FILE");
    compare
        ->add_option("--world-size", args->world_size,
                     "the ranks of the --measured snapshots' or logs' run: rank r ran\n"
                     "stage r / (N / P) (default one rank per stage)")
        ->type_name("N")
        ->check(count_in({1, std::numeric_limits<std::uint32_t>::max(), "ranks"}));
    compare->add_flag("--cross-validate", args->cross_validate,
                      "fitted models predict each config of FILE from a fit to the\n"
                      "other configs only (an honest error for unseen dry runs)");
    add_duplicate_tolerance_option(*compare, args->read);
    add_plugin_path_option(*compare, args->plugin_paths);
    compare->add_flag("--json", args->json, "print ppb.compare/1 JSON instead of tables");
    commands.push_back({compare, [args] { return run_compare(*args); }, {}});
}

}  // namespace ppb::cli
