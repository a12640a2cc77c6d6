// ppb/importers/memory_snapshot.hpp — what a PyTorch CUDA memory snapshot says: the caching
// allocator's segments and blocks when it was taken, each device's trace of allocator events
// before it, and the allocator's settings.
//
// A snapshot is the dict torch.cuda.memory._snapshot() returns, pickled by
// torch.cuda.memory._dump_snapshot (Megatron-LM's --record-memory-history) or by pickle.dump
// (torchtitan's profiling.enable_memory_snapshot). Its keys, as PyTorch builds them
// (pytorch/pytorch, torch/csrc/cuda/memory_snapshot.cpp _memory_snapshot_pickled, commit
// 00067369c9339bed950762afec327514d6fa2566; the older torch/csrc/cuda/Module.cpp
// THCPModule_memorySnapshot, commit 87a08c18736e7cf8a3b2a5d72d1c8564a159b746; the TypedDicts of
// torch/cuda/memory.py _snapshot, commit d0e3d96bcf375059f054aa04e03c76c6d943211e):
//   segments: [{device, address, total_size, allocated_size, active_size, requested_size, stream,
//               segment_type ('large' | 'small'), segment_pool_id, is_expandable, frames,
//               blocks: [{address, size, requested_size, state, frames}]}]
//     a segment is one cudaMalloc (or the mapped part of an expandable segment); its blocks tile
//     it in address order; a block's state is 'active_allocated' (a tensor holds it),
//     'active_pending_free' (freed, waiting for another stream) or 'inactive' (cached, free);
//   device_traces: one list per device of {action, addr, size, stream, time_us, frames}, oldest
//     first: action 'alloc', 'free_requested', 'free_completed', 'segment_alloc',
//     'segment_free', 'segment_map', 'segment_unmap' (expandable segments), 'oom' (with
//     'device_free' instead of 'addr'; size is the request that failed) or 'snapshot'; time_us
//     is microseconds since the Unix epoch;
//   allocator_settings (newer PyTorch): {PYTORCH_CUDA_ALLOC_CONF (PYTORCH_ALLOC_CONF in newer
//     ones), max_split_size, garbage_collection_threshold, expandable_segments,
//     roundup_power2_divisions, ...}, read where of the type PyTorch writes, never refused (they
//     are only reported).
// A trace event's size is the size requested (c10/cuda/CUDACachingAllocator.cpp records
// orig_size for 'alloc', commit eb42ad6eca0ce61e7c581212b4bf32f991425571) and a block's
// requested_size the same, while the allocator's own allocated_bytes statistic counts the
// rounded block size.
//
// Older snapshots differ, and are read as PyTorch's own viewer (torch/utils/viz/MemoryViz.js,
// annotate_snapshot) reads them: a block without 'address' lies after the blocks before it in its
// segment; a block without 'requested_size' requested its first 'history' entry's real_size
// (PyTorch 2.0), or else its whole size; an event without 'time_us' has no time; a snapshot without
// 'device_traces' has no trace; the keys this reader does not use (frames, streams, pools, user
// annotations) are not looked at. An action this reader does not know (PyTorch adds some, e.g. user
// annotations) is counted and passed over.
#ifndef PPB_IMPORTERS_MEMORY_SNAPSHOT_HPP
#define PPB_IMPORTERS_MEMORY_SNAPSHOT_HPP

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers {

enum class BlockState { active_allocated, active_pending_free, inactive };

struct SnapshotBlock {
    std::uint64_t address = 0;
    std::uint64_t size = 0;            // the block, rounded as the allocator hands it out
    std::uint64_t requested_size = 0;  // what the tensor asked for
    BlockState state = BlockState::inactive;
};

struct SnapshotSegment {
    std::uint32_t device = 0;
    std::uint64_t address = 0;
    std::uint64_t total_size = 0;
    bool expandable = false;
    std::vector<SnapshotBlock> blocks;
};

enum class TraceAction {
    alloc,
    free_requested,
    free_completed,
    segment_alloc,
    segment_free,
    segment_map,
    segment_unmap,
    oom,
    snapshot,
    other,  // an action this reader does not know
};

struct TraceEvent {
    TraceAction action = TraceAction::other;
    std::uint64_t addr = 0;         // not for 'oom'
    std::uint64_t size = 0;         // bytes; for 'oom' the request that failed
    std::uint64_t device_free = 0;  // 'oom' only: what CUDA still had free
    std::optional<std::int64_t> time_us;
};

// The allocator's settings, where the snapshot has them (what changes how much is reserved).
struct AllocatorSettings {
    // PYTORCH_ALLOC_CONF (PYTORCH_CUDA_ALLOC_CONF) as the allocator last read it
    std::optional<std::string> alloc_conf;
    std::optional<bool> expandable_segments;
    std::optional<std::int64_t> max_split_size;
    std::optional<double> garbage_collection_threshold;
};

struct MemorySnapshot {
    std::vector<SnapshotSegment> segments;
    std::vector<std::vector<TraceEvent>> device_traces;  // [device][event], oldest first
    bool has_traces = false;                             // the snapshot has 'device_traces'
    std::optional<AllocatorSettings> allocator_settings;
    std::map<std::string, std::size_t> other_actions;  // unknown action -> how many events
};

// Reads a snapshot from the bytes of its file (a pickle: plain_pickle.hpp refuses anything but
// plain data). `source` names it in messages. Throws ppb::InputError naming the file and the place
// in the snapshot: "snap.pickle: segments[3].blocks[0].size: expected an int of bytes, got 'x'
// (a str)".
[[nodiscard]] MemorySnapshot parse_memory_snapshot(std::string bytes, std::string_view source);

// The bytes of a snapshot file, at most limits::snapshot_file_bytes. Throws ppb::InputError
// "<name>: cannot read: <reason>".
[[nodiscard]] std::string read_snapshot_bytes(const std::filesystem::path& path,
                                              std::string_view name);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MEMORY_SNAPSHOT_HPP
