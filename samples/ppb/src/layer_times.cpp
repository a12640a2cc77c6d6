#include "layer_times.hpp"

#include <ppb/limits.hpp>
#include <ppb/partition/shape_time.hpp>

#include <boost/json/parse.hpp>

#include <fmt/format.h>

namespace ppb::cli {

void add_device_tflops_option(CLI::App& app, double& tflops) {
    app.add_option("--device-tflops", tflops,
                   "without --model-desc: the achieved TFLOP/s per device that turns the\n"
                   "shape's FLOPs into ms (all times scale together: the plans do not\n"
                   "depend on it)")
        ->type_name("R")
        ->capture_default_str()
        ->check(number_in({0.0, 1e9, true, "TFLOP/s"}));
}

void add_time_convention_option(CLI::App& app, std::string& convention) {
    app.add_option("--sapp-time-convention", convention,
                   "what the --model-desc file's `time` means: hyper-parallel (today's SAPP,\n"
                   "the default: a layer's forward time, its backward 2 x time) or toolkit (the\n"
                   "older MindFormers toolkit: forward + backward, a third of it forward)")
        ->type_name("NAME")
        ->capture_default_str()
        ->check(CLI::IsMember({"hyper-parallel", "toolkit"}));
}

std::optional<boost::json::object> model_shape(const ModelOptions& options) {
    boost::system::error_code ec;
    boost::json::value parsed = boost::json::parse(options.json, ec);
    if (ec || !parsed.is_object() || !parsed.as_object().contains("tensor_parallel"))
        return std::nullopt;
    return std::move(parsed.as_object());
}

LayerTimes read_layer_times(const std::string& model_desc, const ModelOptions& options,
                            double device_tflops, const std::string& convention) {
    if (!model_desc.empty()) {
        return LayerTimes{partition::read_time_model(
                              model_desc, *partition::time_convention_from_name(convention)),
                          model_desc, ""};
    }
    if (!model_shape(options)) {
        throw UsageError(
            "the layers' times are needed: give --model-desc FILE (a SAPP layer file), or a "
            "model shape as --model-options (the analytic model's options: its FLOPs time the "
            "layers)");
    }
    const std::string source = options.file.empty() ? "--model-options" : options.file;
    partition::TimeModel time = partition::time_model_from_shape(
        options.json, source, partition::ShapeTimeSettings{device_tflops});
    return LayerTimes{std::move(time),
                      fmt::format("FLOPs of {} at {:g} TFLOP/s", source, device_tflops), "ms"};
}

}  // namespace ppb::cli
