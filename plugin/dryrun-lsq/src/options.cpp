#include "options.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/plugin.hpp>

#include <boost/json/value.hpp>

#include <cmath>
#include <string>

namespace ppb::dryrun_lsq {

namespace {

using ppb::plugin::InvalidInput;

constexpr std::string_view rank_tolerance_key = "rank_tolerance";

std::string kind_name(const boost::json::value& v) {
    switch (v.kind()) {
        case boost::json::kind::null:
            return "null";
        case boost::json::kind::bool_:
            return "a boolean";
        case boost::json::kind::int64:
        case boost::json::kind::uint64:
        case boost::json::kind::double_:
            return "a number";
        case boost::json::kind::string:
            return "a string";
        case boost::json::kind::array:
            return "an array";
        case boost::json::kind::object:
            return "an object";
    }
    return "an unknown JSON value";
}

double parse_rank_tolerance(const boost::json::value& v) {
    if (!v.is_number()) {
        throw InvalidInput("dryrun-lsq option 'rank_tolerance' must be a number, got " +
                           kind_name(v));
    }
    boost::json::error_code ec;
    const double tolerance = v.to_number<double>(ec);
    // Tolerance 1 or more would declare every design matrix of rank 0.
    if (ec || !std::isfinite(tolerance) || tolerance <= 0.0 || tolerance >= 1.0) {
        throw InvalidInput("dryrun-lsq option 'rank_tolerance' must be a number in (0, 1), got " +
                           ppb::to_compact_json(v));
    }
    return tolerance;
}

}  // namespace

FitOptions parse_options(std::string_view options_json) {
    // ppb::parse_json, like every plugin's options: it also refuses a repeated key, which
    // Boost.JSON alone would silently resolve to the last value.
    boost::json::value root;
    try {
        root = ppb::parse_json(options_json, {});
    } catch (const ppb::InputError& e) {
        throw InvalidInput(std::string("dryrun-lsq options are not valid JSON: ") + e.what());
    }
    if (!root.is_object()) {
        throw InvalidInput("dryrun-lsq options must be a JSON object, got " + kind_name(root));
    }
    FitOptions options;
    for (const auto& [key, value] : root.get_object()) {
        if (key == rank_tolerance_key) {
            options.rank_tolerance = parse_rank_tolerance(value);
        } else {
            throw InvalidInput("dryrun-lsq has no option '" + std::string(key) +
                               "' (known options: rank_tolerance)");
        }
    }
    return options;
}

}  // namespace ppb::dryrun_lsq
