// ppb devices: the accelerators ppb knows (ppb/partition/cluster.hpp), their figures with units.
#include "commands.hpp"
#include "text_table.hpp"

#include <ppb/json_output.hpp>
#include <ppb/partition/cluster.hpp>
#include <ppb/partition/devices_document.hpp>

#include <fmt/format.h>

#include <memory>

namespace ppb::cli {

namespace {

struct DevicesArgs {
    bool json = false;
};

// A rate or bandwidth for people: "-" for a figure the device does not have.
std::string figure(double x) {
    return x > 0.0 ? fmt::format("{:g}", x) : std::string("-");
}

int run_devices(const DevicesArgs& args) {
    const auto devices = partition::known_devices();
    if (args.json) {
        write_stdout(to_pretty_json(partition::devices_document()));
        return 0;
    }
    using Align = TextTable::Align;
    TextTable table(
        {"NAME", "DEVICE", "MEMORY", "RUNTIME", "HBM", "BF16", "FP8", "FP32", "INTRA-NODE",
         "PER NODE", "NETWORK"},
        {Align::left, Align::left, Align::right, Align::right, Align::right, Align::right,
         Align::right, Align::right, Align::right, Align::right, Align::right});
    for (const partition::DeviceSpec& d : devices) {
        table.add_row({d.name, d.description, fmt::format("{:g} GiB", d.memory_gib),
                       d.runtime_memory_gib > 0.0 ? fmt::format("{:g} GiB", d.runtime_memory_gib)
                                                  : std::string("-"),
                       fmt::format("{:g} TB/s", d.memory_bandwidth_tb_s), figure(d.bf16_tflops),
                       figure(d.fp8_tflops), figure(d.fp32_tflops),
                       fmt::format("{:g} GB/s", d.intra_node_gb_s),
                       fmt::format("{}", d.devices_per_node),
                       fmt::format("{:g} GB/s", d.network_gb_s)});
    }
    write_stdout(
        table.render() +
        "\nMEMORY is the vendor's, RUNTIME what the runtime reports (what a process can "
        "reserve at most).\nRates are dense peaks in TFLOP/s (- : none published); links "
        "are per device and direction.\nSources: ppb devices --json, host_api/docs/cluster.md.\n");
    return 0;
}

}  // namespace

void add_devices_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<DevicesArgs>();
    CLI::App* devices = add_command(
        app, "devices", "list the accelerators ppb knows and their figures",
        "Lists the devices a cluster description (ppb.cluster/1, --cluster FILE) or --device\n"
        "NAME may name: memory, memory bandwidth, dense peak matrix rates per precision, and\n"
        "the links of the systems each is usually sold in (inside a node and across nodes, per\n"
        "device and direction), each from its vendor's datasheet (--json gives the sources).\n"
        "host_api/docs/cluster.md describes the cluster description.");
    devices->add_flag("--json", args->json,
                      "print {\"format\": \"ppb.devices/1\", \"devices\": [...]} instead of a "
                      "table");
    commands.push_back({devices, [args] { return run_devices(*args); }, {}});
}

}  // namespace ppb::cli
