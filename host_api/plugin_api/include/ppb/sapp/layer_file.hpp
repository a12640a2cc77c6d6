// ppb/sapp/layer_file.hpp — the SAPP layer file: its one reader and its one writer.
//
// The public SAPP balancer describes a model as {"layers_description": [...]} with HEAD, BODY
// and TAIL entries, each giving its layer count, per-layer times and per-layer memory; ppb adds
// a top-level "constant_memory_mb" (and allows a "comment"). The table model reads its memory,
// the partitioner its times, and ppb fit --export-sapp writes one: all of them through this
// module, so the fields and their rules are stated once.
//
//     {"comment": "...", "constant_memory_mb": C,
//      "layers_description": [
//        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 12.0,
//         "memory_parameter": 4210.0},
//        {"name": "decoder", "type": "BODY", "nb_layer": 80, "time": 30.0,
//         "memory_parameter": 1710.0, "memory_activation": 820.0, ...}, ...]}
//
// The reader checks the form of every field it knows, whoever will use it (times > 0,
// coefficients > -1, memory >= 0, nb_layer a positive integer, each within its range in
// ppb/limits.hpp), refuses unknown fields with a
// "did you mean", and requires exactly one BODY entry. What a consumer needs beyond that (the
// time model: a time for every entry; the table model: the BODY's memory) it checks itself,
// naming the place with entry_path() / entry_field_path().
#ifndef PPB_SAPP_LAYER_FILE_HPP
#define PPB_SAPP_LAYER_FILE_HPP

#include <ppb/abi.h>
#include <ppb/json_input.hpp>

#include <boost/json/object.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::sapp {

// Field names.
inline constexpr std::string_view list_field = "layers_description";
inline constexpr std::string_view constant_memory_field = "constant_memory_mb";  // ppb's own
inline constexpr std::string_view comment_field = "comment";                     // ppb's own
inline constexpr std::array<std::string_view, 3> top_level_fields = {
    list_field, constant_memory_field, comment_field};

// Per recompute kind (ppb_kind order: none, select, comm, both, full): the backward time of one
// layer, its coefficient c (backward = (1 + c) x base), and the activation memory of one layer
// and in-flight micro-batch.
inline constexpr std::array<std::string_view, PPB_KIND_COUNT> backward_time_fields = {
    "backward_time", "select_rec_time", "select_comm_time", "both_comm_select_time",
    "recompute_time"};
inline constexpr std::array<std::string_view, PPB_KIND_COUNT> backward_coef_fields = {
    "backward_coef", "select_rec_coef", "select_comm_coef", "both_comm_select_coef",
    "recompute_coef"};
inline constexpr std::array<std::string_view, PPB_KIND_COUNT> activation_fields = {
    "memory_activation", "memory_select_rec", "memory_select_comm", "memory_both_comm_select",
    "memory_recompute"};

// Every field of an entry, in the order the writer writes them.
inline constexpr std::array<std::string_view, 21> entry_fields = {
    "name",
    "type",
    "nb_layer",
    "time",
    "forward_time",
    backward_time_fields[0],
    backward_coef_fields[0],
    backward_time_fields[1],
    backward_coef_fields[1],
    backward_time_fields[2],
    backward_coef_fields[2],
    backward_time_fields[3],
    backward_coef_fields[3],
    backward_time_fields[4],
    backward_coef_fields[4],
    "memory_parameter",
    activation_fields[0],
    activation_fields[1],
    activation_fields[2],
    activation_fields[3],
    activation_fields[4],
};

enum class EntryType { head, body, tail };
inline constexpr std::array<std::string_view, 3> entry_type_names = {"HEAD", "BODY", "TAIL"};

[[nodiscard]] constexpr std::string_view type_name(EntryType type) noexcept {
    return entry_type_names[static_cast<std::size_t>(type)];
}

// One entry of layers_description. Absent fields are nullopt.
struct Entry {
    std::string name;
    EntryType type = EntryType::body;
    std::uint32_t nb_layer = 1;  // >= 1
    // Times of one layer, in the file's own unit, each > 0.
    std::optional<double> time{};          // the forward time
    std::optional<double> forward_time{};  // the forward time, preferred to `time`
    std::array<std::optional<double>, PPB_KIND_COUNT> backward_time{};  // backward_time_fields
    std::array<std::optional<double>, PPB_KIND_COUNT> backward_coef{};  // each > -1
    // Memory of one layer in MB, each >= 0.
    std::optional<double> memory_parameter{};  // parameters, gradients, optimizer state
    std::array<std::optional<double>, PPB_KIND_COUNT> memory_activation{};  // activation_fields

    friend bool operator==(const Entry&, const Entry&) = default;
};

struct LayerFile {
    std::vector<Entry> entries;  // in file order; as read: not empty, exactly one BODY
    std::optional<double> constant_memory_mb;  // >= 0
    std::optional<std::string> comment;

    // The index of the (first) BODY entry; entries.size() when there is none.
    [[nodiscard]] std::size_t body_index() const noexcept;

    friend bool operator==(const LayerFile&, const LayerFile&) = default;
};

// Reads a parsed document. Throws ppb::InputError "<source>: <JSON path>: <problem>" (the
// node's source and path) for: a root that is not an object, an unknown field (with "did you
// mean"), a missing name, type or nb_layer, a value of the wrong form, an empty list, no BODY
// entry or several.
[[nodiscard]] LayerFile read_layer_file(const JsonNode& root);
// Parses `text` with ppb::parse_json (exact numbers, no repeated keys) and reads it.
[[nodiscard]] LayerFile parse_layer_file(std::string_view text, std::string_view source);
// Reads the file at `path` ("-": standard input).
[[nodiscard]] LayerFile load_layer_file(const std::filesystem::path& path);

// The document: comment, layers_description, constant_memory_mb, the fields of each entry in
// entry_fields order, absent ones left out. nb_layer is written as an integer, every other
// number as a double; read back, it gives `file` again bit for bit.
[[nodiscard]] boost::json::object to_json(const LayerFile& file);
// to_json() as indented text (ppb::to_pretty_json). Throws std::domain_error for a non-finite
// number.
[[nodiscard]] std::string write_layer_file(const LayerFile& file);

// JSON paths for consumers' messages: "layers_description[2]", "layers_description[2].time".
[[nodiscard]] std::string entry_path(std::size_t index);
[[nodiscard]] std::string entry_field_path(std::size_t index, std::string_view field);
// 'layers_description[1] (HEAD "embedding")', for warnings about an entry.
[[nodiscard]] std::string describe_entry(const LayerFile& file, std::size_t index);

}  // namespace ppb::sapp

#endif  // PPB_SAPP_LAYER_FILE_HPP
