// In-flight counts per schedule, as the public SAPP balancing solver computes them.
#include <ppb/schedule.hpp>

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
constexpr std::array<ScheduleName, 4> schedule_names = {{
    {Schedule::one_f_one_b, "1f1b"},
    {Schedule::interleaved, "interleaved"},
    {Schedule::interleaved_less_memory, "interleaved-less-memory"},
    {Schedule::dualpipe_v, "dualpipe-v"},
}};

std::int64_t cap(std::int64_t count, std::uint32_t micro_batches) {
    return micro_batches == 0 ? count : std::min<std::int64_t>(count, micro_batches);
}

}  // namespace

std::optional<Schedule> schedule_from_name(std::string_view name) noexcept {
    for (const auto& entry : schedule_names) {
        if (entry.name == name)
            return entry.schedule;
    }
    return std::nullopt;
}

std::string_view schedule_name(Schedule schedule) noexcept {
    for (const auto& entry : schedule_names) {
        if (entry.schedule == schedule)
            return entry.name;
    }
    return "unknown";
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
    const std::int64_t p = num_stages;
    const std::int64_t s = stage;
    std::vector<std::int64_t> counts;
    switch (schedule) {
        case Schedule::one_f_one_b:
            if (chunks != 1)
                throw std::invalid_argument("1f1b has one chunk per stage");
            counts = {p - s};
            break;
        case Schedule::interleaved:
        case Schedule::interleaved_less_memory:
            if (chunks < 2) {
                throw std::invalid_argument("an interleaved schedule has at least two chunks");
            }
            counts.assign(chunks, p);
            if (schedule == Schedule::interleaved) {
                counts.front() += std::max<std::int64_t>(0, p - 2 * s - 1);
                counts.back() += std::min<std::int64_t>(0, p - 2 * s - 1);
            } else {
                counts.back() -= s;
            }
            break;
        case Schedule::dualpipe_v:
            if (chunks != 2)
                throw std::invalid_argument("dualpipe-v has two chunks per stage");
            counts = {2 * p - s, s + 1};
            break;
    }
    std::vector<std::uint32_t> out;
    out.reserve(counts.size());
    for (auto c : counts)
        out.push_back(static_cast<std::uint32_t>(std::max<std::int64_t>(1, cap(c, micro_batches))));
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
    if (schedule == Schedule::dualpipe_v && at.chunk == 1)
        return 2 * num_stages - 1 - at.stage;
    return at.chunk * num_stages + at.stage;
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
    if (schedule == Schedule::dualpipe_v && chunk == 1)
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
