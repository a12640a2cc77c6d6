// The table model's options: a layer file in the public SAPP shape, read into the coefficients
// of the linear memory model (host_api/docs/design.md, "The memory model") and what the report says
// about them.
#ifndef PPB_TABLE_LAYER_TABLE_HPP
#define PPB_TABLE_LAYER_TABLE_HPP

#include <ppb/abi.h>
#include <ppb/sapp/layer_file.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::table {

// The BODY entry's field giving the activation memory of each recompute kind (ppb_kind order).
inline constexpr const auto& activation_keys = sapp::activation_fields;

// One group of body layers: the BODY entries of one name (ppb/sapp/layer_file.hpp), read from
// the group's first entry (the reader has checked that entries of one name are alike).
struct BodyGroupTable {
    std::string name;                 // the BODY entries' name
    std::uint32_t num_layers = 0;     // their nb_layer summed: the group's layers in the model
    std::size_t first_entry = 0;      // index of its first BODY entry in layers_description
    double param_per_layer_mb = 0.0;  // memory_parameter
    // activation_keys[k]; nullopt when the group's entry does not give it (layers of that kind
    // and group cannot be predicted).
    std::array<std::optional<double>, PPB_KIND_COUNT> activation_mb{};
};

struct LayerTable {
    // Coefficients in MB, as in ppb_linear_parameters; const, head and tail are shared by every
    // group of body layers.
    double const_mb = 0.0;  // stage_const_mem, 0 when absent; may be < 0
    double head_mb = 0.0;   // sum over HEAD entries of memory_parameter (once each)
    double tail_mb = 0.0;   // the same over TAIL entries
    // The groups of body layers, one per BODY name, in model order (never empty). A file of one
    // BODY entry has one group, and the fields below are that group's.
    std::vector<BodyGroupTable> groups;
    // The first group's: for a file of one group, the model's body layers.
    double param_per_layer_mb = 0.0;  // its memory_parameter
    // Its activation_keys[k]; nullopt when the file does not give it (that kind cannot be
    // predicted).
    std::array<std::optional<double>, PPB_KIND_COUNT> activation_mb{};
    std::string body_name;         // its BODY entry's name
    std::uint32_t num_layers = 0;  // its layers (nb_layer)

    std::vector<std::string> head_entries;  // names of the HEAD entries, in file order
    std::vector<std::string> tail_entries;
    bool const_defaulted = true;  // stage_const_mem (or the old constant_memory_mb) was absent
    std::vector<std::string> warnings;

    [[nodiscard]] bool grouped() const noexcept { return groups.size() > 1; }
};

// Reads the options JSON, a SAPP layer file read by ppb::sapp (ppb/sapp/layer_file.hpp):
// {"layers_description": [...], "stage_const_mem"?: C, "name"?, "pre_defined_layer"?,
// "auto_partition_layer"?, "comment"?} with HEAD/BODY/TAIL entries (see README.md). Unknown
// keys are warnings (in `warnings`, and the report's). Throws ppb::plugin::InvalidInput naming
// the JSON path for malformed JSON, wrong types, no BODY entry, negative memory, a group of BODY
// entries without memory_parameter or activation memory, and options that are plainly another
// model's.
[[nodiscard]] LayerTable parse_layer_table(std::string_view options_json);

// The report() text {"parameters": {...}, "diagnostics": {...}} described in README.md.
[[nodiscard]] std::string report_json(const LayerTable& table);

}  // namespace ppb::table

#endif  // PPB_TABLE_LAYER_TABLE_HPP
