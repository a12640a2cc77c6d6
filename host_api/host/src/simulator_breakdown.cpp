// The iteration broken down into work, ideal bubble, imbalance, communication and recompute
// (ppb/simulator.hpp, iteration_breakdown).
#include <ppb/simulator.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ppb {
namespace {

// `in` with every (stage, chunk) at its mean costs; recomputation kept when `with_recompute`.
SimulationInput balanced(const SimulationInput& in, bool with_recompute) {
    ChunkCost mean;
    for (const auto& stage : in.costs) {
        for (const ChunkCost& c : stage) {
            mean.forward_time += c.forward_time;
            mean.backward_time += c.backward_time - (with_recompute ? 0.0 : c.recompute_time);
            mean.weight_time += c.weight_time;
        }
    }
    const double positions = static_cast<double>(in.num_stages) * in.num_chunks;
    if (positions > 0.0) {
        mean.forward_time /= positions;
        mean.backward_time /= positions;
        mean.weight_time /= positions;
    }
    SimulationInput out;
    out.schedule = in.schedule;
    out.num_stages = in.num_stages;
    out.num_chunks = in.num_chunks;
    out.micro_batches = in.micro_batches;
    out.costs.assign(in.num_stages, std::vector<ChunkCost>(in.num_chunks, mean));
    return out;
}

}  // namespace

double communication_of_balanced(const SimulationInput& in) {
    const std::vector<double> comm = boundary_comm_times(in.schedule, in.num_stages, in.comm_time);
    if (std::none_of(comm.begin(), comm.end(), [](double c) { return c > 0.0; }))
        return 0.0;
    SimulationInput even = balanced(in, true);
    const double without = simulate(even).makespan;
    even.comm_time = comm;
    return simulate(even).makespan - without;
}

IterationBreakdown iteration_breakdown(const SimulationInput& in, const Simulation& sim) {
    IterationBreakdown out;
    out.iteration = sim.makespan;
    const std::uint32_t p = in.num_stages;
    const std::uint32_t v = in.num_chunks;
    const double m = in.micro_batches;
    double work = 0.0;
    double recompute = 0.0;
    for (const auto& stage : in.costs) {
        for (const ChunkCost& c : stage) {
            work += c.forward_time + c.backward_time - c.recompute_time;
            recompute += c.recompute_time;
        }
    }
    if (p == 0 || v == 0)
        return out;
    out.work = m * work / p;
    out.recompute = m * recompute / p;
    out.ideal = simulate(balanced(in, false)).makespan - out.work;

    const bool comm =
        std::any_of(sim.comm_time.begin(), sim.comm_time.end(), [](double c) { return c > 0.0; });
    if (comm) {
        SimulationInput without = in;
        without.with_memory = false;
        without.comm_time.clear();
        out.communication = sim.makespan - simulate(without).makespan;
    }
    out.imbalance = out.iteration - out.work - out.ideal - out.communication - out.recompute;
    return out;
}

}  // namespace ppb
