// A plan as the simulator's input (ppb/partition/simulate_plan.hpp).
#include <ppb/partition/simulate_plan.hpp>

#include <algorithm>
#include <optional>
#include <span>

namespace ppb::partition {

namespace {

// The times of one layer of group g: the group's, or the one body's.
struct LayerTime {
    const std::array<double, PPB_KIND_COUNT>& time;
    double forward;
    const std::optional<double>& weight_grad;
};

LayerTime layer_time(const TimeModel& t, std::size_t g) {
    if (g < t.groups.size())
        return {t.groups[g].time, t.groups[g].forward, t.groups[g].weight_grad};
    return {t.body_time, t.body_forward, t.body_weight_grad};
}

}  // namespace

ChunkEnds chunk_ends(const Problem& problem, std::uint32_t stage, std::uint32_t chunk) {
    const std::uint32_t position =
        model_position(problem.schedule, problem.num_stages, problem.chunks, {stage, chunk});
    return {position == 0, position + 1 == problem.num_stages * problem.chunks};
}

ChunkCost chunk_cost(const Problem& problem, std::span<const KindCounts> group_layers,
                     ChunkEnds ends, double forward_time, double backward_time) {
    ChunkCost cost;
    cost.forward_time = forward_time;
    cost.backward_time = backward_time;
    const double share = problem.weight_grad_share;
    const TimeModel& t = problem.time;
    for (std::size_t g = 0; g < group_layers.size(); ++g) {
        const LayerTime layer = layer_time(t, g);
        const double unsplit = layer.time[PPB_KIND_NONE] - layer.forward;
        const double w = layer.weight_grad ? *layer.weight_grad : share * unsplit;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            const double n = group_layers[g][k];
            cost.recompute_time += n * (layer.time[k] - layer.time[PPB_KIND_NONE]);
            cost.weight_time += n * w;
        }
    }
    if (ends.head)
        cost.weight_time += t.head_weight_grad.at(share);
    if (ends.tail)
        cost.weight_time += t.tail_weight_grad.at(share);
    // Rounding, or a kind faster than 'none' in the layer file: never below 0, and W never more
    // than the backward without recomputation it is part of.
    cost.recompute_time = std::clamp(cost.recompute_time, 0.0, cost.backward_time);
    cost.weight_time = std::clamp(cost.weight_time, 0.0, cost.backward_time - cost.recompute_time);
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
            // A plan of several groups has their counts per chunk with several chunks, per stage
            // with one.
            const std::span<const KindCounts> layers =
                !chunk.group_layers.empty()  ? std::span<const KindCounts>(chunk.group_layers)
                : stage.group_layers.empty() ? std::span<const KindCounts>(&chunk.layers, 1)
                                             : std::span<const KindCounts>(stage.group_layers);
            ChunkCost cost =
                chunk_cost(problem, layers, chunk_ends(problem, stage.stage, chunk.chunk),
                           chunk.forward_time, chunk.backward_time);
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
