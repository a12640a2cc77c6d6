// Peaks over a memory snapshot's trace (ppb/importers/snapshot_peaks.hpp): work back from the
// snapshot to the trace's start, then replay forward.
#include <ppb/importers/snapshot_peaks.hpp>

#include <ppb/errors.hpp>

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

namespace ppb::importers {
namespace {

std::string_view action_name(TraceAction action) {
    switch (action) {
        case TraceAction::alloc:
            return "alloc";
        case TraceAction::free_requested:
            return "free_requested";
        case TraceAction::free_completed:
            return "free_completed";
        case TraceAction::segment_alloc:
            return "segment_alloc";
        case TraceAction::segment_free:
            return "segment_free";
        case TraceAction::segment_map:
            return "segment_map";
        case TraceAction::segment_unmap:
            return "segment_unmap";
        case TraceAction::oom:
            return "oom";
        case TraceAction::snapshot:
            return "snapshot";
        case TraceAction::other:
            return "other";
    }
    return "other";
}

// Bytes that count up and down, refusing to leave 0 .. 2^63 - 1.
class Bytes {
  public:
    explicit Bytes(std::int64_t start = 0) : value_(start) {}
    [[nodiscard]] bool add(std::uint64_t n) {
        return n <= static_cast<std::uint64_t>(INT64_MAX) &&
               !__builtin_add_overflow(value_, static_cast<std::int64_t>(n), &value_);
    }
    [[nodiscard]] bool subtract(std::uint64_t n) {
        return n <= static_cast<std::uint64_t>(INT64_MAX) &&
               !__builtin_sub_overflow(value_, static_cast<std::int64_t>(n), &value_);
    }
    [[nodiscard]] std::int64_t value() const noexcept { return value_; }

  private:
    std::int64_t value_;
};

class DeviceReplay {
  public:
    DeviceReplay(const MemorySnapshot& snapshot, std::uint32_t device, std::string_view source)
        : snapshot_(snapshot), device_(device), source_(source) {
        if (device < snapshot.device_traces.size())
            trace_ = &snapshot.device_traces[device];
    }

    DeviceMemory run() {
        DeviceMemory out;
        out.device = device_;
        out.events = trace_ ? trace_->size() : 0;
        const std::size_t n = out.events;

        // At the snapshot.
        std::unordered_map<std::uint64_t, Block> allocated;
        Bytes reserved_end;
        for (const SnapshotSegment& segment : snapshot_.segments) {
            if (segment.device != device_)
                continue;
            if (!reserved_end.add(segment.total_size))
                too_large("the segments' sizes");
            for (const SnapshotBlock& block : segment.blocks) {
                if (block.state != BlockState::active_allocated)
                    continue;
                if (!allocated.emplace(block.address, Block{block.requested_size, false}).second) {
                    throw InputError(fmt::format(
                        "{}: device {}: two allocated blocks of the snapshot's segments start at "
                        "0x{:x}: the file is damaged",
                        source_, device_, block.address));
                }
            }
        }
        Bytes allocated_end;
        for (const auto& [address, block] : allocated) {
            if (!allocated_end.add(block.size))
                too_large("the allocated blocks' sizes");
        }
        out.allocated_at_end = static_cast<std::uint64_t>(allocated_end.value());
        out.reserved_at_end = static_cast<std::uint64_t>(reserved_end.value());

        // Working back to the trace's start.
        Bytes reserved_start = reserved_end;
        for (std::size_t i = n; i-- > 0;) {
            const TraceEvent& e = (*trace_)[i];
            switch (e.action) {
                case TraceAction::alloc: {
                    const auto it = allocated.find(e.addr);
                    if (it == allocated.end()) {
                        contradiction(i, e,
                                      "its block is neither freed by a later event nor allocated "
                                      "in the snapshot's segments");
                    }
                    if (it->second.size != e.size) {
                        contradiction(i, e,
                                      fmt::format("the block is later freed (or held at the "
                                                  "snapshot) as {} bytes",
                                                  it->second.size));
                    }
                    allocated.erase(it);
                    break;
                }
                case TraceAction::free_requested:
                    if (!allocated.emplace(e.addr, Block{e.size, true}).second) {
                        contradiction(i, e,
                                      "the block is allocated after it with no 'alloc' between: "
                                      "freed while free, or allocated twice");
                    }
                    break;
                case TraceAction::segment_alloc:
                case TraceAction::segment_map:
                    if (!reserved_start.subtract(e.size))
                        too_large("the segments' sizes");
                    break;
                case TraceAction::segment_free:
                case TraceAction::segment_unmap:
                    if (!reserved_start.add(e.size))
                        too_large("the segments' sizes");
                    break;
                default:
                    break;
            }
        }
        Bytes allocated_now;
        for (const auto& [address, block] : allocated) {
            if (!allocated_now.add(block.size))
                too_large("the allocated blocks' sizes");
            ++out.blocks_at_start;
            if (block.freed_in_trace)
                ++out.freed_unseen;
        }
        if (reserved_start.value() < 0) {
            throw InputError(fmt::format(
                "{}: device {}: the trace allocates {} bytes of segments more than the snapshot "
                "holds and the trace frees: the trace and the segments disagree (the file is "
                "damaged, or not one snapshot)",
                source_, device_, -reserved_start.value()));
        }
        out.allocated_at_start = static_cast<std::uint64_t>(allocated_now.value());
        out.reserved_at_start = static_cast<std::uint64_t>(reserved_start.value());
        out.allocated.bytes = out.allocated_at_start;
        out.reserved.bytes = out.reserved_at_start;

        // Forward, from the start.
        Bytes reserved_now = reserved_start;
        for (std::size_t i = 0; i < n; ++i) {
            const TraceEvent& e = (*trace_)[i];
            if (e.time_us) {
                if (!out.first_time_us)
                    out.first_time_us = e.time_us;
                out.last_time_us = e.time_us;
            }
            bool ok = true;
            switch (e.action) {
                case TraceAction::alloc:
                    ok = allocated_now.add(e.size);
                    break;
                case TraceAction::free_requested:
                    ok = allocated_now.subtract(e.size);
                    break;
                case TraceAction::segment_alloc:
                case TraceAction::segment_map:
                    ok = reserved_now.add(e.size);
                    break;
                case TraceAction::segment_free:
                case TraceAction::segment_unmap:
                    ok = reserved_now.subtract(e.size);
                    break;
                case TraceAction::oom:
                    if (!out.oom) {
                        out.oom = OutOfMemory{i,
                                              e.size,
                                              e.device_free,
                                              static_cast<std::uint64_t>(allocated_now.value()),
                                              static_cast<std::uint64_t>(reserved_now.value()),
                                              e.time_us};
                    }
                    break;
                default:
                    break;
            }
            if (!ok)
                too_large("the trace's sizes");
            if (reserved_now.value() < 0) {
                contradiction(i, e, "it frees more segment bytes than are reserved at that moment");
            }
            if (static_cast<std::uint64_t>(allocated_now.value()) > out.allocated.bytes) {
                out.allocated =
                    MemoryPeak{static_cast<std::uint64_t>(allocated_now.value()), i, e.time_us};
            }
            if (static_cast<std::uint64_t>(reserved_now.value()) > out.reserved.bytes) {
                out.reserved =
                    MemoryPeak{static_cast<std::uint64_t>(reserved_now.value()), i, e.time_us};
            }
        }
        return out;
    }

  private:
    struct Block {
        std::uint64_t size = 0;
        bool freed_in_trace = false;  // a later event of the trace frees it
    };

    [[noreturn]] void contradiction(std::size_t i, const TraceEvent& e,
                                    std::string_view why) const {
        throw InputError(fmt::format(
            "{}: device_traces[{}][{}]: '{}' of {} bytes at 0x{:x}: {}: the trace and the "
            "segments disagree (the file is damaged, or not one snapshot)",
            source_, device_, i, action_name(e.action), e.size, e.addr, why));
    }
    [[noreturn]] void too_large(std::string_view what) const {
        throw InputError(fmt::format("{}: device {}: {} add up to more than 2^63 bytes", source_,
                                     device_, what));
    }

    const MemorySnapshot& snapshot_;
    std::uint32_t device_;
    std::string_view source_;
    const std::vector<TraceEvent>* trace_ = nullptr;
};

}  // namespace

std::vector<DeviceMemory> device_memory(const MemorySnapshot& snapshot, std::string_view source) {
    std::set<std::uint32_t> devices;
    for (const SnapshotSegment& segment : snapshot.segments)
        devices.insert(segment.device);
    for (std::size_t d = 0; d < snapshot.device_traces.size(); ++d) {
        if (!snapshot.device_traces[d].empty())
            devices.insert(static_cast<std::uint32_t>(d));
    }
    std::vector<DeviceMemory> out;
    for (const std::uint32_t device : devices)
        out.push_back(DeviceReplay(snapshot, device, source).run());
    return out;
}

}  // namespace ppb::importers
