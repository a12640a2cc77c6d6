// The report() text: the coefficients read from the layer file (null for a kind it does not
// give) and what the report's reader should know about where they came from.
#include "layer_table.hpp"

#include <ppb/kinds.hpp>
#include <ppb/plugin/report_support.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <optional>
#include <string>

namespace ppb::table {

namespace {

using ppb::plugin::finite;
using ppb::plugin::strings;

std::string activation_name(std::size_t k) {
    return "activation_mb." + std::string(kind_names[k]);
}

boost::json::object activation_of(
    const std::array<std::optional<double>, PPB_KIND_COUNT>& activation) {
    boost::json::object activation_mb;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const auto& a = activation[k];
        activation_mb[kind_names[k]] =
            a ? boost::json::value(finite(*a)) : boost::json::value(nullptr);
    }
    return activation_mb;
}

// One group: {"const_mb", "head_mb", "tail_mb", "param_per_layer_mb", "activation_mb"}. Several:
// the shared three, then "groups": {name: {"param_per_layer_mb", "activation_mb"}} in model order.
boost::json::object parameters_of(const LayerTable& table) {
    boost::json::object parameters;
    parameters["const_mb"] = finite(table.const_mb);
    parameters["head_mb"] = finite(table.head_mb);
    parameters["tail_mb"] = finite(table.tail_mb);
    if (!table.grouped()) {
        parameters["param_per_layer_mb"] = finite(table.param_per_layer_mb);
        parameters["activation_mb"] = activation_of(table.activation_mb);
        return parameters;
    }
    boost::json::object groups;
    for (const BodyGroupTable& group : table.groups) {
        boost::json::object g;
        g["param_per_layer_mb"] = finite(group.param_per_layer_mb);
        g["activation_mb"] = activation_of(group.activation_mb);
        groups[group.name] = std::move(g);
    }
    parameters["groups"] = std::move(groups);
    return parameters;
}

boost::json::object diagnostics_of(const LayerTable& table) {
    boost::json::object d;
    d["source"] = "SAPP layer file";
    if (table.grouped()) {
        boost::json::object layers;
        for (const BodyGroupTable& group : table.groups)
            layers[group.name] = group.num_layers;
        d["groups"] = std::move(layers);
    } else {
        d["body"] = table.body_name;
        d["num_layers"] = table.num_layers;
    }
    d["head_entries"] = strings(table.head_entries);
    d["tail_entries"] = strings(table.tail_entries);
    d["const_defaulted"] = table.const_defaulted;
    boost::json::array not_considered;
    for (const BodyGroupTable& group : table.groups) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (group.activation_mb[k])
                continue;
            not_considered.emplace_back(table.grouped()
                                            ? "groups." + group.name + "." + activation_name(k)
                                            : activation_name(k));
        }
    }
    d["not_considered"] = std::move(not_considered);
    d["warnings"] = strings(table.warnings);
    return d;
}

}  // namespace

std::string report_json(const LayerTable& table) {
    return ppb::plugin::make_report(parameters_of(table), diagnostics_of(table));
}

}  // namespace ppb::table
