// Internal: for each stage and each number of body layers n, the fastest mix of recompute kinds
// that fits the memory budget, and the least memory any mix of n layers needs.
#ifndef PPB_PARTITION_STAGE_TABLE_HPP
#define PPB_PARTITION_STAGE_TABLE_HPP

#include <ppb/partition/problem.hpp>

#include <array>
#include <cstddef>
#include <limits>
#include <optional>
#include <vector>

namespace ppb::partition::detail {

inline constexpr double infinity = std::numeric_limits<double>::infinity();

struct StageChoice {
    KindCounts layers{};
    double time = 0.0;    // stage_time()
    double memory = 0.0;  // the model's memory for it
    double margin = 0.0;  // K x its standard error (Problem::memory_margin_sigma > 0 only)
};

struct StageTable {
    std::uint32_t stage = 0;
    // fastest[n]: the fastest mix of n layers within the budget, or nullopt; n = 0 .. L.
    std::vector<std::optional<StageChoice>> fastest;
    // least_memory[n]: the least memory of any mix of n layers (infinity where not computed);
    // for explaining infeasibility and finding the smallest feasible limit.
    std::vector<double> least_memory;
    // The kind that gives least_memory (all layers of it) — for messages.
    std::optional<ppb_kind> least_memory_kind;
    // Whether the search stopped because no more layers can fit (not at its most_layers), so that
    // fastest[] holds nothing above what it searched.
    bool exhausted = false;

    [[nodiscard]] double time(std::uint32_t n) const {
        return n < fastest.size() && fastest[n] ? fastest[n]->time : infinity;
    }
};

// Kinds the solver may use: the problem's, the model's and (for linear models) those whose
// activation coefficient is known.
[[nodiscard]] std::uint32_t candidate_kinds(const Problem& problem, const MemorySource& memory);

// One table per stage, over the mixes problem.rule admits, for n = 0 .. most_layers[s] (the
// fastest choices above are left out; least_memory covers every n). Linear models, and other
// models that probing finds affine in the layer counts at the stage: an exact Pareto search over
// (time, memory), layer by layer (under MindFormers' rule, one per family of expressible mixes).
// Other models: the admitted mixes of n layers are predicted, n = 0, 1, ... until no mix fits,
// each mix of n layers built from one of n - 1 that fits (memory is assumed not to fall when a
// layer is added).
[[nodiscard]] std::vector<StageTable> build_stage_tables(
    const Problem& problem, const MemorySource& memory, std::uint32_t kinds,
    const std::vector<std::uint32_t>& most_layers);

// Whether a prediction `got` is the affine sum `expected` of its parts, to within 1e-9 relative:
// the check of every probed model (stage tables, chunks, groups).
[[nodiscard]] bool affine_agrees(double expected, double got);

// The tables when the stages are planned against memory + K x standard error (K =
// Problem::memory_margin_sigma > 0), exact for any model (sigma_table.cpp). least_memory[n] is
// then the need (memory + margin) of some mix of n layers, at least the least need: within the
// budget exactly when some mix of n layers fits.
[[nodiscard]] std::vector<StageTable> build_sigma_tables(const Problem& problem,
                                                         const MemorySource& memory,
                                                         std::uint32_t kinds);

// The kinds of a PPB_KIND_BIT mask, in kind order.
[[nodiscard]] std::vector<std::size_t> kind_list(std::uint32_t kinds);

// The kinds that no other kind beats on both time and memory (ties broken by kind index): the
// others can never be needed, since swapping them for the better kind keeps every plan valid and
// no slower.
[[nodiscard]] std::vector<std::size_t> undominated(
    const std::vector<std::size_t>& kinds, const std::array<double, PPB_KIND_COUNT>& time,
    const std::array<double, PPB_KIND_COUNT>& memory);

// Throws Infeasible: why no plan fits, in numbers (the tightest stage or the capacity), and the
// smallest limit that would (solver.cpp). tables[s].least_memory and problem.min_layers() are
// all it uses.
[[noreturn]] void explain_infeasible(const Problem& problem, const std::vector<StageTable>& tables);

// Every way to spread n layers over kinds[index..] (the counts of kinds before `index` as in
// `current`), appended to `out` in a fixed order; `current` is restored.
void compositions(std::uint32_t n, const std::vector<std::size_t>& kinds, std::size_t index,
                  KindCounts& current, std::vector<KindCounts>& out);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_STAGE_TABLE_HPP
