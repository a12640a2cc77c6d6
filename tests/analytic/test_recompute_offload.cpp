// Megatron-LM's recompute modules (recompute_modules: what a 'select' layer drops), fine-grained
// activation offloading (offload_modules, activation_offload_fraction), the optimizer state in
// host memory (optimizer_offload_fraction), and bad options. Expected values are the tensors
// Megatron-LM's modules save (megatron/core/transformer/transformer_layer.py, moe/experts.py,
// moe/moe_layer.py, pipeline_parallel/fine_grained_activation_offload.py at commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553), listed per case.
#include "analytic_support.hpp"

#include <boost/test/unit_test.hpp>

#include <array>
#include <string>
#include <string_view>

using namespace analytic_test;
using ppb::analytic::MemoryTerms;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace recompute_offload_tests {

namespace {

// Megatron-LM's CI DeepSeek-V3 proxy with its MoE layers (analytic_support.hpp).
constexpr std::string_view proxy = ci_deepseek_v3_proxy;

// On one rank per micro-batch (8192 tokens outside the attention, 16 heads of 16 384 inside):
// the dense layer keeps test_mla.cpp's 2689 MiB. The MoE layer keeps its attention half, 2481
// MiB (the norms' inputs 32, the down-projections' input 16, the latents and their norms' outputs
// 65, Q, K, V 256, the projection's input 64, the scores 2048), and
//   the MoE input (the pre-MLP norm's output, kept by the router)   16 MiB
//   the router's fp32 scores and routing map, 5 x 16 384 x 32 / 2    1.25 MiB
//   the shared expert's SwiGLU, 6 x 16 384 x 1024 / 2                48 MiB
//   routed: 1.2 x 4 x 8192 = 39 321.6 token copies; their inputs 76.8, SwiGLU's inputs 153.6
//   and fc2's input 76.8 MiB (the fused weighted SwiGLU keeps nothing
//   more for the routing weights)                                    307.2 MiB
// 2853.45 MiB.
double dense(std::string_view more, ppb_kind kind) {
    return terms(proxy, more).activation_bytes[kind] / MiB;
}
double moe(std::string_view more, ppb_kind kind) {
    return terms(proxy, more).moe->activation_bytes[kind] / MiB;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(recompute_modules_and_offloading)

BOOST_AUTO_TEST_CASE(the_layers_keep_what_their_modules_save) {
    BOOST_TEST(dense("", PPB_KIND_NONE) == 2689.0, tt::tolerance(1e-12));
    BOOST_TEST(moe("", PPB_KIND_NONE) == 2853.45, tt::tolerance(1e-12));
}

// What each module drops from a 'select' layer (core attention not recomputed):
//   layernorm       the norms that are modules of their own: MLA's input norm (the
//                   down-projections' input, 16 MiB) and an MoE layer's pre-MLP norm (its
//                   output, 16); the dense layer's pre-MLP norm is fused into fc1;
//   mlp             a dense layer's fc1 output of its fused norm (16) and SwiGLU (192);
//   moe             the router, the shared expert and the routed experts (the checkpoint keeps
//                   the block's input);
//   moe_act         the routed experts' fc2 input (76.8);
//   shared_experts  the shared expert's SwiGLU (48).
BOOST_AUTO_TEST_CASE(each_recompute_module_drops_what_it_recomputes) {
    const auto select = [](std::string_view modules) {
        return std::string(R"("recompute_modules": )") + std::string(modules);
    };
    BOOST_TEST(dense(select(R"(["layernorm"])"), PPB_KIND_SELECT) == 2689.0 - 16.0,
               tt::tolerance(1e-12));
    BOOST_TEST(moe(select(R"(["layernorm"])"), PPB_KIND_SELECT) == 2853.45 - 32.0,
               tt::tolerance(1e-12));
    BOOST_TEST(dense(select(R"(["mlp"])"), PPB_KIND_SELECT) == 2689.0 - 208.0,
               tt::tolerance(1e-12));
    BOOST_TEST(moe(select(R"(["mlp"])"), PPB_KIND_SELECT) == 2853.45, tt::tolerance(1e-12));
    BOOST_TEST(moe(select(R"(["moe"])"), PPB_KIND_SELECT) == 2853.45 - 1.25 - 48.0 - 307.2,
               tt::tolerance(1e-12));
    BOOST_TEST(moe(select(R"(["moe_act"])"), PPB_KIND_SELECT) == 2853.45 - 76.8,
               tt::tolerance(1e-12));
    BOOST_TEST(moe(select(R"(["shared_experts"])"), PPB_KIND_SELECT) == 2853.45 - 48.0,
               tt::tolerance(1e-12));
    // The CI run's set: layernorm, mla_up_proj (Q, K, V 256 and the latent norms' outputs 32),
    // mlp, moe_act; the attention core stays.
    const std::string ci = select(R"(["layernorm", "mla_up_proj", "mlp", "moe_act"])");
    BOOST_TEST(dense(ci, PPB_KIND_SELECT) == 2689.0 - 16.0 - 288.0 - 208.0, tt::tolerance(1e-12));
    BOOST_TEST(moe(ci, PPB_KIND_SELECT) == 2853.45 - 32.0 - 288.0 - 76.8, tt::tolerance(1e-12));
    // 'none' and 'full' do not depend on the modules.
    BOOST_TEST(moe(ci, PPB_KIND_NONE) == 2853.45, tt::tolerance(1e-12));
    BOOST_TEST(moe(ci, PPB_KIND_FULL) == 16.0, tt::tolerance(1e-12));
}

// Megatron-LM's local spec (fused_norms false) has both norms as modules of their own: a dense
// GPT layer recomputing 'layernorm' drops the QKV and fc1 inputs (the norms' outputs), and 'mlp'
// keeps the pre-MLP norm's output (the checkpoint's input). GPT-3 175B at t = 8 without sequence
// parallelism (test_formulas.cpp): 2sbh = 48 MiB each.
BOOST_AUTO_TEST_CASE(separate_norms_are_what_layernorm_recomputes) {
    const std::string local = R"("tensor_parallel": 8, "fused_norms": false, )";
    const double none =
        terms(gpt3_175b, R"("tensor_parallel": 8)").activation_bytes[PPB_KIND_SELECT];
    const double layernorm =
        terms(gpt3_175b, local + R"("recompute_modules": ["core_attn", "layernorm"])")
            .activation_bytes[PPB_KIND_SELECT];
    BOOST_TEST((none - layernorm) / MiB == 96.0, tt::tolerance(1e-12));
    // With Transformer Engine's fused norms 'layernorm' has nothing to drop.
    BOOST_TEST(terms(gpt3_175b, R"("tensor_parallel": 8, "recompute_modules": ["core_attn",
                                   "layernorm"])")
                   .activation_bytes[PPB_KIND_SELECT] == none);
    // 'mlp' with a separate norm: the MLP's inner activations, 4sbF / t = 48 MiB, not its input.
    const double mlp = terms(gpt3_175b, local + R"("recompute_modules": ["core_attn", "mlp"])")
                           .activation_bytes[PPB_KIND_SELECT];
    BOOST_TEST((none - mlp) / MiB == 48.0, tt::tolerance(1e-12));
}

// Fine-grained offloading moves each listed module's saved inputs to the host after forward
// (and, the last group of each module aside, brings one layer's back for its backward: held
// once). On the MoE layer:
//   core_attn + attn_proj   Q, K, V 256, the scores 2048, the projection's input 64: 2368 MiB;
//   expert_fc1 + moe_act    the routed inputs 76.8 and SwiGLU's inputs 153.6: 230.4 MiB;
//   qkv_linear              the down-projections' input 16, the latents and norm outputs 65;
//   attn_norm, mlp_norm     the input norm's input 16, the pre-MLP norm's input 16.
BOOST_AUTO_TEST_CASE(offloaded_modules_leave_the_device) {
    const MemoryTerms t = terms(proxy, R"("offload_modules": ["core_attn", "attn_proj"])");
    BOOST_TEST(t.moe->activation_bytes[PPB_KIND_NONE] / MiB == 2853.45 - 2368.0,
               tt::tolerance(1e-12));
    BOOST_TEST(t.moe->offloaded_bytes / MiB == 2368.0, tt::tolerance(1e-12));
    // The scores are the softmax's output, which the softmax saves and, without dropout, the
    // attention-over-V matmul saves too: offloaded and reloaded once per save (two tags of the
    // saved-tensor hook, fine_grained_activation_offload.py at 4e85d74ae9), so one layer's reload
    // holds 2368 + 2048 MiB. Measured: the two runs of Megatron-LM's CI with unfused attention
    // and core_attn offloaded were 7.3 and 7.9 % under their peaks without the second copy
    // (tests/data/real/moe-mla-offload-*.json).
    BOOST_TEST(t.reloaded_twice_bytes / MiB == 2048.0, tt::tolerance(1e-12));
    const MemoryTerms plain = terms(proxy, "");
    BOOST_TEST((t.layer_transient_bytes - plain.layer_transient_bytes) / MiB == 2368.0 + 2048.0,
               tt::tolerance(1e-12));
    // With dropout the matmul saves the dropout's output, another tensor: no second copy.
    const MemoryTerms dropped =
        terms(proxy, R"("dropout": true, "offload_modules": ["core_attn", "attn_proj"])");
    BOOST_TEST(dropped.reloaded_twice_bytes == 0.0);
    // MLA's two down-projections both save the input norm's output (16 MiB): qkv_linear reloads
    // it twice.
    BOOST_TEST(
        terms(proxy, R"("offload_modules": ["qkv_linear"])").reloaded_twice_bytes / MiB == 16.0,
        tt::tolerance(1e-12));
    BOOST_TEST(
        moe(R"("offload_modules": ["expert_fc1", "moe_act"])", PPB_KIND_NONE) == 2853.45 - 230.4,
        tt::tolerance(1e-12));
    BOOST_TEST(moe(R"("offload_modules": ["qkv_linear"])", PPB_KIND_NONE) == 2853.45 - 81.0,
               tt::tolerance(1e-12));
    BOOST_TEST(
        moe(R"("offload_modules": ["attn_norm", "mlp_norm"])", PPB_KIND_NONE) == 2853.45 - 32.0,
        tt::tolerance(1e-12));
    // --activation-offload-fraction keeps the later groups on the device: half of them here.
    BOOST_TEST(moe(R"("offload_modules": ["core_attn", "attn_proj"],
                      "activation_offload_fraction": 0.5)",
                   PPB_KIND_NONE) == 2853.45 - 1184.0,
               tt::tolerance(1e-12));
    // A 'select' layer recomputing core attention runs its checkpoint outside the core_attn
    // offloading context (Attention.forward): Q, K, V stay (the checkpoint's inputs), the scores
    // are not saved, the projection's input goes.
    BOOST_TEST(moe(R"("offload_modules": ["core_attn", "attn_proj"])", PPB_KIND_SELECT) ==
                   2853.45 - 2048.0 - 64.0,
               tt::tolerance(1e-12));
}

// The optimizer state partly in host memory: with d = 2 the distributed optimizer's 12 / 2 = 6
// bytes a parameter, a quarter of it on the device.
BOOST_AUTO_TEST_CASE(offloaded_optimizer_state_leaves_the_device) {
    BOOST_TEST(terms(proxy, R"("optimizer_offload_fraction": 0.75)").bytes_per_parameter ==
               2.0 + 4.0 + 1.5);
    // The experts' state too: expert data parallel t x d / EP = 1, 12 bytes, a quarter: 3.
    BOOST_TEST(
        terms(proxy, R"("optimizer_offload_fraction": 0.75)").moe->bytes_per_expert_parameter ==
        2.0 + 4.0 + 3.0);
}

// Layer-level CPU offloading (--cpu-offloading-num-layers 5) on the proxy's one stage: Transformer
// Engine offloads layers 0 to 4 (transformer_engine/pytorch/cpu_offload.py at 00382b96b4), the
// proxy's three dense layers and its first two MoE layers: 3 x 2689 + 2 x 2853.45 = 13 773.9 MiB
// fewer activations held; the parts still add up. Megatron-LM refuses it with pipeline stages and
// with recomputation (transformer_config.py at d98e8a64dd): so does the model, saying why.
BOOST_AUTO_TEST_CASE(offloaded_layers_hold_no_activations_on_their_one_stage) {
    // One stage of 3 dense and 13 MoE layers of `kind`, one micro-batch in flight.
    const auto predict = [](const ppb::analytic::AnalyticModel& model, std::uint32_t stages,
                            ppb_kind kind, double* none_part = nullptr) {
        ppb_chunk chunk{};
        chunk.layers[kind] = 16;
        chunk.in_flight = 1;
        std::array<std::uint32_t, 2 * PPB_KIND_COUNT> groups{};
        groups[kind] = 3;
        groups[PPB_KIND_COUNT + kind] = 13;
        const ppb_grouped_placement placement{{stages, 0, 1, &chunk}, 2, groups.data()};
        const double mb = model.predict_grouped(placement);
        double sum = 0.0;
        const auto parts = model.predict_parts(placement);
        for (const ppb_memory_part& part : parts.value()) {
            BOOST_TEST(part.mb >= 0.0, part.name);
            sum += part.mb;
            if (none_part != nullptr && std::string_view(part.name) == "none")
                *none_part = part.mb;
        }
        BOOST_TEST(sum == mb, tt::tolerance(1e-9));
        return mb;
    };
    const ppb::analytic::AnalyticModel kept(options_json(proxy, ""));
    const ppb::analytic::AnalyticModel offloading(
        options_json(proxy, R"("cpu_offloading_num_layers": 5)"));
    double kept_none = 0.0;
    double offloaded_none = 0.0;
    const double before = predict(kept, 1, PPB_KIND_NONE, &kept_none);
    const double after = predict(offloading, 1, PPB_KIND_NONE, &offloaded_none);
    BOOST_TEST(before - after == 3 * 2689.0 + 2 * 2853.45, tt::tolerance(1e-9));
    BOOST_TEST(kept_none - offloaded_none == 3 * 2689.0 + 2 * 2853.45, tt::tolerance(1e-9));
    BOOST_TEST(contains(offloading.report(), "CPU offloading of layers"));

    const auto refusal = [&](std::uint32_t stages, ppb_kind kind) {
        try {
            (void)predict(offloading, stages, kind);
        } catch (const ppb::plugin::InvalidInput& e) {
            return std::string(e.what());
        }
        BOOST_ERROR("the placement was predicted");
        return std::string();
    };
    BOOST_TEST(contains(refusal(2, PPB_KIND_NONE),
                        "which Megatron-LM does on one pipeline stage only, and the placement "
                        "has 2 stages"));
    BOOST_TEST(contains(refusal(1, PPB_KIND_FULL),
                        "Megatron-LM refuses recomputation beside it: the placement has 3 'full' "
                        "layers"));
    // Without the option nothing changes, on any number of stages.
    BOOST_TEST(predict(kept, 2, PPB_KIND_FULL) > 0.0);
}

BOOST_AUTO_TEST_CASE(bad_recompute_and_offload_options_are_refused_by_name) {
    const auto with = [](std::string_view more) { return options_json(proxy, more); };
    BOOST_TEST(contains(rejection(with(R"("offload_modules": "core_attn")")),
                        "'offload_modules' must be a list of module names"));
    BOOST_TEST(contains(rejection(with(R"("offload_modules": ["fused_group_mlp"])")),
                        "'fused_group_mlp' is a module of Megatron-LM the analytic model does not "
                        "count"));
    BOOST_TEST(contains(rejection(with(R"("offload_modules": ["attn_proj"])")),
                        "attn_proj without core_attn"));
    BOOST_TEST(contains(rejection(with(R"("offload_modules": ["expert_fc"])")),
                        "no module 'expert_fc' (did you mean 'expert_fc1'?)"));
    BOOST_TEST(contains(rejection(with(R"("recompute_modules": ["mhc"])")),
                        "'mhc' is a module of Megatron-LM the analytic model does not count"));
    BOOST_TEST(contains(rejection(with(R"("activation_offload_fraction": 1.5)")),
                        "'activation_offload_fraction' must be a number from 0 to 1"));
    BOOST_TEST(contains(rejection(with(R"("optimizer_offload_fraction": -0.1)")),
                        "'optimizer_offload_fraction' must be a number from 0 to 1"));
    BOOST_TEST(contains(rejection(with(R"("optimizer_offload_fraction": "half")")),
                        "'optimizer_offload_fraction' must be a number"));
    BOOST_TEST(
        contains(rejection(with(R"("fused_norms": 0)")), "'fused_norms' must be true or false"));
    BOOST_TEST(contains(rejection(with(R"("cpu_offloading_num_layers": 16)")),
                        "'cpu_offloading_num_layers' is 16: Megatron-LM offloads fewer layers "
                        "than the model's 16"));
    BOOST_TEST(contains(rejection(with(R"("cpu_offloading_num_layers": -1)")),
                        "cpu_offloading_num_layers"));
    BOOST_TEST(contains(
        rejection(with(R"("cpu_offloading_num_layers": 2, "offload_modules": ["core_attn"])")),
        "refuses the fine-grained activation offloading beside CPU offloading of layers"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace recompute_offload_tests
