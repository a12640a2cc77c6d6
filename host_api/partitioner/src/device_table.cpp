// The accelerators ppb knows: their vendors' datasheet figures, dense (ppb/partition/cluster.hpp),
// and the memory the runtime reports of each (what a process can reserve at most; it differs by a
// few hundred MiB between driver versions: the figure of one public report).
// A figure per device is divided out of a system's when the vendor gives only the system's (the
// 8-GPU HGX B200, the 72-GPU GB200 NVL72). Links are per device and direction: NVLink's "900
// GB/s" of an H100 is both directions, 450 each way.
#include <ppb/partition/cluster.hpp>

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

namespace ppb::partition {

namespace {

// The achievable fractions calibrated against the published throughputs of tuned dense
// configurations (tests/data/tuned/published.json; tests/partition/test_tuned_configurations.cpp
// checks that each makes the median of published / predicted 1, the attention's core and the LM
// head timed at the 16-bit peak times the same fraction): FP8 on H100 (15 NeMo 24.07 and
// Megatron-Bridge runs), B200 (4), GB200 (6) and GB300 (6: Megatron-Bridge's 25.11 to 26.06
// containers; the GB300's higher fraction is its newer software and its higher power, 1.4 kW
// to the GB200's 1.2, at the same dense peak). The other devices and precisions have no
// published dense run ppb times yet: default_achievable_fraction.
constexpr double kH100Fp8Fraction = 0.489;
constexpr double kB200Fp8Fraction = 0.493;
constexpr double kGB200Fp8Fraction = 0.476;
constexpr double kGB300Fp8Fraction = 0.582;
// No dense B300 run is published: the B300 takes the B200's fraction (the same FP8 and 16-bit
// dense rates and memory bandwidth; Blackwell Ultra adds FP4 rate, memory and attention's
// exponentials, which the time model's FP8 products do not use).
constexpr double kB300Fp8Fraction = kB200Fp8Fraction;

const std::array<DeviceSpec, 11>& table() {
    static const std::array<DeviceSpec, 11> devices = {{
        {"A100", "NVIDIA A100 SXM4 80 GB", 80.0, 2.039, 312.0, 0.0, 19.5, 300.0, 8, 25.0,
         "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: BF16 312 TFLOPS dense, FP32 "
         "19.5, 2 039 GB/s, NVLink 600 GB/s); NVIDIA DGX A100 datasheet (8 GPUs, a 200 Gb/s "
         "HDR InfiniBand adapter per GPU); runtime memory: deviceQuery of an A100-SXM4-80GB, "
         "85 100 068 864 bytes (thamada/nvidia-smi, gls/A100SXMx4_deviceQuery.py at b09ef13)",
         0.0, 0.0, true, 79.26},
        {"H100", "NVIDIA H100 SXM5 80 GB", 80.0, 3.35, 989.0, 1979.0, 67.0, 450.0, 8, 50.0,
         "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: BF16 1 979 and FP8 3 958 TFLOPS with "
         "sparsity, half that dense; FP32 67; 3.35 TB/s; NVLink 900 GB/s); NVIDIA DGX H100 "
         "datasheet (8 GPUs, a 400 Gb/s ConnectX-7 per GPU); runtime memory: PyTorch's "
         "out-of-memory message on an H100 80GB HBM3, \"a total capacity of 79.11 GiB\" "
         "(vllm-project/vllm issue 27508)",
         0.0, kH100Fp8Fraction, true, 79.11},
        {"H200", "NVIDIA H200 SXM 141 GB", 141.0, 4.8, 989.0, 1979.0, 67.0, 450.0, 8, 50.0,
         "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: the H100's rates, 141 GB HBM3e at 4.8 "
         "TB/s, NVLink 900 GB/s); NVIDIA DGX H200 datasheet (8 GPUs, a 400 Gb/s adapter per "
         "GPU); runtime memory: PyTorch's total_memory of an H200, 143 156 MiB "
         "(ai-bot-pro/achatbot, deploy/modal/src/llm/vllm/vlm/skywork_r1v.py at 298019b)",
         0.0, 0.0, true, 139.80},
        {"B200", "NVIDIA B200 (HGX B200) 180 GB", 180.0, 8.0, 2250.0, 4500.0, 75.0, 900.0, 8, 50.0,
         "NVIDIA HGX B200 datasheet (8 GPUs: FP8 72 and BF16 36 PFLOPS with sparsity, FP32 600 "
         "TFLOPS, 1.4 TB HBM3e, NVLink 1.8 TB/s per GPU), divided by 8, dense; NVIDIA DGX B200 "
         "datasheet (a 400 Gb/s ConnectX-7 per GPU); runtime memory: PyTorch's total_memory of "
         "a B200, 182 642 MiB (ai-bot-pro/achatbot, deploy/modal/src/llm/vllm/vlm/"
         "skywork_r1v.py at 298019b)",
         0.0, kB200Fp8Fraction, false, 178.36},
        {"B300", "NVIDIA B300 (HGX B300) 270 GB", 270.0, 8.0, 2250.0, 4500.0, 75.0, 900.0, 8, 100.0,
         "NVIDIA HGX B300 datasheet (8 GPUs: FP8 72 and BF16 36 PFLOPS with sparsity, FP32 600 "
         "TFLOPS, NVLink 1.8 TB/s per GPU), divided by 8, dense, as in Verda's "
         "per-GPU table (verda.com/blog/gb300-nvl72-architecture: FP8 4.5 and BF16 2.25 PFLOPS, "
         "270 GB); NVIDIA DGX B300 (an 800 Gb/s ConnectX-8 per GPU); runtime memory: PyTorch's "
         "out-of-memory messages on B300 nodes of 8, \"a total capacity of 267.69 GiB\", and "
         "a trainer's device_total_bytes 287 428 771 840 (public 2026 job notes; no repository "
         "named by the index)",
         0.0, kB300Fp8Fraction, false, 267.69},
        {"GB200", "NVIDIA GB200 NVL72, one Blackwell GPU, 186 GB", 186.0, 8.0, 2500.0, 5000.0, 80.0,
         900.0, 72, 50.0,
         "NVIDIA GB200 NVL72 specifications (72 GPUs: FP8 720 and BF16 360 PFLOPS with sparsity, "
         "FP32 5 760 TFLOPS, 13.4 TB HBM3e at 576 TB/s, NVLink 130 TB/s), divided by 72, dense; "
         "one NVLink domain of 72 GPUs; a 400 Gb/s ConnectX-7 per GPU; runtime memory: PyTorch's "
         "out-of-memory messages on GB200, \"a total capacity of 184.31 GiB\" (five public "
         "2026 job logs, among them a Kimi-K2.6 FSDP2 run on 4 GB200)",
         0.0, kGB200Fp8Fraction, false, 184.31},
        {"GB300", "NVIDIA GB300 NVL72, one Blackwell Ultra GPU, 279 GB", 279.0, 8.0, 2500.0, 5000.0,
         80.0, 900.0, 72, 100.0,
         "NVIDIA GB300 NVL72 specifications (72 GPUs: FP8 720 and BF16 360 PFLOPS with sparsity, "
         "up to 20 TB HBM3e at 576 TB/s, NVLink 130 TB/s), divided by 72, dense, as in Verda's "
         "per-GPU table (verda.com/blog/gb300-nvl72-architecture: FP8 5 and BF16 2.5 PFLOPS, FP32 "
         "80 TFLOPS, 279 GB at 8 TB/s); one NVLink domain of 72 GPUs; an 800 Gb/s ConnectX-8 "
         "per GPU (72 in the rack); runtime memory: PyTorch's out-of-memory message in a "
         "GPT-OSS-120B FSDP job on 16 nodes of 4 GB300, \"a total capacity of 276.50 GiB\" "
         "(the same on a DGX Station GB300; public 2026 notes, no repository named by the index)",
         0.0, kGB300Fp8Fraction, false, 276.50},
        {"MI300X", "AMD Instinct MI300X 192 GB", 192.0, 5.3, 1307.4, 2614.9, 163.4, 448.0, 8, 50.0,
         "AMD Instinct MI300X data sheet (BF16 1 307.4 and FP8 2 614.9 TFLOPS dense, FP32 163.4, "
         "192 GB HBM3 at 5.3 TB/s, seven Infinity Fabric links of 128 GB/s, 64 each way); the "
         "8-GPU MI300X platform with a 400 Gb/s adapter per GPU; runtime memory: PyTorch's (ROCm) "
         "out-of-memory message on an MI300X, \"a total capacity of 191.98 GiB\" "
         "(vllm-project/vllm issue 7951)",
         0.0, 0.0, true, 191.98},
        {"MI325X", "AMD Instinct MI325X 256 GB", 256.0, 6.0, 1307.4, 2614.9, 163.4, 448.0, 8, 50.0,
         "AMD Instinct MI325X data sheet (the MI300X's rates: BF16 1 307.4 and FP8 2 614.9 TFLOPS "
         "dense, FP32 163.4; 256 GB HBM3E at 6 TB/s; the MI300X's Infinity Fabric links); an "
         "8-GPU platform with a 400 Gb/s adapter per GPU; runtime memory: PyTorch's (ROCm) "
         "out-of-memory message on an MI325X, \"a total capacity of 255.98 GiB\" "
         "(vllm-project/vllm issue 41962)",
         0.0, 0.0, true, 255.98},
        {"MI355X", "AMD Instinct MI355X 288 GB", 288.0, 8.0, 2516.6, 5033.2, 157.3, 537.6, 8, 50.0,
         "AMD Instinct MI355X data sheet (BF16 2 516.6 and FP8 5 033.2 TFLOPS dense, FP32 157.3; "
         "288 GB HBM3E at 8 TB/s; seven Infinity Fabric links of 153.6 GB/s, 76.8 each way); an "
         "8-GPU platform with a 400 Gb/s adapter per GPU; runtime memory: PyTorch's (ROCm) "
         "out-of-memory messages on MI355X, \"a total capacity of 287.98 GiB\" (public 2026 "
         "training notes on 8-GPU MI355X nodes; no repository named by the index)",
         0.0, 0.0, true, 287.98},
        {"Ascend910B", "Huawei Ascend 910B (Atlas 800T A2)", 64.0, 1.6, 313.0, 0.0, 0.0, 196.0, 8,
         25.0,
         "figures commonly published for the Ascend 910B (FP16 313 TFLOPS, 64 GB HBM2e at 1.6 "
         "TB/s) and the Atlas 800T A2 (8 NPUs, HCCS 392 GB/s both ways, a 200 Gb/s RoCE port per "
         "NPU); Huawei publishes no per-chip datasheet: check them and override with your own; "
         "FP32 not published (0); runtime memory: torch_npu's out-of-memory message on a 910B, "
         "\"60.97 GiB total capacity\" (zai-org/CogVideo issue 63)",
         0.0, 0.0, true, 60.97},
    }};
    return devices;
}

bool same_name(std::string_view a, std::string_view b) {
    return std::ranges::equal(a, b, [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) ==
               std::tolower(static_cast<unsigned char>(y));
    });
}

}  // namespace

std::span<const DeviceSpec> known_devices() noexcept {
    return table();
}

const DeviceSpec& device_named(std::string_view name) {
    for (const DeviceSpec& d : table()) {
        if (same_name(d.name, name))
            return d;
    }
    std::vector<std::string_view> names;
    for (const DeviceSpec& d : table())
        names.emplace_back(d.name);
    std::string message = fmt::format("unknown device '{}'", name);
    if (const auto suggestion = closest_name(name, names))
        message += fmt::format(" (did you mean '{}'?)", *suggestion);
    throw InputError(fmt::format(
        "{}; the devices ppb knows: {} (ppb devices lists their figures; give another as an "
        "object of its figures in a ppb.cluster/1 file)",
        message, fmt::join(names, ", ")));
}

}  // namespace ppb::partition
