// SAPP's -init description of dry runs: layouts, recompute kinds and peak memories per stage,
// checked by hand against samples/data/import/sapp/init_pp4.yaml and small files.
#include "scratch.hpp"

#include <ppb/importers/sapp.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>

using namespace ppb::importers;
using ppb_test::kinds;
using ppb_test::Scratch;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace sapp_tests {

namespace {

const std::string sample = std::string(PPB_IMPORT_SAMPLES_DIR) + "/sapp/init_pp4.yaml";

void check(const StageObservation& o, std::uint32_t stage, const KindCounts& layers, double mb) {
    BOOST_TEST(o.stage == stage);
    BOOST_TEST(o.layers == layers);
    BOOST_TEST(o.peak_memory_mb == mb);
}

// A one-dry-run file in the shape of SAPP's init_demo.yaml.
const std::string one_run =
    "pipeline_config:\n"
    "  pipeline_num: 4\n"
    "  num_layer: 16\n"
    "  offset: [-1, 1, 1, -1]\n"
    "time_config:\n"
    "  head: 9\n"
    "  body: 9\n"
    "  tail: 18\n"
    "recompute_config:\n"
    "  recompute: [1, 0, 0, 0]\n"
    "  select_recompute: [2, 5, 0, true]\n"
    "  select_comm_recompute: [3, 2, 4, 0]\n"
    "memory_usage:\n"
    "  head_memory: 21000\n"
    "  tail_memory: 19500.5\n"
    "  body_memories:\n"
    "    stage_id: [2, 1]\n"
    "    memories: [18200, 18800]\n";

struct SappFixture {
    Scratch dir;
    Messages messages;

    SappDryRuns read(const std::string& text) {
        return read_sapp_init(dir.write("init.yaml", text), messages);
    }
    std::string file() const { return (dir / "init.yaml").string(); }
    // "init.yaml:N: " for the line of `text` that holds `needle`.
    std::string at(const std::string& text, const std::string& needle) const {
        const std::size_t pos = text.find(needle);
        BOOST_TEST_REQUIRE(pos != std::string::npos);
        const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n');
        return file() + ":" + std::to_string(line) + ": ";
    }
    std::string with(std::string text, const std::string& from, const std::string& to) const {
        const std::size_t pos = text.find(from);
        BOOST_TEST_REQUIRE(pos != std::string::npos);
        return text.replace(pos, from.size(), to);
    }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(sapp_init, SappFixture)

BOOST_AUTO_TEST_CASE(the_sample_three_dry_runs) {
    const SappDryRuns runs = read_sapp_init(sample, messages);
    BOOST_TEST(runs.num_stages == 4u);
    BOOST_TEST(runs.num_layers == 32u);
    BOOST_TEST_REQUIRE(runs.rounds.size() == 3u);

    // Dry run 1: offsets [-1, 0, 0, 1] -> 7, 8, 8, 9 layers; select [7, 8, 4, 0]; no full or
    // comm. Memories of stages 1 and 2 only (head and tail belong to the last run).
    const SappRound& a = runs.rounds[0];
    BOOST_TEST(a.stages[0] == kinds(0, 7, 0, 0, 0));
    BOOST_TEST(a.stages[3] == kinds(9, 0, 0, 0, 0));
    BOOST_TEST_REQUIRE(a.observations.size() == 2u);
    check(a.observations[0], 1, kinds(0, 8, 0, 0, 0), 16860);
    check(a.observations[1], 2, kinds(4, 4, 0, 0, 0), 17100);

    // Dry run 2: offsets [-2, 1, 1, 0] -> 6, 9, 9, 8; select_recompute true: every layer.
    const SappRound& b = runs.rounds[1];
    BOOST_TEST(b.stages[0] == kinds(0, 6, 0, 0, 0));
    BOOST_TEST(b.stages[3] == kinds(0, 8, 0, 0, 0));
    BOOST_TEST_REQUIRE(b.observations.size() == 2u);
    check(b.observations[0], 1, kinds(0, 9, 0, 0, 0), 18580);
    check(b.observations[1], 2, kinds(0, 9, 0, 0, 0), 16870);

    // Dry run 3: offset 0 -> 8 layers each; recompute [0, 2, 0, 0], select [8, 5, 0, 0]:
    // stage 1 has 2 full, 5 - 2 = 3 select, 8 - 5 = 3 none. Head and tail memories are here.
    const SappRound& c = runs.rounds[2];
    BOOST_TEST_REQUIRE(c.observations.size() == 4u);
    check(c.observations[0], 0, kinds(0, 8, 0, 0, 0), 20780);
    check(c.observations[1], 1, kinds(3, 3, 0, 0, 2), 17880);
    check(c.observations[2], 2, kinds(8, 0, 0, 0, 0), 18860);
    check(c.observations[3], 3, kinds(8, 0, 0, 0, 0), 18880);
    BOOST_TEST(c.observations[0].comment.find("memory_usage.head_memory") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(one_dry_run_as_in_init_demo) {
    const SappDryRuns runs = read(one_run);
    BOOST_TEST_REQUIRE(runs.rounds.size() == 1u);
    const auto& o = runs.rounds[0].observations;
    BOOST_TEST_REQUIRE(o.size() == 4u);
    // Stage 0: 3 layers, full 1, select 2 -> 1 beyond full, comm 3 -> 2 beyond: both 1, comm 1.
    check(o[0], 0, kinds(0, 0, 1, 1, 1), 21000);
    // Stage 1: 5 layers, select 5, comm 2: both 2, select 3.
    check(o[1], 1, kinds(0, 3, 0, 2, 0), 18800);
    // Stage 2: 5 layers, comm 4: comm 4, none 1.
    check(o[2], 2, kinds(1, 0, 4, 0, 0), 18200);
    // Stage 3: 3 layers, select true: all 3.
    check(o[3], 3, kinds(0, 3, 0, 0, 0), 19500.5);
}

BOOST_AUTO_TEST_CASE(head_and_tail_lists_give_one_per_dry_run) {
    const std::string two_runs =
        with(with(with(with(one_run, "[-1, 1, 1, -1]", "[[-1, 1, 1, -1], 0]"),
                       "recompute: [1, 0, 0, 0]", "recompute: [[1, 0, 0, 0], false]"),
                  "select_recompute: [2, 5, 0, true]", "select_recompute: [[2, 5, 0, true], true]"),
             "select_comm_recompute: [3, 2, 4, 0]", "select_comm_recompute: [[3, 2, 4, 0], 0]");
    // One value each, and one body list per run: head and tail go to the last run (noted).
    std::string text = with(with(two_runs, "stage_id: [2, 1]", "stage_id: [[2, 1], [1]]"),
                            "memories: [18200, 18800]", "memories: [[18200, 18800], [17000]]");
    SappDryRuns runs = read(text);
    BOOST_TEST_REQUIRE(runs.rounds.size() == 2u);
    BOOST_TEST(runs.rounds[0].observations.size() == 2u);
    BOOST_TEST_REQUIRE(runs.rounds[1].observations.size() == 3u);
    check(runs.rounds[1].observations[0], 0, kinds(0, 4, 0, 0, 0), 21000);
    check(runs.rounds[1].observations[1], 1, kinds(0, 4, 0, 0, 0), 17000);
    BOOST_TEST(messages.size() >= 2u);
    // A list gives one per run; null for none.
    text = with(text, "head_memory: 21000", "head_memory: [20000, null]");
    runs = read(text);
    check(runs.rounds[0].observations[0], 0, kinds(0, 0, 1, 1, 1), 20000);
    BOOST_TEST(runs.rounds[1].observations.size() == 2u);
    text = with(text, "head_memory: [20000, null]", "head_memory: [20000]");
    PPB_CHECK_THROWS(ppb::InputError, read(text),
                     "memory_usage.head_memory: has 1 entries but pipeline_config.offset "
                     "describes 2 dry runs");
}

BOOST_AUTO_TEST_CASE(bad_files_name_the_key) {
    // Offsets that do not sum to num_layer.
    std::string text = with(one_run, "[-1, 1, 1, -1]", "[-1, 1, 1, 0]");
    PPB_CHECK_THROWS(ppb::InputError, read(text),
                     at(text, "offset") +
                         "pipeline_config.offset: the stages hold 3 + 5 + 5 + 4 "
                         "= 17 layers, but num_layer is 16");
    // Lists whose lengths disagree.
    text = with(one_run, "[2, 5, 0, true]", "[2, 5, 0]");
    PPB_CHECK_THROWS(ppb::InputError, read(text),
                     at(text, "select_recompute") +
                         "recompute_config.select_recompute: has 3 entries but "
                         "pipeline_config.pipeline_num is 4");
    text = with(one_run, "memories: [18200, 18800]", "memories: [18200]");
    PPB_CHECK_THROWS(
        ppb::InputError, read(text),
        at(text, "    memories:") + "memory_usage.body_memories.memories: has 1 memory but",
        "memory_usage.body_memories.stage_id has 2 stage ids");
    // Several dry runs, a recompute list for fewer.
    text = with(one_run, "[-1, 1, 1, -1]", "[[-1, 1, 1, -1], 0]");
    PPB_CHECK_THROWS(ppb::InputError, read(text),
                     "recompute_config.recompute: has 4 entries but pipeline_config.offset "
                     "describes 2 dry runs");
    // Stage ids.
    text = with(one_run, "stage_id: [2, 1]", "stage_id: [2, 2]");
    PPB_CHECK_THROWS(ppb::InputError, read(text), "stage 2 is given twice");
    text = with(one_run, "stage_id: [2, 1]", "stage_id: [2, 0]");
    PPB_CHECK_THROWS(ppb::InputError, read(text),
                     "memory_usage.body_memories.stage_id[1]: stage 0 is the head stage");
    text = with(one_run, "stage_id: [2, 1]", "stage_id: [2, 7]");
    PPB_CHECK_THROWS(ppb::InputError, read(text), "expected a stage id from 0 to 3");
    // Values.
    text = with(one_run, "head_memory: 21000", "head_memory: -5");
    PPB_CHECK_THROWS(ppb::InputError, read(text),
                     at(text, "head_memory") + "memory_usage.head_memory: -5 is out of range");
    text = with(one_run, "  head_memory: 21000\n", "");
    PPB_CHECK_THROWS(ppb::InputError, read(text), file() + ": no memory_usage.head_memory");
    text = with(one_run, "pipeline_num: 4", "pipeline_num: 0");
    PPB_CHECK_THROWS(ppb::InputError, read(text),
                     "pipeline_config.pipeline_num: 0 is out of range");
    text = with(one_run, "recompute: [1, 0, 0, 0]", "recompute: 2");
    PPB_CHECK_THROWS(ppb::InputError, read(text),
                     "recompute_config.recompute: expected true, false, 0 or a list");
    PPB_CHECK_THROWS(ppb::InputError, read("pipeline_config: [1\n"), "not valid YAML");
    PPB_CHECK_THROWS(ppb::InputError, read("- 1\n"), "expected a SAPP -init description");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sapp_tests
