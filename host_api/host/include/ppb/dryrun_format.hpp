// ppb/dryrun_format.hpp — reader of the dry-run observation format "ppb.dryrun/1"
// (host_api/docs/design.md, "ppb.dryrun/1").
#ifndef PPB_DRYRUN_FORMAT_HPP
#define PPB_DRYRUN_FORMAT_HPP

#include <ppb/placement.hpp>
#include <ppb/schedule.hpp>

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace ppb {

inline constexpr std::string_view dryrun_format_v1 = "ppb.dryrun/1";

struct DryRunReadOptions {
    // Two observations with the same pipeline degree, stage, in-flight count and layer counts
    // must agree within this fraction of the larger memory; otherwise the input is contradictory.
    double duplicate_tolerance = 0.01;
};

struct DryRunSet {
    // Top-level defaults as given in the file (0 = not given).
    std::uint32_t num_stages = 0;
    std::uint32_t micro_batches = 0;
    Schedule schedule = Schedule::one_f_one_b;
    // In input order, each with its in-flight count filled in: the observation's own
    // "in_flight" when given, else the schedule's count (1F1B: min(p - s, m), or p - s when no
    // micro-batch count is known).
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
