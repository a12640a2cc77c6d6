// Mixture-of-experts layers: parameter counts against the published totals of Mixtral 8x7B,
// DeepSeek-V3 and Qwen2-57B-A14B, the coefficients and stage memory of the bundled samples worked
// out by hand, groups and their layouts, recompute kinds on MoE layers, and bad `moe` options.
#include "analytic_support.hpp"

#include <ppb/discovery.hpp>
#include <ppb/kinds.hpp>
#include <ppb/loader.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/plugin.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace analytic_test;
using ppb::analytic::AnalyticModel;
using ppb::analytic::MemoryTerms;
using ppb::analytic::parse_options;
using ppb::plugin::InvalidInput;
namespace fs = std::filesystem;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace moe_tests {

namespace {

// Mixtral 8x7B (Jiang et al. 2024, "Mixtral of Experts", and its published config): h = 4096,
// 32 layers, 32 query heads, 8 key/value heads, 8 experts of SwiGLU F = 14336, top-2,
// V = 32000, untied embeddings.
constexpr std::string_view mixtral =
    R"("hidden_size": 4096, "num_attention_heads": 32, "num_kv_heads": 8,
       "ffn_hidden_size": 14336, "num_layers": 32, "seq_length": 4096, "micro_batch_size": 1,
       "vocab_size": 32000, "tensor_parallel": 1,
       "moe": {"num_experts": 8, "top_k": 2})";

// DeepSeek-V3 (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", and its published config):
// h = 7168, 61 layers, the first 3 dense (F = 18432), then MoE layers of 256 routed experts of
// 2048, top-8, and 1 shared expert of 2048; 128 heads, V = 129280. Its attention is MLA, which
// this model cannot express: it is counted as multi-head attention of 128 heads (see below).
constexpr std::string_view deepseek_v3 =
    R"("hidden_size": 7168, "num_attention_heads": 128, "ffn_hidden_size": 18432,
       "num_layers": 61, "seq_length": 4096, "micro_batch_size": 1, "vocab_size": 129280,
       "tensor_parallel": 1,
       "moe": {"num_experts": 256, "top_k": 8, "moe_ffn_hidden_size": 2048,
               "shared_experts": 1, "first_k_dense": 3})";

// Qwen2-57B-A14B (Yang et al. 2024, "Qwen2 Technical Report", and its published config):
// h = 3584, 28 layers, all MoE: 64 experts of 2560, top-8, a shared expert of 20480; 28 heads,
// 4 key/value heads, V = 151936, untied embeddings.
constexpr std::string_view qwen2_57b =
    R"("hidden_size": 3584, "num_attention_heads": 28, "num_kv_heads": 4,
       "ffn_hidden_size": 18944, "num_layers": 28, "seq_length": 4096, "micro_batch_size": 1,
       "vocab_size": 151936, "tensor_parallel": 1,
       "moe": {"num_experts": 64, "top_k": 8, "moe_ffn_hidden_size": 2560,
               "shared_experts": 1, "shared_expert_ffn_hidden_size": 20480})";

std::string sample(const std::string& name) {
    return read_file(std::string(PPB_SAMPLE_DATA_DIR) + "/moe/" + name);
}

// A placement of one chunk and its per-group counts, kept together so the pointers stay valid.
struct GroupedStage {
    std::vector<ppb_chunk> chunks;
    std::vector<std::uint32_t> group_layers;  // [chunk][group][kind]
    std::uint32_t num_groups = 0;

    GroupedStage(std::uint32_t groups, std::vector<std::uint32_t> in_flight)
        : chunks(in_flight.size()),
          group_layers(in_flight.size() * groups * PPB_KIND_COUNT, 0),
          num_groups(groups) {
        for (std::size_t c = 0; c < in_flight.size(); ++c)
            chunks[c].in_flight = in_flight[c];
    }
    void add(std::uint32_t chunk, std::uint32_t group, ppb_kind kind, std::uint32_t n) {
        group_layers[(chunk * num_groups + group) * PPB_KIND_COUNT + kind] += n;
        chunks[chunk].layers[kind] += n;
    }
    [[nodiscard]] ppb_grouped_placement at(std::uint32_t stages, std::uint32_t stage) const {
        return ppb_grouped_placement{
            ppb_placement{stages, stage, static_cast<std::uint32_t>(chunks.size()), chunks.data()},
            num_groups, group_layers.data()};
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(moe)

// Per layer (no biases; one h-vector per norm):
//   attention  h(h + 2 h_kv) + h^2 with h_kv = 8 * 4096 / 32 = 1024:
//              4096 * 6144 + 16 777 216 = 41 943 040
//   expert     3 * 4096 * 14336 = 176 160 768, eight of them 1 409 286 144
//   router     4096 * 8 = 32 768;  norms 2 * 4096 = 8192
//   layer      41 943 040 + 1 409 286 144 + 32 768 + 8192 = 1 451 270 144
// Model: 32 layers 46 440 644 608 + embeddings and LM head 2 * 32000 * 4096 = 262 144 000 + final
// norm 4096 = 46 702 792 704, the published 46.7 B. Active (top-2 experts): layer
// 41 943 040 + 352 321 536 + 32 768 + 8192 = 394 305 536, 32 of them 12 617 777 152, + 262 148 096
// = 12 879 925 248, the published 12.9 B.
BOOST_AUTO_TEST_CASE(mixtral_8x7b_has_its_published_46_7_and_12_9_billion_parameters) {
    const auto t = terms(mixtral, "");
    BOOST_TEST(t.model_parameters == 46702792704.0, tt::tolerance(1e-15));
    BOOST_TEST(t.model_parameters == 46.7e9, tt::tolerance(0.001));
    BOOST_TEST(t.active_parameters == 12879925248.0, tt::tolerance(1e-15));
    BOOST_TEST(t.active_parameters == 12.9e9, tt::tolerance(0.002));
    BOOST_TEST_REQUIRE(t.moe.has_value());
    // t = 1, EP = 1: one rank holds the whole layer.
    BOOST_TEST(t.moe->dense_parameters + t.moe->expert_parameters == 1451270144.0,
               tt::tolerance(1e-15));
}

// DeepSeek-V3, attention counted as multi-head attention of 128 heads of h/a = 56 channels:
//   attention  4 h^2 = 4 * 7168^2 = 205 520 896
//   dense      3 * 7168 * 18432 = 396 361 728; layer + norms 14 336: 601 896 960
//   expert     3 * 7168 * 2048 = 44 040 192 (routed and shared alike); 256 routed 11 274 289 152
//   router     7168 * 256 = 1 835 008
//   MoE layer  205 520 896 + 11 274 289 152 + 44 040 192 + 1 835 008 + 14 336 = 11 525 699 584
// Model: 3 * 601 896 960 + 58 * 11 525 699 584 + 2 * 129280 * 7168 + 7168 = 672 149 632 000.
// MLA's real attention (q_lora_rank 1536, kv_lora_rank 512, 128 heads of 128 + 64 rope
// channels for Q and K, 128 for V; with its two latent norms):
//   7168*1536 + 1536 + 1536*128*192 + 7168*576 + 512 + 512*128*256 + 128*128*7168 = 187 107 328
// is 18 413 568 smaller per layer, 1 123 227 648 over 61 layers: 671 026 404 352, the published
// 671 B (without the multi-token-prediction module). Active: MoE layer with 8 routed experts
// 603 731 968; 3 * 601 896 960 + 58 * 603 731 968 + 1 853 365 248 = 38 675 510 272, with MLA
// 37 552 282 624 against the published 37 B (1.5 %: the report counts slightly differently).
BOOST_AUTO_TEST_CASE(deepseek_v3_has_its_published_671_billion_parameters_up_to_mla) {
    const auto t = terms(deepseek_v3, "");
    BOOST_TEST(t.model_parameters == 672149632000.0, tt::tolerance(1e-15));
    const double mla_correction = 61.0 * (205520896.0 - 187107328.0);
    BOOST_TEST(mla_correction == 1123227648.0);
    BOOST_TEST(t.model_parameters - mla_correction == 671e9, tt::tolerance(0.0001));
    // The multi-head approximation overstates the whole model by 0.17 %.
    BOOST_TEST(t.model_parameters == 671e9, tt::tolerance(0.002));
    BOOST_TEST(t.active_parameters == 38675510272.0, tt::tolerance(1e-15));
    BOOST_TEST(t.active_parameters - mla_correction == 37e9, tt::tolerance(0.02));
}

// Qwen2-57B-A14B: h_kv = 4 * 128 = 512;
//   attention  3584 * (3584 + 1024) + 3584^2 = 29 360 128
//   routed     64 * 3 * 3584 * 2560 = 1 761 607 680;  shared 3 * 3584 * 20480 = 220 200 960
//   router     3584 * 64 = 229 376;  norms 7168;  layer 2 011 405 312
// Model: 28 layers 56 319 348 736 + 2 * 151936 * 3584 + 3584 = 57 408 429 568 (published 57 B;
// Qwen2's QKV biases and shared-expert gate, 232 064 parameters, are not counted). Active: layer
// 29 360 128 + 8 * 27 525 120 + 220 200 960 + 229 376 + 7168 = 469 998 592, 28 of them + the
// embeddings = 14 249 041 408 (published 14 B).
BOOST_AUTO_TEST_CASE(qwen2_57b_a14b_has_its_published_57_and_14_billion_parameters) {
    const auto t = terms(qwen2_57b, "");
    BOOST_TEST(t.model_parameters == 57408429568.0, tt::tolerance(1e-15));
    BOOST_TEST(t.model_parameters == 57e9, tt::tolerance(0.01));
    BOOST_TEST(t.active_parameters == 14249041408.0, tt::tolerance(1e-15));
    BOOST_TEST(t.active_parameters == 14e9, tt::tolerance(0.02));
    const AnalyticModel model(options_json(qwen2_57b, ""));
    BOOST_TEST(model.groups() == std::vector<std::string>{"moe"});
}

// samples/data/moe/mixtral-8x7b-shape.json: t = 2 with SP, EP = 4, ETP = 1, d = 8, distributed
// optimizer, flash attention, no dropout, s = 4096, b = 1.
// Parameters per rank of one layer:
//   dense  41 943 040 / 2 + 8192 (norms) + 32 768 (router, replicated) = 21 012 480
//          at 2 + 4 + 12/8 = 7.5 bytes: 157 593 600 B
//   expert 8 / 4 = 2 experts of 176 160 768 = 352 321 536, expert data parallel
//          t*d / (EP*ETP) = 16 / 4 = 4, so 2 + 4 + 12/4 = 9 bytes: 3 170 893 824 B
//   per layer 3 328 487 424 B = 3174.29296875 MB
// Activations per layer and micro-batch (sbh = 4096 * 4096 = 16 777 216):
//   replicated  8 sbh (norm, QKV and MoE inputs; no dropout masks) + router 5 s b E = 163 840
//               = 134 381 568
//   tensor par. Q 2 sbh, K and V 4 s b h_kv = 16 777 216 (flash: grouped), projection input
//               2 sbh = 83 886 080; no shared expert
//   both / t    (134 381 568 + 83 886 080) / 2 = 109 133 824
//   routed      own tokens s b / t = 2048, top-2: 4096 copies, ETP = 1: 4096 routed tokens;
//               inputs 4096 * 2 * 4096 = 33 554 432, SwiGLU inner 4096 * 6 * 14336 = 352 321 536
//               (the fused weighted SwiGLU keeps nothing more for the routing weights):
//               385 875 968
//   none = select = comm = both = 495 009 792 B = 472.078125 MB (flash: nothing to select)
//   full = 2 sbh / t = 16 MB
// Head: 32000 * 4096 / 2 = 65 536 000 parameters * 7.5 = 468.75 MB, no activations (no dropout).
// Tail: (4096 + 65 536 000) * 7.5 B = 468.779296875 MB; per micro-batch norm input 2 sbh / t,
// LM head input 2 sbh / t, logits 4 s b V / t = 262 144 000: 16 + 16 + 250 = 282 MB.
BOOST_AUTO_TEST_CASE(mixtral_sample_coefficients_and_stages_by_hand) {
    const AnalyticModel model(sample("mixtral-8x7b-shape.json"));
    BOOST_TEST(model.groups() == std::vector<std::string>{"moe"});
    const auto& c = model.coefficients();
    BOOST_TEST_REQUIRE(c.groups.size() == 1u);
    const auto& moe = c.groups.front();
    BOOST_TEST(moe.layers_in_model == 32u);
    BOOST_TEST(moe.per_layer_mb == 3174.29296875, tt::tolerance(1e-14));
    for (const auto kind : {PPB_KIND_NONE, PPB_KIND_SELECT, PPB_KIND_COMM, PPB_KIND_BOTH})
        BOOST_TEST(moe.activation_mb[kind] == 472.078125, tt::tolerance(1e-14));
    BOOST_TEST(moe.activation_mb[PPB_KIND_FULL] == 16.0, tt::tolerance(1e-14));
    BOOST_TEST(c.head_mb == 468.75, tt::tolerance(1e-14));
    BOOST_TEST(c.tail_mb == 468.779296875, tt::tolerance(1e-14));
    BOOST_TEST(c.tail_activation_mb == 282.0, tt::tolerance(1e-14));
    BOOST_TEST(model.terms().moe->routed_tokens == 4096.0);
    BOOST_TEST(model.terms().moe->expert_data_parallel == 4.0);

    // p = 4, 8 layers a stage, 1F1B: f = 4 - s.
    // Stage 0, 8 'none': 8 * 3174.29296875 + 8 * 472.078125 * 4 + 468.75
    //                  = 25 394.34375 + 15 106.5 + 468.75 = 40 969.59375 MB.
    // Stage 3, 6 'select' + 2 'full', f = 1: 25 394.34375 + 6 * 472.078125 + 2 * 16
    //                  + 468.779296875 + 282 = 29 009.591796875 MB.
    ppb_chunk first{};
    first.layers[PPB_KIND_NONE] = 8;
    first.in_flight = 4;
    ppb_chunk last{};
    last.layers[PPB_KIND_SELECT] = 6;
    last.layers[PPB_KIND_FULL] = 2;
    last.in_flight = 1;
    BOOST_TEST(model.predict(ppb_placement{4, 0, 1, &first}) == 40969.59375, tt::tolerance(1e-14));
    BOOST_TEST(model.predict(ppb_placement{4, 3, 1, &last}) == 29009.591796875,
               tt::tolerance(1e-14));
    // The one group's grouped placement means the plain one.
    GroupedStage grouped(1, {4});
    grouped.add(0, 0, PPB_KIND_NONE, 8);
    BOOST_TEST(model.predict_grouped(grouped.at(4, 0)) ==
               model.predict(grouped.at(4, 0).placement));

    // Its terms: a parameter's 2 bytes of weight and 4 of gradient, and the optimizer's 12 bytes
    // shared over d = 8 for the dense part of a layer, over the expert data parallel 4 for the
    // experts; the 'none' activations 8 * 472.078125 * 4 = 15 106.5 MB; the embedding. No
    // constant or runtime memory, no dropout mask: no such terms.
    const auto parts = model.predict_parts(grouped.at(4, 0));
    BOOST_TEST_REQUIRE(parts.has_value());
    const auto& moe_terms = *model.terms().moe;
    const double parameters = moe_terms.dense_parameters + moe_terms.expert_parameters;
    const std::vector<std::pair<std::string, double>> expected = {
        {"embedding", 468.75},
        {"weights", 8 * parameters * 2 / MiB},
        {"gradients", 8 * parameters * 4 / MiB},
        {"optimizer",
         8 * (moe_terms.dense_parameters * 1.5 + moe_terms.expert_parameters * 3.0) / MiB},
        {"none", 15106.5}};
    BOOST_TEST_REQUIRE(parts->size() == expected.size());
    double sum = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        BOOST_TEST(std::string((*parts)[i].name) == expected[i].first);
        BOOST_TEST((*parts)[i].mb == expected[i].second, tt::tolerance(1e-12));
        sum += (*parts)[i].mb;
    }
    // The three parameter terms are the layers' per_layer_mb, and all add up to the prediction.
    BOOST_TEST((*parts)[1].mb + (*parts)[2].mb + (*parts)[3].mb == 8 * moe.per_layer_mb,
               tt::tolerance(1e-12));
    BOOST_TEST(sum == 40969.59375, tt::tolerance(1e-14));
}

// samples/data/moe/deepseek-v3-shape.json: t = 1, d = 64, EP = 64 (ETP = t = 1), distributed
// optimizer, flash attention, no dropout, s = 4096, b = 1 (sbh = 29 360 128).
// Bytes per parameter: dense 2 + 4 + 12/64 = 6.1875; experts, expert data parallel
// 1 * 64 / 64 = 1: 18.
//   dense layer  601 896 960 * 6.1875 B = 3551.7095947265625 MB
//   MoE layer    attention 205 520 896 + shared 44 040 192 + norms 14 336 + router 1 835 008
//                = 251 410 432 at 6.1875 = 1483.5377197265625 MB; 256/64 = 4 routed experts
//                176 160 768 at 18 = 3024 MB; together 4507.5377197265625 MB
// Activations (t = 1: nothing divided):
//   dense 'none' 8 sbh (replicated) + 8 sbh (Q, K, V, projection input; a = k so K and V are
//                h wide) + 6 s b F = 452 984 832: 922 746 880 B = 880 MB
//   MoE 'none'   replicated 8 sbh + router 5 * 4096 * 256 = 5 242 880;
//                attention 8 sbh; shared expert 6 * 4096 * 2048 = 50 331 648;
//                routed: 8 * 4096 = 32 768 tokens: inputs 32 768 * 2 * 7168 = 469 762 048,
//                inner 32 768 * 6 * 2048 = 402 653 184 (the fused weighted SwiGLU keeps
//                nothing more for the routing weights);
//                234 881 024 * 2 + 5 242 880 + 50 331 648 + 872 415 232 = 1 397 751 808 B
//                = 1333 MB
//   'full'       2 sbh = 56 MB for both
// Head: 129280 * 7168 = 926 679 040 parameters * 6.1875 B = 5468.203125 MB.
BOOST_AUTO_TEST_CASE(deepseek_v3_sample_coefficients_and_stages_by_hand) {
    const AnalyticModel model(sample("deepseek-v3-shape.json"));
    BOOST_TEST((model.groups() == std::vector<std::string>{"dense", "moe"}));
    const auto& c = model.coefficients();
    BOOST_TEST_REQUIRE(c.groups.size() == 2u);
    const auto& dense = c.groups[0];
    const auto& moe = c.groups[1];
    BOOST_TEST(dense.layers_in_model == 3u);
    BOOST_TEST(moe.layers_in_model == 58u);
    BOOST_TEST(dense.per_layer_mb == 3551.7095947265625, tt::tolerance(1e-14));
    BOOST_TEST(moe.per_layer_mb == 4507.5377197265625, tt::tolerance(1e-14));
    BOOST_TEST(dense.activation_mb[PPB_KIND_NONE] == 880.0, tt::tolerance(1e-14));
    BOOST_TEST(moe.activation_mb[PPB_KIND_NONE] == 1333.0, tt::tolerance(1e-14));
    BOOST_TEST(dense.activation_mb[PPB_KIND_FULL] == 56.0, tt::tolerance(1e-14));
    BOOST_TEST(moe.activation_mb[PPB_KIND_FULL] == 56.0, tt::tolerance(1e-14));
    BOOST_TEST(c.head_mb == 5468.203125, tt::tolerance(1e-14));

    // p = 16, 1F1B. Stage 0: the 3 dense layers 'full' and one MoE layer 'none', f = 16:
    //   3 * 3551.7095947265625 + 4507.5377197265625 + (3 * 56 + 1333) * 16 + 5468.203125
    //   = 10 655.1287841796875 + 4507.5377197265625 + 24 016 + 5468.203125 = 44 646.86962890625
    GroupedStage stage0(2, {16});
    stage0.add(0, 0, PPB_KIND_FULL, 3);
    stage0.add(0, 1, PPB_KIND_NONE, 1);
    BOOST_TEST(model.predict_grouped(stage0.at(16, 0)) == 44646.86962890625, tt::tolerance(1e-14));
    // Stage 5: 4 MoE layers, 2 'full' and 2 'none', f = 11:
    //   4 * 4507.5377197265625 + (2 * 56 + 2 * 1333) * 11 = 18 030.15087890625 + 30 558
    //   = 48 588.15087890625
    GroupedStage stage5(2, {11});
    stage5.add(0, 1, PPB_KIND_FULL, 2);
    stage5.add(0, 1, PPB_KIND_NONE, 2);
    BOOST_TEST(model.predict_grouped(stage5.at(16, 5)) == 48588.15087890625, tt::tolerance(1e-14));

    // A plain placement does not say which layers are MoE.
    BOOST_CHECK_THROW((void)model.predict(stage5.at(16, 5).placement), InvalidInput);
    // More layers of a group than the model has.
    GroupedStage too_dense(2, {1});
    too_dense.add(0, 0, PPB_KIND_NONE, 4);
    try {
        (void)model.predict_grouped(too_dense.at(16, 3));
        BOOST_ERROR("four dense layers of DeepSeek-V3's three were accepted");
    } catch (const InvalidInput& e) {
        BOOST_TEST(contains(e.what(), "4 layers of group 'dense', more than the 3"), e.what());
    }
}

// The report's per-group coefficients are what predict_grouped() adds, bit for bit: evaluated in
// the same order they give the same double for a middle stage of two chunks.
BOOST_AUTO_TEST_CASE(report_coefficients_reproduce_predict_grouped_exactly) {
    const AnalyticModel model(options_json(deepseek_v3, R"("constant_mb": 2500.3)"));
    const auto report = boost::json::parse(model.report()).as_object();
    const auto& groups = report.at("diagnostics").at("groups").as_array();
    BOOST_TEST_REQUIRE(groups.size() == 2u);
    const auto& parameters = report.at("parameters").as_object();
    BOOST_TEST(parameters.at("param_per_layer_mb").is_null());
    BOOST_TEST(parameters.at("activation_mb").at("none").is_null());

    GroupedStage stage(2, {7, 3});
    stage.add(0, 0, PPB_KIND_SELECT, 2);
    stage.add(0, 1, PPB_KIND_FULL, 1);
    stage.add(1, 1, PPB_KIND_NONE, 2);
    stage.add(1, 1, PPB_KIND_SELECT, 1);
    double expected = parameters.at("const_mb").to_number<double>();
    const std::array<std::uint32_t, 2> layers = {2, 4};
    for (std::size_t g = 0; g < 2; ++g)
        expected += groups[g].at("param_per_layer_mb").to_number<double>() * layers[g];
    double activation = 0.0;
    for (std::uint32_t c = 0; c < 2; ++c) {
        for (std::uint32_t g = 0; g < 2; ++g) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                const double a = groups[g]
                                     .at("activation_mb")
                                     .at(ppb::kind_name(static_cast<ppb_kind>(k)))
                                     .to_number<double>();
                activation += a * stage.group_layers[(c * 2 + g) * PPB_KIND_COUNT + k] *
                              static_cast<double>(stage.chunks[c].in_flight);
            }
        }
    }
    expected += activation;
    // A middle stage holds one layer's backward transient once, after the rest.
    expected += report.at("diagnostics").at("layer_transient_mb").to_number<double>();
    BOOST_TEST(model.predict_grouped(stage.at(8, 4)) == expected);
    BOOST_TEST(groups[0].at("name").as_string() == "dense");
    BOOST_TEST(groups[1].at("layers_in_model").to_number<double>() == 58.0);
}

// Without `moe` nothing changes: one group "body", grouped = plain.
BOOST_AUTO_TEST_CASE(without_moe_there_is_one_group_body) {
    const AnalyticModel model(options_json(llama2_70b, R"("tensor_parallel": 8)"));
    BOOST_TEST(model.groups() == std::vector<std::string>{"body"});
    GroupedStage stage(1, {3});
    stage.add(0, 0, PPB_KIND_SELECT, 10);
    BOOST_TEST(model.predict_grouped(stage.at(8, 0)) == model.predict(stage.at(8, 0).placement));
    BOOST_TEST(!model.terms().moe.has_value());
    BOOST_TEST(model.terms().active_parameters == model.terms().model_parameters);
    const auto report = boost::json::parse(model.report()).as_object();
    BOOST_TEST(!report.at("diagnostics").as_object().contains("groups"));
}

// Layouts: Megatron-LM's --moe-layer-freq (layer i is MoE when i % N == 0) and 0/1 lists,
// DeepSeek's first_k_dense; groups in model order of first appearance, named as asked.
BOOST_AUTO_TEST_CASE(layouts_give_the_groups_in_model_order) {
    const auto every_second = parse_options(
        options_json(mixtral, R"("moe": {"num_experts": 8, "top_k": 2, "layer_freq": 2})"));
    BOOST_TEST(every_second.moe->moe_layer[0]);
    BOOST_TEST(!every_second.moe->moe_layer[1]);
    BOOST_TEST(every_second.moe->moe_layers() == 16u);
    const auto groups = ppb::analytic::layer_groups(every_second);
    BOOST_TEST_REQUIRE(groups.size() == 2u);
    BOOST_TEST(groups[0].name == "moe");
    BOOST_TEST(groups[1].name == "dense");
    BOOST_TEST(groups[1].layers == 16u);

    // first_k_dense with an integer: MoE from layer 3 on, where i % 2 == 0: 4, 6, ..., 30.
    const auto both = parse_options(
        options_json(mixtral,
                     R"("moe": {"num_experts": 8, "top_k": 2, "layer_freq": 2, "first_k_dense": 3,
                   "dense_group": "decoder", "moe_group": "decoder_moe"})"));
    BOOST_TEST(both.moe->moe_layers() == 14u);
    const AnalyticModel named(
        options_json(mixtral,
                     R"("moe": {"num_experts": 8, "top_k": 2, "first_k_dense": 1,
                   "dense_group": "decoder", "moe_group": "decoder_moe"})"));
    BOOST_TEST((named.groups() == std::vector<std::string>{"decoder", "decoder_moe"}));

    // A list that agrees with first_k_dense.
    std::string list = "[0, 0";
    for (int i = 2; i < 32; ++i)
        list += ", 1";
    list += "]";
    const auto listed = parse_options(options_json(
        mixtral, R"("moe": {"num_experts": 8, "top_k": 2, "first_k_dense": 2, "layer_freq": )" +
                     list + "}"));
    BOOST_TEST(listed.moe->moe_layers() == 30u);
    BOOST_TEST(listed.moe->layer_freq_list);
}

// Recompute kinds on MoE layers keep their meaning: 'select' drops the attention core only,
// 'comm' the gathered inputs (QKV and the shared experts' input) when they are kept, 'full'
// keeps the layer input; the routed experts' activations stay with every kind but 'full'.
BOOST_AUTO_TEST_CASE(recompute_kinds_on_moe_layers) {
    const auto t =
        terms(deepseek_v3,
              R"("tensor_parallel": 8, "sequence_parallel": true, "keep_gathered_inputs": true,
           "data_parallel": 8, "flash_attention": false, "dropout": false,
           "moe": {"num_experts": 256, "top_k": 8, "moe_ffn_hidden_size": 2048,
                   "shared_experts": 1, "first_k_dense": 3, "expert_parallel": 64,
                   "expert_tensor_parallel": 1})");
    const auto& m = *t.moe;
    const double s = 4096, h = 7168, a = 128, sbh = s * h;
    // Attention core 2 a s^2 b (no dropout), split over t = 8.
    const double core = 2.0 * a * s * s / 8.0;
    BOOST_TEST(m.activation_bytes[PPB_KIND_NONE] - m.activation_bytes[PPB_KIND_SELECT] == core,
               tt::tolerance(1e-12));
    // Kept gathered inputs: QKV and the shared expert's first linear, 4 sbh * (1 - 1/8).
    BOOST_TEST(m.activation_bytes[PPB_KIND_NONE] - m.activation_bytes[PPB_KIND_COMM] ==
                   4.0 * sbh * 7.0 / 8.0,
               tt::tolerance(1e-12));
    BOOST_TEST(m.activation_bytes[PPB_KIND_SELECT] - m.activation_bytes[PPB_KIND_BOTH] ==
                   4.0 * sbh * 7.0 / 8.0,
               tt::tolerance(1e-12));
    BOOST_TEST(m.activation_bytes[PPB_KIND_FULL] == 2.0 * sbh / 8.0);
    // Routed tokens: s b / t = 512 own tokens, top-8: 4096 per rank (ETP = 1), received 1.2
    // times over (routing_imbalance's default); with the routing weights inside the experts and
    // the fused weighted SwiGLU nothing more is kept for them.
    BOOST_TEST(m.routed_tokens == 1.2 * 4096.0, tt::tolerance(1e-15));
    BOOST_TEST(m.routed_experts == 1.2 * 4096.0 * (2.0 * h + 6.0 * 2048.0), tt::tolerance(1e-15));
    // Expert data parallel t * d / (EP * ETP) = 64 / 64 = 1.
    BOOST_TEST(m.expert_data_parallel == 1.0);

    // A capacity factor scales the routed tokens.
    const auto capped = terms(deepseek_v3,
                              R"("moe": {"num_experts": 256, "top_k": 8,
                                         "moe_ffn_hidden_size": 2048, "capacity_factor": 1.25})");
    const auto balanced = terms(deepseek_v3,
                                R"("moe": {"num_experts": 256, "top_k": 8,
                                           "moe_ffn_hidden_size": 2048, "routing_imbalance": 1})");
    BOOST_TEST(capped.moe->routed_experts == 1.25 * balanced.moe->routed_experts,
               tt::tolerance(1e-15));
    // routing_imbalance scales what the rank's experts receive: t = 1, 4096 tokens top-8,
    // 32 768 copies received 1.2 times over.
    const auto dropless = terms(deepseek_v3, "");
    BOOST_TEST(dropless.moe->routed_experts - balanced.moe->routed_experts ==
                   0.2 * 32768.0 * (2.0 * h + 6.0 * 2048.0),
               tt::tolerance(1e-12));

    // Expert tensor parallelism slices the experts and gathers their tokens: t = 4 with SP,
    // ETP = 4: 8 * 4096 / 4 * 4 = 32 768 balanced routed tokens (times 1.2), 4 experts of 2048 / 4;
    // expert data parallel 4 * 256 / (64 * 4) = 4.
    const auto sliced =
        terms(deepseek_v3,
              R"("tensor_parallel": 4, "sequence_parallel": true, "data_parallel": 256,
           "moe": {"num_experts": 256, "top_k": 8, "moe_ffn_hidden_size": 2048,
                   "expert_parallel": 64})");
    BOOST_TEST(sliced.moe->routed_tokens == 1.2 * 32768.0, tt::tolerance(1e-15));
    BOOST_TEST(sliced.moe->expert_parameters == 4.0 * 3.0 * h * 2048.0 / 4.0);
    BOOST_TEST(sliced.moe->expert_data_parallel == 4.0);
}

// Where the routing weights multiply the expert outputs, and what their gradient keeps
// (moe.routing_weights). Megatron-LM before 2659630721 (moe_utils.py, unpermute): the combine
// multiplies the rank's own expert outputs and keeps them. From it (experts.py, bias_act_func):
// the experts' activation is multiplied; the fused weighted SwiGLU keeps its input only, any
// other activation keeps its output for the multiplication. DeepSeek-V3's MoE layer at t = 2
// with SP and ETP = 2, balanced: the rank's own s b / t = 2048 tokens go top-8, 16 384 copies;
// the ETP all-gather makes 32 768 routed tokens, each with 2048 / 2 = 1024 inner channels.
BOOST_AUTO_TEST_CASE(routing_weights_keep_what_their_gradient_needs) {
    const std::string moe = R"("tensor_parallel": 2, "sequence_parallel": true,
        "data_parallel": 64, "moe": {"num_experts": 256, "top_k": 8, "moe_ffn_hidden_size": 2048,
        "expert_parallel": 64, "routing_imbalance": 1)";
    const auto routed = [&](const std::string& more) {
        return terms(deepseek_v3, moe + more).moe->routed_experts;
    };
    const double h = 7168.0, X = 32768.0, own = 16384.0, inner = 1024.0;
    // Inputs 2h, SwiGLU's input 4 * inner and fc2's input 2 * inner per routed token.
    const double fused = routed("}");
    BOOST_TEST(fused == X * (2.0 * h + 6.0 * inner));
    BOOST_TEST(routed(R"(, "routing_weights": "experts", "activation_fused": true})") == fused);
    BOOST_TEST(routed(R"(, "routing_weights": "combine"})") - fused == own * 2.0 * h);
    // torchtitan's combine keeps an fp32 copy.
    BOOST_TEST(routed(R"(, "routing_weights": "combine_fp32"})") - fused == own * 4.0 * h);
    BOOST_TEST(routed(R"(, "activation_fused": false})") - fused == X * 2.0 * inner);
    // Under "combine" the activation is not weighted: unfused or not, the same.
    BOOST_TEST(routed(R"(, "routing_weights": "combine", "activation_fused": false})") ==
               fused + own * 2.0 * h);
    // GeLU experts: the activation's input, its output (never fused) and fc2's input.
    const auto gelu = [&](const std::string& more) {
        return terms(deepseek_v3, R"("gated_mlp": false, )" + moe + more).moe->routed_experts;
    };
    BOOST_TEST(gelu("}") == X * (2.0 * h + 6.0 * inner));
    BOOST_TEST(gelu(R"(, "routing_weights": "combine"})") ==
               X * (2.0 * h + 4.0 * inner) + own * 2.0 * h);
    // 'moe_act' recomputes the activation with its weighting: fc2's input and the activation's
    // output go, its input stays.
    const MemoryTerms recomputing = terms(deepseek_v3, moe + R"(, "activation_fused": false},
                                    "recompute_modules": ["moe_act"])");
    BOOST_TEST(recomputing.moe->routed_experts_selective == X * (2.0 * h + 4.0 * inner));
    BOOST_TEST(recomputing.moe->routed_experts == X * (2.0 * h + 8.0 * inner));
    // Offloading 'moe_act' moves the weighting's output with the activation's input.
    const MemoryTerms offloaded =
        terms(deepseek_v3, moe + R"(, "activation_fused": false}, "offload_modules": ["moe_act"])");
    BOOST_TEST(offloaded.moe->routed_experts == X * (2.0 * h + 2.0 * inner));
    // What else is given is refused by name.
    for (const std::string bad : {R"(, "routing_weights": "probs"})", R"(, "routing_weights": 1})",
                                  R"(, "activation_fused": "yes"})"}) {
        try {
            (void)terms(deepseek_v3, moe + bad);
            BOOST_ERROR("accepted " << bad);
        } catch (const InvalidInput& e) {
            const bool named = contains(e.what(), "moe.routing_weights") ||
                               contains(e.what(), "moe.activation_fused");
            BOOST_TEST(named, e.what());
        }
    }
}

// Each contradiction is refused naming both keys.
BOOST_AUTO_TEST_CASE(contradictions_are_refused_naming_the_keys) {
    const auto with_moe = [](std::string_view moe, std::string_view more = "") {
        return options_json(mixtral, std::string(R"("moe": )") + std::string(moe) +
                                         (more.empty() ? "" : ", ") + std::string(more));
    };
    std::string m = rejection(with_moe(R"({"num_experts": 1, "top_k": 1})"));
    BOOST_TEST(contains(m, "moe.num_experts is 1"), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 9})"));
    BOOST_TEST((contains(m, "moe.top_k 9") && contains(m, "moe.num_experts 8")), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "expert_parallel": 3})",
                           R"("data_parallel": 3)"));
    BOOST_TEST((contains(m, "moe.num_experts 8") && contains(m, "moe.expert_parallel 3")), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "first_k_dense": 32})"));
    BOOST_TEST((contains(m, "moe.first_k_dense 32") && contains(m, "num_layers 32")), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "layer_freq": [1, 0, 1]})"));
    BOOST_TEST((contains(m, "moe.layer_freq") && contains(m, "3 entries")), m);
    m = rejection(
        with_moe(R"({"num_experts": 8, "top_k": 2, "layer_freq": 64, "first_k_dense": 1})"));
    BOOST_TEST(contains(m, "no layer MoE"), m);
    std::string list = "[0";
    for (int i = 1; i < 32; ++i)
        list += ", 1";
    list += "]";
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "first_k_dense": 3, "layer_freq": )" +
                           list + "}"));
    BOOST_TEST((contains(m, "moe.first_k_dense 3") && contains(m, "starts with 1 dense")), m);
    std::string with_two = "[2";
    for (int i = 1; i < 32; ++i)
        with_two += ", 1";
    with_two += "]";
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "layer_freq": )" + with_two + "}"));
    BOOST_TEST((contains(m, "moe.layer_freq") && contains(m, "entry 0 must be 0 (dense) or 1")), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "expert_parallel": 8})"));
    BOOST_TEST((contains(m, "tensor_parallel * data_parallel = 1") &&
                contains(m, "moe.expert_parallel * moe.expert_tensor_parallel = 8")),
               m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2})", R"("tensor_parallel": 2)"));
    BOOST_TEST((contains(m, "tensor_parallel 2") && contains(m, "sequence_parallel")), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "moe_ffn_hidden_size": 1001,
                               "expert_tensor_parallel": 2})",
                           R"("data_parallel": 2)"));
    BOOST_TEST((contains(m, "moe.moe_ffn_hidden_size 1001") &&
                contains(m, "moe.expert_tensor_parallel 2")),
               m);
    m = rejection(
        with_moe(R"({"num_experts": 8, "top_k": 2, "shared_expert_ffn_hidden_size": 512})"));
    BOOST_TEST(
        (contains(m, "moe.shared_expert_ffn_hidden_size") && contains(m, "moe.shared_experts")), m);
    m = rejection(with_moe(
        R"({"num_experts": 8, "top_k": 2, "first_k_dense": 1, "dense_group": "x", "moe_group": "x"})"));
    BOOST_TEST((contains(m, "moe.dense_group") && contains(m, "moe.moe_group")), m);
    m = rejection(with_moe(R"({"num_experts": 8})"));
    BOOST_TEST(contains(m, "'moe.top_k'"), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "topk": 2})"));
    BOOST_TEST((contains(m, "'topk'") && contains(m, "did you mean 'top_k'")), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "capacity_factor": 0})"));
    BOOST_TEST(contains(m, "'moe.capacity_factor'"), m);
    m = rejection(with_moe(R"([8, 2])"));
    BOOST_TEST(contains(m, "'moe' must be an object"), m);
    m = rejection(with_moe(R"({"num_experts": 8, "top_k": 2, "moe_group": ""})"));
    BOOST_TEST(contains(m, "'moe.moe_group'"), m);
}

// Through the C boundary: groups, grouped predictions equal to the core's, plain placements and
// coefficients refused for two groups.
BOOST_AUTO_TEST_CASE(the_plugin_predicts_groups_through_the_c_boundary) {
    const auto candidate =
        ppb::inspect_plugin_file(fs::path(PPB_BUILD_PLUGIN_DIR) / "ppb-analytic-1.0.0.so");
    BOOST_TEST_REQUIRE((candidate.verdict == ppb::Verdict::usable), candidate.reason);
    const std::string options = sample("deepseek-v3-shape.json");
    ppb::MemoryModel model = ppb::open_model(candidate, options);
    const AnalyticModel core(options);
    BOOST_TEST((model.groups() == std::vector<std::string>{"dense", "moe"}));

    GroupedStage stage0(2, {16});
    stage0.add(0, 0, PPB_KIND_FULL, 3);
    stage0.add(0, 1, PPB_KIND_NONE, 1);
    GroupedStage stage5(2, {11});
    stage5.add(0, 1, PPB_KIND_FULL, 2);
    stage5.add(0, 1, PPB_KIND_NONE, 2);
    const std::vector<ppb_grouped_placement> placements = {stage0.at(16, 0), stage5.at(16, 5)};
    const std::vector<double> batch = model.predict_grouped_batch(placements);
    BOOST_TEST_REQUIRE(batch.size() == 2u);
    BOOST_TEST(batch[0] == 44646.86962890625, tt::tolerance(1e-14));
    BOOST_TEST(batch[1] == core.predict_grouped(placements[1]));
    BOOST_TEST(model.predict_grouped(placements[0]) == core.predict_grouped(placements[0]));
    try {
        (void)model.predict(placements[1].placement);
        BOOST_FAIL("a plain placement of a two-group model must be refused");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
    }
    BOOST_TEST(!model.group_parameters(0).has_value());
    BOOST_TEST(!model.group_parameters(1).has_value());
    // Its terms through the boundary, checked by the host: the core's, adding up to the
    // prediction; the dense and MoE layers' activations together per kind.
    BOOST_TEST(model.supports_parts());
    const auto parts = model.predict_parts(placements[0]);
    BOOST_TEST_REQUIRE(parts.has_value());
    const auto core_parts = core.predict_parts(placements[0]).value();
    BOOST_TEST_REQUIRE(parts->size() == core_parts.size());
    double sum = 0.0;
    for (std::size_t i = 0; i < parts->size(); ++i) {
        BOOST_TEST((*parts)[i].name == core_parts[i].name);
        BOOST_TEST((*parts)[i].label == core_parts[i].label);
        BOOST_TEST((*parts)[i].mb == core_parts[i].mb);
        sum += (*parts)[i].mb;
    }
    BOOST_TEST(sum == batch[0], tt::tolerance(1e-12));
    const auto none = std::find_if(parts->begin(), parts->end(),
                                   [](const ppb::MemoryPart& p) { return p.name == "none"; });
    BOOST_TEST_REQUIRE((none != parts->end()));
    BOOST_TEST(none->mb == 1333.0 * 16, tt::tolerance(1e-12));  // one MoE layer, 16 in flight

    // Bad moe options cross the boundary as invalid input naming the key.
    try {
        (void)ppb::open_model(candidate,
                              options_json(mixtral, R"("moe": {"num_experts": 8, "top_k": 3,
                                                               "expert_parallel": 3})"));
        BOOST_FAIL("num_experts 8 over expert_parallel 3 must be refused");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(contains(e.what(), "moe.expert_parallel"), e.what());
    }
}

// Shared experts whole on every tensor-parallel rank (MindFormers under sequence parallelism:
// llama_layer.py sets the shared experts' model_parallel to 1, each rank running its sequence
// shard): Qwen2-57B's one shared MLP of 20 480 on 4 ranks holds 3 x 3584 x 20 480 parameters on
// each rank instead of a quarter of them; the activations per rank are the same.
BOOST_AUTO_TEST_CASE(replicated_shared_experts_are_whole_on_every_rank) {
    const std::string_view tp4 = R"("tensor_parallel": 4, "sequence_parallel": true)";
    const MemoryTerms split = terms(qwen2_57b, tp4);
    const std::string both = std::string(tp4) + R"(, "moe": {"num_experts": 64, "top_k": 8,
        "moe_ffn_hidden_size": 2560, "shared_experts": 1, "shared_expert_ffn_hidden_size": 20480,
        "shared_experts_replicated": true})";
    const MemoryTerms whole = terms(qwen2_57b, both);
    const double shared = 3.0 * 3584.0 * 20480.0;
    BOOST_TEST(whole.moe->dense_parameters - split.moe->dense_parameters == shared * 3.0 / 4.0);
    BOOST_TEST(whole.moe->expert_parameters == split.moe->expert_parameters);
    BOOST_TEST(whole.moe->activation_bytes[PPB_KIND_NONE] ==
               split.moe->activation_bytes[PPB_KIND_NONE]);
    BOOST_TEST(whole.model_parameters == split.model_parameters);
    // A switch, nothing else.
    BOOST_CHECK_THROW((void)terms(qwen2_57b, R"("moe": {"num_experts": 64, "top_k": 8,
        "shared_experts": 1, "shared_experts_replicated": 1})"),
                      ppb::plugin::InvalidInput);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace moe_tests
