// ppb predict: fit the selected model, then predict the peak memory of one stage placement.
#include "commands.hpp"
#include "plugin_session.hpp"
#include "text_table.hpp"

#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>
#include <boost/json/object.hpp>

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
    std::optional<std::uint32_t> stages;
    std::optional<std::uint32_t> micro_batches;
    std::optional<std::uint32_t> in_flight;
};

int run_predict(const PredictArgs& args) {
    ppb_chunk chunk = chunk_from_items(args.layers, "--layers");
    const std::optional<DryRunSet> dryrun = read_optional_dryrun(args.file, args.read);
    const std::uint32_t stages = args.stages.value_or(dryrun ? dryrun->num_stages : 0);
    if (stages == 0) {
        throw UsageError(
            dryrun ? fmt::format("{} has no top-level num_stages: give --stages P", args.file)
                   : std::string("missing --stages P"));
    }
    const std::uint32_t stage = args.stage;
    if (stage >= stages) {
        throw UsageError(
            fmt::format("--stage {} is not a stage of a {}-stage pipeline (expected 0..{})", stage,
                        stages, stages - 1));
    }
    const std::uint32_t micro_batches =
        args.micro_batches.value_or(dryrun ? dryrun->micro_batches : 0);
    chunk.in_flight = args.in_flight.value_or(
        in_flight_counts(Schedule::one_f_one_b, stages, stage, micro_batches).front());

    const PreparedModel prepared =
        prepare_selected_model(args.choice, dryrun, args.file, "a dry-run FILE");
    const MemoryModel& model = prepared.model;
    const StagePlacement placement{stages, stage, {chunk}};
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
    if (args.json) {
        boost::json::object doc;
        doc["format"] = "ppb.prediction/1";
        doc["model"] = boost::json::object{{"name", model.name()}, {"version", model.version()}};
        doc["placement"] = boost::json::object{{"num_stages", stages},
                                               {"stage", stage},
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
            stage, stages, placement.total_layers(), layer_list.empty() ? "none" : layer_list,
            chunk.in_flight, format_mb(memory),
            std_error ? fmt::format(" ± {} (one standard error)", format_mb(*std_error)) : "",
            model.name(), model.version(), prepared.source);
    }
    write_stdout(out);
    return 0;
}

}  // namespace

void add_predict_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<PredictArgs>();
    CLI::App* predict = add_command(
        app, "predict", "fit, then predict the peak memory of one stage placement",
        "Fits a memory model to the dry-run observations in FILE, then predicts the peak memory\n"
        "of stage S holding the given body layers. The in-flight micro-batch count is the 1F1B\n"
        "one, min(P - S, M), unless --in-flight is given. A model configured by its options\n"
        "needs no FILE."
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
                                      "both, full), e.g. none=4,full=1"))
        ->type_name("KIND=N,...")
        ->required()
        ->check(kind_count());
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
