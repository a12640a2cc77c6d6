#include "lsq_fit.hpp"

#include "columns.hpp"
#include "design.hpp"
#include "linear_algebra.hpp"

#include <algorithm>
#include <cmath>
#include <ppb/number_text.hpp>
#include <ppb/plugin.hpp>
#include <ppb/plugin/report_support.hpp>
#include <stdexcept>
#include <utility>

namespace ppb::dryrun_lsq {

using ppb::plugin::format_number;
using ppb::plugin::join_words;

namespace {

// An estimate whose contribution to the observations is below this fraction of their norm is
// rounding noise of a parameter that is really 0: reported as 0, not as -1e-13 with a warning.
constexpr double negligible_contribution = 1e-11;

// A fit whose rms residual exceeds this fraction of the mean observed memory is flagged.
constexpr double poor_fit_fraction = 0.05;

// The minimum-norm least-squares solution in the parameters' units, from the decomposition of
// the column-scaled design: theta = diag(1/scale) V_r diag(1/s_r) U_r' y. Exact for every
// estimable function of the parameters, whatever the rank.
arma::vec minimum_norm_solution(const ColumnSpace& space, const arma::vec& y) {
    const arma::uword r = space.rank;
    const arma::vec scaled =
        space.V.head_cols(r) * ((space.U.head_cols(r).t() * y) / space.s.head(r));
    return scaled / space.scale;
}

// Standard error of each column's estimate: Cov = sigma^2 (X'X)^+, sigma^2 = RSS / (rows - rank).
arma::vec standard_errors(const ColumnSpace& space, double residual_variance) {
    const arma::uword r = space.rank;
    arma::mat weighted = space.V.head_cols(r);
    weighted.each_row() /= space.s.head(r).t();
    const arma::vec variance = residual_variance * arma::sum(arma::square(weighted), 1);
    return arma::sqrt(variance) / space.scale;
}

void require_finite(const arma::vec& v, const char* what) {
    if (!v.is_finite()) {
        throw std::runtime_error(std::string("the fit produced a non-finite ") + what);
    }
}

std::vector<std::string> warnings_for(const FitResult& result, double mean_observed) {
    std::vector<std::string> warnings;
    for (std::size_t j = 0; j < result.estimates.size(); ++j) {
        const auto& value = result.estimates[j];
        if (!value || *value >= 0.0)
            continue;
        std::string text =
            result.name_of(unknown_at(j)) + " is estimated at " + ppb::format_mb(*value);
        if (result.std_errors[j]) {
            text += " (standard error " + ppb::format_mb(*result.std_errors[j]) + ")";
        }
        text +=
            ", but memory cannot be negative: the observations may not follow the model (check "
            "their layer counts and in-flight counts)";
        warnings.push_back(std::move(text));
    }
    if (result.rms_residual_mb > poor_fit_fraction * mean_observed) {
        warnings.push_back("poor fit: the rms residual (" + ppb::format_mb(result.rms_residual_mb) +
                           ") is " +
                           format_number(100.0 * result.rms_residual_mb / mean_observed, 3) +
                           " % of the mean observed peak memory (" + ppb::format_mb(mean_observed) +
                           "); the observations may not follow the model (check their layer "
                           "and in-flight counts, or whether the dry runs differ in more than "
                           "the placement of layers)");
    }
    if (result.const_folded) {
        warnings.push_back(
            "const_mb is folded into the other parameters (see not_identifiable): predictions "
            "reproduce the observations, but for placements unlike them (e.g. body stages with "
            "another number of layers) they take const_mb as 0");
    }
    return warnings;
}

// Estimates, standard errors, residuals and the prediction space of a solved design.
void record_solution(FitResult& result, const Analysis& fitted, const arma::vec& y) {
    const ColumnSpace& space = fitted.space;
    const Identifiability& identifiability = fitted.identifiability;
    const std::vector<Unknown>& columns = identifiability.columns;

    arma::vec theta = minimum_norm_solution(space, y);
    require_finite(theta, "estimate");
    const double y_norm = arma::norm(y, 2);
    for (std::size_t j = 0; j < columns.size(); ++j) {
        if (identifiability.identified[j] &&
            std::abs(theta(j)) * space.scale(j) <= negligible_contribution * y_norm) {
            theta(j) = 0.0;
        }
    }
    const arma::vec residuals = y - fitted.design * theta;
    require_finite(residuals, "residual");
    result.residuals_mb = arma::conv_to<std::vector<double>>::from(residuals);
    const double rss = arma::dot(residuals, residuals);
    result.rms_residual_mb = std::sqrt(rss / static_cast<double>(result.rows));
    result.max_abs_residual_mb = arma::abs(residuals).max();

    arma::vec errors;
    if (result.degrees_of_freedom() > 0) {
        const double variance = rss / static_cast<double>(result.degrees_of_freedom());
        errors = standard_errors(space, variance);
        require_finite(errors, "standard error");
        result.estimable.residual_sd = std::sqrt(variance);
    }
    for (arma::uword i = 0; i < space.rank; ++i) {
        ParameterVector row{};
        for (std::size_t j = 0; j < columns.size(); ++j) {
            row[index(columns[j])] = space.V(j, i) / space.s(i);
        }
        result.estimable.error_basis.push_back(row);
    }
    for (std::size_t j = 0; j < columns.size(); ++j) {
        const std::size_t p = index(columns[j]);
        result.estimable.solution[p] = theta(j);
        result.estimable.column_scale[p] = space.scale(j);
        if (!identifiability.identified[j])
            continue;
        result.estimates[p] = theta(j);
        if (!errors.empty())
            result.std_errors[p] = errors(j);
    }

    const arma::mat null_basis = space.null_space();
    for (arma::uword q = 0; q < null_basis.n_cols; ++q) {
        ParameterVector direction{};
        for (std::size_t j = 0; j < columns.size(); ++j) {
            direction[index(columns[j])] = null_basis(j, q);
        }
        result.estimable.null_basis.push_back(direction);
    }
    result.estimable.zero_tolerance = space.zero_tolerance;
}

}  // namespace

const UnidentifiedParameter* FitResult::why_not_identified(Unknown p) const {
    for (const auto& e : not_identifiable) {
        if (e.parameter == p)
            return &e;
    }
    return nullptr;
}

namespace {

// The joint fit of design rows `rows` with observed memories `y`, for a model of data.groups.
FitResult fit_rows(const std::vector<ParameterVector>& rows, const arma::vec& y,
                   const DataSummary& data, const FitOptions& options) {
    ColumnChoice choice = choose_columns(rows, data, options.rank_tolerance);

    FitResult result;
    result.rank_tolerance = options.rank_tolerance;
    result.rows = rows.size();
    result.rank = choice.fitted.space.rank;
    result.groups = data.groups;
    result.estimates.resize(unknown_count(data.groups.size()));
    result.std_errors.resize(unknown_count(data.groups.size()));
    result.unknowns = choice.fitted.identifiability.columns;
    result.const_folded = choice.const_folded;
    result.kind_considered = data.overall.kind_observed;
    for (std::uint32_t g = 0; g < data.groups.size(); ++g) {
        std::array<bool, PPB_KIND_COUNT> considered{};
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            const std::size_t column = index(Unknown(activation(static_cast<ppb_kind>(k)), g));
            considered[k] =
                std::any_of(rows.begin(), rows.end(),
                            [column](const ParameterVector& x) { return x[column] != 0.0; });
        }
        result.group_kind_considered.push_back(considered);
    }
    for (auto& [p, e] : choice.undetermined) {
        result.not_identifiable.push_back({p, std::move(e.reason), std::move(e.suggestion)});
    }
    for (const Combination& c : choice.fitted.identifiability.combinations) {
        result.estimable_combinations.push_back(c.text);
    }
    record_solution(result, choice.fitted, y);
    result.warnings = warnings_for(result, arma::mean(y));
    return result;
}

void require_observations(std::size_t count) {
    if (count == 0) {
        throw ppb::plugin::InvalidInput(
            "no observations: a fit needs at least one dry-run measurement");
    }
}

// One design row and peak per observation (plain or grouped), then the fit.
template <class Observation>
FitResult fit_observations(std::span<const Observation> observations, const DataSummary& data,
                           const FitOptions& options) {
    std::vector<ParameterVector> rows;
    rows.reserve(observations.size());
    arma::vec y(observations.size());
    for (std::size_t i = 0; i < observations.size(); ++i) {
        rows.push_back(design_row(observations[i].placement));
        y(i) = observations[i].peak_memory_mb;
    }
    return fit_rows(rows, y, data, options);
}

}  // namespace

FitResult fit(std::span<const ppb_observation> observations, const FitOptions& options) {
    // The observations are well formed (ppb::plugin::check_observations, at the boundary).
    require_observations(observations.size());
    DataSummary data;
    data.overall = summarize(observations);
    data.per_group = {data.overall};
    data.groups = {"body"};
    return fit_observations(observations, data, options);
}

FitResult fit_grouped(std::span<const std::string> groups,
                      std::span<const ppb_grouped_observation> observations,
                      const FitOptions& options) {
    // The observations are well formed (ppb::plugin::check_grouped_observations, at the
    // boundary), each of groups.size() groups.
    require_observations(observations.size());
    if (groups.empty() || groups.size() > max_groups) {
        throw ppb::plugin::InvalidInput("a fit needs 1 to " + std::to_string(max_groups) +
                                        " groups of body layers, not " +
                                        std::to_string(groups.size()));
    }
    DataSummary data;
    data.groups.assign(groups.begin(), groups.end());
    std::vector<ppb_observation> plain;
    plain.reserve(observations.size());
    for (const ppb_grouped_observation& o : observations)
        plain.push_back(ppb_observation{o.placement.placement, o.peak_memory_mb});
    data.overall = summarize(plain);
    for (std::uint32_t g = 0; g < groups.size(); ++g) {
        data.per_group.push_back(groups.size() == 1 ? data.overall
                                                    : summarize_group(observations, g));
    }
    return fit_observations(observations, data, options);
}

ppb_linear_parameters linear_parameters(const FitResult& fit) noexcept {
    return group_parameters(fit, 0);
}

ppb_linear_parameters group_parameters(const FitResult& fit, std::size_t group) noexcept {
    const auto g = static_cast<std::uint32_t>(group);
    ppb_linear_parameters out{};
    out.struct_size = sizeof(ppb_linear_parameters);
    auto value = [&](Unknown p) {
        const auto& estimate = fit.estimates[index(p)];
        if (!estimate)
            return 0.0;
        out.identified |= abi_bit(p.parameter);
        return *estimate;
    };
    out.const_mb = value(Parameter::const_mb);
    // A folded constant is part of the model predict() evaluates: it is 0 there.
    if (fit.const_folded)
        out.identified |= PPB_PARAM_CONST;
    out.head_mb = value(Parameter::head_mb);
    out.tail_mb = value(Parameter::tail_mb);
    out.per_layer_mb = value(Unknown(Parameter::param_per_layer_mb, g));
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        out.activation_mb[k] = value(Unknown(activation(static_cast<ppb_kind>(k)), g));
    }
    return out;
}

}  // namespace ppb::dryrun_lsq
