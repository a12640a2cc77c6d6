// The simulator's dependency graph, built once per pipeline shape (makespan_graph.hpp).
#include "makespan_graph.hpp"

#include <ppb/schedule_order.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>

namespace ppb::partition::detail {

MakespanGraph::MakespanGraph(Schedule schedule, std::uint32_t p, std::uint32_t v, std::uint32_t m)
    : chunks_(v) {
    const std::uint32_t positions = p * v;
    std::vector<std::vector<StageStep>> orders;
    std::vector<std::uint32_t> stage_chunk_of_position(positions);
    for (std::uint32_t s = 0; s < p; ++s) {
        orders.push_back(stage_order(schedule, p, v, m, s));
        for (std::uint32_t c = 0; c < v; ++c)
            stage_chunk_of_position[pipeline_position(schedule, p, s, c)] = s * v + c;
    }
    // node id + 1 of the forward / backward of (position, micro-batch) once placed; 0 until then.
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
                if (step.pass != Pass::forward && step.pass != Pass::backward)
                    throw std::logic_error("makespan graph: an operation of an unknown pass");
                const std::uint32_t q = pipeline_position(schedule, p, s, step.chunk);
                Node node;
                node.cost = s * v + step.chunk;
                node.backward = step.pass == Pass::backward;
                node.after[0] = last_of_stage[s];
                const auto at = [&](const std::vector<std::uint32_t>& table,
                                    std::uint32_t position) {
                    return table[static_cast<std::size_t>(position) * m + step.micro_batch];
                };
                bool ready = true;
                if (!node.backward) {
                    if (q > 0) {
                        node.after[1] = at(forward, q - 1);
                        ready = node.after[1] != not_placed;
                    }
                } else {
                    node.after[1] = at(forward, q);
                    ready = node.after[1] != not_placed;
                    if (q + 1 < positions) {
                        node.after[2] = at(backward, q + 1);
                        ready = ready && node.after[2] != not_placed;
                    }
                }
                if (!ready)
                    break;
                nodes_.push_back(node);
                const auto id = static_cast<std::uint32_t>(nodes_.size());
                (node.backward ? backward
                               : forward)[static_cast<std::size_t>(q) * m + step.micro_batch] = id;
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
}

double MakespanGraph::makespan(const std::vector<std::vector<ChunkCost>>& costs,
                               double cutoff) const {
    for (std::size_t s = 0; s < costs.size(); ++s) {
        for (std::size_t c = 0; c < costs[s].size(); ++c) {
            forward_[s * chunks_ + c] = costs[s][c].forward_time;
            backward_[s * chunks_ + c] = costs[s][c].backward_time;
        }
    }
    double most = 0.0;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const Node& node = nodes_[i];
        const double start =
            std::max({end_[node.after[0]], end_[node.after[1]], end_[node.after[2]]});
        const double end = start + (node.backward ? backward_[node.cost] : forward_[node.cost]);
        end_[i + 1] = end;
        most = std::max(most, end);
        if (end >= cutoff)
            return end;
    }
    return most;
}

}  // namespace ppb::partition::detail
