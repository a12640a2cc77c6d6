#include "layer_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/plugin.hpp>
#include <ppb/sapp/layer_file.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace ppb::table {

namespace {

namespace json = boost::json;
using ppb::plugin::InvalidInput;
using sapp::EntryType;

constexpr std::string_view expected_shape =
    "{\"layers_description\": [{\"name\": ..., \"type\": \"HEAD\" | \"BODY\" | \"TAIL\", "
    "\"nb_layer\": ..., \"memory_parameter\": ..., \"memory_activation\": ..., ...}, ...], "
    "\"stage_const_mem\": ...}";

// Top-level keys that show the options were written for another model (or are another file).
struct ForeignKey {
    std::string_view key;
    std::string_view what;
};

constexpr std::string_view dryrun_file =
    "a ppb.dryrun/1 dry-run file, which dryrun-lsq is fitted to (ppb fit FILE)";
constexpr std::string_view fit_file =
    "a ppb.fit/1 fit result (ppb fit --export-sapp FILE writes the SAPP layer file the table "
    "model reads)";
constexpr std::string_view lsq_options = "dryrun-lsq's options";
constexpr std::string_view shape_options = "the analytic model's options (the transformer's shape)";

constexpr std::array<ForeignKey, 30> foreign_keys = {{
    {"format", dryrun_file},
    {"observations", dryrun_file},
    {"num_stages", dryrun_file},
    {"micro_batches", dryrun_file},
    {"schedule", dryrun_file},
    {"parameters", fit_file},
    {"diagnostics", fit_file},
    {"model", fit_file},
    {"rank_tolerance", lsq_options},
    {"hidden_size", shape_options},
    {"num_attention_heads", shape_options},
    {"num_kv_heads", shape_options},
    {"ffn_hidden_size", shape_options},
    {"seq_length", shape_options},
    {"micro_batch_size", shape_options},
    {"vocab_size", shape_options},
    {"num_layers", shape_options},
    {"tensor_parallel", shape_options},
    {"data_parallel", shape_options},
    {"sequence_parallel", shape_options},
    {"distributed_optimizer", shape_options},
    {"gated_mlp", shape_options},
    {"flash_attention", shape_options},
    {"untie_embeddings", shape_options},
    {"dropout", shape_options},
    {"keep_gathered_inputs", shape_options},
    {"param_bytes", shape_options},
    {"grad_bytes", shape_options},
    {"optimizer_bytes", shape_options},
    {"constant_mb", shape_options},
}};

[[noreturn]] void fail(std::string_view path, const std::string& problem) {
    throw InvalidInput(located_message("", path, problem));
}

std::string join(std::span<const std::string_view> names, std::string_view separator = ", ") {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i != 0)
            out += separator;
        out += names[i];
    }
    return out;
}

// "'a'", "'a' and 'b'", "'a', 'b' and 'c'".
std::string quoted_list(const std::vector<std::string>& keys) {
    std::string out;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i != 0)
            out += (i + 1 == keys.size()) ? " and " : ", ";
        out += quoted_key(keys[i]);
    }
    return out;
}

// Refuses options that are plainly another model's (no layers_description, and keys of another
// model or file), before they are taken for a bad layer file.
void refuse_foreign(const json::object& root) {
    if (root.contains(sapp::list_field) || root.contains(sapp::new_list_field))
        return;
    std::vector<std::string> found;
    std::string_view what;
    for (const auto& member : root) {
        const auto it = std::find_if(foreign_keys.begin(), foreign_keys.end(),
                                     [&](const ForeignKey& f) { return f.key == member.key(); });
        if (it == foreign_keys.end())
            continue;
        // A fit result also has "format": say what it is, not what a dry-run file is.
        if (found.empty() || it->what == fit_file)
            what = it->what;
        found.emplace_back(member.key());
    }
    if (found.empty())
        return;
    throw InvalidInput("these look like options for another model: " + quoted_list(found) +
                       (found.size() == 1 ? " is a field of " : " are fields of ") +
                       std::string(what) +
                       ". The table model takes a SAPP layer file as its options "
                       "(--model-options FILE): " +
                       std::string(expected_shape));
}

// The options as a layer file: ppb::sapp's reader, its ppb::InputError as InvalidInput. The
// table's own refusals come first: options that are not an object or are another model's, and
// a missing layers_description, each with what the table model takes instead.
sapp::LayerFile read_options(std::string_view options_json) {
    try {
        json::value document;
        try {
            document = ppb::parse_json(options_json, {});
        } catch (const ppb::InputError& e) {
            const std::string what = e.what();
            if (what.find("malformed JSON") == std::string::npos)
                throw;
            throw InvalidInput("the options (a SAPP layer file) are not valid JSON: " + what);
        }
        const json::object* root = document.if_object();
        if (root == nullptr) {
            throw InvalidInput(
                "the table model's options must be a JSON object, a SAPP layer "
                "file " +
                std::string(expected_shape) + "; got " + describe_json(document));
        }
        refuse_foreign(*root);
        const JsonNode node(document, {});
        if (!root->contains(sapp::list_field) && !root->contains(sapp::new_list_field)) {
            throw InvalidInput(
                "missing required field 'layers_description': the table model takes a SAPP "
                "layer file with per-layer memory as its options (--model-options FILE): " +
                std::string(expected_shape));
        }
        return sapp::read_layer_file(node);
    } catch (const ppb::InputError& e) {
        throw InvalidInput(e.what());
    }
}

// HEAD and TAIL entries: their memory_parameter, added up; activations ignored. SAPP counts an
// entry's memory once whatever its nb_layer, and so does the model (with a warning).
void add_end_entry(const sapp::LayerFile& file, std::size_t index, double& total,
                   std::vector<std::string>& names, std::vector<std::string>& warnings) {
    const sapp::Entry& entry = file.entries[index];
    const bool head = entry.type == EntryType::head;
    const std::string stage = head ? "stage 0" : "the last stage";
    names.push_back(entry.name);
    if (entry.nb_layer != 1) {
        warnings.push_back(sapp::describe_entry(file, index) + " has nb_layer " +
                           std::to_string(entry.nb_layer) +
                           ": its memory_parameter is counted once, as SAPP counts it (give the "
                           "memory of all its layers together)");
    }
    if (entry.memory_parameter) {
        total += *entry.memory_parameter;
    } else {
        warnings.push_back(sapp::describe_entry(file, index) +
                           " gives no memory_parameter: it adds 0 MB to " + stage);
    }
    std::vector<std::string> ignored;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (entry.memory_activation[k])
            ignored.emplace_back(activation_keys[k]);
    }
    if (!ignored.empty()) {
        warnings.push_back(sapp::describe_entry(file, index) + ": " + quoted_list(ignored) +
                           (ignored.size() == 1 ? " is" : " are") +
                           " ignored: the model has no per-micro-batch activation memory for "
                           "HEAD and TAIL entries, only their memory_parameter on " +
                           stage);
    }
}

}  // namespace

LayerTable parse_layer_table(std::string_view options_json) {
    const sapp::LayerFile file = read_options(options_json);

    LayerTable table;
    // SAPP adds stage_const_mem to every stage, as the model adds C: the same coefficient.
    if (file.stage_const_mem) {
        table.const_mb = *file.stage_const_mem;
        table.const_defaulted = false;
    }
    for (std::size_t i = 0; i < file.entries.size(); ++i) {
        switch (file.entries[i].type) {
            case EntryType::body:
                break;
            case EntryType::head:
                add_end_entry(file, i, table.head_mb, table.head_entries, table.warnings);
                break;
            case EntryType::tail:
                add_end_entry(file, i, table.tail_mb, table.tail_entries, table.warnings);
                break;
        }
    }
    if (!std::isfinite(table.head_mb) || !std::isfinite(table.tail_mb)) {
        fail(sapp::list_field,
             std::string("the ") + (std::isfinite(table.head_mb) ? "TAIL" : "HEAD") +
                 " entries' memory (their memory_parameter, added up) is more than a number "
                 "can hold");
    }

    // Each group of body layers (one per BODY name) has its own memory, read from its first entry:
    // the reader has checked that the entries of one name are alike.
    for (const sapp::LayerFile::BodyGroup& group : file.body_groups()) {
        const std::size_t body_index = group.entries.front();
        const sapp::Entry& body = file.entries[body_index];
        const std::string body_path = sapp::entry_path(body_index);
        if (!body.memory_parameter) {
            fail(body_path, "the BODY entry " + describe_json(json::value(body.name)) +
                                " has no memory_parameter (the parameter, gradient and optimizer "
                                "memory of one layer, in MB), which the table model needs");
        }
        if (std::none_of(body.memory_activation.begin(), body.memory_activation.end(),
                         [](const auto& a) { return a.has_value(); })) {
            fail(body_path,
                 "the BODY entry " + describe_json(json::value(body.name)) +
                     " gives no activation memory: the table model needs at least one of " +
                     join(activation_keys) +
                     " (the memory per layer and in-flight micro-batch of recompute kinds "
                     "none, select, comm, both and full)");
        }
        table.groups.push_back(BodyGroupTable{.name = body.name,
                                              .num_layers = group.layers,
                                              .first_entry = body_index,
                                              .param_per_layer_mb = *body.memory_parameter,
                                              .activation_mb = body.memory_activation});
    }
    const BodyGroupTable& first = table.groups.front();
    table.param_per_layer_mb = first.param_per_layer_mb;
    table.activation_mb = first.activation_mb;
    table.body_name = first.name;
    table.num_layers = first.num_layers;

    if (table.const_defaulted) {
        table.warnings.insert(table.warnings.begin(),
                              "no stage_const_mem: const_mb is taken as 0 MB, as SAPP takes it");
    } else if (table.const_mb < 0.0) {
        table.warnings.insert(
            table.warnings.begin(),
            "stage_const_mem is negative (" + describe_json(json::value(table.const_mb)) +
                " MB): every stage's prediction is lowered by it, as in SAPP; a fitted constant "
                "below 0 is not physical (fit more varied dry runs to get one that is)");
    }
    // The reader's warnings (unknown fields, the old constant_memory_mb name, ...) first.
    table.warnings.insert(table.warnings.begin(), file.warnings.begin(), file.warnings.end());
    if (table.head_entries.empty()) {
        table.warnings.push_back(
            "no HEAD entry: head_mb is 0 MB (stage 0 holds nothing beyond const_mb and its body "
            "layers)");
    }
    if (table.tail_entries.empty()) {
        table.warnings.push_back(
            "no TAIL entry: tail_mb is 0 MB (the last stage holds nothing beyond const_mb and its "
            "body layers)");
    }
    return table;
}

}  // namespace ppb::table
