// ppb/importers/snapshot_peaks.hpp — each device's peak allocated and peak reserved memory over a
// memory snapshot's trace (memory_snapshot.hpp), and when each was reached.
//
// The trace is a ring buffer: it holds the last max_entries events before the snapshot, so its
// first event is not the run's start, and the blocks and segments live when it begins are not in
// it. They are found by working back from what the snapshot holds, which is exact: the
// allocator's state at the snapshot, with each event undone from the last to the first, is its
// state before the first event. Then the trace is replayed forward from there.
//
// Allocated memory is PyTorch's allocated_bytes: a block counts from its 'alloc' to its
// 'free_requested' (the allocator's free(); 'free_completed' comes later when another stream
// still used the block, and ends what PyTorch calls active memory). Bytes are the sizes the trace
// records, which are the sizes requested (torch.cuda.max_memory_allocated() counts the blocks'
// rounded sizes, a little more; PyTorch's own viewer, MemoryViz.js, plots these). At the
// snapshot, the allocated blocks are those in state 'active_allocated'. Working back, an 'alloc'
// removes its block (it must be allocated after it: in the snapshot, or freed by a later event)
// and a 'free_requested' puts it back (it must not be allocated after it); the blocks left are
// those allocated before the trace.
//
// Reserved memory is the segments' bytes (torch.cuda.memory_reserved()): the sum of the
// snapshot's segments' total_size, less each 'segment_alloc' / 'segment_map' and plus each
// 'segment_free' / 'segment_unmap' working back, then replayed forward. It may never be negative.
//
// A contradiction between the trace and the segments (a block allocated twice, freed while free,
// allocated with a size other than it is freed with, reserved memory below zero) is an
// InputError naming the device, the event and its address: the file is damaged or not one
// snapshot.
#ifndef PPB_IMPORTERS_SNAPSHOT_PEAKS_HPP
#define PPB_IMPORTERS_SNAPSHOT_PEAKS_HPP

#include <ppb/importers/memory_snapshot.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ppb::importers {

struct MemoryPeak {
    std::uint64_t bytes = 0;
    // The event after which it was reached (an index into the device's trace); nullopt when the
    // memory was already that high before the trace's first event (or there is no trace).
    std::optional<std::size_t> event;
    std::optional<std::int64_t> time_us;  // the event's, when it has one
};

// The first 'oom' event of a trace: an allocation that failed.
struct OutOfMemory {
    std::size_t event = 0;
    std::uint64_t requested = 0;    // the bytes that could not be had
    std::uint64_t device_free = 0;  // what CUDA still had free
    std::uint64_t allocated = 0;    // allocated bytes at that moment
    std::uint64_t reserved = 0;     // reserved bytes at that moment
    std::optional<std::int64_t> time_us;
};

struct DeviceMemory {
    std::uint32_t device = 0;
    std::size_t events = 0;  // trace events of the device (of every action)
    MemoryPeak allocated;
    MemoryPeak reserved;
    std::uint64_t allocated_at_start = 0;  // before the first event
    std::uint64_t reserved_at_start = 0;
    std::uint64_t allocated_at_end = 0;  // at the snapshot
    std::uint64_t reserved_at_end = 0;
    // Blocks allocated before the trace's first event, and how many of them the trace frees (a
    // free whose allocation the trace does not hold).
    std::size_t blocks_at_start = 0;
    std::size_t freed_unseen = 0;
    std::optional<std::int64_t> first_time_us;  // the first and last event that have a time
    std::optional<std::int64_t> last_time_us;
    std::optional<OutOfMemory> oom;
};

// Every device that has segments or trace events, by device index. `source` names the file in
// messages. Throws ppb::InputError for a contradiction (above).
[[nodiscard]] std::vector<DeviceMemory> device_memory(const MemorySnapshot& snapshot,
                                                      std::string_view source);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_SNAPSHOT_PEAKS_HPP
