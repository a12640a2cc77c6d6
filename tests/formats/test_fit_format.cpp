// ppb/fit_format.hpp: the "ppb.fit/1" document built from a plugin's report.
#include <ppb/fit_format.hpp>
#include <ppb/memory_model.hpp>

#include "../common/error_testing.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace json = boost::json;
using ppb::make_fit_document;
using ppb::ModelError;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace fit_format_tests {

namespace {

const std::string good_parameters =
    R"("parameters": {"const_mb": 2048.0, "head_mb": 7188.0, "tail_mb": 3746, "param_per_layer_mb": null,
                      "activation_mb": {"select": 739.0, "none": 994.5, "comm": null, "both": 403.0,
                                        "full": 32.0}})";
const std::string good_diagnostics =
    R"("diagnostics": {"rank": 8, "rows": 12, "residuals_mb": [1.5, -2.0],
                       "not_identifiable": [{"parameter": "activation_mb.comm", "reason": "unused"}],
                       "warnings": []})";

std::string report(const std::string& parameters, const std::string& diagnostics) {
    return "{" + parameters + ", " + diagnostics + "}";
}

ModelError model_error(const std::string& text) {
    try {
        (void)make_fit_document("dryrun-lsq", "1.2.3", text);
    } catch (const ModelError& e) {
        return e;
    }
    BOOST_ERROR("expected a ModelError for " << text);
    return ModelError(PPB_OK, "");
}

// Checks that `text` is refused as an invalid report, with `detail` in the message.
void check_refused(const std::string& text, const std::string& detail) {
    const ModelError e = model_error(text);
    BOOST_TEST(e.status() == PPB_ERR_INTERNAL);
    ppb_test::check_contains(
        e.what(), {"memory model 'dryrun-lsq' 1.2.3 returned an invalid report: ", detail});
}

std::vector<std::string> keys(const json::object& o) {
    std::vector<std::string> out;
    for (const auto& member : o)
        out.emplace_back(member.key());
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fit_format)

BOOST_AUTO_TEST_CASE(builds_the_document) {
    const json::object doc =
        make_fit_document("dryrun-lsq", "1.2.3", report(good_parameters, good_diagnostics));
    BOOST_TEST(
        (keys(doc) == std::vector<std::string>{"format", "model", "parameters", "diagnostics"}));
    BOOST_TEST(doc.at("format").as_string() == "ppb.fit/1");
    BOOST_TEST(doc.at("model").at("name").as_string() == "dryrun-lsq");
    BOOST_TEST(doc.at("model").at("version").as_string() == "1.2.3");
    BOOST_TEST((keys(doc.at("model").as_object()) == std::vector<std::string>{"name", "version"}));

    const json::object& p = doc.at("parameters").as_object();
    BOOST_TEST((keys(p) == std::vector<std::string>{"const_mb", "head_mb", "tail_mb",
                                                    "param_per_layer_mb", "activation_mb"}));
    BOOST_TEST(p.at("const_mb").as_double() == 2048.0);
    BOOST_TEST(p.at("tail_mb").as_int64() == 3746);
    BOOST_TEST(p.at("param_per_layer_mb").is_null());
    // Kinds in their canonical order, whatever the plugin's order.
    const json::object& a = p.at("activation_mb").as_object();
    BOOST_TEST((keys(a) == std::vector<std::string>{"none", "select", "comm", "both", "full"}));
    BOOST_TEST(a.at("none").as_double() == 994.5);
    BOOST_TEST(a.at("comm").is_null());

    // Diagnostics are copied as they are.
    const json::value expected_diagnostics =
        json::parse("{" + good_diagnostics + "}").at("diagnostics");
    BOOST_TEST((doc.at("diagnostics") == expected_diagnostics));
}

BOOST_AUTO_TEST_CASE(further_parameters_are_kept_after_the_standard_ones) {
    const std::string parameters =
        R"("parameters": {"vocab_mb": 12.5, "const_mb": null, "head_mb": null, "tail_mb": null,
                          "param_per_layer_mb": 1,
                          "activation_mb": {"none": null, "select": null, "comm": null,
                                            "both": null, "full": null}})";
    const json::object doc =
        make_fit_document("m", "0.1.0", report(parameters, R"("diagnostics": {})"));
    const json::object& p = doc.at("parameters").as_object();
    BOOST_TEST(
        (keys(p) == std::vector<std::string>{"const_mb", "head_mb", "tail_mb", "param_per_layer_mb",
                                             "activation_mb", "vocab_mb"}));
    BOOST_TEST(doc.at("diagnostics").as_object().empty());
}

BOOST_AUTO_TEST_CASE(malformed_reports) {
    check_refused("", "line 1, column 1: malformed JSON: the input is empty");
    check_refused("{\"parameters\": ", "line 1, column 16: malformed JSON");
    check_refused("[]", "expected a JSON object, got an empty array");
    check_refused(report(good_parameters, good_diagnostics) + "x",
                  "malformed JSON: unexpected text after the JSON document");
    check_refused(R"({"parameters": {}, "parameters": {}})", "duplicate field 'parameters'");
}

BOOST_AUTO_TEST_CASE(missing_or_wrong_members) {
    check_refused("{" + good_diagnostics + "}", "missing required field 'parameters'");
    check_refused("{" + good_parameters + "}", "missing required field 'diagnostics'");
    check_refused("{" + good_parameters + R"(, "diagnostics": []})",
                  "diagnostics: expected an object, got an empty array");
    check_refused(R"({"parameters": 1, "diagnostics": {}})",
                  "parameters: expected an object, got 1");
    check_refused(report(good_parameters, good_diagnostics).insert(1, R"("extra": 1, )"),
                  "unknown field 'extra' (expected one of: parameters, diagnostics)");
    const auto with = [&](std::string from, const std::string& to) {
        std::string parameters = good_parameters;
        parameters.replace(parameters.find(from), from.size(), to);
        return report(parameters, good_diagnostics);
    };
    check_refused(with(R"("head_mb": 7188.0,)", ""),
                  "parameters: missing required field 'head_mb'");
    check_refused(with("2048.0", "\"2048\""),
                  "parameters.const_mb: expected a number or null, got \"2048\"");
    check_refused(with("3746", "true"), "parameters.tail_mb: expected a number or null, got true");
    check_refused(with(R"("comm": null,)", ""),
                  "parameters.activation_mb: missing required field 'comm'");
    check_refused(with(R"("comm": null)", R"("comm": {})"),
                  "parameters.activation_mb.comm: expected a number or null, got an empty object");
    check_refused(with(R"("comm": null)", R"("com": null)"),
                  "parameters.activation_mb: unknown recompute kind 'com' (did you mean 'comm'?");
    check_refused(with(R"("comm": null)", R"("comm": null, "attention": 1)"),
                  "parameters.activation_mb: unknown recompute kind 'attention'");
    check_refused(with(R"({"select")", R"([])"), "malformed JSON");
}

BOOST_AUTO_TEST_CASE(non_finite_numbers_anywhere) {
    check_refused(report(good_parameters, R"("diagnostics": {"rms_residual_mb": 1e999})"),
                  "diagnostics.rms_residual_mb: number out of range: 1e999");
    check_refused(report(good_parameters, R"("diagnostics": {"std_errors_mb": [1, -1e309]})"),
                  "diagnostics.std_errors_mb[1]: number out of range");
    std::string parameters = good_parameters;
    parameters.replace(parameters.find("994.5"), 5, "1e400");
    check_refused(report(parameters, good_diagnostics),
                  "parameters.activation_mb.none: number out of range");
    check_refused(report(good_parameters, R"("diagnostics": {"x": NaN})"), "malformed JSON");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fit_format_tests
