// The fit result document "ppb.fit/1" (host_api/docs/design.md, "ppb.fit/1"), built from a plugin's
// report.
#include <ppb/errors.hpp>
#include <ppb/fit_format.hpp>
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/memory_model.hpp>

#include <boost/json/value.hpp>

#include <array>
#include <cmath>
#include <string>

namespace ppb {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 4> scalar_parameters = {"const_mb", "head_mb", "tail_mb",
                                                               "param_per_layer_mb"};
constexpr std::string_view activation_key = "activation_mb";
constexpr std::string_view groups_key = "groups";

// A number or null, copied as it is.
json::value number_or_null(const JsonNode& node) {
    if (node.is_null())
        return nullptr;
    if (!node.is_number()) {
        node.fail("expected a number or null, got " + describe_json(node.value()));
    }
    (void)node.as_number();  // refuses a non-finite number
    return node.value();
}

// parse_json() refuses non-finite numbers in text; this guards every number on the way out
// all the same, since the document is written for other programs.
void check_numbers(const JsonNode& node) {
    const json::value& v = node.value();
    if (v.is_double()) {
        (void)node.as_number();
    } else if (v.is_object()) {
        for (const auto& [key, member] : JsonObject(node).members())
            check_numbers(member);
    } else if (v.is_array()) {
        for (const auto& element : JsonArray(node).elements())
            check_numbers(element);
    }
}

// A group's own coefficients (or, without groups, the model's): param_per_layer_mb and
// activation_mb, into `out`.
void read_layer_parameters(const JsonObject& parameters, json::object& out) {
    out.emplace("param_per_layer_mb", number_or_null(parameters.required("param_per_layer_mb")));
    const JsonObject activation = parameters.required(activation_key).as_object();
    activation.allow_only(kind_names, "recompute kind");
    json::object activation_out;
    for (const auto kind : kind_names) {
        activation_out.emplace(kind, number_or_null(activation.required(kind)));
    }
    out.emplace(activation_key, std::move(activation_out));
}

// A model of several groups of body layers (plugin API 1.3) reports the shared const_mb, head_mb
// and tail_mb, and "groups": {<name>: {param_per_layer_mb, activation_mb}} in model order.
json::object read_parameters(const JsonObject& parameters) {
    json::object out;
    const auto groups = parameters.optional(groups_key);
    for (const auto key : scalar_parameters) {
        if (groups && key == "param_per_layer_mb")
            continue;
        out.emplace(key, number_or_null(parameters.required(key)));
    }
    if (groups) {
        const JsonObject by_group = groups->as_object();
        if (by_group.empty())
            groups->fail("expected the parameters of one or more groups, got an empty object");
        json::object groups_out;
        for (const auto& [name, node] : by_group.members()) {
            const JsonObject group = node.as_object();
            group.allow_only({"param_per_layer_mb", activation_key});
            read_layer_parameters(group, groups_out[name].emplace_object());
        }
        out.emplace(groups_key, std::move(groups_out));
    } else {
        read_layer_parameters(parameters, out);
    }
    // Further parameters of a model are kept, after the standard ones.
    for (const auto& [key, node] : parameters.members()) {
        if (out.contains(key))
            continue;
        check_numbers(node);
        out.emplace(key, node.value());
    }
    return out;
}

}  // namespace

json::object make_fit_document(std::string_view model_name, std::string_view model_version,
                               std::string_view report_json) {
    json::object parameters;
    json::value diagnostics;
    try {
        const json::value report = parse_json(report_json, {});
        const JsonNode root(report, {});
        if (!report.is_object())
            root.fail("expected a JSON object, got " + describe_json(report));
        const JsonObject top(root);
        top.allow_only({"parameters", "diagnostics"});
        parameters = read_parameters(top.required("parameters").as_object());
        const JsonObject diag = top.required("diagnostics").as_object();
        check_numbers(diag.node());
        diagnostics = diag.object();
    } catch (const InputError& e) {
        throw ModelError(PPB_ERR_INTERNAL, "memory model '" + std::string(model_name) + "' " +
                                               std::string(model_version) +
                                               " returned an invalid report: " + e.what());
    }
    json::object document;
    document.emplace("format", fit_format_v1);
    document.emplace("model", json::object{{"name", model_name}, {"version", model_version}});
    document.emplace("parameters", std::move(parameters));
    document.emplace("diagnostics", std::move(diagnostics));
    return document;
}

void add_profile_fit(json::object& document, const ProfileFit& fit, const DryRunSet& dryrun) {
    if (!fit.alternated)
        return;
    json::array observations;
    for (std::size_t i = 0; i < dryrun.observations.size(); ++i) {
        const Observation& o = dryrun.observations[i];
        if (o.in_flight_profile.size() < 2)
            continue;
        json::array profile;
        for (const InFlightVector& v : o.in_flight_profile)
            profile.push_back(json::array(v.begin(), v.end()));
        const InFlightVector& active = o.in_flight_profile.at(fit.active.at(i));
        observations.push_back(
            json::object{{"index", i},
                         {"config", o.config},
                         {"stage", o.placement.stage},
                         {"in_flight", json::array(active.begin(), active.end())},
                         {"profile", std::move(profile)}});
    }
    document["in_flight_profiles"] = json::object{{"fits", fit.fits},
                                                  {"converged", fit.converged},
                                                  {"observations", std::move(observations)}};
}

}  // namespace ppb
