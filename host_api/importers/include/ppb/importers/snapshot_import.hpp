// ppb/importers/snapshot_import.hpp — each rank's peak allocated and reserved memory from the
// PyTorch memory snapshots of a dry run (memory_snapshot.hpp, snapshot_peaks.hpp), as the
// readings the other importers make from logs (logs.hpp), so that one layout turns them into
// observations (dryrun_builder.hpp).
#ifndef PPB_IMPORTERS_SNAPSHOT_IMPORT_HPP
#define PPB_IMPORTERS_SNAPSHOT_IMPORT_HPP

#include <ppb/importers/layout.hpp>
#include <ppb/importers/logs.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ppb::importers {

// Snapshot files: looks_like_snapshot() in directories, the rank from snapshot_name().
[[nodiscard]] const FileKind& snapshot_files();

// "2026-08-21 21:30:21.123 UTC": a trace's time (microseconds since the Unix epoch); a time
// before 1970 or after 9999 reads "<n> us since the Unix epoch".
[[nodiscard]] std::string utc_time_text(std::int64_t time_us);

// One reading per rank: `mb` its peak allocated memory, `reserved_mb` its peak reserved memory,
// both in MB (MiB, 2^20 bytes), over the snapshot's trace from the blocks live at its start
// (device_memory()). Of several snapshots of one rank (torchtitan writes one per step), the
// largest of each peak, each snapshot's trace being a window of the run (noted). Each snapshot
// is noted with its peaks, their times and its step; warned: a trace that begins with memory
// already allocated (the ring buffer dropped the events before it, or recording began late: an
// earlier peak is not seen), a snapshot without a trace. Left out, warned: a snapshot of a rank
// that ran out of memory (its name says so, or its trace holds an 'oom' event), whose peak is not
// what the run needed. A snapshot must hold one device's memory. Throws InputError naming the
// file: for a file whose rank is not known (named on the command line; one found in a directory is
// skipped, noted), a file that is not a snapshot, or no snapshot left to import.
[[nodiscard]] std::vector<MemoryReading> scan_snapshots(std::span<const LogFile> files,
                                                        Messages& messages);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_SNAPSHOT_IMPORT_HPP
