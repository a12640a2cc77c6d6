// From readings to ppb.dryrun/1: one observation per stage, new files, appending, writing.
#include "scratch.hpp"

#include <ppb/dryrun_format.hpp>
#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/kinds.hpp>
#include <ppb/output_file.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

using namespace ppb::importers;
using ppb_test::Scratch;
namespace fs = std::filesystem;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace dryrun_builder_tests {

namespace {

PipelineLayout layout_4x2() {
    PipelineLayout l;
    l.num_stages = 4;
    l.ranks_per_stage = 2;
    l.micro_batches = 8;
    l.ranks_explained = "data_parallel 2";
    l.stages = {KindCounts{0, 6, 0, 0, 3}, KindCounts{0, 10, 0, 0, 0}, KindCounts{2, 8, 0, 0, 0},
                KindCounts{11, 0, 0, 0, 0}};
    return l;
}

// layout_4x2 interleaved: two chunks per stage, the same totals.
PipelineLayout interleaved_4x2() {
    PipelineLayout l = layout_4x2();
    l.schedule = ppb::Schedule::interleaved;
    l.num_chunks = 2;
    l.chunks = {{KindCounts{0, 2, 0, 0, 3}, KindCounts{0, 4, 0, 0, 0}},
                {KindCounts{0, 5, 0, 0, 0}, KindCounts{0, 5, 0, 0, 0}},
                {KindCounts{2, 3, 0, 0, 0}, KindCounts{0, 5, 0, 0, 0}},
                {KindCounts{5, 0, 0, 0, 0}, KindCounts{6, 0, 0, 0, 0}}};
    return l;
}

ImportedDryRun run_of(const PipelineLayout& layout, std::vector<StageObservation> observations,
                      std::string label = "A") {
    ImportedDryRun run;
    run.num_stages = layout.num_stages;
    run.micro_batches = layout.micro_batches;
    run.schedule = layout.schedule;
    run.num_chunks = layout.num_chunks;
    run.label = std::move(label);
    run.observations = std::move(observations);
    return run;
}

std::vector<StageObservation> observations_of(const PipelineLayout& layout,
                                              std::vector<MemoryReading> readings) {
    Messages messages;
    return stage_observations(layout, readings, messages);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dryrun_builder)

BOOST_AUTO_TEST_CASE(replicas_of_a_stage_give_their_largest_reading) {
    Messages messages;
    const std::vector<MemoryReading> readings = {{0, 1000.0, "r0.log", 5},
                                                 {1, 1004.0, "r1.log", 6},
                                                 {2, 900.0, "r2.log", 7},
                                                 {6, 800.0, "r6.log", 8},
                                                 {7, 880.0, "r7.log", 9}};
    const auto obs = stage_observations(layout_4x2(), readings, messages);
    BOOST_TEST_REQUIRE(obs.size() == 3u);
    BOOST_TEST(obs[0].stage == 0u);
    BOOST_TEST(obs[0].peak_memory_mb == 1004.0);
    BOOST_TEST(obs[0].layers == (KindCounts{0, 6, 0, 0, 3}));
    BOOST_TEST(obs[0].comment == "largest of ranks 0, 1: rank 1, r1.log:6");
    BOOST_TEST(obs[1].stage == 1u);
    BOOST_TEST(obs[1].comment == "rank 2, r2.log:7");
    BOOST_TEST(obs[2].stage == 3u);
    BOOST_TEST(obs[2].peak_memory_mb == 880.0);

    std::string notes;
    std::string warnings;
    for (const Message& m : messages)
        (m.level == Message::Level::note ? notes : warnings) += m.text + "\n";
    ppb_test::check_contains(
        notes,
        {"several ranks per stage", "largest reading", "stage 0: ranks 0, 1; stage 3: ranks 6, 7",
         "no log for stage 2 of the 4-stage pipeline", "imported stages 0, 1, 3"});
    // Stage 3's ranks differ by 9 %, stage 0's by 0.4 %: only stage 3 is suspicious.
    ppb_test::check_contains(
        warnings, {"stage 3: its ranks' readings differ by 9.1 %", "r6.log:8", "r7.log:9"});
    BOOST_TEST(warnings.find("stage 0") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_rank_outside_the_layout) {
    Messages messages;
    const std::vector<MemoryReading> readings = {{8, 1000.0, "rank_8.log", 12}};
    PPB_CHECK_THROWS(ppb::InputError, stage_observations(layout_4x2(), readings, messages),
                     "rank_8.log:12: rank 8 is not a rank of this job",
                     "4 stages x 2 ranks per stage (data_parallel 2) = 8 ranks, 0..7");
}

BOOST_AUTO_TEST_CASE(a_new_document_reads_back) {
    const PipelineLayout layout = layout_4x2();
    ImportedDryRun run =
        run_of(layout, observations_of(layout, {{0, 1000.0, "a.log", 1}, {4, 950.5, "b.log", 2}}),
               "run-7");
    run.comment = "imported for a test";
    const std::string text = new_dryrun_text(run);
    const ppb::DryRunSet set = ppb::parse_dryrun(text);
    BOOST_TEST(set.num_stages == 4u);
    BOOST_TEST(set.micro_batches == 8u);
    BOOST_TEST_REQUIRE(set.observations.size() == 2u);
    BOOST_TEST(set.observations[1].config == "run-7");
    BOOST_TEST(set.observations[1].placement.stage == 2u);
    BOOST_TEST(set.observations[1].peak_memory_mb == 950.5);
    BOOST_TEST(set.observations[1].placement.chunks[0].layers[PPB_KIND_NONE] == 2u);
    BOOST_TEST(set.observations[1].placement.chunks[0].in_flight == 2u);

    const json::object doc = json::parse(text).as_object();
    BOOST_TEST(doc.at("comment").as_string() == "imported for a test");
    BOOST_TEST(doc.at("schedule").as_string() == "1f1b");
    const json::object& first = doc.at("observations").at(0).as_object();
    BOOST_TEST(first.at("layers").as_object().size() == 2u);  // kinds with layers only
    BOOST_TEST(first.at("comment").as_string() == "rank 0, a.log:1");

    run.micro_batches.reset();
    BOOST_TEST(!json::parse(new_dryrun_text(run)).as_object().contains("micro_batches"));
    run.label.clear();
    PPB_CHECK_THROWS(FlagError, (void)new_dryrun_text(run), "--label", "empty");
}

BOOST_AUTO_TEST_CASE(appending_a_second_dry_run) {
    const PipelineLayout layout = layout_4x2();
    const std::string existing = new_dryrun_text(
        run_of(layout, observations_of(layout, {{0, 1000.0, "a.log", 1}, {2, 900.0, "a.log", 2}})));
    Messages messages;
    const ImportedDryRun b = run_of(layout, observations_of(layout, {{6, 700.0, "b.log", 1}}), "B");
    const std::string text = appended_dryrun_text(existing, "file.json", b, {}, messages);
    BOOST_TEST(messages.empty());
    const ppb::DryRunSet set = ppb::parse_dryrun(text);
    BOOST_TEST_REQUIRE(set.observations.size() == 3u);
    BOOST_TEST(set.observations[0].config == "A");
    BOOST_TEST(set.observations[2].config == "B");
    BOOST_TEST(set.observations[2].placement.stage == 3u);
    const json::object doc = json::parse(text).as_object();
    BOOST_TEST(!doc.at("observations").at(2).as_object().contains("num_stages"));
    // The existing document is kept as it was.
    BOOST_TEST(json::parse(existing).at("observations").at(1) == doc.at("observations").at(1));

    PPB_CHECK_THROWS(ppb::InputError,
                     (void)appended_dryrun_text(text, "file.json", b, {}, messages),
                     "file.json: observations[2] already has config 'B'", "another --label");
}

BOOST_AUTO_TEST_CASE(appending_a_dry_run_of_another_shape) {
    const PipelineLayout layout = layout_4x2();
    const std::string existing =
        new_dryrun_text(run_of(layout, observations_of(layout, {{0, 1000.0, "a.log", 1}})));
    PipelineLayout two = layout;
    two.num_stages = 2;
    two.micro_batches = 4;
    two.stages.resize(2);
    Messages messages;
    std::string text = appended_dryrun_text(
        existing, "file.json", run_of(two, observations_of(two, {{2, 500.0, "b.log", 1}}), "B"), {},
        messages);
    json::object added = json::parse(text).at("observations").at(1).as_object();
    BOOST_TEST(added.at("num_stages").to_number<int>() == 2);
    BOOST_TEST(added.at("micro_batches").to_number<int>() == 4);
    BOOST_TEST(messages.size() == 2u);
    BOOST_TEST(ppb::parse_dryrun(text).observations[1].placement.chunks[0].in_flight == 1u);

    // No micro-batch count in the appended dry run, one in the file: in_flight says P - stage.
    PipelineLayout unknown = layout;
    unknown.micro_batches.reset();
    messages.clear();
    text = appended_dryrun_text(
        existing, "file.json",
        run_of(unknown, observations_of(unknown, {{0, 1005.0, "c.log", 1}}), "C"), {}, messages);
    added = json::parse(text).at("observations").at(1).as_object();
    BOOST_TEST(added.at("in_flight").to_number<int>() == 4);
    BOOST_TEST(!added.contains("micro_batches"));
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text, {"file.json has micro_batches 8", "in_flight"});
}

BOOST_AUTO_TEST_CASE(an_interleaved_run_round_trips_through_ppb_dryrun_2) {
    const PipelineLayout layout = interleaved_4x2();
    const auto observations =
        observations_of(layout, {{0, 1000.0, "a.log", 1}, {5, 900.0, "b.log", 2}});
    BOOST_TEST_REQUIRE(observations.size() == 2u);
    BOOST_TEST(observations[1].chunks == layout.chunks[2]);
    BOOST_TEST(observations[1].layers == layout.stages[2]);
    const std::string text = new_dryrun_text(run_of(layout, observations));
    const json::object doc = json::parse(text).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/2");
    BOOST_TEST(doc.at("schedule").as_string() == "interleaved");
    BOOST_TEST(doc.at("num_chunks").to_number<int>() == 2);
    const json::object first = doc.at("observations").at(0).as_object();
    BOOST_TEST(!first.contains("layers"));
    BOOST_TEST(first.at("chunks").as_array().size() == 2u);

    const ppb::DryRunSet set = ppb::parse_dryrun(text);
    BOOST_TEST(set.num_chunks == 2u);
    BOOST_TEST_REQUIRE(set.observations.size() == 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& placement = set.observations[i].placement;
        const std::uint32_t stage = placement.stage;
        BOOST_TEST_REQUIRE(placement.chunks.size() == 2u);
        const auto counts = ppb::in_flight_counts(ppb::Schedule::interleaved, 4, stage, 8, 2);
        for (std::size_t c = 0; c < 2; ++c) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                BOOST_TEST(placement.chunks[c].layers[k] == layout.chunks[stage][c][k]);
            BOOST_TEST(placement.chunks[c].in_flight == counts[c]);
        }
    }
    // A one-chunk 1F1B run still writes ppb.dryrun/1, which every ppb reads.
    const PipelineLayout plain = layout_4x2();
    const std::string v1 =
        new_dryrun_text(run_of(plain, observations_of(plain, {{0, 1000.0, "a.log", 1}})));
    BOOST_TEST(json::parse(v1).at("format").as_string() == "ppb.dryrun/1");
}

BOOST_AUTO_TEST_CASE(appending_an_interleaved_run_to_a_1f1b_file) {
    const PipelineLayout plain = layout_4x2();
    const std::string existing =
        new_dryrun_text(run_of(plain, observations_of(plain, {{0, 1000.0, "a.log", 1}})));
    const PipelineLayout layout = interleaved_4x2();
    Messages messages;
    std::string text = appended_dryrun_text(
        existing, "file.json",
        run_of(layout, observations_of(layout, {{2, 950.0, "b.log", 1}}), "B"), {}, messages);
    json::object doc = json::parse(text).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/2");
    BOOST_TEST(doc.at("schedule").as_string() == "1f1b");  // the old observations keep theirs
    const json::object added = doc.at("observations").at(1).as_object();
    BOOST_TEST(added.at("schedule").as_string() == "interleaved");
    BOOST_TEST(added.at("num_chunks").to_number<int>() == 2);
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text, {"file.json was ppb.dryrun/1", "now ppb.dryrun/2"});
    const ppb::DryRunSet set = ppb::parse_dryrun(text);
    BOOST_TEST(set.observations[0].placement.chunks.size() == 1u);
    BOOST_TEST(set.observations[1].placement.chunks.size() == 2u);

    // Appending a 1F1B run to the interleaved file: its observations say "1f1b" themselves.
    messages.clear();
    const std::string interleaved =
        new_dryrun_text(run_of(layout, observations_of(layout, {{2, 950.0, "b.log", 1}})));
    text = appended_dryrun_text(
        interleaved, "i.json",
        run_of(plain, observations_of(plain, {{0, 1000.0, "a.log", 1}}), "C"), {}, messages);
    doc = json::parse(text).as_object();
    const json::object plain_added = doc.at("observations").at(1).as_object();
    BOOST_TEST(plain_added.at("schedule").as_string() == "1f1b");
    BOOST_TEST(!plain_added.contains("num_chunks"));
    BOOST_TEST(plain_added.contains("layers"));
    BOOST_TEST(ppb::parse_dryrun(text).observations[1].placement.chunks.size() == 1u);

    // Without a micro-batch count in the run but with one in the file: explicit counts per chunk.
    PipelineLayout unknown = layout;
    unknown.micro_batches.reset();
    messages.clear();
    text = appended_dryrun_text(
        existing, "file.json",
        run_of(unknown, observations_of(unknown, {{0, 990.0, "c.log", 1}}), "D"), {}, messages);
    const auto chunks = json::parse(text).at("observations").at(1).at("chunks").as_array();
    const auto counts = ppb::in_flight_counts(ppb::Schedule::interleaved, 4, 0, 0, 2);
    BOOST_TEST(chunks.at(0).at("in_flight").to_number<std::uint32_t>() == counts[0]);
    BOOST_TEST(chunks.at(1).at("in_flight").to_number<std::uint32_t>() == counts[1]);
}

BOOST_AUTO_TEST_CASE(appending_refuses_contradictions_and_bad_files) {
    const PipelineLayout layout = layout_4x2();
    const std::string existing =
        new_dryrun_text(run_of(layout, observations_of(layout, {{0, 1000.0, "a.log", 1}})));
    Messages messages;
    const ImportedDryRun same_placement =
        run_of(layout, observations_of(layout, {{0, 1100.0, "b.log", 1}}), "B");
    PPB_CHECK_THROWS(
        ppb::InputError,
        (void)appended_dryrun_text(existing, "file.json", same_placement, {}, messages),
        "file.json", "observations[0] and observations[1] describe the same placement");
    ppb::DryRunReadOptions loose;
    loose.duplicate_tolerance = 0.2;
    BOOST_TEST(
        !appended_dryrun_text(existing, "file.json", same_placement, loose, messages).empty());
    PPB_CHECK_THROWS(ppb::InputError,
                     (void)appended_dryrun_text("{\"format\": \"ppb.fit/1\"}", "fit.json",
                                                same_placement, {}, messages),
                     "fit.json", "format");
}

BOOST_AUTO_TEST_CASE(files_are_replaced_atomically) {
    Scratch dir;
    const fs::path file = dir / "out.json";
    write_file_atomically(file, "first\n");
    BOOST_TEST(ppb_test::read_file(file) == "first\n");
    ::chmod(file.c_str(), 0640);
    write_file_atomically(file, "second\n");
    BOOST_TEST(ppb_test::read_file(file) == "second\n");
    struct stat info {};
    BOOST_TEST_REQUIRE(::stat(file.c_str(), &info) == 0);
    BOOST_TEST((info.st_mode & 0777) == 0640u);
    // A symbolic link is followed: the file it names is replaced, the link stays.
    fs::create_symlink(file, dir / "link.json");
    write_file_atomically(dir / "link.json", "third\n");
    BOOST_TEST(fs::is_symlink(dir / "link.json"));
    BOOST_TEST(ppb_test::read_file(file) == "third\n");
    // Nothing but the file is left in the directory.
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path()))
        ++entries;
    BOOST_TEST(entries == 2u);
    PPB_CHECK_THROWS(ppb::OutputError, write_file_atomically(dir / "no/such/dir.json", "x"),
                     "dir.json: cannot write");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dryrun_builder_tests
