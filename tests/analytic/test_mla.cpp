// Multi-latent attention (the `mla` option): parameters against Megatron-LM's own count
// (megatron/training/theoretical_memory_usage.py) and the published DeepSeek-V3 size, the
// activations of one layer against the tensors Megatron-LM's MLASelfAttention and Transformer
// Engine's modules save for backward, with and without recomputing the up-projections, and bad
// `mla` and `recompute_modules` options.
#include "analytic_support.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace analytic_test;
using ppb::analytic::MemoryTerms;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace mla_tests {

namespace {

// DeepSeek-V3 (its published config; test_moe.cpp has the MoE part) with its MLA: q_lora_rank
// 1536, kv_lora_rank 512, 128 heads of qk_head_dim 128 + qk_pos_emb_head_dim 64, v_head_dim 128.
constexpr std::string_view deepseek_v3_mla =
    R"("hidden_size": 7168, "num_attention_heads": 128, "ffn_hidden_size": 18432,
       "num_layers": 61, "seq_length": 4096, "micro_batch_size": 1, "vocab_size": 129280,
       "tensor_parallel": 1,
       "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128,
               "qk_pos_emb_head_dim": 64, "v_head_dim": 128},
       "moe": {"num_experts": 256, "top_k": 8, "moe_ffn_hidden_size": 2048,
               "shared_experts": 1, "first_k_dense": 3})";

// The DeepSeek-V3 proxy of Megatron-LM's CI (tests/functional_tests/test_cases/moe/
// gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental/model_config.yaml at commit
// 18e953661ea2b151361d5d0e7d14ce1f4a5cf75a), its attention and a dense SwiGLU MLP: h = 1024,
// 32 heads, the same MLA widths as DeepSeek-V3, s = 4096, b = 4, t = 2 with sequence
// parallelism, no dropout, Transformer Engine's unfused attention.
constexpr std::string_view ci_proxy =
    R"("hidden_size": 1024, "num_attention_heads": 32, "ffn_hidden_size": 4096,
       "num_layers": 16, "seq_length": 4096, "micro_batch_size": 4, "vocab_size": 51712,
       "tensor_parallel": 2, "sequence_parallel": true, "dropout": false,
       "flash_attention": false,
       "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128,
               "qk_pos_emb_head_dim": 64, "v_head_dim": 128})";

// Megatron-LM's count of one MLA layer's attention parameters: self_attn_term of
// compute_weight_and_optimizer_memory in megatron/training/theoretical_memory_usage.py
// (NVIDIA/Megatron-LM commit d98e8a64ddf34856e74b24714e3bedb2f5a39553), with norm_size 1
// (RMSNorm: one weight per channel):
//   q_term  = q_lora_rank * (h + a * (qk_head_dim + qk_pos_emb_head_dim) + norm_size)
//             (without q_lora_rank: h * a * (qk_head_dim + qk_pos_emb_head_dim))
//   kv      = kv_lora_rank * (h + a * (qk_head_dim + v_head_dim) + norm_size)
//             + h * qk_pos_emb_head_dim
//   o proj  = a * v_head_dim * h
double megatron_self_attn_term(double h, double a, double q_lora_rank, double kv_lora_rank,
                               double qk_head_dim, double qk_pos_emb_head_dim, double v_head_dim) {
    constexpr double norm_size = 1.0;
    const double q_term =
        q_lora_rank == 0.0
            ? h * a * (qk_head_dim + qk_pos_emb_head_dim)
            : q_lora_rank * (h + a * (qk_head_dim + qk_pos_emb_head_dim) + norm_size);
    return q_term + kv_lora_rank * (h + a * (qk_head_dim + v_head_dim) + norm_size) +
           h * qk_pos_emb_head_dim + a * v_head_dim * h;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_latent_attention)

// Megatron-LM's self_attn_term for DeepSeek-V3: 1536 * (7168 + 128 * 192 + 1) = 48 760 320,
// 512 * (7168 + 128 * 256 + 1) + 7168 * 64 = 20 906 496, 128 * 128 * 7168 = 117 440 512:
// 187 107 328 per layer. The model is test_moe.cpp's DeepSeek-V3 with multi-head attention of
// 4h^2 = 205 520 896 per layer, 61 * 18 413 568 = 1 123 227 648 fewer with MLA:
// 671 026 404 352 in all (the published 671 B without the MTP module), 37 552 282 624 active.
BOOST_AUTO_TEST_CASE(deepseek_v3_attention_is_megatrons_count_and_the_model_671_billion) {
    const double megatron = megatron_self_attn_term(7168, 128, 1536, 512, 128, 64, 128);
    BOOST_TEST(megatron == 187107328.0);
    const MemoryTerms t = terms(deepseek_v3_mla, "");
    BOOST_TEST(t.attention.split_parameters + t.attention.replicated_parameters == megatron);
    BOOST_TEST(t.model_parameters == 671026404352.0, tt::tolerance(1e-15));
    BOOST_TEST(t.model_parameters == 671e9, tt::tolerance(0.0001));
    BOOST_TEST(t.active_parameters == 37552282624.0, tt::tolerance(1e-15));
    // An MoE layer's dense part on its one rank: MLA, the shared expert 3 * 7168 * 2048 =
    // 44 040 192, two norms 14 336 and the router 7168 * 256 = 1 835 008.
    BOOST_TEST(t.moe->dense_parameters == 187107328.0 + 44040192.0 + 14336.0 + 1835008.0);
}

// Without a query latent (DeepSeek-V2-Lite: h = 2048, 16 heads, kv_lora_rank 512) the query is
// projected from h directly: Megatron-LM's q_term 2048 * 16 * 192 = 6 291 456. Without
// qk_layernorm there are no latent norms: norm_size drops out of the kv term.
BOOST_AUTO_TEST_CASE(without_a_query_latent_the_query_is_projected_from_h) {
    const MemoryTerms t = terms(
        R"("hidden_size": 2048, "num_attention_heads": 16, "ffn_hidden_size": 10944,
           "num_layers": 27, "seq_length": 4096, "micro_batch_size": 1, "vocab_size": 102400,
           "tensor_parallel": 1)",
        R"("mla": {"kv_lora_rank": 512, "qk_head_dim": 128, "qk_pos_emb_head_dim": 64,
                   "v_head_dim": 128, "qk_layernorm": false})");
    const double megatron = megatron_self_attn_term(2048, 16, 0, 512, 128, 64, 128) - 512.0;
    BOOST_TEST(megatron == 6291456.0 + 512.0 * (2048 + 16 * 256) + 2048.0 * 64 + 16.0 * 128 * 2048);
    BOOST_TEST(t.attention.split_parameters + t.attention.replicated_parameters == megatron);
}

// One tensor-parallel rank of the CI proxy (t = 2). MLASelfAttention builds linear_q_down_proj
// (h -> q_lora_rank) and linear_kv_down_proj (h -> kv_lora_rank + qk_pos_emb_head_dim) as
// Transformer Engine linears with parallel_mode 'duplicated' (whole on every rank), the two
// latent norms replicated, and the up-projections and the output projection split over t:
//   whole on each rank  1024 * 1536 + 1536 + 1024 * 576 + 512           =  2 164 736
//   split               1536 * 32 * 192 + 512 * 32 * 256 + 32 * 128 * 1024 = 17 825 792
// so 17 825 792 / 2 + 2 164 736 = 11 077 632 attention parameters per rank, and the layer adds
// its SwiGLU MLP 3 * 1024 * 4096 / 2 = 6 291 456 and two norms 2048: 17 371 136. Megatron-LM's
// estimate divides all of the attention by t (tp_sharded_params), 9 995 264: 1 082 368 fewer.
BOOST_AUTO_TEST_CASE(the_down_projections_are_whole_on_every_tensor_parallel_rank) {
    const MemoryTerms t = terms(ci_proxy, "");
    BOOST_TEST(t.attention.replicated_parameters == 2164736.0);
    BOOST_TEST(t.attention.split_parameters == 17825792.0);
    BOOST_TEST(t.attention.split_parameters + t.attention.replicated_parameters ==
               megatron_self_attn_term(1024, 32, 1536, 512, 128, 64, 128));
    BOOST_TEST(t.layer_parameters == 17371136.0);
}

// What one layer keeps for backward on one rank of the CI proxy, per micro-batch: t = 2 with
// sequence parallelism, so 2048 x 4 = 8192 tokens on the rank outside the attention and the MLP,
// 4096 x 4 = 16 384 with 16 heads inside; bf16, 2 bytes an element. Each tensor as the code
// saves it (Megatron-LM d98e8a64: multi_latent_attention.py, transformer_layer.py; Transformer
// Engine: LayerNormLinear saves its input and its norm's output, Linear its input):
//   input_layernorm's input                  [2048, 4, 1024]          16 MiB
//   the down-projections' input (norm out)   [2048, 4, 1024]          16 MiB
//   linear_q_up_proj's input (q latent)      [2048, 4, 1536]          24 MiB
//   its fused q norm's output                [2048, 4, 1536]          24 MiB
//   linear_kv_down_proj's output, kept alive [2048, 4, 512 + 64]       9 MiB
//     by linear_kv_up_proj's input (a view)
//   its fused kv norm's output               [2048, 4, 512]            8 MiB
//   core attention's Q and K                 [4096, 4, 16, 192] x 2  192 MiB
//   core attention's V                       [4096, 4, 16, 128]       64 MiB
//   linear_proj's input (the core's output)  [4096, 4, 16 * 128]      64 MiB
//   unfused softmax output (no dropout)      [4, 16, 4096, 4096]    2048 MiB
//   pre-MLP norm input, fc1's norm output    [2048, 4, 1024] x 2      32 MiB
//   SwiGLU: fc1 output, fc2 input            [4096, 4, 2 * 2048], [4096, 4, 2048]  192 MiB
// 2689 MiB. Recomputing core attention drops the 2048 MiB; recomputing the up-projections
// (mla_up_proj) drops Q, K, V and the fused norms' outputs, 288 MiB: the checkpoint keeps its
// inputs, the q latent and the kv down-projection's output.
BOOST_AUTO_TEST_CASE(a_layer_keeps_what_mla_and_transformer_engine_save) {
    constexpr double mib = MiB;
    const MemoryTerms none = terms(ci_proxy, "");
    BOOST_TEST(none.activation_bytes[PPB_KIND_NONE] / mib == 2689.0, tt::tolerance(1e-12));
    // Megatron-LM's default recompute module, core attention.
    BOOST_TEST(none.activation_bytes[PPB_KIND_SELECT] / mib == 2689.0 - 2048.0,
               tt::tolerance(1e-12));
    const MemoryTerms up = terms(ci_proxy, R"("recompute_modules": ["mla_up_proj"])");
    BOOST_TEST(up.activation_bytes[PPB_KIND_NONE] / mib == 2689.0, tt::tolerance(1e-12));
    BOOST_TEST(up.activation_bytes[PPB_KIND_SELECT] / mib == 2689.0 - 288.0, tt::tolerance(1e-12));
    const MemoryTerms both =
        terms(ci_proxy, R"("recompute_modules": ["core_attn", "mla_up_proj"])");
    BOOST_TEST(both.activation_bytes[PPB_KIND_SELECT] / mib == 2689.0 - 2048.0 - 288.0,
               tt::tolerance(1e-12));
    // Full recompute keeps the layer's input, a sequence shard: 16 MiB.
    BOOST_TEST(both.activation_bytes[PPB_KIND_FULL] / mib == 16.0, tt::tolerance(1e-12));
    // No recompute module: 'select' keeps what 'none' does.
    const MemoryTerms nothing = terms(ci_proxy, R"("recompute_modules": [])");
    BOOST_TEST(nothing.activation_bytes[PPB_KIND_SELECT] ==
               nothing.activation_bytes[PPB_KIND_NONE]);
}

// Without sequence parallelism the latents and norms are whole on every rank (the
// down-projections run on the whole sequence): the 97 MiB of inputs, latents and norm outputs
// become 194 and the MLP's two norm tensors 64; the split tensors stay.
BOOST_AUTO_TEST_CASE(without_sequence_parallelism_the_latents_are_whole_on_every_rank) {
    const MemoryTerms t = terms(ci_proxy, R"("sequence_parallel": false)");
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 194.0 + 320.0 + 2048.0 + 64.0 + 192.0,
               tt::tolerance(1e-12));
}

// With a fused kernel there is no a*s^2 tensor, and MLA's K and V are not grouped: they have
// the query's heads (num_kv_heads has no say).
BOOST_AUTO_TEST_CASE(a_fused_kernel_keeps_q_k_v_and_its_output) {
    const MemoryTerms t = terms(ci_proxy, R"("flash_attention": true)");
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 2689.0 - 2048.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_SELECT] == t.activation_bytes[PPB_KIND_NONE]);
}

BOOST_AUTO_TEST_CASE(bad_mla_and_recompute_module_options_are_refused_by_name) {
    const auto with = [](std::string_view more) { return options_json(ci_proxy, more); };
    BOOST_TEST(contains(rejection(with(R"("mla": 3)")), "'mla' must be an object"));
    BOOST_TEST(contains(rejection(with(R"("mla": {"kv_lora_rank": 512, "qk_head_dim": 128,
                                                   "qk_pos_emb_head_dim": 64})")),
                        "missing required option 'mla.v_head_dim'"));
    BOOST_TEST(contains(rejection(with(R"("mla": {"kv_lora_rank": -512, "qk_head_dim": 128,
                                          "qk_pos_emb_head_dim": 64, "v_head_dim": 128})")),
                        "'mla.kv_lora_rank' must be an integer from 1"));
    BOOST_TEST(contains(rejection(with(R"("mla": {"kv_lora_rank": 512.5, "qk_head_dim": 128,
                                          "qk_pos_emb_head_dim": 64, "v_head_dim": 128})")),
                        "'mla.kv_lora_rank' must be an integer"));
    BOOST_TEST(contains(rejection(with(R"("mla": {"kv_lora_rank": 512, "qk_head_dim": "128",
                                          "qk_pos_emb_head_dim": 64, "v_head_dim": 128})")),
                        "'mla.qk_head_dim' must be an integer"));
    BOOST_TEST(contains(rejection(with(R"("mla": {"kv_lora_rank": 512, "qk_head_dim": 128,
                                          "qk_pos_emb_head_dim": 64, "v_head_dim": 128,
                                          "qk_layernorm": 1})")),
                        "'mla.qk_layernorm' must be true or false"));
    BOOST_TEST(contains(rejection(with(R"("mla": {"kv_lora_rank": 512, "qk_head_dim": 128,
                                          "qk_pos_emb_head_dim": 64, "v_head_dim": 128,
                                          "q_lora": 1536})")),
                        "'mla' has no member 'q_lora' (did you mean 'q_lora_rank'?)"));
    BOOST_TEST(contains(rejection(with(R"("num_kv_heads": 8)")), "num_kv_heads 8 with 'mla'"));
    BOOST_TEST(contains(rejection(with(R"("recompute_modules": "core_attn")")),
                        "'recompute_modules' must be a list of module names"));
    BOOST_TEST(contains(rejection(with(R"("recompute_modules": [1])")),
                        "'recompute_modules entry 0' must be a module name, got 1"));
    BOOST_TEST(contains(rejection(with(R"("recompute_modules": ["core_atn"])")),
                        "no module 'core_atn' (did you mean 'core_attn'?)"));
    BOOST_TEST(contains(rejection(options_json(llama2_70b, R"("tensor_parallel": 8,
                                               "recompute_modules": ["mla_up_proj"])")),
                        "there is no 'mla'"));
    BOOST_TEST(contains(rejection(with(R"("mlaa": {})")), "did you mean 'mla'?"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace mla_tests
