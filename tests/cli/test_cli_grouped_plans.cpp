// ppb partition with several groups of body layers (a dense + MoE layer file), end to end through
// a plugin of two groups loaded from disk: each stage a contiguous range of the layer sequence,
// its layers per group, the memory the model's groups give, and the refusals of models that do
// not know the file's groups.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <string>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_grouped_plans_tests {

namespace {

// embedding, 2 dense layers, 6 MoE layers, LM head (times in the file's unit).
std::string layer_file(const std::string& moe_name = "moe") {
    return write_file(R"({"layers_description": [
        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 3},
        {"name": "dense", "type": "BODY", "nb_layer": 2, "time": 4},
        {"name": ")" + moe_name +
                          R"(", "type": "BODY", "nb_layer": 6, "time": 10},
        {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 3}]})",
                      "dense-moe-" + moe_name + ".json");
}

std::vector<std::string> partition_args(const std::string& file,
                                        std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "partition", "--model-desc", file, "--model",         "two-groups", "--plugin-path",
        fixture_dir, "--stages",     "4",  "--micro-batches", "8",          "--memory-limit-mb",
        "1200"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// The fixture's memory of a stage (tests/plugins/fixtures/two_groups.cpp), written out.
double fixture_memory(std::uint32_t stage, std::uint32_t stages, std::uint32_t in_flight,
                      const json::object& groups) {
    const auto count = [&](const char* group, const char* kind) {
        const auto* g = groups.if_contains(group);
        return g == nullptr ? 0.0 : static_cast<double>(g->as_object().at(kind).as_int64());
    };
    double m = 100.0 + (stage == 0 ? 40.0 : 0.0) + (stage + 1 == stages ? 30.0 : 0.0);
    m += (count("dense", "none") + count("dense", "full")) * 10.0 +
         (count("dense", "none") * 5.0 + count("dense", "full") * 1.0) * in_flight;
    m += (count("moe", "none") + count("moe", "full")) * 50.0 +
         (count("moe", "none") * 20.0 + count("moe", "full") * 2.0) * in_flight;
    return m;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_grouped_plans)

BOOST_AUTO_TEST_CASE(a_dense_and_moe_model_plans_in_model_order) {
    const std::string file = layer_file();
    const auto r = ppb(partition_args(file, {"--json"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("num_layers").as_int64() == 8);
    const auto& groups = doc.at("groups").as_array();
    BOOST_TEST_REQUIRE(groups.size() == 2u);
    BOOST_TEST(groups[0].at("name").as_string() == "dense");
    BOOST_TEST(groups[1].at("layers").as_int64() == 6);
    std::int64_t next = 0;
    double largest = 0.0;
    for (const auto& value : doc.at("stages").as_array()) {
        const auto& stage = value.as_object();
        const auto s = static_cast<std::uint32_t>(stage.at("stage").as_int64());
        const auto& per_group = stage.at("groups").as_object();
        std::int64_t layers = 0;
        for (const auto& kind : stage.at("layers").as_object())
            layers += kind.value().as_int64();
        BOOST_TEST(stage.at("first_layer").as_int64() == next);
        BOOST_TEST(stage.at("last_layer").as_int64() == next + layers - 1);
        // The layers of each group are those of the stage's range: dense 0-1, moe 2-7.
        std::int64_t dense = 0;
        for (std::int64_t i = next; i < next + layers; ++i)
            dense += i < 2 ? 1 : 0;
        std::int64_t dense_planned = 0;
        for (const auto& kind : per_group.at("dense").as_object())
            dense_planned += kind.value().as_int64();
        BOOST_TEST(dense_planned == dense);
        const auto f = static_cast<std::uint32_t>(stage.at("in_flight").as_int64());
        BOOST_TEST(stage.at("memory_mb").as_double() == fixture_memory(s, 4, f, per_group));
        BOOST_TEST(stage.at("memory_mb").as_double() <= 1200.0);
        largest = std::max(largest, stage.at("memory_mb").as_double());
        next += layers;
    }
    BOOST_TEST(next == 8);
    // MindFormers' counts (by position in the stage) rebuild the plan under the default rule.
    BOOST_TEST(doc.at("recompute_rule").as_string() == "mindformers");
    BOOST_TEST(doc.at("mindformers").is_object());

    // The human table names each stage's range and groups.
    const auto human = ppb(partition_args(file));
    BOOST_TEST_REQUIRE(human.exit_code == 0, human.err);
    BOOST_TEST(human.out.find("8 (2 'dense', 6 'moe') layers over 4 stages") != std::string::npos,
               human.out);
    BOOST_TEST(human.out.find("RANGE") != std::string::npos, human.out);
    BOOST_TEST(human.out.find("GROUPS") != std::string::npos, human.out);
}

BOOST_AUTO_TEST_CASE(groups_the_model_does_not_know_exit_2) {
    // A group named otherwise than the model's.
    expect_input_error(ppb(partition_args(layer_file("mlp"))),
                       {"the layer file's group of body layers 'mlp' is not a group of the memory "
                        "model 'two-groups' 1.0.0 (its groups: 'dense', 'moe')"});
    // A plugin built for API 1.0 knows one group.
    auto old_args = partition_args(layer_file());
    old_args[4] = "older-api";
    old_args.insert(old_args.end(), {"--dryrun", sample_dryrun});
    expect_input_error(ppb(old_args), {"the layer file has 2 groups of body layers ('dense', "
                                       "'moe'), but the memory model 'older-api' 1.0.0 is built "
                                       "for plugin API 1.0, which knows one group"});
    // A fit of dry runs that do not count layers per group knows one group, 'body'.
    expect_input_error(
        ppb({"partition", "--model-desc", layer_file(), "--dryrun", sample_dryrun, "--stages", "4",
             "--memory-limit-mb", "60000"}),
        {"the layer file's group of body layers 'dense' is not a group of the memory model "
         "'dryrun-lsq'",
         "it knows one group: fit it to dry runs that count layers per group"});
    // Too little memory: the smallest limit that fits, in numbers.
    auto tight = partition_args(layer_file());
    tight.back() = "120";
    const auto r = ppb(tight);
    BOOST_TEST(r.exit_code == 4, r.err);
    BOOST_TEST(
        r.err.find("the smallest memory limit that would be feasible is") != std::string::npos,
        r.err);
}

BOOST_AUTO_TEST_SUITE_END()

// A dense + MoE model plans end to end with each of the three models on the bundled samples.
BOOST_AUTO_TEST_SUITE(cli_grouped_samples)

namespace {

const std::string moe_dir = std::string(PPB_SAMPLES_DIR) + "/moe";

// Every stage's range follows the last, its groups are those of its range (`dense` first, then
// `moe`), its memory within the limit; returns the stages.
json::array check_model_order(const ppb_test::ProcessResult& r, std::int64_t dense,
                              std::int64_t layers, double limit) {
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("num_layers").as_int64() == layers);
    std::int64_t next = 0;
    for (const auto& value : doc.at("stages").as_array()) {
        const auto& stage = value.as_object();
        std::int64_t n = 0;
        std::int64_t dense_planned = 0;
        for (const auto& [group, kinds] : stage.at("groups").as_object()) {
            for (const auto& kind : kinds.as_object()) {
                n += kind.value().as_int64();
                if (group == "dense")
                    dense_planned += kind.value().as_int64();
            }
        }
        BOOST_TEST(stage.at("first_layer").as_int64() == next);
        BOOST_TEST(dense_planned ==
                   std::max<std::int64_t>(0, std::min(dense, next + n) - std::min(dense, next)));
        BOOST_TEST(stage.at("memory_mb").as_double() <= limit);
        next += n;
    }
    BOOST_TEST(next == layers);
    return doc.at("stages").as_array();
}

}  // namespace

BOOST_AUTO_TEST_CASE(dryrun_lsq_fitted_to_grouped_dry_runs) {
    const auto r = ppb({"partition", "--model-desc", moe_dir + "/deepseek-like-layers.json",
                        "--dryrun", moe_dir + "/deepseek-like-pp4-dryrun.json", "--stages", "4",
                        "--micro-batches", "8", "--memory-limit-mb", "50000", "--json"});
    const auto stages = check_model_order(r, 3, 15, 50000.0);
    // Stage 0 holds the three dense layers and its memory is the fit's (the dry runs' true
    // coefficients, recovered exactly): 3100 + 4650 + dense 1210 + 702 f per 'none' layer, ...
    const auto& first = stages[0].as_object();
    const auto& groups = first.at("groups").as_object();
    const double f = static_cast<double>(first.at("in_flight").as_int64());
    const auto n = [&](const char* g, const char* k) {
        const auto* group = groups.if_contains(g);
        return group == nullptr ? 0.0 : static_cast<double>(group->as_object().at(k).as_int64());
    };
    const double expected = 3100 + 4650 + (n("dense", "none") + n("dense", "full")) * 1210 +
                            n("dense", "none") * 702 * f +
                            (n("moe", "none") + n("moe", "full")) * 8640 +
                            (n("moe", "none") * 1530 + n("moe", "full") * 60) * f;
    BOOST_TEST(std::abs(first.at("memory_mb").as_double() - expected) < 1e-6 * expected,
               first.at("memory_mb").as_double() << " vs " << expected);
}

BOOST_AUTO_TEST_CASE(table_model_of_the_layer_file) {
    const std::string file = moe_dir + "/deepseek-like-layers.json";
    const auto r =
        ppb({"partition", "--model-desc", file, "--model", "table", "--model-options", file,
             "--stages", "4", "--micro-batches", "8", "--memory-limit-mb", "80000", "--json"});
    const auto stages = check_model_order(r, 3, 15, 80000.0);
    // Stage 1, four 'moe' layers without recompute, 3 in flight: SAPP's formula by hand,
    // 2048 + 4 x 6144 + 4 x 896 x 3.
    const auto& second = stages[1].as_object();
    BOOST_TEST(second.at("in_flight").as_int64() == 3);
    BOOST_TEST(second.at("groups").at("moe").at("none").as_int64() == 4);
    BOOST_TEST(second.at("memory_mb").as_double() == 37376.0);
}

BOOST_AUTO_TEST_CASE(analytic_model_of_deepseek_v3) {
    const auto r =
        ppb({"partition", "--model-desc", moe_dir + "/deepseek-v3-layers.json", "--model",
             "analytic", "--model-options", moe_dir + "/deepseek-v3-shape.json", "--stages", "16",
             "--micro-batches", "64", "--memory-limit-mb", "76000", "--json"});
    const auto stages = check_model_order(r, 3, 61, 76000.0);
    BOOST_TEST(stages.size() == 16u);
    // The memory shown is the model's own prediction of the stage.
    const auto& first = stages[0].as_object();
    std::string layers;
    for (const auto& [group, kinds] : first.at("groups").as_object()) {
        for (const auto& kind : kinds.as_object()) {
            if (kind.value().as_int64() != 0) {
                layers += (layers.empty() ? "" : ",") + std::string(group) + "." +
                          std::string(kind.key()) + "=" + std::to_string(kind.value().as_int64());
            }
        }
    }
    const auto predicted = ppb({"predict", "--model", "analytic", "--model-options",
                                moe_dir + "/deepseek-v3-shape.json", "--stages", "16", "--stage",
                                "0", "--micro-batches", "64", "--layers", layers, "--json"});
    BOOST_TEST_REQUIRE(predicted.exit_code == 0, predicted.err);
    BOOST_TEST(parse_json(predicted.out).at("peak_memory_mb").as_double() ==
               first.at("memory_mb").as_double());
}

BOOST_AUTO_TEST_SUITE_END()

// ppb compare with layers counted per group: the dry runs of a ppb.dryrun/3 file and the stages of
// a grouped plan go to each model per group, in the model's own order of groups.
BOOST_AUTO_TEST_CASE(compare_predicts_grouped_dry_runs_and_plans) {
    const std::string moe = std::string(PPB_SAMPLES_DIR) + "/moe";
    const std::string layers = moe + "/deepseek-like-layers.json";
    const auto plan =
        ppb({"partition", "--model-desc", layers, "--model", "table", "--model-options", layers,
             "--stages", "4", "--micro-batches", "8", "--memory-limit-mb", "40000", "--json"});
    BOOST_TEST_REQUIRE(plan.exit_code == 0, plan.err);
    const std::string plan_file = write_file(plan.out, "grouped-plan.json");
    const auto r = ppb({"compare", moe + "/deepseek-like-pp4-dryrun.json", "--model", "dryrun-lsq",
                        "--model", "table=" + layers, "--partition", plan_file, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    const auto planned = parse_json(plan.out).at("stages").as_array();
    std::size_t plan_rows = 0;
    for (const auto& value : doc.at("placements").as_array()) {
        const auto& p = value.as_object();
        const auto& predictions = p.at("predictions").as_array();
        BOOST_TEST_REQUIRE(predictions.size() == 2u);
        // dryrun-lsq recovers the dry runs' coefficients exactly: it predicts what was measured.
        if (p.at("label").as_string() != "plan") {
            const double measured = p.at("measured_mb").as_double();
            BOOST_TEST(
                std::abs(predictions[0].at("memory_mb").as_double() - measured) < 1e-6 * measured,
                p);
            continue;
        }
        // The table model predicts each planned stage at the memory the plan states.
        const auto stage = static_cast<std::size_t>(p.at("stage").as_int64());
        BOOST_TEST(predictions[1].at("memory_mb").as_double() ==
                   planned.at(stage).at("memory_mb").as_double());
        ++plan_rows;
    }
    BOOST_TEST(plan_rows == 4u);
}

}  // namespace cli_grouped_plans_tests
