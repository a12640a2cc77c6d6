// A partition as a table for people (the ppb.partition/1 document is
// ppb/partition/plan_document.hpp).
#ifndef PPB_PARTITION_OUTPUT_HPP
#define PPB_PARTITION_OUTPUT_HPP

#include <ppb/partition/plan_document.hpp>
#include <ppb/simulator.hpp>

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace ppb::cli {

using partition::PartitionContext;

[[nodiscard]] std::string render_partition(const partition::Problem& problem,
                                           const partition::Plan& plan,
                                           const PartitionContext& context,
                                           const Simulation& simulation,
                                           std::optional<double> lower_bound = std::nullopt,
                                           std::string_view after_simulation = {});

}  // namespace ppb::cli

#endif  // PPB_PARTITION_OUTPUT_HPP
