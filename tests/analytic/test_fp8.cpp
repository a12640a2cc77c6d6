// FP8 and FP4 training (fp8_recipe, fp8_param_gather, fp8_transposes): the bytes Transformer
// Engine's quantized tensors take, what a layer's linears keep of their inputs, the weight copies
// they cache, weights kept in FP8 only, and bad options.
#include "analytic_support.hpp"

#include <ppb/plugin.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace analytic_test;
using ppb::analytic::AnalyticModel;
using ppb::analytic::LinearBytes;
using ppb::analytic::MemoryTerms;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace fp8_tests {

namespace {

// A dense layer of h = 1024, 16 heads, SwiGLU F = 4096, s = 2048, b = 1, t = 2 with sequence
// parallelism, flash attention, no dropout.
constexpr std::string_view gpt =
    R"("hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
       "num_layers": 4, "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32768,
       "tensor_parallel": 2, "sequence_parallel": true, "flash_attention": true,
       "dropout": false, "runtime_mb": 0, "logits_transient_bytes": 0,
       "backward_transient": false, "relative_std_error": 0)";

LinearBytes bytes_of(std::string_view more) {
    return ppb::analytic::linear_bytes(ppb::analytic::parse_options(options_json(gpt, more)));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fp8_and_fp4)

// Transformer Engine's formats (transformer_engine/pytorch/tensor/, commit
// d0067d0da6cb01811b8072a7d304f0e00344ce2b) and what linear.py / layernorm_linear.py keep:
//   tensorwise, delayed: Float8Tensor, 1 byte a value; on Hopper a weight's cached copy has its
//     transpose beside it (2 bytes), an input kept for the weight gradient its column-wise copy
//     (1), and under sequence parallelism a column-parallel linear's its row-wise copy too, for
//     the all-gather in backward (2); on Blackwell one copy of each (1);
//   blockwise: 1 byte and an fp32 scale per 1x128 block (1 + 4/128) for an input, a weight's
//     row- and column-wise copies with a scale per 128x128 block (2 x (1 + 4/16384));
//   mxfp8: 1 byte and an E8M0 scale per 32 (1 + 1/32); a weight row- and column-wise;
//   nvfp4: half a byte and an E4M3 scale per 16 (0.5 + 1/16); a weight row- and column-wise.
BOOST_AUTO_TEST_CASE(the_quantized_formats_take_transformer_engines_bytes) {
    const LinearBytes none = bytes_of("");
    BOOST_TEST(!none.quantized);
    BOOST_TEST(none.column_input == 2.0);
    BOOST_TEST(none.weight_copy == 0.0);
    const LinearBytes tensorwise = bytes_of(R"("fp8_recipe": "tensorwise")");
    BOOST_TEST(tensorwise.column_input == 2.0);
    BOOST_TEST(tensorwise.input == 1.0);
    BOOST_TEST(tensorwise.weight_copy == 2.0);
    BOOST_TEST(tensorwise.projection_copy == 0.0);
    const LinearBytes no_sp = bytes_of(R"("fp8_recipe": "tensorwise", "sequence_parallel": false)");
    BOOST_TEST(no_sp.column_input == 1.0);
    const LinearBytes blackwell =
        bytes_of(R"("fp8_recipe": "tensorwise", "fp8_transposes": false)");
    BOOST_TEST(blackwell.column_input == 1.0);
    BOOST_TEST(blackwell.weight_copy == 1.0);
    BOOST_TEST(bytes_of(R"("fp8_recipe": "delayed")").projection_copy == 1.0);
    const LinearBytes blockwise = bytes_of(R"("fp8_recipe": "blockwise")");
    BOOST_TEST(blockwise.input == 1.03125);
    BOOST_TEST(blockwise.weight_copy == 2.0 + 8.0 / 16384.0);
    const LinearBytes mxfp8 = bytes_of(R"("fp8_recipe": "mxfp8")");
    BOOST_TEST(mxfp8.column_input == 1.03125);
    BOOST_TEST(mxfp8.weight_copy == 2.0625);
    const LinearBytes nvfp4 = bytes_of(R"("fp8_recipe": "nvfp4")");
    BOOST_TEST(nvfp4.input == 0.5625);
    BOOST_TEST(nvfp4.weight_copy == 1.125);
}

// One layer and micro-batch, whole (sbh = 2048 x 1024 elements, 2 MiB at 1 byte each; sbF
// 8 MiB): in 16 bits the norms' inputs 8, the QKV and fc1 inputs 4 + 4, Q 4, K and V 8, the
// projection's input 4, SwiGLU's two inputs 32 and fc2's input 16 MiB: 80 MiB, 40 per rank.
//   tensorwise: fc2's input in FP8, 8 MiB (the column-parallel inputs stay 2 bytes under
//     sequence parallelism: row- and column-wise): 72 MiB, 36 per rank;
//   delayed: and the projection's quantized copy beside its 16-bit input, 2 MiB: 37 per rank;
//   mxfp8: the QKV, fc1 and fc2 inputs at 1.03125 bytes: 8 + 4.125 + 16 + 32 + 8.25 =
//     68.375 MiB, 34.1875 per rank.
BOOST_AUTO_TEST_CASE(the_linears_keep_their_inputs_quantized) {
    BOOST_TEST(terms(gpt, "").activation_bytes[PPB_KIND_NONE] / MiB == 40.0, tt::tolerance(1e-12));
    BOOST_TEST(
        terms(gpt, R"("fp8_recipe": "tensorwise")").activation_bytes[PPB_KIND_NONE] / MiB == 36.0,
        tt::tolerance(1e-12));
    BOOST_TEST(
        terms(gpt, R"("fp8_recipe": "delayed")").activation_bytes[PPB_KIND_NONE] / MiB == 37.0,
        tt::tolerance(1e-12));
    BOOST_TEST(
        terms(gpt, R"("fp8_recipe": "mxfp8")").activation_bytes[PPB_KIND_NONE] / MiB == 34.1875,
        tt::tolerance(1e-12));
}

// A rank's layer: attention 4h^2 / 2 = 2 097 152 and SwiGLU 3hF / 2 = 6 291 456 linear
// parameters, two norms 2048. Tensorwise on Hopper caches 2 bytes a linear parameter: 16 MiB a
// layer beside the bf16 weights, gradients and optimizer state (18 bytes a parameter). With the
// weights kept in FP8 only (fp8_param_gather) the linears' bf16 weights go: the layer's weights
// are its norms' 4096 bytes.
BOOST_AUTO_TEST_CASE(the_linears_cache_quantized_weights_or_keep_only_those) {
    const double linear = 2097152.0 + 6291456.0;
    const MemoryTerms t = terms(gpt, "");
    BOOST_TEST(t.layer_linear_parameters == linear);
    BOOST_TEST(t.layer_parameters == linear + 2048.0);
    const AnalyticModel cached(options_json(gpt, R"("fp8_recipe": "tensorwise")"));
    const auto& g = cached.coefficients().groups.front();
    BOOST_TEST(g.quantized_per_layer_mb == 16.0, tt::tolerance(1e-12));
    BOOST_TEST(g.weights_per_layer_mb == (linear + 2048.0) * 2.0 / MiB, tt::tolerance(1e-12));
    BOOST_TEST(g.per_layer_mb == (linear + 2048.0) * 18.0 / MiB + 16.0, tt::tolerance(1e-12));
    const AnalyticModel fp8_only(
        options_json(gpt, R"("fp8_recipe": "tensorwise", "fp8_param_gather": true)"));
    const auto& f = fp8_only.coefficients().groups.front();
    BOOST_TEST(f.weights_per_layer_mb == 4096.0 / MiB, tt::tolerance(1e-12));
    BOOST_TEST(f.quantized_per_layer_mb == 16.0, tt::tolerance(1e-12));
    BOOST_TEST(f.per_layer_mb == (linear + 2048.0) * 16.0 / MiB + 4096.0 / MiB + 16.0,
               tt::tolerance(1e-12));
    // The parts of a stage name the copies and still add up.
    ppb_chunk c{};
    c.layers[PPB_KIND_NONE] = 2;
    c.in_flight = 1;
    const ppb_placement stage{2, 0, 1, &c};
    const std::vector<std::uint32_t> layers(c.layers, c.layers + PPB_KIND_COUNT);
    const auto parts = cached.predict_parts(ppb_grouped_placement{stage, 1, layers.data()});
    double sum = 0.0;
    double copies = 0.0;
    for (const ppb_memory_part& p : parts.value()) {
        sum += p.mb;
        if (std::string(p.name) == "fp8_weights")
            copies = p.mb;
    }
    BOOST_TEST(copies == 32.0, tt::tolerance(1e-12));
    BOOST_TEST(sum == cached.predict(stage), tt::tolerance(1e-12));
}

// MLA's down-projections each quantize the input norm's output (two 1-byte copies for the one
// 16-bit tensor), and the up-projections keep their norms' inputs in 16 bits beside the
// quantized norm outputs. test_mla.cpp's proxy (8192 tokens on a rank outside the attention):
// the down-projections' input 16 MiB in bf16 becomes 2 x 8 = 16 MiB under tensorwise scaling;
// the q latent's norm output [2048, 4, 1536] 24 -> 24 MiB (2 bytes: row- and column-wise under
// sequence parallelism), fc2's input 64 -> 32 MiB.
BOOST_AUTO_TEST_CASE(multi_latent_attention_quantizes_its_linears_inputs) {
    constexpr std::string_view proxy =
        R"("hidden_size": 1024, "num_attention_heads": 32, "ffn_hidden_size": 4096,
           "num_layers": 16, "seq_length": 4096, "micro_batch_size": 4, "vocab_size": 51712,
           "tensor_parallel": 2, "sequence_parallel": true, "dropout": false,
           "flash_attention": false,
           "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128,
                   "qk_pos_emb_head_dim": 64, "v_head_dim": 128})";
    BOOST_TEST(
        terms(proxy, R"("fp8_recipe": "tensorwise")").activation_bytes[PPB_KIND_NONE] / MiB ==
            2689.0 - 32.0,
        tt::tolerance(1e-12));
    BOOST_TEST(
        terms(proxy, R"("fp8_recipe": "tensorwise", "sequence_parallel": false)").attention.input /
                MiB ==
            2.0 * 16.0,
        tt::tolerance(1e-12));
}

// An MoE layer: the router keeps the MoE input in 16 bits, the shared expert's fc1 its own
// quantized copy; the routed experts' grouped linears keep their inputs quantized.
// h = 1024, s b / t = 1024 tokens on a rank, top-2 of 4 experts of F_e = 1024 on EP = 2 ranks,
// one shared expert of 1024, balanced routing: 2048 routed copies. Under mxfp8 (1.03125 bytes):
//   the MoE input 2 x 2048 x 1024 (whole) and the shared fc1's copy 1.03125 x 2048 x 1024 in
//     place of the dense layer's fc1 input 1.03125 x 2048 x 1024: 4 MiB more than a dense
//     layer's replicated terms, besides the router's scores and map;
//   routed: 2048 x 1.03125 x 1024 (inputs) + 2048 x (4 + 1.03125) x 1024 (SwiGLU and fc2's
//     input) = 12.125 MiB (the fused weighted SwiGLU keeps nothing more for the weights).
BOOST_AUTO_TEST_CASE(moe_layers_quantize_the_experts_inputs) {
    const MemoryTerms t = terms(gpt, R"("fp8_recipe": "mxfp8", "data_parallel": 1,
        "moe": {"num_experts": 4, "top_k": 2, "moe_ffn_hidden_size": 1024, "shared_experts": 1,
                "expert_parallel": 2, "expert_tensor_parallel": 1, "routing_imbalance": 1})");
    BOOST_TEST(t.moe->routed_tokens == 2048.0);
    BOOST_TEST(t.moe->routed_experts / MiB == 12.125, tt::tolerance(1e-12));
    BOOST_TEST((t.moe->layer.replicated - t.layer.replicated - t.moe->router) / MiB == 4.0,
               tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(options_without_effect_are_named_in_the_reports_warnings) {
    const auto warnings = [](std::string_view more) {
        const AnalyticModel model(options_json(gpt, more));
        return boost::json::serialize(
            boost::json::parse(model.report()).at("diagnostics").at("warnings"));
    };
    BOOST_TEST(contains(warnings(R"("fp8_transposes": false)"),
                        "fp8_transposes has no effect without fp8_recipe"));
    BOOST_TEST(contains(warnings(R"("cp_comm_type": "a2a")"),
                        "cp_comm_type has no effect with context_parallel = 1"));
    BOOST_TEST(contains(warnings(R"("activation_offload_fraction": 0.5)"),
                        "activation_offload_fraction has no effect without offload_modules"));
    BOOST_TEST(warnings(R"("fp8_recipe": "mxfp8", "fp8_transposes": false)") == "[]");
}

BOOST_AUTO_TEST_CASE(bad_fp8_options_are_refused_by_name) {
    BOOST_TEST(
        contains(rejection(options_json(gpt, R"("fp8_recipe": "fp16")")),
                 "'fp8_recipe' must be one of delayed, tensorwise, blockwise, mxfp8, nvfp4"));
    BOOST_TEST(contains(rejection(options_json(gpt, R"("fp8_recipe": true)")),
                        "'fp8_recipe' must be one of"));
    BOOST_TEST(contains(rejection(options_json(gpt, R"("fp8_param_gather": true)")),
                        "'fp8_param_gather' without fp8_recipe"));
    BOOST_TEST(contains(rejection(options_json(gpt, R"("fp8_transposes": "yes")")),
                        "'fp8_transposes' must be true or false"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fp8_tests
