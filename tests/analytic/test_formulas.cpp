// The formulas against values computed by hand from Korthikanti et al. 2022 (arXiv:2205.05198)
// for published model configurations, and parameter counts against the published model sizes.
#include "analytic_support.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace analytic_test;
using ppb::analytic::MemoryTerms;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(paper_formulas)

// GPT-3 175B (the paper's Table 3): s = 2048, b = 1, h = 12288, a = 96, t = 8.
//   sbh    = 2048 * 1 * 12288            = 25 165 824 elements
//   5as/h  = 5 * 96 * 2048 / 12288       = 80
// so, in bytes per layer per micro-batch (the paper's §4, Table 2):
//   no parallelism        sbh (34 + 80)               = 114    sbh = 2 868 903 936 B = 2736 MiB
//   tensor parallel t = 8 sbh (10 + 24/8 + 80/8)      = 23     sbh =   578 813 952 B =  552 MiB
//   tensor + sequence     sbh/8 (34 + 80)             = 14.25  sbh =   358 612 992 B =  342 MiB
//   + selective, TP only  sbh (10 + 24/8)             = 13     sbh =   327 155 712 B =  312 MiB
//   + selective, TP + SP  sbh/8 * 34                  = 4.25   sbh =   106 954 752 B =  102 MiB
//   full recompute        2sbh (TP only), 2sbh/8 (SP)          =  48 MiB,  6 MiB
constexpr double gpt3_sbh = 2048.0 * 12288.0;

BOOST_AUTO_TEST_CASE(gpt3_175b_without_parallelism_is_sbh_34_plus_5as_over_h) {
    const MemoryTerms t = terms(gpt3_175b, R"("tensor_parallel": 1)");
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] == 114.0 * gpt3_sbh, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 2736.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_SELECT] == 34.0 * gpt3_sbh, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_FULL] == 2.0 * gpt3_sbh, tt::tolerance(1e-12));
    // The three groups of the paper's 34: 10 replicated, 24 split by tensor parallelism.
    BOOST_TEST(t.layer.replicated == 10.0 * gpt3_sbh, tt::tolerance(1e-12));
    BOOST_TEST(t.layer.tensor_parallel == 24.0 * gpt3_sbh, tt::tolerance(1e-12));
    BOOST_TEST(t.layer.attention_core == 80.0 * gpt3_sbh, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(an_fp32_softmax_outside_the_fused_kernel_keeps_7as_sbh_not_5) {
    // The softmax keeps its fp32 output (4 bytes), dropout its mask (1) and the matmul dropout's
    // 16-bit output (2): 7as^2b, 7/5 of the paper's 5as^2b = 80 sbh for GPT-3; without dropout
    // the matmul keeps the 16-bit cast instead: 6as^2b, where the paper's 2as^2b is 32 sbh.
    const MemoryTerms fp32 = terms(gpt3_175b, R"("tensor_parallel": 1, "softmax_in_fp32": true)");
    BOOST_TEST(fp32.layer.attention_core == 112.0 * gpt3_sbh, tt::tolerance(1e-12));
    const MemoryTerms no_dropout =
        terms(gpt3_175b, R"("tensor_parallel": 1, "softmax_in_fp32": true, "dropout": false)");
    BOOST_TEST(no_dropout.layer.attention_core == 96.0 * gpt3_sbh, tt::tolerance(1e-12));
    // A flash kernel keeps no scores, whatever the softmax's precision.
    const MemoryTerms flash = terms(
        gpt3_175b, R"("tensor_parallel": 1, "softmax_in_fp32": true, "flash_attention": true)");
    BOOST_TEST(flash.layer.attention_core == 0.0);
}

BOOST_AUTO_TEST_CASE(gpt3_175b_tensor_parallel_is_sbh_10_plus_24_over_t_plus_5as_over_ht) {
    const MemoryTerms t = terms(gpt3_175b, R"("tensor_parallel": 8)");
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 552.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_SELECT] / MiB == 312.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_FULL] / MiB == 48.0, tt::tolerance(1e-12));
    // Without sequence parallelism there is no all-gather to recompute.
    BOOST_TEST(t.activation_bytes[PPB_KIND_COMM] == t.activation_bytes[PPB_KIND_NONE]);
    BOOST_TEST(t.activation_bytes[PPB_KIND_BOTH] == t.activation_bytes[PPB_KIND_SELECT]);
}

BOOST_AUTO_TEST_CASE(gpt3_175b_sequence_parallel_divides_everything_by_t) {
    const MemoryTerms t = terms(gpt3_175b, R"("tensor_parallel": 8, "sequence_parallel": true)");
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 342.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_SELECT] / MiB == 102.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_FULL] / MiB == 6.0, tt::tolerance(1e-12));
    // Megatron-LM re-gathers the column-parallel inputs in backward for every kind.
    BOOST_TEST(t.activation_bytes[PPB_KIND_COMM] == t.activation_bytes[PPB_KIND_NONE]);
    BOOST_TEST(t.activation_bytes[PPB_KIND_BOTH] == t.activation_bytes[PPB_KIND_SELECT]);
}

// The paper's headline (abstract, §5): sequence parallelism with selective recomputation cuts
// activation memory about 5x against tensor parallelism alone: 23 / 4.25 = 5.41 for GPT-3.
BOOST_AUTO_TEST_CASE(gpt3_175b_selective_with_sequence_parallel_saves_about_5x) {
    const MemoryTerms tp = terms(gpt3_175b, R"("tensor_parallel": 8)");
    const MemoryTerms sp = terms(gpt3_175b, R"("tensor_parallel": 8, "sequence_parallel": true)");
    const double ratio = tp.activation_bytes[PPB_KIND_NONE] / sp.activation_bytes[PPB_KIND_SELECT];
    BOOST_TEST(ratio == 23.0 / 4.25, tt::tolerance(1e-12));
    BOOST_TEST(ratio > 5.0);
    BOOST_TEST(ratio < 6.0);
}

// The paper's §4.3: embedding dropout sbh/t per micro-batch on stage 0; on the last stage the
// final norm's input 2sbh/t, the LM head's input 2sbh/t and the fp32 logits 4sbV/t:
//   GPT-3, t = 8, SP: head 25 165 824 / 8 B = 3 MiB;
//   tail 4 * 25 165 824 / 8 + 4 * 2048 * 51200 / 8 = 12 582 912 + 52 428 800 B = 62 MiB.
BOOST_AUTO_TEST_CASE(gpt3_175b_head_and_tail_activations) {
    const MemoryTerms t = terms(gpt3_175b, R"("tensor_parallel": 8, "sequence_parallel": true)");
    BOOST_TEST(t.head_activation_bytes / MiB == 3.0, tt::tolerance(1e-12));
    BOOST_TEST(t.tail_activation_bytes / MiB == 62.0, tt::tolerance(1e-12));
}

// Parameters: 12h^2 per layer (4h^2 attention, 8h^2 MLP) + 2h norm weights; V*h embedding
// (tied) + h final norm:
//   96 * (12 * 12288^2 + 2 * 12288) + 51200 * 12288 + 12288 = 174 577 692 672  ~ 175B (-0.24 %)
BOOST_AUTO_TEST_CASE(gpt3_175b_has_175_billion_parameters) {
    const MemoryTerms t = terms(gpt3_175b, R"("tensor_parallel": 8)");
    BOOST_TEST(t.model_parameters == 174577692672.0, tt::tolerance(1e-15));
    BOOST_TEST(t.model_parameters == 175e9, tt::tolerance(0.01));
    // One rank of t = 8: 12h^2 / 8 + 2h = 226 492 416 + 24 576.
    BOOST_TEST(t.layer_parameters == 226516992.0, tt::tolerance(1e-15));
    BOOST_TEST(t.embedding_parameters == 51200.0 * 12288.0 / 8.0, tt::tolerance(1e-15));
}

// The other configurations of the paper's Table 3 (s = 2048, V = 51200, GeLU MLP of 4h):
//   22B:  a = 64,  h = 6144,  L = 48  -> 22 058 000 384 ~ 22B   (+0.26 %)
//   530B: a = 128, h = 20480, L = 105 -> 529 534 922 752 ~ 530B  (-0.09 %)
//   1T:   a = 160, h = 25600, L = 128 -> 1 007 950 054 400 ~ 1T (+0.80 %)
BOOST_AUTO_TEST_CASE(the_papers_other_models_have_their_published_sizes) {
    struct Case {
        const char* shape;
        double published;
    };
    const Case cases[] = {
        {R"("hidden_size": 6144, "num_attention_heads": 64, "num_layers": 48,
            "ffn_hidden_size": 24576)",
         22e9},
        {R"("hidden_size": 20480, "num_attention_heads": 128, "num_layers": 105,
            "ffn_hidden_size": 81920)",
         530e9},
        {R"("hidden_size": 25600, "num_attention_heads": 160, "num_layers": 128,
            "ffn_hidden_size": 102400)",
         1e12},
    };
    for (const auto& c : cases) {
        const MemoryTerms t = terms(c.shape, R"("seq_length": 2048, "micro_batch_size": 1,
            "vocab_size": 51200, "tensor_parallel": 8, "gated_mlp": false,
            "untie_embeddings": false)");
        BOOST_TEST(t.model_parameters == c.published, tt::tolerance(0.01));
    }
}

// LLaMA-2 70B, t = 8 with sequence parallelism (the sample's configuration). sbh = 4096 * 8192
// = 33 554 432, sbh/t = 4 194 304 B = 4 MiB. Per layer, in units of sbh:
//   replicated  10     (norm inputs 4, QKV and MLP inputs 2 + 2, dropout masks 1 + 1)
//   split by t  29     (Q 2, K and V expanded to 64 heads 2 + 2, projection input 2,
//                       SwiGLU 6F/h = 6 * 28672 / 8192 = 21)
//   core        5as/h = 5 * 64 * 4096 / 8192 = 160
//   none   = (10 + 29 + 160) / 8 sbh = 199 * 4 MiB = 796 MiB
//   select = (10 + 29) / 8 sbh       =  39 * 4 MiB = 156 MiB
//   full   = 2 / 8 sbh               =   2 * 4 MiB =   8 MiB
constexpr std::string_view llama_sp = R"("tensor_parallel": 8, "sequence_parallel": true)";

BOOST_AUTO_TEST_CASE(llama2_70b_sequence_parallel_activations) {
    const MemoryTerms t = terms(llama2_70b, llama_sp);
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 796.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_SELECT] / MiB == 156.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_FULL] / MiB == 8.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_COMM] / MiB == 796.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_BOTH] / MiB == 156.0, tt::tolerance(1e-12));
    // Head: embedding dropout sbh/t = 4 MiB. Tail: 2 * 4 MiB + 2 * 4 MiB + 4 * 4096 * 32000 / 8
    // B = 16 MiB + 62.5 MiB.
    BOOST_TEST(t.head_activation_bytes / MiB == 4.0, tt::tolerance(1e-12));
    BOOST_TEST(t.tail_activation_bytes / MiB == 78.5, tt::tolerance(1e-12));
}

// Tensor parallelism alone: none = 10 + (29 + 160) / 8 = 33.625 sbh = 1076 MiB,
// select = 10 + 29 / 8 = 13.625 sbh = 436 MiB, full = 2 sbh = 64 MiB.
BOOST_AUTO_TEST_CASE(llama2_70b_tensor_parallel_only_activations) {
    const MemoryTerms t = terms(llama2_70b, R"("tensor_parallel": 8)");
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 1076.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_SELECT] / MiB == 436.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_FULL] / MiB == 64.0, tt::tolerance(1e-12));
}

// Flash attention stores no a*s^2 tensor and keeps K and V at 8 heads (h_kv = h/8):
//   split by t = 2 + 2 * 2/8 + 2 + 21 = 25.5; none = select = (10 + 25.5) / 8 * 32 MiB = 142 MiB.
// Without dropout, the two masks go too: (8 + 25.5) / 8 * 32 MiB = 134 MiB.
BOOST_AUTO_TEST_CASE(llama2_70b_flash_attention_and_no_dropout) {
    const MemoryTerms flash = terms(llama2_70b, R"("tensor_parallel": 8, "sequence_parallel": true,
                             "flash_attention": true)");
    BOOST_TEST(flash.activation_bytes[PPB_KIND_NONE] / MiB == 142.0, tt::tolerance(1e-12));
    BOOST_TEST(flash.activation_bytes[PPB_KIND_SELECT] / MiB == 142.0, tt::tolerance(1e-12));
    const MemoryTerms no_dropout =
        terms(llama2_70b, R"("tensor_parallel": 8, "sequence_parallel": true,
                             "flash_attention": true, "dropout": false)");
    BOOST_TEST(no_dropout.activation_bytes[PPB_KIND_NONE] / MiB == 134.0, tt::tolerance(1e-12));
    BOOST_TEST(no_dropout.head_activation_bytes == 0.0);
}

// Keeping the all-gathered inputs of the QKV and first MLP linears adds 4sbh (1 - 1/t)
// = 3.5 sbh = 112 MiB to 'none' and 'select'; 'comm' and 'both' re-gather them.
BOOST_AUTO_TEST_CASE(llama2_70b_keeping_gathered_inputs_separates_comm) {
    const MemoryTerms t = terms(llama2_70b, R"("tensor_parallel": 8, "sequence_parallel": true,
                             "keep_gathered_inputs": true)");
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / MiB == 908.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_SELECT] / MiB == 268.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_COMM] / MiB == 796.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_BOTH] / MiB == 156.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_FULL] / MiB == 8.0, tt::tolerance(1e-12));
    // The LM head's input is kept whole too (2sbh = 64 MiB): tail 8 + 64 + 62.5 MiB.
    BOOST_TEST(t.tail_activation_bytes / MiB == 134.5, tt::tolerance(1e-12));
}

// Per layer: attention h(h + 2 h_kv) + h^2 = 8192 * 10240 + 8192^2 = 150 994 944, SwiGLU
// 3 * 8192 * 28672 = 704 643 072, norms 2 * 8192. Model: 80 layers + 2 * 32000 * 8192 (untied)
// + 8192 = 68 976 648 192, the published count of LLaMA-2 70B ("69B").
BOOST_AUTO_TEST_CASE(llama2_70b_has_69_billion_parameters) {
    const MemoryTerms t = terms(llama2_70b, llama_sp);
    BOOST_TEST(t.model_parameters == 68976648192.0, tt::tolerance(1e-15));
    BOOST_TEST(t.model_parameters == 69e9, tt::tolerance(0.01));
    // One rank: (150 994 944 + 704 643 072) / 8 + 16 384 = 106 971 136.
    BOOST_TEST(t.layer_parameters == 106971136.0, tt::tolerance(1e-15));
    BOOST_TEST(t.embedding_parameters == 32768000.0, tt::tolerance(1e-15));
    BOOST_TEST(t.tail_parameters == 32768000.0 + 8192.0, tt::tolerance(1e-15));
}

// Megatron-LM's table of bytes per parameter (docs, distributed optimizer): bf16 parameters
// with fp32 gradients take 18 bytes, or 6 + 12/d with the distributed optimizer.
BOOST_AUTO_TEST_CASE(bytes_per_parameter_follow_megatron) {
    BOOST_TEST(terms(llama2_70b, llama_sp).bytes_per_parameter == 18.0);
    BOOST_TEST(terms(llama2_70b, R"("tensor_parallel": 8, "data_parallel": 4,
                                    "distributed_optimizer": true)")
                   .bytes_per_parameter == 9.0);
    // fp16 parameters and gradients, fp32 master weights + Adam: 20, or 4 + 16/d.
    BOOST_TEST(terms(llama2_70b, R"("tensor_parallel": 8, "data_parallel": 8,
                                    "distributed_optimizer": true, "grad_bytes": 2,
                                    "optimizer_bytes": 16)")
                   .bytes_per_parameter == 6.0);
}

// A non-gated MLP of F != 4h: the MLP stores 4sbF. With F = 3h, t = 1: replicated 10, split
// 8 + 12 = 20, so select = 30 sbh; a gated MLP of the same F stores 6sbF: 10 + 8 + 18 = 36 sbh.
BOOST_AUTO_TEST_CASE(mlp_generalisation) {
    constexpr std::string_view shape =
        R"("hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 3072,
           "seq_length": 512, "micro_batch_size": 2, "vocab_size": 32000, "num_layers": 4,
           "tensor_parallel": 1)";
    const double sbh = 512.0 * 2.0 * 1024.0;
    BOOST_TEST(
        terms(shape, R"("gated_mlp": false)").activation_bytes[PPB_KIND_SELECT] == 30.0 * sbh,
        tt::tolerance(1e-12));
    BOOST_TEST(terms(shape, "").activation_bytes[PPB_KIND_SELECT] == 36.0 * sbh,
               tt::tolerance(1e-12));
    // Parameters: attention 4h^2, gated MLP 3hF = 9h^2, norms 2h.
    BOOST_TEST(terms(shape, "").layer_parameters == 13.0 * 1024 * 1024 + 2 * 1024,
               tt::tolerance(1e-15));
}

// Heads wider than h/a (Megatron-LM's --kv-channels, HF's head_dim): Qwen3-30B-A3B's attention
// (its published config: h = 2048, 32 query heads and 4 key/value heads of 128 channels).
// Megatron-LM's count (megatron/training/theoretical_memory_usage.py at NVIDIA/Megatron-LM
// commit d98e8a64ddf34856e74b24714e3bedb2f5a39553): self_attn_term = 2h^2 (1 + g/a) *
// query_projection_size / h, query_projection_size = kv_channels * a (attention.py):
// 2 * 2048^2 * 1.125 * 4096 / 2048 = 18 874 368. What a layer keeps of it per token with a fused
// kernel: Q (a x 128), K and V (g x 128 each) and the core's output (a x 128), 2 bytes each.
BOOST_AUTO_TEST_CASE(kv_channels_widen_q_k_v_and_the_output_projection) {
    constexpr std::string_view qwen3_30b_attention =
        R"("hidden_size": 2048, "num_attention_heads": 32, "num_kv_heads": 4,
           "ffn_hidden_size": 6144, "seq_length": 4096, "micro_batch_size": 1,
           "vocab_size": 151936, "num_layers": 48, "tensor_parallel": 1,
           "flash_attention": true, "dropout": false)";
    const double h = 2048.0;
    const double a = 32.0;
    const double g = 4.0;
    const double query_projection_size = 128.0 * a;
    const double megatron = 2.0 * h * h * (1.0 + g / a) * query_projection_size / h;
    BOOST_TEST(megatron == 18874368.0);
    const auto wide = terms(qwen3_30b_attention, R"("kv_channels": 128)");
    BOOST_TEST(wide.attention.split_parameters == megatron);
    const double sb = 4096.0;
    BOOST_TEST(wide.attention.qkv == 2.0 * sb * (32.0 * 128.0 + 2.0 * 4.0 * 128.0));
    BOOST_TEST(wide.attention.projection == 2.0 * sb * 32.0 * 128.0);
    // The QKV linear's input is the hidden state, h wide, whatever the heads.
    BOOST_TEST(wide.attention.input == 2.0 * sb * h);
    // kv_channels equal to h/a (64) changes nothing; the default is h/a.
    const auto narrow = terms(qwen3_30b_attention, "");
    const auto same = terms(qwen3_30b_attention, R"("kv_channels": 64)");
    BOOST_TEST(same.attention.qkv == narrow.attention.qkv);
    BOOST_TEST(same.layer_parameters == narrow.layer_parameters);
    BOOST_TEST(wide.layer_parameters - narrow.layer_parameters == megatron / 2.0);
    // Biases of the QKV projection follow its width (a x 128 + 2 g x 128).
    const auto biased = terms(qwen3_30b_attention, R"("kv_channels": 128, "linear_biases": true)");
    BOOST_TEST(biased.layer_parameters - wide.layer_parameters ==
               32.0 * 128.0 + 2.0 * 4.0 * 128.0 + 2.0 * 6144.0 + 2.0 * h);
    // With kv_channels, hidden_size need not be a multiple of the heads.
    BOOST_CHECK_NO_THROW(
        (void)terms(qwen3_30b_attention, R"("hidden_size": 2000, "kv_channels": 128)"));
    BOOST_CHECK_THROW((void)terms(qwen3_30b_attention, R"("hidden_size": 2000)"),
                      ppb::plugin::InvalidInput);
}

// Query/key norms (Megatron-LM's --qk-layernorm: Attention.get_query_key_value_tensors runs
// q_layernorm and k_layernorm, Transformer Engine norms that save their inputs, at NVIDIA/
// Megatron-LM commit d98e8a64ddf34856e74b24714e3bedb2f5a39553): one layer keeps Q and K once more,
// the norms' inputs, e*s*b*(a*d + g*d) bytes, split over t. Qwen3-30B-A3B's attention:
// 2 * 4096 * (32 * 128 + 4 * 128) = 37 748 736 bytes per layer and micro-batch.
BOOST_AUTO_TEST_CASE(query_key_norms_keep_their_inputs) {
    constexpr std::string_view qwen3 =
        R"("hidden_size": 2048, "num_attention_heads": 32, "num_kv_heads": 4,
           "kv_channels": 128, "ffn_hidden_size": 6144, "seq_length": 4096,
           "micro_batch_size": 1, "vocab_size": 151936, "num_layers": 48,
           "tensor_parallel": 1, "flash_attention": true, "dropout": false)";
    const auto plain = terms(qwen3, "");
    const auto normed = terms(qwen3, R"("qk_layernorm": true)");
    BOOST_TEST(normed.attention.qk_norm_inputs == 2.0 * 4096.0 * (32.0 * 128.0 + 4.0 * 128.0));
    for (const ppb_kind kind : {PPB_KIND_NONE, PPB_KIND_SELECT}) {
        BOOST_TEST(normed.activation_bytes[kind] - plain.activation_bytes[kind] == 37748736.0);
    }
    // A fully recomputed layer keeps its input only.
    BOOST_TEST(normed.activation_bytes[PPB_KIND_FULL] == plain.activation_bytes[PPB_KIND_FULL]);
    // Split over tensor parallelism with the heads.
    const auto split = terms(qwen3, R"("qk_layernorm": true, "tensor_parallel": 4,
                                      "sequence_parallel": true)");
    const auto split_plain = terms(qwen3, R"("tensor_parallel": 4, "sequence_parallel": true)");
    BOOST_TEST(split.activation_bytes[PPB_KIND_NONE] -
                   split_plain.activation_bytes[PPB_KIND_NONE] ==
               37748736.0 / 4.0);
    // MLA has its own latent norms.
    BOOST_CHECK_THROW((void)terms(R"("hidden_size": 1024, "num_attention_heads": 8,
           "ffn_hidden_size": 4096, "seq_length": 1024, "micro_batch_size": 1,
           "vocab_size": 1024, "num_layers": 2, "tensor_parallel": 1,
           "mla": {"kv_lora_rank": 64, "qk_head_dim": 64, "qk_pos_emb_head_dim": 32,
                   "v_head_dim": 64})",
                                  R"("qk_layernorm": true)"),
                      ppb::plugin::InvalidInput);
}

BOOST_AUTO_TEST_SUITE_END()
