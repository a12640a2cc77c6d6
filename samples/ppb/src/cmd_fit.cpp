// ppb fit: fit the selected memory model to a dry-run file and print its parameters.
#include "commands.hpp"
#include "fit_table.hpp"
#include "plugin_session.hpp"

#include <ppb/json_output.hpp>
#include <ppb/partition/sapp_export.hpp>

#include <fmt/format.h>

#include <filesystem>
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
    bool fold_negative_constant = false;
};

int run_fit(const FitArgs& args) {
    if (args.export_sapp == "-")
        throw UsageError("--export-sapp: give a file name (stdout carries the fit)");
    const DryRunSet dryrun = read_dryrun_file(args.file, args.read);
    if (!args.export_sapp.empty() && dryrun.groups.size() > 1) {
        // One BODY entry per group would need each group's layer count in the model and where
        // its layers sit among the others, which a dry-run file does not say: refused rather
        // than guessed.
        throw UsageError(fmt::format(
            "--export-sapp: {} counts layers in {} groups ({}); a SAPP layer file would need one "
            "BODY entry per group with its number of layers (nb_layer) and their order in the "
            "model, which a dry-run file does not give: write the layer file by hand from the "
            "per-group coefficients of 'ppb fit --json'",
            args.file, dryrun.groups.size(), fmt::join(dryrun.groups, ", ")));
    }
    const FittedModel fitted = fit_selected_model(args.choice, dryrun, args.file);
    if (!args.export_sapp.empty()) {
        partition::SappExportOptions options;
        if (!args.model_desc.empty())
            options.layer_template = args.model_desc;
        options.name = std::filesystem::path(args.file).stem().string();
        if (options.name.empty() || args.file == "-")
            options.name = "model";
        options.fold_negative_constant = args.fold_negative_constant;
        const auto layers = partition::sapp_layer_file(fitted.document, dryrun, options);
        for (const std::string& warning : layers.warnings)
            fmt::print(stderr, "ppb: warning: {}\n", warning);
        write_output_file(args.export_sapp, sapp::write_layer_file(layers));
        fmt::print(stderr,
                   "ppb: wrote the fit as a SAPP layer file to {} (stage_const_mem is the "
                   "per-stage constant, which SAPP adds to every stage)\n",
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
        "Fits a memory model to the dry-run observations in FILE (format ppb.dryrun/1, /2 or /3)\n"
        "and prints the fitted parameters in MB, with what the data cannot determine and why.\n"
        "A ppb.dryrun/3 FILE counts layers per group (dense and MoE layers): the model is fitted\n"
        "with each group's own per-layer and activation coefficients (plugin API 1.3)."
        "\n\n"
        "Exit status: 0 fitted (also when some parameters are not identifiable), 2 invalid input\n"
        "or usage, 3 plugin not found or failed, 1 other errors.");
    add_dryrun_file_argument(*fit, args->file)->required();
    add_model_options(*fit, args->choice);
    add_duplicate_tolerance_option(*fit, args->read);
    fit->add_flag("--json", args->json, "print the fit as ppb.fit/1 JSON instead of a table");
    auto* export_sapp = fit->add_option("--export-sapp", args->export_sapp,
                                        "also write the fit as a SAPP layer file (memory fields\n"
                                        "from the coefficients, stage_const_mem = const_mb)")
                            ->type_name("FILE");
    fit->add_option("--model-desc", args->model_desc,
                    "your SAPP layer file, whose entries, names and times the export\n"
                    "keeps (otherwise head/body/tail, without times)")
        ->type_name("LAYERS")
        ->check(CLI::ExistingFile)
        ->needs(export_sapp);
    fit->add_flag("--sapp-fold-negative-constant", args->fold_negative_constant,
                  "with --export-sapp: write a negative fitted const_mb as stage_const_mem = 0\n"
                  "(every stage predicted |const_mb| MB higher: conservative)")
        ->needs(export_sapp);
    commands.push_back({fit, [args] { return run_fit(*args); }, {}});
}

}  // namespace ppb::cli
