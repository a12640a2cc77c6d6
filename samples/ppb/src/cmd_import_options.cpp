// ppb import megatron-options, mindformers-options and torchtitan-options: the analytic plugin's
// options from a Megatron-LM run's arguments, a MindFormers training YAML or a torchtitan TOML
// (ppb/importers/megatron_arguments.hpp, mindformers_options.hpp and torchtitan_options.hpp do
// the mappings; this file is their command lines).
#include "cmd_import_options.hpp"

#include <ppb/importers/megatron_arguments.hpp>
#include <ppb/importers/megatron_model_config.hpp>
#include <ppb/importers/mindformers_options.hpp>
#include <ppb/importers/torchtitan_options.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ppb::cli {
namespace {

namespace imp = ppb::importers;

// The options, one JSON object and a newline, on stdout or in `output`.
void write_options(const std::string& options_json, const std::string& output) {
    const std::string text = options_json + "\n";
    if (output.empty())
        write_stdout(text);
    else
        write_output_file(output, text);
}

struct MegatronOptionsArgs {
    std::vector<std::string> arguments;  // Megatron's, after "--"
    std::string model_config;            // a YAML file's MODEL_ARGS, before them
    std::optional<std::uint32_t> world_size;
    std::optional<std::uint32_t> tokenizer_size;
    std::uint32_t compute_capability = 9;
    std::optional<std::string> megatron_version;
    std::vector<std::string> declared_flags;
    std::string output;
};

int import_megatron_options(const MegatronOptionsArgs& args) {
    if (args.arguments.empty() && args.model_config.empty())
        throw UsageError(
            "missing the run's Megatron-LM arguments: give them after '--', or "
            "--model-config FILE",
            "ppb import megatron-options");
    // A configuration's MODEL_ARGS first, then the command line's, as the launchers append them
    // (argparse keeps the last value of a flag given twice).
    std::vector<std::string> arguments;
    if (!args.model_config.empty()) {
        imp::MegatronModelConfig config =
            imp::megatron_model_config(args.model_config, imp::process_environment);
        for (const std::string& n : config.notes)
            fmt::print(stderr, "ppb: note: {}\n", n);
        arguments = std::move(config.arguments);
    }
    arguments.insert(arguments.end(), args.arguments.begin(), args.arguments.end());
    const imp::MegatronAnalyticOptions result = imp::analytic_options_from_megatron(
        arguments,
        imp::MegatronRunContext{args.world_size, args.tokenizer_size, args.compute_capability,
                                args.megatron_version, args.declared_flags});
    for (const std::string& n : result.notes)
        fmt::print(stderr, "ppb: note: {}\n", n);
    for (const std::string& w : result.warnings)
        fmt::print(stderr, "ppb: warning: {}\n", w);
    if (result.micro_batches) {
        fmt::print(stderr,
                   "ppb: note: {} pipeline stage{}, data-parallel size {}, {} micro-batches per "
                   "iteration (plan with --stages {} --micro-batches {})\n",
                   result.pipeline_size, result.pipeline_size == 1 ? "" : "s", result.data_parallel,
                   *result.micro_batches, result.pipeline_size, *result.micro_batches);
    }
    write_options(result.options_json, args.output);
    return 0;
}

struct MindFormersOptionsArgs {
    std::string config;  // the training YAML
    std::string output;
};

int import_mindformers_options(const MindFormersOptionsArgs& args) {
    const imp::MindFormersAnalyticOptions result =
        imp::analytic_options_from_mindformers(args.config);
    for (const std::string& w : result.warnings)
        fmt::print(stderr, "ppb: warning: {}\n", w);
    fmt::print(stderr,
               "ppb: note: {} pipeline stage{}{}, data-parallel size {}, {} micro-batches per "
               "iteration (plan with --stages {} --micro-batches {}{}); the recompute settings "
               "and offsets are the placement's ('ppb import mindspore --config' reads them)\n",
               result.pipeline_size, result.pipeline_size == 1 ? "" : "s",
               result.chunks > 1 ? fmt::format(" of {} chunks", result.chunks) : "",
               result.data_parallel, result.micro_batches, result.pipeline_size,
               result.micro_batches, result.chunks > 1 ? " --schedule interleaved" : "");
    if (result.mtp_layers > 0) {
        fmt::print(stderr,
                   "ppb: note: the last stage also holds the {} MTP layer{} (mtp_num_layers in the "
                   "options), which MindFormers' offsets count among its layers: give 'ppb "
                   "predict --layers' the last stage's transformer layers only\n",
                   result.mtp_layers, result.mtp_layers == 1 ? "" : "s");
    }
    write_options(result.options_json, args.output);
    return 0;
}

struct TorchtitanOptionsArgs {
    std::string config;  // the training TOML
    std::optional<std::uint32_t> world_size;
    std::uint32_t compute_capability = 9;
    std::string output;
};

int import_torchtitan_options(const TorchtitanOptionsArgs& args) {
    const imp::TorchtitanAnalyticOptions result = imp::analytic_options_from_torchtitan(
        args.config, imp::TorchtitanRunContext{args.world_size, args.compute_capability});
    for (const std::string& w : result.warnings)
        fmt::print(stderr, "ppb: warning: {}\n", w);
    std::string schedule;
    if (result.pipeline_size > 1 && result.schedule.empty()) {
        schedule = fmt::format("; ppb has no {} schedule", result.schedule_given);
    } else if (result.pipeline_size > 1 && result.schedule != "1f1b") {
        schedule = fmt::format(" --schedule {}{}", result.schedule,
                               result.stages_per_rank != 2 || result.schedule != "interleaved"
                                   ? fmt::format(" --chunks {}", result.stages_per_rank)
                                   : "");
    }
    fmt::print(stderr,
               "ppb: note: {} pipeline stage{}, {} micro-batch{} per step (plan with --stages {} "
               "--micro-batches {}{}); every layer '{}' (activation_checkpoint){}\n",
               result.pipeline_size, result.pipeline_size == 1 ? "" : "s", result.micro_batches,
               result.micro_batches == 1 ? "" : "es", result.pipeline_size, result.micro_batches,
               schedule, result.layer_kind,
               result.layer_kind_note.empty() ? "" : ": " + result.layer_kind_note);
    write_options(result.options_json, args.output);
    return 0;
}

}  // namespace

void add_torchtitan_options(CLI::App& import, Commands& commands) {
    auto args = std::make_shared<TorchtitanOptionsArgs>();
    CLI::App* to = add_command(
        import, "torchtitan-options",
        "the analytic model's options from a torchtitan training TOML",
        "Writes the options of the analytic memory model (--model analytic --model-options\n"
        "FILE) for the run a torchtitan training configuration describes (the TOML\n"
        "run_train.sh takes as CONFIG_FILE):\n"
        "  ppb import torchtitan-options --world-size 64 llama3_70b.toml -o llama70b.json\n"
        "The model's shape comes from torchtitan's flavour tables ([model] name, flavor:\n"
        "llama3, qwen3, deepseek_v3), the parallelism from [parallelism] (FSDP over\n"
        "data_parallel_shard_degree x context_parallel_degree; -1 is the rest of\n"
        "--world-size), the batch from [training], float8 from [model] converters, and the\n"
        "layers' recompute kind from [activation_checkpoint] (said on stderr, for --layers).\n"
        "Settings that change memory but are not modelled, and keys ppb does not know, are\n"
        "named on stderr with their line. host_api/docs/torchtitan-options.md lists every key.\n\n"
        "Exit status: 0 written, 2 invalid configuration or usage, 1 other errors.");
    to->add_option("config", args->config, "the torchtitan training TOML")
        ->type_name("CONFIG.toml")
        ->required()
        ->check(CLI::ExistingFile);
    to->add_option("--world-size", args->world_size,
                   "GPUs of the run (NGPU x nodes): resolves a degree of -1 and is checked\n"
                   "against the degrees' product")
        ->type_name("N")
        ->check(count_in({1, std::numeric_limits<std::uint32_t>::max(), "ranks"}));
    to->add_option("--compute-capability", args->compute_capability,
                   "the GPUs' CUDA compute capability, major version: 9 (H100, the\n"
                   "default), 10 (B200: FP8 GEMMs without transposed copies)")
        ->type_name("MAJOR")
        ->check(CLI::Range(1U, 100U));
    to->add_option("-o,--output", args->output, "write the options to FILE (default: stdout)")
        ->type_name("FILE");
    commands.push_back({to, [args]() { return import_torchtitan_options(*args); }, {}});
}

void add_mindformers_options(CLI::App& import, Commands& commands) {
    auto args = std::make_shared<MindFormersOptionsArgs>();
    CLI::App* mo = add_command(
        import, "mindformers-options",
        "the analytic model's options from a MindFormers training YAML",
        "Writes the options of the analytic memory model (--model analytic --model-options\n"
        "FILE) for the run a MindFormers training YAML describes:\n"
        "  ppb import mindformers-options pretrain_llama2_7b.yaml -o llama2.json\n"
        "The shape (model.model_config), parallelism (parallel_config, parallel.\n"
        "enable_parallel_optimizer), micro-batch size (runner_config.batch_size), precision\n"
        "(param_init_type, optimizer.type), attention (use_flash_attention, head_dim, MLA's\n"
        "latents), experts (moe_config or the model's MoE keys), MTP layers (mtp_depth) and\n"
        "context parallelism (context_parallel, context_parallel_algo) come from the file, as\n"
        "MindFormers' classic or current ('use_legacy: False') models build them. Keys that\n"
        "change memory but are not modelled, and model_config keys ppb does not know, are\n"
        "named on stderr with their line; what MindFormers itself refuses is refused by name.\n"
        "host_api/docs/mindformers-options.md lists every key.\n\n"
        "Exit status: 0 written, 2 invalid or refused configuration or usage, 1 other errors.");
    mo->add_option("config", args->config, "the MindFormers training YAML")
        ->type_name("CONFIG.yaml")
        ->required()
        ->check(CLI::ExistingFile);
    mo->add_option("-o,--output", args->output, "write the options to FILE (default: stdout)")
        ->type_name("FILE");
    commands.push_back({mo, [args]() { return import_mindformers_options(*args); }, {}});
}

void add_megatron_options(CLI::App& import, Commands& commands) {
    auto args = std::make_shared<MegatronOptionsArgs>();
    CLI::App* mo = add_command(
        import, "megatron-options",
        "the analytic model's options from a Megatron-LM run's arguments",
        "Writes the options of the analytic memory model (--model analytic --model-options\n"
        "FILE) for the run whose Megatron-LM arguments follow '--', copied from its training\n"
        "command:\n"
        "  ppb import megatron-options --world-size 8 -- --num-layers 32 --hidden-size 4096 ...\n"
        "The arguments are read as the run's Megatron-LM release's argparse reads them (every\n"
        "flag of 2.6, 23.04, 23.06, core 0.4 to 0.19 and main is known); the release is\n"
        "--megatron-version, else recognised from the flags (stderr says which). Shape,\n"
        "parallelism (the data-parallel size is world size / (TP x PP x CP)), precision (FP8\n"
        "and FP4 recipes, the precision-aware optimizer), architecture, MoE, multi-latent\n"
        "attention, multi-token prediction, context parallelism, recompute modules,\n"
        "activation and optimizer offloading, FSDP, Transformer Engine's CUDA graphs and the\n"
        "vocabulary (padded as Megatron pads it) come from the flags, with that release's\n"
        "defaults for flags not given. Flags that change memory but are not modelled are\n"
        "named on stderr; unknown flags are errors; runs the model does not cover (hybrid and\n"
        "other model families, custom FP8 recipes, Megatron-LM's own CUDA graphs) are refused\n"
        "by name.\n"
        "--model-config FILE reads them from the MODEL_ARGS of the YAML file the run is\n"
        "launched from (Megatron-LM's functional tests' model_config.yaml, Megatron-MoE-\n"
        "ModelZoo's configurations), as Megatron-LM's launcher does; arguments after '--'\n"
        "come after them.\n"
        "host_api/docs/megatron-arguments.md lists every flag and release default.\n\n"
        "Exit status: 0 written, 2 invalid or refused arguments or usage, 1 other errors.");
    mo->add_option("--world-size", args->world_size,
                   "ranks of the run (WORLD_SIZE): gives the data-parallel size")
        ->type_name("N")
        ->check(count_in({1, std::numeric_limits<std::uint32_t>::max(), "ranks"}));
    mo->add_option("--tokenizer-size", args->tokenizer_size,
                   "the tokenizer's vocabulary size, before Megatron's padding\n"
                   "(default: --vocab-size, or GPT-2's 50257 for GPT2BPETokenizer)")
        ->type_name("N")
        ->check(count_in({1, 2147483647U, "tokens"}));
    mo->add_option("--compute-capability", args->compute_capability,
                   "the GPUs' CUDA compute capability, major version: 8 (A100),\n"
                   "9 (H100, the default), 10 (B200, B300, GB200, GB300);\n"
                   "sizes Transformer Engine's workspaces")
        ->type_name("MAJOR")
        ->check(CLI::Range(1U, 100U));
    mo->add_option("--megatron-version", args->megatron_version,
                   "the run's Megatron-LM release: 0.8 (or core_r0.8.0, core_v0.8.0),\n"
                   "23.04, 23.06, 2.6, main (default: recognised from the flags)")
        ->type_name("RELEASE");
    mo->add_option("--megatron-flag", args->declared_flags,
                   "a flag of the run's Megatron-LM that no release ppb knows has (a\n"
                   "branch, a fork, a script's own): NAME (one value), NAME:0 (a\n"
                   "switch), NAME:N, NAME:* or NAME:+ values; repeatable")
        ->type_name("NAME[:VALUES]")
        ->allow_extra_args(false);
    mo->add_option("--model-config", args->model_config,
                   "a YAML file whose MODEL_ARGS map the run's flags to their values\n"
                   "(Megatron-LM's model_config.yaml); its $VARIABLES are the environment's")
        ->type_name("FILE");
    mo->add_option("-o,--output", args->output, "write the options to FILE (default: stdout)")
        ->type_name("FILE");
    mo->add_option("arguments", args->arguments, "the run's Megatron-LM arguments, after '--'")
        ->type_name("-- MEGATRON-ARGS");
    commands.push_back(
        {mo, [args]() { return import_megatron_options(*args); }, {}, &args->arguments});
}

}  // namespace ppb::cli
