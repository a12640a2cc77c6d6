// Plans Megatron-LM, MindSpeed-LLM and torchtitan can run, end to end: `ppb partition
// --recompute-rule megatron|torchtitan` prints their flags and `--json` carries them (read back
// here with Megatron's own grammar, tests/common/megatron_grammar.hpp), `ppb search` takes the
// rules, and `ppb import megatron` reads the layout flag back and refuses what Megatron refuses
// (what the README's walk-throughs print is tests/docs/walkthroughs.py's to check).
#include "../common/megatron_grammar.hpp"
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_frameworks_tests {

namespace {

const std::string layers_70b = std::string(PPB_SAMPLES_DIR) + "/llama70b-layers.json";
const std::string megatron_logs = std::string(PPB_SAMPLES_DIR) + "/import/megatron";

// The sample model's plan on `stages` stages under `rule`, the README's commands.
std::vector<std::string> partition_args(const std::string& rule, std::vector<std::string> more = {},
                                        const std::string& stages = "8",
                                        const std::string& limit = "30000") {
    std::vector<std::string> args = {
        "partition",   "--model-desc",      layers_70b, "--dryrun",
        sample_dryrun, "--stages",          stages,     "--micro-batches",
        "32",          "--memory-limit-mb", limit,      "--recompute-rule",
        rule};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

std::vector<std::string> strings(const json::value& v) {
    std::vector<std::string> out;
    for (const auto& s : v.as_array())
        out.emplace_back(s.as_string());
    return out;
}

std::string value_of(const std::vector<std::string>& args, const std::string& flag) {
    const auto it = std::find(args.begin(), args.end(), flag);
    return it == args.end() || it + 1 == args.end() ? std::string() : *(it + 1);
}

std::uint32_t layers_of(const json::value& counts) {
    std::uint32_t n = 0;
    for (const auto& [kind, value] : counts.as_object())
        n += static_cast<std::uint32_t>(value.to_number<std::int64_t>());
    return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_frameworks)

// The JSON's flags, read with Megatron's grammar, rebuild the plan: the layout's decoder layers per
// virtual stage (chunk c of stage s is c * P + s), the recompute flags every chunk's kinds; the
// torchtitan parts and the MindSpeed-LLM layer list the same counts.
BOOST_AUTO_TEST_CASE(the_json_carries_flags_that_rebuild_the_plan) {
    for (const std::string schedule : {"1f1b", "interleaved"}) {
        const auto r = ppb(partition_args("megatron", {"--schedule", schedule, "--json"}));
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
        const json::object doc = parse_json(r.out).as_object();
        BOOST_TEST(doc.at("recompute_rule").as_string() == "megatron");
        const std::uint32_t p = 8;
        const auto v = static_cast<std::uint32_t>(doc.at("num_chunks").to_number<int>());
        const auto args = strings(doc.at("megatron").at("args"));
        BOOST_TEST(value_of(args, "--pipeline-model-parallel-size") == "8");
        BOOST_TEST(value_of(args, "--num-layers") == "80");
        const auto stages =
            megatron_virtual_stages(value_of(args, "--pipeline-model-parallel-layout"));
        BOOST_TEST_REQUIRE(stages.size() == std::size_t{p} * v);
        const std::string granularity = value_of(args, "--recompute-granularity");
        const std::string method = value_of(args, "--recompute-method");
        const std::string n = value_of(args, "--recompute-num-layers");
        std::vector<std::uint32_t> per_stage;
        for (const auto& stage : doc.at("stages").as_array()) {
            const auto s = static_cast<std::uint32_t>(stage.at("stage").to_number<int>());
            per_stage.push_back(layers_of(stage.at("layers")));
            for (const auto& chunk : stage.at("chunks").as_array()) {
                const auto c = static_cast<std::uint32_t>(chunk.at("chunk").to_number<int>());
                const auto& virtual_stage = stages[c * p + s];
                const auto decoders = static_cast<std::uint32_t>(
                    std::count(virtual_stage.begin(), virtual_stage.end(), 't'));
                const auto& layers = chunk.at("layers").as_object();
                BOOST_TEST(layers_of(chunk.at("layers")) == decoders);
                // Megatron's TransformerBlock per chunk: block N fully recomputes the first N.
                const auto full = layers.at("full").to_number<std::uint32_t>();
                const auto select = layers.at("select").to_number<std::uint32_t>();
                if (granularity.empty()) {
                    BOOST_TEST(layers.at("none").to_number<std::uint32_t>() == decoders);
                } else if (granularity == "selective") {
                    BOOST_TEST(select == decoders);
                } else if (method == "uniform") {
                    BOOST_TEST(full == decoders);
                } else {
                    BOOST_TEST(full == std::min<std::uint32_t>(decoders, std::stoul(n)));
                }
            }
        }
        // torchtitan: every module once, part q holding virtual stage q's layers.
        const auto& titan = doc.at("torchtitan").as_object();
        BOOST_TEST(titan.at("pipeline_parallel_schedule").as_string() ==
                   (v == 1 ? "1F1B" : "Interleaved1F1B"));
        const auto& parts = titan.at("module_fqns_per_model_part").as_array();
        BOOST_TEST_REQUIRE(parts.size() == stages.size());
        std::uint32_t next = 0;
        for (std::size_t q = 0; q < parts.size(); ++q) {
            for (const auto& name : strings(parts[q])) {
                if (name.starts_with("layers."))
                    BOOST_TEST(name == fmt::format("layers.{}", next++));
            }
            BOOST_TEST(next == std::accumulate(stages.begin(), stages.begin() + q + 1, 0u,
                                               [](std::uint32_t sum, const std::string& st) {
                                                   return sum +
                                                          static_cast<std::uint32_t>(std::count(
                                                              st.begin(), st.end(), 't'));
                                               }));
        }
        BOOST_TEST(next == 80u);
        // MindSpeed-LLM's layer list with one chunk.
        const auto& mindspeed = doc.at("mindspeed_llm").as_object();
        if (v == 1 && !mindspeed.at("args").is_null()) {
            std::string list;
            for (const auto count : per_stage)
                list += fmt::format("{}{}", list.empty() ? "" : ",", count);
            BOOST_TEST(value_of(strings(mindspeed.at("args")), "--num-layer-list") == list);
        }
        // The table prints the same flags as a line to paste.
        const auto table = ppb(partition_args("megatron", {"--schedule", schedule}));
        BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
        std::string line;
        for (const auto& a : args) {
            const bool quote = a.find_first_of("|*()") != std::string::npos;
            line += (line.empty() ? "" : " ") + (quote ? "\"" + a + "\"" : a);
        }
        BOOST_TEST(table.out.find("Megatron-LM flags:\n  " + line + "\n") != std::string::npos,
                   table.out);
    }
}

// Under the torchtitan rule the plan has an activation-checkpoint setting torchtitan applies;
// under `any` the JSON says why the frameworks cannot run the plan, and the table prints no
// framework section.
BOOST_AUTO_TEST_CASE(torchtitan_settings_hold_under_its_rule) {
    const auto r = ppb(partition_args("torchtitan", {"--json"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = parse_json(r.out).as_object();
    const auto& ac = doc.at("torchtitan").at("activation_checkpoint");
    BOOST_TEST_REQUIRE(ac.is_object());
    const std::string mode(ac.at("mode").as_string());
    BOOST_TEST((mode == "none" || mode == "full" || mode == "selective"));
    const auto any = ppb(partition_args("any", {"--json"}));
    BOOST_TEST_REQUIRE(any.exit_code == 0, any.err);
    const json::object mixed = parse_json(any.out).as_object();
    if (mixed.at("megatron").at("args").is_null()) {
        BOOST_TEST(std::string(mixed.at("megatron").at("why_not").as_string())
                       .find("applies one recompute setting to every chunk") != std::string::npos);
    }
    const auto table = ppb(partition_args("any"));
    BOOST_TEST(table.out.find("Megatron-LM flags") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_search_takes_the_rules) {
    // Degrees 4 and 8 only: the rule reaches the search and its plans the same way at any degree
    // (32 stages alone take 7 s of a release build, minutes under the sanitizers).
    const auto r =
        ppb({"search", "--model-desc", layers_70b, "--dryrun", sample_dryrun, "--devices", "64",
             "--global-batch", "256", "--memory-limit-mb", "40000", "--pipeline-degrees", "4,8",
             "--recompute-rule", "megatron", "--top", "2", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(parse_json(r.out).at("search").at("recompute_rule").as_string() == "megatron");
    BOOST_TEST(r.out.find("--pipeline-model-parallel-layout") != std::string::npos);
    expect_input_error(ppb({"search", "--model-desc", layers_70b, "--dryrun", sample_dryrun,
                            "--devices", "64", "--global-batch", "256", "--memory-limit-mb",
                            "40000", "--recompute-rule", "deepspeed"}),
                       {"--recompute-rule"});
}

// A model shape with multi-token prediction layers (mtp_num_layers, as `ppb import
// megatron-options` writes --mtp-num-layers): the layout `ppb partition` and `ppb search` print
// holds them ('m') in the last stage's last chunk, after every decoder layer, as Megatron-LM
// requires of a layout beside --mtp-num-layers (validate_layer_layout,
// megatron/core/transformer/pipeline_parallel_layer_layout.py at d98e8a64dd); without them
// Megatron-LM refuses the layout.
BOOST_AUTO_TEST_CASE(a_shapes_multi_token_prediction_layers_are_in_the_layout) {
    std::ifstream sample(std::string(PPB_SAMPLES_DIR) + "/moe/deepseek-v3-shape.json");
    const std::string text((std::istreambuf_iterator<char>(sample)),
                           std::istreambuf_iterator<char>());
    json::object shape = parse_json(text).as_object();
    shape["mtp_num_layers"] = 1;
    const std::string with_mtp = write_file(json::serialize(shape), "dsv3-mtp.json");
    const auto checked = [](const std::string& layout, std::size_t virtual_stages) {
        const auto stages = megatron_virtual_stages(layout);
        BOOST_TEST_REQUIRE(stages.size() == virtual_stages, layout);
        std::string flat;
        for (const std::string& s : stages)
            flat += s;
        BOOST_TEST(std::count(flat.begin(), flat.end(), 'm') == 1, layout);
        BOOST_TEST(stages.back().ends_with("mL"), layout);
        BOOST_TEST(flat.find('t', flat.find('m')) == std::string::npos, layout);
        BOOST_TEST(std::count(flat.begin(), flat.end(), 't') == 61, layout);
    };
    const auto partitioned = ppb({"partition",   "--model",           "analytic", "--model-options",
                                  with_mtp,      "--stages",          "4",        "--schedule",
                                  "interleaved", "--chunks",          "2",        "--micro-batches",
                                  "8",           "--memory-limit-mb", "900000",   "--device-tflops",
                                  "400",         "--recompute-rule",  "megatron", "--json"});
    BOOST_TEST_REQUIRE(partitioned.exit_code == 0, partitioned.err);
    const json::value megatron = parse_json(partitioned.out).at("megatron");
    checked(std::string(megatron.at("layout").as_string()), 8);
    const auto searched = ppb({"search",   "--model",
                               "analytic", "--model-options",
                               with_mtp,   "--devices",
                               "16",       "--global-batch",
                               "16",       "--pipeline-degrees",
                               "4",        "--expert-parallel",
                               "4",        "--schedules",
                               "1f1b",     "--memory-limit-mb",
                               "900000",   "--device-tflops",
                               "400",      "--recompute",
                               "none",     "--top",
                               "1",        "--json"});
    BOOST_TEST_REQUIRE(searched.exit_code == 0, searched.err);
    const std::string layout(parse_json(searched.out)
                                 .at("ranking")
                                 .at(0)
                                 .at("plan")
                                 .at("megatron")
                                 .at("layout")
                                 .as_string());
    checked(layout, 4);
    // Without the MTP layers in the shape, none in the layout.
    shape.erase("mtp_num_layers");
    const auto plain = ppb({"partition",
                            "--model",
                            "analytic",
                            "--model-options",
                            write_file(json::serialize(shape), "dsv3.json"),
                            "--stages",
                            "4",
                            "--schedule",
                            "interleaved",
                            "--chunks",
                            "2",
                            "--micro-batches",
                            "8",
                            "--memory-limit-mb",
                            "900000",
                            "--device-tflops",
                            "400",
                            "--recompute-rule",
                            "megatron",
                            "--json"});
    BOOST_TEST_REQUIRE(plain.exit_code == 0, plain.err);
    BOOST_TEST(
        std::string(parse_json(plain.out).at("megatron").at("layout").as_string()).find('m') ==
        std::string::npos);
}

// The layout flag read back by `ppb import megatron`: the sample run of samples/data/import (its
// first and last stages given as --decoder-first/last-pipeline-num-layers 6) said as a layout.
// Its memory lines only: the sample's argument dump states the run's own flags, which the layout
// flag would contradict.
BOOST_AUTO_TEST_CASE(import_reads_the_layout_and_refuses_what_megatron_refuses) {
    std::ifstream sample(megatron_logs + "/full-block.log");
    std::string memory_lines;
    for (std::string line; std::getline(sample, line);) {
        if (line.find("memory (MB)") != std::string::npos)
            memory_lines += line + "\n";
    }
    const std::vector<std::string> common = {"import",
                                             "megatron",
                                             "--pipeline-model-parallel-size",
                                             "4",
                                             "--num-layers",
                                             "32",
                                             "--num-microbatches",
                                             "32",
                                             "--world-size",
                                             "8",
                                             "--recompute-granularity",
                                             "full",
                                             "--recompute-method",
                                             "block",
                                             "--recompute-num-layers",
                                             "2",
                                             write_file(memory_lines, "full-block.log")};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = common;
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto layout = with({"--pipeline-model-parallel-layout", "Et*6|(t*10|)*2,t*6L"});
    BOOST_TEST_REQUIRE(layout.exit_code == 0, layout.err);
    BOOST_TEST(
        layout.err.find("stage 0: 6 layers (full 2, none 4); stage 1: 10 layers (full 2, none 8)"
                        "") != std::string::npos,
        layout.err);
    const auto legacy = with(
        {"--decoder-first-pipeline-num-layers", "6", "--decoder-last-pipeline-num-layers", "6"});
    BOOST_TEST_REQUIRE(legacy.exit_code == 0, legacy.err);
    // The same observations either way (the comment names the flags, so compare the rest).
    const auto observations = [](const std::string& text) {
        return json::serialize(parse_json(text).at("observations"));
    };
    BOOST_TEST(observations(layout.out) == observations(legacy.out));
    expect_input_error(with({"--pipeline-model-parallel-layout", "Et*6|(t*10|)*2,t*6L",
                             "--decoder-first-pipeline-num-layers", "6"}),
                       {"--pipeline-model-parallel-layout and --decoder-first-pipeline-num-layers",
                        "must not be given together"});
    expect_input_error(with({"--pipeline-model-parallel-layout", "Et*6|(t*10|)*2,t*6L",
                             "--account-for-embedding-in-pipeline-split"}),
                       {"--pipeline-model-parallel-layout and "
                        "--account-for-embedding-in-pipeline-split"});
    expect_input_error(with({"--pipeline-model-parallel-layout", "Et*6|(t*10|)*2,t*6mL"}),
                       {"1 MTP layer ('m')", "--mtp-num-layers is not given"});
    expect_input_error(with({"--pipeline-model-parallel-layout", "Et*6|(t*10|)*2,t*6Lx"}),
                       {"invalid layer character 'x'"});
    // The embedding and the loss counted in the split: 34 / 4 is not whole.
    expect_input_error(
        with({"--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"}),
        {"= 34 does not divide into 4 stages"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_frameworks_tests
