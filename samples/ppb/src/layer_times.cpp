#include "layer_times.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>
#include <ppb/partition/request.hpp>
#include <ppb/sapp/layer_file.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace ppb::cli {

void add_device_options(CLI::App& app, DeviceOptions& options) {
    CLI::Option* tflops =
        app.add_option("--device-tflops", options.device_tflops,
                       "without --model-desc: the achieved TFLOP/s per device that turns the\n"
                       "shape's FLOPs into ms (all times scale together: the plans do not\n"
                       "depend on it)")
            ->type_name("R")
            ->capture_default_str()
            ->check(number_in({0.0, 1e9, true, "TFLOP/s"}));
    CLI::Option* device =
        app.add_option("--device", options.device,
                       "the devices, by name (ppb devices lists them): their dense peak rate x\n"
                       "0.4 times the shape's FLOPs, their links its transfers between stages\n"
                       "(and, searching, the data-parallel synchronisation); what their\n"
                       "allocator can reserve (the memory the runtime reports less what a\n"
                       "process keeps outside the allocator) is the default limit")
            ->type_name("NAME");
    CLI::Option* cluster =
        app.add_option("--cluster", options.cluster,
                       "the cluster description (ppb.cluster/1, host_api/docs/cluster.md): its\n"
                       "device's rate x achievable fraction, its links and the memory its\n"
                       "allocator can reserve, as --device")
            ->type_name("FILE");
    device->excludes(tflops)->excludes(cluster);
    cluster->excludes(tflops);
    app.add_flag("--tp-comm-overlap", options.tp_comm_overlap,
                 "as Megatron-LM's flag: with --device or --cluster, each layer's tensor-parallel\n"
                 "collectives run under its matrix products (the cluster's exposed share of them,\n"
                 "half by default, and what of the rest outlasts the products are waited\n"
                 "for)");
    app.add_flag("--overlap-grad-reduce", options.overlap_grad_reduce,
                 "as Megatron-LM's flag: with --device or --cluster, each stage reduces its\n"
                 "gradients' buckets while its last backward runs (only what outlasts it,\n"
                 "at least the last bucket, is waited for)");
    app.add_flag("--overlap-param-gather", options.overlap_param_gather,
                 "as Megatron-LM's flag (with the distributed optimizer): the weights are\n"
                 "gathered while the next forward runs");
}

std::optional<partition::Cluster> chosen_cluster(const DeviceOptions& options) {
    if (options.tp_comm_overlap && options.cluster.empty() && options.device.empty()) {
        throw UsageError(
            "--tp-comm-overlap: the layers' collectives are timed on a cluster's links only: give "
            "--device NAME or --cluster FILE");
    }
    if ((options.overlap_grad_reduce || options.overlap_param_gather) && options.cluster.empty() &&
        options.device.empty()) {
        throw UsageError(fmt::format(
            "{}: the data-parallel synchronisation is timed on a cluster's links only, for a model "
            "shape's layers: give --device NAME or --cluster FILE, and --model-options SHAPE "
            "without --model-desc",
            options.overlap_grad_reduce ? "--overlap-grad-reduce" : "--overlap-param-gather"));
    }
    if (!options.cluster.empty())
        return partition::read_cluster(read_text_file(options.cluster),
                                       source_name(options.cluster));
    if (options.device.empty())
        return std::nullopt;
    try {
        return partition::cluster_of_device(options.device);
    } catch (const InputError& e) {
        throw UsageError(std::string("--device: ") + e.what());
    }
}

double memory_limit_of(std::optional<double> given,
                       const std::optional<partition::Cluster>& cluster,
                       std::string_view alternatives) {
    double limit = 0.0;
    try {
        limit = partition::memory_limit_of(given, cluster, partition::flag_name, alternatives);
    } catch (const partition::RequestError& e) {
        throw UsageError(e.what());
    }
    if (!given) {
        fmt::print(stderr, "ppb: note: --memory-limit-mb {:g} from {}\n", limit,
                   cluster->describe_memory());
    }
    return limit;
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

partition::TimesRequest times_request_of(const std::string& model_desc,
                                         const std::string& convention, const ModelOptions& options,
                                         const DeviceOptions& device,
                                         const std::optional<partition::Cluster>& cluster) {
    return {.layer_file = model_desc,
            .time_convention = convention,
            .shape_json = options.json,
            .shape_source = options.file.empty() ? "--model-options" : options.file,
            .device_tflops = device.device_tflops,
            .cluster = cluster,
            .tp_comm_overlap = device.tp_comm_overlap,
            .overlap_grad_reduce = device.overlap_grad_reduce,
            .overlap_param_gather = device.overlap_param_gather};
}

LayerFileModel read_layer_file_model(const std::string& model_desc, const std::string& convention) {
    const std::string text = read_text_file(model_desc);
    const std::string source = source_name(model_desc);
    const sapp::LayerFile file = sapp::parse_layer_file(text, source);
    for (const sapp::LayerFile::BodyGroup& group : file.body_groups()) {
        const std::size_t index = group.entries.front();
        const sapp::Entry& body = file.entries[index];
        const bool activation = std::ranges::any_of(body.memory_activation,
                                                    [](const auto& a) { return a.has_value(); });
        if (body.memory_parameter && activation)
            continue;
        throw InputError(fmt::format(
            "{}: {} holds no {}: ppb plans, as SAPP does, with the memory the layer file holds "
            "(with --sapp-config and neither --dryrun nor --model); give a layer file that holds "
            "it ('ppb import sapp INIT.yaml | ppb fit - --export-sapp LAYERS.json' writes one), "
            "or --dryrun DRYRUN.json (the dry runs to fit the memory model to)",
            source, sapp::describe_entry(file, index),
            !body.memory_parameter
                ? std::string(activation ? "memory_parameter"
                                         : "memory (memory_parameter, memory_activation, ...)")
                : std::string("activation memory (memory_activation, memory_recompute, ...)")));
    }
    partition::TimeModel time =
        partition::time_model(file, source, *partition::time_convention_from_name(convention));
    return LayerFileModel{LayerTimes{std::move(time), model_desc, ""}, ModelOptions{text, source}};
}

}  // namespace ppb::cli
