// What a configuration's transfers cost on a cluster (ppb/partition/communication.hpp).
#include <ppb/partition/communication.hpp>
#include <ppb/simulator.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <numeric>

namespace ppb::partition {
namespace {

// Seconds to ms; GB/s to bytes per ms.
constexpr double bytes_per_ms_per_gb_s = 1e9 / 1e3;

// (n - 1) / n of `bytes` over the link, in n - 1 steps: a ring's all-gather or reduce-scatter,
// an all-to-all.
double ring_ms(double bytes, std::uint64_t ranks, const Link& link) noexcept {
    if (ranks <= 1 || !(bytes > 0.0) || !(link.gb_s > 0.0))
        return 0.0;
    const double n = static_cast<double>(ranks);
    return (n - 1.0) / n * bytes / (link.gb_s * bytes_per_ms_per_gb_s) +
           (n - 1.0) * link.latency_us / 1e3;
}

std::uint32_t layers_of(const KindCounts& counts) {
    return std::accumulate(counts.begin(), counts.end(), 0u);
}

}  // namespace

Link intra_node_link(const Cluster& cluster) noexcept {
    return Link{cluster.intra_node_gb_s, 0.0};
}

Link network_link(const Cluster& cluster) noexcept {
    return Link{cluster.network_gb_s, cluster.network_latency_us};
}

Link group_link(const Cluster& cluster, std::uint64_t first, std::uint64_t stride,
                std::uint64_t size) noexcept {
    const std::uint64_t node = std::max<std::uint64_t>(cluster.devices_per_node, 1);
    const std::uint64_t last = first + stride * (size > 0 ? size - 1 : 0);
    return first / node == last / node ? intra_node_link(cluster) : network_link(cluster);
}

// The ranks of a group of `ranks`, `stride` apart from `first`, in the node of `first` (`first`
// among them).
std::uint64_t ranks_in_first_node(const Cluster& cluster, std::uint64_t first, std::uint64_t stride,
                                  std::uint64_t ranks) noexcept {
    const std::uint64_t node = std::max<std::uint64_t>(cluster.devices_per_node, 1);
    if (stride == 0)
        return ranks;
    // The ranks first + i x stride below the node's end: a prefix of the group (a data-parallel
    // group can be thousands of ranks, asked for per stage and candidate plan).
    const std::uint64_t room = (first / node + 1) * node - first;
    return std::min(ranks, (room + stride - 1) / stride);
}

Link collective_link(const Cluster& cluster, std::uint64_t first, std::uint64_t stride,
                     std::uint64_t size) noexcept {
    const std::uint64_t rails = ranks_in_first_node(cluster, first, stride, size);
    if (rails >= size)
        return intra_node_link(cluster);
    // Each of the node's `rails` ranks sends through its own adapter; every ring still passes
    // through the node's links.
    const double across = static_cast<double>(rails) * cluster.network_gb_s;
    return Link{cluster.intra_node_gb_s > 0.0 ? std::min(cluster.intra_node_gb_s, across) : across,
                cluster.network_latency_us};
}

double point_to_point_ms(double bytes, const Link& link) noexcept {
    if (!(bytes > 0.0) || !(link.gb_s > 0.0))
        return 0.0;
    return bytes / (link.gb_s * bytes_per_ms_per_gb_s) + link.latency_us / 1e3;
}

double all_gather_ms(double bytes, std::uint64_t ranks, const Link& link) noexcept {
    return ring_ms(bytes, ranks, link);
}

double reduce_scatter_ms(double bytes, std::uint64_t ranks, const Link& link) noexcept {
    return ring_ms(bytes, ranks, link);
}

double all_reduce_ms(double bytes, std::uint64_t ranks, const Link& link) noexcept {
    return reduce_scatter_ms(bytes, ranks, link) + all_gather_ms(bytes, ranks, link);
}

double all_to_all_ms(double bytes, std::uint64_t ranks, const Link& link) noexcept {
    if (ranks <= 1 || !(bytes > 0.0) || !(link.gb_s > 0.0))
        return 0.0;
    // Every send at once (NCCL posts an all-to-all's sends together): one latency, not a ring's
    // n - 1.
    const double n = static_cast<double>(ranks);
    return (n - 1.0) / n * bytes / (link.gb_s * bytes_per_ms_per_gb_s) + link.latency_us / 1e3;
}

// An exchange whose sends go at once, `within` bytes over the node's links and `beyond` over the
// network: the slower of the two, plus the network's latency once (nothing without bytes to send
// or a link to send them on).
double node_split_ms(double within, double beyond, const Cluster& cluster) noexcept {
    const Link inside = intra_node_link(cluster);
    const Link across = network_link(cluster);
    const double inside_ms =
        within > 0.0 && inside.gb_s > 0.0 ? within / (inside.gb_s * bytes_per_ms_per_gb_s) : 0.0;
    if (!(beyond > 0.0))
        return inside_ms;
    if (!(across.gb_s > 0.0))
        return 0.0;
    return std::max(inside_ms, beyond / (across.gb_s * bytes_per_ms_per_gb_s)) +
           across.latency_us / 1e3;
}

double all_to_all_ms(double bytes, const Cluster& cluster, std::uint64_t first,
                     std::uint64_t stride, std::uint64_t ranks) noexcept {
    if (ranks <= 1 || !(bytes > 0.0))
        return 0.0;
    const auto local = static_cast<double>(ranks_in_first_node(cluster, first, stride, ranks));
    const auto n = static_cast<double>(ranks);
    return node_split_ms((local - 1.0) / n * bytes, (n - local) / n * bytes, cluster);
}

double expected_share_hit(double experts, double held, double top_k) noexcept {
    if (!(held > 0.0) || !(top_k > 0.0))
        return 0.0;
    double missed = 1.0;
    const auto picks = static_cast<std::uint64_t>(top_k);
    for (std::uint64_t i = 0; i < picks; ++i) {
        const auto d = static_cast<double>(i);
        missed *= std::max(0.0, experts - held - d) / (experts - d);
    }
    return 1.0 - missed;
}

double once_per_node_dispatch_ms(double token_bytes, double experts, double top_k,
                                 const Cluster& cluster, std::uint64_t first, std::uint64_t stride,
                                 std::uint64_t ranks) noexcept {
    if (ranks <= 1 || !(token_bytes > 0.0) || !(experts > 0.0))
        return 0.0;
    const auto local = static_cast<double>(ranks_in_first_node(cluster, first, stride, ranks));
    const double nodes = static_cast<double>(ranks) / local;
    return node_split_ms(
        token_bytes * (local - 1.0) *
            expected_share_hit(experts, experts / static_cast<double>(ranks), top_k),
        token_bytes * (nodes - 1.0) * expected_share_hit(experts, experts / nodes, top_k), cluster);
}

LayerCommunication layer_communication_ms(const ShapeSizes& shape, const ShapeSizes::Group& group,
                                          const Cluster& cluster) {
    LayerCommunication out;
    const auto t = static_cast<std::uint64_t>(shape.tensor_parallel);
    if (t > 1) {
        const double bytes = 2.0 * shape.hidden_states;
        const Link link = collective_link(cluster, 0, 1, t);
        // Two blocks (attention, MLP or MoE), each gathered before and reduced after.
        const double per_direction =
            shape.sequence_parallel
                ? 2.0 * (all_gather_ms(bytes, t, link) + reduce_scatter_ms(bytes, t, link))
                : 2.0 * all_reduce_ms(bytes, t, link);
        out.tensor_parallel_forward = per_direction;
        out.tensor_parallel_backward = per_direction;
    }
    const auto ep = static_cast<std::uint64_t>(shape.expert_parallel);
    if (group.routed_elements > 0.0 && ep > 1) {
        const auto stride = static_cast<std::uint64_t>(shape.expert_tensor_parallel);
        const double exchange =
            2.0 *
            (shape.dispatch_once_per_node && shape.top_k > 0.0
                 ? once_per_node_dispatch_ms(2.0 * group.routed_elements / shape.top_k,
                                             shape.num_experts, shape.top_k, cluster, 0, stride, ep)
                 : all_to_all_ms(2.0 * group.routed_elements, cluster, 0, stride, ep));
        out.expert_forward = exchange;
        out.expert_backward = exchange;
    }
    const auto cp = static_cast<std::uint64_t>(shape.context_parallel);
    if (cp > 1 && shape.key_value_elements > 0.0) {
        const Link link = group_link(cluster, 0, t, cp);
        const double ring =
            static_cast<double>(cp - 1) * point_to_point_ms(2.0 * shape.key_value_elements, link);
        out.context_parallel_forward = ring;
        out.context_parallel_backward = 2.0 * ring;
    }
    return out;
}

std::vector<double> pipeline_transfer_ms(const ShapeSizes& shape, const Cluster& cluster,
                                         const ParallelLayout& layout, Schedule schedule) {
    std::vector<double> out;
    if (layout.pipeline <= 1)
        return out;
    // Each tensor-parallel rank sends its part: all of it, or 1/t of it with sequence
    // parallelism; the t ranks send at once over their own links.
    const double bytes =
        2.0 * shape.hidden_states / (shape.sequence_parallel ? shape.tensor_parallel : 1.0);
    const std::uint64_t stage_ranks = static_cast<std::uint64_t>(shape.tensor_parallel) *
                                      static_cast<std::uint64_t>(shape.context_parallel) *
                                      layout.data_parallel;
    out.reserve(layout.pipeline - 1);
    for (std::uint32_t i = 0; i + 1 < layout.pipeline; ++i) {
        // Rank r of stage i talks to rank r of stage i + 1, stage_ranks apart; the slowest pair
        // (the last rank of stage i) sets the boundary's time.
        const std::uint64_t last_of_stage = (i + 1) * stage_ranks - 1;
        out.push_back(point_to_point_ms(bytes, group_link(cluster, last_of_stage, stage_ranks, 2)));
    }
    if (comm_boundaries(schedule, layout.pipeline) == layout.pipeline) {
        // The interleaved schedules' wrap from the last stage back to stage 0.
        const std::uint64_t span = (layout.pipeline - 1) * stage_ranks;
        out.push_back(point_to_point_ms(bytes, group_link(cluster, stage_ranks - 1, span, 2)));
    }
    return out;
}

DataParallelSync data_parallel_sync(const ShapeSizes& shape, const Cluster& cluster,
                                    const ParallelLayout& layout, const TimeModel& time,
                                    const StagePlan& plan_stage) {
    // The stage's parameters on one rank: its layers of each group, and the ends it holds.
    double parameters = 0.0;
    double experts = 0.0;
    const auto add_group = [&](std::string_view name, std::uint32_t layers) {
        for (const ShapeSizes::Group& g : shape.groups) {
            if (g.name == name) {
                parameters += layers * g.parameters;
                experts += layers * g.expert_parameters;
                return;
            }
        }
    };
    if (time.grouped() && !plan_stage.group_layers.empty()) {
        for (std::size_t g = 0; g < plan_stage.group_layers.size() && g < time.groups.size(); ++g)
            add_group(time.groups[g].name, layers_of(plan_stage.group_layers[g]));
    } else {
        add_group(time.groups.empty() ? time.body_name : time.groups.front().name,
                  plan_stage.total_layers());
    }
    if (plan_stage.stage == 0)
        parameters += shape.embedding_parameters;
    if (plan_stage.stage + 1 == layout.pipeline) {
        // A tied LM head on the embedding's own stage is the embedding: its norm only.
        const bool same_weights = shape.tied_embeddings && layout.pipeline == 1;
        parameters += same_weights ? shape.final_norm_parameters : shape.lm_head_parameters;
    }

    DataParallelSync out;
    out.parameter_count = parameters + experts;
    const auto add = [&](double count, std::uint64_t ranks, std::uint64_t stride) {
        if (ranks <= 1 || !(count > 0.0))
            return;
        const std::uint64_t first =
            static_cast<std::uint64_t>(plan_stage.stage) *
            static_cast<std::uint64_t>(shape.tensor_parallel * shape.context_parallel) *
            layout.data_parallel;
        const Link link = collective_link(cluster, first, stride, ranks);
        switch (shape.sharding) {
            case DataParallelSharding::no_shard:
                out.gradients += all_reduce_ms(count * shape.grad_bytes, ranks, link);
                break;
            case DataParallelSharding::optim:
                out.gradients += reduce_scatter_ms(count * shape.grad_bytes, ranks, link);
                out.parameters += all_gather_ms(count * shape.param_bytes, ranks, link);
                break;
            case DataParallelSharding::optim_grads:
                // The gradients were reduce-scattered in each backward (with_sharded_transfers);
                // the updated weights are gathered after the step.
                out.parameters += all_gather_ms(count * shape.param_bytes, ranks, link);
                break;
            case DataParallelSharding::optim_grads_params:
                break;  // all of it per layer (with_sharded_transfers)
        }
    };
    // The replicas of the stage's weights: its d x cp ranks, t apart (Megatron-LM reduces the
    // gradients over the data- and context-parallel ranks together).
    const auto t = static_cast<std::uint64_t>(shape.tensor_parallel);
    const auto cp = static_cast<std::uint64_t>(shape.context_parallel);
    add(parameters, layout.data_parallel * cp, t);
    if (experts > 0.0) {
        // Expert-data-parallel ranks: the stage's t x cp x d ranks over EP x ETP; adjacent groups
        // of EP x ETP ranks hold the same experts.
        const double expert_group = shape.expert_parallel * shape.expert_tensor_parallel;
        const double ranks =
            shape.tensor_parallel * shape.context_parallel * layout.data_parallel / expert_group;
        if (ranks >= 1.0) {
            add(experts, static_cast<std::uint64_t>(ranks),
                static_cast<std::uint64_t>(expert_group));
        }
    }
    return out;
}

double data_parallel_sync_ms(const ShapeSizes& shape, const Cluster& cluster,
                             const ParallelLayout& layout, const TimeModel& time,
                             const StagePlan& plan_stage) {
    return data_parallel_sync(shape, cluster, layout, time, plan_stage).total();
}

double default_bucket_parameters(std::uint32_t data_parallel) noexcept {
    return std::max(40'000'000.0, 1'000'000.0 * data_parallel);
}

double exposed_sync_ms(const DataParallelSync& sync, const StagePlan& plan_stage,
                       const SyncOverlap& overlap, double bucket_parameters) noexcept {
    double forward = 0.0;
    double backward = 0.0;
    for (const ChunkPlan& chunk : plan_stage.chunks) {
        forward += chunk.forward_time;
        backward += chunk.backward_time;
    }
    const double last_bucket =
        sync.parameter_count > 0.0 ? std::min(1.0, bucket_parameters / sync.parameter_count) : 1.0;
    const auto exposed = [&](double ms, bool overlapped, double window) {
        return overlapped ? std::max(ms - window, ms * last_bucket) : ms;
    };
    return exposed(sync.gradients, overlap.grad_reduce, backward) +
           exposed(sync.parameters, overlap.param_gather, forward);
}

double data_parallel_sync_ms(const ShapeSizes& shape, const Cluster& cluster,
                             const ParallelLayout& layout, const TimeModel& time, const Plan& plan,
                             const SyncOverlap& overlap) {
    const double bucket = default_bucket_parameters(layout.data_parallel);
    double slowest = 0.0;
    for (const StagePlan& stage : plan.stages) {
        const DataParallelSync sync = data_parallel_sync(shape, cluster, layout, time, stage);
        slowest = std::max(slowest, exposed_sync_ms(sync, stage, overlap, bucket));
    }
    return slowest;
}

double data_parallel_sync_bound_ms(const ShapeSizes& shape, const Cluster& cluster,
                                   const ParallelLayout& layout, const TimeModel& time,
                                   const SyncOverlap& overlap) {
    if (time.grouped() || layout.pipeline == 0)
        return 0.0;
    const std::uint32_t most =
        (time.body_layers + layout.pipeline - 1) / layout.pipeline;  // ceil(L / P)
    const double bucket = default_bucket_parameters(layout.data_parallel);
    // The stage's compute taken as endless: with overlap only the last bucket's share is left.
    ChunkPlan endless;
    endless.forward_time = std::numeric_limits<double>::infinity();
    endless.backward_time = std::numeric_limits<double>::infinity();
    // Which stage it is decides the links and the ends it adds. Between ceil(L / P) and all L
    // layers the exposed part grows with the parameters, but with overlap its last-bucket floor
    // (bytes plus a latency per step, times bucket / parameters) can fall again past one bucket:
    // its least over that range is at one of the two ends.
    double least = std::numeric_limits<double>::infinity();
    for (std::uint32_t s = 0; s < layout.pipeline; ++s) {
        for (const std::uint32_t layers : {most, time.body_layers}) {
            StagePlan stage;
            stage.stage = s;
            stage.layers[PPB_KIND_NONE] = layers;
            stage.chunks = {endless};
            const DataParallelSync sync = data_parallel_sync(shape, cluster, layout, time, stage);
            least = std::min(least, exposed_sync_ms(sync, stage, overlap, bucket));
        }
    }
    return least;
}

ShardedTransfers sharded_transfers(const ShapeSizes& shape, const Cluster& cluster,
                                   const ParallelLayout& layout, double parameters,
                                   double expert_parameters) {
    ShardedTransfers out;
    const auto add = [&](double count, std::uint64_t ranks, std::uint64_t stride) {
        if (ranks <= 1 || !(count > 0.0))
            return;
        const Link link = collective_link(cluster, 0, stride, ranks);
        out.gather += all_gather_ms(count * shape.param_bytes, ranks, link);
        out.reduce += reduce_scatter_ms(count * shape.grad_bytes, ranks, link);
    };
    const auto t = static_cast<std::uint64_t>(shape.tensor_parallel);
    const auto cp = static_cast<std::uint64_t>(shape.context_parallel);
    add(parameters, layout.data_parallel * cp, t);
    const double expert_group = shape.expert_parallel * shape.expert_tensor_parallel;
    const double expert_ranks =
        shape.tensor_parallel * shape.context_parallel * layout.data_parallel / expert_group;
    if (expert_parameters > 0.0 && expert_ranks >= 1.0) {
        add(expert_parameters, static_cast<std::uint64_t>(expert_ranks),
            static_cast<std::uint64_t>(expert_group));
    }
    return out;
}

TimeModel with_sharded_transfers(const TimeModel& time, const ShapeSizes& shape,
                                 const Cluster& cluster, const ParallelLayout& layout) {
    if (!shards_per_layer(shape.sharding))
        return time;
    const bool params = shape.sharding == DataParallelSharding::optim_grads_params;
    // What one unit of `parameters` (and `experts`) waits for, forward and backward, given its
    // forward and backward compute.
    struct Exposed {
        double forward = 0.0;
        double backward = 0.0;
    };
    const auto exposed = [&](double parameters, double experts, double forward, double backward) {
        const ShardedTransfers x = sharded_transfers(shape, cluster, layout, parameters, experts);
        return Exposed{params ? std::max(x.gather - forward, 0.0) : 0.0,
                       std::max((params ? x.gather : 0.0) + x.reduce - backward, 0.0)};
    };
    const auto group_sizes = [&](std::string_view name) -> const ShapeSizes::Group* {
        for (const ShapeSizes::Group& g : shape.groups) {
            if (g.name == name)
                return &g;
        }
        return nullptr;
    };
    const auto lengthen = [](std::array<double, PPB_KIND_COUNT>& times, double& forward,
                             const Exposed& e) {
        for (double& t : times) {
            if (t > 0.0)
                t += e.forward + e.backward;
        }
        forward += e.forward;
    };
    TimeModel out = time;
    const auto body = [&](std::string_view name, std::array<double, PPB_KIND_COUNT>& times,
                          double& forward) {
        const ShapeSizes::Group* g = group_sizes(name);
        if (g == nullptr)
            return;
        lengthen(
            times, forward,
            exposed(g->parameters, g->expert_parameters, forward, times[PPB_KIND_NONE] - forward));
    };
    body(out.body_name, out.body_time, out.body_forward);
    for (BodyGroupTime& g : out.groups)
        body(g.name, g.time, g.forward);
    // The ends, each one unit: the embedding on stage 0, the LM head (with the final norm) on the
    // last stage; a tied head on the embedding's own stage is the embedding's weights.
    const auto end = [&](double parameters, double& total, double& forward) {
        const Exposed e = exposed(parameters, 0.0, forward, total - forward);
        total += e.forward + e.backward;
        forward += e.forward;
    };
    end(shape.embedding_parameters, out.head_time, out.head_forward);
    end(shape.tied_embeddings && layout.pipeline == 1 ? shape.final_norm_parameters
                                                      : shape.lm_head_parameters,
        out.tail_time, out.tail_forward);
    return out;
}

SearchOutcome plan_with_communication(
    const ShapeSizes& shape, const Cluster& cluster, const SyncOverlap& overlap,
    const Problem& base, const Configuration& c,
    const std::function<SearchOutcome(const Problem&, const Configuration&,
                                      const AddedToIteration&)>& plan_one) {
    const ParallelLayout layout{c.pipeline, c.data_parallel};
    Problem problem = base;
    problem.comm_time = pipeline_transfer_ms(shape, cluster, layout, c.schedule.schedule);
    if (shards_per_layer(shape.sharding))  // else the layers' times are the base's
        problem.time = with_sharded_transfers(base.time, shape, cluster, layout);
    SearchOutcome out = plan_one(problem, c, [&](const Problem& planned, const Plan& plan) {
        return data_parallel_sync_ms(shape, cluster, layout, planned.time, plan, overlap);
    });
    if (out.planned) {
        out.data_parallel_sync =
            data_parallel_sync_ms(shape, cluster, layout, problem.time, out.planned->plan, overlap);
        out.data_parallel_sync_bound =
            data_parallel_sync_bound_ms(shape, cluster, layout, problem.time, overlap);
    }
    return out;
}

}  // namespace ppb::partition
