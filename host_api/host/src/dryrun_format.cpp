// Reader of the dry-run observation formats "ppb.dryrun/1", "ppb.dryrun/2" and "ppb.dryrun/3"
// (host_api/docs/design.md, "ppb.dryrun/1, /2 and /3"), with the optional "body_layers" and
// "layer_times" every revision may give.
#include <ppb/dryrun_format.hpp>
#include <ppb/errors.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppb {
namespace {

constexpr std::string_view format_family = "ppb.dryrun/";

// Free text for the user's own notes: "comment" at both levels, "description" at the top.
constexpr std::string_view comment_key = "comment";
constexpr std::string_view description_key = "description";

// ppb.dryrun/1 is read exactly as it always was, so its members stay as they were; every
// revision may also say what it knows of the model: its body layers and layer times.
constexpr std::string_view body_layers_key = "body_layers";
constexpr std::string_view layer_times_key = "layer_times";
constexpr std::array<std::string_view, 9> top_level_keys_v1 = {
    "format",    "num_stages",    "micro_batches", "schedule",     "observations",
    comment_key, description_key, body_layers_key, layer_times_key};
constexpr std::array<std::string_view, 9> observation_keys_v1 = {
    "config",    "num_stages",     "micro_batches", "stage",    "layers",
    "in_flight", "peak_memory_mb", "reserved_mb",   comment_key};

constexpr std::array<std::string_view, 10> top_level_keys_v2 = {
    "format",       "num_stages", "micro_batches", "schedule",      "num_chunks",
    "observations", comment_key,  description_key, body_layers_key, layer_times_key};
constexpr std::array<std::string_view, 12> observation_keys_v2 = {
    "config", "num_stages", "micro_batches", "schedule",       "num_chunks",  "stage",
    "layers", "chunks",     "in_flight",     "peak_memory_mb", "reserved_mb", comment_key};
// ppb.dryrun/3: /2 with the model's groups of body layers, and layers counted per group.
constexpr std::array<std::string_view, 11> top_level_keys_v3 = {
    "format", "num_stages", "micro_batches", "schedule",      "num_chunks",   "observations",
    "groups", comment_key,  description_key, body_layers_key, layer_times_key};
constexpr std::array<std::string_view, 3> layer_time_keys = {"head", "body", "tail"};
constexpr std::array<std::string_view, 2> chunk_keys = {"layers", "in_flight"};

// Shortest text that reads back to `mb`, keeping ".0" on integral values (41234.5, 39900.0).
std::string mb_text(double mb) {
    std::string text = fmt::format("{}", mb);
    if (text.find_first_of(".eE") == std::string::npos)
        text += ".0";
    return text;
}

// The document's revision: 1, 2 or 3.
std::uint32_t check_format(const JsonObject& top) {
    const auto found = top.optional("format");
    if (!found) {
        top.fail(
            fmt::format("missing required field 'format' (a ppb dry-run file starts with "
                        "\"format\": \"{}\")",
                        dryrun_format_v1));
    }
    const JsonNode& node = *found;
    if (!node.value().is_string()) {
        node.fail(fmt::format("expected the string \"{}\", got {}", dryrun_format_v1,
                              describe_json(node.value())));
    }
    const std::string_view format = node.as_string();
    if (format == dryrun_format_v1)
        return 1;
    if (format == dryrun_format_v2)
        return 2;
    if (format == dryrun_format_v3)
        return 3;
    if (format.starts_with(format_family)) {
        node.fail(fmt::format("unsupported format version '{}' (this ppb reads {}, {} and {})",
                              format, dryrun_format_v1, dryrun_format_v2, dryrun_format_v3));
    }
    node.fail(fmt::format("{} is not a ppb dry-run file format (expected \"{}\")",
                          describe_json(node.value()), dryrun_format_v1));
}

Schedule read_schedule(const JsonNode& node, std::uint32_t revision) {
    const std::string_view name = node.as_string();
    const auto schedule = schedule_from_name(name);
    if (!schedule) {
        const std::vector<std::string_view> names = schedule_names();
        const auto guess = closest_name(name, names);
        node.fail(fmt::format(
            "unknown schedule '{}' ({}expected one of: {}{})", name,
            guess ? fmt::format("did you mean '{}'? ", *guess) : std::string(),
            fmt::join(names, ", "),
            revision == 1 ? fmt::format("; {} accepts only \"1f1b\"", dryrun_format_v1) : ""));
    }
    if (revision == 1 && *schedule != Schedule::one_f_one_b) {
        node.fail(fmt::format(
            "schedule '{}' runs several chunks per stage, but {} describes one chunk per stage; "
            "only \"1f1b\" is valid here (write \"format\": \"{}\" to give the layers of each "
            "chunk, or give \"in_flight\" per observation if your schedule's counts differ)",
            name, dryrun_format_v1, dryrun_format_v2));
    }
    return *schedule;
}

// Why `chunks` chunks per stage is impossible for `schedule`, or nothing.
std::optional<std::string> chunk_count_problem(Schedule schedule, std::uint32_t chunks) {
    const std::string_view name = schedule_name(schedule);
    switch (schedule) {
        case Schedule::one_f_one_b:
        case Schedule::zb_h1:
            if (chunks != 1)
                return fmt::format("schedule '{}' runs one chunk per stage, not {}", name, chunks);
            break;
        case Schedule::interleaved:
        case Schedule::interleaved_less_memory:
            if (chunks < 2) {
                return fmt::format("schedule '{}' runs 2 or more chunks per stage, not {}", name,
                                   chunks);
            }
            break;
        case Schedule::dualpipe_v:
        case Schedule::zb_v:
            if (chunks != 2)
                return fmt::format("schedule '{}' runs 2 chunks per stage, not {}", name, chunks);
            break;
        case Schedule::combined_1f1b:
            // One chunk only without a pipeline: the observation's stage count decides
            // (schedule_shape_problem, when its in-flight counts are derived).
            break;
    }
    return std::nullopt;
}

[[noreturn]] void missing_chunk_count(const JsonObject& where, Schedule schedule) {
    where.fail(fmt::format(
        "missing required field 'num_chunks' (schedule '{}' runs {} chunks per stage: say how "
        "many)",
        schedule_name(schedule),
        schedule == Schedule::combined_1f1b ? "2 or more (1 without a pipeline)" : "2 or more"));
}

// A schedule and its chunks per stage, and the nodes that gave them (for messages).
struct ScheduleChoice {
    Schedule schedule = Schedule::one_f_one_b;
    std::uint32_t num_chunks = 1;
};

// Reads "schedule" and "num_chunks" of `object` over `inherited` (the top level's, for an
// observation; 1F1B with one chunk for the top level). An object that names another schedule
// than the inherited one does not inherit its chunk count.
ScheduleChoice read_schedule_choice(const JsonObject& object, const ScheduleChoice& inherited,
                                    std::uint32_t revision) {
    ScheduleChoice choice = inherited;
    const auto schedule_node = object.optional("schedule");
    if (schedule_node)
        choice.schedule = read_schedule(*schedule_node, revision);
    const auto chunks_node = revision >= 2 ? object.optional("num_chunks") : std::nullopt;
    if (chunks_node) {
        choice.num_chunks = chunks_node->as_count(limits::chunks);
        if (const auto problem = chunk_count_problem(choice.schedule, choice.num_chunks))
            chunks_node->fail(*problem);
    } else if (schedule_node && choice.schedule != inherited.schedule) {
        // A file that names a schedule without num_chunks: the chunks it always runs; the
        // interleaved schedules run any number from 2, which the file must say.
        const auto chunks = fixed_chunks(choice.schedule);
        if (!chunks)
            missing_chunk_count(object, choice.schedule);
        choice.num_chunks = *chunks;
    }
    return choice;
}

void check_optional_text(const JsonObject& object, std::string_view key) {
    if (auto node = object.optional(key))
        (void)node->as_string();
}

// The layers of one chunk per recompute kind, into `counts` (PPB_KIND_COUNT entries).
void read_kind_counts(const JsonObject& layers, std::span<std::uint32_t> counts) {
    layers.allow_only(kind_names, "recompute kind");
    for (const auto& [name, node] : layers.members()) {
        const auto kind = kind_from_name(name);  // allow_only has checked the name
        counts[static_cast<std::size_t>(*kind)] = node.as_count(limits::layers_or_none);
    }
}

// A chunk's "layers": per recompute kind (/1, /2) into `chunk`, or, in /3, per group of `groups`
// and then per kind, appended to `group_layers` (groups.size() x PPB_KIND_COUNT counts; the
// chunk's own layers become their sums when the observation is complete).
void read_layers(const JsonObject& layers, ppb_chunk& chunk, const std::vector<std::string>& groups,
                 std::vector<std::uint32_t>& group_layers) {
    if (groups.empty()) {
        read_kind_counts(layers, chunk.layers);
        return;
    }
    const std::vector<std::string_view> names(groups.begin(), groups.end());
    for (const auto& [name, node] : layers.members()) {
        // Kinds straight under "layers", as /2 writes them: say where they go.
        if (kind_from_name(name) && std::find(names.begin(), names.end(), name) == names.end()) {
            layers.fail(
                fmt::format("'{}' is a recompute kind, but {} counts layers per group: write "
                            "\"layers\": {{\"{}\": {{\"{}\": ...}}}} with a group of: {}",
                            name, dryrun_format_v3, groups.front(), name, fmt::join(groups, ", ")));
        }
    }
    layers.allow_only(names, "group");
    const std::size_t first = group_layers.size();
    group_layers.resize(first + groups.size() * PPB_KIND_COUNT, 0);
    for (const auto& [name, node] : layers.members()) {
        const auto g = static_cast<std::size_t>(std::find(names.begin(), names.end(), name) -
                                                names.begin());  // allow_only checked
        read_kind_counts(
            node.as_object(),
            std::span(group_layers).subspan(first + g * PPB_KIND_COUNT, PPB_KIND_COUNT));
    }
}

// A chunk's own in-flight count: at most the dry run's micro-batches when it says how many (a
// chunk cannot hold more micro-batches than the iteration has).
std::uint32_t read_chunk_in_flight(const JsonNode& node, std::uint32_t micro_batches) {
    const std::uint32_t f = node.as_count(limits::in_flight);
    if (micro_batches != 0 && f > micro_batches) {
        node.fail(fmt::format(
            "{} is out of range (1 to {} micro-batches: a chunk holds at most the {} micro-batches "
            "of the iteration)",
            f, micro_batches, micro_batches));
    }
    return f;
}

// The "chunks" of a multi-chunk observation: exactly `choice.num_chunks` entries, each with its
// layers and optionally its in-flight count (default: the schedule's count for the chunk).
std::vector<ppb_chunk> read_chunks(const JsonObject& obs, const ScheduleChoice& choice,
                                   std::uint32_t p, std::uint32_t s, std::uint32_t micro_batches,
                                   const std::vector<std::string>& groups,
                                   std::vector<std::uint32_t>& group_layers) {
    const std::string_view name = schedule_name(choice.schedule);
    if (auto layers = obs.optional("layers")) {
        layers->fail(fmt::format(
            "schedule '{}' runs {} chunks per stage: give \"chunks\", one entry per chunk with "
            "its \"layers\", instead of \"layers\"",
            name, choice.num_chunks));
    }
    if (auto in_flight = obs.optional("in_flight")) {
        in_flight->fail(
            fmt::format("schedule '{}' runs {} chunks per stage: give \"in_flight\" per chunk "
                        "(chunks[c].in_flight), not per observation",
                        name, choice.num_chunks));
    }
    const JsonArray list = obs.required("chunks").as_array();
    if (list.size() != choice.num_chunks) {
        list.fail(
            fmt::format("has {} entr{} but schedule '{}' runs {} chunks per stage "
                        "(num_chunks): give one entry per chunk",
                        list.size(), list.size() == 1 ? "y" : "ies", name, choice.num_chunks));
    }
    // The schedule's counts, asked only when a chunk does not give its own: a micro-batch count
    // the modelled order cannot run (ppb/schedule_order.hpp) has no counts to default to.
    std::vector<std::uint32_t> defaults;
    const auto default_in_flight = [&](std::size_t c, const JsonNode& at) {
        if (defaults.empty()) {
            try {
                defaults =
                    in_flight_counts(choice.schedule, p, s, micro_batches, choice.num_chunks);
            } catch (const std::invalid_argument& e) {
                at.fail(
                    fmt::format("no in-flight count to default to: {}; give each chunk's "
                                "\"in_flight\" as measured",
                                e.what()));
            }
        }
        return defaults[c];
    };
    std::vector<ppb_chunk> chunks;
    for (std::size_t c = 0; c < list.size(); ++c) {
        const JsonObject entry = list.at(c).as_object();
        entry.allow_only(chunk_keys);
        ppb_chunk chunk{};
        read_layers(entry.required("layers").as_object(), chunk, groups, group_layers);
        if (auto node = entry.optional("in_flight")) {
            chunk.in_flight = read_chunk_in_flight(*node, micro_batches);
        } else {
            chunk.in_flight = default_in_flight(c, list.at(c));
        }
        chunks.push_back(chunk);
    }
    return chunks;
}

Observation read_observation(const JsonObject& obs, const DryRunSet& set) {
    if (set.revision == 1) {
        for (const std::string_view key : {"chunks", "num_chunks"}) {
            if (auto node = obs.optional(key)) {
                node->fail(
                    fmt::format("'{}' needs \"format\": \"{}\" ({} describes one chunk per "
                                "stage, with its \"layers\")",
                                key, dryrun_format_v2, dryrun_format_v1));
            }
        }
        obs.allow_only(observation_keys_v1);
    } else {
        obs.allow_only(observation_keys_v2);  // /3 adds no member to an observation
    }
    check_optional_text(obs, comment_key);

    Observation out;
    if (auto config = obs.optional("config"))
        out.config = std::string(config->as_string());

    std::uint32_t p = set.num_stages;
    if (auto node = obs.optional("num_stages")) {
        p = node->as_count(limits::stages);
    } else if (p == 0) {
        obs.fail("missing required field 'num_stages' (the file gives no top-level default)");
    }
    out.micro_batches = set.micro_batches;
    if (auto node = obs.optional("micro_batches"))
        out.micro_batches = node->as_count(limits::micro_batches);
    const ScheduleChoice choice =
        read_schedule_choice(obs, {set.schedule, set.num_chunks}, set.revision);

    const JsonNode stage_node = obs.required("stage");
    const std::uint32_t s = stage_node.as_uint32(0);
    if (s >= p) {
        stage_node.fail(not_a_stage(s, p));
    }

    std::vector<std::uint32_t> group_layers;  // /3: chunk by chunk, group by group, kind by kind
    if (choice.num_chunks == 1) {
        // The combined 1F1B runs one chunk only without a pipeline (its words: schedule_order).
        if (choice.schedule == Schedule::combined_1f1b && p > 1)
            obs.fail(schedule_shape_problem(choice.schedule, p, 1, 4 * p));
        if (auto chunks = obs.optional("chunks")) {
            chunks->fail(fmt::format(
                "schedule '{}' runs one chunk per stage: give \"layers\" (and \"in_flight\") "
                "instead of \"chunks\"",
                schedule_name(choice.schedule)));
        }
        ppb_chunk chunk{};
        read_layers(obs.required("layers").as_object(), chunk, set.groups, group_layers);
        if (auto node = obs.optional("in_flight")) {
            chunk.in_flight = node->as_count(limits::in_flight);
        } else {
            chunk.in_flight = in_flight_counts(choice.schedule, p, s, out.micro_batches).front();
        }
        out.placement.chunks = {chunk};
    } else {
        out.placement.chunks =
            read_chunks(obs, choice, p, s, out.micro_batches, set.groups, group_layers);
        // Counts left to the schedule are its profile (ppb/in_flight_profile.hpp): the stage's
        // peak is the largest of the rows of its vectors, not the row of the chunks' own
        // maxima. Counts the file gives are one measured vector.
        const JsonArray list = obs.required("chunks").as_array();
        bool any_given = false;
        for (std::size_t c = 0; c < list.size(); ++c)
            any_given = any_given || list.at(c).as_object().optional("in_flight").has_value();
        if (!any_given) {
            out.in_flight_profile =
                in_flight_profile(choice.schedule, p, s, out.micro_batches, choice.num_chunks);
        }
    }
    if (!set.groups.empty())
        out.placement.set_group_layers(std::move(group_layers));

    const JsonNode memory = obs.required("peak_memory_mb");
    if (!memory.is_number()) {
        memory.fail("expected a positive number of MB, got " + describe_json(memory.value()));
    }
    out.peak_memory_mb = memory.as_number();  // refuses a non-finite number
    if (!(out.peak_memory_mb > 0.0)) {
        memory.fail("expected a positive number of MB, got " + describe_json(memory.value()));
    }
    if (!limits::positive_memory_mb.contains(out.peak_memory_mb)) {
        memory.fail(
            limits::out_of_range(describe_json(memory.value()), limits::positive_memory_mb));
    }
    // What the allocator reserved at its peak holds what was allocated at the allocated peak.
    if (auto reserved = obs.optional("reserved_mb")) {
        if (!reserved->is_number()) {
            reserved->fail("expected a positive number of MB, got " +
                           describe_json(reserved->value()));
        }
        const double mb = reserved->as_number();
        if (!limits::positive_memory_mb.contains(mb)) {
            reserved->fail(
                limits::out_of_range(describe_json(reserved->value()), limits::positive_memory_mb));
        }
        if (mb < out.peak_memory_mb) {
            reserved->fail(fmt::format(
                "{} MB is less than the observation's peak_memory_mb {} MB: reserved memory holds "
                "the allocated memory, so its peak is at least the allocated peak",
                mb_text(mb), mb_text(out.peak_memory_mb)));
        }
        out.reserved_mb = mb;
    }

    out.placement.num_stages = p;
    out.placement.stage = s;
    out.placement.schedule = choice.schedule;
    return out;
}

// "none=3 full=1": the non-zero counts of PPB_KIND_COUNT entries.
std::string kind_counts_text(std::span<const std::uint32_t> counts) {
    std::string layers;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (counts[k] == 0)
            continue;
        layers += fmt::format("{}{}={}", layers.empty() ? "" : " ", kind_names[k], counts[k]);
    }
    return layers;
}

// Chunk `c` of `placement`: its in-flight count and its layers, per group when counted so
// ("dense: none=1, moe: full=2").
std::string chunk_text(const StagePlacement& placement, std::size_t c,
                       const std::vector<std::string>& groups) {
    const ppb_chunk& chunk = placement.chunks[c];
    std::string layers = kind_counts_text(chunk.layers);
    if (!groups.empty() && !layers.empty()) {
        layers.clear();
        for (std::size_t g = 0; g < groups.size(); ++g) {
            const std::string counts = kind_counts_text(
                std::span(placement.group_layers)
                    .subspan((c * groups.size() + g) * PPB_KIND_COUNT, PPB_KIND_COUNT));
            if (!counts.empty())
                layers += fmt::format("{}{}: {}", layers.empty() ? "" : ", ", groups[g], counts);
        }
    }
    return fmt::format("{} in flight, {}", chunk.in_flight,
                       layers.empty() ? std::string("no body layers") : "layers " + layers);
}

std::string describe_placement(const Observation& o, const std::vector<std::string>& groups) {
    const auto& chunks = o.placement.chunks;
    std::string text = fmt::format("stage {} of {}, ", o.placement.stage, o.placement.num_stages);
    if (chunks.size() == 1)
        return text + chunk_text(o.placement, 0, groups);
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        text += fmt::format("{}chunk {}: {}", c == 0 ? "" : "; ", c,
                            chunk_text(o.placement, c, groups));
    }
    return text;
}

// Repeated measurements of one placement are fine; measurements that disagree are not. Two
// memories a, b disagree when |a - b| > tolerance * max(a, b). For a new b, that excess is
// largest at the smallest earlier a below b and at the largest earlier a above it, so each
// placement keeps only its smallest and largest memory so far: linear in the observations,
// however many repeat one placement.
void check_duplicates(const std::vector<Observation>& observations,
                      const std::vector<std::string>& groups, double tolerance,
                      std::string_view source) {
    // Pipeline degree, stage, then each chunk's in-flight count and layers per kind: the chunk
    // structure is part of the placement. Layers counted per group (/3) are compared per group:
    // the same totals of other groups are another placement.
    using Key = std::vector<std::uint32_t>;
    struct Extremes {
        std::size_t smallest;
        std::size_t largest;
    };
    std::map<Key, Extremes> seen;
    const auto disagree = [tolerance](double a, double b) {
        return std::abs(a - b) > tolerance * std::max(a, b);
    };
    for (std::size_t j = 0; j < observations.size(); ++j) {
        const Observation& b = observations[j];
        // The same question to a model: the stage as the model is asked about it (its ends).
        const ppb_placement asked = b.placement.view();
        Key key{asked.num_stages, asked.stage};
        for (const ppb_chunk& chunk : b.placement.chunks) {
            key.push_back(chunk.in_flight);
            key.insert(key.end(), std::begin(chunk.layers), std::end(chunk.layers));
        }
        key.insert(key.end(), b.placement.group_layers.begin(), b.placement.group_layers.end());
        const auto [it, first] = seen.try_emplace(std::move(key), Extremes{j, j});
        if (first)
            continue;
        Extremes& group = it->second;
        for (const std::size_t i :
             {std::min(group.smallest, group.largest), std::max(group.smallest, group.largest)}) {
            const Observation& a = observations[i];
            if (!disagree(a.peak_memory_mb, b.peak_memory_mb))
                continue;
            const double larger = std::max(a.peak_memory_mb, b.peak_memory_mb);
            const double difference = std::abs(a.peak_memory_mb - b.peak_memory_mb);
            throw InputError(fmt::format(
                "{}{}observations[{}] and observations[{}] describe the same placement ({}) but "
                "their memories differ by {:.3g} % ({} MB vs {} MB), more than the {:g} % "
                "tolerance (--duplicate-tolerance)",
                source, source.empty() ? "" : ": ", i, j, describe_placement(b, groups),
                100.0 * difference / larger, mb_text(a.peak_memory_mb), mb_text(b.peak_memory_mb),
                100.0 * tolerance));
        }
        if (b.peak_memory_mb < observations[group.smallest].peak_memory_mb)
            group.smallest = j;
        if (b.peak_memory_mb > observations[group.largest].peak_memory_mb)
            group.largest = j;
    }
}

// "groups" is the revision /3's: an older document that has it means layers per group, which its
// reader would otherwise refuse as an unknown field without saying which format has them.
void refuse_groups_before_v3(const JsonObject& top, std::uint32_t revision) {
    if (auto node = top.optional("groups")) {
        node->fail(fmt::format(
            "'groups' needs \"format\": \"{}\" (in {} every layer is of one group; in {} "
            "each observation's \"layers\" are counted per group)",
            dryrun_format_v3, revision == 1 ? dryrun_format_v1 : dryrun_format_v2,
            dryrun_format_v3));
    }
}

// The /3 document's groups of body layers: 1 to limits::groups.max distinct names, not empty.
std::vector<std::string> read_groups(const JsonObject& top) {
    const auto found = top.optional("groups");
    if (!found) {
        top.fail(fmt::format(
            "missing required field 'groups' ({} counts layers per group: name the model's "
            "groups of body layers in model order, e.g. \"groups\": [\"dense\", \"moe\"])",
            dryrun_format_v3));
    }
    const JsonArray list = found->as_array();
    if (list.empty() || list.size() > limits::groups.max) {
        list.fail(fmt::format("has {} names (expected {} to {} groups of body layers)", list.size(),
                              limits::groups.min, limits::groups.max));
    }
    std::vector<std::string> groups;
    for (std::size_t g = 0; g < list.size(); ++g) {
        const JsonNode node = list.at(g);
        if (!node.value().is_string()) {
            node.fail("expected the name of a group of body layers (a string), got " +
                      describe_json(node.value()));
        }
        std::string name(node.as_string());
        if (name.empty())
            node.fail("the name of a group is empty");
        for (std::size_t h = 0; h < groups.size(); ++h) {
            if (groups[h] == name) {
                node.fail(
                    fmt::format("group '{}' is named twice (also groups[{}]): names must "
                                "be distinct",
                                name, h));
            }
        }
        groups.push_back(std::move(name));
    }
    return groups;
}

// The model's body layers and layer times, when the document gives them.
void read_model_facts(const JsonObject& top, DryRunSet& set) {
    if (auto node = top.optional(body_layers_key))
        set.body_layers = node->as_count(limits::layers);
    if (auto node = top.optional(layer_times_key)) {
        const JsonObject times = node->as_object();
        times.allow_only(layer_time_keys, "layer");
        const auto time_of = [&](std::string_view key) {
            const auto found = times.optional(key);
            if (!found) {
                times.fail(fmt::format(
                    "missing required field '{}' (layer_times gives the time of one head, body "
                    "and tail layer: \"head\", \"body\" and \"tail\")",
                    key));
            }
            return found->as_number_in(limits::time);
        };
        set.layer_times = HeadBodyTailTimes{time_of("head"), time_of("body"), time_of("tail")};
    }
}

// Every observation holds at most the model's body layers, and a dry run (one config at one
// pipeline degree) that measured every stage holds them all.
void check_body_layers(const JsonObject& top, const DryRunSet& set) {
    if (!set.body_layers)
        return;
    const std::uint32_t model = *set.body_layers;
    std::map<std::pair<std::string, std::uint32_t>, std::map<std::uint32_t, std::uint64_t>> runs;
    for (std::size_t i = 0; i < set.observations.size(); ++i) {
        const Observation& o = set.observations[i];
        const std::uint64_t n = o.placement.total_layers();
        if (n > model) {
            top.required("observations")
                .as_array()
                .at(i)
                .fail(fmt::format("stage {} holds {} body layers, more than the model's {} "
                                  "(body_layers)",
                                  o.placement.stage, n, model));
        }
        runs[{o.config, o.placement.num_stages}][o.placement.stage] = n;
    }
    for (const auto& [run, stages] : runs) {
        if (stages.size() != run.second)
            continue;
        std::uint64_t total = 0;
        for (const auto& [stage, n] : stages)
            total += n;
        if (total != model) {
            top.required(body_layers_key)
                .fail(fmt::format("the model has {} body layers, but the {} stages of dry run "
                                  "'{}' hold {} in all: every layer is on some stage",
                                  model, run.second, run.first, total));
        }
    }
}

}  // namespace

DryRunSet parse_dryrun(std::string_view json_text, std::string_view source,
                       const DryRunReadOptions& options) {
    if (!std::isfinite(options.duplicate_tolerance) || options.duplicate_tolerance < 0.0) {
        throw InputError(fmt::format(
            "invalid duplicate tolerance {} (expected a fraction >= 0, e.g. 0.01 for 1 %)",
            options.duplicate_tolerance));
    }
    const boost::json::value document = parse_json(json_text, source);
    const JsonNode root(document, source);
    if (!document.is_object()) {
        root.fail("expected a JSON object (a ppb dry-run file), got " + describe_json(document));
    }
    const JsonObject top = root.as_object();
    DryRunSet set;
    set.revision = check_format(top);
    if (set.revision == 1) {
        if (auto node = top.optional("num_chunks")) {
            node->fail(
                fmt::format("'num_chunks' needs \"format\": \"{}\" ({} describes one "
                            "chunk per stage)",
                            dryrun_format_v2, dryrun_format_v1));
        }
        refuse_groups_before_v3(top, set.revision);
        top.allow_only(top_level_keys_v1);
    } else if (set.revision == 2) {
        refuse_groups_before_v3(top, set.revision);
        top.allow_only(top_level_keys_v2);
    } else {
        top.allow_only(top_level_keys_v3);
        set.groups = read_groups(top);
    }
    check_optional_text(top, comment_key);
    check_optional_text(top, description_key);

    if (auto node = top.optional("num_stages"))
        set.num_stages = node->as_count(limits::stages);
    if (auto node = top.optional("micro_batches"))
        set.micro_batches = node->as_count(limits::micro_batches);
    const ScheduleChoice choice = read_schedule_choice(top, {}, set.revision);
    set.schedule = choice.schedule;
    set.num_chunks = choice.num_chunks;

    const JsonArray list = top.required("observations").as_array();
    if (list.empty())
        list.fail("the list is empty (expected at least one observation)");
    set.observations.reserve(list.size());
    for (const JsonNode& element : list.elements()) {
        set.observations.push_back(read_observation(element.as_object(), set));
    }
    check_duplicates(set.observations, set.groups, options.duplicate_tolerance, source);
    read_model_facts(top, set);
    check_body_layers(top, set);
    return set;
}

DryRunSet read_dryrun_file(const std::filesystem::path& path, const DryRunReadOptions& options) {
    const std::string text = read_text_file(path);
    return parse_dryrun(text, source_name(path), options);
}

}  // namespace ppb
