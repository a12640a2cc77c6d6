// ppb/sapp/layer_file.hpp — the SAPP layer file: its one reader and its one writer.
//
// The public SAPP balancer (mindspore-ai/hyper-parallel, hyper_parallel/auto_parallel/sapp_ppb,
// utils/layer.py generate_layers_list at 17b58b3d62368d440332612d1a18419da6c62b23) describes a
// model as
//
//     {"name": "llama", "stage_const_mem": C,
//      "pre_defined_layer": {"embedding": 0, "lm_head": -1},
//      "auto_partition_layer": {"decoder": 80},
//      "layers_description": [
//        {"name": "embedding", "model_name": "llama", "type": "HEAD", "nb_layer": 1,
//         "time": 12.0, "memory_parameter": 4210.0},
//        {"name": "decoder", "type": "BODY", "nb_layer": 80, "time": 30.0,
//         "memory_parameter": 1710.0, "memory_activation": 820.0, ...}, ...]}
//
// SAPP's memory of stage s (its solver's constraint) is
//     stage_const_mem + [s = 0] sum_HEAD memory_parameter + [s = last] sum_TAIL memory_parameter
//     + n_s x BODY memory_parameter + sum_kinds n_s,kind x memory_<kind> x in-flight(s),
// so stage_const_mem is on every stage and HEAD/TAIL memory excludes it. ppb adds an optional
// top-level "comment". ppb fit --export-sapp wrote the constant as "constant_memory_mb" before
// it wrote stage_const_mem; the reader still takes that name, with a warning.
//
// What the times mean (a layer's forward, or its forward + backward) is the convention of the
// tool the file was written for; the reader keeps the numbers as written and the time model
// (ppb/partition/time_model.hpp) applies the convention.
//
// Spellings. SAPP's own key tables (utils/recompute.py at 71c100e76feaa8b56c55e71d8c0fe8fda7439050)
// spell some keys with trailing spaces: it reads full recompute's backward time from
// "recompute_time " (JSON_TIME_NAME), and its aligned memory names (JSON_MEMORY_NAME_ALIGNED) are
// "memory_activation ", "memory_select_rec " and "memory_recompute  ". The reader takes each of
// those as the field of the plain name (sapp_spellings); an entry that gives both spellings of
// one field with different values is refused, naming both. The writer writes "recompute_time "
// (the only spelling SAPP reads) and the plain memory names (the ones SAPP reads).
//
// SAPP-ND's newer form (hyper_parallel/auto_parallel/sapp_nd/memory_estimation/_ppb.py
// lay_ppb_new / ppb_combine_bodies_new at 0f0e617a156b700b28ca248c343db6a6e7bd9369, wrapped as
// {"layers_description_new": [...]} by its _backbone.py): an entry lists the recomputation
// options it offers, "options": ["NONE", "FULL"] (SAPP's Recompute.TYPE names NONE, SLCT, COMM,
// BOTH, FULL), and gives memory_activation, forward_time and backward_time as dicts per option,
// {"NONE": 994, "FULL": 32}. BODY entries are named BODY_0 ... BODY_n, a combined body
// COMBINED_...; each name is a group as below. The reader takes the dicts into the same fields:
// memory_activation.K and backward_time.K are kind K's activation memory and backward time;
// forward_time must be one number for every option (recomputation lengthens the backward, and a
// layer has one forward), else it is refused by name. A dict key that is no option of the entry,
// a dict without "options", or an option name SAPP does not know are refused.
//
// The reader checks the form of every field it knows, whoever will use it (times >= 0,
// coefficients > -1, memory >= 0, nb_layer a positive integer, each within its range in
// ppb/limits.hpp). A field it does not know is a warning with a "did you mean" (SAPP versions
// add fields), not a refusal. It requires at least one BODY entry and pre_defined_layer stages
// of 0 (HEAD) or -1 (TAIL).
//
// pre_defined_layer and auto_partition_layer name the operators SAPP's timeline analyser looks for
// (utils/config.py time_parser), not necessarily entries: SAPP's ModelInfo writes
// {"HEAD": 0, "TAIL": -1} and {"NumberOfLayers": N}, its published files {"LLamaDecodeLayer": 96}.
// Any names are accepted. When auto_partition_layer's counts disagree with the BODY entries'
// nb_layer (per group when the names are the groups', else in all), or a predefined name is an
// entry of another type, that is a warning: the entries are what ppb plans with.
//
// Several BODY entries describe a model whose body layers are not all alike (dense and MoE
// layers, an encoder and a decoder): each BODY name is a *group* of layers, and the body layers in
// model order are the BODY entries in file order, nb_layer each. Entries of the same name are the
// same group, so a pattern (dense, MoE, dense, MoE, ...) is written as repeated entries; they must
// then be alike in every field but nb_layer. What a consumer needs beyond that (the time
// model: a time for every entry; the table model: the BODY's memory) it checks itself, naming
// the place with entry_path() / entry_field_path().
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

// Top-level field names.
inline constexpr std::string_view list_field = "layers_description";
inline constexpr std::string_view name_field = "name";
inline constexpr std::string_view stage_const_field = "stage_const_mem";
inline constexpr std::string_view pre_defined_field = "pre_defined_layer";
inline constexpr std::string_view auto_partition_field = "auto_partition_layer";
inline constexpr std::string_view comment_field = "comment";  // ppb's own
// SAPP-ND's list of entries in its per-option form (read like list_field; never written).
inline constexpr std::string_view new_list_field = "layers_description_new";
// The name ppb fit --export-sapp gave stage_const_mem before it wrote SAPP's own: still read.
inline constexpr std::string_view old_constant_field = "constant_memory_mb";
// The fields SAPP and ppb know, in the order the writer writes them.
inline constexpr std::array<std::string_view, 6> top_level_fields = {
    comment_field,        name_field,        pre_defined_field,
    auto_partition_field, stage_const_field, list_field};

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

// SAPP's other spellings of a field (utils/recompute.py): {field, SAPP's spelling}.
struct Spelling {
    std::string_view field;
    std::string_view sapp;
};
inline constexpr std::array<Spelling, 4> sapp_spellings = {{
    {"recompute_time", "recompute_time "},        // JSON_TIME_NAME[FULL], what SAPP reads
    {"memory_activation", "memory_activation "},  // JSON_MEMORY_NAME_ALIGNED
    {"memory_select_rec", "memory_select_rec "},
    {"memory_recompute", "memory_recompute  "},
}};
// The name the writer gives `field`: SAPP's spelling where SAPP reads only that one.
[[nodiscard]] constexpr std::string_view written_name(std::string_view field) noexcept {
    return field == sapp_spellings[0].field ? sapp_spellings[0].sapp : field;
}

// SAPP-ND's per-option form: the entry's option list, and the option names (SAPP's
// Recompute.TYPE, in ppb_kind order: none, select, comm, both, full).
inline constexpr std::string_view options_field = "options";
inline constexpr std::array<std::string_view, PPB_KIND_COUNT> option_names = {
    "NONE", "SLCT", "COMM", "BOTH", "FULL"};

// Every field of an entry, in the order the writer writes them.
inline constexpr std::array<std::string_view, 23> entry_fields = {
    "name",
    "model_name",
    "type",
    "nb_layer",
    "time",
    "forward_time",
    "weight_grad_time",
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
    std::optional<std::string> model_name{};  // SAPP's: the model the layer belongs to
    EntryType type = EntryType::body;
    std::uint32_t nb_layer = 1;  // >= 1
    // Times of one layer, in the file's own unit, each >= 0, as written: what `time` means (the
    // forward, today's SAPP; forward + backward, the older toolkit) is the time model's
    // convention (ppb/partition/time_model.hpp). `forward_time` is the forward, the
    // backward_time_fields the backward of each kind.
    std::optional<double> time{};
    std::optional<double> forward_time{};
    std::array<std::optional<double>, PPB_KIND_COUNT> backward_time{};  // backward_time_fields
    std::array<std::optional<double>, PPB_KIND_COUNT> backward_coef{};  // each > -1
    // ppb's own field, for the zero-bubble schedules: the weight-gradient pass (W) of one layer,
    // the part of its backward without recomputation that nothing downstream waits for. SAPP
    // neither writes nor reads it.
    std::optional<double> weight_grad_time{};
    // Memory of one layer in MB, each >= 0.
    std::optional<double> memory_parameter{};  // parameters, gradients, optimizer state
    std::array<std::optional<double>, PPB_KIND_COUNT> memory_activation{};  // activation_fields

    friend bool operator==(const Entry&, const Entry&) = default;
};

// A name and a number, in file order: pre_defined_layer (layer name -> stage, 0 or -1 = last)
// and auto_partition_layer (layer name -> number of layers).
struct NamedValue {
    std::string name;
    std::int64_t value = 0;

    friend bool operator==(const NamedValue&, const NamedValue&) = default;
};

struct LayerFile {
    std::vector<Entry> entries;             // in file order; as read: not empty, exactly one BODY
    std::optional<std::string> name;        // SAPP's model name
    std::optional<double> stage_const_mem;  // MB on every stage; may be negative
    std::vector<NamedValue> pre_defined_layer;     // stage of each HEAD (0) and TAIL (-1) layer
    std::vector<NamedValue> auto_partition_layer;  // the BODY layers and their number
    std::optional<std::string> comment;
    // What the reader noticed and the reader's user should be told (unknown fields, the old
    // constant_memory_mb name, names that match no entry), each a sentence without "warning:".
    // Not part of the file's content: the writer ignores it, operator== does not compare it.
    std::vector<std::string> warnings;

    // The index of the (first) BODY entry; entries.size() when there is none.
    [[nodiscard]] std::size_t body_index() const noexcept;

    // The groups of body layers: one per BODY name, in order of first appearance.
    struct BodyGroup {
        std::string name;
        std::vector<std::size_t> entries;  // its BODY entries, in file order
        std::uint32_t layers = 0;          // their nb_layer summed
    };
    [[nodiscard]] std::vector<BodyGroup> body_groups() const;
    // The group (index into body_groups()) of every body layer, in model order.
    [[nodiscard]] std::vector<std::uint32_t> body_sequence() const;
    // All body layers.
    [[nodiscard]] std::uint32_t body_layers() const noexcept;

    friend bool operator==(const LayerFile& a, const LayerFile& b) {
        return a.entries == b.entries && a.name == b.name &&
               a.stage_const_mem == b.stage_const_mem &&
               a.pre_defined_layer == b.pre_defined_layer &&
               a.auto_partition_layer == b.auto_partition_layer && a.comment == b.comment;
    }
};

// Reads a parsed document. Throws ppb::InputError "<source>: <JSON path>: <problem>" (the
// node's source and path) for: a root that is not an object, a missing name, type or nb_layer,
// a value of the wrong form, an empty list, no BODY entry, BODY entries of one name that differ
// in more than nb_layer, more body layers in all than limits::layers, both stage_const_mem and
// constant_memory_mb, both layers_description and layers_description_new, two spellings of one
// field that disagree, a per-option dict the entry's options do not explain, differing forward
// times per option, a pre_defined_layer stage other than 0 and -1. Unknown fields, names in
// pre_defined_layer / auto_partition_layer that match no entry or an entry of another type, and
// counts that disagree with the BODY entries are warnings ("<source>: <path>: ...").
[[nodiscard]] LayerFile read_layer_file(const JsonNode& root);
// Parses `text` with ppb::parse_json (exact numbers, no repeated keys) and reads it.
[[nodiscard]] LayerFile parse_layer_file(std::string_view text, std::string_view source);
// Reads the file at `path` ("-": standard input).
[[nodiscard]] LayerFile load_layer_file(const std::filesystem::path& path);

// The document: the top-level fields in top_level_fields order, the fields of each entry in
// entry_fields order, absent ones left out (an empty pre_defined_layer or auto_partition_layer
// too). nb_layer is written as an integer, every other
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
