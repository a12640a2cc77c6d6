// Why the data leave a parameter undetermined, and which dry run would determine it: the
// reasons and suggestions of the report's "not_identifiable" entries.
#ifndef PPB_DRYRUN_LSQ_EXPLAIN_HPP
#define PPB_DRYRUN_LSQ_EXPLAIN_HPP

#include "design.hpp"
#include "parameters.hpp"

#include <span>
#include <string>

namespace ppb::dryrun_lsq {

struct Explanation {
    std::string reason;
    std::string suggestion;
    // False for the generic "confounded with ..." explanation, when no cause was recognised.
    bool specific = true;
};

// A parameter whose column is zero in every observation: head_mb (no stage 0 observed),
// tail_mb (no last stage observed) or param_per_layer_mb (no body layer observed).
[[nodiscard]] Explanation explain_unobserved(Parameter p);

// A parameter confounded with `others` (its component among the columns). `combination`, when
// not empty, is an estimable combination involving `p` and is quoted in the reason.
[[nodiscard]] Explanation explain_confounded(Parameter p, std::span<const Parameter> others,
                                             const ObservationSummary& summary,
                                             const std::string& combination);

// Why no parameter at all is identified, from the combinations the data do determine and the
// suggestions of the per-parameter explanations; ends with what would fix it.
[[nodiscard]] std::string explain_nothing_identified(const ObservationSummary& summary,
                                                     std::span<const std::string> combinations,
                                                     std::span<const Explanation> explanations);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_EXPLAIN_HPP
