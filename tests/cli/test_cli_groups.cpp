// ppb fit and ppb predict with groups of body layers: the ppb.dryrun/3 sample of a DeepSeek-like
// model (3 dense then 12 MoE layers), generated from known coefficients (its "comment").
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_groups_tests {

namespace {

const std::string moe_dryrun = std::string(PPB_SAMPLES_DIR) + "/moe/deepseek-like-pp4-dryrun.json";

double number_at(const json::value& v) {
    return v.to_number<double>();
}

bool close(double actual, double expected) {
    return std::abs(actual - expected) <= 1e-6 * std::abs(expected);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_groups)

BOOST_AUTO_TEST_CASE(fit_recovers_each_groups_coefficients) {
    const auto r = ppb({"fit", moe_dryrun, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.empty(), r.err);
    const auto doc = parse_json(r.out).as_object();
    const auto& params = doc.at("parameters").as_object();
    BOOST_TEST(close(number_at(params.at("const_mb")), 3100.0));
    BOOST_TEST(close(number_at(params.at("head_mb")), 4650.0));
    BOOST_TEST(close(number_at(params.at("tail_mb")), 5320.0));
    const auto& dense = params.at("groups").at("dense").as_object();
    const auto& moe = params.at("groups").at("moe").as_object();
    BOOST_TEST(close(number_at(dense.at("param_per_layer_mb")), 1210.0));
    BOOST_TEST(close(number_at(dense.at("activation_mb").at("none")), 702.0));
    BOOST_TEST(dense.at("activation_mb").at("full").is_null());  // no dense layer recomputed
    BOOST_TEST(close(number_at(moe.at("param_per_layer_mb")), 8640.0));
    BOOST_TEST(close(number_at(moe.at("activation_mb").at("none")), 1530.0));
    BOOST_TEST(close(number_at(moe.at("activation_mb").at("full")), 60.0));
    const auto& diag = doc.at("diagnostics").as_object();
    BOOST_TEST(diag.at("rows").to_number<int>() == 14);
    BOOST_TEST(diag.at("rank").to_number<int>() == 8);
    BOOST_TEST(diag.at("not_identifiable").as_array().empty());
    BOOST_TEST(diag.at("groups").as_array().at(1).as_string() == "moe");
}

BOOST_AUTO_TEST_CASE(fit_table_lists_each_groups_coefficients) {
    const auto r = ppb({"fit", moe_dryrun});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    for (const std::string part :
         {"param_per_layer_mb[dense]", "per 'dense' layer", "param_per_layer_mb[moe]",
          "activation_mb.full[moe]", "per 'moe' full layer and in-flight micro-batch",
          "activation_mb.select[moe]", "not considered: never observed", "head_mb",
          "rank 8 of 8 unknowns from 14 observations"}) {
        BOOST_TEST(r.out.find(part) != std::string::npos, part << " in:\n" << r.out);
    }
    BOOST_TEST(r.out.find("\nparam_per_layer_mb ") == std::string::npos, r.out);
}

BOOST_AUTO_TEST_CASE(predict_takes_layers_per_group) {
    // Stage 1 of 4 with 8 micro-batches (3 in flight), 1 dense and 3 MoE layers:
    // 3100 + 1210 + 3 * 702 + 3 * 8640 + 3 * 3 * 1530 = 46106 MB.
    const auto r = ppb({"predict", moe_dryrun, "--stage", "1", "--stages", "4", "--micro-batches",
                        "8", "--layers", "dense.none=1,moe.none=3", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(close(number_at(doc.at("peak_memory_mb")), 46106.0));
    const auto& layers = doc.at("placement").at("layers").as_object();
    BOOST_TEST(layers.at("dense").at("none").to_number<int>() == 1);
    BOOST_TEST(layers.at("moe").at("none").to_number<int>() == 3);
    BOOST_TEST(doc.at("placement").at("in_flight").to_number<int>() == 3);

    // Text; full recompute of MoE layers, and --chunk per group for an interleaved stage.
    const auto text = ppb({"predict", moe_dryrun, "--stage", "2", "--stages", "4",
                           "--micro-batches", "8", "--layers", "moe.full=4"});
    BOOST_TEST_REQUIRE(text.exit_code == 0, text.err);
    // 3100 + 4 * 8640 + 2 * 4 * 60 = 38140 MB
    BOOST_TEST(text.out.find("moe: 4 full") != std::string::npos, text.out);
    const auto chunks = ppb({"predict", moe_dryrun, "--stage", "1", "--stages", "2",
                             "--micro-batches", "8", "--schedule", "interleaved", "--chunk",
                             "dense.none=1,moe.none=1", "--chunk", "moe.full=2", "--json"});
    BOOST_TEST_REQUIRE(chunks.exit_code == 0, chunks.err);
    const auto chunk_doc = parse_json(chunks.out).as_object();
    const auto& list = chunk_doc.at("placement").at("chunks").as_array();
    BOOST_TEST_REQUIRE(list.size() == 2u);
    const double f0 = number_at(list.at(0).at("in_flight"));
    const double f1 = number_at(list.at(1).at("in_flight"));
    const double expected =
        3100.0 + 5320.0 + 1210.0 + 702.0 * f0 + 8640.0 + 1530.0 * f0 + 2 * 8640.0 + 2 * 60.0 * f1;
    BOOST_TEST(close(number_at(chunk_doc.at("peak_memory_mb")), expected));
}

BOOST_AUTO_TEST_CASE(predict_refuses_layers_without_a_known_group) {
    expect_input_error(ppb({"predict", moe_dryrun, "--stage", "1", "--layers", "none=4"}),
                       {"--layers: 'none=4' does not say its group, but the memory model "
                        "distinguishes 2 groups of body layers (dense, moe): give GROUP.KIND=N, "
                        "e.g. moe.none=4"});
    expect_input_error(ppb({"predict", moe_dryrun, "--stage", "1", "--layers", "mo.none=4"}),
                       {"--layers: unknown group 'mo' in 'mo.none=4' (did you mean 'moe'? the "
                        "model's groups are: dense, moe)"});
    expect_input_error(
        ppb({"predict", moe_dryrun, "--stage", "1", "--layers", "moe.none=1,moe.none=2"}),
        {"--layers (group 'moe'): kind 'none' is given twice"});
}

BOOST_AUTO_TEST_CASE(predict_refuses_what_the_groups_data_do_not_determine) {
    // No MoE layer was ever observed with selective recompute.
    const auto r = ppb({"predict", moe_dryrun, "--stage", "1", "--layers", "moe.select=2"});
    BOOST_TEST(r.exit_code == 2, r.err);
    BOOST_TEST(r.err.find("activation_mb.select[moe] was never observed: no observation holds "
                          "select layers of group 'moe'") != std::string::npos,
               r.err);
}

BOOST_AUTO_TEST_CASE(a_plugin_too_old_for_groups_is_an_input_error) {
    expect_input_error(
        ppb({"fit", moe_dryrun, "--model", "older-api", "--plugin-path", fixture_dir}),
        {"deepseek-like-pp4-dryrun.json: memory model 'older-api' 1.0.0 is built "
         "for plugin API 1.0, which knows one group of body layers; layers counted "
         "per group (2 groups: dense, moe) need a plugin built for API 1.3 or "
         "newer"});
}

BOOST_AUTO_TEST_CASE(export_sapp_of_several_groups_is_refused) {
    const std::string out = write_file("", "groups-layers.json");
    expect_input_error(ppb({"fit", moe_dryrun, "--export-sapp", out}),
                       {"--export-sapp:", "counts layers in 2 groups (dense, moe)",
                        "one BODY entry per group with its number of layers (nb_layer)"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_groups_tests
