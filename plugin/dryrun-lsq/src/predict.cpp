// Prediction from a fit: only what the observations determine (estimable functions of the
// parameters), and never by allocating on the success path, since hosts call it in their search.
#include "design.hpp"
#include "lsq_fit.hpp"

#include <ppb/kinds.hpp>
#include <ppb/plugin.hpp>
#include <ppb/plugin/report_support.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
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

[[noreturn]] void throw_never_observed(const FitResult& fit, const ppb_placement& placement,
                                       Unknown needed) {
    const std::string parameter = fit.name_of(needed);
    const std::string layers =
        std::string(kind_name(kind_of(needed.parameter))) + " layers" +
        (fit.grouped() ? " of group '" + fit.groups[needed.group] + "'" : std::string());
    throw NotEstimable("predicting " + describe(placement) + " needs " + parameter + ", but " +
                       parameter + " was never observed: no observation holds " + layers);
}

[[noreturn]] void throw_undetermined(const FitResult& fit, const ppb_placement& placement,
                                     const std::vector<Unknown>& needed) {
    std::string message = "predicting " + describe(placement) + " needs " +
                          join_names(needed, fit.groups) +
                          ", which the observations do not determine";
    if (!needed.empty()) {
        if (const auto* why = fit.why_not_identified(needed.front())) {
            message += ": " + why->reason + "; to predict it, " + why->suggestion;
        }
    }
    throw NotEstimable(message);
}

// The prediction of design row `x` of `placement`: x . theta when the data determine it.
double predict_row(const FitResult& fit, const ppb_placement& placement, const ParameterVector& x) {
    const EstimableSpace& space = fit.estimable;
    const std::size_t count = fit.estimates.size();
    const auto groups = static_cast<std::uint32_t>(fit.groups.size());

    for (std::uint32_t g = 0; g < groups; ++g) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            const Unknown a(activation(static_cast<ppb_kind>(k)), g);
            if (x[index(a)] != 0.0 && !fit.group_kind_considered[g][k])
                throw_never_observed(fit, placement, a);
        }
    }
    // head_mb, tail_mb or a param_per_layer_mb needed but absent from every observation.
    const auto require_column = [&](Unknown p) {
        if (x[index(p)] != 0.0 && space.column_scale[index(p)] == 0.0)
            throw_undetermined(fit, placement, {p});
    };
    require_column(Parameter::head_mb);
    require_column(Parameter::tail_mb);
    for (std::uint32_t g = 0; g < groups; ++g)
        require_column(Unknown(Parameter::param_per_layer_mb, g));

    // Estimable iff the column-scaled row is orthogonal to the null space of the fitted design.
    // Parameters that are not columns (a folded const_mb) contribute nothing.
    ParameterVector scaled{};
    double scaled_norm_squared = 0.0;
    for (std::size_t j = 0; j < count; ++j) {
        if (space.column_scale[j] == 0.0)
            continue;
        scaled[j] = x[j] / space.column_scale[j];
        scaled_norm_squared += scaled[j] * scaled[j];
    }
    const double tolerance = space.zero_tolerance * std::sqrt(scaled_norm_squared);
    for (const ParameterVector& direction : space.null_basis) {
        double projection = 0.0;
        for (std::size_t j = 0; j < count; ++j)
            projection += scaled[j] * direction[j];
        if (std::abs(projection) > tolerance) {
            std::vector<Unknown> needed;
            for (const Unknown p : fit.unknowns) {
                if (x[index(p)] != 0.0 && !fit.identified(p))
                    needed.push_back(p);
            }
            throw_undetermined(fit, placement, needed);
        }
    }

    double memory = 0.0;
    for (std::size_t j = 0; j < count; ++j)
        memory += x[j] * space.solution[j];
    return memory;
}

std::optional<double> std_error_of_row(const FitResult& fit, const ParameterVector& x) {
    const EstimableSpace& space = fit.estimable;
    if (space.residual_sd == 0.0 && fit.degrees_of_freedom() == 0)
        return std::nullopt;
    const std::size_t count = fit.estimates.size();
    double sum_squares = 0.0;
    for (const ParameterVector& row : space.error_basis) {
        double component = 0.0;
        for (std::size_t j = 0; j < count; ++j) {
            if (space.column_scale[j] != 0.0)
                component += row[j] * x[j] / space.column_scale[j];
        }
        sum_squares += component * component;
    }
    return space.residual_sd * std::sqrt(sum_squares);
}

// A plain placement does not say which group its layers are of.
void require_one_group(const FitResult& fit) {
    if (fit.grouped()) {
        throw ppb::plugin::InvalidInput("this fit distinguishes " +
                                        std::to_string(fit.groups.size()) +
                                        " groups of body layers (" + join_words(fit.groups) +
                                        "): a placement must count its layers per group");
    }
}

}  // namespace

double predict(const FitResult& fit, const ppb_placement& placement) {
    require_one_group(fit);
    const ParameterVector x = design_row(placement);
    return predict_row(fit, placement, x);
}

double predict(const FitResult& fit, const ppb_grouped_placement& placement) {
    if (placement.num_groups != fit.groups.size()) {
        throw ppb::plugin::InvalidInput(
            "the placement counts its layers in " + std::to_string(placement.num_groups) +
            " groups but the fit has " + std::to_string(fit.groups.size()));
    }
    const ParameterVector x = design_row(placement);
    return predict_row(fit, placement.placement, x);
}

std::optional<double> predict_std_error(const FitResult& fit, const ppb_placement& placement) {
    (void)predict(fit, placement);  // the same checks: valid and estimable, or it throws
    return std_error_of_row(fit, design_row(placement));
}

std::optional<double> predict_std_error(const FitResult& fit,
                                        const ppb_grouped_placement& placement) {
    (void)predict(fit, placement);  // the same checks: valid and estimable, or it throws
    return std_error_of_row(fit, design_row(placement));
}

}  // namespace ppb::dryrun_lsq
