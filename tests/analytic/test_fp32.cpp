// Training in fp32 (activation_bytes 4): Megatron-LM without --bf16 and --fp16 runs its layers in
// params_dtype = torch.float (megatron/training/arguments.py at NVIDIA/Megatron-LM commit
// adfb8ec7926215bfd0d5120aaf6b080de224d328), so every tensor a layer keeps in the training dtype
// takes 4 bytes: the paper's 2-byte tensors double, its 1-byte dropout masks do not. FP8 linears
// keep their quantized inputs, the router its fp32 scores, the loss its fp32 logits.
#include "analytic_support.hpp"

#include <ppb/plugin.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace analytic_test;
using ppb::analytic::AnalyticModel;
using ppb::analytic::MemoryTerms;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace fp32_tests {

namespace {

// Megatron-LM's CI DeepSeek proxy that trains in fp32 (tests/functional_tests/test_cases/moe/
// deepseek_proxy_fsdp_ep2_fsdp2/model_config.yaml at commit
// adfb8ec7926215bfd0d5120aaf6b080de224d328): h = 512, 8 heads, SwiGLU F = 2048, s = 1024, MLA
// (q_lora_rank 256, kv_lora_rank 128, heads of 128 + 64 and 128), 8 experts of 1024 with one
// shared expert, top 4, EP 2, FP8 tensorwise on Blackwell (no transposes), unfused attention, no
// dropout; here b = 1 and a balanced router.
constexpr std::string_view proxy =
    R"("hidden_size": 512, "num_attention_heads": 8, "ffn_hidden_size": 2048,
       "seq_length": 1024, "micro_batch_size": 1, "vocab_size": 50304, "num_layers": 8,
       "tensor_parallel": 1, "data_parallel": 8, "flash_attention": false, "dropout": false,
       "mla": {"q_lora_rank": 256, "kv_lora_rank": 128, "qk_head_dim": 128,
               "qk_pos_emb_head_dim": 64, "v_head_dim": 128},
       "moe": {"num_experts": 8, "top_k": 4, "moe_ffn_hidden_size": 1024, "shared_experts": 1,
               "expert_parallel": 2, "layer_freq": [0, 0, 0, 1, 1, 1, 1, 1],
               "first_k_dense": 3, "routing_imbalance": 1},
       "fp8_recipe": "tensorwise", "fp8_transposes": false, "activation_bytes": 4)";

std::vector<std::string> warnings_of(std::string_view shape, std::string_view more) {
    return ppb::analytic::option_warnings(ppb::analytic::parse_options(options_json(shape, more)));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fp32_training)

// The paper's count (Korthikanti et al. 2022, §4.1) with 4-byte tensors: of its 34sbh the 2sbh
// of dropout masks stay, the other 32 double (66); the attention core's softmax output and
// dropout output double, the mask stays: 2 + 3 -> 4 + 5 bytes per a*s^2*b element. GPT-3 175B
// at t = 8 (as/h = 16): without SP sbh(18 + 48/8 + 9 x 16/8) = 42 sbh (23 in 16 bits), with
// SP sbh(66 + 144)/8 = 26.25 sbh; selective recompute 24 and 8.25; full recompute keeps the
// layer's input, 4sbh (4sbh/8 with SP).
BOOST_AUTO_TEST_CASE(the_papers_count_doubles_but_for_the_dropout_masks) {
    const double sbh = 2048.0 * 12288.0;
    const MemoryTerms sixteen = terms(gpt3_175b, R"("tensor_parallel": 8)");
    BOOST_TEST(sixteen.activation_bytes[PPB_KIND_NONE] == 23.0 * sbh, tt::tolerance(1e-12));
    const MemoryTerms fp32 = terms(gpt3_175b, R"("tensor_parallel": 8, "activation_bytes": 4)");
    BOOST_TEST(fp32.activation_bytes[PPB_KIND_NONE] == 42.0 * sbh, tt::tolerance(1e-12));
    BOOST_TEST(fp32.activation_bytes[PPB_KIND_SELECT] == 24.0 * sbh, tt::tolerance(1e-12));
    BOOST_TEST(fp32.activation_bytes[PPB_KIND_FULL] == 4.0 * sbh, tt::tolerance(1e-12));
    BOOST_TEST(fp32.layer.replicated == 18.0 * sbh, tt::tolerance(1e-12));
    BOOST_TEST(fp32.layer.tensor_parallel == 48.0 * sbh, tt::tolerance(1e-12));
    BOOST_TEST(fp32.layer.attention_core == 9.0 * 96.0 * 2048.0 * 2048.0, tt::tolerance(1e-12));
    const MemoryTerms sp = terms(
        gpt3_175b, R"("tensor_parallel": 8, "sequence_parallel": true, "activation_bytes": 4)");
    BOOST_TEST(sp.activation_bytes[PPB_KIND_NONE] == 26.25 * sbh, tt::tolerance(1e-12));
    BOOST_TEST(sp.activation_bytes[PPB_KIND_SELECT] == 8.25 * sbh, tt::tolerance(1e-12));
    BOOST_TEST(sp.activation_bytes[PPB_KIND_FULL] == 0.5 * sbh, tt::tolerance(1e-12));
}

// The head keeps its 1-byte dropout mask; the tail the final norm's and the LM head's 4-byte
// inputs and the loss's fp32 logits (4sbV/t, as in 16 bits). Tensor.float() on fp32 logits
// returns them as they are and the cross entropy turns them into its softmax in place
// (megatron/core/tensor_parallel/cross_entropy.py, calculate_logits_max and
// calculate_predicted_logits, at commit adfb8ec7926215bfd0d5120aaf6b080de224d328): no copy at
// the loss unless logits_transient_bytes says so. One layer's backward: the score and probability
// gradients 2 x 4as^2b/t (384 MB at t = 8) and the MLP's 2 x 4sbF/t (96 MB).
BOOST_AUTO_TEST_CASE(the_ends_and_the_backward_gradients) {
    const double sbh = 2048.0 * 12288.0;
    const double sbV = 2048.0 * 51200.0;
    const MemoryTerms fp32 = terms(gpt3_175b, R"("tensor_parallel": 8, "activation_bytes": 4)");
    BOOST_TEST(fp32.head_activation_bytes == sbh);
    BOOST_TEST(fp32.tail_activation_bytes == 8.0 * sbh + 4.0 * sbV / 8.0, tt::tolerance(1e-12));
    BOOST_TEST(fp32.tail_logits_bytes == 4.0 * sbV / 8.0, tt::tolerance(1e-12));
    BOOST_TEST(fp32.tail_transient_bytes == 0.0);
    BOOST_TEST(fp32.layer_transient_bytes == (384.0 + 96.0) * MiB, tt::tolerance(1e-12));
    const MemoryTerms given = terms(
        gpt3_175b, R"("tensor_parallel": 8, "activation_bytes": 4, "logits_transient_bytes": 4)");
    BOOST_TEST(given.tail_transient_bytes == 4.0 * sbV / 8.0, tt::tolerance(1e-12));
    // 16 bits: the 16-bit logits beside their fp32 copy, and half the gradients.
    const MemoryTerms sixteen = terms(gpt3_175b, R"("tensor_parallel": 8)");
    BOOST_TEST(sixteen.tail_transient_bytes == 2.0 * sbV / 8.0, tt::tolerance(1e-12));
    BOOST_TEST(sixteen.layer_transient_bytes == 240.0 * MiB, tt::tolerance(1e-12));
}

// Megatron-LM's native fused loss (--cross-entropy-loss-fusion) returns new tensors from its
// compiled steps: one more fp32 logits-sized buffer at the loss, by default; Transformer Engine's
// kernels (cross_entropy_fusion_impl "te") none; a given logits_transient_bytes stands.
BOOST_AUTO_TEST_CASE(the_native_fused_loss_holds_one_more_fp32_buffer) {
    const double sbV = 2048.0 * 51200.0;
    const MemoryTerms fused =
        terms(gpt3_175b, R"("tensor_parallel": 8, "cross_entropy_loss_fusion": true)");
    BOOST_TEST(fused.tail_transient_bytes == (2.0 + 4.0) * sbV / 8.0, tt::tolerance(1e-12));
    const MemoryTerms te = terms(gpt3_175b, R"("tensor_parallel": 8, "cross_entropy_loss_fusion":
                                    true, "cross_entropy_fusion_impl": "te")");
    BOOST_TEST(te.tail_transient_bytes == 2.0 * sbV / 8.0, tt::tolerance(1e-12));
    const MemoryTerms fp32 =
        terms(gpt3_175b,
              R"("tensor_parallel": 8, "activation_bytes": 4, "cross_entropy_loss_fusion": true)");
    BOOST_TEST(fp32.tail_transient_bytes == 4.0 * sbV / 8.0, tt::tolerance(1e-12));
    const MemoryTerms given =
        terms(gpt3_175b, R"("tensor_parallel": 8, "cross_entropy_loss_fusion": true,
                            "logits_transient_bytes": 3)");
    BOOST_TEST(given.tail_transient_bytes == 3.0 * sbV / 8.0, tt::tolerance(1e-12));
    BOOST_CHECK_EXCEPTION(
        terms(gpt3_175b, R"("tensor_parallel": 8, "cross_entropy_fusion_impl": "linear")"),
        ppb::plugin::InvalidInput, [](const ppb::plugin::InvalidInput& e) {
            return std::string(e.what()).find("cross_entropy_fusion_impl") != std::string::npos;
        });
}

// moe.token_dispatcher is the time model's (DeepEP's buffers are not modelled): the memory is the
// same with either dispatcher, and another name is refused.
BOOST_AUTO_TEST_CASE(the_token_dispatcher_changes_no_memory) {
    const std::string moe =
        R"("tensor_parallel": 8, "sequence_parallel": true,
            "moe": {"num_experts": 8, "top_k": 2, "expert_parallel": 8,
              "expert_tensor_parallel": 1)";
    const MemoryTerms alltoall = terms(gpt3_175b, moe + "}");
    const MemoryTerms flex = terms(gpt3_175b, moe + R"(, "token_dispatcher": "flex"})");
    BOOST_TEST((flex.activation_bytes == alltoall.activation_bytes));
    BOOST_TEST(flex.layer_parameters == alltoall.layer_parameters);
    BOOST_CHECK_EXCEPTION(terms(gpt3_175b, moe + R"(, "token_dispatcher": "allgather"})"),
                          ppb::plugin::InvalidInput, [](const ppb::plugin::InvalidInput& e) {
                              return std::string(e.what()).find("moe.token_dispatcher") !=
                                         std::string::npos &&
                                     std::string(e.what()).find("allgather") != std::string::npos;
                          });
}

// With the fp32 softmax of a 16-bit run (softmax_in_fp32: 7 bytes with dropout) the layer keeps
// an fp32 output and a 16-bit cast; in fp32 there is no cast: the option changes nothing and
// says so.
BOOST_AUTO_TEST_CASE(softmax_in_fp32_has_nothing_to_add_in_fp32) {
    const MemoryTerms plain = terms(gpt3_175b, R"("tensor_parallel": 1, "activation_bytes": 4)");
    const MemoryTerms fused =
        terms(gpt3_175b, R"("tensor_parallel": 1, "activation_bytes": 4, "softmax_in_fp32": true)");
    BOOST_TEST(fused.layer.attention_core == plain.layer.attention_core);
    const auto warnings = warnings_of(
        gpt3_175b, R"("tensor_parallel": 1, "activation_bytes": 4, "softmax_in_fp32": true)");
    BOOST_TEST_REQUIRE(warnings.size() == 1u);
    BOOST_TEST(contains(warnings.front(), "softmax_in_fp32 has no effect with activation_bytes 4"));
    BOOST_TEST(
        terms(gpt3_175b, R"("tensor_parallel": 1, "softmax_in_fp32": true)").layer.attention_core ==
        7.0 * 96.0 * 2048.0 * 2048.0);
}

// Megatron-LM's CI proxy, tensor by tensor (sb = 1024 tokens, one micro-batch, t = 1). A dense
// layer keeps:
//   replicated: the two norms' fp32 inputs 2 x 4sbh; the two down-projections' FP8 inputs
//     2 x 1sbh (Transformer Engine Linear, tensorwise); linear_q_up_proj's fp32 input and its
//     fused norm's FP8 output (4 + 1) x 256; the kv latent 4 x (128 + 64) and its norm's FP8
//     output 1 x 128; fc1's FP8 norm output 1sbh: 11 x 512 + 2176 = 7808 bytes a token;
//   split: Q and K 4 x 8 x 192 each, V 4 x 8 x 128, the output projection's fp32 input (it saves
//     its original input) 4 x 1024, the SwiGLU's fp32 input 4 x 2 x 2048, fc2's FP8 input
//     1 x 2048: 38 912 bytes a token;
//   the attention core: Transformer Engine's unfused attention runs an fp32 softmax through the
//     torch path and keeps its fp32 output (transformer_engine/pytorch/attention/
//     dot_product_attention/softmax.py at commit 2e559f062497bef768dfbe9d7e45548fadeca80a,
//     the one Megatron-LM's uv.lock pins), 4 x a s^2 b = 32 768 bytes a token.
// An MoE layer keeps the same attention half and norms, its MoE input 4sbh (the router's), the
// shared expert's FP8 copy 1sbh, the router's fp32 scores and map 5 x 8, the shared expert's
// (4 x 2 + 1) x 1024; its 4sb routed tokens the grouped linear's FP8 input 1 x 512, the
// activation's fp32 input 4 x 2 x 1024 and fc2's FP8 input 1 x 1024 (9728 bytes a routed token;
// the fused weighted SwiGLU keeps nothing more for the routing weights).
BOOST_AUTO_TEST_CASE(the_ci_proxy_tensor_by_tensor) {
    const double sb = 1024.0;
    const MemoryTerms t = terms(proxy, "");
    BOOST_TEST(t.layer.replicated == 7808.0 * sb);
    BOOST_TEST(t.layer.tensor_parallel == 38912.0 * sb);
    BOOST_TEST(t.layer.attention_core == 32768.0 * sb);
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] == (7808.0 + 38912.0 + 32768.0) * sb);
    BOOST_TEST_REQUIRE(t.moe.has_value());
    BOOST_TEST(t.moe->layer.replicated == (15.0 * 512.0 + 2176.0 + 40.0) * sb);
    BOOST_TEST(t.moe->layer.tensor_parallel == (20480.0 + 9216.0) * sb);
    BOOST_TEST(t.moe->routed_experts == 4.0 * sb * 9728.0);
    BOOST_TEST(t.moe->activation_bytes[PPB_KIND_NONE] ==
               (9896.0 + 29696.0 + 32768.0 + 38912.0) * sb);
    // The same run in bf16: every fp32 tensor above at 2 bytes, the FP8 ones and the router's
    // unchanged: a dense layer 2 x 512 x 2 + 2 x 512 + (2 + 1) x 256 + 2 x 192 + 128 + 512 =
    // 4864, 2 x 8 x 192 x 2 + 2 x 1024 x 2 + 2 x 2 x 2048 + 2048 = 20 480 and 16 384 a token.
    const MemoryTerms sixteen = terms(proxy, R"("activation_bytes": 2)");
    BOOST_TEST(sixteen.layer.replicated == 4864.0 * sb);
    BOOST_TEST(sixteen.layer.tensor_parallel == 20480.0 * sb);
    BOOST_TEST(sixteen.layer.attention_core == 16384.0 * sb);
}

// activation_bytes is 2 (bf16, fp16) or 4 (fp32); 2 is what an options file without it means.
BOOST_AUTO_TEST_CASE(the_option_takes_2_or_4) {
    const MemoryTerms given = terms(llama2_70b, R"("tensor_parallel": 8, "activation_bytes": 2)");
    const MemoryTerms absent = terms(llama2_70b, R"("tensor_parallel": 8)");
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        BOOST_TEST(given.activation_bytes[k] == absent.activation_bytes[k]);
    BOOST_TEST(given.tail_transient_bytes == absent.tail_transient_bytes);
    BOOST_TEST(
        AnalyticModel(options_json(llama2_70b, R"("tensor_parallel": 1, "activation_bytes": 4.0)"))
            .options()
            .activation_bytes == 4.0);
    for (const std::string_view bad : {R"("activation_bytes": 3)", R"("activation_bytes": 1)",
                                       R"("activation_bytes": "4")", R"("activation_bytes": 0)"}) {
        const std::string message =
            rejection(options_json(llama2_70b, R"("tensor_parallel": 1, )" + std::string(bad)));
        BOOST_TEST(contains(message,
                            "analytic option 'activation_bytes' must be 2 (bf16, fp16 "
                            "activations) or 4 (fp32), got "),
                   message);
    }
    BOOST_TEST(contains(
        rejection(options_json(llama2_70b, R"("tensor_parallel": 1, "activation_byte": 4)")),
        "did you mean 'activation_bytes'"));
}

// The report says which activations it counts.
BOOST_AUTO_TEST_CASE(the_report_names_the_dtype) {
    const AnalyticModel model(
        options_json(llama2_70b, R"("tensor_parallel": 1, "activation_bytes": 4)"));
    const boost::json::object report = boost::json::parse(model.report()).as_object();
    const auto& assumptions = report.at("diagnostics").at("assumptions").as_array();
    BOOST_TEST(contains(std::string(assumptions.at(0).as_string()),
                        "activations are fp32 (activation_bytes 4: 4 bytes per element)"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fp32_tests
