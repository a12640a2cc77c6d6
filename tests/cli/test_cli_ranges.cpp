// Counts and values beyond their documented ranges (ppb/limits.hpp) on the command line and in
// the files ppb reads: exit 2 naming the field or option and the range, never "inf" on output,
// never bad_alloc or the OOM killer.
#include "cli_fixture.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace ppb_test;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_ranges_tests {

namespace {

std::string layer_file(const std::string& body) {
    return R"({"layers_description": [
        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 1, "memory_parameter": 100},
        {"name": "decoder", "type": "BODY", )" +
           body + R"(},
        {"name": "head", "type": "TAIL", "nb_layer": 1, "time": 1, "memory_parameter": 100}]})";
}

void expect_no_inf(const ProcessResult& r) {
    BOOST_TEST(r.out.find("inf") == std::string::npos, r.out);
    BOOST_TEST(r.out.find("nan") == std::string::npos, r.out);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_ranges)

// Observed: a BODY nb_layer of 4294967295 was accepted and overran the stage tables.
BOOST_AUTO_TEST_CASE(partition_huge_nb_layer) {
    for (const std::string n : {"4294967295", "1000000000"}) {
        const std::string file = write_file(
            layer_file(R"("nb_layer": )" + n +
                       R"(, "time": 1, "memory_parameter": 10, "memory_activation": 1)"));
        const auto r = ppb({"partition", "--model-desc", file, "--dryrun", sample_dryrun,
                            "--stages", "4", "--micro-batches", "8", "--memory-limit-mb", "1000"});
        expect_input_error(
            r, {"layers_description[1].nb_layer: " + n + " is out of range (1 to 10000 layers)"});
    }
}

// Observed: 1e307 in a layer file printed "inf MB" and exited 0 (--json: exit 1).
BOOST_AUTO_TEST_CASE(partition_huge_memory_and_time) {
    const std::string memory = write_file(layer_file(
        R"("nb_layer": 8, "time": 1, "memory_parameter": 1e307, "memory_activation": 1)"));
    const std::string time = write_file(
        layer_file(
            R"("nb_layer": 8, "time": 1e307, "memory_parameter": 1, "memory_activation": 1)"),
        "time.json");
    for (const bool json : {false, true}) {
        std::vector<std::string> args = {"partition", "--model-desc",      memory,
                                         "--dryrun",  sample_dryrun,       "--stages",
                                         "4",         "--memory-limit-mb", "1000"};
        if (json)
            args.push_back("--json");
        auto r = ppb(args);
        expect_input_error(r, {"memory_parameter: 1e+307 is out of range (0 to 1e9 MB)"});
        expect_no_inf(r);
        args[2] = time;
        r = ppb(args);
        expect_input_error(r, {"time: 1e+307 is out of range (0 to 1e9)"});
        expect_no_inf(r);
    }
}

BOOST_AUTO_TEST_CASE(partition_and_predict_counts) {
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--stages", "4294967295",
                            "--memory-limit-mb", "1000"}),
                       {"--stages", "4294967295 is out of range (1 to 1024 stages)"});
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--stages", "1025",
                            "--memory-limit-mb", "1000"}),
                       {"--stages", "1025 is out of range (1 to 1024 stages)"});
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--stages", "8",
                            "--micro-batches", "4294967295", "--memory-limit-mb", "1000"}),
                       {"--micro-batches", "out of range (1 to 1000000 micro-batches)"});
    expect_input_error(
        ppb({"partition", "--model-desc", layers_file, "--stages", "8", "--memory-limit-mb",
             "1e307"}),
        {"--memory-limit-mb", "1e307 is out of range (greater than 0, at most 1e9 MB)"});
    expect_input_error(
        ppb({"predict", sample_dryrun, "--stage", "0", "--layers", "none=4294967295"}),
        {"--layers", "out of range (0 to 10000 layers)"});
    expect_input_error(ppb({"predict", sample_dryrun, "--stage", "0", "--layers", "none=2",
                            "--stages", "4294967295"}),
                       {"--stages", "out of range (1 to 1024 stages)"});
    expect_input_error(ppb({"predict", sample_dryrun, "--stage", "0", "--layers", "none=2",
                            "--micro-batches", "4294967295"}),
                       {"--micro-batches", "out of range (1 to 1000000 micro-batches)"});
}

BOOST_AUTO_TEST_CASE(import_counts) {
    const std::string log = write_file(
        "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1.0 | max allocated: 2.0 | "
        "reserved: 3.0 | max reserved: 4.0\n",
        "rank_0.log");
    expect_input_error(
        ppb({"import", "megatron", log, "--pipeline-model-parallel-size", "4294967295",
             "--num-layers", "8"}),
        {"--pipeline-model-parallel-size", "4294967295 is out of range (1 to 1024 stages)"});
    expect_input_error(ppb({"import", "megatron", log, "--pipeline-model-parallel-size", "2",
                            "--num-layers", "1000000000"}),
                       {"--num-layers", "out of range (1 to 10000 layers)"});
    expect_input_error(ppb({"import", "megatron", log, "--pipeline-model-parallel-size", "2",
                            "--num-layers", "8", "--num-microbatches", "4294967295"}),
                       {"--num-microbatches", "out of range (1 to 1000000 micro-batches)"});
    expect_input_error(
        ppb({"import", "mindspore", log, "--pipeline-stage", "4294967295", "--num-layers", "8"}),
        {"--pipeline-stage", "4294967295 is out of range (1 to 1024 stages)"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_ranges_tests
