// What a configuration's transfers cost on a cluster (ppb/partition/communication.hpp): the
// collectives' ring times, which link a group crosses in Megatron-LM's rank order, the pipeline's
// transfers per boundary, and each stage's data-parallel synchronisation, each against the
// arithmetic done by hand on the H100 table figures (450 GB/s NVLink, 50 GB/s network per
// device, 8 per node).
#include <ppb/errors.hpp>
#include <ppb/partition/cluster.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/shape_time.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>

#include <string>

namespace tt = boost::test_tools;
using namespace ppb::partition;

namespace communication_tests {

namespace {

// 1e9 bytes at B GB/s take 1e3 / B ms.
constexpr double intra_bytes_per_ms = 450e6;
constexpr double network_bytes_per_ms = 50e6;

// The cluster with no latency on its network: the tests of the bandwidth rules below (the
// default latency has a test of its own).
Cluster without_latency(Cluster cluster) {
    cluster.network_latency_us = 0.0;
    return cluster;
}

// A dense shape of 8 layers: h = 1024, 16 heads, F = 4096 (not gated), V = 32000, t = 2.
// Per layer and rank: (h (h + 2h) + h h) / t + 2h (norms) + 2 h F / t = 6 293 504 parameters;
// the embedding V/t x h = 16 384 000, the LM head 16 384 000 + h (untied by default).
const std::string dense_shape =
    R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
        "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 8,
        "tensor_parallel": 2, "gated_mlp": false, "sequence_parallel": true,
        "distributed_optimizer": true})";
constexpr double layer_parameters = 6'293'504.0;
constexpr double embedding_parameters = 16'384'000.0;

StagePlan stage_with(std::uint32_t stage, std::uint32_t layers) {
    StagePlan s;
    s.stage = stage;
    s.layers[PPB_KIND_NONE] = layers;
    return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(communication)

BOOST_AUTO_TEST_CASE(collectives_take_the_ring_times) {
    const Link nvlink{450.0, 0.0};
    const Link network{50.0, 10.0};  // 10 us a step
    // 1 GB gathered by 8 ranks: 7/8 of it crosses each link.
    BOOST_TEST(all_gather_ms(1e9, 8, nvlink) == 7.0 / 8.0 * 1e9 / intra_bytes_per_ms,
               tt::tolerance(1e-12));
    BOOST_TEST(reduce_scatter_ms(1e9, 8, nvlink) == all_gather_ms(1e9, 8, nvlink));
    BOOST_TEST(all_reduce_ms(1e9, 8, nvlink) == 2.0 * all_gather_ms(1e9, 8, nvlink),
               tt::tolerance(1e-12));
    // Latency: a ring's 3 steps for 4 ranks; an all-to-all's sends go at once, one latency.
    BOOST_TEST(all_gather_ms(4e8, 4, network) == 0.75 * 4e8 / network_bytes_per_ms + 3 * 0.01,
               tt::tolerance(1e-12));
    BOOST_TEST(all_to_all_ms(4e8, 4, network) == 0.75 * 4e8 / network_bytes_per_ms + 0.01,
               tt::tolerance(1e-12));
    BOOST_TEST(point_to_point_ms(5e7, network) == 1.0 + 0.01, tt::tolerance(1e-12));
    // One rank, or nothing to send: no time.
    BOOST_TEST(all_reduce_ms(1e9, 1, nvlink) == 0.0);
    BOOST_TEST(point_to_point_ms(0.0, network) == 0.0);
}

BOOST_AUTO_TEST_CASE(an_all_to_all_across_nodes_sends_each_share_over_its_own_link) {
    const Cluster h100 =
        without_latency(cluster_of_device("H100"));  // 8 a node at 450 GB/s; 50 GB/s across
    const double latency_ms = h100.network_latency_us / 1e3;
    // Inside one node it is the ring of the node's links.
    BOOST_TEST(all_to_all_ms(4e8, h100, 0, 1, 8) == all_to_all_ms(4e8, 8, intra_node_link(h100)));
    // 32 ranks on 4 nodes (DeepSeek-V3's EP 32 on B200s, one per GPU): of what a rank sends,
    // 7/32 stays in its node and 24/32 crosses the network, at once; the network's share is the
    // slower. Before, all of the 31/32 was taken at the network's rate.
    const double expected =
        std::max(7.0 / 32.0 * 4e8 / intra_bytes_per_ms, 24.0 / 32.0 * 4e8 / network_bytes_per_ms) +
        latency_ms;
    BOOST_TEST(all_to_all_ms(4e8, h100, 0, 1, 32) == expected, tt::tolerance(1e-12));
    BOOST_TEST(all_to_all_ms(4e8, h100, 0, 1, 32) < all_to_all_ms(4e8, 32, network_link(h100)));
    // Ranks 2 apart (expert tensor parallel 2): 4 of 16 in a node; 8 apart: one a node, all of
    // it across.
    BOOST_TEST(
        all_to_all_ms(4e8, h100, 0, 2, 16) == std::max(3.0 / 16.0 * 4e8 / intra_bytes_per_ms,
                                                       12.0 / 16.0 * 4e8 / network_bytes_per_ms) +
                                                  latency_ms,
        tt::tolerance(1e-12));
    BOOST_TEST(all_to_all_ms(4e8, h100, 0, 8, 4) == all_to_all_ms(4e8, 4, network_link(h100)),
               tt::tolerance(1e-12));
    // One rank or nothing to send: no time.
    BOOST_TEST(all_to_all_ms(4e8, h100, 0, 1, 1) == 0.0);
    BOOST_TEST(all_to_all_ms(0.0, h100, 0, 1, 32) == 0.0);
}

BOOST_AUTO_TEST_CASE(a_group_crosses_the_network_when_its_ranks_span_nodes) {
    const Cluster h100 = without_latency(cluster_of_device("H100"));
    BOOST_TEST(h100.devices_per_node == 8u);
    // 8 tensor-parallel ranks of a node; 4 replicas 2 apart (ranks 0..6); 2 replicas 8 apart.
    BOOST_TEST(group_link(h100, 0, 1, 8).gb_s == 450.0);
    BOOST_TEST(group_link(h100, 0, 2, 4).gb_s == 450.0);
    BOOST_TEST(group_link(h100, 0, 8, 2).gb_s == 50.0);
    // Ranks 4..10 straddle the first two nodes.
    BOOST_TEST(group_link(h100, 4, 2, 4).gb_s == 50.0);
    BOOST_TEST(group_link(h100, 8, 2, 4).gb_s == 450.0);
}

// A cluster's network latency is NCCL's per step of a ring over the network unless the
// description gives one: 14 us (hwLatencies[NET][Ring][Simple], src/graph/tuning.cc at
// NVIDIA/nccl 5067397c). A send across nodes waits for it once, a ring once per step.
BOOST_AUTO_TEST_CASE(the_network_latency_is_nccls_per_step) {
    const Cluster h100 = cluster_of_device("H100");
    BOOST_TEST(h100.network_latency_us == 14.0);
    BOOST_TEST(point_to_point_ms(5e7, group_link(h100, 0, 8, 2)) == 1.0 + 0.014,
               tt::tolerance(1e-12));
    // A reduce-scatter of 1 GB over 4 ranks, one a node: 3 steps.
    BOOST_TEST(reduce_scatter_ms(1e9, 4, collective_link(h100, 0, 8, 4)) ==
                   0.75 * 1e9 / network_bytes_per_ms + 3 * 0.014,
               tt::tolerance(1e-12));
    // Inside a node, none.
    BOOST_TEST(reduce_scatter_ms(1e9, 8, collective_link(h100, 0, 1, 8)) ==
                   7.0 / 8.0 * 1e9 / intra_bytes_per_ms,
               tt::tolerance(1e-12));
}

// A ring collective over nodes runs on the adapters of the group's ranks in a node (NCCL: a ring
// channel per adapter, src/graph/tuning.cc at NVIDIA/nccl 5067397c), at most at the node's links;
// a point-to-point send crosses one adapter.
BOOST_AUTO_TEST_CASE(a_collective_over_nodes_runs_on_its_ranks_adapters) {
    Cluster h100 = without_latency(cluster_of_device("H100"));
    h100.network_latency_us = 5.0;
    // Inside a node: the node's links, no latency.
    BOOST_TEST(collective_link(h100, 0, 2, 4).gb_s == 450.0);
    BOOST_TEST(collective_link(h100, 0, 2, 4).latency_us == 0.0);
    // One rank a node (8 apart): one adapter, as a send.
    BOOST_TEST(collective_link(h100, 0, 8, 4).gb_s == 50.0);
    BOOST_TEST(collective_link(h100, 0, 8, 4).latency_us == 5.0);
    // 2 and 4 ranks a node: 2 and 4 adapters.
    BOOST_TEST(collective_link(h100, 0, 4, 4).gb_s == 100.0);
    BOOST_TEST(collective_link(h100, 0, 2, 8).gb_s == 200.0);
    BOOST_TEST(collective_link(h100, 0, 2, 8).latency_us == 5.0);
    // 8 ranks a node: 8 x 50 = 400 GB/s, under NVLink's 450; with faster adapters, NVLink's.
    BOOST_TEST(collective_link(h100, 0, 1, 16).gb_s == 400.0);
    h100.network_gb_s = 100.0;
    BOOST_TEST(collective_link(h100, 0, 1, 16).gb_s == 450.0);
    // A group that starts mid-node counts the ranks of its first node: ranks 4..18, 2 apart,
    // hold 2 in the node of rank 4.
    BOOST_TEST(collective_link(h100, 4, 2, 8).gb_s == 200.0);
    // The times follow: a reduce-scatter of 1 GB over 16 ranks, 8 a node.
    h100.network_gb_s = 50.0;
    BOOST_TEST(reduce_scatter_ms(1e9, 16, collective_link(h100, 0, 1, 16)) ==
                   15.0 / 16.0 * 1e9 / 400e6 + 15 * 0.005,
               tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(the_pipeline_sends_a_micro_batch_of_hidden_states_per_boundary) {
    const Cluster h100 = without_latency(cluster_of_device("H100"));
    const ShapeSizes shape = shape_sizes(dense_shape, "shape.json");
    // s b h 16-bit values, / t with sequence parallelism: 2 x 2048 x 1024 / 2 bytes.
    const double bytes = 2.0 * 2048 * 1024 / 2;
    // t = 2, d = 2: a stage is 4 ranks; boundaries at ranks 3|4 (node 0), 7|8 (across),
    // 11|12 (node 1).
    const std::vector<double> one_f_one_b =
        pipeline_transfer_ms(shape, h100, {4, 2}, ppb::Schedule::one_f_one_b);
    BOOST_TEST_REQUIRE(one_f_one_b.size() == 3u);
    BOOST_TEST(one_f_one_b[0] == bytes / intra_bytes_per_ms, tt::tolerance(1e-12));
    BOOST_TEST(one_f_one_b[1] == bytes / network_bytes_per_ms, tt::tolerance(1e-12));
    BOOST_TEST(one_f_one_b[2] == bytes / intra_bytes_per_ms, tt::tolerance(1e-12));
    // The interleaved schedule also wraps from stage 3 (ranks 12..15) to stage 0: across nodes.
    const std::vector<double> interleaved =
        pipeline_transfer_ms(shape, h100, {4, 2}, ppb::Schedule::interleaved);
    BOOST_TEST_REQUIRE(interleaved.size() == 4u);
    BOOST_TEST(interleaved[3] == bytes / network_bytes_per_ms, tt::tolerance(1e-12));
    // One stage: nothing to send.
    BOOST_TEST(pipeline_transfer_ms(shape, h100, {1, 8}, ppb::Schedule::one_f_one_b).empty());
}

BOOST_AUTO_TEST_CASE(each_stage_synchronises_its_own_parameters_over_the_replicas) {
    const Cluster h100 = without_latency(cluster_of_device("H100"));
    const ShapeSizes shape = shape_sizes(dense_shape, "shape.json");
    BOOST_TEST(shape.groups.at(0).parameters == layer_parameters);
    BOOST_TEST(shape.embedding_parameters == embedding_parameters);
    // The model's FLOPs per micro-batch, forward and backward: 8 layers of 2bsh(h + 2h) + 4bs^2h
    // + 2bsh^2 (attention) + 4bshF (MLP) = 68 719 476 736, the LM head's 2bshV, times 3.
    BOOST_TEST(shape.model_flops_per_micro_batch ==
               3.0 * (8 * 68'719'476'736.0 + 134'217'728'000.0));
    BOOST_TEST(shape.tokens_per_micro_batch == 2048.0);
    const TimeModel time =
        time_model_from_shape(dense_shape, "shape.json", ShapeTimeSettings{400.0});

    // p = 2, d = 4, t = 2: stage 0 holds 4 layers and the embedding, reduce-scattered in fp32
    // and all-gathered in bf16 (distributed optimizer) over ranks 0, 2, 4, 6 (NVLink).
    const double stage0 = 4 * layer_parameters + embedding_parameters;
    const double expected0 = 0.75 * stage0 * (4.0 + 2.0) / intra_bytes_per_ms;
    BOOST_TEST(data_parallel_sync_ms(shape, h100, {2, 4}, time, stage_with(0, 4)) == expected0,
               tt::tolerance(1e-12));
    // Stage 1 holds 4 layers and the LM head (ranks 8..14, the second node).
    const double stage1 = 4 * layer_parameters + embedding_parameters + 1024;
    const double expected1 = 0.75 * stage1 * 6.0 / intra_bytes_per_ms;
    BOOST_TEST(data_parallel_sync_ms(shape, h100, {2, 4}, time, stage_with(1, 4)) == expected1,
               tt::tolerance(1e-12));
    // The slowest stage sets the plan's.
    Plan plan;
    plan.stages = {stage_with(0, 4), stage_with(1, 4)};
    BOOST_TEST(data_parallel_sync_ms(shape, h100, {2, 4}, time, plan) == expected1,
               tt::tolerance(1e-12));
    // 8 replicas span two nodes, 4 in each: 4 adapters' rate.
    BOOST_TEST(data_parallel_sync_ms(shape, h100, {2, 8}, time, stage_with(0, 4)) ==
                   7.0 / 8.0 * stage0 * 6.0 / (4.0 * network_bytes_per_ms),
               tt::tolerance(1e-12));
    // One replica: nothing to synchronise.
    BOOST_TEST(data_parallel_sync_ms(shape, h100, {2, 1}, time, stage_with(0, 4)) == 0.0);

    // Without the distributed optimizer the gradients are all-reduced; with one stage a tied
    // LM head is the embedding, counted once (its final norm beside it).
    std::string plain = dense_shape;
    plain.replace(plain.find(R"("distributed_optimizer": true)"),
                  std::string(R"("distributed_optimizer": true)").size(),
                  R"("distributed_optimizer": false, "untie_embeddings": false)");
    const ShapeSizes tied = shape_sizes(plain, "plain.json");
    const double whole = 8 * layer_parameters + embedding_parameters + 1024;
    BOOST_TEST(data_parallel_sync_ms(tied, h100, {1, 4}, time, stage_with(0, 8)) ==
                   2.0 * 0.75 * whole * 4.0 / intra_bytes_per_ms,
               tt::tolerance(1e-12));
}

// The routed experts synchronise over the ranks that hold the same experts: with t = 1, d = 8
// and EP = 4, two groups of 4 ranks, 4 apart.
BOOST_AUTO_TEST_CASE(routed_experts_synchronise_over_the_expert_data_parallel_ranks) {
    const std::string moe_shape =
        R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 2,
            "tensor_parallel": 1, "distributed_optimizer": true,
            "moe": {"num_experts": 8, "top_k": 2, "moe_ffn_hidden_size": 1024,
                    "expert_parallel": 4}})";
    const Cluster h100 = without_latency(cluster_of_device("H100"));
    const ShapeSizes shape = shape_sizes(moe_shape, "moe.json");
    BOOST_TEST_REQUIRE(shape.groups.size() == 1u);
    // Attention 4h^2 + 2h norms + router h E; the routed experts 8 x 3 h F_e / 4 per rank.
    const double dense = 4.0 * 1024 * 1024 + 2 * 1024 + 1024 * 8;
    const double experts = 8.0 * 3 * 1024 * 1024 / 4;
    BOOST_TEST(shape.groups[0].parameters == dense);
    BOOST_TEST(shape.groups[0].expert_parameters == experts);
    const TimeModel time = time_model_from_shape(moe_shape, "moe.json", ShapeTimeSettings{400.0});
    // One stage of both layers, the embedding and the LM head (untied), over ranks 0..7 (one
    // node) for the rest, ranks 0 and 4 for the experts.
    const double rest = 2 * dense + 2 * 32000.0 * 1024 + 1024;
    const double expected =
        7.0 / 8.0 * rest * 6.0 / intra_bytes_per_ms + 0.5 * 2 * experts * 6.0 / intra_bytes_per_ms;
    BOOST_TEST(data_parallel_sync_ms(shape, h100, {1, 8}, time, stage_with(0, 2)) == expected,
               tt::tolerance(1e-12));
}

// DeepEP's and HybridEP's dispatch (moe.token_dispatcher "flex") sends a token once to each node
// that holds one of its experts: DeepSeek-V3's 256 experts, 8 a token, over EP 32 on 4 H100
// nodes (64 experts a node). Balanced routing misses a node with probability C(192, 8) / C(256,
// 8), about 0.097, so a token crosses the network to 3 x 0.903 = 2.71 nodes where the all-to-all
// dispatcher sends 8 x 24/32 = 6 copies.
BOOST_AUTO_TEST_CASE(a_flex_dispatch_sends_a_token_once_to_each_node_of_its_experts) {
    double miss = 1.0;
    for (int i = 0; i < 8; ++i)
        miss *= (192.0 - i) / (256.0 - i);
    BOOST_TEST(expected_share_hit(256, 64, 8) == 1.0 - miss, tt::tolerance(1e-12));
    BOOST_TEST(miss == 0.0968, tt::tolerance(0.01));
    BOOST_TEST(expected_share_hit(256, 256, 8) == 1.0);
    BOOST_TEST(expected_share_hit(256, 0, 8) == 0.0);
    const Cluster h100 = without_latency(cluster_of_device("H100"));
    const double token = 7168.0 * 2;  // one token's hidden state, 16-bit
    double rank_miss = 1.0;           // 8 experts a rank
    for (int i = 0; i < 8; ++i)
        rank_miss *= (248.0 - i) / (256.0 - i);
    const double within = token * 7 * (1.0 - rank_miss) / intra_bytes_per_ms;
    const double beyond = token * 3 * (1.0 - miss) / network_bytes_per_ms;
    BOOST_TEST(once_per_node_dispatch_ms(token, 256, 8, h100, 0, 1, 32) == std::max(within, beyond),
               tt::tolerance(1e-12));
    // The all-to-all dispatcher's copies, for the same token: 2.2 x the network bytes.
    BOOST_TEST(all_to_all_ms(8 * token, h100, 0, 1, 32) /
                       once_per_node_dispatch_ms(token, 256, 8, h100, 0, 1, 32) ==
                   6.0 / (3.0 * (1.0 - miss)),
               tt::tolerance(1e-9));
    // Inside one node: once to each other rank that holds one of the token's experts.
    BOOST_TEST(once_per_node_dispatch_ms(token, 256, 8, h100, 0, 1, 8) ==
                   token * 7 * expected_share_hit(256, 32, 8) / intra_bytes_per_ms,
               tt::tolerance(1e-12));
    BOOST_TEST(once_per_node_dispatch_ms(token, 256, 8, h100, 0, 1, 1) == 0.0);

    // Read from a shape: the MoE layer's forward carries it, and the time model refuses another
    // dispatcher by name.
    const auto shape = [](const std::string& dispatcher) {
        return R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 2,
            "tensor_parallel": 1, "moe": {"num_experts": 64, "top_k": 8,
            "moe_ffn_hidden_size": 1024, "expert_parallel": 32)" +
               dispatcher + "}}";
    };
    const ShapeSizes alltoall = shape_sizes(shape(""), "moe.json");
    const ShapeSizes flex = shape_sizes(shape(R"(, "token_dispatcher": "flex")"), "moe.json");
    BOOST_TEST(!alltoall.dispatch_once_per_node);
    BOOST_TEST(flex.dispatch_once_per_node);
    BOOST_TEST(flex.num_experts == 64.0);
    BOOST_TEST(flex.top_k == 8.0);
    const LayerCommunication a = layer_communication_ms(alltoall, alltoall.groups[0], h100);
    const LayerCommunication f = layer_communication_ms(flex, flex.groups[0], h100);
    const double tokens = 2048.0;
    BOOST_TEST(f.expert_forward ==
                   2.0 * once_per_node_dispatch_ms(1024.0 * 2, 64, 8, h100, 0, 1, 32) * tokens,
               tt::tolerance(1e-9));
    BOOST_TEST(f.expert_forward < a.expert_forward);
    try {
        (void)shape_sizes(shape(R"(, "token_dispatcher": "allgather")"), "moe.json");
        BOOST_ERROR("accepted token_dispatcher allgather");
    } catch (const ppb::InputError& e) {
        BOOST_TEST(std::string(e.what()).find("moe.json: moe.token_dispatcher: expected "
                                              "\"alltoall\" or \"flex\"") != std::string::npos,
                   e.what());
    }
}

// Megatron-LM's overlap: the gradients' buckets reduced during the stage's last backward, the
// weights gathered during the next forward; what outlasts the window is waited for, and at least
// the last bucket's share (40 M of 400 M parameters here: a tenth).
BOOST_AUTO_TEST_CASE(overlap_hides_the_synchronisation_behind_the_stage_but_its_last_bucket) {
    StagePlan stage = stage_with(1, 4);
    ChunkPlan chunk;
    chunk.forward_time = 10.0;
    chunk.backward_time = 20.0;
    stage.chunks = {chunk};
    const DataParallelSync sync{30.0, 12.0, 400e6};
    const double bucket = default_bucket_parameters(8);
    BOOST_TEST(bucket == 40e6);
    BOOST_TEST(default_bucket_parameters(64) == 64e6);
    BOOST_TEST(exposed_sync_ms(sync, stage, {}, bucket) == 42.0);
    BOOST_TEST(exposed_sync_ms(sync, stage, {true, false}, bucket) == 10.0 + 12.0);
    BOOST_TEST(exposed_sync_ms(sync, stage, {true, true}, bucket) == 10.0 + 2.0);
    // A backward long enough hides all but the last bucket.
    stage.chunks[0].backward_time = 100.0;
    stage.chunks[0].forward_time = 50.0;
    BOOST_TEST(exposed_sync_ms(sync, stage, {true, true}, bucket) == 3.0 + 1.2,
               tt::tolerance(1e-12));
    // Chunks add up: two chunks of a stage give one window.
    stage.chunks = {chunk, chunk};
    BOOST_TEST(exposed_sync_ms(sync, stage, {true, true}, bucket) == 3.0 + 1.2,
               tt::tolerance(1e-12));
}

// A layer's collectives: t = 2 with sequence parallelism all-gathers and reduce-scatters one
// micro-batch's hidden states (2048 x 1024 x 2 bytes) twice each way over the node's NVLink, half
// of it crossing; an MoE layer of EP = 4 adds dispatch and combine all-to-alls of its token
// copies (top_k x s x b x h x 2 bytes), three quarters crossing.
BOOST_AUTO_TEST_CASE(a_layer_takes_its_tensor_parallel_collectives_and_expert_all_to_all) {
    // The collectives alone: a layer's fixed time has a test of its own.
    Cluster h100 = without_latency(cluster_of_device("H100"));
    h100.layer_overhead_us = 0.0;
    const ShapeSizes shape = shape_sizes(dense_shape, "shape.json");
    const double hidden_bytes = 2048.0 * 1024 * 2;
    const double gather = 0.5 * hidden_bytes / intra_bytes_per_ms;
    const LayerCommunication dense = layer_communication_ms(shape, shape.groups.at(0), h100);
    BOOST_TEST(dense.forward() == 4.0 * gather, tt::tolerance(1e-12));
    BOOST_TEST(dense.backward() == 4.0 * gather, tt::tolerance(1e-12));
    // Without sequence parallelism: two all-reduces each way, the same bytes on the links.
    std::string plain = dense_shape;
    plain.replace(plain.find(R"("sequence_parallel": true)"),
                  std::string(R"("sequence_parallel": true)").size(),
                  R"("sequence_parallel": false)");
    const ShapeSizes replicated = shape_sizes(plain, "plain.json");
    BOOST_TEST(
        layer_communication_ms(replicated, replicated.groups.at(0), h100).forward() == 4.0 * gather,
        tt::tolerance(1e-12));
    // The collectives land in the layer times made for the cluster: the forward gains the
    // forward's, forward + backward both.
    const TimeModel alone =
        time_model_from_shape(dense_shape, "shape.json", ShapeTimeSettings{400.0});
    const TimeModel on_h100 =
        time_model_from_shape(dense_shape, "shape.json", ShapeTimeSettings{400.0, h100});
    BOOST_TEST(on_h100.body_forward - alone.body_forward == dense.forward(), tt::tolerance(1e-9));
    BOOST_TEST(on_h100.body_time[PPB_KIND_NONE] - alone.body_time[PPB_KIND_NONE] ==
                   dense.forward() + dense.backward(),
               tt::tolerance(1e-9));

    const std::string moe_shape =
        R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 2,
            "tensor_parallel": 1, "moe": {"num_experts": 8, "top_k": 2, "expert_parallel": 4}})";
    const ShapeSizes moe = shape_sizes(moe_shape, "moe.json");
    const LayerCommunication routed = layer_communication_ms(moe, moe.groups.at(0), h100);
    const double copies = 2.0 * 2048 * 1024 * 2;
    BOOST_TEST(routed.forward() == 2.0 * 0.75 * copies / intra_bytes_per_ms, tt::tolerance(1e-12));
    BOOST_TEST(routed.backward() == routed.forward());
    BOOST_TEST(routed.tensor_parallel_forward == 0.0);

    // --tp-comm-overlap: the collectives run under the layer's matrix products, half of them
    // exposed whatever (Cluster::overlap_exposed_fraction); at 400 TFLOP/s the products outlast
    // the other half, so half is waited for; at 10 000 TFLOP/s little hides.
    BOOST_TEST(h100.overlap_exposed_fraction == 0.5);
    const double slow_compute = alone.body_forward;
    BOOST_TEST_REQUIRE(slow_compute > 0.5 * dense.forward());
    const TimeModel overlapped =
        time_model_from_shape(dense_shape, "shape.json", ShapeTimeSettings{400.0, h100, true});
    BOOST_TEST(overlapped.body_forward == alone.body_forward + 0.5 * dense.forward(),
               tt::tolerance(1e-9));
    // A measured share replaces it: none exposed hides all the products can hold, all of it is
    // no overlap.
    for (const double share : {0.0, 0.6, 1.0}) {
        Cluster measured = h100;
        measured.overlap_exposed_fraction = share;
        const TimeModel m = time_model_from_shape(dense_shape, "shape.json",
                                                  ShapeTimeSettings{400.0, measured, true});
        BOOST_TEST(
            m.body_forward == alone.body_forward + share * dense.forward() +
                                  std::max((1.0 - share) * dense.forward() - slow_compute, 0.0),
            tt::tolerance(1e-9));
    }
    // Without sequence parallelism Megatron-LM refuses --tp-comm-overlap
    // (megatron/training/arguments.py at d98e8a64dd): the all-reduces are waited for.
    BOOST_TEST(time_model_from_shape(plain, "plain.json", ShapeTimeSettings{400.0, h100, true})
                   .body_forward ==
               time_model_from_shape(plain, "plain.json", ShapeTimeSettings{400.0, h100, false})
                   .body_forward);
    BOOST_TEST(time_model_from_shape(plain, "plain.json", ShapeTimeSettings{400.0, h100, false})
                   .body_forward > overlapped.body_forward);
    Cluster none_hidden = h100;
    none_hidden.overlap_exposed_fraction = 1.0;
    BOOST_TEST(time_model_from_shape(dense_shape, "shape.json",
                                     ShapeTimeSettings{400.0, none_hidden, true})
                       .body_forward == on_h100.body_forward,
               tt::tolerance(1e-12));
    const TimeModel fast_alone =
        time_model_from_shape(dense_shape, "shape.json", ShapeTimeSettings{1e4});
    const TimeModel fast_overlapped =
        time_model_from_shape(dense_shape, "shape.json", ShapeTimeSettings{1e4, h100, true});
    BOOST_TEST(fast_overlapped.body_forward == dense.forward(), tt::tolerance(1e-9));
    BOOST_TEST(fast_overlapped.body_time[PPB_KIND_NONE] ==
                   3.0 * fast_alone.body_forward + dense.forward() + dense.backward() -
                       fast_alone.body_forward - 2.0 * fast_alone.body_forward,
               tt::tolerance(1e-9));
}

// The combined 1F1B (ShapeTimeSettings::expert_overlap, Megatron-LM's
// --overlap-moe-expert-parallel-comm): an MoE layer's forward all-to-all runs under the paired
// backward's compute (twice the forward's), its backward all-to-all under the paired forward's;
// each costs the cluster's exposed share and what of the rest outlasts that compute. A dense
// layer has no all-to-all and keeps its time.
BOOST_AUTO_TEST_CASE(the_combined_schedule_hides_the_expert_all_to_all_under_the_paired_pass) {
    Cluster h100 = without_latency(cluster_of_device("H100"));
    h100.layer_overhead_us = 0.0;
    const std::string moe_shape =
        R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 2,
            "tensor_parallel": 1, "moe": {"num_experts": 8, "top_k": 2, "expert_parallel": 4}})";
    const ShapeSizes moe = shape_sizes(moe_shape, "moe.json");
    const double a2a = layer_communication_ms(moe, moe.groups.at(0), h100).expert_forward;
    BOOST_TEST_REQUIRE(a2a > 0.0);
    for (const double tflops : {400.0, 2000.0, 1e5}) {
        const TimeModel alone = time_model_from_shape(moe_shape, "moe.json", {tflops});
        const double compute = alone.body_forward;
        for (const double share : {0.0, 0.5, 1.0}) {
            Cluster cluster = h100;
            cluster.overlap_exposed_fraction = share;
            const TimeModel waited = time_model_from_shape(
                moe_shape, "moe.json", {.device_tflops = tflops, .cluster = cluster});
            const TimeModel combined = time_model_from_shape(
                moe_shape, "moe.json",
                {.device_tflops = tflops, .cluster = cluster, .expert_overlap = true});
            BOOST_TEST(waited.body_forward == compute + a2a, tt::tolerance(1e-9));
            const double forward =
                compute + share * a2a + std::max((1.0 - share) * a2a - 2.0 * compute, 0.0);
            const double backward =
                2.0 * compute + share * a2a + std::max((1.0 - share) * a2a - compute, 0.0);
            BOOST_TEST(combined.body_forward == forward, tt::tolerance(1e-9));
            BOOST_TEST(combined.body_time[PPB_KIND_NONE] == forward + backward,
                       tt::tolerance(1e-9));
            BOOST_TEST(combined.body_forward <= waited.body_forward + 1e-12);
            if (share == 1.0) {
                BOOST_TEST(combined.body_forward == waited.body_forward, tt::tolerance(1e-9));
            }
            // The LM head and the loss have no all-to-all.
            BOOST_TEST(combined.tail_time == waited.tail_time, tt::tolerance(1e-12));
        }
    }
    // A dense shape has none to hide.
    const TimeModel dense_waited = time_model_from_shape(dense_shape, "shape.json", {400.0, h100});
    const TimeModel dense_combined =
        time_model_from_shape(dense_shape, "shape.json",
                              {.device_tflops = 400.0, .cluster = h100, .expert_overlap = true});
    BOOST_TEST(dense_combined.body_forward == dense_waited.body_forward);
    BOOST_TEST(dense_combined.body_time[PPB_KIND_NONE] == dense_waited.body_time[PPB_KIND_NONE]);
}

// A body layer's fixed time per micro-batch (Cluster::layer_overhead_us, 100 us by default): its
// forward gains it, its backward twice it, the embedding and the LM head nothing; so two
// micro-batches of one sequence take longer than one of two, where FLOPs alone tie them.
BOOST_AUTO_TEST_CASE(a_body_layer_takes_the_clusters_fixed_time_per_micro_batch) {
    const Cluster h100 = without_latency(cluster_of_device("H100"));
    BOOST_TEST(h100.layer_overhead_us == 100.0);
    Cluster none = h100;
    none.layer_overhead_us = 0.0;
    const TimeModel with = time_model_from_shape(dense_shape, "shape.json", {400.0, h100});
    const TimeModel without = time_model_from_shape(dense_shape, "shape.json", {400.0, none});
    BOOST_TEST(with.body_forward - without.body_forward == 0.1, tt::tolerance(1e-9));
    BOOST_TEST(with.body_time[PPB_KIND_NONE] - without.body_time[PPB_KIND_NONE] == 0.3,
               tt::tolerance(1e-9));
    BOOST_TEST(with.head_time == without.head_time);
    BOOST_TEST(with.tail_time == without.tail_time);
    // A measured figure replaces it.
    Cluster measured = h100;
    measured.layer_overhead_us = 250.0;
    const TimeModel slower = time_model_from_shape(dense_shape, "shape.json", {400.0, measured});
    BOOST_TEST(slower.body_forward - without.body_forward == 0.25, tt::tolerance(1e-9));
    // Micro-batches of 1 and 2 (the shape's is 1): the same FLOPs per sequence, one fixed time
    // per micro-batch.
    std::string doubled = dense_shape;
    doubled.replace(doubled.find(R"("micro_batch_size": 1)"),
                    std::string(R"("micro_batch_size": 1)").size(), R"("micro_batch_size": 2)");
    const TimeModel pair = time_model_from_shape(doubled, "pair.json", {400.0, none});
    const TimeModel pair_with = time_model_from_shape(doubled, "pair.json", {400.0, h100});
    BOOST_TEST(2.0 * without.body_time[PPB_KIND_NONE] == pair.body_time[PPB_KIND_NONE],
               tt::tolerance(1e-6));
    BOOST_TEST(2.0 * with.body_time[PPB_KIND_NONE] - pair_with.body_time[PPB_KIND_NONE] == 0.3,
               tt::tolerance(1e-6));
}

// Sharded data parallelism (Megatron-FSDP's optim_grads_params): each unit's weights are gathered
// before its forward and again before its backward, its gradients reduce-scattered after it; a
// unit waits for what outlasts its own compute. With t = 2 and d = 8 the replicas span two nodes
// (ranks 0, 2, ..., 14), 4 in each: on adapters of 12.5 GB/s (100 Gb/s), 4 x 12.5 = 50 GB/s.
BOOST_AUTO_TEST_CASE(sharded_weights_and_gradients_move_with_each_layer) {
    Cluster h100 = without_latency(cluster_of_device("H100"));
    h100.network_gb_s = 12.5;
    std::string fsdp = dense_shape;
    fsdp.replace(fsdp.find(R"("distributed_optimizer": true)"),
                 std::string(R"("distributed_optimizer": true)").size(),
                 R"("data_parallel_sharding": "optim_grads_params")");
    const ShapeSizes shape = shape_sizes(fsdp, "fsdp.json");
    BOOST_TEST((shape.sharding == DataParallelSharding::optim_grads_params));
    BOOST_TEST(shape.distributed_optimizer());
    const TimeModel time = time_model_from_shape(fsdp, "fsdp.json", ShapeTimeSettings{400.0});
    // A layer's forward: 68 719 476 736 FLOPs over t = 2 at 400 TFLOP/s.
    const double forward = 68'719'476'736.0 / 2.0 / 400e12 * 1e3;
    BOOST_TEST(time.body_forward == forward, tt::tolerance(1e-12));

    const double gather = 7.0 / 8.0 * layer_parameters * 2.0 / network_bytes_per_ms;
    const double reduce = 7.0 / 8.0 * layer_parameters * 4.0 / network_bytes_per_ms;
    const ShardedTransfers layer = sharded_transfers(shape, h100, {1, 8}, layer_parameters, 0.0);
    BOOST_TEST(layer.gather == gather, tt::tolerance(1e-12));
    BOOST_TEST(layer.reduce == reduce, tt::tolerance(1e-12));

    // Both outlast the layer's compute: the forward waits for the gather, the backward for the
    // gather and the reduction beyond its 2 x forward.
    const TimeModel sharded = with_sharded_transfers(time, shape, h100, {1, 8});
    BOOST_TEST(sharded.body_forward == gather, tt::tolerance(1e-12));
    BOOST_TEST(sharded.body_time[PPB_KIND_NONE] == gather + (gather + reduce),
               tt::tolerance(1e-12));
    BOOST_TEST(
        sharded.body_time[PPB_KIND_FULL] ==
            time.body_time[PPB_KIND_FULL] + (gather - forward) + (gather + reduce - 2.0 * forward),
        tt::tolerance(1e-12));
    // The embedding computes nothing: its gathers and reduction wait in full.
    const ShardedTransfers embedding =
        sharded_transfers(shape, h100, {1, 8}, embedding_parameters, 0.0);
    BOOST_TEST(sharded.head_forward == embedding.gather, tt::tolerance(1e-12));
    BOOST_TEST(sharded.head_time == 2.0 * embedding.gather + embedding.reduce,
               tt::tolerance(1e-12));
    // Nothing is left for after the iteration.
    BOOST_TEST(data_parallel_sync_ms(shape, h100, {1, 8}, time, stage_with(0, 8)) == 0.0);

    // Inside a node (d = 4: ranks 0, 2, 4, 6 on NVLink) a layer's compute hides it all.
    const TimeModel hidden = with_sharded_transfers(time, shape, h100, {1, 4});
    BOOST_TEST(hidden.body_forward == time.body_forward);
    BOOST_TEST(hidden.body_time == time.body_time);

    // optim_grads shards the gradients only: reduce-scattered in every backward, the weights
    // gathered once after the step.
    std::string zero2 = fsdp;
    zero2.replace(zero2.find("optim_grads_params"), std::string("optim_grads_params").size(),
                  "optim_grads");
    const ShapeSizes grads = shape_sizes(zero2, "zero2.json");
    const TimeModel reduced = with_sharded_transfers(time, grads, h100, {1, 8});
    BOOST_TEST(reduced.body_forward == time.body_forward);
    BOOST_TEST(reduced.body_time[PPB_KIND_NONE] == forward + reduce, tt::tolerance(1e-12));
    const double whole = 8 * layer_parameters + 2 * embedding_parameters + 1024;
    BOOST_TEST(data_parallel_sync_ms(grads, h100, {1, 8}, time, stage_with(0, 8)) ==
                   7.0 / 8.0 * whole * 2.0 / network_bytes_per_ms,
               tt::tolerance(1e-12));
    // The distributed optimizer's (optim) and no sharding's times are their own.
    const ShapeSizes optim = shape_sizes(dense_shape, "shape.json");
    BOOST_TEST((optim.sharding == DataParallelSharding::optim));
    BOOST_TEST(with_sharded_transfers(time, optim, h100, {1, 8}).body_time == time.body_time);
}

BOOST_AUTO_TEST_CASE(a_sharding_is_one_megatron_names) {
    std::string wrong = dense_shape;
    wrong.replace(wrong.find(R"("distributed_optimizer": true)"),
                  std::string(R"("distributed_optimizer": true)").size(),
                  R"("data_parallel_sharding": "zero3")");
    BOOST_CHECK_EXCEPTION(
        (void)shape_sizes(wrong, "wrong.json"), ppb::InputError, [](const ppb::InputError& e) {
            return std::string(e.what()) ==
                   "wrong.json: data_parallel_sharding: expected one of no_shard, optim, "
                   "optim_grads, optim_grads_params (Megatron-LM's "
                   "--data-parallel-sharding-strategy), got \"zero3\"";
        });
    std::string both = dense_shape;
    both.replace(both.find(R"("distributed_optimizer": true)"),
                 std::string(R"("distributed_optimizer": true)").size(),
                 R"("distributed_optimizer": true, "data_parallel_sharding": "no_shard")");
    BOOST_CHECK_EXCEPTION((void)shape_sizes(both, "both.json"), ppb::InputError,
                          [](const ppb::InputError& e) {
                              return std::string(e.what()).find(
                                         "both.json: data_parallel_sharding: no_shard with "
                                         "distributed_optimizer") != std::string::npos;
                          });
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace communication_tests
