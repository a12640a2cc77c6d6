// ppb/limits.hpp — the documented range of every count, size and value ppb reads.
//
// Every reader (the ppb.dryrun/1 reader, the SAPP layer file, the boundary checks of a plugin's
// C table, the importers' flags and YAML values, the command line, the models' options) checks
// its numbers against these ranges where it reads them and refuses a value outside with a message
// naming the field and the range ("nb_layer: 4294967295 is out of range (1 to 10000 layers)").
//
// The bounds are generous for any real training run and chosen so that the arithmetic after
// them cannot overflow and memory use stays bounded:
//   - counts fit in 32 bits with room to spare, so `n + 1`, P x chunks, Σ layers over the
//     kinds and entries cannot wrap;
//   - the partitioner's per-stage tables have P x (L + 1) <= 1024 x 10001 cells;
//   - a stage's memory is at most const + head + tail + per_layer x L + activation x L x f
//     <= 1e9 x (3 + 1e4 + 1e4 x 1e6) ≈ 1e19 MB, and an iteration time at most
//     (Σ_s t_s) + (M - 1) max_s t_s with t_s <= (L + 2) x (1 + 1001) x 1e9 ≈ 1e16, so
//     ≈ 1e22: both far below the largest double (1.8e308), so never infinite.
// host_api/docs/formats.md "Ranges" lists them for users.
#ifndef PPB_LIMITS_HPP
#define PPB_LIMITS_HPP

#include <cstdint>
#include <string>
#include <string_view>

namespace ppb::limits {

// An inclusive range of counts, and the unit that names them in messages.
struct CountRange {
    std::uint32_t min;
    std::uint32_t max;
    std::string_view unit;

    [[nodiscard]] constexpr bool contains(std::uint64_t n) const noexcept {
        return n >= min && n <= max;
    }
};

// A range of real numbers: [min, max], or (min, max] when min_exclusive.
struct RealRange {
    double min;
    double max;
    bool min_exclusive;
    std::string_view unit;

    [[nodiscard]] constexpr bool contains(double x) const noexcept {
        // false for NaN
        return (min_exclusive ? x > min : x >= min) && x <= max;
    }
};

// Bytes of a text file ppb reads whole (JSON documents, YAML configs, options): a real one is a
// few MB at most; a device read to its end (/dev/zero, /dev/full) would never end.
inline constexpr std::uint64_t text_file_bytes = 1ull << 28;  // 256 MiB
// Bytes of a PyTorch memory snapshot ppb reads whole: a trace of a million events with their
// Python stacks is a few hundred MB.
inline constexpr std::uint64_t snapshot_file_bytes = 1ull << 32;  // 4 GiB
// Pipeline stages P. The largest published pipelines use a few hundred stages at most.
inline constexpr CountRange stages{1, 1024, "stages"};
// Body layers of a model, of one SAPP entry, of one chunk, of one kind. Real models have a few
// hundred; 10 000 keeps the partitioner's P x (L + 1) tables at most ~1e7 cells.
inline constexpr CountRange layers{1, 10'000, "layers"};
// Layers that may be 0 (a placement's layers of one kind, a dry run's "layers" values).
inline constexpr CountRange layers_or_none{0, layers.max, "layers"};
// Micro-batches M per iteration (gradient accumulation steps).
inline constexpr CountRange micro_batches{1, 1'000'000, "micro-batches"};
// Micro-batches in flight in one chunk at its peak: at most M.
inline constexpr CountRange in_flight{1, micro_batches.max, "micro-batches"};
// Virtual pipeline chunks of one stage (interleaved schedules use 2 to 8).
inline constexpr CountRange chunks{1, 64, "chunks"};
// Groups of body layers a model distinguishes (dense and MoE, encoder and decoder, ...); real
// models have two or three.
inline constexpr CountRange groups{1, 64, "groups"};

// Memory in MB (a coefficient, a measured peak, a limit): up to 1e9 MB, about a petabyte.
inline constexpr RealRange memory_mb{0.0, 1e9, false, "MB"};
// A memory that may be negative (a fitted constant, SAPP's stage_const_mem): -1e9 to 1e9 MB.
inline constexpr RealRange signed_memory_mb{-1e9, 1e9, false, "MB"};
// A measured peak memory, or a memory limit: positive.
inline constexpr RealRange positive_memory_mb{0.0, 1e9, true, "MB"};
// The time of one layer, in the layer file's own unit: 0 to 1e9. SAPP's own layer template gives
// its HEAD and TAIL entries "time": 0, so 0 is a time (the time model refuses a BODY of time 0).
inline constexpr RealRange time{0.0, 1e9, false, ""};
// A backward-time coefficient c (backward = (1 + c) x forward): above -1, at most 1000.
inline constexpr RealRange backward_coefficient{-1.0, 1000.0, true, ""};
// Standard errors K of a stage's predicted memory planned against (ppb partition
// --memory-margin-sigma): finite, at least 0; beyond 100 a one-sided normal bound means nothing.
inline constexpr RealRange margin_sigma{0.0, 100.0, false, "standard errors"};

// "1 to 10000 layers"; "0 to 1e9 MB"; "greater than 0, at most 1e9 MB".
[[nodiscard]] std::string describe(const CountRange& range);
[[nodiscard]] std::string describe(const RealRange& range);
// "<value> is out of range (<describe(range)>)", how every reader words a value beyond its range.
[[nodiscard]] std::string out_of_range(std::string_view value, const CountRange& range);
[[nodiscard]] std::string out_of_range(std::string_view value, const RealRange& range);
// The shortest text of a bound: 1e9, 1000, 0.5, -1.
[[nodiscard]] std::string bound_text(double x);

}  // namespace ppb::limits

#endif  // PPB_LIMITS_HPP
