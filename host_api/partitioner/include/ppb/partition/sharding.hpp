// ppb/partition/sharding.hpp — what data parallelism shards, by the names Megatron-LM and the
// analytic model give it.
//
// no_shard replicates the weights, gradients and optimizer state on every data-parallel rank and
// all-reduces the gradients; optim (Megatron-LM's distributed optimizer) shards the optimizer
// state, reduce-scatters the gradients and all-gathers the weights once per iteration;
// optim_grads also shards the gradients, reduce-scattered in every backward; optim_grads_params
// (Megatron-FSDP, torch FSDP2) shards the weights too, gathered before each layer's forward and
// again before its backward (Megatron-LM's --data-parallel-sharding-strategy; the analytic
// model's data_parallel_sharding; what each moves: ppb/partition/communication.hpp).
#ifndef PPB_PARTITION_SHARDING_HPP
#define PPB_PARTITION_SHARDING_HPP

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace ppb::partition {

enum class DataParallelSharding { no_shard, optim, optim_grads, optim_grads_params };

// The names, in the enumeration's order.
inline constexpr std::array<std::string_view, 4> sharding_names = {
    "no_shard", "optim", "optim_grads", "optim_grads_params"};

[[nodiscard]] constexpr std::string_view sharding_name(DataParallelSharding sharding) noexcept {
    return sharding_names[static_cast<std::size_t>(sharding)];
}

// Whether `sharding` moves the gradients (optim_grads) or also the weights (optim_grads_params)
// with each layer, rather than once per iteration.
[[nodiscard]] constexpr bool shards_per_layer(DataParallelSharding sharding) noexcept {
    return sharding == DataParallelSharding::optim_grads ||
           sharding == DataParallelSharding::optim_grads_params;
}

// The sharding named `name`; none for another name.
[[nodiscard]] constexpr std::optional<DataParallelSharding> sharding_from_name(
    std::string_view name) noexcept {
    for (std::size_t i = 0; i < sharding_names.size(); ++i) {
        if (sharding_names[i] == name)
            return static_cast<DataParallelSharding>(i);
    }
    return std::nullopt;
}

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SHARDING_HPP
