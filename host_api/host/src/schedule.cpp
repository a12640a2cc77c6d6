// In-flight counts per schedule: closed forms of the peaks of the orders in schedule_order.cpp
// (derived in host_api/docs/design.md, "In-flight micro-batch counts per schedule";
// tests/schedule/test_simulator.cpp checks them against the simulator).
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>

#include <ppb/abi.h>
#include <ppb/json_input.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ppb {
namespace {

struct ScheduleName {
    Schedule schedule;
    std::string_view name;
};
constexpr std::array<ScheduleName, 7> name_table = {{
    {Schedule::one_f_one_b, "1f1b"},
    {Schedule::interleaved, "interleaved"},
    {Schedule::interleaved_less_memory, "interleaved-less-memory"},
    {Schedule::dualpipe_v, "dualpipe-v"},
    {Schedule::zb_h1, "zb-h1"},
    {Schedule::zb_v, "zb-v"},
    {Schedule::combined_1f1b, "combined-1f1b"},
}};

std::int64_t clamp_count(std::int64_t count, std::int64_t most) {
    return std::clamp<std::int64_t>(count, 0, most);
}

}  // namespace

bool splits_backward(Schedule schedule) noexcept {
    return schedule == Schedule::zb_h1 || schedule == Schedule::zb_v;
}

bool v_shaped(Schedule schedule) noexcept {
    return schedule == Schedule::dualpipe_v || schedule == Schedule::zb_v;
}

std::optional<std::uint32_t> fixed_chunks(Schedule schedule) noexcept {
    if (schedule == Schedule::one_f_one_b || schedule == Schedule::zb_h1)
        return 1;
    if (v_shaped(schedule))
        return 2;
    return std::nullopt;
}

std::uint32_t default_chunks(Schedule schedule) noexcept {
    return fixed_chunks(schedule).value_or(2);
}

std::uint32_t schedule_kinds(Schedule schedule, std::uint32_t kinds) noexcept {
    return schedule == Schedule::combined_1f1b ? kinds & ~PPB_KIND_BIT(PPB_KIND_FULL) : kinds;
}

std::string full_recompute_refusal(Schedule schedule) {
    return fmt::format(
        "{} recomputes no layer fully: Megatron-LM refuses full recomputation with "
        "--overlap-moe-expert-parallel-comm, which runs it",
        schedule_name(schedule));
}

std::optional<Schedule> schedule_from_name(std::string_view name) noexcept {
    for (const auto& entry : name_table) {
        if (entry.name == name)
            return entry.schedule;
    }
    return std::nullopt;
}

std::string_view schedule_name(Schedule schedule) noexcept {
    for (const auto& entry : name_table) {
        if (entry.schedule == schedule)
            return entry.name;
    }
    return "unknown";
}

std::vector<std::string_view> schedule_names() {
    std::vector<std::string_view> out;
    for (const auto& entry : name_table)
        out.push_back(entry.name);
    return out;
}

std::vector<std::string_view> chunked_schedule_names() {
    std::vector<std::string_view> out;
    for (const auto& entry : name_table) {
        if (entry.schedule != Schedule::one_f_one_b && entry.schedule != Schedule::zb_h1)
            out.push_back(entry.name);
    }
    return out;
}

std::string names_or(const std::vector<std::string_view>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0)
            out += i + 1 == names.size() ? " or " : ", ";
        out += names[i];
    }
    return out;
}

std::string unknown_schedule(std::string_view name) {
    const std::vector<std::string_view> names = schedule_names();
    const auto guess = closest_name(name, names);
    return fmt::format("unknown schedule '{}' ({}expected {})", name,
                       guess ? fmt::format("did you mean '{}'? ", *guess) : std::string(),
                       names_or(names));
}

std::string not_a_stage(std::uint32_t stage, std::uint32_t num_stages) {
    // "an 8-stage", "an 11-stage", "an 18-stage", "an 80-stage", "a 16-stage".
    const std::string digits = std::to_string(num_stages);
    const bool an =
        digits.front() == '8' ||
        (digits.size() % 3 == 2 && (digits.starts_with("11") || digits.starts_with("18")));
    return fmt::format("{} is not a stage of {} {}-stage pipeline (expected {})", stage,
                       an ? "an" : "a", num_stages,
                       num_stages == 1 ? std::string("0") : fmt::format("0..{}", num_stages - 1));
}

std::vector<std::uint32_t> in_flight_counts(Schedule schedule, std::uint32_t num_stages,
                                            std::uint32_t stage, std::uint32_t micro_batches,
                                            std::uint32_t chunks) {
    if (num_stages == 0)
        throw std::invalid_argument("a pipeline has at least one stage");
    if (stage >= num_stages) {
        throw std::invalid_argument("stage " + std::to_string(stage) + " is not a stage of a " +
                                    std::to_string(num_stages) + "-stage pipeline");
    }
    // A known micro-batch count must be one the schedule runs. 0 stands for "many": 4P is a
    // count every schedule runs, so only the chunk count is checked then.
    const std::string problem = schedule_shape_problem(
        schedule, num_stages, chunks, micro_batches == 0 ? 4 * num_stages : micro_batches);
    if (!problem.empty())
        throw std::invalid_argument(problem);
    const std::int64_t p = num_stages;
    const std::int64_t s = stage;
    const std::int64_t v = chunks;
    std::vector<std::int64_t> counts(chunks);
    switch (schedule) {
        case Schedule::one_f_one_b:
            counts[0] = p - s;
            break;
        case Schedule::interleaved:
        case Schedule::combined_1f1b:  // interleaved's order (schedule_order.cpp); v = 1: P = 1
            // Chunk c < v − 1 holds its first group's P micro-batches and as many of the next
            // group's as start before its own first backward; the last chunk starts backwards
            // before its first group is complete.
            for (std::int64_t c = 0; c + 1 < v; ++c)
                counts[c] = p + clamp_count((v - 2 * c) * p - 2 * s - 1, p);
            counts[v - 1] = std::min(p, 2 * p - 2 * s - 1);
            break;
        case Schedule::interleaved_less_memory:
            // The same with P − s − 1 fewer warm-up forwards than interleaved's 2(P − s − 1).
            for (std::int64_t c = 0; c + 1 < v; ++c)
                counts[c] = p + clamp_count((v - 1 - 2 * c) * p - s, p);
            counts[v - 1] = p - s;
            break;
        case Schedule::dualpipe_v:
            counts = {2 * p - s, s + 1};
            break;
        case Schedule::zb_h1:
        case Schedule::zb_v: {
            // Read off the order: a micro-batch is held until its weight gradient W ends
            // (tests/schedule/test_zero_bubble.cpp pins zb-h1's min(P, M)).
            const auto peaks = peak_in_flight(
                stage_order(schedule, num_stages, chunks,
                            micro_batches == 0 ? 4 * num_stages : micro_batches, stage),
                chunks);
            counts.assign(peaks.begin(), peaks.end());
            break;
        }
    }
    std::vector<std::uint32_t> out;
    out.reserve(counts.size());
    for (const auto c : counts) {
        out.push_back(static_cast<std::uint32_t>(
            micro_batches == 0 ? c : std::min<std::int64_t>(c, micro_batches)));
    }
    return out;
}

std::uint32_t model_position(Schedule schedule, std::uint32_t num_stages, std::uint32_t chunks,
                             StageChunk at) {
    if (at.stage >= num_stages || at.chunk >= chunks) {
        throw std::invalid_argument("chunk " + std::to_string(at.chunk) + " of stage " +
                                    std::to_string(at.stage) + " is not a position of a " +
                                    std::to_string(num_stages) + "-stage, " +
                                    std::to_string(chunks) + "-chunk pipeline");
    }
    return pipeline_position(schedule, num_stages, at.stage, at.chunk);
}

StageChunk position_at(Schedule schedule, std::uint32_t num_stages, std::uint32_t chunks,
                       std::uint32_t position) {
    if (num_stages == 0 || position >= num_stages * chunks) {
        throw std::invalid_argument("position " + std::to_string(position) + " is not one of a " +
                                    std::to_string(num_stages) + "-stage, " +
                                    std::to_string(chunks) + "-chunk pipeline");
    }
    const std::uint32_t chunk = position / num_stages;
    const std::uint32_t offset = position % num_stages;
    if (v_shaped(schedule) && chunk == 1)
        return {num_stages - 1 - offset, 1};
    return {offset, chunk};
}

StageEnds stage_ends(Schedule schedule, std::uint32_t num_stages, std::uint32_t chunks,
                     std::uint32_t stage) {
    const StageChunk last = position_at(schedule, num_stages, chunks, num_stages * chunks - 1);
    return {stage == 0, stage == last.stage};
}

AbiStage abi_stage(Schedule schedule, std::uint32_t num_stages, std::uint32_t chunks,
                   std::uint32_t stage) {
    const StageEnds ends = stage_ends(schedule, num_stages, chunks, stage);
    if (ends.head && ends.tail)
        return {1, 0};
    if (!ends.tail && stage + 1 == num_stages)
        return {num_stages + 1, stage};
    return {num_stages, stage};
}

}  // namespace ppb
