// The analytic model's options from Megatron-LM's arguments (ppb/importers/megatron_arguments.hpp):
// Megatron's defaults and derived sizes (the SwiGLU inner size, the padded vocabulary, the
// data-parallel size), precisions, refusals by name, and warnings for what is not modelled.
#include <ppb/importers/layout.hpp>
#include <ppb/importers/megatron_arguments.hpp>
#include <ppb/importers/megatron_flags.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb::importers;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_arguments_tests {

namespace {

std::vector<std::string> split(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    std::string word;
    while (in >> word)
        out.push_back(word);
    return out;
}

// LLaMA-3 8B as Megatron-LM's own example script trains it (examples/llama), on 64 ranks.
const std::string llama3_8b =
    "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
    "--group-query-attention --num-query-groups 8 --seq-length 8192 --max-position-embeddings "
    "8192 --micro-batch-size 1 --global-batch-size 128 --tensor-model-parallel-size 4 "
    "--pipeline-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer --bf16 "
    "--swiglu --untie-embeddings-and-output-weights --position-embedding-type rope "
    "--disable-bias-linear --attention-dropout 0.0 --hidden-dropout 0.0 --normalization RMSNorm "
    "--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Meta-Llama-3-8B "
    "--transformer-impl transformer_engine --attention-backend fused --lr 3e-4";

MegatronAnalyticOptions map(const std::string& args, MegatronRunContext context = {}) {
    const auto list = split(args);
    return analytic_options_from_megatron(list, context);
}

json::object options_of(const MegatronAnalyticOptions& r) {
    return json::parse(r.options_json).as_object();
}

bool warns_about(const MegatronAnalyticOptions& r, const std::string& text) {
    return std::ranges::any_of(
        r.warnings, [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

void expect_flag_error(const std::string& args, const std::string& text,
                       MegatronRunContext context = {}) {
    try {
        (void)map(args, context);
        BOOST_ERROR("accepted: " << args);
    } catch (const FlagError& e) {
        BOOST_TEST(std::string(e.what()).find(text) != std::string::npos, e.what());
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(megatron_arguments)

BOOST_AUTO_TEST_CASE(llama3_8b_maps_every_flag_the_model_has) {
    // The tokenizer's 128 256 entries, padded to a multiple of 128 x t = 512: 128 512.
    const auto r = map(llama3_8b, {64U, 128256U, 9U});
    const json::object o = options_of(r);
    BOOST_TEST(o.at("hidden_size").as_int64() == 4096);
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 14336);
    BOOST_TEST(o.at("num_attention_heads").as_int64() == 32);
    BOOST_TEST(o.at("num_kv_heads").as_int64() == 8);
    BOOST_TEST(o.at("seq_length").as_int64() == 8192);
    BOOST_TEST(o.at("micro_batch_size").as_int64() == 1);
    BOOST_TEST(o.at("num_layers").as_int64() == 32);
    BOOST_TEST(o.at("tensor_parallel").as_int64() == 4);
    BOOST_TEST(o.at("vocab_size").as_int64() == 128512);
    BOOST_TEST(o.at("sequence_parallel").as_bool());
    BOOST_TEST(o.at("distributed_optimizer").as_bool());
    BOOST_TEST(o.at("data_parallel").as_int64() == 8);  // 64 / (4 x 2)
    BOOST_TEST(o.at("gated_mlp").as_bool());
    BOOST_TEST(o.at("flash_attention").as_bool());
    BOOST_TEST(!o.at("dropout").as_bool());
    BOOST_TEST(o.at("untie_embeddings").as_bool());
    BOOST_TEST(!o.at("linear_biases").as_bool());
    BOOST_TEST(!o.contains("position_embeddings"));  // rotary: no parameters
    BOOST_TEST(o.at("param_bytes").as_double() == 2.0);
    BOOST_TEST(o.at("grad_bytes").as_double() == 4.0);
    BOOST_TEST(o.at("optimizer_bytes").as_double() == 12.0);
    BOOST_TEST(!o.contains("moe"));
    BOOST_TEST(r.pipeline_size == 2U);
    BOOST_TEST(r.micro_batches.value() == 16U);  // 128 / (1 x 8)
    // (the message is built whether or not the check fails: no front() of an empty list)
    BOOST_TEST(r.warnings.empty(), (r.warnings.empty() ? std::string() : r.warnings.front()));
}

BOOST_AUTO_TEST_CASE(megatron_defaults_apply_to_flags_not_given) {
    // GPT-3 345M as Megatron's CI runs it: GPT-2's BPE vocabulary (50 257, padded to 50 304),
    // 4h MLP, learned positions, biases, dropout 0.1, Transformer Engine's fused attention.
    const auto r =
        map("--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
            "--max-position-embeddings 1024 --micro-batch-size 4 --vocab-file gpt2-vocab.json "
            "--merge-file gpt2-merges.txt --bf16");
    const json::object o = options_of(r);
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 4096);
    BOOST_TEST(o.at("vocab_size").as_int64() == 50304);
    BOOST_TEST(!o.contains("num_kv_heads"));
    BOOST_TEST(o.at("position_embeddings").as_int64() == 1024);
    BOOST_TEST(o.at("linear_biases").as_bool());
    BOOST_TEST(o.at("dropout").as_bool());
    BOOST_TEST(o.at("flash_attention").as_bool());
    BOOST_TEST(!o.at("gated_mlp").as_bool());
    BOOST_TEST(!o.at("untie_embeddings").as_bool());
    BOOST_TEST(o.at("tensor_parallel").as_int64() == 1);
    BOOST_TEST(o.at("data_parallel").as_int64() == 1);
    BOOST_TEST(!r.micro_batches.has_value());
}

BOOST_AUTO_TEST_CASE(swiglu_without_ffn_hidden_size_takes_megatrons_two_thirds) {
    // int(4h * 2/3 / 64) * 64: h = 4096 gives 10 880 (not 10 922.7, nor LLaMA-7B's 11 008).
    const auto o = options_of(
        map("--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --seq-length 128 "
            "--vocab-size 32000 --swiglu"));
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 10880);
    BOOST_TEST(o.at("gated_mlp").as_bool());
}

BOOST_AUTO_TEST_CASE(the_vocabulary_is_padded_as_megatron_pads_it) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 ";
    // NullTokenizer(131 073) holds 131 074 tokens (its end of document); multiple of 128.
    BOOST_TEST(options_of(map(base + "--tokenizer-type NullTokenizer --vocab-size 131073"))
                   .at("vocab_size")
                   .as_int64() == 131200);
    // Another tokenizer's --vocab-size as given; t = 8 pads to a multiple of 1024.
    BOOST_TEST(options_of(map(base + "--vocab-size 32000 --tensor-model-parallel-size 4 "
                                     "--num-attention-heads 8 --hidden-size 64"))
                   .at("vocab_size")
                   .as_int64() == 32256);
    BOOST_TEST(options_of(map(base + "--vocab-size 32000 --make-vocab-size-divisible-by 1000"))
                   .at("vocab_size")
                   .as_int64() == 32000);
    expect_flag_error(base + "--tokenizer-type HuggingFaceTokenizer", "--vocab-size");
}

BOOST_AUTO_TEST_CASE(precision_sets_the_bytes_per_parameter) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 ";
    // fp16 with Float16Optimizer: 16-bit gradients, the fp32 copy freed before forward.
    auto o = options_of(map(base + "--fp16"));
    BOOST_TEST(o.at("param_bytes").as_double() == 2.0);
    BOOST_TEST(o.at("grad_bytes").as_double() == 2.0);
    BOOST_TEST(o.at("optimizer_bytes").as_double() == 12.0);
    o = options_of(map(base + "--fp16 --accumulate-allreduce-grads-in-fp32"));
    BOOST_TEST(o.at("grad_bytes").as_double() == 4.0);
    BOOST_TEST(!o.contains("activation_bytes"));  // 16-bit activations, the model's default
    // fp32: 4-byte weights and gradients, Adam's m and v; the layers compute in params_dtype
    // (torch.float without --bf16 and --fp16, megatron/training/arguments.py at commit
    // adfb8ec7926215bfd0d5120aaf6b080de224d328), so their activations are 4 bytes too.
    o = options_of(map(base));
    BOOST_TEST(o.at("param_bytes").as_double() == 4.0);
    BOOST_TEST(o.at("grad_bytes").as_double() == 4.0);
    BOOST_TEST(o.at("optimizer_bytes").as_double() == 8.0);
    BOOST_TEST(o.at("activation_bytes").as_double() == 4.0);
    BOOST_TEST(!options_of(map(base + "--bf16")).contains("activation_bytes"));
    o = options_of(map(base + "--bf16 --optimizer sgd"));
    BOOST_TEST(o.at("optimizer_bytes").as_double() == 8.0);
    expect_flag_error(base + "--bf16 --fp16", "--bf16 and --fp16");
}

BOOST_AUTO_TEST_CASE(attention_backend_and_implementation) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 ";
    BOOST_TEST(!options_of(map(base + "--transformer-impl local")).at("flash_attention").as_bool());
    BOOST_TEST(
        !options_of(map(base + "--attention-backend unfused")).at("flash_attention").as_bool());
    BOOST_TEST(options_of(map(base + "--attention-backend=flash")).at("flash_attention").as_bool());
    // --use-flash-attn runs FlashAttention in the legacy model's ParallelAttention only
    // (megatron/legacy/model/transformer.py): the default model up to 0.7, --use-legacy-models
    // from 0.8 to 0.17; Megatron-core's local attention ignores it, and main has no legacy model.
    const std::string flash_local = base + "--transformer-impl local --use-flash-attn";
    MegatronRunContext at_0_7;
    at_0_7.megatron_version = "0.7";
    BOOST_TEST(options_of(map(flash_local, at_0_7)).at("flash_attention").as_bool());
    BOOST_TEST(!options_of(map(flash_local + " --use-mcore-models", at_0_7))
                    .at("flash_attention")
                    .as_bool());
    BOOST_TEST(
        options_of(map(flash_local + " --use-legacy-models")).at("flash_attention").as_bool());
    const auto newest = map(flash_local);
    BOOST_TEST(!options_of(newest).at("flash_attention").as_bool());
    // Older releases read the same arguments with FlashAttention: the warning says so.
    BOOST_TEST(warns_about(newest,
                           "these arguments fit Megatron-LM 23.04 to main, whose defaults "
                           "differ (23.04 to 0.7: flash_attention true, "
                           "logits_transient_bytes 4.0)"));
}

BOOST_AUTO_TEST_CASE(the_softmax_in_fp32_outside_the_fused_kernel_is_marked) {
    // Megatron's torch softmax (--no-masked-softmax-fusion) in fp32, which
    // --apply-query-key-layer-scaling forces, with unfused local attention and 16-bit training.
    // s = 256, b = 1, 4 heads: the fused kernel would run (16 < s <= 4096, s % 4 = 0,
    // b * heads % 4 = 0), so only --no-masked-softmax-fusion takes the torch path.
    const std::string shape =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 256 "
        "--vocab-size 1000 --transformer-impl local ";
    const std::string base = shape + "--no-masked-softmax-fusion ";
    BOOST_TEST(options_of(map(base + "--fp16 --apply-query-key-layer-scaling"))
                   .at("softmax_in_fp32")
                   .as_bool());
    BOOST_TEST(options_of(map(base + "--bf16 --attention-softmax-in-fp32"))
                   .at("softmax_in_fp32")
                   .as_bool());
    // The fused kernel (no --no-masked-softmax-fusion), a flash kernel, fp32 training, or a
    // 16-bit softmax keep the usual attention memory.
    BOOST_TEST(!options_of(map(shape + "--fp16 --apply-query-key-layer-scaling"))
                    .contains("softmax_in_fp32"));
    MegatronRunContext legacy;
    legacy.megatron_version = "0.7";
    BOOST_TEST(
        !options_of(map(base + "--use-flash-attn --bf16 --attention-softmax-in-fp32", legacy))
             .contains("softmax_in_fp32"));
    BOOST_TEST(!options_of(map(base + "--attention-softmax-in-fp32")).contains("softmax_in_fp32"));
    BOOST_TEST(!options_of(map(base + "--bf16")).contains("softmax_in_fp32"));
}

BOOST_AUTO_TEST_CASE(the_softmax_kernel_runs_only_for_the_shapes_it_supports) {
    // FusedScaleMaskSoftmax.is_kernel_available (megatron/core/fusions/fused_softmax.py): keys
    // 16 < s <= 4096, s % 4 = 0, and b * heads per rank a multiple of get_batch_per_block (8 for
    // s <= 128, 4 above); otherwise the torch softmax runs, in fp32 with query-key scaling.
    const auto fp32_softmax = [](const std::string& shape, MegatronRunContext context = {}) {
        // Query-key scaling (which forces the softmax into fp32) is on by default up to 23.06
        // (--no-query-key-layer-scaling), asked for with --apply-query-key-layer-scaling later.
        const bool before_0_4 = context.megatron_version == "23.04";
        return options_of(
                   map("--num-layers 2 --hidden-size 512 --vocab-size 1000 --fp16 "
                       "--transformer-impl local " +
                           std::string(before_0_4 ? "" : "--apply-query-key-layer-scaling ") +
                           shape,
                       context))
            .contains("softmax_in_fp32");
    };
    BOOST_TEST(!fp32_softmax("--num-attention-heads 8 --seq-length 4096"));
    BOOST_TEST(fp32_softmax("--num-attention-heads 8 --seq-length 8192"));  // longer than 4096
    BOOST_TEST(fp32_softmax("--num-attention-heads 8 --seq-length 1022"));  // not a multiple of 4
    // 8 heads over TP 4: 2 per rank, times b = 1: not a multiple of 4.
    BOOST_TEST(
        fp32_softmax("--num-attention-heads 8 --seq-length 1024 "
                     "--tensor-model-parallel-size 4"));
    BOOST_TEST(
        !fp32_softmax("--num-attention-heads 8 --seq-length 1024 "
                      "--tensor-model-parallel-size 4 --micro-batch-size 2"));
    // s <= 128: 8 batches per block; 4 heads x b = 1 is not enough.
    BOOST_TEST(fp32_softmax("--num-attention-heads 4 --seq-length 128"));
    BOOST_TEST(!fp32_softmax("--num-attention-heads 8 --seq-length 128"));
    // The legacy model's kernel (apex's from 0.4, megatron/legacy/model/fused_softmax.py) takes
    // keys up to 16384; 23.04's own kernel up to 4096.
    MegatronRunContext legacy;
    legacy.megatron_version = "0.7";
    BOOST_TEST(!fp32_softmax("--num-attention-heads 8 --seq-length 8192", legacy));
    legacy.megatron_version = "23.04";
    BOOST_TEST(fp32_softmax("--num-attention-heads 8 --seq-length 8192", legacy));
}

BOOST_AUTO_TEST_CASE(the_fused_cross_entropy_holds_one_more_fp32_logits_buffer) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 ";
    BOOST_TEST(!options_of(map(base)).contains("logits_transient_bytes"));
    BOOST_TEST(options_of(map(base + "--cross-entropy-loss-fusion"))
                   .at("logits_transient_bytes")
                   .as_double() == 6.0);
    BOOST_TEST(
        options_of(map(base + "--cross-entropy-loss-fusion --cross-entropy-fusion-impl native"))
            .at("logits_transient_bytes")
            .as_double() == 6.0);
    // Transformer Engine's implementation is not the compiled one: the unfused figure stays.
    BOOST_TEST(!options_of(map(base + "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te"))
                    .contains("logits_transient_bytes"));
    // In fp32 the logits have no 16-bit copy: the compiled steps' fp32 buffer alone.
    const std::string fp32 =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 ";
    BOOST_TEST(options_of(map(fp32 + "--cross-entropy-loss-fusion"))
                   .at("logits_transient_bytes")
                   .as_double() == 4.0);
}

// The time model times the loss's passes by its kernels: the shape says which ran.
BOOST_AUTO_TEST_CASE(the_loss_kernels_are_written_for_the_time_model) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 ";
    const auto unfused = options_of(map(base));
    BOOST_TEST(!unfused.contains("cross_entropy_loss_fusion"));
    BOOST_TEST(!unfused.contains("cross_entropy_fusion_impl"));
    const auto native = options_of(map(base + "--cross-entropy-loss-fusion"));
    BOOST_TEST(native.at("cross_entropy_loss_fusion").as_bool());
    BOOST_TEST(!native.contains("cross_entropy_fusion_impl"));
    const auto te =
        options_of(map(base + "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te"));
    BOOST_TEST(te.at("cross_entropy_loss_fusion").as_bool());
    BOOST_TEST(te.at("cross_entropy_fusion_impl").as_string() == "te");
    // The implementation alone changes nothing: Megatron-LM fuses only with the switch on.
    BOOST_TEST(!options_of(map(base + "--cross-entropy-fusion-impl te"))
                    .contains("cross_entropy_fusion_impl"));
}

// The MoE dispatcher the time model times (flex: DeepEP or HybridEP, a token once to each node of
// its experts); Megatron-LM's default, allgather, is not written.
BOOST_AUTO_TEST_CASE(the_token_dispatcher_is_written_for_the_time_model) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 --num-experts 8 --moe-router-topk 2 "
        "--expert-model-parallel-size 2 ";
    BOOST_TEST(!options_of(map(base)).at("moe").as_object().contains("token_dispatcher"));
    BOOST_TEST(!options_of(map(base + "--moe-token-dispatcher-type allgather"))
                    .at("moe")
                    .as_object()
                    .contains("token_dispatcher"));
    BOOST_TEST(options_of(map(base + "--moe-token-dispatcher-type alltoall"))
                   .at("moe")
                   .at("token_dispatcher")
                   .as_string() == "alltoall");
    BOOST_TEST(options_of(map(base + "--moe-token-dispatcher-type flex"))
                   .at("moe")
                   .at("token_dispatcher")
                   .as_string() == "flex");
}

// The releases whose vocab-parallel cross entropy subtracts the logits' maximum out of place (23.04
// to 0.7: megatron/core/tensor_parallel/cross_entropy.py, 55817ec9b9 to 9634c0e4a3) hold one more
// fp32 logits-sized buffer at the loss; 0.8 on subtract in place (as 2.6 did). Without
// --megatron-version, arguments that fit both eras are written as main's and the warning names
// the difference.
BOOST_AUTO_TEST_CASE(older_releases_cross_entropy_holds_one_more_fp32_logits_buffer) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --fp16 ";
    for (const char* version : {"23.04", "23.06", "0.4", "0.7"}) {
        MegatronRunContext context;
        context.megatron_version = version;
        BOOST_TEST(options_of(map(base, context)).at("logits_transient_bytes").as_double() == 6.0,
                   version);
        BOOST_TEST(options_of(map("--num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                                  "--seq-length 128 --vocab-size 1000 ",
                                  context))
                           .at("logits_transient_bytes")
                           .as_double() == 4.0,
                   version);
    }
    for (const char* version : {"0.8", "main"}) {
        MegatronRunContext context;
        context.megatron_version = version;
        BOOST_TEST(!options_of(map(base, context)).contains("logits_transient_bytes"), version);
    }
    BOOST_TEST(warns_about(map(base), "0.6 to 0.7: logits_transient_bytes 6.0"));
}

// --defer-embedding-wgrad-compute keeps the LM head's output gradient of the first
// --wgrad-deferral-limit micro-batches (0: every micro-batch of the iteration) on the last stage.
BOOST_AUTO_TEST_CASE(deferred_embedding_wgrad_keeps_the_deferred_micro_batches) {
    const std::string base =
        "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 --pipeline-model-parallel-size 2 --micro-batch-size 2 "
        "--defer-embedding-wgrad-compute ";
    const auto deferred = [&](const std::string& more) {
        MegatronRunContext eight;
        eight.world_size = 8U;
        return options_of(map(base + more, eight))
            .at("deferred_wgrad_micro_batches")
            .to_number<int>();
    };
    // d = 8 / 2 = 4: 32 / (2 x 4) = 4 micro-batches.
    BOOST_TEST(deferred("--global-batch-size 32") == 4);
    BOOST_TEST(deferred("--global-batch-size 32 --wgrad-deferral-limit 2") == 2);
    BOOST_TEST(deferred("--global-batch-size 32 --wgrad-deferral-limit 9") == 4);
    BOOST_TEST(deferred("--wgrad-deferral-limit 3") == 3);
    expect_flag_error(base, "give --global-batch-size (or --wgrad-deferral-limit)");
    MegatronRunContext eight;
    eight.world_size = 8U;
    BOOST_TEST(!warns_about(map(base + "--global-batch-size 32", eight), "defer"));
}

// Transformer Engine's cuBLAS workspaces beyond the shared one, each get_cublas_workspace_size_
// bytes() = 32 MiB + 1024 B from compute capability 9, 4 MiB below (transformer_engine/pytorch/
// cpp_extensions/gemm.py at NVIDIA/TransformerEngine commit
// b9d690e042b1c4e455214e7dab65d6d3512c05d6): --tp-comm-overlap's userbuffer GEMMs take one of
// _NUM_MAX_UB_STREAMS = 3 times that size, the grouped GEMM one per stream (4).
BOOST_AUTO_TEST_CASE(transformer_engines_extra_cublas_workspaces_join_the_runtime) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 --sequence-parallel ";
    const double hopper_mb = (32.0 * 1024 * 1024 + 1024) / (1024.0 * 1024.0);
    const auto runtime = [](const MegatronAnalyticOptions& r) {
        return options_of(r).at("runtime_mb").as_double();
    };
    BOOST_TEST(!options_of(map(base, {2U, {}, 9U})).contains("runtime_mb"));
    const auto overlap =
        map(base + "--tp-comm-overlap --tp-comm-overlap-cfg tp.yaml", {2U, {}, 9U});
    BOOST_TEST(runtime(overlap) == 100.0 + 3.0 * hopper_mb);
    BOOST_TEST(!warns_about(overlap, "--tp-comm-overlap"));  // modelled, not warned
    BOOST_TEST(runtime(map(base + "--tp-comm-overlap", {2U, {}, 10U})) == 100.0 + 3.0 * hopper_mb);
    BOOST_TEST(runtime(map(base + "--tp-comm-overlap", {2U, {}, 8U})) == 100.0 + 3.0 * 4.0);
    // Megatron-LM's own layers run no userbuffer GEMM: no workspace.
    BOOST_TEST(!options_of(map(base + "--tp-comm-overlap --transformer-impl local", {2U, {}, 9U}))
                    .contains("runtime_mb"));
    // Both: separate allocations, 4 + 3 workspaces.
    const std::string moe = "--num-experts 4 --moe-grouped-gemm ";
    BOOST_TEST(runtime(map(base + moe, {2U, {}, 9U})) == 100.0 + 4.0 * hopper_mb);
    BOOST_TEST(runtime(map(base + moe + "--tp-comm-overlap", {2U, {}, 9U})) ==
               100.0 + 7.0 * hopper_mb);
}

BOOST_AUTO_TEST_CASE(moe_flags_become_the_moe_object) {
    const auto o = options_of(
        map("--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
            "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 --sequence-parallel "
            "--num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 1024 "
            "--moe-shared-expert-intermediate-size 512 --expert-model-parallel-size 2 "
            "--expert-tensor-parallel-size 1 --moe-layer-freq [0]*1+[1]*3",
            {8U, {}, 9U}));
    const json::object& moe = o.at("moe").as_object();
    BOOST_TEST(moe.at("num_experts").as_int64() == 8);
    BOOST_TEST(moe.at("top_k").as_int64() == 2);
    BOOST_TEST(moe.at("moe_ffn_hidden_size").as_int64() == 1024);
    BOOST_TEST(moe.at("shared_experts").as_int64() == 1);
    BOOST_TEST(moe.at("shared_expert_ffn_hidden_size").as_int64() == 512);
    BOOST_TEST(moe.at("expert_parallel").as_int64() == 2);
    BOOST_TEST(moe.at("expert_tensor_parallel").as_int64() == 1);
    BOOST_TEST(moe.at("first_k_dense").as_int64() == 1);
    BOOST_TEST(json::serialize(moe.at("layer_freq")) == "[0,1,1,1]");
}

// Where the routing weights multiply the expert outputs is Megatron-LM's release: the combine
// up to 0.12 (moe_utils.py, unpermute), inside the experts' activation from 2659630721 (core
// 0.13: experts.py, bias_act_func). There, with SwiGLU, the fused weighted kernel runs unless
// Transformer Engine's activation is asked for or --no-bias-swiglu-fusion turns fusion off.
BOOST_AUTO_TEST_CASE(the_release_says_where_the_routing_weights_are_applied) {
    const std::string moe =
        "--num-layers 2 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
        "--vocab-size 1000 --bf16 --num-experts 8 --moe-router-topk 2 --swiglu ";
    const auto weights = [&](const std::string& more, const char* version) {
        MegatronRunContext context;
        context.megatron_version = version;
        const json::object o = options_of(map(moe + more, context));
        const json::object& m = o.at("moe").as_object();
        return std::string(m.at("routing_weights").as_string()) +
               (m.contains("activation_fused") ? " unfused" : "");
    };
    for (const char* version : {"0.8", "0.12"})
        BOOST_TEST(weights("", version) == "combine", version);
    for (const char* version : {"0.13", "0.16", "main"})
        BOOST_TEST(weights("", version) == "experts", version);
    BOOST_TEST(weights("--no-bias-swiglu-fusion", "main") == "experts unfused");
    BOOST_TEST(weights("--use-te-activation-func", "main") == "experts unfused");
    BOOST_TEST(weights("--no-bias-swiglu-fusion", "0.12") == "combine");
    // Read for the experts, --no-bias-swiglu-fusion is still warned about for the rest.
    MegatronRunContext main_release;
    main_release.megatron_version = "main";
    BOOST_TEST(warns_about(map(moe + "--no-bias-swiglu-fusion", main_release),
                           "--no-bias-swiglu-fusion changes memory but is not modelled"));
    // Without --megatron-version, arguments that fit both eras are main's, the warning says so.
    BOOST_TEST(warns_about(map(moe), "routing_weights"));
}

BOOST_AUTO_TEST_CASE(runs_outside_the_model_are_refused_by_name) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 ";
    expect_flag_error(base + "--cuda-graph-impl local", "--cuda-graph-impl");
    expect_flag_error(base + "--fp8-format hybrid --fp8-recipe custom", "--fp8-recipe");
    // Context parallelism of 1 and no MTP layers are ordinary runs.
    BOOST_CHECK_NO_THROW((void)map(base + "--context-parallel-size 1 --mtp-num-layers 0"));
}

BOOST_AUTO_TEST_CASE(what_is_not_modelled_is_named_in_a_warning) {
    const auto r =
        map("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
            "--vocab-size 1000 --bf16 --delay-wgrad-compute --log-interval 1 "
            "--recompute-granularity full --attention-dropout 0.1 --hidden-dropout 0 "
            "--use-gigatoken --tp-comm-overlap-cfg tp.yaml --cuda-graph-impl none "
            "--my-memory-saver",
            [] {
                MegatronRunContext c;
                c.declared_flags = {"my-memory-saver:0"};
                return c;
            }());
    BOOST_TEST(warns_about(r,
                           "--delay-wgrad-compute changes memory but is not modelled: "
                           "weight gradients computed later: their inputs kept longer"));
    // A flag of the run's own Megatron-LM, declared: ppb cannot know what it does.
    BOOST_TEST(warns_about(r,
                           "--my-memory-saver is a Megatron-LM flag whose effect on memory ppb "
                           "does not know"));
    BOOST_TEST(warns_about(r, "--attention-dropout 0.1 and --hidden-dropout 0"));
    // Neutral, the placement's, and an unmodelled flag at its default (no CUDA graphs): silent.
    BOOST_TEST(!warns_about(r, "--log-interval"));
    BOOST_TEST(!warns_about(r, "--recompute-granularity"));
    BOOST_TEST(!warns_about(r, "--tp-comm-overlap-cfg"));
    BOOST_TEST(!warns_about(r, "--cuda-graph-impl"));
    BOOST_TEST(!warns_about(r, "--use-gigatoken"));  // a tokenizer implementation
    BOOST_TEST(r.warnings.size() == 3U);
}

// host_api/docs/megatron-arguments.md: every flag of every release is read by the mapping, refused
// by name, or in the lists of what is not modelled, the placement's and what changes no tensor.
// Each flag is given alone, at the first and the last release of each of its records, with a
// value its parser takes (a choice other than the default, an integer, a number, a word); the run
// either maps without the warning for a flag ppb does not know, or fails naming that flag first
// (a refusal, or the flag contradicting the run).
// The section of megatron-arguments.md that starts at `heading`, up to the next "## " heading.
std::string docs_section(const std::string& heading) {
    std::ifstream in(std::string(PPB_DOCS_DIR) + "/megatron-arguments.md");
    BOOST_TEST_REQUIRE(in.good());
    std::stringstream whole;
    whole << in.rdbuf();
    const std::string text = whole.str();
    const std::size_t start = text.find("\n" + heading + "\n");
    BOOST_TEST_REQUIRE(start != std::string::npos, heading);
    const std::size_t end = text.find("\n## ", start + 1);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The flags whose warning says "changes memory but is not modelled", with the reason, each
// given alone as every_flag_of_every_release_has_a_class gives it (filled there).
std::map<std::string, std::string>& warned_flags() {
    static std::map<std::string, std::string> warned;
    return warned;
}

BOOST_AUTO_TEST_CASE(every_flag_of_every_release_has_a_class) {
    namespace mg = ppb::importers::megatron;
    const std::vector<std::string> base = {"--num-layers",          "2", "--hidden-size", "64",
                                           "--num-attention-heads", "4", "--seq-length",  "128"};
    std::size_t runs = 0;
    for (const mg::Flag& f : mg::flags()) {
        if (std::ranges::find(base, f.name) != base.end())
            continue;
        std::string value;
        if (f.action == mg::FlagAction::store) {
            const json::value fallback = json::parse(f.default_json);
            std::vector<std::string> choices;
            for (std::string_view rest = f.choices; !rest.empty();) {
                const std::size_t bar = std::min(rest.find('|'), rest.size());
                choices.emplace_back(rest.substr(0, bar));
                rest.remove_prefix(std::min(bar + 1, rest.size()));
            }
            if (!choices.empty()) {
                value = choices.front();
                for (const std::string& c : choices) {
                    if (!(fallback.is_string() && fallback.as_string() == c)) {
                        value = c;
                        break;
                    }
                }
            } else if (f.type == mg::FlagValueType::integer) {
                value = std::to_string(fallback.is_int64() ? fallback.as_int64() + 1 : 1);
            } else if (f.type == mg::FlagValueType::real) {
                value = "0.5";
            } else {
                value = "x";
            }
        }
        for (const mg::ReleaseIndex r : {f.first, f.last}) {
            std::vector<std::string> args = base;
            args.emplace_back(f.name);
            if (f.action == mg::FlagAction::store) {
                for (unsigned i = 0; i < (f.arity == mg::FlagArity::exactly ? f.count : 1U); ++i)
                    args.push_back(value);
            }
            MegatronRunContext context;
            context.tokenizer_size = 1000;
            context.megatron_version = std::string(mg::releases()[r].name);
            ++runs;
            try {
                const MegatronAnalyticOptions out = analytic_options_from_megatron(args, context);
                BOOST_TEST(!warns_about(out, "whose effect on memory ppb does not know"),
                           f.name << " at " << mg::releases()[r].name);
                const std::string said = std::string(f.name) +
                                         " changes memory but is not "
                                         "modelled: ";
                for (const std::string& w : out.warnings) {
                    if (w.starts_with(said))
                        warned_flags()[std::string(f.name)] = w.substr(said.size());
                }
            } catch (const FlagError& e) {
                BOOST_TEST(std::string_view(e.what()).starts_with(f.name),
                           f.name << " at " << mg::releases()[r].name << ": " << e.what());
            }
        }
    }
    BOOST_TEST(runs > 2U * 1000U);
}

// The docs' table of warned flags is the mapping's: each row's flag, given alone, draws that
// warning with the row's words, and every flag that draws one is in the section (the table, or
// the paragraph after it for the mapping's own warnings). Runs after the test above.
BOOST_AUTO_TEST_CASE(
    the_docs_list_every_warned_flag_as_the_mapping_warns,
    *boost::unit_test::depends_on("megatron_arguments/every_flag_of_every_release_has_a_class")) {
    const std::string section = docs_section("## Warned: changes memory, not modelled");
    static const std::regex row(R"(\n\| `(--[^`]+)` \| ([^|]+) \|)");
    std::size_t rows = 0;
    for (auto it = std::sregex_iterator(section.begin(), section.end(), row);
         it != std::sregex_iterator(); ++it) {
        ++rows;
        const std::string flag = (*it)[1].str();
        const auto warned = warned_flags().find(flag);
        BOOST_TEST((warned != warned_flags().end()), flag << " is in the table but not warned");
        if (warned != warned_flags().end())
            BOOST_TEST(warned->second == (*it)[2].str(), flag);
    }
    BOOST_TEST(rows > 50U);
    for (const auto& [flag, reason] : warned_flags())
        BOOST_TEST(section.find("`" + flag) != std::string::npos,
                   flag << " is warned about (" << reason << ") but not in the docs");
}

BOOST_AUTO_TEST_CASE(other_model_families_are_refused_by_name) {
    const std::string base =
        "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 ";
    expect_flag_error(base + "--hybrid-layer-pattern M*M*",
                      "--hybrid-layer-pattern: a hybrid "
                      "model (Mamba state-space layers");
    expect_flag_error(base + "--hybrid-override-pattern M*M*",
                      "--hybrid-override-pattern: a hybrid");
    expect_flag_error(base + "--is-hybrid-model", "--is-hybrid-model: a hybrid model");
    expect_flag_error(base + "--hybrid-attention-ratio 0.25", "--hybrid-attention-ratio: a hybrid");
    expect_flag_error(base +
                          "--spec megatron.core.models.hybrid.hybrid_layer_specs "
                          "hybrid_stack_spec",
                      "--spec: 'megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec' "
                      "is a hybrid model");
    expect_flag_error(base + "--spec my.module my_spec", "a layer specification of its own");
    expect_flag_error(base + "--experimental-attention-variant gated_delta_net",
                      "--experimental-attention-variant: an experimental attention");
    expect_flag_error(base + "--decoder-num-layers 4", "--decoder-num-layers: an encoder-decoder");
    expect_flag_error(base + "--perform-rl-step", "--perform-rl-step: reinforcement learning");
    expect_flag_error(base + "--yaml-cfg run.yaml",
                      "--yaml-cfg: the run's settings are in the "
                      "YAML file");
    expect_flag_error(base + "--batch-size 8", "--batch-size: Megatron-LM refuses it");
    // A ratio of 0 is no Mamba layer; --spec local is Megatron's own layers.
    BOOST_CHECK_NO_THROW((void)map(base + "--hybrid-attention-ratio 0.0 --spec local"));
}

BOOST_AUTO_TEST_CASE(bad_arguments_name_the_flag) {
    const std::string base =
        "--hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 ";
    expect_flag_error(base, "missing --num-layers");
    expect_flag_error(base + "--num-layers two",
                      "--num-layers 'two': not an integer (argparse's invalid int value)");
    expect_flag_error(base + "--num-layers 0", "--num-layers '0'");
    expect_flag_error(base + "--num-layers 2 --bf16 maybe",
                      "value 'maybe': no flag takes it (argparse's unrecognized arguments)");
    expect_flag_error(base + "--num-layers 2 --bf16=true",
                      "--bf16=true: --bf16 is a switch and takes no value");
    expect_flag_error(base + "--num-layers 2 --attention-dropout -0.1",
                      "--attention-dropout '-0.1'");
    expect_flag_error("12 " + base, "value '12': no flag takes it");
    expect_flag_error(base + "--num-layers 2 --transformer-impl fast",
                      "--transformer-impl 'fast': not one of its choices (local, "
                      "transformer_engine, inference_optimized)");
    expect_flag_error(
        base + "--num-layers 2 --tensor-model-parallel-size 4 --num-attention-heads 8",
        "--world-size 6 is not a multiple", {6U, {}, 9U});
    expect_flag_error(base + "--num-layers 2 --micro-batch-size 3 --global-batch-size 8",
                      "--global-batch-size 8", {2U, {}, 9U});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_arguments_tests
