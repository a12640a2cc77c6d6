// Readings from memory snapshots (ppb/importers/snapshot_import.hpp).
#include <ppb/importers/snapshot_import.hpp>

#include <ppb/errors.hpp>
#include <ppb/importers/memory_snapshot.hpp>
#include <ppb/importers/snapshot_files.hpp>
#include <ppb/importers/snapshot_peaks.hpp>
#include <ppb/number_text.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <map>

namespace ppb::importers {
namespace {

constexpr double bytes_per_mb = 1024.0 * 1024.0;

double mb_of(std::uint64_t bytes) {
    return static_cast<double>(bytes) / bytes_per_mb;
}

// "at event 812 of 4000 (2026-08-21 21:30:21.123 UTC, 3.2 s into the trace)", or "before the
// trace's first event".
std::string when(const MemoryPeak& peak, const DeviceMemory& device) {
    if (!peak.event)
        return device.events == 0 ? "at the snapshot" : "before the trace's first event";
    std::string text = fmt::format("at event {} of {}", *peak.event + 1, device.events);
    if (peak.time_us) {
        text += " (" + utc_time_text(*peak.time_us);
        if (device.first_time_us) {
            // In doubles: times from a damaged file may be far apart.
            text += fmt::format(
                ", {:.1f} s into the trace",
                (static_cast<double>(*peak.time_us) - static_cast<double>(*device.first_time_us)) /
                    1e6);
        }
        text += ")";
    }
    return text;
}

// What one snapshot gave, before the ranks' snapshots are combined.
struct SnapshotPeaks {
    const LogFile* file = nullptr;
    double allocated_mb = 0.0;
    double reserved_mb = 0.0;
};

}  // namespace

std::string utc_time_text(std::int64_t time_us) {
    // Years 1970 to 9999; a time outside (a damaged file) is shown as the number it is.
    constexpr std::int64_t year_10000_us = 253'402'300'800'000'000;
    if (time_us < 0 || time_us >= year_10000_us)
        return fmt::format("{} us since the Unix epoch", time_us);
    using namespace std::chrono;
    const sys_time<microseconds> t{microseconds{time_us}};
    const sys_days day = floor<days>(t);
    const year_month_day date{day};
    const hh_mm_ss<microseconds> clock{t - day};
    return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03} UTC",
                       static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                       static_cast<unsigned>(date.day()), clock.hours().count(),
                       clock.minutes().count(), clock.seconds().count(),
                       clock.subseconds().count() / 1000);
}

const FileKind& snapshot_files() {
    static const FileKind kind{
        looks_like_snapshot,
        [](const std::filesystem::path& path) { return snapshot_name(path).rank; },
        "memory snapshots", "files named *.pickle or *.pkl", "SNAPSHOT"};
    return kind;
}

std::vector<MemoryReading> scan_snapshots(std::span<const LogFile> files, Messages& messages) {
    std::map<std::uint32_t, std::vector<SnapshotPeaks>> by_rank;
    std::vector<std::string> skipped;
    std::vector<std::string> out_of_memory;
    for (const LogFile& file : files) {
        if (!file.rank) {
            if (!file.named) {
                skipped.push_back(file.name);
                continue;
            }
            throw InputError(fmt::format(
                "{}: cannot tell which rank wrote this snapshot: its name is none of Megatron-LM's "
                "(<base>_<rank>.pickle, <base>_oom_rank_<rank>.pickle) or torchtitan's "
                "(<rank>_step_<step>.pickle, rank<rank>_memory_snapshot.pickle), nor in a "
                "rank_<id>/ directory: give --rank {}=ID",
                file.name, file.name));
        }
        const SnapshotName name = snapshot_name(file.path);
        const MemorySnapshot snapshot =
            parse_memory_snapshot(read_snapshot_bytes(file.path, file.name), file.name);
        const std::vector<DeviceMemory> devices = device_memory(snapshot, file.name);
        if (devices.empty()) {
            throw InputError(fmt::format(
                "{}: the snapshot holds no segment and no trace event: nothing was allocated on "
                "any device while it was recorded",
                file.name));
        }
        if (devices.size() > 1) {
            std::vector<std::uint32_t> numbers;
            for (const DeviceMemory& d : devices)
                numbers.push_back(d.device);
            throw InputError(fmt::format(
                "{}: the snapshot holds the memory of devices {}: ppb reads one device per rank "
                "(the rank's own GPU), and cannot tell which is rank {}'s",
                file.name, describe_numbers(numbers), *file.rank));
        }
        const DeviceMemory& d = devices.front();
        const std::string who = fmt::format("rank {}: {}", *file.rank, file.name);
        const std::string step = name.step ? fmt::format("step {}, ", *name.step) : "";
        const std::string at_step = name.step ? fmt::format("(step {}) ", *name.step) : "";

        if (d.oom || name.out_of_memory) {
            out_of_memory.push_back(file.name);
            if (d.oom) {
                add_warning(messages,
                            fmt::format("{} {}is the dump of an out-of-memory error: an "
                                        "allocation of {} failed {} with {} allocated, {} "
                                        "reserved and {} free on the device; the run needed more "
                                        "than it shows, so it is left out",
                                        who, at_step, format_mb(mb_of(d.oom->requested)),
                                        when(MemoryPeak{0, d.oom->event, d.oom->time_us}, d),
                                        format_mb(mb_of(d.oom->allocated)),
                                        format_mb(mb_of(d.oom->reserved)),
                                        format_mb(mb_of(d.oom->device_free))));
            } else {
                add_warning(messages,
                            fmt::format("{} {}is the dump of an out-of-memory error (its name "
                                        "says so): the run needed more than it shows, so it is "
                                        "left out",
                                        who, at_step));
            }
            continue;
        }
        if (d.allocated.bytes == 0) {
            throw InputError(fmt::format(
                "{}: device {}: nothing is allocated in the snapshot or its trace: no peak to "
                "import",
                file.name, d.device));
        }
        if (d.reserved.bytes < d.allocated.bytes) {
            throw InputError(fmt::format(
                "{}: device {}: the peak reserved memory, {}, is less than the peak allocated, "
                "{}: the segments cannot hold the blocks (the file is damaged)",
                file.name, d.device, format_mb(mb_of(d.reserved.bytes)),
                format_mb(mb_of(d.allocated.bytes))));
        }

        std::string settings;
        if (snapshot.allocator_settings && snapshot.allocator_settings->expandable_segments &&
            *snapshot.allocator_settings->expandable_segments) {
            settings = ", expandable segments";
        }
        add_note(messages,
                 fmt::format("{} ({}device {}, {} trace event{}{}): peak allocated {} {}, peak "
                             "reserved {} {}",
                             who, step, d.device, d.events, d.events == 1 ? "" : "s", settings,
                             format_mb(mb_of(d.allocated.bytes)), when(d.allocated, d),
                             format_mb(mb_of(d.reserved.bytes)), when(d.reserved, d)));
        if (!snapshot.has_traces || d.events == 0) {
            add_warning(messages, fmt::format("{} has no trace of allocator events (was memory "
                                              "history recorded?): its peaks are the memory held "
                                              "when it was taken",
                                              who));
        } else if (d.allocated_at_start > 0) {
            add_warning(
                messages,
                fmt::format("{}: the trace begins with {} block{} ({}) already allocated{}: "
                            "events before its first were not recorded or were dropped from "
                            "the trace's ring buffer ({} events kept), so a higher peak before "
                            "them would not be seen",
                            who, d.blocks_at_start, d.blocks_at_start == 1 ? "" : "s",
                            format_mb(mb_of(d.allocated_at_start)),
                            d.freed_unseen == 0
                                ? std::string()
                                : fmt::format(", {} of them freed in the trace with no "
                                              "allocation of theirs in it",
                                              d.freed_unseen),
                            d.events));
        }
        if (!snapshot.other_actions.empty()) {
            std::vector<std::string> actions;
            for (const auto& [action, count] : snapshot.other_actions)
                actions.push_back(fmt::format("'{}' ({})", action, count));
            add_note(messages, fmt::format("{}: passed over trace events of actions that do not "
                                           "change memory as ppb reads it: {}",
                                           who, fmt::join(actions, ", ")));
        }
        by_rank[*file.rank].push_back(
            SnapshotPeaks{&file, mb_of(d.allocated.bytes), mb_of(d.reserved.bytes)});
    }
    if (!skipped.empty()) {
        add_note(
            messages,
            fmt::format("skipped {} snapshot{} found in directories whose path does not tell "
                        "the rank ({}); give --rank FILE=ID",
                        skipped.size(), skipped.size() == 1 ? "" : "s", fmt::join(skipped, ", ")));
    }
    if (by_rank.empty()) {
        throw InputError(
            out_of_memory.empty()
                ? std::string("no snapshot to import")
                : fmt::format("no snapshot to import: every one read is the dump of an "
                              "out-of-memory error, whose peak is not what the run needed: {}",
                              fmt::join(out_of_memory, ", ")));
    }

    std::vector<MemoryReading> readings;
    for (const auto& [rank, list] : by_rank) {
        const auto* allocated = &list.front();
        const auto* reserved = &list.front();
        for (const SnapshotPeaks& p : list) {
            if (p.allocated_mb > allocated->allocated_mb)
                allocated = &p;
            if (p.reserved_mb > reserved->reserved_mb)
                reserved = &p;
        }
        MemoryReading reading{rank, allocated->allocated_mb, allocated->file->name,
                              0,    reserved->reserved_mb,   {}};
        if (reserved != allocated)
            reading.reserved_where = reserved->file->name;
        if (list.size() > 1) {
            add_note(messages,
                     fmt::format("rank {}: {} snapshots, each of its own window of the run: took "
                                 "the largest peaks, allocated {} ({}) and reserved {} ({})",
                                 rank, list.size(), format_mb(allocated->allocated_mb),
                                 allocated->file->name, format_mb(reserved->reserved_mb),
                                 reserved->file->name));
        }
        readings.push_back(std::move(reading));
    }
    return readings;
}

}  // namespace ppb::importers
