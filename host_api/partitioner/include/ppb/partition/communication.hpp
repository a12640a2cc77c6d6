// ppb/partition/communication.hpp — what a configuration's transfers cost on a cluster.
//
// The algorithm, before the code. A transfer's time is its bytes over the bandwidth of the
// slowest link it crosses, plus that link's latency per step:
//
//   point to point   bytes / B + L
//   ring all-gather  (n - 1) / n x bytes / B + (n - 1) L   (bytes: the gathered whole)
//   reduce-scatter   the same (bytes: the whole before scattering)
//   all-reduce       reduce-scatter + all-gather
//   all-to-all       (n - 1) / n x bytes / B + L           (bytes: what one rank sends in all;
//                    its sends go at once: one latency)
//
// An all-to-all whose ranks span nodes sends each rank's share for the k ranks of its own node
// over the node's links and the rest over the network, at once (NCCL posts every send of an
// all-to-all together): max((k - 1) / n x bytes / B_node, (n - k) / n x bytes / B_network)
// + L_network.
//
// with B the link's bandwidth per device and direction (ppb::partition::Cluster: inside the
// scale-up domain, or the network's across it) and L its latency (0 inside a node, the cluster's
// network_latency_us across). Which link a group crosses follows Megatron-LM's rank order
// (parallel_state.py, order "tp-cp-ep-dp-pp": tensor-parallel ranks adjacent, then
// data-parallel, pipeline stages outermost): the t tensor-parallel ranks of a stage are
// consecutive, its d data-parallel replicas are t apart, and stage i's ranks start at i x t x d.
// A group stays inside a node when all its ranks fall in one node of devices_per_node devices.
//
// A ring collective (all-gather, reduce-scatter, all-reduce) whose group spans nodes, with k of
// its ranks in each node, runs at min(B_node, k x B_network) per rank: NCCL builds one ring
// channel per network adapter it can reach and sums their inter-node bandwidth (busBw =
// nChannels x bwInter, src/graph/tuning.cc at NVIDIA/nccl 5067397c), and each device of a node
// has its own adapter (the device table's NETWORK is per device), so the k ranks' k adapters
// carry the group's traffic while each ring still crosses every node's NVLink. A point-to-point
// transfer, and each hop of the context-parallel ring, crosses one adapter: B_network.
//
// A configuration (tensor parallel t, pipeline degree p, data parallel d) pays, per iteration:
//   - between stages, per micro-batch and direction, one micro-batch's hidden states (s x b x h
//     16-bit values, / t with sequence parallelism): pipeline_transfer_ms per boundary, which the
//     simulated schedule waits for (ppb::SimulationInput::comm_time);
//   - after the last backward, the data-parallel gradient synchronisation of each stage: its
//     gradients reduce-scattered and its parameters all-gathered with the distributed optimizer
//     (sharding optim), all-reduced without it (no_shard), over the d replicas (the routed
//     experts over the expert-data-parallel ranks); with optim_grads the gradients are
//     reduce-scattered in every backward instead, and with optim_grads_params the weights are
//     gathered per layer too (with_sharded_transfers: the layers' times carry them), nothing
//     left for the end but optim_grads' weight gather. Without overlap (Megatron-LM's default) all
//     of it waits; with --overlap-grad-reduce the gradients' buckets are reduced while the stage's
//     last backward runs, with --overlap-param-gather the weights gathered while the next forward
//     runs, so only what outlasts that window, and at least the last bucket's share, is exposed
//     (exposed_sync_ms). The slowest stage's exposed synchronisation is added to the
//     iteration;
// and, per body layer and micro-batch, its tensor-parallel collectives and an MoE layer's expert
// all-to-all (layer_communication_ms), which the layer times from a shape include when they are
// made for a cluster (ppb/partition/shape_time.hpp).
// Not yet counted: context-parallel exchanges, overlap of the layers' collectives with their
// compute.
#ifndef PPB_PARTITION_COMMUNICATION_HPP
#define PPB_PARTITION_COMMUNICATION_HPP

#include <ppb/partition/cluster.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/search.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/schedule.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace ppb::partition {

// One kind of link: bandwidth per device and direction, latency per step.
struct Link {
    double gb_s = 0.0;  // 10^9 bytes per second
    double latency_us = 0.0;
};

[[nodiscard]] Link intra_node_link(const Cluster& cluster) noexcept;
[[nodiscard]] Link network_link(const Cluster& cluster) noexcept;

// The link a group of `size` ranks, `stride` apart from `first`, crosses: inside a node when
// they all fall in the node of `first`, else the network.
[[nodiscard]] Link group_link(const Cluster& cluster, std::uint64_t first, std::uint64_t stride,
                              std::uint64_t size) noexcept;

// The link a ring collective over that group runs at: group_link's inside a node; across nodes
// the network's latency and min(B_node, k x B_network), k the group's ranks in `first`'s node.
[[nodiscard]] Link collective_link(const Cluster& cluster, std::uint64_t first,
                                   std::uint64_t stride, std::uint64_t size) noexcept;

// Times in ms of the transfers above; 0 for one rank or no bytes.
[[nodiscard]] double point_to_point_ms(double bytes, const Link& link) noexcept;
[[nodiscard]] double all_gather_ms(double bytes, std::uint64_t ranks, const Link& link) noexcept;
[[nodiscard]] double reduce_scatter_ms(double bytes, std::uint64_t ranks,
                                       const Link& link) noexcept;
[[nodiscard]] double all_reduce_ms(double bytes, std::uint64_t ranks, const Link& link) noexcept;
[[nodiscard]] double all_to_all_ms(double bytes, std::uint64_t ranks, const Link& link) noexcept;
// The all-to-all of `ranks` ranks `stride` apart from `first` on `cluster`: each link's share
// (above), with the ranks of `first`'s node as every node's.
[[nodiscard]] double all_to_all_ms(double bytes, const Cluster& cluster, std::uint64_t first,
                                   std::uint64_t stride, std::uint64_t ranks) noexcept;

// The chance that a token routed to `top_k` of `experts` experts, uniformly (the published MoE
// runs force balanced routing), picks at least one of `held` of them: 1 - C(E - held, k) / C(E, k).
[[nodiscard]] double expected_share_hit(double experts, double held, double top_k) noexcept;
// DeepEP's and HybridEP's dispatch or combine (moe.token_dispatcher "flex") over `ranks` ranks
// `stride` apart from `first`, each rank sending `token_bytes` per token once to each other
// node that holds one of its top_k experts (over the network: (N - 1) x the chance a node of
// E / N experts is hit, N nodes) and once to each other rank of its own node that does (over
// the node's links: (k_node - 1) x the chance for E / EP experts), at once; the slower, plus
// the network's latency once. The forwarding inside the receiving node is left out.
[[nodiscard]] double once_per_node_dispatch_ms(double token_bytes, double experts, double top_k,
                                               const Cluster& cluster, std::uint64_t first,
                                               std::uint64_t stride, std::uint64_t ranks) noexcept;

// One body layer's collectives per micro-batch on one tensor-parallel rank, in ms, forward and
// backward. With t > 1: sequence parallelism all-gathers the hidden states (s x b x h x 2 bytes)
// before the attention's and the MLP's first linear and reduce-scatters them after their last
// (2 all-gathers + 2 reduce-scatters forward, their transposes backward; the backward's
// re-gather of the inputs for the weight gradients is overlapped with the input gradients, as
// Megatron-LM overlaps it); without it, 2 all-reduces each way; over the t consecutive ranks. An
// MoE layer's router sends each of its tokens to top_k experts and back (dispatch and combine:
// 2 all-to-alls forward, 2 backward, of routed_elements x 2 bytes) over the expert-parallel
// ranks, expert_tensor_parallel apart, each link taking its share when they span nodes.
// With context parallelism (Transformer Engine's ring, cp_comm_type p2p), the attention passes
// each rank's keys and values around the cp ranks, t apart: cp - 1 sends of key_value_elements
// x 2 bytes forward, twice that backward (the keys and values again, and their gradients); the
// ring overlaps each send with the previous step's attention (exposed only beyond it: the layer
// times' business, ppb/partition/shape_time.hpp).
struct LayerCommunication {
    double tensor_parallel_forward = 0.0;
    double tensor_parallel_backward = 0.0;
    double expert_forward = 0.0;
    double expert_backward = 0.0;
    double context_parallel_forward = 0.0;
    double context_parallel_backward = 0.0;
    [[nodiscard]] double forward() const noexcept {
        return tensor_parallel_forward + expert_forward + context_parallel_forward;
    }
    [[nodiscard]] double backward() const noexcept {
        return tensor_parallel_backward + expert_backward + context_parallel_backward;
    }
};
[[nodiscard]] LayerCommunication layer_communication_ms(const ShapeSizes& shape,
                                                        const ShapeSizes::Group& group,
                                                        const Cluster& cluster);

// The configuration whose transfers are timed.
struct ParallelLayout {
    std::uint32_t pipeline = 1;       // p
    std::uint32_t data_parallel = 1;  // d
};

// Per boundary between stages i and i + 1, the time one micro-batch's hidden states take from
// one stage to the next, and for the interleaved schedules the wrap from stage p - 1 to stage 0:
// the comm_time of the simulated schedule (ppb::comm_boundaries entries; none for p = 1).
[[nodiscard]] std::vector<double> pipeline_transfer_ms(const ShapeSizes& shape,
                                                       const Cluster& cluster,
                                                       const ParallelLayout& layout,
                                                       Schedule schedule);

// The data-parallel synchronisation of one stage holding `plan_stage`'s body layers (per group
// of the shape, by the time model's group names), the embedding on stage 0 and the LM head on
// the last stage: its gradients' reduction and (distributed optimizer) its weights' gather, in
// ms, and the parameters a rank synchronises.
struct DataParallelSync {
    double gradients = 0.0;
    double parameters = 0.0;
    double parameter_count = 0.0;
    [[nodiscard]] double total() const noexcept { return gradients + parameters; }
};
[[nodiscard]] DataParallelSync data_parallel_sync(const ShapeSizes& shape, const Cluster& cluster,
                                                  const ParallelLayout& layout,
                                                  const TimeModel& time,
                                                  const StagePlan& plan_stage);
// Its total, all exposed.
[[nodiscard]] double data_parallel_sync_ms(const ShapeSizes& shape, const Cluster& cluster,
                                           const ParallelLayout& layout, const TimeModel& time,
                                           const StagePlan& plan_stage);

// What Megatron-LM overlaps of it (--overlap-grad-reduce, --overlap-param-gather), with its
// bucket size: by default max(40 000 000, 1 000 000 x d) parameters
// (megatron/core/distributed/distributed_data_parallel.py at d98e8a64dd).
struct SyncOverlap {
    bool grad_reduce = false;
    bool param_gather = false;
};
[[nodiscard]] double default_bucket_parameters(std::uint32_t data_parallel) noexcept;

// The part of `sync` the stage waits for: each overlapped part less its window (the stage's
// backward of one micro-batch for the gradients, its forward for the weights, from
// `plan_stage`'s chunks), but at least its last bucket's share, bucket / parameter_count of it.
[[nodiscard]] double exposed_sync_ms(const DataParallelSync& sync, const StagePlan& plan_stage,
                                     const SyncOverlap& overlap, double bucket_parameters) noexcept;

// The slowest stage's exposed synchronisation, for a plan of `layout.pipeline` stages.
[[nodiscard]] double data_parallel_sync_ms(const ShapeSizes& shape, const Cluster& cluster,
                                           const ParallelLayout& layout, const TimeModel& time,
                                           const Plan& plan, const SyncOverlap& overlap = {});

// A lower bound on data_parallel_sync_ms of every plan of `layout` with the body layers of a
// one-group `time` (0 for several groups: their layers' parameters differ): some stage holds at
// least ceil(L / P) body layers, and a stage's exposed synchronisation is all of it without
// overlap, and with overlap at least the last bucket's share of it, however long the stage's
// compute (exposed_sync_ms): the least of those at ceil(L / P) and at L layers, on any stage.
[[nodiscard]] double data_parallel_sync_bound_ms(const ShapeSizes& shape, const Cluster& cluster,
                                                 const ParallelLayout& layout,
                                                 const TimeModel& time, const SyncOverlap& overlap);

// Sharded data parallelism's transfers of one unit — a body layer, the embedding, the LM head —
// per micro-batch, whole (before any overlap), in ms, as Megatron-FSDP makes them
// (megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py at 4e85d74ae9:
// _pre_forward_param_unshard gathers a unit's weights before its forward, the forward post-hook
// reshards them, the pre-backward hook gathers them again; the post-backward hook reduce-scatters
// its gradients in every backward with optim_grads and optim_grads_params
// (grad_reduce_every_bprop), asynchronously); torch FSDP2's fully_shard does the same by default
// (reshard_after_forward, a reduce-scatter per backward). `gather` is one all-gather of the
// unit's weights (param_bytes each), `reduce` one reduce-scatter of its gradients (grad_bytes
// each), over the stage's d x cp ranks t apart, the routed experts' over the expert-data-parallel
// ranks (as data_parallel_sync groups them).
struct ShardedTransfers {
    double gather = 0.0;
    double reduce = 0.0;
};
[[nodiscard]] ShardedTransfers sharded_transfers(const ShapeSizes& shape, const Cluster& cluster,
                                                 const ParallelLayout& layout, double parameters,
                                                 double expert_parameters);

// `time` with sharded data parallelism's per-unit transfers where they outlast the compute they
// run under; `time` itself for no_shard and optim, whose synchronisation is once per iteration
// (data_parallel_sync). Each unit's transfers run on their own stream while the units around
// it compute (the next unit's weights are prefetched during this one's forward), so a unit waits
// for what of them outlasts its own compute: forward max(0, gather - F) with optim_grads_params;
// backward max(0, gather + reduce - B) with optim_grads_params, max(0, reduce - B) with
// optim_grads; F and B the unit's forward and backward without recomputation (recomputation's
// longer backward is taken to hide no more). The embedding, a lookup, computes nothing: its
// gathers wait in full. Every stage's links are taken as stage 0's.
[[nodiscard]] TimeModel with_sharded_transfers(const TimeModel& time, const ShapeSizes& shape,
                                               const Cluster& cluster,
                                               const ParallelLayout& layout);

// Plans configuration `c` of `base` with `plan_one` (plan_configuration with a memory source)
// after setting the transfers between its stages (pipeline_transfer_ms) and, with sharded
// gradients or weights, the layers' own transfers (with_sharded_transfers), then adds its exposed
// data-parallel synchronisation to the outcome: what `ppb search` does with a cluster. `plan_one`
// is given that synchronisation too, to weigh its candidate plans by (AddedToIteration).
[[nodiscard]] SearchOutcome plan_with_communication(
    const ShapeSizes& shape, const Cluster& cluster, const SyncOverlap& overlap,
    const Problem& base, const Configuration& c,
    const std::function<SearchOutcome(const Problem&, const Configuration&,
                                      const AddedToIteration&)>& plan_one);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_COMMUNICATION_HPP
