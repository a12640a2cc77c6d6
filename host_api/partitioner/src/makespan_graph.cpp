// The simulator's dependency graph, built once per pipeline shape (makespan_graph.hpp).
#include "makespan_graph.hpp"

#include <ppb/schedule_order.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>

namespace ppb::partition::detail {

MakespanGraph::MakespanGraph(Schedule schedule, std::uint32_t p, std::uint32_t v, std::uint32_t m,
                             const std::vector<double>& comm_time)
    : chunks_(v), split_(splits_backward(schedule)) {
    const std::uint32_t positions = p * v;
    const std::vector<double> hop = position_hop_times(schedule, p, v, comm_time);
    std::vector<std::vector<StageStep>> orders;
    for (std::uint32_t s = 0; s < p; ++s)
        orders.push_back(stage_order(schedule, p, v, m, s));
    // node id + 1 of the forward / backward (B) of (position, micro-batch) once placed; 0 until
    // then. W is waited for by nothing but its stage's next operation.
    constexpr std::uint32_t not_placed = 0;
    std::vector<std::uint32_t> forward(static_cast<std::size_t>(positions) * m, not_placed);
    std::vector<std::uint32_t> backward(static_cast<std::size_t>(positions) * m, not_placed);
    std::vector<std::size_t> next(p, 0);
    std::vector<std::uint32_t> last_of_stage(p, 0);
    std::size_t total = 0;
    for (const auto& order : orders)
        total += order.size();
    nodes_.reserve(total);
    // Sweep the stages, placing every operation whose inputs are placed, until all are (the
    // simulator's own event loop, without times).
    bool progress = true;
    while (nodes_.size() < total && progress) {
        progress = false;
        for (std::uint32_t s = 0; s < p; ++s) {
            while (next[s] < orders[s].size()) {
                const StageStep& step = orders[s][next[s]];
                if (step.pass != Pass::forward && step.pass != Pass::backward &&
                    !(split_ && step.pass == Pass::weight))
                    throw std::logic_error("makespan graph: an operation of an unknown pass");
                const std::uint32_t q = pipeline_position(schedule, p, s, step.chunk);
                Node node;
                node.cost = s * v + step.chunk;
                node.pass = step.pass;
                node.after[0] = last_of_stage[s];
                DataWait waits[2];
                const std::uint32_t n_waits = data_waits(step.pass, q, positions, hop, waits);
                bool ready = true;
                for (std::uint32_t w = 0; w < n_waits; ++w) {
                    const auto& table = waits[w].pass == Pass::forward ? forward : backward;
                    node.after[w + 1] =
                        table[static_cast<std::size_t>(waits[w].position) * m + step.micro_batch];
                    node.transfer[w + 1] = waits[w].transfer;
                    ready = ready && node.after[w + 1] != not_placed;
                }
                if (!ready)
                    break;
                nodes_.push_back(node);
                const auto id = static_cast<std::uint32_t>(nodes_.size());
                if (node.pass != Pass::weight) {
                    (node.pass == Pass::backward
                         ? backward
                         : forward)[static_cast<std::size_t>(q) * m + step.micro_batch] = id;
                }
                last_of_stage[s] = id;
                ++next[s];
                progress = true;
            }
        }
    }
    if (nodes_.size() < total)
        throw std::logic_error("makespan graph: the schedule's orders wait on each other");
    end_.assign(nodes_.size() + 1, 0.0);
    forward_.assign(static_cast<std::size_t>(p) * v, 0.0);
    backward_.assign(static_cast<std::size_t>(p) * v, 0.0);
    weight_.assign(static_cast<std::size_t>(p) * v, 0.0);
}

double MakespanGraph::makespan(const std::vector<std::vector<ChunkCost>>& costs,
                               double cutoff) const {
    for (std::size_t s = 0; s < costs.size(); ++s) {
        for (std::size_t c = 0; c < costs[s].size(); ++c) {
            const ChunkCost& cost = costs[s][c];
            forward_[s * chunks_ + c] = cost.forward_time;
            // As ppb::simulate times them: B is the backward less its W when split.
            weight_[s * chunks_ + c] = split_ ? cost.weight_time : 0.0;
            backward_[s * chunks_ + c] =
                split_ ? cost.backward_time - cost.weight_time : cost.backward_time;
        }
    }
    double most = 0.0;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const Node& node = nodes_[i];
        const double start = std::max({end_[node.after[0]], end_[node.after[1]] + node.transfer[1],
                                       end_[node.after[2]] + node.transfer[2]});
        const double end = start + (node.pass == Pass::forward    ? forward_[node.cost]
                                    : node.pass == Pass::backward ? backward_[node.cost]
                                                                  : weight_[node.cost]);
        end_[i + 1] = end;
        most = std::max(most, end);
        if (end >= cutoff)
            return end;
    }
    return most;
}

}  // namespace ppb::partition::detail
