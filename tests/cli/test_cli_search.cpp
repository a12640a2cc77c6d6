// ppb search end to end: the ranking and its JSON (each ranked plan is what `ppb partition` makes
// of that configuration), the same results for any number of threads, the analytic model told
// each configuration's data-parallel degree, what does not fit and the limit that would, bad
// input (exit 2), nothing fitting (exit 4), the progress bar, and Ctrl-C (exit 130 with the
// configurations planned so far).
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

using namespace ppb_test;
namespace json = boost::json;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_search_tests {

namespace {

const std::string shape_file = std::string(PPB_SAMPLES_DIR) + "/llama70b-shape.json";

std::vector<std::string> search_args(std::vector<std::string> extra) {
    std::vector<std::string> args = {"search",      "--model-desc",      layers_file, "--dryrun",
                                     sample_dryrun, "--tensor-parallel", "8"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// `ppb partition --json` of one ranked configuration, with the same model arguments.
json::object partition_of(const json::object& entry, const std::vector<std::string>& model_args,
                          const std::string& limit) {
    std::vector<std::string> args = {"partition",
                                     "--model-desc",
                                     layers_file,
                                     "--stages",
                                     std::to_string(entry.at("pipeline_parallel").to_number<int>()),
                                     "--micro-batches",
                                     std::to_string(entry.at("micro_batches").to_number<int>()),
                                     "--schedule",
                                     std::string(entry.at("schedule").as_string()),
                                     "--memory-limit-mb",
                                     limit,
                                     "--json"};
    if (entry.at("schedule").as_string() != "1f1b") {
        args.push_back("--chunks");
        args.push_back(std::to_string(entry.at("chunks").to_number<int>()));
    }
    std::string kinds;
    for (const auto& k : entry.at("recompute_kinds").as_array())
        kinds += (kinds.empty() ? "" : ",") + std::string(k.as_string());
    args.push_back("--kinds");
    args.push_back(kinds);
    args.insert(args.end(), model_args.begin(), model_args.end());
    const auto r = ppb(args);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    return parse_json(r.out).as_object();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_search)

BOOST_AUTO_TEST_CASE(ranks_the_sample_configurations_by_simulated_iteration) {
    const auto r =
        ppb(search_args({"--devices", "64", "--global-batch", "256", "--memory-limit-mb", "40000",
                         "--chunks", "2,4", "--recompute", "any,none,full", "--jobs", "2"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.empty(), r.err);  // piped: no progress bar
    BOOST_TEST(r.out.find("39 configurations of 80 body layers") == 0u, r.out);
    BOOST_TEST(r.out.find("64 devices, tensor parallel 8, global batch 256 (micro-batches of 1), "
                          "memory limit 40000.0 MB") != std::string::npos);
    BOOST_TEST(r.out.find("RANK  PP  DP    M  SCHEDULE") != std::string::npos, r.out);
    // At 40000 MB only 8 stages fit (d = 1, M = 256); 1f1b with the best kind per layer wins.
    BOOST_TEST(r.out.find("   1   8   1  256  1f1b             any") != std::string::npos, r.out);
    BOOST_TEST(
        r.out.find(
            "8 planned, 31 do not fit (--show-infeasible lists them); 3 combinations left out "
            "(--show-infeasible says why).") != std::string::npos,
        r.out);
}

BOOST_AUTO_TEST_CASE(the_json_ranks_what_ppb_partition_plans_for_any_number_of_threads) {
    const std::vector<std::string> common = {"--devices",
                                             "64",
                                             "--global-batch",
                                             "512",
                                             "--memory-limit-mb",
                                             "48000",
                                             "--chunks",
                                             "2",
                                             "--recompute",
                                             "any,full",
                                             "--top",
                                             "0",
                                             "--json"};
    std::vector<std::string> one = common, two = common;
    one.insert(one.end(), {"--jobs", "1"});
    two.insert(two.end(), {"--jobs", "2"});
    const auto a = ppb(search_args(one));
    const auto b = ppb(search_args(two));
    BOOST_TEST_REQUIRE(a.exit_code == 0, a.err);
    BOOST_TEST_REQUIRE(b.exit_code == 0, b.err);
    BOOST_TEST(a.out == b.out);  // byte for byte
    const json::object doc = parse_json(a.out).as_object();
    BOOST_TEST(doc.at("format").as_string() == "ppb.search/1");
    BOOST_TEST(doc.at("stopped").as_bool() == false);
    const auto count = [&](const char* key) { return doc.at(key).to_number<std::int64_t>(); };
    BOOST_TEST(count("planned") + count("infeasible") + count("invalid") ==
               count("configurations"));
    const auto& ranking = doc.at("ranking").as_array();
    BOOST_TEST_REQUIRE(static_cast<std::int64_t>(ranking.size()) == count("planned"));
    BOOST_TEST_REQUIRE(ranking.size() >= 6u);
    double previous = 0.0;
    for (std::size_t i = 0; i < ranking.size(); ++i) {
        const json::object& e = ranking[i].as_object();
        BOOST_TEST(e.at("rank").to_number<std::size_t>() == i + 1);
        const double t = e.at("iteration_time").to_number<double>();
        BOOST_TEST(t >= previous);
        previous = t;
        // d x P x t = devices, M x d = global batch.
        const auto p = e.at("pipeline_parallel").to_number<int>();
        const auto d = e.at("data_parallel").to_number<int>();
        BOOST_TEST(p * d * 8 == 64);
        BOOST_TEST(e.at("micro_batches").to_number<int>() * d == 512);
        const json::object& plan = e.at("plan").as_object();
        BOOST_TEST(plan.at("simulated").at("makespan").to_number<double>() == t);
        double peak = 0.0;
        for (const auto& s : plan.at("stages").as_array())
            peak = std::max(peak, s.at("memory_mb").to_number<double>());
        BOOST_TEST(e.at("peak_memory_mb").to_number<double>() == peak);
        // (Boost.JSON 1.81 reads numbers to within an ulp or so.)
        BOOST_TEST(std::abs(e.at("headroom_mb").to_number<double>() - (48000.0 - peak)) < 1e-6);
    }
    // The best three are exactly what ppb partition makes of their configurations.
    for (std::size_t i = 0; i < 3; ++i) {
        const json::object& e = ranking[i].as_object();
        json::object expected = partition_of(e, {"--dryrun", sample_dryrun}, "48000");
        BOOST_TEST(json::serialize(e.at("plan")) == json::serialize(expected), "rank " << i + 1);
    }
}

BOOST_AUTO_TEST_CASE(the_analytic_model_gets_each_configurations_data_parallel_degree) {
    // The shape's distributed optimizer shards over d = 256 / (8 P): its memory differs per P.
    const auto r =
        ppb({"search", "--model-desc", layers_file, "--model", "analytic", "--model-options",
             shape_file, "--devices", "256", "--global-batch", "512", "--memory-limit-mb", "60000",
             "--schedules", "1f1b", "--top", "0", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("search").at("tensor_parallel").to_number<int>() == 8);  // from the shape
    std::ifstream in(shape_file);
    std::stringstream text;
    text << in.rdbuf();
    const auto& ranking = doc.at("ranking").as_array();
    BOOST_TEST_REQUIRE(ranking.size() >= 2u);
    for (const auto& v : ranking) {
        const json::object& e = v.as_object();
        json::object shape = parse_json(text.str()).as_object();
        shape["data_parallel"] = e.at("data_parallel");
        const std::string options = write_file(json::serialize(shape), "shape.json");
        const json::object expected =
            partition_of(e, {"--model", "analytic", "--model-options", options}, "60000");
        BOOST_TEST(json::serialize(e.at("plan")) == json::serialize(expected));
    }
    // A --tensor-parallel that contradicts the shape is refused before planning.
    expect_input_error(ppb({"search", "--model-desc", layers_file, "--model", "analytic",
                            "--model-options", shape_file, "--devices", "256", "--tensor-parallel",
                            "4", "--global-batch", "512", "--memory-limit-mb", "60000"}),
                       {"--tensor-parallel 4 contradicts the model options' tensor_parallel = 8"});
}

// --device and --cluster time the shape at the device's dense peak x its achievable fraction
// (H100: 989 TFLOP/s; 0.5 of it here), make its memory the limit, and time the transfers on its
// links (ppb/partition/communication.hpp). With t = 8 and sequence parallelism each layer
// all-gathers and reduce-scatters one micro-batch's 4096 x 8192 bf16 hidden states twice each
// way inside the node: 4 x 7/8 x 67 108 864 B at 450 GB/s = 0.52199 ms per layer forward. Every
// stage spans a node of 8 H100, so each boundary is the network's, 1/8 of them at 50 GB/s =
// 0.16777216 ms (the description sets no network latency: host_api/docs/cluster.md's figures).
// Each layer's forward also takes the cluster's fixed 100 us (Cluster::layer_overhead_us).
// The iteration is the simulated schedule plus the data-parallel synchronisation.
BOOST_AUTO_TEST_CASE(a_device_or_a_cluster_times_the_shape_and_limits_the_memory) {
    const std::vector<std::string> base = {"search",   "--model",
                                           "analytic", "--model-options",
                                           shape_file, "--devices",
                                           "64",       "--global-batch",
                                           "128",      "--schedules",
                                           "1f1b",     "--json",
                                           "--top",    "0"};
    const std::string cluster =
        write_file(R"({"format": "ppb.cluster/1", "device": "H100", "achievable_fraction": 0.5,
                       "network_latency_us": 0})",
                   "cluster.json");
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = base;
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto by_cluster = with({"--cluster", cluster});
    BOOST_TEST_REQUIRE(by_cluster.exit_code == 0, by_cluster.err);
    BOOST_TEST(by_cluster.err.find(
                   "--memory-limit-mb 79779.6 from the H100's 79.11 GiB as the runtime "
                   "reports it, less 1229 MB kept outside the allocator") != std::string::npos,
               by_cluster.err);
    const auto by_hand = with({"--device-tflops", "494.5", "--memory-limit-mb", "79779.6"});
    BOOST_TEST_REQUIRE(by_hand.exit_code == 0, by_hand.err);
    const json::value cluster_doc = parse_json(by_cluster.out);
    BOOST_TEST(std::string(cluster_doc.at("communication").as_string())
                   .starts_with("communication on 8 H100 per node (450 GB/s inside, 50 GB/s "
                                "across nodes)"));
    const json::value hand_doc = parse_json(by_hand.out);
    BOOST_TEST(hand_doc.at("communication").is_null());
    BOOST_TEST(!hand_doc.at("ranking").at(0).as_object().contains("model_flops_utilisation"));

    // One body layer's forward without communication: a middle stage of P = 8 by hand (10
    // layers, none recomputed).
    double layer_forward = 0.0;
    for (const json::value& h : hand_doc.at("ranking").as_array()) {
        if (h.at("pipeline_parallel").to_number<int>() == 8) {
            const json::value& chunk = h.at("plan").at("stages").at(3).at("chunks").at(0);
            BOOST_TEST_REQUIRE(chunk.at("layers").at("none").to_number<int>() == 10);
            layer_forward = chunk.at("forward_time").to_number<double>() / 10.0;
        }
    }
    BOOST_TEST_REQUIRE(layer_forward > 0.0);
    const double collectives = 4.0 * 7.0 / 8.0 * 67'108'864.0 / 450e6;

    std::size_t checked = 0;
    for (const json::value& v : cluster_doc.at("ranking").as_array()) {
        const json::value& plan = v.at("plan");
        const auto pipeline = v.at("pipeline_parallel").to_number<int>();
        const auto replicas = v.at("data_parallel").to_number<int>();
        const double sync = v.at("data_parallel_sync_time").to_number<double>();
        const double iteration = v.at("iteration_time").to_number<double>();
        BOOST_TEST(iteration == plan.at("simulated").at("makespan").to_number<double>() + sync,
                   tt::tolerance(1e-12));
        // Throughput: 128 sequences of 4096 tokens per iteration over 64 devices; the model's
        // FLOPs per sequence, 3 x (80 layers of 7 559 142 440 960 and the LM head's
        // 2 147 483 648 000), over 64 x 989 TFLOP/s.
        BOOST_TEST(v.at("tokens_per_second_per_device").to_number<double>() ==
                       128.0 * 4096 / (iteration / 1e3) / 64,
                   tt::tolerance(1e-12));
        BOOST_TEST(v.at("model_flops_utilisation").to_number<double>() ==
                       128.0 * 3 * (80 * 7'559'142'440'960.0 + 2'147'483'648'000.0) /
                           (iteration / 1e3 * 64 * 989e12),
                   tt::tolerance(1e-12));
        for (const json::value& t : plan.at("comm_time").as_array())
            BOOST_TEST(t.to_number<double>() == 0.16777216, tt::tolerance(1e-12));
        // A middle stage's forward: its layers' FLOPs and collectives.
        if (pipeline > 2) {
            const json::value& chunk = plan.at("stages").at(1).at("chunks").at(0);
            const double layers = chunk.at("layers").at("none").to_number<double>() +
                                  chunk.at("layers").at("select").to_number<double>() +
                                  chunk.at("layers").at("full").to_number<double>();
            BOOST_TEST(chunk.at("forward_time").to_number<double>() ==
                           layers * (layer_forward + 0.1 + collectives),
                       tt::tolerance(1e-9));
            ++checked;
        }
        // One replica synchronises nothing. With P = 4, d = 2 the last stage (20 layers of
        // 106 971 136 parameters a rank, and the LM head's 4000 x 8192 + 8192) reduce-scatters
        // fp32 gradients and all-gathers bf16 weights with the replica on the next node:
        // 1/2 x 2 172 198 912 x 6 bytes at 50 GB/s = 130.33193472 ms.
        if (replicas == 1)
            BOOST_TEST(sync == 0.0);
        if (pipeline == 4)
            BOOST_TEST(sync == 130.33193472, tt::tolerance(1e-9));
    }
    BOOST_TEST(checked >= 2u);
    // Megatron-LM's overlap flags hide part of the synchronisation: never more waited for, and
    // for P = 4, d = 2 the last stage's 130.3 ms hidden behind its last backward and next
    // forward but the last bucket's 40 M of 2 172 198 912 parameters: 1.84 %.
    const auto overlapped =
        with({"--cluster", cluster, "--overlap-grad-reduce", "--overlap-param-gather"});
    BOOST_TEST_REQUIRE(overlapped.exit_code == 0, overlapped.err);
    const json::value overlapped_doc = parse_json(overlapped.out);
    std::size_t four_stages = 0;
    for (const json::value& v : overlapped_doc.at("ranking").as_array()) {
        if (v.at("pipeline_parallel").to_number<int>() == 4) {
            ++four_stages;
            BOOST_TEST(v.at("data_parallel_sync_time").to_number<double>() ==
                           130.33193472 * 40e6 / 2'172'198'912.0,
                       tt::tolerance(1e-9));
        }
    }
    BOOST_TEST(four_stages == 1u);
    expect_input_error(
        with({"--device-tflops", "400", "--memory-limit-mb", "80000", "--overlap-grad-reduce"}),
        {"--overlap-grad-reduce: the data-parallel synchronisation is timed on a "
         "cluster's links only"});
    const std::string no_distributed_optimizer =
        write_file(R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
                       "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000,
                       "num_layers": 8, "tensor_parallel": 2})",
                   "small.json");
    expect_input_error(ppb({"search", "--model", "analytic", "--model-options",
                            no_distributed_optimizer, "--devices", "8", "--global-batch", "16",
                            "--device", "H100", "--overlap-param-gather"}),
                       {"--overlap-param-gather: the weights are gathered with the distributed "
                        "optimizer only"});
    // --tp-comm-overlap: the layers' 0.522 ms of collectives run under their 2.4 ms of matrix
    // products (at 494.5 TFLOP/s): a middle stage's forward is its FLOPs, its fixed time and the
    // half of the collectives that stays exposed (Cluster::overlap_exposed_fraction).
    const auto tp_overlapped = with({"--cluster", cluster, "--tp-comm-overlap"});
    BOOST_TEST_REQUIRE(tp_overlapped.exit_code == 0, tp_overlapped.err);
    const json::value tp_doc = parse_json(tp_overlapped.out);
    for (const json::value& v : tp_doc.at("ranking").as_array()) {
        if (v.at("pipeline_parallel").to_number<int>() > 2) {
            const json::value& chunk = v.at("plan").at("stages").at(1).at("chunks").at(0);
            double layers = 0.0;
            for (const auto& [kind, n] : chunk.at("layers").as_object())
                layers += n.to_number<double>();
            BOOST_TEST(chunk.at("forward_time").to_number<double>() ==
                           layers * (layer_forward + 0.1 + 0.5 * collectives),
                       tt::tolerance(1e-9));
        }
    }
    expect_input_error(
        with({"--device-tflops", "400", "--memory-limit-mb", "80000", "--tp-comm-overlap"}),
        {"--tp-comm-overlap: the layers' collectives are timed on a cluster's "
         "links only"});
    // --device is the table's device with the default fraction, as a cluster of it.
    const std::string default_h100 =
        write_file(R"({"format": "ppb.cluster/1", "device": "H100"})", "h100.json");
    BOOST_TEST(json::serialize(parse_json(with({"--device", "H100"}).out).at("ranking")) ==
               json::serialize(parse_json(with({"--cluster", default_h100}).out).at("ranking")));
    // A limit given wins over the device's memory.
    const auto limited = with({"--device", "H100", "--memory-limit-mb", "60000"});
    BOOST_TEST_REQUIRE(limited.exit_code == 0, limited.err);
    BOOST_TEST(parse_json(limited.out).at("search").at("memory_limit_mb").to_number<double>() ==
               60000.0);
    // Bad input: an unknown device, conflicting flags, a bad description, no limit at all.
    expect_input_error(
        with({"--device", "H10O"}),
        {"--device: unknown device 'H10O' (did you mean 'H100'?)",
         "A100, H100, H200, B200, B300, GB200, GB300, MI300X, MI325X, MI355X, Ascend910B"});
    expect_input_error(with({"--device", "H100", "--device-tflops", "300"}),
                       {"--device-tflops excludes --device"});
    expect_input_error(with({"--device", "H100", "--cluster", cluster}), {"excludes"});
    expect_input_error(
        with({"--device", "H100", "--comm-time", "1"}),
        {"--comm-time: the cluster's links time the transfers between stages of a model "
         "shape's layers"});
    const std::string fp8 = write_file(
        R"({"format": "ppb.cluster/1", "device": "A100", "precision": "fp8"})", "fp8.json");
    expect_input_error(with({"--cluster", fp8}),
                       {"fp8.json: precision: the device A100 has no fp8 rate"});
    expect_input_error(with({}), {"--memory-limit-mb is required (or --device or --cluster, "
                                  "whose device memory gives it)"});
}

// Several tensor-parallel degrees and micro-batch sizes: each configuration is the shape's with
// its t and b (P x d x t = the devices, M x d x b = the global batch), planned as a search of that
// t and b alone plans it; a layer file's times are for one t and b.
BOOST_AUTO_TEST_CASE(tensor_parallel_degrees_and_micro_batch_sizes_are_searched_together) {
    const std::vector<std::string> common = {
        "search",     "--model",     "analytic", "--model-options",
        shape_file,   "--devices",   "64",       "--global-batch",
        "128",        "--schedules", "1f1b",     "--device",
        "H100",       "--json",      "--top",    "0",
        "--progress", "never"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = common;
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto both = with({"--tensor-parallel", "8,4", "--micro-batch-size", "2,1"});
    BOOST_TEST_REQUIRE(both.exit_code == 0, both.err);
    const json::value doc = parse_json(both.out);
    std::set<std::pair<int, int>> seen;
    for (const json::value& v : doc.at("ranking").as_array()) {
        const int t = v.at("tensor_parallel").to_number<int>();
        const int b = v.at("micro_batch_size").to_number<int>();
        const int p = v.at("pipeline_parallel").to_number<int>();
        const int d = v.at("data_parallel").to_number<int>();
        const int m = v.at("micro_batches").to_number<int>();
        BOOST_TEST(p * d * t == 64);
        BOOST_TEST(m * d * b == 128);
        // The global batch's 128 x 4096 tokens over the iteration and the 64 devices, whatever
        // the order the sizes were listed in.
        BOOST_TEST(v.at("tokens_per_second_per_device").to_number<double>() ==
                       128.0 * 4096 / (v.at("iteration_time").to_number<double>() / 1e3) / 64,
                   tt::tolerance(1e-12));
        seen.insert({t, b});
    }
    BOOST_TEST(seen.size() == 4u);
    // The t = 4, b = 2 configurations as a search of that t and b alone ranks them.
    const auto alone = with({"--tensor-parallel", "4", "--micro-batch-size", "2"});
    BOOST_TEST_REQUIRE(alone.exit_code == 0, alone.err);
    const json::value alone_doc = parse_json(alone.out);
    std::size_t matched = 0;
    for (const json::value& a : alone_doc.at("ranking").as_array()) {
        for (const json::value& v : doc.at("ranking").as_array()) {
            if (v.at("tensor_parallel").to_number<int>() == 4 &&
                v.at("micro_batch_size").to_number<int>() == 2 &&
                v.at("pipeline_parallel") == a.at("pipeline_parallel")) {
                ++matched;
                BOOST_TEST(v.at("iteration_time").to_number<double>() ==
                           a.at("iteration_time").to_number<double>());
                BOOST_TEST(json::serialize(v.at("plan").at("stages")) ==
                           json::serialize(a.at("plan").at("stages")));
            }
        }
    }
    BOOST_TEST(matched == alone_doc.at("ranking").as_array().size());
    BOOST_TEST(matched > 0u);
    // A layer file's times are for one t and b.
    expect_input_error(
        ppb({"search", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--devices", "64",
             "--global-batch", "128", "--memory-limit-mb", "60000", "--tensor-parallel", "4,8"}),
        {"--tensor-parallel: several values need a model shape's layers"});
}

// Every chunk count up to 8 is planned at 10 240 devices: where every mix and split of a stage's
// layers over its chunks is too many to weigh exactly, the configuration's plan is the exact one
// of one recompute setting with balanced chunks, marked, with its gap to a proven lower bound.
BOOST_AUTO_TEST_CASE(every_chunk_count_up_to_eight_is_planned_at_ten_thousand_devices) {
    const std::vector<std::string> args = {
        "search", "--model",    "analytic", "--model-options", shape_file,    "--device",
        "H100",   "--devices",  "10240",    "--global-batch",  "5120",        "--pipeline-degrees",
        "4,8,10", "--chunks",   "2,4,8",    "--schedules",     "interleaved", "--top",
        "0",      "--progress", "never"};
    std::vector<std::string> as_json = args;
    as_json.push_back("--json");
    const auto r = ppb(as_json);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    BOOST_TEST(doc.at("not_planned").as_array().empty(), r.out);
    std::set<std::pair<int, int>> planned;
    std::size_t not_exact = 0;
    for (const json::value& v : doc.at("ranking").as_array()) {
        const int p = v.at("pipeline_parallel").to_number<int>();
        const int chunks = v.at("chunks").to_number<int>();
        planned.insert({p, chunks});
        const json::value& plan = v.at("plan");
        BOOST_TEST(plan.at("exact") == v.at("exact"));
        if (v.at("exact").as_bool()) {
            BOOST_TEST(plan.at("not_exact_because").is_null());
            continue;
        }
        ++not_exact;
        BOOST_TEST(std::string(plan.at("not_exact_because").as_string())
                       .find(fmt::format("planning {} chunks per stage exactly", chunks)) == 0u);
        BOOST_TEST(plan.at("balanced_chunks").as_bool());
        // Megatron's flags of one setting, and chunks of a stage within one layer of each other.
        for (const json::value& stage : plan.at("stages").as_array()) {
            int lo = 1000, hi = 0;
            for (const json::value& chunk : stage.at("chunks").as_array()) {
                int n = 0;
                for (const auto& [kind, count] : chunk.at("layers").as_object())
                    n += count.to_number<int>();
                lo = std::min(lo, n);
                hi = std::max(hi, n);
            }
            BOOST_TEST(hi - lo <= 1);
            // Within the H100's limit: its runtime memory less what is kept outside the
            // allocator.
            BOOST_TEST(stage.at("memory_mb").to_number<double>() <=
                       doc.at("search").at("memory_limit_mb").to_number<double>());
        }
        const json::value& simulated = plan.at("simulated");
        if (!simulated.at("lower_bound").is_null()) {
            BOOST_TEST(simulated.at("lower_bound").to_number<double>() <=
                       simulated.at("makespan").to_number<double>());
            BOOST_TEST(simulated.at("gap").to_number<double>() < 0.15);
        }
    }
    // P = 4, 8, 10 by 2, 4 and 8 chunks: 80 layers leave P = 10 with 8 chunks its 80 positions.
    BOOST_TEST(planned.size() == 9u);
    BOOST_TEST(not_exact > 0u);
    // The table marks them.
    const auto table = ppb(args);
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("interleaved v=8  any*") != std::string::npos, table.out);
    BOOST_TEST(table.out.find("*: too large to plan exactly under the policy") !=
               std::string::npos);
}

// With 8 chunks a probed model is asked only for stages it can hold (it once was asked for 180
// layers of a 32-layer model: the affinity check put c + 1 layers of every kind in chunk c).
BOOST_AUTO_TEST_CASE(eight_chunks_of_a_probed_model_ask_it_for_layers_it_has) {
    std::ifstream in(shape_file);
    std::stringstream text;
    text << in.rdbuf();
    json::object shape = parse_json(text.str()).as_object();
    shape["num_layers"] = 32;
    const auto r = ppb({"partition", "--model", "analytic", "--model-options",
                        write_file(json::serialize(shape), "shape32.json"), "--device", "H100",
                        "--stages", "2", "--micro-batches", "8", "--schedule", "interleaved",
                        "--chunks", "8", "--recompute-rule", "any", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    BOOST_TEST(doc.at("num_chunks").to_number<int>() == 8);
    int layers = 0;
    for (const json::value& stage : doc.at("stages").as_array()) {
        BOOST_TEST(stage.at("chunks").as_array().size() == 8u);
        for (const json::value& chunk : stage.at("chunks").as_array()) {
            for (const auto& [kind, count] : chunk.at("layers").as_object())
                layers += count.to_number<int>();
        }
    }
    BOOST_TEST(layers == 32);
}

// Context-parallel degrees are searched with the shape's: each configuration's shape gets its
// cp (its times: the sequence split over cp, the ring's K/V exchange; its memory), d = N / (P t
// cp), and a cp = 2 configuration is planned as a search of cp = 2 alone plans it.
BOOST_AUTO_TEST_CASE(context_parallel_degrees_are_searched_with_the_shape) {
    std::ifstream in(shape_file);
    std::stringstream text;
    text << in.rdbuf();
    json::object shape = parse_json(text.str()).as_object();
    shape["flash_attention"] = true;  // Transformer Engine's context parallelism needs it
    shape["seq_length"] = 8192;
    const std::string file = write_file(json::serialize(shape), "shape8k.json");
    const std::vector<std::string> common = {
        "search", "--model",           "analytic", "--model-options", file,   "--devices",
        "64",     "--global-batch",    "128",      "--schedules",     "1f1b", "--device",
        "H100",   "--tensor-parallel", "4",        "--top",           "0",    "--progress",
        "never"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = common;
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto both = with({"--context-parallel", "1,2", "--json"});
    BOOST_TEST_REQUIRE(both.exit_code == 0, both.err);
    const json::value doc = parse_json(both.out);
    std::set<int> seen;
    for (const json::value& v : doc.at("ranking").as_array()) {
        const int cp = v.at("context_parallel").to_number<int>();
        const int p = v.at("pipeline_parallel").to_number<int>();
        const int d = v.at("data_parallel").to_number<int>();
        BOOST_TEST(p * d * 4 * cp == 64);
        BOOST_TEST(v.at("micro_batches").to_number<int>() * d == 128);
        // The global batch's 128 x 8192 tokens over the iteration and the 64 devices.
        BOOST_TEST(v.at("tokens_per_second_per_device").to_number<double>() ==
                       128.0 * 8192 / (v.at("iteration_time").to_number<double>() / 1e3) / 64,
                   tt::tolerance(1e-12));
        seen.insert(cp);
    }
    BOOST_TEST((seen == std::set<int>{1, 2}));
    const auto alone = with({"--context-parallel", "2", "--json"});
    BOOST_TEST_REQUIRE(alone.exit_code == 0, alone.err);
    const json::value alone_doc = parse_json(alone.out);
    std::size_t matched = 0;
    for (const json::value& a : alone_doc.at("ranking").as_array()) {
        BOOST_TEST(a.at("context_parallel").to_number<int>() == 2);
        for (const json::value& v : doc.at("ranking").as_array()) {
            if (v.at("context_parallel").to_number<int>() == 2 &&
                v.at("pipeline_parallel") == a.at("pipeline_parallel")) {
                ++matched;
                BOOST_TEST(v.at("iteration_time").to_number<double>() ==
                           a.at("iteration_time").to_number<double>());
                BOOST_TEST(json::serialize(v.at("plan").at("stages")) ==
                           json::serialize(a.at("plan").at("stages")));
            }
        }
    }
    BOOST_TEST(matched > 0u);
    // The table has a CP column.
    const auto table = with({"--context-parallel", "1,2"});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("RANK  PP  DP  CP") != std::string::npos, table.out);
    BOOST_TEST(table.out.find("context parallel 1,2") != std::string::npos);
    // Without flash attention the analytic model refuses cp = 2 (Transformer Engine's context
    // parallelism runs in its fused kernels only): each memory model it is asked for (one per
    // t, cp, b and d) refuses once, said once with the configurations it stops; P = 16 with
    // cp = 2 would need 128 devices a replica and is left out, where cp = 1 takes it.
    shape["flash_attention"] = false;
    const std::string unfused = write_file(json::serialize(shape), "shape8k-unfused.json");
    const auto refused = ppb({"search",    "--model",
                              "analytic",  "--model-options",
                              unfused,     "--devices",
                              "64",        "--global-batch",
                              "128",       "--schedules",
                              "1f1b",      "--device",
                              "H100",      "--tensor-parallel",
                              "4",         "--pipeline-degrees",
                              "2,4,16",    "--context-parallel",
                              "1,2",       "--recompute",
                              "none,full", "--progress",
                              "never"});
    BOOST_TEST_REQUIRE(refused.exit_code == 0, refused.err);
    const std::string heading = "\nCannot be planned:\n";
    const std::size_t cannot = refused.out.find(heading);
    BOOST_TEST_REQUIRE(cannot != std::string::npos, refused.out);
    const std::string listed = refused.out.substr(cannot + heading.size());
    BOOST_TEST(listed.starts_with("  P=2 d=4 M=32 1f1b recompute none, P=2 d=4 M=32 1f1b recompute "
                                  "full: the memory model refuses tensor_parallel = 4, "
                                  "micro_batch_size = 1, data_parallel = 4, context_parallel = 2"),
               listed);
    BOOST_TEST(listed.find("\n  P=4 d=2 M=64 1f1b recompute none, P=4 d=2 M=64 1f1b recompute "
                           "full: the memory model refuses") != std::string::npos,
               listed);
    BOOST_TEST(listed.find("context_parallel 2 needs flash_attention") != std::string::npos);
    BOOST_TEST(std::ranges::count(listed, '\n') == 2, listed);
    BOOST_TEST(refused.out.find("4 cannot be planned; 1 combination left out") != std::string::npos,
               refused.out);
    // A layer file's times are for one cp.
    expect_input_error(
        ppb({"search", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--devices", "64",
             "--global-batch", "128", "--memory-limit-mb", "60000", "--context-parallel", "1,2"}),
        {"--context-parallel: several values need a model shape's layers"});
}

// --data-parallel-sharding: each sharding a configuration of its own, its memory from the shape
// with that sharding and its transfers timed for it (ppb/partition/communication.hpp).
BOOST_AUTO_TEST_CASE(the_data_parallel_sharding_is_searched_with_the_shape) {
    const std::vector<std::string> common = {
        "search",         shape_file, "--model",     "analytic",  "--devices",  "64",
        "--global-batch", "128",      "--device",    "H100",      "--top",      "0",
        "--schedules",    "1f1b",     "--recompute", "none,full", "--progress", "never"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = common;
        args.insert(args.begin() + 1, "--model-options");
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto both = with({"--data-parallel-sharding", "optim,optim_grads_params", "--json"});
    BOOST_TEST_REQUIRE(both.exit_code == 0, both.err);
    const json::value doc = parse_json(both.out);
    BOOST_TEST(json::serialize(doc.at("search").at("data_parallel_sharding")) ==
               R"(["optim","optim_grads_params"])");
    // Per (P, recompute): the entry of each sharding.
    std::map<std::pair<int, std::string>, std::map<std::string, const json::object*>> entries;
    for (const json::value& v : doc.at("ranking").as_array()) {
        entries[{v.at("pipeline_parallel").to_number<int>(),
                 std::string(v.at("recompute").as_string())}]
               [std::string(v.at("data_parallel_sharding").as_string())] = &v.as_object();
    }
    std::size_t compared = 0;
    for (const auto& [key, by_sharding] : entries) {
        if (by_sharding.size() != 2)
            continue;
        const json::object& optim = *by_sharding.at("optim");
        const json::object& fsdp = *by_sharding.at("optim_grads_params");
        const double optim_time = optim.at("iteration_time").to_number<double>();
        const double fsdp_time = fsdp.at("iteration_time").to_number<double>();
        // FSDP leaves nothing for after the iteration: its gathers and reductions are per layer.
        BOOST_TEST(fsdp.at("data_parallel_sync_time").to_number<double>() == 0.0);
        // Each in the frameworks' settings: Megatron-FSDP's flags, FSDP2's shard degree; the
        // distributed optimizer has no torchtitan setting.
        const json::array& fsdp_flags = fsdp.at("megatron_parallelism").as_array();
        BOOST_TEST(json::serialize(json::array(fsdp_flags.end() - 5, fsdp_flags.end())) ==
                   R"(["--use-megatron-fsdp","--data-parallel-sharding-strategy",)"
                   R"("optim_grads_params","--ckpt-format","fsdp_dtensor"])");
        BOOST_TEST(optim.at("megatron_parallelism").as_array().back() ==
                   "--use-distributed-optimizer");
        BOOST_TEST(fsdp.at("torchtitan_parallelism")
                       .at("parallelism.data_parallel_shard_degree")
                       .to_number<int>() == optim.at("data_parallel").to_number<int>());
        BOOST_TEST(optim.at("torchtitan_parallelism").is_null());
        if (optim.at("data_parallel").to_number<int>() == 1) {
            // One replica moves nothing either way: the same plan, the same iteration.
            BOOST_TEST(fsdp_time == optim_time, tt::tolerance(1e-12));
        } else {
            // Two replicas, 8 ranks apart on two nodes: each layer's gathers and reduction cross
            // the network (50 GB/s) and outlast its compute, per micro-batch.
            BOOST_TEST(fsdp_time > optim_time, key.first << " stages");
            // Sharded weights and gradients: less memory on the fullest stage.
            BOOST_TEST(fsdp.at("peak_memory_mb").to_number<double>() <
                       optim.at("peak_memory_mb").to_number<double>());
        }
        ++compared;
    }
    BOOST_TEST(compared >= 3u);
    // One sharding searched is the search without the flag, for the shape's own (optim).
    const auto own = with({"--json"});
    const auto optim_only = with({"--data-parallel-sharding", "optim", "--json"});
    BOOST_TEST_REQUIRE(own.exit_code == 0, own.err);
    BOOST_TEST_REQUIRE(optim_only.exit_code == 0, optim_only.err);
    const json::value own_doc = parse_json(own.out);
    const json::value optim_doc = parse_json(optim_only.out);
    const json::array& own_ranking = own_doc.at("ranking").as_array();
    const json::array& optim_ranking = optim_doc.at("ranking").as_array();
    BOOST_TEST_REQUIRE(own_ranking.size() == optim_ranking.size());
    for (std::size_t i = 0; i < own_ranking.size(); ++i) {
        BOOST_TEST(own_ranking[i].at("iteration_time") == optim_ranking[i].at("iteration_time"));
        BOOST_TEST(optim_ranking[i].at("data_parallel_sharding").as_string() == "optim");
        BOOST_TEST(!own_ranking[i].as_object().contains("data_parallel_sharding"));
    }
    // The table names each line's sharding.
    const auto table = with({"--data-parallel-sharding", "optim,optim_grads_params"});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("RANK  PP  DP  SHARDING") != std::string::npos, table.out);
    BOOST_TEST(table.out.find("data-parallel sharding optim,optim_grads_params") !=
               std::string::npos);
    // Bad input.
    expect_input_error(with({"--data-parallel-sharding", "zero3"}),
                       {"--data-parallel-sharding", "zero3"});
    expect_input_error(
        ppb({"search", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--devices", "64",
             "--global-batch", "128", "--memory-limit-mb", "60000", "--data-parallel-sharding",
             "optim_grads_params"}),
        {"--data-parallel-sharding: the sharding changes the memory and the transfers, which need "
         "a model shape"});
}

// Under the table, rank 1 as each framework takes it: its degrees and batch (the --json entry's
// megatron_parallelism, torchtitan_parallelism) with its plan's flags and tables.
BOOST_AUTO_TEST_CASE(rank_one_is_printed_as_each_framework_runs_it) {
    const std::vector<std::string> common = {"search",
                                             "--model-options",
                                             shape_file,
                                             "--model",
                                             "analytic",
                                             "--devices",
                                             "32",
                                             "--global-batch",
                                             "64",
                                             "--device",
                                             "H100",
                                             "--schedules",
                                             "1f1b,interleaved",
                                             "--recompute-rule",
                                             "megatron",
                                             "--top",
                                             "3",
                                             "--progress",
                                             "never"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = common;
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto text = with({});
    const auto json_run = with({"--json"});
    BOOST_TEST_REQUIRE(text.exit_code == 0, text.err);
    BOOST_TEST_REQUIRE(json_run.exit_code == 0, json_run.err);
    const json::object first = parse_json(json_run.out).at("ranking").at(0).as_object();
    // Megatron-LM: the degrees, then the plan's flags but its --pipeline-model-parallel-size (the
    // same P), the layout quoted for the shell.
    std::vector<std::string> tokens;
    for (const json::value& t : first.at("megatron_parallelism").as_array())
        tokens.emplace_back(t.as_string());
    const json::array& plan_args = first.at("plan").at("megatron").at("args").as_array();
    BOOST_TEST_REQUIRE(plan_args.at(0).as_string() == "--pipeline-model-parallel-size");
    BOOST_TEST(plan_args.at(1) == first.at("megatron_parallelism").at(3));
    for (std::size_t i = 2; i < plan_args.size(); ++i) {
        const std::string token(plan_args[i].as_string());
        tokens.push_back(token.find('|') != std::string::npos ? "\"" + token + "\"" : token);
    }
    std::string line;
    for (const std::string& t : tokens)
        line += (line.empty() ? "" : " ") + t;
    BOOST_TEST(line.find("--pipeline-model-parallel-layout \"E") != std::string::npos, line);
    const std::size_t block = text.out.find(
        "\nRank 1 as each framework takes it (every rank's in --json):\n"
        "MindFormers / SAPP configuration:\n");
    BOOST_TEST_REQUIRE(block != std::string::npos, text.out);
    const std::string rank_one = text.out.substr(block);
    BOOST_TEST(rank_one.find("\nMegatron-LM flags:\n  " + line + "\n") != std::string::npos,
               rank_one << "\nexpected: " << line);
    BOOST_TEST(rank_one.find("\nMindSpeed-LLM flags:\n  --tensor-model-parallel-size 8 ") !=
               std::string::npos);
    // torchtitan: the degrees first in [parallelism], the batch in [training].
    const json::object& titan = first.at("torchtitan_parallelism").as_object();
    const auto setting = [&](const char* key) { return titan.at(key).to_number<std::uint64_t>(); };
    BOOST_TEST(rank_one.find(fmt::format(
                   "torchtitan job configuration (TOML):\n  [parallelism]\n"
                   "  tensor_parallel_degree = 8\n  pipeline_parallel_degree = {}\n"
                   "  context_parallel_degree = 1\n  data_parallel_shard_degree = {}\n"
                   "  pipeline_parallel_microbatch_size = 1\n  pipeline_parallel_schedule = \"",
                   setting("parallelism.pipeline_parallel_degree"),
                   setting("parallelism.data_parallel_shard_degree"))) != std::string::npos,
               rank_one);
    BOOST_TEST(rank_one.find(fmt::format("  [training]\n  local_batch_size = {}\n"
                                         "  global_batch_size = 64\n  [activation_checkpoint]\n",
                                         setting("training.local_batch_size"))) !=
               std::string::npos);
    // MindFormers: pp_interleave_num beside the plan's offset, parallel_config and runner_config
    // between the model and recompute_config.
    const json::object& mf = first.at("mindformers_parallelism").as_object();
    const auto mf_setting = [&](const char* key) { return mf.at(key).to_number<std::uint64_t>(); };
    const bool interleaved = first.at("schedule").as_string() == "interleaved";
    BOOST_TEST(rank_one.find(fmt::format(
                   "MindFormers / SAPP configuration:\n  model:\n    model_config:\n{}"
                   "      offset: ",
                   interleaved ? fmt::format("      pp_interleave_num: {}\n",
                                             first.at("chunks").to_number<std::uint32_t>())
                               : std::string())) != std::string::npos,
               rank_one);
    BOOST_TEST(rank_one.find(fmt::format(
                   "\n  parallel_config:\n    data_parallel: {}\n    model_parallel: 8\n"
                   "    pipeline_stage: {}\n    micro_batch_num: {}\n  runner_config:\n"
                   "    batch_size: 1\n  recompute_config:\n",
                   first.at("data_parallel").to_number<std::uint64_t>(),
                   mf_setting("parallel_config.pipeline_stage"),
                   first.at("micro_batches").to_number<std::uint64_t>())) != std::string::npos,
               rank_one);
    // A sharding torchtitan does not have: its block says why, Megatron's has the flag.
    const auto optim = with({"--data-parallel-sharding", "optim"});
    BOOST_TEST_REQUIRE(optim.exit_code == 0, optim.err);
    BOOST_TEST(optim.out.find("torchtitan job configuration (TOML):\n  none (torchtitan shards the "
                              "weights, gradients and optimizer state together (FSDP2, "
                              "optim_grads_params) or replicates them (no_shard), not the "
                              "optimizer state alone)\n") != std::string::npos,
               optim.out);
    BOOST_TEST(optim.out.find(" --use-distributed-optimizer --num-layers 80 ") != std::string::npos,
               optim.out);
    BOOST_TEST(optim.out.find("MindFormers / SAPP configuration:\n  none (ppb does not map the "
                              "data-parallel sharding optim to MindFormers' optimizer parallelism "
                              "(parallel.enable_parallel_optimizer), which shards otherwise)\n") !=
               std::string::npos);
    // One stage: torchtitan does not pipeline, no schedule or model parts.
    const auto one = with({"--pipeline-degrees", "1", "--memory-limit-mb", "200000"});
    BOOST_TEST_REQUIRE(one.exit_code == 0, one.err);
    BOOST_TEST(
        one.out.find("  data_parallel_shard_degree = 4\n  [training]\n  local_batch_size = 1\n"
                     "  global_batch_size = 64\n") != std::string::npos,
        one.out);
    BOOST_TEST(one.out.find("module_fqns_per_model_part") == std::string::npos);
    BOOST_TEST(one.out.find("    pipeline_stage: 1\n  runner_config:\n    batch_size: 1\n"
                            "    gradient_accumulation_steps: 16\n") != std::string::npos,
               one.out);
}

// --expert-parallel: each EP of an MoE shape a configuration of its own where EP x ETP divides the
// t x cp x d ranks of a stage (left out, with the reason, where it does not), its memory and
// expert all-to-all from the shape with that EP.
BOOST_AUTO_TEST_CASE(expert_parallel_degrees_are_searched_with_an_moe_shape) {
    const std::string deepseek = std::string(PPB_SAMPLES_DIR) + "/moe/deepseek-v3-shape.json";
    const std::vector<std::string> common = {
        "search", "--model",        "analytic", "--model-options",
        deepseek, "--devices",      "256",      "--pipeline-degrees",
        "8,16",   "--global-batch", "1024",     "--device",
        "H100",   "--schedules",    "1f1b",     "--recompute",
        "full",   "--top",          "0",        "--progress",
        "never"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = common;
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto r = with({"--expert-parallel", "8,16,64", "--json", "--show-infeasible"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    BOOST_TEST(json::serialize(doc.at("search").at("expert_parallel")) == "[8,16,64]");
    std::map<std::pair<int, int>, double> iteration;  // (P, EP): ms
    for (const json::value& v : doc.at("ranking").as_array()) {
        const int ep = v.at("expert_parallel").to_number<int>();
        const int p = v.at("pipeline_parallel").to_number<int>();
        BOOST_TEST(v.at("data_parallel").to_number<int>() % ep == 0);
        // The degrees, the dispatcher the all-to-all was timed with (Megatron-LM's default is
        // allgather), then the shape's distributed optimizer.
        const json::array& flags = v.at("megatron_parallelism").as_array();
        BOOST_TEST(json::serialize(json::array(flags.end() - 5, flags.end())) ==
                   fmt::format(R"(["--expert-model-parallel-size","{}",)"
                               R"("--moe-token-dispatcher-type","alltoall",)"
                               R"("--use-distributed-optimizer"])",
                               ep));
        BOOST_TEST(v.at("torchtitan_parallelism")
                       .at("parallelism.expert_parallel_degree")
                       .to_number<int>() == ep);
        iteration[{p, ep}] = v.at("iteration_time").to_number<double>();
    }
    // Eight experts' ranks share a node (NVLink); sixteen cross the network, 50 GB/s, for each
    // MoE layer's dispatch and combine.
    BOOST_TEST_REQUIRE(iteration.contains({16, 8}));
    BOOST_TEST_REQUIRE(iteration.contains({16, 16}));
    BOOST_TEST(iteration.at({16, 8}) < iteration.at({16, 16}));
    // EP 64 does not divide the 16 or 32 ranks of a stage: left out, with why.
    std::size_t left_out = 0;
    for (const json::value& s : doc.at("skipped_configurations").as_array()) {
        if (s.at("configuration").as_string().ends_with("ep=64")) {
            ++left_out;
            BOOST_TEST(std::string(s.at("reason").as_string())
                           .starts_with("expert parallel 64 x expert tensor parallel 1 does not "
                                        "divide the"));
        }
    }
    BOOST_TEST(left_out == 2u);
    // One EP searched is the search of a shape holding it (for what both plan).
    const auto sixteen = with({"--expert-parallel", "16", "--json"});
    BOOST_TEST_REQUIRE(sixteen.exit_code == 0, sixteen.err);
    std::ifstream in(deepseek);
    std::stringstream text;
    text << in.rdbuf();
    json::object shape = parse_json(text.str()).as_object();
    shape["moe"].as_object()["expert_parallel"] = 16;
    const std::string own_file = write_file(json::serialize(shape), "deepseek-ep16.json");
    std::vector<std::string> own_args = common;
    own_args[4] = own_file;
    own_args.emplace_back("--json");
    const auto own = ppb(own_args);
    BOOST_TEST_REQUIRE(own.exit_code == 0, own.err);
    const json::value a = parse_json(sixteen.out);
    const json::value b = parse_json(own.out);
    BOOST_TEST_REQUIRE(a.at("ranking").as_array().size() == b.at("ranking").as_array().size());
    for (std::size_t i = 0; i < a.at("ranking").as_array().size(); ++i) {
        BOOST_TEST(a.at("ranking").at(i).at("iteration_time") ==
                   b.at("ranking").at(i).at("iteration_time"));
    }
    // The table has an EP column.
    const auto table = with({"--expert-parallel", "8,16"});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("RANK  PP  DP  EP") != std::string::npos, table.out);
    // A dense shape has no experts to spread.
    expect_input_error(
        ppb({"search", "--model", "analytic", "--model-options", shape_file, "--devices", "64",
             "--global-batch", "128", "--device", "H100", "--expert-parallel", "8"}),
        {"--expert-parallel: the experts' degree changes the memory and the expert "
         "all-to-all, which need a model shape with \"moe\""});
    expect_input_error(with({"--expert-parallel", "0"}), {"--expert-parallel"});
}

// --expert-tensor-parallel: each ETP of an MoE shape a configuration of its own, with each EP,
// where EP x ETP divides the t x cp x d ranks of a stage; its memory and times from the shape
// with that ETP, its flags in every framework (torchtitan: ETP 1 or t only).
BOOST_AUTO_TEST_CASE(expert_tensor_parallel_degrees_are_searched_with_an_moe_shape) {
    const std::string mixtral = std::string(PPB_SAMPLES_DIR) + "/moe/mixtral-8x7b-shape.json";
    const std::vector<std::string> common = {
        "search", "--model",  "analytic", "--model-options", mixtral, "--devices",
        "32",     "--device", "H100",     "--global-batch",  "128",   "--schedules",
        "1f1b",   "--top",    "0",        "--progress",      "never"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = common;
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto r = with({"--expert-parallel", "4,16", "--expert-tensor-parallel", "1,2",
                         "--show-infeasible", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    BOOST_TEST(json::serialize(doc.at("search").at("expert_tensor_parallel")) == "[1,2]");
    std::set<std::pair<int, int>> seen;  // (EP, ETP)
    for (const json::value& v : doc.at("ranking").as_array()) {
        const int ep = v.at("expert_parallel").to_number<int>();
        const int etp = v.at("expert_tensor_parallel").to_number<int>();
        seen.insert({ep, etp});
        BOOST_TEST(
            (v.at("tensor_parallel").to_number<int>() * v.at("data_parallel").to_number<int>()) %
                (ep * etp) ==
            0);
        const json::array& flags = v.at("megatron_parallelism").as_array();
        const auto at =
            std::find(flags.begin(), flags.end(), json::value("--expert-tensor-parallel-size"));
        BOOST_TEST_REQUIRE((at != flags.end() && at + 1 != flags.end()));
        BOOST_TEST(*(at + 1) == json::value(std::to_string(etp)));
        // torchtitan: ETP 1 or t = 2, each as sized.
        BOOST_TEST(v.at("torchtitan_parallelism")
                       .at("parallelism.expert_tensor_parallel_degree")
                       .to_number<int>() == etp);
    }
    BOOST_TEST(seen.contains({4, 1}));
    BOOST_TEST(seen.contains({4, 2}));
    // EP 16 x ETP 2 needs 32 ranks in a stage: only one stage of 16 replicas at t = 2 has them;
    // more stages (16 ranks each, or fewer) leave it out, with why.
    bool left_out = false;
    for (const json::value& s : doc.at("skipped_configurations").as_array()) {
        if (s.at("configuration").as_string().ends_with("ep=16 etp=2")) {
            left_out = true;
            BOOST_TEST(std::string(s.at("reason").as_string())
                           .starts_with("expert parallel 16 x expert tensor parallel 2 does not "
                                        "divide the "));
        }
    }
    BOOST_TEST(left_out);
    // One ETP searched is the search of a shape holding it.
    const auto two = with({"--expert-tensor-parallel", "2", "--json"});
    BOOST_TEST_REQUIRE(two.exit_code == 0, two.err);
    std::ifstream in(mixtral);
    std::stringstream text;
    text << in.rdbuf();
    json::object shape = parse_json(text.str()).as_object();
    shape["moe"].as_object()["expert_tensor_parallel"] = 2;
    std::vector<std::string> own_args = common;
    own_args[4] = write_file(json::serialize(shape), "mixtral-etp2.json");
    own_args.emplace_back("--json");
    const auto own = ppb(own_args);
    BOOST_TEST_REQUIRE(own.exit_code == 0, own.err);
    const json::value two_doc = parse_json(two.out);
    const json::value own_doc = parse_json(own.out);
    const json::array& a = two_doc.at("ranking").as_array();
    const json::array& b = own_doc.at("ranking").as_array();
    BOOST_TEST_REQUIRE(a.size() == b.size());
    BOOST_TEST_REQUIRE(!a.empty());
    for (std::size_t i = 0; i < a.size(); ++i) {
        BOOST_TEST(a.at(i).at("iteration_time") == b.at(i).at("iteration_time"));
        BOOST_TEST(a.at(i).at("peak_memory_mb") == b.at(i).at("peak_memory_mb"));
        BOOST_TEST(a.at(i).at("megatron_parallelism") == b.at(i).at("megatron_parallelism"));
    }
    // Slicing the experts in two halves their weights on a rank: the same configuration fits in
    // less with ETP 2 than with the shape's ETP 1.
    const json::value one_doc = parse_json(with({"--expert-tensor-parallel", "1", "--json"}).out);
    const json::array& one = one_doc.at("ranking").as_array();
    BOOST_TEST_REQUIRE(!one.empty());
    const auto peak_of = [](const json::array& ranking, int p) {
        for (const json::value& v : ranking) {
            if (v.at("pipeline_parallel").to_number<int>() == p)
                return v.at("peak_memory_mb").to_number<double>();
        }
        return 0.0;
    };
    BOOST_TEST(peak_of(a, 4) > 0.0);
    BOOST_TEST(peak_of(a, 4) < peak_of(one, 4));
    // The table's columns: EP and ETP, each line's.
    const auto table = with({"--expert-parallel", "4,8", "--expert-tensor-parallel", "1,2"});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("RANK  PP  DP  EP  ETP") != std::string::npos, table.out);
    BOOST_TEST(
        table.out.find("expert parallel 4,8, expert tensor parallel 1,2") != std::string::npos,
        table.out);
    // An ETP torchtitan does not run: the others' settings, and torchtitan's why.
    const auto four = with({"--expert-parallel", "2", "--expert-tensor-parallel", "4", "--json"});
    BOOST_TEST_REQUIRE(four.exit_code == 0, four.err);
    const json::value four_doc = parse_json(four.out);
    const json::value& first = four_doc.at("ranking").at(0);
    BOOST_TEST(first.at("torchtitan_parallelism").is_null());
    BOOST_TEST(std::string(first.at("torchtitan_parallelism_why_not").as_string()) ==
               "torchtitan slices the experts over 1 or the tensor-parallel degree 2 "
               "(parallelism.expert_tensor_parallel_degree), not 4");
    // A dense shape has no experts to slice; 0 is no degree.
    expect_input_error(
        ppb({"search", "--model", "analytic", "--model-options", shape_file, "--devices", "64",
             "--global-batch", "128", "--device", "H100", "--expert-tensor-parallel", "1"}),
        {"--expert-tensor-parallel: the experts' degree changes the memory and the expert "
         "all-to-all, which need a model shape with \"moe\""});
    expect_input_error(with({"--expert-tensor-parallel", "0"}), {"--expert-tensor-parallel"});
}

// Megatron-LM's combined 1F1B (--overlap-moe-expert-parallel-comm) as a schedule: searched beside
// the interleaved one, it hides the expert all-to-all that crosses the network (EP 16 spans two
// nodes of eight B200s) and comes first; its rows carry Megatron-LM's flag and no torchtitan or
// MindFormers settings; full recomputation, which Megatron-LM refuses with it, is left out with
// why; a dense shape has nothing to overlap. `ppb partition` plans it with the flag in the
// layout's flags, and refuses what Megatron-LM refuses, naming the option.
// Without --schedules an MoE shape on a cluster is also searched with the combined 1F1B, where
// Megatron-LM runs it (Megatron-Bridge's recipes turn it on for DeepSeek-V3 and Qwen3): its
// refusals (one expert-parallel rank) are left out, not listed; named, they are listed with why.
// A dense shape, or an MoE shape without a cluster (no all-to-all timed), keeps the three.
BOOST_AUTO_TEST_CASE(an_moe_search_on_a_cluster_considers_the_combined_schedule_by_default) {
    const std::string deepseek = std::string(PPB_SAMPLES_DIR) + "/moe/deepseek-v3-shape.json";
    const auto search = [&](const std::string& shape, std::vector<std::string> more) {
        std::vector<std::string> args = {"search",
                                         "--model",
                                         "analytic",
                                         "--model-options",
                                         shape,
                                         "--devices",
                                         "256",
                                         "--pipeline-degrees",
                                         "8",
                                         "--global-batch",
                                         "1024",
                                         "--recompute",
                                         "none",
                                         "--top",
                                         "0",
                                         "--json",
                                         "--show-infeasible",
                                         "--progress",
                                         "never"};
        args.insert(args.end(), more.begin(), more.end());
        const auto r = ppb(args);
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
        return parse_json(r.out);
    };
    const auto schedules_of = [](const json::value& doc) {
        std::set<std::string> out;
        for (const json::value& s : doc.at("search").at("schedules").as_array())
            out.emplace(s.at("schedule").as_string());
        return out;
    };
    const std::set<std::string> three = {"1f1b", "interleaved", "dualpipe-v"};
    std::set<std::string> four = three;
    four.emplace("combined-1f1b");

    const json::value moe = search(deepseek, {"--device", "B200", "--expert-parallel", "1,16"});
    BOOST_TEST((schedules_of(moe) == four));
    const json::array& ranking = moe.at("ranking").as_array();
    BOOST_TEST_REQUIRE(!ranking.empty());
    // First: the all-to-all of 16 ranks over two nodes hidden under the paired pass.
    BOOST_TEST(ranking.at(0).at("schedule").as_string() == "combined-1f1b");
    BOOST_TEST(ranking.at(0).at("expert_parallel").to_number<int>() == 16);
    for (const json::value& v : ranking) {
        if (v.at("schedule").as_string() == "combined-1f1b")
            BOOST_TEST(v.at("expert_parallel").to_number<int>() == 16);
    }
    BOOST_TEST(moe.at("not_planned").as_array().empty());
    for (const json::value& v : moe.at("not_fitting").as_array()) {
        BOOST_TEST(!(v.at("schedule").as_string() == "combined-1f1b" &&
                     v.at("expert_parallel").to_number<int>() == 1));
    }

    // Named, the refused degrees are listed with Megatron-LM's reason.
    const json::value named =
        search(deepseek, {"--device", "B200", "--expert-parallel", "1,16", "--schedules",
                          "1f1b,interleaved,dualpipe-v,combined-1f1b"});
    bool refused_listed = false;
    for (const json::value& v : named.at("not_planned").as_array()) {
        refused_listed = refused_listed || (v.at("schedule").as_string() == "combined-1f1b" &&
                                            v.at("expert_parallel").to_number<int>() == 1);
    }
    BOOST_TEST(refused_listed);
    BOOST_TEST(json::serialize(named.at("ranking")) == json::serialize(moe.at("ranking")));

    // No cluster, or no experts: the three schedules.
    BOOST_TEST((schedules_of(search(deepseek, {"--device-tflops", "400", "--memory-limit-mb",
                                               "184320", "--expert-parallel", "16"})) == three));
    BOOST_TEST((schedules_of(search(shape_file, {"--device", "H100", "--memory-limit-mb", "80000",
                                                 "--tensor-parallel", "8"})) == three));
}

BOOST_AUTO_TEST_CASE(the_combined_schedule_overlaps_the_expert_all_to_all_as_megatron_runs_it) {
    const std::string deepseek = std::string(PPB_SAMPLES_DIR) + "/moe/deepseek-v3-shape.json";
    // The search, and (`more`) what differs between the runs.
    const auto search = [&](std::vector<std::string> more) {
        std::vector<std::string> args = {
            "search", "--model",           "analytic", "--model-options",
            deepseek, "--devices",         "256",      "--pipeline-degrees",
            "8",      "--global-batch",    "1024",     "--device",
            "B200",   "--expert-parallel", "16",       "--progress",
            "never"};
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto r =
        search({"--schedules", "interleaved,combined-1f1b", "--chunks", "2", "--recompute",
                "none,full", "--top", "0", "--json", "--show-infeasible"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    const json::array& ranking = doc.at("ranking").as_array();
    BOOST_TEST_REQUIRE(ranking.size() == 3u);
    const json::object& first = ranking.at(0).as_object();
    BOOST_TEST(first.at("schedule").as_string() == "combined-1f1b");
    BOOST_TEST(first.at("recompute").as_string() == "none");
    std::optional<double> interleaved;
    for (const json::value& v : ranking) {
        if (v.at("schedule").as_string() == "interleaved" &&
            v.at("recompute").as_string() == "none")
            interleaved = v.at("iteration_time").to_number<double>();
    }
    BOOST_TEST_REQUIRE(interleaved.has_value());
    // The all-to-all over the network is most of an MoE layer's time at 50 GB/s: hidden, the
    // iteration is at least a tenth shorter.
    BOOST_TEST(first.at("iteration_time").to_number<double>() < 0.9 * *interleaved);
    const json::array& flags = first.at("megatron_parallelism").as_array();
    BOOST_TEST(std::find(flags.begin(), flags.end(),
                         json::value("--overlap-moe-expert-parallel-comm")) != flags.end());
    // The table's flags of the first say the degrees' and the plan's switches once each (the
    // plan's own list names the dispatcher too).
    const auto table =
        search({"--schedules", "combined-1f1b", "--recompute", "none", "--top", "1"});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    const std::size_t line_at = table.out.find("\n  --tensor-model-parallel-size");
    BOOST_TEST_REQUIRE(line_at != std::string::npos, table.out);
    const std::string line =
        table.out.substr(line_at + 1, table.out.find('\n', line_at + 1) - line_at - 1);
    const auto count = [&](std::string_view what) {
        std::size_t n = 0;
        for (auto at = line.find(what); at != std::string::npos; at = line.find(what, at + 1))
            ++n;
        return n;
    };
    BOOST_TEST(count("--moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm "
                     "--use-distributed-optimizer --num-layers 61 "
                     "--pipeline-model-parallel-layout") == 1u);
    BOOST_TEST(count("--moe-token-dispatcher-type") == 1u);
    BOOST_TEST(count("--overlap-moe-expert-parallel-comm") == 1u);
    BOOST_TEST(first.at("torchtitan_parallelism").is_null());
    BOOST_TEST(std::string(first.at("torchtitan_parallelism_why_not").as_string())
                   .starts_with("torchtitan has no combined 1F1B"));
    BOOST_TEST(first.at("mindformers_parallelism").is_null());
    for (const json::value& v : ranking) {
        if (v.at("schedule").as_string() == "interleaved") {
            const json::array& f = v.at("megatron_parallelism").as_array();
            BOOST_TEST(std::find(f.begin(), f.end(),
                                 json::value("--overlap-moe-expert-parallel-comm")) == f.end());
        }
    }
    // Left out: one chunk on eight stages, and full recomputation.
    std::map<std::string, std::string> skipped;
    for (const json::value& s : doc.at("skipped_configurations").as_array())
        skipped[std::string(s.at("configuration").as_string())] = s.at("reason").as_string();
    BOOST_TEST(skipped.at("P=8 d=32 M=32 combined-1f1b v=2 recompute full") ==
               "combined-1f1b recomputes no layer fully: Megatron-LM refuses full recomputation "
               "with --overlap-moe-expert-parallel-comm, which runs it");
    BOOST_TEST(
        skipped.at("P=8 d=32 M=32 combined-1f1b v=1")
            .starts_with(
                "combined-1f1b runs at least two chunks per stage (one only without a pipeline"));
    // A dense shape: nothing to overlap, nothing planned, exit 2 with why.
    expect_input_error(
        ppb({"search", "--model", "analytic", "--model-options", shape_file, "--devices", "64",
             "--pipeline-degrees", "4", "--global-batch", "128", "--device", "H100",
             "--memory-limit-mb", "80000", "--schedules", "combined-1f1b"}),
        {"combined-1f1b overlaps the expert all-to-all of MoE layers, and the "
         "model options have none (no \"moe\")"});
    // Without a cluster too: no all-to-all is timed, and Megatron-LM refuses it all the same.
    expect_input_error(
        ppb({"search", "--model", "analytic", "--model-options", shape_file, "--devices", "64",
             "--pipeline-degrees", "4", "--global-batch", "128", "--device-tflops", "400",
             "--memory-limit-mb", "80000", "--schedules", "combined-1f1b"}),
        {"combined-1f1b overlaps the expert all-to-all of MoE layers"});

    // ppb partition: the flag with the layout; what Megatron-LM refuses is exit 2.
    const std::vector<std::string> partition = {"partition",
                                                "--model",
                                                "analytic",
                                                "--model-options",
                                                deepseek,
                                                "--stages",
                                                "8",
                                                "--micro-batches",
                                                "32",
                                                "--device",
                                                "B200",
                                                "--schedule",
                                                "combined-1f1b",
                                                "--memory-limit-mb",
                                                "184320"};
    auto with = [&](std::vector<std::string> args, std::vector<std::string> more) {
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto plan = with(partition, {"--json"});
    BOOST_TEST_REQUIRE(plan.exit_code == 0, plan.err);
    const json::value planned = parse_json(plan.out);
    BOOST_TEST(planned.at("schedule").as_string() == "combined-1f1b");
    BOOST_TEST(planned.at("num_chunks").to_number<int>() == 2);
    // The flags end with the overlap and the dispatcher the plan was timed with: Megatron-LM's
    // default, allgather, is refused with the overlap (transformer_config.py at d98e8a64dd).
    const auto tail = [](const json::value& plan_doc) {
        const json::array& a = plan_doc.at("megatron").at("args").as_array();
        BOOST_TEST_REQUIRE(a.size() >= 3u);
        return std::vector<std::string>{std::string(a[a.size() - 3].as_string()),
                                        std::string(a[a.size() - 2].as_string()),
                                        std::string(a.back().as_string())};
    };
    BOOST_TEST(tail(planned) == (std::vector<std::string>{"--moe-token-dispatcher-type", "alltoall",
                                                          "--overlap-moe-expert-parallel-comm"}),
               boost::test_tools::per_element());
    BOOST_TEST(planned.at("mindspeed_llm").at("args").is_null());
    expect_input_error(with(partition, {"--kinds", "full"}),
                       {"--kinds: combined-1f1b recomputes no layer fully"});
    std::ifstream in(deepseek);
    std::stringstream text;
    text << in.rdbuf();
    json::object shape = parse_json(text.str()).as_object();
    std::vector<std::string> ep1 = partition;
    {
        // A shape timed with DeepEP's dispatcher is run with it, and the table says it once.
        json::object flex = shape;
        flex["moe"].as_object()["token_dispatcher"] = "flex";
        ep1[4] = write_file(json::serialize(flex), "deepseek-flex.json");
        const auto flex_plan = with(ep1, {"--json"});
        BOOST_TEST_REQUIRE(flex_plan.exit_code == 0, flex_plan.err);
        BOOST_TEST(tail(parse_json(flex_plan.out)) ==
                       (std::vector<std::string>{"--moe-token-dispatcher-type", "flex",
                                                 "--overlap-moe-expert-parallel-comm"}),
                   boost::test_tools::per_element());
        const auto flex_table = with(ep1, {"--recompute-rule", "megatron"});
        BOOST_TEST_REQUIRE(flex_table.exit_code == 0, flex_table.err);
        BOOST_TEST(flex_table.out.find("--moe-token-dispatcher-type flex "
                                       "--overlap-moe-expert-parallel-comm\n") !=
                   std::string::npos);
    }
    shape["moe"].as_object()["expert_parallel"] = 1;
    ep1[4] = write_file(json::serialize(shape), "deepseek-ep1.json");
    expect_input_error(ppb(ep1), {"--schedule: Megatron-LM runs --overlap-moe-expert-parallel-comm "
                                  "(combined-1f1b) with expert parallelism only, and "
                                  "moe.expert_parallel is 1"});
    shape["moe"].as_object()["expert_parallel"] = 8;
    shape["mtp_num_layers"] = 2;
    ep1[4] = write_file(json::serialize(shape), "deepseek-mtp2.json");
    expect_input_error(ppb(ep1), {"--schedule: Megatron-LM runs --overlap-moe-expert-parallel-comm "
                                  "(combined-1f1b) with at most one multi-token prediction "
                                  "layer, and mtp_num_layers is 2"});
}

// Megatron-LM's rule (one recompute setting per run) on a dense + MoE shape: 1F1B is planned
// exactly (it was refused), two chunks through one group that bounds the groups, whose footnote
// says why; every plan carries its one setting as Megatron-LM's flags.
BOOST_AUTO_TEST_CASE(megatron_s_rule_ranks_an_moe_shape_under_1f1b_and_with_chunks) {
    const std::string deepseek = std::string(PPB_SAMPLES_DIR) + "/moe/deepseek-v3-shape.json";
    std::vector<std::string> args = {"search", "--model", "analytic", "--model-options", deepseek};
    std::istringstream rest(
        "--devices 256 --pipeline-degrees 16 --global-batch 1024 --device H100 --schedules "
        "1f1b,interleaved --recompute-rule megatron --expert-parallel 8 --top 0 --progress never");
    for (std::string word; rest >> word;)
        args.push_back(word);
    std::vector<std::string> json_args = args;
    json_args.emplace_back("--json");
    const auto r = ppb(json_args);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    BOOST_TEST(doc.at("invalid").to_number<int>() == 0);
    std::map<std::string, bool> exact;  // schedule: exact
    for (const json::value& v : doc.at("ranking").as_array()) {
        const std::string schedule(v.at("schedule").as_string());
        exact[schedule] = v.at("exact").as_bool();
        const json::array& flags = v.at("plan").at("megatron").at("args").as_array();
        BOOST_TEST(std::find(flags.begin(), flags.end(), json::value("--recompute-granularity")) !=
                       flags.end(),
                   schedule);
    }
    BOOST_TEST_REQUIRE(exact.contains("1f1b"));
    BOOST_TEST_REQUIRE(exact.contains("interleaved"));
    BOOST_TEST(exact.at("1f1b"));
    BOOST_TEST(!exact.at("interleaved"));
    const auto table = ppb(args);
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("*: several groups of body layers with more than 2 chunks per "
                              "stage, a zero-bubble schedule or one recompute setting per run "
                              "(Megatron-LM's and torchtitan's rules)") != std::string::npos,
               table.out);
}

// Each ranked configuration's Megatron-LM flags carry what its ranking assumed: the shape's
// sequence parallelism where t > 1 (Megatron-LM turns it off with one tensor-parallel rank), the
// tensor-parallel overlap with it (Megatron-LM refuses it without: megatron/training/arguments.py
// at d98e8a64dd), the overlaps the search timed, the shape's distributed optimizer and expert
// degree where the search does not vary them; a searched sharding or degree is the
// configuration's own.
BOOST_AUTO_TEST_CASE(the_megatron_flags_carry_what_the_ranking_assumed) {
    const std::string dense = write_file(
        R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 8,
            "tensor_parallel": 2, "sequence_parallel": true, "distributed_optimizer": true})",
        "assumed.json");
    const auto flags_of = [](const json::value& entry) {
        std::vector<std::string> out;
        for (const json::value& t : entry.at("megatron_parallelism").as_array())
            out.emplace_back(t.as_string());
        return out;
    };
    const auto has = [](const std::vector<std::string>& flags, const std::string& flag) {
        return std::find(flags.begin(), flags.end(), flag) != flags.end();
    };
    // A search of `shape` on 8 H100s, global batch 32, without recompute, and `more`.
    const auto search = [](const std::string& shape, std::vector<std::string> more) {
        std::vector<std::string> args = {"search", "--model",   "analytic", "--model-options",
                                         shape,    "--devices", "8",        "--global-batch",
                                         "32",     "--device",  "H100",     "--recompute",
                                         "none",   "--json"};
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto r =
        search(dense, {"--tensor-parallel", "1,2", "--pipeline-degrees", "1,2", "--tp-comm-overlap",
                       "--overlap-grad-reduce", "--overlap-param-gather", "--top", "0"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    std::size_t with_tp = 0;
    std::size_t without_tp = 0;
    const json::value doc = parse_json(r.out);
    for (const json::value& entry : doc.at("ranking").as_array()) {
        const std::vector<std::string> flags = flags_of(entry);
        const bool tp = entry.at("tensor_parallel").to_number<int>() > 1;
        (tp ? with_tp : without_tp) += 1;
        BOOST_TEST(has(flags, "--sequence-parallel") == tp);
        BOOST_TEST(has(flags, "--tp-comm-overlap") == tp);
        BOOST_TEST(has(flags, "--overlap-grad-reduce"));
        BOOST_TEST(has(flags, "--overlap-param-gather"));
        BOOST_TEST(has(flags, "--use-distributed-optimizer"));
        BOOST_TEST(!has(flags, "--expert-model-parallel-size"));
    }
    BOOST_TEST(with_tp > 0u);
    BOOST_TEST(without_tp > 0u);
    // A searched sharding is the configuration's; without the overlaps asked, none is named.
    const auto sharded = search(dense, {"--pipeline-degrees", "1", "--data-parallel-sharding",
                                        "optim_grads_params", "--top", "1"});
    BOOST_TEST_REQUIRE(sharded.exit_code == 0, sharded.err);
    const std::vector<std::string> fsdp = flags_of(parse_json(sharded.out).at("ranking").at(0));
    BOOST_TEST(has(fsdp, "--use-megatron-fsdp"));
    BOOST_TEST(!has(fsdp, "--use-distributed-optimizer"));
    BOOST_TEST(has(fsdp, "--sequence-parallel"));
    BOOST_TEST(!has(fsdp, "--tp-comm-overlap"));
    BOOST_TEST(!has(fsdp, "--overlap-grad-reduce"));
    // An MoE shape's own expert degree, where the search does not vary it.
    const std::string moe = write_file(
        R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 4,
            "tensor_parallel": 1, "moe": {"num_experts": 8, "top_k": 2, "expert_parallel": 4,
            "expert_tensor_parallel": 1}})",
        "assumed-moe.json");
    const auto experts = search(moe, {"--pipeline-degrees", "1", "--top", "1"});
    BOOST_TEST_REQUIRE(experts.exit_code == 0, experts.err);
    const std::vector<std::string> ep = flags_of(parse_json(experts.out).at("ranking").at(0));
    const auto at = std::find(ep.begin(), ep.end(), "--expert-model-parallel-size");
    BOOST_TEST_REQUIRE((at != ep.end() && at + 1 != ep.end()));
    BOOST_TEST(*(at + 1) == "4");
    // Its expert tensor parallelism where it gives one (Megatron-LM's default is TP).
    const auto etp = std::find(ep.begin(), ep.end(), "--expert-tensor-parallel-size");
    BOOST_TEST_REQUIRE((etp != ep.end() && etp + 1 != ep.end()));
    BOOST_TEST(*(etp + 1) == "1");
    BOOST_TEST(!has(ep, "--sequence-parallel"));
    BOOST_TEST(!has(ep, "--use-distributed-optimizer"));
    // The dispatcher the experts' all-to-all was timed with: the shape's, alltoall without one
    // (Megatron-LM's own default, allgather, is not what ppb timed).
    const auto dispatcher = [](const std::vector<std::string>& flags) {
        const auto named = std::find(flags.begin(), flags.end(), "--moe-token-dispatcher-type");
        return named == flags.end() || named + 1 == flags.end() ? std::string() : *(named + 1);
    };
    BOOST_TEST(dispatcher(ep) == "alltoall");
    const std::string flex = write_file(
        R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 4,
            "tensor_parallel": 1, "moe": {"num_experts": 8, "top_k": 2, "expert_parallel": 4,
            "token_dispatcher": "flex"}})",
        "assumed-flex.json");
    const auto deepep = search(flex, {"--pipeline-degrees", "1", "--top", "1"});
    BOOST_TEST_REQUIRE(deepep.exit_code == 0, deepep.err);
    BOOST_TEST(dispatcher(flags_of(parse_json(deepep.out).at("ranking").at(0))) == "flex");
    BOOST_TEST(dispatcher(fsdp).empty());  // a dense model names none
    // The shape's own Megatron-FSDP strategy, not searched, is named as it is.
    const std::string sharded_shape = write_file(
        R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 4,
            "tensor_parallel": 1, "data_parallel_sharding": "optim_grads"})",
        "assumed-fsdp.json");
    const auto shape_fsdp = search(sharded_shape, {"--pipeline-degrees", "1", "--top", "1"});
    BOOST_TEST_REQUIRE(shape_fsdp.exit_code == 0, shape_fsdp.err);
    const std::vector<std::string> strategy =
        flags_of(parse_json(shape_fsdp.out).at("ranking").at(0));
    const auto named =
        std::find(strategy.begin(), strategy.end(), "--data-parallel-sharding-strategy");
    BOOST_TEST_REQUIRE((named != strategy.end() && named + 1 != strategy.end()));
    BOOST_TEST(*(named + 1) == "optim_grads");
}

// A delayed- or tensorwise-FP8 shape planned on a Blackwell GPU without fp8_transposes: the
// analytic model counts Hopper's transposes by default, so the command says to set it (the file
// is taken as it is); given, or on an H100, nothing is said.
BOOST_AUTO_TEST_CASE(fp8_transposes_a_blackwell_gpu_does_not_need_are_named) {
    const auto shape = [](std::string_view more) {
        return write_file(
            std::string(R"({"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
            "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 8,
            "tensor_parallel": 1, "fp8_recipe": "tensorwise")") +
                std::string(more) + "}",
            "fp8-shape.json");
    };
    const auto run = [](const std::string& file, const std::string& device,
                        const std::string& command) {
        std::vector<std::string> args = {command, "--model",  "analytic", "--model-options",
                                         file,    "--device", device};
        if (command == "partition") {
            args.insert(args.end(), {"--stages", "2", "--micro-batches", "4"});
        } else {
            args.insert(args.end(), {"--devices", "8", "--global-batch", "16", "--recompute",
                                     "none", "--schedules", "1f1b", "--progress", "never"});
        }
        const auto r = ppb(args);
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
        return r.err;
    };
    const std::string told =
        "which the B200's FP8 products do not need: set \"fp8_transposes\": "
        "false";
    const std::string plain = shape("");
    BOOST_TEST(run(plain, "B200", "partition").find(told) != std::string::npos);
    const std::string searched = run(plain, "B200", "search");
    BOOST_TEST(searched.find(told) != std::string::npos, searched);
    BOOST_TEST(searched.find(told) == searched.rfind(told));  // once, not per configuration
    BOOST_TEST(run(plain, "H100", "partition").find("fp8_transposes") == std::string::npos);
    BOOST_TEST(
        run(shape(R"(, "fp8_transposes": false)"), "B200", "partition").find("fp8_transposes") ==
        std::string::npos);
    BOOST_TEST(
        run(shape(R"(, "fp8_transposes": true)"), "GB200", "partition").find("fp8_transposes") ==
        std::string::npos);
}

// ppb partition of a shape on a cluster shows the data-parallel synchronisation after its
// simulated iteration: with it, the iteration ppb search ranks the same configuration by.
BOOST_AUTO_TEST_CASE(the_partition_adds_the_synchronisation_the_search_ranks_by) {
    const auto search =
        ppb({"search", "--model", "analytic", "--model-options", shape_file, "--device", "H100",
             "--pipeline-degrees", "2", "--data-parallel", "4", "--global-batch", "256",
             "--schedules", "interleaved", "--json", "--progress", "never"});
    BOOST_TEST_REQUIRE(search.exit_code == 0, search.err);
    const json::value doc = parse_json(search.out);
    const double ranked = doc.at("ranking").at(0).at("iteration_time").to_number<double>();
    const auto partition =
        ppb({"partition", "--model", "analytic", "--model-options", shape_file, "--device", "H100",
             "--stages", "2", "--micro-batches", "64", "--schedule", "interleaved"});
    BOOST_TEST_REQUIRE(partition.exit_code == 0, partition.err);
    const std::regex line(R"(Data-parallel synchronisation: ([0-9.]+) ms after the iteration, )"
                          R"(over the shape's 4 replicas \(the iteration with it: ([0-9.]+) ms)");
    std::smatch m;
    BOOST_TEST_REQUIRE(std::regex_search(partition.out, m, line), partition.out);
    BOOST_TEST(std::stod(m[2].str()) == ranked, tt::tolerance(0.05 / ranked));
    BOOST_TEST(std::stod(m[1].str()) > 0.0);
    // --json carries it: the simulated makespan plus it is the ranked iteration.
    const auto as_json =
        ppb({"partition", "--model", "analytic", "--model-options", shape_file, "--device", "H100",
             "--stages", "2", "--micro-batches", "64", "--schedule", "interleaved", "--json"});
    BOOST_TEST_REQUIRE(as_json.exit_code == 0, as_json.err);
    const json::value plan = parse_json(as_json.out);
    BOOST_TEST(plan.at("data_parallel_replicas").to_number<std::uint32_t>() == 4U);
    const double sync = plan.at("data_parallel_sync_time").to_number<double>();
    BOOST_TEST(sync == std::stod(m[1].str()), tt::tolerance(0.05 / std::stod(m[1].str())));
    BOOST_TEST(plan.at("simulated").at("makespan").to_number<double>() + sync == ranked,
               tt::tolerance(1e-9 * ranked));
    // A layer file's times are in their own unit: no synchronisation is timed.
    const auto layer_file =
        ppb({"partition", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--stages", "4",
             "--memory-limit-mb", "60000", "--json"});
    BOOST_TEST_REQUIRE(layer_file.exit_code == 0, layer_file.err);
    BOOST_TEST(!parse_json(layer_file.out).as_object().contains("data_parallel_sync_time"));
    expect_input_error(
        ppb({"partition", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--stages", "4",
             "--memory-limit-mb", "60000", "--overlap-grad-reduce"}),
        {"--overlap-grad-reduce: the data-parallel synchronisation is timed on a "
         "cluster's links only"});
}

// ppb devices: the table, and as JSON with every figure's source.
BOOST_AUTO_TEST_CASE(the_devices_are_listed_with_their_figures) {
    const auto table = ppb({"devices"});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("H100        NVIDIA H100 SXM5 80 GB") != std::string::npos,
               table.out);
    // The vendor's memory and what the runtime reports of it.
    BOOST_TEST(table.out.find("80 GiB   79.11 GiB") != std::string::npos, table.out);
    const auto r = ppb({"devices", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    const json::array& devices = doc.at("devices").as_array();
    BOOST_TEST(devices.size() == 11U);
    BOOST_TEST(devices.at(1).at("bf16_tflops").to_number<double>() == 989.0);
    BOOST_TEST(devices.at(1).at("runtime_memory_gib").to_number<double>() == 79.11);
    // Whether FP8 products need transposed copies: Hopper's do, Blackwell's (B200, B300) do not.
    BOOST_TEST(devices.at(1).at("fp8_transposes").as_bool());
    BOOST_TEST(!devices.at(3).at("fp8_transposes").as_bool());
    BOOST_TEST(devices.at(4).at("name").as_string() == "B300");
    BOOST_TEST(!devices.at(4).at("fp8_transposes").as_bool());
    BOOST_TEST(!devices.at(1).at("source").as_string().empty());
}

BOOST_AUTO_TEST_CASE(what_does_not_fit_is_listed_with_the_limit_that_would) {
    const auto r =
        ppb(search_args({"--devices", "64", "--global-batch", "256", "--memory-limit-mb", "40000",
                         "--schedules", "1f1b", "--show-infeasible", "--json"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = parse_json(r.out).as_object();
    const auto& misfits = doc.at("not_fitting").as_array();
    BOOST_TEST_REQUIRE(misfits.size() == 3u);  // P = 1, 2, 4
    for (const auto& v : misfits) {
        const json::object& e = v.as_object();
        const double limit = e.at("smallest_feasible_limit_mb").to_number<double>();
        BOOST_TEST(limit > 40000.0);
        // At that limit the configuration plans; a little below it does not.
        (void)partition_of(e, {"--dryrun", sample_dryrun}, fmt::format("{:.6f}", limit * 1.000001));
        std::vector<std::string> below = {
            "partition",
            "--model-desc",
            layers_file,
            "--dryrun",
            sample_dryrun,
            "--stages",
            std::to_string(e.at("pipeline_parallel").to_number<int>()),
            "--micro-batches",
            std::to_string(e.at("micro_batches").to_number<int>()),
            "--memory-limit-mb",
            fmt::format("{:.6f}", limit * 0.999)};
        BOOST_TEST(ppb(below).exit_code == 4);
    }
    // The table says the same.
    const auto table =
        ppb(search_args({"--devices", "64", "--global-batch", "256", "--memory-limit-mb", "40000",
                         "--schedules", "1f1b", "--show-infeasible"}));
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("Do not fit 40000.0 MB:") != std::string::npos, table.out);
    BOOST_TEST(table.out.find("SMALLEST LIMIT THAT FITS") != std::string::npos, table.out);
}

BOOST_AUTO_TEST_CASE(nothing_fitting_is_exit_4_with_the_smallest_limit_that_fits_one) {
    const auto r = ppb(search_args({"--devices", "64", "--global-batch", "256", "--memory-limit-mb",
                                    "20000", "--schedules", "1f1b"}));
    expect_failure(r, 4,
                   {"no configuration fits --memory-limit-mb 20000.0 (4 configurations tried): the "
                    "smallest limit that fits one is "});
    // The limit it names: the search then ranks that configuration.
    const auto at = r.err.find("is ") + 3;
    const std::string limit = r.err.substr(at, r.err.find(" MB", at) - at);
    const auto again = ppb(search_args({"--devices", "64", "--global-batch", "256",
                                        "--memory-limit-mb", limit, "--schedules", "1f1b"}));
    BOOST_TEST(again.exit_code == 0, again.err);
    BOOST_TEST(again.out.find("1 planned, 3 do not fit") != std::string::npos, again.out);
}

BOOST_AUTO_TEST_CASE(bad_input_is_exit_2_with_the_reason) {
    expect_input_error(ppb(search_args({"--devices", "64", "--pipeline-degrees", "4",
                                        "--global-batch", "101", "--memory-limit-mb", "40000"})),
                       {"pipeline degree 4: the global batch of 101 samples is not divisible by "
                        "micro-batch size 1 x data-parallel degree 2 = 2"});
    // The names Megatron-LM and 'ppb partition' users reach for are aliases.
    expect_input_error(
        ppb(search_args({"--devices", "64", "--stages", "3", "--global-batch-size", "256",
                         "--schedule", "1f1b", "--memory-limit-mb", "40000"})),
        {"pipeline degree 3 does not divide the 64 devices"});
    expect_input_error(ppb(search_args({"--devices", "64", "--pipeline-degrees", "3",
                                        "--global-batch", "256", "--memory-limit-mb", "40000"})),
                       {"pipeline degree 3 does not divide the 64 devices"});
    expect_input_error(
        ppb(search_args({"--pipeline-degrees", "8", "--global-batch", "12", "--schedules",
                         "interleaved,dualpipe-v", "--memory-limit-mb", "40000"})),
        {"the search space is empty",
         "P=8 d=1 M=12 interleaved v=2: interleaved needs a multiple of the 8 stages",
         "P=8 d=1 M=12 dualpipe-v: dualpipe-v needs at least twice as many micro-batches"});
    expect_input_error(ppb(search_args({"--global-batch", "256", "--memory-limit-mb", "40000"})),
                       {"give --devices or --pipeline-degrees (or both)"});
    expect_input_error(ppb(search_args({"--devices", "64", "--global-batch", "256",
                                        "--memory-limit-mb", "40000", "--recompute", "fast"})),
                       {"recompute policy 'fast': unknown recompute kind 'fast'"});
    expect_input_error(ppb(search_args({"--devices", "64", "--data-parallel", "2", "--global-batch",
                                        "256", "--memory-limit-mb", "40000"})),
                       {"--data-parallel"});
    expect_input_error(ppb(search_args({"--devices", "60", "--global-batch", "256",
                                        "--memory-limit-mb", "40000"})),
                       {"the 60 devices cannot be split into tensor-parallel groups of 8"});
    expect_input_error(
        ppb(search_args({"--devices", "64", "--global-batch", "0", "--memory-limit-mb", "40000"})),
        {"--global-batch"});
    expect_input_error(ppb(search_args({"--devices", "64", "--global-batch", "256",
                                        "--memory-limit-mb", "40000", "--chunks", "1"})),
                       {"--chunks"});
    expect_input_error(
        ppb(search_args({"--devices", "64", "--global-batch", "256", "--memory-limit-mb", "nan"})),
        {"--memory-limit-mb"});
}

BOOST_AUTO_TEST_CASE(the_progress_bar_shows_when_asked_and_never_when_piped_by_default) {
    const std::vector<std::string> common = {
        "--devices",         "64",    "--global-batch", "256",
        "--memory-limit-mb", "40000", "--schedules",    "1f1b"};
    std::vector<std::string> always = common;
    always.insert(always.end(), {"--progress", "always"});
    const auto shown = ppb(search_args(always));
    BOOST_TEST_REQUIRE(shown.exit_code == 0, shown.err);
    BOOST_TEST(shown.err.find("ppb search: [") == 0u, shown.err);
    BOOST_TEST(shown.err.find("/4 configurations") != std::string::npos, shown.err);
    BOOST_TEST(shown.err.find("] 4/4 configurations") != std::string::npos, shown.err);
    const auto quiet = ppb(search_args(common));
    BOOST_TEST(quiet.err.empty(), quiet.err);
    BOOST_TEST(quiet.out == shown.out);
}

// Ctrl-C: the search stops taking configurations, prints the ranking of those planned and exits
// 130. The space is large (thousands of configurations on one thread); the signal is sent once
// the progress bar shows the search has started.
BOOST_AUTO_TEST_CASE(ctrl_c_prints_the_configurations_planned_so_far) {
    std::string degrees;
    for (int p = 1; p <= 80; ++p)
        degrees += (degrees.empty() ? "" : ",") + std::to_string(p);
    std::string policies = "any";
    for (const char* k : {"none", "select", "comm", "both", "full", "none+full", "select+full",
                          "comm+full", "both+full", "none+select", "none+comm", "none+both"})
        policies += std::string(",") + k;
    std::vector<std::string> args = search_args(
        {"--pipeline-degrees", degrees, "--global-batch", "1920", "--memory-limit-mb", "60000",
         "--chunks", "2,3,4,5", "--schedules", "1f1b,interleaved,dualpipe-v", "--recompute",
         policies, "--jobs", "1", "--progress", "always", "--json", "--top", "3"});
    args.insert(args.begin(), PPB_EXE);

    int out_pipe[2], err_pipe[2];
    BOOST_TEST_REQUIRE(pipe(out_pipe) == 0);
    BOOST_TEST_REQUIRE(pipe(err_pipe) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
    posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
    std::vector<char*> argv;
    for (std::string& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    BOOST_TEST_REQUIRE(posix_spawn(&pid, PPB_EXE, &actions, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]);
    close(err_pipe[1]);

    std::string out, err;
    bool sent = false;
    const auto drain = [](int fd, std::string& into) {
        char buffer[65536];
        const ssize_t n = read(fd, buffer, sizeof buffer);
        if (n > 0)
            into.append(buffer, static_cast<std::size_t>(n));
        return n;
    };
    const std::regex started(R"(ppb search: \[[#.]+\] [1-9][0-9]*/)");
    bool out_open = true, err_open = true;
    while (out_open || err_open) {
        pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
        if (poll(fds, 2, 60000) <= 0)
            break;
        if (out_open && (fds[0].revents & (POLLIN | POLLHUP)) != 0 && drain(out_pipe[0], out) <= 0)
            out_open = false;
        if (err_open && (fds[1].revents & (POLLIN | POLLHUP)) != 0 && drain(err_pipe[0], err) <= 0)
            err_open = false;
        // Started, some planned, far from done: stop it.
        if (!sent && std::regex_search(err, started)) {
            kill(pid, SIGINT);
            sent = true;
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(out_pipe[0]);
    close(err_pipe[0]);
    BOOST_TEST_REQUIRE(sent, err);
    BOOST_TEST_REQUIRE(WIFEXITED(status), "ended by signal " << WTERMSIG(status));
    BOOST_TEST(WEXITSTATUS(status) == 130);
    BOOST_TEST(err.find("ppb: interrupted: planned ") != std::string::npos, err);
    const json::object doc = parse_json(out).as_object();
    BOOST_TEST(doc.at("stopped").as_bool() == true);
    const auto planned = doc.at("planned").to_number<std::int64_t>() +
                         doc.at("infeasible").to_number<std::int64_t>() +
                         doc.at("invalid").to_number<std::int64_t>();
    BOOST_TEST(planned >= 1);
    BOOST_TEST(planned < doc.at("configurations").to_number<std::int64_t>());
    BOOST_TEST(err.find(fmt::format("planned {} of {} configurations", planned,
                                    doc.at("configurations").to_number<std::int64_t>())) !=
                   std::string::npos,
               err);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cli_search_readme)

// The walk-through of host_api/docs/commands.md prints exactly what the command prints (run from
// the source tree with the document's relative paths).
BOOST_AUTO_TEST_CASE(the_readme_example_is_what_ppb_search_prints) {
    std::ifstream in(std::string(PPB_SOURCE_DIR) + "/host_api/docs/commands.md");
    std::stringstream text;
    text << in.rdbuf();
    const std::string readme = text.str();
    const std::size_t section = readme.find("## Choosing a configuration (`ppb search`)");
    BOOST_TEST_REQUIRE(section != std::string::npos);
    const std::size_t command = readme.find("```sh\n", section);
    const std::size_t output = readme.find("```\n", readme.find("```\n", command) + 4);
    BOOST_TEST_REQUIRE(output != std::string::npos);
    const std::size_t start = output + 4;
    const std::string expected = readme.substr(start, readme.find("```", start) - start);
    const auto r =
        run_process(PPB_EXE,
                    {"search", "--model-desc", "samples/data/llama70b-layers.json", "--model",
                     "analytic", "--model-options", "samples/data/llama70b-shape.json", "--devices",
                     "512", "--global-batch", "1024", "--memory-limit-mb", "80000", "--recompute",
                     "any,full", "--top", "8"},
                    {{"PPB_PLUGIN_PATH", ""}, {"PPB_DEBUG_PLUGINS", ""}}, "", PPB_SOURCE_DIR);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.out == expected);
    // And the command shown is that one.
    BOOST_TEST(readme.substr(command, output - command)
                   .find("--devices 512 --global-batch 1024 --memory-limit-mb 80000 --recompute "
                         "any,full --top 8") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cli_shape_times)

// Without --model-desc the analytic model's shape times the layers: a LLaMA-2-70B layer's forward
// is its FLOPs per tensor-parallel rank at --device-tflops, its time three forwards.
BOOST_AUTO_TEST_CASE(a_shape_alone_times_the_layers_from_its_flops) {
    const double b = 1, s = 4096, h = 8192, kv = 1024, f = 28672, t = 8;
    const double flops =
        (2 * b * s * h * (h + 2 * kv) + 4 * b * s * s * h + 2 * b * s * h * h + 6 * b * s * h * f) /
        t;
    const double forward_ms = flops / 200e12 * 1e3;  // at 200 TFLOP/s
    const auto r = ppb({"partition", "--model", "analytic", "--model-options", shape_file,
                        "--stages", "8", "--micro-batches", "32", "--memory-limit-mb", "1e6",
                        "--kinds", "none", "--device-tflops", "200", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = parse_json(r.out).as_object();
    const json::object& middle = doc.at("stages").at(3).as_object();
    const double n = middle.at("layers").at("none").to_number<double>();
    BOOST_TEST(std::abs(middle.at("time").to_number<double>() - 3 * n * forward_ms) <
               1e-9 * forward_ms * n);
    // The search takes the same times, and says they are ms.
    const auto searched =
        ppb({"search", "--model", "analytic", "--model-options", shape_file, "--devices", "512",
             "--global-batch", "1024", "--memory-limit-mb", "80000", "--schedules", "1f1b", "--top",
             "1", "--device-tflops", "200"});
    BOOST_TEST_REQUIRE(searched.exit_code == 0, searched.err);
    BOOST_TEST(
        searched.out.find("(FLOPs of " + shape_file + " at 200 TFLOP/s)") != std::string::npos,
        searched.out);
    BOOST_TEST(searched.out.find(" ms ") != std::string::npos, searched.out);
    // Neither a layer file nor a shape: exit 2 naming both ways.
    expect_input_error(ppb({"search", "--dryrun", sample_dryrun, "--devices", "64",
                            "--global-batch", "256", "--memory-limit-mb", "40000"}),
                       {"give --model-desc (a SAPP layer file), or a model shape as "
                        "--model-options"});
    expect_input_error(
        ppb({"search", "--model", "analytic", "--model-options", shape_file, "--devices", "512",
             "--global-batch", "1024", "--memory-limit-mb", "80000", "--device-tflops", "0"}),
        {"--device-tflops"});
}

// Megatron-LM's layer-level CPU offloading (--cpu-offloading-num-layers) runs on one pipeline
// stage and without recomputation (transformer_config.py at d98e8a64dd): a shape that offloads
// layers is planned with the kind none only (the default kinds narrowed, with a warning; the plan
// is --kinds none's), several stages and kinds without none are refused naming the flag, and the
// search leaves out every other pipeline degree with why and plans 'any' as none.
BOOST_AUTO_TEST_CASE(a_shape_that_offloads_layers_is_planned_as_megatron_runs_it) {
    std::ifstream in(shape_file);
    std::stringstream text;
    text << in.rdbuf();
    json::object shape = parse_json(text.str()).as_object();
    shape["cpu_offloading_num_layers"] = 40;
    shape["data_parallel_sharding"] = "optim_grads_params";
    const std::string offloading = write_file(json::serialize(shape), "offloading.json");
    const std::string why =
        "the model shape offloads the activations of 40 layers to the host "
        "(cpu_offloading_num_layers), which Megatron-LM runs on one pipeline "
        "stage and without recomputation";
    const std::vector<std::string> partition = {
        "partition", "--model",  "analytic", "--model-options",
        offloading,  "--stages", "1",        "--micro-batches",
        "16",        "--device", "H100",     "--memory-limit-mb",
        "81920",     "--json"};
    const auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> args = partition;
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const auto planned = with({});
    BOOST_TEST_REQUIRE(planned.exit_code == 0, planned.err);
    BOOST_TEST(planned.err.find("ppb: warning: " + why + ": planned with the kind none only") !=
               std::string::npos);
    const json::value plan = parse_json(planned.out);
    BOOST_TEST(plan.at("stages").at(0).at("layers").at("none").to_number<int>() == 80);
    const auto none_only = with({"--kinds", "none"});
    BOOST_TEST_REQUIRE(none_only.exit_code == 0, none_only.err);
    BOOST_TEST(none_only.err.find("warning") == std::string::npos);
    BOOST_TEST(json::serialize(parse_json(none_only.out)) == json::serialize(plan));
    std::vector<std::string> two_stages = partition;
    two_stages[6] = "2";
    expect_input_error(ppb(two_stages), {"--stages: " + why + ": give 1 stage, not 2"});
    expect_input_error(with({"--kinds", "select,full"}),
                       {"--kinds: " + why + ": give --kinds none"});

    const auto r = ppb({"search", "--model", "analytic", "--model-options", offloading, "--devices",
                        "64", "--global-batch", "128", "--device", "H100", "--recompute",
                        "any,full", "--show-infeasible", "--json", "--progress", "never"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.find(why + ": its configurations are searched on one stage with the kind "
                                "none only") != std::string::npos);
    const json::value doc = parse_json(r.out);
    const json::array& ranking = doc.at("ranking").as_array();
    BOOST_TEST_REQUIRE(ranking.size() == 1u);
    BOOST_TEST(ranking.at(0).at("pipeline_parallel").to_number<int>() == 1);
    BOOST_TEST(ranking.at(0).at("recompute").as_string() == "any");
    BOOST_TEST(json::serialize(ranking.at(0).at("recompute_kinds")) == R"(["none"])");
    std::map<std::string, std::string> skipped;
    for (const json::value& s : doc.at("skipped_configurations").as_array())
        skipped[std::string(s.at("configuration").as_string())] = s.at("reason").as_string();
    for (const char* left_out :
         {"P=2 d=4", "P=4 d=2", "P=8 d=1", "P=1 d=8 M=16 1f1b recompute full"})
        BOOST_TEST(skipped[left_out] == why, left_out);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_search_tests
