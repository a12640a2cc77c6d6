// The two forms of a partition: the ppb.partition/1 document and the table for people.
#ifndef PPB_PARTITION_OUTPUT_HPP
#define PPB_PARTITION_OUTPUT_HPP

#include <ppb/partition/problem.hpp>
#include <ppb/simulator.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace ppb::cli {

struct PartitionContext {
    std::string model_name;
    std::string model_version;
    std::string source;  // what the model was configured or fitted from, for people
};

// The arrays MindFormers and the SAPP tools take, one row per chunk: offset (layers minus
// floor(L / (P v))), recompute (full), select_recompute (select + both + full),
// select_comm_recompute (comm + both + full) — partition::mindformers_counts(), which
// MindFormers applies to the first layers of each stage and so rebuilds exactly the plan.
// nullopt when a stage mixes 'select' and 'comm' layers (possible only under
// RecomputeRule::any), which no counts express.
[[nodiscard]] std::optional<boost::json::object> mindformers_arrays(
    const partition::Problem& problem, const partition::Plan& plan);

// `simulation`: the plan's iteration as the schedule simulator times it (its makespan and bubble
// are shown beside the estimate the partitioner minimised).
[[nodiscard]] boost::json::object partition_document(const partition::Problem& problem,
                                                     const partition::Plan& plan,
                                                     const PartitionContext& context,
                                                     const Simulation& simulation);

[[nodiscard]] std::string render_partition(const partition::Problem& problem,
                                           const partition::Plan& plan,
                                           const PartitionContext& context,
                                           const Simulation& simulation);

}  // namespace ppb::cli

#endif  // PPB_PARTITION_OUTPUT_HPP
