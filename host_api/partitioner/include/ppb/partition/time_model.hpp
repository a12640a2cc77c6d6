// ppb/partition/time_model.hpp — the layers' compute times, from a SAPP layer file.
//
// The file is the public SAPP balancer's layer description: {"layers_description": [...]} with
// HEAD, BODY and TAIL entries, read by ppb::sapp (ppb/sapp/layer_file.hpp). Times are in the
// file's own unit; ppb only adds and compares them.
#ifndef PPB_PARTITION_TIME_MODEL_HPP
#define PPB_PARTITION_TIME_MODEL_HPP

#include <ppb/abi.h>
#include <ppb/sapp/layer_file.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

// Default backward-time coefficients c_r of the SAPP tool (utils/recompute.py DEFAULT_COEF in
// mindspore-ai/hyper-parallel at 71c100e76feaa8b56c55e71d8c0fe8fda7439050; the older MindFormers
// toolkit has the same): backward of kind r = (1 + c_r) x backward, for none, select, comm,
// both, full.
inline constexpr std::array<double, PPB_KIND_COUNT> default_backward_coefficients = {
    0.0, 0.04, 0.125, 0.165, 0.5};

// What a layer file's `time` means: the convention of the SAPP the file was written for.
//   hyper_parallel: today's SAPP (mindspore-ai/hyper-parallel, hyper_parallel/auto_parallel/
//                   sapp_ppb, utils/layer.py Layer.compute_internal_time at
//                   17b58b3d62368d440332612d1a18419da6c62b23, backward_default_ratio = 2):
//                   `time` is a layer's FORWARD time; the backward base is 2 x time. The default.
//   toolkit:        the older MindFormers toolkit/pipeline_balance: `time` is a layer's forward +
//                   backward, a third of it forward, two thirds the backward base.
enum class TimeConvention { hyper_parallel, toolkit };
inline constexpr std::array<std::string_view, 2> time_convention_names = {"hyper-parallel",
                                                                          "toolkit"};
[[nodiscard]] constexpr std::string_view name_of(TimeConvention c) noexcept {
    return time_convention_names[static_cast<std::size_t>(c)];
}
// The convention of a name in time_convention_names; none for another name.
[[nodiscard]] constexpr std::optional<TimeConvention> time_convention_from_name(
    std::string_view name) noexcept {
    for (std::size_t i = 0; i < time_convention_names.size(); ++i) {
        if (time_convention_names[i] == name)
            return static_cast<TimeConvention>(i);
    }
    return std::nullopt;
}

// The times of one group of body layers (a BODY name of the layer file).
struct BodyGroupTime {
    std::string name;
    std::uint32_t layers = 0;                   // its layers in all
    std::array<double, PPB_KIND_COUNT> time{};  // forward + backward of one layer, per kind
    double forward = 0.0;
    // The weight-gradient pass W of one layer where the file gives it (weight_grad_time; see
    // WeightGrad below), else none.
    std::optional<double> weight_grad = std::nullopt;
};

// What the zero-bubble schedules split off each backward: the weight-gradient pass W, which
// nothing downstream waits for. Per layer W is the file's weight_grad_time where an entry gives
// it, else the problem's weight_grad_share of the layer's backward without recomputation
// (Problem::weight_grad_share; ppb/partition/simulate_plan.hpp). For the HEAD or TAIL entries
// together: the W they give, and the backward without recomputation of those that give none.
struct EndsWeightGrad {
    double given = 0.0;
    double unsplit_backward = 0.0;
    [[nodiscard]] double at(double share) const { return given + share * unsplit_backward; }
};

struct TimeModel {
    // With one group of body layers: its name, layers, times. With several (grouped()), the
    // first group's name and times, and body_layers is L, all of them: the solver then reads
    // `groups` and `sequence`, never body_time.
    std::string body_name;
    std::uint32_t body_layers = 0;  // L
    // Forward + backward time of one body layer of each recompute kind.
    std::array<double, PPB_KIND_COUNT> body_time{};
    double head_time = 0.0;  // forward + backward of all HEAD entries (stage 0)
    double tail_time = 0.0;  // forward + backward of all TAIL entries (last stage)
    // The forward parts (the same for every recompute kind: recompute lengthens the backward),
    // for simulating a schedule, where forwards and backwards are separate operations.
    double body_forward = 0.0;
    double head_forward = 0.0;
    double tail_forward = 0.0;
    // The weight-gradient pass W (EndsWeightGrad above): a body layer's where the file gives it,
    // and the ends'.
    std::optional<double> body_weight_grad;
    EndsWeightGrad head_weight_grad;
    EndsWeightGrad tail_weight_grad;
    // The groups of body layers in order of first appearance (one per BODY name), and the group
    // of each of the L body layers in model order.
    std::vector<BodyGroupTime> groups;
    std::vector<std::uint32_t> sequence;
    [[nodiscard]] bool grouped() const noexcept { return groups.size() > 1; }
    // The reader's warnings about the file (ppb::sapp::LayerFile::warnings), for the caller to
    // show. The file's memory fields, stage_const_mem among them, are the memory model's: the
    // time model neither needs nor refuses them.
    std::vector<std::string> warnings;
};

// Per entry, with F the forward and B the backward base of one layer:
//   hyper_parallel: F = forward_time, else time; B = 2 x time (without time: backward_time,
//                   else 2 F).
//   toolkit:        F = forward_time, else time / 3; B = 2 time / 3 (without time: as above).
// Backward of kind r = the kind's time field (backward_time, select_rec_time, select_comm_time,
// both_comm_select_time, recompute_time) if given and positive (SAPP takes 0 as not given), else
// (1 + c_r) x B, c_r being the kind's coefficient field (backward_coef, select_rec_coef,
// select_comm_coef, both_comm_select_coef, recompute_coef) if given, else the default above. A
// kind's time and coefficient together are an error. A BODY layer of kind r takes F + backward_r.
// HEAD and TAIL entries contribute F + backward of none once each, whatever their nb_layer (as
// SAPP; a warning when nb_layer is not 1): with only `time`, 3 x time under hyper_parallel,
// exactly SAPP's solver (sapp_solver.py _max_stage_bound_head_tail: time forward, 2 x time
// backward) and its simulator (sapp_pipeline.py get_manual_time); a HEAD or TAIL that gives
// forward_time or a backward field is timed by them, as SAPP's simulator does, with a warning
// when that is not the 3 x time SAPP's solver counts. A BODY entry of time 0 is an error. Each BODY
// name is a group of body layers (ppb::sapp::LayerFile::body_groups), the BODY entries in file
// order the model's order. Throws ppb::InputError naming the JSON path: the reader's errors
// (ppb::sapp::read_layer_file), an entry with neither time nor forward_time, a kind's time and
// coefficient together, times too large to add up, a weight_grad_time longer than the backward
// without recomputation it is part of. `source` names the file in messages.
[[nodiscard]] TimeModel time_model(const sapp::LayerFile& file, std::string_view source,
                                   TimeConvention convention = TimeConvention::hyper_parallel);
[[nodiscard]] TimeModel parse_time_model(
    std::string_view json_text, std::string_view source,
    TimeConvention convention = TimeConvention::hyper_parallel);
[[nodiscard]] TimeModel read_time_model(const std::filesystem::path& path,
                                        TimeConvention convention = TimeConvention::hyper_parallel);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_TIME_MODEL_HPP
