// The precision of a dry-run design: its Gram matrix X^T X in the model's columns, decomposed, and
// the variances it implies. Columns are scaled to unit diagonal before anything is decided (as the
// fit scales them, host_api/docs/design.md section 3.3), and the scaled Gram matrix is decomposed
// by cyclic Jacobi rotations: at most 9 x 9, so an exact small eigensolver needs no library.
#ifndef PPB_PARTITION_DESIGN_PRECISION_HPP
#define PPB_PARTITION_DESIGN_PRECISION_HPP

#include <cstddef>
#include <span>
#include <vector>

namespace ppb::partition::design_detail {

// A symmetric u x u matrix, row-major.
struct Gram {
    std::size_t size = 0;
    std::vector<double> values;  // size * size

    explicit Gram(std::size_t u = 0) : size(u), values(u * u, 0.0) {}
    void add_row(std::span<const double> x, double weight = 1.0);
    void add(const Gram& other, double weight = 1.0);
    [[nodiscard]] double at(std::size_t i, std::size_t j) const { return values[i * size + j]; }
};

// (X^T X)^+ in the model's units, and what it leaves undetermined.
struct Inverse {
    std::size_t rank = 0;
    std::size_t size = 0;
    std::vector<double> covariance;  // (X^T X)^+, size * size: the variances per unit noise
    // Per column: whether its coefficient is determined (e_j lies in the row space).
    std::vector<bool> identified;
    [[nodiscard]] bool full_rank() const { return rank == size; }
    // x^T (X^T X)^+ x: the variance of the prediction x . theta-hat per unit noise variance.
    [[nodiscard]] double prediction_variance(std::span<const double> x) const;
};

// Relative eigenvalue below which the scaled Gram matrix is taken as singular: singular values
// 1e-6 of the largest, far looser than the fit's 1e-10, so that what a design calls identified
// the fit identifies too, and well conditioned.
inline constexpr double eigen_tolerance = 1e-12;

[[nodiscard]] Inverse invert(const Gram& gram);

}  // namespace ppb::partition::design_detail

#endif  // PPB_PARTITION_DESIGN_PRECISION_HPP
