// SAPP's -init flow end to end: 'ppb import sapp INIT.yaml | ppb fit - --export-sapp OUT' writes
// the layer file SAPP's -init writes for the same YAML, with nothing else given. The reference is
// SAPP's own code (mindspore-ai/hyper-parallel, hyper_parallel/auto_parallel/sapp_ppb):
// utils/config.py at commit 3fd05f19009671aaeee3135ca5e33c6c0e6d18a2 (memory_parser,
// time_parser, ModelInfo, initialize_layer_json) and utils/compute_memory.py at commit
// 44995b4b557ae6cfd3dd74a6ed7b6bbb44ed750f (ComputeMemory), written out again below and
// evaluated on tests/data/sapp/init_demo.yaml (SAPP's cfgs/init_demo.yaml). Its truncated results
// are the figures SAPP publishes for the same dry runs (layers/demo.json, and the assertions of
// tests/ut/auto_parallel/sapp_ppb/test_compute_memory.py on mem.yaml), which pins down this
// re-implementation.
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
#include <set>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_sapp_init_tests {

namespace {

const std::string data_dir = std::string(PPB_TEST_DATA_DIR) + "/sapp";
const std::string init_demo = data_dir + "/init_demo.yaml";

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// --- SAPP's -init of init_demo.yaml, computed as its code computes it.
// The YAML's dry run: 16 stages, num_layer 96, offsets +-1, select_recompute and
// select_comm_recompute per stage (recompute: false), peak memories of stages 0 (head_memory),
// 15 (tail_memory) and six body stages.
constexpr std::uint32_t stages = 16;
constexpr std::array<int, stages> offset = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
constexpr std::array<std::uint32_t, stages> select_rec = {1, 0, 0, 0, 1, 1, 2, 0,
                                                          0, 0, 1, 1, 2, 0, 0, 1};
constexpr std::array<std::uint32_t, stages> comm_rec = {1, 0, 0, 0, 0, 0, 0, 1,
                                                        1, 2, 1, 1, 2, 0, 0, 1};
constexpr double head_memory = 77698;
constexpr double tail_memory = 21822;
constexpr std::array<std::uint32_t, 6> body_ids = {6, 9, 10, 11, 12, 13};
constexpr std::array<double, 6> body_memories = {49732, 50435, 32341, 41228, 23134, 30998};

// Per stage, SAPP's kinds (Recompute.TYPE order NONE, SLCT, COMM, BOTH, FULL) from its
// recompute counts (utils/recompute.py, internal_from_yaml): full the recompute count (0 here),
// both = min(select, comm) - full, select and comm what is left of theirs, none the rest.
std::array<double, 5> kinds_of(std::uint32_t s) {
    const double layers = 96 / stages + offset[s];
    const double both = std::min(select_rec[s], comm_rec[s]);
    const double select = select_rec[s] - both;
    const double comm = comm_rec[s] - both;
    return {layers - select - comm - both, select, comm, both, 0.0};
}

// Solves the square system a x = b (Gaussian elimination with partial pivoting).
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
    const std::size_t n = b.size();
    for (std::size_t c = 0; c < n; ++c) {
        std::size_t pivot = c;
        for (std::size_t r = c + 1; r < n; ++r) {
            if (std::abs(a[r][c]) > std::abs(a[pivot][c]))
                pivot = r;
        }
        std::swap(a[c], a[pivot]);
        std::swap(b[c], b[pivot]);
        for (std::size_t r = c + 1; r < n; ++r) {
            const double f = a[r][c] / a[c][c];
            for (std::size_t k = c; k < n; ++k)
                a[r][k] -= f * a[c][k];
            b[r] -= f * b[c];
        }
    }
    std::vector<double> x(n);
    for (std::size_t c = n; c-- > 0;) {
        double sum = b[c];
        for (std::size_t k = c + 1; k < n; ++k)
            sum -= a[c][k] * x[k];
        x[c] = sum / a[c][c];
    }
    return x;
}

// What ComputeMemory derives: the kinds any measured stage uses (NONE always; here NONE, SLCT,
// COMM, BOTH: recompute is false); with used + 4 stages measured, the constant, the per-layer
// parameter memory and each used kind's activation solved exactly from the body stages, whose
// row is [1, n, n_kind x (P - s) ...] (Stage.get_index_memory_var); the head then the first
// stage's memory less its layers (activations x P in flight), the tail the last stage's less
// its layers (activations x 1) — neither less the constant.
struct SappMemory {
    double constant = 0;
    double parameter = 0;
    std::array<double, 4> activation{};  // NONE, SLCT, COMM, BOTH
    double head = 0;
    double tail = 0;
};

SappMemory sapp_memory() {
    std::vector<std::vector<double>> rows;
    std::vector<double> memories;
    for (std::size_t i = 0; i < body_ids.size(); ++i) {
        const std::uint32_t s = body_ids[i];
        const auto k = kinds_of(s);
        const double in_flight = stages - s;
        rows.push_back({1.0, k[0] + k[1] + k[2] + k[3], k[0] * in_flight, k[1] * in_flight,
                        k[2] * in_flight, k[3] * in_flight});
        memories.push_back(body_memories[i]);
    }
    const auto x = solve(rows, memories);
    SappMemory m;
    m.constant = x[0];
    m.parameter = x[1];
    m.activation = {x[2], x[3], x[4], x[5]};
    const auto ends = [&](std::uint32_t s, double memory, double in_flight) {
        const auto k = kinds_of(s);
        double rest = memory - (k[0] + k[1] + k[2] + k[3]) * m.parameter;
        for (std::size_t r = 0; r < 4; ++r)
            rest -= k[r] * m.activation[r] * in_flight;
        return rest;
    };
    m.head = ends(0, head_memory, stages);
    m.tail = ends(stages - 1, tail_memory, 1);
    return m;
}

bool close(double a, double b) {
    return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}

std::set<std::string> keys_of(const json::object& o) {
    std::set<std::string> keys;
    for (const auto& member : o)
        keys.emplace(member.key());
    return keys;
}

// 'ppb import sapp INIT | ppb fit - --export-sapp OUT', as a user types it: the dry-run
// document goes through stdin.
json::object init_flow(const std::string& init, const std::string& out_name,
                       std::vector<std::string> extra = {}) {
    const auto imported = ppb({"import", "sapp", init});
    BOOST_TEST_REQUIRE(imported.exit_code == 0, imported.err);
    const std::string out = write_file("", out_name);
    std::vector<std::string> args = {"fit", "-", "--export-sapp", out};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto fitted = ppb(args, {}, imported.out);
    BOOST_TEST_REQUIRE(fitted.exit_code == 0, fitted.err);
    return parse_json(read_all(out)).as_object();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_sapp_init)

BOOST_AUTO_TEST_CASE(the_sapp_arithmetic_here_gives_sapps_published_figures) {
    // SAPP's layers/demo.json (commit 71c100e7...) and test_compute_memory.py's assertions on
    // mem.yaml (commit 44995b4b...): int() of each value.
    const SappMemory m = sapp_memory();
    BOOST_TEST(static_cast<long>(m.head) == 4245);
    BOOST_TEST(static_cast<long>(m.parameter) == 2141);
    BOOST_TEST(static_cast<long>(m.activation[0]) == 852);
    BOOST_TEST(static_cast<long>(m.activation[1]) == 767);
    BOOST_TEST(static_cast<long>(m.activation[2]) == 535);
    BOOST_TEST(static_cast<long>(m.activation[3]) == 511);
    BOOST_TEST(static_cast<long>(m.tail) == 1203);
    BOOST_TEST(static_cast<long>(m.constant) == -1896);
}

BOOST_AUTO_TEST_CASE(import_then_fit_writes_the_layer_file_sapps_init_writes) {
    const json::object file = init_flow(init_demo, "init-demo-layers.json");
    const SappMemory m = sapp_memory();

    // SAPP's ModelInfo: name, stage_const_mem, layers_description; pre_defined_layer as SAPP's
    // published demo.json has it; ppb's comment; the BODY's layers under its name.
    BOOST_TEST((keys_of(file) == std::set<std::string>{"comment", "name", "pre_defined_layer",
                                                       "auto_partition_layer", "stage_const_mem",
                                                       "layers_description"}));
    BOOST_TEST((file.at("pre_defined_layer") == json::parse(R"({"HEAD": 0, "TAIL": -1})")));
    BOOST_TEST((file.at("auto_partition_layer") == json::parse(R"({"BODY": 96})")));
    const std::string name(file.at("name").as_string());
    const auto& entries = file.at("layers_description").as_array();
    BOOST_TEST_REQUIRE(entries.size() == 3u);

    // Each entry has the fields ModelInfo writes (LayersDescription: name, type, model_name,
    // time, nb_layer, memory_parameter; the BODY also each considered kind's activation), no
    // others; names are the types; times are time_config's as given.
    const std::array<const char*, 3> types = {"HEAD", "BODY", "TAIL"};
    const std::array<double, 3> times = {90, 90, 180};
    const std::array<std::int64_t, 3> layers = {1, 96, 1};
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& e = entries[i].as_object();
        std::set<std::string> expected = {"name", "type",     "model_name",
                                          "time", "nb_layer", "memory_parameter"};
        if (i == 1) {
            expected.insert({"memory_activation", "memory_select_rec", "memory_select_comm",
                             "memory_both_comm_select"});
        }
        BOOST_TEST((keys_of(e) == expected), "layers_description[" << i << "]");
        BOOST_TEST(e.at("name").as_string() == types[i]);
        BOOST_TEST(e.at("type").as_string() == types[i]);
        BOOST_TEST(e.at("model_name").as_string() == name);
        BOOST_TEST(e.at("nb_layer").as_int64() == layers[i]);
        BOOST_TEST(e.at("time").to_number<double>() == times[i]);
    }

    // The memory values: SAPP's, with one difference the export documents: SAPP's HEAD and TAIL
    // memory include the constant (its head is the first stage's memory less its layers), which
    // its file also gives as stage_const_mem; ppb's exclude it, so that adding stage_const_mem to
    // every stage, as the file's readers do, predicts the measured stages.
    const auto& body = entries[1].as_object();
    BOOST_TEST(close(body.at("memory_parameter").to_number<double>(), m.parameter));
    BOOST_TEST(close(body.at("memory_activation").to_number<double>(), m.activation[0]));
    BOOST_TEST(close(body.at("memory_select_rec").to_number<double>(), m.activation[1]));
    BOOST_TEST(close(body.at("memory_select_comm").to_number<double>(), m.activation[2]));
    BOOST_TEST(close(body.at("memory_both_comm_select").to_number<double>(), m.activation[3]));
    BOOST_TEST(close(file.at("stage_const_mem").to_number<double>(), m.constant));
    const double head = entries[0].as_object().at("memory_parameter").to_number<double>();
    const double tail = entries[2].as_object().at("memory_parameter").to_number<double>();
    BOOST_TEST(close(head + m.constant, m.head));
    BOOST_TEST(close(tail + m.constant, m.tail));
}

BOOST_AUTO_TEST_CASE(the_written_file_partitions_alone) {
    const json::object file = init_flow(init_demo, "init-demo-plan.json");
    const std::string layers = write_file(json::serialize(file), "init-demo-plan-layers.json");
    // Times and memory from the one file: the table model reads its memory fields.
    const auto r =
        ppb({"partition", "--model-desc", layers, "--model", "table", "--model-options", layers,
             "--stages", "16", "--micro-batches", "16", "--memory-limit-mb", "44236", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto plan = parse_json(r.out).as_object();
    std::int64_t placed = 0;
    for (const auto& stage : plan.at("stages").as_array()) {
        const auto& s = stage.as_object();
        for (const auto& [kind, n] : s.at("layers").as_object())
            placed += n.as_int64();
        BOOST_TEST(s.at("memory_mb").to_number<double>() <= 44236.0);
    }
    BOOST_TEST(placed == 96);
    // Stage 0's prediction is SAPP's formula on the file: stage_const_mem + HEAD + its layers.
    const auto& s0 = plan.at("stages").as_array()[0].as_object();
    const auto& body = file.at("layers_description").as_array()[1].as_object();
    const std::array<const char*, 5> kinds = {"none", "select", "comm", "both", "full"};
    const std::array<const char*, 5> fields = {"memory_activation", "memory_select_rec",
                                               "memory_select_comm", "memory_both_comm_select",
                                               "memory_recompute"};
    double expected = file.at("stage_const_mem").to_number<double>() + file.at("layers_description")
                                                                           .as_array()[0]
                                                                           .as_object()
                                                                           .at("memory_parameter")
                                                                           .to_number<double>();
    const auto& l0 = s0.at("layers").as_object();
    for (std::size_t k = 0; k < kinds.size(); ++k) {
        const auto it = l0.find(kinds[k]);
        if (it == l0.end() || it->value().as_int64() == 0)
            continue;
        const double n = static_cast<double>(it->value().as_int64());
        expected += n * body.at("memory_parameter").to_number<double>() +
                    n * body.at(fields[k]).to_number<double>() * 16.0;
    }
    BOOST_TEST(std::abs(s0.at("memory_mb").to_number<double>() - expected) < 1e-6);
}

BOOST_AUTO_TEST_CASE(the_dry_run_file_carries_the_models_layers_and_times) {
    const auto r = ppb({"import", "sapp", init_demo});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.dryrun/1");
    BOOST_TEST(doc.at("body_layers").as_int64() == 96);
    BOOST_TEST(
        (doc.at("layer_times") == json::parse(R"({"head": 90.0, "body": 90.0, "tail": 180.0})")));
}

BOOST_AUTO_TEST_CASE(without_time_config_the_file_holds_memory_only) {
    const json::object file = init_flow(data_dir + "/mem.yaml", "mem-layers.json");
    for (const auto& e : file.at("layers_description").as_array())
        BOOST_TEST(!e.as_object().contains("time"));
    BOOST_TEST(has(std::string(file.at("comment").as_string()), "add each entry's time"));
    BOOST_TEST(file.at("layers_description").as_array()[1].as_object().at("nb_layer").as_int64() ==
               96);
    const auto r = ppb({"import", "sapp", data_dir + "/mem.yaml"});
    BOOST_TEST(has(r.err, "no time_config"));
}

BOOST_AUTO_TEST_CASE(a_template_of_another_model_is_refused) {
    const auto imported = ppb({"import", "sapp", init_demo});
    BOOST_TEST_REQUIRE(imported.exit_code == 0, imported.err);
    const std::string out = write_file("", "unused-layers.json");
    // The bundled SAPP layer file has 80 body layers, the -init YAML's model 96.
    const auto r = ppb({"fit", "-", "--export-sapp", out, "--model-desc",
                        std::string(PPB_SAMPLES_DIR) + "/sapp/llama-layers.json"},
                       {}, imported.out);
    expect_input_error(r, {"--export-sapp", "80 body layers", "96", "body_layers"});
}

BOOST_AUTO_TEST_CASE(profiling_config_says_what_to_give_instead) {
    std::string text = read_all(init_demo);
    const std::string times = "time_config:\n  head: 90\n  body: 90\n  tail: 180\n";
    BOOST_TEST_REQUIRE(has(text, times));
    const std::string profiling =
        "profiling_config:\n  micro_batch_num: 4\n  folder_path: ./timeline\n";
    const std::string without_times = [&] {
        std::string t = text;
        t.replace(t.find(times), times.size(), profiling);
        return t;
    }();
    const auto r = ppb({"import", "sapp", write_file(without_times, "profiled.yaml")});
    expect_input_error(r, {"profiled.yaml:", "profiling_config", "does not read profiler timelines",
                           "time_config: {head: T, body: T, tail: T}"});

    // With every time in time_config SAPP does not read the timeline either: a note.
    const auto both = ppb({"import", "sapp", write_file(text + profiling, "both.yaml")});
    BOOST_TEST(both.exit_code == 0, both.err);
    BOOST_TEST(has(both.err, "profiling_config: not read: time_config gives every time"));

    // time_config without one time, and a timeline: still the timeline named.
    std::string partial = text;
    partial.replace(partial.find("  tail: 180\n"), 12, "");
    const auto r2 = ppb({"import", "sapp", write_file(partial + profiling, "partial.yaml")});
    expect_input_error(r2, {"profiling_config", "time_config lacks tail"});

    // Without a timeline, the missing time itself.
    const auto r3 = ppb({"import", "sapp", write_file(partial, "partial-times.yaml")});
    expect_input_error(r3, {"partial-times.yaml:", "time_config", "no tail time"});

    std::string bad = text;
    bad.replace(bad.find("body: 90"), 8, "body: fast");
    const auto r4 = ppb({"import", "sapp", write_file(bad, "bad-time.yaml")});
    expect_input_error(r4, {"bad-time.yaml:", "time_config.body", "'fast'"});
}

BOOST_AUTO_TEST_CASE(the_dry_run_reader_checks_body_layers_and_layer_times) {
    const auto imported = ppb({"import", "sapp", init_demo});
    BOOST_TEST_REQUIRE(imported.exit_code == 0, imported.err);
    const auto edited = [&](auto edit, const std::string& name) {
        json::object doc = parse_json(imported.out).as_object();
        edit(doc);
        return ppb({"fit", write_file(json::serialize(doc), name)});
    };
    // Stage 1 of the dry run holds 7 layers.
    expect_input_error(edited([](json::object& d) { d["body_layers"] = 6; }, "few.json"),
                       {"few.json", "observations[", "more than the model's 6 (body_layers)"});
    // A dry run that measured every stage holds every layer.
    const auto all_stages = [](json::object& d) {
        d["body_layers"] = 90;
        json::array observations;
        for (std::uint32_t s = 0; s < stages; ++s) {
            observations.push_back(
                json::object{{"stage", s},
                             {"layers", json::object{{"none", 96 / stages + offset[s]}}},
                             {"peak_memory_mb", 1000.0 + s}});
        }
        d["observations"] = std::move(observations);
    };
    expect_input_error(
        edited(all_stages, "sum.json"),
        {"sum.json", "body_layers", "the model has 90 body layers", "hold 96 in all"});
    expect_input_error(
        edited([](json::object& d) { d["layer_times"].as_object().erase("tail"); }, "times.json"),
        {"times.json", "layer_times", "missing required field 'tail'"});
    expect_input_error(
        edited([](json::object& d) { d["layer_times"].as_object()["body"] = -1; }, "neg.json"),
        {"neg.json", "layer_times.body"});
    expect_input_error(
        edited([](json::object& d) { d["layer_times"].as_object()["embed"] = 1; }, "key.json"),
        {"key.json", "layer_times", "embed"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_sapp_init_tests
