// Which parameters a design determines, decided from the rank of the design matrix (never from
// counting stages), and how the undetermined ones are tied together.
#ifndef PPB_DRYRUN_LSQ_IDENTIFIABILITY_HPP
#define PPB_DRYRUN_LSQ_IDENTIFIABILITY_HPP

#include "linear_algebra.hpp"
#include "parameters.hpp"

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ppb::dryrun_lsq {

// A linear combination of two or more parameters that the data determine although none of its
// parameters is determined alone, e.g. "const_mb + 4 * param_per_layer_mb".
struct Combination {
    std::string text;
    std::vector<Unknown> parameters;
};

struct Identifiability {
    std::vector<Unknown> columns;  // the design's columns, in order
    // Per column: whether the parameter's unit vector is orthogonal to the null space.
    std::vector<bool> identified;
    // Per column: the other parameters in its connected component of the column matroid (two
    // parameters are in one component when some minimal dependency among the columns involves
    // both). Empty for identified parameters.
    std::vector<std::vector<Unknown>> confounded_with;
    // A basis of the estimable functions (reduced row echelon form of the row space), without
    // the single-parameter ones.
    std::vector<Combination> combinations;

    [[nodiscard]] std::optional<std::size_t> column_of(Unknown p) const;
    [[nodiscard]] bool is_identified(Unknown p) const;
    [[nodiscard]] bool any_identified() const;
    [[nodiscard]] const std::vector<Unknown>& confounded(Unknown p) const;
    [[nodiscard]] const Combination* combination_involving(Unknown p) const;
};

// `columns` names the columns of the design that `space` analysed; `groups` names the model's
// groups of body layers (for the combinations' text).
[[nodiscard]] Identifiability assess_identifiability(const ColumnSpace& space,
                                                     std::vector<Unknown> columns,
                                                     std::span<const std::string> groups);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_IDENTIFIABILITY_HPP
