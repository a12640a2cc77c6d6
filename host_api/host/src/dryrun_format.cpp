// Reader of the dry-run observation format "ppb.dryrun/1" (host_api/docs/design.md,
// "ppb.dryrun/1").
#include <ppb/dryrun_format.hpp>
#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

namespace ppb {
namespace {

constexpr std::string_view format_family = "ppb.dryrun/";

// Free text for the user's own notes: "comment" at both levels, "description" at the top.
constexpr std::string_view comment_key = "comment";
constexpr std::string_view description_key = "description";

constexpr std::array<std::string_view, 7> top_level_keys = {
    "format",       "num_stages", "micro_batches", "schedule",
    "observations", comment_key,  description_key};

constexpr std::array<std::string_view, 8> observation_keys = {
    "config", "num_stages", "micro_batches",  "stage",
    "layers", "in_flight",  "peak_memory_mb", comment_key};

// "a"/"an" before a number as spoken: an 8-stage, an 11-stage, a 16-stage pipeline.
std::string_view article_for(std::uint32_t n) {
    const std::string digits = std::to_string(n);
    if (digits.front() == '8')
        return "an";
    if (digits.size() % 3 == 2 && (digits.starts_with("11") || digits.starts_with("18"))) {
        return "an";
    }
    return "a";
}

// Shortest text that reads back to `mb`, keeping ".0" on integral values (41234.5, 39900.0).
std::string mb_text(double mb) {
    std::string text = fmt::format("{}", mb);
    if (text.find_first_of(".eE") == std::string::npos)
        text += ".0";
    return text;
}

void check_format(const JsonObject& top) {
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
        return;
    if (format.starts_with(format_family)) {
        node.fail(fmt::format("unsupported format version '{}' (this ppb reads {})", format,
                              dryrun_format_v1));
    }
    node.fail(fmt::format("{} is not a ppb dry-run file format (expected \"{}\")",
                          describe_json(node.value()), dryrun_format_v1));
}

Schedule read_schedule(const JsonNode& node) {
    const std::string_view name = node.as_string();
    const auto schedule = schedule_from_name(name);
    if (!schedule) {
        node.fail(
            fmt::format("unknown schedule '{}' (expected one of: 1f1b, interleaved, "
                        "interleaved-less-memory, dualpipe-v; {} accepts only \"1f1b\")",
                        name, dryrun_format_v1));
    }
    if (*schedule != Schedule::one_f_one_b) {
        node.fail(fmt::format(
            "schedule '{}' runs several chunks per stage, but {} describes one chunk per stage; "
            "only \"1f1b\" is valid here (give \"in_flight\" per observation if your schedule's "
            "counts differ)",
            name, dryrun_format_v1));
    }
    return *schedule;
}

void check_optional_text(const JsonObject& object, std::string_view key) {
    if (auto node = object.optional(key))
        (void)node->as_string();
}

Observation read_observation(const JsonObject& obs, const DryRunSet& set) {
    obs.allow_only(observation_keys);
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

    const JsonNode stage_node = obs.required("stage");
    const std::uint32_t s = stage_node.as_uint32(0);
    if (s >= p) {
        stage_node.fail(fmt::format("{} is not a stage of {} {}-stage pipeline (expected {})", s,
                                    article_for(p), p,
                                    p == 1 ? std::string("0") : fmt::format("0..{}", p - 1)));
    }

    ppb_chunk chunk{};
    const JsonObject layers = obs.required("layers").as_object();
    layers.allow_only(kind_names, "recompute kind");
    for (const auto& [name, node] : layers.members()) {
        const auto kind = kind_from_name(name);  // allow_only has checked the name
        chunk.layers[static_cast<std::size_t>(*kind)] = node.as_count(limits::layers_or_none);
    }

    if (auto node = obs.optional("in_flight")) {
        chunk.in_flight = node->as_count(limits::in_flight);
    } else {
        chunk.in_flight = in_flight_counts(set.schedule, p, s, out.micro_batches).front();
    }

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

    out.placement.num_stages = p;
    out.placement.stage = s;
    out.placement.chunks = {chunk};
    return out;
}

std::string describe_placement(const Observation& o) {
    const ppb_chunk& chunk = o.placement.chunks.front();
    std::string layers;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (chunk.layers[k] == 0)
            continue;
        layers += fmt::format("{}{}={}", layers.empty() ? "" : " ", kind_names[k], chunk.layers[k]);
    }
    return fmt::format("stage {} of {}, {} in flight, {}", o.placement.stage,
                       o.placement.num_stages, chunk.in_flight,
                       layers.empty() ? std::string("no body layers") : "layers " + layers);
}

// Repeated measurements of one placement are fine; measurements that disagree are not. Two
// memories a, b disagree when |a - b| > tolerance * max(a, b). For a new b, that excess is
// largest at the smallest earlier a below b and at the largest earlier a above it, so each
// placement keeps only its smallest and largest memory so far: linear in the observations,
// however many repeat one placement.
void check_duplicates(const std::vector<Observation>& observations, double tolerance,
                      std::string_view source) {
    using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t,
                           std::array<std::uint32_t, PPB_KIND_COUNT>>;
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
        const ppb_chunk& chunk = b.placement.chunks.front();
        std::array<std::uint32_t, PPB_KIND_COUNT> layers{};
        std::copy(std::begin(chunk.layers), std::end(chunk.layers), layers.begin());
        const Key key{b.placement.num_stages, b.placement.stage, chunk.in_flight, layers};
        const auto [it, first] = seen.try_emplace(key, Extremes{j, j});
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
                source, source.empty() ? "" : ": ", i, j, describe_placement(b),
                100.0 * difference / larger, mb_text(a.peak_memory_mb), mb_text(b.peak_memory_mb),
                100.0 * tolerance));
        }
        if (b.peak_memory_mb < observations[group.smallest].peak_memory_mb)
            group.smallest = j;
        if (b.peak_memory_mb > observations[group.largest].peak_memory_mb)
            group.largest = j;
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
    check_format(top);
    top.allow_only(top_level_keys);
    check_optional_text(top, comment_key);
    check_optional_text(top, description_key);

    DryRunSet set;
    if (auto node = top.optional("num_stages"))
        set.num_stages = node->as_count(limits::stages);
    if (auto node = top.optional("micro_batches"))
        set.micro_batches = node->as_count(limits::micro_batches);
    if (auto node = top.optional("schedule"))
        set.schedule = read_schedule(*node);

    const JsonArray list = top.required("observations").as_array();
    if (list.empty())
        list.fail("the list is empty (expected at least one observation)");
    set.observations.reserve(list.size());
    for (const JsonNode& element : list.elements()) {
        set.observations.push_back(read_observation(element.as_object(), set));
    }
    check_duplicates(set.observations, options.duplicate_tolerance, source);
    return set;
}

DryRunSet read_dryrun_file(const std::filesystem::path& path, const DryRunReadOptions& options) {
    const std::string text = read_text_file(path);
    return parse_dryrun(text, source_name(path), options);
}

}  // namespace ppb
