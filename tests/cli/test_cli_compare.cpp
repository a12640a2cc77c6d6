// ppb compare and ppb fit --export-sapp, end to end.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_compare_tests {

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_compare)

BOOST_AUTO_TEST_CASE(errors_are_prediction_minus_measurement) {
    const auto r = ppb({"compare", sample_dryrun, "--model", "dryrun-lsq", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.compare/1");
    const auto& placements = doc.at("placements").as_array();
    BOOST_TEST_REQUIRE(placements.size() == 13u);
    double sum_abs = 0.0;
    double max_abs = 0.0;
    for (const auto& p : placements) {
        const double measured = p.at("measured_mb").to_number<double>();
        const auto& pr = p.at("predictions").at(0).as_object();
        const double predicted = pr.at("memory_mb").to_number<double>();
        BOOST_TEST(pr.at("error_mb").to_number<double>() == predicted - measured,
                   boost::test_tools::tolerance(1e-9));
        BOOST_TEST(
            pr.at("error_percent").to_number<double>() == 100.0 * (predicted - measured) / measured,
            boost::test_tools::tolerance(1e-9));
        sum_abs += std::abs(predicted - measured);
        max_abs = std::max(max_abs, std::abs(predicted - measured));
    }
    const auto& summary = doc.at("summary").at(0).as_object();
    BOOST_TEST(summary.at("count").to_number<int>() == 13);
    BOOST_TEST(summary.at("mean_abs_error_mb").to_number<double>() == sum_abs / 13,
               boost::test_tools::tolerance(1e-9));
    BOOST_TEST(summary.at("max_abs_error_mb").to_number<double>() == max_abs,
               boost::test_tools::tolerance(1e-9));

    const auto table = ppb({"compare", sample_dryrun, "--model", "dryrun-lsq"});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    for (const char* part : {"MEASURED", "[1] PREDICTED", "ERROR", "Error against the measurements",
                             "MEAN |ERROR| %"}) {
        BOOST_TEST(table.out.find(part) != std::string::npos, part << " in\n" << table.out);
    }
}

BOOST_AUTO_TEST_CASE(plans_are_compared_without_measurements) {
    const auto plan =
        ppb({"partition", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--stages", "8",
             "--micro-batches", "32", "--memory-limit-mb", "30000", "--json"});
    BOOST_TEST_REQUIRE(plan.exit_code == 0, plan.err);
    const std::string plan_file = write_file(plan.out, "plan.json");
    const auto r = ppb(
        {"compare", sample_dryrun, "--partition", plan_file, "--model", "dryrun-lsq", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    const auto& placements = doc.at("placements").as_array();
    BOOST_TEST_REQUIRE(placements.size() == 13u + 8u);
    const auto plan_doc = parse_json(plan.out).as_object();
    for (std::size_t s = 0; s < 8; ++s) {
        const auto& p = placements[13 + s].as_object();
        BOOST_TEST(p.at("label").as_string() == "plan");
        BOOST_TEST(p.at("measured_mb").is_null());
        // The plan's own memory is what the same model predicts for it.
        BOOST_TEST(p.at("predictions").at(0).at("memory_mb").to_number<double>() ==
                       plan_doc.at("stages").at(s).at("memory_mb").to_number<double>(),
                   boost::test_tools::tolerance(1e-9));
    }
    expect_input_error(ppb({"compare", "--partition", sample_dryrun, "--model", "dryrun-lsq"}),
                       {"format", "ppb.partition/1"});
}

// A saved plan edited by hand, or cut short, is refused naming the member: the placements
// compared are exactly the plan's stages or nothing (ppb/partition/plan_reader.hpp).
BOOST_AUTO_TEST_CASE(broken_plans_are_refused_by_member) {
    const auto plan =
        ppb({"partition", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--stages", "8",
             "--micro-batches", "32", "--memory-limit-mb", "30000", "--json"});
    BOOST_TEST_REQUIRE(plan.exit_code == 0, plan.err);
    const json::object good = parse_json(plan.out).as_object();
    const auto compare_edited = [&](const std::function<void(json::object&)>& edit) {
        json::object doc = good;
        edit(doc);
        return ppb({"compare", sample_dryrun, "--partition",
                    write_file(json::serialize(doc), "edited.json"), "--model", "dryrun-lsq"});
    };
    const auto stage = [](json::object& doc, std::size_t s) -> json::object& {
        return doc.at("stages").as_array().at(s).as_object();
    };
    // What a stage holds is its chunks' (one under 1F1B); the stage's own totals are for people.
    const auto first_chunk = [&](json::object& doc, std::size_t s) -> json::object& {
        return stage(doc, s).at("chunks").as_array().at(0).as_object();
    };
    expect_input_error(
        compare_edited([&](json::object& d) { stage(d, 7)["stage"] = 8; }),
        {"edited.json", "stages[7].stage", "not a stage of this pipeline (num_stages is 8)"});
    expect_input_error(compare_edited([&](json::object& d) {
                           first_chunk(d, 0)["layers"].as_object()["none"] = -1;
                       }),
                       {"stages[0].chunks[0].layers.none", "layers"});
    expect_input_error(compare_edited([&](json::object& d) { first_chunk(d, 1)["in_flight"] = 0; }),
                       {"stages[1].chunks[0].in_flight", "micro-batches"});
    expect_input_error(compare_edited([&](json::object& d) {
                           first_chunk(d, 2)["layers"].as_object()["fulll"] = 1;
                       }),
                       {"stages[2].chunks[0].layers.fulll", "unknown recompute kind"});
    expect_input_error(compare_edited([&](json::object& d) { d["stages"] = json::array(); }),
                       {"stages", "at least one stage"});
    expect_input_error(compare_edited([&](json::object& d) { d["num_stages"] = 0; }),
                       {"num_stages", "stages"});
    expect_input_error(compare_edited([&](json::object& d) { d["schedule"] = "zb-h3"; }),
                       {"schedule", "unknown schedule"});
    // A stage given as two chunks under 1F1B: its schedule runs one chunk per stage.
    expect_input_error(
        compare_edited([&](json::object& d) {
            json::object& s = stage(d, 0);
            const json::object chunk{{"layers", s.at("layers")}, {"in_flight", s.at("in_flight")}};
            s["chunks"] = json::array{chunk, chunk};
        }),
        {"micro_batches"});
}

BOOST_AUTO_TEST_CASE(cross_validation_holds_each_config_out) {
    // Three dry runs of a 4-stage pipeline; each pair of them determines the model.
    const std::string file =
        write_file(R"({"format": "ppb.dryrun/1", "num_stages": 4, "micro_batches": 8,
      "observations": [
        {"config": "A", "stage": 0, "layers": {"none": 2}, "peak_memory_mb": 15000},
        {"config": "A", "stage": 1, "layers": {"none": 4}, "peak_memory_mb": 16200},
        {"config": "A", "stage": 2, "layers": {"none": 3}, "peak_memory_mb": 11600},
        {"config": "A", "stage": 3, "layers": {"none": 3}, "peak_memory_mb": 11100},
        {"config": "B", "stage": 0, "layers": {"none": 3}, "peak_memory_mb": 18400},
        {"config": "B", "stage": 1, "layers": {"none": 3}, "peak_memory_mb": 13200},
        {"config": "B", "stage": 2, "layers": {"none": 2}, "peak_memory_mb": 9200},
        {"config": "B", "stage": 3, "layers": {"none": 4}, "peak_memory_mb": 12900},
        {"config": "C", "stage": 0, "layers": {"none": 1}, "peak_memory_mb": 11600},
        {"config": "C", "stage": 1, "layers": {"none": 5}, "peak_memory_mb": 19200},
        {"config": "C", "stage": 2, "layers": {"none": 4}, "peak_memory_mb": 14000},
        {"config": "C", "stage": 3, "layers": {"none": 2}, "peak_memory_mb": 9300}]})");
    const auto in_sample =
        parse_json(ppb({"compare", file, "--model", "dryrun-lsq", "--json"}).out);
    const auto r = ppb({"compare", file, "--model", "dryrun-lsq", "--cross-validate", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("cross_validated").as_bool());
    std::size_t predicted = 0;
    for (const auto& p : doc.at("placements").as_array()) {
        if (!p.at("predictions").at(0).at("memory_mb").is_null())
            ++predicted;
    }
    BOOST_TEST(predicted == 12u);
    // Predicting data the fit has not seen is never more accurate than predicting what it saw.
    BOOST_TEST(doc.at("summary").at(0).at("rms_error_mb").to_number<double>() >=
               in_sample.at("summary").at(0).at("rms_error_mb").to_number<double>());
}

BOOST_AUTO_TEST_CASE(exported_fit_read_by_the_table_model_predicts_exactly_the_same) {
    const std::string exported = write_file("", "roundtrip.json");
    BOOST_TEST_REQUIRE(ppb({"fit", sample_dryrun, "--export-sapp", exported}).exit_code == 0);
    const auto r = ppb({"compare", sample_dryrun, "--model", "dryrun-lsq", "--model",
                        "table=" + exported, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out);
    for (const auto& p : doc.at("placements").as_array()) {
        const auto& pr = p.at("predictions").as_array();
        // Bit for bit: the same coefficients, summed in the same order.
        BOOST_TEST(pr[0].at("memory_mb").as_double() == pr[1].at("memory_mb").as_double());
    }
    // The same partition command with each model: dryrun-lsq, its export through table, analytic.
    const std::vector<std::string> common = {
        "partition",       "--model-desc", layers_file,         "--stages", "8",
        "--micro-batches", "32",           "--memory-limit-mb", "30000",    "--json"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = common;
        args.insert(args.end(), extra.begin(), extra.end());
        return ppb(args);
    };
    const auto lsq = with({"--model", "dryrun-lsq", "--dryrun", sample_dryrun});
    const auto table = with({"--model", "table", "--model-options", exported});
    const auto analytic = with({"--model", "analytic", "--model-options",
                                std::string(PPB_SAMPLES_DIR) + "/llama70b-shape.json"});
    for (const auto* run : {&lsq, &table, &analytic})
        BOOST_TEST_REQUIRE(run->exit_code == 0, run->err);
    // Same coefficients, same plan.
    BOOST_TEST(parse_json(lsq.out).at("stages") == parse_json(table.out).at("stages"));
    BOOST_TEST(parse_json(analytic.out).at("model").at("name").as_string() == "analytic");
}

BOOST_AUTO_TEST_CASE(compare_usage_errors) {
    expect_input_error(ppb({"compare", sample_dryrun}),
                       {"--model is required", "ppb compare --help"});
    expect_input_error(ppb({"compare", "--model", "dryrun-lsq"}),
                       {"dry-run FILE and/or --partition"});
    expect_input_error(ppb({"compare", sample_dryrun, "--model", "dryrun-lsq@x"}),
                       {"MAJOR.MINOR.PATCH"});
    expect_input_error(ppb({"compare", sample_dryrun, "--model", "dryrun-lsq={bad"}),
                       {"options are not valid JSON"});
    expect_input_error(ppb({"compare", sample_dryrun, "--model", "dryrun-lsq=/nonexistent.json"}),
                       {"neither a JSON object nor a readable file"});
    expect_failure(ppb({"compare", sample_dryrun, "--model", "nothing-like-this"}), 3,
                   {"no memory-model plugin named 'nothing-like-this'"});
}

BOOST_AUTO_TEST_CASE(export_sapp_writes_the_fit_as_a_layer_file) {
    const std::string out_file = write_file("", "exported.json");
    auto r = ppb({"fit", sample_dryrun, "--json", "--export-sapp", out_file});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.find("wrote the fit as a SAPP layer file") != std::string::npos, r.err);
    const auto params = parse_json(r.out).at("parameters").as_object();
    const auto layers = parse_json(slurp(out_file)).as_object();
    BOOST_TEST(layers.at("stage_const_mem").to_number<double>() ==
               params.at("const_mb").to_number<double>());
    const auto& entries = layers.at("layers_description").as_array();
    BOOST_TEST_REQUIRE(entries.size() == 3u);
    BOOST_TEST(entries[0].at("type").as_string() == "HEAD");
    BOOST_TEST(entries[0].at("memory_parameter").to_number<double>() ==
               params.at("head_mb").to_number<double>());
    BOOST_TEST(entries[2].at("memory_parameter").to_number<double>() ==
               params.at("tail_mb").to_number<double>());
    const auto& body = entries[1].as_object();
    BOOST_TEST(body.at("nb_layer").to_number<int>() == 80);  // dry run A measured all 8 stages
    BOOST_TEST(body.at("memory_parameter").to_number<double>() ==
               params.at("param_per_layer_mb").to_number<double>());
    BOOST_TEST(body.at("memory_activation").to_number<double>() ==
               params.at("activation_mb").at("none").to_number<double>());
    BOOST_TEST(body.at("memory_recompute").to_number<double>() ==
               params.at("activation_mb").at("full").to_number<double>());
    BOOST_TEST(!body.contains("memory_both_comm_select"));  // 'both' was never observed

    // Into the user's own layer file: its names and times stay.
    const std::string into = write_file("", "exported-into.json");
    r = ppb({"fit", sample_dryrun, "--export-sapp", into, "--model-desc", layers_file});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto merged = parse_json(slurp(into)).as_object();
    BOOST_TEST(merged.at("layers_description").at(1).at("name").as_string() == "decoder");
    BOOST_TEST(merged.at("layers_description").at(1).at("time").to_number<double>() == 10.0);
    BOOST_TEST(merged.at("layers_description").at(1).at("memory_parameter").to_number<double>() ==
               params.at("param_per_layer_mb").to_number<double>());

    expect_input_error(ppb({"fit", sample_dryrun, "--export-sapp", "-"}), {"give a file name"});
    expect_input_error(ppb({"fit", sample_dryrun, "--model-desc", layers_file}),
                       {"--model-desc requires --export-sapp"});
    // Head memory undetermined: the layer file cannot be written, and nothing is printed.
    const std::string partial =
        write_file(R"({"format": "ppb.dryrun/1", "num_stages": 4, "micro_batches": 8,
      "observations": [
        {"stage": 1, "layers": {"none": 5}, "peak_memory_mb": 26000},
        {"stage": 2, "layers": {"none": 6}, "peak_memory_mb": 26500},
        {"stage": 3, "layers": {"none": 4}, "peak_memory_mb": 22000},
        {"stage": 1, "layers": {"none": 3}, "peak_memory_mb": 18000}]})");
    expect_input_error(ppb({"fit", partial, "--export-sapp", write_file("", "never.json")}),
                       {"head_mb is not determined"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_compare_tests
