// Multi-token prediction (mtp_num_layers): the MTP layers' parameters against DeepSeek-V3's
// published MTP module and Megatron-LM's own count, what a stage holding them keeps (the tensors
// Megatron-LM's MultiTokenPredictionLayer saves), where they live (the last stage, or a layout's
// earlier one), the extra logits on the last stage, and the parts of such a stage.
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
namespace mtp_tests {

namespace {

// A GPT of h = 1024, 16 heads, a GeLU MLP of 4h, s = 2048, b = 1, V = 32768 (untied), t = 2
// with sequence parallelism, flash attention, no dropout, bf16 with fp32 gradients and Adam
// (18 bytes a parameter), one MTP layer; the terms the formulas leave out turned off.
constexpr std::string_view gpt =
    R"("hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
       "num_layers": 8, "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32768,
       "tensor_parallel": 2, "sequence_parallel": true, "gated_mlp": false,
       "flash_attention": true, "dropout": false, "runtime_mb": 0,
       "logits_transient_bytes": 0, "backward_transient": false, "relative_std_error": 0,
       "mtp_num_layers": 1)";

constexpr double mb = MiB;

// Its terms, worked out from the tensors (2 bytes an element, sbh = 2048 x 1024):
//   a layer on a rank: 4h^2/2 + 2 * 4h^2/2 + 2h = 6 293 504 parameters; activations
//     (8 + 24) sbh / 2 bytes = 32 MiB per micro-batch (test_formulas.cpp's family);
//   an MTP layer's own parameters: eh_proj 2h x h / 2 = 1 048 576, enorm, hnorm and its final
//     norm 3h = 3072; its own activations: enorm's and hnorm's inputs (2 + 2), eh_proj's input
//     [s/2, b, 2h] (4), the final norm's input (2): 10 sbh / 2 bytes = 10 MiB;
//   the embedding's copy on the MTP stage: 32768 x 1024 / 2 = 16 777 216 parameters;
//   on the last stage per micro-batch: the MTP head's input 2 sbh / 2 = 2 MiB and its logits'
//     fp32 softmax 4 x 2048 x 32768 / 2 B = 128 MiB.
constexpr double layer_parameters = 6293504.0;
constexpr double mtp_own_parameters = 1048576.0 + 3072.0;
constexpr double embedding_copy = 16777216.0;
constexpr double bytes = 18.0;

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_token_prediction)

BOOST_AUTO_TEST_CASE(the_mtp_layers_terms_are_the_tensors_megatron_keeps) {
    const MemoryTerms t = terms(gpt, "");
    BOOST_TEST(t.layer_parameters == layer_parameters);
    BOOST_TEST(t.mtp->own_parameters == mtp_own_parameters);
    BOOST_TEST(t.mtp->embedding_parameters == embedding_copy);
    BOOST_TEST(t.mtp->own_activation_bytes[PPB_KIND_NONE] / mb == 10.0, tt::tolerance(1e-12));
    BOOST_TEST(t.activation_bytes[PPB_KIND_NONE] / mb == 32.0, tt::tolerance(1e-12));
    BOOST_TEST(t.mtp->tail_activation_bytes / mb == 130.0, tt::tolerance(1e-12));
    BOOST_TEST(t.mtp->tail_logits_bytes / mb == 128.0, tt::tolerance(1e-12));
    // Full recompute checkpoints the module from its two inputs, the hidden states and the
    // shifted tokens' embedding: 4 sbh / 2 bytes.
    BOOST_TEST(t.mtp->own_activation_bytes[PPB_KIND_FULL] / mb == 4.0, tt::tolerance(1e-12));
}

// The last of 4 stages, 2 'none' layers, 3 micro-batches in flight (a chunk's count):
//   layers   2 x 6 293 504 x 18 B + 2 x 32 MiB x 3
//   LM head  (1024 + 16 777 216) x 18 B + (final norm input 2 + LM head input 2 + logits 128
//            MiB) x 3
//   MTP      (6 293 504 + 1 051 648 + 16 777 216) x 18 B + (32 + 10) MiB x 3, and its head's
//            input and logits on this stage 130 MiB x 3
BOOST_AUTO_TEST_CASE(the_last_stage_holds_the_mtp_layer_its_embedding_copy_and_logits) {
    const AnalyticModel model(options_json(gpt, ""));
    ppb_chunk c = none_chunk(2, 3);
    const ppb_placement last{4, 3, 1, &c};
    const double expected = (2.0 * layer_parameters * bytes) / mb + 2.0 * 32.0 * 3.0 +
                            (1024.0 + embedding_copy) * bytes / mb + 132.0 * 3.0 +
                            (layer_parameters + mtp_own_parameters + embedding_copy) * bytes / mb +
                            (32.0 + 10.0) * 3.0 + 130.0 * 3.0;
    BOOST_TEST(model.predict(last) == expected, tt::tolerance(1e-12));
    BOOST_TEST(prediction_part(model, last, "mtp") ==
                   (layer_parameters + mtp_own_parameters + embedding_copy) * bytes / mb,
               tt::tolerance(1e-12));
    BOOST_TEST(prediction_part(model, last, "mtp_activations") == 42.0 * 3.0, tt::tolerance(1e-12));
    BOOST_TEST(prediction_part(model, last, "logits") == 2.0 * 128.0 * 3.0, tt::tolerance(1e-12));
    // Stage 2 holds none of it.
    const ppb_placement before{4, 2, 1, &c};
    BOOST_TEST(prediction_part(model, before, "mtp") == 0.0);
    BOOST_TEST(model.predict(before) == 2.0 * layer_parameters * bytes / mb + 2.0 * 32.0 * 3.0,
               tt::tolerance(1e-12));
}

// A layout ending "m|L" puts the MTP layer on the stage before the last (mtp_stage_offset 1):
// that stage holds it, the last stage keeps its head's input and logits, and its final norm
// runs on the concatenated hidden states (2 MiB more per micro-batch).
BOOST_AUTO_TEST_CASE(a_layout_can_put_the_mtp_layers_on_an_earlier_stage) {
    const AnalyticModel model(options_json(gpt, R"("mtp_stage_offset": 1)"));
    ppb_chunk c = none_chunk(2, 1);
    const ppb_placement last{4, 3, 1, &c};
    const ppb_placement before{4, 2, 1, &c};
    const AnalyticModel plain(options_json(gpt, ""));
    BOOST_TEST(prediction_part(model, last, "mtp") == 0.0);
    BOOST_TEST(prediction_part(model, before, "mtp") == prediction_part(plain, last, "mtp"),
               tt::tolerance(1e-12));
    BOOST_TEST(model.predict(last) == plain.predict(last) - prediction_part(plain, last, "mtp") -
                                          prediction_part(plain, last, "mtp_activations") + 2.0,
               tt::tolerance(1e-12));
    // Two stages: the offset is the first stage; one: refused.
    ppb_chunk d = none_chunk(1, 1);
    const ppb_placement only{1, 0, 1, &d};
    try {
        (void)model.predict(only);
        BOOST_ERROR("accepted");
    } catch (const ppb::plugin::InvalidInput& e) {
        BOOST_TEST(contains(e.what(), "1 stages before the last (option mtp_stage_offset)"));
    }
}

// Megatron-LM's GPTModel gives the MTP chunk its own LanguageModelEmbedding unless it is the
// first chunk of the first stage (pre_process): one stage of one chunk shares it, one stage of
// two chunks (the MTP layer in chunk 1) does not.
BOOST_AUTO_TEST_CASE(the_embedding_copy_is_left_out_only_where_the_model_begins) {
    const AnalyticModel model(options_json(gpt, ""));
    ppb_chunk one = none_chunk(2, 1);
    const ppb_placement single{1, 0, 1, &one};
    BOOST_TEST(prediction_part(model, single, "mtp") ==
                   (layer_parameters + mtp_own_parameters) * bytes / mb,
               tt::tolerance(1e-12));
    ppb_chunk two[2] = {none_chunk(1, 2), none_chunk(1, 1)};
    const ppb_placement chunks{1, 0, 2, two};
    BOOST_TEST(prediction_part(model, chunks, "mtp") ==
                   (layer_parameters + mtp_own_parameters + embedding_copy) * bytes / mb,
               tt::tolerance(1e-12));
    // Its activations follow the last chunk's in-flight count.
    BOOST_TEST(prediction_part(model, chunks, "mtp_activations") == 42.0, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(full_recompute_keeps_only_the_modules_inputs) {
    const AnalyticModel model(options_json(gpt, R"("mtp_recompute": "full")"));
    ppb_chunk c = none_chunk(1, 2);
    const ppb_placement last{2, 1, 1, &c};
    BOOST_TEST(prediction_part(model, last, "mtp_activations") == 4.0 * 2.0, tt::tolerance(1e-12));
    const AnalyticModel selective(options_json(gpt, R"("mtp_recompute": "select")"));
    // Flash attention: 'select' keeps what 'none' keeps.
    BOOST_TEST(prediction_part(selective, last, "mtp_activations") == 42.0 * 2.0,
               tt::tolerance(1e-12));
}

// DeepSeek-V3's MTP module (its technical report: 685 B parameters, 671 B of the main model and
// 14 B of the MTP module). Megatron-LM builds one MTP layer from the decoder's last layer's spec
// (an MoE layer; megatron/core/models/gpt/gpt_layer_specs.py, get_gpt_mtp_block_spec, commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553): with MLA 11 525 699 584 - 18 413 568 =
// 11 507 286 016 parameters, the count megatron/training/theoretical_memory_usage.py gives its
// MTP block; Megatron-LM's MultiTokenPredictionLayer adds eh_proj 2 x 7168^2 = 102 760 448 and
// three norms 21 504, which that estimate leaves out. With test_mla.cpp's 671 026 404 352:
// 682 636 472 320. DeepSeek's 685 B also counts the MTP module's own copies of the embedding and
// the output head, 2 x 129 280 x 7168 = 1 853 358 080, which Megatron-LM shares with the model:
// 684 489 830 400 = 685 B (-0.07 %).
BOOST_AUTO_TEST_CASE(deepseek_v3_with_its_mtp_module_has_685_billion_parameters) {
    const MemoryTerms t = terms(
        R"("hidden_size": 7168, "num_attention_heads": 128, "ffn_hidden_size": 18432,
           "num_layers": 61, "seq_length": 4096, "micro_batch_size": 1, "vocab_size": 129280,
           "tensor_parallel": 1,
           "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128,
                   "qk_pos_emb_head_dim": 64, "v_head_dim": 128},
           "moe": {"num_experts": 256, "top_k": 8, "moe_ffn_hidden_size": 2048,
                   "shared_experts": 1, "first_k_dense": 3})",
        R"("mtp_num_layers": 1)");
    BOOST_TEST(t.mtp->moe);
    BOOST_TEST(t.model_parameters == 671026404352.0 + 11507286016.0 + 102760448.0 + 21504.0,
               tt::tolerance(1e-15));
    BOOST_TEST(t.model_parameters == 682636472320.0, tt::tolerance(1e-15));
    BOOST_TEST(t.model_parameters + 2.0 * 129280.0 * 7168.0 == 685e9, tt::tolerance(0.001));
}

BOOST_AUTO_TEST_CASE(bad_mtp_options_are_refused_by_name) {
    BOOST_TEST(contains(rejection(options_json(gpt, R"("mtp_num_layers": -1)")),
                        "'mtp_num_layers' must be an integer"));
    BOOST_TEST(contains(rejection(options_json(gpt, R"("mtp_num_layers": "1")")),
                        "'mtp_num_layers' must be an integer"));
    BOOST_TEST(contains(rejection(options_json(gpt, R"("mtp_recompute": "some")")),
                        "'mtp_recompute' must be a recompute kind"));
    BOOST_TEST(contains(rejection(options_json(gpt, R"("mtp_stage_offset": 1.5)")),
                        "'mtp_stage_offset' must be an integer"));
    BOOST_TEST(
        contains(rejection(options_json(gpt, R"("mtp_num_layers": 0, "mtp_stage_offset": 1)")),
                 "'mtp_stage_offset' without mtp_num_layers"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace mtp_tests
