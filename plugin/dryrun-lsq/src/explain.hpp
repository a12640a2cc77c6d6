// Why the data leave a parameter undetermined, and which dry run would determine it: the
// reasons and suggestions of the report's "not_identifiable" entries.
#ifndef PPB_DRYRUN_LSQ_EXPLAIN_HPP
#define PPB_DRYRUN_LSQ_EXPLAIN_HPP

#include "design.hpp"
#include "parameters.hpp"

#include <span>
#include <string>
#include <vector>

namespace ppb::dryrun_lsq {

struct Explanation {
    std::string reason;
    std::string suggestion;
    // False for the generic "confounded with ..." explanation, when no cause was recognised.
    bool specific = true;
};

// What the explanations know about the data: the summary of all observations and, per group of
// body layers, of the observations as if they held only that group's layers.
struct DataSummary {
    ObservationSummary overall;
    std::vector<ObservationSummary> per_group;  // one per group
    std::vector<std::string> groups;            // the model's groups, in order

    [[nodiscard]] bool grouped() const noexcept { return groups.size() > 1; }
    // The summary that explains `u`: its group's for a group parameter of a model of several
    // groups, otherwise the overall one.
    [[nodiscard]] const ObservationSummary& of(Unknown u) const {
        return grouped() && !is_shared(u.parameter) ? per_group[u.group] : overall;
    }
};

// An unknown whose column is zero in every observation: head_mb (no stage 0 observed),
// tail_mb (no last stage observed) or param_per_layer_mb (no body layer (of its group) observed).
[[nodiscard]] Explanation explain_unobserved(Unknown p, const DataSummary& data);

// An unknown confounded with `others` (its component among the columns). `combination`, when
// not empty, is an estimable combination involving `p` and is quoted in the reason.
[[nodiscard]] Explanation explain_confounded(Unknown p, std::span<const Unknown> others,
                                             const DataSummary& data,
                                             const std::string& combination);

// Why no parameter at all is identified, from the combinations the data do determine and the
// suggestions of the per-parameter explanations; ends with what would fix it.
[[nodiscard]] std::string explain_nothing_identified(const ObservationSummary& summary,
                                                     std::span<const std::string> combinations,
                                                     std::span<const Explanation> explanations);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_EXPLAIN_HPP
