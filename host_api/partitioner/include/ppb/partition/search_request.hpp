// ppb/partition/search_request.hpp — a search as a host is asked for it.
//
// `ppb search` and Python's ppb.search take the same request: where the layers' times come from
// (a layer file, or a model shape on a device or cluster: TimesRequest), the memory model's
// options, the degrees to search (pipeline, tensor, context and expert parallel, micro-batch
// sizes, shardings), the schedules and chunks, the recompute policies and rule, the limit and its
// margins. This is their one owner: search_request checks every field (RequestError naming it in
// the host's words, ppb/partition/request.hpp), times and sizes each combination of degrees once,
// makes each one's memory model through the host's ModelMaker (a model shape's memory depends on
// the degrees: one model per combination; any other model serves every configuration), plans
// every configuration (search_configurations, run_search), plans the fastest again with the local
// search (refine_best), and says what to do when nothing fits (partition::Infeasible with the
// smallest limit that fits one, or InputError when none can be planned at all).
#ifndef PPB_PARTITION_SEARCH_REQUEST_HPP
#define PPB_PARTITION_SEARCH_REQUEST_HPP

#include <ppb/memory_model.hpp>
#include <ppb/partition/request.hpp>
#include <ppb/partition/search.hpp>
#include <ppb/partition/search_document.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ppb::partition {

struct SearchRequest {
    TimesRequest times;         // the layers' times (TimesRequest::cluster: the devices)
    std::string model_options;  // the memory model's options (JSON text; a shape: per degree)
    std::optional<std::uint32_t> devices = std::nullopt;
    std::vector<std::uint32_t> pipeline_degrees = {};
    std::vector<std::uint32_t> tensor_parallel = {};  // empty: the shape's
    std::optional<std::uint32_t> data_parallel = std::nullopt;
    std::uint64_t global_batch = 0;
    std::vector<std::uint32_t> micro_batch_size = {};  // empty: the shape's
    std::vector<std::uint32_t> context_parallel = {};  // empty: the shape's
    std::vector<std::string> data_parallel_sharding = {};
    std::vector<std::uint32_t> expert_parallel = {};
    std::vector<std::uint32_t> expert_tensor_parallel = {};  // empty: the shape's
    // Empty: ppb's default (default_search_schedules): 1F1B, interleaved and DualPipe-V, and for
    // an MoE model shape timed on a cluster Megatron-LM's combined 1F1B too, only where
    // Megatron-LM runs it (a configuration it refuses is left out, not listed as refused).
    std::vector<std::string> schedules = {};
    std::vector<std::uint32_t> chunks = {2};
    std::vector<std::string> recompute = {"any"};
    std::string recompute_rule = "mindformers";
    std::optional<double> memory_limit_mb = std::nullopt;  // none: the cluster's device memory
    double memory_margin_mb = 0.0;
    double memory_margin_sigma = 0.0;
    std::optional<double> comm_time = std::nullopt;  // every boundary, the layer times' unit
    std::size_t top = 10;                            // ranked configurations listed (0: all)
    bool show_infeasible = false;
    bool fast = false;  // keep each configuration's exact optimum, no local search
};

// The schedules a search considers when the request names none: "1f1b", "interleaved",
// "dualpipe-v", and with `moe_on_cluster` (an MoE model shape whose experts' all-to-all a cluster
// times) "combined-1f1b", which hides that all-to-all (Megatron-Bridge's performance recipes turn
// it on for DeepSeek-V3 and Qwen3: --overlap-moe-expert-parallel-comm).
[[nodiscard]] std::vector<std::string> default_search_schedules(bool moe_on_cluster);

// A memory model the host made, and what it was made from for people ("fitted to 13
// observations of FILE", "configured by its options").
struct SearchModel {
    MemoryModel model;
    std::string source;
};
// Makes (and fits, where it needs a fit) the memory model of `options_json`: the request's
// options, or a shape with one configuration's degrees. A ModelError whose is_input_error() is
// set refuses that configuration (the search goes on); any other error ends the search.
using ModelMaker = std::function<SearchModel(const std::string& options_json)>;

// What a host is told while the request is read: a warning of the time model, a note.
struct SearchMessages {
    std::function<void(const std::string&)> warning = {};
    std::function<void(const std::string&)> note = {};
};

struct SearchAnswer {
    SearchSpace space;
    Problem base;  // the limit, margins, rule and times every configuration shares
    SearchPlan plan;
    SearchResult result;
    SearchContext context;
    // The best plan's problem and plan, for a report's timeline (none when nothing ranks).
    [[nodiscard]] const PlannedPartition* best() const;
};

// The search `request` asks for, run with `run` (jobs, progress, stop). RequestError for a field
// that cannot be searched; Infeasible when no configuration fits (unless stopped), InputError when
// none can be planned. The answer's context.top is the request's top.
[[nodiscard]] SearchAnswer search_request(const SearchRequest& request, const ModelMaker& make,
                                          const FieldName& name, const SearchRunOptions& run,
                                          const SearchMessages& messages = {});

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SEARCH_REQUEST_HPP
