// The analytic model against real GPUs: every measured point of tests/data/real (format
// ppb.real/1, README.md there) is configured from its own Megatron-LM arguments through
// 'ppb import megatron-options', predicted with 'ppb predict --model analytic' for the stage that
// was measured, and compared with the measured peak of allocated memory. The goal the issue sets:
// median |error| <= 2 %, worst <= 8 %, none under-predicted by more than 5 %. No point is tuned:
// the options are exactly what the command writes. A point outside the model's coverage says so
// ("expect": "refused", with the flag), and the command must refuse it naming that flag.
//
// Each point belongs to one of two sets ("set"): "calibration", the runs the model's defaults
// (runtime_mb, moe.routing_imbalance, relative_std_error) were chosen on, and "held_out", runs
// collected after those defaults were fixed and never used to choose anything. The goal is
// asserted on each set alone, so a default tuned to the calibration runs cannot hide behind them.
#include "../common/run_process.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace real_runs_tests {

namespace {

const std::string real_dir = PPB_REAL_DATA_DIR;

ppb_test::ProcessResult ppb(const std::vector<std::string>& args) {
    return ppb_test::run_process(
        PPB_EXE, args, {{"PPB_PLUGIN_PATH", PPB_BUILD_PLUGIN_DIR}, {"PPB_DEBUG_PLUGINS", ""}});
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The value of `--flag` in a Megatron argument list ("" for a switch, nullopt when absent).
std::optional<std::string> flag(const std::vector<std::string>& args, const std::string& name) {
    std::optional<std::string> found;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] != name)
            continue;
        found = (i + 1 < args.size() && !args[i + 1].starts_with("--")) ? args[i + 1] : "";
    }
    return found;
}

std::uint32_t count(const std::vector<std::string>& args, const std::string& name,
                    std::uint32_t fallback) {
    const auto v = flag(args, name);
    return v ? static_cast<std::uint32_t>(std::stoul(*v)) : fallback;
}

struct Point {
    std::string name;
    std::vector<std::string> arguments;
    std::uint32_t world_size = 0;
    std::uint32_t compute_capability = 0;  // of the GPUs the run was measured on
    double measured_mb = 0.0;
    std::string set;                          // "calibration" or "held_out"
    std::optional<std::string> refused_flag;  // "expect": "refused"
};

Point read_point(const fs::path& path) {
    const json::object doc = json::parse(read_text(path)).as_object();
    BOOST_TEST_REQUIRE(doc.at("format").as_string() == "ppb.real/1", path);
    Point p;
    p.name = json::value_to<std::string>(doc.at("name"));
    p.set = json::value_to<std::string>(doc.at("set"));
    BOOST_TEST_REQUIRE((p.set == "calibration" || p.set == "held_out"), path << ": set " << p.set);
    for (const auto& a : doc.at("arguments").as_array())
        p.arguments.push_back(json::value_to<std::string>(a));
    p.world_size = json::value_to<std::uint32_t>(doc.at("world_size"));
    p.compute_capability =
        json::value_to<std::uint32_t>(doc.at("source").as_object().at("compute_capability"));
    const json::object& measured = doc.at("measured").as_object();
    BOOST_TEST_REQUIRE(measured.at("metric").as_string() == "max_allocated", path);
    const double bytes = json::value_to<double>(measured.at("bytes"));
    p.measured_mb = bytes / (1024.0 * 1024.0);
    // The file's MB figure is the bytes in MB (2^20), rounded: the two agree.
    BOOST_TEST(std::abs(json::value_to<double>(measured.at("mb")) - p.measured_mb) < 0.001, path);
    if (const auto* expect = doc.if_contains("expect")) {
        BOOST_TEST_REQUIRE(expect->as_string() == "refused", path);
        p.refused_flag = json::value_to<std::string>(doc.at("refused_flag"));
    }
    return p;
}

std::vector<Point> real_points() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(real_dir)) {
        if (e.path().extension() == ".json")
            files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    std::vector<Point> points;
    for (const auto& f : files)
        points.push_back(read_point(f));
    return points;
}

// The measured stage (the last: Megatron's last rank writes the figures) as 'ppb predict' takes
// it: layers per chunk and recompute kind from Megatron's own layout flags.
std::vector<std::string> placement_arguments(const Point& p) {
    const auto& a = p.arguments;
    const std::uint32_t layers = count(a, "--num-layers", 0);
    const std::uint32_t stages = count(a, "--pipeline-model-parallel-size", 1);
    const std::uint32_t t = count(a, "--tensor-model-parallel-size", 1);
    const std::uint32_t b = count(a, "--micro-batch-size", 1);
    const std::uint32_t d = p.world_size / (t * stages);
    const std::uint32_t micro_batches = count(a, "--global-batch-size", b * d) / (b * d);
    const std::uint32_t per_stage = layers / stages;
    std::uint32_t chunks = 1;
    if (const auto n = flag(a, "--num-layers-per-virtual-pipeline-stage"))
        chunks = per_stage / static_cast<std::uint32_t>(std::stoul(*n));
    const std::uint32_t per_chunk = per_stage / chunks;
    // Megatron's recompute per chunk: selective recomputes every layer's core attention; full with
    // --recompute-method uniform recomputes every layer (in groups of --recompute-num-layers),
    // with block only the first --recompute-num-layers layers of each chunk.
    std::string chunk_layers = "none=" + std::to_string(per_chunk);
    const auto granularity = flag(a, "--recompute-granularity");
    if (granularity == "selective") {
        chunk_layers = "select=" + std::to_string(per_chunk);
    } else if (granularity == "full") {
        const std::uint32_t full = flag(a, "--recompute-method") == "block"
                                       ? std::min(per_chunk, count(a, "--recompute-num-layers", 1))
                                       : per_chunk;
        chunk_layers = "full=" + std::to_string(full);
        if (full < per_chunk)
            chunk_layers += ",none=" + std::to_string(per_chunk - full);
    }
    std::vector<std::string> out{"--stages",        std::to_string(stages),
                                 "--stage",         std::to_string(stages - 1),
                                 "--micro-batches", std::to_string(micro_batches)};
    if (chunks == 1) {
        out.insert(out.end(), {"--layers", chunk_layers});
    } else {
        out.insert(out.end(), {"--schedule", "interleaved"});
        for (std::uint32_t c = 0; c < chunks; ++c)
            out.insert(out.end(), {"--chunk", chunk_layers});
    }
    return out;
}

struct Outcome {
    std::string name;
    std::string set;
    double measured_mb = 0.0;
    double predicted_mb = 0.0;
    double std_error_mb = 0.0;
    [[nodiscard]] double error() const { return (predicted_mb - measured_mb) / measured_mb; }
};

std::vector<Outcome> predict_all() {
    std::vector<Outcome> outcomes;
    const fs::path scratch = fs::temp_directory_path() / "ppb-test-real-runs";
    fs::create_directories(scratch);
    for (const Point& p : real_points()) {
        std::vector<std::string> args{"import",
                                      "megatron-options",
                                      "--world-size",
                                      std::to_string(p.world_size),
                                      "--compute-capability",
                                      std::to_string(p.compute_capability),
                                      "--"};
        args.insert(args.end(), p.arguments.begin(), p.arguments.end());
        const auto options = ppb(args);
        if (p.refused_flag) {
            BOOST_TEST(options.exit_code == 2, p.name << ": " << options.err);
            BOOST_TEST(options.out.empty(), p.name);
            BOOST_TEST(options.err.find("--" + *p.refused_flag) != std::string::npos,
                       p.name << ": " << options.err);
            continue;
        }
        BOOST_TEST_REQUIRE(options.exit_code == 0, p.name << ": " << options.err);
        const fs::path file = scratch / (p.name + ".json");
        std::ofstream(file) << options.out;
        std::vector<std::string> predict{"predict",         "--model",     "analytic",
                                         "--model-options", file.string(), "--json"};
        const auto placement = placement_arguments(p);
        predict.insert(predict.end(), placement.begin(), placement.end());
        const auto r = ppb(predict);
        BOOST_TEST_REQUIRE(r.exit_code == 0, p.name << ": " << r.err);
        const json::object doc = json::parse(r.out).as_object();
        Outcome o{p.name, p.set, p.measured_mb, json::value_to<double>(doc.at("peak_memory_mb")),
                  json::value_to<double>(doc.at("std_error_mb"))};
        BOOST_TEST_MESSAGE(p.name << ": measured " << o.measured_mb << " MB, predicted "
                                  << o.predicted_mb << " MB (" << 100.0 * o.error()
                                  << " %), standard error " << o.std_error_mb << " MB");
        outcomes.push_back(o);
    }
    fs::remove_all(scratch);
    return outcomes;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Every point predicted once for all the test cases (each prediction runs two processes).
const std::vector<Outcome>& outcomes() {
    static const std::vector<Outcome> all = predict_all();
    return all;
}

struct Summary {
    std::size_t count = 0;
    double median = 0.0;      // of |error|
    double worst = 0.0;       // largest |error|
    double most_under = 0.0;  // the most negative error (0 when none is under)
    double rms = 0.0;         // root mean square of the errors
};

Summary summarize(const std::vector<Outcome>& outcomes) {
    Summary s;
    std::vector<double> magnitudes;
    double squares = 0.0;
    for (const Outcome& o : outcomes) {
        magnitudes.push_back(std::abs(o.error()));
        s.worst = std::max(s.worst, std::abs(o.error()));
        s.most_under = std::min(s.most_under, o.error());
        squares += o.error() * o.error();
    }
    s.count = outcomes.size();
    if (s.count > 0) {
        s.median = median(magnitudes);
        s.rms = std::sqrt(squares / static_cast<double>(s.count));
    }
    return s;
}

std::vector<Outcome> of_set(const std::string& set) {
    std::vector<Outcome> chosen;
    std::ranges::copy_if(outcomes(), std::back_inserter(chosen),
                         [&](const Outcome& o) { return o.set == set; });
    return chosen;
}

// The goal of issue 24 on one set of runs.
void check_goal(const std::string& set, std::size_t min_points) {
    const std::vector<Outcome> chosen = of_set(set);
    BOOST_TEST_REQUIRE(chosen.size() >= min_points, set << ": " << chosen.size() << " points");
    const Summary s = summarize(chosen);
    BOOST_TEST_MESSAGE(set << ": " << s.count << " runs, median |error| " << 100.0 * s.median
                           << " %, worst " << 100.0 * s.worst << " %, most under "
                           << 100.0 * s.most_under << " %, rms " << 100.0 * s.rms << " %");
    for (const Outcome& o : chosen)
        BOOST_TEST(o.error() >= -0.05,
                   o.name << " is under-predicted by more than 5 %: " << 100.0 * o.error() << " %");
    BOOST_TEST(s.median <= 0.02, set << ": median |error| " << 100.0 * s.median << " %");
    BOOST_TEST(s.worst <= 0.08, set << ": worst |error| " << 100.0 * s.worst << " %");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(real_runs)

BOOST_AUTO_TEST_CASE(the_model_meets_the_goal_on_the_calibration_runs) {
    check_goal("calibration", 10);
}

BOOST_AUTO_TEST_CASE(the_model_meets_the_goal_on_the_held_out_runs) {
    check_goal("held_out", 10);
}

BOOST_AUTO_TEST_CASE(the_stated_uncertainty_covers_the_spread_of_every_run) {
    // The standard error each prediction carries is at least the spread of the real set's errors
    // (their root mean square, held-out runs included) times the prediction.
    const Summary all = summarize(outcomes());
    BOOST_TEST_MESSAGE("all: " << all.count << " runs, median |error| " << 100.0 * all.median
                               << " %, worst " << 100.0 * all.worst << " %, rms " << 100.0 * all.rms
                               << " %");
    BOOST_TEST_REQUIRE(all.count >= 32U);
    for (const Outcome& o : outcomes())
        BOOST_TEST(o.std_error_mb >= all.rms * o.predicted_mb * 0.999, o.name);
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
                        "100", "--bf16", "--cpu-offloading"});
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.find("--cpu-offloading changes memory but is not modelled") !=
               std::string::npos);
    const json::object o = json::parse(r.out).as_object();
    BOOST_TEST(o.at("vocab_size").as_int64() == 128);  // 100 padded to a multiple of 128
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace real_runs_tests
