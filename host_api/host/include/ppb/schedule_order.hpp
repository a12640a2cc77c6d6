// ppb/schedule_order.hpp — the order in which each pipeline stage runs its forward and backward
// passes under each schedule (host_api/docs/design.md, "In-flight micro-batch counts per
// schedule").
//
// One order per stage, fixed before anything runs, as the training frameworks fix it: the
// simulator (ppb/simulator.hpp) times these orders, and the in-flight counts of
// ppb/schedule.hpp are read off them, so both agree by construction.
#ifndef PPB_SCHEDULE_ORDER_HPP
#define PPB_SCHEDULE_ORDER_HPP

#include <ppb/schedule.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ppb {

// backward: the whole backward, or under the zero-bubble schedules (splits_backward) its input
// gradient B; weight: the weight gradient W of a backward (zero-bubble schedules only).
enum class Pass : std::uint8_t { forward, backward, weight };

// "forward", "backward" or "weight".
[[nodiscard]] constexpr const char* pass_name(Pass pass) noexcept {
    return pass == Pass::forward ? "forward" : pass == Pass::backward ? "backward" : "weight";
}

// One operation of a stage: the forward, backward (or input-gradient) or weight-gradient pass of
// one micro-batch through one chunk.
struct StageStep {
    std::uint32_t chunk = 0;
    std::uint32_t micro_batch = 0;
    Pass pass = Pass::forward;
};

// What is wrong with running `schedule` on (P, v, M), in words that say what the schedule
// requires ("dualpipe-v needs at least twice as many micro-batches as stages (2 x 4 = 8), got
// 6"); empty when it can run.
[[nodiscard]] std::string schedule_shape_problem(Schedule schedule, std::uint32_t num_stages,
                                                 std::uint32_t num_chunks,
                                                 std::uint32_t micro_batches);

// Where chunk `chunk` of stage `stage` sits along a micro-batch's path through the model, 0 ..
// P·v − 1: c·P + s for 1F1B and the interleaved schedules, s for DualPipe-V's chunk 0 and
// 2P − 1 − s for its chunk 1 (the V comes back up).
[[nodiscard]] std::uint32_t pipeline_position(Schedule schedule, std::uint32_t num_stages,
                                              std::uint32_t stage, std::uint32_t chunk);

// Every operation of `stage` in the order the stage runs them: M·v forwards and M·v backwards,
// and under the zero-bubble schedules M·v weight-gradient passes too.
// Throws ppb::InputError with schedule_shape_problem() when (P, v, M) cannot run, or when
// stage >= P.
[[nodiscard]] std::vector<StageStep> stage_order(Schedule schedule, std::uint32_t num_stages,
                                                 std::uint32_t num_chunks,
                                                 std::uint32_t micro_batches, std::uint32_t stage);

// The most micro-batches each chunk of a stage holds activations for while running `order`:
// +1 when a forward starts (its activations are being built), −1 when its backward ends — or,
// when the order has weight-gradient passes, when its W ends (W still reads the stored inputs of
// each layer; ppb counts the whole activation as held until then, an upper bound). On one
// stage operations run one at a time, so this depends on the order alone, not on any time.
// The pass whose end frees a micro-batch's activations in `order`: weight when the order has
// weight-gradient passes, else backward.
[[nodiscard]] Pass releasing_pass(const std::vector<StageStep>& order);

[[nodiscard]] std::vector<std::uint32_t> peak_in_flight(const std::vector<StageStep>& order,
                                                        std::uint32_t num_chunks);

}  // namespace ppb

#endif  // PPB_SCHEDULE_ORDER_HPP
