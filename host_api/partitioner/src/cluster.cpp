// The cluster description (ppb.cluster/1): a device of the table or of the user's own, the
// figures the document overrides, and the time model's settings (ppb/partition/cluster.hpp).
#include <ppb/partition/cluster.hpp>

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>

namespace ppb::partition {

namespace {

constexpr limits::RealRange memory_range{0.0, 1e6, true, "GiB"};
constexpr limits::RealRange outside_range{0.0, 1e9, false, "MB"};
constexpr limits::RealRange rate_range{0.0, 1e7, false, "TFLOP/s"};
constexpr limits::RealRange bandwidth_range{0.0, 1e7, false, "GB/s"};
constexpr limits::RealRange memory_bandwidth_range{0.0, 1e4, false, "TB/s"};
constexpr limits::RealRange latency_range{0.0, 1e7, false, "microseconds"};
constexpr limits::RealRange fraction_range{0.0, 1.0, true, "of the peak rate"};
constexpr limits::RealRange exposed_range{0.0, 1.0, false, "of an overlapped collective"};
constexpr limits::RealRange streamed_range{0.0, 1.0, true, "of the memory bandwidth"};
constexpr limits::CountRange per_node_range{1, 1000000, "devices"};

// The device figures a document may give (a custom device gives them all but fp8_transposes,
// which says whether the device's FP8 products need transposed copies: Hopper's do, so a custom
// device without it is taken as needing them).
constexpr std::array<std::string_view, 10> figure_keys = {
    "memory_gib",     "memory_bandwidth_tb_s", "bf16_tflops",      "fp8_tflops",
    "fp32_tflops",    "intra_node_gb_s",       "devices_per_node", "network_gb_s",
    "fp8_transposes", "runtime_memory_gib"};

// Reads `object`'s figures into `device`; each but fp8_transposes and runtime_memory_gib is
// required when `all`.
void read_figures(const JsonObject& object, DeviceSpec& device, bool all) {
    const auto number = [&](std::string_view key, const limits::RealRange& range, double& out) {
        const std::optional<JsonNode> node = all ? object.required(key) : object.optional(key);
        if (node)
            out = node->as_number_in(range);
    };
    number("memory_gib", memory_range, device.memory_gib);
    number("memory_bandwidth_tb_s", memory_bandwidth_range, device.memory_bandwidth_tb_s);
    number("bf16_tflops", rate_range, device.bf16_tflops);
    number("fp8_tflops", rate_range, device.fp8_tflops);
    number("fp32_tflops", rate_range, device.fp32_tflops);
    number("intra_node_gb_s", bandwidth_range, device.intra_node_gb_s);
    number("network_gb_s", bandwidth_range, device.network_gb_s);
    const std::optional<JsonNode> per_node =
        all ? object.required("devices_per_node") : object.optional("devices_per_node");
    if (per_node)
        device.devices_per_node = per_node->as_count(per_node_range);
    if (const auto transposes = object.optional("fp8_transposes"))
        device.fp8_transposes = transposes->as_bool();
    // The runtime's total is the vendor's memory less the driver's: never more. An override of
    // memory_gib alone drops the table's runtime figure, which was of the table's memory.
    if (const auto runtime = object.optional("runtime_memory_gib")) {
        device.runtime_memory_gib = runtime->as_number_in(memory_range);
        if (device.runtime_memory_gib > device.memory_gib) {
            runtime->fail(
                fmt::format("{:g} GiB is more than the device's memory_gib {:g}: the "
                            "runtime reports the device's memory less the driver's",
                            device.runtime_memory_gib, device.memory_gib));
        }
    } else if (object.optional("memory_gib")) {
        device.runtime_memory_gib = 0.0;
    }
}

DeviceSpec custom_device(const JsonObject& object) {
    std::array<std::string_view, figure_keys.size() + 2> known{};
    known[0] = "name";
    known[1] = "description";
    std::ranges::copy(figure_keys, known.begin() + 2);
    object.allow_only(known);
    DeviceSpec device;
    device.name = std::string(object.required("name").as_string());
    if (device.name.empty())
        object.required("name").fail("expected a device name, got an empty string");
    if (const auto description = object.optional("description"))
        device.description = std::string(description->as_string());
    else
        device.description = device.name;
    read_figures(object, device, true);
    device.source = "the cluster description";
    return device;
}

MatrixPrecision precision_of(const JsonNode& node) {
    const std::string_view name = node.as_string();
    for (const MatrixPrecision p :
         {MatrixPrecision::bf16, MatrixPrecision::fp8, MatrixPrecision::fp32}) {
        if (precision_name(p) == name)
            return p;
    }
    node.fail(fmt::format("unknown precision \"{}\" (expected bf16, fp8 or fp32)", name));
}

}  // namespace

std::string_view precision_name(MatrixPrecision precision) noexcept {
    switch (precision) {
        case MatrixPrecision::fp8:
            return "fp8";
        case MatrixPrecision::fp32:
            return "fp32";
        case MatrixPrecision::bf16:
            break;
    }
    return "bf16";
}

double Cluster::peak_tflops() const noexcept {
    switch (precision) {
        case MatrixPrecision::fp8:
            return device.fp8_tflops;
        case MatrixPrecision::fp32:
            return device.fp32_tflops;
        case MatrixPrecision::bf16:
            break;
    }
    return device.bf16_tflops;
}

double Cluster::achieved_tflops() const noexcept {
    return peak_tflops() * achievable_fraction;
}

double Cluster::runtime_memory_mb() const noexcept {
    return (device.runtime_memory_gib > 0.0 ? device.runtime_memory_gib : device.memory_gib) *
           1024.0;
}

double Cluster::memory_mb() const noexcept {
    return runtime_memory_mb() - outside_allocator_mb;
}

std::string Cluster::describe_memory() const {
    const std::string memory =
        device.runtime_memory_gib > 0.0
            ? fmt::format("the {}'s {:g} GiB as the runtime reports it", device.name,
                          device.runtime_memory_gib)
            : fmt::format("the {}'s {:g} GiB", device.name, device.memory_gib);
    return outside_allocator_mb > 0.0 ? fmt::format("{}, less {:g} MB kept outside the allocator",
                                                    memory, outside_allocator_mb)
                                      : memory;
}

double Cluster::streamed_bytes_per_second() const noexcept {
    return device.memory_bandwidth_tb_s * 1e12 * memory_bandwidth_fraction;
}

double achievable_fraction(const DeviceSpec& device, MatrixPrecision precision) noexcept {
    const double calibrated = precision == MatrixPrecision::fp8    ? device.fp8_achievable_fraction
                              : precision == MatrixPrecision::bf16 ? device.bf16_achievable_fraction
                                                                   : 0.0;
    return calibrated > 0.0 ? calibrated : default_achievable_fraction;
}

Cluster cluster_of_device(std::string_view name) {
    Cluster cluster;
    cluster.device = device_named(name);
    cluster.achievable_fraction = achievable_fraction(cluster.device, cluster.precision);
    cluster.devices_per_node = cluster.device.devices_per_node;
    cluster.intra_node_gb_s = cluster.device.intra_node_gb_s;
    cluster.network_gb_s = cluster.device.network_gb_s;
    return cluster;
}

Cluster read_cluster(std::string_view text, std::string_view source) {
    const boost::json::value document = parse_json(text, source);
    const JsonObject root{JsonNode(document, source)};
    root.allow_only({"format", "device", "overrides", "devices_per_node", "intra_node_gb_s",
                     "network_gb_s", "network_latency_us", "achievable_fraction", "precision",
                     "overlap_exposed_fraction", "memory_bandwidth_fraction", "layer_overhead_us",
                     "outside_allocator_mb"});
    const JsonNode format = root.required("format");
    if (format.as_string() != "ppb.cluster/1")
        format.fail(
            fmt::format("expected \"ppb.cluster/1\", got {}", describe_json(format.value())));

    Cluster cluster;
    const JsonNode device = root.required("device");
    if (device.value().is_string()) {
        try {
            cluster.device = device_named(device.as_string());
        } catch (const InputError& e) {
            device.fail(e.what());
        }
    } else if (device.value().is_object()) {
        cluster.device = custom_device(JsonObject(device));
    } else {
        device.fail(fmt::format("expected a device name or an object of its figures, got {}",
                                describe_json(device.value())));
    }
    if (const auto overrides = root.optional("overrides")) {
        const JsonObject object(*overrides);
        object.allow_only(figure_keys, "device figure");
        read_figures(object, cluster.device, false);
        cluster.device.source += "; overridden by the cluster description";
    }
    cluster.devices_per_node = cluster.device.devices_per_node;
    cluster.intra_node_gb_s = cluster.device.intra_node_gb_s;
    cluster.network_gb_s = cluster.device.network_gb_s;
    if (const auto n = root.optional("devices_per_node"))
        cluster.devices_per_node = n->as_count(per_node_range);
    if (const auto x = root.optional("intra_node_gb_s"))
        cluster.intra_node_gb_s = x->as_number_in(bandwidth_range);
    if (const auto x = root.optional("network_gb_s"))
        cluster.network_gb_s = x->as_number_in(bandwidth_range);
    if (const auto x = root.optional("network_latency_us"))
        cluster.network_latency_us = x->as_number_in(latency_range);
    std::optional<JsonNode> precision = root.optional("precision");
    if (precision)
        cluster.precision = precision_of(*precision);
    cluster.achievable_fraction = achievable_fraction(cluster.device, cluster.precision);
    if (const auto x = root.optional("achievable_fraction"))
        cluster.achievable_fraction = x->as_number_in(fraction_range);
    if (const auto x = root.optional("overlap_exposed_fraction"))
        cluster.overlap_exposed_fraction = x->as_number_in(exposed_range);
    if (const auto x = root.optional("memory_bandwidth_fraction"))
        cluster.memory_bandwidth_fraction = x->as_number_in(streamed_range);
    if (const auto x = root.optional("layer_overhead_us"))
        cluster.layer_overhead_us = x->as_number_in(latency_range);
    if (const auto x = root.optional("outside_allocator_mb")) {
        cluster.outside_allocator_mb = x->as_number_in(outside_range);
        if (cluster.outside_allocator_mb >= cluster.runtime_memory_mb()) {
            x->fail(fmt::format("{:g} MB leaves the allocator nothing of the {}'s {:g} MB",
                                cluster.outside_allocator_mb, cluster.device.name,
                                cluster.runtime_memory_mb()));
        }
    } else if (cluster.outside_allocator_mb >= cluster.runtime_memory_mb()) {
        root.fail(fmt::format(
            "the {}'s {:g} MB is no more than what a process keeps outside the "
            "allocator, {:g} MB: give outside_allocator_mb",
            cluster.device.name, cluster.runtime_memory_mb(), cluster.outside_allocator_mb));
    }
    if (cluster.peak_tflops() <= 0.0) {
        const std::string problem = fmt::format(
            "the device {} has no {} rate (give {}_tflops in overrides)", cluster.device.name,
            precision_name(cluster.precision), precision_name(cluster.precision));
        if (precision)
            precision->fail(problem);
        root.fail(problem);
    }
    return cluster;
}

}  // namespace ppb::partition
