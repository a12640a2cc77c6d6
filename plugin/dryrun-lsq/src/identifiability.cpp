#include "identifiability.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ppb/plugin/report_support.hpp>
#include <stdexcept>

namespace ppb::dryrun_lsq {

using ppb::plugin::format_number;
using ppb::plugin::join_words;

namespace {

// Indices of the entries of `row` that are not structurally zero, relative to its largest.
std::vector<std::size_t> support(const arma::rowvec& row, double zero) {
    const double scale = std::max(1.0, arma::abs(row).max());
    std::vector<std::size_t> out;
    for (arma::uword j = 0; j < row.n_elem; ++j) {
        if (std::abs(row(j)) > zero * scale)
            out.push_back(j);
    }
    return out;
}

// Union-find over column indices, for the components of the column matroid.
class Components {
  public:
    explicit Components(std::size_t n) : parent_(n) {
        std::iota(parent_.begin(), parent_.end(), std::size_t{0});
    }
    std::size_t find(std::size_t i) {
        while (parent_[i] != i)
            i = parent_[i] = parent_[parent_[i]];
        return i;
    }
    void join(std::size_t a, std::size_t b) { parent_[find(a)] = find(b); }

  private:
    std::vector<std::size_t> parent_;
};

// The rows of the reduced row echelon form of a null-space basis are the fundamental circuits
// (minimal column dependencies) with respect to the non-pivot columns; the components they
// connect are the components of the matroid, whatever basis the decomposition returned.
std::vector<std::vector<Unknown>> confounding_groups(arma::mat null_basis, double zero,
                                                     const std::vector<bool>& identified,
                                                     const std::vector<Unknown>& columns) {
    const std::size_t n = columns.size();
    std::vector<std::vector<Unknown>> groups(n);
    if (null_basis.n_cols == 0)
        return groups;  // full column rank: nothing is confounded
    for (std::size_t j = 0; j < n; ++j) {
        if (identified[j])
            null_basis.row(j).zeros();
    }
    Components components(n);
    const arma::mat circuits = reduced_row_echelon(null_basis.t(), zero);
    for (arma::uword i = 0; i < circuits.n_rows; ++i) {
        const auto members = support(circuits.row(i), zero);
        for (std::size_t m = 1; m < members.size(); ++m)
            components.join(members[0], members[m]);
    }
    for (std::size_t j = 0; j < n; ++j) {
        if (identified[j])
            continue;
        for (std::size_t i = 0; i < n; ++i) {
            if (i != j && !identified[i] && components.find(i) == components.find(j)) {
                groups[j].push_back(columns[i]);
            }
        }
    }
    return groups;
}

std::string format_term(double coefficient, Unknown p, std::span<const std::string> groups,
                        bool first) {
    std::string text;
    if (first) {
        if (coefficient < 0)
            text = "-";
    } else {
        text = coefficient < 0 ? " - " : " + ";
    }
    const double magnitude = std::abs(coefficient);
    if (std::abs(magnitude - 1.0) > 1e-9)
        text += format_number(magnitude) + " * ";
    text += name(p, groups);
    return text;
}

// Estimable combinations: the reduced row echelon form of the row space, converted from the
// column-scaled coordinates of the decomposition to the parameters' own units.
std::vector<Combination> estimable_combinations(const ColumnSpace& space,
                                                const std::vector<Unknown>& columns,
                                                std::span<const std::string> groups) {
    std::vector<Combination> out;
    if (space.rank == 0)
        return out;
    const arma::mat echelon = reduced_row_echelon(space.row_space().t(), space.zero_tolerance);
    for (arma::uword i = 0; i < echelon.n_rows; ++i) {
        const auto members = support(echelon.row(i), space.zero_tolerance);
        if (members.size() < 2)
            continue;
        // A row w of scaled coordinates is the functional sum_j w_j * scale_j * theta_j.
        const double pivot = echelon(i, members.front()) * space.scale(members.front());
        Combination combination;
        for (const std::size_t j : members) {
            const double coefficient = echelon(i, j) * space.scale(j) / pivot;
            combination.text += format_term(coefficient, columns[j], groups, j == members.front());
            combination.parameters.push_back(columns[j]);
        }
        out.push_back(std::move(combination));
    }
    return out;
}

}  // namespace

std::optional<std::size_t> Identifiability::column_of(Unknown p) const {
    const auto it = std::find(columns.begin(), columns.end(), p);
    if (it == columns.end())
        return std::nullopt;
    return static_cast<std::size_t>(it - columns.begin());
}

bool Identifiability::is_identified(Unknown p) const {
    const auto j = column_of(p);
    return j.has_value() && identified[*j];
}

bool Identifiability::any_identified() const {
    return std::find(identified.begin(), identified.end(), true) != identified.end();
}

const std::vector<Unknown>& Identifiability::confounded(Unknown p) const {
    const auto j = column_of(p);
    if (!j)
        throw std::logic_error("confounded(): parameter is not a column of the design");
    return confounded_with[*j];
}

const Combination* Identifiability::combination_involving(Unknown p) const {
    for (const Combination& c : combinations) {
        if (std::find(c.parameters.begin(), c.parameters.end(), p) != c.parameters.end()) {
            return &c;
        }
    }
    return nullptr;
}

Identifiability assess_identifiability(const ColumnSpace& space, std::vector<Unknown> columns,
                                       std::span<const std::string> groups) {
    Identifiability result;
    const arma::mat null_basis = space.null_space();
    result.identified.resize(columns.size());
    for (std::size_t j = 0; j < columns.size(); ++j) {
        // e_j is orthogonal to the null space iff row j of an orthonormal basis of it vanishes.
        result.identified[j] =
            null_basis.n_cols == 0 || arma::norm(null_basis.row(j), 2) <= space.zero_tolerance;
    }
    result.confounded_with =
        confounding_groups(null_basis, space.zero_tolerance, result.identified, columns);
    result.combinations = estimable_combinations(space, columns, groups);
    result.columns = std::move(columns);
    return result;
}

}  // namespace ppb::dryrun_lsq
