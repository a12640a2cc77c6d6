// --comm-time and the iteration's breakdown end to end: ppb partition (text, --json), ppb
// simulate reading the plan's comm_time back, ppb search, and bad values refused with exit 2.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_communication_tests {

namespace {

std::vector<std::string> partition(std::vector<std::string> extra,
                                   const std::string& limit = "30000") {
    std::vector<std::string> args = {
        "partition", "--model-desc",    layers_file, "--dryrun",          sample_dryrun, "--stages",
        "8",         "--micro-batches", "32",        "--memory-limit-mb", limit};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

double number(const json::value& v) {
    return v.to_number<double>();
}

double parts_sum(const json::object& b) {
    return number(b.at("work")) + number(b.at("ideal")) + number(b.at("imbalance")) +
           number(b.at("communication")) + number(b.at("recompute"));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_communication)

BOOST_AUTO_TEST_CASE(partition_times_the_transfers_and_breaks_the_iteration_down) {
    const auto without = ppb(partition({"--json"}));
    BOOST_TEST_REQUIRE(without.exit_code == 0, without.err);
    const auto with = ppb(partition({"--comm-time", "2", "--json"}));
    BOOST_TEST_REQUIRE(with.exit_code == 0, with.err);
    const auto a = parse_json(without.out).as_object();
    const auto b = parse_json(with.out).as_object();
    // The same plan (communication is the same whatever the layers), a longer iteration.
    BOOST_TEST(json::serialize(a.at("stages")) == json::serialize(b.at("stages")));
    const double plain = number(a.at("simulated").as_object().at("makespan"));
    const double timed = number(b.at("simulated").as_object().at("makespan"));
    BOOST_TEST(timed > plain);
    const auto& parts = b.at("iteration_breakdown").as_object();
    BOOST_TEST(number(parts.at("iteration")) == timed);
    BOOST_TEST(parts_sum(parts) == timed, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(number(parts.at("communication")) == timed - plain,
               boost::test_tools::tolerance(1e-9));
    BOOST_TEST(number(a.at("iteration_breakdown").as_object().at("communication")) == 0.0);
    // The estimate's share: 1F1B with c on every boundary of evenly loaded stages,
    // 2c(P - 1 + floor((P - 1)(M - 1)/P)) = 4 (7 + 27) = 136.
    BOOST_TEST(number(b.at("communication_estimate")) == 136.0, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(b.at("comm_time").as_array().size() == 7u);

    const auto text = ppb(partition({"--comm-time", "2"}));
    BOOST_TEST_REQUIRE(text.exit_code == 0, text.err);
    BOOST_TEST(text.out.find("Communication between stages: 2 on every boundary; it adds 136.0") !=
                   std::string::npos,
               text.out);
    BOOST_TEST(text.out.find("Iteration breakdown") != std::string::npos, text.out);
    // Without --comm-time or --breakdown the table is not printed; --breakdown prints it.
    BOOST_TEST(ppb(partition({})).out.find("Iteration breakdown") == std::string::npos);
    BOOST_TEST(ppb(partition({"--breakdown"})).out.find("Iteration breakdown") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(simulate_reads_the_plans_communication_back) {
    const auto planned = ppb(partition({"--comm-time", "1,2,3,4,5,6,7", "--json"}));
    BOOST_TEST_REQUIRE(planned.exit_code == 0, planned.err);
    const std::string plan = write_file(planned.out, "comm-plan.json");
    const auto sim = ppb({"simulate", plan, "--json"});
    BOOST_TEST_REQUIRE(sim.exit_code == 0, sim.err);
    const auto doc = parse_json(sim.out).as_object();
    const auto p = parse_json(planned.out).as_object();
    BOOST_TEST(number(doc.at("makespan")) == number(p.at("simulated").as_object().at("makespan")),
               boost::test_tools::tolerance(1e-12));
    BOOST_TEST(json::serialize(doc.at("communication_time")) == json::serialize(p.at("comm_time")));
    const auto& parts = doc.at("iteration_breakdown").as_object();
    BOOST_TEST(parts_sum(parts) == number(doc.at("makespan")), boost::test_tools::tolerance(1e-9));
    // The plan carries each chunk's recomputation, so the breakdown has it too.
    BOOST_TEST(number(parts.at("recompute")) > 0.0);
    // --comm-time replaces the plan's; 0 removes it.
    const auto none = ppb({"simulate", plan, "--comm-time", "0", "--json"});
    BOOST_TEST_REQUIRE(none.exit_code == 0, none.err);
    BOOST_TEST(number(parse_json(none.out).as_object().at("makespan")) <
               number(doc.at("makespan")));
}

BOOST_AUTO_TEST_CASE(search_ranks_with_the_transfers) {
    const std::vector<std::string> base = {"search",      "--model-desc",
                                           layers_file,   "--dryrun",
                                           sample_dryrun, "--pipeline-degrees",
                                           "8",           "--global-batch",
                                           "32",          "--memory-limit-mb",
                                           "30000",       "--schedules",
                                           "1f1b",        "--json"};
    auto timed_args = base;
    timed_args.insert(timed_args.end(), {"--comm-time", "2"});
    const auto plain = ppb(base);
    const auto timed = ppb(timed_args);
    BOOST_TEST_REQUIRE(plain.exit_code == 0, plain.err);
    BOOST_TEST_REQUIRE(timed.exit_code == 0, timed.err);
    const auto first = [](const std::string& out) {
        return parse_json(out).as_object().at("ranking").as_array().at(0).as_object();
    };
    BOOST_TEST(number(first(timed.out).at("iteration_time")) >
               number(first(plain.out).at("iteration_time")));
}

BOOST_AUTO_TEST_CASE(bad_communication_times_exit_2) {
    for (const char* bad : {"-1", "nan", "inf", "1,2"}) {
        const auto r = ppb(partition({std::string("--comm-time=") + bad}));
        BOOST_TEST(r.exit_code == 2, bad << ": " << r.err);
        BOOST_TEST(r.err.find("--comm-time") != std::string::npos, r.err);
    }
    const auto r =
        ppb({"search", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--pipeline-degrees",
             "8", "--global-batch", "32", "--memory-limit-mb", "30000", "--comm-time=-2"});
    BOOST_TEST(r.exit_code == 2, r.err);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cli_zero_bubble)

BOOST_AUTO_TEST_CASE(zero_bubble_plans_simulate_with_their_weight_passes) {
    for (const char* schedule : {"zb-h1", "zb-v"}) {
        const auto r = ppb(partition({"--schedule", schedule, "--json"}, "40000"));
        BOOST_TEST_REQUIRE(r.exit_code == 0, schedule << ": " << r.err);
        const auto doc = parse_json(r.out).as_object();
        BOOST_TEST(doc.at("schedule").as_string() == schedule);
        // Each chunk says how much of its backward is the weight gradient: half of it without
        // recomputation by default.
        for (const auto& stage : doc.at("stages").as_array()) {
            for (const auto& c : stage.as_object().at("chunks").as_array()) {
                const auto& chunk = c.as_object();
                BOOST_TEST(
                    number(chunk.at("weight_time")) == 0.5 * (number(chunk.at("backward_time")) -
                                                              number(chunk.at("recompute_time"))),
                    boost::test_tools::tolerance(1e-9));
            }
        }
        // ppb simulate times the plan as ppb partition did, weight passes included.
        const std::string plan = write_file(r.out, std::string(schedule) + "-plan.json");
        const auto sim = ppb({"simulate", plan, "--json"});
        BOOST_TEST_REQUIRE(sim.exit_code == 0, sim.err);
        const auto s = parse_json(sim.out).as_object();
        BOOST_TEST(
            number(s.at("makespan")) == number(doc.at("simulated").as_object().at("makespan")),
            boost::test_tools::tolerance(1e-9));
        std::size_t weights = 0;
        for (const auto& op : s.at("operations").as_array())
            weights += op.as_object().at("pass").as_string() == "weight";
        BOOST_TEST(weights == 8u * 32u * (std::string(schedule) == "zb-v" ? 2u : 1u));
    }
    // ZB-H1 against 1F1B on the same model: the weight passes fill the bubble.
    const auto zb =
        parse_json(ppb(partition({"--schedule", "zb-h1", "--json"}, "40000")).out).as_object();
    const auto one = parse_json(ppb(partition({"--json"}, "40000")).out).as_object();
    BOOST_TEST(number(zb.at("simulated").as_object().at("bubble_fraction")) <
               number(one.at("simulated").as_object().at("bubble_fraction")));
    const auto bad = ppb(partition({"--schedule", "zb-h1", "--weight-grad-share", "1.5"}));
    BOOST_TEST(bad.exit_code == 2, bad.err);
}

// The layer file may give each entry's W (weight_grad_time): a chunk's W is then its layers' and
// ends' given W, whatever --weight-grad-share says; an entry without it keeps the share.
BOOST_AUTO_TEST_CASE(the_layer_file_gives_the_weight_passes) {
    std::ifstream in(layers_file);
    std::stringstream text;
    text << in.rdbuf();
    auto file = parse_json(text.str()).as_object();
    auto& entries = file.at("layers_description").as_array();
    // llama70b-layers.json: a decoder layer's forward is 10 (time), its backward 20; the LM
    // head's forward 8.33, its backward 16.67, no W given for the embedding.
    entries.at(1).as_object()["weight_grad_time"] = 6.0;
    entries.at(2).as_object()["weight_grad_time"] = 12.0;
    const std::string given = write_file(json::serialize(file), "layers-with-w.json");
    const auto r = ppb({"partition", "--model-desc", given, "--dryrun", sample_dryrun, "--stages",
                        "8", "--micro-batches", "32", "--memory-limit-mb", "40000", "--schedule",
                        "zb-h1", "--weight-grad-share", "0.3", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    const auto& stages = doc.at("stages").as_array();
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const auto& stage = stages[s].as_object();
        const auto& chunk = stage.at("chunks").as_array().at(0).as_object();
        double layers = 0.0;
        for (const auto& n : stage.at("layers").as_object())
            layers += number(n.value());
        // The embedding's backward (2 x 4) at the share, the LM head's given 12.
        const double ends = (s == 0 ? 0.3 * 8.0 : 0.0) + (s + 1 == stages.size() ? 12.0 : 0.0);
        BOOST_TEST(
            number(chunk.at("weight_time")) == 6.0 * layers + ends,
            "stage " << s << ": " << json::serialize(chunk) << boost::test_tools::tolerance(1e-9));
    }
    // ppb simulate reads each chunk's W back and times the plan as ppb partition did.
    const std::string plan = write_file(r.out, "zb-h1-given-w-plan.json");
    const auto sim = ppb({"simulate", plan, "--json"});
    BOOST_TEST_REQUIRE(sim.exit_code == 0, sim.err);
    BOOST_TEST(number(parse_json(sim.out).as_object().at("makespan")) ==
                   number(doc.at("simulated").as_object().at("makespan")),
               boost::test_tools::tolerance(1e-9));

    // A W longer than the backward without recomputation it is part of is refused, by path.
    entries.at(1).as_object()["weight_grad_time"] = 25.0;
    const std::string too_long = write_file(json::serialize(file), "layers-long-w.json");
    const auto bad =
        ppb({"partition", "--model-desc", too_long, "--dryrun", sample_dryrun, "--stages", "8",
             "--micro-batches", "32", "--memory-limit-mb", "40000", "--schedule", "zb-h1"});
    BOOST_TEST(bad.exit_code == 2, bad.err);
    BOOST_TEST(bad.err.find("layers_description[1]") != std::string::npos, bad.err);
    BOOST_TEST(bad.err.find("'weight_grad_time' (25) is longer than the backward without "
                            "recomputation it is part of (20)") != std::string::npos,
               bad.err);
    BOOST_TEST(bad.out.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cli_zero_bubble_import)

// MindFormers' interleaved sample with another pipeline_scheduler (and seq_split_num).
std::string mindformers_config(const std::string& scheduler, const std::string& extra = "") {
    std::ifstream in(std::string(PPB_SAMPLES_DIR) +
                     "/import/mindspore/llama13b_pp4_interleaved.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    const std::string from = "pipeline_scheduler: \"1f1b\"";
    yaml.replace(yaml.find(from), from.size(), "pipeline_scheduler: \"" + scheduler + "\"");
    if (!extra.empty()) {
        const std::string at = "  micro_batch_num: 16\n";
        yaml.replace(yaml.find(at), at.size(), at + extra);
    }
    return write_file(yaml, scheduler + ".yaml");
}

BOOST_AUTO_TEST_CASE(mindspore_schedulers_are_mapped_or_refused_by_name) {
    // Rank 0's log of the sample run without the layout MindFormers states in it (a 1F1B run's,
    // which the configurations here would contradict).
    std::ifstream sample(std::string(PPB_SAMPLES_DIR) +
                         "/import/mindspore/run_a/rank_0/dryrun.log");
    std::string text;
    for (std::string line; std::getline(sample, line);) {
        if (line.find("num_layers per stage") == std::string::npos)
            text += line + "\n";
    }
    const std::string log = write_file(text, "dryrun.log");
    const std::string rank = "--rank=" + log + "=0";
    const std::string out = write_file("", "zbv-dryrun.json");
    const auto zbv = ppb({"import", "mindspore", "--config", mindformers_config("zero_bubble_v"),
                          log, rank, "-o", out});
    BOOST_TEST_REQUIRE(zbv.exit_code == 0, zbv.err);
    std::ifstream written(out);
    std::stringstream doc;
    doc << written.rdbuf();
    BOOST_TEST(parse_json(doc.str()).as_object().at("schedule").as_string() == "zb-v");
    for (const char* name : {"seqpipe", "seqvpp", "gpipe"}) {
        const auto r = ppb(
            {"import", "mindspore", "--config", mindformers_config(name), log, rank, "-o", out});
        BOOST_TEST(r.exit_code == 2, r.err);
        BOOST_TEST(
            r.err.find(std::string("'") + name + "' is not modelled by ppb") != std::string::npos,
            r.err);
    }
    const auto split =
        ppb({"import", "mindspore", "--config", mindformers_config("1f1b", "  seq_split_num: 2\n"),
             log, rank, "-o", out});
    BOOST_TEST(split.exit_code == 2, split.err);
    BOOST_TEST(split.err.find("seq_split_num") != std::string::npos, split.err);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_communication_tests
