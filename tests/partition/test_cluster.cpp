// The device table and the cluster description (ppb/partition/cluster.hpp): the datasheet
// figures per device (dense rates: the vendors' "with sparsity" figures halved, a system's
// divided by its devices), the rate the time model uses, and what bad documents get.
#include <ppb/errors.hpp>
#include <ppb/partition/cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tt = boost::test_tools;
using ppb::partition::Cluster;
using ppb::partition::read_cluster;

namespace cluster_tests {

namespace {

// The message read_cluster throws for `text`; fails the test if it reads.
std::string refusal(const std::string& text) {
    try {
        (void)read_cluster(text, "cluster.json");
    } catch (const ppb::InputError& e) {
        return e.what();
    }
    BOOST_ERROR("read: " << text);
    return {};
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster)

// NVIDIA's H100 SXM datasheet: BF16 1 979 and FP8 3 958 TFLOPS with sparsity, 80 GB; the HGX
// B200 (8 GPUs) FP8 72 PFLOPS with sparsity; GB200 NVL72 (72 GPUs) BF16 360 PFLOPS with
// sparsity, 13.4 TB; the HGX B300 (8 GPUs) FP8 72 PFLOPS with sparsity, 270 GB a GPU; GB300
// NVL72 (72 GPUs) FP8 720 PFLOPS with sparsity, 279 GB a GPU, an 800 Gb/s ConnectX-8 each; AMD's
// MI300X data sheet: BF16 1 307.4 TFLOPS dense, 192 GB; the MI325X's, 256 GB; the MI355X's, FP8
// 5 033.2 TFLOPS dense, 288 GB, seven Infinity Fabric links of 153.6 GB/s both ways.
BOOST_AUTO_TEST_CASE(the_table_holds_each_vendors_dense_figures) {
    const auto& h100 = ppb::partition::device_named("H100");
    BOOST_TEST(h100.bf16_tflops == 1979.0 / 2.0, tt::tolerance(1e-3));
    BOOST_TEST(h100.fp8_tflops == 3958.0 / 2.0, tt::tolerance(1e-12));
    BOOST_TEST(h100.memory_gib == 80.0);
    BOOST_TEST(h100.intra_node_gb_s == 900.0 / 2.0);  // NVLink's 900 GB/s is both directions
    BOOST_TEST(ppb::partition::device_named("B200").fp8_tflops == 72000.0 / 8.0 / 2.0);
    const auto& gb200 = ppb::partition::device_named("gb200");  // any case
    BOOST_TEST(gb200.bf16_tflops == 360000.0 / 72.0 / 2.0);
    BOOST_TEST(gb200.memory_gib == 186.0);
    BOOST_TEST(gb200.devices_per_node == 72U);
    BOOST_TEST(ppb::partition::device_named("MI300X").bf16_tflops == 1307.4);
    const auto& b300 = ppb::partition::device_named("B300");
    BOOST_TEST(b300.fp8_tflops == 72000.0 / 8.0 / 2.0);
    BOOST_TEST(b300.memory_gib == 270.0);
    BOOST_TEST(b300.devices_per_node == 8U);
    const auto& gb300 = ppb::partition::device_named("GB300");
    BOOST_TEST(gb300.fp8_tflops == 720000.0 / 72.0 / 2.0);
    BOOST_TEST(gb300.memory_gib == 279.0);
    BOOST_TEST(gb300.devices_per_node == 72U);
    BOOST_TEST(gb300.network_gb_s == 800.0 / 8.0);  // 800 Gb/s, in GB/s
    BOOST_TEST(!gb300.fp8_transposes);
    const auto& mi355x = ppb::partition::device_named("MI355X");
    BOOST_TEST(mi355x.fp8_tflops == 5033.2);
    BOOST_TEST(mi355x.memory_gib == 288.0);
    BOOST_TEST(mi355x.intra_node_gb_s == 7 * 153.6 / 2.0, tt::tolerance(1e-12));
    BOOST_TEST(ppb::partition::device_named("MI325X").memory_gib == 256.0);
    BOOST_TEST(ppb::partition::known_devices().size() == 11U);
    for (const auto& d : ppb::partition::known_devices()) {
        BOOST_TEST(d.memory_gib > 0.0, d.name);
        BOOST_TEST(d.bf16_tflops > 0.0, d.name);
        BOOST_TEST(!d.source.empty(), d.name);
    }
}

BOOST_AUTO_TEST_CASE(an_unknown_device_lists_the_known_ones) {
    try {
        (void)ppb::partition::device_named("H10O");
        BOOST_ERROR("H10O was found");
    } catch (const ppb::InputError& e) {
        const std::string m = e.what();
        BOOST_TEST(contains(m, "unknown device 'H10O' (did you mean 'H100'?)"), m);
        BOOST_TEST(
            contains(
                m,
                "A100, H100, H200, B200, B300, GB200, GB300, MI300X, MI325X, MI355X, Ascend910B"),
            m);
    }
}

// The time model's rate is the peak at the precision times the achievable fraction; the memory
// limit what the allocator can reserve (runtime_memory_and_what_is_kept_outside_the_allocator).
BOOST_AUTO_TEST_CASE(a_description_gives_the_rate_and_the_memory) {
    const Cluster h100 = read_cluster(
        R"({"format": "ppb.cluster/1", "device": "H100", "achievable_fraction": 0.5,
            "precision": "fp8", "network_gb_s": 100, "overrides": {"memory_gib": 94}})",
        "cluster.json");
    BOOST_TEST(h100.achieved_tflops() == 1979.0 * 0.5);
    BOOST_TEST(h100.memory_mb() == 94.0 * 1024.0 - 1229.0);
    BOOST_TEST(h100.network_gb_s == 100.0);
    BOOST_TEST(h100.devices_per_node == 8U);
    BOOST_TEST(contains(h100.device.source, "overridden by the cluster description"));
    BOOST_TEST(h100.overlap_exposed_fraction == 0.5);
    // The defaults: bf16 at 0.4 of the peak, half of an overlapped collective exposed.
    const Cluster plain = ppb::partition::cluster_of_device("A100");
    BOOST_TEST(plain.achieved_tflops() == 312.0 * 0.4, tt::tolerance(1e-12));
    BOOST_TEST(plain.overlap_exposed_fraction == 0.5);
    // The H100 with one figure measured.
    const auto measured = [](std::string_view field, double value) {
        return read_cluster(
            fmt::format(R"({{"format": "ppb.cluster/1", "device": "H100", "{}": {}}})", field,
                        value),
            "cluster.json");
    };
    // A measured share, 0 (all hidden) included.
    for (const double share : {0.0, 0.1, 1.0})
        BOOST_TEST(measured("overlap_exposed_fraction", share).overlap_exposed_fraction == share);
    // The memory bandwidth streaming kernels reach: 0.9 of the datasheet's unless measured.
    BOOST_TEST(h100.memory_bandwidth_fraction == 0.9);
    BOOST_TEST(h100.streamed_bytes_per_second() == 3.35e12 * 0.9, tt::tolerance(1e-12));
    const Cluster streamed = read_cluster(
        R"({"format": "ppb.cluster/1", "device": "H100", "memory_bandwidth_fraction": 0.8,
            "overrides": {"memory_bandwidth_tb_s": 3.0}})",
        "cluster.json");
    BOOST_TEST(streamed.streamed_bytes_per_second() == 3.0e12 * 0.8, tt::tolerance(1e-12));
    // A body layer's fixed time a forward: 100 us unless measured, 0 leaving it out.
    BOOST_TEST(h100.layer_overhead_us == 100.0);
    for (const double us : {0.0, 35.5})
        BOOST_TEST(measured("layer_overhead_us", us).layer_overhead_us == us);
    // A device of the user's own, every figure given.
    const Cluster custom = read_cluster(
        R"({"format": "ppb.cluster/1", "device": {"name": "X1", "memory_gib": 96,
            "memory_bandwidth_tb_s": 4, "bf16_tflops": 800, "fp8_tflops": 0, "fp32_tflops": 60,
            "intra_node_gb_s": 400, "devices_per_node": 16, "network_gb_s": 100},
            "devices_per_node": 4})",
        "cluster.json");
    BOOST_TEST(custom.achieved_tflops() == 320.0, tt::tolerance(1e-12));
    BOOST_TEST(custom.devices_per_node == 4U);
    BOOST_TEST(custom.device.description == "X1");
    // Whether its FP8 products need transposed copies: Hopper's convention unless it says.
    BOOST_TEST(custom.device.fp8_transposes);
    const Cluster blackwell_like = read_cluster(
        R"({"format": "ppb.cluster/1", "device": {"name": "X2", "memory_gib": 180,
            "memory_bandwidth_tb_s": 8, "bf16_tflops": 2250, "fp8_tflops": 4500, "fp32_tflops": 75,
            "intra_node_gb_s": 900, "devices_per_node": 8, "network_gb_s": 50,
            "fp8_transposes": false}})",
        "cluster.json");
    BOOST_TEST(!blackwell_like.device.fp8_transposes);
    BOOST_TEST(h100.device.fp8_transposes);
    BOOST_TEST(!read_cluster(R"({"format": "ppb.cluster/1", "device": "H100",
                                 "overrides": {"fp8_transposes": false}})",
                             "cluster.json")
                    .device.fp8_transposes);
    BOOST_TEST(read_cluster(R"({"format": "ppb.cluster/1", "device": "B200",
                                "overrides": {"fp8_transposes": true}})",
                            "cluster.json")
                   .device.fp8_transposes);
}

// A plan fits when what the allocator reserves fits in what the process can reserve: the memory
// the runtime reports (PyTorch's "total capacity of 79.11 GiB" on an H100 80GB HBM3, vllm-project/
// vllm issue 27508; 60.97 GiB of a 64 GB Ascend 910B under torch_npu, zai-org/CogVideo issue 63)
// less what the process keeps outside the allocator (1.20 GiB measured in a multi-GPU job,
// hiyouga/LlamaFactory issue 9510).
BOOST_AUTO_TEST_CASE(runtime_memory_and_what_is_kept_outside_the_allocator) {
    const Cluster h100 = ppb::partition::cluster_of_device("H100");
    BOOST_TEST(h100.device.runtime_memory_gib == 79.11);
    BOOST_TEST(h100.runtime_memory_mb() == 79.11 * 1024.0, tt::tolerance(1e-12));
    BOOST_TEST(h100.outside_allocator_mb == 1229.0);
    BOOST_TEST(h100.memory_mb() == 79.11 * 1024.0 - 1229.0, tt::tolerance(1e-12));
    BOOST_TEST(h100.describe_memory() ==
               "the H100's 79.11 GiB as the runtime reports it, less 1229 MB kept outside the "
               "allocator");
    BOOST_TEST(
        ppb::partition::cluster_of_device("Ascend910B").runtime_memory_mb() == 60.97 * 1024.0,
        tt::tolerance(1e-12));
    for (const auto& d : ppb::partition::known_devices()) {
        // Every table device says what its runtime reports: less than the vendor's memory, by
        // what the driver keeps (under 5 %).
        BOOST_TEST(d.runtime_memory_gib < d.memory_gib, d.name);
        BOOST_TEST(d.runtime_memory_gib > 0.95 * d.memory_gib, d.name);
        BOOST_TEST(contains(d.source, "runtime memory: "), d.name);
    }
    // A measured figure for what the process keeps outside; 0 reserves the runtime's whole.
    const auto cluster = [](std::string_view json) { return read_cluster(json, "cluster.json"); };
    const Cluster measured =
        cluster(R"({"format": "ppb.cluster/1", "device": "H100", "outside_allocator_mb": 3072})");
    BOOST_TEST(measured.memory_mb() == 79.11 * 1024.0 - 3072.0, tt::tolerance(1e-12));
    BOOST_TEST(contains(measured.describe_memory(), "less 3072 MB kept outside the allocator"));
    const Cluster whole =
        cluster(R"({"format": "ppb.cluster/1", "device": "H100", "outside_allocator_mb": 0})");
    BOOST_TEST(whole.memory_mb() == 79.11 * 1024.0, tt::tolerance(1e-12));
    BOOST_TEST(whole.describe_memory() == "the H100's 79.11 GiB as the runtime reports it");
    // The runtime's figure overridden; a memory_gib override alone takes the new memory whole
    // (the table's runtime figure was of the table's memory).
    BOOST_TEST(cluster(R"({"format": "ppb.cluster/1", "device": "H100",
                           "overrides": {"runtime_memory_gib": 78.5}})")
                   .runtime_memory_mb() == 78.5 * 1024.0);
    const Cluster nvl = cluster(
        R"({"format": "ppb.cluster/1", "device": "H100", "overrides": {"memory_gib": 94}})");
    BOOST_TEST(nvl.runtime_memory_mb() == 94.0 * 1024.0);
    BOOST_TEST(nvl.describe_memory() ==
               "the H100's 94 GiB, less 1229 MB kept outside the allocator");
    // A device of the user's own: its memory unless it gives the runtime's.
    const std::string_view figures =
        R"("memory_bandwidth_tb_s": 4, "bf16_tflops": 800, "fp8_tflops": 0, "fp32_tflops": 60,
           "intra_node_gb_s": 400, "devices_per_node": 16, "network_gb_s": 100)";
    BOOST_TEST(cluster(fmt::format(R"({{"format": "ppb.cluster/1", "device": {{"name": "X1",
                                       "memory_gib": 96, {}}}}})",
                                   figures))
                   .runtime_memory_mb() == 96.0 * 1024.0);
    BOOST_TEST(cluster(fmt::format(R"({{"format": "ppb.cluster/1", "device": {{"name": "X1",
                                       "memory_gib": 96, "runtime_memory_gib": 94.5, {}}}}})",
                                   figures))
                   .runtime_memory_mb() == 94.5 * 1024.0);
}

BOOST_AUTO_TEST_CASE(bad_descriptions_are_named_where_they_go_wrong) {
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "H10O"})"),
                        "cluster.json: device: unknown device 'H10O' (did you mean 'H100'?)"));
    BOOST_TEST(contains(refusal(R"({"device": "H100"})"), "missing required field 'format'"));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/2", "device": "H100"})"),
                        "format: expected \"ppb.cluster/1\""));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "A100",
                                   "precision": "fp8"})"),
                        "precision: the device A100 has no fp8 rate"));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "H100",
                                   "precision": "int8"})"),
                        "unknown precision \"int8\""));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "H100",
                                   "achievable_fraction": 1.5})"),
                        "achievable_fraction"));
    // Each figure out of its range, or not a number, named with its field.
    const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> bad_figures = {
        {"overlap_exposed_fraction", {"-0.1", "1.01", "\"a quarter\"", "null"}},
        {"memory_bandwidth_fraction", {"0", "-0.5", "1.5", "\"most\"", "true"}},
        {"layer_overhead_us", {"-1", "1e8", "\"fast\"", "null"}},
    };
    for (const auto& [field, values] : bad_figures) {
        for (const std::string_view value : values) {
            BOOST_TEST(contains(refusal(fmt::format(
                                    R"({{"format": "ppb.cluster/1", "device": "H100", "{}": {}}})",
                                    field, value)),
                                fmt::format("cluster.json: {}: ", field)),
                       field << " " << value);
        }
    }
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "H100",
                                   "overrides": {"memory_gib": -1}})"),
                        "overrides.memory_gib"));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "H100",
                                   "overrides": {"memory": 94}})"),
                        "unknown device figure 'memory'"));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "H100",
                                   "devices_per_node": 0})"),
                        "devices_per_node"));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": {"name": "X1",
                                   "memory_gib": 96}})"),
                        "device: missing required field 'memory_bandwidth_tb_s'"));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "H100",
                                   "overrides": {"fp8_transposes": "no"}})"),
                        "overrides.fp8_transposes"));
    // The runtime reports the device's memory less the driver's, never more; what is kept
    // outside the allocator leaves it some.
    const std::vector<std::pair<std::string_view, std::string_view>> memory_refusals = {
        {R"({"format": "ppb.cluster/1", "device": "H100",
             "overrides": {"runtime_memory_gib": 81}})",
         "cluster.json: overrides.runtime_memory_gib: 81 GiB is more than the device's "
         "memory_gib 80"},
        {R"({"format": "ppb.cluster/1", "device": "H100",
             "overrides": {"runtime_memory_gib": 0}})",
         "cluster.json: overrides.runtime_memory_gib: "},
        {R"({"format": "ppb.cluster/1", "device": "H100", "outside_allocator_mb": 81010})",
         "cluster.json: outside_allocator_mb: 81010 MB leaves the allocator nothing of the "
         "H100's 81008.6 MB"},
    };
    for (const auto& [document, message] : memory_refusals)
        BOOST_TEST(contains(refusal(std::string(document)), std::string(message)), document);
    for (const std::string_view value : {"-1", "\"1 GiB\"", "null", "1e10"}) {
        BOOST_TEST(contains(refusal(fmt::format(R"({{"format": "ppb.cluster/1", "device": "H100",
                                                "outside_allocator_mb": {}}})",
                                                value)),
                            "cluster.json: outside_allocator_mb: "),
                   value);
    }
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": {"name": "Tiny",
                                   "memory_gib": 1, "memory_bandwidth_tb_s": 1, "bf16_tflops": 10,
                                   "fp8_tflops": 0, "fp32_tflops": 1, "intra_node_gb_s": 1,
                                   "devices_per_node": 1, "network_gb_s": 1}})"),
                        "the Tiny's 1024 MB is no more than what a process keeps outside the "
                        "allocator, 1229 MB: give outside_allocator_mb"));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": 7})"),
                        "expected a device name or an object of its figures, got 7"));
    BOOST_TEST(contains(refusal(R"({"format": "ppb.cluster/1", "device": "H100", "gpus": 8})"),
                        "unknown field 'gpus'"));
    BOOST_TEST(contains(refusal("{"), "malformed JSON"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cluster_tests
