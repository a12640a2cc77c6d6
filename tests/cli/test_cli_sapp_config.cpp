// 'ppb partition --sapp-config INIT.yaml': SAPP's planning problem (the -init YAML's
// pipeline_config) run as it is. The reference is SAPP's validator and problem reader,
// mindspore-ai/hyper-parallel hyper_parallel/auto_parallel/sapp_ppb/pp_config_builder/
// yaml_parser.py at commit 0e81ad83f3b8fa59c9c5f31920405cebdf1fb5ae (parse_yaml_for_optimization,
// _validate_int, _to_bool, YamlOptimizationConfig.validate), its tests
// tests/ut/auto_parallel/sapp_ppb/pp_modeling/test_config_value_rejection.py (commit
// fc1e22977c404822a2553ff4a58f75018ce6f0fa: which values it refuses and accepts), and
// pp_config_builder/layer_loader.py (num_layer against the layer file, BODY names SAPP's solver
// reserves). Each case checks that the file's problem is the plan of the equivalent flags, that
// flags given as well win and are reported, and that what SAPP refuses ppb refuses naming the key.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_sapp_config_tests {

namespace {

// A 16-layer model whose memory the file gives (the table model reads it): every stage holds
// stage_const_mem 1000, the head 2000 on stage 0, the tail 3000 on the last, 500 per layer and
// 100 (none) or 10 (full) per layer and micro-batch in flight.
const std::string layer_text = R"({
  "name": "m", "stage_const_mem": 1000,
  "layers_description": [
    {"name": "HEAD", "type": "HEAD", "nb_layer": 1, "time": 10, "memory_parameter": 2000},
    {"name": "BODY", "type": "BODY", "nb_layer": 16, "time": 10, "memory_parameter": 500,
     "memory_activation": 100, "memory_recompute": 10},
    {"name": "TAIL", "type": "TAIL", "nb_layer": 1, "time": 20, "memory_parameter": 3000}]})";

const std::string base_yaml =
    "pipeline_config:\n"
    "  pipeline_num: 4\n"
    "  num_layer: 16\n"
    "  micro_batch_num: 8\n"
    "  num_of_interleave: 1\n"
    "  vpp_less_memory: false\n"
    "  optimization_level: 1\n"
    "  memory_limit: 12000\n"
    "  constant_memory: 500\n"
    "  offset: 0\n";

std::string layers() {
    static const std::string path = write_file(layer_text, "sapp-config-layers.json");
    return path;
}

// base_yaml with the line of `key` replaced by `line` (removed when empty), or `line` added.
std::string yaml_with(const std::string& key, const std::string& line) {
    std::string text = base_yaml;
    const std::string start = "  " + key + ":";
    const auto pos = text.find(start);
    if (pos == std::string::npos)
        return text + (line.empty() ? "" : "  " + line + "\n");
    const auto end = text.find('\n', pos) + 1;
    text.replace(pos, end - pos, line.empty() ? "" : "  " + line + "\n");
    return text;
}

std::vector<std::string> with_model(std::vector<std::string> args) {
    const std::vector<std::string> model = {"--model-desc",    layers(), "--model", "table",
                                            "--model-options", layers(), "--json"};
    args.insert(args.begin(), "partition");
    args.insert(args.end(), model.begin(), model.end());
    return args;
}

json::object plan(const std::vector<std::string>& args) {
    const auto r = ppb(with_model(args));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    return parse_json(r.out).as_object();
}

json::object sapp_plan(const std::string& yaml, const std::string& name,
                       std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), {"--sapp-config", write_file(yaml, name)});
    return plan(flags);
}

// The plan itself (problem echoed, stages, estimate), without sapp_config.
json::object without_report(json::object doc) {
    doc.erase("sapp_config");
    return doc;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// "file:N: pipeline_config.key" where N is the line of `key` in `yaml`.
std::string where(const std::string& file, const std::string& yaml, const std::string& key) {
    const auto pos = yaml.find("  " + key + ":");
    BOOST_TEST_REQUIRE(pos != std::string::npos);
    const auto line = 1 + std::count(yaml.begin(), yaml.begin() + static_cast<long>(pos), '\n');
    return file + ":" + std::to_string(line) + ": pipeline_config." + key;
}

void expect_refused(const std::string& key, const std::string& line,
                    std::initializer_list<std::string> parts) {
    const std::string yaml = yaml_with(key, line);
    const std::string file = write_file(yaml, "refused.yaml");
    const auto r = ppb(with_model({"--sapp-config", file}));
    std::vector<std::string> all(parts);
    if (!line.empty())
        all.push_back(where(file, yaml, key));
    BOOST_TEST_CONTEXT(line) {
        BOOST_TEST(r.exit_code == 2, r.err);
        BOOST_TEST(r.out.empty());
        for (const std::string& part : all)
            BOOST_TEST(has(r.err, part), "'" << part << "' in: " << r.err);
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_sapp_config)

BOOST_AUTO_TEST_CASE(the_files_problem_is_the_plan_of_the_equivalent_flags) {
    const auto doc = sapp_plan(base_yaml, "problem.yaml");
    BOOST_TEST(doc.at("num_stages").as_int64() == 4);
    BOOST_TEST(doc.at("micro_batches").as_int64() == 8);
    BOOST_TEST(doc.at("memory_limit_mb").to_number<double>() == 12000.0);
    BOOST_TEST(doc.at("memory_margin_mb").to_number<double>() == 500.0);  // constant_memory
    BOOST_TEST(doc.at("schedule").as_string() == "1f1b");
    const auto flags = plan({"--stages", "4", "--micro-batches", "8", "--memory-limit-mb", "12000",
                             "--memory-margin-mb", "500"});
    BOOST_TEST(json::serialize(without_report(doc)) == json::serialize(flags));

    const auto& report = doc.at("sapp_config").as_object();
    BOOST_TEST(report.at("overridden").as_array().empty());
    BOOST_TEST(report.at("pipeline_config").as_object().at("pipeline_num").as_int64() == 4);
    // optimization_level has no ppb setting: reported, with why.
    const auto& not_used = report.at("not_used").as_array();
    BOOST_TEST_REQUIRE(not_used.size() == 1u);
    BOOST_TEST(not_used[0].as_object().at("key").as_string() ==
               "pipeline_config.optimization_level");
    // No memory_limit / constant_memory budget reached: every stage fits 12000 - 500.
    for (const auto& s : doc.at("stages").as_array())
        BOOST_TEST(s.as_object().at("memory_mb").to_number<double>() <= 11500.0);
}

BOOST_AUTO_TEST_CASE(interleave_and_less_memory_choose_the_schedule) {
    const auto interleaved =
        sapp_plan(yaml_with("num_of_interleave", "num_of_interleave: 2"), "interleaved.yaml");
    BOOST_TEST(interleaved.at("schedule").as_string() == "interleaved");
    BOOST_TEST(interleaved.at("num_chunks").as_int64() == 2);
    BOOST_TEST(json::serialize(without_report(interleaved)) ==
               json::serialize(plan({"--stages", "4", "--micro-batches", "8", "--memory-limit-mb",
                                     "12000", "--memory-margin-mb", "500", "--schedule",
                                     "interleaved", "--chunks", "2"})));
    const auto flags = plan({"--stages", "4", "--micro-batches", "8", "--memory-limit-mb", "12000",
                             "--memory-margin-mb", "500", "--schedule", "interleaved-less-memory",
                             "--chunks", "2"});
    // Every spelling of true SAPP's _to_bool takes.
    for (const std::string value : {"true", "yes", "'yes'", "\"TRUE\"", "1", "1.0", "'1'"}) {
        std::string yaml = yaml_with("num_of_interleave", "num_of_interleave: 2");
        yaml.replace(yaml.find("vpp_less_memory: false"), 22, "vpp_less_memory: " + value);
        const auto doc = sapp_plan(yaml, "less-memory.yaml");
        BOOST_TEST(doc.at("schedule").as_string() == "interleaved-less-memory", value);
        BOOST_TEST(json::serialize(without_report(doc)) == json::serialize(flags), value);
    }
    // A quoted integer is an integer to SAPP (Python's int("2")).
    const auto quoted =
        sapp_plan(yaml_with("num_of_interleave", "num_of_interleave: '2'"), "quoted.yaml");
    BOOST_TEST(quoted.at("num_chunks").as_int64() == 2);

    // Less memory with one chunk: SAPP's less-memory counts are 1F1B's; said on stderr.
    const auto r = ppb(with_model(
        {"--sapp-config",
         write_file(yaml_with("vpp_less_memory", "vpp_less_memory: true"), "one-chunk.yaml")}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(parse_json(r.out).as_object().at("schedule").as_string() == "1f1b");
    BOOST_TEST(has(r.err, "one chunk per stage"));
}

BOOST_AUTO_TEST_CASE(flags_given_as_well_override_and_are_reported) {
    const auto r =
        ppb(with_model({"--sapp-config", write_file(base_yaml, "override.yaml"), "--stages", "2",
                        "--micro-batches", "4", "--memory-margin-mb", "0"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    const auto flags = plan({"--stages", "2", "--micro-batches", "4", "--memory-limit-mb", "12000",
                             "--memory-margin-mb", "0"});
    BOOST_TEST(json::serialize(without_report(doc)) == json::serialize(flags));

    const auto& overridden = doc.at("sapp_config").as_object().at("overridden").as_array();
    BOOST_TEST_REQUIRE(overridden.size() == 3u);
    const auto check = [&](std::size_t i, const char* key, std::int64_t value, const char* flag,
                           double flag_value) {
        const auto& o = overridden[i].as_object();
        BOOST_TEST(o.at("key").as_string() == key);
        BOOST_TEST(o.at("value").to_number<double>() == static_cast<double>(value));
        BOOST_TEST(o.at("flag").as_string() == flag);
        BOOST_TEST(o.at("flag_value").to_number<double>() == flag_value);
    };
    check(0, "pipeline_config.pipeline_num", 4, "--stages", 2);
    check(1, "pipeline_config.micro_batch_num", 8, "--micro-batches", 4);
    check(2, "pipeline_config.constant_memory", 500, "--memory-margin-mb", 0);
    BOOST_TEST(has(r.err, "ppb: note: --stages 2 overrides pipeline_config.pipeline_num (4)"));
    BOOST_TEST(has(r.err, "--micro-batches 4 overrides pipeline_config.micro_batch_num (8)"));
    BOOST_TEST(has(r.err, "--memory-margin-mb 0 overrides pipeline_config.constant_memory (500)"));

    // --schedule 1f1b over num_of_interleave 2: one chunk, and said so.
    const auto s = ppb(with_model(
        {"--sapp-config",
         write_file(yaml_with("num_of_interleave", "num_of_interleave: 2"), "schedule.yaml"),
         "--schedule", "1f1b"}));
    BOOST_TEST_REQUIRE(s.exit_code == 0, s.err);
    const auto sdoc = parse_json(s.out).as_object();
    BOOST_TEST(sdoc.at("num_chunks").as_int64() == 1);
    BOOST_TEST(has(s.err, "--schedule 1f1b overrides pipeline_config.num_of_interleave (2)"));
    BOOST_TEST(has(s.err, "--schedule 1f1b overrides pipeline_config.vpp_less_memory (false)"));

    // A limit the file does not give comes from the flag; without either, refused.
    const auto limit =
        plan({"--sapp-config", write_file(yaml_with("memory_limit", ""), "no-limit.yaml"),
              "--memory-limit-mb", "12000"});
    BOOST_TEST(limit.at("sapp_config").as_object().at("overridden").as_array().empty());
    BOOST_TEST(json::serialize(without_report(limit)) ==
               json::serialize(without_report(sapp_plan(base_yaml, "with-limit.yaml"))));
}

BOOST_AUTO_TEST_CASE(what_sapps_validator_refuses_is_refused_naming_the_key) {
    // A float where SAPP wants an integer, even an integral one (test_config_value_rejection.py).
    expect_refused("pipeline_num", "pipeline_num: 4.0", {"must be an integer", "a float"});
    expect_refused("micro_batch_num", "micro_batch_num: 8.5", {"must be an integer"});
    expect_refused("num_layer", "num_layer: 16.0", {"must be an integer"});
    expect_refused("num_of_interleave", "num_of_interleave: 2.0", {"must be an integer"});
    expect_refused("memory_limit", "memory_limit: 3.5", {"must be an integer"});
    expect_refused("constant_memory", "constant_memory: 500.0", {"must be an integer"});
    expect_refused("optimization_level", "optimization_level: 1.0", {"must be an integer"});
    // A boolean where SAPP wants an integer.
    expect_refused("micro_batch_num", "micro_batch_num: true", {"must be an integer", "boolean"});
    expect_refused("pipeline_num", "pipeline_num: yes", {"must be an integer", "boolean"});
    // Booleans SAPP's _to_bool cannot read.
    expect_refused("vpp_less_memory", "vpp_less_memory: maybe", {"cannot be read as a boolean"});
    expect_refused("vpp_less_memory", "vpp_less_memory: 2", {"neither 0 nor 1"});
    expect_refused("vpp_less_memory", "vpp_less_memory: 0.5", {"neither 0 nor 1"});
    expect_refused("vpp_less_memory", "vpp_less_memory: ''", {"cannot be read as a boolean"});
    expect_refused("enable_simulation", "enable_simulation: maybe",
                   {"cannot be read as a boolean"});
    // Ranges (YamlOptimizationConfig.validate).
    expect_refused("optimization_level", "optimization_level: 3", {"must be 0, 1, or 2"});
    expect_refused("memory_limit", "memory_limit: -1", {"must be non-negative"});
    expect_refused("constant_memory", "constant_memory: -1", {"must be non-negative"});
    expect_refused("pipeline_num", "pipeline_num: 0", {"must be positive"});
    expect_refused("num_of_interleave", "num_of_interleave: 0", {"must be positive"});
    expect_refused("sim_comm_time", "sim_comm_time: .nan", {"finite"});
    expect_refused("sim_comm_time", "sim_comm_time: -0.1", {"must be non-negative"});
    // Required keys, given by neither the file nor a flag: exact_refusals_of_missing_keys.
    // What ppb would read otherwise than PyYAML, and what no plan can mean.
    expect_refused("memory_limit", "memory_limit: 012000", {"octal"});
    expect_refused("memory_limit", "memory_limit: 0", {"0 is no limit to plan against"});
    expect_refused("memory_limit", "", {"pipeline_config has no memory_limit"});
    expect_refused("constant_memory", "constant_memory: 12000", {"not below the memory limit"});
    const auto r =
        ppb(with_model({"--sapp-config", write_file("pipeline_config: [4]\n", "x.yaml")}));
    expect_input_error(r, {"x.yaml", "pipeline_config", "expected a mapping"});
}

BOOST_AUTO_TEST_CASE(the_layer_file_is_checked_as_sapp_checks_it) {
    // num_layer must be the layer file's body layers
    // (LayerBuilder._validate_num_layer_consistency).
    expect_refused("num_layer", "num_layer: 20", {"does not match the 16 body layers"});
    // A BODY named like a variable of SAPP's solver (LayerBuilder._validate_group_names).
    std::string reserved = layer_text;
    reserved.replace(reserved.find("\"name\": \"BODY\""), 14, "\"name\": \"max_stage_time\"");
    const std::string file = write_file(reserved, "reserved-layers.json");
    const auto r = ppb({"partition", "--sapp-config", write_file(base_yaml, "reserved.yaml"),
                        "--model-desc", file, "--model", "table", "--model-options", file});
    expect_input_error(
        r, {"reserved-layers.json", "BODY 'max_stage_time'", "SAPP refuses", "var_sum_FPi_BPi"});
    // The same file without --sapp-config plans: the name means nothing to ppb.
    const auto plain =
        ppb({"partition", "--model-desc", file, "--model", "table", "--model-options", file,
             "--stages", "4", "--micro-batches", "8", "--memory-limit-mb", "12000"});
    BOOST_TEST(plain.exit_code == 0, plain.err);
}

BOOST_AUTO_TEST_CASE(simulator_keys_are_read_and_reported_unused) {
    const std::string yaml = base_yaml +
                             "  enable_simulation: false\n"
                             "  sim_comm_time: 0.5\n"
                             "  use_backward_time: true\n";
    const auto r = ppb(with_model({"--sapp-config", write_file(yaml, "simulator.yaml")}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    std::vector<std::string> keys;
    for (const auto& n : doc.at("sapp_config").as_object().at("not_used").as_array())
        keys.emplace_back(n.as_object().at("key").as_string());
    BOOST_TEST((keys == std::vector<std::string>{"pipeline_config.optimization_level",
                                                 "pipeline_config.enable_simulation",
                                                 "pipeline_config.use_backward_time"}));
    // sim_comm_time is the communication time of every boundary (--comm-time).
    BOOST_TEST(has(r.err, "pipeline_config.sim_comm_time: 0.5 is taken as the communication"));
    for (const auto& c : doc.at("comm_time").as_array())
        BOOST_TEST(c.as_double() == 0.5);
    BOOST_TEST(doc.at("iteration_breakdown").as_object().at("communication").as_double() > 0.0);
    // The plan is the file's problem all the same: communication is the same on every plan.
    const auto plain = sapp_plan(base_yaml, "plain.yaml");
    BOOST_TEST(json::serialize(doc.at("stages")) == json::serialize(plain.at("stages")));
}

BOOST_AUTO_TEST_CASE(sapps_own_demo_problem_runs) {
    // SAPP's cfgs/init_demo.yaml: its dry runs give the layer file (import, fit, export), its
    // pipeline_config the problem (16 stages, 16 micro-batches, 44236 MB).
    const std::string init = std::string(PPB_TEST_DATA_DIR) + "/sapp/init_demo.yaml";
    const auto imported = ppb({"import", "sapp", init});
    BOOST_TEST_REQUIRE(imported.exit_code == 0, imported.err);
    const std::string layer_file = write_file("", "demo-problem-layers.json");
    const auto fitted = ppb({"fit", "-", "--export-sapp", layer_file}, {}, imported.out);
    BOOST_TEST_REQUIRE(fitted.exit_code == 0, fitted.err);
    const auto r = ppb({"partition", "--sapp-config", init, "--model-desc", layer_file, "--model",
                        "table", "--model-options", layer_file, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("num_stages").as_int64() == 16);
    BOOST_TEST(doc.at("micro_batches").as_int64() == 16);
    BOOST_TEST(doc.at("memory_limit_mb").to_number<double>() == 44236.0);
    for (const auto& s : doc.at("stages").as_array())
        BOOST_TEST(s.as_object().at("memory_mb").to_number<double>() <= 44236.0);
}

// The keys SAPP requires (pipeline_num, micro_batch_num) and the limit ppb needs (memory_limit)
// may come from the flags instead; given by neither, each is refused naming both ways.
BOOST_AUTO_TEST_CASE(exact_refusals_of_missing_keys) {
    const auto refused = [](const std::string& key, const std::string& message) {
        const std::string file = write_file(yaml_with(key, ""), "missing-" + key + ".yaml");
        const auto r = ppb(with_model({"--sapp-config", file}));
        BOOST_TEST(r.exit_code == 2, key);
        BOOST_TEST(r.out.empty(), key);
        BOOST_TEST(r.err == "ppb: error: " + file + ": pipeline_config has no " + key + " (" +
                                message + "\n",
                   key);
    };
    refused("pipeline_num", "the pipeline stages; SAPP requires it): give it there, or --stages P");
    refused("micro_batch_num",
            "the micro-batches per iteration; SAPP requires it): give it there, or "
            "--micro-batches M");
    refused("memory_limit",
            "SAPP's default 0 is no limit to plan against): give memory_limit, the MB a stage "
            "may use, or --memory-limit-mb X (SAPP needs a positive limit for its load balancing "
            "too)");

    // A flag gives what the file does not: the plan of the same problem, nothing overridden,
    // the document's echo of the file saying the key was not there.
    const auto equal = plan({"--stages", "4", "--micro-batches", "8", "--memory-limit-mb", "12000",
                             "--memory-margin-mb", "500"});
    const std::vector<std::vector<std::string>> cases = {
        {"pipeline_num", "--stages", "4"},
        {"micro_batch_num", "--micro-batches", "8"},
        {"memory_limit", "--memory-limit-mb", "12000"}};
    for (const auto& c : cases) {
        const std::string file = write_file(yaml_with(c[0], ""), "flag-" + c[0] + ".yaml");
        const auto r = ppb(with_model({"--sapp-config", file, c[1], c[2]}));
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
        BOOST_TEST(!has(r.err, "overrides"), r.err);
        const auto doc = parse_json(r.out).as_object();
        const auto& report = doc.at("sapp_config").as_object();
        BOOST_TEST(report.at("overridden").as_array().empty(), c[0]);
        // The echo of the file: null for a key SAPP requires, SAPP's default 0 for the limit.
        const auto& echoed = report.at("pipeline_config").as_object().at(c[0]);
        BOOST_TEST((c[0] == "memory_limit" ? echoed.as_int64() == 0 : echoed.is_null()), c[0]);
        BOOST_TEST(json::serialize(without_report(doc)) == json::serialize(equal), c[0]);
    }
}

// The pipe as host_api/docs/commands.md writes it (`--sapp-config`, for SAPP users), run by a
// shell in a directory of its own, plans with the memory the layer file holds (SAPP's
// PPOptimizer.optimize takes the -init YAML and the layer file alone: mindspore-ai/
// hyper-parallel, hyper_parallel/auto_parallel/sapp_ppb/pp_optimizer.py at commit
// 4ebc546b4b0d9e39f6135784fce5e9d896f7d65e), and its plan is that of --model table
// --model-options layers.json.
BOOST_AUTO_TEST_CASE(the_readmes_sapp_pipe_plans_as_written) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(write_file("", "pipe-marker")).parent_path() / "sapp-pipe";
    fs::create_directories(dir);
    fs::copy_file(std::string(PPB_TEST_DATA_DIR) + "/sapp/init_demo.yaml", dir / "INIT.yaml",
                  fs::copy_options::overwrite_existing);
    const std::string exe = PPB_EXE;
    const std::map<std::string, std::string> env = {{"PPB_PLUGIN_PATH", ""},
                                                    {"PPB_DEBUG_PLUGINS", ""}};
    const auto pipe = run_process("/bin/sh",
                                  {"-c", "'" + exe + "' import sapp INIT.yaml | '" + exe +
                                             "' fit - --export-sapp layers.json"},
                                  env, {}, dir.string());
    BOOST_TEST_REQUIRE(pipe.exit_code == 0, pipe.err);
    BOOST_TEST_REQUIRE(fs::exists(dir / "layers.json"));

    const auto partition = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = {"partition", "--sapp-config", "INIT.yaml", "--model-desc",
                                         "layers.json"};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_process(exe, args, env, {}, dir.string());
    };
    const auto r = partition({});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(has(r.out,
                   "96 'BODY' layers over 16 stages, 16 micro-batches, 1F1B; memory "
                   "limit 44236.0 MB\nmemory model table 1.0.0 (configured by its "
                   "options)\n"),
               r.out);
    BOOST_TEST(has(r.err,
                   "ppb: note: no --dryrun or --model: planning with the memory the layer "
                   "file layers.json holds, as SAPP does (the same as --model table "
                   "--model-options layers.json)\n"),
               r.err);
    const auto as_written = partition({"--json"});
    const auto explicit_table =
        partition({"--model", "table", "--model-options", "layers.json", "--json"});
    BOOST_TEST_REQUIRE(as_written.exit_code == 0, as_written.err);
    BOOST_TEST_REQUIRE(explicit_table.exit_code == 0, explicit_table.err);
    BOOST_TEST(as_written.out == explicit_table.out);
    BOOST_TEST(!has(explicit_table.err, "no --dryrun or --model"), explicit_table.err);
    const auto doc = parse_json(as_written.out).as_object();
    for (const auto& s : doc.at("stages").as_array())
        BOOST_TEST(s.as_object().at("memory_mb").to_number<double>() <= 44236.0);

    // A flag given as well wins, and says so.
    const auto fewer = partition({"--micro-batches", "32"});
    BOOST_TEST_REQUIRE(fewer.exit_code == 0, fewer.err);
    BOOST_TEST(has(fewer.err,
                   "ppb: note: --micro-batches 32 overrides "
                   "pipeline_config.micro_batch_num (16) of INIT.yaml\n"),
               fewer.err);
    BOOST_TEST(has(fewer.out, "32 micro-batches"), fewer.out);
}

// The bundled -init YAML states no micro_batch_num and no memory_limit: the flags give them.
BOOST_AUTO_TEST_CASE(the_bundled_init_plans_with_the_flags_it_needs) {
    const std::string init = std::string(PPB_SAMPLES_DIR) + "/import/sapp/init_pp4.yaml";
    const auto imported = ppb({"import", "sapp", init});
    BOOST_TEST_REQUIRE(imported.exit_code == 0, imported.err);
    const std::string layer_file = write_file("", "pp4-layers.json");
    BOOST_TEST_REQUIRE(ppb({"fit", "-", "--export-sapp", layer_file}, {}, imported.out).exit_code ==
                       0);
    const auto missing = ppb({"partition", "--sapp-config", init, "--model-desc", layer_file});
    BOOST_TEST(missing.exit_code == 2);
    BOOST_TEST(missing.err == "ppb: error: " + init +
                                  ": pipeline_config has no micro_batch_num (the micro-batches per "
                                  "iteration; SAPP requires it): give it there, or "
                                  "--micro-batches M\n");
    const std::vector<std::string> flags = {"--micro-batches", "8", "--memory-limit-mb", "24000",
                                            "--json"};
    std::vector<std::string> args = {"partition", "--sapp-config", init, "--model-desc",
                                     layer_file};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = ppb(args);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(!has(r.err, "overrides"), r.err);
    args.insert(args.end(), {"--model", "table", "--model-options", layer_file});
    const auto explicit_table = ppb(args);
    BOOST_TEST_REQUIRE(explicit_table.exit_code == 0, explicit_table.err);
    BOOST_TEST(r.out == explicit_table.out);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("num_stages").as_int64() == 4);  // pipeline_num
    BOOST_TEST(doc.at("micro_batches").as_int64() == 8);
}

// A layer file without memory (times only) cannot be the model: refused naming the entry and
// the two ways to give the memory.
BOOST_AUTO_TEST_CASE(a_layer_file_without_memory_is_refused_naming_both_ways) {
    const std::string init = write_file(base_yaml, "times-only.yaml");
    const std::string layer_file = std::string(PPB_SAMPLES_DIR) + "/sapp/llama2_7b-layers.json";
    const auto r =
        ppb({"partition", "--sapp-config", init, "--model-desc", layer_file, "--stages", "4"});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.out.empty());
    BOOST_TEST(r.err == "ppb: error: " + layer_file +
                            ": layers_description[1] (BODY \"LLamaDecodeLayer\") holds no memory "
                            "(memory_parameter, memory_activation, ...): ppb plans, as SAPP does, "
                            "with the memory the layer file holds (with --sapp-config and neither "
                            "--dryrun nor --model); give a layer file that holds it ('ppb import "
                            "sapp INIT.yaml | ppb fit - --export-sapp LAYERS.json' writes one), or "
                            "--dryrun DRYRUN.json (the dry runs to fit the memory model to)\n");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_sapp_config_tests
