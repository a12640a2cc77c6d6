// torchtitan's step lines: the peak reserved memory of each rank that logs, with and without
// colour codes and torchrun's rank prefix.
#include "scratch.hpp"

#include <ppb/importers/torchtitan.hpp>

#include <fmt/format.h>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace ppb::importers;
using ppb_test::Scratch;

namespace torchtitan_tests {
namespace {

// A training step's line as torchtitan's MetricsProcessor.log prints it
// (pytorch/torchtitan, torchtitan/components/metrics.py at commit
// b5bcd76c66d0acb1a08b176d9639425bc55e0b2a, with torchtitan/tools/utils.py's Color), after the
// logger's "[titan] <time> - root - INFO - " and, with `rank`, torchrun's "[rank<r>]:".
std::string step_line(int step, double gib, bool colour, std::optional<int> rank = std::nullopt) {
    const auto c = [&](const char* code) { return colour ? std::string(code) : std::string(); };
    return fmt::format(
        "{}[titan] 2026-08-21 21:30:21,123 - root - INFO - {}step: {:2}  {}loss: {:8.5f}  "
        "{}grad_norm: {:7.4f}  {}memory: {:5.2f}GiB({:.2f}%)  {}tps: {}  {}tflops: {:.2f}  "
        "{}mfu: {:.2f}%{}\n",
        rank ? fmt::format("[rank{}]:", *rank) : std::string(), c("\033[31m"), step, c("\033[32m"),
        10.5, c("\033[38;2;180;60;0m"), 1.25, c("\033[38;2;54;234;195m"), gib, 100.0 * gib / 79.19,
        c("\033[34m"), "1,234", c("\033[36m"), 61.7, c("\033[35m"), 19.76, c("\033[39m"));
}

struct Fixture {
    Scratch dir;
    Messages messages;
    LogFile log(const std::string& name, const std::string& text,
                std::optional<std::uint32_t> rank = std::nullopt, bool named = true) {
        const auto path = dir.write(name, text);
        return LogFile{path, name, rank, named};
    }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(torchtitan_logs, Fixture)

BOOST_AUTO_TEST_CASE(colour_codes_are_not_text) {
    BOOST_TEST(without_ansi_codes("\033[31mstep: 1\033[39m \033[38;2;54;234;195mmemory:") ==
               "step: 1 memory:");
    BOOST_TEST(without_ansi_codes("plain") == "plain");
    BOOST_TEST(without_ansi_codes("cut \033[3") == "cut ");
}

BOOST_AUTO_TEST_CASE(each_logging_rank_gives_its_largest_step) {
    // torchrun --tee 3 --local-ranks-filter 0,1: two ranks in one log, coloured; the
    // per-model line and the validation step are read as torchtitan prints them.
    std::string text =
        "[rank0]:[titan] 2026-08-21 21:30:20,000 - root - INFO - CUDA memory usage "
        "for model: 30.00GiB(37.88%)\n";
    text += step_line(1, 19.05, true, 0) + step_line(1, 21.5, true, 1);
    text += step_line(2, 20.10, true, 0) + step_line(2, 21.25, true, 1);
    text +=
        "[rank0]:[titan] 2026-08-21 21:30:30,000 - root - INFO - \033[33mvalidate step:  3  "
        "\033[32mloss:  9.1234  \033[38;2;54;234;195mmemory: 19.90GiB(25.13%)  \033[34mtps: "
        "999\033[39m\n";
    const std::vector<LogFile> logs = {log("train.log", text)};
    const auto readings = scan_torchtitan_logs(logs, messages);
    BOOST_TEST_REQUIRE(readings.size() == 2u);
    BOOST_TEST(readings[0].rank == 0u);
    BOOST_TEST(readings[0].mb == 20.10 * 1024);
    BOOST_TEST(readings[0].reserved_mb.value_or(0) == 20.10 * 1024);
    BOOST_TEST(readings[0].line == 4u);
    BOOST_TEST(readings[1].rank == 1u);
    BOOST_TEST(readings[1].mb == 21.5 * 1024);
    BOOST_TEST(readings[1].line == 3u);
    BOOST_TEST_REQUIRE(messages.size() == 3u);
    BOOST_TEST(messages[0].text ==
               "rank 0: 3 step lines: took the largest, 20582.4 MB at step 2 "
               "(train.log:4)");
    BOOST_TEST(messages[2].text ==
               "torchtitan logs the peak reserved memory only (torch.cuda's "
               "reserved_bytes.all.peak, in GiB to 2 decimals, about 5 MB): each observation's "
               "peak_memory_mb and reserved_mb are that figure, for ranks 0, 1");
}

BOOST_AUTO_TEST_CASE(public_logs_are_read_as_their_runs_printed_them) {
    // The figures of step lines published with torchtitan pull requests, in the shapes those
    // runs printed: pytorch/torchtitan#3393 (torchrun's prefix, steps 14 to 21 at 9.46 GiB,
    // 64.99 %); pytorch/torchtitan#1287 (an older MetricsProcessor without grad_norm, the GC and
    // profiler lines between the steps, 49.66 GiB, 52.28 %).
    const auto line = [](int step, double loss, std::optional<double> grad_norm, double gib,
                         double percent, const char* tps, double tflops, double mfu) {
        return fmt::format(
            "[rank0]:[titan] 2026-05-18 16:04:{:02},338 - root - INFO - step: {:2}  loss: {:8.5f}  "
            "{}memory: {:5.2f}GiB({:.2f}%)  tps: {}  tflops: {:.2f}  mfu: {:.2f}%\n",
            step, step, loss,
            grad_norm ? fmt::format("grad_norm: {:7.4f}  ", *grad_norm) : std::string(), gib,
            percent, tps, tflops, mfu);
    };
    std::string pr3393;
    const double losses[] = {3.24405, 3.10680, 3.05047, 3.14459,
                             3.54399, 3.01032, 2.89959, 3.00867};
    for (int step = 14; step <= 21; ++step)
        pr3393 += line(step, losses[step - 14], 0.8, 9.46, 64.99, "7,282", 0.52, 0.17);
    std::string pr1287 =
        "[rank0]:[titan] 2025-06-16 22:30:48,735 - root - INFO - [GC] Peforming periodical GC "
        "collection. 0.06 seconds.\n";
    pr1287 += line(200, 6.1384, std::nullopt, 49.66, 52.28, "5,856", 339.16, 34.29);
    pr1287 +=
        "[rank0]:[titan] 2025-06-16 22:30:50,758 - root - INFO - Dumping profiler traces at step "
        "200\n";
    for (int step = 210; step <= 250; step += 10)
        pr1287 += line(step, 6.0, std::nullopt, 49.66, 52.28, "5,862", 339.48, 34.33);
    const std::vector<LogFile> first = {log("pr3393.log", pr3393)};
    const auto a = scan_torchtitan_logs(first, messages);
    BOOST_TEST_REQUIRE(a.size() == 1u);
    BOOST_TEST(a[0].rank == 0u);
    BOOST_TEST(a[0].mb == 9.46 * 1024);
    BOOST_TEST(a[0].reserved_mb.value_or(0) == 9.46 * 1024);
    BOOST_TEST(a[0].line == 1u);  // the first of equal peaks
    const std::vector<LogFile> second = {log("pr1287.log", pr1287)};
    const auto b = scan_torchtitan_logs(second, messages);
    BOOST_TEST_REQUIRE(b.size() == 1u);
    BOOST_TEST(b[0].mb == 49.66 * 1024);
    BOOST_TEST(b[0].line == 2u);
}

BOOST_AUTO_TEST_CASE(a_line_without_the_prefix_is_its_logs_rank) {
    // COMM_MODE=fake_backend: one process, no torchrun, no colours.
    const std::vector<LogFile> logs = {
        log("rank3.log", step_line(1, 40.0, false) + step_line(2, 41.0, false), 3)};
    const auto readings = scan_torchtitan_logs(logs, messages);
    BOOST_TEST_REQUIRE(readings.size() == 1u);
    BOOST_TEST(readings[0].rank == 3u);
    BOOST_TEST(readings[0].mb == 41.0 * 1024);
    // A file given one rank whose lines say another: refused, naming both.
    const std::vector<LogFile> contradicting = {log("rank_1.log", step_line(1, 40.0, false, 0), 1)};
    BOOST_TEST(ppb_test::error_message<ppb::InputError>(
                   [&] { (void)scan_torchtitan_logs(contradicting, messages); }) ==
               "rank_1.log:1: the step line is rank 0's (torchrun's '[rank0]:' prefix), but the "
               "file's rank is 1 (from --rank or its name): leave out --rank for a log of "
               "prefixed lines, or give the file its own rank's log");
    const std::vector<LogFile> agreeing = {log("rank_0.log", step_line(1, 40.0, false, 0), 0)};
    BOOST_TEST(scan_torchtitan_logs(agreeing, messages).size() == 1u);
    const std::vector<LogFile> unknown = {log("train.log", step_line(1, 40.0, false))};
    BOOST_TEST(ppb_test::error_message<ppb::InputError>(
                   [&] { (void)scan_torchtitan_logs(unknown, messages); }) ==
               "train.log:1: a step line without torchrun's '[rankN]:' prefix, and the log's "
               "rank is not known: give --rank train.log=ID");
}

BOOST_AUTO_TEST_CASE(bad_lines_and_logs_without_steps) {
    const std::vector<LogFile> malformed = {log(
        "a.log", "[rank0]:[titan] x - root - INFO - step:  1  loss: 1.0  memory: lotsGiB(1%)\n")};
    BOOST_TEST(ppb_test::error_message<ppb::InputError>(
                   [&] { (void)scan_torchtitan_logs(malformed, messages); }) ==
               "a.log:1: malformed step line: expected a number of GiB such as '19.05GiB' after "
               "'memory:', got 'lotsGiB(1%)'");
    const std::vector<LogFile> zero = {log("b.log", step_line(1, 0.0, true, 0))};
    BOOST_TEST(ppb_test::error_message<ppb::InputError>(
                   [&] { (void)scan_torchtitan_logs(zero, messages); }) ==
               "b.log:1: the step line says memory: 0.00GiB, which is not a measured peak "
               "(expected a positive number)");
    const std::vector<LogFile> empty = {log("c.log", "[titan] starting\n")};
    PPB_CHECK_THROWS(ppb::InputError, scan_torchtitan_logs(empty, messages),
                     "c.log: no torchtitan step line with a memory figure");
    // Found in a directory, a log without step lines is skipped.
    const std::vector<LogFile> found = {
        log("d.log", "nothing\n", 0, false),
        log("e.log", step_line(5, 1.5, false, 2), std::nullopt, false)};
    messages.clear();
    const auto readings = scan_torchtitan_logs(found, messages);
    BOOST_TEST_REQUIRE(readings.size() == 1u);
    BOOST_TEST(readings[0].rank == 2u);
    BOOST_TEST(messages.front().text == "skipped 1 log without torchtitan step lines: d.log");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace torchtitan_tests
