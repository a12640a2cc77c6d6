// Megatron-LM's layout flags imported (ppb/importers/megatron_layout.hpp): the documented
// examples of --pipeline-model-parallel-layout (NVIDIA/Megatron-LM,
// megatron/core/transformer/pipeline_parallel_layer_layout.py at commit
// 00caa53af30912914981c86f39db123961678bbd and its layout guide), the --account-for flags, the
// conflicts Megatron refuses, and round trip 2: random plans taken to ppb's printed flags
// (ppb/partition/framework_args.hpp), Megatron-LM's and MindSpeed-LLM's, and imported back give the
// same counts and kinds.
#include "../partition/random_plans.hpp"
#include "scratch.hpp"

#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_layout.hpp>
#include <ppb/partition/framework_args.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace ppb::importers;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_layout_tests {

namespace {

MegatronFlags flags(std::uint32_t p, std::uint32_t layers) {
    MegatronFlags f;
    f.pipeline_size = p;
    f.num_layers = layers;
    f.world_size = p;
    f.micro_batches = 4 * p;
    return f;
}

// Decoder layers per [stage][chunk] of an imported layout.
std::vector<std::vector<std::uint32_t>> counts(const PipelineLayout& l) {
    std::vector<std::vector<std::uint32_t>> out;
    for (std::uint32_t s = 0; s < l.num_stages; ++s) {
        if (l.num_chunks == 1) {
            out.push_back({total_layers(l.stages[s])});
            continue;
        }
        std::vector<std::uint32_t> row;
        for (const auto& chunk : l.chunks[s])
            row.push_back(total_layers(chunk));
        out.push_back(row);
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(megatron_layout_flags)

// Megatron's guide: DeepSeek-V3 (61 decoder layers + 1 MTP layer) with PP16 VPP2 as
// "Et*3|(tt|)*29,m|L": rank 0 the embedding and 3 decoder layers then 2, ranks 1-13 2 and 2,
// rank 14 2 and the MTP layer, rank 15 2 and the loss.
BOOST_AUTO_TEST_CASE(the_documented_deepseek_layout) {
    MegatronFlags f = flags(16, 61);
    f.layout = "Et*3|(tt|)*29,m|L";
    f.mtp_layers = 1;
    f.recompute_granularity = "full";
    f.recompute_method = "block";
    f.recompute_num_layers = 1;
    Messages messages;
    const PipelineLayout l = megatron_layout(f, MegatronScan{}, messages);
    BOOST_TEST(l.num_stages == 16u);
    BOOST_TEST(l.num_chunks == 2u);
    BOOST_TEST((l.schedule == ppb::Schedule::interleaved));
    std::vector<std::vector<std::uint32_t>> expected(16, {2, 2});
    expected[0] = {3, 2};
    expected[14] = {2, 0};
    expected[15] = {2, 0};
    BOOST_TEST((counts(l) == expected));
    // Block recompute of 1 layer per chunk: the first layer of every non-empty chunk.
    BOOST_TEST((l.chunks[0][0] == KindCounts{2, 0, 0, 0, 1}));
    BOOST_TEST((l.chunks[14][1] == KindCounts{}));
    const bool noted = std::any_of(messages.begin(), messages.end(), [](const Message& m) {
        return m.text.find("MTP layer ('m', stage 14 chunk 1)") != std::string::npos;
    });
    BOOST_TEST(noted);
    // Without --mtp-num-layers the 'm' is refused by name.
    f.mtp_layers.reset();
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages), "1 MTP layer ('m')",
                     "--mtp-num-layers is not given");
}

BOOST_AUTO_TEST_CASE(the_grammar_as_megatron_expands_it) {
    // Megatron's docstring examples of the expansion.
    const auto stages = parse_megatron_layout("Ettt|(tt|)*29,m|L");
    BOOST_TEST(stages.size() == 32u);
    BOOST_TEST(stages[0].layers == "Ettt");
    BOOST_TEST(stages[29].layers == "tt");
    BOOST_TEST(stages[30].layers == "m");
    BOOST_TEST(stages[31].layers == "L");
    BOOST_TEST(parse_megatron_layout("E(t|)*2,tL").size() == 3u);
    BOOST_TEST(parse_megatron_layout("(|t)*2,tL").size() == 3u);       // "|t|ttL"
    BOOST_TEST(parse_megatron_layout("E,t*3,|,|,t*0L").size() == 3u);  // an empty stage
    BOOST_TEST(parse_megatron_layout("E|t*12|L")[1].decoders == 12u);
    PPB_CHECK_THROWS(FlagError, parse_megatron_layout("Etx|L"), "invalid layer character 'x'",
                     "virtual stage 0");
    PPB_CHECK_THROWS(FlagError, parse_megatron_layout("E(t|)L"), "invalid layer character '('");
    PPB_CHECK_THROWS(FlagError, parse_megatron_layout("Et*99999999999L"), "expands to more than");
}

BOOST_AUTO_TEST_CASE(layouts_megatron_refuses) {
    Messages messages;
    MegatronFlags f = flags(2, 4);
    f.layout = "Ett|ttL|t";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages), "3 virtual stages",
                     "not a multiple of --pipeline-model-parallel-size 2");
    f.layout = "tt|EttL";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "first layer must be the embedding");
    f.layout = "Ett|ttLE";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages), "2 embeddings");
    f.layout = "Ett|tttL";
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages), "5 decoder layers",
                     "--num-layers is 4");
    f.layout = "Ett|tmtL";
    f.mtp_layers = 1;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "decoder layers ('t') follow an MTP layer");
    f = flags(2, 5);
    f.layout = "Etm|tt|tt|L";
    f.mtp_layers = 1;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "decoder layers ('t') follow an MTP layer");
}

BOOST_AUTO_TEST_CASE(conflicting_flags_are_refused_naming_both) {
    Messages messages;
    MegatronFlags f = flags(4, 8);
    f.layout = "Ett|tt|tt|ttL";
    f.first_stage_layers = 2;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--pipeline-model-parallel-layout and --decoder-first-pipeline-num-layers");
    f.first_stage_layers.reset();
    f.account_for_loss = true;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--pipeline-model-parallel-layout and --account-for-loss-in-pipeline-split");
    f.account_for_loss = false;
    f.virtual_stages = 2;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--pipeline-model-parallel-layout and --num-virtual-stages-per-pipeline-rank");
    f = flags(4, 6);
    f.account_for_embedding = true;
    f.last_stage_layers = 2;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--account-for-embedding-in-pipeline-split and "
                     "--decoder-last-pipeline-num-layers");
}

// (L + embedding + loss) / P per rank, the first and last virtual stages one layer fewer.
BOOST_AUTO_TEST_CASE(embedding_and_loss_counted_in_the_split) {
    Messages messages;
    MegatronFlags f = flags(4, 14);
    f.account_for_embedding = true;
    f.account_for_loss = true;
    BOOST_TEST((counts(megatron_layout(f, MegatronScan{}, messages)) ==
                std::vector<std::vector<std::uint32_t>>{{3}, {4}, {4}, {3}}));
    f.account_for_loss = false;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "--num-layers 14 + the embedding = 15 does not divide into 4 stages");
    f = flags(2, 10);
    f.account_for_embedding = true;
    f.account_for_loss = true;
    f.virtual_stages = 3;
    BOOST_TEST((counts(megatron_layout(f, MegatronScan{}, messages)) ==
                std::vector<std::vector<std::uint32_t>>{{1, 2, 2}, {2, 2, 1}}));
    f.virtual_stages = 4;
    PPB_CHECK_THROWS(FlagError, megatron_layout(f, MegatronScan{}, messages),
                     "do not split evenly into 4 chunks");
}

// Round trip 2: plan -> ppb's Megatron flags -> import -> the same layers and kinds per
// (stage, chunk); the legacy flags too where ppb gives them, and MindSpeed-LLM's
// (--num-layer-list; --noop-layers with --num-layers-per-virtual-pipeline-stage).
BOOST_AUTO_TEST_CASE(printed_flags_import_back_to_the_plan) {
    std::mt19937 rng(2024);
    std::size_t legacy = 0;
    std::size_t mindspeed_flags = 0;
    for (int trial = 0; trial < 500; ++trial) {
        const auto r = ppb::partition::test::random_plan(rng, trial % 2 == 0);
        const auto& p = r.problem;
        const auto megatron = ppb::partition::megatron_args(p, r.plan);
        BOOST_TEST_REQUIRE(megatron.args.expressible(), megatron.args.why_not);
        const auto import = [&](const std::vector<std::string>& args) {
            MegatronFlags f;
            f.world_size = p.num_stages;
            f.micro_batches = p.micro_batches;
            for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
                const std::string& flag = args[i];
                const std::string& value = args[i + 1];
                const auto n = [&] { return static_cast<std::uint32_t>(std::stoul(value)); };
                if (flag == "--pipeline-model-parallel-size")
                    f.pipeline_size = n();
                else if (flag == "--num-layers")
                    f.num_layers = n();
                else if (flag == "--pipeline-model-parallel-layout")
                    f.layout = value;
                else if (flag == "--decoder-first-pipeline-num-layers")
                    f.first_stage_layers = n();
                else if (flag == "--decoder-last-pipeline-num-layers")
                    f.last_stage_layers = n();
                else if (flag == "--num-virtual-stages-per-pipeline-rank")
                    f.virtual_stages = n();
                else if (flag == "--recompute-granularity")
                    f.recompute_granularity = value;
                else if (flag == "--recompute-method")
                    f.recompute_method = value;
                else if (flag == "--recompute-num-layers")
                    f.recompute_num_layers = n();
                else if (flag == "--num-layer-list")
                    f.num_layer_list = value;
                else if (flag == "--noop-layers")
                    f.noop_layers = value;
                else if (flag == "--num-layers-per-virtual-pipeline-stage")
                    f.layers_per_virtual_stage = n();
                else
                    BOOST_FAIL("unexpected flag " << flag);
            }
            Messages messages;
            return megatron_layout(f, MegatronScan{}, messages);
        };
        const auto check = [&](const PipelineLayout& l, const char* which) {
            const std::string what =
                fmt::format("trial {} {}: P={} v={} positions {}", trial, which, p.num_stages,
                            p.chunks, fmt::join(r.positions, ","));
            BOOST_TEST_REQUIRE(l.num_stages == p.num_stages, what);
            BOOST_TEST_REQUIRE(l.num_chunks == p.chunks, what);
            for (const auto& s : r.plan.stages) {
                BOOST_TEST((l.stages[s.stage] == s.layers), what << " stage " << s.stage);
                for (const auto& c : s.chunks) {
                    if (p.chunks > 1)
                        BOOST_TEST((l.chunks[s.stage][c.chunk] == c.layers), what);
                }
            }
        };
        check(import(megatron.args.args), "layout");
        if (megatron.legacy_args.expressible()) {
            ++legacy;
            check(import(megatron.legacy_args.args), "legacy");
        }
        // MindSpeed-LLM's flags: --num-layer-list (1F1B), or the model padded with no-op layers
        // (interleaved), read back with MindSpeed-LLM's meaning (megatron_layout.hpp).
        const auto mindspeed = ppb::partition::mindspeed_args(p, r.plan);
        if (mindspeed.expressible()) {
            ++mindspeed_flags;
            check(import(mindspeed.args), "mindspeed");
        }
    }
    BOOST_TEST(legacy > 50u);
    BOOST_TEST(mindspeed_flags > 200u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_layout_tests
