// ppb/partition/model_plan.hpp — planning with a loaded memory model: its coefficients (per group
// of body layers, matched to the layer file's groups by name) or its predictions as the memory
// source, the exact optimum, and the plan's simulated iteration. What `ppb partition` and the
// Python module's partition() run.
#ifndef PPB_PARTITION_MODEL_PLAN_HPP
#define PPB_PARTITION_MODEL_PLAN_HPP

#include <ppb/memory_model.hpp>
#include <ppb/partition/memory_breakdown.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/simulator.hpp>

#include <cstdint>
#include <functional>
#include <optional>

namespace ppb::partition {

// Moves of the refine_by_simulation local search: enough to settle on the instances measured in
// host_api/docs/performance.md (most stop by themselves well before), and a bound that does not
// depend on the machine.
inline constexpr std::uint32_t refine_moves = 100;

struct PlannedPartition;

// What a caller adds to a plan's simulated iteration (`ppb search`: the data-parallel
// synchronisation after it, which depends on what each stage holds), in the layer file's unit.
using AddedToIteration = std::function<double(const Problem&, const Plan&)>;

struct PlanWithModelOptions {
    // With chunks: solve for both estimates (ChunkObjective::stages and slots) and keep the plan
    // whose iteration simulates faster (host_api/docs/schedules.md, "Every schedule": neither
    // estimate wins on every instance); otherwise `problem.objective` alone.
    bool choose_objective = true;
    // Then improve the plan on the simulated iteration (refine_by_simulation, refine_moves), for
    // problems with chunks (1F1B plans are exact; ignored for them): the default plan. False is
    // the fast mode, the better estimate's exact optimum alone.
    bool refine = true;
    // With chunks, also prove a lower bound on the simulated iteration of every plan that fits
    // memory (simulated_lower_bound, PlannedPartition::lower_bound).
    bool lower_bound = true;
    // Whether the returned simulation traces each stage's memory over time (for `ppb simulate`
    // and timelines); the makespan and bubble do not depend on it. A search leaves it out.
    bool simulate_memory = true;
    // With chunks: what an earlier call made of the same problem without the local search (its
    // problem, with the objective it chose, and its plan). The solves are skipped — they would
    // give that plan again — and the local search, the simulation and the bound start from it:
    // a search planning its best configurations again pays for the local search only. Throws
    // std::invalid_argument when it is not the same problem.
    const PlannedPartition* solved = nullptr;
    // With choose_objective: what the caller adds to each candidate's simulated iteration; the
    // candidates (both estimates' optima, Megatron-LM's default layout) are weighed by the sum.
    AddedToIteration added_to_iteration = {};
};

struct PlannedPartition {
    Problem problem;  // as solved: its objective is the one chosen
    Plan plan;
    Simulation simulation;  // the plan's iteration timed by the schedule's own order
    // What each stage's memory is made of, as far as the model says (memory_breakdown).
    std::vector<MemoryBreakdown> breakdown = {};
    // With chunks (PlanWithModelOptions::lower_bound): no plan that fits memory simulates faster
    // than this (simulated_lower_bound); the plan's gap is 1 - lower_bound / simulation.makespan.
    std::optional<double> lower_bound = std::nullopt;
    // Without the local search, when the plan is Megatron-LM's default layout because it simulated
    // faster: the estimate's optimum it replaced, where a later call's local search starts
    // (PlanWithModelOptions::solved).
    std::optional<Plan> estimate_plan = std::nullopt;
};

// The memory source over `model` (which must outlive it) for `problem`: the model's linear
// coefficients when it has them — per group of the layer file's body layers, by name —, else its
// batch predictions; its standard errors for a margin in standard errors. Throws ppb::InputError
// when the layer file's groups and the model's do not match.
[[nodiscard]] MemorySource model_memory_source(const Problem& problem, const MemoryModel& model);

// The optimal plan of `problem` with memory from `model`, as `ppb partition` makes it. Throws
// Infeasible, ppb::InputError, or the model's errors.
[[nodiscard]] PlannedPartition plan_with_model(Problem problem, const MemoryModel& model,
                                               const PlanWithModelOptions& options = {});

// The same with a memory source made once (model_memory_source) and used for many problems of the
// same layer file, from several threads at once when its model allows (ppb::search).
[[nodiscard]] PlannedPartition plan_with_memory(Problem problem, const MemorySource& memory,
                                                const PlanWithModelOptions& options = {});

}  // namespace ppb::partition

#endif  // PPB_PARTITION_MODEL_PLAN_HPP
