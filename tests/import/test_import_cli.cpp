// 'ppb import' end to end: from the sample logs and configurations to fitted coefficients, and
// the errors a user meets, with exit statuses and what is (not) written.
#include "../common/run_process.hpp"
#include "in_flight.hpp"
#include "scratch.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

using ppb_test::ProcessResult;
using ppb_test::Scratch;
namespace fs = std::filesystem;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace import_cli_tests {

namespace {

const std::string samples = PPB_IMPORT_SAMPLES_DIR;
const std::string ms = samples + "/mindspore";
const std::string mg = samples + "/megatron";
const std::string sapp_init = samples + "/sapp/init_pp4.yaml";

ProcessResult ppb(const std::vector<std::string>& args) {
    return ppb_test::run_process(PPB_EXE, args,
                                 {{"PPB_PLUGIN_PATH", ""}, {"PPB_DEBUG_PLUGINS", ""}});
}

void expect_success(const ProcessResult& r) {
    BOOST_TEST(r.exit_code == 0, "exit status " << r.exit_code << ", stderr: " << r.err);
}

// Exit status 2, nothing on stdout, one "ppb: error:" message naming each part.
void expect_input_error(const ProcessResult& r, std::initializer_list<std::string> parts) {
    BOOST_TEST(r.exit_code == 2, "exit status " << r.exit_code << ", stderr: " << r.err);
    BOOST_TEST(r.out.empty(), "stdout must be empty on failure, got: " << r.out);
    BOOST_TEST(r.err.rfind("ppb: error: ", 0) == 0u, r.err);
    for (const auto& part : parts)
        BOOST_TEST(r.err.find(part) != std::string::npos,
                   "stderr lacks '" << part << "': " << r.err);
}

void expect_in(const std::string& text, std::initializer_list<std::string> parts) {
    for (const auto& part : parts)
        BOOST_TEST(text.find(part) != std::string::npos, "'" << part << "' not in: " << text);
}

// Fits `file` and checks every coefficient against the one the sample was generated from: within
// five standard errors, or 1 % (a fit with few degrees of freedom can have tiny standard errors).
void check_fit(const std::string& file, const std::map<std::string, double>& truth,
               int observations) {
    const ProcessResult r = ppb({"fit", file, "--json"});
    expect_success(r);
    const json::object doc = json::parse(r.out).as_object();
    const json::object& params = doc.at("parameters").as_object();
    const json::object& diag = doc.at("diagnostics").as_object();
    BOOST_TEST(diag.at("rows").to_number<int>() == observations);
    BOOST_TEST(diag.at("not_identifiable").as_array().empty());
    const json::object& errors = diag.at("std_errors_mb").as_object();
    for (const auto& [name, value] : truth) {
        const bool activation = name.rfind("activation_mb.", 0) == 0;
        const json::value& estimate =
            activation ? params.at("activation_mb").at(name.substr(14)) : params.at(name);
        BOOST_TEST_REQUIRE(estimate.is_number(), name << " is not estimated");
        const double e = estimate.to_number<double>();
        const double se = errors.at(name).to_number<double>();
        BOOST_TEST(std::abs(e - value) <= std::max(5 * se, 0.01 * value),
                   name << ": " << e << " vs " << value << " ± " << se);
    }
}

// The coefficients (MB) the sample logs were generated from (samples/data/import/README.md).
const std::map<std::string, double> mindspore_truth = {{"const_mb", 2460},
                                                       {"head_mb", 2210},
                                                       {"tail_mb", 2890},
                                                       {"param_per_layer_mb", 1130},
                                                       {"activation_mb.select", 178},
                                                       {"activation_mb.full", 22}};
const std::map<std::string, double> megatron_truth = {{"const_mb", 640},
                                                      {"head_mb", 1180},
                                                      {"tail_mb", 1520},
                                                      {"param_per_layer_mb", 1730},
                                                      {"activation_mb.none", 1630},
                                                      {"activation_mb.select", 290},
                                                      {"activation_mb.full", 16}};

const std::vector<std::string> megatron_layout = {
    "--pipeline-model-parallel-size", "4", "--num-layers", "32", "--num-microbatches", "32"};

std::vector<std::string> join(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A copy of Megatron log `path` with its memory lines only (no argument dump, no world-size or
// micro-batch line), in `dir`: a log that states nothing about the run.
std::string memory_lines_of(const Scratch& dir, const std::string& path) {
    const std::string text = ppb_test::read_file(path);
    std::string kept;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        const std::string line = text.substr(start, end - start);
        if (line.find("memory (MB)") != std::string::npos)
            kept += line + "\n";
        start = end == std::string::npos ? text.size() : end + 1;
    }
    return dir.write(fs::path(path).filename().string(), kept).string();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(import_cli)

// samples/data/import/sapp/init_pp4.yaml: the coefficients its memories were made from (exact).
const std::map<std::string, double> sapp_truth = {
    {"const_mb", 3100},           {"head_mb", 2400},           {"tail_mb", 3300},
    {"param_per_layer_mb", 1150}, {"activation_mb.none", 410}, {"activation_mb.select", 190},
    {"activation_mb.full", 30}};

BOOST_AUTO_TEST_CASE(sapp_init_to_fitted_coefficients) {
    // ppb import sapp INIT.yaml | ppb fit -
    ProcessResult r = ppb({"import", "sapp", sapp_init});
    expect_success(r);
    expect_in(r.err,
              {"dry run 3 of 3 (config 'A-3')", "stage 1: 8 layers (full 2, select 3, none 3)",
               "imported 8 observations of 3 dry runs (2 ('A-1'), 2 ('A-2'), 4 ('A-3'))"});
    const json::object doc = json::parse(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/1");
    BOOST_TEST(doc.at("num_stages").to_number<int>() == 4);
    BOOST_TEST(doc.at("observations").as_array().size() == 8u);
    const ProcessResult fit =
        ppb_test::run_process(PPB_EXE, {"fit", "-", "--json"},
                              {{"PPB_PLUGIN_PATH", ""}, {"PPB_DEBUG_PLUGINS", ""}}, r.out);
    expect_success(fit);
    const json::object fitted = json::parse(fit.out).as_object();
    for (const auto& [name, value] : sapp_truth) {
        const bool activation = name.rfind("activation_mb.", 0) == 0;
        const json::value& estimate =
            activation ? fitted.at("parameters").at("activation_mb").at(name.substr(14))
                       : fitted.at("parameters").at(name);
        BOOST_TEST(std::abs(estimate.to_number<double>() - value) < 0.5, name);
    }

    // -o, then --append under another label: configs NAME-1 ... NAME-3.
    Scratch dir;
    const std::string out = (dir / "sapp.json").string();
    expect_success(ppb({"import", "sapp", sapp_init, "-o", out, "--label", "S"}));
    r = ppb({"import", "sapp", sapp_init, "--append", out, "--label", "T"});
    expect_success(r);
    expect_in(r.err, {"(appended)"});
    const json::object both = json::parse(ppb_test::read_file(out)).as_object();
    BOOST_TEST(both.at("observations").as_array().size() == 16u);
    BOOST_TEST(both.at("observations").at(0).at("config").as_string() == "S-1");
    BOOST_TEST(both.at("observations").at(15).at("config").as_string() == "T-3");
    check_fit(out, sapp_truth, 16);
}

BOOST_AUTO_TEST_CASE(sapp_input_errors) {
    Scratch dir;
    const std::string bad = dir.write("init.yaml",
                                      "pipeline_config:\n"
                                      "  pipeline_num: 4\n"
                                      "  num_layer: 16\n"
                                      "  offset: [1, 1, 1, -1]\n"
                                      "memory_usage:\n"
                                      "  head_memory: 100\n"
                                      "  tail_memory: 100\n")
                                .string();
    expect_input_error(ppb({"import", "sapp", bad}),
                       {bad + ":4: pipeline_config.offset: the stages hold 5 + 5 + 5 + 3 = 18 "
                              "layers, but num_layer is 16"});
    const std::string broken =
        dir.write("broken.yaml", "pipeline_config: {pipeline_num: 4\n").string();
    expect_input_error(ppb({"import", "sapp", broken}), {broken + ":", "not valid YAML"});
    expect_input_error(ppb({"import", "sapp", (dir / "missing.yaml").string()}), {"missing.yaml"});
}

BOOST_AUTO_TEST_CASE(mindspore_from_logs_to_fitted_coefficients) {
    Scratch dir;
    const std::string out = (dir / "llama13b-dryrun.json").string();
    ProcessResult r = ppb(
        {"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml", ms + "/run_a", "-o", out});
    expect_success(r);
    BOOST_TEST(r.out.empty());
    expect_in(r.err,
              {"ppb: note: layout: 4 stages of 8 ranks (data_parallel 2 x model_parallel 4)",
               "stage 0: 9 layers (full 3, select 6)", "stage 0: ranks 0, 1",
               "imported 4 observations (config 'A', stages 0-3 of 4) from 5 log files to " + out});
    r = ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml", ms + "/run_b",
             "--append", out, "--label", "B"});
    expect_success(r);
    expect_in(r.err, {"no log for stage 2 of the 4-stage pipeline: imported stages 0, 1, 3",
                      "(appended)"});
    check_fit(out, mindspore_truth, 7);

    const json::object doc = json::parse(ppb_test::read_file(out)).as_object();
    BOOST_TEST(doc.at("micro_batches").to_number<int>() == 16);
    const json::object& b0 = doc.at("observations").at(4).as_object();
    BOOST_TEST(b0.at("config").as_string() == "B");
    BOOST_TEST(b0.at("layers").at("full").to_number<int>() == 2);
    BOOST_TEST(b0.at("layers").at("select").to_number<int>() == 6);
}

// An interleaved MindFormers dry run (samples/data/import/mindspore/llama13b_pp4_interleaved.yaml,
// pp 4, 2 chunks per stage) whose logs are made here from the sample's coefficients with the
// in-flight counts ppb::in_flight_counts gives today, appended to the 1F1B dry runs A and B: one
// fit.
BOOST_AUTO_TEST_CASE(mindspore_interleaved_run_joins_the_fit) {
    Scratch dir;
    const std::string out = (dir / "llama13b-dryrun.json").string();
    expect_success(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml",
                        ms + "/run_a", "-o", out}));
    expect_success(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml",
                        ms + "/run_b", "--append", out, "--label", "B"}));

    // Chunk layers per stage [chunk 0, chunk 1], as (select, full), worked out by hand: offsets
    // [[-1, 0, 0, 0], [0, 0, 0, 1]] on 40 // 8 = 5, recompute [[2, 1, 0, 0], [1, 0, 0, 0]],
    // select_recompute everywhere.
    const int layers[4][2][2] = {
        {{2, 2}, {4, 1}}, {{4, 1}, {5, 0}}, {{5, 0}, {5, 0}}, {{5, 0}, {6, 0}}};
    const auto& t = mindspore_truth;
    for (std::uint32_t s = 0; s < 4; ++s) {
        const auto f = ppb_test::interleaved_in_flight(4, s, 16, 2);
        double mb =
            t.at("const_mb") + (s == 0 ? t.at("head_mb") : 0.0) + (s == 3 ? t.at("tail_mb") : 0.0);
        for (int c = 0; c < 2; ++c) {
            const int select = layers[s][c][0];
            const int full = layers[s][c][1];
            mb += t.at("param_per_layer_mb") * (select + full);
            mb += (t.at("activation_mb.select") * select + t.at("activation_mb.full") * full) *
                  f[static_cast<std::size_t>(c)];
        }
        dir.write(fmt::format("run_c/rank_{}/dryrun.log", 8 * s),
                  fmt::format("Used peak memory usage (without fragments): {:.3f}M\n", mb));
    }
    ProcessResult r = ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_interleaved.yaml",
                           (dir / "run_c").string(), "--append", out, "--label", "C"});
    expect_success(r);
    expect_in(r.err, {"2 chunks per stage (interleaved schedule)",
                      "stage 0: chunk 0 4 layers (full 2, select 2), chunk 1 5 layers (full 1, "
                      "select 4)",
                      "was ppb.dryrun/1: it is now ppb.dryrun/2"});
    const json::object doc = json::parse(ppb_test::read_file(out)).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/2");
    const json::object& c0 = doc.at("observations").at(7).as_object();
    BOOST_TEST(c0.at("schedule").as_string() == "interleaved");
    BOOST_TEST(c0.at("chunks").at(1).at("layers").at("select").to_number<int>() == 4);
    check_fit(out, mindspore_truth, 11);

    // Prediction and the fit table work on the chunked file.
    expect_success(ppb({"fit", out}));
    r = ppb({"predict", out, "--stage", "1", "--layers", "select=10"});
    expect_success(r);
    expect_in(r.out, {"Stage 1 of 4 with 10 body layers"});
    r = ppb({"compare", out, "--model", "dryrun-lsq", "--json"});
    expect_success(r);
    const json::object row = json::parse(r.out).at("placements").at(7).as_object();
    BOOST_TEST(row.at("layers").at("select").to_number<int>() == 6);  // 2 + 4 over the chunks
    BOOST_TEST(row.at("chunks").as_array().size() == 2u);
    const auto f = ppb_test::interleaved_in_flight(4, 0, 16, 2);
    BOOST_TEST(row.at("in_flight").at(1).to_number<std::uint32_t>() == f[1]);
    // A chunked file with a mistake: exit 2, naming the JSON path.
    std::string bad = ppb_test::read_file(out);
    bad.replace(bad.find("\"num_chunks\": 2"), 15, "\"num_chunks\": 3");
    const std::string bad_file = dir.write("bad.json", bad).string();
    expect_input_error(ppb({"fit", bad_file}),
                       {bad_file + ": observations[7].chunks: has 2 entries but schedule "
                                   "'interleaved' runs 3 chunks per stage"});
    r = ppb({"compare", out, "--model", "dryrun-lsq"});
    expect_success(r);
    expect_in(r.out, {"2 select, 2 full | 4 select, 1 full", fmt::format("{}/{}", f[0], f[1])});
}

// `ppb partition` prints MindFormers' keys as a block of its training YAML. That block, as the
// configuration file of `ppb import mindspore` (whose key paths are MindFormers': offset under
// model.model_config, the counts under recompute_config), with the pipeline's size and layers
// as flags, gives back every stage's layers and recompute kinds of the plan.
BOOST_AUTO_TEST_CASE(the_printed_mindformers_yaml_reads_back_as_the_plan) {
    Scratch dir;
    const std::string data = samples + "/..";
    const std::vector<std::string> plan_args = {"partition",
                                                "--model-desc",
                                                data + "/llama70b-layers.json",
                                                "--dryrun",
                                                data + "/llama70b-pp8-dryrun.json",
                                                "--stages",
                                                "8",
                                                "--micro-batches",
                                                "32",
                                                "--memory-limit-mb",
                                                "27000",
                                                "--kinds",
                                                "none,select,full"};
    const ProcessResult text = ppb(plan_args);
    expect_success(text);
    std::vector<std::string> json_args = plan_args;
    json_args.emplace_back("--json");
    const ProcessResult plan = ppb(json_args);
    expect_success(plan);
    // The block: the lines under the title, two spaces of indent taken off.
    const std::string title = "MindFormers / SAPP configuration:\n";
    std::size_t at = text.out.find(title);
    BOOST_TEST_REQUIRE(at != std::string::npos, text.out);
    at += title.size();
    std::string yaml;
    while (at < text.out.size() && text.out.compare(at, 2, "  ") == 0) {
        const std::size_t end = text.out.find('\n', at);
        yaml += text.out.substr(at + 2, end - at - 2) + "\n";
        at = end + 1;
    }
    BOOST_TEST(yaml.starts_with("model:\n  model_config:\n    offset: [["), yaml);
    const std::string config = dir.write("plan.yaml", yaml).string();
    for (std::uint32_t s = 0; s < 8; ++s) {
        dir.write(fmt::format("run/rank_{}/dryrun.log", s),
                  fmt::format("Used peak memory usage (without fragments): {}M\n", 20000 + s));
    }
    const ProcessResult imported =
        ppb({"import", "mindspore", "--config", config, "--pipeline-stage", "8", "--num-layers",
             "80", "--micro-batch-num", "32", (dir / "run").string()});
    expect_success(imported);
    const json::array observations = json::parse(imported.out).at("observations").as_array();
    const json::array stages = json::parse(plan.out).at("stages").as_array();
    BOOST_TEST_REQUIRE(observations.size() == stages.size());
    std::size_t recomputed = 0;
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const json::object& observation = observations[s].as_object();
        BOOST_TEST(observation.at("stage").to_number<std::size_t>() == s);
        for (const auto& [kind, n] : stages[s].at("layers").as_object()) {
            const json::value* read = observation.at("layers").as_object().if_contains(kind);
            const std::int64_t imported_n = read == nullptr ? 0 : read->to_number<std::int64_t>();
            BOOST_TEST(imported_n == n.to_number<std::int64_t>(),
                       "stage " << s << " kind " << std::string(kind));
            if (kind != "none")
                recomputed += static_cast<std::size_t>(imported_n);
        }
    }
    BOOST_TEST(recomputed > 0u);  // the plan has recompute counts to read back
}

BOOST_AUTO_TEST_CASE(megatron_from_logs_to_fitted_coefficients) {
    // The logs state every flag (their argument dump, the world-size and micro-batch lines): none
    // is needed, and stderr says where each value comes from.
    Scratch dir;
    const std::string out = (dir / "llama7b-dryrun.json").string();
    const std::string log = mg + "/selective.log";
    ProcessResult r = ppb({"import", "megatron", log, "-o", out});
    expect_success(r);
    BOOST_TEST(r.err ==
               "ppb: note: layout: 4 stages of 2 ranks (world size 8 / "
               "pipeline-model-parallel-size 4), 32 micro-batches; stage 0: 7 layers (select 7); "
               "stage 1: 9 layers (select 9); stage 2: 9 layers (select 9); stage 3: 7 layers "
               "(select 7)\n"
               "ppb: note: --pipeline-model-parallel-size 4 from " +
                   log +
                   ":1\n"
                   "ppb: note: --num-layers 32 from " +
                   log +
                   ":10\n"
                   "ppb: note: --world-size 8 from " +
                   log +
                   ":1\n"
                   "ppb: note: --decoder-first-pipeline-num-layers 7 from " +
                   log +
                   ":5\n"
                   "ppb: note: --decoder-last-pipeline-num-layers 7 from " +
                   log +
                   ":6\n"
                   "ppb: note: --recompute-granularity selective from " +
                   log +
                   ":12\n"
                   "ppb: note: --num-microbatches 32 from " +
                   log +
                   ":18\n"
                   "ppb: note: several ranks per stage: took each stage's largest reading (peak "
                   "memory is what must fit): stage 0: ranks 0, 1; stage 1: ranks 2, 3; stage 2: "
                   "ranks 4, 5; stage 3: ranks 6, 7\n"
                   "ppb: imported 4 observations (config 'A', stages 0-3 of 4) from 1 log file "
                   "to " +
                   out + "\n");
    // The same file as with every flag given as the log states it (and then no flag is noted).
    const std::string flagged = (dir / "flagged.json").string();
    r = ppb(join(
        {"import", "megatron"},
        join(megatron_layout,
             {"--decoder-first-pipeline-num-layers", "7", "--decoder-last-pipeline-num-layers", "7",
              "--recompute-granularity", "selective", "--world-size", "8", log, "-o", flagged})));
    expect_success(r);
    BOOST_TEST(r.err.find(" from " + log) == std::string::npos, r.err);
    BOOST_TEST(ppb_test::read_file(flagged) == ppb_test::read_file(out));

    r = ppb({"import", "megatron", mg + "/full-block.log", "--append", out, "--label", "B"});
    expect_success(r);
    expect_in(r.err, {"stage 1: 10 layers (full 2, none 8)",
                      "--recompute-method block from " + mg + "/full-block.log:13",
                      "--recompute-num-layers 2 from " + mg + "/full-block.log:14"});
    r = ppb({"import", "megatron", mg + "/full-uniform.log", "--append", out, "--label", "C"});
    expect_success(r);
    expect_in(r.err, {"stage 0: 8 layers (full 8)"});
    check_fit(out, megatron_truth, 12);
}

// The issue's cases: a flag the logs contradict is refused naming both values and where each
// comes from, with exit status 2 and nothing written.
BOOST_AUTO_TEST_CASE(megatron_flags_that_contradict_the_logs_exit_2) {
    Scratch dir;
    const std::string out = (dir / "out.json").string();
    const std::string log = mg + "/selective.log";
    const std::string advice =
        ": leave the flag out to take the log's value, or import the logs of the run the flag "
        "describes\n";
    const auto refused = [&](const std::vector<std::string>& flags, const std::string& message) {
        const ProcessResult r = ppb(join(join({"import", "megatron", log, "-o", out}, flags), {}));
        BOOST_TEST(r.exit_code == 2, r.err);
        BOOST_TEST(r.out.empty());
        BOOST_TEST(r.err == "ppb: error: " + message + advice);
        BOOST_TEST(!fs::exists(out));
    };
    refused({"--pipeline-model-parallel-size", "2"},
            "--pipeline-model-parallel-size 2 (command line) contradicts pipeline-model-parallel "
            "size 4 (" +
                log + ":1)");
    refused({"--recompute-granularity", "full", "--recompute-method", "uniform",
             "--recompute-num-layers", "1"},
            "--recompute-granularity full (command line) contradicts recompute_granularity "
            "selective (" +
                log + ":12)");
    refused({"--decoder-first-pipeline-num-layers", "8"},
            "--decoder-first-pipeline-num-layers 8 (command line) contradicts "
            "decoder_first_pipeline_num_layers 7 (" +
                log + ":5)");
    refused({"--num-layers", "40"},
            "--num-layers 40 (command line) contradicts num_layers 32 (" + log + ":10)");
    refused({"--num-microbatches", "16"},
            "--num-microbatches 16 (command line) contradicts 'setting number of microbatches to "
            "constant 32' (" +
                log + ":18)");
    refused({"--world-size", "16"},
            "--world-size 16 (command line) contradicts world size 8 (" + log + ":1)");
    refused({"--recompute-method", "block"},
            "--recompute-method block (command line) contradicts recompute_method None (" + log +
                ":13), unset in that run");

    // Appending: the file is left as it was.
    expect_success(ppb({"import", "megatron", log, "-o", out}));
    const std::string before = ppb_test::read_file(out);
    const ProcessResult r = ppb({"import", "megatron", mg + "/full-block.log", "--append", out,
                                 "--label", "B", "--recompute-granularity", "selective"});
    BOOST_TEST(r.exit_code == 2, r.err);
    BOOST_TEST(ppb_test::read_file(out) == before);

    // Logs of two runs together.
    const ProcessResult both = ppb({"import", "megatron", log, mg + "/full-block.log"});
    BOOST_TEST(both.exit_code == 2);
    BOOST_TEST(both.err == "ppb: error: " + mg +
                               "/full-block.log:5: decoder_first_pipeline_num_layers 6, but " +
                               log +
                               ":5 says decoder_first_pipeline_num_layers 7: are these logs of "
                               "one run?\n");
}

// The old shape of the dump (Megatron-LM's megatron/arguments.py at commit
// 94e2ca575c34593bd66c5c14d09c5c143155d707: 20 dashes, names padded with dots to 32, longer names
// without dots), the world-size line of commit 6ea23928deb0830377cde977e8e3413586b2f7bd and the
// micro-batch line of the time, each line behind torchrun's "[default0]:" prefix.
BOOST_AUTO_TEST_CASE(megatron_old_argument_dump) {
    Scratch dir;
    std::string log =
        "[default0]:using world size: 16, data-parallel-size: 2, tensor-model-parallel size: 2, "
        "pipeline-model-parallel size: 4 \n"
        "[default0]:-------------------- arguments --------------------\n"
        "[default0]:  global_batch_size ............... 32\n"
        "[default0]:  micro_batch_size ................ 1\n"
        "[default0]:  num_layers ...................... 24\n"
        "[default0]:  num_layers_per_virtual_pipeline_stage  3\n"
        "[default0]:  pipeline_model_parallel_size .... 4\n"
        "[default0]:  virtual_pipeline_model_parallel_size  2\n"
        "[default0]:---------------- end of arguments ----------------\n"
        "[default0]:setting number of micro-batches to constant 16\n";
    for (int rank = 0; rank < 16; ++rank) {
        log += fmt::format(
            "[default{}]:[Rank {}] (after 1 iterations) memory (MB) | allocated: 100.0 | max "
            "allocated: {}.0 | reserved: 30000.0 | max reserved: 30000.0\n",
            rank % 8, rank, 20000 + 1000 * (rank / 4));
    }
    const fs::path file = dir.write("old.log", log);
    const ProcessResult r = ppb({"import", "megatron", file.string()});
    expect_success(r);
    expect_in(r.err, {"--num-layers-per-virtual-pipeline-stage 3 from " + file.string() + ":6",
                      "--num-microbatches 16 from " + file.string() + ":10", "4 stages of 4 ranks",
                      "2 chunks per stage (interleaved schedule)"});
    const json::object doc = json::parse(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/2");
    BOOST_TEST(doc.at("micro_batches").to_number<int>() == 16);
    BOOST_TEST(doc.at("num_chunks").to_number<int>() == 2);
    BOOST_TEST(doc.at("observations").at(3).at("peak_memory_mb").to_number<double>() == 23000.0);
}

// MindSpeed-LLM's flags as 'ppb partition' prints them give back the plan's layers per stage
// (and per chunk): --num-layer-list for 1F1B, --noop-layers padding for interleaved.
BOOST_AUTO_TEST_CASE(mindspeed_llm_flags_of_a_plan_import_back) {
    const std::string data = samples + "/..";
    Scratch dir;
    for (const std::vector<std::string>& shape :
         {std::vector<std::string>{"--stages", "8", "--memory-limit-mb", "30000"},
          std::vector<std::string>{"--stages", "4", "--memory-limit-mb", "60000", "--schedule",
                                   "interleaved"}}) {
        ProcessResult r =
            ppb(join({"partition", "--model-desc", data + "/llama70b-layers.json", "--dryrun",
                      data + "/llama70b-pp8-dryrun.json", "--micro-batches", "32",
                      "--recompute-rule", "megatron", "--json"},
                     shape));
        expect_success(r);
        const json::object plan = json::parse(r.out).as_object();
        std::vector<std::string> args = {"import", "megatron", "--num-microbatches", "32"};
        for (const auto& a : plan.at("mindspeed_llm").at("args").as_array())
            args.emplace_back(a.as_string());
        const int stages = plan.at("num_stages").to_number<int>();
        std::string log =
            fmt::format("using world size: {}, pipeline-model-parallel size: {}\n", stages, stages);
        for (int rank = 0; rank < stages; ++rank) {
            log += fmt::format(
                "[Rank {}] (after 1 iterations) memory (MB) | allocated: 1.0 | max "
                "allocated: {}.0 | reserved: 30000.0 | max reserved: 30000.0\n",
                rank, 20000 + rank);
        }
        args.push_back(dir.write("mindspeed.log", log).string());
        r = ppb(args);
        expect_success(r);
        const json::object imported = json::parse(r.out).as_object();
        const json::array& observations = imported.at("observations").as_array();
        BOOST_TEST_REQUIRE(observations.size() == static_cast<std::size_t>(stages));
        for (int s = 0; s < stages; ++s) {
            const json::object& planned = plan.at("stages").at(s).as_object();
            const json::object& o = observations.at(s).as_object();
            // The plan's counts per kind (zeros written out) against the import's (the kinds
            // present): per stage, or per chunk (ppb.dryrun/2 gives a stage's chunks only).
            const auto same = [&](const json::object& want, const json::object& got,
                                  const std::string& what) {
                for (const auto& [kind, n] : want) {
                    const auto* g = got.if_contains(kind);
                    BOOST_TEST((g == nullptr ? 0 : g->to_number<int>()) == n.to_number<int>(),
                               what << " " << kind);
                }
            };
            if (plan.at("num_chunks").to_number<int>() == 1) {
                same(planned.at("layers").as_object(), o.at("layers").as_object(),
                     fmt::format("stage {}", s));
                continue;
            }
            for (const auto& c : planned.at("chunks").as_array()) {
                const int chunk = c.at("chunk").to_number<int>();
                same(c.at("layers").as_object(), o.at("chunks").at(chunk).at("layers").as_object(),
                     fmt::format("stage {} chunk {}", s, chunk));
            }
        }
    }
}

// MindFormers' logs state each stage's layers ("num_layers per stage"): what the configuration
// leaves out is taken from them, and a configuration they contradict is refused.
BOOST_AUTO_TEST_CASE(mindspore_layout_the_logs_state) {
    Scratch dir;
    const std::string out = (dir / "out.json").string();
    const std::string first_log = ms + "/run_a/rank_0/dryrun.log";
    ProcessResult r = ppb({"import", "mindspore", "--data-parallel", "2", "--model-parallel", "4",
                           "--recompute", "[3, 1, 0, 0]", "--select-recompute", "true",
                           "--micro-batch-num", "16", ms + "/run_a", "-o", out});
    expect_success(r);
    expect_in(r.err, {"ppb: note: --pipeline-stage 4 from " + first_log + ":4\n",
                      "ppb: note: --num-layers 40 from " + first_log + ":4\n",
                      "ppb: note: --offset [-1, 0, 0, 1] from " + first_log + ":4\n"});
    // The same observations as from the configuration that ran.
    const ProcessResult from_config =
        ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml", ms + "/run_a"});
    expect_success(from_config);
    BOOST_TEST(json::serialize(json::parse(ppb_test::read_file(out)).at("observations")) ==
               json::serialize(json::parse(from_config.out).at("observations")));

    const std::string b = ms + "/llama13b_pp4_b.yaml";
    r = ppb({"import", "mindspore", "--config", b, ms + "/run_a", "-o", (dir / "b.json").string()});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.out.empty());
    BOOST_TEST(r.err ==
               "ppb: error: the layout gives [8, 11, 11, 10] layers per stage (num_layers "
               "40 // pipeline_stage 4 = 10; offsets from " +
                   b + ":73: model.model_config.offset), but " + first_log +
                   ":4 says 'num_layers per stage: [[9, 10, 10, 11]]': are these the "
                   "logs of this configuration's run?\n");
    BOOST_TEST(!fs::exists(dir / "b.json"));
}

BOOST_AUTO_TEST_CASE(the_dry_run_goes_to_stdout_by_default) {
    const ProcessResult r =
        ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml", "--label", "run-b",
             "--memory", "actual", ms + "/run_b/worker_0.log", ms + "/run_b/worker_8.log"});
    expect_success(r);
    const json::object doc = json::parse(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/1");
    BOOST_TEST(doc.at("num_stages").to_number<int>() == 4);
    expect_in(std::string(doc.at("comment").as_string()),
              {"ppb import mindspore", "llama13b_pp4_b.yaml", "Actual peak memory usage"});
    const json::array& obs = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(obs.size() == 2u);
    BOOST_TEST(obs[0].at("config").as_string() == "run-b");
    BOOST_TEST(obs[0].at("peak_memory_mb").to_number<double>() == 18931.0);  // the 'Actual' line
    expect_in(r.err, {"no log for stages 2, 3", "to stdout"});
}

BOOST_AUTO_TEST_CASE(a_log_missing_the_memory_line) {
    Scratch dir;
    const std::string log = ppb_test::read_file(ms + "/run_b/worker_8.log");
    const fs::path cut = dir.write("worker_8.log", log.substr(0, log.find("Used peak")));
    expect_input_error(
        ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml", cut.string()}),
        {cut.string() + ": no 'Used peak memory usage (without fragments): NNNNM' "
                        "line"});
    const fs::path none = dir.write("megatron.log", "iteration 1/20 | lm loss: 10.8 |\n");
    expect_input_error(ppb(join({"import", "megatron", none.string()}, megatron_layout)),
                       {none.string() + ": no Megatron memory line"});
}

BOOST_AUTO_TEST_CASE(several_memory_lines_take_the_last_and_say_so) {
    Scratch dir;
    const std::string log = ppb_test::read_file(ms + "/run_b/worker_8.log");
    const fs::path twice =
        dir.write("worker_8.log", log + "Used peak memory usage (without fragments): 21000M\n");
    const ProcessResult r =
        ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml", twice.string()});
    expect_success(r);
    BOOST_TEST(
        json::parse(r.out).at("observations").at(0).at("peak_memory_mb").to_number<double>() ==
        21000.0);
    expect_in(r.err, {"ppb: note: " + twice.string() + ": 2 'Used peak memory' lines for rank 8",
                      "took the last, line 17"});
}

// A Megatron interleaved run (4 layers per virtual stage: 2 chunks of 4 per stage, selective
// recompute), its memory lines made here from the sample's coefficients with the host's
// in-flight counts, appended to the three 1F1B runs of the sample: one fit.
BOOST_AUTO_TEST_CASE(megatron_interleaved_run_joins_the_fit) {
    Scratch dir;
    const std::string out = (dir / "llama7b-dryrun.json").string();
    expect_success(ppb(join(
        {"import", "megatron"},
        join(megatron_layout,
             {"--decoder-first-pipeline-num-layers", "7", "--decoder-last-pipeline-num-layers", "7",
              "--recompute-granularity", "selective", mg + "/selective.log", "-o", out}))));
    expect_success(
        ppb(join({"import", "megatron"},
                 join(megatron_layout,
                      {"--num-layers-in-first-pipeline-stage", "6",
                       "--num-layers-in-last-pipeline-stage", "6", "--recompute-granularity",
                       "full", "--recompute-method", "block", "--recompute-num-layers", "2",
                       mg + "/full-block.log", "--append", out, "--label", "B"}))));
    std::string log;
    const auto& t = megatron_truth;
    for (std::uint32_t rank = 0; rank < 8; ++rank) {
        const std::uint32_t s = rank / 2;
        const auto f = ppb_test::interleaved_in_flight(4, s, 32, 2);
        const double mb = t.at("const_mb") + (s == 0 ? t.at("head_mb") : 0.0) +
                          (s == 3 ? t.at("tail_mb") : 0.0) + 8 * t.at("param_per_layer_mb") +
                          t.at("activation_mb.select") * 4 * (f[0] + f[1]);
        log += fmt::format(
            "[Rank {}] (after 1 iterations) memory (MB) | allocated: 100.0 | max allocated: "
            "{:.3f} | reserved: {:.1f} | max reserved: {:.1f}\n",
            rank, mb, mb + 500, mb + 500);
    }
    ProcessResult r =
        ppb(join({"import", "megatron"},
                 join(megatron_layout,
                      {"--num-layers-per-virtual-pipeline-stage", "4", "--recompute-granularity",
                       "selective", "--world-size", "8", dir.write("interleaved.log", log).string(),
                       "--append", out, "--label", "V"})));
    expect_success(r);
    expect_in(r.err, {"2 chunks per stage (interleaved schedule)",
                      "stage 0: chunk 0 4 layers (select 4), chunk 1 4 layers (select 4)"});
    const json::object doc = json::parse(ppb_test::read_file(out)).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/2");
    BOOST_TEST(doc.at("observations").at(8).at("num_chunks").to_number<int>() == 2);
    check_fit(out, megatron_truth, 12);

    // Bad virtual-pipeline flags are usage errors.
    r = ppb(join({"import", "megatron"},
                 join(megatron_layout, {"--num-layers-per-virtual-pipeline-stage", "3",
                                        "--world-size", "8", dir.write("x.log", log).string()})));
    BOOST_TEST(r.exit_code == 2, r.err);
    expect_in(r.err, {"--num-layers-per-virtual-pipeline-stage 3 does not divide the 8 layers"});
}

BOOST_AUTO_TEST_CASE(configurations_that_do_not_describe_a_layout) {
    Scratch dir;
    const std::string config = ppb_test::read_file(ms + "/llama13b_pp4_a.yaml");
    const auto with = [&](const std::string& from, const std::string& to) {
        std::string text = config;
        text.replace(text.find(from), from.size(), to);
        return dir.write("cfg.yaml", text).string();
    };
    std::string cfg = with("offset: [-1, 0, 0, 1]", "offset: [-1, 0, 0, 0]");
    expect_input_error(ppb({"import", "mindspore", "--config", cfg, ms + "/run_a"}),
                       {cfg + ":", "model.model_config.offset", "9 + 10 + 10 + 10 = 39 layers",
                        "num_layers is 40"});
    cfg = with("recompute: [3, 1, 0, 0]", "recompute: [3, 1, 0]");
    expect_input_error(ppb({"import", "mindspore", "--config", cfg, ms + "/run_a"}),
                       {cfg + ":",
                        "recompute_config.recompute: has 3 entries but the pipeline "
                        "has 4 stages"});
    cfg = with("offset: [-1, 0, 0, 1]", "offset: [[-1, 0, 0, 1], [0, 0, 0, 0]]");
    expect_input_error(ppb({"import", "mindspore", "--config", cfg, ms + "/run_a"}),
                       {"model.model_config.offset: has 2 rows (one per pipeline chunk) but the "
                        "layout has one chunk per stage"});
    cfg = with("model_parallel: 4", "model_parallel: 2");  // ranks 16 and 24 are beyond 4 x 4
    expect_input_error(ppb({"import", "mindspore", "--config", cfg, ms + "/run_a"}),
                       {"rank_16/dryrun.log:15: rank 16 is not a rank of this job",
                        "4 stages x 4 ranks per stage (data_parallel 2 x model_parallel 2)"});
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8) {
    Scratch dir;
    const std::string log = ppb_test::read_file(ms + "/run_b/worker_8.log");
    // A GBK line elsewhere in the log is fine.
    const fs::path gbk = dir.write("a/worker_8.log", "\xD1\xB5\xC1\xB7\xBF\xAA\xCA\xBC\n" + log);
    expect_success(
        ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml", gbk.string()}));
    // On the memory line it is an error naming file and line.
    std::string broken = log;
    broken.insert(broken.find("Used peak"), "\xFF");
    const fs::path bad = dir.write("b/worker_8.log", broken);
    expect_input_error(
        ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml", bad.string()}),
        {bad.string() + ":15: the memory line holds a byte that is not UTF-8"});
    const fs::path cfg = dir.write("cfg.yaml", "parallel_config:\n  pipeline_stage: 4 # \xB7\n");
    expect_input_error(ppb({"import", "mindspore", "--config", cfg.string(), gbk.string()}),
                       {cfg.string() + ":2: not UTF-8 text"});
}

BOOST_AUTO_TEST_CASE(ranks_given_on_the_command_line) {
    Scratch dir;
    const fs::path plain =
        dir.write("stage3.log", ppb_test::read_file(ms + "/run_b/worker_24.log"));
    expect_input_error(
        ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml", plain.string()}),
        {"cannot tell which rank wrote this log", "--rank " + plain.string() + "=ID"});
    const ProcessResult r = ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml",
                                 plain.string(), "--rank", plain.string() + "=31"});
    expect_success(r);
    BOOST_TEST(json::parse(r.out).at("observations").at(0).at("stage").to_number<int>() == 3);
}

BOOST_AUTO_TEST_CASE(usage_mistakes) {
    // The hint names the command whose --help to read.
    const auto usage = [](const ProcessResult& r, std::initializer_list<std::string> parts,
                          const std::string& command = "ppb import mindspore") {
        expect_input_error(r, parts);
        BOOST_TEST(r.err.find("Try '" + command + " --help'") != std::string::npos, r.err);
    };
    // --append wants an existing dry-run file.
    Scratch dir;
    const std::string existing = dir.write("existing.json", "{}").string();
    usage(ppb({"import"}), {"missing the log format"}, "ppb import");
    usage(ppb({"import", "pytorch"}),
          {"unknown log format 'pytorch' (expected mindspore, megatron, megatron-options, "
           "mindformers-options, torchtitan-options, sapp, snapshot, torchtitan)"},
          "ppb import");
    usage(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml"}),
          {"LOG is required"});
    // Logs that state no layout (memory lines only), and no configuration.
    const std::string bare_ms =
        dir.write("bare/rank_0/dryrun.log", "Used peak memory usage (without fragments): 19738M\n")
            .string();
    usage(ppb({"import", "mindspore", bare_ms}), {"missing --pipeline-stage P"});
    usage(ppb({"import", "mindspore", "--memory", "peak", ms + "/run_a"}),
          {"--memory: peak not in {used,actual}"});
    usage(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml", "--append", existing,
               ms + "/run_a"}),
          {"--append requires --label"});
    usage(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml", "--append", existing,
               "--label", "B", "-o", "y.json", ms + "/run_a"}),
          {"--output excludes --append"});
    usage(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml", "--append",
               "no-such-dryrun.json", "--label", "B", ms + "/run_a"}),
          {"--append: no such file 'no-such-dryrun.json'", "-o FILE"});
    usage(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml", "--offset", "[1, 0]",
               ms + "/run_a"}),
          {"--offset: has 2 entries but the pipeline has 4 stages"});
    // A log that states none of the run's arguments: the flags say the layout.
    const std::string bare = memory_lines_of(dir, mg + "/selective.log");
    usage(ppb(join({"import", "megatron", bare}, {"--num-layers", "32"})),
          {"missing --pipeline-model-parallel-size P (the logs state none of the run's "
           "arguments)"},
          "ppb import megatron");
    usage(ppb(join(
              {"import", "megatron", bare, "--recompute-granularity", "full", "--world-size", "8"},
              megatron_layout)),
          {"needs --recompute-method uniform or block"}, "ppb import megatron");
    usage(ppb(join({"import", "megatron", mg + "/selective.log", "--memory", "peak"},
                   megatron_layout)),
          {"--memory: peak not in {max-allocated,allocated,reserved,max-reserved}"},
          "ppb import megatron");
}

BOOST_AUTO_TEST_CASE(help_says_which_memory_figure_is_the_default) {
    ProcessResult r = ppb({"import", "--help"});
    expect_success(r);
    expect_in(r.out, {"ppb import mindspore", "ppb import megatron"});
    r = ppb({"import", "mindspore", "--help"});
    expect_success(r);
    expect_in(r.out, {"--memory FIGURE:{used,actual}=used", "--select-comm-recompute"});
    r = ppb({"import", "megatron", "-h"});
    expect_success(r);
    expect_in(r.out, {"=max-allocated", "--decoder-first-pipeline-num-layers"});
}

BOOST_AUTO_TEST_CASE(a_failed_import_writes_nothing) {
    Scratch dir;
    const std::string out = (dir / "out.json").string();
    const fs::path cut = dir.write("worker_8.log", "nothing\n");
    expect_input_error(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml",
                            cut.string(), "-o", out}),
                       {"no 'Used peak"});
    BOOST_TEST(!fs::exists(out));

    expect_success(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_a.yaml",
                        ms + "/run_a", "-o", out}));
    const std::string before = ppb_test::read_file(out);
    expect_input_error(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml",
                            ms + "/run_b", "--append", out, "--label", "A"}),
                       {out + ": observations[0] already has config 'A'"});
    expect_input_error(ppb({"import", "mindspore", "--config", ms + "/llama13b_pp4_b.yaml",
                            cut.string(), "--append", out, "--label", "B"}),
                       {"no 'Used peak"});
    BOOST_TEST(ppb_test::read_file(out) == before);
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path()))
        ++entries;
    BOOST_TEST(entries == 2u);  // out.json and the log: no temporary file left behind
}

// The words after '--' reach Megatron-LM's argument reader as written: a bracketed one is not
// CLI11's list syntax ("[0,1]" would lose its brackets and become two arguments).
BOOST_AUTO_TEST_CASE(megatron_options_takes_the_words_after_the_terminator_verbatim) {
    std::vector<std::string> args = {"import",
                                     "megatron-options",
                                     "--world-size",
                                     "1",
                                     "--",
                                     "--num-layers",
                                     "2",
                                     "--hidden-size",
                                     "64",
                                     "--num-attention-heads",
                                     "4",
                                     "--seq-length",
                                     "128",
                                     "--max-position-embeddings",
                                     "128",
                                     "--micro-batch-size",
                                     "1",
                                     "--vocab-size",
                                     "1000",
                                     "--num-experts",
                                     "4",
                                     "--moe-router-topk",
                                     "1",
                                     "--moe-layer-freq",
                                     "[0,1]",
                                     "--recompute-granularity",
                                     "selective",
                                     "--recompute-modules",
                                     "[moe_act mlp]",
                                     "--moe-grouped-gemm"};
    const ProcessResult r = ppb(args);
    expect_success(r);
    const json::object o = json::parse(r.out).as_object();
    // Megatron-LM's moe_freq_type evaluates "[0,1]": layer 1 alone is an MoE layer.
    BOOST_TEST(json::serialize(o.at("moe").as_object().at("layer_freq")) == "[0,1]");
    // The YAML list is the words Megatron-LM's test harness passes.
    BOOST_TEST(json::serialize(o.at("recompute_modules")) == R"(["moe_act","mlp"])");
}

// A run configuration's MODEL_ARGS (Megatron-LM's functional tests' model_config.yaml) give the
// options the same flags give after '--', read as Megatron-LM's launcher passes them; flags
// after '--' come after the file's (argparse keeps the last); the entries left out are said.
BOOST_AUTO_TEST_CASE(megatron_options_reads_a_run_configuration_as_megatron_launches_it) {
    const std::string config =
        std::string(PPB_MEGATRON_DATA_DIR) + "/moe-offload-model-config.yaml";
    const std::map<std::string, std::string> environment = {
        {"PPB_PLUGIN_PATH", ""}, {"DATA_PATH", "/data"}, {"CHECKPOINT_SAVE_PATH", "/ckpt"}};
    const auto run = [&](std::vector<std::string> more) {
        std::vector<std::string> args = {"import", "megatron-options", "--world-size", "16"};
        args.insert(args.end(), more.begin(), more.end());
        return ppb_test::run_process(PPB_EXE, args, environment);
    };
    const ProcessResult from_file = run({"--model-config", config});
    expect_success(from_file);
    // The words Megatron-LM's launcher gives the file's entries (true: the flag alone; "[...]":
    // the words inside; '|' and parentheses: one word; false and "": left out).
    const std::vector<std::string> words = {"--",
                                            "--tensor-model-parallel-size",
                                            "2",
                                            "--pipeline-model-parallel-size",
                                            "2",
                                            "--expert-model-parallel-size",
                                            "4",
                                            "--context-parallel-size",
                                            "1",
                                            "--expert-tensor-parallel-size",
                                            "1",
                                            "--use-distributed-optimizer",
                                            "--attention-backend",
                                            "unfused",
                                            "--sequence-parallel",
                                            "--disable-bias-linear",
                                            "--micro-batch-size",
                                            "1",
                                            "--global-batch-size",
                                            "8",
                                            "--recompute-granularity",
                                            "selective",
                                            "--recompute-modules",
                                            "layernorm",
                                            "mla_up_proj",
                                            "mlp",
                                            "moe_act",
                                            "--fine-grained-activation-offloading",
                                            "--offload-modules",
                                            "expert_fc1",
                                            "moe_act",
                                            "attn_norm",
                                            "mlp_norm",
                                            "qkv_linear",
                                            "core_attn",
                                            "attn_proj",
                                            "--transformer-impl",
                                            "transformer_engine",
                                            "--seq-length",
                                            "4096",
                                            "--data-path",
                                            "/data/text/my-gpt3_00_text_document",
                                            "--vocab-file",
                                            "/data/bpe/vocab.json",
                                            "--merge-file",
                                            "/data/bpe/merges.txt",
                                            "--num-layers",
                                            "15",
                                            "--moe-layer-freq",
                                            "([0]*3+[1]*12)",
                                            "--pipeline-model-parallel-layout",
                                            "Et*3|(tt|)*6mL",
                                            "--hidden-size",
                                            "1024",
                                            "--ffn-hidden-size",
                                            "4096",
                                            "--num-attention-heads",
                                            "32",
                                            "--kv-channels",
                                            "128",
                                            "--max-position-embeddings",
                                            "4096",
                                            "--position-embedding-type",
                                            "rope",
                                            "--make-vocab-size-divisible-by",
                                            "3232",
                                            "--normalization",
                                            "RMSNorm",
                                            "--swiglu",
                                            "--untie-embeddings-and-output-weights",
                                            "--multi-latent-attention",
                                            "--mtp-num-layers",
                                            "1",
                                            "--qk-layernorm",
                                            "--num-experts",
                                            "32",
                                            "--moe-ffn-hidden-size",
                                            "1024",
                                            "--moe-shared-expert-intermediate-size",
                                            "1024",
                                            "--moe-router-topk",
                                            "4",
                                            "--moe-token-dispatcher-type",
                                            "alltoall",
                                            "--moe-grouped-gemm",
                                            "--moe-router-dtype",
                                            "fp32",
                                            "--moe-permute-fusion",
                                            "--q-lora-rank",
                                            "1536",
                                            "--kv-lora-rank",
                                            "512",
                                            "--qk-head-dim",
                                            "128",
                                            "--qk-pos-emb-head-dim",
                                            "64",
                                            "--v-head-dim",
                                            "128",
                                            "--save",
                                            "/ckpt",
                                            "--bf16",
                                            "--overlap-moe-expert-parallel-comm"};
    const ProcessResult from_flags = run(words);
    expect_success(from_flags);
    BOOST_TEST(from_file.out == from_flags.out);
    const json::object o = json::parse(from_file.out).as_object();
    BOOST_TEST(json::serialize(o.at("recompute_modules")) ==
               R"(["layernorm","mla_up_proj","mlp","moe_act"])");
    BOOST_TEST(o.at("moe").at("first_k_dense").to_number<int>() == 3);
    expect_in(from_file.err,
              {"moe-offload-model-config.yaml: false leaves --log-params-norm out, as "
               "Megatron-MoE-ModelZoo's runner does",
               "moe-offload-model-config.yaml:63: MODEL_ARGS.--tensorboard-dir: an empty value "
               "leaves the flag out"});
    // After '--', after the file's: the last micro-batch size is the run's.
    const ProcessResult later = run({"--model-config", config, "--", "--micro-batch-size", "2"});
    expect_success(later);
    BOOST_TEST(json::parse(later.out).at("micro_batch_size").to_number<int>() == 2);
    // Bad files, named with their line.
    Scratch dir;
    expect_input_error(
        run({"--model-config",
             dir.write("list.yaml", "MODEL_ARGS:\n  --num-layers: [1, 2]\n").string()}),
        {"list.yaml:2: MODEL_ARGS.--num-layers: expected one value, got a list"});
    expect_input_error(run({"--model-config", dir.write("none.yaml", "ENV_VARS: {}\n").string()}),
                       {"none.yaml: no MODEL_ARGS"});
    expect_input_error(run({"--model-config", (dir.path() / "missing.yaml").string()}),
                       {"missing.yaml: cannot read"});
    const ProcessResult neither = ppb({"import", "megatron-options", "--world-size", "1"});
    BOOST_TEST(neither.exit_code == 2);
    BOOST_TEST(neither.err.find("give them after '--', or --model-config FILE") !=
               std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(import_cli_moe)

namespace {

// The counts of one "layers" object of a ppb.dryrun/3 observation: {group: {kind: n}}, as text
// in a fixed order for comparison: "dense: none 1, full 1; moe: none 2".
std::string group_counts(const json::object& layers) {
    std::string text;
    for (const auto& [group, kinds] : layers) {
        text += (text.empty() ? "" : "; ") + std::string(group) + ":";
        bool first = true;
        for (const char* kind : {"none", "select", "comm", "both", "full"}) {
            if (const auto* n = kinds.as_object().if_contains(kind)) {
                text += fmt::format("{} {} {}", first ? "" : ",", kind, n->to_number<int>());
                first = false;
            }
        }
    }
    return text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(megatron_deepseek_like_writes_layers_per_group) {
    Scratch dir;
    const std::string out = (dir / "moe.json").string();
    const ProcessResult r = ppb({"import",
                                 "megatron",
                                 mg + "/moe-block.log",
                                 "--pipeline-model-parallel-size",
                                 "4",
                                 "--num-layers",
                                 "16",
                                 "--num-microbatches",
                                 "16",
                                 "--num-experts",
                                 "8",
                                 "--moe-layer-freq",
                                 "[0]*2+[1]*14",
                                 "--recompute-granularity",
                                 "full",
                                 "--recompute-method",
                                 "block",
                                 "--recompute-num-layers",
                                 "1",
                                 "-o",
                                 out});
    expect_success(r);
    expect_in(r.err, {"MoE: 2 dense and 14 MoE layers",
                      "stage 0: 4 layers (full 1, none 3) [dense 2 (full 1, none 1), moe 2 "
                      "(none 2)]"});
    const json::object doc = json::parse(ppb_test::read_file(out)).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/3");
    BOOST_TEST(json::serialize(doc.at("groups")) == R"(["dense","moe"])");
    const auto& observations = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(observations.size() == 4u);
    const std::vector<std::string> expected = {"dense: none 1, full 1; moe: none 2",
                                               "moe: none 3, full 1", "moe: none 3, full 1",
                                               "moe: none 3, full 1"};
    const std::vector<double> peaks = {37231.4, 38185.3, 32497.9, 28330.2};
    for (std::size_t s = 0; s < 4; ++s) {
        const json::object& o = observations[s].as_object();
        BOOST_TEST(o.at("stage").to_number<int>() == static_cast<int>(s));
        BOOST_TEST(group_counts(o.at("layers").as_object()) == expected[s]);
        BOOST_TEST(o.at("peak_memory_mb").to_number<double>() == peaks[s]);
    }
}

BOOST_AUTO_TEST_CASE(mindspore_moe_config_writes_layers_per_group) {
    Scratch dir;
    const std::string out = (dir / "moe.json").string();
    const ProcessResult r = ppb({"import", "mindspore", "--config",
                                 ms + "/deepseek_like_pp4_moe.yaml", ms + "/run_moe", "-o", out});
    expect_success(r);
    expect_in(r.err, {"MoE: the first 4 layers dense (first_k_dense_replace), the other 12 MoE"});
    const json::object doc = json::parse(ppb_test::read_file(out)).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/3");
    BOOST_TEST(json::serialize(doc.at("groups")) == R"(["dense","moe"])");
    const auto& observations = doc.at("observations").as_array();
    BOOST_TEST_REQUIRE(observations.size() == 4u);
    const std::vector<std::string> expected = {"dense: none 1, full 2",
                                               "dense: full 1; moe: none 2, select 1",
                                               "moe: none 4", "moe: none 5"};
    const std::vector<double> peaks = {10481, 19908, 23187, 28044};
    for (std::size_t s = 0; s < 4; ++s) {
        const json::object& o = observations[s].as_object();
        BOOST_TEST(group_counts(o.at("layers").as_object()) == expected[s]);
        BOOST_TEST(o.at("peak_memory_mb").to_number<double>() == peaks[s]);
    }
}

BOOST_AUTO_TEST_CASE(contradictory_moe_settings_exit_2) {
    // Flags against flags: a log that states no argument.
    Scratch dir;
    const std::vector<std::string> layout = {"import",
                                             "megatron",
                                             memory_lines_of(dir, mg + "/moe-block.log"),
                                             "--pipeline-model-parallel-size",
                                             "4",
                                             "--num-layers",
                                             "16",
                                             "--world-size",
                                             "8"};
    expect_input_error(ppb(join(layout, {"--moe-layer-freq", "[0]*2+[1]*14"})),
                       {"--moe-layer-freq describes MoE layers, but --num-experts is not given"});
    expect_input_error(
        ppb(join(layout, {"--num-experts", "8", "--moe-layer-freq", "[0]*2+[1]*13"})),
        {"--moe-layer-freq '[0]*2+[1]*13' gives 15 layers, but --num-layers is 16"});
    expect_input_error(ppb(join(layout, {"--num-experts", "8", "--first-k-dense-replace", "16"})),
                       {"--first-k-dense-replace 16 leaves no MoE layer"});
    expect_input_error(ppb(join(layout, {"--num-experts", "8", "--moe-layer-freq", "[0]*16"})),
                       {"makes no layer an MoE layer, but --num-experts 8 is given"});
    expect_input_error(
        ppb(join(layout, {"--num-experts", "8", "--moe-layer-freq", "list(range(16))"})),
        {"--moe-layer-freq 'list(range(16))': expected '[' or '(' at character 1"});
    // Against the log's argument dump (num_experts 8, moe_layer_freq [0, 0, 1, ...]).
    expect_input_error(
        ppb({"import", "megatron", mg + "/moe-block.log", "--moe-layer-freq", "[0]*3+[1]*13"}),
        {"--moe-layer-freq '[0]*3+[1]*13' (command line) contradicts "
         "moe_layer_freq [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1] (" +
         mg + "/moe-block.log:7)"});
    expect_input_error(ppb({"import", "mindspore", "--config", ms + "/deepseek_like_pp4_moe.yaml",
                            ms + "/run_moe", "--first-k-dense-replace", "16"}),
                       {"--first-k-dense-replace: 16 dense layers leave no MoE layer of the "
                        "model's 16, but expert_num is 8"});
    expect_input_error(ppb({"import", "mindspore", "--config", ms + "/deepseek_like_pp4_moe.yaml",
                            ms + "/run_moe", "--expert-num", "1", "--num-experts-chosen", "1"}),
                       {"moe_config.first_k_dense_replace: 4 dense layers before the MoE layers, "
                        "but expert_num is 1 (--expert-num)"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace import_cli_tests
