// ppb/importers/dryrun_builder.hpp — from a layout and per-rank memory readings to a ppb.dryrun/1
// document: one observation per stage, a new file or observations appended to an existing one.
// Every document is read back with ppb::parse_dryrun before it is returned, so an import never
// writes a file ppb cannot read.
#ifndef PPB_IMPORTERS_DRYRUN_BUILDER_HPP
#define PPB_IMPORTERS_DRYRUN_BUILDER_HPP

#include <ppb/dryrun_format.hpp>
#include <ppb/importers/layout.hpp>
#include <ppb/importers/logs.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers {

// The dry-run revision whose layers are counted per group of body layers (dense and MoE
// layers): /2 plus a top-level "groups" list (model order), and every "layers" object keyed by
// group name, its values the usual kind objects ({"dense": {"none": 3}, "moe": {"full": 1}}).
inline constexpr std::string_view grouped_dryrun_format = dryrun_format_v3;

struct StageObservation {
    std::uint32_t stage = 0;
    KindCounts layers{};             // summed over the chunks when there are several
    std::vector<KindCounts> chunks;  // per chunk with an interleaved layout; empty for one chunk
    // [chunk][group] when the layout has groups of layers (PipelineLayout::group_layers); the
    // chunks' layers (or `layers` for one chunk) are their sums over the groups.
    std::vector<std::vector<KindCounts>> group_layers;
    double peak_memory_mb = 0.0;
    // The stage's peak reserved memory (the format's "reserved_mb"), when every reading of the
    // stage has one.
    std::optional<double> reserved_mb;
    std::string comment;  // which rank and log line the figure comes from
};

// One observation per stage that has readings: the largest reading of its ranks (data- and
// tensor-parallel replicas of a stage measure the same placement; the peak is what must fit),
// and the largest reserved memory of its ranks when each has one. Noted in `messages`: stages
// with several ranks, stages without any reading (`source`, "log" or "snapshot", says what was
// missing); warned: a stage whose ranks differ by more than 1 %. Throws InputError
// "<file>:<line>: ..." for a rank outside the layout.
[[nodiscard]] std::vector<StageObservation> stage_observations(
    const PipelineLayout& layout, std::span<const MemoryReading> readings, Messages& messages,
    std::string_view source = "log");

// The observations of one dry run, under one label.
struct ImportedDryRun {
    std::uint32_t num_stages = 1;
    std::optional<std::uint32_t> micro_batches;
    Schedule schedule = Schedule::one_f_one_b;
    std::uint32_t num_chunks = 1;
    std::string label = "A";
    std::string comment;  // the new document's top-level "comment"; empty for none
    // The groups of body layers, in model order, when the model has several (every observation
    // then has group_layers); empty for one.
    std::vector<std::string> groups;
    std::vector<StageObservation> observations;
    // What the import knows of the model (DryRunSet::body_layers, layer_times), when it does.
    std::optional<std::uint32_t> body_layers;
    std::optional<HeadBodyTailTimes> layer_times;
};

// A new dry-run document (num_stages, micro_batches when known, the schedule, the model's
// body_layers and layer_times when known), checked with
// parse_dryrun under `options`: ppb.dryrun/1 for a 1F1B run with one chunk per stage (what
// every ppb reads), ppb.dryrun/2 with "num_chunks" and per-chunk "chunks" otherwise; for a run
// with groups, ppb.dryrun/3 (grouped_dryrun_format), whose group counts are checked to add up
// to each chunk's and whose /2 equivalent (the groups summed) is checked with parse_dryrun.
[[nodiscard]] std::string new_dryrun_text(const ImportedDryRun& run,
                                          const DryRunReadOptions& options = {});

// `existing` (a ppb.dryrun/1 or /2 document read from `source`) with `run`'s observations
// appended, everything else as it was, except that a /1 document becomes /2 when the run needs
// it (several chunks or another schedule; noted in `messages`); observations whose schedule or
// chunk count differs from the document's top level carry their own. The label must be new to the
// document. Where the document's top-level num_stages or micro_batches differ from the run's, the
// appended observations carry their own (and an explicit in_flight when the run has no micro-batch
// count but the document has one), noted in `messages`. Checked with parse_dryrun, so appended
// observations that contradict existing ones (--duplicate-tolerance) are refused. Throws
// InputError; a run with groups cannot be appended yet (InputError saying so). The run's
// body_layers and layer_times are added where the document has none (noted in `messages`) and
// must agree with the document's where it has them (InputError naming both).
[[nodiscard]] std::string appended_dryrun_text(std::string_view existing, std::string_view source,
                                               const ImportedDryRun& run,
                                               const DryRunReadOptions& options,
                                               Messages& messages);

// write_output_file (output_file.hpp): a regular file or a new path is replaced atomically (a
// temporary file in the same directory, flushed to disk, then renamed over `path`; a symbolic
// link is followed; an existing file's permissions are kept), a FIFO or a character device is
// written through, anything else is refused. Throws InputError or OutputError
// "<path>: cannot write: <reason>".
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_DRYRUN_BUILDER_HPP
