// The linear algebra of the fit, on Armadillo. Internal to the core's sources: Armadillo never
// appears in a header that tests or the plugin boundary include.
#ifndef PPB_DRYRUN_LSQ_LINEAR_ALGEBRA_HPP
#define PPB_DRYRUN_LSQ_LINEAR_ALGEBRA_HPP

#include <armadillo>

namespace ppb::dryrun_lsq {

// Below what magnitude an entry of a unit-scale vector (a null-space direction, a column-scaled
// row) counts as zero. Exact dependencies leave rounding noise (~1e-15) in the entries of
// parameters they do not involve and entries of order 0.1 or more in those they do; singular
// values discarded as below the rank tolerance perturb the null space by about their size, so
// a looser rank tolerance needs a looser zero, up to 0.1 (about 6 degrees).
[[nodiscard]] double zero_tolerance(double rank_tolerance);

// The singular value decomposition of a design matrix whose columns were scaled to unit 2-norm
// (so that the rank does not depend on the units of the parameters):
//   design = scaled * diagmat(1 / scale),  scaled = U * diagmat(s) * V.t().
struct ColumnSpace {
    arma::vec scale;  // 2-norm of each design column (all > 0)
    arma::mat U;
    arma::vec s;
    arma::mat V;  // square: columns 0..rank-1 span the row space, the rest the null space
    arma::uword rank = 0;
    double zero_tolerance = 0.0;  // see zero_tolerance()

    [[nodiscard]] arma::mat row_space() const { return V.head_cols(rank); }
    [[nodiscard]] arma::mat null_space() const { return V.tail_cols(V.n_cols - rank); }
};

// `design` must have at least one row, no zero column and only finite entries. The rank counts
// the singular values above rank_tolerance times the largest. Throws std::runtime_error if the
// decomposition fails (an internal error: the checks above make that unexpected).
[[nodiscard]] ColumnSpace analyze_columns(const arma::mat& design, double rank_tolerance);

// The reduced row echelon form of `a` (Gauss-Jordan with partial pivoting), without its zero
// rows: every row starts with a 1 in a column that is 0 in every other row. A candidate pivot
// of magnitude at most pivot_tolerance counts as zero.
[[nodiscard]] arma::mat reduced_row_echelon(arma::mat a, double pivot_tolerance);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_LINEAR_ALGEBRA_HPP
