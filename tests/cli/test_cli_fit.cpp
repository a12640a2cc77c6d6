// ppb fit and ppb predict on the bundled sample and on made-up data with known truth.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <fstream>
#include <iterator>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_fit_tests {

namespace {

// The coefficients the sample was generated from (samples/data/README.md), plus noise of 25 MB.
const std::map<std::string, double> sample_truth = {
    {"const_mb", 3072},           {"head_mb", 4210},           {"tail_mb", 5630},
    {"param_per_layer_mb", 1710}, {"activation_mb.none", 820}, {"activation_mb.select", 142},
    {"activation_mb.comm", 690},  {"activation_mb.full", 16}};

double param(const json::object& params, const std::string& name) {
    if (name.rfind("activation_mb.", 0) == 0) {
        return params.at("activation_mb").at(name.substr(14)).to_number<double>();
    }
    return params.at(name).to_number<double>();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_fit)

BOOST_AUTO_TEST_CASE(fit_sample_json_recovers_the_generating_coefficients) {
    const auto r = ppb({"fit", sample_dryrun, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.empty(), r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.fit/1");
    BOOST_TEST(doc.at("model").at("name").as_string() == "dryrun-lsq");
    BOOST_TEST(doc.at("model").at("version").as_string() == "1.0.0");
    const auto& params = doc.at("parameters").as_object();
    const auto& diag = doc.at("diagnostics").as_object();
    BOOST_TEST(params.at("activation_mb").at("both").is_null());  // never observed
    BOOST_TEST(diag.at("rows").to_number<int>() == 13);
    BOOST_TEST(diag.at("rank").to_number<int>() == 8);
    BOOST_TEST(diag.at("residuals_mb").as_array().size() == 13u);
    const auto& se = diag.at("std_errors_mb").as_object();
    for (const auto& [name, truth] : sample_truth) {
        const double estimate = param(params, name);
        const double error = se.at(name).to_number<double>();
        BOOST_TEST(error > 0.0, name);
        BOOST_TEST(std::abs(estimate - truth) < 5 * error,
                   name << ": " << estimate << " vs " << truth << " ± " << error);
    }
}

BOOST_AUTO_TEST_CASE(fit_sample_table_is_for_people) {
    const auto r = ppb({"fit", sample_dryrun});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.empty(), r.err);
    for (const char* part :
         {"Memory model dryrun-lsq 1.0.0 fitted to 13 observations", "const_mb",
          "constant per stage", " MB", "± ", "activation_mb.both", "not considered: never observed",
          "rank 8 of 8 unknowns from 13 observations"}) {
        BOOST_TEST(r.out.find(part) != std::string::npos, "missing '" << part << "' in\n" << r.out);
    }
    BOOST_TEST(r.out.find("nan") == std::string::npos);
    BOOST_TEST(r.out.find("inf") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(fit_reads_standard_input) {
    std::ifstream in(sample_dryrun);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto r = ppb({"fit", "-", "--json"}, {}, text);
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(parse_json(r.out).at("format").as_string() == "ppb.fit/1");
}

BOOST_AUTO_TEST_CASE(predict_matches_the_linear_model_of_the_fit) {
    auto r = ppb({"fit", sample_dryrun, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto params = parse_json(r.out).at("parameters").as_object();
    // Stage 2 of 8 with 9 'select' and 1 'full' layers; 1F1B in-flight min(8 - 2, 32) = 6.
    const double expected =
        param(params, "const_mb") + 10 * param(params, "param_per_layer_mb") +
        6 * (9 * param(params, "activation_mb.select") + 1 * param(params, "activation_mb.full"));
    r = ppb({"predict", sample_dryrun, "--stage", "2", "--layers", "select=9,full=1", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.prediction/1");
    BOOST_TEST(doc.at("placement").at("in_flight").to_number<int>() == 6);
    BOOST_TEST(doc.at("peak_memory_mb").to_number<double>() == expected,
               boost::test_tools::tolerance(1e-9));
    // 13 observations for 8 unknowns: the prediction has a standard error, small against the
    // 25 MB noise of the sample.
    const double se = doc.at("std_error_mb").to_number<double>();
    BOOST_TEST(se > 0.0);
    BOOST_TEST(se < 50.0);

    // --micro-batches caps the in-flight count; --in-flight overrides it.
    r = ppb({"predict", sample_dryrun, "--stage", "2", "--layers", "select=9,full=1",
             "--micro-batches", "4", "--json"});
    BOOST_TEST(parse_json(r.out).at("placement").at("in_flight").to_number<int>() == 4);
    r = ppb({"predict", sample_dryrun, "--stage", "2", "--layers", "select=9,full=1", "--in-flight",
             "3", "--json"});
    BOOST_TEST(parse_json(r.out).at("placement").at("in_flight").to_number<int>() == 3);

    r = ppb({"predict", sample_dryrun, "--stage", "2", "--layers", "select=9,full=1"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.out.find("Stage 2 of 8 with 10 body layers (9 select, 1 full), 6 micro-batches "
                          "in flight") != std::string::npos,
               r.out);
    BOOST_TEST(r.out.find(" MB") != std::string::npos);
    BOOST_TEST(r.out.find("(one standard error)") != std::string::npos, r.out);
}

BOOST_AUTO_TEST_CASE(partially_identified_fit_succeeds_and_says_what_is_missing) {
    // 'select' only ever appears on stage 0, where it cannot be told from the head's memory.
    const std::string file = write_file(R"({
      "format": "ppb.dryrun/1", "num_stages": 4, "micro_batches": 8,
      "observations": [
        {"stage": 0, "layers": {"none": 2, "select": 2}, "peak_memory_mb": 30000},
        {"stage": 1, "layers": {"none": 5}, "peak_memory_mb": 26000},
        {"stage": 2, "layers": {"none": 6}, "peak_memory_mb": 26500},
        {"stage": 3, "layers": {"none": 4}, "peak_memory_mb": 22000},
        {"stage": 1, "layers": {"none": 3}, "peak_memory_mb": 18000}
      ]})");
    auto r = ppb({"fit", file, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("parameters").at("head_mb").is_null());
    BOOST_TEST(doc.at("parameters").at("activation_mb").at("select").is_null());
    BOOST_TEST(!doc.at("parameters").at("param_per_layer_mb").is_null());
    BOOST_TEST(doc.at("diagnostics").at("not_identifiable").as_array().size() >= 2u);

    r = ppb({"fit", file});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.out.find("Not identifiable from these observations") != std::string::npos, r.out);

    // A body stage is predictable; stage 0 needs the head's memory, which is unknown: exit 2.
    r = ppb({"predict", file, "--stage", "1", "--layers", "none=4"});
    BOOST_TEST(r.exit_code == 0, r.err);
    expect_input_error(ppb({"predict", file, "--stage", "0", "--layers", "none=4"}), {"head_mb"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_fit_tests
