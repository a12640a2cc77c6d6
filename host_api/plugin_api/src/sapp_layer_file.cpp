// The SAPP layer file (ppb/sapp/layer_file.hpp): reading with JSON-path messages, writing.
#include <ppb/json_output.hpp>
#include <ppb/limits.hpp>
#include <ppb/sapp/layer_file.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <span>
#include <utility>

namespace ppb::sapp {
namespace {

namespace json = boost::json;

constexpr std::string_view file_shape =
    "{\"layers_description\": [{\"name\": ..., \"type\": \"HEAD\" | \"BODY\" | \"TAIL\", "
    "...}, ...]}";

// A memory in MB: a finite number, at least 0.
double read_memory(const JsonNode& node) {
    if (!node.is_number())
        node.fail("expected a number of MB (at least 0), got " + describe_json(node.value()));
    const double d = node.as_number();  // refuses a non-finite number
    if (d < 0.0) {
        node.fail("negative memory " + describe_json(node.value()) +
                  " (a memory in MB is at least 0)");
    }
    if (!limits::memory_mb.contains(d))
        node.fail(limits::out_of_range(describe_json(node.value()), limits::memory_mb));
    return d;
}

// A backward-time coefficient: finite and > -1, so that (1 + c) x base stays positive.
double read_coefficient(const JsonNode& node) {
    const auto wrong = [&] {
        node.fail(
            "expected a number greater than -1 (the backward time (1 + coefficient) x base must "
            "stay positive), got " +
            describe_json(node.value()));
    };
    if (!node.is_number())
        wrong();
    const double c = node.as_number();
    if (!(c > -1.0))
        wrong();
    if (!limits::backward_coefficient.contains(c))
        node.fail(limits::out_of_range(describe_json(node.value()), limits::backward_coefficient));
    return c;
}

EntryType read_type(const JsonNode& node) {
    const json::value& value = node.value();
    if (value.is_string()) {
        const std::string_view name = value.get_string();
        const auto found = std::find(entry_type_names.begin(), entry_type_names.end(), name);
        if (found != entry_type_names.end())
            return static_cast<EntryType>(found - entry_type_names.begin());
    }
    node.fail(
        fmt::format("expected one of \"HEAD\", \"BODY\", \"TAIL\", got {}", describe_json(value)));
}

JsonNode required(const JsonObject& object, std::string_view key, std::string_view meaning) {
    auto node = object.optional(key);
    if (!node)
        object.fail(fmt::format("missing required field {} ({})", quoted_key(key), meaning));
    return *node;
}

template <class Read>
auto read_optional(const JsonObject& object, std::string_view key, Read read)
    -> std::optional<decltype(read(std::declval<const JsonNode&>()))> {
    if (auto node = object.optional(key))
        return read(*node);
    return std::nullopt;
}

double read_time(const JsonNode& node) {
    const double t = node.as_non_negative_number();
    if (!limits::time.contains(t))
        node.fail(limits::out_of_range(describe_json(node.value()), limits::time));
    return t;
}

// Each member of `object` not in `known`: a warning naming it, with a "did you mean". SAPP
// versions add fields, so a field nobody here knows is reported and ignored, not refused.
void warn_unknown(const JsonObject& object, std::span<const std::string_view> known,
                  std::vector<std::string>& warnings) {
    for (const auto& member : object.object()) {
        const std::string_view key = member.key();
        if (std::find(known.begin(), known.end(), key) != known.end())
            continue;
        std::string problem = fmt::format(
            "unknown field {} is ignored (neither SAPP nor ppb knows it", quoted_key(key));
        if (const auto guess = closest_name(key, known))
            problem += fmt::format("; did you mean '{}'?", *guess);
        problem += fmt::format(" known here: {})", fmt::join(known, ", "));
        warnings.push_back(object.node().message(problem));
    }
}

Entry read_entry(const JsonNode& node, std::vector<std::string>& warnings) {
    if (!node.value().is_object())
        node.fail("expected an object (a layer entry), got " + describe_json(node.value()));
    const JsonObject object = node.as_object();
    warn_unknown(object, entry_fields, warnings);

    Entry entry;
    entry.name = std::string(required(object, "name", "the entry's name").as_string());
    if (auto model_name = object.optional("model_name"))
        entry.model_name = std::string(model_name->as_string());
    entry.type = read_type(required(object, "type", "HEAD, BODY or TAIL"));
    entry.nb_layer =
        required(object, "nb_layer", "the number of layers of this entry").as_count(limits::layers);
    entry.time = read_optional(object, "time", read_time);
    entry.forward_time = read_optional(object, "forward_time", read_time);
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        entry.backward_time[k] = read_optional(object, backward_time_fields[k], read_time);
        entry.backward_coef[k] = read_optional(object, backward_coef_fields[k], read_coefficient);
    }
    entry.memory_parameter = read_optional(object, "memory_parameter", read_memory);
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        entry.memory_activation[k] = read_optional(object, activation_fields[k], read_memory);
    return entry;
}

void put(json::object& out, std::string_view key, const std::optional<double>& value) {
    if (value)
        out[key] = *value;
}

// '"a", "b" and "c"' for messages.
std::string and_list(const std::vector<std::string>& items) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i != 0)
            out += i + 1 == items.size() ? " and " : ", ";
        out += items[i];
    }
    return out;
}

// A {name: integer} object, in document order, each value read by `read_value`.
template <class Read>
std::vector<NamedValue> read_named_values(const JsonNode& node, std::string_view meaning,
                                          Read read_value) {
    if (!node.value().is_object())
        node.fail(
            fmt::format("expected an object ({}), got {}", meaning, describe_json(node.value())));
    std::vector<NamedValue> out;
    for (const auto& [key, value] : node.as_object().members())
        out.push_back({std::string(key), read_value(value)});
    return out;
}

// pre_defined_layer: each name's stage must be 0 (HEAD, stage 0) or -1 (TAIL, the last stage),
// and agree with the type of the entry of that name; a name that is no entry is a note.
void check_pre_defined(const LayerFile& file, const JsonNode& node,
                       std::vector<std::string>& warnings) {
    for (const NamedValue& layer : file.pre_defined_layer) {
        const JsonNode at(node.value().as_object().at(layer.name), node.source(),
                          json_path_member(node.path(), layer.name));
        if (layer.value != 0 && layer.value != -1) {
            at.fail(fmt::format(
                "stage {} is not supported: ppb places the layers SAPP predefines on stage 0 "
                "(0: the HEAD entries) or on the last stage (-1: the TAIL entries), not in "
                "between",
                layer.value));
        }
        const auto entry = std::find_if(file.entries.begin(), file.entries.end(),
                                        [&](const Entry& e) { return e.name == layer.name; });
        if (entry == file.entries.end()) {
            warnings.push_back(at.message(
                fmt::format("{} is no entry of layers_description: ppb places every HEAD entry on "
                            "stage 0 and every TAIL entry on the last stage",
                            describe_json(json::value(layer.name)))));
            continue;
        }
        const auto index = static_cast<std::size_t>(entry - file.entries.begin());
        const EntryType wanted = layer.value == 0 ? EntryType::head : EntryType::tail;
        if (entry->type != wanted) {
            at.fail(fmt::format(
                "stage {} contradicts {}: stage 0 is for HEAD entries, -1 (the last stage) for "
                "TAIL entries{}",
                layer.value, describe_entry(file, index),
                entry->type == EntryType::body ? ", and the BODY entry is distributed, not placed"
                                               : ""));
        }
    }
}

// auto_partition_layer: the BODY layers and their number, which must be the BODY group's.
void check_auto_partition(const LayerFile& file, const JsonNode& node,
                          std::vector<std::string>& warnings) {
    const auto& layers = file.auto_partition_layer;
    if (layers.empty())
        return;
    const auto groups = file.body_groups();
    const auto at = [&](const NamedValue& layer) {
        return JsonNode(node.value().as_object().at(layer.name), node.source(),
                        json_path_member(node.path(), layer.name));
    };
    if (groups.size() == 1) {
        // One BODY: SAPP's own files name it freely (the layer class, not the entry), so any
        // name is taken as it, with a warning when it differs; the number must agree.
        if (layers.size() > 1) {
            std::vector<std::string> names;
            for (const NamedValue& layer : layers)
                names.push_back(describe_json(json::value(layer.name)));
            node.fail(fmt::format(
                "several auto-partitioned layers ({}), but the file has one BODY entry ({}); "
                "each auto-partitioned layer is a BODY entry's name",
                and_list(names), describe_json(json::value(groups.front().name))));
        }
        const std::size_t body = file.body_index();
        const Entry& entry = file.entries[body];
        const NamedValue& layer = layers.front();
        if (static_cast<std::uint64_t>(layer.value) != groups.front().layers) {
            at(layer).fail(fmt::format("{} layers, but {} has nb_layer {}: the two must agree",
                                       layer.value, describe_entry(file, body), entry.nb_layer));
        }
        if (layer.name != entry.name) {
            warnings.push_back(at(layer).message(fmt::format(
                "{} is not the name of the BODY entry ({}): taken as its layers, whose number "
                "agrees",
                describe_json(json::value(layer.name)), describe_json(json::value(entry.name)))));
        }
        return;
    }
    // Several groups: every name must be one of them, with its number of layers.
    for (const NamedValue& layer : layers) {
        const auto group = std::find_if(groups.begin(), groups.end(),
                                        [&](const auto& g) { return g.name == layer.name; });
        if (group == groups.end()) {
            std::vector<std::string> names;
            for (const auto& g : groups)
                names.push_back(describe_json(json::value(g.name)));
            at(layer).fail(
                fmt::format("{} is not the name of a BODY entry (the BODY groups are {})",
                            describe_json(json::value(layer.name)), and_list(names)));
        }
        if (static_cast<std::uint64_t>(layer.value) != group->layers) {
            at(layer).fail(fmt::format(
                "{} layers, but the BODY entries named {} have {} in all: the two must agree",
                layer.value, describe_json(json::value(layer.name)), group->layers));
        }
    }
}

// BODY entries of one name are one group: alike in every field but nb_layer.
void check_body_groups(const LayerFile& file, const JsonArray& list) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < file.entries.size(); ++i) {
        const Entry& e = file.entries[i];
        if (e.type != EntryType::body)
            continue;
        total += e.nb_layer;
        for (std::size_t j = 0; j < i; ++j) {
            Entry first = file.entries[j];
            if (first.type != EntryType::body || first.name != e.name)
                continue;
            first.nb_layer = e.nb_layer;
            if (!(first == e)) {
                list.fail(fmt::format(
                    "{} and {} are both BODY {} but differ in more than nb_layer: BODY entries of "
                    "one name are one group of layers and must be alike (give the other layers "
                    "another name)",
                    entry_path(j), entry_path(i), describe_json(json::value(e.name))));
            }
            break;
        }
    }
    if (total > limits::layers.max) {
        list.fail(fmt::format("the BODY entries hold {} layers in all; {}", total,
                              limits::out_of_range(std::to_string(total), limits::layers)));
    }
}

}  // namespace

std::size_t LayerFile::body_index() const noexcept {
    const auto it = std::find_if(entries.begin(), entries.end(),
                                 [](const Entry& e) { return e.type == EntryType::body; });
    return static_cast<std::size_t>(it - entries.begin());
}

std::vector<LayerFile::BodyGroup> LayerFile::body_groups() const {
    std::vector<BodyGroup> groups;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].type != EntryType::body)
            continue;
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const BodyGroup& g) { return g.name == entries[i].name; });
        if (it == groups.end()) {
            groups.push_back(BodyGroup{entries[i].name, {}, 0});
            it = groups.end() - 1;
        }
        it->entries.push_back(i);
        it->layers += entries[i].nb_layer;
    }
    return groups;
}

std::vector<std::uint32_t> LayerFile::body_sequence() const {
    const auto groups = body_groups();
    std::vector<std::uint32_t> sequence;
    for (const Entry& e : entries) {
        if (e.type != EntryType::body)
            continue;
        const auto g = static_cast<std::uint32_t>(
            std::find_if(groups.begin(), groups.end(),
                         [&](const BodyGroup& group) { return group.name == e.name; }) -
            groups.begin());
        sequence.insert(sequence.end(), e.nb_layer, g);
    }
    return sequence;
}

std::uint32_t LayerFile::body_layers() const noexcept {
    std::uint32_t n = 0;
    for (const Entry& e : entries) {
        if (e.type == EntryType::body)
            n += e.nb_layer;
    }
    return n;
}

LayerFile read_layer_file(const JsonNode& root) {
    if (!root.value().is_object()) {
        root.fail(
            "expected a JSON object (a SAPP layer file: {\"layers_description\": [...]}), "
            "got " +
            describe_json(root.value()));
    }
    const JsonObject top = root.as_object();
    LayerFile file;
    {
        std::vector<std::string_view> known(top_level_fields.begin(), top_level_fields.end());
        known.push_back(old_constant_field);
        warn_unknown(top, known, file.warnings);
    }

    if (auto node = top.optional(comment_field))
        file.comment = std::string(node->as_string());
    if (auto node = top.optional(name_field))
        file.name = std::string(node->as_string());
    if (auto node = top.optional(stage_const_field))
        file.stage_const_mem = node->as_number_in(limits::signed_memory_mb);
    if (auto node = top.optional(old_constant_field)) {
        if (file.stage_const_mem) {
            node->fail(fmt::format(
                "give '{}' only: '{}' is its old name (files written by ppb fit --export-sapp "
                "before it wrote SAPP's name), and the file gives both",
                stage_const_field, old_constant_field));
        }
        file.stage_const_mem = read_memory(*node);
        file.warnings.push_back(node->message(fmt::format(
            "'{}' is the old name of SAPP's '{}' (ppb fit --export-sapp wrote it before): read "
            "as the constant memory of every stage; write '{}' instead (ppb fit --export-sapp "
            "does)",
            old_constant_field, stage_const_field, stage_const_field)));
    }

    const auto list_node = top.optional(list_field);
    if (!list_node) {
        top.fail(fmt::format("missing required field '{}' (a SAPP layer file is {})", list_field,
                             file_shape));
    }
    if (!list_node->value().is_array()) {
        list_node->fail("expected an array of layer entries, got " +
                        describe_json(list_node->value()));
    }
    const JsonArray list = list_node->as_array();
    if (list.empty())
        list.fail("the list is empty (expected the layers' entries, at least one of them BODY)");
    file.entries.reserve(list.size());
    for (const JsonNode& element : list.elements())
        file.entries.push_back(read_entry(element, file.warnings));

    std::vector<std::size_t> bodies;
    for (std::size_t i = 0; i < file.entries.size(); ++i) {
        if (file.entries[i].type == EntryType::body)
            bodies.push_back(i);
    }
    if (bodies.empty()) {
        list.fail(
            "no BODY entry: at least one entry must have \"type\": \"BODY\" (the repeated layers "
            "that are distributed over the stages)");
    }
    check_body_groups(file, list);

    if (auto node = top.optional(pre_defined_field)) {
        file.pre_defined_layer = read_named_values(
            *node, "each predefined layer's stage: 0 or -1", [](const JsonNode& value) {
                return value.as_integer(std::numeric_limits<std::int32_t>::min(),
                                        std::numeric_limits<std::int32_t>::max());
            });
        check_pre_defined(file, *node, file.warnings);
    }
    if (auto node = top.optional(auto_partition_field)) {
        file.auto_partition_layer = read_named_values(
            *node, "the auto-partitioned layer and its number of layers",
            [](const JsonNode& value) -> std::int64_t { return value.as_count(limits::layers); });
        check_auto_partition(file, *node, file.warnings);
    }
    return file;
}

LayerFile parse_layer_file(std::string_view text, std::string_view source) {
    const json::value document = parse_json(text, source);
    return read_layer_file(JsonNode(document, source));
}

LayerFile load_layer_file(const std::filesystem::path& path) {
    const std::string text = read_text_file(path);
    return parse_layer_file(text, source_name(path));
}

json::object to_json(const LayerFile& file) {
    json::object out;
    if (file.comment)
        out[comment_field] = *file.comment;
    if (file.name)
        out[name_field] = *file.name;
    const auto put_named = [&](std::string_view key, const std::vector<NamedValue>& values) {
        if (values.empty())
            return;
        json::object o;
        for (const NamedValue& v : values)
            o[v.name] = v.value;
        out[key] = std::move(o);
    };
    put_named(pre_defined_field, file.pre_defined_layer);
    put_named(auto_partition_field, file.auto_partition_layer);
    put(out, stage_const_field, file.stage_const_mem);
    json::array entries;
    entries.reserve(file.entries.size());
    for (const Entry& entry : file.entries) {
        json::object e;
        e["name"] = entry.name;
        if (entry.model_name)
            e["model_name"] = *entry.model_name;
        e["type"] = type_name(entry.type);
        e["nb_layer"] = entry.nb_layer;
        put(e, "time", entry.time);
        put(e, "forward_time", entry.forward_time);
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            put(e, backward_time_fields[k], entry.backward_time[k]);
            put(e, backward_coef_fields[k], entry.backward_coef[k]);
        }
        put(e, "memory_parameter", entry.memory_parameter);
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            put(e, activation_fields[k], entry.memory_activation[k]);
        entries.emplace_back(std::move(e));
    }
    out[list_field] = std::move(entries);
    return out;
}

std::string write_layer_file(const LayerFile& file) {
    return to_pretty_json(to_json(file));
}

std::string entry_path(std::size_t index) {
    return json_path_element(list_field, index);
}

std::string entry_field_path(std::size_t index, std::string_view field) {
    return json_path_member(entry_path(index), field);
}

std::string describe_entry(const LayerFile& file, std::size_t index) {
    const Entry& entry = file.entries.at(index);
    return fmt::format("{} ({} {})", entry_path(index), type_name(entry.type),
                       describe_json(json::value(entry.name)));
}

}  // namespace ppb::sapp
