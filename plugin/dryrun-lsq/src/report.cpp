// The report() text: parameters (null when not determined) and diagnostics of a fit.
#include "lsq_fit.hpp"

#include <ppb/kinds.hpp>
#include <ppb/plugin/report_support.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace ppb::dryrun_lsq {

namespace {

using ppb::plugin::finite;
using ppb::plugin::number_or_null;
using ppb::plugin::strings;

boost::json::object parameters_of(const FitResult& fit) {
    boost::json::object parameters;
    for (const Parameter p : {Parameter::const_mb, Parameter::head_mb, Parameter::tail_mb,
                              Parameter::param_per_layer_mb}) {
        parameters[name(p)] = number_or_null(fit.estimates[index(p)]);
    }
    boost::json::object activation_mb;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const auto kind = static_cast<ppb_kind>(k);
        activation_mb[kind_name(kind)] = number_or_null(fit.estimates[index(activation(kind))]);
    }
    parameters["activation_mb"] = std::move(activation_mb);
    return parameters;
}

boost::json::object diagnostics_of(const FitResult& fit) {
    boost::json::object d;
    d["rank"] = fit.rank;
    d["rows"] = fit.rows;
    boost::json::array unknowns;
    for (const Parameter p : fit.unknowns)
        unknowns.emplace_back(name(p));
    d["unknowns"] = std::move(unknowns);
    d["const_folded"] = fit.const_folded;

    boost::json::array not_identifiable;
    for (const auto& u : fit.not_identifiable) {
        not_identifiable.push_back(boost::json::object{
            {"parameter", name(u.parameter)}, {"reason", u.reason}, {"suggestion", u.suggestion}});
    }
    d["not_identifiable"] = std::move(not_identifiable);

    boost::json::array not_considered;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (!fit.kind_considered[k]) {
            not_considered.emplace_back(name(activation(static_cast<ppb_kind>(k))));
        }
    }
    d["not_considered"] = std::move(not_considered);

    boost::json::array residuals;
    for (const double r : fit.residuals_mb)
        residuals.emplace_back(finite(r));
    d["residuals_mb"] = std::move(residuals);
    d["rms_residual_mb"] = finite(fit.rms_residual_mb);
    d["max_abs_residual_mb"] = finite(fit.max_abs_residual_mb);
    d["degrees_of_freedom"] = fit.degrees_of_freedom();

    boost::json::object std_errors;
    for (std::size_t j = 0; j < parameter_count; ++j) {
        if (fit.std_errors[j])
            std_errors[parameter_names[j]] = finite(*fit.std_errors[j]);
    }
    d["std_errors_mb"] = std::move(std_errors);
    d["estimable_combinations"] = strings(fit.estimable_combinations);
    d["warnings"] = strings(fit.warnings);
    d["rank_tolerance"] = finite(fit.rank_tolerance);
    return d;
}

}  // namespace

std::string report_json(const FitResult& fit) {
    return ppb::plugin::make_report(parameters_of(fit), diagnostics_of(fit));
}

}  // namespace ppb::dryrun_lsq
