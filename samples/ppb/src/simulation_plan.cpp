#include "simulation_plan.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>
#include <ppb/schedule_order.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ppb::cli {
namespace {

// A chunk's time for one micro-batch: up to 1e4 layers of at most 1e9 each (limits::time, the
// layers' range), so that M·v of them per stage stay finite and exact enough.
constexpr limits::RealRange chunk_time{0.0, 1e13, false, ""};

Schedule read_schedule(const JsonObject& doc) {
    const auto node = doc.optional("schedule");
    if (!node)
        return Schedule::one_f_one_b;
    const std::string_view name = node->as_string();
    if (const auto schedule = schedule_from_name(name))
        return *schedule;
    node->fail(fmt::format("unknown schedule '{}' (expected one of: {})", name,
                           fmt::join(schedule_names(), ", ")));
}

// One chunk's costs and, when it gives them, its activation MB and in-flight count.
struct ChunkRead {
    ChunkCost cost;
    std::optional<double> activation_mb;
    std::optional<std::uint32_t> in_flight;
    bool weight_time_given = true;
};

ChunkRead read_chunk(const JsonObject& object) {
    ChunkRead chunk;
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
    // 0 where the plan put a chunked stage's peak at a moment the chunk holds none.
    if (const auto f = object.optional("in_flight"))
        chunk.in_flight = f->as_count({0, limits::in_flight.max, limits::in_flight.unit});
    return chunk;
}

std::vector<ChunkRead> read_stage_chunks(const JsonObject& stage, std::uint32_t num_chunks) {
    std::vector<ChunkRead> chunks;
    if (const auto list = stage.optional("chunks")) {
        const JsonArray array = list->as_array();
        if (array.size() != num_chunks) {
            list->fail(fmt::format("has {} chunks, the plan has {} per stage (num_chunks)",
                                   array.size(), num_chunks));
        }
        for (std::size_t c = 0; c < array.size(); ++c) {
            const JsonObject object = array.at(c).as_object();
            if (const auto index = object.optional("chunk")) {
                if (index->as_count({0, limits::chunks.max, "chunks"}) != c)
                    index->fail(fmt::format("expected chunk {} here, in order", c));
            }
            chunks.push_back(read_chunk(object));
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
    chunks.push_back(read_chunk(stage));
    return chunks;
}

}  // namespace

SimulationPlan read_simulation_plan(std::string_view text, std::string_view source,
                                    const PlanOverrides& overrides) {
    const boost::json::value root = parse_json(text, source);
    const JsonObject doc(JsonNode(root, source));
    const JsonNode format = doc.required("format");
    if (format.as_string() != "ppb.partition/1")
        format.fail(
            fmt::format("expected \"ppb.partition/1\", got {}", describe_json(format.value())));

    SimulationPlan plan;
    SimulationInput& in = plan.input;
    in.schedule = overrides.schedule.value_or(read_schedule(doc));
    in.num_stages = doc.required("num_stages").as_count(limits::stages);
    in.num_chunks = 1;
    if (const auto chunks = doc.optional("num_chunks"))
        in.num_chunks = chunks->as_count(limits::chunks);
    const JsonNode micro_batches = doc.required("micro_batches");
    in.micro_batches =
        overrides.micro_batches.value_or(micro_batches.as_count(limits::micro_batches));
    if (const std::string problem =
            schedule_shape_problem(in.schedule, in.num_stages, in.num_chunks, in.micro_batches);
        !problem.empty()) {
        // Name where the failing value came from: an option or the plan.
        if (overrides.micro_batches || overrides.schedule) {
            throw InputError(fmt::format("{}{}{}: {}", overrides.schedule ? "--schedule" : "",
                                         overrides.schedule && overrides.micro_batches ? ", " : "",
                                         overrides.micro_batches ? "--micro-batches" : "",
                                         problem));
        }
        throw InputError(located_message(source, "", problem));
    }

    if (const auto unit = doc.optional("time_unit"); unit && !unit->is_null()) {
        plan.time_unit = unit->as_string();
        if (plan.time_unit != "ms")
            unit->fail(fmt::format("expected \"ms\" or null (the layer file's unit), got {}",
                                   describe_json(unit->value())));
    }
    if (!overrides.comm_time.empty()) {
        in.comm_time = overrides.comm_time;
    } else if (const auto comm = doc.optional("comm_time")) {
        if (comm->is_number()) {
            in.comm_time = {comm->as_number_in(chunk_time)};
        } else {
            const JsonArray array = comm->as_array();
            for (std::size_t b = 0; b < array.size(); ++b)
                in.comm_time.push_back(array.at(b).as_number_in(chunk_time));
        }
        try {
            (void)boundary_comm_times(in.schedule, in.num_stages, in.comm_time);
        } catch (const InputError& e) {
            comm->fail(e.what());
        }
    }

    const JsonNode stages_node = doc.required("stages");
    const JsonArray stages = stages_node.as_array();
    if (stages.size() != in.num_stages) {
        stages_node.fail(
            fmt::format("has {} stages, num_stages says {}", stages.size(), in.num_stages));
    }
    // Memory is simulated when every stage gives memory_mb and every chunk activation_mb and
    // in_flight.
    bool memory = true;
    std::vector<std::vector<ChunkRead>> read;
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const JsonObject stage = stages.at(s).as_object();
        if (const auto index = stage.optional("stage")) {
            if (index->as_count({0, limits::stages.max - 1, "stages"}) != s)
                index->fail(fmt::format("expected stage {} here, in order", s));
        }
        read.push_back(read_stage_chunks(stage, in.num_chunks));
        // One chunk: the stage's in-flight count is the chunk's.
        if (in.num_chunks == 1 && !read.back()[0].in_flight) {
            if (const auto f = stage.optional("in_flight"))
                read.back()[0].in_flight = f->as_count(limits::in_flight);
        }
        std::vector<ChunkCost> costs;
        for (const ChunkRead& c : read.back()) {
            costs.push_back(c.cost);
            // A zero-bubble plan without each chunk's weight_time: W is half the backward
            // without recomputation (ppb partition's default --weight-grad-share).
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

}  // namespace ppb::cli
