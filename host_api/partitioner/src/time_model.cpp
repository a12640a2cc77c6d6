// Reader of the SAPP layer file: the layers' compute times (ppb/partition/time_model.hpp).
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/partition/time_model.hpp>

#include <fmt/core.h>
#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {
namespace {

constexpr std::string_view list_key = "layers_description";
// ppb's own extension, read by the memory side of the partitioner: only checked here.
constexpr std::string_view constant_memory_key = "constant_memory_mb";
constexpr std::string_view comment_key = "comment";

constexpr std::array<std::string_view, 3> top_level_keys = {list_key, constant_memory_key,
                                                            comment_key};

// The fields that give the backward time of one recompute kind (in ppb_kind order): an absolute
// time, or a coefficient c with backward = (1 + c) x base.
struct KindFields {
    std::string_view time;
    std::string_view coef;
};

constexpr std::array<KindFields, PPB_KIND_COUNT> kind_fields = {{
    {"backward_time", "backward_coef"},
    {"select_rec_time", "select_rec_coef"},
    {"select_comm_time", "select_comm_coef"},
    {"both_comm_select_time", "both_comm_select_coef"},
    {"recompute_time", "recompute_coef"},
}};

// Memory per entry, in MB: read by another component, only checked here.
constexpr std::array<std::string_view, 6> memory_keys = {
    "memory_parameter",   "memory_activation",       "memory_select_rec",
    "memory_select_comm", "memory_both_comm_select", "memory_recompute"};

constexpr std::array<std::string_view, 21> entry_keys = {
    "name",
    "type",
    "nb_layer",
    "time",
    "forward_time",
    kind_fields[0].time,
    kind_fields[0].coef,
    kind_fields[1].time,
    kind_fields[1].coef,
    kind_fields[2].time,
    kind_fields[2].coef,
    kind_fields[3].time,
    kind_fields[3].coef,
    kind_fields[4].time,
    kind_fields[4].coef,
    memory_keys[0],
    memory_keys[1],
    memory_keys[2],
    memory_keys[3],
    memory_keys[4],
    memory_keys[5],
};

enum class EntryType { head, body, tail };

constexpr std::array<std::string_view, 3> type_names = {"HEAD", "BODY", "TAIL"};

struct Entry {
    std::string path;
    std::string name;
    EntryType type = EntryType::body;
    std::uint32_t nb_layer = 0;
    std::array<double, PPB_KIND_COUNT> layer_time{};  // forward + backward of one layer
};

EntryType read_type(const JsonNode& node) {
    const boost::json::value& value = node.value();
    if (value.is_string()) {
        const std::string_view name = value.get_string();
        const auto found = std::find(type_names.begin(), type_names.end(), name);
        if (found != type_names.end())
            return static_cast<EntryType>(found - type_names.begin());
    }
    node.fail(
        fmt::format("expected one of \"HEAD\", \"BODY\", \"TAIL\", got {}", describe_json(value)));
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
    const double c = node.as_number();  // refuses a non-finite number
    if (!(c > -1.0))
        wrong();
    return c;
}

std::optional<double> optional_positive(const JsonObject& object, std::string_view key) {
    if (auto node = object.optional(key))
        return node->as_positive_number();
    return std::nullopt;
}

Entry read_entry(const JsonObject& object) {
    object.allow_only(entry_keys);

    Entry entry;
    entry.path = object.node().path();
    entry.name = std::string(object.required("name").as_string());
    entry.type = read_type(object.required("type"));
    entry.nb_layer = object.required("nb_layer").as_uint32(1);

    // Forward time: forward_time, else time (one of them is required).
    const std::optional<double> time = optional_positive(object, "time");
    const std::optional<double> forward_time = optional_positive(object, "forward_time");
    if (!time && !forward_time) {
        object.fail(
            "missing required field 'time' (the forward time of one layer; or give "
            "'forward_time')");
    }
    const double forward = forward_time ? *forward_time : *time;

    for (const std::string_view key : memory_keys) {
        if (auto node = object.optional(key))
            (void)node->as_non_negative_number();
    }

    // Backward base: backward_time, else twice the forward time.
    const std::optional<double> backward_time = optional_positive(object, kind_fields[0].time);
    const double base = backward_time ? *backward_time : 2.0 * forward;

    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const KindFields& fields = kind_fields[k];
        const std::optional<JsonNode> time_node = object.optional(fields.time);
        const std::optional<JsonNode> coef_node = object.optional(fields.coef);
        if (time_node && coef_node) {
            object.fail(
                fmt::format("give either '{}' or '{}', not both (the backward time of "
                            "recompute kind '{}')",
                            fields.time, fields.coef, kind_names[k]));
        }
        double backward = 0.0;
        if (time_node) {
            backward = time_node->as_positive_number();
        } else {
            const double c =
                coef_node ? read_coefficient(*coef_node) : default_backward_coefficients[k];
            backward = (1.0 + c) * base;
        }
        entry.layer_time[k] = forward + backward;
        // nb_layer layers of one kind must add up to a finite time, whatever the stage.
        if (!std::isfinite(static_cast<double>(entry.nb_layer) * entry.layer_time[k])) {
            object.fail(fmt::format(
                "the forward + backward time of {} layer(s) of recompute kind '{}' is out of "
                "range (the times are too large)",
                entry.nb_layer, kind_names[k]));
        }
    }
    return entry;
}

// 'a[1] ("x") and a[2] ("y")', 'a[1] ("x"), a[2] ("y") and a[4] ("z")'.
std::string describe_entries(const std::vector<const Entry*>& entries) {
    std::string out;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i != 0)
            out += i + 1 == entries.size() ? " and " : ", ";
        out += fmt::format("{} ({})", entries[i]->path,
                           describe_json(boost::json::value(entries[i]->name)));
    }
    return out;
}

}  // namespace

TimeModel parse_time_model(std::string_view json_text, std::string_view source) {
    const boost::json::value document = parse_json(json_text, source);
    const JsonNode root(document, source);
    if (!document.is_object()) {
        root.fail(
            "expected a JSON object (a SAPP layer file: {\"layers_description\": [...]}), got " +
            describe_json(document));
    }
    const JsonObject top = root.as_object();
    top.allow_only(top_level_keys);
    if (auto node = top.optional(comment_key))
        (void)node->as_string();
    if (auto node = top.optional(constant_memory_key))
        (void)node->as_non_negative_number();

    const auto list_node = top.optional(list_key);
    if (!list_node) {
        top.fail(
            "missing required field 'layers_description' (a SAPP layer file is "
            "{\"layers_description\": [{\"name\": ..., \"type\": \"HEAD\" | \"BODY\" | \"TAIL\", "
            "...}, ...]})");
    }
    const JsonArray list = list_node->as_array();
    if (list.empty()) {
        list.fail("the list is empty (expected the layers' entries, exactly one of them BODY)");
    }

    std::vector<Entry> entries;
    entries.reserve(list.size());
    for (const JsonNode& element : list.elements())
        entries.push_back(read_entry(element.as_object()));

    TimeModel model;
    std::vector<const Entry*> bodies;
    for (const Entry& entry : entries) {
        const double total = static_cast<double>(entry.nb_layer) * entry.layer_time[PPB_KIND_NONE];
        switch (entry.type) {
            case EntryType::body:
                bodies.push_back(&entry);
                break;
            case EntryType::head:
                model.head_time += total;
                break;
            case EntryType::tail:
                model.tail_time += total;
                break;
        }
    }
    if (!std::isfinite(model.head_time) || !std::isfinite(model.tail_time)) {
        list.fail(fmt::format("the {} entries' times add up to more than a number can hold",
                              std::isfinite(model.head_time) ? "TAIL" : "HEAD"));
    }
    if (bodies.empty()) {
        list.fail(
            "no BODY entry: exactly one entry must have \"type\": \"BODY\" (the repeated layers "
            "that are distributed over the stages)");
    }
    if (bodies.size() > 1) {
        list.fail(fmt::format(
            "several BODY entries are not supported yet: {} are {} BODY (describe the repeated "
            "layers as one BODY entry)",
            describe_entries(bodies), bodies.size() == 2 ? "both" : "all"));
    }
    const Entry& body = *bodies.front();
    model.body_name = body.name;
    model.body_layers = body.nb_layer;
    model.body_time = body.layer_time;
    return model;
}

TimeModel read_time_model(const std::filesystem::path& path) {
    const std::string text = read_text_file(path);
    return parse_time_model(text, source_name(path));
}

}  // namespace ppb::partition
