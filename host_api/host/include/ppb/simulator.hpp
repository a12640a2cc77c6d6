// ppb/simulator.hpp — times one training iteration of a pipeline schedule (host_api/docs/design.md,
// "The simulator"): when each forward and backward runs, how long each stage waits, how many
// micro-batches' activations each chunk holds at most, and each stage's memory over time.
//
// Execution model: each stage runs the operations of its schedule's fixed order
// (ppb/schedule_order.hpp) one at a time. An operation starts when its stage is free and its
// data is there: the forward of micro-batch m at pipeline position q after the forward of m at
// position q − 1; the backward at q after the backward at q + 1 and after its own forward.
// Sending activations or gradients from one stage to another takes the communication time of
// the boundary crossed (SimulationInput::comm_time; none by default): the dependency is delayed
// by it, the stages stay free meanwhile (point-to-point transfers on their own stream).
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
    // The part of backward_time that is the weight gradient W, run as its own pass by the
    // zero-bubble schedules (ppb::splits_backward); the input gradient B takes the rest,
    // recomputation included. Ignored by the other schedules, whose backward runs whole.
    double weight_time = 0.0;
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
    // Point-to-point time of one transfer (activations forward, gradients backward) across each
    // stage boundary, in the times' unit. Empty: none. One value: every boundary. Otherwise one
    // per boundary: entry b (b < P − 1) between stages b and b + 1; the interleaved schedules
    // also cross from stage P − 1 back to stage 0 between chunks, entry P − 1 (so they take P
    // values, the others P − 1). DualPipe-V's turn at stage P − 1 stays on the stage: no time.
    std::vector<double> comm_time;
};

// The number of per-boundary communication times a schedule takes: P for the interleaved
// schedules (the wrap from stage P − 1 to stage 0 included), P − 1 otherwise.
[[nodiscard]] std::uint32_t comm_boundaries(Schedule schedule, std::uint32_t num_stages);

// `comm_time` as one value per boundary (comm_boundaries entries; empty or one value expanded).
// Throws ppb::InputError for another count, or a negative or non-finite time, naming it.
[[nodiscard]] std::vector<double> boundary_comm_times(Schedule schedule, std::uint32_t num_stages,
                                                      const std::vector<double>& comm_time);

// The transfer time between pipeline positions q and q + 1 (entry q of P·v; the last is 0):
// the time of the boundary between their stages, 0 where both are on one stage (DualPipe-V's
// turn). `comm_time` as SimulationInput takes it. ppb::simulate delays a forward at q + 1 and a
// backward at q by entry q; the partitioner's makespan evaluator reads the same table.
[[nodiscard]] std::vector<double> position_hop_times(Schedule schedule, std::uint32_t num_stages,
                                                     std::uint32_t num_chunks,
                                                     const std::vector<double>& comm_time);

// The dependency rule, the one ppb::simulate applies and the partitioner's makespan evaluator
// rebuilds its graph from: what the operation `pass` at pipeline position q waits for besides its
// stage's previous operation, and the transfer added to each wait (hop: position_hop_times).
// A forward waits for the forward at q − 1; a backward (B under the zero-bubble schedules) for
// its own forward and the backward at q + 1; a weight gradient W only for its own B. Returns
// how many of `out` it filled (0 to 2).
struct DataWait {
    Pass pass = Pass::forward;
    std::uint32_t position = 0;
    double transfer = 0.0;
};
[[nodiscard]] inline std::uint32_t data_waits(Pass pass, std::uint32_t q, std::uint32_t positions,
                                              const std::vector<double>& hop, DataWait out[2]) {
    if (pass == Pass::weight) {
        out[0] = {Pass::backward, q, 0.0};
        return 1;
    }
    if (pass == Pass::forward) {
        if (q == 0)
            return 0;
        out[0] = {Pass::forward, q - 1, hop[q - 1]};
        return 1;
    }
    out[0] = {Pass::forward, q, 0.0};
    if (q + 1 >= positions)
        return 1;
    out[1] = {Pass::backward, q + 1, hop[q]};
    return 2;
}

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
    // The communication time of each boundary (boundary_comm_times; all 0 without).
    std::vector<double> comm_time;
};

// Throws ppb::InputError for an input the schedule cannot run (naming what it requires), costs
// of the wrong shape, or a negative or non-finite time or memory.
[[nodiscard]] Simulation simulate(const SimulationInput& input);

// One iteration broken down the way SAPP's simulator reports its bubble ("real = ideal + imba +
// comm + recompute", mindspore-ai/hyper-parallel hyper_parallel/auto_parallel/sapp_ppb/simulator/
// pp_simulator.py), in time rather than as fractions of the work:
//   iteration = work + ideal + imbalance + communication + recompute, where
//   work          the mean stage's computation without recomputation, M × Σ_c (f + b − r) / P;
//   ideal         the schedule's own bubble with that work spread evenly: the makespan of every
//                 (stage, chunk) at the mean forward and backward (without recomputation), no
//                 communication, less the work (1F1B: (P − 1)(f + b); interleaved: (P − 1)(f + b)
//                 of a chunk, SAPP's (P − 1)/(v·M) of the work);
//   communication the makespan with the boundaries' communication times less the makespan
//                 without them (same plan);
//   recompute     the mean stage's recomputation, M × Σ_c r / P (SAPP: hardware / model − 1);
//   imbalance     the rest: what uneven stages and chunks cost.
// The parts add up to the simulated iteration exactly (imbalance is the remainder, as in SAPP).
struct IterationBreakdown {
    double iteration = 0.0;
    double work = 0.0;
    double ideal = 0.0;
    double imbalance = 0.0;
    double communication = 0.0;
    double recompute = 0.0;
};

// What the communication times of `in` add to the makespan of its pipeline with every (stage,
// chunk) at the mean forward and backward of `in` (recomputation included): the communication of
// evenly loaded stages, for estimates. 0 without communication. For 1F1B with c on every
// boundary it is 2c(P − 1 + ⌊(P − 1)(M − 1)/P⌋), whatever f and b.
[[nodiscard]] double communication_of_balanced(const SimulationInput& in);

// `sim` is simulate(in); runs up to two more simulations (balanced; without communication).
[[nodiscard]] IterationBreakdown iteration_breakdown(const SimulationInput& in,
                                                     const Simulation& sim);

}  // namespace ppb

#endif  // PPB_SIMULATOR_HPP
