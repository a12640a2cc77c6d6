// Transformer Engine's CUDA graphs of the attention with no eager iteration before the capture
// (cuda_graph_scope: Megatron-LM's --cuda-graph-impl transformer_engine --cuda-graph-scope attn
// --cuda-graph-warmup-steps 0). The graphs are captured before the first step, in the schedule's
// order, one per layer and micro-batch; what they save for backward is allocated while they are
// captured and lives in their pool, unseen by the allocator, while they replay
// (megatron/core/transformer/cuda_graphs.py TECudaGraphHelper, transformer_layer.py
// _te_cuda_graph_capture and get_layer_static_inputs, at NVIDIA/Megatron-LM commit
// 69ba8096f0daf65490b5c5a26e93b1d11367fd68; PyTorch's CUDACachingAllocator note on graph
// capture). Expected values are those tensors' sizes, listed per case.
#include "analytic_support.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace analytic_test;
using ppb::analytic::AnalyticModel;
using ppb::analytic::MemoryTerms;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cuda_graph_tests {

namespace {

// Megatron-LM's CI DeepSeek-V3 proxy without its MoE layers (analytic_support.hpp): MLA,
// t = 2 with SP, s = 4096, b = 4, unfused attention. Its dense layer keeps 2689 MiB per
// micro-batch on one rank, of which the attention half (TransformerLayer._forward_attention) is
//   the input norm's input, 2 x 4096 x 4 x 1024 / 2            16 MiB
//   the down-projections' input                                16
//   the latents and their norms' outputs                       65
//   Q, K, V                                                   256
//   the output projection's input                              64
//   the scores (softmax output, 16 heads x 4096^2 x 4 x 2)   2048
//                                                            2465 MiB
// and the MLP half 224 (the pre-MLP norm's input 16, fc1's 16, SwiGLU's 192). The static inputs
// of a graphed layer: the hidden states [s/t, b, h] in bf16, 16 MiB, and the boolean mask
// [b, 1, s, s], 64 MiB; the output the capture holds, 16 MiB. The proxy's members without
// "moe", for options_json():
const std::string proxy = [] {
    const std::string object = options_without(ci_deepseek_v3_proxy, "moe");
    return object.substr(1, object.size() - 2);
}();
constexpr std::string_view attn = R"("cuda_graph_scope": ["attn"])";

AnalyticModel model(std::string_view shape, std::string_view more) {
    return AnalyticModel(options_json(shape, more));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cuda_graphs)

BOOST_AUTO_TEST_CASE(the_graphs_keep_the_attention_half_and_take_static_buffers) {
    const MemoryTerms t = terms(proxy, attn);
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 2689.0, tt::tolerance(1e-12));
    BOOST_TEST(t.graph_kept_bytes[PPB_KIND_NONE] / MiB == 2465.0, tt::tolerance(1e-12));
    BOOST_TEST(t.graph_kept_bytes[PPB_KIND_COMM] / MiB == 2465.0, tt::tolerance(1e-12));
    BOOST_TEST(t.graph_kept_bytes[PPB_KIND_FULL] == 0.0);
    BOOST_TEST(t.graph_input_bytes / MiB == 16.0 + 64.0, tt::tolerance(1e-12));
    BOOST_TEST(t.graph_output_bytes / MiB == 16.0, tt::tolerance(1e-12));
    // A 'select' layer recomputing the input norm (the down-projections' input, 16) and MLA's
    // up-projections (Q, K, V 256 and the latent norms' outputs 32) keeps less in the graph.
    const MemoryTerms select =
        terms(proxy, std::string(attn) + R"(, "recompute_modules": ["layernorm", "mla_up_proj"])");
    BOOST_TEST(select.graph_kept_bytes[PPB_KIND_SELECT] / MiB == 2465.0 - 16.0 - 288.0,
               tt::tolerance(1e-12));
    // Offloaded tensors are on the host, in the graph or not: the attention core's 2368 MiB.
    const MemoryTerms offloaded =
        terms(proxy, std::string(attn) + R"(, "offload_modules": ["core_attn", "attn_proj"])");
    BOOST_TEST(offloaded.graph_kept_bytes[PPB_KIND_NONE] / MiB == 2465.0 - 2368.0,
               tt::tolerance(1e-12));
    // Context parallelism: the mask is [b, 1, s/c, s], 4 x 2048 x 4096 bytes = 32 MiB; the
    // hidden states 8 MiB.
    const MemoryTerms cp = terms(proxy, std::string(attn) + R"(, "context_parallel": 2,
                                                         "flash_attention": true)");
    BOOST_TEST(cp.graph_input_bytes / MiB == 8.0 + 32.0, tt::tolerance(1e-12));
    // The report gives them per layer and micro-batch in flight.
    const auto report = boost::json::parse(AnalyticModel(options_json(proxy, attn)).report());
    const auto& graphs = report.at("diagnostics").at("cuda_graphs");
    BOOST_TEST(graphs.at("kept_in_pool_mb").at("none").to_number<double>() == 2465.0,
               tt::tolerance(1e-12));
    BOOST_TEST(graphs.at("static_input_mb").to_number<double>() == 80.0, tt::tolerance(1e-12));
    // Without the option nothing changes.
    BOOST_TEST(terms(proxy, "").graph_kept_bytes[PPB_KIND_NONE] == 0.0);
}

// Unfused attention: the scores dominate, and the peak is the capture's — the parameters and,
// for 2 layers x 4 micro-batches in flight, the attention half with the static input and the
// output: 8 x (2465 + 80 + 16) MiB. The replay's would be the eager peak less 8 x 2465 plus
// 8 x 80.
BOOST_AUTO_TEST_CASE(the_capture_peaks_when_the_attention_keeps_the_most) {
    const AnalyticModel eager = model(proxy, "");
    const AnalyticModel graphed = model(proxy, attn);
    ppb_chunk c = none_chunk(2, 4);
    const ppb_placement middle{4, 1, 1, &c};
    const double fixed = eager.coefficients().const_mb + 2.0 * eager.coefficients().per_layer_mb;
    const double capture = fixed + 8.0 * (2465.0 + 80.0 + 16.0);
    const double replay = eager.predict(middle) - 8.0 * 2465.0 + 8.0 * 80.0;
    BOOST_TEST_REQUIRE(capture > replay);
    BOOST_TEST(graphed.predict(middle) == capture, tt::tolerance(1e-12));
    BOOST_TEST(
        prediction_part(graphed, middle, "cuda_graph_capture") == 8.0 * (2465.0 + 80.0 + 16.0),
        tt::tolerance(1e-12));
    BOOST_TEST(prediction_part(graphed, middle, "none") == 0.0);
    // A 'full' layer keeps its input outside the graph: nothing of it is captured.
    ppb_chunk full{};
    full.layers[PPB_KIND_FULL] = 2;
    full.in_flight = 4;
    const ppb_placement recomputed{4, 1, 1, &full};
    BOOST_TEST(graphed.predict(recomputed) ==
                   std::max(fixed + 8.0 * (80.0 + 16.0), eager.predict(recomputed) + 8.0 * 80.0),
               tt::tolerance(1e-12));
}

// Flash attention and a wide MLP (F = 16 384: SwiGLU's 6 x 16 384 x 16 384 / 2 bytes = 768
// MiB): the layer keeps 417 MiB in the graph (2465 without the scores) of 1217, and the peak is
// the replay's, the eager peak less what the graphs keep plus their static inputs.
BOOST_AUTO_TEST_CASE(the_replay_peaks_when_the_rest_of_the_layer_keeps_the_most) {
    const std::string wide = R"("flash_attention": true, "ffn_hidden_size": 16384)";
    const AnalyticModel eager = model(proxy, wide);
    const AnalyticModel graphed = model(proxy, wide + ", " + std::string(attn));
    BOOST_TEST(eager.terms().activation_bytes[PPB_KIND_NONE] / MiB == 1217.0, tt::tolerance(1e-12));
    ppb_chunk c = none_chunk(2, 4);
    const ppb_placement last{4, 3, 1, &c};
    const double replay = eager.predict(last) - 8.0 * 417.0 + 8.0 * 80.0;
    BOOST_TEST(graphed.predict(last) == replay, tt::tolerance(1e-12));
    BOOST_TEST(prediction_part(graphed, last, "none") == 8.0 * (1217.0 - 417.0),
               tt::tolerance(1e-12));
    BOOST_TEST(prediction_part(graphed, last, "cuda_graph_inputs") == 8.0 * 80.0,
               tt::tolerance(1e-12));
    BOOST_TEST(prediction_part(graphed, last, "logits") > 0.0);  // the tail stays eager
}

BOOST_AUTO_TEST_CASE(other_scopes_are_refused_by_name) {
    BOOST_TEST(contains(rejection(options_json(proxy, R"("cuda_graph_scope": ["moe_router"])")),
                        "'cuda_graph_scope entry 0': 'moe_router' is a module of Megatron-LM the "
                        "analytic model does not count"));
    BOOST_TEST(contains(rejection(options_json(proxy, R"("cuda_graph_scope": ["atn"])")),
                        "did you mean 'attn'?"));
    BOOST_TEST(contains(rejection(options_json(proxy, R"("cuda_graph_scope": "attn")")),
                        "'cuda_graph_scope' must be a list of module names"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cuda_graph_tests
