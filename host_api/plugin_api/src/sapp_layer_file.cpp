// The SAPP layer file (ppb/sapp/layer_file.hpp): reading with JSON-path messages, writing.
#include <ppb/json_output.hpp>
#include <ppb/limits.hpp>
#include <ppb/sapp/layer_file.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <fmt/core.h>

#include <algorithm>
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
    const double t = node.as_positive_number();
    if (!limits::time.contains(t))
        node.fail(limits::out_of_range(describe_json(node.value()), limits::time));
    return t;
}

Entry read_entry(const JsonNode& node) {
    if (!node.value().is_object())
        node.fail("expected an object (a layer entry), got " + describe_json(node.value()));
    const JsonObject object = node.as_object();
    object.allow_only(entry_fields);

    Entry entry;
    entry.name = std::string(required(object, "name", "the entry's name").as_string());
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

}  // namespace

std::size_t LayerFile::body_index() const noexcept {
    const auto it = std::find_if(entries.begin(), entries.end(),
                                 [](const Entry& e) { return e.type == EntryType::body; });
    return static_cast<std::size_t>(it - entries.begin());
}

LayerFile read_layer_file(const JsonNode& root) {
    if (!root.value().is_object()) {
        root.fail(
            "expected a JSON object (a SAPP layer file: {\"layers_description\": [...]}), "
            "got " +
            describe_json(root.value()));
    }
    const JsonObject top = root.as_object();
    top.allow_only(top_level_fields);

    LayerFile file;
    if (auto node = top.optional(comment_field))
        file.comment = std::string(node->as_string());
    file.constant_memory_mb = read_optional(top, constant_memory_field, read_memory);

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
        list.fail("the list is empty (expected the layers' entries, exactly one of them BODY)");
    file.entries.reserve(list.size());
    for (const JsonNode& element : list.elements())
        file.entries.push_back(read_entry(element));

    std::vector<std::size_t> bodies;
    for (std::size_t i = 0; i < file.entries.size(); ++i) {
        if (file.entries[i].type == EntryType::body)
            bodies.push_back(i);
    }
    if (bodies.empty()) {
        list.fail(
            "no BODY entry: exactly one entry must have \"type\": \"BODY\" (the repeated layers "
            "that are distributed over the stages)");
    }
    if (bodies.size() > 1) {
        std::string which;
        for (std::size_t i = 0; i < bodies.size(); ++i) {
            if (i != 0)
                which += i + 1 == bodies.size() ? " and " : ", ";
            which += fmt::format("{} ({})", entry_path(bodies[i]),
                                 describe_json(json::value(file.entries[bodies[i]].name)));
        }
        list.fail(fmt::format(
            "several BODY entries are not supported yet: {} are {} BODY (describe the repeated "
            "layers as one BODY entry)",
            which, bodies.size() == 2 ? "both" : "all"));
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
    json::array entries;
    entries.reserve(file.entries.size());
    for (const Entry& entry : file.entries) {
        json::object e;
        e["name"] = entry.name;
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
    put(out, constant_memory_field, file.constant_memory_mb);
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
