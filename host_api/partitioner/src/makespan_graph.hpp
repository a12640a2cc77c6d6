// Internal: the simulated makespan of many plans of one pipeline shape, fast.
//
// ppb::simulate (host_api/docs/design.md, "The simulator") starts every operation at
//     start(o) = max(end of the stage's previous operation, end of each operation o waits for
//                    + the transfer across the boundary between them)
// and ends it at start(o) + its time. That recurrence makes the makespan the longest path through
// the graph whose nodes are the operations, weighted by their times, and whose edges are each
// stage's order and the data dependencies, weighted by the transfers (ppb::data_waits, the rule
// the simulator applies: a forward after the forward one position earlier, a backward — B under
// the zero-bubble schedules — after its own forward and the backward one position later, a W
// after its own B). The graph depends only on (schedule, P, v, M, communication times), not on
// the operations' times; so it is built once, in an order in which every operation comes after
// those it waits for, and each plan's makespan is then one pass over it. The local search
// (refine.cpp) times thousands of plans this way; tests check it against ppb::simulate.
#ifndef PPB_PARTITION_MAKESPAN_GRAPH_HPP
#define PPB_PARTITION_MAKESPAN_GRAPH_HPP

#include <ppb/schedule.hpp>
#include <ppb/simulator.hpp>

#include <cstdint>
#include <limits>
#include <vector>

namespace ppb::partition::detail {

class MakespanGraph {
  public:
    // `comm_time` as ppb::SimulationInput::comm_time takes it (empty: none).
    MakespanGraph(Schedule schedule, std::uint32_t stages, std::uint32_t chunks,
                  std::uint32_t micro_batches, const std::vector<double>& comm_time = {});

    // The makespan ppb::simulate gives for these per-(stage, chunk) costs (the forward, backward
    // and, under the zero-bubble schedules, weight-gradient times are read); costs[s][c]. With a
    // `cutoff`, stops as soon as some operation ends at or after it (the makespan is at least
    // that end) and returns that end.
    [[nodiscard]] double makespan(const std::vector<std::vector<ChunkCost>>& costs,
                                  double cutoff = std::numeric_limits<double>::infinity()) const;

  private:
    struct Node {
        std::uint32_t cost = 0;  // stage * v + chunk
        Pass pass = Pass::forward;
        // Indices into end_ of what the operation waits for (0: nothing, end_[0] stays 0), and
        // the transfer added to each (after[0] is the stage's previous operation: none).
        std::uint32_t after[3] = {0, 0, 0};
        double transfer[3] = {0.0, 0.0, 0.0};
    };
    std::uint32_t chunks_ = 1;
    bool split_ = false;       // the backward runs as B and W (ppb::splits_backward)
    std::vector<Node> nodes_;  // in an order that respects every edge; node i ends at end_[i + 1]
    mutable std::vector<double> end_;
    mutable std::vector<double> forward_, backward_, weight_;
};

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_MAKESPAN_GRAPH_HPP
