// Reserved memory beside the allocated peak: the dry-run format's "reserved_mb" (read, checked,
// written by the importers) and where each importer finds it.
#include "scratch.hpp"

#include <ppb/dryrun_format.hpp>
#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/mindspore.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace ppb::importers;
using ppb_test::Scratch;
namespace json = boost::json;

namespace reserved_tests {
namespace {

// A one-observation document of `format` whose observation ends with `memory`.
std::string document(const std::string& format, const std::string& memory) {
    const std::string layers =
        format == "ppb.dryrun/3" ? R"("groups": ["dense"], )" : std::string();
    const std::string stage_layers =
        format == "ppb.dryrun/3" ? R"({"dense": {"none": 2}})" : R"({"none": 2})";
    return R"({"format": ")" + format + R"(", )" + layers +
           R"("num_stages": 2, "observations": [{"stage": 0, "layers": )" + stage_layers + ", " +
           memory + "}]}";
}

std::string refusal(const std::string& text) {
    return ppb_test::error_message<ppb::InputError>(
        [&] { (void)ppb::parse_dryrun(text, "run.json"); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reserved_memory)

BOOST_AUTO_TEST_CASE(an_observation_may_carry_reserved_memory_in_every_revision) {
    for (const std::string format : {"ppb.dryrun/1", "ppb.dryrun/2", "ppb.dryrun/3"}) {
        BOOST_TEST_CONTEXT(format) {
            const auto with = ppb::parse_dryrun(
                document(format, R"("peak_memory_mb": 1000.5, "reserved_mb": 1200)"), "run.json");
            BOOST_TEST(with.observations.front().peak_memory_mb == 1000.5);
            BOOST_TEST(with.observations.front().reserved_mb.value_or(0) == 1200.0);
            // Old files stay valid: without it, no reserved memory.
            const auto without =
                ppb::parse_dryrun(document(format, R"("peak_memory_mb": 1000.5)"), "run.json");
            BOOST_TEST(!without.observations.front().reserved_mb.has_value());
            // Equal is fine: nothing cached beyond the peak.
            BOOST_TEST(
                ppb::parse_dryrun(document(format, R"("peak_memory_mb": 10, "reserved_mb": 10.0)"),
                                  "run.json")
                    .observations.front()
                    .reserved_mb.value_or(0) == 10.0);
        }
    }
}

BOOST_AUTO_TEST_CASE(bad_reserved_memory_is_named_with_its_file_and_observation) {
    const auto doc = [](const std::string& reserved) {
        return document("ppb.dryrun/1", R"("peak_memory_mb": 1000, "reserved_mb": )" + reserved);
    };
    BOOST_TEST(refusal(doc("900")) ==
               "run.json: observations[0].reserved_mb: 900.0 MB is less than the observation's "
               "peak_memory_mb 1000.0 MB: reserved memory holds the allocated memory, so its peak "
               "is at least the allocated peak");
    BOOST_TEST(refusal(doc("-5")) ==
               "run.json: observations[0].reserved_mb: -5 is out of range (greater than 0, at "
               "most 1e9 MB)");
    BOOST_TEST(refusal(doc("0")) ==
               "run.json: observations[0].reserved_mb: 0 is out of range (greater than 0, at most "
               "1e9 MB)");
    BOOST_TEST(refusal(doc("\"NaN\"")) ==
               "run.json: observations[0].reserved_mb: expected a positive number of MB, got "
               "\"NaN\"");
    BOOST_TEST(refusal(doc("null")) ==
               "run.json: observations[0].reserved_mb: expected a positive number of MB, got null");
    BOOST_TEST(refusal(doc("NaN")).find("run.json:1:") == 0u);
    BOOST_TEST(refusal(doc("1e400")).find("number out of range: 1e400") != std::string::npos);
    BOOST_TEST(refusal(doc("2e9")) ==
               "run.json: observations[0].reserved_mb: 2000000000.0 is out of range (greater than "
               "0, at most 1e9 MB)");
}

BOOST_AUTO_TEST_CASE(stages_take_the_largest_reserved_memory_of_their_ranks) {
    PipelineLayout layout;
    layout.num_stages = 2;
    layout.ranks_per_stage = 2;
    layout.stages = {ppb_test::kinds(4, 0, 0, 0, 0), ppb_test::kinds(4, 0, 0, 0, 0)};
    const std::vector<MemoryReading> readings = {{0, 1000.0, "a.log", 3, 1500.0, {}},
                                                 {1, 1005.0, "a.log", 4, 1400.0, {}},
                                                 {2, 900.0, "b.log", 3, std::nullopt, {}},
                                                 {3, 901.0, "b.log", 4, 950.0, {}}};
    Messages messages;
    const auto observations = stage_observations(layout, readings, messages);
    BOOST_TEST_REQUIRE(observations.size() == 2u);
    BOOST_TEST(observations[0].peak_memory_mb == 1005.0);
    BOOST_TEST(observations[0].reserved_mb.value_or(0) == 1500.0);
    // Stage 1's rank 2 gave no reserved memory: the stage's largest is not known.
    BOOST_TEST(!observations[1].reserved_mb.has_value());

    ImportedDryRun run;
    run.num_stages = 2;
    run.observations = observations;
    const json::value doc = json::parse(new_dryrun_text(run));
    const json::array& written = doc.at("observations").as_array();
    BOOST_TEST(written[0].at("reserved_mb").as_double() == 1500.0);
    BOOST_TEST(!written[1].as_object().contains("reserved_mb"));
    const auto read_back = ppb::parse_dryrun(new_dryrun_text(run), "x");
    BOOST_TEST(read_back.observations[0].reserved_mb.value_or(0) == 1500.0);
}

BOOST_AUTO_TEST_CASE(megatron_gives_max_reserved_beside_the_figure_imported) {
    Scratch dir;
    const auto path = dir.write(
        "train.log",
        "[Rank 0] (after 10 iterations) memory (MB) | allocated: 9334.4 | max allocated: 12680.6 "
        "| reserved: 13236.0 | max reserved: 13500.0\n"
        "[Rank 1] (after 10 iterations) memory (MB) | allocated: 9334.4 | max allocated: 12680.6 "
        "| reserved: 13236.0\n");
    const std::vector<LogFile> logs = {LogFile{path, "train.log", std::nullopt, true}};
    Messages messages;
    const auto scan = scan_megatron_logs(logs, MegatronMemory::max_allocated, messages);
    BOOST_TEST_REQUIRE(scan.readings.size() == 2u);
    BOOST_TEST(scan.readings[0].mb == 12680.6);
    BOOST_TEST(scan.readings[0].reserved_mb.value_or(0) == 13500.0);
    // An old line without the field: no reserved memory.
    BOOST_TEST(!scan.readings[1].reserved_mb.has_value());
    const auto allocated = scan_megatron_logs(logs, MegatronMemory::allocated, messages);
    BOOST_TEST(allocated.readings[0].mb == 9334.4);
    BOOST_TEST(allocated.readings[0].reserved_mb.value_or(0) == 13500.0);

    const auto bad = dir.write(
        "bad.log",
        "[Rank 0] (after 10 iterations) memory (MB) | allocated: 9334.4 | max allocated: 12680.6 "
        "| reserved: 11000.0 | max reserved: 11000.0\n");
    const std::vector<LogFile> bad_logs = {LogFile{bad, "bad.log", std::nullopt, true}};
    BOOST_TEST(ppb_test::error_message<ppb::InputError>([&] {
                   (void)scan_megatron_logs(bad_logs, MegatronMemory::max_allocated, messages);
               }) ==
               "bad.log:1: 'max reserved' is 11000.0 MB, less than 'max allocated' 12680.6 "
               "MB: PyTorch reserves at least what it allocates, so the line is damaged");
}

BOOST_AUTO_TEST_CASE(mindspore_gives_the_peak_with_fragments) {
    Scratch dir;
    const auto path = dir.write("rank_0.log", ppb_test::mindspore_log(19738, 20557));
    const std::vector<LogFile> logs = {LogFile{path, "rank_0.log", 0u, true}};
    Messages messages;
    auto readings = scan_mindspore_logs(logs, MindSporeMemory::used, messages);
    BOOST_TEST_REQUIRE(readings.size() == 1u);
    BOOST_TEST(readings[0].mb == 19738.0);
    BOOST_TEST(readings[0].reserved_mb.value_or(0) == 20557.0);
    BOOST_TEST(readings[0].reserved_where == "rank_0.log:7");
    readings = scan_mindspore_logs(logs, MindSporeMemory::actual, messages);
    BOOST_TEST(readings[0].mb == 20557.0);
    BOOST_TEST(readings[0].reserved_mb.value_or(0) == 20557.0);

    // The line alone: no reserved memory.
    const auto used_only =
        dir.write("rank_1.log", "Used peak memory usage (without fragments): 5M\n");
    const std::vector<LogFile> one = {LogFile{used_only, "rank_1.log", 1u, true}};
    BOOST_TEST(!scan_mindspore_logs(one, MindSporeMemory::used, messages)[0].reserved_mb);

    const auto bad = dir.write("rank_2.log", ppb_test::mindspore_log(20000, 19000));
    const std::vector<LogFile> bad_logs = {LogFile{bad, "rank_2.log", 2u, true}};
    BOOST_TEST(ppb_test::error_message<ppb::InputError>(
                   [&] { (void)scan_mindspore_logs(bad_logs, MindSporeMemory::used, messages); }) ==
               "rank_2.log:7: the peak with fragments, 19000M, is less than the peak "
               "without them on line 6, 20000M: the allocator's fragments only add to it, so "
               "the log is damaged");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace reserved_tests
