// ppb/importers/mindspore.hpp — MindSpore / MindFormers dry runs: the pipeline layout from the
// MindFormers training YAML (or flags), peak memory from each rank's log.
//
// The configuration, where MindFormers keeps it:
//   parallel_config.{data_parallel, model_parallel, context_parallel, pipeline_stage,
//                    micro_batch_num}
//   model.model_config.{num_layers, offset, pp_interleave_num}  (chunks per stage)
//   recompute_config.{recompute, select_recompute, select_comm_recompute}
// A stage is run by data_parallel x model_parallel (x context_parallel) consecutive ranks and
// holds num_layers // pipeline_stage + offset[s] body layers; the offsets must make the stages
// sum to num_layers (MindFormers' own rule). With v = pp_interleave_num > 1 (newer layout:
// distribute_parallel_config.pipeline_parallel_config.virtual_pipeline_model_parallel_size)
// each stage runs v chunks under the interleaved schedule, and chunk c of stage s holds
// num_layers // (pipeline_stage x v) + offset[c][s] layers, the cells summing to num_layers.
// Offsets and recompute settings may be a list with one entry per stage, a list of rows of
// those, one row per chunk (MindFormers' per-chunk form), or an integer meaning that value for
// every stage; one offset per stage applies to every chunk, one recompute count per stage is
// spread over the stage's chunks a layer at a time from chunk 0 (as MindFormers allocates it);
// for recompute settings true / false mean every layer / none, in a list too, a list of operator
// patterns means every layer, and a mapping of patterns to such values is accepted when all
// patterns cover the same layers. Counts above a cell's layers mean all of them, as in
// MindFormers, and cover the first layers of each chunk of each stage. The split into recompute
// kinds, per chunk, is split_recompute() (layout.hpp).
//
// The layer count under any of its names (num_layers, num_hidden_layers, n_layer), in
// model.model_config or the newer layout's model_config (src/mindformers_keys.hpp).
//
// MoE models: the model has experts wherever MindFormers builds them (src/mindformers_keys.hpp:
// an expert count above 1 under any of its names, in moe_config or the model's section; an MoE
// model_type; a setting only experts have). Its MoE layers are all but the first
// first_k_dense_replace when that is above 0 (the model type's default otherwise: DeepSeek-V3's
// 3), else those of moe_layer_freq (an integer N: layer i when i % N == 0, default 1; or one 0/1
// per layer), as MindFormers places them; Qwen3-MoE builds every layer as an MoE layer and what
// would place them otherwise is noted as not used. The experts chosen per token must not exceed
// the experts. With dense and MoE layers the layout counts each chunk's layers per group
// "dense" / "moe" by global layer index, each layer's recompute kind by its position in its
// chunk (split_into_groups).
#ifndef PPB_IMPORTERS_MINDSPORE_HPP
#define PPB_IMPORTERS_MINDSPORE_HPP

#include <ppb/importers/layout.hpp>
#include <ppb/importers/logs.hpp>

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers {

// Which of MindSpore's two peak figures to import.
//   used:   "Used peak memory usage (without fragments): NNNNM" — the default: the memory the
//           job's tensors occupy at the peak, which is what depends on the layout and what the
//           MindFormers documentation says to compare with the device memory;
//   actual: "Actual peak memory usage (with fragments): NNNNM" — also counts the allocator's
//           fragmentation, which does not scale with layers and recompute choices.
enum class MindSporeMemory { used, actual };

[[nodiscard]] std::optional<MindSporeMemory> mindspore_memory_from_name(std::string_view name);
// The text before the number on the memory line.
[[nodiscard]] std::string_view mindspore_memory_marker(MindSporeMemory memory);

// Values given on the command line; each set value wins over the configuration file. Values are
// YAML text, as in the file: "4", "[1, 0, 0, -1]", "[[1, 0, 0, -1]]", "true". A list may also be
// given without brackets: "1,0,0,-1".
struct MindSporeFlags {
    std::optional<std::string> data_parallel;
    std::optional<std::string> model_parallel;
    std::optional<std::string> context_parallel;
    std::optional<std::string> pipeline_stage;
    std::optional<std::string> micro_batch_num;
    std::optional<std::string> num_layers;
    std::optional<std::string> pp_interleave_num;
    std::optional<std::string> offset;
    std::optional<std::string> recompute;
    std::optional<std::string> select_recompute;
    std::optional<std::string> select_comm_recompute;
    std::optional<std::string> expert_num;             // moe_config.expert_num
    std::optional<std::string> num_experts_chosen;     // moe_config.num_experts_chosen
    std::optional<std::string> first_k_dense_replace;  // moe_config.first_k_dense_replace
};

// What MindFormers' logs state about the layout that ran (every rank prints the same):
//   "num_layers per stage: [[9, 10, 10, 11]]" — MindFormers' LayerSetting
//     (mindspore-lab/mindformers, mindformers/models/utils.py and
//     mindformers/parallel_core/training_graph/transformer/utils.py at commit
//     fd4deebc1606a02fd24c3b359a889cd0c966e72b: layer_list.tolist(), one row of per-stage counts
//     per chunk, after MindFormers applied offset and pp_interleave_num); a flat list is one
//     chunk's;
//   "Pipeline parallel was opened: pipeline_stages = 4, ..." (mindformers/trainer/base_trainer.py).
struct MindSporeLogLayout {
    std::vector<std::vector<std::uint32_t>> layers;  // [chunk][stage]; empty when not stated
    bool per_chunk = true;                           // rows per chunk, not one flat list
    std::string layers_text;                         // as printed
    std::string layers_where;                        // "<file>:<line>"
    std::optional<std::uint32_t> stages;
    std::string stages_where;
};

// The layout from `config` (a MindFormers training YAML; optional when the flags say
// everything), `flags` and what the logs state (`stated`, from mindspore_log_layout): a value
// neither a flag nor the configuration gives is taken from the logs (pipeline_stage, num_layers,
// pp_interleave_num and offset from the "num_layers per stage" line, pipeline_stage also from
// the "pipeline_stages" line; noted: "--pipeline-stage 4 from rank_0/train.log:4"), and a layout
// whose layers per (chunk, stage) or stage count differ from what the logs state is refused,
// naming both. Required: pipeline_stage and num_layers; data_parallel,
// model_parallel and context_parallel default to 1 and offset to 0 as in MindFormers; without
// micro_batch_num the layout has no micro-batch count (noted in `messages`). MoE settings that
// contradict each other (first_k_dense_replace or moe_layer_freq without experts, or leaving no
// MoE layer; first_k_dense_replace with moe_layer_freq above 1; more experts chosen than there
// are) and two names of one setting that disagree are refused naming the keys. Throws InputError
// "<config>:<line>: <key>: <problem>" for a problem in the file, FlagError for one in a flag.
[[nodiscard]] PipelineLayout mindspore_layout(const std::optional<std::filesystem::path>& config,
                                              const MindSporeFlags& flags, Messages& messages,
                                              const MindSporeLogLayout& stated = {});

// The peak figure of each rank, one per rank (the last line of a log; see
// last_reading_per_rank), with the peak with fragments as its reserved_mb: with `used`, the
// "Actual peak memory usage (with fragments)" line that follows the used line in the log (a
// smaller one is refused as damaged); with `actual`, the figure itself. Every log named on the
// command line must hold a memory line, and so must every rank among the logs found in directories;
// logs found in directories whose rank cannot be told are skipped (noted). Throws InputError
// "<file>:<line>: <problem>".
[[nodiscard]] std::vector<MemoryReading> scan_mindspore_logs(std::span<const LogFile> logs,
                                                             MindSporeMemory memory,
                                                             Messages& messages);

// What the logs state about the layout (MindSporeLogLayout): every log read for it, whatever
// its rank. Logs that state different layouts are refused, naming both. Throws InputError
// "<file>:<line>: <problem>".
[[nodiscard]] MindSporeLogLayout mindspore_log_layout(std::span<const LogFile> logs);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MINDSPORE_HPP
