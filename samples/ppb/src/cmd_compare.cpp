// ppb compare: for a set of placements, each selected model's prediction beside the measured
// memory where one exists, with the error in MB and %: how a user decides which model to trust.
#include "commands.hpp"
#include "compare_output.hpp"
#include "plugin_session.hpp"

#include <ppb/in_flight_profile.hpp>
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/profile_prediction.hpp>
#include <ppb/semver.hpp>

#include <fmt/format.h>

#include <algorithm>
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
    std::string measured;  // a dry run of the plan: the measurements of its stages
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

// The stages of a ppb.partition/1 document as placements.
std::vector<ComparedPlacement> read_partition(const std::string& path) {
    const std::string source = source_name(path);
    const auto document = parse_json(read_text_file(path), source);
    const JsonObject top(JsonNode(document, source));
    const auto format = top.required("format");
    if (format.as_string() != "ppb.partition/1") {
        format.fail("expected \"ppb.partition/1\" (the output of 'ppb partition --json')");
    }
    const std::uint32_t stages = top.required("num_stages").as_uint32(1);
    // A plan with chunks (ppb partition --schedule) gives each chunk's layers and in-flight
    // count; its schedule says which stage holds the model's ends (StagePlacement::schedule).
    Schedule schedule = Schedule::one_f_one_b;
    if (auto name = top.optional("schedule")) {
        const auto known = schedule_from_name(name->as_string());
        if (!known)
            name->fail("unknown schedule (1f1b, interleaved, interleaved-less-memory, dualpipe-v)");
        schedule = *known;
    }
    const auto read_chunk = [](const JsonObject& object) {
        ppb_chunk chunk{};
        for (const auto& [kind, count] : JsonObject(object.required("layers")).members()) {
            const auto k = kind_from_name(kind);
            if (!k)
                count.fail("unknown recompute kind");
            chunk.layers[*k] = count.as_uint32();
        }
        // 0 where the plan put a chunked stage's peak at a moment the chunk holds none.
        chunk.in_flight = object.required("in_flight").as_uint32(0);
        return chunk;
    };
    // With several groups of body layers, the plan's groups (in model order) and each stage's
    // layers per group.
    std::vector<std::string> groups;
    if (auto list = top.optional("groups")) {
        for (const auto& group : JsonArray(*list).elements())
            groups.emplace_back(JsonObject(group).required("name").as_string());
    }
    std::vector<ComparedPlacement> out;
    for (const auto& node : JsonArray(top.required("stages")).elements()) {
        const JsonObject stage(node);
        std::vector<ppb_chunk> chunks;
        if (auto list = stage.optional("chunks")) {
            for (const auto& chunk : JsonArray(*list).elements())
                chunks.push_back(read_chunk(JsonObject(chunk)));
            if (chunks.empty())
                list->fail("a stage has at least one chunk");
        } else {
            chunks.push_back(read_chunk(stage));
        }
        const std::uint32_t s = stage.required("stage").as_uint32();
        if (s >= stages)
            stage.required("stage").fail("not a stage of this pipeline");
        StagePlacement placement{stages, s, std::move(chunks), schedule};
        if (!groups.empty()) {
            if (placement.chunks.size() != 1)
                stage.required("chunks").fail("a plan of several groups has one chunk per stage");
            const auto per_group = stage.required("groups");
            std::vector<std::uint32_t> counts(groups.size() * PPB_KIND_COUNT, 0);
            for (const auto& [name, kinds] : JsonObject(per_group).members()) {
                const auto g = std::find(groups.begin(), groups.end(), name);
                if (g == groups.end())
                    kinds.fail("not one of the plan's groups");
                for (const auto& [kind, count] : JsonObject(kinds).members()) {
                    const auto k = kind_from_name(kind);
                    if (!k)
                        count.fail("unknown recompute kind");
                    counts[static_cast<std::size_t>(g - groups.begin()) * PPB_KIND_COUNT + *k] =
                        count.as_uint32();
                }
            }
            const ppb_chunk totals = placement.chunks.front();
            placement.set_group_layers(std::move(counts));
            if (!std::equal(std::begin(totals.layers), std::end(totals.layers),
                            std::begin(placement.chunks.front().layers))) {
                per_group.fail("the groups' layers do not add up to the stage's layers");
            }
        }
        // A chunked stage's peak is the largest row of its schedule's profile (the plan's
        // in_flight are those of the vector where the planning model put the peak).
        std::vector<InFlightVector> profile;
        if (placement.chunks.size() > 1) {
            const JsonNode m = top.required("micro_batches");
            try {
                profile = in_flight_profile(schedule, stages, s, m.as_uint32(1),
                                            static_cast<std::uint32_t>(placement.chunks.size()));
            } catch (const std::invalid_argument& e) {
                m.fail(e.what());
            }
        }
        out.push_back(ComparedPlacement{
            "plan", std::move(placement), std::nullopt, {}, groups, std::move(profile)});
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

// Each plan stage's measurement from `path` (a dry run of the plan, ppb import's output): the
// observation of the same placement. A stage the file does not hold is said on stderr.
void attach_measurements(std::vector<ComparedPlacement>& plan, const std::string& path,
                         const DryRunReadOptions& read) {
    const DryRunSet measured = read_dryrun_file(path, read);
    for (ComparedPlacement& p : plan) {
        const auto found = std::find_if(
            measured.observations.begin(), measured.observations.end(),
            [&](const Observation& o) { return same_placement(o.placement, p.placement); });
        if (found == measured.observations.end()) {
            fmt::print(stderr,
                       "ppb: note: {} holds no observation of the plan's stage {} (the same "
                       "layers, kinds and in-flight counts): it has no measurement\n",
                       path, p.placement.stage);
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
    if (!args.partition.empty()) {
        std::vector<ComparedPlacement> plan = read_partition(args.partition);
        if (!args.measured.empty())
            attach_measurements(plan, args.measured, args.read);
        for (auto& p : plan)
            comparison.placements.push_back(std::move(p));
        sources.push_back(args.partition);
        if (!args.measured.empty())
            sources.push_back(args.measured);
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
                     "a dry run of the plan (ppb import's output): each plan stage's\n"
                     "measured peak beside its predictions, from the observation of the\n"
                     "same placement")
        ->type_name("FILE");
    compare->add_flag("--cross-validate", args->cross_validate,
                      "fitted models predict each config of FILE from a fit to the\n"
                      "other configs only (an honest error for unseen dry runs)");
    add_duplicate_tolerance_option(*compare, args->read);
    add_plugin_path_option(*compare, args->plugin_paths);
    compare->add_flag("--json", args->json, "print ppb.compare/1 JSON instead of tables");
    commands.push_back({compare, [args] { return run_compare(*args); }, {}});
}

}  // namespace ppb::cli
