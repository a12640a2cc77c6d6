// ppb/importers/torchtitan_options.hpp — the analytic plugin's options from a torchtitan training
// configuration (the TOML file `run_train.sh` takes as CONFIG_FILE), as
// ppb/importers/megatron_arguments.hpp builds them from Megatron-LM's arguments and
// ppb/importers/mindformers_options.hpp from a MindFormers YAML.
//
// The file's schema is torchtitan's JobConfig (torchtitan/config/job_config.py at
// pytorch/torchtitan commit 238fa9953e4aec2a62582121564273d7cbb1e9f1, the last with TOML
// configurations; later commits configure runs in Python with the same meanings). Read:
//   [model] name, flavor, converters      the model's shape from torchtitan's flavour tables
//                                         (llama3, qwen3, deepseek_v3:
//                                         src/torchtitan_flavours.cpp), float8 / mx converters
//   [training] local_batch_size, seq_len, dtype, mixed_precision_param, enable_cpu_offload
//   [parallelism] data_parallel_replicate_degree, data_parallel_shard_degree (-1: the rest of
//                 the world), tensor_parallel_degree, disable_loss_parallel,
//                 pipeline_parallel_degree, pipeline_parallel_schedule,
//                 pipeline_parallel_microbatch_size, pipeline_parallel_layers_per_stage,
//                 context_parallel_degree, context_parallel_rotate_method,
//                 expert_parallel_degree, expert_tensor_parallel_degree
//   [activation_checkpoint] mode, selective_ac_option
//   [quantize.linear.float8] recipe_name, [quantize.linear.mx] recipe_name
//   [optimizer] name
// Every other section (job, metrics, checkpoint, lr_scheduler, ...) is not read; an unknown key
// of a section read draws a warning. Every value is checked (kind, range, the degrees' product
// against the world size) and a bad one is an InputError naming the file, line and key.
#ifndef PPB_IMPORTERS_TORCHTITAN_OPTIONS_HPP
#define PPB_IMPORTERS_TORCHTITAN_OPTIONS_HPP

#include <ppb/importers/setting_words.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ppb::importers {

struct TorchtitanRunContext {
    // The number of GPUs (run_train.sh's NGPU x nodes): needed when a degree is -1.
    std::optional<std::uint32_t> world_size;
    // The GPUs' compute capability major (9: Hopper; 10: Blackwell, whose FP8 GEMMs need no
    // transposed copies).
    std::uint32_t compute_capability = 9;
    // How messages name these settings: the command's flags (--world-size) or Python's keywords.
    SettingWords words = SettingWords::flags;
};

struct TorchtitanAnalyticOptions {
    std::string options_json;           // the analytic plugin's options, one JSON object
    std::vector<std::string> warnings;  // settings that change memory but are not modelled
    // For planning and predicting.
    std::uint32_t pipeline_size = 1;    // pipeline_parallel_degree
    std::uint32_t stages_per_rank = 1;  // chunks: 2 for the looped schedules by default
    std::uint32_t micro_batches = 1;    // local_batch_size / pipeline_parallel_microbatch_size
    std::string schedule;               // ppb's name of the schedule, empty when ppb has none
    std::string schedule_given;         // pipeline_parallel_schedule as written
    // The recompute kind of every layer as --layers takes it ("none", "full"), with what the
    // activation checkpointing mode says about it.
    std::string layer_kind;
    std::string layer_kind_note;
};

// Throws InputError naming the file, line and key for a malformed file, an unknown model or
// flavour (listing the known ones), a wrong-typed or out-of-range value, or degrees whose
// product is not the world size; FlagError when a degree is -1 without a world size.
[[nodiscard]] TorchtitanAnalyticOptions analytic_options_from_torchtitan(
    const std::filesystem::path& config, const TorchtitanRunContext& context);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_TORCHTITAN_OPTIONS_HPP
