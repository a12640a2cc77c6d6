// The reader of a saved plan (ppb/partition/plan_reader.hpp): its stages as placements, and its
// times as the simulator's input. Each view checks what it needs and nothing more, so that a plan
// written by an older or newer ppb, or edited by hand, still reads as long as it says that.
#include <ppb/partition/plan_reader.hpp>

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>

#include <fmt/format.h>

#include <boost/json/value.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ppb::partition {
namespace {

// Layers per kind of one object {kind: n}, into `layers`.
void read_kind_counts(const JsonNode& node, std::uint32_t (&layers)[PPB_KIND_COUNT]) {
    for (const auto& [kind, count] : JsonObject(node).members()) {
        const auto k = kind_from_name(kind);
        if (!k)
            count.fail(unknown_kind(kind));
        layers[*k] = count.as_count(limits::layers_or_none);
    }
}

// A chunk of a chunked stage may hold 0 in flight: the plan puts the stage's peak at a moment
// where that chunk's activations are all freed (ppb::predict_over_profile). A stage of one chunk
// holds at least one.
constexpr limits::CountRange in_flight_or_none{0, limits::in_flight.max, "micro-batches"};

ppb_chunk read_placed_chunk(const JsonObject& object, bool one_of_several) {
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

// What both views check first: the document's format.
void check_format(const JsonObject& top) {
    const JsonNode format = top.required("format");
    if (format.value().is_string() && format.value().get_string() == "ppb.partition/1")
        return;
    format.fail(
        fmt::format("expected \"ppb.partition/1\" (the output of 'ppb partition --json'), "
                    "got {}",
                    describe_json(format.value())));
}

// The plan's schedule, 1f1b when it names none (plans of one chunk written before schedules).
Schedule schedule_of(const JsonObject& top) {
    const auto node = top.optional("schedule");
    if (!node)
        return Schedule::one_f_one_b;
    const std::string_view name = node->as_string();
    const auto schedule = schedule_from_name(name);
    if (!schedule)
        node->fail(unknown_schedule(name));
    return *schedule;
}

// A chunk's time for one micro-batch: up to 1e4 layers of at most 1e9 each (limits::time, the
// layers' range), so that M·v of them per stage stay finite and exact enough.
constexpr limits::RealRange chunk_time{0.0, 1e13, false, ""};

// One chunk's costs and, when it gives them, its activation MB and in-flight count.
struct TimedChunk {
    ChunkCost cost;
    std::optional<double> activation_mb;
    std::optional<std::uint32_t> in_flight;
    bool weight_time_given = true;
};

TimedChunk read_timed_chunk(const JsonObject& object) {
    TimedChunk chunk;
    chunk.cost.forward_time = object.required("forward_time").as_number_in(chunk_time);
    chunk.cost.backward_time = object.required("backward_time").as_number_in(chunk_time);
    if (const auto r = object.optional("recompute_time")) {
        chunk.cost.recompute_time = r->as_number_in(chunk_time);
        if (chunk.cost.recompute_time > chunk.cost.backward_time)
            r->fail(fmt::format("{} exceeds the backward_time {} that includes it",
                                chunk.cost.recompute_time, chunk.cost.backward_time));
    }
    if (const auto w = object.optional("weight_time")) {
        chunk.cost.weight_time = w->as_number_in(chunk_time);
        if (chunk.cost.weight_time > chunk.cost.backward_time - chunk.cost.recompute_time)
            w->fail(fmt::format("{} exceeds the backward_time {} less its recompute_time {}",
                                chunk.cost.weight_time, chunk.cost.backward_time,
                                chunk.cost.recompute_time));
    } else {
        chunk.weight_time_given = false;
    }
    if (const auto a = object.optional("activation_mb"))
        chunk.activation_mb = a->as_number_in(limits::memory_mb);
    if (const auto f = object.optional("in_flight"))
        chunk.in_flight = f->as_count(in_flight_or_none);
    return chunk;
}

std::vector<TimedChunk> read_timed_chunks(const JsonObject& stage, std::uint32_t num_chunks) {
    std::vector<TimedChunk> chunks;
    if (const auto list = stage.optional("chunks")) {
        const JsonArray array(*list);
        if (array.size() != num_chunks) {
            list->fail(fmt::format("has {} chunks, the plan has {} per stage (num_chunks)",
                                   array.size(), num_chunks));
        }
        for (std::size_t c = 0; c < array.size(); ++c) {
            const JsonObject object(array.at(c));
            if (const auto index = object.optional("chunk")) {
                if (index->as_count({0, limits::chunks.max, "chunks"}) != c)
                    index->fail(fmt::format("expected chunk {} here, in order", c));
            }
            chunks.push_back(read_timed_chunk(object));
        }
        return chunks;
    }
    if (num_chunks != 1) {
        stage.fail(fmt::format(
            "missing required field 'chunks' (the plan has {} chunks per stage: give each one's "
            "forward_time and backward_time)",
            num_chunks));
    }
    if (!stage.contains("forward_time") || !stage.contains("backward_time")) {
        stage.fail(
            "missing the stage's times: give 'forward_time' and 'backward_time', or 'chunks' "
            "with each chunk's");
    }
    chunks.push_back(read_timed_chunk(stage));
    return chunks;
}

// The plan's "comm_time": one number for every boundary, or one per boundary.
std::vector<double> read_comm_time(const JsonNode& node) {
    if (node.is_number())
        return {node.as_number_in(chunk_time)};
    std::vector<double> times;
    for (const JsonNode& time : JsonArray(node).elements())
        times.push_back(time.as_number_in(chunk_time));
    return times;
}

}  // namespace

PlanStages read_plan_stages(std::string_view text, std::string_view source) {
    const auto document = parse_json(text, source);
    const JsonObject top(JsonNode(document, source));
    check_format(top);
    const std::uint32_t num_stages = top.required("num_stages").as_count(limits::stages);
    // The schedule decides which stage holds the model's ends (StagePlacement::schedule) and a
    // chunked stage's profile.
    const Schedule schedule = schedule_of(top);

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
                chunks.push_back(read_placed_chunk(JsonObject(chunk), array.size() > 1));
        } else {
            chunks.push_back(read_placed_chunk(stage, false));
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

PlanTimes read_plan_times(std::string_view text, std::string_view source,
                          const PlanOverrides& overrides, const FieldName& name) {
    const auto document = parse_json(text, source);
    const JsonObject top(JsonNode(document, source));
    check_format(top);

    PlanTimes plan;
    SimulationInput& in = plan.input;
    in.schedule = overrides.schedule ? *overrides.schedule : schedule_of(top);
    in.num_stages = top.required("num_stages").as_count(limits::stages);
    in.num_chunks = 1;
    if (const auto chunks = top.optional("num_chunks"))
        in.num_chunks = chunks->as_count(limits::chunks);
    const JsonNode micro_batches = top.required("micro_batches");
    in.micro_batches = overrides.micro_batches ? *overrides.micro_batches
                                               : micro_batches.as_count(limits::micro_batches);
    if (const std::string problem =
            schedule_shape_problem(in.schedule, in.num_stages, in.num_chunks, in.micro_batches);
        !problem.empty()) {
        // Named where the failing value came from: an override, or the plan.
        if (overrides.schedule && overrides.micro_batches)
            refuse(
                "schedule",
                [&](std::string_view) { return name("schedule") + ", " + name("micro_batches"); },
                problem);
        if (overrides.schedule)
            refuse("schedule", name, problem);
        if (overrides.micro_batches)
            refuse("micro_batches", name, problem);
        top.fail(problem);
    }

    if (const auto unit = top.optional("time_unit"); unit && !unit->is_null()) {
        plan.time_unit = unit->as_string();
        if (plan.time_unit != "ms")
            unit->fail(fmt::format("expected \"ms\" or null (the layer file's unit), got {}",
                                   describe_json(unit->value())));
    }
    if (!overrides.comm_time.empty()) {
        in.comm_time = overrides.comm_time;
        try {
            (void)boundary_comm_times(in.schedule, in.num_stages, in.comm_time);
        } catch (const InputError& e) {
            refuse("comm_time", name, e.what());
        }
    } else if (const auto comm = top.optional("comm_time")) {
        in.comm_time = read_comm_time(*comm);
        try {
            (void)boundary_comm_times(in.schedule, in.num_stages, in.comm_time);
        } catch (const InputError& e) {
            comm->fail(e.what());
        }
    }

    const JsonArray stages(top.required("stages"));
    if (stages.size() != in.num_stages) {
        stages.fail(fmt::format("has {} stages, num_stages says {}", stages.size(), in.num_stages));
    }
    // Memory is simulated when every stage gives memory_mb and every chunk activation_mb and
    // in_flight.
    bool memory = true;
    std::vector<std::vector<TimedChunk>> read;
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const JsonObject stage(stages.at(s));
        if (const auto index = stage.optional("stage")) {
            if (index->as_count({0, limits::stages.max - 1, "stages"}) != s)
                index->fail(fmt::format("expected stage {} here, in order", s));
        }
        read.push_back(read_timed_chunks(stage, in.num_chunks));
        // One chunk: the stage's in-flight count is the chunk's.
        if (in.num_chunks == 1 && !read.back()[0].in_flight) {
            if (const auto f = stage.optional("in_flight"))
                read.back()[0].in_flight = f->as_count(limits::in_flight);
        }
        std::vector<ChunkCost> costs;
        for (const TimedChunk& c : read.back()) {
            costs.push_back(c.cost);
            // A zero-bubble plan without each chunk's weight_time: W is half the backward
            // without recomputation (the default --weight-grad-share).
            if (!c.weight_time_given)
                costs.back().weight_time = 0.5 * (c.cost.backward_time - c.cost.recompute_time);
            memory = memory && c.activation_mb && c.in_flight;
        }
        in.costs.push_back(std::move(costs));
        if (const auto mb = stage.optional("memory_mb"))
            plan.planned_memory_mb.push_back(mb->as_number_in(limits::memory_mb));
        else
            memory = false;
    }
    if (!memory) {
        plan.planned_memory_mb.clear();
        return plan;
    }
    // What does not depend on the micro-batches held: the planned peak less the activations the
    // plan counted at it.
    in.with_memory = true;
    for (std::size_t s = 0; s < read.size(); ++s) {
        double static_mb = plan.planned_memory_mb[s];
        for (std::size_t c = 0; c < read[s].size(); ++c) {
            in.costs[s][c].activation_mb = *read[s][c].activation_mb;
            static_mb -= *read[s][c].activation_mb * *read[s][c].in_flight;
        }
        in.static_mb.push_back(static_mb);
    }
    return plan;
}

}  // namespace ppb::partition
