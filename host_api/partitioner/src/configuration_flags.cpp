// A searched configuration in each framework's settings (ppb/partition/configuration_flags.hpp).
#include <ppb/partition/configuration_flags.hpp>

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace ppb::partition {
namespace {

// B = M x b x d.
std::uint64_t global_batch_of(const Configuration& c) {
    return static_cast<std::uint64_t>(c.micro_batches) * c.micro_batch_size * c.data_parallel;
}

// The frameworks other than Megatron-LM have no combined 1F1B: what each says of it.
std::string no_combined_schedule(std::string_view framework) {
    return fmt::format(
        "{} has no combined 1F1B (Megatron-LM's --overlap-moe-expert-parallel-comm), which this "
        "configuration is timed and sized with",
        framework);
}

// The experts' degrees the configuration was sized with: the searched ones, else the model
// shape's; none where neither gives one (each framework's default then applies).
std::optional<std::uint32_t> expert_parallel_of(const Configuration& c,
                                                const AssumedSettings& assumed) {
    return c.expert_parallel ? c.expert_parallel : assumed.expert_parallel;
}

std::optional<std::uint32_t> expert_tensor_parallel_of(const Configuration& c,
                                                       const AssumedSettings& assumed) {
    return c.expert_tensor_parallel ? c.expert_tensor_parallel : assumed.expert_tensor_parallel;
}

}  // namespace

FrameworkFlags megatron_configuration_args(const Configuration& c, const AssumedSettings& assumed) {
    FrameworkFlags out;
    out.args = {"--tensor-model-parallel-size",
                std::to_string(c.tensor_parallel),
                "--pipeline-model-parallel-size",
                std::to_string(c.pipeline),
                "--context-parallel-size",
                std::to_string(c.context_parallel),
                "--micro-batch-size",
                std::to_string(c.micro_batch_size),
                "--global-batch-size",
                std::to_string(global_batch_of(c))};
    if (const auto ep = expert_parallel_of(c, assumed))
        out.args.insert(out.args.end(), {"--expert-model-parallel-size", std::to_string(*ep)});
    if (const auto etp = expert_tensor_parallel_of(c, assumed))
        out.args.insert(out.args.end(), {"--expert-tensor-parallel-size", std::to_string(*etp)});
    if (assumed.token_dispatcher) {
        out.args.insert(out.args.end(), {"--moe-token-dispatcher-type", *assumed.token_dispatcher});
    }
    const bool sequence_parallel = assumed.sequence_parallel && c.tensor_parallel > 1;
    if (sequence_parallel)
        out.args.emplace_back("--sequence-parallel");
    if (sequence_parallel && assumed.tp_comm_overlap)
        out.args.emplace_back("--tp-comm-overlap");
    if (assumed.overlap_grad_reduce)
        out.args.emplace_back("--overlap-grad-reduce");
    if (assumed.overlap_param_gather)
        out.args.emplace_back("--overlap-param-gather");
    if (c.schedule.schedule == Schedule::combined_1f1b)
        out.args.emplace_back("--overlap-moe-expert-parallel-comm");
    const std::optional<DataParallelSharding> sharding = c.sharding ? c.sharding : assumed.sharding;
    if (!sharding)
        return out;
    switch (*sharding) {
        case DataParallelSharding::no_shard:
            break;
        case DataParallelSharding::optim:
            out.args.emplace_back("--use-distributed-optimizer");
            break;
        case DataParallelSharding::optim_grads:
        case DataParallelSharding::optim_grads_params:
            out.args.insert(
                out.args.end(),
                {"--use-megatron-fsdp", "--data-parallel-sharding-strategy",
                 std::string(sharding_name(*sharding)), "--ckpt-format", "fsdp_dtensor"});
            break;
    }
    return out;
}

KeyedSettings torchtitan_configuration(const Configuration& c, const AssumedSettings& assumed) {
    KeyedSettings out;
    if (c.schedule.schedule == Schedule::combined_1f1b) {
        out.why_not = no_combined_schedule("torchtitan");
        return out;
    }
    const bool replicate = c.sharding == DataParallelSharding::no_shard;
    if (c.sharding && !replicate && *c.sharding != DataParallelSharding::optim_grads_params) {
        out.why_not = fmt::format(
            "torchtitan shards the weights, gradients and optimizer state together (FSDP2, "
            "optim_grads_params) or replicates them (no_shard), not {} alone",
            *c.sharding == DataParallelSharding::optim ? "the optimizer state"
                                                       : "the optimizer state and gradients");
        return out;
    }
    // The experts as the configuration was sized: the searched degrees, else the shape's, its
    // ETP else t (Megatron-LM's default and the analytic model's; torchtitan's own is 1). With
    // one expert rank ETP does not arise.
    const std::optional<std::uint32_t> ep = expert_parallel_of(c, assumed);
    const std::uint32_t etp = expert_tensor_parallel_of(c, assumed).value_or(c.tensor_parallel);
    const bool experts_split = ep && *ep > 1;
    if (experts_split && etp != 1 && etp != c.tensor_parallel) {
        out.why_not = fmt::format(
            "torchtitan slices the experts over 1 or the tensor-parallel degree {} "
            "(parallelism.expert_tensor_parallel_degree), not {}",
            c.tensor_parallel, etp);
        return out;
    }
    // torchtitan's EP borrows every context-parallel rank (and with ETP 1 every tensor-parallel
    // one) and some of the data-parallel shard ranks.
    const std::uint64_t borrowed =
        static_cast<std::uint64_t>(c.context_parallel) * (etp == 1 ? c.tensor_parallel : 1);
    const std::uint64_t shard = replicate ? 1 : c.data_parallel;
    if (experts_split && (*ep % borrowed != 0 || (shard * borrowed) % *ep != 0)) {
        out.why_not = fmt::format(
            "torchtitan's {} expert-parallel ranks are taken from the context-parallel{} and "
            "data-parallel shard ranks: {} must be a multiple of {} and divide {}",
            *ep, etp == 1 ? ", tensor-parallel" : "", *ep, borrowed, shard * borrowed);
        return out;
    }
    out.settings = {
        {"parallelism.tensor_parallel_degree", c.tensor_parallel},
        {"parallelism.pipeline_parallel_degree", c.pipeline},
        {"parallelism.context_parallel_degree", c.context_parallel},
        {replicate ? "parallelism.data_parallel_replicate_degree"
                   : "parallelism.data_parallel_shard_degree",
         c.data_parallel},
    };
    if (ep)
        out.settings.emplace_back("parallelism.expert_parallel_degree", *ep);
    if (experts_split)
        out.settings.emplace_back("parallelism.expert_tensor_parallel_degree", etp);
    if (c.pipeline > 1) {
        out.settings.emplace_back("parallelism.pipeline_parallel_microbatch_size",
                                  c.micro_batch_size);
        out.settings.emplace_back("training.local_batch_size",
                                  static_cast<std::uint64_t>(c.micro_batch_size) * c.micro_batches);
    } else {
        out.settings.emplace_back("training.local_batch_size", c.micro_batch_size);
    }
    out.settings.emplace_back("training.global_batch_size", global_batch_of(c));
    return out;
}

KeyedSettings mindformers_configuration(const Configuration& c, const AssumedSettings& assumed) {
    KeyedSettings out;
    if (c.schedule.schedule == Schedule::combined_1f1b) {
        out.why_not = no_combined_schedule("MindFormers");
        return out;
    }
    if (c.sharding && *c.sharding != DataParallelSharding::no_shard) {
        out.why_not = fmt::format(
            "ppb does not map the data-parallel sharding {} to MindFormers' optimizer parallelism "
            "(parallel.enable_parallel_optimizer), which shards otherwise",
            sharding_name(*c.sharding));
        return out;
    }
    // Each expert as the configuration was sized: split over the searched ETP, else the shape's,
    // else t. MindFormers' classic MoE splits each over model_parallel unless
    // moe_config.expert_model_parallel is 1; its grouped-matmul MoE (use_gmm) and its current
    // models keep each whole (llama_layer.py, moev3.py, training_graph/transformer/moe/ffn.py;
    // host_api/docs/mindformers-options.md): ETP 1 is said, ETP t is the classic default, and no
    // other degree is MindFormers'.
    const std::uint32_t etp = expert_tensor_parallel_of(c, assumed).value_or(c.tensor_parallel);
    const bool experts_whole = assumed.moe && c.tensor_parallel > 1 && etp == 1;
    if (assumed.moe && etp != 1 && etp != c.tensor_parallel) {
        out.why_not = fmt::format(
            "MindFormers splits each expert over model_parallel ({}) or keeps it whole "
            "(moe_config.expert_model_parallel: 1, use_gmm, the current models), not over {}",
            c.tensor_parallel, etp);
        return out;
    }
    if (c.schedule.chunks > 1)
        out.settings.emplace_back("model.model_config.pp_interleave_num", c.schedule.chunks);
    out.settings.emplace_back("parallel_config.data_parallel", c.data_parallel);
    out.settings.emplace_back("parallel_config.model_parallel", c.tensor_parallel);
    out.settings.emplace_back("parallel_config.pipeline_stage", c.pipeline);
    if (c.context_parallel > 1)
        out.settings.emplace_back("parallel_config.context_parallel", c.context_parallel);
    if (const auto ep = expert_parallel_of(c, assumed))
        out.settings.emplace_back("parallel_config.expert_parallel", *ep);
    if (experts_whole)
        out.settings.emplace_back("moe_config.expert_model_parallel", 1);
    if (c.pipeline > 1)
        out.settings.emplace_back("parallel_config.micro_batch_num", c.micro_batches);
    out.settings.emplace_back("runner_config.batch_size", c.micro_batch_size);
    if (c.pipeline == 1 && c.micro_batches > 1)
        out.settings.emplace_back("runner_config.gradient_accumulation_steps", c.micro_batches);
    return out;
}

}  // namespace ppb::partition
