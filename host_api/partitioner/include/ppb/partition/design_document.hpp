// ppb/partition/design_document.hpp — a dry-run design as the document "ppb.design/1"
// (host_api/docs/design.md, "ppb.design/1"), and each run as the other tools take it: MindFormers'
// arrays and a SAPP -init skeleton whose memories are left to fill in.
#ifndef PPB_PARTITION_DESIGN_DOCUMENT_HPP
#define PPB_PARTITION_DESIGN_DOCUMENT_HPP

#include <ppb/partition/design.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace ppb::partition {

// The run's MindFormers arrays, one row per chunk as in ppb.partition/1 (offset = n_s - L // P,
// recompute, select_recompute, select_comm_recompute: mindformers_counts), or nullopt when a stage
// holds both 'select' and 'comm' layers.
[[nodiscard]] std::optional<boost::json::object> design_mindformers_arrays(
    const DesignRun& run, std::uint32_t num_layers);

// The run as SAPP's -init YAML (what `ppb import sapp` reads): pipeline_config, recompute_config
// and memory_usage with every memory null, to be replaced by the stage's measured peak in MB.
// Nullopt when the arrays do not exist (design_mindformers_arrays).
[[nodiscard]] std::optional<std::string> design_sapp_init(const DesignRun& run,
                                                          std::uint32_t num_layers);

// The ppb.design/1 document of `design` for `request`.
[[nodiscard]] boost::json::object design_document(const DesignRequest& request,
                                                  const Design& design,
                                                  const std::string& prior_model);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_DESIGN_DOCUMENT_HPP
