// ppb/simulator.hpp — times one training iteration of a pipeline schedule (host_api/docs/design.md,
// "The simulator"): when each forward and backward runs, how long each stage waits, how many
// micro-batches' activations each chunk holds at most, and each stage's memory over time.
//
// Execution model: each stage runs the operations of its schedule's fixed order
// (ppb/schedule_order.hpp) one at a time. An operation starts when its stage is free and its
// data is there: the forward of micro-batch m at pipeline position q after the forward of m at
// position q − 1; the backward at q after the backward at q + 1 and after its own forward.
// Sending activations and gradients between stages takes no time.
#ifndef PPB_SIMULATOR_HPP
#define PPB_SIMULATOR_HPP

#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>

#include <cstdint>
#include <vector>

namespace ppb {

// What one micro-batch costs in one chunk of one stage.
struct ChunkCost {
    double forward_time = 0.0;
    // The whole backward, recomputation's extra forward included.
    double backward_time = 0.0;
    // The part of backward_time that is recomputation (for the picture only; 0 = none).
    double recompute_time = 0.0;
    // Activation memory held per micro-batch in flight (used when SimulationInput::with_memory).
    double activation_mb = 0.0;
};

struct SimulationInput {
    Schedule schedule = Schedule::one_f_one_b;
    std::uint32_t num_stages = 0;
    std::uint32_t num_chunks = 1;
    std::uint32_t micro_batches = 0;
    std::vector<std::vector<ChunkCost>> costs;  // [stage][chunk]
    // Memory over time is computed only when asked for: static_mb (one per stage: parameters,
    // optimizer state, buffers) plus activation_mb for every micro-batch held.
    bool with_memory = false;
    std::vector<double> static_mb;  // [stage]; empty = 0 everywhere
};

struct SimulatedOperation {
    std::uint32_t stage = 0;
    std::uint32_t chunk = 0;
    std::uint32_t micro_batch = 0;
    Pass pass = Pass::forward;
    double start = 0.0;
    double end = 0.0;
    double recompute_time = 0.0;  // of a backward: its first recompute_time is recomputation
};

// From `time` on (until the next point) the stage holds `mb`.
struct MemoryPoint {
    double time = 0.0;
    double mb = 0.0;
};

struct StageSimulation {
    double busy_time = 0.0;
    double idle_time = 0.0;  // makespan − busy_time
    // Per chunk: the most micro-batches whose activations it holds at once (+1 when a forward
    // starts, −1 when its backward ends).
    std::vector<std::uint32_t> peak_in_flight;
    double peak_memory_mb = 0.0;  // with_memory only
    // with_memory only: when the stage first holds its peak, and the micro-batches each chunk
    // holds then (one vector of the stage's in-flight profile, ppb/in_flight_profile.hpp).
    double peak_memory_time = 0.0;
    std::vector<std::uint32_t> in_flight_at_peak;
    std::vector<MemoryPoint> memory;  // with_memory only: a step function from time 0
};

struct Simulation {
    Schedule schedule = Schedule::one_f_one_b;
    std::uint32_t num_stages = 0;
    std::uint32_t num_chunks = 1;
    std::uint32_t micro_batches = 0;
    bool with_memory = false;
    // Stage by stage, each stage's operations in the order it runs them.
    std::vector<SimulatedOperation> operations;
    double makespan = 0.0;
    // Idle time of all stages over P × makespan (0 when the makespan is 0).
    double bubble_fraction = 0.0;
    std::vector<StageSimulation> stages;
};

// Throws ppb::InputError for an input the schedule cannot run (naming what it requires), costs
// of the wrong shape, or a negative or non-finite time or memory.
[[nodiscard]] Simulation simulate(const SimulationInput& input);

}  // namespace ppb

#endif  // PPB_SIMULATOR_HPP
