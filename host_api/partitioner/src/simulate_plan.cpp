// A plan as the simulator's input (ppb/partition/simulate_plan.hpp).
#include <ppb/partition/simulate_plan.hpp>

#include <algorithm>

namespace ppb::partition {

ChunkCost chunk_cost(const Problem& problem, const KindCounts& layers, double forward_time,
                     double backward_time) {
    ChunkCost cost;
    cost.forward_time = forward_time;
    cost.backward_time = backward_time;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        cost.recompute_time +=
            layers[k] * (problem.time.body_time[k] - problem.time.body_time[PPB_KIND_NONE]);
    }
    // Rounding, or a kind faster than 'none' in the layer file: never below 0.
    cost.recompute_time = std::clamp(cost.recompute_time, 0.0, cost.backward_time);
    cost.weight_time = problem.weight_grad_share * (cost.backward_time - cost.recompute_time);
    return cost;
}

SimulationInput simulation_input(const Problem& problem, const Plan& plan) {
    SimulationInput input;
    input.schedule = problem.schedule;
    input.num_stages = problem.num_stages;
    input.num_chunks = problem.chunks;
    input.micro_batches = problem.micro_batches;
    for (const StagePlan& stage : plan.stages) {
        std::vector<ChunkCost> costs;
        double held = 0.0;
        for (const ChunkPlan& chunk : stage.chunks) {
            ChunkCost cost =
                chunk_cost(problem, chunk.layers, chunk.forward_time, chunk.backward_time);
            cost.activation_mb = chunk.activation_mb;
            held += chunk.in_flight * chunk.activation_mb;
            costs.push_back(cost);
        }
        input.costs.push_back(std::move(costs));
        input.static_mb.push_back(stage.memory_mb - held);
    }
    input.with_memory = plan.activations_known;
    if (!plan.activations_known)
        input.static_mb.clear();
    input.comm_time = problem.comm_time;
    return input;
}

double communication_estimate(const Problem& problem, const Plan& plan) {
    if (problem.comm_time.empty())
        return 0.0;
    SimulationInput input = simulation_input(problem, plan);
    input.with_memory = false;
    return communication_of_balanced(input);
}

IterationBreakdown plan_iteration_breakdown(const Problem& problem, const Plan& plan,
                                            const Simulation& simulation) {
    SimulationInput input = simulation_input(problem, plan);
    input.with_memory = false;
    return iteration_breakdown(input, simulation);
}

}  // namespace ppb::partition
