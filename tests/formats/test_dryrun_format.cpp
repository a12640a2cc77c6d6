// ppb/dryrun_format.hpp: the "ppb.dryrun/1" reader.
#include <ppb/dryrun_format.hpp>
#include <ppb/errors.hpp>

#include "../common/error_testing.hpp"
#include "dryrun_text.hpp"

#include <fmt/core.h>
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

using ppb::DryRunReadOptions;
using ppb::DryRunSet;
using ppb::InputError;
using ppb::Observation;
using ppb::parse_dryrun;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace dryrun_format_tests {

namespace {

// A ppb.dryrun/1 document with the given top-level members (after "format") and observations.
std::string document(const std::string& top, const std::string& observations) {
    return R"({"format": "ppb.dryrun/1", )" + top + (top.empty() ? "" : ", ") +
           R"("observations": [)" + observations + "]}";
}

// A document with p = 8 at the top and one observation with the given members.
std::string with_observation(const std::string& members) {
    return document(R"("num_stages": 8)", "{" + members + "}");
}

void check_chunk(const Observation& o, std::uint32_t none, std::uint32_t select, std::uint32_t comm,
                 std::uint32_t both, std::uint32_t full, std::uint32_t in_flight) {
    BOOST_TEST_REQUIRE(o.placement.chunks.size() == 1u);
    const ppb_chunk& c = o.placement.chunks.front();
    BOOST_TEST(c.layers[PPB_KIND_NONE] == none);
    BOOST_TEST(c.layers[PPB_KIND_SELECT] == select);
    BOOST_TEST(c.layers[PPB_KIND_COMM] == comm);
    BOOST_TEST(c.layers[PPB_KIND_BOTH] == both);
    BOOST_TEST(c.layers[PPB_KIND_FULL] == full);
    BOOST_TEST(c.in_flight == in_flight);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dryrun_format)

BOOST_AUTO_TEST_CASE(the_design_example) {
    const DryRunSet set = read_dryrun(R"({
      "format": "ppb.dryrun/1",
      "num_stages": 8,
      "micro_batches": 32,
      "schedule": "1f1b",
      "observations": [
        {"config": "A", "stage": 0, "layers": {"none": 3, "full": 1}, "peak_memory_mb": 41234.5},
        {"config": "A", "stage": 1, "layers": {"none": 4}, "peak_memory_mb": 38021.0},
        {"config": "B", "num_stages": 4, "stage": 2, "layers": {"select": 8}, "in_flight": 2,
         "peak_memory_mb": 45110.0}
      ]
    })");
    BOOST_TEST(set.num_stages == 8u);
    BOOST_TEST(set.micro_batches == 32u);
    BOOST_TEST((set.schedule == ppb::Schedule::one_f_one_b));
    BOOST_TEST_REQUIRE(set.observations.size() == 3u);

    const Observation& a0 = set.observations[0];
    BOOST_TEST(a0.config == "A");
    BOOST_TEST(a0.placement.num_stages == 8u);
    BOOST_TEST(a0.placement.stage == 0u);
    BOOST_TEST(a0.micro_batches == 32u);
    BOOST_TEST(a0.peak_memory_mb == 41234.5);
    check_chunk(a0, 3, 0, 0, 0, 1, 8);  // min(p - s, m) = min(8, 32)

    const Observation& a1 = set.observations[1];
    BOOST_TEST(a1.placement.stage == 1u);
    BOOST_TEST(a1.peak_memory_mb == 38021.0);
    check_chunk(a1, 4, 0, 0, 0, 0, 7);

    const Observation& b = set.observations[2];
    BOOST_TEST(b.config == "B");
    BOOST_TEST(b.placement.num_stages == 4u);
    BOOST_TEST(b.placement.stage == 2u);
    BOOST_TEST(b.micro_batches == 32u);
    check_chunk(b, 0, 8, 0, 0, 0, 2);  // explicit in_flight
    BOOST_TEST(b.placement.total_layers() == 8u);
    BOOST_TEST(b.view().placement.num_chunks == 1u);
}

BOOST_AUTO_TEST_CASE(in_flight_is_capped_by_micro_batches) {
    const DryRunSet set = read_dryrun(document(R"("num_stages": 8, "micro_batches": 3)", R"(
        {"stage": 0, "layers": {}, "peak_memory_mb": 10},
        {"stage": 4, "layers": {}, "peak_memory_mb": 10},
        {"stage": 5, "layers": {}, "peak_memory_mb": 10},
        {"stage": 7, "layers": {}, "peak_memory_mb": 10},
        {"stage": 0, "micro_batches": 16, "layers": {}, "peak_memory_mb": 11},
        {"stage": 0, "in_flight": 5, "layers": {}, "peak_memory_mb": 12})"));
    const std::uint32_t expected[] = {3, 3, 3, 1, 8, 5};
    BOOST_TEST_REQUIRE(set.observations.size() == 6u);
    for (std::size_t i = 0; i < 6; ++i) {
        BOOST_TEST(set.observations[i].placement.chunks.front().in_flight == expected[i]);
    }
    BOOST_TEST(set.observations[0].micro_batches == 3u);
    BOOST_TEST(set.observations[4].micro_batches == 16u);
}

BOOST_AUTO_TEST_CASE(in_flight_without_micro_batches_is_p_minus_s) {
    const DryRunSet set = read_dryrun(document("", R"(
        {"num_stages": 4, "stage": 0, "layers": {"both": 2}, "peak_memory_mb": 1.5},
        {"num_stages": 4, "stage": 3, "layers": {"comm": 2}, "peak_memory_mb": 2},
        {"num_stages": 1, "stage": 0, "layers": {"none": 0}, "peak_memory_mb": 3})"));
    BOOST_TEST(set.num_stages == 0u);
    BOOST_TEST(set.micro_batches == 0u);
    BOOST_TEST_REQUIRE(set.observations.size() == 3u);
    check_chunk(set.observations[0], 0, 0, 0, 2, 0, 4);
    check_chunk(set.observations[1], 0, 0, 2, 0, 0, 1);
    check_chunk(set.observations[2], 0, 0, 0, 0, 0, 1);
    BOOST_TEST(set.observations[0].micro_batches == 0u);
    BOOST_TEST(set.observations[0].config.empty());
}

BOOST_AUTO_TEST_CASE(integral_doubles_and_comments_are_accepted) {
    const DryRunSet set = read_dryrun(R"({"format": "ppb.dryrun/1", "comment": "run of 3 May",
        "description": "llama 70B", "num_stages": 2.0,
        "observations": [{"stage": 1.0, "layers": {"full": 4.0}, "peak_memory_mb": 100,
                          "comment": "rerun"}]})");
    BOOST_TEST(set.num_stages == 2u);
    check_chunk(set.observations[0], 0, 0, 0, 0, 4, 1);
    BOOST_TEST(set.observations[0].peak_memory_mb == 100.0);
}

BOOST_AUTO_TEST_CASE(malformed_json) {
    PPB_CHECK_ERROR(InputError,
                    read_dryrun("{\"format\": \"ppb.dryrun/1\",\n \"observations\": [}"),
                    "dryrun.json:2:19: malformed JSON");
    PPB_CHECK_ERROR(InputError, read_dryrun(""),
                    "dryrun.json:1:1: malformed JSON: the input is empty");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(with_observation(R"("stage": 0, "layers": {}, "peak_memory_mb": 1)") + " x"),
        "dryrun.json:1:", "unexpected text after the JSON document");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(with_observation(
                        R"("stage": 0, "stage": 1, "layers": {}, "peak_memory_mb": 1)")),
                    "observations[0]: duplicate field 'stage'");
}

BOOST_AUTO_TEST_CASE(format_member) {
    PPB_CHECK_ERROR(InputError, read_dryrun("[]"),
                    "dryrun.json: expected a JSON object (a ppb dry-run file), got an empty array");
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"observations": []})"),
                    "dryrun.json: missing required field 'format'");
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": "ppb.dryrun/9", "future": 1})"),
                    "dryrun.json: format: unsupported format version 'ppb.dryrun/9' (this ppb "
                    "reads ppb.dryrun/1, ppb.dryrun/2 and ppb.dryrun/3)");
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": "ppb.fit/1"})"),
                    "dryrun.json: format: \"ppb.fit/1\" is not a ppb dry-run file format");
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": 1})"),
                    "dryrun.json: format: expected the string \"ppb.dryrun/1\", got 1");
}

BOOST_AUTO_TEST_CASE(top_level_members) {
    const std::string obs = R"({"stage": 0, "layers": {}, "peak_memory_mb": 1})";
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stage": 8)", obs)),
                    "dryrun.json: unknown field 'num_stage' (did you mean 'num_stages'? expected "
                    "one of: format, num_stages, micro_batches, schedule, observations, comment, "
                    "description, body_layers, layer_times)");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 0)", obs)),
                    "dryrun.json: num_stages: 0 is out of range (1 to 1024 stages)");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": "8")", obs)),
                    "num_stages: expected an integer, 1 to 1024 stages, got \"8\"");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document(R"("num_stages": 8, "micro_batches": 0)", obs)),
                    "dryrun.json: micro_batches: 0 is out of range (1 to 1000000 micro-batches)");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 8, "comment": 5)", obs)),
                    "dryrun.json: comment: expected a string, got 5");
    PPB_CHECK_ERROR(
        InputError, read_dryrun(document(R"("num_stages": 1)", "")),
        "dryrun.json: observations: the list is empty (expected at least one observation)");
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": "ppb.dryrun/1", "num_stages": 8})"),
                    "dryrun.json: missing required field 'observations'");
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": "ppb.dryrun/1", "observations": {}})"),
                    "dryrun.json: observations: expected an array, got an empty object");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 8)", "3")),
                    "dryrun.json: observations[0]: expected an object, got 3");
}

BOOST_AUTO_TEST_CASE(schedules) {
    const std::string obs = R"({"stage": 0, "layers": {}, "peak_memory_mb": 1})";
    BOOST_CHECK_NO_THROW(
        (void)read_dryrun(document(R"("num_stages": 2, "schedule": "1f1b")", obs)));
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document(R"("num_stages": 2, "schedule": "interleaved")", obs)),
                    "dryrun.json: schedule: schedule 'interleaved' runs several chunks per stage, "
                    "but ppb.dryrun/1 describes one chunk per stage");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document(R"("num_stages": 2, "schedule": "dualpipe-v")", obs)),
                    "one chunk per stage");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document(R"("num_stages": 2, "schedule": "gpipe")", obs)),
                    "dryrun.json: schedule: unknown schedule 'gpipe' (expected one of: 1f1b");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 2, "schedule": 1)", obs)),
                    "dryrun.json: schedule: expected a string, got 1");
}

BOOST_AUTO_TEST_CASE(observation_members) {
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(with_observation(R"("stage": 0, "layers": {}, "peak_mem": 1)")),
                    "dryrun.json: observations[0]: unknown field 'peak_mem' (did you mean "
                    "'peak_memory_mb'? expected one of: config, num_stages, micro_batches, stage, "
                    "layers, in_flight, peak_memory_mb, reserved_mb, comment)");
    PPB_CHECK_ERROR(InputError, read_dryrun(with_observation(R"("stage": 0, "layers": {})")),
                    "dryrun.json: observations[0]: missing required field 'peak_memory_mb'");
    PPB_CHECK_ERROR(InputError, read_dryrun(with_observation(R"("stage": 0, "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0]: missing required field 'layers'");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(with_observation(R"("layers": {}, "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0]: missing required field 'stage'");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document("", R"({"stage": 0, "layers": {}, "peak_memory_mb": 1})")),
                    "dryrun.json: observations[0]: missing required field 'num_stages' (the file "
                    "gives no top-level default)");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(with_observation(
                        R"("config": 1, "stage": 0, "layers": {}, "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0].config: expected a string, got 1");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(
            with_observation(R"("num_stages": 0, "stage": 0, "layers": {}, "peak_memory_mb": 1)")),
        "dryrun.json: observations[0].num_stages: 0 is out of range (1 to 1024 stages)");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(with_observation(
                        R"("micro_batches": -2, "stage": 0, "layers": {}, "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0].micro_batches: -2 is out of range (1 to 1000000 "
                    "micro-batches)");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(
            with_observation(R"("in_flight": 0, "stage": 0, "layers": {}, "peak_memory_mb": 1)")),
        "dryrun.json: observations[0].in_flight: 0 is out of range (1 to 1000000 micro-batches)");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(with_observation(
                        R"("in_flight": null, "stage": 0, "layers": {}, "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0].in_flight: expected an integer, 1 to 1000000 "
                    "micro-batches, got null");
}

BOOST_AUTO_TEST_CASE(stage_range) {
    const auto obs = [](const std::string& stage) {
        return R"({"stage": )" + stage + R"(, "layers": {}, "peak_memory_mb": 1})";
    };
    const std::string ok = obs("0");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(document(R"("num_stages": 8)", ok + ", " + ok + ", " + ok + ", " + obs("8"))),
        "dryrun.json: observations[3].stage: 8 is not a stage of an 8-stage pipeline "
        "(expected 0..7)");
    PPB_CHECK_ERROR(
        InputError, read_dryrun(document(R"("num_stages": 4)", obs("4"))),
        "observations[0].stage: 4 is not a stage of a 4-stage pipeline (expected 0..3)");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 1)", obs("1"))),
                    "observations[0].stage: 1 is not a stage of a 1-stage pipeline (expected 0)");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 8)", obs("-1"))),
                    "dryrun.json: observations[0].stage: expected a non-negative integer, got -1");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 8)", obs("2.5"))),
                    "dryrun.json: observations[0].stage: expected a non-negative integer, got 2.5");
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 8)", obs("\"1\""))),
                    "observations[0].stage: expected a non-negative integer, got \"1\"");
    PPB_CHECK_ERROR(
        InputError, read_dryrun(document(R"("num_stages": 8)", obs("4294967296"))),
        "observations[0].stage: number out of range: 4294967296 is more than 4294967295");
    // The observation's own pipeline degree decides.
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document(
                        R"("num_stages": 8)",
                        R"({"num_stages": 11, "stage": 11, "layers": {}, "peak_memory_mb": 1})")),
                    "11 is not a stage of an 11-stage pipeline (expected 0..10)");
}

BOOST_AUTO_TEST_CASE(layer_counts) {
    const auto obs = [](const std::string& counts) {
        return with_observation(R"("stage": 0, "layers": )" + counts + R"(, "peak_memory_mb": 1)");
    };
    PPB_CHECK_ERROR(InputError, read_dryrun(obs(R"({"none": 1, "ful": 2})")),
                    "dryrun.json: observations[0].layers: unknown recompute kind 'ful' (did you "
                    "mean 'full'? expected one of: none, select, comm, both, full)");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs(R"({"recompute": 2})")),
                    "unknown recompute kind 'recompute' (",
                    "expected one of: none, select, comm, both, full)");
    PPB_CHECK_ERROR(
        InputError, read_dryrun(obs(R"({"full": -1})")),
        "dryrun.json: observations[0].layers.full: -1 is out of range (0 to 10000 layers)");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs(R"({"select": 1.5})")),
                    "dryrun.json: observations[0].layers.select: expected an integer, 0 to 10000 "
                    "layers, got 1.5");
    PPB_CHECK_ERROR(
        InputError, read_dryrun(obs(R"({"select": "2"})")),
        "observations[0].layers.select: expected an integer, 0 to 10000 layers, got \"2\"");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs("[3]")),
                    "dryrun.json: observations[0].layers: expected an object, got an array");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs("3")),
                    "dryrun.json: observations[0].layers: expected an object, got 3");
}

BOOST_AUTO_TEST_CASE(peak_memory) {
    const auto obs = [](const std::string& memory) {
        return with_observation(R"("stage": 0, "layers": {}, "peak_memory_mb": )" + memory);
    };
    PPB_CHECK_ERROR(
        InputError, read_dryrun(obs("0")),
        "dryrun.json: observations[0].peak_memory_mb: expected a positive number of MB, got 0");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs("-3.5")),
                    "observations[0].peak_memory_mb: expected a positive number of MB, got -3.5");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs("-0.0")),
                    "observations[0].peak_memory_mb: expected a positive number of MB, got -0.0");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs("1e400")),
                    "dryrun.json:1:", "observations[0].peak_memory_mb: number out of range: 1e400");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs("NaN")), "dryrun.json:1:", "malformed JSON");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs("Infinity")), "dryrun.json:1:", "malformed JSON");
    PPB_CHECK_ERROR(
        InputError, read_dryrun(obs("\"NaN\"")),
        "observations[0].peak_memory_mb: expected a positive number of MB, got \"NaN\"");
    PPB_CHECK_ERROR(InputError, read_dryrun(obs("null")),
                    "observations[0].peak_memory_mb: expected a positive number of MB, got null");
    BOOST_TEST(read_dryrun(obs("1e-3")).observations[0].peak_memory_mb == 1e-3);
}

BOOST_AUTO_TEST_CASE(contradictory_duplicates) {
    const std::string a =
        R"({"config": "A", "stage": 0, "layers": {"none": 3, "full": 1}, "peak_memory_mb": 41234.5})";
    const std::string other = R"({"stage": 1, "layers": {"none": 4}, "peak_memory_mb": 38021.0})";
    const std::string b =
        R"({"config": "B", "stage": 0, "layers": {"full": 1, "none": 3}, "peak_memory_mb": 39900.0})";
    const std::string text =
        document(R"("num_stages": 8)", a + ", " + other + ", " + other + ", " + other + ", " + b);
    PPB_CHECK_ERROR(InputError, read_dryrun(text),
                    "dryrun.json: observations[0] and observations[4] describe the same placement "
                    "(stage 0 of 8, 8 in flight, layers none=3 full=1) but their memories differ "
                    "by 3.24 % (41234.5 MB vs 39900.0 MB), more than the 1 % tolerance "
                    "(--duplicate-tolerance)");
    // A custom tolerance.
    BOOST_TEST(read_dryrun(text, DryRunReadOptions{0.05}).observations.size() == 5u);
    PPB_CHECK_ERROR(InputError, read_dryrun(text, DryRunReadOptions{0.02}),
                    "more than the 2 % tolerance");
    // Exactly-the-same measurements need tolerance 0 to pass only when equal.
    const std::string same = document(R"("num_stages": 8)", other + ", " + other);
    BOOST_TEST(read_dryrun(same, DryRunReadOptions{0.0}).observations.size() == 2u);
    PPB_CHECK_ERROR(InputError, read_dryrun(text, DryRunReadOptions{-0.1}),
                    "invalid duplicate tolerance");
}

BOOST_AUTO_TEST_CASE(duplicates_within_tolerance_are_kept) {
    const std::string text = document(R"("num_stages": 8, "micro_batches": 4)", R"(
        {"stage": 2, "layers": {"none": 4}, "peak_memory_mb": 1000.0},
        {"stage": 2, "layers": {"none": 4}, "peak_memory_mb": 1009.0},
        {"stage": 2, "layers": {"none": 4}, "in_flight": 4, "peak_memory_mb": 1002.0})");
    const DryRunSet set = read_dryrun(text);
    BOOST_TEST(set.observations.size() == 3u);
    BOOST_TEST(set.observations[1].peak_memory_mb == 1009.0);
}

BOOST_AUTO_TEST_CASE(a_disagreement_with_any_earlier_repeat_is_found) {
    // 990 agrees with 1000 (1 %) and with 1005, but not with 1009 (1.9 %): the reader keeps only
    // each placement's smallest and largest memory, and must still name the pair that disagrees.
    const std::string text = document(R"("num_stages": 8)", R"(
        {"stage": 2, "layers": {"none": 4}, "peak_memory_mb": 1000.0},
        {"stage": 2, "layers": {"none": 4}, "peak_memory_mb": 1009.0},
        {"stage": 2, "layers": {"none": 4}, "peak_memory_mb": 1005.0},
        {"stage": 2, "layers": {"none": 4}, "peak_memory_mb": 990.0})");
    PPB_CHECK_ERROR(InputError, read_dryrun(text),
                    "observations[1] and observations[3] describe the same placement",
                    "differ by 1.88 % (1009.0 MB vs 990.0 MB)");
    // Many repeats of one placement within tolerance: all kept.
    std::string many;
    for (int i = 0; i < 2000; ++i)
        many += fmt::format(R"({}{{"stage": 1, "layers": {{"none": 4}}, "peak_memory_mb": {}}})",
                            i == 0 ? "" : ", ", 1000.0 + (i % 10));
    BOOST_TEST(read_dryrun(document(R"("num_stages": 8)", many)).observations.size() == 2000u);
}

BOOST_AUTO_TEST_CASE(different_placements_are_not_duplicates) {
    // Differing in-flight count (micro-batches), pipeline degree or layers: not the same placement.
    const std::string text = document(R"("num_stages": 8)", R"(
        {"stage": 2, "layers": {"none": 4}, "peak_memory_mb": 1000.0},
        {"stage": 2, "micro_batches": 2, "layers": {"none": 4}, "peak_memory_mb": 500.0},
        {"num_stages": 4, "stage": 2, "layers": {"none": 4}, "peak_memory_mb": 700.0},
        {"stage": 2, "layers": {"none": 4, "full": 0}, "peak_memory_mb": 1005.0},
        {"stage": 2, "layers": {"select": 4}, "peak_memory_mb": 800.0})");
    BOOST_TEST(read_dryrun(text).observations.size() == 5u);
    // ... but an explicit in_flight equal to the computed one is the same placement.
    PPB_CHECK_ERROR(InputError, read_dryrun(document(R"("num_stages": 8)", R"(
        {"stage": 2, "layers": {"none": 4}, "peak_memory_mb": 1000.0},
        {"stage": 2, "in_flight": 6, "layers": {"none": 4}, "peak_memory_mb": 500.0})")),
                    "observations[0] and observations[1] describe the same placement");
}

BOOST_AUTO_TEST_CASE(read_from_a_file) {
    const auto path = std::filesystem::temp_directory_path() / "ppb_test_dryrun.json";
    {
        std::ofstream out(path);
        out << "{\"format\": \"ppb.dryrun/1\",\n"
               " \"observations\": [{\"num_stages\": 2, \"stage\": 1, \"layers\": {},\n"
               "                    \"peak_memory_mb\": 0}]}\n";
    }
    PPB_CHECK_ERROR(InputError, ppb::read_dryrun_file(path),
                    path.string() + ": observations[0].peak_memory_mb: expected a positive number");
    {
        std::ofstream out(path);
        out << "{\"format\": \"ppb.dryrun/1\",\n  \"observations\": [}\n";
    }
    PPB_CHECK_ERROR(InputError, ppb::read_dryrun_file(path),
                    path.string() + ":2:20: malformed JSON");
    {
        std::ofstream out(path);
        out << document("", R"({"num_stages": 2, "stage": 1, "layers": {}, "peak_memory_mb": 5})");
    }
    BOOST_TEST(ppb::read_dryrun_file(path).observations.size() == 1u);
    std::filesystem::remove(path);
    PPB_CHECK_ERROR(InputError, ppb::read_dryrun_file(path),
                    path.string() + ": cannot read: No such file or directory");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dryrun_format_tests
