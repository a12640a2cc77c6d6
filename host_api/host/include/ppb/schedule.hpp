// ppb/schedule.hpp — in-flight micro-batch counts per pipeline schedule (host_api/docs/design.md
// §4).
//
// The host computes these so that memory models stay schedule-agnostic: a placement reaches a
// plugin with the in-flight count of each chunk already filled in.
#ifndef PPB_SCHEDULE_HPP
#define PPB_SCHEDULE_HPP

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ppb {

enum class Schedule {
    one_f_one_b,              // "1f1b"
    interleaved,              // "interleaved": interleaved 1F1B, v > 1
    interleaved_less_memory,  // "interleaved-less-memory"
    dualpipe_v,               // "dualpipe-v": v = 2
};

[[nodiscard]] std::optional<Schedule> schedule_from_name(std::string_view name) noexcept;
[[nodiscard]] std::string_view schedule_name(Schedule schedule) noexcept;

// In-flight count of each of the `chunks` chunks of `stage` in a `num_stages`-stage pipeline: the
// most micro-batches whose activations the chunk holds at once under the schedule's order
// (ppb/schedule_order.hpp; design.md §4 gives the closed forms). micro_batches == 0 means "not
// known": the counts of a long iteration, uncapped. Throws std::invalid_argument for an
// impossible combination: stage >= num_stages, a chunk count the schedule does not have, or a
// known micro-batch count the schedule cannot run (the message says what it requires).
[[nodiscard]] std::vector<std::uint32_t> in_flight_counts(Schedule schedule,
                                                          std::uint32_t num_stages,
                                                          std::uint32_t stage,
                                                          std::uint32_t micro_batches,
                                                          std::uint32_t chunks = 1);

}  // namespace ppb

#endif  // PPB_SCHEDULE_HPP
