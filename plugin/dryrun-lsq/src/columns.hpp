// Which parameters the fit solves for: the columns the data touch, minus const_mb when the data
// cannot separate it (the fallback when the data cannot separate it; see host_api/docs/design.md,
// "Folding the constant"), and why every other parameter is undetermined.
#ifndef PPB_DRYRUN_LSQ_COLUMNS_HPP
#define PPB_DRYRUN_LSQ_COLUMNS_HPP

#include "design.hpp"
#include "explain.hpp"
#include "identifiability.hpp"
#include "linear_algebra.hpp"
#include "parameters.hpp"

#include <string>
#include <utility>
#include <vector>

namespace ppb::dryrun_lsq {

// A design restricted to some columns, decomposed, with what it determines.
struct Analysis {
    arma::mat design;  // rows x columns, in the parameters' units
    ColumnSpace space;
    Identifiability identifiability;
};

struct ColumnChoice {
    Analysis fitted;            // the design to solve
    bool const_folded = false;  // const_mb was dropped: the other columns absorb it
    // Every undetermined parameter with its explanation, in parameter order.
    std::vector<std::pair<Unknown, Explanation>> undetermined;
};

// `rows` are the design rows of validated observations of a model of data.groups.size() groups.
// Throws ppb::plugin::InvalidInput when the data identify no single parameter, saying why and
// what would fix it.
[[nodiscard]] ColumnChoice choose_columns(const std::vector<ParameterVector>& rows,
                                          const DataSummary& data, double rank_tolerance);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_COLUMNS_HPP
