// Sharded data parallelism (data_parallel_sharding): the bytes per parameter each strategy leaves
// on a rank, FSDP's unsharded buffers of the two largest units, the experts' state sharded over
// the expert data-parallel ranks, and bad options.
#include "analytic_support.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace analytic_test;
using ppb::analytic::AnalyticModel;
using ppb::analytic::MemoryTerms;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace fsdp_tests {

namespace {

// A LLaMA-shaped model: h = 1024, 16 heads, SwiGLU F = 4096, 8 layers, V = 32768 untied, t = 1,
// d = 8, s = 2048, b = 1, flash attention, no dropout; Megatron-FSDP's default gradients in bf16
// (2 bytes), fp32 main weights and Adam's moments (12).
constexpr std::string_view llama =
    R"("hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
       "num_layers": 8, "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32768,
       "tensor_parallel": 1, "data_parallel": 8, "flash_attention": true, "dropout": false,
       "grad_bytes": 2, "runtime_mb": 0, "logits_transient_bytes": 0,
       "backward_transient": false, "relative_std_error": 0)";

// A layer: 4h^2 = 4 194 304 attention, 3hF = 12 582 912 MLP, 2048 norm parameters:
// 16 779 264; the embedding and the LM head 32768 x 1024 = 33 554 432 each.
constexpr double layer = 16779264.0;
constexpr double embedding = 33554432.0;

double part(const AnalyticModel& model, std::uint32_t stages, std::uint32_t stage,
            std::string_view name) {
    ppb_chunk c{};
    c.layers[PPB_KIND_NONE] = 2;
    c.in_flight = 1;
    const ppb_placement placement{stages, stage, 1, &c};
    const std::vector<std::uint32_t> layers(c.layers, c.layers + PPB_KIND_COUNT);
    const auto parts = model.predict_parts(ppb_grouped_placement{placement, 1, layers.data()});
    double sum = 0.0;
    double found = 0.0;
    for (const ppb_memory_part& p : parts.value()) {
        sum += p.mb;
        if (name == p.name)
            found = p.mb;
    }
    BOOST_TEST(sum == model.predict(placement), tt::tolerance(1e-12));
    return found;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sharded_data_parallelism)

// Bytes a parameter on a rank of d = 8 (Megatron-FSDP's --data-parallel-sharding-strategy):
//   no_shard            2 + 2 + 12              = 16
//   optim               2 + 2 + 12 / 8          = 5.5   (the distributed optimizer, ZeRO-1)
//   optim_grads         2 + 2 / 8 + 12 / 8      = 3.75  (ZeRO-2)
//   optim_grads_params  2 / 8 + 2 / 8 + 12 / 8  = 2     (ZeRO-3)
BOOST_AUTO_TEST_CASE(each_strategy_shards_what_it_names) {
    const auto bytes = [](std::string_view strategy) {
        return terms(llama,
                     std::string(R"("data_parallel_sharding": ")") + std::string(strategy) + "\"")
            .bytes_per_parameter;
    };
    BOOST_TEST(bytes("no_shard") == 16.0);
    BOOST_TEST(bytes("optim") == 5.5);
    BOOST_TEST(bytes("optim_grads") == 3.75);
    BOOST_TEST(bytes("optim_grads_params") == 2.0);
    // optim is the distributed optimizer.
    BOOST_TEST(terms(llama, R"("distributed_optimizer": true)").bytes_per_parameter == 5.5);
}

// Megatron-FSDP all-gathers a unit's weights before its forward and backward and holds its
// unsharded gradients until the reduce-scatter, two units at a time (the one computing, the one
// prefetched): with optim_grads_params 2 + 2 bytes a parameter — two layers, 2 x 16 779 264 x 4 B
// = 128.015625 MiB, or on stage 0 a layer and the embedding, (16 779 264 + 33 554 432) x 4 B,
// on the last stage a layer and the LM head. With optim_grads only the gradients: 2 bytes.
BOOST_AUTO_TEST_CASE(a_layer_and_the_largest_unit_beside_it_are_held_unsharded) {
    const AnalyticModel zero3(
        options_json(llama, R"("data_parallel_sharding": "optim_grads_params")"));
    BOOST_TEST(part(zero3, 4, 1, "fsdp_buffers") == 2.0 * layer * 4.0 / MiB, tt::tolerance(1e-12));
    BOOST_TEST(part(zero3, 4, 0, "fsdp_buffers") == (layer + embedding) * 4.0 / MiB,
               tt::tolerance(1e-12));
    BOOST_TEST(part(zero3, 4, 3, "fsdp_buffers") == (layer + embedding + 1024.0) * 4.0 / MiB,
               tt::tolerance(1e-12));
    // The stage's own state: two layers at 2 bytes a parameter, sharded.
    BOOST_TEST(part(zero3, 4, 1, "weights") == 2.0 * layer * 0.25 / MiB, tt::tolerance(1e-12));
    BOOST_TEST(part(zero3, 4, 1, "gradients") == 2.0 * layer * 0.25 / MiB, tt::tolerance(1e-12));
    BOOST_TEST(part(zero3, 4, 1, "optimizer") == 2.0 * layer * 1.5 / MiB, tt::tolerance(1e-12));
    const AnalyticModel zero2(options_json(llama, R"("data_parallel_sharding": "optim_grads")"));
    BOOST_TEST(part(zero2, 4, 1, "fsdp_buffers") == 2.0 * layer * 2.0 / MiB, tt::tolerance(1e-12));
    const AnalyticModel zero1(options_json(llama, R"("data_parallel_sharding": "optim")"));
    BOOST_TEST(part(zero1, 4, 1, "fsdp_buffers") == 0.0);
}

// The routed experts' state shards over the expert data-parallel ranks, t x d / (EP x ETP) = 2
// for 8 experts on EP = 4: optim_grads_params leaves 2 / 2 + 2 / 2 + 12 / 2 = 8 bytes an expert
// parameter.
BOOST_AUTO_TEST_CASE(experts_shard_over_the_expert_data_parallel_ranks) {
    const MemoryTerms t = terms(llama, R"("data_parallel_sharding": "optim_grads_params",
        "moe": {"num_experts": 8, "top_k": 2, "moe_ffn_hidden_size": 1024, "expert_parallel": 4,
                "expert_tensor_parallel": 1})");
    BOOST_TEST(t.moe->expert_data_parallel == 2.0);
    BOOST_TEST(t.moe->bytes_per_expert_parameter == 8.0);
}

// FP8 weights under Megatron-FSDP (optim_grads_params with fp8_param_gather, tensorwise): the
// Float8Tensor parameter is sharded like any weight and its transpose is dropped after each
// module (megatron/core/distributed/fsdp/src/README.md, keep_fp8_transpose_cache, at
// d98e8a64dd): 1 byte / 8 ranks a linear parameter, where the distributed optimizer alone keeps
// each rank's whole FP8 data and transpose, 2 bytes. Linear parameters of two layers:
// 2 x (16 779 264 - 2048 norms) = 33 554 432, so 4 MiB sharded against 64 MiB.
BOOST_AUTO_TEST_CASE(fp8_weights_shard_with_the_weights) {
    const std::string fp8 = R"("fp8_recipe": "tensorwise", "fp8_param_gather": true, )";
    const AnalyticModel fsdp(
        options_json(llama, fp8 + R"("data_parallel_sharding": "optim_grads_params")"));
    const AnalyticModel optim(options_json(llama, fp8 + R"("distributed_optimizer": true)"));
    BOOST_TEST(part(fsdp, 2, 1, "fp8_weights") == 33554432.0 / 8.0 / MiB, tt::tolerance(1e-12));
    BOOST_TEST(part(optim, 2, 1, "fp8_weights") == 2.0 * 33554432.0 / MiB, tt::tolerance(1e-12));
    // MXFP8's copies are not Megatron-FSDP's FP8 parameters here: counted as without FSDP.
    const std::string mx = R"("fp8_recipe": "mxfp8", "fp8_param_gather": true, )";
    BOOST_TEST(part(AnalyticModel(options_json(
                        llama, mx + R"("data_parallel_sharding": "optim_grads_params")")),
                    2, 1, "fp8_weights") ==
                   part(AnalyticModel(options_json(llama, mx + R"("distributed_optimizer": true)")),
                        2, 1, "fp8_weights"),
               tt::tolerance(1e-12));
}

// The 16-bit weights FP8 parameters replace, each at its own sharding: an MoE layer's routed
// experts are sharded over their t x d / (EP x ETP) = 2 expert-data-parallel ranks, not the
// d = 8 of the dense parts, so their replaced 16-bit weight is 2 / 2 bytes a parameter; what is
// left of the layers' 16-bit weights is their parameters outside the linears (norms, router), at
// 2 / 8 bytes. (The replaced expert weight was taken at the dense parts' 2 / 8.)
BOOST_AUTO_TEST_CASE(the_experts_replaced_weights_shard_as_the_experts) {
    const std::string moe =
        R"("fp8_recipe": "tensorwise", "fp8_param_gather": true,
           "data_parallel_sharding": "optim_grads_params",
           "moe": {"num_experts": 8, "top_k": 2, "moe_ffn_hidden_size": 1024,
                   "expert_parallel": 4, "expert_tensor_parallel": 1})";
    const MemoryTerms t = terms(llama, moe);
    BOOST_TEST_REQUIRE(t.moe.has_value());
    // A rank's 8 / 4 = 2 experts x 3 x 1024 x 1024.
    BOOST_TEST(t.moe->expert_parameters == 6291456.0);
    const double outside_linears = t.moe->dense_parameters - t.moe->dense_linear_parameters;
    BOOST_TEST(outside_linears > 0.0);
    const AnalyticModel model(options_json(llama, moe));
    BOOST_TEST(part(model, 2, 1, "weights") == 2.0 * outside_linears * 2.0 / 8.0 / MiB,
               tt::tolerance(1e-12));
    // The quantized copies: 1 byte a linear parameter, the dense ones over 8 ranks, the experts'
    // over 2.
    BOOST_TEST(
        part(model, 2, 1, "fp8_weights") ==
            2.0 * (t.moe->dense_linear_parameters / 8.0 + t.moe->expert_parameters / 2.0) / MiB,
        tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(bad_sharding_options_are_refused_by_name) {
    BOOST_TEST(contains(rejection(options_json(llama, R"("data_parallel_sharding": "zero3")")),
                        "'data_parallel_sharding' must be one of no_shard, optim, optim_grads, "
                        "optim_grads_params"));
    BOOST_TEST(contains(rejection(options_json(llama, R"("data_parallel_sharding": 3)")),
                        "'data_parallel_sharding' must be one of"));
    BOOST_TEST(contains(
        rejection(options_json(
            llama, R"("data_parallel_sharding": "no_shard", "distributed_optimizer": true)")),
        "distributed_optimizer with data_parallel_sharding no_shard"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fsdp_tests
