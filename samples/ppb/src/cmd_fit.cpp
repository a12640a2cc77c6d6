// ppb fit: fit the selected memory model to a dry-run file and print its parameters.
#include "commands.hpp"
#include "fit_table.hpp"
#include "plugin_session.hpp"
#include "sapp_export.hpp"

#include <ppb/json_output.hpp>

#include <fmt/format.h>

#include <array>
#include <iterator>

namespace ppb::cli {
namespace {

constexpr std::string_view usage =
    R"(Usage: ppb fit FILE [--model NAME[@VERSION]] [--json] [options]

Fits a memory model to the dry-run observations in FILE (format ppb.dryrun/1; '-' reads stdin)
and prints the fitted parameters in MB, with what the data cannot determine and why.

Options:
  --model NAME[@VERSION]       memory model plugin (default dryrun-lsq); @1, @1.4, @1.4.2 pin
  --model-options JSON|FILE    options for the model, a JSON object or a file holding one
  --duplicate-tolerance X      largest relative difference between two observations of the
                               same placement (default 0.01 = 1 %)
  --plugin-path DIR            search DIR for plugins first (repeatable)
  --json                       print the fit as ppb.fit/1 JSON instead of a table
  --export-sapp FILE           also write the fit as a SAPP layer file (memory fields from the
                               coefficients, constant_memory_mb = const_mb)
  --model-desc LAYERS          with --export-sapp: your SAPP layer file, whose entries, names
                               and times are kept (otherwise head/body/tail, without times)
  -h, --help                   show this help

Exit status: 0 fitted (also when some parameters are not identifiable), 2 invalid input or
usage, 3 plugin not found or failed, 1 other errors.
)";

}  // namespace

int run_fit(std::span<const std::string> words) {
    std::vector<OptionSpec> specs(std::begin(plugin_option_specs), std::end(plugin_option_specs));
    specs.insert(specs.end(), {{"json"},
                               {"help"},
                               {"duplicate-tolerance", true},
                               {"export-sapp", true},
                               {"model-desc", true}});
    const Args args(words, specs);
    if (args.flag("help")) {
        fmt::print("{}", usage);
        return 0;
    }
    std::string path;
    const DryRunSet dryrun = read_dryrun_argument(args, path);
    const auto export_path = args.value("export-sapp");
    if (args.value("model-desc") && !export_path) {
        throw UsageError("--model-desc goes with --export-sapp FILE");
    }
    if (export_path && *export_path == "-") {
        throw UsageError("--export-sapp: give a file name (stdout carries the fit)");
    }
    const FittedModel fitted = fit_selected_model(args, dryrun, path);
    if (export_path) {
        const auto layers = sapp_layer_file(fitted.document, dryrun, args.value("model-desc"));
        write_file_atomically(*export_path, sapp::write_layer_file(layers));
        fmt::print(stderr,
                   "ppb: wrote the fit as a SAPP layer file to {} (its constant_memory_mb is the "
                   "per-stage constant, which SAPP takes as a separate setting)\n",
                   *export_path);
    }
    const std::string out = args.flag("json")
                                ? to_pretty_json(fitted.document)
                                : render_fit(fitted.document, path, dryrun.observations.size());
    fmt::print("{}", out);
    return 0;
}

}  // namespace ppb::cli
