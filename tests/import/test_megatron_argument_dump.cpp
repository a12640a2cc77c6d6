// What a Megatron-LM log states about its run (ppb/importers/megatron_argument_dump.hpp) and the
// rule that holds the flags to it (megatron_flags_from_logs): the argument dump in the shapes
// NVIDIA/Megatron-LM's _print_args prints — current, megatron/training/arguments.py at commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553 (24 dashes, names padded with dots to 48); old,
// megatron/arguments.py at commit 94e2ca575c34593bd66c5c14d09c5c143155d707 (20 dashes, 32) —
// and MindSpeed-LLM's (Ascend/MindSpeed-LLM, mindspeed_llm/training/utils.py print_args at commit
// c77308a14bfcb1aa7ca61da9c1aa24a893cb1b91, title "MindSpeed-LLM Arguments"), the "using world
// size" line of validate_args (current, and the form of commit
// 6ea23928deb0830377cde977e8e3413586b2f7bd), the micro-batch line of
// megatron/core/num_microbatches_calculator.py (current, and "micro-batches" before commit
// 50c5e2deaa657715f140dd9315bf42a3cc923463), with the prefixes launchers and loggers put before
// lines.
#include "scratch.hpp"

#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_argument_dump.hpp>
#include <ppb/importers/megatron_layout.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

using namespace ppb::importers;
using ppb_test::error_message;
using ppb_test::kinds;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_argument_dump_tests {

namespace {

// One line of the dump as _print_args writes it: '  {} {} {}'.format(arg, '.' * (width -
// len(arg)), getattr(args, arg)), where '.' * n is '' for n <= 0.
std::string dump_line(std::string_view name, std::string_view value, std::size_t width = 48) {
    return fmt::format("  {} {} {}", name,
                       std::string(width > name.size() ? width - name.size() : 0, '.'), value);
}

// The current dump of `entries` (name, str(value)), titled as Megatron titles it.
std::string current_dump(const std::vector<std::pair<std::string, std::string>>& entries,
                         const std::string& title = "arguments") {
    std::string text = fmt::format("------------------------ {} ------------------------\n", title);
    for (const auto& [name, value] : entries)
        text += dump_line(name, value) + "\n";
    return text + fmt::format("-------------------- end of {} ---------------------\n", title);
}

// Feeds `text` as file `name`, line by line, as scan_megatron_logs does.
void feed(MegatronArgumentDump& dump, const std::string& name, const std::string& text) {
    std::size_t line = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        dump.read_line(name, ++line, std::string_view(text).substr(start, end - start));
        start = end == std::string::npos ? text.size() : end + 1;
    }
    dump.end_of_file();
}

MegatronScan scan_of(const std::string& name, const std::string& text) {
    MegatronScan scan;
    feed(scan.arguments, name, text);
    return scan;
}

std::vector<std::string> texts(const Messages& messages) {
    std::vector<std::string> out;
    for (const Message& m : messages)
        out.push_back(m.text);
    return out;
}

// The sample's run (samples/data/import/megatron/selective.log): Llama-2-7B-like, 32 layers on 4
// stages of tensor parallel 2, 7 layers on the first and the last, selective recompute.
const std::string using_line =
    "using world size: 8, data-parallel size: 1, context-parallel size: 1, hierarchical "
    "context-parallel sizes: None, tensor-model-parallel size: 2, encoder-tensor-model-parallel "
    "size: 0, pipeline-model-parallel size: 4, encoder-pipeline-model-parallel size: 0";

std::string selective_run() {
    return using_line + "\n" +
           current_dump({{"decoder_first_pipeline_num_layers", "7"},
                         {"decoder_last_pipeline_num_layers", "7"},
                         {"global_batch_size", "32"},
                         {"micro_batch_size", "1"},
                         {"num_layers", "32"},
                         {"pipeline_model_parallel_size", "4"},
                         {"recompute_granularity", "selective"},
                         {"recompute_method", "None"},
                         {"recompute_num_layers", "None"},
                         {"tensor_model_parallel_size", "2"}}) +
           "setting number of microbatches to constant 32\n";
}

std::vector<std::uint32_t> totals(const PipelineLayout& l) {
    std::vector<std::uint32_t> out;
    for (const auto& stage : l.stages)
        out.push_back(total_layers(stage));
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(megatron_argument_dump)

BOOST_AUTO_TEST_CASE(the_lines_megatron_prints) {
    // The helper writes what Python writes (checked against the literal lines).
    BOOST_TEST(dump_line("num_layers", "32") ==
               "  num_layers ...................................... 32");
    BOOST_TEST(dump_line("decoder_first_pipeline_num_layers", "7") ==
               "  decoder_first_pipeline_num_layers ............... 7");
    BOOST_TEST(dump_line("num_layers", "24", 32) == "  num_layers ...................... 24");
    BOOST_TEST(dump_line("num_layers_per_virtual_pipeline_stage", "2", 32) ==
               "  num_layers_per_virtual_pipeline_stage  2");

    MegatronArgumentDump dump;
    feed(dump, "train.log", selective_run());
    const StatedValue* first = dump.find("decoder_first_pipeline_num_layers");
    BOOST_TEST_REQUIRE(first != nullptr);
    BOOST_TEST(first->text == "7");
    BOOST_TEST(first->where() == "train.log:3");
    BOOST_TEST(first->label == "decoder_first_pipeline_num_layers");
    BOOST_TEST(dump.find("recompute_method")->is_none());
    // The "using world size" line, by the dump's names; the encoder sizes are not the model's.
    BOOST_TEST(dump.find("world_size")->text == "8");
    BOOST_TEST(dump.find("world_size")->label == "world size");
    BOOST_TEST(dump.find("data_parallel_size")->text == "1");
    BOOST_TEST(dump.find("tensor_model_parallel_size")->text == "2");
    BOOST_TEST(dump.find("context_parallel_size")->text == "1");
    BOOST_TEST(dump.find("pipeline_model_parallel_size")->where() == "train.log:1");
    BOOST_TEST(dump.find("num_microbatches")->text == "32");
    BOOST_TEST(dump.find("num_microbatches")->where() == "train.log:14");
    // Keys the importer does not read are not kept.
    BOOST_TEST(dump.find("seq_length") == nullptr);
    BOOST_TEST(dump.values().size() == 14u);
}

BOOST_AUTO_TEST_CASE(the_old_shape) {
    // megatron/arguments.py before 2020-12: 20 dashes, names padded to 32, longer names without
    // dots; "data-parallel-size" on the world-size line; "micro-batches".
    const std::string log =
        "using world size: 16, data-parallel-size: 2, tensor-model-parallel size: 2, "
        "pipeline-model-parallel size: 4 \n"
        "-------------------- arguments --------------------\n" +
        dump_line("global_batch_size", "64", 32) + "\n" + dump_line("micro_batch_size", "2", 32) +
        "\n" + dump_line("num_layers", "24", 32) + "\n" +
        dump_line("num_layers_per_virtual_pipeline_stage", "3", 32) + "\n" +
        dump_line("pipeline_model_parallel_size", "4", 32) + "\n" +
        dump_line("virtual_pipeline_model_parallel_size", "2", 32) + "\n" +
        "---------------- end of arguments ----------------\n"
        "setting number of micro-batches to constant 16\n";
    MegatronArgumentDump dump;
    feed(dump, "old.log", log);
    BOOST_TEST(dump.find("data_parallel_size")->text == "2");
    BOOST_TEST(dump.find("num_layers")->text == "24");
    BOOST_TEST(dump.find("num_layers_per_virtual_pipeline_stage")->text == "3");
    BOOST_TEST(dump.find("virtual_pipeline_model_parallel_size")->where() == "old.log:8");
    BOOST_TEST(dump.find("num_microbatches")->text == "16");

    // The whole run from it: 4 stages of 4 ranks, 2 chunks of 3 layers, 64 / (2 x 2) = 16.
    Messages messages;
    MegatronScan scan;
    scan.arguments = dump;
    const PipelineLayout l = megatron_layout(MegatronFlags{}, scan, messages);
    BOOST_TEST(l.num_stages == 4u);
    BOOST_TEST(l.ranks_per_stage == 4u);
    BOOST_TEST(l.num_chunks == 2u);
    BOOST_TEST(l.micro_batches.value_or(0) == 16u);
    BOOST_TEST(l.chunks[3][1] == kinds(3, 0, 0, 0, 0));
    BOOST_TEST(texts(messages) == (std::vector<std::string>{
                                      "--pipeline-model-parallel-size 4 from old.log:1",
                                      "--num-layers 24 from old.log:5",
                                      "--world-size 16 from old.log:1",
                                      "--num-layers-per-virtual-pipeline-stage 3 from old.log:6",
                                      "--num-microbatches 16 from old.log:10",
                                  }),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(prefixes_of_launchers_and_loggers) {
    // torchrun's "[default0]:", a time stamp, srun -l's "0: ", the logging module's
    // "INFO:<logger>:"; other ranks' lines inside the dump are passed over.
    std::string log;
    for (const std::string& line :
         {std::string("[default0]:") + using_line,
          std::string("[default0]:------------------------ arguments ------------------------"),
          "[default0]:" + dump_line("num_layers", "32"),
          std::string("[default3]:some other rank's line ... with dots"),
          "[2025-03-10 14:01:02] " + dump_line("pipeline_model_parallel_size", "4"),
          "0: " + dump_line("recompute_granularity", "full"),
          "[rank0]:" + dump_line("recompute_method", "block"),
          "[rank0]:" + dump_line("recompute_num_layers", "2"),
          std::string("[default0]:-------------------- end of arguments ---------------------"),
          std::string("[default0]:INFO:megatron.core.num_microbatches_calculator:setting number "
                      "of microbatches to constant 8")}) {
        log += line + "\n";
    }
    MegatronArgumentDump dump;
    feed(dump, "p.log", log);
    BOOST_TEST(dump.find("num_layers")->text == "32");
    BOOST_TEST(dump.find("world_size")->where() == "p.log:1");
    BOOST_TEST(dump.find("pipeline_model_parallel_size")->where() == "p.log:1");  // and line 5
    BOOST_TEST(dump.find("recompute_granularity")->text == "full");
    BOOST_TEST(dump.find("recompute_method")->text == "block");
    BOOST_TEST(dump.find("recompute_num_layers")->where() == "p.log:8");
    BOOST_TEST(dump.find("num_microbatches")->text == "8");
    // A line of dots in another shape is not an entry: 49 dots after num_layers.
    MegatronArgumentDump other;
    feed(other, "q.log",
         current_dump({}) + "------------------------ arguments ------------------------\n" +
             "  num_layers " + std::string(39, '.') + " 32\n");
    BOOST_TEST(other.find("num_layers") == nullptr);
}

BOOST_AUTO_TEST_CASE(mindspeed_llm_prints_its_own_title) {
    MegatronArgumentDump dump;
    feed(dump, "ms.log",
         current_dump({{"noop_layers", "{61, 62, 63}"},
                       {"num_layer_list", "None"},
                       {"num_layers", "64"},
                       {"pipeline_model_parallel_size", "4"}},
                      "MindSpeed-LLM Arguments"));
    BOOST_TEST(dump.find("noop_layers")->text == "{61, 62, 63}");
    BOOST_TEST(dump.find("num_layer_list")->is_none());
    BOOST_TEST(dump.find("num_layers")->text == "64");
}

BOOST_AUTO_TEST_CASE(logs_that_disagree_are_refused_naming_both) {
    MegatronArgumentDump dump;
    feed(dump, "a.log", selective_run());
    std::string other = selective_run();
    other.replace(other.find("pipeline-model-parallel size: 4"), 31,
                  "pipeline-model-parallel size: 2");
    BOOST_TEST(error_message<ppb::InputError>([&] { feed(dump, "b.log", other); }) ==
               "b.log:1: pipeline-model-parallel size 2, but a.log:1 says pipeline-model-parallel "
               "size 4: are these logs of one run?");
    // Within one log too: the world-size line against the dump.
    MegatronArgumentDump one;
    const std::string contradicting = "using world size: 8, pipeline-model-parallel size: 4\n" +
                                      current_dump({{"pipeline_model_parallel_size", "2"}});
    BOOST_TEST(error_message<ppb::InputError>([&] { feed(one, "c.log", contradicting); }) ==
               "c.log:3: pipeline_model_parallel_size 2, but c.log:1 says pipeline-model-parallel "
               "size 4: are these logs of one run?");
}

BOOST_AUTO_TEST_CASE(a_value_line_must_be_utf8) {
    MegatronArgumentDump dump;
    PPB_CHECK_THROWS(ppb::InputError, feed(dump, "u.log", current_dump({{"num_layers", "3\xff"}})),
                     "u.log:2: the argument line holds a byte that is not UTF-8");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(megatron_flags_held_to_the_logs)

// The cases on the sample's run: every flag left out is taken and said; the layout is the
// sample's 7/9/9/7 with selective recompute and 32 micro-batches.
BOOST_AUTO_TEST_CASE(flags_left_out_take_the_logs_values) {
    Messages messages;
    const PipelineLayout l =
        megatron_layout(MegatronFlags{}, scan_of("selective.log", selective_run()), messages);
    BOOST_TEST(totals(l) == (std::vector<std::uint32_t>{7, 9, 9, 7}),
               boost::test_tools::per_element());
    BOOST_TEST(l.stages[1] == kinds(0, 9, 0, 0, 0));
    BOOST_TEST(l.ranks_per_stage == 2u);
    BOOST_TEST(l.micro_batches.value_or(0) == 32u);
    BOOST_TEST(texts(messages) == (std::vector<std::string>{
                                      "--pipeline-model-parallel-size 4 from selective.log:1",
                                      "--num-layers 32 from selective.log:7",
                                      "--world-size 8 from selective.log:1",
                                      "--decoder-first-pipeline-num-layers 7 from selective.log:3",
                                      "--decoder-last-pipeline-num-layers 7 from selective.log:4",
                                      "--recompute-granularity selective from selective.log:9",
                                      "--num-microbatches 32 from selective.log:14",
                                  }),
               boost::test_tools::per_element());
    // Flags that agree are not noted.
    MegatronFlags agreeing;
    agreeing.pipeline_size = 4;
    agreeing.num_layers = 32;
    agreeing.world_size = 8;
    agreeing.first_stage_layers = 7;
    agreeing.last_stage_layers = 7;
    agreeing.recompute_granularity = "selective";
    agreeing.micro_batches = 32;
    messages.clear();
    BOOST_TEST(totals(megatron_layout(agreeing, scan_of("selective.log", selective_run()),
                                      messages)) == (std::vector<std::uint32_t>{7, 9, 9, 7}),
               boost::test_tools::per_element());
    BOOST_TEST(messages.empty());
}

BOOST_AUTO_TEST_CASE(flags_that_contradict_the_logs_are_refused_naming_both) {
    const MegatronScan scan = scan_of("selective.log", selective_run());
    const auto refusal = [&](const MegatronFlags& f) {
        Messages messages;
        return error_message<ppb::InputError>([&] { (void)megatron_layout(f, scan, messages); });
    };
    const std::string advice =
        ": leave the flag out to take the log's value, or import the logs of the run the flag "
        "describes";
    MegatronFlags f;
    f.pipeline_size = 2;
    BOOST_TEST(refusal(f) ==
               "--pipeline-model-parallel-size 2 (command line) contradicts "
               "pipeline-model-parallel size 4 (selective.log:1)" +
                   advice);
    f = {};
    f.recompute_granularity = "full";
    f.recompute_method = "uniform";
    f.recompute_num_layers = 1;
    BOOST_TEST(refusal(f) ==
               "--recompute-granularity full (command line) contradicts recompute_granularity "
               "selective (selective.log:9)" +
                   advice);
    f = {};
    f.recompute_method = "block";  // None in the run
    BOOST_TEST(refusal(f) ==
               "--recompute-method block (command line) contradicts recompute_method None "
               "(selective.log:10), unset in that run" +
                   advice);
    f = {};
    f.first_stage_layers = 8;
    BOOST_TEST(refusal(f) ==
               "--decoder-first-pipeline-num-layers 8 (command line) contradicts "
               "decoder_first_pipeline_num_layers 7 (selective.log:3)" +
                   advice);
    f = {};
    f.micro_batches = 16;
    BOOST_TEST(refusal(f) ==
               "--num-microbatches 16 (command line) contradicts 'setting number of microbatches "
               "to constant 32' (selective.log:14)" +
                   advice);
    f = {};
    f.account_for_loss = true;  // not stated in this dump: stands
    Messages messages;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, scan, messages),
                     "--account-for-loss-in-pipeline-split and "
                     "--decoder-first-pipeline-num-layers must not be given together",
                     "(with --pipeline-model-parallel-size 4 from selective.log:1;");
}

BOOST_AUTO_TEST_CASE(values_compared_by_what_they_mean) {
    // The layout as written on the command line and as the dump prints it; the MoE pattern as a
    // list expression and as the list Megatron's moe_freq_type made of it.
    const std::string log =
        "using world size: 16, pipeline-model-parallel size: 4\n" +
        current_dump({{"moe_layer_freq", "[0, 0, 0, 1, 1, 1, 1, 1]"},
                      {"mtp_num_layers", "1"},
                      {"num_experts", "64"},
                      {"num_layers", "8"},
                      {"pipeline_model_parallel_layout", "Et|(t|)*3,tt|t|tm|L"}});
    MegatronFlags f;
    f.layout = "Et|t|t|t|tt|t|tm|L";
    f.moe_layer_freq = "[0]*3+[1]*5";
    Messages messages;
    const PipelineLayout l = megatron_layout(f, scan_of("moe.log", log), messages);
    BOOST_TEST(l.num_chunks == 2u);
    BOOST_TEST(l.groups == (std::vector<std::string>{"dense", "moe"}),
               boost::test_tools::per_element());
    f.moe_layer_freq = "[0]*2+[1]*6";
    PPB_CHECK_THROWS(ppb::InputError, megatron_layout(f, scan_of("moe.log", log), messages),
                     "--moe-layer-freq '[0]*2+[1]*6' (command line) contradicts moe_layer_freq "
                     "[0, 0, 0, 1, 1, 1, 1, 1] (moe.log:3)");
    // Without num_experts in the run, moe_layer_freq (1 in every dump) is not taken.
    messages.clear();
    const PipelineLayout dense = megatron_layout(
        MegatronFlags{},
        scan_of("dense.log",
                "using world size: 4\n" + current_dump({{"moe_layer_freq", "1"},
                                                        {"num_experts", "None"},
                                                        {"num_layers", "8"},
                                                        {"pipeline_model_parallel_size", "4"}})),
        messages);
    BOOST_TEST(dense.groups.empty());
    // A value the log cannot mean is named where it is.
    PPB_CHECK_THROWS(
        ppb::InputError,
        megatron_layout(
            MegatronFlags{},
            scan_of("bad.log", "using world size: 2\n" +
                                   current_dump({{"num_layers", "eight"},
                                                 {"pipeline_model_parallel_size", "2"}})),
            messages),
        "bad.log:3: num_layers 'eight': expected a whole number or None");
    PPB_CHECK_THROWS(
        ppb::InputError,
        megatron_layout(
            MegatronFlags{},
            scan_of("bad.log", "using world size: 2\n" +
                                   current_dump({{"num_layers", "4"},
                                                 {"pipeline_model_parallel_layout", "Etx|ttL"},
                                                 {"pipeline_model_parallel_size", "2"}})),
            messages),
        "bad.log:4: --pipeline-model-parallel-layout 'Etx|ttL': invalid layer "
        "character 'x'");
}

BOOST_AUTO_TEST_CASE(micro_batches_as_megatron_derives_them) {
    // No micro-batch line: global_batch_size / (micro_batch_size x data_parallel_size).
    const std::string log =
        "using world size: 8, data-parallel size: 2, tensor-model-parallel "
        "size: 1, pipeline-model-parallel size: 4\n" +
        current_dump({{"global_batch_size", "64"},
                      {"micro_batch_size", "2"},
                      {"num_layers", "8"},
                      {"pipeline_model_parallel_size", "4"}});
    Messages messages;
    BOOST_TEST(megatron_layout(MegatronFlags{}, scan_of("d.log", log), messages)
                   .micro_batches.value_or(0) == 16u);
    BOOST_TEST(messages.back().text ==
               "--num-microbatches 16 = global_batch_size 64 (d.log:3) / (micro_batch_size 2 "
               "(d.log:4) x data-parallel size 2 (d.log:1)), as Megatron derives it");
    MegatronFlags f;
    f.micro_batches = 8;
    BOOST_TEST(error_message<ppb::InputError>(
                   [&] { (void)megatron_layout(f, scan_of("d.log", log), messages); }) ==
               "--num-microbatches 8 (command line) contradicts global_batch_size 64 (d.log:3) / "
               "(micro_batch_size 2 (d.log:4) x data-parallel size 2 (d.log:1)) = 16 "
               "micro-batches: leave the flag out to take the log's value, or import the logs of "
               "the run the flag describes");
    // The micro-batch line and the sizes must agree.
    PPB_CHECK_THROWS(ppb::InputError,
                     megatron_layout(MegatronFlags{},
                                     scan_of("d.log", log + "setting number of microbatches to "
                                                            "constant 32\n"),
                                     messages),
                     "'setting number of microbatches to constant 32' (d.log:8), but "
                     "global_batch_size 64 (d.log:3) / (micro_batch_size 2 (d.log:4) x "
                     "data-parallel size 2 (d.log:1)) = 16 micro-batches: are these logs of one "
                     "run?");
    // A ramp-up gives no one count.
    messages.clear();
    std::string ramp = log;
    ramp.insert(ramp.find("-------------------- end"),
                dump_line("rampup_batch_size", "['16', '16', '1000']") + "\n");
    BOOST_TEST(!megatron_layout(MegatronFlags{}, scan_of("r.log", ramp), messages).micro_batches);
}

BOOST_AUTO_TEST_CASE(the_chunks_the_run_had) {
    // Megatron derives virtual_pipeline_model_parallel_size; flags giving other chunks are
    // refused.
    const std::string log = "using world size: 4, pipeline-model-parallel size: 4\n" +
                            current_dump({{"num_layers", "16"},
                                          {"num_virtual_stages_per_pipeline_rank", "None"},
                                          {"pipeline_model_parallel_size", "4"},
                                          {"virtual_pipeline_model_parallel_size", "2"}});
    Messages messages;
    MegatronFlags f;
    f.layers_per_virtual_stage = 2;  // gives 2 chunks of 2: agrees
    BOOST_TEST(megatron_layout(f, scan_of("v.log", log), messages).num_chunks == 2u);
    f.layers_per_virtual_stage = 1;
    BOOST_TEST(error_message<ppb::InputError>(
                   [&] { (void)megatron_layout(f, scan_of("v.log", log), messages); }) ==
               "the flags give 4 chunks per stage, but v.log:6 says "
               "virtual_pipeline_model_parallel_size 2 (2 per stage in that run): give the "
               "virtual-pipeline or layout flags the run had");
    f = {};
    f.virtual_stages = 2;  // None in the run
    PPB_CHECK_THROWS(ppb::InputError, megatron_layout(f, scan_of("v.log", log), messages),
                     "--num-virtual-stages-per-pipeline-rank 2 (command line) contradicts "
                     "num_virtual_stages_per_pipeline_rank None (v.log:4), unset in that run");
}

BOOST_AUTO_TEST_CASE(runs_ppb_cannot_read_are_refused_by_name) {
    Messages messages;
    BOOST_TEST(error_message<ppb::InputError>([&] {
                   (void)megatron_layout(
                       MegatronFlags{},
                       scan_of("dualpipe.log", current_dump({{"num_layers", "16"},
                                                             {"schedules_method", "dualpipev"}},
                                                            "MindSpeed-LLM Arguments")),
                       messages);
               }) ==
               "dualpipe.log:3: schedules_method dualpipev: ppb import megatron reads runs of "
               "Megatron-LM's 1F1B and interleaved schedules, whose in-flight counts it knows; "
               "this run used another schedule");
    PPB_CHECK_THROWS(
        ppb::InputError,
        megatron_layout(MegatronFlags{},
                        scan_of("h.log", current_dump({{"hybrid_layer_pattern", "M*M*|M*M*"}})),
                        messages),
        "h.log:2: hybrid_layer_pattern M*M*|M*M*: a hybrid model's layers");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(mindspeed_llm_layout_flags)

MegatronFlags mindspeed(std::uint32_t p, std::uint32_t layers) {
    MegatronFlags f;
    f.pipeline_size = p;
    f.num_layers = layers;
    f.world_size = p;
    f.micro_batches = 8;
    return f;
}

// --num-layer-list: stage s builds the s-th count (MindSpeed-LLM's get_num_layers_to_build).
BOOST_AUTO_TEST_CASE(num_layer_list_gives_each_stage_its_count) {
    MegatronFlags f = mindspeed(8, 80);
    f.num_layer_list = "7,9,10,11,11,11,11,10";
    f.recompute_granularity = "full";
    f.recompute_method = "block";
    f.recompute_num_layers = 8;
    Messages messages;
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(totals(l) == (std::vector<std::uint32_t>{7, 9, 10, 11, 11, 11, 11, 10}),
               boost::test_tools::per_element());
    BOOST_TEST(l.stages[0] == kinds(0, 0, 0, 0, 7));
    BOOST_TEST(l.stages[3] == kinds(3, 0, 0, 0, 8));
    // Python's int() of each item: spaces around it are fine, as is a printed list.
    BOOST_TEST(parse_num_layer_list(" 7, 9 ,10", "--num-layer-list") ==
                   (std::vector<std::uint32_t>{7, 9, 10}),
               boost::test_tools::per_element());
    BOOST_TEST(
        parse_num_layer_list("[7, 9, 10]", "x.log:3") == (std::vector<std::uint32_t>{7, 9, 10}),
        boost::test_tools::per_element());
}

// What MindSpeed-LLM refuses (NumLayerListFeature.validate_args,
// core_transformer_config_from_args_wrapper), refused the same, naming both.
BOOST_AUTO_TEST_CASE(num_layer_list_refused_as_mindspeed_refuses_it) {
    Messages messages;
    const auto refusal = [&](const MegatronFlags& f) {
        return error_message<FlagError>(
            [&] { (void)megatron_layout(f, MegatronScan{}, messages); });
    };
    MegatronFlags f = mindspeed(4, 32);
    f.num_layer_list = "7,9,9";
    BOOST_TEST(refusal(f) ==
               "--num-layer-list '7,9,9' gives 3 counts, but --pipeline-model-parallel-size is "
               "4: MindSpeed-LLM requires one per stage");
    f.num_layer_list = "7,9,9,8";
    BOOST_TEST(refusal(f) ==
               "--num-layer-list '7,9,9,8' sums to 33 layers, but --num-layers is 32: "
               "MindSpeed-LLM requires them to match");
    f.num_layer_list = "7,9,x,7";
    BOOST_TEST(refusal(f) ==
               "--num-layer-list '7,9,x,7': item 3 'x' is not a count of layers from 0 to 10000 "
               "(MindSpeed-LLM reads the comma-separated counts of the stages with int())");
    f.num_layer_list = "7,9,9,7";
    f.first_stage_layers = 7;
    BOOST_TEST(refusal(f) ==
               "--num-layer-list and --decoder-first-pipeline-num-layers must not be given "
               "together: both say the stages' layers, and MindSpeed-LLM builds each stage from "
               "--num-layer-list alone (its get_num_layers_to_build); give one");
    f.first_stage_layers.reset();
    f.layout = "Et*7|t*9|t*9|t*7L";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--num-layer-list and --pipeline-model-parallel-layout must not be given "
                     "together");
    f.layout.reset();
    f.account_for_embedding = true;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--num-layer-list and --account-for-embedding-in-pipeline-split");
    f.account_for_embedding = false;
    f.layers_per_virtual_stage = 2;
    BOOST_TEST(refusal(f) ==
               "--num-layer-list and --num-layers-per-virtual-pipeline-stage must not be given "
               "together (MindSpeed-LLM refuses it: \"Dynamic pipeline model and virtual "
               "pipeline cannot be enabled at the same time\")");
    f.layers_per_virtual_stage.reset();
    f.virtual_stages = 2;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--num-layer-list and --num-virtual-stages-per-pipeline-rank must not be "
                     "given together");
    f = mindspeed(1, 8);
    f.num_layer_list = "8";
    BOOST_TEST(refusal(f) ==
               "--num-layer-list needs --pipeline-model-parallel-size 2 or more (MindSpeed-LLM: "
               "\"Dynamic pipeline model should work with pipeline parallel\")");
}

// --noop-layers: layers counted in --num-layers, placed as Megatron places layers, holding no
// transformer block: left out of the counts; the block method still counts them by position.
BOOST_AUTO_TEST_CASE(noop_layers_hold_no_block) {
    // MindSpeed's own example (docs/zh/features/noop-layers.md): 126 real layers padded to 128
    // with no-op layers 0 and 127.
    MegatronFlags f = mindspeed(4, 128);
    f.noop_layers = "0,127";
    Messages messages;
    PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(totals(l) == (std::vector<std::uint32_t>{31, 32, 32, 31}),
               boost::test_tools::per_element());
    BOOST_TEST(messages.back().text ==
               "--noop-layers: 2 of the 128 layers are MindSpeed-LLM's no-op layers (0, 127), "
               "which hold no transformer block and no memory: the stages count only their 126 "
               "real layers (31, 32, 32, 31)");
    // Interleaved, as ppb writes it: chunks of 3 positions, the no-op layers at a chunk's end;
    // block recompute of 2 counts positions, so chunk (0, 1) with one real layer recomputes it.
    f = mindspeed(2, 12);
    f.layers_per_virtual_stage = 3;
    f.noop_layers = "2,7,8,11";  // chunk (0,0) 0-2, (1,0) 3-5, (0,1) 6-8, (1,1) 9-11
    f.recompute_granularity = "full";
    f.recompute_method = "block";
    f.recompute_num_layers = 2;
    l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.chunks[0][0] == kinds(0, 0, 0, 0, 2));
    BOOST_TEST(l.chunks[1][0] == kinds(1, 0, 0, 0, 2));
    BOOST_TEST(l.chunks[0][1] == kinds(0, 0, 0, 0, 1));
    BOOST_TEST(l.chunks[1][1] == kinds(0, 0, 0, 0, 2));
    // MindSpeed's checks: digits only, each below --num-layers.
    f.noop_layers = "2, 7";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--noop-layers '2, 7': ' 7' is not a layer index (MindSpeed requires digits "
                     "only");
    f.noop_layers = "12";
    BOOST_TEST(
        error_message<FlagError>([&] { (void)megatron_layout(f, MegatronScan{}, messages); }) ==
        "--noop-layers '12': layer 12 is not below --num-layers 12 (MindSpeed "
        "requires every no-op layer to be from 0 to num_layers - 1)");
    // The printed set reads back the same.
    BOOST_TEST(
        parse_noop_layers("{11, 2, 7}", 12, "x.log:3") == (std::vector<std::uint32_t>{2, 7, 11}),
        boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(noop_layers_beside_the_other_layout_flags) {
    Messages messages;
    MegatronFlags f = mindspeed(2, 4);
    f.noop_layers = "3";
    f.layout = "Ett|ttL";
    BOOST_TEST(
        error_message<FlagError>([&] { (void)megatron_layout(f, MegatronScan{}, messages); }) ==
        "--noop-layers and --pipeline-model-parallel-layout must not be given "
        "together (MindSpeed refuses it: \"--pipeline-model-parallel-layout is "
        "incompatible with --noop-layers\")");
    // MindSpeed-LLM drops --num-layer-list beside --noop-layers; so does the import, warning.
    f.layout.reset();
    f.num_layer_list = "1,3";
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(totals(l) == (std::vector<std::uint32_t>{2, 1}), boost::test_tools::per_element());
    BOOST_TEST((messages.front().level == Message::Level::warning));
    BOOST_TEST(messages.front().text ==
               "--num-layer-list '1,3' is not used: MindSpeed-LLM drops it when --noop-layers is "
               "given (\"num layer list would be disabled when noop-layer is activated\"), and so "
               "does this import");
}

// MoE with no-op layers: the pattern is over every layer; the groups count the real ones.
BOOST_AUTO_TEST_CASE(noop_layers_of_a_moe_model) {
    MegatronFlags f = mindspeed(2, 8);
    f.num_experts = 8;
    f.first_k_dense_replace = 1;
    f.noop_layers = "7";
    Messages messages;
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.groups == (std::vector<std::string>{"dense", "moe"}),
               boost::test_tools::per_element());
    BOOST_TEST(l.group_layers[0][0][0] == kinds(1, 0, 0, 0, 0));  // stage 0: dense 1
    BOOST_TEST(l.group_layers[0][0][1] == kinds(3, 0, 0, 0, 0));  // moe 3
    BOOST_TEST(l.group_layers[1][0][1] == kinds(3, 0, 0, 0, 0));  // stage 1: moe 3 of 4
    BOOST_TEST(messages.back().text ==
               "MoE: 1 dense and 6 MoE layers (--first-k-dense-replace 1, --num-experts 8): the "
               "layers are counted per group, dense and moe");
}

// MindSpeed-LLM's dump after its validation: the no-op layers as a set, taken from the log.
BOOST_AUTO_TEST_CASE(mindspeed_flags_from_its_dump) {
    const std::string log = "using world size: 4, pipeline-model-parallel size: 4\n" +
                            current_dump({{"noop_layers", "{61, 62, 63}"},
                                          {"num_layer_list", "None"},
                                          {"num_layers", "64"},
                                          {"pipeline_model_parallel_size", "4"}},
                                         "MindSpeed-LLM Arguments");
    Messages messages;
    const PipelineLayout l = megatron_layout(MegatronFlags{}, scan_of("ms.log", log), messages);
    BOOST_TEST(totals(l) == (std::vector<std::uint32_t>{16, 16, 16, 13}),
               boost::test_tools::per_element());
    BOOST_TEST(texts(messages)[3] == "--noop-layers '{61, 62, 63}' from ms.log:3");
    MegatronFlags f;
    f.noop_layers = "61,62,63";  // the same set, as the flag writes it
    messages.clear();
    BOOST_TEST(totals(megatron_layout(f, scan_of("ms.log", log), messages)) ==
                   (std::vector<std::uint32_t>{16, 16, 16, 13}),
               boost::test_tools::per_element());
    f.noop_layers = "60,61,62";
    PPB_CHECK_THROWS(ppb::InputError, megatron_layout(f, scan_of("ms.log", log), messages),
                     "--noop-layers '60,61,62' (command line) contradicts noop_layers {61, 62, 63} "
                     "(ms.log:3)");
    f = {};
    f.num_layer_list = "16,16,16,16";
    PPB_CHECK_THROWS(ppb::InputError, megatron_layout(f, scan_of("ms.log", log), messages),
                     "--num-layer-list '16,16,16,16' (command line) contradicts num_layer_list "
                     "None (ms.log:4), unset in that run");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_argument_dump_tests
