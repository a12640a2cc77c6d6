// Megatron-LM's layout flags (megatron_layout_options.hpp).
#include "megatron_layout_options.hpp"

#include <ppb/limits.hpp>

#include <cstdint>
#include <limits>
#include <optional>

namespace ppb::cli {

void add_megatron_layout_options(CLI::App& app, importers::MegatronFlags& flags,
                                 const std::string& group, const std::string& moe_group,
                                 bool from_logs) {
    const auto count = [&](const char* name, std::optional<std::uint32_t>& field, const char* help,
                           const char* value_name, const limits::CountRange& range) {
        return app.add_option(name, field, help)
            ->group(group)
            ->type_name(value_name)
            ->check(count_in(range));
    };
    count("--pipeline-model-parallel-size", flags.pipeline_size, "pipeline degree", "P",
          limits::stages);
    count("--num-layers", flags.num_layers, "transformer layers", "L", limits::layers);
    count("--decoder-first-pipeline-num-layers,--num-layers-in-first-pipeline-stage",
          flags.first_stage_layers, "layers of the first stage", "N", limits::layers_or_none);
    count("--decoder-last-pipeline-num-layers,--num-layers-in-last-pipeline-stage",
          flags.last_stage_layers, "layers of the last stage", "N", limits::layers_or_none);
    count("--num-layers-per-virtual-pipeline-stage", flags.layers_per_virtual_stage,
          "layers per virtual pipeline chunk: each stage runs\n"
          "L / P / N chunks (interleaved schedule)",
          "N", limits::layers);
    count("--num-virtual-stages-per-pipeline-rank,--virtual-pipeline-model-parallel-size",
          flags.virtual_stages,
          "virtual pipeline chunks per stage (interleaved schedule\n"
          "when above 1); each stage's layers split evenly over them",
          "V", limits::chunks);
    app.add_option("--pipeline-model-parallel-layout", flags.layout,
                   "every (stage, chunk)'s layers in Megatron's grammar, e.g.\n"
                   "'Et*3|(tt|)*29,m|L': E embedding, t decoder layer, m MTP\n"
                   "layer, L loss, | between virtual stages (chunk c of rank r is\n"
                   "virtual stage c*P + r), x*n and (...)*n repeats")
        ->group(group)
        ->type_name("LAYOUT");
    app.add_flag("--account-for-embedding-in-pipeline-split", flags.account_for_embedding,
                 "the embedding counts as a layer in the even split (the first\n"
                 "virtual stage holds one layer fewer)")
        ->group(group);
    app.add_flag("--account-for-loss-in-pipeline-split", flags.account_for_loss,
                 "the loss counts as a layer in the even split (the last\n"
                 "virtual stage holds one layer fewer)")
        ->group(group);
    app.add_option("--num-layer-list", flags.num_layer_list,
                   "MindSpeed-LLM: each stage's layers, e.g. 7,9,10,6 (summing to\n"
                   "--num-layers)")
        ->group(group)
        ->type_name("a,b,...");
    app.add_option("--noop-layers", flags.noop_layers,
                   "MindSpeed-LLM: 0-based indices of layers that hold no transformer\n"
                   "block (counted in --num-layers, not in the stages' layers)")
        ->group(group)
        ->type_name("i,j,...");
    count("--mtp-num-layers", flags.mtp_layers,
          "multi-token-prediction layers: the layout's 'm' count", "N", limits::layers_or_none);
    app.add_option("--recompute-granularity", flags.recompute_granularity, "full or selective")
        ->group(group)
        ->type_name("full|selective")
        ->check(CLI::IsMember({"full", "selective"}));
    app.add_option("--recompute-method", flags.recompute_method,
                   "with full granularity: uniform or block")
        ->group(group)
        ->type_name("uniform|block")
        ->check(CLI::IsMember({"uniform", "block"}));
    count("--recompute-num-layers", flags.recompute_num_layers,
          "with the block method: layers fully recomputed per stage", "N", limits::layers);
    app.add_flag("--overlap-moe-expert-parallel-comm", flags.overlap_moe_expert_parallel_comm,
                 "the combined 1F1B: one more warm-up forward than the\n"
                 "interleaved schedule (or 1F1B on one stage)")
        ->group(group);
    app.add_option("--num-experts", flags.num_experts,
                   "experts per MoE layer: the model has MoE layers")
        ->group(moe_group)
        ->type_name("N")
        ->check(count_in({1, std::numeric_limits<std::uint32_t>::max(), "experts"}));
    app.add_option("--moe-layer-freq", flags.moe_layer_freq,
                   "which layers are MoE layers: an integer N (layer i when\n"
                   "i % N == 0; default 1, every layer) or a list of 0/1 per\n"
                   "layer such as '[0]*3+[1]*58'")
        ->group(moe_group)
        ->type_name("N|LIST");
    app.add_option("--first-k-dense-replace", flags.first_k_dense_replace,
                   "the first K layers dense, the rest MoE (MindSpeed-LLM)")
        ->group(moe_group)
        ->type_name("K")
        ->check(count_in(limits::layers_or_none));
    count("--world-size", flags.world_size,
          from_logs ? "number of ranks (left out, the logs')" : "number of ranks", "N",
          {1, std::numeric_limits<std::uint32_t>::max(), "ranks"});
    count("--num-microbatches", flags.micro_batches,
          from_logs ? "micro-batches per iteration (global batch size / (micro batch\n"
                      "size x data-parallel size); left out, the logs'"
                    : "micro-batches per iteration (global batch size / (micro batch\n"
                      "size x data-parallel size))",
          "M", limits::micro_batches);
}

}  // namespace ppb::cli
