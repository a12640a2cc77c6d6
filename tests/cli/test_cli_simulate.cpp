// ppb simulate end to end: the table, ppb.simulation/1, the SVG file, and bad plans (exit 2).
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_simulate_tests {

namespace {

// A one-chunk plan with stage-level times, as `ppb partition --json` writes for 1F1B.
std::string one_chunk_plan(int stages, int micro_batches, const std::string& extra_stage = "") {
    std::string list;
    for (int s = 0; s < stages; ++s) {
        list += fmt::format(
            "{}{{\"stage\": {}, \"in_flight\": {}, \"memory_mb\": {}, \"forward_time\": 1, "
            "\"backward_time\": 2, \"activation_mb\": 100{}}}",
            s == 0 ? "" : ", ", s, stages - s, 5000 + 100 * (stages - s), extra_stage);
    }
    return fmt::format(
        "{{\"format\": \"ppb.partition/1\", \"num_stages\": {}, \"micro_batches\": {}, "
        "\"stages\": [{}]}}",
        stages, micro_batches, list);
}

// A DualPipe-V plan with per-chunk times, as the partitioner will write it.
std::string dualpipe_plan(int stages, int micro_batches) {
    std::string list;
    for (int s = 0; s < stages; ++s) {
        list += fmt::format(
            "{}{{\"stage\": {}, \"memory_mb\": 9000, \"chunks\": ["
            "{{\"chunk\": 0, \"in_flight\": {}, \"forward_time\": 1, \"backward_time\": 2, "
            "\"activation_mb\": 10}}, "
            "{{\"chunk\": 1, \"in_flight\": {}, \"forward_time\": 1, \"backward_time\": 2, "
            "\"activation_mb\": 20}}]}}",
            s == 0 ? "" : ", ", s, 2 * stages - s, s + 1);
    }
    return fmt::format(
        "{{\"format\": \"ppb.partition/1\", \"schedule\": \"dualpipe-v\", \"num_stages\": {}, "
        "\"num_chunks\": 2, \"micro_batches\": {}, \"stages\": [{}]}}",
        stages, micro_batches, list);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(simulate)

BOOST_AUTO_TEST_CASE(table_by_default) {
    const auto r = ppb({"simulate", write_file(dualpipe_plan(4, 8))});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.empty());
    BOOST_TEST(r.out.find("dualpipe-v schedule, 4 stages, 2 chunks per stage, 8 micro-batches") !=
               std::string::npos);
    BOOST_TEST(r.out.find("PEAK IN FLIGHT") != std::string::npos);
    // Stage 0 holds 2P = 8 micro-batches of chunk 0 and one of chunk 1: 9000 MB planned at the
    // plan's counts (8, 1), so its static part is 9000 - 80 - 20 and the simulated peak the same.
    // It is first reached at 17.0, when the eighth forward of chunk 0 (micro-batch 7) starts:
    // chunk 1's forwards and backwards alternate from 7.0 (1 and 2 time units each), so its
    // micro-batch 3 runs its forward over 16-17 and its backward from 18.
    BOOST_TEST(
        std::regex_search(
            r.out,
            std::regex(R"(\n +0 +48\.0 +11\.0 +8, 1 +9000\.0 MB +17\.0 +8, 1 +9000\.0 MB\n)")),
        r.out);
    // The moment and the vector agree with the operations: at the peak's moment each chunk holds
    // the forwards started by then less the backwards ended by then.
    const auto j = ppb({"simulate", write_file(dualpipe_plan(4, 8)), "--json"});
    BOOST_TEST_REQUIRE(j.exit_code == 0, j.err);
    const json::value doc = parse_json(j.out);
    for (const auto& stage : doc.at("stages").as_array()) {
        const auto s = stage.at("stage").to_number<std::int64_t>();
        const double at = stage.at("peak_memory_time").to_number<double>();
        std::vector<std::int64_t> held(2, 0);
        for (const auto& op : doc.at("operations").as_array()) {
            if (op.at("stage").to_number<std::int64_t>() != s)
                continue;
            const auto c = op.at("chunk").to_number<std::size_t>();
            if (op.at("pass").as_string() == "forward" && op.at("start").to_number<double>() <= at)
                ++held[c];
            if (op.at("pass").as_string() == "backward" && op.at("end").to_number<double>() <= at)
                --held[c];
        }
        const auto& vector = stage.at("in_flight_at_peak").as_array();
        BOOST_TEST_REQUIRE(vector.size() == 2u);
        for (std::size_t c = 0; c < 2; ++c)
            BOOST_TEST(vector[c].to_number<std::int64_t>() == held[c],
                       "stage " << s << " chunk " << c);
    }
}

BOOST_AUTO_TEST_CASE(json_has_every_operation_and_the_closed_form_makespan) {
    const auto r = ppb({"simulate", write_file(one_chunk_plan(4, 8)), "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.simulation/1");
    BOOST_TEST(doc.at("schedule").as_string() == "1f1b");
    BOOST_TEST(doc.at("makespan").to_number<double>() == (8 + 4 - 1) * 3.0);
    BOOST_TEST(doc.at("bubble_fraction").to_number<double>() == 3.0 / 11.0,
               boost::test_tools::tolerance(1e-12));
    BOOST_TEST(doc.at("operations").as_array().size() == 2u * 4 * 8);
    const auto& stage0 = doc.at("stages").at(0).as_object();
    BOOST_TEST(stage0.at("peak_in_flight").at(0).to_number<int>() == 4);
    // Planned 5400 MB at 4 in flight x 100 MB; the simulated peak agrees.
    BOOST_TEST(stage0.at("peak_memory_mb").to_number<double>() == 5400.0);
}

BOOST_AUTO_TEST_CASE(overrides_and_the_timeline_file) {
    const std::string svg =
        (std::filesystem::path(write_file("", "placeholder")).parent_path() / "t.svg").string();
    const auto r = ppb({"simulate", write_file(dualpipe_plan(2, 4)), "--schedule", "interleaved",
                        "--micro-batches", "6", "--timeline", svg, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("schedule").as_string() == "interleaved");
    BOOST_TEST(doc.at("micro_batches").to_number<int>() == 6);
    // Per-chunk times 1 and 2: Megatron's (M·v + P − 1)(f + b).
    BOOST_TEST(doc.at("makespan").to_number<double>() == (6 * 2 + 2 - 1) * 3.0);
    std::ifstream in(svg);
    std::stringstream text;
    text << in.rdbuf();
    BOOST_TEST(text.str().find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
    std::size_t blocks = 0;
    for (std::size_t at = 0; (at = text.str().find("class=\"op\"", at)) != std::string::npos; ++at)
        ++blocks;
    BOOST_TEST(blocks == 2u * 2 * 2 * 6);
}

BOOST_AUTO_TEST_CASE(a_schedule_that_cannot_run_says_what_it_requires) {
    expect_input_error(ppb({"simulate", write_file(dualpipe_plan(4, 6))}),
                       {"dualpipe-v needs at least twice as many micro-batches as stages "
                        "(2 x 4 = 8), got 6"});
    expect_input_error(ppb({"simulate", write_file(dualpipe_plan(4, 8)), "--schedule", "1f1b"}),
                       {"--schedule", "1f1b runs one chunk per stage, got 2"});
    expect_input_error(ppb({"simulate", write_file(dualpipe_plan(4, 8)), "--micro-batches", "7"}),
                       {"--micro-batches", "got 7"});
}

BOOST_AUTO_TEST_CASE(missing_or_wrong_fields_are_named_by_path) {
    const std::string plan = one_chunk_plan(2, 4);
    const std::string without_backward = [&] {
        json::value doc = json::parse(plan);
        doc.at("stages").at(1).as_object().erase("backward_time");
        return json::serialize(doc);
    }();
    expect_input_error(ppb({"simulate", write_file(without_backward)}),
                       {"stages[1]", "'forward_time' and 'backward_time'"});
    json::value doc = json::parse(plan);
    doc.as_object()["num_chunks"] = 2;
    doc.as_object()["schedule"] = "interleaved";
    expect_input_error(ppb({"simulate", write_file(json::serialize(doc))}),
                       {"stages[0]", "missing required field 'chunks'"});
    doc.as_object()["schedule"] = "zigzag";
    expect_input_error(ppb({"simulate", write_file(json::serialize(doc))}),
                       {"schedule", "unknown schedule 'zigzag'"});
    json::value negative = json::parse(plan);
    negative.at("stages").at(0).as_object()["forward_time"] = -1;
    expect_input_error(ppb({"simulate", write_file(json::serialize(negative))}),
                       {"stages[0].forward_time", "-1"});
    json::value recompute = json::parse(plan);
    recompute.at("stages").at(1).as_object()["recompute_time"] = 2.5;
    expect_input_error(ppb({"simulate", write_file(json::serialize(recompute))}),
                       {"stages[1].recompute_time", "2.5 exceeds the backward_time 2"});
    json::value wrong = json::parse(plan);
    wrong.as_object()["format"] = "ppb.fit/1";
    expect_input_error(ppb({"simulate", write_file(json::serialize(wrong))}),
                       {"format", "expected \"ppb.partition/1\""});
    expect_input_error(ppb({"simulate", write_file("{\"format\": \"ppb.partition/1\"}")}),
                       {"missing required field 'num_stages'"});
}

BOOST_AUTO_TEST_CASE(usage_mistakes_exit_2) {
    expect_input_error(ppb({"simulate"}), {"PLAN"});
    expect_input_error(ppb({"simulate", write_file(one_chunk_plan(2, 4)), "--schedule", "gpipe"}),
                       {"--schedule", "gpipe"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_simulate_tests
