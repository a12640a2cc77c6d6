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
#include <ppb/in_flight_profile.hpp>
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/partition/plan_reader.hpp>
#include <ppb/profile_prediction.hpp>
#include <ppb/semver.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
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

// The stages of a ppb.partition/1 document as placements (ppb/partition/plan_reader.hpp).
std::vector<ComparedPlacement> read_partition(const std::string& path) {
    partition::PlanStages plan =
        partition::read_plan_stages(read_text_file(path), source_name(path));
    std::vector<ComparedPlacement> out;
    out.reserve(plan.stages.size());
    for (partition::PlannedStage& stage : plan.stages) {
        out.push_back(ComparedPlacement{"plan",
                                        std::move(stage.placement),
                                        std::nullopt,
                                        {},
                                        plan.groups,
                                        std::move(stage.profile)});
    }
    return out;
}

// The same placement: degree, stage, schedule, and every chunk's layers and in-flight count.
bool same_placement(const StagePlacement& a, const StagePlacement& b) {
    if (a.num_stages != b.num_stages || a.stage != b.stage || a.schedule != b.schedule ||
        a.chunks.size() != b.chunks.size() || a.group_layers != b.group_layers)
        return false;
    for (std::size_t c = 0; c < a.chunks.size(); ++c) {
        if (a.chunks[c].in_flight != b.chunks[c].in_flight ||
            !std::equal(std::begin(a.chunks[c].layers), std::end(a.chunks[c].layers),
                        std::begin(b.chunks[c].layers)))
            return false;
    }
    return true;
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

// Each plan stage's measurement from `measured` (a run of the plan): the observation of the same
// placement. A stage it does not hold is said on stderr.
void attach_measurements(std::vector<ComparedPlacement>& plan, const DryRunSet& measured,
                         const std::string& source) {
    for (ComparedPlacement& p : plan) {
        const auto found = std::find_if(
            measured.observations.begin(), measured.observations.end(),
            [&](const Observation& o) { return same_placement(o.placement, p.placement); });
        if (found == measured.observations.end()) {
            fmt::print(stderr,
                       "ppb: note: {} holds no observation of the plan's stage {} (the same "
                       "layers, kinds and in-flight counts): it has no measurement\n",
                       source, p.placement.stage);
            continue;
        }
        p.measured_mb = found->peak_memory_mb;
        if (!found->config.empty())
            p.label = "plan (" + found->config + ")";
    }
}

// Predicts the placements `which` one by one, so that one placement the model cannot predict
// does not hide the others.
void predict_each(const MemoryModel& model, std::vector<ComparedPlacement>& placements,
                  const std::vector<std::size_t>& which, std::size_t slot) {
    const std::vector<std::string> model_groups = model.groups();
    for (const std::size_t i : which) {
        const ComparedPlacement& p = placements[i];
        try {
            // Layers counted per group go to the model in its own groups' order.
            const StagePlacement placement =
                p.groups.empty() ? p.placement : regrouped(p.placement, p.groups, model_groups);
            if (!p.profile.empty()) {
                placements[i].predictions[slot].memory_mb =
                    predict_over_profile(model, placement, p.profile).memory_mb;
            } else if (p.groups.empty()) {
                placements[i].predictions[slot].memory_mb = model.predict(placement.view());
            } else {
                placements[i].predictions[slot].memory_mb =
                    model.predict_grouped(placement.grouped_view());
            }
        } catch (const ModelError& e) {
            if (!e.is_input_error())
                throw;
            placements[i].predictions[slot].error = e.what();
        } catch (const InputError& e) {
            placements[i].predictions[slot].error = e.what();
        }
    }
}

int run_compare(const CompareArgs& args) {
    std::vector<ModelRequest> requests;
    for (const auto& m : args.models)
        requests.push_back(parse_model_argument(m));
    if (args.file.empty() && args.partition.empty()) {
        throw UsageError("give a dry-run FILE and/or --partition FILE: the placements to compare");
    }

    Comparison comparison;
    std::optional<DryRunSet> dryrun;
    std::string dryrun_path;
    std::vector<std::string> sources;
    if (!args.file.empty()) {
        dryrun_path = args.file;
        dryrun = read_dryrun_file(dryrun_path, args.read);
        for (const auto& o : dryrun->observations) {
            comparison.placements.push_back(ComparedPlacement{o.config.empty() ? "-" : o.config,
                                                              o.placement,
                                                              o.peak_memory_mb,
                                                              {},
                                                              dryrun->groups,
                                                              o.in_flight_profile});
        }
        sources.push_back(dryrun_path);
    }
    if (!args.measured.empty() && args.partition.empty())
        throw UsageError("--measured FILE holds the measurements of a plan: give --partition PLAN");
    if (args.world_size && args.measured.empty())
        throw UsageError("--world-size places the snapshots or logs of --measured: give them");
    if (!args.partition.empty()) {
        std::vector<ComparedPlacement> plan = read_partition(args.partition);
        const std::string measured_source = fmt::format("{}", fmt::join(args.measured, ", "));
        if (!args.measured.empty()) {
            attach_measurements(
                plan, measured_run(args.measured, args.partition, args.world_size, args.read),
                measured_source);
        }
        for (auto& p : plan)
            comparison.placements.push_back(std::move(p));
        sources.push_back(args.partition);
        if (!args.measured.empty())
            sources.push_back(measured_source);
    }
    comparison.source = fmt::format("{}", fmt::join(sources, " and "));
    comparison.cross_validated = args.cross_validate;
    if (comparison.cross_validated && !dryrun) {
        throw UsageError("--cross-validate needs a dry-run FILE");
    }
    for (auto& p : comparison.placements)
        p.predictions.resize(requests.size());

    const auto candidates = discover_from_args(args.plugin_paths);
    std::vector<std::size_t> all(comparison.placements.size());
    for (std::size_t i = 0; i < all.size(); ++i)
        all[i] = i;
    for (std::size_t m = 0; m < requests.size(); ++m) {
        MemoryModel model = open_model_spec(candidates, requests[m].spec, requests[m].options);
        ComparedModel described{model.name(), model.version(), ""};
        if (!model.needs_fit() || !comparison.cross_validated) {
            PreparedModel prepared = prepare_model(std::move(model), dryrun ? &*dryrun : nullptr,
                                                   dryrun_path, "a dry-run FILE");
            described.source = prepared.source;
            predict_each(prepared.model, comparison.placements, all, m);
        } else {
            // Leave one config out: fit to the others, predict it.
            std::set<std::string> configs;
            for (const auto& o : dryrun->observations)
                configs.insert(o.config);
            if (configs.size() < 2) {
                throw UsageError(
                    fmt::format("--cross-validate needs observations of at least two configs in {}",
                                dryrun_path));
            }
            for (const auto& held_out : configs) {
                DryRunSet training = *dryrun;
                std::erase_if(training.observations,
                              [&](const Observation& o) { return o.config == held_out; });
                std::vector<std::size_t> which;
                for (std::size_t i = 0; i < dryrun->observations.size(); ++i) {
                    if (dryrun->observations[i].config == held_out)
                        which.push_back(i);
                }
                MemoryModel fold =
                    open_model_spec(candidates, requests[m].spec, requests[m].options);
                try {
                    fit_model(fold, training, dryrun_path);
                } catch (const ModelError& e) {
                    if (!e.is_input_error())
                        throw;
                    for (const std::size_t i : which) {
                        comparison.placements[i].predictions[m].error =
                            fmt::format("fitted without config '{}': {}", held_out, e.what());
                    }
                    continue;
                }
                predict_each(fold, comparison.placements, which, m);
            }
            // Plan stages, which no config holds out, come from the fit to everything.
            std::vector<std::size_t> plan(
                all.begin() + static_cast<std::ptrdiff_t>(dryrun->observations.size()), all.end());
            if (!plan.empty()) {
                fit_model(model, *dryrun, dryrun_path);
                predict_each(model, comparison.placements, plan, m);
            }
            described.source = fmt::format(
                "fitted to {} without the config of each placement (cross-validated)", dryrun_path);
        }
        comparison.models.push_back(std::move(described));
    }
    const std::string out =
        args.json ? to_pretty_json(comparison_document(comparison)) : render_comparison(comparison);
    write_stdout(out);
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
