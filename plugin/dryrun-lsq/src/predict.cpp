// Prediction from a fit: only what the observations determine (estimable functions of the
// parameters), and never by allocating on the success path, since hosts call it in their search.
#include "design.hpp"
#include "lsq_fit.hpp"

#include <ppb/kinds.hpp>
#include <ppb/plugin.hpp>
#include <ppb/plugin/report_support.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace ppb::dryrun_lsq {

using ppb::plugin::format_number;
using ppb::plugin::join_words;

namespace {

using ppb::plugin::NotEstimable;

std::string describe(const ppb_placement& placement) {
    return "stage " + std::to_string(placement.stage) +
           " (p = " + std::to_string(placement.num_stages) + ")";
}

[[noreturn]] void throw_never_observed(const ppb_placement& placement, ppb_kind kind) {
    const std::string parameter(name(activation(kind)));
    throw NotEstimable("predicting " + describe(placement) + " needs " + parameter + ", but " +
                       parameter + " was never observed: no observation holds " +
                       std::string(kind_name(kind)) + " layers");
}

[[noreturn]] void throw_undetermined(const FitResult& fit, const ppb_placement& placement,
                                     const std::vector<Parameter>& needed) {
    std::string message = "predicting " + describe(placement) + " needs " + join_names(needed) +
                          ", which the observations do not determine";
    if (!needed.empty()) {
        if (const auto* why = fit.why_not_identified(needed.front())) {
            message += ": " + why->reason + "; to predict it, " + why->suggestion;
        }
    }
    throw NotEstimable(message);
}

}  // namespace

double predict(const FitResult& fit, const ppb_placement& placement) {
    const ParameterVector x = design_row(placement);
    const EstimableSpace& space = fit.estimable;

    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const auto kind = static_cast<ppb_kind>(k);
        if (x[index(activation(kind))] != 0.0 && !fit.kind_considered[k]) {
            throw_never_observed(placement, kind);
        }
    }
    // head_mb, tail_mb or param_per_layer_mb needed but absent from every observation.
    for (const Parameter p :
         {Parameter::head_mb, Parameter::tail_mb, Parameter::param_per_layer_mb}) {
        if (x[index(p)] != 0.0 && space.column_scale[index(p)] == 0.0) {
            throw_undetermined(fit, placement, {p});
        }
    }

    // Estimable iff the column-scaled row is orthogonal to the null space of the fitted design.
    // Parameters that are not columns (a folded const_mb) contribute nothing.
    ParameterVector scaled{};
    double scaled_norm_squared = 0.0;
    for (std::size_t j = 0; j < parameter_count; ++j) {
        if (space.column_scale[j] == 0.0)
            continue;
        scaled[j] = x[j] / space.column_scale[j];
        scaled_norm_squared += scaled[j] * scaled[j];
    }
    const double tolerance = space.zero_tolerance * std::sqrt(scaled_norm_squared);
    for (const ParameterVector& direction : space.null_basis) {
        double projection = 0.0;
        for (std::size_t j = 0; j < parameter_count; ++j)
            projection += scaled[j] * direction[j];
        if (std::abs(projection) > tolerance) {
            std::vector<Parameter> needed;
            for (const Parameter p : fit.unknowns) {
                if (x[index(p)] != 0.0 && !fit.identified(p))
                    needed.push_back(p);
            }
            throw_undetermined(fit, placement, needed);
        }
    }

    double memory = 0.0;
    for (std::size_t j = 0; j < parameter_count; ++j)
        memory += x[j] * space.solution[j];
    return memory;
}

}  // namespace ppb::dryrun_lsq

namespace ppb::dryrun_lsq {

std::optional<double> predict_std_error(const FitResult& fit, const ppb_placement& placement) {
    (void)predict(fit, placement);  // the same checks: valid and estimable, or it throws
    const EstimableSpace& space = fit.estimable;
    if (space.residual_sd == 0.0 && fit.degrees_of_freedom() == 0)
        return std::nullopt;
    const ParameterVector x = design_row(placement);
    double sum_squares = 0.0;
    for (const ParameterVector& row : space.error_basis) {
        double component = 0.0;
        for (std::size_t j = 0; j < parameter_count; ++j) {
            if (space.column_scale[j] != 0.0)
                component += row[j] * x[j] / space.column_scale[j];
        }
        sum_squares += component * component;
    }
    return space.residual_sd * std::sqrt(sum_squares);
}

}  // namespace ppb::dryrun_lsq
