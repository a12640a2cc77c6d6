// ppb/partition/plan_document.hpp — a plan as the document "ppb.partition/1"
// (host_api/docs/design.md, "ppb.partition/1"), what `ppb partition --json` prints and the Python
// module returns, and the arrays MindFormers applies.
#ifndef PPB_PARTITION_PLAN_DOCUMENT_HPP
#define PPB_PARTITION_PLAN_DOCUMENT_HPP

#include <ppb/allocator_reserve.hpp>
#include <ppb/partition/memory_breakdown.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/simulator.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ppb::partition {

// Where the plan's memory came from, for the document's "model" and for people.
struct PartitionContext {
    std::string model_name;
    std::string model_version;
    std::string source;  // what the model was configured or fitted from, for people
    // The unit of every time of the plan: "ms" when the times come from a model shape's FLOPs,
    // empty for a layer file's own unit (which ppb does not know). The document's "time_unit".
    std::string time_unit = {};
    // The allocator's reserve when the plan is on reserved memory (ppb/allocator_reserve.hpp):
    // the document's "memory" is then "reserved" and "allocator_reserve" states the fit;
    // otherwise "memory" is "allocated".
    std::optional<AllocatorReserve> reserve = {};
    // A model shape's layers on a cluster: the data-parallel synchronisation after the iteration
    // (data_parallel_sync_of, ms) over the shape's replicas; the document's
    // "data_parallel_replicas" and "data_parallel_sync_time".
    struct DataParallelSync {
        std::uint32_t replicas = 1;
        double sync_time = 0.0;
    };
    std::optional<DataParallelSync> data_parallel = {};
};

// "any", "mindformers", "megatron" or "torchtitan", and back (nullopt for another name).
[[nodiscard]] std::string_view rule_name(RecomputeRule rule) noexcept;
[[nodiscard]] std::optional<RecomputeRule> rule_from_name(std::string_view name) noexcept;

// The arrays MindFormers and the SAPP tools take, one row per chunk: offset (layers minus
// floor(L / (P v))), recompute (full), select_recompute (select + both + full),
// select_comm_recompute (comm + both + full) — mindformers_counts(), which MindFormers applies
// to the first layers of each stage and so rebuilds exactly the plan. nullopt when a stage mixes
// 'select' and 'comm' layers (possible only under RecomputeRule::any), which no counts express.
[[nodiscard]] std::optional<boost::json::object> mindformers_arrays(const Problem& problem,
                                                                    const Plan& plan);
// Why mindformers_arrays() has none for `plan`, for people: the stages that mix 'select' and
// 'comm' layers, or (several groups of body layers under RecomputeRule::any) that MindFormers'
// counts do not rebuild the kinds per group.
[[nodiscard]] std::string mindformers_why_not(const Problem& problem, const Plan& plan);

// The members of the document that give each framework's settings for `plan`, the same as
// partition_document() writes them: "recompute_rule", "mindformers" (mindformers_arrays(), or null
// and "mindformers_why_not"), "megatron", "mindspeed_llm" and "torchtitan" (below). What
// `ppb partition` prints for each framework is made from these (samples/ppb/src/framework_config).
[[nodiscard]] boost::json::object framework_settings(const Problem& problem, const Plan& plan);

// The ppb.partition/1 document of `plan`, with the frameworks' settings (framework_args.hpp;
// framework_settings() above): "mindformers" and, when it is null, "mindformers_why_not";
// "megatron" {args, legacy_args, layout, recompute, why_not / legacy_why_not where null},
// "mindspeed_llm" {args, why_not}, "torchtitan" {module_fqns_per_model_part,
// pipeline_parallel_schedule, pipeline_parallel_degree, activation_checkpoint {mode,
// selective_ac_option}, why_not / activation_checkpoint_why_not where null}. `simulation`: the
// plan's iteration as the schedule simulator times it (its makespan and bubble beside the estimate
// the partitioner minimised). `breakdown`: one per stage (PlannedPartition::breakdown), written as
// each stage's "memory_breakdown_mb"; empty when the model does not say. `lower_bound`
// (PlannedPartition::lower_bound) goes into "simulated" as "lower_bound" and "gap" (null without).
[[nodiscard]] boost::json::object partition_document(
    const Problem& problem, const Plan& plan, const PartitionContext& context,
    const Simulation& simulation, std::span<const MemoryBreakdown> breakdown = {},
    std::optional<double> lower_bound = std::nullopt);

// A stage's "memory_breakdown_mb": {"constant", "head", "tail", "parameters", "activations":
// {kind: MB}, "activations_total"} from coefficients; {"parts": [{"name", "label", "mb"}, ...]}
// from the model's own terms (MemoryBreakdown::parts); else {"activations_total" (when probed),
// "other"}.
[[nodiscard]] boost::json::object breakdown_object(const MemoryBreakdown& breakdown);

// An "iteration_breakdown": {"iteration", "work", "ideal", "imbalance", "communication",
// "recompute"} (ppb::IterationBreakdown; the last five add up to the first), in the layer file's
// time unit.
[[nodiscard]] boost::json::object iteration_breakdown_object(const IterationBreakdown& b);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_PLAN_DOCUMENT_HPP
