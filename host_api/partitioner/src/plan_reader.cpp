// The reader of a saved plan's stages (ppb/partition/plan_reader.hpp). It checks what the
// placements need and nothing more, so that a plan written by an older or newer ppb, or edited by
// hand, still compares as long as its stages say what they hold.
#include <ppb/partition/plan_reader.hpp>

#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace ppb::partition {
namespace {

// Layers per kind of one object {kind: n}, into `layers`.
void read_kind_counts(const JsonNode& node, std::uint32_t (&layers)[PPB_KIND_COUNT]) {
    for (const auto& [kind, count] : JsonObject(node).members()) {
        const auto k = kind_from_name(kind);
        if (!k)
            count.fail("unknown recompute kind (none, select, comm, both, full)");
        layers[*k] = count.as_count(limits::layers_or_none);
    }
}

// A chunk of a chunked stage may hold 0 in flight: the plan puts the stage's peak at a moment
// where that chunk's activations are all freed (ppb::predict_over_profile). A stage of one chunk
// holds at least one.
constexpr limits::CountRange in_flight_or_none{0, limits::in_flight.max, "micro-batches"};

ppb_chunk read_chunk(const JsonObject& object, bool one_of_several) {
    ppb_chunk chunk{};
    read_kind_counts(object.required("layers"), chunk.layers);
    std::uint64_t total = 0;
    for (const std::uint32_t n : chunk.layers)
        total += n;
    if (total > limits::layers.max)
        object.required("layers").fail(
            fmt::format("{} layers in one chunk is out of range (at most {} layers)", total,
                        limits::layers.max));
    chunk.in_flight = object.required("in_flight")
                          .as_count(one_of_several ? in_flight_or_none : limits::in_flight);
    return chunk;
}

}  // namespace

PlanStages read_plan_stages(std::string_view text, std::string_view source) {
    const auto document = parse_json(text, source);
    const JsonObject top(JsonNode(document, source));
    const auto format = top.required("format");
    if (format.as_string() != "ppb.partition/1")
        format.fail("expected \"ppb.partition/1\" (the output of 'ppb partition --json')");
    const std::uint32_t num_stages = top.required("num_stages").as_count(limits::stages);
    // The schedule decides which stage holds the model's ends (StagePlacement::schedule) and a
    // chunked stage's profile.
    Schedule schedule = Schedule::one_f_one_b;
    if (auto name = top.optional("schedule")) {
        const auto known = schedule_from_name(name->as_string());
        if (!known)
            name->fail(fmt::format("unknown schedule '{}' (expected {})", name->as_string(),
                                   names_or(schedule_names())));
        schedule = *known;
    }

    PlanStages plan;
    plan.num_stages = num_stages;
    plan.schedule = schedule;
    if (auto m = top.optional("micro_batches"))
        plan.micro_batches = m->as_count(limits::micro_batches);
    if (auto list = top.optional("groups")) {
        const JsonArray groups(*list);
        if (groups.size() > limits::groups.max)
            list->fail(fmt::format("{} groups is out of range (at most {} groups)", groups.size(),
                                   limits::groups.max));
        for (const auto& group : groups.elements()) {
            const JsonNode name = JsonObject(group).required("name");
            std::string text_name(name.as_string());
            if (std::find(plan.groups.begin(), plan.groups.end(), text_name) != plan.groups.end())
                name.fail("a group named twice");
            plan.groups.push_back(std::move(text_name));
        }
    }

    const JsonArray stages(top.required("stages"));
    if (stages.empty())
        stages.fail("a plan has at least one stage");
    for (const auto& node : stages.elements()) {
        const JsonObject stage(node);
        const JsonNode id = stage.required("stage");
        const std::uint32_t s = id.as_uint32();
        if (s >= num_stages)
            id.fail(fmt::format("not a stage of this pipeline (num_stages is {})", num_stages));

        std::vector<ppb_chunk> chunks;
        if (auto list = stage.optional("chunks")) {
            const JsonArray array(*list);
            if (array.empty())
                list->fail("a stage has at least one chunk");
            if (array.size() > limits::chunks.max)
                list->fail(fmt::format("{} chunks is out of range (at most {} chunks)",
                                       array.size(), limits::chunks.max));
            for (const auto& chunk : array.elements())
                chunks.push_back(read_chunk(JsonObject(chunk), array.size() > 1));
        } else {
            chunks.push_back(read_chunk(stage, false));
        }
        StagePlacement placement{num_stages, s, std::move(chunks), schedule};

        if (!plan.groups.empty()) {
            // Per group: the stage's "groups" with one chunk, each chunk's with several.
            const std::size_t G = plan.groups.size();
            std::vector<std::uint32_t> counts(placement.chunks.size() * G * PPB_KIND_COUNT, 0);
            const auto chunk_groups = [&](std::size_t c) {
                if (placement.chunks.size() == 1)
                    return stage.required("groups");
                return JsonObject(JsonArray(stage.required("chunks")).elements()[c])
                    .required("groups");
            };
            for (std::size_t c = 0; c < placement.chunks.size(); ++c) {
                const JsonNode per_group = chunk_groups(c);
                for (const auto& [name, kinds] : JsonObject(per_group).members()) {
                    const auto g = std::find(plan.groups.begin(), plan.groups.end(), name);
                    if (g == plan.groups.end())
                        kinds.fail("not one of the plan's groups");
                    std::uint32_t layers[PPB_KIND_COUNT] = {};
                    read_kind_counts(kinds, layers);
                    std::copy(std::begin(layers), std::end(layers),
                              counts.begin() +
                                  static_cast<std::ptrdiff_t>(
                                      (c * G + static_cast<std::size_t>(g - plan.groups.begin())) *
                                      PPB_KIND_COUNT));
                }
            }
            const std::vector<ppb_chunk> totals = placement.chunks;
            placement.set_group_layers(std::move(counts));
            for (std::size_t c = 0; c < totals.size(); ++c) {
                if (!std::equal(std::begin(totals[c].layers), std::end(totals[c].layers),
                                std::begin(placement.chunks[c].layers)))
                    chunk_groups(c).fail("the groups' layers do not add up to the chunk's layers");
            }
        }

        // A chunked stage's peak is the largest row of its schedule's (true) profile; how a model
        // is asked about a row holding 0 is predict_over_profile's business.
        std::vector<InFlightVector> profile;
        if (placement.chunks.size() > 1) {
            const JsonNode m = top.required("micro_batches");
            try {
                profile =
                    in_flight_profile(schedule, num_stages, s, m.as_count(limits::micro_batches),
                                      static_cast<std::uint32_t>(placement.chunks.size()));
            } catch (const std::invalid_argument& e) {
                m.fail(e.what());
            }
        }
        plan.stages.push_back(PlannedStage{std::move(placement), std::move(profile)});
    }
    return plan;
}

}  // namespace ppb::partition
