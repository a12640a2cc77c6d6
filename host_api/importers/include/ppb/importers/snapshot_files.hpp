// ppb/importers/snapshot_files.hpp — what the name of a memory snapshot file says: which rank
// wrote it, at which step, and whether the rank was running out of memory.
//
// The names the frameworks give them:
//   Megatron-LM (--record-memory-history, --memory-snapshot-path P, default "snapshot.pickle";
//   NVIDIA/Megatron-LM at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553):
//     megatron/training/training.py training_log: "<base>_<rank><ext>" at each log interval
//       (since commit 5714a206e89dcc08f4ac6ed3d8057c6c1d8dcfa2; before it, P itself, written by
//       the last rank only or by any rank of a fake process group: no rank in the name);
//     megatron/training/utils/utils.py start_memory_history_recording, the out-of-memory
//       observer: "<base>_oom_rank_<rank><ext>" ("<base>_oom_rank-<rank><ext>" from commit
//       223e244f5e to 5714a206e8);
//   torchtitan (profiling.enable_memory_snapshot; pytorch/torchtitan, torchtitan/tools/
//   profiler.py at commit b5bcd76c66d0acb1a08b176d9639425bc55e0b2a, and torchtitan/tools/
//   profiling.py before commit b2cd149f6):
//     "<folder>/step_<step, 12 digits>/<rank, 6 digits>_step_<step>.pickle", and the dump on an
//       out-of-memory error in "step_<step>_exit/";
//     before: "<folder>/iteration_<step>/rank<rank>_memory_snapshot.pickle", and
//       "iteration_<step>_exit/" on an out-of-memory error.
// Any other name takes its rank from the path as logs do (a directory rank_<id>, logs.hpp), and
// "rank_<id>.pickle" names rank <id>.
#ifndef PPB_IMPORTERS_SNAPSHOT_FILES_HPP
#define PPB_IMPORTERS_SNAPSHOT_FILES_HPP

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace ppb::importers {

struct SnapshotName {
    std::optional<std::uint32_t> rank;
    std::optional<std::uint64_t> step;
    bool out_of_memory = false;  // the dump of a rank that ran out of memory
};

// What `path` says. Throws InputError when it names two different ranks
// ("rank_3/000005_step_10.pickle").
[[nodiscard]] SnapshotName snapshot_name(const std::filesystem::path& path);

// Whether a file found while walking a directory is read as a snapshot: *.pickle or *.pkl.
[[nodiscard]] bool looks_like_snapshot(const std::filesystem::path& path);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_SNAPSHOT_FILES_HPP
