// The report() JSON: parses, holds every documented key, null for what is not determined, and
// never a non-finite number.
#include "fit_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <set>

using namespace ppb::fit_test;
using ppb::dryrun_lsq::FitResult;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace report_tests {

namespace {

json::object report_of(const FitResult& fit) {
    const json::value parsed = json::parse(ppb::dryrun_lsq::report_json(fit));
    BOOST_TEST_REQUIRE(parsed.is_object());
    return parsed.as_object();
}

std::set<std::string> keys(const json::object& o) {
    std::set<std::string> out;
    for (const auto& [k, v] : o)
        out.emplace(k);
    return out;
}

std::set<std::string> strings(const json::value& array) {
    std::set<std::string> out;
    for (const auto& v : array.as_array())
        out.emplace(v.as_string());
    return out;
}

void check_all_finite(const json::value& v) {
    if (v.is_double())
        BOOST_TEST(std::isfinite(v.as_double()));
    if (v.is_array()) {
        for (const auto& e : v.as_array())
            check_all_finite(e);
    }
    if (v.is_object()) {
        for (const auto& [k, e] : v.as_object())
            check_all_finite(e);
    }
}

bool any_mentions(const json::value& array, const std::string& words) {
    for (const auto& v : array.as_array()) {
        if (mentions(std::string(v.as_string()), words))
            return true;
    }
    return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(report)

// select only on stage 0 (head_mb and activation_mb.select undetermined), comm/both/full never
// observed, observations in excess.
BOOST_AUTO_TEST_CASE(report_holds_every_key_with_null_for_what_is_not_determined) {
    DryRuns runs;
    runs.observe(8, 0, {2, 2, 0, 0, 0}, 8);
    const std::array<std::uint32_t, 7> counts = {3, 4, 3, 5, 4, 3, 2};
    for (std::uint32_t s = 1; s < 8; ++s)
        runs.observe(8, s, none(counts[s - 1]), 8);
    const FitResult fit = runs.fit();
    const json::object report = report_of(fit);
    check_all_finite(report);

    BOOST_TEST((keys(report) == std::set<std::string>{"parameters", "diagnostics"}));
    const json::object& parameters = report.at("parameters").as_object();
    BOOST_TEST((keys(parameters) == std::set<std::string>{"const_mb", "head_mb", "tail_mb",
                                                          "param_per_layer_mb", "activation_mb"}));
    const json::object& activation = parameters.at("activation_mb").as_object();
    BOOST_TEST(
        (keys(activation) == std::set<std::string>{"none", "select", "comm", "both", "full"}));
    BOOST_TEST(close(parameters.at("const_mb").as_double(), runs.truth().const_mb));
    BOOST_TEST(close(activation.at("none").as_double(), runs.truth().activation_mb[0]));
    BOOST_TEST(parameters.at("head_mb").is_null());
    for (const char* kind : {"select", "comm", "both", "full"}) {
        BOOST_TEST(activation.at(kind).is_null(), kind << " should be null");
    }

    const json::object& d = report.at("diagnostics").as_object();
    for (const char* key :
         {"rank", "rows", "unknowns", "const_folded", "not_identifiable", "not_considered",
          "residuals_mb", "rms_residual_mb", "max_abs_residual_mb", "degrees_of_freedom",
          "std_errors_mb", "estimable_combinations", "warnings", "rank_tolerance"}) {
        BOOST_TEST(d.contains(key), "diagnostics." << key);
    }
    BOOST_TEST(d.at("rows").to_number<std::size_t>() == 8u);
    // 6 columns with one dependency (head_mb with activation_mb.select).
    BOOST_TEST(d.at("rank").to_number<std::size_t>() == 5u);
    BOOST_TEST(d.at("degrees_of_freedom").to_number<std::size_t>() == 3u);
    BOOST_TEST(d.at("const_folded").as_bool() == false);
    BOOST_TEST((strings(d.at("unknowns")) ==
                std::set<std::string>{"const_mb", "head_mb", "tail_mb", "param_per_layer_mb",
                                      "activation_mb.none", "activation_mb.select"}));
    BOOST_TEST(
        (strings(d.at("not_considered")) ==
         std::set<std::string>{"activation_mb.comm", "activation_mb.both", "activation_mb.full"}));
    std::set<std::string> undetermined;
    for (const auto& e : d.at("not_identifiable").as_array()) {
        const json::object& entry = e.as_object();
        BOOST_TEST((keys(entry) == std::set<std::string>{"parameter", "reason", "suggestion"}));
        BOOST_TEST(!entry.at("reason").as_string().empty());
        BOOST_TEST(!entry.at("suggestion").as_string().empty());
        undetermined.emplace(entry.at("parameter").as_string());
    }
    BOOST_TEST((undetermined == std::set<std::string>{"head_mb", "activation_mb.select"}));
    BOOST_TEST(d.at("residuals_mb").as_array().size() == runs.size());
    // Standard errors exactly for the identified parameters.
    BOOST_TEST(
        (keys(d.at("std_errors_mb").as_object()) ==
         std::set<std::string>{"const_mb", "tail_mb", "param_per_layer_mb", "activation_mb.none"}));
    BOOST_TEST(d.at("estimable_combinations").as_array().size() == 1u);
    BOOST_TEST(d.at("rank_tolerance").as_double() == 1e-10);
}

BOOST_AUTO_TEST_CASE(exactly_determined_fit_reports_no_standard_errors) {
    DryRuns runs;
    runs.observe(8, 0, none(2), 8);
    runs.observe(8, 1, none(3), 8);
    runs.observe(8, 2, none(4), 8);
    runs.observe(8, 3, none(5), 8);
    runs.observe(8, 7, none(3), 8);
    const json::object d = report_of(runs.fit()).at("diagnostics").as_object();
    BOOST_TEST(d.at("std_errors_mb").as_object().empty());
    BOOST_TEST(d.at("degrees_of_freedom").to_number<int>() == 0);
    BOOST_TEST(d.at("rms_residual_mb").as_double() < 1e-6);
}

BOOST_AUTO_TEST_CASE(folded_const_is_reported_null_with_a_reason_and_a_warning) {
    DryRuns runs;
    runs.observe(6, 0, none(3), 8);
    for (std::uint32_t s = 1; s < 5; ++s)
        runs.observe(6, s, none(4), 8);
    runs.observe(6, 5, none(3), 8);
    const json::object report = report_of(runs.fit());
    check_all_finite(report);
    BOOST_TEST(report.at("parameters").at("const_mb").is_null());
    const json::object& d = report.at("diagnostics").as_object();
    BOOST_TEST(d.at("const_folded").as_bool());
    BOOST_TEST(!strings(d.at("unknowns")).contains("const_mb"));
    const auto& first = d.at("not_identifiable").as_array().at(0).as_object();
    BOOST_TEST(first.at("parameter").as_string() == "const_mb");
    BOOST_TEST(mentions(std::string(first.at("reason").as_string()), "n = 4"));
    BOOST_TEST(any_mentions(d.at("warnings"), "folded"));
}

// Memory cannot be negative: an estimate below 0 is a warning worth showing.
BOOST_AUTO_TEST_CASE(negative_estimate_is_warned_about) {
    Truth odd;
    odd.activation_mb[PPB_KIND_FULL] = -40.0;
    DryRuns runs(odd);
    const std::array<std::uint32_t, 8> counts = {2, 3, 4, 3, 5, 4, 3, 2};
    for (std::uint32_t s = 0; s < 8; ++s)
        runs.observe(8, s, {counts[s], 0, 0, 0, s % 3}, 8);
    const FitResult fit = runs.fit();
    check_estimate(fit, Parameter::activation_full, -40.0);
    const json::object d = report_of(fit).at("diagnostics").as_object();
    BOOST_TEST(any_mentions(d.at("warnings"), "activation_mb.full is estimated at -40"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace report_tests
