#include "linear_algebra.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ppb::dryrun_lsq {

double zero_tolerance(double rank_tolerance) {
    return std::clamp(std::sqrt(rank_tolerance), 1e-8, 0.1);
}

ColumnSpace analyze_columns(const arma::mat& design, double rank_tolerance) {
    if (design.n_rows == 0 || design.n_cols == 0 || !design.is_finite()) {
        throw std::runtime_error("design matrix is empty or not finite");
    }
    ColumnSpace space;
    space.scale.set_size(design.n_cols);
    arma::mat scaled = design;
    for (arma::uword j = 0; j < design.n_cols; ++j) {
        const double norm = arma::norm(design.col(j), 2);
        if (!(norm > 0.0) || !std::isfinite(norm)) {
            throw std::runtime_error("design matrix has a zero or overflowing column");
        }
        space.scale(j) = norm;
        scaled.col(j) /= norm;
    }
    // At most 9 columns, but possibly thousands of rows: the economy decomposition keeps U at
    // rows x columns instead of rows x rows (V stays square, so the null space is complete).
    // With fewer rows than columns only the full decomposition gives all of V.
    const bool ok = design.n_rows >= design.n_cols
                        ? arma::svd_econ(space.U, space.s, space.V, scaled, "both", "std")
                        : arma::svd(space.U, space.s, space.V, scaled, "std");
    if (!ok) {
        throw std::runtime_error("the singular value decomposition of the design did not converge");
    }
    const double threshold = rank_tolerance * space.s.max();
    space.rank = static_cast<arma::uword>(arma::accu(space.s > threshold));
    space.zero_tolerance = zero_tolerance(rank_tolerance);
    return space;
}

arma::mat reduced_row_echelon(arma::mat a, double pivot_tolerance) {
    arma::uword pivot_row = 0;
    for (arma::uword col = 0; col < a.n_cols && pivot_row < a.n_rows; ++col) {
        arma::uword best = pivot_row;
        for (arma::uword r = pivot_row + 1; r < a.n_rows; ++r) {
            if (std::abs(a(r, col)) > std::abs(a(best, col)))
                best = r;
        }
        if (std::abs(a(best, col)) <= pivot_tolerance) {
            a.submat(pivot_row, col, a.n_rows - 1, col).zeros();
            continue;
        }
        a.swap_rows(best, pivot_row);
        a.row(pivot_row) /= a(pivot_row, col);
        for (arma::uword r = 0; r < a.n_rows; ++r) {
            const double factor = a(r, col);
            if (r != pivot_row && factor != 0.0)
                a.row(r) -= factor * a.row(pivot_row);
        }
        a(pivot_row, col) = 1.0;
        ++pivot_row;
    }
    return a.head_rows(pivot_row);
}

}  // namespace ppb::dryrun_lsq
