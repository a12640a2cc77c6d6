// Finding logs, ranks from paths and --rank, reading lines, UTF-8, one reading per rank.
#include "scratch.hpp"

#include <ppb/importers/logs.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace ppb::importers;
using ppb_test::Scratch;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_SUITE(logs)

BOOST_AUTO_TEST_CASE(rank_from_the_path) {
    BOOST_TEST(rank_from_path("out/rank_3/info.log").value_or(999) == 3u);
    BOOST_TEST(rank_from_path("out/rank_12/sub/dryrun.log").value_or(999) == 12u);
    BOOST_TEST(rank_from_path("output_dryrun/rank_7.log").value_or(999) == 7u);
    BOOST_TEST(rank_from_path("msrun_log/worker_15.log").value_or(999) == 15u);
    BOOST_TEST(rank_from_path("rank_4/rank_4.log").value_or(999) == 4u);
    BOOST_TEST(!rank_from_path("logs/train.log"));
    BOOST_TEST(!rank_from_path("rank_x/train.log"));
    BOOST_TEST(!rank_from_path("rank_3.txt"));
    BOOST_TEST(!rank_from_path("myrank_3/train.log"));
    BOOST_TEST(!rank_from_path("rank_99999999999/train.log"));  // not a 32-bit rank
    PPB_CHECK_THROWS(ppb::InputError, rank_from_path("rank_3/worker_5.log"), "rank_3/worker_5.log",
                     "two ranks, 3", "5", "--rank");
}

BOOST_AUTO_TEST_CASE(rank_assignments) {
    const RankAssignment a = parse_rank_assignment("logs/a.log=3");
    BOOST_TEST(a.file.string() == "logs/a.log");
    BOOST_TEST(a.rank == 3u);
    BOOST_TEST(parse_rank_assignment("odd=name.log=4").file.string() == "odd=name.log");
    PPB_CHECK_THROWS(FlagError, parse_rank_assignment("a.log"), "--rank", "FILE=ID");
    PPB_CHECK_THROWS(FlagError, parse_rank_assignment("a.log="), "FILE=ID");
    PPB_CHECK_THROWS(FlagError, parse_rank_assignment("a.log=x"), "whole number", "'x'");
    PPB_CHECK_THROWS(FlagError, parse_rank_assignment("a.log=-1"), "whole number");
}

BOOST_AUTO_TEST_CASE(which_files_are_logs) {
    for (const char* name : {"a.log", "worker_0.log", "out.txt", "job.out", "info.log.1"})
        BOOST_TEST(looks_like_log(name), name);
    for (const char* name : {"model.ckpt", "graph.ir", ".log", "info.log.", "info.log.x", "log"})
        BOOST_TEST(!looks_like_log(name), name);
}

BOOST_AUTO_TEST_CASE(directories_are_walked_for_logs_in_path_order) {
    Scratch dir;
    dir.write("run/rank_8/dryrun.log", "x\n");
    dir.write("run/rank_0/dryrun.log", "x\n");
    dir.write("run/rank_0/info.log.1", "x\n");
    dir.write("run/rank_0/strategy.ckpt", "binary");
    dir.write("run/notes.txt", "x\n");
    const std::vector<std::string> arguments = {(dir / "run").string()};
    const auto logs = collect_logs(arguments, {});
    BOOST_TEST_REQUIRE(logs.size() == 4u);
    BOOST_TEST(logs[0].path.filename().string() == "notes.txt");
    BOOST_TEST(!logs[0].rank);
    BOOST_TEST(logs[1].path.filename().string() == "dryrun.log");
    BOOST_TEST(logs[1].rank.value_or(999) == 0u);
    BOOST_TEST(logs[2].path.filename().string() == "info.log.1");
    BOOST_TEST(logs[3].rank.value_or(999) == 8u);
    for (const auto& log : logs)
        BOOST_TEST(!log.named);
}

BOOST_AUTO_TEST_CASE(a_file_reached_twice_is_read_once_and_counts_as_named) {
    Scratch dir;
    const fs::path file = dir.write("run/rank_2.log", "x\n");
    const std::vector<std::string> arguments = {(dir / "run").string(), file.string(),
                                                (dir / "run/../run/rank_2.log").string()};
    const auto logs = collect_logs(arguments, {});
    BOOST_TEST_REQUIRE(logs.size() == 1u);
    BOOST_TEST(logs[0].named);
    BOOST_TEST(logs[0].rank.value_or(999) == 2u);
}

BOOST_AUTO_TEST_CASE(rank_assignments_win_over_the_path) {
    Scratch dir;
    const fs::path a = dir.write("rank_2.log", "x\n");
    const fs::path b = dir.write("plain.log", "x\n");
    const std::vector<std::string> arguments = {a.string(), b.string()};
    const std::vector<RankAssignment> ranks = {{b, 5}, {a, 7}};
    const auto logs = collect_logs(arguments, ranks);
    BOOST_TEST(logs[0].rank.value_or(999) == 7u);
    BOOST_TEST(logs[1].rank.value_or(999) == 5u);
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_named) {
    Scratch dir;
    dir.write("empty/model.ckpt", "x");
    const fs::path log = dir.write("a.log", "x\n");
    const std::vector<std::string> missing = {(dir / "nothere.log").string()};
    PPB_CHECK_THROWS(ppb::InputError, collect_logs(missing, {}), "nothere.log", "cannot read");
    const std::vector<std::string> empty = {(dir / "empty").string()};
    PPB_CHECK_THROWS(ppb::InputError, collect_logs(empty, {}), "empty", "no log files");
    const std::vector<std::string> one = {log.string()};
    const std::vector<RankAssignment> elsewhere = {{dir / "other.log", 1}};
    PPB_CHECK_THROWS(FlagError, collect_logs(one, elsewhere), "other.log",
                     "not one of the log files");
    const std::vector<RankAssignment> twice = {{log, 1}, {log, 2}};
    PPB_CHECK_THROWS(FlagError, collect_logs(one, twice), "two ranks, 1 and 2");
}

BOOST_AUTO_TEST_CASE(lines_without_line_breaks_and_carriage_returns) {
    Scratch dir;
    const fs::path file = dir.write("a.log", "one\r\ntwo\n\nlast without newline");
    std::vector<std::pair<std::size_t, std::string>> lines;
    for_each_line(LogFile{file, "a.log", std::nullopt, true},
                  [&](std::size_t n, std::string_view text) { lines.emplace_back(n, text); });
    BOOST_TEST_REQUIRE(lines.size() == 4u);
    BOOST_TEST(lines[0].second == "one");
    BOOST_TEST(lines[1].second == "two");
    BOOST_TEST(lines[2].second == "");
    BOOST_TEST(lines[3].first == 4u);
    BOOST_TEST(lines[3].second == "last without newline");
    PPB_CHECK_THROWS(ppb::InputError,
                     for_each_line(LogFile{dir / "gone.log", "gone.log", std::nullopt, true},
                                   [](std::size_t, std::string_view) {}),
                     "gone.log: cannot read");
}

BOOST_AUTO_TEST_CASE(utf8_validation) {
    BOOST_TEST(invalid_utf8_at("plain ASCII") == std::string_view::npos);
    BOOST_TEST(invalid_utf8_at("caf\xC3\xA9 \xE5\x86\x85\xE5\xAD\x98 \xF0\x9F\x98\x80") ==
               std::string_view::npos);
    BOOST_TEST(invalid_utf8_at("ab\xFF") == 2u);
    BOOST_TEST(invalid_utf8_at("\xC0\xAF") == 0u);          // overlong '/'
    BOOST_TEST(invalid_utf8_at("x\xED\xA0\x80") == 1u);     // a UTF-16 surrogate
    BOOST_TEST(invalid_utf8_at("\xF4\x90\x80\x80") == 0u);  // beyond U+10FFFF
    BOOST_TEST(invalid_utf8_at("ok\xE5\x86") == 2u);        // cut short
    BOOST_TEST(invalid_utf8_at("\xC4\xE3\xBA\xC3") == 0u);  // GBK
}

BOOST_AUTO_TEST_CASE(excerpts_are_safe_to_print) {
    BOOST_TEST(ppb::importers::quote_excerpt("abc") == "'abc'");
    BOOST_TEST(ppb::importers::quote_excerpt("a\xFF\tb") == "'a\\xFF\\x09b'");
    BOOST_TEST(ppb::importers::quote_excerpt("\xE5\x86\x85 ok", 2) == "'\xE5\x86\x85 ...'");
    PPB_CHECK_THROWS(ppb::InputError, require_utf8("Used 5M \xFE", "a.log", 7, "the memory line"),
                     "a.log:7: the memory line", "not UTF-8", "0xFE", "byte 9");
    require_utf8("fine", "a.log", 1, "x");
}

BOOST_AUTO_TEST_CASE(the_last_reading_of_a_rank_in_a_log) {
    Messages messages;
    const std::vector<MemoryReading> readings = {
        {0, 100.0, "a.log", 3}, {1, 110.0, "a.log", 4}, {0, 120.0, "a.log", 9}};
    const auto out = last_reading_per_rank(readings, "memory lines", messages);
    BOOST_TEST_REQUIRE(out.size() == 2u);
    BOOST_TEST(out[0].rank == 0u);
    BOOST_TEST(out[0].mb == 120.0);
    BOOST_TEST(out[0].line == 9u);
    BOOST_TEST(out[1].mb == 110.0);
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text,
                             {"a.log", "2 memory lines for rank 0", "lines 3, 9", "took the last"});
}

BOOST_AUTO_TEST_CASE(several_ranks_with_several_readings_are_summed_up_in_one_note) {
    Messages messages;
    std::vector<MemoryReading> readings;
    for (std::uint32_t rank = 0; rank < 4; ++rank) {
        readings.push_back({rank, 1.0, "all.log", rank + 1});
        readings.push_back({rank, 2.0, "all.log", rank + 10});
    }
    const auto out = last_reading_per_rank(readings, "memory lines", messages);
    BOOST_TEST(out.size() == 4u);
    BOOST_TEST(std::all_of(out.begin(), out.end(), [](const auto& r) { return r.mb == 2.0; }));
    BOOST_TEST_REQUIRE(messages.size() == 1u);
    ppb_test::check_contains(messages[0].text, {"all.log", "ranks 0-3", "2 each", "the last"});
}

BOOST_AUTO_TEST_CASE(readings_of_one_rank_in_two_logs_must_agree) {
    Messages messages;
    const std::vector<MemoryReading> same = {{3, 5.0, "a.log", 1}, {3, 5.0, "b.log", 2}};
    BOOST_TEST(last_reading_per_rank(same, "lines", messages).size() == 1u);
    const std::vector<MemoryReading> different = {{3, 5.0, "a.log", 1}, {3, 6.0, "b.log", 2}};
    PPB_CHECK_THROWS(ppb::InputError, last_reading_per_rank(different, "lines", messages), "rank 3",
                     "a.log:1", "b.log:2", "5.0 MB", "6.0 MB");
    // Rounded as ppb shows memory: readings that round alike say how far apart they are.
    const std::vector<MemoryReading> close = {{3, 22058.603515625, "a.log", 1},
                                              {3, 22058.6, "b.log", 2}};
    BOOST_TEST(ppb_test::error_message<ppb::InputError>(
                   [&] { (void)last_reading_per_rank(close, "lines", messages); }) ==
               "rank 3 has different readings in two logs: a.log:1 says 22058.6 MB, b.log:2 says "
               "22058.6 MB (0.0035 MB apart); read only one of them (or tell which rank each log "
               "is with --rank FILE=ID)");
}

BOOST_AUTO_TEST_SUITE_END()
