// ppb/partition/configuration_flags.hpp — a searched configuration's degrees and batch in each
// framework's own settings, beside the plan's layout and recompute (framework_args.hpp).
//
// Megatron-LM (and MindSpeed-LLM, which takes its flags): --tensor-model-parallel-size t
// --pipeline-model-parallel-size P --context-parallel-size cp --micro-batch-size b
// --global-batch-size B (B = M x b x d), a searched expert-parallel degree
// --expert-model-parallel-size EP, and with a searched sharding: optim
// --use-distributed-optimizer; optim_grads and optim_grads_params --use-megatron-fsdp
// --data-parallel-sharding-strategy S --ckpt-format fsdp_dtensor (Megatron-FSDP turns the
// distributed optimizer on itself and asserts that checkpoint format: megatron/training/
// arguments.py at 4e85d74ae9); no_shard nothing (DDP).
//
// torchtitan (its job configuration's keys, pytorch/torchtitan at 238fa9953e: torchtitan/config/
// job_config.py, torchtitan/distributed/parallel_dims.py): parallelism.tensor_parallel_degree,
// pipeline_parallel_degree, context_parallel_degree; the d data-parallel replicas as
// data_parallel_shard_degree d (FSDP2: optim_grads_params, and what torchtitan does when the
// sharding is not searched) or data_parallel_replicate_degree d (no_shard),
// expert_parallel_degree EP; torchtitan has no
// sharding of the optimizer state or gradients alone (optim, optim_grads): why_not says so.
// training.global_batch_size B and local_batch_size b x M with pipeline stages (then
// parallelism.pipeline_parallel_microbatch_size b: M micro-batches of the schedule), b without
// (B / (b d) steps of gradient accumulation).
#ifndef PPB_PARTITION_CONFIGURATION_FLAGS_HPP
#define PPB_PARTITION_CONFIGURATION_FLAGS_HPP

#include <ppb/partition/framework_args.hpp>
#include <ppb/partition/search.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ppb::partition {

struct TorchtitanSettings {
    // ("section.key", value) in the job configuration's order; empty when why_not is set.
    std::vector<std::pair<std::string, std::uint64_t>> settings;
    std::string why_not;
};

[[nodiscard]] FrameworkFlags megatron_configuration_args(const Configuration& c);
[[nodiscard]] TorchtitanSettings torchtitan_configuration(const Configuration& c);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_CONFIGURATION_FLAGS_HPP
