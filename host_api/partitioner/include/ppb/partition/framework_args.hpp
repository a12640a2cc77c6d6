// ppb/partition/framework_args.hpp — a plan as the flags and settings of the frameworks that run
// it: Megatron-LM's command-line flags, MindSpeed-LLM's, torchtitan's job configuration
// (host_api/docs/megatron-torchtitan.md). One writer per framework; `ppb partition`, its JSON
// document and `ppb design` print what these return.
//
// What each framework can express, from its code:
//   Megatron-LM (NVIDIA/Megatron-LM): layer counts per (stage, chunk) through
//     --pipeline-model-parallel-layout
//     (megatron/core/transformer/pipeline_parallel_layer_layout.py, commit
//     00caa53af30912914981c86f39db123961678bbd): one string of virtual stages separated by
//     '|', virtual stage c·P + r being chunk c of rank r, 'E' the embedding, 't' a decoder layer,
//     'm' a multi-token prediction layer (Problem::mtp), 'L' the loss, "x*n" n copies of x,
//     "(...)*n" n copies of a group. One recompute setting for
//     the whole model (problem.hpp, MegatronRecompute). The schedules 1F1B (one chunk) and
//     interleaved 1F1B (several). The layout flag is refused beside
//     --decoder-first/last-pipeline-num-layers and --account-for-embedding/loss-in-pipeline-split
//     (megatron/core/transformer/transformer_config.py, commit
//     d2c5e8b4f4fa0062d8cd9cbe18a7fca7cf1f99a3, __post_init__), so the flags written here never
//     combine them. Older versions without the layout flag take --decoder-first- /
//     --decoder-last-pipeline-num-layers (the other stages share the rest evenly) and
//     --num-virtual-stages-per-pipeline-rank (each stage's layers split evenly over its chunks):
//     the legacy flags, where the plan has that shape.
//   MindSpeed-LLM (Ascend/MindSpeed-LLM): --num-layer-list "a,b,..." (layers per stage, 1F1B;
//     not for one stage, which MindSpeed-LLM refuses it with);
//     with chunks, --noop-layers: the model padded to P·v·C layers (C the most a chunk holds),
//     each chunk's missing layers made no-op layers at its end, with
//     --num-layers-per-virtual-pipeline-stage C. The same recompute flags as Megatron's.
//   torchtitan (pytorch/torchtitan): module_fqns_per_model_part, one list of module names per
//     model part in stage-index order ("tok_embeddings", "layers.i", "norm", "output";
//     torchtitan/distributed/pipeline_parallel.py, commit fb3b230e2a050885057a1a02f167658b0cb6c5ac,
//     generate_llm_fqn_per_model_part and pipeline_module_split), rank r holding stages r, r + P,
//     ... for the looped schedules (1F1B, Interleaved1F1B) and r, 2P − 1 − r for the V schedules
//     (ZBVZeroBubble, DualPipeV): exactly ppb's model positions (ppb/schedule.hpp). Activation
//     checkpointing is one setting for every layer
//     (torchtitan/distributed/activation_checkpoint.py, commit
//     cfb93265153094f99736547f26b5346410181102): mode none, full, or selective with
//     selective_ac_option "op"; it has no "first N layers of every chunk".
#ifndef PPB_PARTITION_FRAMEWORK_ARGS_HPP
#define PPB_PARTITION_FRAMEWORK_ARGS_HPP

#include <ppb/partition/problem.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ppb::partition {

// A framework's flags for a plan, or why it cannot run the plan.
struct FrameworkFlags {
    std::vector<std::string> args;  // "--flag", "value", ... (empty when why_not is set)
    std::string why_not;            // empty when args give the plan exactly
    [[nodiscard]] bool expressible() const { return why_not.empty(); }
};

// The plan's body layers per model position (ppb/schedule.hpp), in model order.
[[nodiscard]] std::vector<std::uint32_t> layers_per_position(const Problem& problem,
                                                             const Plan& plan);

// The --pipeline-model-parallel-layout string of P stages and positions.size() / P chunks
// holding positions[q] decoder layers at virtual stage q: 'E' first, 'L' last, "t*n" for n >= 2
// layers, and runs of two or more equal virtual stages between the first and the last as
// "(...|)*k" — "Et*3|(t*2|)*29,t|L" style, without the commas. With `mtp_layers`, virtual stage
// `mtp_at` also holds that many multi-token prediction layers after its decoders ('m', "m*n").
[[nodiscard]] std::string megatron_layout_string(const std::vector<std::uint32_t>& positions,
                                                 std::uint32_t mtp_layers = 0,
                                                 std::size_t mtp_at = 0);

// The recompute flags of `setting`: none; --recompute-granularity selective; or
// --recompute-granularity full --recompute-method block|uniform --recompute-num-layers N (1 for
// uniform).
[[nodiscard]] std::vector<std::string> megatron_recompute_args(const MegatronRecompute& setting);

struct MegatronArgs {
    // --pipeline-model-parallel-size P --num-layers L --pipeline-model-parallel-layout "..." and
    // the recompute flags.
    FrameworkFlags args;
    // For versions before the layout flag: --pipeline-model-parallel-size, --num-layers,
    // --decoder-first/last-pipeline-num-layers, --num-virtual-stages-per-pipeline-rank and the
    // recompute flags, where the plan has their shape.
    FrameworkFlags legacy_args;
    std::optional<std::string> layout;  // the layout string, whenever the schedule is Megatron's
};

// Megatron-LM's flags for `plan` (see the header comment): why_not names the schedule Megatron
// does not run, or the chunks whose recompute no one setting builds.
[[nodiscard]] MegatronArgs megatron_args(const Problem& problem, const Plan& plan);

// MindSpeed-LLM's flags for `plan`.
[[nodiscard]] FrameworkFlags mindspeed_args(const Problem& problem, const Plan& plan);

struct TorchtitanPlan {
    // [part]: the module names of model part (stage index) `part`; empty when parts_why_not.
    std::vector<std::vector<std::string>> module_fqns_per_model_part;
    std::string schedule;  // pipeline_parallel_schedule: "1F1B", "Interleaved1F1B", "DualPipeV"
    std::string parts_why_not;
    // activation_checkpoint.mode ("none", "full", "selective") and, for selective,
    // selective_ac_option ("op"); empty mode when ac_why_not says why no setting applies.
    std::string ac_mode;
    std::string ac_option;
    std::string ac_why_not;
};

[[nodiscard]] TorchtitanPlan torchtitan_plan(const Problem& problem, const Plan& plan);

// torchtitan's module_fqns_per_model_part for `positions` (each model part's body layers, in
// model order): "tok_embeddings" first, "layers.i" in order, "norm" and "output" last.
[[nodiscard]] std::vector<std::vector<std::string>> torchtitan_module_fqns(
    const std::vector<std::uint32_t>& positions);

// torchtitan's [activation_checkpoint] for Megatron's one setting: mode "none", "selective"
// (option "op") or "full"; nullopt for the block method, which torchtitan cannot express.
struct TorchtitanCheckpoint {
    std::string mode;
    std::string option;
};
[[nodiscard]] std::optional<TorchtitanCheckpoint> torchtitan_checkpoint(
    const MegatronRecompute& setting);

// The arguments as one line to paste into a shell: each token that holds a character the shell
// treats specially ('|', '*', '(', ...) in double quotes.
[[nodiscard]] std::string shell_line(const std::vector<std::string>& args);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_FRAMEWORK_ARGS_HPP
