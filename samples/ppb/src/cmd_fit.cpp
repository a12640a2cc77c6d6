// ppb fit: fit the selected memory model to a dry-run file and print its parameters.
#include "commands.hpp"
#include "fit_table.hpp"
#include "plugin_session.hpp"
#include "sapp_export.hpp"

#include <ppb/json_output.hpp>

#include <fmt/format.h>

#include <memory>
#include <optional>

namespace ppb::cli {
namespace {

struct FitArgs {
    std::string file;
    ModelChoice choice;
    DryRunReadOptions read;
    bool json = false;
    std::string export_sapp;
    std::string model_desc;
};

int run_fit(const FitArgs& args) {
    if (args.export_sapp == "-")
        throw UsageError("--export-sapp: give a file name (stdout carries the fit)");
    const DryRunSet dryrun = read_dryrun_file(args.file, args.read);
    const FittedModel fitted = fit_selected_model(args.choice, dryrun, args.file);
    if (!args.export_sapp.empty()) {
        const auto desc =
            args.model_desc.empty() ? std::nullopt : std::optional<std::string>(args.model_desc);
        const auto layers = sapp_layer_file(fitted.document, dryrun, desc);
        write_output_file(args.export_sapp, sapp::write_layer_file(layers));
        fmt::print(stderr,
                   "ppb: wrote the fit as a SAPP layer file to {} (its constant_memory_mb is the "
                   "per-stage constant, which SAPP takes as a separate setting)\n",
                   args.export_sapp);
    }
    const std::string out =
        args.json ? to_pretty_json(fitted.document)
                  : render_fit(fitted.document, args.file, dryrun.observations.size());
    write_stdout(out);
    return 0;
}

}  // namespace

void add_fit_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<FitArgs>();
    CLI::App* fit = add_command(
        app, "fit", "fit a memory model to a dry-run file and print its parameters (MB)",
        "Fits a memory model to the dry-run observations in FILE (format ppb.dryrun/1) and prints\n"
        "the fitted parameters in MB, with what the data cannot determine and why."
        "\n\n"
        "Exit status: 0 fitted (also when some parameters are not identifiable), 2 invalid input\n"
        "or usage, 3 plugin not found or failed, 1 other errors.");
    add_dryrun_file_argument(*fit, args->file)->required();
    add_model_options(*fit, args->choice);
    add_duplicate_tolerance_option(*fit, args->read);
    fit->add_flag("--json", args->json, "print the fit as ppb.fit/1 JSON instead of a table");
    auto* export_sapp = fit->add_option("--export-sapp", args->export_sapp,
                                        "also write the fit as a SAPP layer file (memory fields\n"
                                        "from the coefficients, constant_memory_mb = const_mb)")
                            ->type_name("FILE");
    fit->add_option("--model-desc", args->model_desc,
                    "your SAPP layer file, whose entries, names and times the export\n"
                    "keeps (otherwise head/body/tail, without times)")
        ->type_name("LAYERS")
        ->check(CLI::ExistingFile)
        ->needs(export_sapp);
    commands.push_back({fit, [args] { return run_fit(*args); }, {}});
}

}  // namespace ppb::cli
