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
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

// Default backward-time coefficients c_r of the SAPP tool: backward of kind r = (1 + c_r) x
// backward, for none, select, comm, both, full.
inline constexpr std::array<double, PPB_KIND_COUNT> default_backward_coefficients = {
    0.0, 0.04, 0.125, 0.165, 0.5};

// The times of one group of body layers (a BODY name of the layer file).
struct BodyGroupTime {
    std::string name;
    std::uint32_t layers = 0;                   // its layers in all
    std::array<double, PPB_KIND_COUNT> time{};  // forward + backward of one layer, per kind
    double forward = 0.0;
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

// Per entry, as SAPP reads it: `time` T is a layer's forward + backward without recompute.
// Forward F = forward_time, else T / 3. Backward base = 2 T / 3 (without time: backward_time,
// else 2 F). Backward of kind r = the kind's time field (backward_time, select_rec_time,
// select_comm_time, both_comm_select_time, recompute_time) if given and positive (SAPP takes 0
// as not given), else (1 + c_r) x base, c_r being the kind's coefficient field (backward_coef,
// select_rec_coef, select_comm_coef, both_comm_select_coef, recompute_coef) if given, else the
// default above. A kind's time and coefficient together are an error. HEAD and TAIL entries
// contribute F + backward of none once each, whatever their nb_layer (as SAPP; a warning when
// nb_layer is not 1). A BODY entry of time 0 is an error. Each BODY name is a group of body
// layers (ppb::sapp::LayerFile::body_groups), the BODY entries in file order the model's order.
// Throws ppb::InputError naming the JSON path: the reader's errors (ppb::sapp::read_layer_file), an
// entry with neither time nor forward_time, a kind's time and coefficient together, times too large
// to add up. `source` names the file in messages.
[[nodiscard]] TimeModel time_model(const sapp::LayerFile& file, std::string_view source);
[[nodiscard]] TimeModel parse_time_model(std::string_view json_text, std::string_view source);
[[nodiscard]] TimeModel read_time_model(const std::filesystem::path& path);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_TIME_MODEL_HPP
