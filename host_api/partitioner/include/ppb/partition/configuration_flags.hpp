// ppb/partition/configuration_flags.hpp — a searched configuration's degrees and batch in each
// framework's own settings, beside the plan's layout and recompute (framework_args.hpp).
//
// Megatron-LM (and MindSpeed-LLM, which takes its flags): --tensor-model-parallel-size t
// --pipeline-model-parallel-size P --context-parallel-size cp --micro-batch-size b
// --global-batch-size B (B = M x b x d), the expert-parallel degree (searched, or the shape's)
// --expert-model-parallel-size EP, the expert-tensor-parallel degree (searched, or the shape's
// where it gives one) --expert-tensor-parallel-size ETP,
// and with a sharding (searched, or the shape's): optim
// --use-distributed-optimizer; optim_grads and optim_grads_params --use-megatron-fsdp
// --data-parallel-sharding-strategy S --ckpt-format fsdp_dtensor (Megatron-FSDP turns the
// distributed optimizer on itself and asserts that checkpoint format: megatron/training/
// arguments.py at 4e85d74ae9); no_shard nothing (DDP). Then what the ranking assumed
// (AssumedSettings): --sequence-parallel where t > 1 and the shape has it (Megatron-LM turns it
// off with one tensor-parallel rank), --tp-comm-overlap with it (Megatron-LM refuses the overlap
// without: megatron/training/arguments.py at d98e8a64dd), --overlap-grad-reduce and
// --overlap-param-gather where the search timed them, and for an MoE model the token dispatcher
// the experts' all-to-all was timed with (--moe-token-dispatcher-type alltoall or flex).
//
// torchtitan (its job configuration's keys, pytorch/torchtitan at 238fa9953e: torchtitan/config/
// job_config.py, torchtitan/distributed/parallel_dims.py): parallelism.tensor_parallel_degree,
// pipeline_parallel_degree, context_parallel_degree; the d data-parallel replicas as
// data_parallel_shard_degree d (FSDP2: optim_grads_params, and what torchtitan does when the
// sharding is not searched) or data_parallel_replicate_degree d (no_shard),
// expert_parallel_degree EP (searched, or the shape's) and with EP > 1
// expert_tensor_parallel_degree ETP (searched, or the shape's, else t as Megatron-LM's default
// and the analytic model take it; torchtitan's own default is 1). torchtitan runs ETP 1 or t
// only, and its EP borrows the context-parallel ranks (and with ETP 1 the tensor-parallel ones)
// and some data-parallel shard ranks (torchtitan/distributed/parallel_dims.py at 0119de156d,
// _validate): EP a multiple of cp (cp x t with ETP 1) dividing d_shard x cp (x t), d_shard
// being 1 when the replicas are not sharded; why_not says which it is not. torchtitan has no
// sharding of the optimizer state or gradients alone (optim, optim_grads): why_not says so.
// training.global_batch_size B and local_batch_size b x M with pipeline stages (then
// parallelism.pipeline_parallel_microbatch_size b: M micro-batches of the schedule), b without
// (B / (b d) steps of gradient accumulation).
//
// MindFormers (its training YAML's keys, as mindspore-lab/mindformers reads them:
// mindformers/trainer/base_trainer.py at 03542d0303, where with pipeline stages the global batch
// is runner_config.batch_size x data_parallel x micro_batch_num and without them batch_size x
// data_parallel x gradient_accumulation_steps): parallel_config.data_parallel d, model_parallel
// t, pipeline_stage P, context_parallel cp (above 1), expert_parallel EP (searched, or the
// shape's),
// micro_batch_num M with stages; runner_config.batch_size b and, with one stage and M > 1,
// gradient_accumulation_steps M; model.model_config.pp_interleave_num v with v chunks. A searched
// data-parallel sharding has no MindFormers setting here (its optimizer parallelism,
// parallel.enable_parallel_optimizer, shards differently): why_not says so.
#ifndef PPB_PARTITION_CONFIGURATION_FLAGS_HPP
#define PPB_PARTITION_CONFIGURATION_FLAGS_HPP

#include <ppb/partition/framework_args.hpp>
#include <ppb/partition/search.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ppb::partition {

struct KeyedSettings {
    // ("section.key", value) in the configuration's order (a key may have several sections:
    // "model.model_config.pp_interleave_num"); empty when why_not is set.
    std::vector<std::pair<std::string, std::uint64_t>> settings;
    std::string why_not;
};

// What a search's ranking assumed beyond each configuration's degrees, which Megatron-LM must be
// told to run it as ranked: the model shape's sequence parallelism, its data-parallel sharding
// and its expert degree (where the search did not vary them), and the overlaps the search was
// asked to time.
struct AssumedSettings {
    bool sequence_parallel = false;  // the shape's: --sequence-parallel where t > 1
    // The shape's (distributed_optimizer, data_parallel_sharding), where not searched.
    std::optional<DataParallelSharding> sharding = std::nullopt;
    bool moe = false;                                             // the shape is an MoE model's
    std::optional<std::uint32_t> expert_parallel = std::nullopt;  // the shape's, where not searched
    // The shape's moe.expert_tensor_parallel where it gives one and it is not searched
    // (Megatron-LM's default, like ppb's, is the tensor-parallel degree).
    std::optional<std::uint32_t> expert_tensor_parallel = std::nullopt;
    bool tp_comm_overlap = false;       // --tp-comm-overlap where t > 1 with sequence parallelism
    bool overlap_grad_reduce = false;   // --overlap-grad-reduce
    bool overlap_param_gather = false;  // --overlap-param-gather
    // An MoE shape's dispatcher as the time model takes it: moe.token_dispatcher, "alltoall"
    // without one. Megatron-LM's own default is "allgather" (transformer_config.py,
    // moe_token_dispatcher_type, at d98e8a64dd), which ppb does not time and the combined 1F1B
    // refuses, so --moe-token-dispatcher-type is always named for an MoE model.
    std::optional<std::string> token_dispatcher = std::nullopt;
};

// The configuration's Megatron-LM flags; with `assumed`, also what its ranking assumed.
[[nodiscard]] FrameworkFlags megatron_configuration_args(const Configuration& c,
                                                         const AssumedSettings& assumed = {});
// torchtitan's and MindFormers' settings of the configuration, with the expert degrees `assumed`
// where the search did not vary them.
[[nodiscard]] KeyedSettings torchtitan_configuration(const Configuration& c,
                                                     const AssumedSettings& assumed = {});
[[nodiscard]] KeyedSettings mindformers_configuration(const Configuration& c,
                                                      const AssumedSettings& assumed = {});

}  // namespace ppb::partition

#endif  // PPB_PARTITION_CONFIGURATION_FLAGS_HPP
