// ppb predict: fit the selected model, then predict the peak memory of one stage placement.
#include "commands.hpp"
#include "plugin_session.hpp"
#include "text_table.hpp"

#include <ppb/in_flight_profile.hpp>
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/partition/prediction_request.hpp>
#include <ppb/profile_prediction.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/json/object.hpp>

#include <algorithm>
#include <memory>
#include <optional>

namespace ppb::cli {
namespace {

struct PredictArgs {
    std::string file;
    ModelChoice choice;
    DryRunReadOptions read;
    bool json = false;
    std::uint32_t stage = 0;
    std::vector<std::string> layers;  // KIND=N
    std::vector<std::string> chunks;  // per chunk "KIND=N,KIND=N"
    std::string schedule;
    std::optional<std::uint32_t> stages;
    std::optional<std::uint32_t> micro_batches;
    std::optional<std::uint32_t> in_flight;
};

// "none=4,full=1" -> its items.
std::vector<std::string> split_items(const std::string& text) {
    std::vector<std::string> items;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        items.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return items;
}

// "moe.full=2" -> the group ("moe") and the rest ("full=2"); an item without a group (no '.'
// before the '=') has none. The group is what precedes the last '.', so that names may hold dots.
struct GroupItem {
    std::string group;
    std::string kind_item;
};
std::optional<GroupItem> split_group(const std::string& item) {
    const std::size_t eq = item.find('=');
    const std::size_t dot = item.rfind('.', eq);
    if (dot == std::string::npos || (eq != std::string::npos && dot > eq))
        return std::nullopt;
    return GroupItem{item.substr(0, dot), item.substr(dot + 1)};
}

// --layers' and --chunk's items: KIND=N, or GROUP.KIND=N for a model of several groups.
CLI::Validator layer_item() {
    return CLI::Validator(
        [](std::string& item) -> std::string {
            if (const auto grouped = split_group(item)) {
                if (grouped->group.empty())
                    return fmt::format("expected GROUP.KIND=N, got '{}' (no group)", item);
                std::string kind_item = grouped->kind_item;
                return kind_count()(kind_item);
            }
            return kind_count()(item);
        },
        "", "[GROUP.]KIND=N");
}

// Every chunk's layers per group (chunk by chunk, group by group, kind by kind: as
// StagePlacement::group_layers) from GROUP.KIND=N items, `groups` the model's groups.
std::vector<std::uint32_t> group_layers_from_items(
    const std::vector<std::vector<std::string>>& chunk_items,
    const std::vector<std::string>& groups, std::string_view option) {
    std::vector<std::uint32_t> counts(chunk_items.size() * groups.size() * PPB_KIND_COUNT, 0);
    const std::vector<std::string_view> names(groups.begin(), groups.end());
    for (std::size_t c = 0; c < chunk_items.size(); ++c) {
        std::vector<std::vector<std::string>> per_group(groups.size());
        for (const std::string& item : chunk_items[c]) {
            const auto grouped = split_group(item);
            if (!grouped) {
                throw UsageError(fmt::format(
                    "{}: '{}' does not say its group, but the memory model distinguishes {} "
                    "groups of body layers ({}): give GROUP.KIND=N, e.g. {}.{}",
                    option, item, groups.size(), fmt::join(groups, ", "), groups.back(), item));
            }
            const auto it = std::find(names.begin(), names.end(), grouped->group);
            if (it == names.end()) {
                const auto guess = closest_name(grouped->group, names);
                throw UsageError(
                    fmt::format("{}: unknown group '{}' in '{}' ({}the model's groups "
                                "are: {})",
                                option, grouped->group, item,
                                guess ? fmt::format("did you mean '{}'? ", *guess) : std::string(),
                                fmt::join(groups, ", ")));
            }
            per_group[static_cast<std::size_t>(it - names.begin())].push_back(grouped->kind_item);
        }
        for (std::size_t g = 0; g < groups.size(); ++g) {
            const ppb_chunk chunk =
                chunk_from_items(per_group[g], fmt::format("{} (group '{}')", option, groups[g]));
            std::copy(std::begin(chunk.layers), std::end(chunk.layers),
                      counts.begin() +
                          static_cast<std::ptrdiff_t>((c * groups.size() + g) * PPB_KIND_COUNT));
        }
    }
    return counts;
}

// "2 none, 1 full" of a {kind: n} object.
std::string kinds_text(const boost::json::object& layers) {
    std::string list;
    for (const auto& [kind, n] : layers)
        list +=
            fmt::format("{}{} {}", list.empty() ? "" : ", ", n.to_number<std::uint64_t>(), kind);
    return list;
}

// Chunk c's layers for people: "2 none, 1 full"; counted per group, "dense: 1 none; moe: 2 full".
std::string chunk_text(const partition::StagePrediction& prediction, std::size_t c) {
    const boost::json::object layers = partition::chunk_layers_object(prediction, c);
    std::string list;
    if (!prediction.placement.grouped()) {
        list = kinds_text(layers);
    } else {
        for (const auto& [group, kinds] : layers)
            list += fmt::format("{}{}: {}", list.empty() ? "" : "; ", std::string_view(group),
                                kinds_text(kinds.as_object()));
    }
    return list.empty() ? std::string("none") : list;
}

std::string render_prediction(const partition::StagePrediction& prediction,
                              std::string_view source) {
    const StagePlacement& placement = prediction.placement;
    const auto v = placement.chunks.size();
    std::string held;
    for (std::size_t c = 0; c < v; ++c) {
        held += v == 1 ? fmt::format("{} body layers ({}), {} micro-batches in flight",
                                     placement.total_layers(), chunk_text(prediction, c),
                                     placement.chunks[c].in_flight)
                       : fmt::format("{}chunk {}: {} ({} in flight)", c == 0 ? "" : "; ", c,
                                     chunk_text(prediction, c), placement.chunks[c].in_flight);
    }
    const auto& reserved = prediction.reserved;
    const auto& std_error = prediction.std_error_mb;
    std::string out = fmt::format(
        "Stage {} of {}{} with {}:\n"
        "  predicted peak {}memory {}{}  (model {} {}, {})\n",
        placement.stage, placement.num_stages,
        v == 1 ? "" : fmt::format(" ({})", schedule_name(placement.schedule)), held,
        reserved ? "allocated " : "", format_mb(prediction.memory_mb),
        std_error ? fmt::format(" ± {} (one standard error)", format_mb(*std_error)) : "",
        prediction.model_name, prediction.model_version, source);
    if (reserved) {
        out += fmt::format(
            "  predicted peak reserved memory {}{}  ({})\n", format_mb(reserved->memory_mb),
            reserved->std_error_mb
                ? fmt::format(" ± {} (one standard error)", format_mb(*reserved->std_error_mb))
                : "",
            describe_reserve(reserved->reserve));
    }
    const auto& profile = prediction.profile;
    if (profile.size() > 1) {
        std::string vectors;
        for (std::size_t j = 0; j < profile.size(); ++j)
            vectors += fmt::format("{}({})", j == 0 ? "" : ", ", fmt::join(profile[j], ", "));
        out += fmt::format("  at the peak in flight: ({}) of the schedule's in-flight profile {}\n",
                           fmt::join(profile[prediction.active], ", "), vectors);
    }
    return out;
}

int run_predict(const PredictArgs& args) {
    if (args.layers.empty() == args.chunks.empty())
        throw UsageError(
            "give the stage's layers: --layers for one chunk, or --chunk once per "
            "chunk (not both)");
    const std::string_view option = args.layers.empty() ? "--chunk" : "--layers";
    std::vector<std::vector<std::string>> chunk_items;
    if (!args.layers.empty()) {
        chunk_items.push_back(args.layers);
    } else {
        for (const std::string& text : args.chunks)
            chunk_items.push_back(split_items(text));
    }
    // Layers counted per group (GROUP.KIND=N) are resolved once the model says its groups.
    bool any_grouped = false;
    for (const auto& items : chunk_items) {
        for (const std::string& item : items)
            any_grouped = any_grouped || split_group(item).has_value();
    }
    std::vector<ppb_chunk> chunks;
    for (const auto& items : chunk_items)
        chunks.push_back(any_grouped ? ppb_chunk{} : chunk_from_items(items, option));
    const std::optional<DryRunSet> dryrun = read_optional_dryrun(args.file, args.read);
    // The pipeline around the stage: what is not given comes from the dry run (the library's
    // rule, Python's too).
    partition::PredictionRequest request;
    request.stage = args.stage;
    request.chunks = static_cast<std::uint32_t>(chunks.size());
    request.num_stages = args.stages;
    request.micro_batches = args.micro_batches;
    if (!args.schedule.empty())
        request.schedule = args.schedule;
    request.in_flight = args.in_flight;
    const partition::PredictedPipeline pipeline = partition::pipeline_of(
        request, dryrun ? &*dryrun : nullptr, args.file, [](std::string_view field) {
            return field == "num_stages" ? std::string("--stages") : partition::flag_name(field);
        });
    PreparedModel prepared =
        prepare_selected_model(args.choice, dryrun, args.file, "a dry-run FILE");
    StagePlacement placement{pipeline.num_stages, pipeline.stage, chunks, pipeline.schedule};
    const std::vector<std::string> groups = prepared.model.groups();
    if (any_grouped || groups.size() > 1)
        placement.set_group_layers(group_layers_from_items(chunk_items, groups, option));
    const partition::StagePrediction prediction =
        partition::predict_stage(prepared.model, std::move(placement), pipeline, prepared.reserve);
    if (args.json) {
        write_stdout(to_pretty_json(partition::prediction_document(prediction)));
        return 0;
    }
    write_stdout(render_prediction(prediction, prepared.source));
    return 0;
}

}  // namespace

void add_predict_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<PredictArgs>();
    CLI::App* predict = add_command(
        app, "predict", "fit, then predict the peak memory of one stage placement",
        "Fits a memory model to the dry-run observations in FILE, then predicts the peak memory\n"
        "of stage S holding the given body layers. The in-flight micro-batch count is the 1F1B\n"
        "one, min(P - S, M), unless --in-flight is given; with --chunk (once per chunk) the\n"
        "peak is the largest prediction over the schedule's in-flight profile (every vector of\n"
        "per-chunk counts that can hold it). A model configured by its options needs no FILE."
        "\n\n"
        "Exit status: 0 predicted, 2 invalid input or usage (also when the observations do not\n"
        "determine this prediction), 3 plugin not found or failed, 1 other errors.");
    add_dryrun_file_argument(*predict, args->file);
    predict->add_option("--stage", args->stage, "the stage, 0 .. P-1")
        ->type_name("S")
        ->required()
        ->check(count_in({0, limits::stages.max - 1, ""}));
    as_comma_list(predict->add_option("--layers", args->layers,
                                      "body layers per recompute kind (none, select, comm,\n"
                                      "both, full), e.g. none=4,full=1; for a model of several\n"
                                      "groups of layers (a ppb.dryrun/3 FILE), GROUP.KIND=N,\n"
                                      "e.g. dense.none=1,moe.none=2,moe.full=1"))
        ->type_name("[GROUP.]KIND=N,...")
        ->check(layer_item());
    predict
        ->add_option("--chunk", args->chunks,
                     "instead of --layers, once per chunk in chunk order: that chunk's\n"
                     "layers, e.g. --chunk none=3 --chunk full=2 (in-flight counts from\n"
                     "--schedule); per group as for --layers, --chunk moe.full=2")
        ->type_name("[GROUP.]KIND=N,...");
    predict
        ->add_option("--schedule", args->schedule,
                     "schedule of the chunks (default: the file's, for as many chunks)")
        ->type_name("NAME")
        ->check(schedule_choice());
    predict
        ->add_option("--stages", args->stages, "pipeline degree (default: the file's num_stages)")
        ->type_name("P")
        ->check(count_in(limits::stages));
    predict
        ->add_option("--micro-batches", args->micro_batches,
                     "micro-batches per iteration (default: the file's micro_batches)")
        ->type_name("M")
        ->check(count_in(limits::micro_batches));
    predict
        ->add_option("--in-flight", args->in_flight,
                     "micro-batches in flight at the stage's peak (overrides P, M)")
        ->type_name("F")
        ->check(count_in(limits::in_flight));
    add_model_options(*predict, args->choice);
    add_duplicate_tolerance_option(*predict, args->read);
    predict->add_flag("--json", args->json, "print ppb.prediction/1 JSON instead of text");
    commands.push_back({predict, [args] { return run_predict(*args); }, {}});
}

}  // namespace ppb::cli
