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

int run_predict(const PredictArgs& args) {
    if (args.layers.empty() == args.chunks.empty())
        throw UsageError(
            "give the stage's layers: --layers for one chunk, or --chunk once per "
            "chunk (not both)");
    std::vector<ppb_chunk> chunks;
    if (!args.layers.empty()) {
        chunks.push_back(chunk_from_items(args.layers, "--layers"));
    } else {
        for (const std::string& text : args.chunks)
            chunks.push_back(chunk_from_items(split_items(text), "--chunk"));
    }
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
    // The schedule: given, else the dry-run file's when it has as many chunks, else 1F1B.
    Schedule schedule = Schedule::one_f_one_b;
    if (!args.schedule.empty())
        schedule = *schedule_from_name(args.schedule);  // checked by CLI11
    else if (dryrun && dryrun->num_chunks == chunks.size())
        schedule = dryrun->schedule;
    else if (chunks.size() == 2)
        throw UsageError(
            "--chunk twice: give --schedule (interleaved, interleaved-less-memory "
            "or dualpipe-v)");
    else if (chunks.size() > 2)
        schedule = Schedule::interleaved;
    const auto v = static_cast<std::uint32_t>(chunks.size());
    if (args.in_flight) {
        if (v != 1)
            throw UsageError(
                "--in-flight is for one chunk; with --chunk the schedule's counts "
                "are used");
        chunks.front().in_flight = *args.in_flight;
    } else {
        std::vector<std::uint32_t> counts;
        try {
            counts = in_flight_counts(schedule, stages, stage, micro_batches, v);
        } catch (const std::exception& e) {
            throw UsageError(fmt::format("--schedule {}: {}", schedule_name(schedule), e.what()));
        }
        for (std::uint32_t c = 0; c < v; ++c)
            chunks[c].in_flight = counts[c];
    }
    const ppb_chunk& chunk = chunks.front();

    const PreparedModel prepared =
        prepare_selected_model(args.choice, dryrun, args.file, "a dry-run FILE");
    const MemoryModel& model = prepared.model;
    const StagePlacement placement{stages, stage, chunks, schedule};
    const double memory = model.predict(placement.view());
    // From the fit's residuals (API 1.2); models without an uncertainty estimate give none.
    const std::optional<double> std_error = model.predict_std_error(placement.view());

    const auto describe = [](const ppb_chunk& c, boost::json::object& layers) {
        std::string list;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (c.layers[k] == 0)
                continue;
            layers[kind_names[k]] = c.layers[k];
            list += fmt::format("{}{} {}", list.empty() ? "" : ", ", c.layers[k], kind_names[k]);
        }
        return list.empty() ? std::string("none") : list;
    };
    std::string out;
    if (args.json) {
        boost::json::object doc;
        doc["format"] = "ppb.prediction/1";
        doc["model"] = boost::json::object{{"name", model.name()}, {"version", model.version()}};
        boost::json::object layers;
        (void)describe(chunk, layers);
        boost::json::object where{{"num_stages", stages},
                                  {"stage", stage},
                                  {"layers", std::move(layers)},
                                  {"in_flight", chunk.in_flight}};
        if (v > 1) {
            // With chunks: the schedule and every chunk; "layers" and "in_flight" are chunk 0's.
            where["schedule"] = schedule_name(schedule);
            boost::json::array list;
            for (const ppb_chunk& c : chunks) {
                boost::json::object l;
                (void)describe(c, l);
                list.push_back(
                    boost::json::object{{"layers", std::move(l)}, {"in_flight", c.in_flight}});
            }
            where["chunks"] = std::move(list);
        }
        doc["placement"] = std::move(where);
        doc["peak_memory_mb"] = memory;
        doc["std_error_mb"] =
            std_error ? boost::json::value(*std_error) : boost::json::value(nullptr);
        out = to_pretty_json(doc);
    } else {
        std::string held;
        for (std::uint32_t c = 0; c < v; ++c) {
            boost::json::object unused;
            held += v == 1 ? fmt::format("{} body layers ({}), {} micro-batches in flight",
                                         placement.total_layers(), describe(chunks[c], unused),
                                         chunks[c].in_flight)
                           : fmt::format("{}chunk {}: {} ({} in flight)", c == 0 ? "" : "; ", c,
                                         describe(chunks[c], unused), chunks[c].in_flight);
        }
        out = fmt::format(
            "Stage {} of {}{} with {}:\n"
            "  predicted peak memory {}{}  (model {} {}, {})\n",
            stage, stages, v == 1 ? "" : fmt::format(" ({})", schedule_name(schedule)), held,
            format_mb(memory),
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
        "one, min(P - S, M), unless --in-flight is given; with --chunk (once per chunk) each\n"
        "chunk's is the schedule's. A model configured by its options needs no FILE."
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
        ->check(kind_count());
    predict
        ->add_option("--chunk", args->chunks,
                     "instead of --layers, once per chunk in chunk order: that chunk's\n"
                     "layers, e.g. --chunk none=3 --chunk full=2 (in-flight counts from\n"
                     "--schedule)")
        ->type_name("KIND=N,...");
    predict
        ->add_option("--schedule", args->schedule,
                     "schedule of the chunks (default: the file's, for as many chunks)")
        ->type_name("NAME")
        ->check(CLI::IsMember({"1f1b", "interleaved", "interleaved-less-memory", "dualpipe-v"}));
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
