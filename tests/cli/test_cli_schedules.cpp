// ppb partition with every schedule, end to end: chunks per stage in the plan and in the
// MindFormers arrays, the simulated iteration beside the estimate (and equal to what ppb
// simulate says of the plan), the timeline picture read back with an XML parser, --refine, and
// the shapes a schedule cannot run refused with what it requires.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_schedules_tests {

namespace {

std::vector<std::string> partition(const std::string& schedule, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "partition",   "--model-desc",      layers_file, "--dryrun",
        sample_dryrun, "--stages",          "8",         "--micro-batches",
        "32",          "--memory-limit-mb", "30000",     "--schedule",
        schedule};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// The same with M micro-batches instead of 32.
std::vector<std::string> with_micro_batches(std::vector<std::string> args, const std::string& m) {
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "--micro-batches")
            args[i + 1] = m;
    }
    return args;
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::path(write_file("", "placeholder-" + name)).parent_path() / name)
        .string();
}

double number(const json::value& v) {
    return v.to_number<double>();
}

std::size_t count_op_blocks(const std::string& svg_path) {
    namespace pt = boost::property_tree;
    std::ifstream in(svg_path);
    pt::ptree tree;
    pt::read_xml(in, tree);  // a real XML parser: throws on malformed XML
    std::size_t ops = 0;
    std::function<void(const pt::ptree&)> walk = [&](const pt::ptree& node) {
        for (const auto& [tag, child] : node) {
            if (tag == "<xmlattr>" || tag == "<xmlcomment>")
                continue;
            if (tag == "rect" && child.get<std::string>("<xmlattr>.class", "") == "op")
                ++ops;
            walk(child);
        }
    };
    walk(tree);
    return ops;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_schedules)

BOOST_AUTO_TEST_CASE(every_schedule_plans_simulates_and_draws) {
    for (const std::string schedule :
         {"1f1b", "interleaved", "interleaved-less-memory", "dualpipe-v"}) {
        BOOST_TEST_CONTEXT(schedule) {
            const std::string svg = temp_path(schedule + ".svg");
            const auto r = ppb(partition(schedule, {"--json", "--timeline", svg}));
            BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
            const json::value plan = parse_json(r.out);
            const std::uint32_t v = schedule == "1f1b" ? 1 : 2;
            BOOST_TEST(plan.at("schedule").as_string() == schedule);
            BOOST_TEST(plan.at("num_chunks").to_number<std::uint32_t>() == v);
            // Every layer placed, once; every stage within the limit; per chunk, forward +
            // backward is the chunk's share of the stage time.
            std::uint64_t layers = 0;
            const auto& stages = plan.at("stages").as_array();
            BOOST_TEST_REQUIRE(stages.size() == 8u);
            for (const auto& stage : stages) {
                BOOST_TEST(number(stage.at("memory_mb")) <= 30000.0 * (1 + 1e-9));
                const auto& chunks = stage.at("chunks").as_array();
                BOOST_TEST_REQUIRE(chunks.size() == v);
                double time = 0.0;
                for (const auto& chunk : chunks) {
                    for (const auto& [kind, n] : chunk.at("layers").as_object())
                        layers += n.to_number<std::uint64_t>();
                    time += number(chunk.at("forward_time")) + number(chunk.at("backward_time"));
                    BOOST_TEST(number(chunk.at("activation_mb")) >= 0.0);
                }
                BOOST_TEST(std::abs(time - number(stage.at("time"))) < 1e-6);
            }
            BOOST_TEST(layers == 80u);
            // MindFormers' arrays: one row per chunk, floor(80 / (8 v)) + offset layers each.
            const auto& offset = plan.at("mindformers").at("offset").as_array();
            BOOST_TEST_REQUIRE(offset.size() == v);
            std::int64_t placed = 0;
            for (std::uint32_t c = 0; c < v; ++c) {
                const auto& row = offset[c].as_array();
                BOOST_TEST_REQUIRE(row.size() == 8u);
                for (std::uint32_t s = 0; s < 8; ++s) {
                    const std::int64_t n = row[s].to_number<std::int64_t>() + 80 / (8 * v);
                    std::int64_t in_plan = 0;
                    for (const auto& [kind, k] :
                         stages[s].at("chunks").at(c).at("layers").as_object())
                        in_plan += k.to_number<std::int64_t>();
                    BOOST_TEST(n == in_plan);
                    placed += n;
                }
            }
            BOOST_TEST(placed == 80);
            // The simulated iteration is what ppb simulate says of the same plan.
            const double makespan = number(plan.at("simulated").at("makespan"));
            BOOST_TEST(makespan > 0.0);
            const auto sim =
                ppb({"simulate", write_file(r.out, schedule + "-plan.json"), "--json"});
            BOOST_TEST_REQUIRE(sim.exit_code == 0, sim.err);
            BOOST_TEST(std::abs(number(parse_json(sim.out).at("makespan")) - makespan) <
                       1e-6 * makespan);
            // The picture: one block per forward and per backward of every micro-batch.
            BOOST_TEST(count_op_blocks(svg) == 2u * 8u * v * 32u);
        }
    }
}

// ppb compare --partition reads a plan's chunks and schedule: the model predicts each stage as
// planned (dualpipe-v: stage 0 with both ends).
BOOST_AUTO_TEST_CASE(compare_predicts_a_chunked_plan_as_planned) {
    for (const std::string schedule : {"interleaved", "dualpipe-v"}) {
        BOOST_TEST_CONTEXT(schedule) {
            const auto r = ppb(partition(schedule, {"--json"}));
            BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
            const json::value plan = parse_json(r.out);
            const auto c = ppb({"compare", sample_dryrun, "--partition",
                                write_file(r.out, schedule + "-compare.json"), "--model",
                                "dryrun-lsq", "--json"});
            BOOST_TEST_REQUIRE(c.exit_code == 0, c.err);
            std::size_t s = 0;
            const json::value compared = parse_json(c.out);
            for (const auto& placement : compared.at("placements").as_array()) {
                if (placement.at("label").as_string() != "plan")
                    continue;
                const double predicted = number(placement.at("predictions").at(0).at("memory_mb"));
                const double planned = number(plan.at("stages").at(s).at("memory_mb"));
                BOOST_TEST(std::abs(predicted - planned) <= 1e-9 * planned,
                           "stage " << s << ": " << predicted << " vs " << planned);
                ++s;
            }
            BOOST_TEST(s == 8u);
        }
    }
}

// ppb predict --chunk (once per chunk) predicts a planned stage as the plan does.
BOOST_AUTO_TEST_CASE(predict_takes_chunks) {
    for (const std::string schedule : {"interleaved", "dualpipe-v"}) {
        BOOST_TEST_CONTEXT(schedule) {
            const auto r = ppb(partition(schedule, {"--json"}));
            BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
            const json::value plan = parse_json(r.out);
            for (const std::uint32_t s : {0u, 7u}) {
                std::vector<std::string> args = {"predict",         sample_dryrun, "--stage",
                                                 std::to_string(s), "--schedule",  schedule,
                                                 "--json"};
                for (const auto& chunk : plan.at("stages").at(s).at("chunks").as_array()) {
                    std::string items;
                    for (const auto& [kind, n] : chunk.at("layers").as_object()) {
                        items += (items.empty() ? "" : ",") + std::string(kind) + "=" +
                                 std::to_string(n.to_number<std::uint32_t>());
                    }
                    args.insert(args.end(), {"--chunk", items});
                }
                const auto p = ppb(args);
                BOOST_TEST_REQUIRE(p.exit_code == 0, p.err);
                const json::value predicted = parse_json(p.out);
                const double planned = number(plan.at("stages").at(s).at("memory_mb"));
                BOOST_TEST(
                    std::abs(number(predicted.at("peak_memory_mb")) - planned) <= 1e-9 * planned,
                    "stage " << s);
                BOOST_TEST(predicted.at("placement").at("chunks").as_array().size() == 2u);
            }
        }
    }
    const std::vector<std::string> base = {"predict", sample_dryrun, "--stage", "0"};
    auto with = [&](std::vector<std::string> extra) {
        auto args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    };
    expect_input_error(
        ppb(with({"--chunk", "full=4", "--chunk", "select=5"})),
        {"two chunks: give --schedule (interleaved, interleaved-less-memory, dualpipe-v, zb-v or "
         "combined-1f1b)"});
    expect_input_error(ppb(with({"--layers", "none=1", "--chunk", "full=1"})),
                       {"--layers for one chunk, or --chunk once per chunk"});
    expect_input_error(
        ppb(with({"--chunk", "full=4", "--chunk", "select=x", "--schedule", "interleaved"})),
        {"--chunk: expected KIND=N with N from 0 to 10000 layers, got 'select=x'"});
    expect_input_error(ppb(with({"--chunk", "full=4", "--chunk", "select=5", "--schedule",
                                 "dualpipe-v", "--micro-batches", "8"})),
                       {"dualpipe-v needs at least twice as many micro-batches as stages"});
    expect_input_error(ppb(with({"--chunk", "full=4", "--chunk", "select=5", "--schedule",
                                 "interleaved", "--in-flight", "3"})),
                       {"--in-flight is for one chunk"});
}

BOOST_AUTO_TEST_CASE(the_table_shows_chunks_and_both_iterations) {
    const auto r = ppb(partition("interleaved", {}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.out.find("8 stages, 32 micro-batches, interleaved, 2 chunks per stage") !=
                   std::string::npos,
               r.out);
    BOOST_TEST(r.out.find("STAGE  CHUNK  LAYERS") != std::string::npos, r.out);
    BOOST_TEST(r.out.find("Partitioner objective: ") != std::string::npos, r.out);
    BOOST_TEST(r.out.find("Simulated iteration (interleaved order): ") != std::string::npos, r.out);
    BOOST_TEST(r.out.find("  offset: [[") != std::string::npos, r.out);
}

BOOST_AUTO_TEST_CASE(the_default_plan_never_simulates_slower_than_fast) {
    for (const std::string schedule : {"interleaved", "interleaved-less-memory", "dualpipe-v"}) {
        BOOST_TEST_CONTEXT(schedule) {
            const auto exact = ppb(partition(schedule, {"--json", "--fast"}));
            const auto refined = ppb(partition(schedule, {"--json"}));
            const auto asked = ppb(partition(schedule, {"--json", "--refine"}));
            BOOST_TEST_REQUIRE(exact.exit_code == 0, exact.err);
            BOOST_TEST_REQUIRE(refined.exit_code == 0, refined.err);
            BOOST_TEST(asked.out == refined.out);  // --refine is the default, accepted
            const json::value exact_plan = parse_json(exact.out);
            const json::value refined_plan = parse_json(refined.out);
            const json::value& fast = exact_plan.at("simulated");
            const json::value& made = refined_plan.at("simulated");
            const double before = number(fast.at("makespan"));
            const double after = number(made.at("makespan"));
            BOOST_TEST(after <= before);
            // The estimate is the exact optimum's: the refined plan's is no lower.
            BOOST_TEST(number(refined_plan.at("partitioner_objective")) >=
                       number(exact_plan.at("partitioner_objective")) * (1 - 1e-12));
            // The bound holds for both plans, and the gap is the plan's own.
            const double bound = number(made.at("lower_bound"));
            BOOST_TEST(bound > 0.0);
            BOOST_TEST(bound <= after);
            BOOST_TEST(number(fast.at("lower_bound")) <= after);
            BOOST_TEST(number(made.at("gap")) == (after - bound) / after,
                       boost::test_tools::tolerance(1e-12));
        }
    }
    // 1F1B plans are exact for their estimate: no bound.
    const auto one = ppb(partition("1f1b", {"--json"}));
    BOOST_TEST_REQUIRE(one.exit_code == 0, one.err);
    BOOST_TEST(parse_json(one.out).at("simulated").at("lower_bound").is_null());
}

BOOST_AUTO_TEST_CASE(shapes_a_schedule_cannot_run_exit_2) {
    expect_input_error(ppb(partition("dualpipe-v", {"--chunks", "3"})),
                       {"dualpipe-v runs two chunks per stage, got 3"});
    expect_input_error(ppb(with_micro_batches(partition("interleaved", {}), "12")),
                       {"interleaved needs a multiple of the 8 stages as micro-batches"});
    expect_input_error(ppb(with_micro_batches(partition("dualpipe-v", {}), "15")),
                       {"dualpipe-v needs at least twice as many micro-batches as stages"});
    expect_input_error(ppb(partition("1f1b", {"--chunks", "2"})),
                       {"1f1b runs one chunk per stage, got 2"});
    expect_input_error(ppb(partition("interleaved", {"--chunks", "1"})),
                       {"interleaved runs at least two chunks per stage, got 1"});
    expect_input_error(ppb(partition("1f1b", {"--refine"})), {"--refine"});
    expect_input_error(ppb(partition("interleaved", {"--refine", "--fast"})),
                       {"--refine and --fast"});
    expect_input_error(
        ppb(partition("interleaved", {"--memory-margin-sigma", "2"})),
        {"a margin of standard errors is not supported yet with several chunks per stage or a "
         "schedule other than 1f1b; give the margin in MB instead"});
    expect_input_error(ppb(partition("zigzag", {})), {"--schedule"});
    expect_input_error(ppb(partition("interleaved", {"--objective", "fastest"})), {"--objective"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_schedules_tests
