// ppb/dryrun_format.hpp — reader of the dry-run observation formats "ppb.dryrun/1" (one chunk per
// stage, 1F1B), "ppb.dryrun/2" (its revision: any schedule, layers per chunk) and "ppb.dryrun/3"
// (/2 with layers counted per group of body layers) (host_api/docs/design.md,
// "ppb.dryrun/1, /2 and /3").
#ifndef PPB_DRYRUN_FORMAT_HPP
#define PPB_DRYRUN_FORMAT_HPP

#include <ppb/placement.hpp>
#include <ppb/schedule.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb {

inline constexpr std::string_view dryrun_format_v1 = "ppb.dryrun/1";
// The revision that adds "schedule" beyond 1F1B, "num_chunks" and per-chunk "chunks"; a
// ppb.dryrun/1 document is read exactly as before, and a /2 document without chunks means the
// same as the /1 document it would otherwise be.
inline constexpr std::string_view dryrun_format_v2 = "ppb.dryrun/2";
// The revision for models whose body layers are not all alike (dense and MoE layers): a required
// top-level "groups" names them, and every "layers" is an object keyed by group name whose
// values are /2's kind objects. Everything else is /2's.
inline constexpr std::string_view dryrun_format_v3 = "ppb.dryrun/3";

struct DryRunReadOptions {
    // Two observations with the same pipeline degree, stage, and in-flight count and layer
    // counts of every chunk must agree within this fraction of the larger memory; otherwise the
    // input is contradictory.
    double duplicate_tolerance = 0.01;
};

// The time of one HEAD, BODY and TAIL layer as SAPP's -init YAML gives them (its time_config):
// what SAPP writes as each entry's `time` in the layer file it dumps, in the unit of the source.
struct HeadBodyTailTimes {
    double head = 0.0;
    double body = 0.0;
    double tail = 0.0;

    friend bool operator==(const HeadBodyTailTimes&, const HeadBodyTailTimes&) = default;
};

struct DryRunSet {
    std::uint32_t revision = 1;  // the document's format: 1, 2 or 3 (ppb.dryrun/1, /2, /3)
    // What the document says of the model beyond its observations (optional top-level members of
    // every revision, written by 'ppb import sapp'): "body_layers", the model's body layers (all
    // groups), which the stages of every dry run that measured them all sum to and no stage
    // exceeds; "layer_times", the times of a HEAD, BODY and TAIL layer (HeadBodyTailTimes).
    std::optional<std::uint32_t> body_layers;
    std::optional<HeadBodyTailTimes> layer_times;
    // The model's groups of body layers in model order (/3); empty for /1 and /2, whose layers
    // are of one group. When not empty, every observation's placement is grouped()
    // (StagePlacement::group_layers, in this order) and its chunks' layers are their sums.
    std::vector<std::string> groups;
    // Top-level defaults as given in the file (0 = not given).
    std::uint32_t num_stages = 0;
    std::uint32_t micro_batches = 0;
    Schedule schedule = Schedule::one_f_one_b;
    std::uint32_t num_chunks = 1;  // the top-level schedule's chunks per stage
    // In input order, each with one chunk per virtual pipeline chunk of its schedule and the
    // in-flight count of every chunk filled in: the file's own "in_flight" when given, else
    // ppb::in_flight_counts() of the observation's schedule (1F1B: min(p - s, m), or p - s when
    // no micro-batch count is known).
    std::vector<Observation> observations;
};

// Parses and validates a whole document. Throws ppb::InputError whose message names the JSON
// path of the problem ("observations[3].layers.full: ..."); `source` (a file name) prefixes it.
[[nodiscard]] DryRunSet parse_dryrun(std::string_view json_text, std::string_view source = {},
                                     const DryRunReadOptions& options = {});

// Reads `path` ("-" is standard input) and parses it; I/O failures are ppb::InputError too.
[[nodiscard]] DryRunSet read_dryrun_file(const std::filesystem::path& path,
                                         const DryRunReadOptions& options = {});

}  // namespace ppb

#endif  // PPB_DRYRUN_FORMAT_HPP
