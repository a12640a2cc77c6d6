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

// The fields an entry may hold: entry_fields, SAPP's other spellings of them, and options.
const std::vector<std::string_view>& known_entry_fields() {
    static const std::vector<std::string_view> known = [] {
        std::vector<std::string_view> out(entry_fields.begin(), entry_fields.end());
        for (const Spelling& spelling : sapp_spellings)
            out.push_back(spelling.sapp);
        out.push_back(options_field);
        return out;
    }();
    return known;
}

// Two values of one field agree: equal numbers (91 and 91.0 alike), else equal JSON.
bool same_value(const json::value& a, const json::value& b) {
    if (a.is_number() && b.is_number())
        return a.to_number<double>() == b.to_number<double>();
    return a == b;
}

// The node of `field` under its plain name or SAPP's spelling of it (sapp_spellings). Both with
// different values: refused, naming both.
std::optional<JsonNode> field_node(const JsonObject& object, std::string_view field) {
    std::optional<JsonNode> node = object.optional(field);
    const auto spelling = std::find_if(sapp_spellings.begin(), sapp_spellings.end(),
                                       [&](const Spelling& s) { return s.field == field; });
    if (spelling == sapp_spellings.end())
        return node;
    std::optional<JsonNode> other = object.optional(spelling->sapp);
    if (!other)
        return node;
    if (!node)
        return other;
    if (!same_value(node->value(), other->value())) {
        other->fail(fmt::format(
            "{} is SAPP's spelling of {} and the entry gives both, with different values ({} and "
            "{}): give one",
            quoted_key(spelling->sapp), quoted_key(field), describe_json(other->value()),
            describe_json(node->value())));
    }
    return node;
}

template <class Read>
auto read_field(const JsonObject& object, std::string_view field, Read read)
    -> std::optional<decltype(read(std::declval<const JsonNode&>()))> {
    if (auto node = field_node(object, field))
        return read(*node);
    return std::nullopt;
}

// SAPP-ND's "options": a list of distinct option names (option_names), as kind flags.
std::array<bool, PPB_KIND_COUNT> read_options(const JsonNode& node) {
    if (!node.value().is_array()) {
        node.fail(
            "expected a list of recomputation options (SAPP's names: NONE, SLCT, COMM, "
            "BOTH, FULL), got " +
            describe_json(node.value()));
    }
    std::array<bool, PPB_KIND_COUNT> offered{};
    for (const JsonNode& element : node.as_array().elements()) {
        const json::value& value = element.value();
        const auto found = value.is_string() ? std::find(option_names.begin(), option_names.end(),
                                                         std::string_view(value.get_string()))
                                             : option_names.end();
        if (found == option_names.end()) {
            element.fail(fmt::format("expected one of SAPP's recomputation options {}, got {}",
                                     fmt::join(option_names, ", "), describe_json(value)));
        }
        const auto k = static_cast<std::size_t>(found - option_names.begin());
        if (offered[k])
            element.fail(fmt::format("option {} is listed twice", *found));
        offered[k] = true;
    }
    return offered;
}

// A per-option dict {"NONE": x, "FULL": y} of an entry with `offered` options: each member's kind
// and node. A dict without options, or a key that is not an offered option, is refused.
std::vector<std::pair<std::size_t, JsonNode>> per_option(
    const JsonNode& node, const std::optional<std::array<bool, PPB_KIND_COUNT>>& offered) {
    if (!offered) {
        node.fail(fmt::format(
            "a dict per recomputation option (SAPP-ND's form) needs the entry's '{}' list, and "
            "the entry has none",
            options_field));
    }
    std::vector<std::pair<std::size_t, JsonNode>> out;
    for (const auto& [key, value] : node.as_object().members()) {
        const auto found = std::find(option_names.begin(), option_names.end(), key);
        const auto k = static_cast<std::size_t>(found - option_names.begin());
        if (found == option_names.end() || !(*offered)[k]) {
            value.fail(fmt::format("{} is not one of the entry's options ({})", quoted_key(key),
                                   describe_json(node.value())));
        }
        out.emplace_back(k, value);
    }
    return out;
}

// Sets `slot` (the field `flat_name` of the entry, read from `flat_node` if given) from the
// per-option value at `node`; the flat field and the dict disagreeing is refused, naming both.
void set_from_option(std::optional<double>& slot, const std::optional<JsonNode>& flat_node,
                     std::string_view flat_name, double value, const JsonNode& node) {
    if (slot && *slot != value) {
        node.fail(fmt::format("{} disagrees with {} of the same entry ({}): give one",
                              describe_json(node.value()),
                              flat_node ? flat_node->path() : std::string(flat_name),
                              describe_json(json::value(*slot))));
    }
    slot = value;
}

Entry read_entry(const JsonNode& node, std::vector<std::string>& warnings) {
    if (!node.value().is_object())
        node.fail("expected an object (a layer entry), got " + describe_json(node.value()));
    const JsonObject object = node.as_object();
    warn_unknown(object, known_entry_fields(), warnings);

    Entry entry;
    entry.name = std::string(required(object, "name", "the entry's name").as_string());
    if (auto model_name = object.optional("model_name"))
        entry.model_name = std::string(model_name->as_string());
    entry.type = read_type(required(object, "type", "HEAD, BODY or TAIL"));
    entry.nb_layer =
        required(object, "nb_layer", "the number of layers of this entry").as_count(limits::layers);

    std::optional<std::array<bool, PPB_KIND_COUNT>> offered;
    if (auto options = object.optional(options_field))
        offered = read_options(*options);
    // memory_activation, forward_time and backward_time may be dicts per option (SAPP-ND's
    // form): read after the flat fields, into the same places.
    const auto is_dict = [&](std::string_view field) {
        const auto n = object.optional(field);
        return n && n->value().is_object();
    };
    const bool forward_dict = is_dict("forward_time");
    const bool backward_dict = is_dict(backward_time_fields[PPB_KIND_NONE]);
    const bool activation_dict = is_dict(activation_fields[PPB_KIND_NONE]);

    entry.time = read_field(object, "time", read_time);
    if (!forward_dict)
        entry.forward_time = read_field(object, "forward_time", read_time);
    entry.weight_grad_time = read_field(object, "weight_grad_time", read_time);
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (k != PPB_KIND_NONE || !backward_dict)
            entry.backward_time[k] = read_field(object, backward_time_fields[k], read_time);
        entry.backward_coef[k] = read_field(object, backward_coef_fields[k], read_coefficient);
    }
    entry.memory_parameter = read_field(object, "memory_parameter", read_memory);
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (k != PPB_KIND_NONE || !activation_dict)
            entry.memory_activation[k] = read_field(object, activation_fields[k], read_memory);
    }

    if (forward_dict) {
        const JsonNode dict = *object.optional("forward_time");
        std::optional<JsonNode> first;
        for (const auto& [k, value] : per_option(dict, offered)) {
            const double t = read_time(value);
            if (first && *entry.forward_time != t) {
                value.fail(fmt::format(
                    "the forward time of option {} differs from {} ({}): ppb's time model has "
                    "one forward time per layer (recomputation lengthens the backward only)",
                    option_names[k], first->path(), describe_json(first->value())));
            }
            entry.forward_time = t;
            first = value;
        }
    }
    if (backward_dict) {
        const JsonNode dict = *object.optional(backward_time_fields[PPB_KIND_NONE]);
        for (const auto& [k, value] : per_option(dict, offered)) {
            set_from_option(entry.backward_time[k], field_node(object, backward_time_fields[k]),
                            backward_time_fields[k], read_time(value), value);
        }
    }
    if (activation_dict) {
        const JsonNode dict = *object.optional(activation_fields[PPB_KIND_NONE]);
        for (const auto& [k, value] : per_option(dict, offered)) {
            set_from_option(entry.memory_activation[k], field_node(object, activation_fields[k]),
                            activation_fields[k], read_memory(value), value);
        }
    }
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
            // The names are the operators SAPP's timeline analyser looks for; the entries'
            // types are what ppb places by.
            warnings.push_back(at.message(fmt::format(
                "stage {} does not fit {}: ppb places it by its type ({}), as it places every "
                "HEAD entry on stage 0 and every TAIL entry on the last stage",
                layer.value, describe_entry(file, index),
                entry->type == EntryType::body ? "BODY layers are distributed over the stages"
                                               : type_name(entry->type))));
        }
    }
}

// auto_partition_layer: the body layers SAPP's timeline analyser looks for and their number.
// SAPP's own files name them freely (ModelInfo: "NumberOfLayers"; the profiler's class,
// "LLamaDecodeLayer"), so the names need not be entries. When every name is a BODY group, each
// number is compared with its group's layers; else the numbers in all with all body layers. A
// disagreement is a warning: the entries' nb_layer are what ppb plans with.
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
    const auto group_of = [&](const NamedValue& layer) {
        return std::find_if(groups.begin(), groups.end(),
                            [&](const auto& g) { return g.name == layer.name; });
    };
    const bool by_group = std::all_of(layers.begin(), layers.end(), [&](const NamedValue& l) {
        return group_of(l) != groups.end();
    });
    if (by_group) {
        for (const NamedValue& layer : layers) {
            const auto group = group_of(layer);
            if (static_cast<std::uint64_t>(layer.value) != group->layers) {
                warnings.push_back(at(layer).message(fmt::format(
                    "{} layers, but the BODY entries named {} have {} in all: ppb plans with the "
                    "entries' nb_layer",
                    layer.value, describe_json(json::value(layer.name)), group->layers)));
            }
        }
        return;
    }
    std::uint64_t stated = 0;
    std::vector<std::string> names;
    for (const NamedValue& layer : layers) {
        stated += static_cast<std::uint64_t>(layer.value);
        names.push_back(describe_json(json::value(layer.name)));
    }
    if (stated != file.body_layers()) {
        warnings.push_back(node.message(fmt::format(
            "{} {} layer{} in all, but the BODY entries have {}: ppb plans with the entries' "
            "nb_layer",
            and_list(names), stated, stated == 1 ? "" : "s", file.body_layers())));
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
        known.push_back(new_list_field);
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

    auto list_node = top.optional(list_field);
    if (auto new_list = top.optional(new_list_field)) {
        if (list_node) {
            new_list->fail(fmt::format("give '{}' or '{}' (SAPP-ND's name of the list), not both",
                                       list_field, new_list_field));
        }
        list_node = new_list;
    }
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
        put(e, "weight_grad_time", entry.weight_grad_time);
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            put(e, written_name(backward_time_fields[k]), entry.backward_time[k]);
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
