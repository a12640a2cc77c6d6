// MindSpore / MindFormers: layouts from the training YAML and flags, memory from dry-run logs.
#include "scratch.hpp"

#include <ppb/importers/mindspore.hpp>
#include <ppb/kinds.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace ppb::importers;
using ppb_test::kinds;
using ppb_test::Scratch;
namespace fs = std::filesystem;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace mindspore_tests {

namespace {

// A MindFormers training configuration with the keys ppb reads; an empty value leaves the key
// out.
struct Yaml {
    std::string data_parallel = "2";
    std::string model_parallel = "4";
    std::string pipeline_stage = "4";
    std::string micro_batch_num = "16";
    std::string extra_parallel;  // more lines under parallel_config
    std::string recompute = "[3, 1, 0, 0]";
    std::string select_recompute = "True";
    std::string select_comm_recompute = "False";
    std::string num_layers = "40";
    std::string offset = "[-1, 0, 0, 1]";
    std::string extra_model;  // more lines under model_config

    [[nodiscard]] std::string text() const {
        std::string t = "seed: 0\nparallel_config:\n";
        const auto line = [&](const char* indent, const char* key, const std::string& value) {
            if (!value.empty())
                t += std::string(indent) + key + ": " + value + "\n";
        };
        line("  ", "data_parallel", data_parallel);
        line("  ", "model_parallel", model_parallel);
        line("  ", "pipeline_stage", pipeline_stage);
        line("  ", "micro_batch_num", micro_batch_num);
        t += extra_parallel;
        t += "recompute_config:\n";
        line("  ", "recompute", recompute);
        line("  ", "select_recompute", select_recompute);
        line("  ", "select_comm_recompute", select_comm_recompute);
        t += "model:\n  model_config:\n    type: LlamaConfig\n";
        line("    ", "num_layers", num_layers);
        line("    ", "offset", offset);
        t += extra_model;
        return t;
    }
};

// "cfg.yaml:N: " for the line of `text` that holds `needle`.
std::string at_line(const std::string& file, const std::string& text, const std::string& needle) {
    const std::size_t at = text.find(needle);
    BOOST_TEST_REQUIRE(at != std::string::npos);
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
    return file + ":" + std::to_string(line) + ": ";
}

struct Fixture {
    Scratch dir;
    Messages messages;

    PipelineLayout layout(const Yaml& yaml, const MindSporeFlags& flags = {}) {
        return mindspore_layout(dir.write("cfg.yaml", yaml.text()), flags, messages);
    }
    PipelineLayout layout_text(const std::string& text, const MindSporeFlags& flags = {}) {
        return mindspore_layout(dir.write("cfg.yaml", text), flags, messages);
    }
    std::string cfg() const { return (dir / "cfg.yaml").string(); }

    LogFile log(const std::string& relative, std::string_view text, bool named = true) {
        const fs::path path = dir.write(relative, text);
        return LogFile{path, path.string(), rank_from_path(path), named};
    }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(mindspore_layouts, Fixture)

BOOST_AUTO_TEST_CASE(layout_of_a_mindformers_configuration) {
    const PipelineLayout l = layout(Yaml{});
    BOOST_TEST(l.num_stages == 4u);
    BOOST_TEST(l.ranks_per_stage == 8u);
    BOOST_TEST(l.world_size() == 32u);
    BOOST_TEST(l.micro_batches.value_or(0) == 16u);
    BOOST_TEST(l.ranks_explained == "data_parallel 2 x model_parallel 4");
    BOOST_TEST_REQUIRE(l.stages.size() == 4u);
    BOOST_TEST(l.stages[0] == kinds(0, 6, 0, 0, 3));
    BOOST_TEST(l.stages[1] == kinds(0, 9, 0, 0, 1));
    BOOST_TEST(l.stages[2] == kinds(0, 10, 0, 0, 0));
    BOOST_TEST(l.stages[3] == kinds(0, 11, 0, 0, 0));
    BOOST_TEST(messages.empty());
}

BOOST_AUTO_TEST_CASE(context_parallel_multiplies_the_ranks_per_stage) {
    Yaml yaml;
    yaml.extra_parallel = "  context_parallel: 2\n";
    const PipelineLayout l = layout(yaml);
    BOOST_TEST(l.ranks_per_stage == 16u);
    BOOST_TEST(l.ranks_explained == "data_parallel 2 x model_parallel 4 x context_parallel 2");
}

BOOST_AUTO_TEST_CASE(mindformers_defaults) {
    Yaml yaml;
    yaml.data_parallel = yaml.model_parallel = yaml.micro_batch_num = yaml.offset = "";
    yaml.recompute = yaml.select_recompute = yaml.select_comm_recompute = "";
    const PipelineLayout l = layout(yaml);
    BOOST_TEST(l.ranks_per_stage == 1u);
    BOOST_TEST(!l.micro_batches);
    for (const auto& stage : l.stages)
        BOOST_TEST(stage == kinds(10, 0, 0, 0, 0));
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text, {"micro_batch_num", "pipeline_stage - stage"});
}

BOOST_AUTO_TEST_CASE(an_uneven_layer_count_takes_its_remainder_from_the_offsets) {
    Yaml yaml;
    yaml.num_layers = "42";
    yaml.offset = "[0, 1, 1, 0]";
    yaml.recompute = "0";
    const PipelineLayout l = layout(yaml);
    std::vector<std::uint32_t> totals;
    for (const auto& stage : l.stages)
        totals.push_back(total_layers(stage));
    BOOST_TEST(totals == (std::vector<std::uint32_t>{10, 11, 11, 10}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(flags_win_over_the_file) {
    MindSporeFlags flags;
    flags.pipeline_stage = "2";
    flags.offset = "1,-1";
    flags.recompute = "true";
    flags.data_parallel = "1";
    flags.micro_batch_num = "[8]";  // not an integer: refused below
    PPB_CHECK_THROWS(FlagError, layout(Yaml{}, flags), "--micro-batch-num",
                     "expected a positive integer", "a list");
    flags.micro_batch_num = "8";
    const PipelineLayout l = layout(Yaml{}, flags);
    BOOST_TEST(l.num_stages == 2u);
    BOOST_TEST(l.ranks_per_stage == 4u);
    BOOST_TEST(l.micro_batches.value_or(0) == 8u);
    BOOST_TEST(l.stages[0] == kinds(0, 0, 0, 0, 21));
    BOOST_TEST(l.stages[1] == kinds(0, 0, 0, 0, 19));
}

BOOST_AUTO_TEST_CASE(flags_alone_describe_a_layout) {
    MindSporeFlags flags;
    flags.pipeline_stage = "4";
    flags.num_layers = "8";
    flags.select_recompute = "[2, 2, 2, 2]";
    flags.select_comm_recompute = "[[1, 1, 1, 1]]";
    const PipelineLayout l = mindspore_layout(std::nullopt, flags, messages);
    BOOST_TEST(l.stages[0] == kinds(0, 1, 0, 1, 0));
    flags.pipeline_stage.reset();
    PPB_CHECK_THROWS(FlagError, mindspore_layout(std::nullopt, flags, messages),
                     "missing --pipeline-stage P", "--config");
}

BOOST_AUTO_TEST_CASE(required_settings_missing_from_the_file) {
    Yaml yaml;
    yaml.pipeline_stage = "";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), cfg() + ": no parallel_config.pipeline_stage",
                     "--pipeline-stage");
    yaml = Yaml{};
    yaml.num_layers = "";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "no model.model_config.num_layers",
                     "--num-layers");
}

BOOST_AUTO_TEST_CASE(offsets_that_do_not_sum_to_the_layer_count) {
    Yaml yaml;
    yaml.offset = "[-1, 0, 0, 0]";
    const std::string text = yaml.text();
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     at_line(cfg(), text, "offset:") + "model.model_config.offset",
                     "9 + 10 + 10 + 10 = 39 layers", "num_layers is 40",
                     at_line(cfg(), text, "num_layers:"), "must sum to 0, not -1");
    yaml.num_layers = "42";
    yaml.offset = "0";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "= 40 layers", "num_layers is 42",
                     "must sum to 2");
    yaml.num_layers = "40";
    yaml.offset = "1";  // one more layer on every stage
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "11 + 11 + 11 + 11 = 44 layers");
    yaml.offset = "[-11, 11, 0, 0]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "stage 0 would hold 10 + (-11) = -1 layers");
    // Offsets near 2^62 must not overflow the sum (which would wrap to exactly 40 and pass).
    yaml.offset =
        "[4611686018427387904, 4611686018427387904, 4611686018427387904, "
        "4611686018427387944]";
    PPB_CHECK_THROWS(
        ppb::InputError, layout(yaml),
        "stage 0 would hold 10 + 4611686018427387904 layers, more than the model's 40");
    yaml.offset = "[-9223372036854775808, 0, 0, 0]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     "stage 0 would hold 10 + (-9223372036854775808)");
    MindSporeFlags flags;
    flags.offset = "[1, 0, 0, 0]";
    PPB_CHECK_THROWS(FlagError, layout(Yaml{}, flags), "--offset: the stages hold", "= 41 layers");
}

BOOST_AUTO_TEST_CASE(arrays_of_the_wrong_length) {
    Yaml yaml;
    yaml.recompute = "[3, 1, 0]";
    const std::string text = yaml.text();
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     at_line(cfg(), text, "  recompute:") + "recompute_config.recompute",
                     "has 3 entries but the pipeline has 4 stages",
                     at_line(cfg(), text, "pipeline_stage") + "parallel_config.pipeline_stage");
    yaml = Yaml{};
    yaml.offset = "[[0, 0, 0, 0, 0]]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "model.model_config.offset[0]",
                     "has 5 entries");
    yaml = Yaml{};
    yaml.offset = "[]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "has 0 entries");
    MindSporeFlags flags;
    flags.select_recompute = "[1, 1]";
    PPB_CHECK_THROWS(FlagError, layout(Yaml{}, flags), "--select-recompute: has 2 entries");
}

// pp = 4, v = 2, 36 layers: each (chunk, stage) cell holds 36 // 8 = 4 plus its offset; the
// numbers below are worked out by hand from MindFormers' rules.
Yaml interleaved_yaml() {
    Yaml yaml;
    yaml.num_layers = "36";
    yaml.extra_model = "    pp_interleave_num: 2\n";
    yaml.offset = "[[1, 0, 0, 0], [0, 1, 1, 1]]";  // chunk 0: 5 4 4 4, chunk 1: 4 5 5 5
    yaml.recompute = "[[2, 1, 0, 0], [1, 0, 0, 3]]";
    // One count per stage, spread over the stage's chunks a layer at a time from chunk 0:
    // stage 0 (5, 4): 4 -> (2, 2); stage 1 (4, 5): 2 -> (1, 1); stage 3 (4, 5): 9 -> (4, 5).
    yaml.select_recompute = "[4, 2, 0, 9]";
    yaml.select_comm_recompute = "False";
    return yaml;
}

BOOST_AUTO_TEST_CASE(interleaved_layout_per_chunk) {
    const PipelineLayout l = layout(interleaved_yaml());
    BOOST_TEST(l.num_chunks == 2u);
    BOOST_TEST((l.schedule == ppb::Schedule::interleaved));
    BOOST_TEST(l.micro_batches.value_or(0) == 16u);
    BOOST_TEST_REQUIRE(l.chunks.size() == 4u);
    // kinds(none, select, comm, both, full); full first, then select beyond it, per cell.
    const std::vector<std::vector<KindCounts>> expected = {
        {kinds(3, 0, 0, 0, 2), kinds(2, 1, 0, 0, 1)},   // 5: full 2, select 2; 4: full 1, sel 2
        {kinds(3, 0, 0, 0, 1), kinds(4, 1, 0, 0, 0)},   // 4: full 1, sel 1;   5: sel 1
        {kinds(4, 0, 0, 0, 0), kinds(5, 0, 0, 0, 0)},   // nothing recomputed
        {kinds(0, 4, 0, 0, 0), kinds(0, 2, 0, 0, 3)}};  // 4: sel 4;  5: full 3, sel 5
    for (std::size_t s = 0; s < 4; ++s) {
        BOOST_TEST_CONTEXT("stage " << s) {
            BOOST_TEST_REQUIRE(l.chunks[s].size() == 2u);
            BOOST_TEST(l.chunks[s][0] == expected[s][0]);
            BOOST_TEST(l.chunks[s][1] == expected[s][1]);
            KindCounts sum{};
            for (std::size_t k = 0; k < sum.size(); ++k)
                sum[k] = expected[s][0][k] + expected[s][1][k];
            BOOST_TEST(l.stages[s] == sum);
            BOOST_TEST(total_layers(l.stages[s]) == 9u);
        }
    }
    BOOST_TEST(describe_stages(l).starts_with(
        "stage 0: chunk 0 5 layers (full 2, none 3), chunk 1 4 layers (full 1, select 1, none "
        "2); stage 1:"));
}

BOOST_AUTO_TEST_CASE(interleaved_settings_in_every_form) {
    Yaml yaml = interleaved_yaml();
    // One offset per stage applies to every chunk: 36 = 8 x 4 + 4 cannot be split that way
    // (each chunk row would add the 4), but 40 = 8 x 5 can with offsets summing to 0.
    yaml.offset = "[1, 1, 1, 1]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     at_line(cfg(), yaml.text(), "offset:") +
                         "model.model_config.offset: the "
                         "chunks of the stages hold",
                     "= 40 layers, but num_layers is 36",
                     "num_layers 36 // (pipeline_stage 4 x pp_interleave_num 2) = 4 plus its "
                     "offset, so the offsets must sum to 4, not 8 (one offset per stage applies "
                     "to every chunk)");
    yaml.num_layers = "40";
    yaml.offset = "[-1, 0, 0, 1]";
    yaml.recompute = "true";
    yaml.select_recompute = "0";
    PipelineLayout l = layout(yaml);
    BOOST_TEST(l.chunks[0][0] == kinds(0, 0, 0, 0, 4));
    BOOST_TEST(l.chunks[3][1] == kinds(0, 0, 0, 0, 6));
    // A scalar count is per stage, spread over the chunks; rows may mix counts and booleans.
    yaml.recompute = "3";
    yaml.select_recompute = "[[true, 0, 0, 0], [false, 1, 1, 1]]";
    l = layout(yaml);
    BOOST_TEST(l.chunks[0][0] == kinds(0, 2, 0, 0, 2));  // 4 layers, full 2 of 3, select all
    BOOST_TEST(l.chunks[0][1] == kinds(3, 0, 0, 0, 1));  // 4 layers, full 1 of 3
    BOOST_TEST(l.chunks[1][1] == kinds(4, 0, 0, 0, 1));  // 5 layers, full 1 of 3; select 1
    // MindFormers ignores pp_interleave_num unless MindSpore's pipeline_interleave is on.
    yaml = interleaved_yaml();
    yaml.offset = "[0, 0, 0, 0]";
    yaml.recompute = "[2, 1, 0, 0]";
    l = layout_text(yaml.text() +
                    "parallel:\n  pipeline_config:\n    pipeline_interleave: false\n");
    BOOST_TEST(l.num_chunks == 1u);
    BOOST_TEST(l.chunks.empty());
    BOOST_TEST(l.stages[0] == kinds(5, 2, 0, 0, 2));  // 9 layers: full 2, select 4
    BOOST_TEST_REQUIRE(!messages.empty());
    BOOST_TEST(messages.back().text.find("pipeline_interleave is false") != std::string::npos,
               messages.back().text);
    // The --pp-interleave-num flag.
    MindSporeFlags flags;
    flags.pp_interleave_num = "1";
    yaml = interleaved_yaml();
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml, flags), "model.model_config.offset: has 2 rows",
                     "the layout has one chunk per stage");
}

BOOST_AUTO_TEST_CASE(interleaved_settings_of_the_wrong_shape) {
    Yaml yaml = interleaved_yaml();
    yaml.offset = "[[1, 0, 0, 0], [0, 1, 1, 1], [0, 0, 0, 0]]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     at_line(cfg(), yaml.text(), "offset:") +
                         "model.model_config.offset: has 3 rows (one per pipeline chunk) but "
                         "there are 2 chunks per stage (pp_interleave_num 2 from " +
                         at_line(cfg(), yaml.text(), "pp_interleave_num") +
                         "model.model_config.pp_interleave_num): give 2 rows");
    yaml = interleaved_yaml();
    yaml.offset = "[[1, 0, 0, 0], [0, 1, 1]]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     "model.model_config.offset[1]: has 3 entries but the pipeline has 4 stages");
    yaml = interleaved_yaml();
    yaml.offset = "[[1, 0, 0, 0], [0, 1, 1, 0]]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "model.model_config.offset: the chunks",
                     "= 35 layers, but num_layers is 36", "must sum to 4, not 3");
    yaml = interleaved_yaml();
    yaml.offset = "[[1, 0, 0, 0], [0, 1, 1, -5]]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     "model.model_config.offset: chunk 1 of stage 3 would hold 4 + (-5) = -1 "
                     "layers");
    yaml = interleaved_yaml();
    yaml.recompute = "[[2, 1, 0, 0]]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     "recompute_config.recompute: has 1 row (one per pipeline chunk) but there "
                     "are 2 chunks per stage");
    yaml = interleaved_yaml();
    yaml.select_recompute = "[[1, 1, 1, 1], 2]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "recompute_config.select_recompute",
                     "mixes lists and single values");
    // Rows without interleaving.
    yaml = Yaml{};
    yaml.offset = "[[-1, 0, 0, 1], [0, 0, 0, 0]]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "model.model_config.offset: has 2 rows",
                     "the layout has one chunk per stage (no pp_interleave_num above 1)");
    yaml = Yaml{};
    yaml.extra_model = "    pp_interleave_num: 1\n";
    yaml.offset = "[[-1, 0, 0, 1]]";
    yaml.recompute = "[[3, 1, 0, 0]]";
    BOOST_TEST(layout(yaml).stages[0] == kinds(0, 6, 0, 0, 3));
    BOOST_TEST(layout(yaml).chunks.empty());
    yaml.recompute = "[[3, 1, 0, 0], 2]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "mixes lists and single values");
    // Chunk counts out of range, or without a pipeline.
    yaml = interleaved_yaml();
    yaml.extra_model = "    pp_interleave_num: 65\n";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     "model.model_config.pp_interleave_num: 65 is out of range (1 to 64 chunks)");
    yaml.extra_model = "    pp_interleave_num: 0\n";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "pp_interleave_num: 0 is out of range");
    yaml = Yaml{};
    yaml.pipeline_stage = "1";
    yaml.offset = "";
    yaml.recompute = "";
    yaml.extra_model = "    pp_interleave_num: 2\n";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     "model.model_config.pp_interleave_num: 2 chunks per stage need a pipeline "
                     "of at least 2 stages");
}

BOOST_AUTO_TEST_CASE(recompute_settings_in_every_form_mindformers_takes) {
    Yaml yaml;
    yaml.recompute = "2";  // two layers of every stage
    yaml.select_recompute = "[true, false, 2, 30]";
    yaml.select_comm_recompute = "[\"feed_forward\\\\.w1\\\\.activation\\\\.silu\"]";  // patterns
    PipelineLayout l = layout(yaml);
    BOOST_TEST(l.stages[0] == kinds(0, 0, 0, 7, 2));  // 9 layers: select all, comm all
    BOOST_TEST(l.stages[1] == kinds(0, 0, 8, 0, 2));  // select none
    BOOST_TEST(l.stages[2] == kinds(0, 0, 8, 0, 2));  // select 2, all full already
    BOOST_TEST(l.stages[3] == kinds(0, 0, 0, 9, 2));  // 30 means all 11

    yaml.select_recompute =
        "{'feed_forward\\.mul': [9, 1, 1, 1], 'feed_forward\\.w1': [9, 1, 1, 1]}";
    yaml.select_comm_recompute = "false";
    yaml.recompute = "no";
    l = layout(yaml);
    BOOST_TEST(l.stages[0] == kinds(0, 9, 0, 0, 0));
    BOOST_TEST(l.stages[1] == kinds(9, 1, 0, 0, 0));

    yaml.select_recompute = "{'feed_forward\\.mul': [9, 1, 1, 1], 'feed_forward\\.w1': True}";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "recompute_config.select_recompute",
                     "'feed_forward\\.mul' and 'feed_forward\\.w1' cover different layers",
                     "9, 1, 1, 1 and 9, 10, 10, 11");
}

BOOST_AUTO_TEST_CASE(bad_values_are_named) {
    Yaml yaml;
    yaml.recompute = "[3, -1, 0, 0]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "recompute_config.recompute[1]",
                     "expected a count of layers (0 or more), true or false, got '-1'");
    yaml.recompute = "[3, many, 0, 0]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "recompute_config.recompute[1]", "'many'");
    yaml = Yaml{};
    yaml.pipeline_stage = "\"4\"";  // a string in YAML, as MindFormers would read it
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "parallel_config.pipeline_stage",
                     "expected a positive integer, got '4'");
    yaml.pipeline_stage = "0";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml),
                     "parallel_config.pipeline_stage: 0 is out of range (1 to 1024 stages)");
    yaml = Yaml{};
    yaml.offset = "[0, true, 0, 0]";
    PPB_CHECK_THROWS(ppb::InputError, layout(yaml), "offset[1]", "expected an integer offset");
    MindSporeFlags flags;
    flags.offset = "[1, 2";
    PPB_CHECK_THROWS(FlagError, layout(Yaml{}, flags), "--offset: cannot read '[1, 2'");
}

BOOST_AUTO_TEST_CASE(files_that_are_not_mindformers_configurations) {
    PPB_CHECK_THROWS(ppb::InputError,
                     layout_text("seed: 0\nparallel_config:\n  data_parallel: \xFF\n"),
                     cfg() + ":3: not UTF-8 text", "0xFF", "'  data_parallel: \\xFF'");
    PPB_CHECK_THROWS(ppb::InputError, layout_text("parallel_config:\n  pipeline_stage: [4\n"),
                     cfg() + ":3:", "not valid YAML");
    // yaml-cpp stops at its nesting limit, with the message "bad file": say what it is.
    const std::string deep_flow = "a: " + std::string(100000, '[') + std::string(100000, ']');
    PPB_CHECK_THROWS(ppb::InputError, layout_text(deep_flow), cfg() + ":1: not valid YAML",
                     "nesting deeper than");
    std::string deep_block;
    for (int i = 0; i < 5000; ++i)
        deep_block += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
    PPB_CHECK_THROWS(ppb::InputError, layout_text(deep_block), cfg() + ":", "nesting deeper than");
    PPB_CHECK_THROWS(ppb::InputError, layout_text("- just\n- a list\n"), "a YAML mapping");
    PPB_CHECK_THROWS(ppb::InputError, layout_text("parallel_config: 4\n"), "parallel_config",
                     "expected a mapping");
    PPB_CHECK_THROWS(ppb::InputError,
                     mindspore_layout(dir / "missing.yaml", MindSporeFlags{}, messages),
                     "missing.yaml: cannot read");
}

// MindFormers' newer layout (LLMTrainer): distribute_parallel_config, top-level model_config,
// micro-batches derived from training_args.
const std::string newer_layout =
    "distribute_parallel_config:\n"
    "  data_parallel_size: 2\n"
    "  tensor_model_parallel_size: 4\n"
    "  pipeline_model_parallel_size: 4\n"
    "  context_parallel_size: 1\n"
    "  pipeline_parallel_config:\n"
    "    pipeline_interleave: False\n"
    "    pipeline_scheduler: \"1f1b\"\n"
    "    virtual_pipeline_model_parallel_size: 1\n"
    "    pipeline_stage_offset: [-1, 0, 0, 1]\n"
    "  micro_batch_interleave_num: 1\n"
    "training_args:\n"
    "  micro_batch_size: 1\n"
    "  global_batch_size: 32\n"
    "model_config:\n"
    "  num_layers: 40\n"
    "recompute_config:\n"
    "  recompute: [3, 1, 0, 0]\n"
    "  select_recompute: True\n";

BOOST_AUTO_TEST_CASE(newer_distribute_parallel_config_layout) {
    const PipelineLayout l = layout_text(newer_layout);
    BOOST_TEST(l.num_stages == 4u);
    BOOST_TEST(l.ranks_per_stage == 8u);
    BOOST_TEST(l.ranks_explained == "data_parallel 2 x model_parallel 4 x context_parallel 1");
    // global_batch_size 32 // (data_parallel_size 2 x micro_batch_size 1 x interleave 1)
    BOOST_TEST(l.micro_batches.value_or(0) == 16u);
    BOOST_TEST_REQUIRE(l.stages.size() == 4u);
    // Layers 9, 10, 10, 11 (40 // 4 + offset); full on the first 3 / 1, select on the rest.
    BOOST_TEST(l.stages[0] == kinds(0, 6, 0, 0, 3));
    BOOST_TEST(l.stages[1] == kinds(0, 9, 0, 0, 1));
    BOOST_TEST(l.stages[2] == kinds(0, 10, 0, 0, 0));
    BOOST_TEST(l.stages[3] == kinds(0, 11, 0, 0, 0));

    // The same layout written both ways, agreeing: read as one.
    const std::string both = newer_layout +
                             "parallel_config:\n  data_parallel: 2\n  model_parallel: 4\n"
                             "  pipeline_stage: 4\n  micro_batch_num: 16\n";
    BOOST_TEST(layout_text(both).stages[3] == kinds(0, 11, 0, 0, 0));

    // An explicit micro_batch_num wins over the derivation.
    std::string text = newer_layout;
    text.replace(text.find("  micro_batch_interleave_num"), 0, "  micro_batch_num: 8\n");
    BOOST_TEST(layout_text(text).micro_batches.value_or(0) == 8u);
}

BOOST_AUTO_TEST_CASE(newer_layout_interleaved_runs) {
    std::string text = newer_layout;
    const std::string one = "virtual_pipeline_model_parallel_size: 1";
    text.replace(text.find(one), one.size(), "virtual_pipeline_model_parallel_size: 2");
    // 40 // 8 = 5 per cell; the per-stage offsets apply to both chunks: 4 5 5 6 twice.
    // recompute [3, 1, 0, 0] per stage, spread: stage 0 (2, 1), stage 1 (1, 0); select all.
    const PipelineLayout l = layout_text(text);
    BOOST_TEST(l.num_chunks == 2u);
    BOOST_TEST_REQUIRE(l.chunks.size() == 4u);
    BOOST_TEST(l.chunks[0][0] == kinds(0, 2, 0, 0, 2));
    BOOST_TEST(l.chunks[0][1] == kinds(0, 3, 0, 0, 1));
    BOOST_TEST(l.chunks[1][0] == kinds(0, 4, 0, 0, 1));
    BOOST_TEST(l.chunks[1][1] == kinds(0, 5, 0, 0, 0));
    BOOST_TEST(l.chunks[3][1] == kinds(0, 6, 0, 0, 0));
    BOOST_TEST(l.stages[3] == kinds(0, 12, 0, 0, 0));

    // The classic pp_interleave_num must agree with it.
    const std::string disagreeing = text + "model:\n  model_config:\n    pp_interleave_num: 3\n";
    PPB_CHECK_THROWS(ppb::InputError, layout_text(disagreeing),
                     "model.model_config.pp_interleave_num is 3, but",
                     "virtual_pipeline_model_parallel_size is 2");
}

BOOST_AUTO_TEST_CASE(newer_and_classic_layouts_that_disagree) {
    const std::string pp2 = newer_layout + "parallel_config:\n  pipeline_stage: 2\n";
    PPB_CHECK_THROWS(
        ppb::InputError, layout_text(pp2),
        at_line(cfg(), pp2, "pipeline_stage: 2") + "parallel_config.pipeline_stage is 2",
        at_line(cfg(), pp2, "pipeline_model_parallel_size") +
            "distribute_parallel_config.pipeline_model_parallel_size is 4",
        "disagree");
    const std::string offsets =
        newer_layout + "model:\n  model_config:\n    offset: [0, 0, 0, 0]\n";
    PPB_CHECK_THROWS(ppb::InputError, layout_text(offsets),
                     "model.model_config.offset is [0, 0, 0, 0]",
                     "distribute_parallel_config.pipeline_parallel_config.pipeline_stage_offset "
                     "is [-1, 0, 0, 1]");
    const std::string layers = newer_layout + "model:\n  model_config:\n    num_layers: 32\n";
    PPB_CHECK_THROWS(ppb::InputError, layout_text(layers), "model.model_config.num_layers is 32",
                     "model_config.num_layers is 40");
    const std::string tp = newer_layout + "parallel_config:\n  model_parallel: 2\n";
    PPB_CHECK_THROWS(ppb::InputError, layout_text(tp), "parallel_config.model_parallel is 2",
                     "distribute_parallel_config.tensor_model_parallel_size is 4");
    // A flag wins over both, as over the classic layout.
    MindSporeFlags flags;
    flags.pipeline_stage = "4";
    flags.offset = "[-2, 1, 1, 0]";
    BOOST_TEST(layout_text(offsets, flags).stages[0] == kinds(0, 5, 0, 0, 3));
}

// MindFormers' current configurations name the chunks per stage either way (COMMON_CONFIG_MAPPING,
// mindformers/parallel_core/transformer_config_utils.py at commit
// f52743ca27a5a8af5fbc77c5b2037c1147c7004c: pp_interleave_num and
// virtual_pipeline_model_parallel_size are one setting).
BOOST_AUTO_TEST_CASE(the_chunks_by_either_of_their_names) {
    const std::string base =
        "parallel_config:\n  pipeline_stage: 2\n  micro_batch_num: 4\n"
        "model:\n  model_config:\n    num_hidden_layers: 8\n";
    const PipelineLayout l = layout_text(base + "    virtual_pipeline_model_parallel_size: 2\n");
    BOOST_TEST(l.num_chunks == 2u);
    BOOST_TEST((l.schedule == ppb::Schedule::interleaved));
    const std::string both = base +
                             "    pp_interleave_num: 2\n"
                             "    virtual_pipeline_model_parallel_size: 4\n";
    BOOST_TEST(
        ppb_test::error_message<ppb::InputError>([&] { (void)layout_text(both); }) ==
        at_line(cfg(), both, "pp_interleave_num") +
            "model.model_config.pp_interleave_num is 2, but " +
            at_line(cfg(), both, "virtual_pipeline") +
            "model.model_config.virtual_pipeline_model_parallel_size is 4: MindFormers reads "
            "both as the chunks per stage; give one of them, or make them agree");
}

BOOST_AUTO_TEST_CASE(newer_layout_without_data_parallel_size) {
    std::string text = newer_layout;
    text.replace(text.find("data_parallel_size: 2"), 21, "data_parallel_size: null");
    PPB_CHECK_THROWS(ppb::InputError, layout_text(text), "data_parallel_size is not given",
                     "--data-parallel N");
    MindSporeFlags flags;
    flags.data_parallel = "4";
    const PipelineLayout l = layout_text(text, flags);
    BOOST_TEST(l.ranks_per_stage == 16u);
    BOOST_TEST(l.micro_batches.value_or(0) == 8u);  // 32 // (4 x 1 x 1)
    text = newer_layout;
    text.replace(text.find("global_batch_size: 32"), 21, "global_batch_size: 33");
    PPB_CHECK_THROWS(ppb::InputError, layout_text(text),
                     at_line(cfg(), text, "global_batch_size") +
                         "training_args.global_batch_size: 33 is not a multiple of");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(mindspore_logs, Fixture)

BOOST_AUTO_TEST_CASE(one_reading_per_rank_from_named_logs) {
    const std::vector<LogFile> logs = {
        log("rank_0.log", ppb_test::mindspore_log(100, 110)),
        log("msrun/worker_8.log", ppb_test::mindspore_log(200, 220)),
        log("run/rank_16/any.txt", ppb_test::mindspore_log(300, 330))};
    auto readings = scan_mindspore_logs(logs, MindSporeMemory::used, messages);
    BOOST_TEST_REQUIRE(readings.size() == 3u);
    BOOST_TEST(readings[0].rank == 0u);
    BOOST_TEST(readings[0].mb == 100.0);
    BOOST_TEST(readings[0].line == 6u);
    BOOST_TEST(readings[1].rank == 8u);
    BOOST_TEST(readings[2].mb == 300.0);
    BOOST_TEST(messages.empty());
    readings = scan_mindspore_logs(logs, MindSporeMemory::actual, messages);
    BOOST_TEST(readings[1].mb == 220.0);
    BOOST_TEST(readings[1].line == 7u);
}

BOOST_AUTO_TEST_CASE(a_log_without_the_memory_line) {
    const LogFile cut = log("rank_3.log", "2024-11-20 10:31:05 - INFO - compiling\n");
    PPB_CHECK_THROWS(ppb::InputError,
                     scan_mindspore_logs(std::vector{cut}, MindSporeMemory::used, messages),
                     cut.name + ": no 'Used peak memory usage (without fragments): NNNNM' line",
                     "did the run finish?");
    const LogFile actual_only =
        log("rank_4.log", "Actual peak memory usage (with fragments): 5M\n");
    PPB_CHECK_THROWS(ppb::InputError,
                     scan_mindspore_logs(std::vector{actual_only}, MindSporeMemory::used, messages),
                     "rank_4.log: no 'Used peak", "--memory actual?");
    const LogFile utf16 = log("rank_5.log", std::string("U\0s\0e\0d\0", 8));
    PPB_CHECK_THROWS(ppb::InputError,
                     scan_mindspore_logs(std::vector{utf16}, MindSporeMemory::used, messages),
                     "rank_5.log: no 'Used peak", "NUL bytes", "UTF-16");
}

BOOST_AUTO_TEST_CASE(several_memory_lines_take_the_last) {
    const LogFile twice =
        log("rank_0.log", ppb_test::mindspore_log(100, 110) + "graph 2 compiled\n" +
                              ppb_test::mindspore_log(150, 160));
    const auto readings = scan_mindspore_logs(std::vector{twice}, MindSporeMemory::used, messages);
    BOOST_TEST_REQUIRE(readings.size() == 1u);
    BOOST_TEST(readings[0].mb == 150.0);
    BOOST_TEST(readings[0].line == 14u);
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text, {twice.name, "2 'Used peak memory' lines for rank 0",
                                                "lines 6, 14", "took the last, line 14"});
}

BOOST_AUTO_TEST_CASE(malformed_memory_lines_name_file_and_line) {
    const LogFile words =
        log("rank_0.log", "x\nUsed peak memory usage (without fragments): lots\n");
    PPB_CHECK_THROWS(ppb::InputError,
                     scan_mindspore_logs(std::vector{words}, MindSporeMemory::used, messages),
                     words.name + ":2: malformed memory line", "'23716M'", "lots");
    const LogFile unitless = log("rank_1.log", "Used peak memory usage (without fragments): 5\n");
    PPB_CHECK_THROWS(ppb::InputError,
                     scan_mindspore_logs(std::vector{unitless}, MindSporeMemory::used, messages),
                     ":1: malformed memory line");
    const LogFile zero = log("rank_2.log", "Used peak memory usage (without fragments): 0M\n");
    PPB_CHECK_THROWS(ppb::InputError,
                     scan_mindspore_logs(std::vector{zero}, MindSporeMemory::used, messages),
                     "rank_2.log:1:", "says 0M", "not a measured peak");
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8) {
    // Elsewhere in a log they do not matter (a GBK-encoded message, a stray byte)...
    const LogFile gbk =
        log("rank_0.log", "\xC4\xE3\xBA\xC3 \xFF\n" + ppb_test::mindspore_log(100, 110));
    BOOST_TEST(scan_mindspore_logs(std::vector{gbk}, MindSporeMemory::used, messages)[0].mb ==
               100.0);
    // ...on the memory line they make it an error naming file and line.
    const LogFile bad =
        log("rank_1.log", "ok\nUsed peak memory usage (without fragments): 5M \xFE\n");
    PPB_CHECK_THROWS(ppb::InputError,
                     scan_mindspore_logs(std::vector{bad}, MindSporeMemory::used, messages),
                     bad.name + ":2: the memory line holds a byte that is not UTF-8", "0xFE");
}

BOOST_AUTO_TEST_CASE(a_named_log_must_tell_its_rank) {
    const LogFile plain = log("train.log", ppb_test::mindspore_log(100, 110));
    PPB_CHECK_THROWS(ppb::InputError,
                     scan_mindspore_logs(std::vector{plain}, MindSporeMemory::used, messages),
                     plain.name + ": cannot tell which rank", "--rank " + plain.name + "=ID");
}

BOOST_AUTO_TEST_CASE(logs_found_in_directories) {
    const std::vector<LogFile> logs = {
        log("run/notes.txt", "no rank here\n", false),
        log("run/rank_0/error.log", "nothing\n", false),
        log("run/rank_0/dryrun.log", ppb_test::mindspore_log(100, 110), false),
        log("run/rank_8/dryrun.log", ppb_test::mindspore_log(200, 210), false)};
    const auto readings = scan_mindspore_logs(logs, MindSporeMemory::used, messages);
    BOOST_TEST(readings.size() == 2u);
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text, {"skipped 1 log", "notes.txt", "--rank"});

    const std::vector<LogFile> without = {
        log("run/rank_0/dryrun.log", ppb_test::mindspore_log(100, 110), false),
        log("run/rank_8/error.log", "nothing\n", false),
        log("run/rank_8/info.log", "nothing either\n", false)};
    PPB_CHECK_THROWS(ppb::InputError, scan_mindspore_logs(without, MindSporeMemory::used, messages),
                     "rank 8: no 'Used peak", "error.log", "info.log");
}

BOOST_AUTO_TEST_SUITE_END()

// What MindFormers' logs state about the layout (MindSporeLogLayout): its LayerSetting's
// "num_layers per stage" line (mindspore-lab/mindformers, mindformers/models/utils.py at commit
// fd4deebc1606a02fd24c3b359a889cd0c966e72b: logger.info of layer_list.tolist(), one row per
// chunk) and base_trainer.py's "Pipeline parallel was opened: pipeline_stages = N" line.
BOOST_FIXTURE_TEST_SUITE(mindspore_stated_layout, Fixture)

namespace {

// A rank's log as MindFormers writes it, stating `layers` (the list as printed).
std::string stating(const std::string& layers, int used_mb = 100) {
    return "2024-11-20 10:31:08,530 - mindformers[mindformers/models/utils.py:204] - INFO - "
           "num_layers per stage: " +
           layers +
           "\n2024-11-20 10:31:08,531 - mindformers[mindformers/models/utils.py:205] - INFO - "
           "Accumulated num_layers per stage: [[9, 19, 29, 40]]\n" +
           ppb_test::mindspore_log(used_mb, used_mb + 10);
}

std::vector<std::string> texts(const Messages& messages) {
    std::vector<std::string> out;
    for (const Message& m : messages)
        out.push_back(m.text);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(values_the_configuration_leaves_out_come_from_the_logs) {
    const std::vector<LogFile> logs = {log("rank_0.log", stating("[[9, 10, 10, 11]]")),
                                       log("rank_8.log", stating("[[9, 10, 10, 11]]", 200))};
    const MindSporeLogLayout stated = mindspore_log_layout(logs);
    BOOST_TEST(stated.layers_where == logs[0].name + ":1");
    BOOST_TEST(stated.layers == (std::vector<std::vector<std::uint32_t>>{{9, 10, 10, 11}}));
    // No pipeline_stage, num_layers or offset in the file: the logs say them.
    Yaml yaml;
    yaml.pipeline_stage.clear();
    yaml.num_layers.clear();
    yaml.offset.clear();
    messages.clear();
    const PipelineLayout l =
        mindspore_layout(dir.write("cfg.yaml", yaml.text()), {}, messages, stated);
    BOOST_TEST(l.num_stages == 4u);
    BOOST_TEST(l.stages[0] == kinds(0, 6, 0, 0, 3));
    BOOST_TEST(l.stages[3] == kinds(0, 11, 0, 0, 0));
    BOOST_TEST(texts(messages) ==
                   (std::vector<std::string>{"--pipeline-stage 4 from " + logs[0].name + ":1",
                                             "--num-layers 40 from " + logs[0].name + ":1",
                                             "--offset [-1, 0, 0, 1] from " + logs[0].name + ":1"}),
               boost::test_tools::per_element());
    // Given as the logs state it: nothing to say.
    messages.clear();
    (void)mindspore_layout(dir.write("cfg.yaml", Yaml{}.text()), {}, messages, stated);
    BOOST_TEST(messages.empty());
}

BOOST_AUTO_TEST_CASE(a_layout_the_logs_contradict_is_refused_naming_both) {
    const LogFile one = log("rank_0.log", stating("[[8, 11, 11, 10]]"));
    const MindSporeLogLayout stated = mindspore_log_layout(std::vector{one});
    const std::string config = dir.write("cfg.yaml", Yaml{}.text()).string();
    BOOST_TEST(ppb_test::error_message<ppb::InputError>(
                   [&] { (void)mindspore_layout(config, {}, messages, stated); }) ==
               "the layout gives [9, 10, 10, 11] layers per stage (num_layers 40 // "
               "pipeline_stage 4 = 10; offsets from " +
                   at_line(config, Yaml{}.text(), "offset") + "model.model_config.offset), but " +
                   one.name +
                   ":1 says 'num_layers per stage: [[8, 11, 11, 10]]': are these the logs "
                   "of this configuration's run?");
    // A flag that gives the logs' layout wins over the file, as flags do.
    MindSporeFlags flags;
    flags.offset = "[-2, 1, 1, 0]";
    BOOST_TEST(total_layers(mindspore_layout(config, flags, messages, stated).stages[0]) == 8u);
    flags.offset = "[0, 0, 0, 0]";
    PPB_CHECK_THROWS(ppb::InputError, mindspore_layout(config, flags, messages, stated),
                     "the layout gives [10, 10, 10, 10] layers per stage (num_layers 40 // "
                     "pipeline_stage 4 = 10; offsets from --offset), but " +
                         one.name + ":1 says 'num_layers per stage: [[8, 11, 11, 10]]'");
}

BOOST_AUTO_TEST_CASE(interleaved_rows_per_chunk) {
    // MindFormers' documentation example (docs/feature_cards/Offset_Recompute.md at commit
    // 8bb9f6ca330d2aa388f94c8a7baebd30ede2e7b1): 48 layers, pipeline_stage 5, pp_interleave_num
    // 2, offset [[0,1,1,1,1],[1,1,1,1,0]] print [[4, 5, 5, 5, 5], [5, 5, 5, 5, 4]].
    const MindSporeLogLayout stated = mindspore_log_layout(
        std::vector{log("rank_0.log", stating("[[4, 5, 5, 5, 5], [5, 5, 5, 5, 4]]"))});
    Yaml yaml;
    yaml.pipeline_stage.clear();
    yaml.num_layers.clear();
    yaml.offset.clear();
    yaml.recompute = "0";
    messages.clear();
    const PipelineLayout l =
        mindspore_layout(dir.write("cfg.yaml", yaml.text()), {}, messages, stated);
    BOOST_TEST(l.num_stages == 5u);
    BOOST_TEST(l.num_chunks == 2u);
    BOOST_TEST(l.chunks[0][0] == kinds(0, 4, 0, 0, 0));
    BOOST_TEST(l.chunks[4][1] == kinds(0, 4, 0, 0, 0));
    BOOST_TEST(texts(messages).at(2) ==
               "--pp-interleave-num 2 from " + (dir / "rank_0.log").string() + ":1");
    BOOST_TEST(texts(messages).back() == "--offset [[0, 1, 1, 1, 1], [1, 1, 1, 1, 0]] from " +
                                             (dir / "rank_0.log").string() + ":1");
}

BOOST_AUTO_TEST_CASE(logs_that_state_different_layouts) {
    const LogFile a = log("rank_0.log", stating("[[9, 10, 10, 11]]"));
    const LogFile b = log("rank_8.log", stating("[[8, 11, 11, 10]]"));
    BOOST_TEST(ppb_test::error_message<ppb::InputError>([&] {
                   (void)mindspore_log_layout(std::vector{a, b});
               }) == b.name + ":1: num_layers per stage: [[8, 11, 11, 10]], but " + a.name +
                         ":1 says num_layers per stage: [[9, 10, 10, 11]]: are these logs of one "
                         "run?");
    const LogFile bad = log("rank_16.log", stating("[[9, 10, x]]"));
    PPB_CHECK_THROWS(ppb::InputError, mindspore_log_layout(std::vector{bad}),
                     bad.name + ":1: cannot read MindFormers' 'num_layers per stage' line");
}

BOOST_AUTO_TEST_CASE(the_pipeline_stages_line) {
    // base_trainer.py: "Pipeline parallel was opened: pipeline_stages = %s, full batch is True,
    // ...".
    const LogFile one =
        log("rank_0.log",
            "2024-11-20 10:31:06,211 - mindformers[mindformers/trainer/base_trainer.py:"
            "210] - INFO - Pipeline parallel was opened: pipeline_stages = 2, full batch "
            "is True, gradient_accumulation_steps will not take effect in pipeline "
            "parallel, global batch size will be changed: global_batch_size = "
            "batch_size * data_parallel * micro_batch_num * micro_batch_interleave_num "
            "= 32 = 1 * 2 * 16 * 1).\n" +
                ppb_test::mindspore_log(100, 110));
    const MindSporeLogLayout stated = mindspore_log_layout(std::vector{one});
    BOOST_TEST(stated.stages.value_or(0) == 2u);
    Yaml yaml;
    PPB_CHECK_THROWS(
        ppb::InputError, mindspore_layout(dir.write("cfg.yaml", yaml.text()), {}, messages, stated),
        "the layout has 4 stages (pipeline_stage from " + cfg() +
            ":5: parallel_config.pipeline_stage), but " + one.name + ":1 says pipeline_stages = 2");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace mindspore_tests
