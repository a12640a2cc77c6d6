// Context parallelism (context_parallel, cp_comm_type): the sequence split over the ranks, what
// Transformer Engine's context-parallel attention keeps beyond Q, K, V and the output for each
// communication kind, the exchange buffers one layer holds while it runs, the distributed
// optimizer sharded over the data- and context-parallel ranks, and bad options.
#include "analytic_support.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace analytic_test;
using ppb::analytic::MemoryTerms;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace context_parallel_tests {

namespace {

// A LLaMA-3-8B-shaped model: h = 4096, 32 heads, 8 key/value heads, SwiGLU F = 14336,
// s = 8192, b = 1, V = 128000, t = 2 with sequence parallelism, d = 4 with the distributed
// optimizer, flash attention, no dropout, c = 2.
constexpr std::string_view llama =
    R"("hidden_size": 4096, "num_attention_heads": 32, "num_kv_heads": 8,
       "ffn_hidden_size": 14336, "num_layers": 32, "seq_length": 8192, "micro_batch_size": 1,
       "vocab_size": 128000, "tensor_parallel": 2, "sequence_parallel": true,
       "data_parallel": 4, "distributed_optimizer": true, "flash_attention": true,
       "dropout": false, "context_parallel": 2)";

constexpr double mib = MiB;

}  // namespace

BOOST_AUTO_TEST_SUITE(context_parallelism)

// Each rank holds s / c = 4096 positions: 2 sbh bytes = 2 x 4096 x 4096 = 32 MiB. A layer keeps
// (the dense layer's tensors at these positions) the norms' and linears' inputs 8 sbh = 128 MiB,
// Q 32, K and V 4 x 4096 x 1024 = 16, the projection's input 32 and the SwiGLU's 6 x 4096 x 14336
// = 336 MiB: 544 MiB, 272 on each of the two tensor-parallel ranks. Beyond that, Transformer
// Engine's context-parallel attention (context_parallel.py at commit
// d0067d0da6cb01811b8072a7d304f0e00344ce2b) keeps for backward:
//   p2p         the last K/V chunk received (p2p_comm_buffers[-1], a buffer of K and V's size):
//               16 MiB, 8 per rank;
//   a2a         the output in the all-to-all's layout besides the projection's input after the
//               all-to-all back: 32 MiB, 16 per rank;
//   a2a+p2p     both: 24 per rank;
//   all_gather  nothing (it re-gathers K and V in backward).
BOOST_AUTO_TEST_CASE(each_rank_keeps_its_share_of_the_sequence_and_the_exchanges_buffers) {
    BOOST_TEST(terms(llama, "").activation_bytes[PPB_KIND_NONE] / mib == 272.0 + 8.0,
               tt::tolerance(1e-12));
    BOOST_TEST(terms(llama, R"("cp_comm_type": "a2a")").activation_bytes[PPB_KIND_NONE] / mib ==
                   272.0 + 16.0,
               tt::tolerance(1e-12));
    BOOST_TEST(terms(llama, R"("cp_comm_type": "a2a+p2p")").activation_bytes[PPB_KIND_NONE] / mib ==
                   272.0 + 24.0,
               tt::tolerance(1e-12));
    BOOST_TEST(
        terms(llama, R"("cp_comm_type": "all_gather")").activation_bytes[PPB_KIND_NONE] / mib ==
            272.0,
        tt::tolerance(1e-12));
    // Recomputing core attention runs the whole exchange inside the checkpoint.
    BOOST_TEST(terms(llama, "").activation_bytes[PPB_KIND_SELECT] / mib == 272.0,
               tt::tolerance(1e-12));
    // Full recompute: the layer's input, 2 sbh / t.
    BOOST_TEST(terms(llama, "").activation_bytes[PPB_KIND_FULL] / mib == 16.0,
               tt::tolerance(1e-12));
    // c = 1 is the layer of test_formulas.cpp's family at 8192 positions: twice 272.
    BOOST_TEST(
        terms(llama, R"("context_parallel": 1)").activation_bytes[PPB_KIND_NONE] / mib == 544.0,
        tt::tolerance(1e-12));
}

// Held once while one layer runs (per rank, /2), beside the MLP's backward gradients
// 4 x 4096 x 14336 = 224 MiB:
//   p2p         backward: a Q-sized dq buffer and each step's dq (2 x 32), the two double
//               buffers of K/V chunks and their gradients and each step's dk, dv (5 x 16):
//               144 MiB; forward: each step's received chunk and partial output, c x (16 + 32)
//               = 96 MiB. The larger: (224 + 144) / 2 = 184 MiB;
//   all_gather  backward: the gathered K, V and their gradients 2 c x 16 = 64: 144 MiB;
//   a2a         the all-to-all's copies of Q, K, V and the output, 80 MiB: 152 MiB.
BOOST_AUTO_TEST_CASE(one_layer_holds_the_exchange_buffers_while_it_runs) {
    BOOST_TEST(terms(llama, "").layer_transient_bytes / mib == 184.0, tt::tolerance(1e-12));
    BOOST_TEST(terms(llama, R"("cp_comm_type": "all_gather")").layer_transient_bytes / mib == 144.0,
               tt::tolerance(1e-12));
    BOOST_TEST(terms(llama, R"("cp_comm_type": "a2a")").layer_transient_bytes / mib == 152.0,
               tt::tolerance(1e-12));
}

// The logits of the rank's positions, 4 x 4096 x 128000 / 2 B = 1000 MiB; the distributed
// optimizer shards over d x c = 8 ranks (Megatron-LM's data-parallel group with context
// parallelism): 2 + 4 + 12 / 8 = 7.5 bytes a parameter.
BOOST_AUTO_TEST_CASE(logits_and_optimizer_state_follow_the_split) {
    const MemoryTerms t = terms(llama, "");
    BOOST_TEST(t.tail_logits_bytes / mib == 1000.0, tt::tolerance(1e-12));
    BOOST_TEST(t.bytes_per_parameter == 7.5);
}

// An MoE layer's routed tokens are the rank's own: s / c x b / t = 2048, top-2 of 8 experts on
// EP = 8 ranks (ETP 1), balanced: 4096 routed copies; expert data parallel t x d x c / EP = 2.
BOOST_AUTO_TEST_CASE(moe_layers_route_the_ranks_own_positions) {
    const MemoryTerms t =
        terms(llama, R"("moe": {"num_experts": 8, "top_k": 2, "expert_parallel": 8,
                                "expert_tensor_parallel": 1, "routing_imbalance": 1})");
    BOOST_TEST(t.moe->routed_tokens == 4096.0);
    BOOST_TEST(t.moe->expert_data_parallel == 2.0);
}

BOOST_AUTO_TEST_CASE(bad_context_parallel_options_are_refused_by_name) {
    BOOST_TEST(contains(rejection(options_json(llama, R"("context_parallel": 0)")),
                        "'context_parallel' must be an integer from 1"));
    BOOST_TEST(contains(rejection(options_json(llama, R"("cp_comm_type": "ring")")),
                        "'cp_comm_type' must be one of p2p, all_gather, a2a, a2a+p2p"));
    BOOST_TEST(contains(rejection(options_json(llama, R"("cp_comm_type": 2)")),
                        "'cp_comm_type' must be one of"));
    BOOST_TEST(contains(rejection(options_json(llama, R"("flash_attention": false)")),
                        "context_parallel 2 needs flash_attention"));
    BOOST_TEST(contains(rejection(options_json(llama, R"("seq_length": 8190)")),
                        "seq_length 8190 is not divisible by 2 * context_parallel 4"));
    BOOST_TEST(
        contains(rejection(options_json(llama, R"("seq_length": 4100, "tensor_parallel": 4,
                                                       "context_parallel": 2)")),
                 "seq_length / context_parallel 2050 is not divisible by tensor_parallel 4"));
    BOOST_TEST(contains(rejection(options_json(
                            llama, R"("moe": {"num_experts": 32, "top_k": 2, "expert_parallel": 32,
                                              "expert_tensor_parallel": 1})")),
                        "tensor_parallel * data_parallel * context_parallel = 16 is not divisible "
                        "by moe.expert_parallel * moe.expert_tensor_parallel = 32"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace context_parallel_tests
