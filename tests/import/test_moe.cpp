// MoE models: the layers of each stage split into groups "dense" and "moe" from Megatron's and
// MindFormers' MoE settings, recompute kinds by position, and the ppb.dryrun/3 document.
#include "scratch.hpp"

#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/mindspore.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using ppb_test::kinds;
using namespace ppb::importers;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace moe_tests {

namespace {

const std::string samples = PPB_IMPORT_SAMPLES_DIR;
const std::string mindformers_data = PPB_MINDFORMERS_DATA_DIR;

MegatronFlags moe_flags(std::uint32_t p, std::uint32_t layers) {
    MegatronFlags f;
    f.pipeline_size = p;
    f.num_layers = layers;
    f.world_size = 2 * p;
    f.micro_batches = 16;
    f.num_experts = 8;
    return f;
}

// The notes of an import, one text.
std::string notes(const Messages& messages) {
    std::string text;
    for (const Message& m : messages)
        text += m.text + "\n";
    return text;
}

// A MindFormers configuration of 8 layers on 2 stages, the model's section ending with `model`.
std::string two_stage_yaml(const std::string& model) {
    return "parallel_config:\n  pipeline_stage: 2\n  micro_batch_num: 4\n"
           "model:\n  model_config:\n    num_hidden_layers: 8\n" +
           model;
}

// 1 for an MoE layer, 0 for a dense one.
std::vector<bool> bits(std::initializer_list<int> values) {
    std::vector<bool> out;
    for (const int v : values)
        out.push_back(v == 1);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(moe_layouts)

BOOST_AUTO_TEST_CASE(megatron_list_pattern_splits_stages_by_global_index) {
    // DeepSeek-like: 2 dense layers, then 14 MoE; 4 stages of 4; block recompute of 1 layer.
    Messages messages;
    MegatronFlags f = moe_flags(4, 16);
    f.moe_layer_freq = "[0]*2+[1]*14";
    f.recompute_granularity = "full";
    f.recompute_method = "block";
    f.recompute_num_layers = 1;
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.groups == (std::vector<std::string>{"dense", "moe"}),
               boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(l.group_layers.size() == 4u);
    // Stage 0: layers 0, 1 dense (the first fully recomputed), 2, 3 MoE.
    BOOST_TEST(l.group_layers[0][0][0] == kinds(1, 0, 0, 0, 1));
    BOOST_TEST(l.group_layers[0][0][1] == kinds(2, 0, 0, 0, 0));
    for (std::size_t s = 1; s < 4; ++s) {
        BOOST_TEST(l.group_layers[s][0][0] == kinds(0, 0, 0, 0, 0));
        BOOST_TEST(l.group_layers[s][0][1] == kinds(3, 0, 0, 0, 1));
    }
    BOOST_TEST(l.stages[0] == kinds(3, 0, 0, 0, 1));  // the plain counts are unchanged
    BOOST_TEST(describe_stages(l).find("stage 0: 4 layers (full 1, none 3) [dense 2 (full 1, "
                                       "none 1), moe 2 (none 2)]") != std::string::npos,
               describe_stages(l));
    BOOST_TEST_REQUIRE(!messages.empty());
    BOOST_TEST(messages.back().text ==
               "MoE: 2 dense and 14 MoE layers (--moe-layer-freq '[0]*2+[1]*14', --num-experts "
               "8): the layers are counted per group, dense and moe");
}

BOOST_AUTO_TEST_CASE(megatron_interleaved_chunks_follow_virtual_pipeline_order) {
    // 8 layers, 2 stages x 2 chunks of 2: chunk 0 of stage 0 holds layers 0-1, chunk 0 of
    // stage 1 layers 2-3, chunk 1 of stage 0 layers 4-5, chunk 1 of stage 1 layers 6-7. The
    // first 3 layers are dense; block recompute makes each chunk's first layer 'full'.
    Messages messages;
    MegatronFlags f = moe_flags(2, 8);
    f.virtual_stages = 2;
    f.first_k_dense_replace = 3;
    f.recompute_granularity = "full";
    f.recompute_method = "block";
    f.recompute_num_layers = 1;
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.groups == (std::vector<std::string>{"dense", "moe"}),
               boost::test_tools::per_element());
    BOOST_TEST(l.group_layers[0][0][0] == kinds(1, 0, 0, 0, 1));  // layers 0, 1
    BOOST_TEST(l.group_layers[0][0][1] == kinds(0, 0, 0, 0, 0));
    BOOST_TEST(l.group_layers[1][0][0] == kinds(0, 0, 0, 0, 1));  // layer 2, fully recomputed
    BOOST_TEST(l.group_layers[1][0][1] == kinds(1, 0, 0, 0, 0));  // layer 3
    BOOST_TEST(l.group_layers[0][1][0] == kinds(0, 0, 0, 0, 0));  // layers 4, 5
    BOOST_TEST(l.group_layers[0][1][1] == kinds(1, 0, 0, 0, 1));
    BOOST_TEST(l.group_layers[1][1][1] == kinds(1, 0, 0, 0, 1));  // layers 6, 7
}

BOOST_AUTO_TEST_CASE(megatron_every_layer_moe_is_one_group) {
    Messages messages;
    MegatronFlags f = moe_flags(2, 8);
    f.moe_layer_freq = "\"'([1]*8)'\"";
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.groups.empty());
    BOOST_TEST(l.group_layers.empty());
    BOOST_TEST_REQUIRE(!messages.empty());
    BOOST_TEST(
        messages.back().text.find("every one of the 8 layers is an MoE layer") != std::string::npos,
        messages.back().text);
    // The default frequency 1 too.
    f.moe_layer_freq.reset();
    BOOST_TEST(megatron_layout(f, MegatronScan{}, messages).groups.empty());
}

BOOST_AUTO_TEST_CASE(moe_layer_freq_grammar) {
    BOOST_TEST(moe_layer_pattern("2", 5) == bits({1, 0, 1, 0, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(moe_layer_pattern("([1]*3+[0]*2)*2", 10) == bits({1, 1, 1, 0, 0, 1, 1, 1, 0, 0}),
               boost::test_tools::per_element());
    BOOST_TEST(moe_layer_pattern(" 3*[0] + [1, 1] ", 5) == bits({0, 0, 0, 1, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(moe_layer_pattern("'[0, 1, 0]'", 3) == bits({0, 1, 0}),
               boost::test_tools::per_element());
    BOOST_TEST(moe_layer_pattern("[0]*3+[1]*58", 61).size() == 61u);
}

BOOST_AUTO_TEST_CASE(moe_layer_freq_refusals) {
    PPB_CHECK_THROWS(FlagError, moe_layer_pattern("[0]*2+[1]*13", 16),
                     "--moe-layer-freq '[0]*2+[1]*13' gives 15 layers, but --num-layers is 16");
    PPB_CHECK_THROWS(FlagError, moe_layer_pattern("[2]*16", 16),
                     "--moe-layer-freq '[2]*16': 2 is neither 0 (dense) nor 1 (MoE) at character");
    PPB_CHECK_THROWS(FlagError, moe_layer_pattern("range(16)", 16),
                     "--moe-layer-freq 'range(16)': expected '[' or '(' at character 1");
    PPB_CHECK_THROWS(FlagError, moe_layer_pattern("([0]*2", 2), "expected ')' at character 7");
    PPB_CHECK_THROWS(FlagError, moe_layer_pattern("[1]*99999999", 16),
                     "the list is longer than 10000 layers");
    PPB_CHECK_THROWS(FlagError, moe_layer_pattern("0", 16),
                     "--moe-layer-freq 0: expected an integer N of at least 1");
}

BOOST_AUTO_TEST_CASE(megatron_contradictory_moe_flags) {
    Messages messages;
    MegatronFlags no_experts = moe_flags(4, 16);
    no_experts.num_experts.reset();
    no_experts.moe_layer_freq = "[0]*2+[1]*14";
    PPB_CHECK_THROWS(FlagError, megatron_layout(no_experts, MegatronScan{}, messages),
                     "--moe-layer-freq describes MoE layers, but --num-experts is not given");
    no_experts.moe_layer_freq.reset();
    no_experts.first_k_dense_replace = 3;
    PPB_CHECK_THROWS(FlagError, megatron_layout(no_experts, MegatronScan{}, messages),
                     "--first-k-dense-replace describes MoE layers, but --num-experts is not "
                     "given");

    MegatronFlags all_dense = moe_flags(4, 16);
    all_dense.first_k_dense_replace = 16;
    PPB_CHECK_THROWS(FlagError, megatron_layout(all_dense, MegatronScan{}, messages),
                     "--first-k-dense-replace 16 leaves no MoE layer of the --num-layers 16, but "
                     "--num-experts 8 is given");
    all_dense.first_k_dense_replace.reset();
    all_dense.moe_layer_freq = "[0]*16";
    PPB_CHECK_THROWS(FlagError, megatron_layout(all_dense, MegatronScan{}, messages),
                     "--moe-layer-freq '[0]*16' makes no layer an MoE layer, but --num-experts 8 "
                     "is given");

    MegatronFlags both = moe_flags(4, 16);
    both.first_k_dense_replace = 2;
    both.moe_layer_freq = "2";
    PPB_CHECK_THROWS(FlagError, megatron_layout(both, MegatronScan{}, messages),
                     "--first-k-dense-replace 2 and --moe-layer-freq '2' both say which layers "
                     "are MoE layers");
    both.moe_layer_freq = "1";  // Megatron's default: no contradiction
    BOOST_TEST(megatron_layout(both, MegatronScan{}, messages).groups.size() == 2u);
}

BOOST_AUTO_TEST_CASE(mindformers_moe_config_with_first_k_dense_replace) {
    // deepseek_like_pp4_moe.yaml: 16 layers, offsets [-1, 0, 0, 1] (3, 4, 4, 5 layers), the
    // first 4 dense; recompute [2, 1, 0, 0], select_recompute [0, 2, 0, 0].
    Messages messages;
    const PipelineLayout l = mindspore_layout(
        std::filesystem::path(samples) / "mindspore" / "deepseek_like_pp4_moe.yaml", {}, messages);
    BOOST_TEST(l.groups == (std::vector<std::string>{"dense", "moe"}),
               boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(l.group_layers.size() == 4u);
    // Stage 0: layers 0-2, dense; the first two fully recomputed.
    BOOST_TEST(l.group_layers[0][0][0] == kinds(1, 0, 0, 0, 2));
    BOOST_TEST(l.group_layers[0][0][1] == kinds(0, 0, 0, 0, 0));
    // Stage 1: layer 3 (dense, position 0: full), layer 4 (MoE, position 1: select), 5-6 none.
    BOOST_TEST(l.group_layers[1][0][0] == kinds(0, 0, 0, 0, 1));
    BOOST_TEST(l.group_layers[1][0][1] == kinds(2, 1, 0, 0, 0));
    BOOST_TEST(l.group_layers[2][0][1] == kinds(4, 0, 0, 0, 0));
    BOOST_TEST(l.group_layers[3][0][1] == kinds(5, 0, 0, 0, 0));
    BOOST_TEST(l.group_layers[3][0][0] == kinds(0, 0, 0, 0, 0));
}

BOOST_AUTO_TEST_CASE(mindformers_contradictory_moe_keys) {
    Messages messages;
    MindSporeFlags f;
    f.pipeline_stage = "2";
    f.num_layers = "8";
    f.first_k_dense_replace = "2";
    PPB_CHECK_THROWS(FlagError, mindspore_layout(std::nullopt, f, messages),
                     "--first-k-dense-replace: 2 dense layers before the MoE layers, but "
                     "expert_num is not given");
    f.expert_num = "4";
    f.first_k_dense_replace = "8";
    PPB_CHECK_THROWS(FlagError, mindspore_layout(std::nullopt, f, messages),
                     "--first-k-dense-replace: 8 dense layers leave no MoE layer of the model's 8, "
                     "but expert_num is 4 (--expert-num)");
    f.first_k_dense_replace = "true";
    PPB_CHECK_THROWS(FlagError, mindspore_layout(std::nullopt, f, messages),
                     "--first-k-dense-replace: expected the number of dense layers before the "
                     "MoE layers");
    f.first_k_dense_replace = "1";
    f.num_experts_chosen = "6";
    PPB_CHECK_THROWS(FlagError, mindspore_layout(std::nullopt, f, messages),
                     "--num-experts-chosen: 6 experts chosen per token, but expert_num is 4");
    f.num_experts_chosen = "2";
    const PipelineLayout l = mindspore_layout(std::nullopt, f, messages);
    BOOST_TEST(l.group_layers[0][0][0] == kinds(1, 0, 0, 0, 0));
    BOOST_TEST(l.group_layers[0][0][1] == kinds(3, 0, 0, 0, 0));
    // expert_num 1 is a dense model: one group.
    f.expert_num = "1";
    f.num_experts_chosen.reset();
    f.first_k_dense_replace.reset();
    BOOST_TEST(mindspore_layout(std::nullopt, f, messages).groups.empty());
}

// MindFormers' current configurations (tests/data/mindformers/README.md): the layers under their
// HuggingFace names, the experts under any of MindFormers' names of the count (COMMON_CONFIG_
// MAPPING in mindformers/parallel_core/transformer_config_utils.py at commit
// f52743ca27a5a8af5fbc77c5b2037c1147c7004c).
BOOST_AUTO_TEST_CASE(mindformers_current_configurations_place_their_layers) {
    // Qwen3-32B: num_hidden_layers 64 on 4 stages, offsets [-1, -1, 1, 1], recompute true.
    Messages messages;
    const PipelineLayout dense =
        mindspore_layout(mindformers_data + "/qwen3_32b_mcore.yaml", {}, messages);
    BOOST_TEST(dense.groups.empty());
    BOOST_TEST_REQUIRE(dense.stages.size() == 4u);
    BOOST_TEST(dense.stages[0] == kinds(0, 0, 0, 0, 15));
    BOOST_TEST(dense.stages[1] == kinds(0, 0, 0, 0, 15));
    BOOST_TEST(dense.stages[2] == kinds(0, 0, 0, 0, 17));
    BOOST_TEST(dense.stages[3] == kinds(0, 0, 0, 0, 17));
    // GLM-4-9B: 40 layers, offsets [-1, 0, 2, -1], recompute [6, 3, 2, 3].
    const PipelineLayout glm = mindspore_layout(mindformers_data + "/glm4_9b.yaml", {}, messages);
    BOOST_TEST(glm.stages[0] == kinds(3, 0, 0, 0, 6));
    BOOST_TEST(glm.stages[1] == kinds(7, 0, 0, 0, 3));
    BOOST_TEST(glm.stages[2] == kinds(10, 0, 0, 0, 2));
    BOOST_TEST(glm.stages[3] == kinds(6, 0, 0, 0, 3));
    BOOST_TEST(glm.ranks_per_stage == 2u);

    // Qwen3-30B-A3B: num_experts 128 makes all 48 layers MoE layers (Qwen3-MoE builds its decoder
    // from one MoE layer spec: modeling_qwen3_moe_train.py), 12 per stage: one group.
    Messages moe_messages;
    const std::string moe_file = mindformers_data + "/qwen3_30b_a3b_mcore.yaml";
    const PipelineLayout moe = mindspore_layout(moe_file, {}, moe_messages);
    BOOST_TEST(moe.groups.empty());
    for (const auto& stage : moe.stages)
        BOOST_TEST(stage == kinds(0, 0, 0, 0, 12));
    BOOST_TEST(notes(moe_messages)
                       .find("MoE: all 48 layers are MoE layers (" + moe_file +
                             ":37: model.model_config.num_experts: 128 experts per MoE "
                             "layer): one group of body layers") != std::string::npos,
               notes(moe_messages));
}

BOOST_AUTO_TEST_CASE(mindformers_moe_layer_freq_places_the_moe_layers) {
    ppb_test::Scratch dir;
    Messages messages;
    // moe_layer_freq 2: layers 0, 2, 4, 6 are MoE layers (i % 2 == 0), stage 0 holds 0-3.
    const PipelineLayout every_other = mindspore_layout(
        dir.write("freq.yaml", two_stage_yaml("    num_experts: 4\n    moe_layer_freq: 2\n")), {},
        messages);
    BOOST_TEST(every_other.groups == (std::vector<std::string>{"moe", "dense"}),
               boost::test_tools::per_element());
    BOOST_TEST(every_other.group_layers[0][0][0] == kinds(2, 0, 0, 0, 0));
    BOOST_TEST(every_other.group_layers[0][0][1] == kinds(2, 0, 0, 0, 0));
    BOOST_TEST(notes(messages).find("MoE: 4 MoE and 4 dense layers (moe_layer_freq 2") !=
                   std::string::npos,
               notes(messages));
    // A list: one 0 / 1 per layer; stage 1 (layers 4-7) holds 1 dense and 3 MoE layers.
    const PipelineLayout listed =
        mindspore_layout(dir.write("list.yaml", two_stage_yaml("    n_routed_experts: 4\n"
                                                               "    moe_layer_freq: [0, 0, 1, 1, "
                                                               "0, 1, 1, 1]\n")),
                         {}, messages);
    BOOST_TEST(listed.groups == (std::vector<std::string>{"dense", "moe"}),
               boost::test_tools::per_element());
    BOOST_TEST(listed.group_layers[1][0][0] == kinds(1, 0, 0, 0, 0));
    BOOST_TEST(listed.group_layers[1][0][1] == kinds(3, 0, 0, 0, 0));
    // DeepSeek-V3's model type gives first_k_dense_replace 3 by default (DeepseekV3Config).
    const PipelineLayout deepseek = mindspore_layout(
        dir.write("deepseek.yaml", two_stage_yaml("    model_type: deepseek_v3\n")), {}, messages);
    BOOST_TEST(deepseek.group_layers[0][0][0] == kinds(3, 0, 0, 0, 0));
    BOOST_TEST(deepseek.group_layers[0][0][1] == kinds(1, 0, 0, 0, 0));
    // first_k_dense_replace with moe_layer_freq as its own pattern: accepted.
    const PipelineLayout pattern = mindspore_layout(
        dir.write("pattern.yaml", two_stage_yaml("    num_experts: 4\n"
                                                 "    first_k_dense_replace: 2\n"
                                                 "    moe_layer_freq: [0, 0, 1, 1, 1, 1, 1, 1]\n")),
        {}, messages);
    BOOST_TEST(pattern.group_layers[0][0][0] == kinds(2, 0, 0, 0, 0));

    // Qwen3-MoE builds every layer as an MoE layer: first_k_dense_replace is noted, not used.
    Messages qwen_messages;
    const std::string qwen = dir.write("qwen.yaml", two_stage_yaml("    model_type: qwen3_moe\n"
                                                                   "    first_k_dense_replace: "
                                                                   "2\n"))
                                 .string();
    BOOST_TEST(mindspore_layout(qwen, {}, qwen_messages).groups.empty());
    BOOST_TEST(notes(qwen_messages)
                       .find(qwen + ":8: model.model_config.first_k_dense_replace is not "
                                    "used: MindFormers' model 'qwen3_moe' builds every layer "
                                    "as an MoE layer") != std::string::npos,
               notes(qwen_messages));
    BOOST_TEST(notes(qwen_messages)
                       .find("Qwen3MoeConfig builds 128 experts per MoE layer by "
                             "default") != std::string::npos,
               notes(qwen_messages));
}

BOOST_AUTO_TEST_CASE(mindformers_contradictory_current_keys) {
    ppb_test::Scratch dir;
    Messages messages;
    const auto refused = [&](const std::string& name, const std::string& model) {
        const std::string file = dir.write(name, two_stage_yaml(model)).string();
        return std::make_pair(file, ppb_test::error_message<ppb::InputError>(
                                        [&] { (void)mindspore_layout(file, {}, messages); }));
    };
    // MindFormers refuses first_k_dense_replace with moe_layer_freq above 1
    // (TransformerConfig.__post_init__: "Configuration conflict").
    const auto [conflict, conflict_error] =
        refused("conflict.yaml",
                "    num_experts: 4\n    first_k_dense_replace: 1\n    moe_layer_freq: 2\n");
    BOOST_TEST(conflict_error == conflict +
                                     ":9: model.model_config.moe_layer_freq: 2 with "
                                     "first_k_dense_replace 1 (" +
                                     conflict +
                                     ":8: model.model_config.first_k_dense_replace): MindFormers "
                                     "refuses the two together unless moe_layer_freq is "
                                     "first_k_dense_replace's own pattern (a list of 1 zeros then "
                                     "ones)");
    const auto [length, length_error] =
        refused("length.yaml", "    num_experts: 4\n    moe_layer_freq: [1, 0]\n");
    BOOST_TEST(length_error == length +
                                   ":8: model.model_config.moe_layer_freq: has 2 entries, but "
                                   "num_layers is 8: give one 0 or 1 per layer (MindFormers "
                                   "refuses another length)");
    const auto [dense, dense_error] = refused("dense.yaml", "    moe_layer_freq: 2\n");
    BOOST_TEST(dense_error == dense +
                                  ":7: model.model_config.moe_layer_freq: 2 says which layers are "
                                  "MoE layers, but expert_num is not given: MindFormers builds MoE "
                                  "layers only with experts");
    // Two names of the layer count, and of the expert count (moe_config's keys are the model's).
    const auto [layers, layers_error] = refused("layers.yaml", "    num_layers: 16\n");
    BOOST_TEST(layers_error == layers + ":7: model.model_config.num_layers is 16, but " + layers +
                                   ":6: model.model_config.num_hidden_layers is 8: MindFormers "
                                   "reads both as the number of layers; give one of them, or make "
                                   "them agree");
    const std::string experts = dir.write("experts.yaml", two_stage_yaml("    num_experts: 4\n") +
                                                              "moe_config:\n  expert_num: 8\n")
                                    .string();
    PPB_CHECK_THROWS(ppb::InputError, mindspore_layout(experts, {}, messages),
                     experts + ":9: moe_config.expert_num is 8, but " + experts +
                         ":7: model.model_config.num_experts is 4: MindFormers reads both as the "
                         "experts per MoE layer");
    // A flag wins over the file's names.
    MindSporeFlags flags;
    flags.expert_num = "1";
    BOOST_TEST(mindspore_layout(experts, flags, messages).groups.empty());
}

BOOST_AUTO_TEST_CASE(grouped_run_is_written_as_revision_3) {
    Messages messages;
    MegatronFlags f = moe_flags(2, 6);
    f.moe_layer_freq = "[0]*2+[1]*4";
    f.virtual_stages = 3;  // chunks of 1 layer: stage 0 holds 0, 2, 4; stage 1 holds 1, 3, 5
    const PipelineLayout layout = megatron_layout(f, MegatronScan{}, messages);
    const std::vector<MemoryReading> readings = {{0, 5000.0, "a.log", 1}, {2, 6000.0, "a.log", 2}};
    ImportedDryRun run;
    run.num_stages = 2;
    run.micro_batches = 16;
    run.schedule = layout.schedule;
    run.num_chunks = layout.num_chunks;
    run.groups = layout.groups;
    run.observations = stage_observations(layout, readings, messages);
    const json::object doc = json::parse(new_dryrun_text(run)).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/3");
    BOOST_TEST(json::serialize(doc.at("groups")) == R"(["dense","moe"])");
    const auto& observations = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(observations.size() == 2u);
    BOOST_TEST(json::serialize(observations[0].at("chunks")) ==
               R"([{"layers":{"dense":{"none":1}}},{"layers":{"moe":{"none":1}}},)"
               R"({"layers":{"moe":{"none":1}}}])");
    BOOST_TEST(json::serialize(observations[1].at("chunks")) ==
               R"([{"layers":{"dense":{"none":1}}},{"layers":{"moe":{"none":1}}},)"
               R"({"layers":{"moe":{"none":1}}}])");

    // Appending a grouped run is refused (no /3 reader in this version).
    PPB_CHECK_THROWS(ppb::InputError,
                     appended_dryrun_text(new_dryrun_text(run), "old.json", run, {}, messages),
                     "old.json: cannot append: the imported dry run counts its layers per group "
                     "of body layers (dense, moe)");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace moe_tests
