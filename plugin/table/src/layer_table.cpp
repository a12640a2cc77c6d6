#include "layer_table.hpp"

#include "json_reader.hpp"

#include <ppb/plugin.hpp>

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

constexpr std::string_view list_key = "layers_description";
constexpr std::string_view constant_key = "constant_memory_mb";
constexpr std::string_view comment_key = "comment";
constexpr std::array<std::string_view, 3> top_level_keys = {list_key, constant_key, comment_key};

constexpr std::string_view parameter_key = "memory_parameter";

// Every field of an entry of the public SAPP format. Only name, type, nb_layer and the memory
// fields are read; the times are the partitioner's business and only checked to be numbers.
constexpr std::array<std::string_view, 12> time_keys = {"time",
                                                        "forward_time",
                                                        "backward_time",
                                                        "select_rec_time",
                                                        "select_comm_time",
                                                        "both_comm_select_time",
                                                        "recompute_time",
                                                        "backward_coef",
                                                        "select_rec_coef",
                                                        "select_comm_coef",
                                                        "both_comm_select_coef",
                                                        "recompute_coef"};

constexpr std::array<std::string_view, 21> entry_keys = {
    "name",
    "type",
    "nb_layer",
    time_keys[0],
    time_keys[1],
    time_keys[2],
    time_keys[3],
    time_keys[4],
    time_keys[5],
    time_keys[6],
    time_keys[7],
    time_keys[8],
    time_keys[9],
    time_keys[10],
    time_keys[11],
    parameter_key,
    activation_keys[0],
    activation_keys[1],
    activation_keys[2],
    activation_keys[3],
    activation_keys[4],
};

constexpr std::string_view expected_shape =
    "{\"layers_description\": [{\"name\": ..., \"type\": \"HEAD\" | \"BODY\" | \"TAIL\", "
    "\"nb_layer\": ..., \"memory_parameter\": ..., \"memory_activation\": ..., ...}, ...], "
    "\"constant_memory_mb\": ...}";

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

enum class EntryType { head, body, tail };
constexpr std::array<std::string_view, 3> type_names = {"HEAD", "BODY", "TAIL"};

struct Entry {
    std::string path;
    std::string name;
    EntryType type = EntryType::body;
    std::uint32_t nb_layer = 0;
    std::optional<double> memory_parameter;
    std::array<std::optional<double>, PPB_KIND_COUNT> activation{};
};

[[noreturn]] void fail(std::string_view path, const std::string& problem) {
    if (path.empty())
        throw InvalidInput(problem);
    throw InvalidInput(std::string(path) + ": " + problem);
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

void allow_only(const json::object& object, std::string_view path,
                std::span<const std::string_view> known) {
    for (const auto& member : object) {
        const std::string_view key = member.key();
        if (std::find(known.begin(), known.end(), key) != known.end())
            continue;
        std::string problem = "unknown field " + quoted_key(key) + " (";
        if (const std::string_view guess = closest_name(key, known); !guess.empty())
            problem += "did you mean '" + std::string(guess) + "'? ";
        problem += "expected one of: " + join(known) + ")";
        fail(path, problem);
    }
}

// Refuses options that are plainly another model's (no layers_description, and keys of another
// model or file), before they are taken for a bad layer file.
void refuse_foreign(const json::object& root) {
    if (root.contains(list_key))
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

// A memory in MB: a finite number, at least 0.
double read_memory(const json::value& value, std::string_view path) {
    if (!value.is_number())
        fail(path, "expected a number of MB (at least 0), got " + describe_json(value));
    const double d = value.to_number<double>();
    if (!std::isfinite(d))
        fail(path, "non-finite memory " + describe_json(value));
    if (d < 0.0)
        fail(path, "negative memory " + describe_json(value) + " (a memory in MB is at least 0)");
    return d;
}

std::uint32_t read_nb_layer(const json::value& value, std::string_view path) {
    const auto wrong = [&] {
        fail(path, "expected a positive integer (the number of layers of this entry), got " +
                       describe_json(value));
    };
    constexpr double max = std::numeric_limits<std::uint32_t>::max();
    double d = 0.0;
    if (value.is_int64()) {
        d = static_cast<double>(value.get_int64());
    } else if (value.is_uint64()) {
        d = static_cast<double>(value.get_uint64());
    } else if (value.is_double()) {
        d = value.get_double();
        if (d != std::floor(d))
            wrong();
    } else {
        wrong();
    }
    if (d < 1.0)
        wrong();
    if (d > max)
        fail(path, "number out of range: " + describe_json(value) + " layers is more than " +
                       std::to_string(std::numeric_limits<std::uint32_t>::max()));
    return static_cast<std::uint32_t>(d);
}

EntryType read_type(const json::value& value, std::string_view path) {
    if (value.is_string()) {
        const std::string_view name = value.get_string();
        const auto found = std::find(type_names.begin(), type_names.end(), name);
        if (found != type_names.end())
            return static_cast<EntryType>(found - type_names.begin());
    }
    fail(path, "expected one of \"HEAD\", \"BODY\", \"TAIL\", got " + describe_json(value));
}

const json::value& required(const json::object& object, std::string_view path, std::string_view key,
                            std::string_view meaning) {
    const json::value* member = object.if_contains(key);
    if (member == nullptr)
        fail(path, "missing required field " + quoted_key(key) + " (" + std::string(meaning) + ")");
    return *member;
}

Entry read_entry(const json::value& value, std::string path) {
    const json::object* object = value.if_object();
    if (object == nullptr)
        fail(path, "expected an object (a layer entry), got " + describe_json(value));
    allow_only(*object, path, entry_keys);

    Entry entry;
    entry.path = std::move(path);
    const json::value& name = required(*object, entry.path, "name", "the entry's name");
    if (!name.is_string())
        fail(member_path(entry.path, "name"), "expected a string, got " + describe_json(name));
    entry.name = std::string(name.get_string());
    entry.type = read_type(required(*object, entry.path, "type", "HEAD, BODY or TAIL"),
                           member_path(entry.path, "type"));
    entry.nb_layer = read_nb_layer(
        required(*object, entry.path, "nb_layer", "the number of layers of this entry"),
        member_path(entry.path, "nb_layer"));

    for (const std::string_view key : time_keys) {
        if (const json::value* time = object->if_contains(key); time && !time->is_number()) {
            fail(member_path(entry.path, key), "expected a number, got " + describe_json(*time));
        }
    }
    if (const json::value* m = object->if_contains(parameter_key))
        entry.memory_parameter = read_memory(*m, member_path(entry.path, parameter_key));
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (const json::value* m = object->if_contains(activation_keys[k]))
            entry.activation[k] = read_memory(*m, member_path(entry.path, activation_keys[k]));
    }
    return entry;
}

std::string describe_entry(const Entry& entry) {
    return entry.path + " (" + std::string(type_names[static_cast<std::size_t>(entry.type)]) + " " +
           describe_json(json::value(entry.name)) + ")";
}

// HEAD and TAIL entries: their memory_parameter times nb_layer, added up; activations ignored.
void add_end_entry(const Entry& entry, double& total, std::vector<std::string>& names,
                   std::vector<std::string>& warnings) {
    const bool head = entry.type == EntryType::head;
    const std::string stage = head ? "stage 0" : "the last stage";
    names.push_back(entry.name);
    if (entry.memory_parameter) {
        total += static_cast<double>(entry.nb_layer) * *entry.memory_parameter;
    } else {
        warnings.push_back(describe_entry(entry) + " gives no memory_parameter: it adds 0 MB to " +
                           stage);
    }
    std::vector<std::string> ignored;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (entry.activation[k])
            ignored.emplace_back(activation_keys[k]);
    }
    if (!ignored.empty()) {
        warnings.push_back(describe_entry(entry) + ": " + quoted_list(ignored) +
                           (ignored.size() == 1 ? " is" : " are") +
                           " ignored: the model has no per-micro-batch activation memory for "
                           "HEAD and TAIL entries, only their memory_parameter (x nb_layer) on " +
                           stage);
    }
}

}  // namespace

LayerTable parse_layer_table(std::string_view options_json) {
    const json::value document = parse_json_exact(options_json);
    const json::object* root = document.if_object();
    if (root == nullptr) {
        throw InvalidInput("the table model's options must be a JSON object, a SAPP layer file " +
                           std::string(expected_shape) + "; got " + describe_json(document));
    }
    refuse_foreign(*root);
    allow_only(*root, "", top_level_keys);

    LayerTable table;
    if (const json::value* comment = root->if_contains(comment_key); comment) {
        if (!comment->is_string())
            fail(comment_key, "expected a string, got " + describe_json(*comment));
    }
    if (const json::value* constant = root->if_contains(constant_key)) {
        table.const_mb = read_memory(*constant, constant_key);
        table.const_defaulted = false;
    }

    const json::value* list = root->if_contains(list_key);
    if (list == nullptr) {
        throw InvalidInput(
            "missing required field 'layers_description': the table model takes a SAPP layer "
            "file with per-layer memory as its options (--model-options FILE): " +
            std::string(expected_shape));
    }
    if (!list->is_array()) {
        fail(list_key, "expected an array of layer entries, got " + describe_json(*list));
    }
    const json::array& elements = list->get_array();
    if (elements.empty()) {
        fail(list_key,
             "the list is empty (expected the layers' entries, exactly one of them BODY)");
    }

    std::vector<Entry> entries;
    entries.reserve(elements.size());
    for (std::size_t i = 0; i < elements.size(); ++i)
        entries.push_back(read_entry(elements[i], element_path(list_key, i)));

    std::vector<const Entry*> bodies;
    for (const Entry& entry : entries) {
        switch (entry.type) {
            case EntryType::body:
                bodies.push_back(&entry);
                break;
            case EntryType::head:
                add_end_entry(entry, table.head_mb, table.head_entries, table.warnings);
                break;
            case EntryType::tail:
                add_end_entry(entry, table.tail_mb, table.tail_entries, table.warnings);
                break;
        }
    }
    if (!std::isfinite(table.head_mb) || !std::isfinite(table.tail_mb)) {
        fail(list_key, std::string("the ") + (std::isfinite(table.head_mb) ? "TAIL" : "HEAD") +
                           " entries' memory (nb_layer x memory_parameter, added up) is more "
                           "than a number can hold");
    }
    if (bodies.empty()) {
        fail(list_key,
             "no BODY entry: exactly one entry must have \"type\": \"BODY\" (the repeated "
             "layers that are distributed over the stages, with their memory per layer)");
    }
    if (bodies.size() > 1) {
        std::string which;
        for (std::size_t i = 0; i < bodies.size(); ++i) {
            if (i != 0)
                which += (i + 1 == bodies.size()) ? " and " : ", ";
            which += bodies[i]->path + " (" + describe_json(json::value(bodies[i]->name)) + ")";
        }
        fail(list_key, "several BODY entries are not supported yet: " + which + " are " +
                           (bodies.size() == 2 ? "both" : "all") +
                           " BODY (describe the repeated layers as one BODY entry)");
    }

    const Entry& body = *bodies.front();
    if (!body.memory_parameter) {
        fail(body.path, "the BODY entry " + describe_json(json::value(body.name)) +
                            " has no memory_parameter (the parameter, gradient and optimizer "
                            "memory of one layer, in MB), which the table model needs");
    }
    if (std::none_of(body.activation.begin(), body.activation.end(),
                     [](const auto& a) { return a.has_value(); })) {
        fail(body.path, "the BODY entry " + describe_json(json::value(body.name)) +
                            " gives no activation memory: the table model needs at least one of " +
                            join(activation_keys) +
                            " (the memory per layer and in-flight micro-batch of recompute kinds "
                            "none, select, comm, both and full)");
    }
    table.param_per_layer_mb = *body.memory_parameter;
    table.activation_mb = body.activation;
    table.body_name = body.name;
    table.num_layers = body.nb_layer;

    if (table.const_defaulted) {
        table.warnings.insert(table.warnings.begin(),
                              "no constant_memory_mb: const_mb is taken as 0 MB (SAPP layer files "
                              "have no such field; ppb fit --export-sapp writes it)");
    }
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
