// The frameworks' flags for a plan (ppb/partition/framework_args.hpp), read back by readers
// written here from each framework's own code, not from ppb's writers:
//   Megatron-LM's layout grammar as pipeline_parallel_layer_layout.py implements it, with its own
//     two regular expressions (tests/common/megatron_grammar.hpp);
//   Megatron's legacy split (--decoder-first/last-pipeline-num-layers: the other stages share
//     the rest evenly; --num-virtual-stages-per-pipeline-rank: each stage's layers split evenly);
//   MindSpeed-LLM's --num-layer-list and --noop-layers (0-based indices of layers that do
//     nothing);
//   torchtitan's module_fqns_per_model_part, stage index = model position.
#include "../common/megatron_grammar.hpp"
#include "random_plans.hpp"

#include <ppb/partition/framework_args.hpp>
#include <ppb/schedule.hpp>

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::Schedule;
using ppb::partition::MegatronRecompute;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace framework_args_tests {

namespace {

// Megatron's parse_str_to_list: the virtual stages' characters.
std::vector<std::string> megatron_reads(const std::string& layout) {
    return ppb_test::megatron_virtual_stages(layout);
}

std::string value_of(const std::vector<std::string>& args, const std::string& flag) {
    const auto it = std::find(args.begin(), args.end(), flag);
    return it == args.end() || it + 1 == args.end() ? std::string() : *(it + 1);
}

bool has(const std::vector<std::string>& args, const std::string& flag) {
    return std::find(args.begin(), args.end(), flag) != args.end();
}

std::vector<std::uint32_t> numbers(const std::string& list) {
    std::vector<std::uint32_t> out;
    std::stringstream in(list);
    std::string item;
    while (std::getline(in, item, ','))
        out.push_back(static_cast<std::uint32_t>(std::stoul(item)));
    return out;
}

// The setting the recompute flags give, as Megatron's TransformerBlock applies them.
MegatronRecompute recompute_from(const std::vector<std::string>& args) {
    using Method = MegatronRecompute::Method;
    const std::string granularity = value_of(args, "--recompute-granularity");
    if (granularity.empty())
        return {Method::none, 0};
    if (granularity == "selective")
        return {Method::selective, 0};
    const std::string method = value_of(args, "--recompute-method");
    if (method == "uniform")
        return {Method::uniform, 0};
    return {Method::block,
            static_cast<std::uint32_t>(std::stoul(value_of(args, "--recompute-num-layers")))};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partition_framework_args)

// Megatron's documented example, written by ppb from its counts: 16 ranks, 2 chunks, the
// embedding and 3 layers first, 2 layers on each of the next 29 virtual stages, then an MTP-only
// virtual stage (no decoder layer) and the loss.
BOOST_AUTO_TEST_CASE(the_documented_example_is_written_in_megatrons_form) {
    std::vector<std::uint32_t> positions(32, 2);
    positions[0] = 3;
    positions[30] = 0;
    positions[31] = 0;
    BOOST_TEST(ppb::partition::megatron_layout_string(positions) == "Et*3|(t*2|)*29|L");
    const auto stages = megatron_reads("Et*3|(tt|)*29,m|L");
    BOOST_TEST(stages.size() == 32u);
    BOOST_TEST(stages.front() == "Ettt");
    BOOST_TEST(stages[30] == "m");
    BOOST_TEST(stages[31] == "L");
    BOOST_TEST(ppb::partition::megatron_layout_string({4}) == "Et*4L");
    BOOST_TEST(ppb::partition::megatron_layout_string({0, 1, 1, 0}) == "E|(t|)*2L");
}

// Round trip 1: every layout ppb prints, read by Megatron's grammar, rebuilds the plan's counts
// per (stage, chunk) with the embedding first and the loss last; the recompute flags rebuild
// every chunk's kinds; the legacy, MindSpeed-LLM and torchtitan settings rebuild them too.
BOOST_AUTO_TEST_CASE(printed_flags_rebuild_random_plans) {
    std::mt19937 rng(2222);
    std::size_t legacy = 0, legacy_refused = 0, noop = 0;
    for (int trial = 0; trial < 600; ++trial) {
        const pt::RandomPlan r = pt::random_plan(rng, trial % 3 == 0);
        const auto& p = r.problem;
        const std::uint32_t P = p.num_stages;
        const std::uint32_t v = p.chunks;
        const std::string what = fmt::format("trial {} P={} v={} positions {}", trial, P, v,
                                             fmt::join(r.positions, ","));
        const auto megatron = ppb::partition::megatron_args(p, r.plan);
        BOOST_TEST_REQUIRE(megatron.args.expressible(), what << ": " << megatron.args.why_not);
        const auto& args = megatron.args.args;
        BOOST_TEST(value_of(args, "--pipeline-model-parallel-size") == std::to_string(P));
        BOOST_TEST(value_of(args, "--num-layers") == std::to_string(p.time.body_layers));
        const std::string layout = value_of(args, "--pipeline-model-parallel-layout");
        const auto stages = megatron_reads(layout);
        BOOST_TEST_REQUIRE(stages.size() == std::size_t{P} * v, what << ": " << layout);
        std::string flat;
        for (std::size_t q = 0; q < stages.size(); ++q) {
            flat += stages[q];
            const auto decoders =
                static_cast<std::uint32_t>(std::count(stages[q].begin(), stages[q].end(), 't'));
            BOOST_TEST(decoders == r.positions[q], what << ": " << layout << " stage " << q);
        }
        BOOST_TEST(flat.front() == 'E', what);
        BOOST_TEST(flat.back() == 'L', what);
        BOOST_TEST(std::count(flat.begin(), flat.end(), 'E') == 1, what);
        BOOST_TEST(std::count(flat.begin(), flat.end(), 'L') == 1, what);
        BOOST_TEST(flat.find_first_not_of("EtL") == std::string::npos, what);
        const MegatronRecompute setting = recompute_from(args);
        for (const auto& s : r.plan.stages) {
            for (const auto& c : s.chunks) {
                BOOST_TEST((setting.chunk_layers(r.positions[c.chunk * P + s.stage]) == c.layers),
                           what);
            }
        }
        // Megatron refuses the layout beside these: never printed together.
        for (const char* refused :
             {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
              "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
              "--num-virtual-stages-per-pipeline-rank", "--num-layers-per-virtual-pipeline-stage"})
            BOOST_TEST(!has(args, refused), what << ": " << refused);

        // Legacy flags, read as Megatron splits them.
        if (megatron.legacy_args.expressible()) {
            ++legacy;
            const auto& la = megatron.legacy_args.args;
            BOOST_TEST(!has(la, "--pipeline-model-parallel-layout"));
            const std::string first = value_of(la, "--decoder-first-pipeline-num-layers");
            const std::string last = value_of(la, "--decoder-last-pipeline-num-layers");
            std::vector<std::uint32_t> per_stage(P, 0);
            std::uint32_t rest = p.time.body_layers;
            std::uint32_t others = P;
            if (!first.empty()) {
                per_stage.front() = static_cast<std::uint32_t>(std::stoul(first));
                rest -= per_stage.front();
                --others;
            }
            if (!last.empty()) {
                per_stage.back() = static_cast<std::uint32_t>(std::stoul(last));
                rest -= per_stage.back();
                --others;
            }
            BOOST_TEST_REQUIRE((others == 0 ? rest == 0 : rest % others == 0), what);
            for (std::uint32_t s = 0; s < P; ++s) {
                const bool given = (s == 0 && !first.empty()) || (s + 1 == P && !last.empty());
                if (!given)
                    per_stage[s] = rest / others;
            }
            const std::string vs = value_of(la, "--num-virtual-stages-per-pipeline-rank");
            const std::uint32_t chunks =
                vs.empty() ? 1 : static_cast<std::uint32_t>(std::stoul(vs));
            BOOST_TEST(chunks == v, what);
            for (std::uint32_t s = 0; s < P; ++s) {
                BOOST_TEST(per_stage[s] % chunks == 0u, what);
                for (std::uint32_t c = 0; c < v; ++c)
                    BOOST_TEST(per_stage[s] / chunks == r.positions[c * P + s], what);
            }
            BOOST_TEST((recompute_from(la) == setting));
        } else {
            ++legacy_refused;
            BOOST_TEST(!megatron.legacy_args.why_not.empty());
        }

        // MindSpeed-LLM.
        const auto mindspeed = ppb::partition::mindspeed_args(p, r.plan);
        if (v == 1) {
            if (std::find(r.positions.begin(), r.positions.end(), 0u) != r.positions.end()) {
                BOOST_TEST(!mindspeed.expressible(), what);
            } else {
                BOOST_TEST_REQUIRE(mindspeed.expressible(), what << ": " << mindspeed.why_not);
                // MindSpeed-LLM refuses the list with one stage, which holds every layer anyway.
                if (P == 1)
                    BOOST_TEST(!has(mindspeed.args, "--num-layer-list"), what);
                else
                    BOOST_TEST(
                        (numbers(value_of(mindspeed.args, "--num-layer-list")) == r.positions),
                        what);
            }
        } else {
            BOOST_TEST_REQUIRE(mindspeed.expressible(), what << ": " << mindspeed.why_not);
            const auto& ma = mindspeed.args;
            const auto total = std::stoul(value_of(ma, "--num-layers"));
            const auto per_chunk =
                std::stoul(value_of(ma, "--num-layers-per-virtual-pipeline-stage"));
            BOOST_TEST(total == per_chunk * P * v, what);
            const auto noops = has(ma, "--noop-layers") ? numbers(value_of(ma, "--noop-layers"))
                                                        : std::vector<std::uint32_t>{};
            noop += noops.empty() ? 0 : 1;
            for (std::uint32_t q = 0; q < P * v; ++q) {
                std::uint32_t real = 0;
                for (std::uint32_t i = q * per_chunk; i < (q + 1) * per_chunk; ++i)
                    real += std::find(noops.begin(), noops.end(), i) == noops.end() ? 1 : 0;
                BOOST_TEST(real == r.positions[q], what << " position " << q);
            }
            BOOST_TEST((recompute_from(ma) == setting));
        }

        // torchtitan: the model's modules in order, part q holding position q's layers.
        const auto titan = ppb::partition::torchtitan_plan(p, r.plan);
        BOOST_TEST_REQUIRE(titan.parts_why_not.empty(), what);
        BOOST_TEST(titan.schedule == (v == 1 ? "1F1B" : "Interleaved1F1B"));
        std::vector<std::string> all;
        for (std::size_t q = 0; q < titan.module_fqns_per_model_part.size(); ++q) {
            const auto& part = titan.module_fqns_per_model_part[q];
            const auto layers = static_cast<std::uint32_t>(
                std::count_if(part.begin(), part.end(),
                              [](const std::string& name) { return name.starts_with("layers."); }));
            BOOST_TEST(layers == r.positions[q], what);
            all.insert(all.end(), part.begin(), part.end());
        }
        std::vector<std::string> model = {"tok_embeddings"};
        for (std::uint32_t i = 0; i < p.time.body_layers; ++i)
            model.push_back(fmt::format("layers.{}", i));
        model.push_back("norm");
        model.push_back("output");
        BOOST_TEST((all == model), what);
        using Method = MegatronRecompute::Method;
        if (setting.method == Method::block) {
            BOOST_TEST(!titan.ac_why_not.empty());
        } else {
            BOOST_TEST(titan.ac_mode == (setting.method == Method::none      ? "none"
                                         : setting.method == Method::uniform ? "full"
                                                                             : "selective"));
        }
    }
    BOOST_TEST(legacy > 50u);
    BOOST_TEST(legacy_refused > 50u);
    BOOST_TEST(noop > 50u);
}

// A model with multi-token prediction layers (Megatron-LM's --mtp-num-layers): the layout holds
// them as validate_layer_layout of megatron/core/transformer/pipeline_parallel_layer_layout.py (at
// NVIDIA/Megatron-LM d98e8a64dd) requires, its rules written here: as many 'm' as MTP layers, all
// in one virtual stage, the last chunk of their rank (P - 1 - mtp_stage_offset), no decoder layer
// after the first of them; the decoders of every virtual stage are the plan's. A plan with
// decoders after their stage is refused, naming where; the legacy flags, which put them on the
// last stage, only with offset 0.
BOOST_AUTO_TEST_CASE(multi_token_prediction_layers_are_placed_as_megatron_validates_them) {
    std::mt19937 rng(4242);
    std::size_t written = 0, refused = 0;
    for (int trial = 0; trial < 600; ++trial) {
        pt::RandomPlan r = pt::random_plan(rng, trial % 3 == 0);
        auto& p = r.problem;
        const std::uint32_t P = p.num_stages;
        const std::uint32_t v = p.chunks;
        p.mtp.layers = 1 + static_cast<std::uint32_t>(trial % 3);
        p.mtp.stage_offset = trial % 4 == 0 ? static_cast<std::uint32_t>(trial / 4) % P : 0;
        const std::string what =
            fmt::format("trial {} P={} v={} mtp {} offset {} positions {}", trial, P, v,
                        p.mtp.layers, p.mtp.stage_offset, fmt::join(r.positions, ","));
        const auto megatron = ppb::partition::megatron_args(p, r.plan);
        const std::uint32_t rank = P - 1 - p.mtp.stage_offset;
        const std::size_t holder = std::size_t{v - 1} * P + rank;
        const bool decoders_after =
            std::any_of(r.positions.begin() + static_cast<std::ptrdiff_t>(holder) + 1,
                        r.positions.end(), [](std::uint32_t n) { return n > 0; });
        if (decoders_after) {
            ++refused;
            BOOST_TEST(!megatron.args.expressible(), what);
            BOOST_TEST(megatron.args.why_not.find("after every decoder layer") != std::string::npos,
                       what << ": " << megatron.args.why_not);
            continue;
        }
        ++written;
        BOOST_TEST_REQUIRE(megatron.args.expressible(), what << ": " << megatron.args.why_not);
        const std::string layout = value_of(megatron.args.args, "--pipeline-model-parallel-layout");
        const auto stages = megatron_reads(layout);
        BOOST_TEST_REQUIRE(stages.size() == std::size_t{P} * v, what << ": " << layout);
        std::string flat;
        for (std::size_t q = 0; q < stages.size(); ++q) {
            flat += stages[q];
            const auto count = [&](char c) {
                return static_cast<std::uint32_t>(
                    std::count(stages[q].begin(), stages[q].end(), c));
            };
            BOOST_TEST(count('t') == r.positions[q], what << ": " << layout << " stage " << q);
            // Megatron: the MTP layers in one virtual stage, their rank's last.
            BOOST_TEST(count('m') == (q == holder ? p.mtp.layers : 0u),
                       what << ": " << layout << " stage " << q);
        }
        BOOST_TEST(std::count(flat.begin(), flat.end(), 'm') == p.mtp.layers, what);
        BOOST_TEST(flat.find('t', flat.find('m')) == std::string::npos, what << ": " << layout);
        BOOST_TEST(flat.front() == 'E', what);
        BOOST_TEST(flat.back() == 'L', what);
        if (p.mtp.stage_offset > 0)
            BOOST_TEST(!megatron.legacy_args.expressible(), what);
    }
    BOOST_TEST(written > 100u);
    BOOST_TEST(refused > 20u);
    // An offset beyond the pipeline is named.
    pt::RandomPlan r = pt::random_plan(rng);
    r.problem.mtp = {1, r.problem.num_stages};
    const auto beyond = ppb::partition::megatron_args(r.problem, r.plan);
    BOOST_TEST(beyond.args.why_not.find("but the pipeline has") != std::string::npos,
               beyond.args.why_not);
}

// DualPipe-V: torchtitan's V order (rank r holds stages r and 2P - 1 - r), which Megatron's
// layout cannot say.
BOOST_AUTO_TEST_CASE(v_schedules_are_torchtitans_only) {
    ppb::partition::Problem p;
    p.num_stages = 2;
    p.chunks = 2;
    p.schedule = Schedule::dualpipe_v;
    p.time.body_layers = 6;
    ppb::partition::Plan plan;
    plan.recompute_setting = MegatronRecompute{MegatronRecompute::Method::uniform, 0};
    // Stage 0: chunk 0 = position 0 (1 layer), chunk 1 = position 3 (2 layers); stage 1: chunk 0
    // = position 1 (2), chunk 1 = position 2 (1).
    plan.stages = {{0, {}, 0, 0, 0, 0, {{0, {0, 0, 0, 0, 1}}, {1, {0, 0, 0, 0, 2}}}},
                   {1, {}, 0, 0, 0, 0, {{0, {0, 0, 0, 0, 2}}, {1, {0, 0, 0, 0, 1}}}}};
    const auto titan = ppb::partition::torchtitan_plan(p, plan);
    BOOST_TEST(titan.schedule == "DualPipeV");
    const std::vector<std::vector<std::string>> parts = {
        {"tok_embeddings", "layers.0"},
        {"layers.1", "layers.2"},
        {"layers.3"},
        {"layers.4", "layers.5", "norm", "output"}};
    BOOST_TEST((titan.module_fqns_per_model_part == parts));
    BOOST_TEST(titan.ac_mode == "full");
    const auto megatron = ppb::partition::megatron_args(p, plan);
    BOOST_TEST(!megatron.args.expressible());
    BOOST_TEST(megatron.args.why_not.find("dualpipe-v") != std::string::npos);
    BOOST_TEST(!megatron.layout.has_value());
}

// torchtitan's own split (torchtitan/distributed/pipeline_parallel.py, commit
// fb3b230e2a050885057a1a02f167658b0cb6c5ac, generate_llm_fqn_per_model_part, written here from
// its code): L layers plus input_weight and output_weight spread over the stages, the extra ones
// to the first stages, the first stage giving up input_weight layers for tok_embeddings and the
// last output_weight for norm and output. A plan holding those counts gets the same lists.
std::vector<std::vector<std::string>> torchtitan_generates(std::uint32_t stages,
                                                           std::uint32_t layers,
                                                           std::uint32_t input_weight,
                                                           std::uint32_t output_weight) {
    const std::uint32_t effective = layers + input_weight + output_weight;
    const std::uint32_t per_stage = effective / stages;
    const std::uint32_t extra = effective % stages;
    std::vector<std::vector<std::string>> out;
    std::uint32_t current = 0;
    for (std::uint32_t s = 0; s < stages; ++s) {
        std::vector<std::string> modules;
        std::uint32_t here = per_stage + (s < extra ? 1 : 0);
        if (s == 0) {
            modules.emplace_back("tok_embeddings");
            here -= input_weight;
        } else if (s + 1 == stages) {
            here -= output_weight;
        }
        for (std::uint32_t i = 0; i < here && current < layers; ++i)
            modules.push_back(fmt::format("layers.{}", current++));
        if (s + 1 == stages) {
            modules.emplace_back("norm");
            modules.emplace_back("output");
        }
        out.push_back(std::move(modules));
    }
    return out;
}

BOOST_AUTO_TEST_CASE(torchtitans_own_split_is_written_as_torchtitan_writes_it) {
    // 32 layers over 8 parts (torchtitan's Interleaved1F1B default of 2 parts per rank on 4
    // ranks), and over 4 parts of 1F1B, with the default weights and heavier ends.
    struct Case {
        std::uint32_t ranks, chunks, layers, in, out;
    };
    for (const Case c : {Case{4, 2, 32, 1, 1}, Case{4, 1, 32, 1, 1}, Case{2, 2, 13, 2, 2}}) {
        const auto expected = torchtitan_generates(c.ranks * c.chunks, c.layers, c.in, c.out);
        ppb::partition::Problem p;
        p.num_stages = c.ranks;
        p.chunks = c.chunks;
        p.schedule = c.chunks == 1 ? Schedule::one_f_one_b : Schedule::interleaved;
        p.time.body_layers = c.layers;
        ppb::partition::Plan plan;
        plan.recompute_setting = MegatronRecompute{MegatronRecompute::Method::none, 0};
        for (std::uint32_t s = 0; s < c.ranks; ++s) {
            ppb::partition::StagePlan stage;
            stage.stage = s;
            for (std::uint32_t ch = 0; ch < c.chunks; ++ch) {
                const auto& part = expected[ch * c.ranks + s];
                const auto n = static_cast<std::uint32_t>(
                    std::count_if(part.begin(), part.end(),
                                  [](const std::string& m) { return m.starts_with("layers."); }));
                stage.chunks.push_back({ch, {n, 0, 0, 0, 0}});
            }
            plan.stages.push_back(stage);
        }
        const auto titan = ppb::partition::torchtitan_plan(p, plan);
        BOOST_TEST((titan.module_fqns_per_model_part == expected));
        BOOST_TEST(titan.ac_mode == "none");
    }
}

BOOST_AUTO_TEST_CASE(shell_lines_quote_the_layout) {
    BOOST_TEST(ppb::partition::shell_line(
                   {"--pipeline-model-parallel-layout", "Et*3|(t*2|)*2L", "--num-layers", "8"}) ==
               "--pipeline-model-parallel-layout \"Et*3|(t*2|)*2L\" --num-layers 8");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace framework_args_tests
