#include "design_precision.hpp"

#include <algorithm>
#include <cmath>

namespace ppb::partition::design_detail {

void Gram::add_row(std::span<const double> x, double weight) {
    for (std::size_t i = 0; i < size; ++i) {
        if (x[i] == 0.0)
            continue;
        for (std::size_t j = 0; j < size; ++j)
            values[i * size + j] += weight * x[i] * x[j];
    }
}

void Gram::add(const Gram& other, double weight) {
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] += weight * other.values[i];
}

double Inverse::prediction_variance(std::span<const double> x) const {
    double v = 0.0;
    for (std::size_t i = 0; i < size; ++i) {
        if (x[i] == 0.0)
            continue;
        double row = 0.0;
        for (std::size_t j = 0; j < size; ++j)
            row += covariance[i * size + j] * x[j];
        v += x[i] * row;
    }
    return std::max(v, 0.0);
}

namespace {

// Eigen-decomposition A = Q diag(lambda) Q^T of a symmetric matrix by cyclic Jacobi rotations
// (Golub & Van Loan, section 8.5): each rotation zeroes one off-diagonal pair; sweeps repeat
// until the off-diagonal part is negligible. `a` is overwritten; q receives the eigenvectors
// as columns.
void jacobi(std::vector<double>& a, std::vector<double>& q, std::size_t n) {
    q.assign(n * n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
        q[i * n + i] = 1.0;
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0.0;
        double total = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                total += a[i * n + j] * a[i * n + j];
                if (i != j)
                    off += a[i * n + j] * a[i * n + j];
            }
        }
        if (off <= 1e-30 * total)
            return;
        for (std::size_t p = 0; p + 1 < n; ++p) {
            for (std::size_t r = p + 1; r < n; ++r) {
                const double apr = a[p * n + r];
                if (apr == 0.0)
                    continue;
                const double theta = (a[r * n + r] - a[p * n + p]) / (2.0 * apr);
                const double t = (theta >= 0.0 ? 1.0 : -1.0) /
                                 (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
                const double c = 1.0 / std::sqrt(t * t + 1.0);
                const double s = t * c;
                for (std::size_t k = 0; k < n; ++k) {
                    const double akp = a[k * n + p];
                    const double akr = a[k * n + r];
                    a[k * n + p] = c * akp - s * akr;
                    a[k * n + r] = s * akp + c * akr;
                }
                for (std::size_t k = 0; k < n; ++k) {
                    const double apk = a[p * n + k];
                    const double ark = a[r * n + k];
                    a[p * n + k] = c * apk - s * ark;
                    a[r * n + k] = s * apk + c * ark;
                }
                for (std::size_t k = 0; k < n; ++k) {
                    const double qkp = q[k * n + p];
                    const double qkr = q[k * n + r];
                    q[k * n + p] = c * qkp - s * qkr;
                    q[k * n + r] = s * qkp + c * qkr;
                }
            }
        }
    }
}

}  // namespace

Inverse invert(const Gram& gram) {
    const std::size_t n = gram.size;
    Inverse out;
    out.size = n;
    out.covariance.assign(n * n, 0.0);
    out.identified.assign(n, false);
    // D = sqrt(diag(G)); a zero column is undetermined and left out of the scaled problem.
    std::vector<double> d(n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
        d[i] = std::sqrt(std::max(gram.at(i, i), 0.0));
    std::vector<double> a(n * n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            if (d[i] > 0.0 && d[j] > 0.0)
                a[i * n + j] = gram.at(i, j) / (d[i] * d[j]);
        }
    }
    std::vector<double> q;
    jacobi(a, q, n);
    double largest = 0.0;
    for (std::size_t i = 0; i < n; ++i)
        largest = std::max(largest, a[i * n + i]);
    const double floor = eigen_tolerance * largest;
    std::vector<double> null_weight(n, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
        const double lambda = a[k * n + k];
        if (lambda > floor && largest > 0.0) {
            ++out.rank;
            // (X^T X)^+ = D^-1 Q_r diag(1/lambda) Q_r^T D^-1.
            for (std::size_t i = 0; i < n; ++i) {
                for (std::size_t j = 0; j < n; ++j) {
                    if (d[i] > 0.0 && d[j] > 0.0)
                        out.covariance[i * n + j] +=
                            q[i * n + k] * q[j * n + k] / (lambda * d[i] * d[j]);
                }
            }
        } else {
            for (std::size_t i = 0; i < n; ++i)
                null_weight[i] += q[i * n + k] * q[i * n + k];
        }
    }
    for (std::size_t i = 0; i < n; ++i)
        out.identified[i] = d[i] > 0.0 && null_weight[i] <= 1e-8;
    return out;
}

}  // namespace ppb::partition::design_detail
