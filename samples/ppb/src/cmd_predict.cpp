// ppb predict: fit the selected model, then predict the peak memory of one stage placement.
#include "commands.hpp"
#include "plugin_session.hpp"
#include "text_table.hpp"

#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>
#include <boost/json/object.hpp>

#include <iterator>
#include <optional>

namespace ppb::cli {
namespace {

constexpr std::string_view usage =
    R"(Usage: ppb predict FILE --stage S --layers KIND=N[,KIND=N...] [options]

Fits a memory model to the dry-run observations in FILE, then predicts the peak memory of
stage S holding the given body layers. KIND is one of none, select, comm, both, full.
The in-flight micro-batch count is the 1F1B one, min(P - S, M), unless --in-flight is given.

Options:
  --stage S                    the stage, 0 .. P-1 (required)
  --layers KIND=N,...          body layers per recompute kind, e.g. none=4,full=1 (required)
  --stages P                   pipeline degree (default: the file's num_stages)
  --micro-batches M            micro-batches per iteration (default: the file's micro_batches)
  --in-flight F                micro-batches in flight at the stage's peak (overrides P, M)
  --model NAME[@VERSION]       memory model plugin (default dryrun-lsq)
  --model-options JSON|FILE    options for the model
  --duplicate-tolerance X      see 'ppb fit --help'
  --plugin-path DIR            search DIR for plugins first (repeatable)
  --json                       print ppb.prediction/1 JSON instead of text
  -h, --help                   show this help

Exit status: 0 predicted, 2 invalid input or usage (also when the observations do not
determine this prediction), 3 plugin not found or failed, 1 other errors.
)";

// "none=4,full=1" -> layer counts per kind.
ppb_chunk parse_layers(const std::string& text) {
    ppb_chunk chunk{};
    bool seen[PPB_KIND_COUNT] = {};
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string item =
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos) {
            throw UsageError(fmt::format("--layers: expected KIND=N, got '{}'", item));
        }
        const std::string kind_text = item.substr(0, eq);
        const auto kind = kind_from_name(kind_text);
        if (!kind) {
            throw UsageError(fmt::format(
                "--layers: unknown recompute kind '{}' (expected none, select, comm, both or full)",
                kind_text));
        }
        if (seen[*kind])
            throw UsageError(fmt::format("--layers: kind '{}' is given twice", kind_text));
        seen[*kind] = true;
        chunk.layers[*kind] =
            parse_uint(item.substr(eq + 1), fmt::format("--layers {}", kind_text));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return chunk;
}

}  // namespace

int run_predict(std::span<const std::string> words) {
    std::vector<OptionSpec> specs(std::begin(plugin_option_specs), std::end(plugin_option_specs));
    specs.insert(specs.end(), {{"json"},
                               {"help"},
                               {"duplicate-tolerance", true},
                               {"stage", true},
                               {"stages", true},
                               {"micro-batches", true},
                               {"in-flight", true},
                               {"layers", true}});
    const Args args(words, specs);
    if (args.flag("help")) {
        fmt::print("{}", usage);
        return 0;
    }
    // Check the whole command line before any work.
    const auto stage = args.uint_value("stage");
    if (!stage)
        throw UsageError("missing --stage S");
    const auto layers_text = args.value("layers");
    if (!layers_text)
        throw UsageError("missing --layers KIND=N[,KIND=N...]");
    ppb_chunk chunk = parse_layers(*layers_text);
    const auto stages_arg = args.uint_value("stages", 1);
    const auto micro_batches_arg = args.uint_value("micro-batches", 1);
    const auto in_flight_arg = args.uint_value("in-flight", 1);

    std::optional<DryRunSet> dryrun;
    std::string path;
    if (args.positional().size() > 1) {
        throw UsageError(
            fmt::format("unexpected argument '{}' (one dry-run FILE only)", args.positional()[1]));
    }
    if (!args.positional().empty()) {
        path = args.positional().front();
        dryrun = read_dryrun(args, path);
    }
    const std::uint32_t stages = stages_arg.value_or(dryrun ? dryrun->num_stages : 0);
    if (stages == 0) {
        throw UsageError(dryrun
                             ? fmt::format("{} has no top-level num_stages: give --stages P", path)
                             : std::string("missing --stages P"));
    }
    if (*stage >= stages) {
        throw UsageError(
            fmt::format("--stage {} is not a stage of a {}-stage pipeline (expected 0..{})", *stage,
                        stages, stages - 1));
    }
    const std::uint32_t micro_batches =
        micro_batches_arg.value_or(dryrun ? dryrun->micro_batches : 0);
    chunk.in_flight = in_flight_arg.value_or(
        in_flight_counts(Schedule::one_f_one_b, stages, *stage, micro_batches).front());

    const PreparedModel prepared = prepare_model(
        open_selected_model(args), dryrun ? &*dryrun : nullptr, path, "a dry-run FILE");
    const MemoryModel& model = prepared.model;
    const StagePlacement placement{stages, *stage, {chunk}};
    const double memory = model.predict(placement.view());
    // From the fit's residuals (API 1.2); models without an uncertainty estimate give none.
    const std::optional<double> std_error = model.predict_std_error(placement.view());

    std::string layer_list;
    boost::json::object layers;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (chunk.layers[k] == 0)
            continue;
        layers[kind_names[k]] = chunk.layers[k];
        layer_list +=
            fmt::format("{}{} {}", layer_list.empty() ? "" : ", ", chunk.layers[k], kind_names[k]);
    }
    std::string out;
    if (args.flag("json")) {
        boost::json::object doc;
        doc["format"] = "ppb.prediction/1";
        doc["model"] = boost::json::object{{"name", model.name()}, {"version", model.version()}};
        doc["placement"] = boost::json::object{{"num_stages", stages},
                                               {"stage", *stage},
                                               {"layers", std::move(layers)},
                                               {"in_flight", chunk.in_flight}};
        doc["peak_memory_mb"] = memory;
        doc["std_error_mb"] =
            std_error ? boost::json::value(*std_error) : boost::json::value(nullptr);
        out = to_pretty_json(doc);
    } else {
        out = fmt::format(
            "Stage {} of {} with {} body layers ({}), {} micro-batches in flight:\n"
            "  predicted peak memory {}{}  (model {} {}, {})\n",
            *stage, stages, placement.total_layers(), layer_list.empty() ? "none" : layer_list,
            chunk.in_flight, format_mb(memory),
            std_error ? fmt::format(" ± {} (one standard error)", format_mb(*std_error)) : "",
            model.name(), model.version(), prepared.source);
    }
    fmt::print("{}", out);
    return 0;
}

}  // namespace ppb::cli
