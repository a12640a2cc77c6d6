// ppb/dryrun_format.hpp: the "ppb.dryrun/2" revision — schedules beyond 1F1B, layers per chunk,
// default in-flight counts from ppb::in_flight_counts, and every way to get it wrong.
#include <ppb/dryrun_format.hpp>
#include <ppb/errors.hpp>
#include <ppb/schedule.hpp>

#include "../common/error_testing.hpp"
#include "dryrun_text.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

using ppb::DryRunSet;
using ppb::InputError;
using ppb::Observation;
using ppb::Schedule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace dryrun_chunks_tests {

namespace {

// A ppb.dryrun/2 document with the given top-level members (after "format") and observations.
std::string document_v2(const std::string& top, const std::string& observations) {
    return R"({"format": "ppb.dryrun/2", )" + top + (top.empty() ? "" : ", ") +
           R"("observations": [)" + observations + "]}";
}

// An interleaved p = 4, v = 2, m = 8 document with one observation with the given members.
std::string interleaved_with(const std::string& members) {
    return document_v2(R"("num_stages": 4, "micro_batches": 8, "schedule": "interleaved",
                          "num_chunks": 2)",
                       "{" + members + "}");
}

std::vector<std::uint32_t> in_flight_of(const Observation& o) {
    std::vector<std::uint32_t> out;
    for (const auto& chunk : o.placement.chunks)
        out.push_back(chunk.in_flight);
    return out;
}

const std::string two_chunks =
    R"("chunks": [{"layers": {"none": 3}}, {"layers": {"full": 2, "none": 1}}])";

}  // namespace

BOOST_AUTO_TEST_SUITE(dryrun_chunks)

BOOST_AUTO_TEST_CASE(interleaved_observations_take_the_schedules_in_flight_counts) {
    std::string observations;
    for (int s = 0; s < 4; ++s) {
        observations +=
            (s == 0 ? "" : ", ") + ("{\"stage\": " + std::to_string(s) + ", " + two_chunks +
                                    ", \"peak_memory_mb\": " + std::to_string(1000 + s) + "}");
    }
    const DryRunSet set =
        read_dryrun(document_v2(R"("num_stages": 4, "micro_batches": 8, "schedule": "interleaved",
                             "num_chunks": 2)",
                                observations));
    BOOST_TEST(set.revision == 2u);
    BOOST_TEST((set.schedule == Schedule::interleaved));
    BOOST_TEST(set.num_chunks == 2u);
    BOOST_TEST_REQUIRE(set.observations.size() == 4u);
    for (std::uint32_t s = 0; s < 4; ++s) {
        const Observation& o = set.observations[s];
        BOOST_TEST_CONTEXT("stage " << s) {
            BOOST_TEST_REQUIRE(o.placement.chunks.size() == 2u);
            BOOST_TEST(o.view().placement.num_chunks == 2u);
            BOOST_TEST(o.placement.chunks[0].layers[PPB_KIND_NONE] == 3u);
            BOOST_TEST(o.placement.chunks[1].layers[PPB_KIND_NONE] == 1u);
            BOOST_TEST(o.placement.chunks[1].layers[PPB_KIND_FULL] == 2u);
            BOOST_TEST(o.placement.total_layers() == 6u);
            // Whatever the counts are, they are the schedule function's.
            BOOST_TEST(in_flight_of(o) == ppb::in_flight_counts(Schedule::interleaved, 4, s, 8, 2),
                       boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_CASE(explicit_counts_and_schedules_per_observation) {
    // One file, three schedules: the top level's interleaved (v = 3), an observation of a 1F1B
    // dry run (one chunk, "layers") and one of a dualpipe-V dry run (two chunks by default).
    const DryRunSet set = read_dryrun(document_v2(
        R"("num_stages": 4, "schedule": "interleaved-less-memory", "num_chunks": 3)", R"(
        {"stage": 1, "chunks": [{"layers": {"none": 1}, "in_flight": 9},
                                {"layers": {"none": 1}}, {"layers": {"select": 1}}],
         "peak_memory_mb": 10},
        {"stage": 1, "schedule": "1f1b", "layers": {"none": 3}, "peak_memory_mb": 11},
        {"stage": 3, "schedule": "dualpipe-v", "micro_batches": 9,
         "chunks": [{"layers": {"comm": 2}}, {"layers": {"both": 1}, "in_flight": 5}],
         "peak_memory_mb": 12})"));
    BOOST_TEST((set.schedule == Schedule::interleaved_less_memory));
    BOOST_TEST(set.num_chunks == 3u);
    BOOST_TEST_REQUIRE(set.observations.size() == 3u);

    const auto less = ppb::in_flight_counts(Schedule::interleaved_less_memory, 4, 1, 0, 3);
    const std::vector<std::uint32_t> first = {9, less[1], less[2]};
    BOOST_TEST(in_flight_of(set.observations[0]) == first, boost::test_tools::per_element());
    BOOST_TEST(set.observations[0].placement.chunks[2].layers[PPB_KIND_SELECT] == 1u);

    BOOST_TEST(in_flight_of(set.observations[1]) ==
                   ppb::in_flight_counts(Schedule::one_f_one_b, 4, 1, 0, 1),
               boost::test_tools::per_element());

    const auto dualpipe = ppb::in_flight_counts(Schedule::dualpipe_v, 4, 3, 9, 2);
    const std::vector<std::uint32_t> third = {dualpipe[0], 5};
    BOOST_TEST(in_flight_of(set.observations[2]) == third, boost::test_tools::per_element());
    BOOST_TEST(set.observations[2].micro_batches == 9u);

    // A micro-batch count the schedule's order cannot run has no default counts: the chunks
    // must say theirs.
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v2(R"("num_stages": 4, "schedule": "dualpipe-v")", R"(
        {"stage": 3, "micro_batches": 5, "chunks": [{"layers": {"none": 2}, "in_flight": 5},
                                                    {"layers": {"none": 1}}],
         "peak_memory_mb": 12})")),
                    "observations[0].chunks[1]: no in-flight count to default to: dualpipe-v needs "
                    "at least twice as many micro-batches as stages (2 x 4 = 8), got 5; give each "
                    "chunk's \"in_flight\" as measured");
}

BOOST_AUTO_TEST_CASE(a_v2_file_without_chunks_reads_as_the_v1_file) {
    const std::string body = R"("num_stages": 8, "micro_batches": 3, "schedule": "1f1b",
        "observations": [
          {"stage": 0, "layers": {"none": 3, "full": 1}, "peak_memory_mb": 41234.5},
          {"stage": 6, "layers": {"select": 2}, "in_flight": 2, "peak_memory_mb": 3000}]})";
    const DryRunSet v1 = read_dryrun(R"({"format": "ppb.dryrun/1", )" + body);
    const DryRunSet v2 = read_dryrun(R"({"format": "ppb.dryrun/2", )" + body);
    BOOST_TEST(v1.revision == 1u);
    BOOST_TEST(v2.revision == 2u);
    BOOST_TEST(v2.num_chunks == 1u);
    BOOST_TEST_REQUIRE(v1.observations.size() == v2.observations.size());
    for (std::size_t i = 0; i < v1.observations.size(); ++i) {
        const auto& a = v1.observations[i].placement;
        const auto& b = v2.observations[i].placement;
        BOOST_TEST(a.num_stages == b.num_stages);
        BOOST_TEST(a.stage == b.stage);
        BOOST_TEST_REQUIRE(b.chunks.size() == 1u);
        BOOST_TEST(a.chunks[0].in_flight == b.chunks[0].in_flight);
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            BOOST_TEST(a.chunks[0].layers[k] == b.chunks[0].layers[k]);
    }
}

BOOST_AUTO_TEST_CASE(version_1_keeps_refusing_chunks_and_names_the_revision) {
    PPB_CHECK_ERROR(
        InputError, read_dryrun(R"({"format": "ppb.dryrun/1", "num_stages": 4, "observations": [
                  {"stage": 0, "chunks": [], "peak_memory_mb": 1}]})"),
        "dryrun.json: observations[0].chunks: 'chunks' needs \"format\": \"ppb.dryrun/2\"");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(R"({"format": "ppb.dryrun/1", "num_chunks": 2, "observations": []})"),
        "dryrun.json: num_chunks: 'num_chunks' needs \"format\": \"ppb.dryrun/2\"");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(R"({"format": "ppb.dryrun/1", "schedule": "interleaved", "observations": []})"),
        "dryrun.json: schedule: schedule 'interleaved' runs several chunks per stage",
        "write \"format\": \"ppb.dryrun/2\"");
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": "ppb.dryrun/4", "observations": []})"),
                    "format: unsupported format version 'ppb.dryrun/4' (this ppb reads "
                    "ppb.dryrun/1, ppb.dryrun/2 and ppb.dryrun/3)");
}

BOOST_AUTO_TEST_CASE(schedule_names_and_chunk_counts) {
    const std::string obs = R"({"stage": 0, "layers": {}, "peak_memory_mb": 1})";
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v2(R"("num_stages": 2, "schedule": "interleave")", obs)),
                    "dryrun.json: schedule: unknown schedule 'interleave' (did you mean "
                    "'interleaved'? expected one of: 1f1b, interleaved, interleaved-less-memory, "
                    "dualpipe-v, zb-h1, zb-v, combined-1f1b)");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v2(R"("num_stages": 2, "schedule": "dualpipev")", obs)),
                    "did you mean 'dualpipe-v'?");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v2(R"("num_stages": 2, "schedule": "interleaved")", obs)),
                    "dryrun.json: missing required field 'num_chunks' (schedule 'interleaved' "
                    "runs 2 or more chunks per stage");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(
            document_v2(R"("num_stages": 2, "schedule": "interleaved", "num_chunks": 1)", obs)),
        "dryrun.json: num_chunks: schedule 'interleaved' runs 2 or more chunks per stage, not 1");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(
            document_v2(R"("num_stages": 2, "schedule": "dualpipe-v", "num_chunks": 3)", obs)),
        "dryrun.json: num_chunks: schedule 'dualpipe-v' runs 2 chunks per stage, not 3");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v2(R"("num_stages": 2, "num_chunks": 2)", obs)),
                    "dryrun.json: num_chunks: schedule '1f1b' runs one chunk per stage, not 2");
    // Megatron-LM's combined 1F1B: one chunk only without a pipeline, refused where it is
    // observed on two stages; without "num_chunks" the file must say how many.
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(
            document_v2(R"("num_stages": 2, "schedule": "combined-1f1b", "num_chunks": 1)", obs)),
        "dryrun.json: observations[0]: combined-1f1b runs at least two chunks per stage (one "
        "only without a pipeline: Megatron-LM overlaps the expert all-to-all of a pipeline only "
        "in its interleaved schedule), got 1 with 2 stages");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(document_v2(R"("num_stages": 2, "schedule": "combined-1f1b")", obs)),
        "dryrun.json: missing required field 'num_chunks' (schedule 'combined-1f1b' runs 2 or more "
        "(1 without a pipeline) chunks per stage");
    BOOST_TEST(read_dryrun(document_v2(R"("num_stages": 1, "schedule": "combined-1f1b",
                                          "num_chunks": 1, "micro_batches": 4)",
                                       obs))
                   .observations.at(0)
                   .placement.chunks.at(0)
                   .in_flight == 1u);
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v2(
                        R"("num_stages": 2, "schedule": "interleaved", "num_chunks": 65)", obs)),
                    "dryrun.json: num_chunks: 65 is out of range (1 to 64 chunks)");
    // An observation's own schedule is checked where it is given.
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v2(R"("num_stages": 2)",
                                            R"({"stage": 0, "schedule": "interleaved", "layers": {},
                                          "peak_memory_mb": 1})")),
                    "dryrun.json: observations[0]: missing required field 'num_chunks'");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(document_v2(R"("num_stages": 2)",
                                R"({"stage": 0, "schedule": "dualpipe-v", "num_chunks": 4,
                                          "chunks": [], "peak_memory_mb": 1})")),
        "dryrun.json: observations[0].num_chunks: schedule 'dualpipe-v' runs 2 "
        "chunks per stage, not 4");
}

BOOST_AUTO_TEST_CASE(chunks_that_do_not_fit_the_schedule) {
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(interleaved_with(R"("stage": 0, "chunks": [{"layers": {"none": 3}}],
                                              "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0].chunks: has 1 entry but schedule 'interleaved' "
                    "runs 2 chunks per stage (num_chunks): give one entry per chunk");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(interleaved_with(
            R"("stage": 0, "chunks": [{"layers": {}}, {"layers": {}}, {"layers": {}}],
               "peak_memory_mb": 1)")),
        "observations[0].chunks: has 3 entries but schedule 'interleaved' runs 2 chunks");
    PPB_CHECK_ERROR(InputError, read_dryrun(interleaved_with(R"("stage": 0, "layers": {"none": 6},
                                              "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0].layers: schedule 'interleaved' runs 2 chunks "
                    "per stage: give \"chunks\", one entry per chunk");
    PPB_CHECK_ERROR(InputError, read_dryrun(interleaved_with(R"("stage": 0, "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0]: missing required field 'chunks'");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(interleaved_with(R"("stage": 0, "in_flight": 3, )" + two_chunks +
                                                 R"(, "peak_memory_mb": 1)")),
                    "dryrun.json: observations[0].in_flight: schedule 'interleaved' runs 2 "
                    "chunks per stage: give \"in_flight\" per chunk (chunks[c].in_flight)");
    // Chunks for a one-chunk schedule.
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v2(R"("num_stages": 4)", "{\"stage\": 0, " + two_chunks +
                                                                      R"(, "peak_memory_mb": 1})")),
                    "dryrun.json: observations[0].chunks: schedule '1f1b' runs one chunk per "
                    "stage: give \"layers\" (and \"in_flight\") instead of \"chunks\"");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(interleaved_with(R"("stage": 0, "chunks": {}, "peak_memory_mb": 1)")),
        "dryrun.json: observations[0].chunks: expected an array, got an empty object");
}

BOOST_AUTO_TEST_CASE(bad_chunk_entries) {
    const auto with_chunks = [](const std::string& chunks) {
        return read_dryrun(
            interleaved_with(R"("stage": 1, "chunks": )" + chunks + R"(, "peak_memory_mb": 1)"));
    };
    PPB_CHECK_ERROR(InputError, with_chunks(R"([{"layers": {}}, {"layer": {}}])"),
                    "dryrun.json: observations[0].chunks[1]: unknown field 'layer' (did you mean "
                    "'layers'? expected one of: layers, in_flight)");
    PPB_CHECK_ERROR(InputError, with_chunks(R"([{"layers": {}}, {}])"),
                    "dryrun.json: observations[0].chunks[1]: missing required field 'layers'");
    PPB_CHECK_ERROR(InputError, with_chunks(R"([{"layers": {}}, 3])"),
                    "dryrun.json: observations[0].chunks[1]: expected an object, got 3");
    PPB_CHECK_ERROR(InputError, with_chunks(R"([{"layers": {"ful": 1}}, {"layers": {}}])"),
                    "dryrun.json: observations[0].chunks[0].layers: unknown recompute kind 'ful' "
                    "(did you mean 'full'?");
    PPB_CHECK_ERROR(InputError, with_chunks(R"([{"layers": {"none": -1}}, {"layers": {}}])"),
                    "observations[0].chunks[0].layers.none: -1 is out of range (0 to 10000 "
                    "layers)");
    PPB_CHECK_ERROR(InputError, with_chunks(R"([{"layers": {}, "in_flight": 0}, {"layers": {}}])"),
                    "dryrun.json: observations[0].chunks[0].in_flight: 0 is out of range (1 to "
                    "1000000 micro-batches)");
    PPB_CHECK_ERROR(InputError, with_chunks(R"([{"layers": {}}, {"layers": {}, "in_flight": 9}])"),
                    "dryrun.json: observations[0].chunks[1].in_flight: 9 is out of range (1 to 8 "
                    "micro-batches: a chunk holds at most the 8 micro-batches of the iteration)");
    PPB_CHECK_ERROR(InputError,
                    with_chunks(R"([{"layers": {}}, {"layers": {}, "in_flight": 2.5}])"),
                    "observations[0].chunks[1].in_flight: expected an integer");
    // Without a micro-batch count any count in range is taken as given.
    const DryRunSet set = read_dryrun(
        document_v2(R"("num_stages": 4, "schedule": "interleaved", "num_chunks": 2)",
                    R"({"stage": 1, "chunks": [{"layers": {}, "in_flight": 40}, {"layers": {}}],
            "peak_memory_mb": 1})"));
    BOOST_TEST(set.observations[0].placement.chunks[0].in_flight == 40u);
}

BOOST_AUTO_TEST_CASE(duplicates_compare_the_chunk_structure) {
    // Same stage, same totals per kind, chunks arranged differently: different placements.
    const std::string a =
        R"({"stage": 1, "chunks": [{"layers": {"none": 4}}, {"layers": {"none": 2}}],
                              "peak_memory_mb": 1000})";
    const std::string b =
        R"({"stage": 1, "chunks": [{"layers": {"none": 2}}, {"layers": {"none": 4}}],
                              "peak_memory_mb": 1200})";
    const std::string top = R"("num_stages": 4, "micro_batches": 8, "schedule": "interleaved",
                               "num_chunks": 2)";
    BOOST_TEST(read_dryrun(document_v2(top, a + ", " + b)).observations.size() == 2u);
    // The same chunks measured twice, differently: contradictory, and the message shows them.
    const auto counts = ppb::in_flight_counts(Schedule::interleaved, 4, 1, 8, 2);
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(document_v2(top, a + ", " +
                                         R"({"stage": 1, "chunks": [{"layers": {"none": 4}},
                                       {"layers": {"none": 2}}], "peak_memory_mb": 1100})")),
        "observations[0] and observations[1] describe the same placement (stage 1 of 4, chunk 0: " +
            std::to_string(counts[0]) + " in flight, layers none=4; chunk 1: " +
            std::to_string(counts[1]) + " in flight, layers none=2) but their memories differ");
    // Explicit in-flight counts equal to the defaults are the same placement.
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(document_v2(
            top, a + ", " + R"({"stage": 1, "chunks": [{"layers": {"none": 4}, "in_flight": )" +
                     std::to_string(counts[0]) +
                     R"(}, {"layers": {"none": 2}}], "peak_memory_mb": 900})")),
        "describe the same placement");
    // A one-chunk observation of the same layers is another placement.
    BOOST_TEST(read_dryrun(document_v2(top, a + R"(, {"stage": 1, "schedule": "1f1b",
                                             "layers": {"none": 6}, "peak_memory_mb": 700})"))
                   .observations.size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dryrun_chunks_tests
