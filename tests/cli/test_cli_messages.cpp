// Messages a person can act on (host_api/docs/commands.md, "Messages"): the closest option or
// command for a mistyped one, an option given twice said plainly with both values, warnings for
// legal requests that plan a degenerate pipeline, and numbers rounded as the tables show them.
// Exact texts and exit statuses.
#include "cli_fixture.hpp"

#include <boost/test/unit_test.hpp>

#include <regex>
#include <string>
#include <vector>

using namespace ppb_test;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_messages_tests {

namespace {

const std::string samples = PPB_SAMPLES_DIR;

// Exit status 2, nothing on stdout, and exactly this error with the hint to `command`'s help.
void expect_usage(const ProcessResult& r, const std::string& message, const std::string& command) {
    BOOST_TEST(r.exit_code == 2, r.err);
    BOOST_TEST(r.out.empty(), r.out);
    BOOST_TEST(r.err == "ppb: error: " + message + "\nTry '" + command + " --help'.\n");
}

std::vector<std::string> partition_args(std::vector<std::string> more) {
    std::vector<std::string> args = {"partition",   "--model-desc",      layers_file, "--dryrun",
                                     sample_dryrun, "--memory-limit-mb", "30000"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// The analytic model of the sample shape over the sample layer file (80 body layers).
std::vector<std::string> analytic_partition(std::vector<std::string> more) {
    std::vector<std::string> args = {"partition",
                                     "--model-desc",
                                     layers_file,
                                     "--model",
                                     "analytic",
                                     "--model-options",
                                     samples + "/llama70b-shape.json",
                                     "--memory-limit-mb",
                                     "80000"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

std::vector<std::string> warnings_of(const std::string& err) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while ((at = err.find("ppb: warning: ", at)) != std::string::npos) {
        const std::size_t end = err.find('\n', at);
        out.push_back(err.substr(at, end - at));
        at = end;
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_messages)

BOOST_AUTO_TEST_CASE(a_mistyped_option_gets_the_closest_one) {
    expect_usage(ppb(partition_args({"--stagse", "3"})),
                 "unknown option '--stagse'; did you mean '--stages'?", "ppb partition");
    // As '--name=value' too, and a prefix of a longer option.
    expect_usage(ppb(partition_args({"--stages", "8", "--micro-batchs=8"})),
                 "unknown option '--micro-batchs'; did you mean '--micro-batches'?",
                 "ppb partition");
    expect_usage(ppb({"partition", "--model-desc", layers_file, "--dryrun", sample_dryrun,
                      "--stages", "8", "--memory-limit", "30000"}),
                 "unknown option '--memory-limit'; did you mean '--memory-limit-mb'?",
                 "ppb partition");
    // Two options as close: both named.
    expect_usage(ppb({"predict", sample_dryrun, "--stagse", "3"}),
                 "unknown option '--stagse'; did you mean '--stage' or '--stages'?", "ppb predict");
    // Nothing close: no guess.
    expect_usage(ppb({"fit", sample_dryrun, "--frobnicate"}), "unknown option '--frobnicate'",
                 "ppb fit");
    // A subcommand's options are its own.
    expect_usage(ppb({"import", "sapp", samples + "/import/sapp/init_pp4.yaml", "--lable", "A"}),
                 "unknown option '--lable'; did you mean '--label'?", "ppb import sapp");
}

BOOST_AUTO_TEST_CASE(a_mistyped_command_gets_the_closest_one) {
    expect_usage(ppb({"partiton"}), "unknown command 'partiton'; did you mean 'partition'?", "ppb");
    expect_usage(ppb({"simualte", "plan.json"}),
                 "unknown command 'simualte'; did you mean 'simulate'?", "ppb");
    expect_usage(ppb({"import", "megatorn", "x.log"}),
                 "unknown log format 'megatorn'; did you mean 'megatron'?", "ppb import");
    // Nothing close: every command listed, as before.
    const auto r = ppb({"frobnicate"});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.err.find("ppb: error: unknown command 'frobnicate' (expected plugins, fit, "
                          "predict, partition, ") == 0u,
               r.err);
}

BOOST_AUTO_TEST_CASE(an_option_given_twice_is_said_plainly) {
    expect_usage(ppb(partition_args({"--stages", "4", "--stages", "8"})),
                 "--stages given twice (4 and 8): give it once", "ppb partition");
    expect_usage(ppb(partition_args({"--stages=4", "--stages", "8", "--stages", "2"})),
                 "--stages given 3 times (4, 8 and 2): give it once", "ppb partition");
    expect_usage(ppb({"fit", sample_dryrun, "--model", "dryrun-lsq", "--model", "table"}),
                 "--model given twice (dryrun-lsq and table): give it once", "ppb fit");
}

// 81 stages for 80 body layers: the plan exists (the last stage holds only the LM head) and is
// printed, exit 0, with why it is a poor pipeline on stderr.
BOOST_AUTO_TEST_CASE(more_stages_than_layers_plans_with_warnings) {
    const auto r = ppb(analytic_partition({"--stages", "81", "--micro-batches", "32"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(
        r.out.find("Simulated iteration (1f1b order): 3365.0, bubble 71.4%") != std::string::npos,
        r.out);
    const auto warnings = warnings_of(r.err);
    BOOST_TEST_REQUIRE(warnings.size() == 2u, r.err);
    BOOST_TEST(warnings[0] ==
               "ppb: warning: stage 80 holds no body layer, only the LM head (81 stages for 80 "
               "body layers): one of the pipeline's devices does almost nothing; plan with fewer "
               "stages");
    BOOST_TEST(warnings[1] ==
               "ppb: warning: the pipeline bubble is 71.4 % of the simulated iteration (32 "
               "micro-batches for 81 stages): the devices wait for each other most of the time; "
               "more micro-batches per iteration (at least as many as stages) or fewer stages "
               "would shrink it");
    // The same with --json: the warnings on stderr, the document alone on stdout.
    const auto json =
        ppb(analytic_partition({"--stages", "81", "--micro-batches", "32", "--json"}));
    BOOST_TEST_REQUIRE(json.exit_code == 0, json.err);
    BOOST_TEST(warnings_of(json.err) == warnings);
    (void)parse_json(json.out);
}

BOOST_AUTO_TEST_CASE(fewer_micro_batches_than_stages_is_warned_about) {
    const auto r = ppb(partition_args({"--stages", "8", "--micro-batches", "4"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto warnings = warnings_of(r.err);
    BOOST_TEST_REQUIRE(warnings.size() == 1u, r.err);
    // The bubble as the table above shows it.
    const std::regex line(R"(Simulated iteration \(1f1b order\): [0-9.]+, bubble ([0-9.]+)%)");
    std::smatch m;
    BOOST_TEST_REQUIRE(std::regex_search(r.out, m, line), r.out);
    BOOST_TEST(warnings[0] == "ppb: warning: the pipeline bubble is " + m[1].str() +
                                  " % of the simulated iteration (4 micro-batches for 8 stages): "
                                  "the devices wait for each other most of the time; more "
                                  "micro-batches per iteration (at least as many as stages) or "
                                  "fewer stages would shrink it");
}

BOOST_AUTO_TEST_CASE(an_ordinary_plan_has_no_warning) {
    const auto r = ppb(partition_args({"--stages", "8", "--micro-batches", "32"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.empty(), r.err);
}

// SAPP's -init of its own cfgs/init_demo.yaml (tests/data/sapp) fits a negative constant,
// -1896.75... MB: the warning shows it as every table shows memory, one decimal.
BOOST_AUTO_TEST_CASE(numbers_in_messages_are_rounded_as_in_the_tables) {
    const auto imported =
        ppb({"import", "sapp", std::string(PPB_TEST_DATA_DIR) + "/sapp/init_demo.yaml"});
    BOOST_TEST_REQUIRE(imported.exit_code == 0, imported.err);
    const std::string exported = write_file("", "exported-layers.json");
    const auto r = ppb({"fit", "-", "--export-sapp", exported}, {}, imported.out);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.find("(const_mb) is negative (-1896.8 MB)") != std::string::npos, r.err);
    BOOST_TEST(r.err.find("every stage 1896.8 MB higher") != std::string::npos, r.err);
    // No number anywhere in what it says carries more than the tables' decimal, apart from
    // the fit's own coefficients table.
    const std::regex long_decimal(R"([0-9]\.[0-9]{5,})");
    BOOST_TEST(!std::regex_search(r.err, long_decimal), r.err);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_messages_tests
