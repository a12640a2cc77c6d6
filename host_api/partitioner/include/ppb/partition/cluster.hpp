// ppb/partition/cluster.hpp — the devices a configuration runs on: a table of common
// accelerators and the cluster description users write (ppb.cluster/1).
//
// A device's figures are its vendor's datasheet figures, dense (without structured sparsity):
// the memory, the peak matrix rates per precision, the memory bandwidth, and the links of the
// systems it is usually sold in — inside a node (NVLink, Infinity Fabric, HCCS: GB/s per device
// and direction) and across nodes (the network adapters per device: GB/s per device and
// direction). host_api/docs/cluster.md lists the table with each figure's source.
//
// A cluster is one device type with those figures, any of them overridden, the devices per node
// (the scale-up domain the intra-node links join), the network between nodes, and the fraction
// of the peak matrix rate the layers achieve (the time model's rate is peak x fraction). Its
// document:
//
//     {"format": "ppb.cluster/1", "device": "H100", "devices_per_node": 8,
//      "network_gb_s": 50, "achievable_fraction": 0.4, "precision": "bf16",
//      "overlap_exposed_fraction": 0.5,
//      "overrides": {"memory_gib": 94}}
//
// or, for a device the table does not have, "device": {"name": ..., every figure}. Unknown device
// names are an error that lists the known ones.
#ifndef PPB_PARTITION_CLUSTER_HPP
#define PPB_PARTITION_CLUSTER_HPP

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ppb::partition {

struct DeviceSpec {
    std::string name;         // the table's key: "H100"
    std::string description;  // "NVIDIA H100 SXM5 80 GB"
    double memory_gib = 0.0;  // device memory, GiB (2^30 bytes), as the vendor sizes it
    double memory_bandwidth_tb_s = 0.0;
    // Peak dense matrix rates, TFLOP/s; 0: the precision is not supported.
    double bf16_tflops = 0.0;
    double fp8_tflops = 0.0;
    double fp32_tflops = 0.0;            // without tensor cores (FP32 vector)
    double intra_node_gb_s = 0.0;        // per device and direction, inside the scale-up domain
    std::uint32_t devices_per_node = 0;  // in that domain, as the device is usually sold
    double network_gb_s = 0.0;           // per device and direction, across nodes
    std::string source;                  // where the figures come from
    // The fraction of the peak matrix rate a model shape's layers achieve, calibrated against
    // published throughputs of tuned configurations (tests/data/tuned/published.json; the
    // default_achievable_fraction where the table has none for the device or precision).
    double bf16_achievable_fraction = 0.0;  // 0: not calibrated
    double fp8_achievable_fraction = 0.0;
    // Whether its FP8 matrix products need a transposed copy of an operand (Hopper and earlier:
    // Transformer Engine keeps one of each FP8 weight and of some inputs; Blackwell takes either
    // layout). The analytic model's fp8_transposes; a custom device is taken as needing them
    // unless it says "fp8_transposes": false (a table device's may be overridden too).
    bool fp8_transposes = true;
    // What the runtime reports as the device's total memory, GiB (PyTorch's
    // get_device_properties().total_memory, the "total capacity" of its out-of-memory message):
    // the vendor's memory less what the driver keeps for itself. A process can reserve no more.
    // 0: not known, memory_gib taken instead.
    double runtime_memory_gib = 0.0;
};

// The fraction a device without a calibrated one is taken at.
inline constexpr double default_achievable_fraction = 0.4;

// The share of an overlapped collective (tensor-parallel collectives under --tp-comm-overlap, the
// context-parallel ring) that stays exposed however long the products it runs under. Overlap
// works piece by piece: Transformer Engine's userbuffers cut each forward reduce-scatter into 4
// pieces, the last waited for after the last product (method "pipeline", num_splits 4, in its
// default configuration and in every NeMo / Megatron-Bridge H100 and B200 configuration, e.g.
// NeMo's nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py at 8cfedd7), and the
// communication kernels take SMs from the products they overlap (num_sm 16 to 24 of an H100's
// 132 with set_sm_margin). How much that is, nobody publishes; the published tuned
// configurations (tests/data/tuned/published.json) rank better the more is exposed (2 of 23 among
// ppb's first three with none, 12 with a quarter, 13 with a half, 14 with all): the time model
// under-costs tensor parallelism beyond its collectives (a rank's smaller matrix products run
// further from the peak than one achievable fraction says). A half, until those are in the model;
// a measured share replaces it in the cluster description (host_api/docs/cluster.md, "Overlap").
inline constexpr double default_overlap_exposed_fraction = 0.5;

// The share of the device's memory bandwidth (DeviceSpec::memory_bandwidth_tb_s, the datasheet's)
// that kernels streaming large tensors through it reach, such as the loss's passes over the
// logits. An assumption, not a calibration: streaming copy kernels run near the datasheet rate
// (about 3.0 of an H100's 3.35 TB/s), and nothing the published throughputs show pins it
// further; a measured share replaces it in the cluster description.
inline constexpr double default_memory_bandwidth_fraction = 0.9;

// The fixed time of one layer's forward on one micro-batch, µs, however few tokens it holds (its
// backward: twice that): the layer's kernels start and finish one after another, and each leaves
// the device part-idle while it launches and while its last wave of tiles runs on a few of the
// SMs. Transformer Engine's layer runs about 25 kernels a forward under FP8 (the norms fused with
// their quantisation, four products, rotary embedding, attention, activation, the residual adds,
// the amax reductions, the tensor-parallel collectives) and twice as many a backward, a few µs
// each. Nobody publishes the sum; the published tuned configurations (tests/data/tuned/
// published.json) choose micro-batches of 2 and 4 where memory allows, which only a fixed cost per
// micro-batch explains (without one, a layer's time is linear in its tokens and the micro-batch
// size ties), and rank best around 100 µs with the achievable fractions recalibrated at each: 16 of
// 25 among ppb's first three with 0, 17 with 50, 18 with 100 and 150, 17 with 200. A measured
// figure replaces it in the cluster description (host_api/docs/cluster.md, "Per-layer overhead").
inline constexpr double default_layer_overhead_us = 100.0;

// What a training process holds on its device outside the framework's caching allocator, MB:
// the CUDA context (its kernels' code and the runtime's own buffers) and the collectives'
// buffers. Memory models predict what the allocator reserves (what torch.cuda.
// max_memory_reserved reports); the runtime's memory less this is what it can reserve. PyTorch's
// out-of-memory messages give it ("this process has X in use", less what PyTorch allocated and
// reserved): 0.51 GiB in a DDP job on H200 while it loaded its model (sungwon-chae/arxiv_confi,
// etu_logging.md), 1.20 GiB in a multi-GPU fine-tuning job (hiyouga/LlamaFactory issue 9510). The
// larger, to the MB above; more communicators keep more (NCCL's buffers per peer and channel):
// measure yours (host_api/docs/cluster.md, "Memory").
inline constexpr double default_outside_allocator_mb = 1229.0;

// The accelerators ppb knows, in a fixed order (A100, H100, H200, B200, B300, GB200, GB300,
// MI300X, MI325X, MI355X, Ascend910B).
[[nodiscard]] std::span<const DeviceSpec> known_devices() noexcept;

// The known device named `name` (case-insensitive). Throws ppb::InputError naming the unknown
// name, a "did you mean", and every known name.
[[nodiscard]] const DeviceSpec& device_named(std::string_view name);

// The matrix precision a cluster's layers run their rate at.
enum class MatrixPrecision { bf16, fp8, fp32 };

// The device's calibrated achievable fraction at `precision`, else default_achievable_fraction.
[[nodiscard]] double achievable_fraction(const DeviceSpec& device,
                                         MatrixPrecision precision) noexcept;

struct Cluster {
    DeviceSpec device;  // with the document's overrides applied
    std::uint32_t devices_per_node = 0;
    double intra_node_gb_s = 0.0;
    double network_gb_s = 0.0;
    // Per step of a transfer over the network: NCCL's for a ring step over the network
    // (hwLatencies[NET][Ring][Simple], src/graph/tuning.cc at NVIDIA/nccl 5067397c) unless the
    // description gives one.
    double network_latency_us = 14.0;
    // The fraction of the peak matrix rate the layers achieve: the device's calibrated one at
    // the precision (achievable_fraction()) unless the description gives it.
    double achievable_fraction = default_achievable_fraction;
    MatrixPrecision precision = MatrixPrecision::bf16;
    // The share of an overlapped collective that stays exposed (default_overlap_exposed_fraction):
    // with overlap a collective costs share x its time + what of the rest outlasts its products.
    double overlap_exposed_fraction = default_overlap_exposed_fraction;
    // The share of the memory bandwidth streaming kernels reach
    // (default_memory_bandwidth_fraction).
    double memory_bandwidth_fraction = default_memory_bandwidth_fraction;
    // The fixed time of a body layer's forward on one micro-batch, µs (its backward: twice that;
    // default_layer_overhead_us).
    double layer_overhead_us = default_layer_overhead_us;
    // What the process holds outside the caching allocator, MB (default_outside_allocator_mb).
    double outside_allocator_mb = default_outside_allocator_mb;

    // The peak rate at `precision`, TFLOP/s.
    [[nodiscard]] double peak_tflops() const noexcept;
    // peak_tflops() x achievable_fraction: the rate the time model uses.
    [[nodiscard]] double achieved_tflops() const noexcept;
    // The device memory the runtime reports, MB (2^20 bytes): runtime_memory_gib, else
    // memory_gib.
    [[nodiscard]] double runtime_memory_mb() const noexcept;
    // What the framework's caching allocator can reserve on one device, MB: runtime_memory_mb()
    // less outside_allocator_mb; the memory limit when none is given.
    [[nodiscard]] double memory_mb() const noexcept;
    // Where memory_mb() comes from, for the note a host prints when it is the limit: "the
    // H100's 79.11 GiB as the runtime reports it, less 1229 MB kept outside the allocator".
    [[nodiscard]] std::string describe_memory() const;
    // memory_bandwidth_tb_s x memory_bandwidth_fraction, bytes per second; 0 when the device
    // gives no bandwidth.
    [[nodiscard]] double streamed_bytes_per_second() const noexcept;
};

// The cluster of `name`'s devices with the table's figures and the defaults above. Throws as
// device_named().
[[nodiscard]] Cluster cluster_of_device(std::string_view name);

// Reads a ppb.cluster/1 document. Throws ppb::InputError "<source>: <JSON path>: <problem>" for
// malformed JSON, a wrong or missing format, an unknown device name (listing the known ones), an
// unknown field, a figure that is not a finite number in its range (memory 0 < GiB <= 1e6, rates
// and bandwidths >= 0, latency and layer_overhead_us 0 to 1e7 µs, achievable_fraction and
// memory_bandwidth_fraction in (0, 1], overlap_exposed_fraction in [0, 1], devices_per_node 1 to 1
// 000 000), a custom device without one of its figures, and a precision the device has no rate for.
// `source` names the document in messages.
[[nodiscard]] Cluster read_cluster(std::string_view text, std::string_view source);

[[nodiscard]] std::string_view precision_name(MatrixPrecision precision) noexcept;

}  // namespace ppb::partition

#endif  // PPB_PARTITION_CLUSTER_HPP
