// Where a command's layer times come from: the SAPP layer file of --model-desc, or, without one,
// the FLOPs of the model shape given as --model-options (the analytic model's options) at
// --device-tflops (ppb/partition/shape_time.hpp).
#ifndef PPB_LAYER_TIMES_HPP
#define PPB_LAYER_TIMES_HPP

#include "cli.hpp"
#include "plugin_session.hpp"

#include <ppb/partition/time_model.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace ppb::cli {

struct LayerTimes {
    partition::TimeModel time;
    std::string source;  // "samples/data/llama70b-layers.json", "FLOPs of SHAPE at 400 TFLOP/s"
    std::string unit;    // "ms" from a shape; empty: the layer file's own unit
};

// The model options as a model shape: a JSON object holding tensor_parallel (the analytic
// model's options), or none.
[[nodiscard]] std::optional<boost::json::object> model_shape(const ModelOptions& options);

// Declares --device-tflops on `app`.
void add_device_tflops_option(CLI::App& app, double& tflops);
// Declares --sapp-time-convention on `app`: what a layer file's `time` means.
void add_time_convention_option(CLI::App& app, std::string& convention);

// The layer file `model_desc` when given, its times read in `convention` (a name of
// partition::time_convention_names); else the times of the shape in `options` (model_shape);
// else a usage error naming both ways.
[[nodiscard]] LayerTimes read_layer_times(const std::string& model_desc,
                                          const ModelOptions& options, double device_tflops,
                                          const std::string& convention);

// A layer file that is the memory model as well: SAPP plans with its layer file alone, its BODY
// entries' memory_parameter and activation memory being the per-layer memory (the table model's
// options, plugin/table). The file `model_desc` ('-': standard input) is read once, for its times
// in `convention` and as the table model's options.
struct LayerFileModel {
    LayerTimes times;
    ModelOptions options;  // the file's text, for --model table
};

// Throws InputError naming the BODY entry without memory and the two ways to give it (a layer
// file that holds it, or --dryrun) when the file holds no memory.
[[nodiscard]] LayerFileModel read_layer_file_model(const std::string& model_desc,
                                                   const std::string& convention);

}  // namespace ppb::cli

#endif  // PPB_LAYER_TIMES_HPP
