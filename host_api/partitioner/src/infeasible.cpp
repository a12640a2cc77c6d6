// The one sentence for "no placement fits" (infeasible.hpp).
#include "infeasible.hpp"

#include <ppb/errors.hpp>

#include <fmt/format.h>

#include <cmath>

namespace ppb::partition::detail {

void throw_infeasible(const Problem& problem, const std::string& reason,
                      const LeastFeasibleBudget& least) {
    using Certainty = LeastFeasibleBudget::Certainty;
    const double infinite = std::numeric_limits<double>::infinity();
    if (least.certainty == Certainty::unsearched) {
        throw Infeasible(fmt::format("no placement fits: {}; the smallest feasible limit is not "
                                     "searched for: {}",
                                     reason, least.unsearched_because),
                         infinite);
    }
    if (!std::isfinite(least.need_mb)) {
        throw Infeasible(fmt::format("no placement fits: {}; no memory limit would make a "
                                     "placement feasible",
                                     reason),
                         infinite);
    }
    const double smallest_limit = least.need_mb + problem.memory_margin_mb;
    // A limit said to be feasible is rounded up, so that the figure shown is itself feasible; a
    // lower bound is rounded down, so that it stays one.
    const double up = std::ceil(smallest_limit * 10.0) / 10.0;
    std::string limit_text;
    switch (least.certainty) {
        case Certainty::exact:
            limit_text =
                fmt::format("the smallest memory limit that would be feasible is {:.1f} MB", up);
            break;
        case Certainty::feasible:
            limit_text = fmt::format(
                "a memory limit that would be feasible is {:.1f} MB ({})", up,
                least.feasible_because.empty()
                    ? "with the standard-error margin ppb does not search every mix for the "
                      "least one"
                    : least.feasible_because);
            break;
        case Certainty::unsearched:  // thrown above
        case Certainty::lower_bound:
            limit_text = fmt::format(
                "no memory limit below {:.1f} MB would be feasible (each layer at its lightest "
                "recompute kind in every in-flight row; no one mix is the lightest in all of "
                "them, so a limit that is feasible may be larger)",
                std::floor(smallest_limit * 10.0) / 10.0);
            break;
    }
    if (problem.memory_margin_mb > 0.0)
        limit_text += fmt::format(" (with the {:.1f} MB margin)", problem.memory_margin_mb);
    if (least.fullest_known)
        limit_text += fmt::format(", where stage {} is the fullest", least.fullest_stage);
    throw Infeasible(fmt::format("no placement fits: {}; {}", reason, limit_text), smallest_limit);
}

}  // namespace ppb::partition::detail
