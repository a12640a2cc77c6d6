// SAPP layer files as SAPP ships and writes them, end to end: partitioning with a SAPP-shaped
// file, warnings for unknown keys, refusals (exit 2), and ppb fit --export-sapp checked against
// SAPP's own memory formula over a grid of placements.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_sapp_tests {

namespace {

const std::string sapp_file = std::string(PPB_SAMPLES_DIR) + "/sapp/llama-layers.json";

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The SAPP file with `edit` applied to its JSON.
template <class Edit>
std::string edited_sapp_file(const std::string& name, Edit edit) {
    json::object doc = parse_json(read_all(sapp_file)).as_object();
    edit(doc);
    return write_file(json::serialize(doc), name);
}

std::vector<std::string> partition_args(const std::string& desc, std::vector<std::string> extra) {
    std::vector<std::string> args = {"partition", "--model-desc",    desc, "--stages",
                                     "8",         "--micro-batches", "32", "--memory-limit-mb",
                                     "60000",     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// --- SAPP's memory formula (its solver's memory constraint), written out independently.
// Memory of stage s of p (one chunk per stage): the BODY's memory_parameter per layer placed,
// HEAD memory_parameter on stage 0 and TAIL memory_parameter on the last stage (each entry's
// value as given, once), each recompute kind's activation memory per layer times SAPP's
// activation count for the stage, and stage_const_mem on every stage.
constexpr std::array<const char*, 5> kinds = {"none", "select", "comm", "both", "full"};
constexpr std::array<const char*, 5> sapp_activation_keys = {
    "memory_activation", "memory_select_rec", "memory_select_comm", "memory_both_comm_select",
    "memory_recompute"};

// SAPP's activation counts: without interleaving p - s; with v chunks, p for every chunk,
// plus max(0, p - 2s - 1) on the first and min(0, p - 2s - 1) on the last, capped at m.
std::uint32_t sapp_activation_count(std::uint32_t p, std::uint32_t s, std::uint32_t v,
                                    std::uint32_t m, std::uint32_t chunk) {
    if (v == 1)
        return p - s;
    std::int64_t n = p;
    const std::int64_t d = static_cast<std::int64_t>(p) - 2 * static_cast<std::int64_t>(s) - 1;
    if (chunk == 0)
        n += std::max<std::int64_t>(0, d);
    if (chunk == v - 1)
        n += std::min<std::int64_t>(0, d);
    return static_cast<std::uint32_t>(std::min<std::int64_t>(n, m));
}

double sapp_stage_memory(const json::object& file, std::uint32_t p, std::uint32_t s,
                         const std::array<std::uint32_t, 5>& layers, std::uint32_t activations) {
    double memory =
        file.contains("stage_const_mem") ? file.at("stage_const_mem").to_number<double>() : 0.0;
    for (const auto& e : file.at("layers_description").as_array()) {
        const auto& entry = e.as_object();
        const std::string type(entry.at("type").as_string());
        const double param = entry.contains("memory_parameter")
                                 ? entry.at("memory_parameter").to_number<double>()
                                 : 0.0;
        if (type == "HEAD" && s == 0)
            memory += param;
        if (type == "TAIL" && s == p - 1)
            memory += param;
        if (type != "BODY")
            continue;
        for (std::size_t k = 0; k < kinds.size(); ++k) {
            if (layers[k] == 0)
                continue;
            memory += layers[k] * param;
            memory +=
                layers[k] * entry.at(sapp_activation_keys[k]).to_number<double>() * activations;
        }
    }
    return memory;
}

struct GridPoint {
    std::uint32_t p;
    std::uint32_t s;
    std::array<std::uint32_t, 5> layers;
    std::uint32_t in_flight;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_sapp)

BOOST_AUTO_TEST_CASE(a_sapp_shaped_file_partitions_with_every_model) {
    const auto lsq =
        ppb(partition_args(sapp_file, {"--model", "dryrun-lsq", "--dryrun", sample_dryrun}));
    const auto table =
        ppb(partition_args(sapp_file, {"--model", "table", "--model-options", sapp_file}));
    const auto analytic =
        ppb(partition_args(sapp_file, {"--model", "analytic", "--model-options",
                                       std::string(PPB_SAMPLES_DIR) + "/llama70b-shape.json"}));
    for (const auto* run : {&lsq, &table, &analytic}) {
        BOOST_TEST_REQUIRE(run->exit_code == 0, run->err);
        BOOST_TEST(!has(run->err, "warning"), run->err);  // every key is SAPP's
        const auto plan = parse_json(run->out);
        BOOST_TEST(plan.at("num_layers").to_number<int>() == 80);
        BOOST_TEST(plan.at("stages").as_array().size() == 8u);
    }
    // The table reads stage_const_mem as its constant: every stage carries 3072 MB of it.
    const auto report = ppb({"compare", "--partition", write_file(table.out, "plan.json"),
                             "--model", "table=" + sapp_file, "--json"});
    BOOST_TEST(report.exit_code == 0, report.err);
}

BOOST_AUTO_TEST_CASE(unknown_keys_warn_with_did_you_mean) {
    const std::string file = edited_sapp_file("unknown-keys.json", [](json::object& doc) {
        doc["stage_const_memory"] = 1;  // a typo
        doc["sapp_version"] = "2.0";    // a key of a newer SAPP
        doc["layers_description"].as_array()[1].as_object()["memory_activations"] = 5;
    });
    const auto r = ppb(partition_args(file, {"--model", "table", "--model-options", file}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(has(r.err, "ppb: warning: " + file +
                              ": unknown field 'stage_const_memory' is ignored (neither SAPP nor "
                              "ppb knows it; did you mean 'stage_const_mem'?"),
               r.err);
    BOOST_TEST(has(r.err, "ppb: warning: " + file + ": unknown field 'sapp_version' is ignored"),
               r.err);
    BOOST_TEST(has(r.err, file + ": layers_description[1]: unknown field 'memory_activations' is "
                                 "ignored (neither SAPP nor ppb knows it; did you mean "
                                 "'memory_activation'?"),
               r.err);
    // Printed once, by the reader of --model-desc (the table model, reading the same file as its
    // options, keeps them in its report's diagnostics.warnings: tests/table).
    BOOST_TEST(r.err.find("'sapp_version'") == r.err.rfind("'sapp_version'"), r.err);
}

BOOST_AUTO_TEST_CASE(auto_partition_layer_disagreeing_warns) {
    // SAPP's auto_partition_layer names what its timeline analyser looks for: a count that
    // disagrees with the BODY entries is told on stderr, and the entries are planned.
    const std::string file = edited_sapp_file("disagree.json", [](json::object& doc) {
        doc["auto_partition_layer"].as_object()["LLamaDecodeLayer"] = 96;
    });
    const auto r = ppb(partition_args(file, {"--model", "dryrun-lsq", "--dryrun", sample_dryrun}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(has(r.err, "ppb: warning: " + file +
                              ": auto_partition_layer.LLamaDecodeLayer: 96 layers, but the BODY "
                              "entries named \"LLamaDecodeLayer\" have 80 in all: ppb plans with "
                              "the entries' nb_layer"),
               r.err);
    BOOST_TEST(parse_json(r.out).at("num_layers").to_number<int>() == 80);
    const std::string staged = edited_sapp_file("staged.json", [](json::object& doc) {
        doc["pre_defined_layer"].as_object()["LlamaRMSNorm"] = 3;
    });
    expect_input_error(
        ppb(partition_args(staged, {"--model", "dryrun-lsq", "--dryrun", sample_dryrun})),
        {"pre_defined_layer.LlamaRMSNorm: stage 3 is not supported"});
}

BOOST_AUTO_TEST_CASE(an_encoder_decoder_file_partitions_in_model_order) {
    const std::string file = edited_sapp_file("encoder-decoder.json", [](json::object& doc) {
        auto& list = doc["layers_description"].as_array();
        json::object encoder = list[1].as_object();
        encoder["name"] = "EncoderLayer";
        encoder["nb_layer"] = 24;
        list.insert(list.begin() + 1, encoder);
        doc.erase("auto_partition_layer");
    });
    // Two stacks, 24 encoder then 80 decoder layers: each stage a contiguous range, the encoder
    // layers on the first stages, the stage straddling the boundary holding both.
    const auto r = ppb(partition_args(file, {"--model", "table", "--model-options", file}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("num_layers").as_int64() == 104);
    std::int64_t next = 0;
    std::int64_t encoder_seen = 0;
    for (const auto& value : doc.at("stages").as_array()) {
        const auto& stage = value.as_object();
        const auto& groups = stage.at("groups").as_object();
        const auto count = [&](const char* group) {
            std::int64_t n = 0;
            for (const auto& kind : groups.at(group).as_object())
                n += kind.value().as_int64();
            return n;
        };
        BOOST_TEST(stage.at("first_layer").as_int64() == next);
        // Layers next .. next + n - 1: those below 24 are encoder layers.
        const std::int64_t n = count("EncoderLayer") + count("LLamaDecodeLayer");
        const std::int64_t encoder =
            std::max<std::int64_t>(0, std::min<std::int64_t>(24, next + n) - next);
        BOOST_TEST(count("EncoderLayer") == encoder);
        BOOST_TEST(stage.at("memory_mb").as_double() <= 60000.0);
        encoder_seen += encoder;
        next += n;
    }
    BOOST_TEST(next == 104);
    BOOST_TEST(encoder_seen == 24);
}

BOOST_AUTO_TEST_CASE(export_writes_what_sapp_reads) {
    const std::string out_file = write_file("", "export-sapp.json");
    const auto r = ppb({"fit", sample_dryrun, "--json", "--export-sapp", out_file});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto params = parse_json(r.out).at("parameters").as_object();
    const auto file = parse_json(read_all(out_file)).as_object();
    BOOST_TEST(!file.contains("constant_memory_mb"));
    BOOST_TEST(file.at("stage_const_mem").to_number<double>() ==
               params.at("const_mb").to_number<double>());
    BOOST_TEST(file.at("name").as_string() == "llama70b-pp8-dryrun");
    // The entries SAPP's -init writes: HEAD, BODY and TAIL, named after their type.
    BOOST_TEST((file.at("pre_defined_layer") == json::parse(R"({"HEAD": 0, "TAIL": -1})")));
    BOOST_TEST((file.at("auto_partition_layer") == json::parse(R"({"BODY": 80})")));
    for (const auto& e : file.at("layers_description").as_array())
        BOOST_TEST(e.at("model_name").as_string() == "llama70b-pp8-dryrun");
    // HEAD memory excludes the constant (SAPP adds it to every stage).
    BOOST_TEST(file.at("layers_description").at(0).at("memory_parameter").to_number<double>() ==
               params.at("head_mb").to_number<double>());

    // The grid: pipelines of 2 to 16 stages, every stage, layer mixes of every observed kind,
    // SAPP's activation counts for 1F1B and for interleaved schedules (v = 2, 3; m = 4, 32).
    std::vector<GridPoint> grid;
    const std::vector<std::array<std::uint32_t, 5>> mixes = {
        {10, 0, 0, 0, 0}, {0, 7, 0, 0, 3}, {2, 3, 4, 0, 1}, {1, 0, 0, 0, 0}, {0, 0, 9, 0, 0}};
    for (const std::uint32_t p : {2u, 3u, 4u, 8u, 16u}) {
        for (std::uint32_t s = 0; s < p; ++s) {
            for (std::size_t i = 0; i < mixes.size(); ++i) {
                const auto& mix = mixes[(i + s) % mixes.size()];
                grid.push_back({p, s, mix, sapp_activation_count(p, s, 1, 32, 0)});
                for (const std::uint32_t v : {2u, 3u}) {
                    for (const std::uint32_t m : {4u, 32u}) {
                        for (std::uint32_t chunk = 0; chunk < v; ++chunk)
                            grid.push_back({p, s, mix, sapp_activation_count(p, s, v, m, chunk)});
                    }
                }
            }
        }
    }
    // dryrun-lsq's predictions of the grid: one plan per pipeline size, through ppb compare.
    std::size_t checked = 0;
    for (const std::uint32_t p : {2u, 3u, 4u, 8u, 16u}) {
        json::array stages;
        std::vector<const GridPoint*> points;
        for (const auto& g : grid) {
            if (g.p != p)
                continue;
            json::object layers;
            for (std::size_t k = 0; k < kinds.size(); ++k)
                layers[kinds[k]] = g.layers[k];
            stages.push_back(
                json::object{{"stage", g.s}, {"layers", layers}, {"in_flight", g.in_flight}});
            points.push_back(&g);
        }
        const json::object plan{
            {"format", "ppb.partition/1"}, {"num_stages", p}, {"stages", stages}};
        const std::string plan_file =
            write_file(json::serialize(plan), fmt::format("grid-{}.json", p));
        const auto c = ppb({"compare", sample_dryrun, "--partition", plan_file, "--model",
                            "dryrun-lsq", "--model", "table=" + out_file, "--json"});
        BOOST_TEST_REQUIRE(c.exit_code == 0, c.err);
        std::size_t i = 0;
        const auto compared = parse_json(c.out);
        for (const auto& placement : compared.at("placements").as_array()) {
            if (placement.at("label").as_string() != "plan")
                continue;
            BOOST_TEST_REQUIRE(i < points.size());
            const GridPoint& g = *points[i++];
            const auto& predictions = placement.at("predictions").as_array();
            const double lsq = predictions.at(0).at("memory_mb").to_number<double>();
            const double table = predictions.at(1).at("memory_mb").to_number<double>();
            const double sapp = sapp_stage_memory(file, g.p, g.s, g.layers, g.in_flight);
            // SAPP sums in another order: equal up to rounding.
            BOOST_TEST(std::abs(sapp - lsq) <= 1e-9 * std::abs(lsq),
                       fmt::format("p={} s={} f={}: SAPP {} vs dryrun-lsq {}", g.p, g.s,
                                   g.in_flight, sapp, lsq));
            // The table model reads the file bit for bit as dryrun-lsq predicts.
            BOOST_TEST(table == lsq);
            ++checked;
        }
        BOOST_TEST(i == points.size());
    }
    BOOST_TEST(checked == grid.size());
}

// A dry run made from C = -500 MB exactly (the fit returns it): the export writes it with a
// warning, or folds it to 0 with --sapp-fold-negative-constant.
BOOST_AUTO_TEST_CASE(a_negative_constant_is_written_with_a_warning_or_folded) {
    // p = 4, m = 8, 1F1B: in-flight p - s. M = -500 + 1000 [s=0] + 2000 [s=3] + 100 n + 10 n f.
    std::string observations;
    const auto add = [&](const char* config, std::uint32_t s, std::uint32_t n) {
        const double f = 4.0 - s;
        const double m =
            -500.0 + (s == 0 ? 1000.0 : 0.0) + (s == 3 ? 2000.0 : 0.0) + 100.0 * n + 10.0 * n * f;
        observations += fmt::format(
            R"({}{{"config": "{}", "stage": {}, "layers": {{"none": {}}}, "peak_memory_mb": {}}})",
            observations.empty() ? "" : ", ", config, s, n, m);
    };
    const std::array<std::uint32_t, 4> a = {4, 6, 5, 5};
    const std::array<std::uint32_t, 4> b = {3, 7, 8, 2};
    for (std::uint32_t s = 0; s < 4; ++s) {
        add("A", s, a[s]);
        add("B", s, b[s]);
    }
    const std::string dryrun = write_file(
        R"({"format": "ppb.dryrun/1", "num_stages": 4, "micro_batches": 8, "schedule": "1f1b", )"
        R"("observations": [)" +
            observations + "]}",
        "negative-constant.json");
    const std::string out_file = write_file("", "negative-export.json");
    auto r = ppb({"fit", dryrun, "--json", "--export-sapp", out_file});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const double c = parse_json(r.out).at("parameters").at("const_mb").to_number<double>();
    BOOST_TEST(std::abs(c + 500.0) < 1e-6);
    BOOST_TEST(parse_json(read_all(out_file)).at("stage_const_mem").to_number<double>() == c);
    BOOST_TEST(has(r.err,
                   "ppb: warning: --export-sapp: the fitted constant memory of every stage "
                   "(const_mb) is negative"),
               r.err);
    BOOST_TEST(has(r.err, "fit more varied dry runs"), r.err);
    BOOST_TEST(has(r.err, "--sapp-fold-negative-constant"), r.err);
    // The table model reads the negative constant back and says what it is.
    const auto t =
        ppb({"compare", dryrun, "--model", "dryrun-lsq", "--model", "table=" + out_file, "--json"});
    BOOST_TEST_REQUIRE(t.exit_code == 0, t.err);
    const auto compared = parse_json(t.out);
    for (const auto& p : compared.at("placements").as_array()) {
        const auto& pr = p.at("predictions").as_array();
        BOOST_TEST(pr[0].at("memory_mb").as_double() == pr[1].at("memory_mb").as_double());
    }

    const std::string folded = write_file("", "folded-export.json");
    r = ppb({"fit", dryrun, "--export-sapp", folded, "--sapp-fold-negative-constant"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(parse_json(read_all(folded)).at("stage_const_mem").to_number<double>() == 0.0);
    BOOST_TEST(has(r.err,
                   "--sapp-fold-negative-constant wrote stage_const_mem = 0 instead, so the "
                   "file predicts every stage"),
               r.err);
    BOOST_TEST(has(r.err, "conservative"), r.err);
    expect_input_error(ppb({"fit", dryrun, "--sapp-fold-negative-constant"}),
                       {"--sapp-fold-negative-constant requires --export-sapp"});
}

BOOST_AUTO_TEST_CASE(the_old_constant_name_is_read_with_a_warning) {
    const std::string file = edited_sapp_file("old-name.json", [](json::object& doc) {
        doc["constant_memory_mb"] = doc["stage_const_mem"];
        doc.erase("stage_const_mem");
    });
    const auto r = ppb(partition_args(file, {"--model", "table", "--model-options", file}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(has(r.err, "ppb: warning: " + file +
                              ": constant_memory_mb: 'constant_memory_mb' is "
                              "the old name of SAPP's 'stage_const_mem'"),
               r.err);
}

// The README's walk-through for SAPP users: SAPP's -init YAML and SAPP's layer file in, a plan
// and the arrays MindFormers takes out, with every figure checked by hand.
BOOST_AUTO_TEST_CASE(a_sapp_users_walk_through) {
    const std::string init = std::string(PPB_SAMPLES_DIR) + "/import/sapp/init_pp4.yaml";
    const std::string layers = std::string(PPB_SAMPLES_DIR) + "/sapp/llama2_7b-layers.json";
    const std::string dryrun = write_file("", "walk-dryrun.json");
    auto r = ppb({"import", "sapp", init, "-o", dryrun});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(has(r.err, "imported 8 observations of 3 dry runs"), r.err);

    // The sample's dry runs were made from C 3100, H 2400, T 3300, P 1150 and activations
    // none 410, select 190, full 30 MB: the fit recovers them.
    r = ppb({"fit", dryrun, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value fit = parse_json(r.out);
    const json::object& c = fit.at("parameters").as_object();
    const auto close = [](const json::value& v, double x) {
        return std::abs(v.to_number<double>() - x) < 1e-6;
    };
    BOOST_TEST(close(c.at("const_mb"), 3100.0));
    BOOST_TEST(close(c.at("head_mb"), 2400.0));
    BOOST_TEST(close(c.at("tail_mb"), 3300.0));
    BOOST_TEST(close(c.at("param_per_layer_mb"), 1150.0));
    BOOST_TEST(close(c.at("activation_mb").at("none"), 410.0));
    BOOST_TEST(close(c.at("activation_mb").at("select"), 190.0));
    BOOST_TEST(close(c.at("activation_mb").at("full"), 30.0));

    const std::vector<std::string> plan_args = {
        "partition", "--model-desc",      layers,  "--stages", "4", "--micro-batches",
        "16",        "--memory-limit-mb", "22000", "--json"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = plan_args;
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    };
    r = ppb(with({"--dryrun", dryrun}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value plan = parse_json(r.out);
    // Stage 0: 3 none + 4 select layers, 4 in flight:
    //   3100 + 2400 + 7 x 1150 + (3 x 410 + 4 x 190) x 4 = 21510 MB;
    //   time 3 x 12 + 3 x (10 + 2 x 10) + 4 x (10 + 1.04 x 2 x 10) = 249.2: today's SAPP reads
    //   `time` (time_config's, as its -init writes it) as the forward, the backward 2 x time.
    const json::object& s0 = plan.at("stages").at(0).as_object();
    BOOST_TEST(close(s0.at("memory_mb"), 21510.0));
    BOOST_TEST(std::abs(s0.at("time").to_number<double>() - (36.0 + 90.0 + 4.0 * 30.8)) < 1e-9);
    // The older toolkit read `time` as forward + backward: the same plan, a third of the time,
    // 12 + 3 x 10 + 4 x (10/3 + 1.04 x 20/3) = 83.0667.
    {
        const auto toolkit = ppb(with({"--dryrun", dryrun, "--sapp-time-convention", "toolkit"}));
        BOOST_TEST_REQUIRE(toolkit.exit_code == 0, toolkit.err);
        const json::value old = parse_json(toolkit.out);
        BOOST_TEST(old.at("mindformers") == plan.at("mindformers"));
        BOOST_TEST(std::abs(old.at("stages").at(0).at("time").to_number<double>() -
                            (42.0 + 4.0 * (10.0 / 3.0 + 1.04 * 20.0 / 3.0))) < 1e-9);
        BOOST_TEST(std::abs(old.at("partitioner_objective").to_number<double>() -
                            plan.at("partitioner_objective").to_number<double>() / 3.0) < 1e-9);
    }
    const json::value expected_arrays = parse_json(
        R"({"offset": [[-1, 1, 1, -1]], "recompute": [[0, 0, 0, 0]],
            "select_recompute": [[4, 4, 0, 0]], "select_comm_recompute": [[0, 0, 0, 0]]})");
    BOOST_TEST(plan.at("mindformers") == expected_arrays, json::serialize(plan.at("mindformers")));

    // The fit written as the layer file SAPP reads, partitioned with the table model: the same
    // plan.
    const std::string exported = write_file("", "walk-llama2_7b.json");
    r = ppb({"fit", dryrun, "--export-sapp", exported, "--model-desc", layers});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    r = ppb(with({"--model", "table", "--model-options", exported}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(parse_json(r.out).at("mindformers") == expected_arrays, r.out);
}

// SAPP's own files: its two-stack test fixture (hyper-parallel
// tests/ut/auto_parallel/sapp_ppb/pp_modeling/fixture_profile_multi_group.json at
// 9583588d768010a55f5e4fe237f19dfec50995ef: pre_defined_layer {"HEAD": 0, "TAIL": -1},
// auto_partition_layer {"NumberOfLayers": 24}) and a file in the shape its ModelInfo (-init)
// writes; each partitions with every model, with no warning (their names are SAPP's, their
// counts agree).
BOOST_AUTO_TEST_CASE(sapps_fixture_and_modelinfo_partition_with_every_model) {
    const std::string dir = std::string(PPB_SAMPLES_DIR) + "/sapp/";
    const std::string fixture = dir + "fixture_profile_multi_group.json";
    const std::string fixture_dryrun = dir + "fixture_profile_multi_group-dryrun.json";
    // The analytic model names its groups as the fixture's BODY entries (12 + 12 layers).
    const std::string fixture_shape = write_file(R"({"hidden_size": 2048,
        "num_attention_heads": 16, "ffn_hidden_size": 5632, "num_layers": 24, "seq_length": 2048,
        "micro_batch_size": 1, "vocab_size": 32000, "tensor_parallel": 2,
        "sequence_parallel": true, "moe": {"num_experts": 4, "top_k": 1, "first_k_dense": 12, "dense_group": "encoder",
                "moe_group": "decoder"}})",
                                                 "fixture-shape.json");
    const std::string modelinfo = dir + "modelinfo-init_pp4.json";
    const std::string modelinfo_shape = write_file(R"({"hidden_size": 4096,
        "num_attention_heads": 32, "ffn_hidden_size": 11008, "num_layers": 32, "seq_length": 2048,
        "micro_batch_size": 1, "vocab_size": 32000, "tensor_parallel": 2})",
                                                   "modelinfo-shape.json");
    const std::string init = std::string(PPB_SAMPLES_DIR) + "/import/sapp/init_pp4.yaml";
    const std::string init_dryrun = write_file("", "modelinfo-dryrun.json");
    BOOST_TEST_REQUIRE(ppb({"import", "sapp", init, "-o", init_dryrun}).exit_code == 0);

    struct Case {
        std::string file;
        std::vector<std::string> model;
        int layers;
        std::string limit;
    };
    const std::vector<Case> cases = {
        {fixture, {"--model", "table", "--model-options", fixture}, 24, "20000"},
        {fixture, {"--model", "dryrun-lsq", "--dryrun", fixture_dryrun}, 24, "20000"},
        {fixture, {"--model", "analytic", "--model-options", fixture_shape}, 24, "80000"},
        {modelinfo, {"--model", "table", "--model-options", modelinfo}, 32, "22000"},
        {modelinfo, {"--model", "dryrun-lsq", "--dryrun", init_dryrun}, 32, "22000"},
        {modelinfo, {"--model", "analytic", "--model-options", modelinfo_shape}, 32, "80000"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args = {
            "partition", "--model-desc",      c.file,  "--stages", "4", "--micro-batches",
            "8",         "--memory-limit-mb", c.limit, "--json"};
        args.insert(args.end(), c.model.begin(), c.model.end());
        const auto r = ppb(args);
        BOOST_TEST_REQUIRE(r.exit_code == 0, c.file << " " << c.model[1] << ": " << r.err);
        BOOST_TEST(!has(r.err, "warning"), c.model[1] << ": " << r.err);
        const auto plan = parse_json(r.out);
        BOOST_TEST(plan.at("num_layers").to_number<int>() == c.layers);
        BOOST_TEST(plan.at("stages").as_array().size() == 4u);
    }
    // The two stacks in model order: the fixture's 12 encoder layers on the first stages.
    const auto r = ppb({"partition", "--model-desc", fixture, "--stages", "4", "--micro-batches",
                        "8", "--memory-limit-mb", "20000", "--model", "table", "--model-options",
                        fixture, "--json"});
    std::int64_t encoder = 0;
    bool decoder_seen = false;
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto fixture_plan = parse_json(r.out);  // kept: the loop reads into it
    for (const auto& stage : fixture_plan.at("stages").as_array()) {
        const auto& groups = stage.at("groups").as_object();
        std::int64_t e = 0;
        for (const auto& kind : groups.at("encoder").as_object())
            e += kind.value().as_int64();
        BOOST_TEST(!(decoder_seen && e > 0));  // no encoder layer after a decoder layer
        for (const auto& kind : groups.at("decoder").as_object())
            decoder_seen = decoder_seen || kind.value().as_int64() > 0;
        encoder += e;
    }
    BOOST_TEST(encoder == 12);
}

// SAPP-ND's per-option form (layers_description_new) partitions like the flat form it means.
BOOST_AUTO_TEST_CASE(sapp_nds_per_option_form_partitions) {
    const std::string file = std::string(PPB_SAMPLES_DIR) + "/sapp/sapp-nd-layers_new.json";
    const std::vector<std::string> args = {
        "partition", "--model-desc",    file,    "--stages",
        "4",         "--micro-batches", "8",     "--memory-limit-mb",
        "90000",     "--model",         "table", "--model-options",
        file,        "--json"};
    const auto r = ppb(args);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto plan = parse_json(r.out);
    BOOST_TEST(plan.at("num_layers").to_number<int>() == 60);
    BOOST_TEST(plan.at("groups").as_array().size() == 2u);
    // Its HEAD and TAIL give their own forward and backward, which agree with SAPP's solver's
    // 3 x time: no warning.
    BOOST_TEST(!has(r.err, "warning"), r.err);
    // The same model written flat (what the reader makes of it) gives the same plan.
    json::object doc = parse_json(read_all(file)).as_object();
    json::array flat;
    for (const auto& value : doc.at("layers_description_new").as_array()) {
        json::object entry = value.as_object();
        json::object out{{"name", entry.at("name")},
                         {"type", entry.at("type")},
                         {"nb_layer", entry.at("nb_layer")},
                         {"time", entry.at("time")},
                         {"memory_parameter", entry.at("memory_parameter")},
                         {"forward_time", entry.at("forward_time").at("NONE")}};
        const std::array<std::pair<const char*, const char*>, 5> names = {
            {{"NONE", "memory_activation"},
             {"SLCT", "memory_select_rec"},
             {"COMM", "memory_select_comm"},
             {"BOTH", "memory_both_comm_select"},
             {"FULL", "memory_recompute"}}};
        const std::array<const char*, 5> times = {"backward_time", "select_rec_time",
                                                  "select_comm_time", "both_comm_select_time",
                                                  "recompute_time "};
        for (std::size_t k = 0; k < names.size(); ++k) {
            const auto& activation = entry.at("memory_activation").as_object();
            if (activation.contains(names[k].first))
                out[names[k].second] = activation.at(names[k].first);
            const auto& backward = entry.at("backward_time").as_object();
            if (backward.contains(names[k].first))
                out[times[k]] = backward.at(names[k].first);
        }
        flat.push_back(std::move(out));
    }
    const std::string flat_file =
        write_file(json::serialize(json::object{{"layers_description", flat}}), "flat.json");
    std::vector<std::string> flat_args = args;
    flat_args[2] = flat_file;
    flat_args[12] = flat_file;
    const auto f = ppb(flat_args);
    BOOST_TEST_REQUIRE(f.exit_code == 0, f.err);
    const auto flat_plan = parse_json(f.out);
    BOOST_TEST(flat_plan.at("stages") == plan.at("stages"));
    BOOST_TEST(flat_plan.at("partitioner_objective") == plan.at("partitioner_objective"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_sapp_tests
