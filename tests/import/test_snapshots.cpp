// PyTorch memory snapshots: their meaning, each device's peaks against the ground truth
// make_snapshots.py kept while it made them (tests/data/snapshots/expected.json: the allocator's
// own bookkeeping, forward from the run's start; ppb works back from the snapshot), their file
// names, and the readings an import makes of them.
#include "scratch.hpp"

#include <ppb/importers/memory_snapshot.hpp>
#include <ppb/importers/snapshot_files.hpp>
#include <ppb/importers/snapshot_import.hpp>
#include <ppb/importers/snapshot_peaks.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace ppb::importers;
namespace json = boost::json;

namespace snapshot_tests {
namespace {

const std::string dir = std::string(PPB_SNAPSHOTS_DIR) + "/";

std::vector<DeviceMemory> peaks_of(const std::string& relative) {
    const MemorySnapshot snapshot =
        parse_memory_snapshot(read_snapshot_bytes(dir + relative, relative), relative);
    return device_memory(snapshot, relative);
}

std::string refusal(const std::string& relative) {
    return ppb_test::error_message<ppb::InputError>([&] { (void)peaks_of(relative); });
}

LogFile file_of(const std::string& relative, std::optional<std::uint32_t> rank) {
    return LogFile{dir + relative, relative, rank, true};
}

bool any_message(const Messages& messages, Message::Level level, const std::string& part) {
    for (const Message& m : messages) {
        if (m.level == level && m.text.find(part) != std::string::npos)
            return true;
    }
    return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(snapshots)

BOOST_AUTO_TEST_CASE(peaks_match_the_ground_truth_of_every_snapshot) {
    const json::object expected =
        json::parse(ppb_test::read_file(dir + "expected.json")).as_object();
    BOOST_TEST_REQUIRE(expected.size() >= 14u);
    for (const auto& [key, value] : expected) {
        const std::string relative(key);
        const json::object& truth = value.as_object();
        BOOST_TEST_CONTEXT(relative) {
            const auto devices = peaks_of(relative);
            BOOST_TEST_REQUIRE(devices.size() == 1u);
            const DeviceMemory& d = devices.front();
            BOOST_TEST(d.events == truth.at("events").to_number<std::size_t>());
            BOOST_TEST(d.allocated.bytes == truth.at("allocated_peak").to_number<std::uint64_t>());
            BOOST_TEST(d.reserved.bytes == truth.at("reserved_peak").to_number<std::uint64_t>());
            BOOST_TEST(d.allocated_at_start ==
                       truth.at("allocated_at_start").to_number<std::uint64_t>());
            for (const auto& [what, peak] :
                 {std::pair{"allocated", &d.allocated}, std::pair{"reserved", &d.reserved}}) {
                const json::value& event = truth.at(std::string(what) + "_event");
                BOOST_TEST(event.is_null() == !peak->event.has_value(), what);
                if (event.is_null() || !peak->event)
                    continue;
                BOOST_TEST(*peak->event == event.to_number<std::size_t>(), what);
                const json::value& time = truth.at(std::string(what) + "_time_us");
                BOOST_TEST(time.is_null() == !peak->time_us.has_value(), what);
                if (!time.is_null() && peak->time_us)
                    BOOST_TEST(*peak->time_us == time.to_number<std::int64_t>(), what);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(what_a_snapshot_holds) {
    const MemorySnapshot snapshot = parse_memory_snapshot(
        read_snapshot_bytes(dir + "special/expandable_0.pickle", "e"), "expandable_0.pickle");
    BOOST_TEST(snapshot.has_traces);
    BOOST_TEST_REQUIRE(snapshot.allocator_settings.has_value());
    BOOST_TEST(snapshot.allocator_settings->expandable_segments.value_or(false));
    BOOST_TEST(snapshot.allocator_settings->alloc_conf.value_or("") == "expandable_segments:True");
    BOOST_TEST_REQUIRE(!snapshot.segments.empty());
    BOOST_TEST(snapshot.segments.front().expandable);
    // Blocks tile their segment.
    for (const SnapshotSegment& s : snapshot.segments) {
        std::uint64_t at = s.address;
        for (const SnapshotBlock& b : s.blocks) {
            BOOST_TEST(b.address == at);
            at += b.size;
        }
        BOOST_TEST(at == s.address + s.total_size);
    }
    // The legacy file's blocks have no address: they lie one after the other.
    const MemorySnapshot legacy = parse_memory_snapshot(
        read_snapshot_bytes(dir + "special/legacy_0.pickle", "l"), "legacy_0.pickle");
    BOOST_TEST(!legacy.allocator_settings.has_value());
    for (const SnapshotSegment& s : legacy.segments) {
        std::uint64_t at = s.address;
        for (const SnapshotBlock& b : s.blocks) {
            BOOST_TEST(b.address == at);
            at += b.size;
        }
    }
    const MemorySnapshot annotated = parse_memory_snapshot(
        read_snapshot_bytes(dir + "special/annotated_0.pickle", "a"), "annotated_0.pickle");
    BOOST_TEST(annotated.other_actions.at("user_defined") == 1u);
}

BOOST_AUTO_TEST_CASE(an_out_of_memory_event_is_found_with_the_memory_at_it) {
    const auto devices = peaks_of("oom/snapshot_oom_rank_3.pickle");
    BOOST_TEST_REQUIRE(devices.front().oom.has_value());
    const OutOfMemory& oom = *devices.front().oom;
    BOOST_TEST(oom.requested == 80ull * 1024 * 1024 * 1024);
    BOOST_TEST(oom.device_free == 512ull * 1024 * 1024);
    // make_snapshots.py allocates 64 MiB just before the failed request: the peak is there.
    BOOST_TEST(oom.allocated == devices.front().allocated.bytes);
}

BOOST_AUTO_TEST_CASE(damaged_and_foreign_files_are_refused_naming_the_place) {
    BOOST_TEST(refusal("bad/contradiction_0.pickle") ==
               "bad/contradiction_0.pickle: device_traces[0][5]: 'alloc' of 4096 bytes at 0x1000: "
               "its block is neither freed by a later event nor allocated in the snapshot's "
               "segments: the trace and the segments disagree (the file is damaged, or not one "
               "snapshot)");
    BOOST_TEST(refusal("bad/not-a-snapshot_0.pickle") ==
               "bad/not-a-snapshot_0.pickle: expected the dict torch.cuda.memory._snapshot() "
               "returns, with 'segments' and 'device_traces', got a list of 3 items");
    BOOST_TEST(refusal("bad/evil-frame_0.pickle") ==
               "bad/evil-frame_0.pickle: offset 1528: pickle opcode STACK_GLOBAL would import "
               "'posix.system': refused (a memory snapshot is plain data (dicts, lists, tuples, "
               "strings, numbers, booleans, None), and ppb reads nothing else from a pickle: it "
               "never imports, calls or builds what one names)");
    const std::string cut = refusal("bad/truncated_3.pickle");
    BOOST_TEST(cut.starts_with("bad/truncated_3.pickle: offset 2: opcode FRAME announces a frame "
                               "of "),
               cut);
    BOOST_TEST(cut.find("is it cut short") != std::string::npos);
    BOOST_TEST(peaks_of("bad/two-devices_0.pickle").size() == 2u);
}

BOOST_AUTO_TEST_CASE(fields_of_the_wrong_type_are_named_by_their_place) {
    // {"segments": [{"device": 0, "address": 0, "total_size": "big", "blocks": []}]}
    const std::string bytes = ppb_test::from_hex(
        "80 02 7d 58 08 00 00 00 73 65 67 6d 65 6e 74 73 5d 7d 28 58 06 00 00 00 64 65 76 69 63 "
        "65 4b 00 58 07 00 00 00 61 64 64 72 65 73 73 4b 00 58 0a 00 00 00 74 6f 74 61 6c 5f 73 "
        "69 7a 65 58 03 00 00 00 62 69 67 58 06 00 00 00 62 6c 6f 63 6b 73 5d 75 61 73 2e");
    BOOST_TEST(ppb_test::error_message<ppb::InputError>(
                   [&] { (void)parse_memory_snapshot(bytes, "s.pickle"); }) ==
               "s.pickle: segments[0].total_size: expected an int of bytes, got 'big' (a str)");
}

BOOST_AUTO_TEST_CASE(file_names_give_rank_step_and_out_of_memory) {
    const auto name = [](const char* path) { return snapshot_name(path); };
    BOOST_TEST(name("out/snapshot_3.pickle").rank.value_or(999) == 3u);
    BOOST_TEST(!name("out/snapshot_3.pickle").out_of_memory);
    BOOST_TEST(name("out/mem_oom_rank_5.pickle").rank.value_or(999) == 5u);
    BOOST_TEST(name("out/mem_oom_rank_5.pickle").out_of_memory);
    BOOST_TEST(name("out/mem_oom_rank-6.pickle").rank.value_or(999) == 6u);
    BOOST_TEST(name("out/mem_oom_rank-6.pickle").out_of_memory);
    const SnapshotName titan =
        name("outputs/profiling/memory_snapshot/step_000000000020/000012_step_20.pickle");
    BOOST_TEST(titan.rank.value_or(999) == 12u);
    BOOST_TEST(titan.step.value_or(0) == 20u);
    BOOST_TEST(!titan.out_of_memory);
    const SnapshotName exit = name("memory_snapshot/step_000000000007_exit/000002_step_7.pickle");
    BOOST_TEST(exit.rank.value_or(999) == 2u);
    BOOST_TEST(exit.out_of_memory);
    const SnapshotName old = name("memory_snapshot/iteration_10/rank3_memory_snapshot.pickle");
    BOOST_TEST(old.rank.value_or(999) == 3u);
    BOOST_TEST(old.step.value_or(0) == 10u);
    BOOST_TEST(name("memory_snapshot/iteration_9_exit/rank0_memory_snapshot.pickle").out_of_memory);
    BOOST_TEST(name("run/rank_4/snapshot.pickle").rank.value_or(999) == 4u);
    BOOST_TEST(name("rank_7.pickle").rank.value_or(999) == 7u);
    BOOST_TEST(!name("snapshot.pickle").rank.has_value());
    PPB_CHECK_THROWS(ppb::InputError, name("rank_3/snapshot_5.pickle"), "two ranks, 3", "5",
                     "--rank");
    BOOST_TEST(looks_like_snapshot("a/snapshot_0.pickle"));
    BOOST_TEST(looks_like_snapshot("a/s.pkl"));
    BOOST_TEST(!looks_like_snapshot("a/train.log"));
    BOOST_TEST(!looks_like_snapshot("a/.pickle"));
}

BOOST_AUTO_TEST_CASE(a_scan_makes_one_reading_per_rank_in_mib) {
    const json::object expected =
        json::parse(ppb_test::read_file(dir + "expected.json")).as_object();
    std::vector<LogFile> files;
    for (int rank = 0; rank < 4; ++rank)
        files.push_back(file_of(fmt::format("megatron/snapshot_{}.pickle", rank), rank));
    Messages messages;
    const auto readings = scan_snapshots(files, messages);
    BOOST_TEST_REQUIRE(readings.size() == 4u);
    for (const MemoryReading& r : readings) {
        const json::object& truth =
            expected.at(fmt::format("megatron/snapshot_{}.pickle", r.rank)).as_object();
        BOOST_TEST(r.mb == truth.at("allocated_peak").to_number<double>() / (1024.0 * 1024.0));
        BOOST_TEST(r.reserved_mb.value_or(0) ==
                   truth.at("reserved_peak").to_number<double>() / (1024.0 * 1024.0));
        BOOST_TEST(r.line == 0u);
        BOOST_TEST(r.where() == fmt::format("megatron/snapshot_{}.pickle", r.rank));
    }
    BOOST_TEST(any_message(messages, Message::Level::note,
                           "rank 0: megatron/snapshot_0.pickle (device 0, 201 trace events): peak "
                           "allocated 440.0 MB at event 149 of 201 (2026-01-01 00:00:00.176 UTC, "
                           "0.2 s into the trace), peak reserved 474.0 MB at event 147 of 201"));
}

BOOST_AUTO_TEST_CASE(several_snapshots_of_a_rank_give_its_largest_peaks) {
    const json::object expected =
        json::parse(ppb_test::read_file(dir + "expected.json")).as_object();
    const std::vector<std::string> names = {"torchtitan/step_000000000010/000001_step_10.pickle",
                                            "torchtitan/step_000000000020/000001_step_20.pickle"};
    std::vector<LogFile> files;
    double allocated = 0;
    double reserved = 0;
    for (const std::string& n : names) {
        files.push_back(file_of(n, snapshot_name(n).rank));
        const json::object& truth = expected.at(n).as_object();
        allocated = std::max(allocated, truth.at("allocated_peak").to_number<double>());
        reserved = std::max(reserved, truth.at("reserved_peak").to_number<double>());
    }
    Messages messages;
    const auto readings = scan_snapshots(files, messages);
    BOOST_TEST_REQUIRE(readings.size() == 1u);
    BOOST_TEST(readings.front().rank == 1u);
    BOOST_TEST(readings.front().mb == allocated / (1024.0 * 1024.0));
    BOOST_TEST(readings.front().reserved_mb.value_or(0) == reserved / (1024.0 * 1024.0));
    BOOST_TEST(any_message(messages, Message::Level::note, "rank 1: 2 snapshots"));
    BOOST_TEST(any_message(messages, Message::Level::note, "(step 20, device 0"));
    // The step-20 snapshot kept its last 120 events: the trace begins with memory allocated.
    BOOST_TEST(any_message(messages, Message::Level::warning,
                           "000001_step_20.pickle: the trace begins with"));
}

BOOST_AUTO_TEST_CASE(warnings_and_refusals_of_a_scan) {
    Messages messages;
    const std::vector<LogFile> ring = {file_of("special/ring-buffer_2.pickle", 2)};
    (void)scan_snapshots(ring, messages);
    BOOST_TEST(any_message(messages, Message::Level::warning,
                           "of them freed in the trace with no allocation of theirs in it"));
    BOOST_TEST(any_message(messages, Message::Level::warning, "ring buffer (90 events kept)"));

    messages.clear();
    const std::vector<LogFile> none = {file_of("special/no-trace_1.pickle", 1)};
    (void)scan_snapshots(none, messages);
    BOOST_TEST(any_message(messages, Message::Level::warning,
                           "has no trace of allocator events (was memory history recorded?)"));

    messages.clear();
    const std::vector<LogFile> oom = {file_of("oom/snapshot_oom_rank_3.pickle", 3)};
    BOOST_TEST(
        ppb_test::error_message<ppb::InputError>([&] { (void)scan_snapshots(oom, messages); }) ==
        "no snapshot to import: every one read is the dump of an out-of-memory error, whose "
        "peak is not what the run needed: oom/snapshot_oom_rank_3.pickle");
    BOOST_TEST(any_message(messages, Message::Level::warning,
                           "is the dump of an out-of-memory error: an allocation of 81920.0 MB "
                           "failed at event 161 of 162"));

    const std::vector<LogFile> two = {file_of("bad/two-devices_0.pickle", 0)};
    PPB_CHECK_THROWS(ppb::InputError, scan_snapshots(two, messages),
                     "bad/two-devices_0.pickle: the snapshot holds the memory of devices 0, 1");
    const std::vector<LogFile> unnamed = {file_of("special/legacy_0.pickle", std::nullopt)};
    PPB_CHECK_THROWS(ppb::InputError, scan_snapshots(unnamed, messages),
                     "special/legacy_0.pickle: cannot tell which rank wrote this snapshot",
                     "--rank special/legacy_0.pickle=ID");
}

BOOST_AUTO_TEST_CASE(times_read_as_utc) {
    BOOST_TEST(utc_time_text(0) == "1970-01-01 00:00:00.000 UTC");
    BOOST_TEST(utc_time_text(1767225600123456) == "2026-01-01 00:00:00.123 UTC");
    BOOST_TEST(utc_time_text(951782400000000 - 1) == "2000-02-28 23:59:59.999 UTC");
    BOOST_TEST(utc_time_text(-5) == "-5 us since the Unix epoch");
    BOOST_TEST(utc_time_text(253402300800000000) == "253402300800000000 us since the Unix epoch");
    BOOST_TEST(utc_time_text(253402300799999999) == "9999-12-31 23:59:59.999 UTC");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace snapshot_tests
