// Internal: what every solver says when no placement fits (design.md, "When nothing fits").
//
// Each solver finds its own reason (the stage that cannot hold even its fewest layers, or the
// layers the stages cannot hold together) and its own least feasible limit, by its own search;
// the sentence that carries them, the margin and the fullest stage is written here once, so
// that `ppb partition`, `ppb search` and Python read the same words whatever the layout.
#ifndef PPB_PARTITION_INFEASIBLE_HPP
#define PPB_PARTITION_INFEASIBLE_HPP

#include <ppb/partition/problem.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace ppb::partition::detail {

// The least memory budget a solver found for the problem, and how sure it is of it.
struct LeastFeasibleBudget {
    enum class Certainty {
        exact,        // the least budget with a placement: rounded up, it is feasible
        feasible,     // a budget some placement fits, perhaps not the least (the sigma margin)
        lower_bound,  // no smaller budget is feasible, but it may not be either: rounded down
        unsearched,   // not searched for: `unsearched_because` says why
    };
    Certainty certainty = Certainty::exact;
    // The budget, the margin excluded; infinity when no limit would do.
    double need_mb = std::numeric_limits<double>::infinity();
    std::uint32_t fullest_stage = 0;
    bool fullest_known = true;  // whether the sentence names fullest_stage
    std::string unsearched_because;
    // With `feasible`: why it may not be the least (empty: the standard-error margin's reason).
    std::string feasible_because;
};

// Throws Infeasible: "no placement fits: <reason>; <the least limit, with the margin and the
// fullest stage>", with that limit (margin included) as its smallest feasible limit.
[[noreturn]] void throw_infeasible(const Problem& problem, const std::string& reason,
                                   const LeastFeasibleBudget& least);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_INFEASIBLE_HPP
