// 'ppb import snapshot' and 'ppb import torchtitan' end to end: the dry-run file's allocated and
// reserved peaks against the ground truth of tests/data/snapshots/expected.json, the placements
// (Megatron's flags, a ppb plan), and the refusals with their exact messages and exit statuses.
#include "../common/run_process.hpp"
#include "scratch.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

using ppb_test::ProcessResult;
using ppb_test::Scratch;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace import_snapshot_cli_tests {
namespace {

const std::string snapshots = PPB_SNAPSHOTS_DIR;
const std::vector<std::string> megatron_pp4 = {"--pipeline-model-parallel-size",
                                               "4",
                                               "--num-layers",
                                               "8",
                                               "--world-size",
                                               "4",
                                               "--num-microbatches",
                                               "8"};

ProcessResult ppb(std::vector<std::string> args) {
    return ppb_test::run_process(PPB_EXE, args,
                                 {{"PPB_PLUGIN_PATH", ""}, {"PPB_DEBUG_PLUGINS", ""}});
}

std::vector<std::string> join(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

json::object truth_of(const std::string& relative) {
    static const json::object expected =
        json::parse(ppb_test::read_file(snapshots + "/expected.json")).as_object();
    return expected.at(relative).as_object();
}

double mib(const json::value& bytes) {
    return bytes.to_number<double>() / (1024.0 * 1024.0);
}

// A number of the document equals `expected` to the last bits Boost.JSON's parser may round
// differently (ppb writes the shortest text that reads back to its double).
bool same_number(const json::value& written, double expected) {
    const double x = written.to_number<double>();
    return std::abs(x - expected) <= 1e-12 * std::abs(expected);
}

// The non-zero layer counts per kind of a "layers" object.
std::map<std::string, std::int64_t> kinds_of(const json::value& layers) {
    std::map<std::string, std::int64_t> out;
    for (const auto& [kind, n] : layers.as_object()) {
        if (n.to_number<std::int64_t>() != 0)
            out[std::string(kind)] = n.to_number<std::int64_t>();
    }
    return out;
}

// Exit status 2, nothing on stdout, stderr exactly `message` (its last line may be followed by a
// usage hint).
void expect_refusal(const ProcessResult& r, const std::string& message) {
    BOOST_TEST(r.exit_code == 2, "exit status " << r.exit_code << ", stderr: " << r.err);
    BOOST_TEST(r.out.empty(), "stdout must be empty on failure, got: " << r.out);
    BOOST_TEST(r.err.starts_with(message), "stderr: " << r.err << "\nexpected: " << message);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(import_snapshot_cli)

BOOST_AUTO_TEST_CASE(one_observation_per_stage_with_both_peaks) {
    const ProcessResult r =
        ppb(join({"import", "snapshot", snapshots + "/megatron"}, megatron_pp4));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = json::parse(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/1");
    const json::array& observations = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(observations.size() == 4u);
    for (int s = 0; s < 4; ++s) {
        const json::object& o = observations[s].as_object();
        const json::object truth = truth_of(fmt::format("megatron/snapshot_{}.pickle", s));
        BOOST_TEST(o.at("stage").to_number<int>() == s);
        BOOST_TEST(o.at("layers").at("none").to_number<int>() == 2);
        BOOST_TEST(same_number(o.at("peak_memory_mb"), mib(truth.at("allocated_peak"))));
        BOOST_TEST(same_number(o.at("reserved_mb"), mib(truth.at("reserved_peak"))));
    }
    BOOST_TEST(r.err.find("ppb: imported 4 observations (config 'A', stages 0-3 of 4) from 4 "
                          "snapshots to stdout\n") != std::string::npos,
               r.err);
    // What ppb imports, ppb reads: a fit takes the file.
    Scratch dir;
    const std::string file = dir.write("run.json", r.out).string();
    const ProcessResult fit = ppb({"fit", file, "--json"});
    BOOST_TEST(fit.exit_code == 0, fit.err);
}

BOOST_AUTO_TEST_CASE(several_ranks_per_stage_and_snapshots_per_rank) {
    // torchtitan's two ranks, two steps each, as stages 0 and 1 of a 2-stage job of 2 ranks.
    const ProcessResult r =
        ppb({"import", "snapshot", snapshots + "/torchtitan", "--pipeline-model-parallel-size", "2",
             "--num-layers", "4", "--world-size", "2"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = json::parse(r.out);
    const json::array& observations = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(observations.size() == 2u);
    for (int rank = 0; rank < 2; ++rank) {
        double allocated = 0;
        double reserved = 0;
        for (const int step : {10, 20}) {
            const json::object truth = truth_of(
                fmt::format("torchtitan/step_{:012}/{:06}_step_{}.pickle", step, rank, step));
            allocated = std::max(allocated, mib(truth.at("allocated_peak")));
            reserved = std::max(reserved, mib(truth.at("reserved_peak")));
        }
        BOOST_TEST(same_number(observations[rank].at("peak_memory_mb"), allocated));
        BOOST_TEST(same_number(observations[rank].at("reserved_mb"), reserved));
    }
    BOOST_TEST(r.err.find("ppb: warning: rank 0: " + snapshots +
                          "/torchtitan/step_000000000020/000000_step_20.pickle: the trace begins "
                          "with 11 blocks (165.0 MB) already allocated, 5 of them freed in the "
                          "trace with no allocation of theirs in it") != std::string::npos,
               r.err);
}

BOOST_AUTO_TEST_CASE(placed_by_the_plan_the_dry_run_ran) {
    Scratch dir;
    ProcessResult r =
        ppb({"partition", "--model-desc", PPB_IMPORT_SAMPLES_DIR "/../llama70b-layers.json",
             "--dryrun", PPB_IMPORT_SAMPLES_DIR "/../llama70b-pp8-dryrun.json", "--stages", "4",
             "--micro-batches", "8", "--memory-limit-mb", "60000", "--schedule", "interleaved",
             "--chunks", "2", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object plan = json::parse(r.out).as_object();
    const std::string plan_file = dir.write("plan.json", r.out).string();
    r = ppb(
        {"import", "snapshot", snapshots + "/megatron", "--plan", plan_file, "--world-size", "4"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = json::parse(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/2");
    BOOST_TEST(doc.at("schedule").as_string() == "interleaved");
    BOOST_TEST(doc.at("num_chunks").to_number<int>() == 2);
    BOOST_TEST(doc.at("micro_batches").to_number<int>() == 8);
    const json::array& observations = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(observations.size() == 4u);
    for (std::size_t s = 0; s < 4; ++s) {
        const json::array& planned = plan.at("stages").at(s).at("chunks").as_array();
        const json::array& imported = observations[s].at("chunks").as_array();
        BOOST_TEST_REQUIRE(imported.size() == planned.size());
        for (std::size_t c = 0; c < planned.size(); ++c)
            BOOST_TEST((kinds_of(imported[c].at("layers")) == kinds_of(planned[c].at("layers"))));
    }
    // The plan is the whole placement.
    expect_refusal(ppb({"import", "snapshot", snapshots + "/megatron", "--plan", plan_file,
                        "--num-layers", "8"}),
                   "ppb: error: --plan gives the whole placement: leave out Megatron's layout "
                   "flags and --num-microbatches (or leave out --plan)\nTry 'ppb import snapshot "
                   "--help'.\n");
    expect_refusal(ppb({"import", "snapshot", snapshots + "/megatron", "--plan", plan_file,
                        "--world-size", "6"}),
                   "ppb: error: --world-size 6 is not a multiple of the plan's 4 stages\n");
}

BOOST_AUTO_TEST_CASE(a_pickle_that_would_run_code_is_refused_and_nothing_runs) {
    Scratch dir;
    const std::string out = (dir / "out.json").string();
    for (const auto& [file, offset, op] :
         {std::tuple{"bad/global-os-system.pickle", 2, "GLOBAL"},
          std::tuple{"bad/stack-global-os-system.pickle", 28, "STACK_GLOBAL"},
          std::tuple{"bad/evil-frame_0.pickle", 1528, "STACK_GLOBAL"}}) {
        const std::string path = snapshots + "/" + file;
        expect_refusal(
            ppb(join({"import", "snapshot", path, "--rank", path + "=0", "-o", out}, megatron_pp4)),
            fmt::format("ppb: error: {}: offset {}: pickle opcode {} would import 'posix.system': "
                        "refused (a memory snapshot is plain data (dicts, lists, tuples, strings, "
                        "numbers, booleans, None), and ppb reads nothing else from a pickle: it "
                        "never imports, calls or builds what one names)\n",
                        path, offset, op));
        BOOST_TEST(!fs::exists(out));
    }
}

BOOST_AUTO_TEST_CASE(cut_damaged_and_foreign_files) {
    const std::string cut = snapshots + "/bad/truncated_3.pickle";
    expect_refusal(ppb(join({"import", "snapshot", cut}, megatron_pp4)),
                   "ppb: error: " + cut +
                       ": offset 2: opcode FRAME announces a frame of 8171 bytes, but the file "
                       "ends 4080 bytes later (it has 4091 bytes): is it cut short, a run killed "
                       "while writing it or a partial copy?\n");
    const std::string contradiction = snapshots + "/bad/contradiction_0.pickle";
    expect_refusal(ppb(join({"import", "snapshot", contradiction}, megatron_pp4)),
                   "ppb: error: " + contradiction +
                       ": device_traces[0][5]: 'alloc' of 4096 bytes at 0x1000: its block is "
                       "neither freed by a later event nor allocated in the snapshot's segments: "
                       "the trace and the segments disagree (the file is damaged, or not one "
                       "snapshot)\n");
    const std::string two = snapshots + "/bad/two-devices_0.pickle";
    expect_refusal(ppb(join({"import", "snapshot", two}, megatron_pp4)),
                   "ppb: error: " + two +
                       ": the snapshot holds the memory of devices 0, 1: ppb reads one device per "
                       "rank (the rank's own GPU), and cannot tell which is rank 0's\n");
    Scratch dir;
    const std::string log = dir.write("snapshot_0.pickle", "[Rank 0] not a pickle\n").string();
    expect_refusal(ppb(join({"import", "snapshot", log}, megatron_pp4)),
                   "ppb: error: " + log +
                       ": offset 0: the file does not begin with a pickle's PROTO opcode (0x80) "
                       "but with 0x5B: it is not a pickle of protocol 2 to 5 (is it a memory "
                       "snapshot, pickled by torch.cuda.memory._dump_snapshot?)\n");
}

BOOST_AUTO_TEST_CASE(ranks_from_names_or_flags) {
    Scratch dir;
    const std::string bytes = ppb_test::read_file(snapshots + "/megatron/snapshot_1.pickle");
    const std::string plain = dir.write("snapshot.pickle", bytes).string();
    expect_refusal(ppb(join({"import", "snapshot", plain}, megatron_pp4)),
                   "ppb: error: " + plain +
                       ": cannot tell which rank wrote this snapshot: its name is none of "
                       "Megatron-LM's (<base>_<rank>.pickle, <base>_oom_rank_<rank>.pickle) or "
                       "torchtitan's (<rank>_step_<step>.pickle, "
                       "rank<rank>_memory_snapshot.pickle), nor in a rank_<id>/ directory: give "
                       "--rank " +
                       plain + "=ID\n");
    const ProcessResult r =
        ppb(join({"import", "snapshot", plain, "--rank", plain + "=2"}, megatron_pp4));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = json::parse(r.out);
    const json::array& observations = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(observations.size() == 1u);
    BOOST_TEST(observations[0].at("stage").to_number<int>() == 2);
    BOOST_TEST(same_number(observations[0].at("peak_memory_mb"),
                           mib(truth_of("megatron/snapshot_1.pickle").at("allocated_peak"))));
    expect_refusal(ppb(join({"import", "snapshot", plain, "--rank", plain + "=4"}, megatron_pp4)),
                   "ppb: error: " + plain +
                       ": rank 4 is not a rank of this job: 4 stages x 1 rank per stage (world "
                       "size 4 / pipeline-model-parallel-size 4) = 4 ranks, 0..3\n");
}

BOOST_AUTO_TEST_CASE(out_of_memory_dumps_are_left_out) {
    const std::string oom = snapshots + "/oom/snapshot_oom_rank_3.pickle";
    expect_refusal(ppb(join({"import", "snapshot", oom}, megatron_pp4)),
                   "ppb: error: no snapshot to import: every one read is the dump of an "
                   "out-of-memory error, whose peak is not what the run needed: " +
                       oom + "\n");
    // Beside the other ranks' snapshots: left out, warned.
    const ProcessResult r =
        ppb(join({"import", "snapshot", oom, snapshots + "/megatron"}, megatron_pp4));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.find("ppb: warning: rank 3: " + oom +
                          " is the dump of an out-of-memory error: an allocation of 81920.0 MB "
                          "failed at event 161 of 162 (2026-01-01 00:00:00.189 UTC, 0.2 s into "
                          "the trace) with 468.3 MB allocated, 474.0 MB reserved and 512.0 MB "
                          "free on the device; the run needed more than it shows, so it is left "
                          "out\n") != std::string::npos,
               r.err);
    const json::value doc = json::parse(r.out);
    BOOST_TEST(doc.at("observations").as_array().size() == 4u);
}

BOOST_AUTO_TEST_CASE(usage_mistakes) {
    expect_refusal(ppb({"import", "snapshot", snapshots + "/megatron"}),
                   "ppb: error: missing the placement: --plan PLAN.json (the ppb plan the dry run "
                   "ran), or the run's layout in Megatron-LM's flags "
                   "(--pipeline-model-parallel-size P --num-layers L --world-size N ...)\nTry "
                   "'ppb import snapshot --help'.\n");
    expect_refusal(ppb({"import", "snapshot", snapshots + "/megatron",
                        "--pipeline-model-parallel-size", "4", "--num-layers", "8"}),
                   "ppb: error: missing --world-size N (the number of ranks)\n");
    Scratch dir;
    (void)dir.write("empty/notes.txt", "x\n");
    expect_refusal(ppb(join({"import", "snapshot", (dir / "empty").string()}, megatron_pp4)),
                   "ppb: error: " + (dir / "empty").string() +
                       ": no memory snapshots in this directory (files named *.pickle or "
                       "*.pkl)\n");
}

BOOST_AUTO_TEST_CASE(appended_to_an_existing_dry_run_file) {
    Scratch dir;
    const std::string file = (dir / "runs.json").string();
    ProcessResult r =
        ppb(join({"import", "snapshot", snapshots + "/megatron", "-o", file}, megatron_pp4));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    r = ppb({"import", "snapshot", snapshots + "/torchtitan", "--pipeline-model-parallel-size", "2",
             "--num-layers", "4", "--world-size", "2", "--append", file, "--label", "B"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = json::parse(ppb_test::read_file(file));
    const json::array& observations = doc.at("observations").as_array();
    BOOST_TEST(observations.size() == 6u);
    for (const auto& o : observations)
        BOOST_TEST(o.as_object().contains("reserved_mb"));
}

BOOST_AUTO_TEST_CASE(torchtitan_logs_give_the_reserved_peak_of_each_logging_rank) {
    Scratch dir;
    // torchrun --local-ranks-filter 0,3 --tee 3: two of four ranks log, with colour codes.
    std::string log;
    for (const auto& [step, rank, gib] : {std::tuple{1, 0, 19.05}, std::tuple{1, 3, 30.5},
                                          std::tuple{2, 0, 19.5}, std::tuple{2, 3, 30.25}}) {
        log += fmt::format(
            "[rank{}]:[titan] 2026-08-21 21:30:2{},123 - root - INFO - \033[31mstep: {:2}  "
            "\033[32mloss: 10.00000  \033[38;2;180;60;0mgrad_norm:  1.0000  "
            "\033[38;2;54;234;195mmemory: {:5.2f}GiB({:.2f}%)  \033[34mtps: 1,234  "
            "\033[36mtflops: 61.70  \033[35mmfu: 19.76%\033[39m\n",
            rank, step, step, gib, gib / 0.7919);
    }
    const std::string file = dir.write("train.log", log).string();
    const ProcessResult r =
        ppb({"import", "torchtitan", file, "--pipeline-model-parallel-size", "4", "--num-layers",
             "8", "--world-size", "4", "--recompute-granularity", "selective"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = json::parse(r.out);
    const json::array& observations = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(observations.size() == 2u);
    BOOST_TEST(observations[0].at("stage").to_number<int>() == 0);
    BOOST_TEST(same_number(observations[0].at("peak_memory_mb"), 19.5 * 1024));
    BOOST_TEST(same_number(observations[0].at("reserved_mb"), 19.5 * 1024));
    BOOST_TEST(observations[0].at("layers").at("select").to_number<int>() == 2);
    BOOST_TEST(observations[1].at("stage").to_number<int>() == 3);
    BOOST_TEST(same_number(observations[1].at("peak_memory_mb"), 30.5 * 1024));
    BOOST_TEST(r.err.find("ppb: note: no log for stages 1, 2 of the 4-stage pipeline: imported "
                          "stages 0, 3\n") != std::string::npos,
               r.err);

    const std::string bad = dir.write("bad.log", "[rank0]:step: 1  memory: 1.0MiB(1%)\n").string();
    expect_refusal(ppb({"import", "torchtitan", bad, "--pipeline-model-parallel-size", "1",
                        "--num-layers", "8", "--world-size", "1"}),
                   "ppb: error: " + bad +
                       ":1: malformed step line: expected a number of GiB such as '19.05GiB' "
                       "after 'memory:', got '1.0MiB(1%)'\n");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace import_snapshot_cli_tests
