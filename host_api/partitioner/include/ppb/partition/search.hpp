// ppb/partition/search.hpp — which pipeline configuration to run (host_api/docs/design.md,
// "Searching configurations"): every combination of pipeline degree, schedule and chunks, and
// recompute policy, each with the micro-batch count a fixed global batch gives it, planned
// exactly and ranked by its simulated iteration time. What `ppb search` runs.
#ifndef PPB_PARTITION_SEARCH_HPP
#define PPB_PARTITION_SEARCH_HPP

#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/sharding.hpp>
#include <ppb/schedule.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ppb::partition {

// A schedule and its chunks per stage (1 for 1f1b, 2 for dualpipe-v, at least 2 interleaved).
struct ScheduleChoice {
    Schedule schedule = Schedule::one_f_one_b;
    std::uint32_t chunks = 1;
    friend bool operator==(const ScheduleChoice&, const ScheduleChoice&) = default;
};

// Which recompute kinds the layers may use: `any` lets the partitioner choose per layer among
// every kind the model predicts; a set of kinds limits it to those (one kind: every layer
// recomputes that way, e.g. 'full' for Megatron-LM's --recompute-granularity full).
struct RecomputePolicy {
    std::string name;                     // "any", "full", "none+full", ...
    std::uint32_t kinds = PPB_ALL_KINDS;  // mask of candidate kinds
    friend bool operator==(const RecomputePolicy&, const RecomputePolicy&) = default;
};

// A policy from its name: "any", a kind ("none", "select", "comm", "both", "full") or kinds
// joined by '+' ("none+full"). Throws ppb::InputError naming the unknown part.
[[nodiscard]] RecomputePolicy recompute_policy(std::string_view name);

// What to search. Devices = pipeline degree x data-parallel degree x tensor_parallel.
struct SearchSpace {
    // N: with it, every pipeline degree P makes data-parallel degree N / (P t). Without it the
    // data-parallel degree is `data_parallel` for every P.
    std::optional<std::uint32_t> devices;
    std::uint32_t data_parallel = 1;  // used without `devices` only
    // The pipeline degrees to consider; empty: every P dividing N / t (then `devices` is needed)
    // that leaves each stage a layer.
    std::vector<std::uint32_t> pipeline_degrees;
    std::uint32_t tensor_parallel = 1;  // t, when tensor_parallel_degrees is empty
    // The tensor-parallel degrees and micro-batch sizes to consider (empty: tensor_parallel,
    // micro_batch_size alone). More than one needs layer times and memory for each (a model
    // shape's, which the caller makes per configuration); a layer file's are for one t and b.
    std::vector<std::uint32_t> tensor_parallel_degrees = {};
    std::vector<std::uint32_t> micro_batch_sizes = {};
    // cp: a stage's replica spans t x cp devices (data parallel d = N / (P t cp)); the degrees to
    // consider (empty: context_parallel alone; more than one needs a model shape, as t does).
    std::uint32_t context_parallel = 1;
    std::vector<std::uint32_t> context_parallel_degrees = {};
    // Samples per iteration (B) and per micro-batch (b): M = B / (b d) micro-batches.
    std::uint64_t global_batch = 0;
    std::uint32_t micro_batch_size = 1;
    std::vector<ScheduleChoice> schedules = {ScheduleChoice{}};
    std::vector<RecomputePolicy> recompute = {RecomputePolicy{"any", PPB_ALL_KINDS}};
    // What the data-parallel ranks shard, each a configuration of its own (empty: the model's
    // own, not searched). It changes the memory and the transfers, which the caller makes per
    // configuration (a model shape's), not which configurations can run.
    std::vector<DataParallelSharding> shardings = {};
    // The expert-parallel degrees EP of an MoE model, each a configuration of its own (empty: the
    // model's own, not searched), where EP x ETP divides the t x cp x d ranks of a stage (the
    // expert layers fold them into expert-tensor x expert x expert-data-parallel groups:
    // Megatron-LM requires it). ETP: expert_tensor_parallel, 0 for each configuration's t
    // (Megatron-LM's default). Like the sharding, the caller makes the memory and times per EP.
    std::vector<std::uint32_t> expert_parallel_degrees = {};
    std::uint32_t expert_tensor_parallel = 0;
    // The expert-tensor-parallel degrees ETP to consider, each a configuration of its own
    // (empty: expert_tensor_parallel, not searched), each with every EP searched (or the
    // model's, expert_parallel) under the same rule: EP x ETP divides t x cp x d. The caller
    // makes the memory and times per ETP as per EP.
    std::vector<std::uint32_t> expert_tensor_parallel_degrees = {};
    // The model's own EP where expert_parallel_degrees is empty (0: none, or not an MoE model):
    // what an ETP searched alone is checked against.
    std::uint32_t expert_parallel = 0;
    // What the model's own settings let a plan hold (a model shape's ShapeLimits: layer-level
    // CPU offloading runs on one stage without recomputation): each policy's kinds narrowed to
    // `kinds`, and, with `one_stage`, every pipeline degree above 1 left out; what is left out
    // for them gives `limits_why`.
    std::uint32_t kinds = PPB_ALL_KINDS;
    bool one_stage = false;
    std::string limits_why = {};
};

// One configuration to plan.
struct Configuration {
    std::uint32_t pipeline = 1;       // P
    std::uint32_t data_parallel = 1;  // d
    std::uint32_t micro_batches = 1;  // M = B / (b d)
    ScheduleChoice schedule;
    RecomputePolicy recompute;
    std::uint32_t tensor_parallel = 1;   // t
    std::uint32_t micro_batch_size = 1;  // b
    std::uint32_t context_parallel = 1;  // cp
    // Searched with SearchSpace::shardings: this configuration's; none: the model's own.
    std::optional<DataParallelSharding> sharding = std::nullopt;
    // Searched with SearchSpace::expert_parallel_degrees: this configuration's EP; none: the
    // model's own.
    std::optional<std::uint32_t> expert_parallel = std::nullopt;
    // Searched with SearchSpace::expert_tensor_parallel_degrees: this configuration's ETP; none:
    // the model's own.
    std::optional<std::uint32_t> expert_tensor_parallel = std::nullopt;
};

// "P=8 d=4 M=32 interleaved v=2 recompute any" (and "ep=8", "etp=1", "sharding optim" where
// searched): a configuration for people.
[[nodiscard]] std::string describe(const Configuration& configuration);
// "1f1b", "interleaved v=2", "dualpipe-v": a schedule and its chunks for people.
[[nodiscard]] std::string describe(const ScheduleChoice& schedule);

// A combination left out of the search, and why (the schedule cannot run the micro-batch count,
// too few layers for the stages, ...).
struct SkippedConfiguration {
    std::string configuration;
    std::string reason;
};

struct SearchPlan {
    std::vector<Configuration> configurations;  // in a fixed order: P, schedule, recompute
    std::vector<SkippedConfiguration> skipped;
};

// The configurations of `space` for the model whose layers `time` describes. Throws ppb::InputError
// (with the reason) for: no devices and no pipeline degrees; a listed pipeline degree that does
// not divide the devices (with t); a global batch that the micro-batch size times a listed
// degree's data-parallel degree does not divide; no schedule or recompute policy; an empty search
// space (every combination skipped: the message gives each reason).
[[nodiscard]] SearchPlan search_configurations(const SearchSpace& space, const TimeModel& time);

// What planning one configuration gave.
struct SearchOutcome {
    enum class Status {
        planned,     // `planned` holds the optimal plan and its simulated iteration
        infeasible,  // no plan fits: smallest_feasible_limit_mb says what limit would
        invalid,     // the configuration cannot be planned (reason in `message`)
    };
    Configuration configuration;
    Status status = Status::invalid;
    std::optional<PlannedPartition> planned;
    double smallest_feasible_limit_mb = 0.0;  // infeasible only (infinity: no limit fits)
    std::string message;                      // infeasible and invalid: why
    // planned: the most memory any stage is predicted to use (margin in standard errors
    // included), and memory_limit_mb minus it.
    double peak_memory_mb = 0.0;
    double headroom_mb = 0.0;
    // planned: the data-parallel gradient synchronisation after the last backward, not
    // overlapped (ppb/partition/communication.hpp; 0 unless the search times communication).
    double data_parallel_sync = 0.0;
    // planned: no plan of this configuration synchronises in less (data_parallel_sync_bound_ms;
    // 0 unless the search times communication): with the plan's lower bound, what refine_best
    // knows of the configuration's best iteration.
    double data_parallel_sync_bound = 0.0;
    // planned: what the configuration is ranked by, the simulated iteration time plus the
    // data-parallel synchronisation (per global batch, in the layer file's time unit).
    [[nodiscard]] double iteration_time() const;
};

// Plans one configuration: `base` (memory limit and margins, time model, recompute rule) with the
// configuration's stages, micro-batches, schedule, chunks and kinds, memory from `memory`, as
// plan_with_memory does. Infeasible and ppb::InputError become outcomes; other errors (the
// plugin's) propagate.
// `refine`: with chunks, the local search on the simulated iteration too (the plan `ppb
// partition` makes by default); without it, the better estimate's exact optimum (milliseconds
// even for hundreds of stages and micro-batches, where the local search can take seconds).
// `bound`: with chunks, the proven lower bound on the simulated iteration of every plan that fits
// (PlannedPartition::lower_bound, which refine_best reads); always with `refine`.
// `before`: this configuration's outcome of an earlier call without `refine` (refine_best's): its
// plan is not solved again (PlanWithModelOptions::solved).
// `added`: what the caller adds to a plan's simulated iteration, by which the candidate plans are
// weighed (PlanWithModelOptions::added_to_iteration).
[[nodiscard]] SearchOutcome plan_configuration(const Problem& base,
                                               const Configuration& configuration,
                                               const MemorySource& memory, bool refine = false,
                                               bool bound = true,
                                               const SearchOutcome* before = nullptr,
                                               const AddedToIteration& added = {});

struct SearchProgress {
    std::size_t done = 0;
    std::size_t total = 0;
};

struct SearchRunOptions {
    unsigned jobs = 1;  // worker threads (0: one per hardware thread)
    // Called on the calling thread about every `progress_interval_ms` while the search runs.
    std::function<void(const SearchProgress&)> on_progress = {};
    unsigned progress_interval_ms = 100;
    // Set (e.g. by a signal handler) to stop: configurations not started are not planned, the
    // ones being planned finish.
    const std::atomic<bool>* stop = nullptr;
};

struct SearchResult {
    // One per configuration planned, in the order of the configurations (whatever the thread
    // that planned it): the same for any number of jobs.
    std::vector<SearchOutcome> outcomes;
    bool stopped = false;  // `stop` was set before every configuration was planned
};

// Plans `configurations` on `options.jobs` threads with `plan_one` (which must be safe to call
// from several threads at once), called with the elements of `configurations` themselves. The first
// exception `plan_one` throws stops the search and is rethrown here.
[[nodiscard]] SearchResult run_search(
    const std::vector<Configuration>& configurations,
    const std::function<SearchOutcome(const Configuration&)>& plan_one,
    const SearchRunOptions& options);

// How many of the fastest configurations `ppb search` settles (refine_best): the ranking's head
// is what a user takes.
inline constexpr std::size_t refined_configurations = 8;

// Plans again, with `plan_refined` (plan_configuration with refine), the configurations with
// chunks of `result` that are among its `count` fastest or whose proven lower bound
// (PlannedPartition::lower_bound) is below the count-th fastest iteration — every configuration
// that could still be among the `count` fastest — keeping each new plan when it simulates no
// slower; the same in any number of jobs. Returns how many were planned again.
std::size_t refine_best(SearchResult& result, std::size_t count,
                        const std::function<SearchOutcome(const Configuration&)>& plan_refined,
                        const SearchRunOptions& options);
// The same with `plan_refined` given each configuration's outcome so far too (for
// plan_configuration's `before`: the plan is not solved again, only searched locally).
std::size_t refine_best(
    SearchResult& result, std::size_t count,
    const std::function<SearchOutcome(const Configuration&, const SearchOutcome& before)>&
        plan_refined,
    const SearchRunOptions& options);

// How many outcomes of each status a search has.
struct SearchCounts {
    std::size_t planned = 0;
    std::size_t infeasible = 0;
    std::size_t invalid = 0;
};
[[nodiscard]] SearchCounts count_outcomes(const SearchResult& result);

// The planned outcomes, fastest first (ties: in configuration order); infeasible and invalid
// ones are not included.
[[nodiscard]] std::vector<const SearchOutcome*> ranked(const SearchResult& result);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SEARCH_HPP
