// ppb/partition/search_document.hpp — a search's result as the document "ppb.search/1"
// (host_api/docs/design.md, "ppb.search/1"): what `ppb search --json` prints.
#ifndef PPB_PARTITION_SEARCH_DOCUMENT_HPP
#define PPB_PARTITION_SEARCH_DOCUMENT_HPP

#include <ppb/partition/configuration_flags.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/partition/search.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ppb::partition {

// What turns a configuration's iteration (in ms) into throughput: known when the layers are a
// model shape's on a cluster's devices.
struct Throughput {
    double tokens_per_sample = 0.0;       // s
    double model_flops_per_sample = 0.0;  // forward + backward, all ranks of a replica
    double peak_tflops = 0.0;             // per device, at the cluster's precision
};

// Of a planned configuration (its t, cp, b): tokens per second per device (the global batch's
// tokens over the iteration, over P x d x t x cp devices), and the model-FLOPs utilisation
// (the model's FLOPs per iteration over the devices' peak for as long; recomputation is not
// model FLOPs).
struct ConfigurationThroughput {
    double tokens_per_second_per_device = 0.0;
    double model_flops_utilisation = 0.0;
};
[[nodiscard]] ConfigurationThroughput throughput_of(const SearchOutcome& outcome,
                                                    const Throughput& throughput);

struct SearchContext {
    PartitionContext model;        // the memory model, as in ppb.partition/1
    std::string layers;            // where the layer times came from, for people
    std::string time_unit;         // "ms", or empty: the layer file's own unit
    std::size_t top = 10;          // ranked configurations listed (0: all)
    bool with_infeasible = false;  // list the configurations that do not fit, and what would
    // What the iteration times include of communication, for people ("transfers between stages
    // and data-parallel synchronisation on 8 H100 per node, ..."); empty: none is timed beyond
    // the problem's comm_time.
    std::string communication = {};
    // With it, each ranked configuration's tokens per second per device and MFU.
    std::optional<Throughput> throughput = std::nullopt;
    // What the ranking assumed beyond each configuration's degrees, in its Megatron-LM flags
    // ("megatron_parallelism"), and the expert degrees of torchtitan's and MindFormers' settings.
    AssumedSettings megatron_assumed = {};
};

// The ppb.search/1 document: the space searched, counts, the ranked configurations (each with its
// ppb.partition/1 plan), and (with_infeasible) the configurations that do not fit with the smallest
// memory limit that would, the ones that cannot be planned, the combinations skipped.
[[nodiscard]] boost::json::object search_document(const SearchSpace& space, const Problem& base,
                                                  const SearchPlan& plan,
                                                  const SearchResult& result,
                                                  const SearchContext& context);

// The ranked outcomes `context.top` keeps.
[[nodiscard]] std::vector<const SearchOutcome*> top_ranked(const SearchResult& result,
                                                           std::size_t top);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SEARCH_DOCUMENT_HPP
