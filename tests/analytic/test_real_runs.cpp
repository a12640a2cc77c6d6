// The analytic model against real GPUs: every measured point of tests/data/real (format
// ppb.real/1, README.md there; read and checked by real_points.cpp) is configured from its own
// Megatron-LM arguments through 'ppb import megatron-options', predicted with 'ppb predict
// --model analytic' for the stage that was measured, and compared with the measured peak of
// allocated memory. No point is tuned: the options are exactly what the command writes.
//
// The sets ("set" in each file) and what is asserted on each:
//   calibration, held_out — issue 24's goal on each set alone: median |error| <= 2 %, worst
//     <= 8 %, none under-predicted by more than 5 %. A point outside the model's coverage says
//     so ("expect": "refused", with the flag) and the command must refuse it naming that flag.
//   features — issue 36's runs (MLA, MTP, CP, FP8, FSDP, recompute modules, offloading, CUDA
//     graphs), held out while the model's terms for them are written. Issue 36's goal is
//     median <= 3 %, worst <= 10 %, none under by more than 5 %, and every run predicted. What
//     holds today is asserted: no point crashes or gets a garbled answer — each is either
//     refused (exit 2, nothing on stdout, the message naming one of its own flags or arguments)
//     or predicted within issue 36's bounds for one run (worst and most under). The set's goal,
//     check_goal("features", issue36_goal, ...), is switched on when no point is refused.
// The test case 'report' prints every point's status and each set's figures (ctest -R report -V).
#include "real_points.hpp"

#include "../common/run_process.hpp"

#include <unistd.h>

#include <ppb/partition/shape_time.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace real_runs_tests {

namespace {

using real_points::Point;

ppb_test::ProcessResult ppb(const std::vector<std::string>& args) {
    return ppb_test::run_process(
        PPB_EXE, args, {{"PPB_PLUGIN_PATH", PPB_BUILD_PLUGIN_DIR}, {"PPB_DEBUG_PLUGINS", ""}});
}

// What the commands made of one point.
struct Outcome {
    std::string name;
    std::string set;
    std::vector<std::string> features;
    double measured_mb = 0.0;
    bool predicted = false;
    double predicted_mb = 0.0;
    double std_error_mb = 0.0;
    std::string refusal;  // the first 'ppb: error:' line, when refused
    ppb_test::ProcessResult import;
    [[nodiscard]] double error() const { return (predicted_mb - measured_mb) / measured_mb; }
};

std::string first_error_line(const std::string& err) {
    std::istringstream lines(err);
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("ppb: error: "))
            return line.substr(std::string("ppb: error: ").size());
    }
    return {};
}

Outcome predict(const Point& p, const fs::path& scratch) {
    Outcome o;
    o.name = p.name;
    o.set = p.set;
    o.features = p.features;
    o.measured_mb = p.measured_mb;
    std::vector<std::string> args{"import",
                                  "megatron-options",
                                  "--world-size",
                                  std::to_string(p.world_size),
                                  "--compute-capability",
                                  std::to_string(p.compute_capability)};
    // The flags of the run's Megatron-LM branch that no release has, and the run's release
    // when its file names it (tests/data/real/README.md).
    for (const std::string& f : p.megatron_flags)
        args.insert(args.end(), {"--megatron-flag", f});
    if (p.megatron_version)
        args.insert(args.end(), {"--megatron-version", *p.megatron_version});
    args.push_back("--");
    args.insert(args.end(), p.arguments.begin(), p.arguments.end());
    o.import = ppb(args);
    if (o.import.exit_code != 0) {
        o.refusal = first_error_line(o.import.err);
        return o;
    }
    const fs::path file = scratch / (p.name + ".json");
    std::ofstream(file) << o.import.out;
    std::vector<std::string> command{"predict",         "--model",     "analytic",
                                     "--model-options", file.string(), "--json"};
    const auto placement = real_points::measured_stage_placement(p);
    command.insert(command.end(), placement.begin(), placement.end());
    const auto r = ppb(command);
    BOOST_TEST_REQUIRE(r.exit_code == 0, p.name << ": ppb predict: " << r.err);
    const json::object doc = json::parse(r.out).as_object();
    o.predicted = true;
    o.predicted_mb = json::value_to<double>(doc.at("peak_memory_mb"));
    o.std_error_mb = json::value_to<double>(doc.at("std_error_mb"));
    BOOST_TEST_REQUIRE((std::isfinite(o.predicted_mb) && o.predicted_mb > 0.0),
                       p.name << ": predicted " << o.predicted_mb << " MB");
    return o;
}

const std::vector<Point>& points() {
    static const std::vector<Point> all = real_points::read_all(PPB_REAL_DATA_DIR);
    return all;
}

// Every point predicted once for all the test cases (each prediction runs two processes).
const std::vector<Outcome>& outcomes() {
    static const std::vector<Outcome> all = [] {
        // One directory per process: CTest runs the report and the goals as two entries at once.
        const fs::path scratch =
            fs::temp_directory_path() / ("ppb-test-real-runs-" + std::to_string(::getpid()));
        fs::create_directories(scratch);
        std::vector<Outcome> each;
        for (const Point& p : points())
            each.push_back(predict(p, scratch));
        fs::remove_all(scratch);
        return each;
    }();
    return all;
}

std::vector<Outcome> of_set(const std::string& set) {
    std::vector<Outcome> chosen;
    std::ranges::copy_if(outcomes(), std::back_inserter(chosen),
                         [&](const Outcome& o) { return o.set == set; });
    return chosen;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Summary {
    std::size_t count = 0;    // points
    std::size_t refused = 0;  // of them, refused
    std::size_t predicted = 0;
    double median = 0.0;      // of |error|, over the predicted
    double worst = 0.0;       // largest |error|
    double most_under = 0.0;  // the most negative error (0 when none is under)
    double rms = 0.0;         // root mean square of the errors
};

Summary summarize(const std::vector<Outcome>& chosen) {
    Summary s;
    std::vector<double> magnitudes;
    double squares = 0.0;
    for (const Outcome& o : chosen) {
        ++s.count;
        if (!o.predicted) {
            ++s.refused;
            continue;
        }
        magnitudes.push_back(std::abs(o.error()));
        s.worst = std::max(s.worst, std::abs(o.error()));
        s.most_under = std::min(s.most_under, o.error());
        squares += o.error() * o.error();
    }
    s.predicted = magnitudes.size();
    if (s.predicted > 0) {
        s.median = median(magnitudes);
        s.rms = std::sqrt(squares / static_cast<double>(s.predicted));
    }
    return s;
}

std::string percent(double fraction) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(2) << 100.0 * fraction << " %";
    return text.str();
}

std::string megabytes(double mb) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << mb << " MB";
    return text.str();
}

// A goal on a set of runs: the issue that set it and its bounds on the errors.
struct Goal {
    const char* issue;
    double median;      // of |error|
    double worst;       // largest |error|
    double most_under;  // largest under-prediction
    bool every_run_predicted;
};
constexpr Goal issue24_goal{"issue 24", 0.02, 0.08, 0.05, false};
constexpr Goal issue36_goal{"issue 36", 0.03, 0.10, 0.05, true};

// One predicted run within a goal's bounds for a single run: not under by more than most_under,
// |error| at most worst.
void check_run_within(const Outcome& o, const Goal& goal) {
    BOOST_TEST(o.error() >= -goal.most_under, o.name << " is under-predicted by more than "
                                                     << percent(goal.most_under) << " ("
                                                     << goal.issue << "): " << percent(o.error()));
    BOOST_TEST(std::abs(o.error()) <= goal.worst,
               o.name << ": |error| above " << percent(goal.worst) << " (" << goal.issue
                      << "): " << percent(o.error()));
}

// A goal on one set of runs: at least min_points of them, every run within the bounds, the
// median |error| at most the goal's, and (issue 36) none refused.
void check_goal(const std::string& set, const Goal& goal, std::size_t min_points) {
    const std::vector<Outcome> chosen = of_set(set);
    const Summary s = summarize(chosen);
    BOOST_TEST_REQUIRE(s.predicted >= min_points, set << ": " << s.predicted << " runs predicted");
    BOOST_TEST_MESSAGE(set << ": " << s.predicted << " runs, median |error| " << percent(s.median)
                           << ", worst " << percent(s.worst) << ", most under "
                           << percent(s.most_under) << ", rms " << percent(s.rms));
    if (goal.every_run_predicted)
        BOOST_TEST(s.refused == 0U, set << ": " << s.refused << " runs refused (" << goal.issue
                                        << ": every run predicted)");
    for (const Outcome& o : chosen) {
        if (o.predicted)
            check_run_within(o, goal);
    }
    BOOST_TEST(s.median <= goal.median, set << ": median |error| " << percent(s.median));
}

// What a refusal names of the point's own arguments: a flag it gives ("--flag ..." in the
// message), or the argument reader's "argument N 'TEXT'" whose N-th argument is TEXT — an
// argument not read, said with the flag it belongs to (the last flag before it). `what` is empty
// when the message names neither.
struct Named {
    std::string what;  // "--flag", or "argument N 'TEXT' of --flag"
    bool not_read = false;
};

Named named_argument(const Point& p, const std::string& message) {
    static const std::regex positional(R"(argument (\d+) '([^']*)')");
    std::smatch m;
    if (std::regex_search(message, m, positional)) {
        const std::size_t n = std::stoul(m[1].str());
        if (n == 0 || n > p.arguments.size() || p.arguments[n - 1] != m[2].str())
            return {};
        std::string what = "argument " + m[1].str() + " '" + m[2].str() + "'";
        for (std::size_t i = n - 1; i-- > 0;) {
            if (p.arguments[i].starts_with("--")) {
                what += " of " + p.arguments[i];
                break;
            }
        }
        return {what, true};
    }
    static const std::regex flag(R"(--[A-Za-z0-9][A-Za-z0-9_-]*)");
    for (auto it = std::sregex_iterator(message.begin(), message.end(), flag);
         it != std::sregex_iterator(); ++it) {
        if (std::ranges::count(p.arguments, it->str()) > 0)
            return {it->str(), false};
    }
    return {};
}

const Point& point_named(const std::string& name) {
    const auto it = std::ranges::find_if(points(), [&](const Point& p) { return p.name == name; });
    BOOST_TEST_REQUIRE((it != points().end()), name);
    return *it;
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
    std::string text;
    for (const std::string& part : parts)
        text += (text.empty() ? "" : separator) + part;
    return text;
}

// The status of every point and each set's figures, as Markdown tables.
std::string status_report() {
    std::ostringstream out;
    out << "| set | points | predicted | refused | median |error| | worst |error| | most under "
           "| rms |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const std::string& set : real_points::set_names) {
        const Summary s = summarize(of_set(set));
        const auto figure = [&](double v) { return s.predicted == 0 ? "—" : percent(v); };
        out << "| " << set << " | " << s.count << " | " << s.predicted << " | " << s.refused
            << " | " << figure(s.median) << " | " << figure(s.worst) << " | "
            << figure(s.most_under) << " | " << figure(s.rms) << " |\n";
    }
    out << "\n| run | set | features | measured | status | predicted | error |\n"
           "| --- | --- | --- | ---: | --- | ---: | ---: |\n";
    for (const std::string& set : real_points::set_names) {
        for (const Outcome& o : of_set(set)) {
            out << "| `" << o.name << "` | " << o.set << " | "
                << (o.features.empty() ? "—" : joined(o.features, ", ")) << " | "
                << megabytes(o.measured_mb) << " | ";
            if (o.predicted) {
                out << "predicted | " << megabytes(o.predicted_mb) << " | " << percent(o.error())
                    << " |\n";
                continue;
            }
            const Named named = named_argument(point_named(o.name), o.refusal);
            out << (named.not_read ? "not read: " : "refused: ")
                << (named.what.empty() ? o.refusal : named.what) << " | — | — |\n";
        }
    }
    return out.str();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(real_runs)

BOOST_AUTO_TEST_CASE(the_model_meets_the_goal_on_the_calibration_runs) {
    check_goal("calibration", issue24_goal, 10);
}

BOOST_AUTO_TEST_CASE(the_model_meets_the_goal_on_the_held_out_runs) {
    check_goal("held_out", issue24_goal, 10);
}

BOOST_AUTO_TEST_CASE(the_earlier_runs_are_predicted_or_refused_as_they_say) {
    // Calibration and held-out runs are predicted, except those outside the model's coverage,
    // which say so ("expect": "refused"): the command refuses each naming that flag, and writes
    // nothing.
    std::size_t expected = 0;
    for (const Outcome& o : outcomes()) {
        if (o.set == "features")
            continue;
        const Point& p = point_named(o.name);
        if (!p.refused_flag) {
            BOOST_TEST(o.predicted, o.name << ": " << o.import.err);
            continue;
        }
        ++expected;
        BOOST_TEST(o.import.exit_code == 2, p.name << ": " << o.import.err);
        BOOST_TEST(o.import.out.empty(), p.name);
        BOOST_TEST(o.refusal.find("--" + *p.refused_flag) != std::string::npos,
                   p.name << ": " << o.import.err);
    }
    // Since issue 36's terms no earlier run is refused (the MLA and MTP run that was is modelled
    // and left the set); a point marked refused again is checked above.
    BOOST_TEST_MESSAGE(expected << " earlier runs refused as they say");
}

BOOST_AUTO_TEST_CASE(every_features_run_is_refused_by_name_or_predicted_within_the_goal) {
    // Issue 36's runs, held out while the model's terms for them are written: each is either
    // refused cleanly — exit status 2, nothing on stdout, one 'ppb: error:' line naming one of
    // the run's own flags or arguments — or predicted within issue 36's bounds for one run.
    const std::vector<Outcome> chosen = of_set("features");
    BOOST_TEST_REQUIRE(chosen.size() >= 30U, chosen.size() << " features runs");
    for (const Outcome& o : chosen) {
        const Point& p = point_named(o.name);
        if (o.predicted) {
            check_run_within(o, issue36_goal);
            continue;
        }
        BOOST_TEST(o.import.exit_code == 2, o.name << ": exit status " << o.import.exit_code
                                                   << " (signal " << o.import.signal
                                                   << "), stderr: " << o.import.err);
        BOOST_TEST(o.import.out.empty(), o.name << ": " << o.import.out);
        BOOST_TEST(!named_argument(p, o.refusal).what.empty(),
                   o.name << ": the refusal names none of its flags: " << o.import.err);
    }
    const Summary s = summarize(chosen);
    BOOST_TEST_MESSAGE("features: " << s.count << " runs, " << s.refused << " refused, "
                                    << s.predicted << " predicted (median |error| "
                                    << percent(s.median) << ", worst " << percent(s.worst)
                                    << ", most under " << percent(s.most_under) << ")");
    // Every feature of issue 36 that Megatron-LM's CI measures has runs in the set.
    for (const std::string_view feature :
         {"mla", "mtp", "cp-p2p", "cp-a2a+p2p", "fp8-tensorwise", "fp8-delayed", "fp8-blockwise",
          "fsdp", "recompute-modules", "activation-offloading", "cuda-graphs", "moe"}) {
        BOOST_TEST(std::ranges::count_if(chosen,
                                         [&](const Outcome& o) {
                                             return std::ranges::count(o.features, feature) > 0;
                                         }) >= 1,
                   "no features run with " << feature);
    }
}

BOOST_AUTO_TEST_CASE(the_measured_stage_holds_the_layers_megatron_gives_the_last_rank) {
    // The placement each point is predicted for, worked by hand from Megatron-LM's rules:
    // micro-batches = global batch / (micro batch x world / (TP x PP x CP)); virtual stage q is
    // chunk q / P of rank q mod P; --moe-layer-freq lists each layer dense (0) or MoE (1).
    const auto placement = [](const std::string& name) {
        return real_points::measured_stage_placement(point_named(name));
    };
    using Args = std::vector<std::string>;
    // 12 layers over PP4, 1 per virtual stage: 3 chunks of 1; DP 8 / 4 = 2, 32 / (4 x 2) = 4.
    BOOST_TEST(
        placement("gpt3-345m-legacy-fp16-tp1-pp4-vp") ==
            (Args{"--stages", "4", "--stage", "3", "--micro-batches", "4", "--schedule",
                  "interleaved", "--chunk", "none=1", "--chunk", "none=1", "--chunk", "none=1"}),
        boost::test_tools::per_element());
    // Context parallelism takes ranks from data parallelism: DP 8 / (2 x 2 x 2) = 1, 32 / 4 = 8.
    BOOST_TEST(
        placement("gpt-cp2-tp2-pp2-h100") ==
            (Args{"--stages", "2", "--stage", "1", "--micro-batches", "8", "--layers", "none=6"}),
        boost::test_tools::per_element());
    // 'Et*3|(tt|)*6mL' over PP2: rank 1 holds virtual stages 1, 3, 5, 7 — layers 3-4, 7-8,
    // 11-12 (MoE from layer 3 on) and the MTP layer with the loss (no decoder layer);
    // selective recompute. DP 8 / 4 = 2, 8 / (1 x 2) = 4. The run overlaps the expert all-to-all
    // (--overlap-moe-expert-parallel-comm): Megatron-LM's combined 1F1B.
    BOOST_TEST(placement("moe-mla-mtp-offload-tp2-pp2-vpp4-ep4-h100") ==
                   (Args{"--stages", "2", "--stage", "1", "--micro-batches", "4", "--schedule",
                         "combined-1f1b", "--chunk", "moe.select=2", "--chunk", "moe.select=2",
                         "--chunk", "moe.select=2", "--chunk", "dense.none=0"}),
               boost::test_tools::per_element());
    // 'Et|(tt|)*6mL' over PP2, 4 dense layers then 9 MoE: rank 1 holds layers 1-2 (dense),
    // 5-6, 9-10 (MoE) and the MTP layer. DP 8 / (4 x 2) = 1, 32 / 2 = 16.
    BOOST_TEST(placement("moe-mtp-fp8-blockwise-cudagraph-tp4-pp2-vpp4-ep2-h100") ==
                   (Args{"--stages", "2", "--stage", "1", "--micro-batches", "16", "--schedule",
                         "interleaved", "--chunk", "dense.select=2", "--chunk", "moe.select=2",
                         "--chunk", "moe.select=2", "--chunk", "dense.none=0"}),
               boost::test_tools::per_element());
    // 16 layers, 4 virtual stages per rank over PP2: rank 1 holds layers 2-3, 6-7, 10-11, 14-15,
    // all MoE (only layer 0 is dense). DP 8 / 4 = 2, 32 / (4 x 2) = 4.
    BOOST_TEST(placement("moe-mla-mtp-tp2-pp2-vpp4-ep4-h100") ==
                   (Args{"--stages", "2", "--stage", "1", "--micro-batches", "4", "--schedule",
                         "interleaved", "--chunk", "moe.none=2", "--chunk", "moe.none=2", "--chunk",
                         "moe.none=2", "--chunk", "moe.none=2"}),
               boost::test_tools::per_element());
    // No pipeline on 4 GPUs: every layer on the one stage, 4 dense and 9 MoE. DP 4 / 4 = 1.
    BOOST_TEST(placement("moe-mtp-fp8-blockwise-cudagraph-tp4-ep2-etp2-4gpu-gb200") ==
                   (Args{"--stages", "1", "--stage", "0", "--micro-batches", "16", "--layers",
                         "dense.select=4,moe.select=9"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_stated_uncertainty_covers_the_spread_of_the_earlier_runs) {
    // The standard error each prediction carries is at least the spread of the calibration and
    // held-out runs' errors (their root mean square) times the prediction. The features runs
    // are held out from this too: nothing is chosen on them.
    std::vector<Outcome> earlier = of_set("calibration");
    const std::vector<Outcome> held_out = of_set("held_out");
    earlier.insert(earlier.end(), held_out.begin(), held_out.end());
    const Summary all = summarize(earlier);
    BOOST_TEST_MESSAGE("calibration and held out: "
                       << all.predicted << " runs, median |error| " << percent(all.median)
                       << ", worst " << percent(all.worst) << ", rms " << percent(all.rms));
    BOOST_TEST_REQUIRE(all.predicted >= 32U);
    for (const Outcome& o : outcomes()) {
        if (o.predicted)
            BOOST_TEST(o.std_error_mb >= all.rms * o.predicted_mb * 0.999, o.name);
    }
}

// The search journey: every shape 'ppb import megatron-options' writes is one 'ppb search'
// times (ppb/partition/shape_time.hpp reads every key of the analytic model's options).
BOOST_AUTO_TEST_CASE(every_imported_shape_is_one_the_search_times) {
    std::size_t read = 0;
    for (const Outcome& o : outcomes()) {
        if (o.import.exit_code != 0)
            continue;
        try {
            const ppb::partition::TimeModel time = ppb::partition::time_model_from_shape(
                o.import.out, o.name, ppb::partition::ShapeTimeSettings{});
            BOOST_TEST(time.body_layers > 0u, o.name);
            ++read;
        } catch (const std::exception& e) {
            BOOST_ERROR(o.name << ": " << e.what());
        }
    }
    BOOST_TEST(read > 70u);
}

BOOST_AUTO_TEST_CASE(report) {
    // Every point's status and each set's figures, for people: ctest -R real_runs/report -V.
    const std::string table = status_report();
    BOOST_TEST(static_cast<std::size_t>(std::ranges::count(table, '\n')) >= points().size() + 6);
    std::cout << "\nThe analytic model on the real runs of tests/data/real:\n\n"
              << table << std::flush;
}

BOOST_AUTO_TEST_CASE(the_command_refuses_bad_arguments_with_exit_2_and_nothing_on_stdout) {
    const auto expect_refusal = [](const std::vector<std::string>& args, const std::string& text) {
        const auto r = ppb(args);
        BOOST_TEST(r.exit_code == 2, "exit status " << r.exit_code << ", stderr: " << r.err);
        BOOST_TEST(r.out.empty(), r.out);
        BOOST_TEST(r.err.find(text) != std::string::npos, r.err);
    };
    expect_refusal({"import", "megatron-options"}, "missing the run's Megatron-LM arguments");
    expect_refusal({"import", "megatron-options", "--", "--num-layers", "4"}, "--hidden-size");
    expect_refusal({"import", "megatron-options", "--world-size", "6", "--", "--num-layers", "4",
                    "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "64",
                    "--vocab-size", "100", "--tensor-model-parallel-size", "4"},
                   "--world-size 6 is not a multiple");
    expect_refusal({"import", "megatron-options", "--", "--num-layers", "4", "--hidden-size", "64",
                    "--num-attention-heads", "4", "--seq-length", "64", "--vocab-size", "100",
                    "--context-parallel-size", "2", "--cp-comm-type", "ring"},
                   "--cp-comm-type ring: not one of p2p, a2a, allgather, a2a+p2p");
    // The options the command writes are the analytic model's: a warning names what it leaves
    // out, and the options load (ppb predict accepts them).
    const auto r = ppb({"import", "megatron-options", "--", "--num-layers", "4", "--hidden-size",
                        "64", "--num-attention-heads", "4", "--seq-length", "64", "--vocab-size",
                        "100", "--bf16", "--delay-wgrad-compute"});
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.find("--delay-wgrad-compute changes memory but is not modelled") !=
               std::string::npos);
    const json::object o = json::parse(r.out).as_object();
    BOOST_TEST(o.at("vocab_size").as_int64() == 128);  // 100 padded to a multiple of 128
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace real_runs_tests
