// The measured points of tests/data/real (format ppb.real/1, tests/data/real/README.md): each
// file read and checked against what the format promises, and the placement of its measured
// stage as 'ppb predict' takes it.
//
// The placement is Megatron-LM's own, built by ppb's importer of Megatron's layout flags
// (ppb::importers::megatron_layout: the even split, --decoder-first/last-pipeline-num-layers,
// virtual pipeline chunks, --pipeline-model-parallel-layout, recompute kinds, dense and MoE
// layer groups), so that the harness and 'ppb import megatron' cannot disagree about which
// layers the measured rank held. The measured rank is the last (Megatron's TensorBoard writer
// lives there), which holds the last pipeline stage in every rank order Megatron has.
//
// Kept in its own translation unit: it sees the namespace ppb, which the test files, whose
// helpers are called ppb(...), must not meet in a unity build.
#ifndef PPB_TESTS_ANALYTIC_REAL_POINTS_HPP
#define PPB_TESTS_ANALYTIC_REAL_POINTS_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace real_points {

// The sets of the real runs ("set" in each file): "calibration" (the analytic model's defaults
// were chosen on them), "held_out" (added after, never used to choose anything) and "features"
// (issue 36's runs with MLA, MTP, CP, FP8, FSDP, recompute modules, offloading, CUDA graphs:
// held out, the model's terms for them being written).
inline const std::vector<std::string> set_names = {"calibration", "held_out", "features"};

struct Point {
    std::string file;  // its name in tests/data/real
    std::string name;
    std::string set;
    std::vector<std::string> features;  // the feature tags ("mla", "cp-p2p", ...)
    std::vector<std::string> arguments;
    std::uint32_t world_size = 0;
    std::uint32_t compute_capability = 0;  // of the GPUs the run was measured on
    std::string hardware;
    double measured_mb = 0.0;
    std::optional<double> after_step_mb;      // mem-allocated-bytes at the same iteration
    std::optional<std::string> refused_flag;  // "expect": "refused"
    // "megatron_flags": flags of the run's Megatron-LM branch that no release has (given to
    // 'ppb import megatron-options' as --megatron-flag); "megatron_version": the run's release.
    std::vector<std::string> megatron_flags;
    std::optional<std::string> megatron_version;
};

// Every point of tests/data/real, in file-name order, each checked as it is read (Boost.Test
// assertions naming the file and key): the format's fields and types, the name its file's,
// MB figures that are their bytes in MiB, the measured rank the last, the schedule the one its
// layout flags give, and, for each feature tag, the flags that make it (and, in the features
// set, a tag for every such flag).
[[nodiscard]] std::vector<Point> read_all(const std::string& directory);

// 'ppb predict' arguments for the measured stage: --stages P --stage P-1 --micro-batches M and
// --layers (one chunk) or --schedule interleaved with --chunk per chunk, each as
// [GROUP.]KIND=N,... (groups "dense" and "moe" when the model has both). M is the global
// batch over micro-batch size times data-parallel size, world size / (TP x PP x CP), as
// Megatron-LM's validate_args computes it (megatron/training/arguments.py, commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553).
[[nodiscard]] std::vector<std::string> measured_stage_placement(const Point& point);

// The value of `--flag` in a Megatron argument list: "" for a switch, the values joined by
// spaces for a flag that takes several (argparse's nargs='+'), nullopt when absent (the last
// occurrence wins, as in argparse).
[[nodiscard]] std::optional<std::string> flag_value(const std::vector<std::string>& arguments,
                                                    const std::string& flag);

}  // namespace real_points

#endif  // PPB_TESTS_ANALYTIC_REAL_POINTS_HPP
