// The flags that say where a command's layer times come from — the SAPP layer file of
// --model-desc, or, without one, the FLOPs of the model shape given as --model-options on
// --device-tflops, --device or --cluster — and what they ask of the library, which reads them
// (times_request_of; ppb/partition/request.hpp).
#ifndef PPB_LAYER_TIMES_HPP
#define PPB_LAYER_TIMES_HPP

#include "cli.hpp"
#include "plugin_session.hpp"

#include <ppb/partition/cluster.hpp>
#include <ppb/partition/request.hpp>
#include <ppb/partition/time_model.hpp>

#include <optional>
#include <string>

namespace ppb::cli {

struct LayerTimes {
    partition::TimeModel time;
    std::string source;  // "samples/data/llama70b-layers.json", "FLOPs of SHAPE at 400 TFLOP/s"
    std::string unit;    // "ms" from a shape; empty: the layer file's own unit
};

// The devices the layers run on: --device-tflops, or the device of --device NAME or of the
// cluster description --cluster FILE (ppb/partition/cluster.hpp), whose achieved rate (peak x
// achievable fraction) replaces --device-tflops and whose memory is the limit when
// --memory-limit-mb is not given.
struct DeviceOptions {
    double device_tflops = 400.0;
    std::string device;
    std::string cluster;
    bool tp_comm_overlap = false;  // --tp-comm-overlap: with a cluster, the layers' collectives
                                   // run under their matrix products
    // --overlap-grad-reduce, --overlap-param-gather: with a cluster, the data-parallel
    // synchronisation overlapped as Megatron-LM overlaps it (ppb/partition/communication.hpp).
    bool overlap_grad_reduce = false;
    bool overlap_param_gather = false;
};

// Declares --device-tflops, --device and --cluster on `app`, each excluding the others, and
// the overlaps of the framework: --tp-comm-overlap, --overlap-grad-reduce, --overlap-param-gather.
void add_device_options(CLI::App& app, DeviceOptions& options);

// The cluster of --device or --cluster, if either is given. Throws UsageError for an unknown
// --device name (listing the known ones), InputError for a bad cluster description.
[[nodiscard]] std::optional<partition::Cluster> chosen_cluster(const DeviceOptions& options);

// The memory limit: `given`, else the cluster's device memory (said on stderr), else a usage
// error naming `alternatives` beside --device and --cluster.
[[nodiscard]] double memory_limit_of(std::optional<double> given,
                                     const std::optional<partition::Cluster>& cluster,
                                     std::string_view alternatives);
// Declares --sapp-time-convention on `app`: what a layer file's `time` means.
void add_time_convention_option(CLI::App& app, std::string& convention);

// The times a command's flags ask for (ppb/partition/request.hpp): --model-desc read in
// `convention`, else the shape of --model-options on --device-tflops, --device or --cluster with
// the overlap flags.
[[nodiscard]] partition::TimesRequest times_request_of(
    const std::string& model_desc, const std::string& convention, const ModelOptions& options,
    const DeviceOptions& device, const std::optional<partition::Cluster>& cluster);

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
