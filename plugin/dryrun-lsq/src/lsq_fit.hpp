// The dry-run least-squares memory model (host_api/docs/design.md, "The memory model"): fit,
// prediction, coefficients and report. The core's entry point for the plugin and for the tests;
// free of Armadillo.
//
// Model, for a stage s of p stages holding n_{c,k} body layers of kind k in chunk c, with
// in-flight count f_c:
//   M = C + H [s = 0] + T [s = p-1] + P sum_{c,k} n_{c,k} + sum_k A_k sum_c n_{c,k} f_c
// With groups of body layers (dense and MoE layers), n_{c,g,k} layers of group g, and each group
// its own P_g and A_{g,k}, fitted jointly with the shared C, H and T:
//   M = C + H [s = 0] + T [s = p-1] + sum_g (P_g sum_{c,k} n_{c,g,k} + sum_k A_{g,k} sum_c
//   n_{c,g,k} f_c)
#ifndef PPB_DRYRUN_LSQ_LSQ_FIT_HPP
#define PPB_DRYRUN_LSQ_LSQ_FIT_HPP

#include "options.hpp"
#include "parameters.hpp"

#include <ppb/abi.h>

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ppb::dryrun_lsq {

struct UnidentifiedParameter {
    Unknown parameter;
    std::string reason;
    std::string suggestion;
};

// What predict() needs from a fit, kept small and flat so that prediction never allocates.
struct EstimableSpace {
    // The minimum-norm least-squares solution over the fitted columns; 0 for other parameters.
    // Undetermined parameters have values here too: they are never reported, but estimable
    // predictions are the same for every least-squares solution, so using them is exact.
    ParameterVector solution{};
    // 2-norm of each fitted column of the design; 0 for parameters that are not columns.
    ParameterVector column_scale{};
    // Orthonormal basis of the null space of the column-scaled design (zero outside fitted
    // columns). A row x is estimable iff x / column_scale is orthogonal to all of them.
    std::vector<ParameterVector> null_basis;
    // Rows of diag(1/s_r) V_r' over the fitted columns (zero elsewhere) and the residual
    // standard deviation: the standard error of an estimable x.theta is
    // residual_sd * || error_basis (x / column_scale) ||. residual_sd is 0 when the fit has no
    // degrees of freedom (no error estimate).
    std::vector<ParameterVector> error_basis;
    double residual_sd = 0.0;
    // A projection on the null space below this fraction of the scaled row's norm is rounding.
    double zero_tolerance = 0.0;
};

struct FitResult {
    double rank_tolerance = 0.0;
    std::size_t rows = 0;
    std::size_t rank = 0;
    // The groups of body layers the fit was given, in model order: {"body"} for a plain fit.
    std::vector<std::string> groups{"body"};
    std::vector<Unknown> unknowns;  // the fitted columns, in column order
    bool const_folded = false;      // const_mb could not be separated and was fitted as 0
    // The kind occurs in some observation (in some group).
    std::array<bool, PPB_KIND_COUNT> kind_considered{};
    // Per group: the kind occurs in some observation's layers of that group.
    std::vector<std::array<bool, PPB_KIND_COUNT>> group_kind_considered;
    // Values and standard errors of the identified unknowns, indexed by index(Unknown) (for one
    // group, index(Parameter)); nullopt for the others (not considered, not identifiable, or
    // folded). std_errors only when over-determined. unknown_count(groups.size()) entries.
    std::vector<std::optional<double>> estimates;
    std::vector<std::optional<double>> std_errors;
    std::vector<UnidentifiedParameter> not_identifiable;  // in parameter order
    std::vector<std::string> estimable_combinations;
    std::vector<double> residuals_mb;  // observed - fitted, in input order
    double rms_residual_mb = 0.0;
    double max_abs_residual_mb = 0.0;
    std::vector<std::string> warnings;
    EstimableSpace estimable;

    [[nodiscard]] bool identified(Unknown p) const { return estimates[index(p)].has_value(); }
    [[nodiscard]] std::size_t degrees_of_freedom() const { return rows - rank; }
    // The entry for `p` in not_identifiable, or nullptr.
    [[nodiscard]] const UnidentifiedParameter* why_not_identified(Unknown p) const;
    [[nodiscard]] bool grouped() const noexcept { return groups.size() > 1; }
    // The unknown's name in reports and messages (name(Unknown, groups)).
    [[nodiscard]] std::string name_of(Unknown p) const { return name(p, groups); }
};

// Fits the model to `observations` jointly, whatever their pipeline degree or configuration.
// `observations` are well formed (ppb::plugin::check_observations; the C boundary checks them).
// Throws ppb::plugin::InvalidInput when there are none and when the
// observations identify no single parameter (saying why and which dry run would help).
// A partially identified fit is a success: see FitResult::not_identifiable.
[[nodiscard]] FitResult fit(std::span<const ppb_observation> observations,
                            const FitOptions& options);

// The same joint fit of observations whose layers are counted per group: `groups` (distinct, not
// empty, 1 to max_groups) names the groups of every observation's group_layers, each of which has
// groups.size() groups (the C boundary checks them). One group is fitted exactly as fit() fits
// the plain observations inside, whatever its name.
[[nodiscard]] FitResult fit_grouped(std::span<const std::string> groups,
                                    std::span<const ppb_grouped_observation> observations,
                                    const FitOptions& options);

// Peak memory in MB of a well-formed `placement` (ppb::plugin::check_placement). Throws
// ppb::plugin::NotEstimable when the fitted data do not determine it (naming the parameters it
// needs). With const_mb folded, const_mb counts as 0. Allocates only when it throws.
[[nodiscard]] double predict(const FitResult& fit, const ppb_placement& placement);
// The same for a grouped placement of fit.groups.size() groups; a placement needing a group's
// parameter that the data do not determine is NotEstimable, naming the group and parameter.
[[nodiscard]] double predict(const FitResult& fit, const ppb_grouped_placement& placement);

// Standard error in MB of predict()'s value for `placement`, from the fit's residual variance
// (the placement must be predictable: the same exceptions as predict); nullopt when the fit is
// exactly determined and so has no error estimate.
[[nodiscard]] std::optional<double> predict_std_error(const FitResult& fit,
                                                      const ppb_placement& placement);
[[nodiscard]] std::optional<double> predict_std_error(const FitResult& fit,
                                                      const ppb_grouped_placement& placement);

// The coefficients predict() evaluates: PPB_PARAM_* bits set for the identified parameters and,
// when const_mb is folded, for const_mb with the value 0; the values of unset bits are 0.
[[nodiscard]] ppb_linear_parameters linear_parameters(const FitResult& fit) noexcept;
// The same of group `group` (< fit.groups.size()): the shared const, head and tail, and the
// group's own per-layer and activation coefficients. Group 0 of one group is linear_parameters().
[[nodiscard]] ppb_linear_parameters group_parameters(const FitResult& fit,
                                                     std::size_t group) noexcept;

// The JSON object {"parameters": {...}, "diagnostics": {...}} described in README.md; a fit of
// several groups has the group parameters under "parameters"."groups".<name>.
[[nodiscard]] std::string report_json(const FitResult& fit);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_LSQ_FIT_HPP
