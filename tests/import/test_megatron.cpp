// Megatron-LM: layouts from Megatron's flags, memory from report_memory() lines.
#include "scratch.hpp"

#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_layout.hpp>
#include <ppb/schedule.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace ppb::importers;
using ppb_test::kinds;
using ppb_test::Scratch;
namespace fs = std::filesystem;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_tests {

namespace {

std::string memory_line(int rank, double max_allocated, double max_reserved = 0.0) {
    return "[Rank " + std::to_string(rank) +
           "] (after 10 iterations) memory (MB) | allocated: 1000.5 | max allocated: " +
           std::to_string(max_allocated) + " | reserved: 2000.0 | max reserved: " +
           std::to_string(max_reserved > 0 ? max_reserved : max_allocated + 100.0);
}

struct MegatronFixture {
    Scratch dir;
    Messages messages;

    LogFile log(const std::string& relative, std::string_view text, bool named = true) {
        const fs::path path = dir.write(relative, text);
        return LogFile{path, path.string(), rank_from_path(path), named};
    }
    MegatronScan scan(const std::vector<LogFile>& logs,
                      MegatronMemory memory = MegatronMemory::max_allocated) {
        return scan_megatron_logs(logs, memory, messages);
    }
};

MegatronFlags flags(std::uint32_t p, std::uint32_t layers, std::uint32_t world = 8) {
    MegatronFlags f;
    f.pipeline_size = p;
    f.num_layers = layers;
    f.world_size = world;
    f.micro_batches = 16;
    return f;
}

std::vector<std::uint32_t> totals(const PipelineLayout& l) {
    std::vector<std::uint32_t> out;
    for (const auto& stage : l.stages)
        out.push_back(total_layers(stage));
    return out;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(megatron_layouts, MegatronFixture)

BOOST_AUTO_TEST_CASE(even_split_and_rank_order) {
    const PipelineLayout l = megatron_layout(flags(4, 32), MegatronScan{}, messages);
    BOOST_TEST(l.num_stages == 4u);
    BOOST_TEST(l.ranks_per_stage == 2u);
    BOOST_TEST(l.micro_batches.value_or(0) == 16u);
    BOOST_TEST(totals(l) == (std::vector<std::uint32_t>{8, 8, 8, 8}),
               boost::test_tools::per_element());
    BOOST_TEST(l.stages[0] == kinds(8, 0, 0, 0, 0));  // no recompute
    BOOST_TEST(messages.empty());
}

BOOST_AUTO_TEST_CASE(uneven_first_and_last_stages) {
    MegatronFlags f = flags(4, 30);
    f.first_stage_layers = 6;
    f.last_stage_layers = 6;
    BOOST_TEST(totals(megatron_layout(f, MegatronScan{}, messages)) ==
                   (std::vector<std::uint32_t>{6, 9, 9, 6}),
               boost::test_tools::per_element());
    f.last_stage_layers.reset();
    BOOST_TEST(totals(megatron_layout(f, MegatronScan{}, messages)) ==
                   (std::vector<std::uint32_t>{6, 8, 8, 8}),
               boost::test_tools::per_element());
    f.first_stage_layers = 7;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "leaves 23 layers for the other 3 stages", "do not divide evenly");
    f = flags(2, 10, 2);
    f.first_stage_layers = 4;
    f.last_stage_layers = 6;
    BOOST_TEST(
        totals(megatron_layout(f, MegatronScan{}, messages)) == (std::vector<std::uint32_t>{4, 6}),
        boost::test_tools::per_element());
    f.last_stage_layers = 5;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages), "leaves 1 layers",
                     "no stage can hold");
    f.last_stage_layers = 9;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "exceed --num-layers");
    f = flags(1, 10, 1);
    f.first_stage_layers = 4;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages), "at least 2 stages");
}

BOOST_AUTO_TEST_CASE(layers_must_divide) {
    PPB_CHECK_THROWS(FlagError, megatron_layout(flags(4, 30), MegatronScan{}, messages),
                     "--num-layers 30 does not divide into 4 stages");
}

BOOST_AUTO_TEST_CASE(recompute_kinds) {
    MegatronFlags f = flags(4, 32);
    f.recompute_granularity = "selective";
    BOOST_TEST(megatron_layout(f, MegatronScan{}, messages).stages[1] == kinds(0, 8, 0, 0, 0));
    f.recompute_granularity = "full";
    f.recompute_method = "uniform";
    f.recompute_num_layers = 1;
    BOOST_TEST(megatron_layout(f, MegatronScan{}, messages).stages[1] == kinds(0, 0, 0, 0, 8));
    f.recompute_method = "block";
    f.recompute_num_layers = 3;
    BOOST_TEST(megatron_layout(f, MegatronScan{}, messages).stages[1] == kinds(5, 0, 0, 0, 3));
    f.recompute_num_layers = 20;  // more than a stage holds: all of them, as Megatron does
    BOOST_TEST(megatron_layout(f, MegatronScan{}, messages).stages[1] == kinds(0, 0, 0, 0, 8));
}

// pp 4, 32 layers, 2 layers per virtual stage: 8 layers per stage in 4 chunks of 2.
BOOST_AUTO_TEST_CASE(virtual_pipeline_chunks) {
    MegatronFlags f = flags(4, 32);
    f.layers_per_virtual_stage = 2;
    f.recompute_granularity = "full";
    f.recompute_method = "block";
    f.recompute_num_layers = 1;  // the first layer of each chunk: 4 per stage
    PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.num_chunks == 4u);
    BOOST_TEST((l.schedule == ppb::Schedule::interleaved));
    BOOST_TEST_REQUIRE(l.chunks.size() == 4u);
    BOOST_TEST_REQUIRE(l.chunks[2].size() == 4u);
    BOOST_TEST(l.chunks[2][3] == kinds(1, 0, 0, 0, 1));
    BOOST_TEST(l.stages[2] == kinds(4, 0, 0, 0, 4));

    // By chunk count; uneven first and last stages (6, 8, 8, 6) split per chunk too.
    f = flags(4, 28);
    f.virtual_stages = 2;
    f.first_stage_layers = 6;
    f.last_stage_layers = 6;
    f.recompute_granularity = "selective";
    l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.num_chunks == 2u);
    BOOST_TEST(l.chunks[0][1] == kinds(0, 3, 0, 0, 0));
    BOOST_TEST(l.chunks[1][0] == kinds(0, 4, 0, 0, 0));
    BOOST_TEST(l.stages[3] == kinds(0, 6, 0, 0, 0));
    BOOST_TEST(describe_stages(l).starts_with(
        "stage 0: chunk 0 3 layers (select 3), chunk 1 3 layers (select 3); stage 1:"));
    // One chunk per stage is the plain 1F1B layout.
    f.virtual_stages = 1;
    l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.num_chunks == 1u);
    BOOST_TEST(l.chunks.empty());
}

// --overlap-moe-expert-parallel-comm: Megatron-LM's combined 1F1B, with a virtual pipeline or on
// one stage, its in-flight counts the interleaved schedule's (1F1B's on one stage); with a
// pipeline of one chunk per stage Megatron-LM refuses it, and so does the import, naming it.
BOOST_AUTO_TEST_CASE(the_expert_overlap_runs_the_combined_schedule) {
    MegatronFlags f = flags(4, 32);
    f.layers_per_virtual_stage = 2;
    f.overlap_moe_expert_parallel_comm = true;
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST((l.schedule == ppb::Schedule::combined_1f1b));
    BOOST_TEST(l.num_chunks == 4u);
    for (std::uint32_t s = 0; s < 4; ++s) {
        BOOST_TEST(ppb::in_flight_counts(l.schedule, 4, s, 16, 4) ==
                   ppb::in_flight_counts(ppb::Schedule::interleaved, 4, s, 16, 4));
    }
    MegatronFlags one = flags(1, 12);
    one.overlap_moe_expert_parallel_comm = true;
    const PipelineLayout single = megatron_layout(one, MegatronScan{}, messages);
    BOOST_TEST((single.schedule == ppb::Schedule::combined_1f1b));
    BOOST_TEST(single.num_chunks == 1u);
    MegatronFlags plain = flags(4, 32);
    plain.overlap_moe_expert_parallel_comm = true;
    PPB_CHECK_THROWS(FlagError, megatron_layout(plain, MegatronScan{}, messages),
                     "--overlap-moe-expert-parallel-comm with --pipeline-model-parallel-size 4 "
                     "needs a virtual pipeline");
}

BOOST_AUTO_TEST_CASE(virtual_pipeline_flags_megatron_refuses) {
    MegatronFlags f = flags(4, 32);
    f.layers_per_virtual_stage = 2;
    f.virtual_stages = 4;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "must not be given together");
    f.virtual_stages.reset();
    f.layers_per_virtual_stage = 3;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--num-layers-per-virtual-pipeline-stage 3 does not divide the 8 layers of "
                     "each stage");
    f.layers_per_virtual_stage = 2;
    f.first_stage_layers = 8;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "cannot be combined with --decoder-first-pipeline-num-layers",
                     "--num-virtual-stages-per-pipeline-rank instead");
    f = flags(4, 28);
    f.first_stage_layers = 7;
    f.last_stage_layers = 7;
    f.virtual_stages = 2;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--num-virtual-stages-per-pipeline-rank 2: stage 0 holds 7 layers, which do "
                     "not split evenly into 2 chunks");
    f = flags(1, 8, 2);
    f.virtual_stages = 2;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "2 virtual pipeline chunks per stage need --pipeline-model-parallel-size 2");
}

BOOST_AUTO_TEST_CASE(recompute_flags_megatron_refuses) {
    MegatronFlags f = flags(4, 32);
    f.recompute_granularity = "full";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "needs --recompute-method uniform or block");
    f.recompute_method = "block";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "needs --recompute-num-layers N");
    f.recompute_method = "random";
    f.recompute_num_layers = 1;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--recompute-method: expected uniform or block, got 'random'");
    f.recompute_granularity = "selective";
    f.recompute_method.reset();
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--recompute-num-layers must not be given with --recompute-granularity "
                     "selective");
    f.recompute_granularity = "partial";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "expected full or selective, got 'partial'");
    f.recompute_granularity.reset();
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.stages[0] == kinds(8, 0, 0, 0, 0));
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    BOOST_TEST((messages[0].level == Message::Level::warning));
    ppb_test::check_contains(messages[0].text, {"--recompute-num-layers has no effect"});
}

BOOST_AUTO_TEST_CASE(world_size_from_the_flag_or_the_log) {
    MegatronFlags f = flags(4, 32);
    f.world_size.reset();
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "missing --world-size N");
    MegatronScan scan;
    scan.arguments.read_line("train.log", 3, "using world size: 16, data-parallel size: 4");
    BOOST_TEST(megatron_layout(f, scan, messages).ranks_per_stage == 4u);
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    BOOST_TEST(messages[0].text == "--world-size 16 from train.log:3");
    messages.clear();
    // A flag that contradicts the log is refused, naming both.
    f.world_size = 8;
    PPB_CHECK_THROWS(ppb::InputError, megatron_layout(f, scan, messages),
                     "--world-size 8 (command line) contradicts world size 16 (train.log:3)");
    f.world_size = 6;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "world size 6 is not a multiple of --pipeline-model-parallel-size 4");
}

BOOST_AUTO_TEST_CASE(micro_batches_are_optional) {
    MegatronFlags f = flags(4, 32);
    f.micro_batches.reset();
    BOOST_TEST(!megatron_layout(f, MegatronScan{}, messages).micro_batches);
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text, {"no --num-microbatches"});
    f.pipeline_size.reset();
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "missing --pipeline-model-parallel-size P");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(megatron_logs, MegatronFixture)

BOOST_AUTO_TEST_CASE(one_combined_log_of_all_ranks) {
    const std::string text =
        "using world size: 8, data-parallel size: 1, tensor-model-parallel size: 2, "
        "pipeline-model-parallel size: 4\n"
        " [2025-03-10 14:01:33] iteration        1/      20 | lm loss: 1.08E+01 |\n" +
        memory_line(3, 24050.5) + "\n" + memory_line(0, 22071.5) +
        memory_line(1, 22072.25) +  // two prints on one line, as concurrent ranks leave them
        "\n[2025-03-10][INFO] - " + memory_line(2, 24047.0) + "\n";
    const auto result = scan({log("train.log", text)});
    const StatedValue* world = result.arguments.find("world_size");
    BOOST_TEST_REQUIRE(world != nullptr);
    BOOST_TEST(world->text == "8");
    BOOST_TEST(world->where().ends_with("train.log:1"));
    BOOST_TEST_REQUIRE(result.readings.size() == 4u);
    BOOST_TEST(result.readings[0].rank == 0u);
    BOOST_TEST(result.readings[0].mb == 22071.5);
    BOOST_TEST(result.readings[0].line == 4u);
    BOOST_TEST(result.readings[1].mb == 22072.25);
    BOOST_TEST(result.readings[1].line == 4u);
    BOOST_TEST(result.readings[2].mb == 24047.0);
    BOOST_TEST(result.readings[3].line == 3u);
    BOOST_TEST(messages.empty());
    const auto reserved = scan({log("train.log", text)}, MegatronMemory::max_reserved);
    BOOST_TEST(reserved.readings[0].mb == 22171.5);
    const auto current = scan({log("train.log", text)}, MegatronMemory::allocated);
    BOOST_TEST(current.readings[0].mb == 1000.5);
}

BOOST_AUTO_TEST_CASE(memory_names) {
    BOOST_TEST((megatron_memory_from_name("max-allocated") == MegatronMemory::max_allocated));
    BOOST_TEST((megatron_memory_from_name("max allocated") == MegatronMemory::max_allocated));
    BOOST_TEST((megatron_memory_from_name("max_reserved") == MegatronMemory::max_reserved));
    BOOST_TEST((megatron_memory_from_name("reserved") == MegatronMemory::reserved));
    BOOST_TEST(!megatron_memory_from_name("peak"));
    BOOST_TEST(megatron_memory_field(MegatronMemory::max_reserved) == "max reserved");
}

BOOST_AUTO_TEST_CASE(several_lines_of_a_rank_take_the_last) {
    const std::string text = memory_line(0, 100.0) + "\n" + memory_line(1, 100.0) + "\n" +
                             memory_line(0, 130.0) + "\n" + memory_line(1, 140.0) + "\n";
    const auto result = scan({log("train.log", text)});
    BOOST_TEST_REQUIRE(result.readings.size() == 2u);
    BOOST_TEST(result.readings[0].mb == 130.0);
    BOOST_TEST(result.readings[1].mb == 140.0);
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text,
                             {"several memory lines for ranks 0, 1 (2 each)", "took the last"});
}

BOOST_AUTO_TEST_CASE(a_log_without_memory_lines) {
    const LogFile cut = log("train.log", "iteration 1/20 | lm loss: 1.08E+01 |\n");
    PPB_CHECK_THROWS(ppb::InputError, scan({cut}), cut.name + ": no Megatron memory line",
                     "--log-interval");
    // Found in a directory, it is skipped, as long as another log has memory lines.
    const auto result = scan({log("dir/a.log", "nothing\n", false),
                              log("dir/b.log", memory_line(0, 5.0) + "\n", false)});
    BOOST_TEST(result.readings.size() == 1u);
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text,
                             {"skipped 1 log without Megatron memory lines", "a.log"});
    PPB_CHECK_THROWS(ppb::InputError, scan({log("dir/a.log", "nothing\n", false)}),
                     "none of the logs read has a Megatron memory line");
}

BOOST_AUTO_TEST_CASE(a_memory_line_without_the_figure_asked_for) {
    const LogFile old = log("train.log",
                            "[Rank 0] memory (MB) | allocated: 5.0 | max allocated: "
                            "6.0 | cached: 7.0 | max cached: 8.0\n");
    PPB_CHECK_THROWS(ppb::InputError, scan({old}, MegatronMemory::max_reserved),
                     old.name + ":1: the memory line has no 'max reserved' figure",
                     "it has: allocated, max allocated, cached, max cached", "--memory");
    const LogFile bad = log("bad.log", "[Rank 0] memory (MB) | max allocated: lots\n");
    PPB_CHECK_THROWS(ppb::InputError, scan({bad}), bad.name + ":1: malformed memory line",
                     "'lots'");
    const LogFile zero = log("zero.log", "[Rank 0] memory (MB) | max allocated: 0.0\n");
    PPB_CHECK_THROWS(ppb::InputError, scan({zero}), zero.name + ":1:", "not a measured peak");
}

BOOST_AUTO_TEST_CASE(a_memory_line_without_a_rank_takes_the_logs) {
    const std::string line = "memory (MB) | allocated: 5.0 | max allocated: 6.0\n";
    const auto result = scan({log("rank_5.log", line)});
    BOOST_TEST(result.readings.at(0).rank == 5u);
    const LogFile plain = log("train.log", line);
    PPB_CHECK_THROWS(ppb::InputError, scan({plain}), plain.name + ":1: a memory line without",
                     "--rank " + plain.name + "=ID");
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8) {
    const auto fine = scan({log("train.log", "\xFF\xFE garbage\n" + memory_line(0, 5.0) + "\n")});
    BOOST_TEST(fine.readings.size() == 1u);
    const LogFile bad = log("bad.log", "ok\n" + memory_line(0, 5.0) + " \xC0\n");
    PPB_CHECK_THROWS(ppb::InputError, scan({bad}),
                     bad.name + ":2: the memory line holds a byte that is not UTF-8", "0xC0");
}

BOOST_AUTO_TEST_CASE(logs_of_different_world_sizes) {
    const LogFile a =
        log("a.log", "using world size: 8, data-parallel size: 1\n" + memory_line(0, 5.0) + "\n");
    const LogFile b =
        log("b.log", "using world size: 16, data-parallel size: 2\n" + memory_line(1, 5.0) + "\n");
    PPB_CHECK_THROWS(ppb::InputError, scan({a, b}),
                     b.name + ":1: world size 16, but " + a.name +
                         ":1 says world size 8: are these logs of one run?");
}

BOOST_AUTO_TEST_SUITE_END()

// --pipeline-model-parallel-layout, as Megatron-LM's PipelineParallelLayerLayout.parse_str_to_list
// (megatron/core/transformer/pipeline_parallel_layer_layout.py) reads it: its docstring's
// example and the DeepSeek-V3 PP16 VPP2 layout of its documentation (without the MTP layer).
BOOST_AUTO_TEST_SUITE(megatron_pp_layout_flag)

BOOST_AUTO_TEST_CASE(layouts_give_each_stage_and_chunk_its_decoder_layers) {
    using Counts = std::vector<std::vector<std::uint32_t>>;
    Messages messages;
    const auto counts = [&](std::uint32_t p, std::uint32_t layers, const char* text) {
        MegatronFlags f = flags(p, layers, p);
        f.layout = text;
        return *megatron_layout_flag_counts(f, messages);
    };
    BOOST_TEST((counts(4, 8, "Et*3|t|t*2|t*2L") == Counts{{3}, {1}, {2}, {2}}));
    BOOST_TEST((counts(4, 9, "Ettt|tt|,tt|ttL") == Counts{{3}, {2}, {2}, {2}}));
    const Counts deepseek = counts(16, 61, "Et*3|(tt|)*29,|L");
    BOOST_TEST(deepseek.size() == 16U);
    BOOST_TEST((deepseek[0] == std::vector<std::uint32_t>{3, 2}));
    BOOST_TEST((deepseek[15] == std::vector<std::uint32_t>{2, 0}));
}

BOOST_AUTO_TEST_CASE(bad_layouts_name_the_flag_and_the_problem) {
    Messages messages;
    const auto counts = [&](std::uint32_t p, std::uint32_t layers, const char* text) {
        MegatronFlags f = flags(p, layers, p);
        f.layout = text;
        return megatron_layout_flag_counts(f, messages);
    };
    PPB_CHECK_THROWS(FlagError, counts(4, 6, "Et*3|t|t*2L"), "--pipeline-model-parallel-layout");
    PPB_CHECK_THROWS(FlagError, counts(2, 8, "Et*3|t*3L"), "--pipeline-model-parallel-layout");
    PPB_CHECK_THROWS(FlagError, counts(2, 2, "Et|tmL"), "--mtp-num-layers");
    PPB_CHECK_THROWS(FlagError, counts(2, 1, "Et|xL"), "'x'");
}

BOOST_AUTO_TEST_CASE(the_layout_sets_the_import_s_stages_and_chunks) {
    Messages messages;
    MegatronFlags f = flags(4, 8, 4);
    f.layout = "Et*3|t|t*2|t*2L";
    f.recompute_granularity = "full";
    f.recompute_method = "block";
    f.recompute_num_layers = 2;
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST((totals(l) == std::vector<std::uint32_t>{3, 1, 2, 2}));
    BOOST_TEST((l.stages[0] == kinds(1, 0, 0, 0, 2)));
    BOOST_TEST((l.stages[1] == kinds(0, 0, 0, 0, 1)));
    // Interleaved: 8 virtual stages on 4 ranks, chunks of uneven sizes.
    MegatronFlags v = flags(4, 8, 4);
    v.layout = "Et*2|t|t|t|t|t|t|L";
    const PipelineLayout lv = megatron_layout(v, MegatronScan{}, messages);
    BOOST_TEST(lv.num_chunks == 2U);
    BOOST_TEST(
        (lv.chunks[0] == std::vector<KindCounts>{kinds(2, 0, 0, 0, 0), kinds(1, 0, 0, 0, 0)}));
    BOOST_TEST(
        (lv.chunks[3] == std::vector<KindCounts>{kinds(1, 0, 0, 0, 0), kinds(0, 0, 0, 0, 0)}));
    MegatronFlags both = flags(4, 8, 4);
    both.layout = "Et*3|t|t*2|t*2L";
    both.first_stage_layers = 3;
    PPB_CHECK_THROWS(FlagError, megatron_layout(both, MegatronScan{}, messages),
                     "must not be given together");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_tests
