// ppb/importers/megatron.hpp — Megatron-LM runs: the pipeline layout from Megatron's own flags,
// peak memory from the lines Megatron's report_memory() prints,
//
//   [Rank 3] (after 10 iterations) memory (MB) | allocated: 9334.4 | max allocated: 12680.6 |
//       reserved: 13236.0 | max reserved: 13236.0
//
// (one line). The rank is each line's "[Rank N]", so one combined log of all ranks works; a
// memory line without it takes its log's rank (--rank FILE=ID or the path, see logs.hpp).
#ifndef PPB_IMPORTERS_MEGATRON_HPP
#define PPB_IMPORTERS_MEGATRON_HPP

#include <ppb/importers/layout.hpp>
#include <ppb/importers/logs.hpp>
#include <ppb/importers/megatron_argument_dump.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers {

// Which figure of the memory line to import. The default is max allocated: the peak of the
// memory the job's tensors occupied, which is what the layout and recompute choices determine;
// reserved figures add what PyTorch's caching allocator holds besides (fragmentation, cached
// blocks), which does not scale with layers. Whichever is imported, a line's "max reserved" is
// each reading's reserved_mb (at least the figure, or the line is refused as damaged).
enum class MegatronMemory { allocated, max_allocated, reserved, max_reserved };

// "allocated", "max-allocated" (also "max allocated", "max_allocated"), "reserved",
// "max-reserved".
[[nodiscard]] std::optional<MegatronMemory> megatron_memory_from_name(std::string_view name);
// The field's name on the memory line: "max allocated".
[[nodiscard]] std::string_view megatron_memory_field(MegatronMemory memory);

// The layout, with Megatron's flag names; plus the world size and micro-batch count, which
// Megatron derives from its environment and batch sizes.
struct MegatronFlags {
    std::optional<std::uint32_t> pipeline_size;       // --pipeline-model-parallel-size
    std::optional<std::uint32_t> num_layers;          // --num-layers
    std::optional<std::uint32_t> first_stage_layers;  // --decoder-first-pipeline-num-layers
    std::optional<std::uint32_t> last_stage_layers;   // --decoder-last-pipeline-num-layers
    // Virtual pipeline (interleaved schedule): one of the two.
    std::optional<std::uint32_t>
        layers_per_virtual_stage;                 // --num-layers-per-virtual-pipeline-stage
    std::optional<std::uint32_t> virtual_stages;  // --num-virtual-stages-per-pipeline-rank
    // Megatron's layout flags (megatron_layout.hpp): the layout string, the embedding and the
    // loss counted in the split, and the MTP layers the layout's 'm' must match.
    std::optional<std::string> layout;                 // --pipeline-model-parallel-layout
    bool account_for_embedding = false;                // --account-for-embedding-in-pipeline-split
    bool account_for_loss = false;                     // --account-for-loss-in-pipeline-split
    std::optional<std::uint32_t> mtp_layers;           // --mtp-num-layers
    std::optional<std::string> recompute_granularity;  // full | selective
    std::optional<std::string> recompute_method;       // uniform | block
    std::optional<std::uint32_t> recompute_num_layers;
    // --overlap-moe-expert-parallel-comm: the combined 1F1B (ppb::Schedule::combined_1f1b), one
    // more warm-up forward than the interleaved schedule.
    bool overlap_moe_expert_parallel_comm = false;
    std::optional<std::uint32_t> world_size;     // --world-size
    std::optional<std::uint32_t> micro_batches;  // --num-microbatches
    // MoE layers (see moe_layer_pattern).
    std::optional<std::uint32_t> num_experts;            // --num-experts
    std::optional<std::string> moe_layer_freq;           // --moe-layer-freq, as given
    std::optional<std::uint32_t> first_k_dense_replace;  // --first-k-dense-replace
    // MindSpeed-LLM's layout flags, as given (megatron_layout.hpp): layers per stage, and the
    // 0-based indices of the layers that hold no transformer block.
    std::optional<std::string> num_layer_list;  // --num-layer-list "7,9,10,6"
    std::optional<std::string> noop_layers;     // --noop-layers "61,62,63"
};

// Which of `num_layers` layers --moe-layer-freq `text` makes MoE layers, as Megatron-LM's
// moe_freq_type and transformer layer specs read it: an integer N makes layer i an MoE layer when
// i % N == 0 (Megatron's default 1: every layer); a Python list expression of 0 (dense) and 1
// (MoE) gives one entry per layer, as Megatron's scripts pass it: lists "[0, 1]", repetition
// "[0]*3" (or "3*[0]"), concatenation "+", parentheses, optionally the whole in quotes
// ("'([1]*48)'"). Throws FlagError naming --moe-layer-freq for anything else, N = 0, or a list
// whose length is not num_layers.
[[nodiscard]] std::vector<bool> moe_layer_pattern(std::string_view text, std::uint32_t num_layers);

// What the logs say.
struct MegatronScan {
    std::vector<MemoryReading> readings;  // one per rank (see last_reading_per_rank)
    // What they state about the run: its argument dump, the "using world size" line, the
    // micro-batch line (megatron_argument_dump.hpp).
    MegatronArgumentDump arguments;
    // False when no log was read (the memory came from elsewhere, a snapshot): the flags alone
    // give the layout, and messages about missing flags do not point at logs.
    bool logs_read = true;
};

// Reads every log. A log named on the command line must hold a memory line; logs found in
// directories without one are skipped (noted). Logs that state different values of one argument
// are refused (MegatronArgumentDump). Throws InputError "<file>:<line>: <problem>".
[[nodiscard]] MegatronScan scan_megatron_logs(std::span<const LogFile> logs, MegatronMemory memory,
                                              Messages& messages);

// The run's flags: `given` (the command line) completed by what the logs state, as the run had
// them — a flag left out takes the logs' value (noted: "--num-layers 32 from train.log:10"); a
// flag that contradicts the logs is refused, naming both values and where each comes from (a
// value the dump prints as None is unset in the run, and contradicts a flag given). Read from
// the argument dump: every flag of MegatronFlags under Megatron's (or MindSpeed-LLM's) argument
// name (decoder_first_pipeline_num_layers, also its older name num_layers_in_first_pipeline_stage,
// ...; moe_layer_freq only with num_experts); the world and pipeline sizes also from the "using
// world size" line; the micro-batch count from the "setting number of microbatches to constant
// N" line, else as Megatron derives it, global_batch_size / (micro_batch_size x
// data_parallel_size x gtp_weight_remat_size) (not with a batch-size ramp-up). Runs ppb cannot
// import are refused by name (schedules_method, MindSpeed-LLM's dualpipev; a hybrid layer
// pattern). Throws InputError.
[[nodiscard]] MegatronFlags megatron_flags_from_logs(const MegatronFlags& given,
                                                     const MegatronArgumentDump& stated,
                                                     Messages& messages);

// The layout, as Megatron builds it from megatron_flags_from_logs(flags, scan.arguments):
//   layers: with --pipeline-model-parallel-layout or the --account-for flags, as
//     megatron_layout_flag_counts() reads them (megatron_layout.hpp); otherwise
//     --num-layers / P per stage (it must divide); with --decoder-first- or
//     --decoder-last-pipeline-num-layers, the first / last stage holds that many and the other
//     stages share the rest evenly (it must divide);
//   chunks: with --num-layers-per-virtual-pipeline-stage N (not with first / last stage layers;
//     N must divide L / P) each stage runs v = L / P / N chunks of N layers; with
//     --num-virtual-stages-per-pipeline-rank v each stage's layers split evenly into v chunks (it
//     must divide them); v > 1 is the interleaved schedule, and needs P >= 2;
//   kinds: selective -> every layer 'select'; full + uniform -> every layer 'full'; full + block
//     + --recompute-num-layers N -> the first N layers of each stage's chunk 'full' (each chunk
//     is a transformer block of its own), the rest 'none'; no granularity -> 'none';
//   ranks: stage = rank / (world size / P), Megatron's default rank order; the world size is
//     --world-size, else the logs' world_size;
//   MindSpeed-LLM: --num-layer-list gives each stage's layers (megatron_layout_flag_counts);
//     --noop-layers makes those layers (0-based, counted in --num-layers, placed as Megatron
//     places layers) no-op layers: they hold no transformer block, so no memory, and are left out
//     of every stage's counts (noted), each chunk's recompute still counting them by position
//     (the block method recomputes the chunk's first N layers, no-op layers among them). With
//     both, MindSpeed-LLM drops --num-layer-list, and so does the import (warned);
//   chunks as the logs state them: a virtual_pipeline_model_parallel_size other than the
//     layout's chunk count is refused;
//   groups: with --num-experts, the MoE layers are those of --moe-layer-freq (moe_layer_pattern;
//     default 1, every layer) or, with --first-k-dense-replace K (MindSpeed-LLM's flag for
//     DeepSeek-like models), every layer from K on; with both dense and MoE layers the layout
//     counts each chunk's layers per group "dense" / "moe" by global layer index
//     (split_into_groups: chunk c of stage s follows chunk c of stage s - 1, and the chunks'
//     first layers are the recomputed ones).
// Throws FlagError for flags Megatron itself would refuse or that do not fit together (MoE flags
// without --num-experts, --first-k-dense-replace K >= --num-layers or with a --moe-layer-freq
// other than 1, a pattern without MoE layers), its message ending "(with --num-layers 32 from
// train.log:10; ...)" when some flags came from the logs; InputError from
// megatron_flags_from_logs and for the chunk count.
[[nodiscard]] PipelineLayout megatron_layout(const MegatronFlags& flags, const MegatronScan& scan,
                                             Messages& messages);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MEGATRON_HPP
