// ppb/partition/design.hpp — which dry runs to run: `ppb design` (host_api/docs/design.md,
// "Designing the dry runs").
//
// A dry run is a pipeline degree P and, per stage, its body layers per recompute kind (summing
// to the model's L layers, at least one per stage). Its stages are observations of the linear
// memory model M = x . theta (the dryrun-lsq model, design.md section 2.1) with the row
//   x = (1, [s = 0], [s = P-1], n, n_k f_s for each kind k named),   f_s = min(P - s, M),
// so a design of N runs is a design matrix X of sum_i P_i rows and u = 4 + |kinds| columns.
// It identifies every coefficient exactly when X has full column rank. Among full-rank designs
// the search minimises the criterion
//   G(X) = max over x in V of sqrt(x^T (X^T X)^{-1} x)
// — the worst standard error, per MB of measurement noise, of a predicted stage memory — where V
// is every stage s of every degree P in --stages holding 1 or L - P + 1 layers, all of one
// kind. x^T (X^T X)^{-1} x is convex in x, so its maximum over the placements a plan can take
// (any layer count in between, any mix of the kinds) is attained at these vertices.
//
// The search is coordinate exchange (Meyer & Nachtsheim 1995): from a random design, each run
// in turn is replaced by its best neighbour (one layer moved between two stages, one layer's
// kind changed, Megatron's one recompute setting changed, another degree) while that improves
// the lexicographic objective (memory over the limit, rank deficit, G); restarts from several
// random designs (a fixed seed: the same answer every time) keep the best. N starts at the
// fewest runs that have enough rows and grows until a full-rank design is found.
#ifndef PPB_PARTITION_DESIGN_HPP
#define PPB_PARTITION_DESIGN_HPP

#include <ppb/abi.h>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/request_error.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ppb::partition {

// Which mixes of recompute kinds a run may give its stages.
//   mindformers: MindFormers' prefix counts per stage (RecomputeRule::mindformers): any mix but
//                'select' and 'comm' layers on one stage.
//   megatron:    one setting for the whole run, as Megatron-LM's flags give it: no recompute,
//                --recompute-granularity selective (every layer 'select'), or full with the
//                block method and --recompute-num-layers N (the first min(N, n_s) layers of
//                every stage 'full', the rest 'none'). Only the kinds none, select and full.
//   any:         every mix on every stage.
// How a run may set recompute: MindFormers' per-stage prefix counts, Megatron-LM's one setting per
// run (none, selective, full on the first N layers of every stage, full everywhere), torchtitan's
// one activation-checkpointing mode per run (Megatron's settings but the block method), or any mix.
enum class DesignRule { mindformers, megatron, torchtitan, any };

// Whether runs under `rule` take one recompute setting for the whole run (Megatron's, or
// torchtitan's).
[[nodiscard]] constexpr bool one_setting_per_run(DesignRule rule) noexcept {
    return rule == DesignRule::megatron || rule == DesignRule::torchtitan;
}

[[nodiscard]] std::string_view design_rule_name(DesignRule rule) noexcept;
// The rule named "mindformers", "megatron", "torchtitan" or "any"; nullopt for another name.
[[nodiscard]] std::optional<DesignRule> design_rule_from_name(std::string_view name) noexcept;

struct DesignRequest {
    std::vector<std::uint32_t> stages;  // pipeline degrees the runs may have, each >= 1
    std::uint32_t num_layers = 0;       // L, at least the largest degree
    std::uint32_t kinds = PPB_KIND_BIT(PPB_KIND_NONE);  // mask of PPB_KIND_BIT
    DesignRule rule = DesignRule::mindformers;
    std::uint32_t micro_batches = 0;  // M; 0: the largest degree
    std::uint32_t runs = 0;           // N; 0: the fewest that identify every coefficient
    double noise_mb = 1.0;            // standard deviation of a measurement, for the std errors
    // With a limit (> 0) and a prior, every stage of every run must be predicted under it.
    double memory_limit_mb = 0.0;
    // The prior model's memory in MB of each placement (1F1B, one chunk).
    std::function<std::vector<double>(std::span<const ppb_placement>)> prior;
    std::uint64_t seed = 1;
    std::uint32_t restarts = 16;
    // The full job's ranks, for the commands that make each run on one GPU per rank
    // (ppb/partition/design_one_gpu.hpp); 0: none are written. Not used by the design itself.
    std::uint32_t world_size = 0;
};

struct DesignStage {
    std::uint32_t stage = 0;
    KindCounts layers{};
    std::uint32_t in_flight = 0;
    std::optional<double> prior_mb;  // the prior model's prediction, when there is one
    [[nodiscard]] std::uint32_t total_layers() const;
};

struct DesignRun {
    std::string label;  // "run-1", ...: the label to import its results with
    std::uint32_t num_stages = 1;
    std::vector<DesignStage> stages;
    // Megatron's setting, when the run has one (always under DesignRule::megatron).
    std::optional<MegatronRecompute> megatron;
};

// One coefficient of the model and its standard error at the request's noise.
struct CoefficientError {
    std::string name;  // as in ppb.fit/1: const_mb, head_mb, ..., activation_mb.full
    double std_error_mb = 0.0;
};

struct Design {
    std::vector<DesignRun> runs;
    std::uint32_t micro_batches = 0;
    std::vector<CoefficientError> std_errors;    // in the model's column order
    double worst_prediction_std_error_mb = 0.0;  // G(X) x noise
    std::size_t placements = 0;                  // |V|
    std::uint32_t fewest_runs = 0;  // the fewest runs the search found identifying everything
};

// The design (see the header comment). Throws RequestError for a request that cannot be asked
// (no degree, L below a degree, a kind the rule cannot give, N beyond the limits), with its field,
// Infeasible when no design of the runs allowed identifies every coefficient — saying which
// coefficients and why — or, with a limit, when none fits it: which coefficient cannot be
// identified within the limit and the smallest limit the search found that would do. Both name
// the request's settings in the host's words, `name` (`ppb design`'s flags, Python's keywords:
// request_error.hpp); the request's own field names by default.
[[nodiscard]] Design design_dry_runs(const DesignRequest& request,
                                     const FieldName& name = keyword_name);

// The names of the model's coefficients for `kinds`, in column order.
[[nodiscard]] std::vector<std::string> design_coefficients(std::uint32_t kinds);

// G(X) x noise of the runs (infinity when they do not identify every coefficient), and the
// standard errors: what design_dry_runs minimises, for comparing other designs with its answer.
struct DesignPrecision {
    bool identified = false;
    double worst_prediction_std_error_mb = 0.0;
    std::vector<CoefficientError> std_errors;
    std::vector<std::string> unidentified;  // coefficients the runs do not determine
};
[[nodiscard]] DesignPrecision design_precision(const DesignRequest& request,
                                               std::span<const DesignRun> runs);

// A design of `runs` random runs with full rank, drawn as SAPP draws its dry-run configurations
// (random layer offsets and recompute counts until the coefficient matrix has full rank), for
// the comparison with design_dry_runs; nullopt when `attempts` draws give none.
[[nodiscard]] std::optional<std::vector<DesignRun>> random_full_rank_design(
    const DesignRequest& request, std::uint32_t runs, std::uint64_t seed,
    std::uint32_t attempts = 10000);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_DESIGN_HPP
