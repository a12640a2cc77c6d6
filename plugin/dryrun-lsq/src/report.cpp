// The report() text: parameters (null when not determined) and diagnostics of a fit.
#include "lsq_fit.hpp"

#include <ppb/kinds.hpp>
#include <ppb/plugin/report_support.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>

namespace ppb::dryrun_lsq {

namespace {

using ppb::plugin::finite;
using ppb::plugin::number_or_null;
using ppb::plugin::strings;

// A group's own parameters: param_per_layer_mb and activation_mb, into `out`.
void add_group_parameters(const FitResult& fit, std::uint32_t group, boost::json::object& out) {
    out["param_per_layer_mb"] =
        number_or_null(fit.estimates[index(Unknown(Parameter::param_per_layer_mb, group))]);
    boost::json::object activation_mb;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const auto kind = static_cast<ppb_kind>(k);
        activation_mb[kind_name(kind)] =
            number_or_null(fit.estimates[index(Unknown(activation(kind), group))]);
    }
    out["activation_mb"] = std::move(activation_mb);
}

// One group: const_mb, head_mb, tail_mb, param_per_layer_mb, activation_mb, as always. Several:
// the shared const_mb, head_mb and tail_mb, and "groups": {<name>: {param_per_layer_mb,
// activation_mb}} in model order.
boost::json::object parameters_of(const FitResult& fit) {
    boost::json::object parameters;
    for (const Parameter p : {Parameter::const_mb, Parameter::head_mb, Parameter::tail_mb}) {
        parameters[name(p)] = number_or_null(fit.estimates[index(p)]);
    }
    if (!fit.grouped()) {
        add_group_parameters(fit, 0, parameters);
        return parameters;
    }
    boost::json::object groups;
    for (std::uint32_t g = 0; g < fit.groups.size(); ++g)
        add_group_parameters(fit, g, groups[fit.groups[g]].emplace_object());
    parameters["groups"] = std::move(groups);
    return parameters;
}

boost::json::object diagnostics_of(const FitResult& fit) {
    boost::json::object d;
    d["rank"] = fit.rank;
    d["rows"] = fit.rows;
    if (fit.grouped())
        d["groups"] = strings(fit.groups);
    boost::json::array unknowns;
    for (const Unknown p : fit.unknowns)
        unknowns.emplace_back(fit.name_of(p));
    d["unknowns"] = std::move(unknowns);
    d["const_folded"] = fit.const_folded;

    boost::json::array not_identifiable;
    for (const auto& u : fit.not_identifiable) {
        not_identifiable.push_back(boost::json::object{{"parameter", fit.name_of(u.parameter)},
                                                       {"reason", u.reason},
                                                       {"suggestion", u.suggestion}});
    }
    d["not_identifiable"] = std::move(not_identifiable);

    boost::json::array not_considered;
    for (std::uint32_t g = 0; g < fit.groups.size(); ++g) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (!fit.group_kind_considered[g][k]) {
                not_considered.emplace_back(
                    fit.name_of(Unknown(activation(static_cast<ppb_kind>(k)), g)));
            }
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
    for (std::size_t j = 0; j < fit.std_errors.size(); ++j) {
        if (fit.std_errors[j])
            std_errors[fit.name_of(unknown_at(j))] = finite(*fit.std_errors[j]);
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
