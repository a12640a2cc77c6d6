// The importers' shared options and output (import_common.hpp).
#include "import_common.hpp"

#include "plugin_session.hpp"

#include <ppb/json_input.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <utility>

namespace ppb::cli {
namespace {

namespace imp = ppb::importers;

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

}  // namespace

namespace imp = ppb::importers;

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

void add_inputs(CLI::App& app, CommonArgs& args, const std::string& name, const std::string& help) {
    app.add_option(name, args.logs, help)->required();
}

void add_output_and_ranks(CLI::App& app, CommonArgs& args, const std::string& rank_help) {
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

imp::ImportedDryRun imported_run(const imp::PipelineLayout& layout, std::string label) {
    imp::ImportedDryRun run;
    run.num_stages = layout.num_stages;
    run.micro_batches = layout.micro_batches;
    run.schedule = layout.schedule;
    run.num_chunks = layout.num_chunks;
    run.groups = layout.groups;
    run.label = std::move(label);
    return run;
}

int finish(const CommonArgs& destination, const imp::PipelineLayout& layout,
           std::vector<imp::StageObservation> observations, std::string comment,
           std::size_t file_count, imp::Messages& messages, std::string_view what) {
    imp::ImportedDryRun run = imported_run(layout, destination.label);
    run.comment = std::move(comment);
    run.observations = std::move(observations);

    const std::string where = write_runs(destination, {run}, messages);
    std::vector<std::uint32_t> stages;
    for (const auto& o : run.observations)
        stages.push_back(o.stage);
    print_messages(messages);
    fmt::print(stderr,
               "ppb: imported {} observation{} (config '{}', stage{} {} of {}) from {} {}{} to "
               "{}\n",
               run.observations.size(), run.observations.size() == 1 ? "" : "s", run.label,
               stages.size() == 1 ? "" : "s", imp::describe_numbers(stages), layout.num_stages,
               file_count, what, file_count == 1 ? "" : "s", where);
    return 0;
}

std::vector<imp::RankAssignment> rank_assignments(const CommonArgs& args) {
    std::vector<imp::RankAssignment> assignments;
    for (const std::string& text : args.ranks)
        assignments.push_back(imp::parse_rank_assignment(text));
    return assignments;
}

}  // namespace ppb::cli
