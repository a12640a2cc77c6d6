// The help texts are generated from the option declarations: every command's --help lists
// exactly its options; usage mistakes exit 2 naming the option, with a hint to that --help.
#include "cli_fixture.hpp"

#include <boost/test/unit_test.hpp>

#include <regex>
#include <set>
#include <sstream>

using namespace ppb_test;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_help_tests {

namespace {

// The options a help text lists: each option line's names ("-o,--output FILE" gives both).
std::set<std::string> listed_options(const std::string& help) {
    std::set<std::string> out;
    std::istringstream lines(help);
    const std::regex name(R"((^|,)(--?[a-zA-Z][a-zA-Z0-9-]*))");
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("  -", 0) != 0)
            continue;
        std::string head = line.substr(2, line.find(' ', 2) - 2);
        for (std::sregex_iterator it(head.begin(), head.end(), name), end; it != end; ++it)
            out.insert((*it)[2].str());
    }
    return out;
}

const std::set<std::string> plugin_options = {"--model", "--model-options", "--plugin-path"};

std::set<std::string> with(std::set<std::string> a, const std::set<std::string>& b) {
    a.insert(b.begin(), b.end());
    return a;
}

const std::set<std::string> import_common = {"-h",      "--help",   "--memory",
                                             "-o",      "--output", "--append",
                                             "--label", "--rank",   "--duplicate-tolerance"};

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_help)

BOOST_AUTO_TEST_CASE(every_command_lists_every_declared_option) {
    const std::vector<std::pair<std::vector<std::string>, std::set<std::string>>> commands = {
        {{}, {"-h", "--help", "--version"}},
        {{"plugins"}, {"-h", "--help", "--plugin-path", "--check", "--json"}},
        {{"devices"}, {"-h", "--help", "--json"}},
        {{"fit"},
         with(plugin_options, {"-h", "--help", "--duplicate-tolerance", "--json", "--export-sapp",
                               "--model-desc", "--sapp-fold-negative-constant"})},
        {{"predict"},
         with(plugin_options,
              {"-h", "--help", "--stage", "--layers", "--chunk", "--schedule", "--stages",
               "--micro-batches", "--in-flight", "--duplicate-tolerance", "--json"})},
        {{"partition"},
         with(plugin_options, {"-h",
                               "--help",
                               "--model-desc",
                               "--device-tflops",
                               "--device",
                               "--cluster",
                               "--tp-comm-overlap",
                               "--overlap-grad-reduce",
                               "--overlap-param-gather",
                               "--sapp-time-convention",
                               "--sapp-config",
                               "--stages",
                               "--micro-batches",
                               "--memory-limit-mb",
                               "--memory-margin-mb",
                               "--memory",
                               "--memory-margin-sigma",
                               "--kinds",
                               "--recompute-rule",
                               "--schedule",
                               "--chunks",
                               "--objective",
                               "--comm-time",
                               "--weight-grad-share",
                               "--breakdown",
                               "--refine",
                               "--fast",
                               "--timeline",
                               "--report",
                               "--dryrun",
                               "--duplicate-tolerance",
                               "--json"})},
        {{"search"},
         with(plugin_options, {"-h",
                               "--help",
                               "--model-desc",
                               "--device-tflops",
                               "--device",
                               "--cluster",
                               "--tp-comm-overlap",
                               "--overlap-grad-reduce",
                               "--overlap-param-gather",
                               "--sapp-time-convention",
                               "--devices",
                               "--pipeline-degrees",
                               "--stages",
                               "--tensor-parallel",
                               "--data-parallel",
                               "--global-batch",
                               "--global-batch-size",
                               "--micro-batch-size",
                               "--context-parallel",
                               "--expert-parallel",
                               "--expert-tensor-parallel",
                               "--data-parallel-sharding",
                               "--schedules",
                               "--schedule",
                               "--chunks",
                               "--recompute",
                               "--recompute-rule",
                               "--memory-limit-mb",
                               "--memory-margin-mb",
                               "--memory-margin-sigma",
                               "--dryrun",
                               "--duplicate-tolerance",
                               "--top",
                               "--show-infeasible",
                               "--jobs",
                               "--progress",
                               "--comm-time",
                               "--fast",
                               "--json",
                               "--report"})},
        {{"compare"},
         {"-h", "--help", "--model", "--partition", "--measured", "--world-size",
          "--cross-validate", "--duplicate-tolerance", "--plugin-path", "--json"}},
        {{"design"},
         with(plugin_options,
              {"-h", "--help", "--stages", "--num-layers", "--kinds", "--recompute-rule",
               "--micro-batches", "--runs", "--noise-mb", "--memory-limit-mb", "--dryrun",
               "--duplicate-tolerance", "--world-size", "--json"})},
        {{"import"}, {"-h", "--help"}},
        {{"import", "mindspore"},
         with(import_common,
              {"--config", "--pipeline-stage", "--data-parallel", "--model-parallel",
               "--context-parallel", "--micro-batch-num", "--num-layers", "--pp-interleave-num",
               "--offset", "--recompute", "--select-recompute", "--select-comm-recompute",
               "--expert-num", "--num-experts-chosen", "--first-k-dense-replace"})},
        {{"import", "megatron"},
         with(import_common, {"--pipeline-model-parallel-size",
                              "--num-layers",
                              "--decoder-first-pipeline-num-layers",
                              "--decoder-last-pipeline-num-layers",
                              "--num-layers-in-first-pipeline-stage",
                              "--num-layers-in-last-pipeline-stage",
                              "--num-layers-per-virtual-pipeline-stage",
                              "--num-virtual-stages-per-pipeline-rank",
                              "--virtual-pipeline-model-parallel-size",
                              "--pipeline-model-parallel-layout",
                              "--account-for-embedding-in-pipeline-split",
                              "--account-for-loss-in-pipeline-split",
                              "--num-layer-list",
                              "--noop-layers",
                              "--mtp-num-layers",
                              "--recompute-granularity",
                              "--recompute-method",
                              "--recompute-num-layers",
                              "--overlap-moe-expert-parallel-comm",
                              "--num-experts",
                              "--moe-layer-freq",
                              "--first-k-dense-replace",
                              "--world-size",
                              "--num-microbatches"})},
    };
    for (const auto& [words, expected] : commands) {
        std::string command = "ppb";
        for (const auto& w : words)
            command += " " + w;
        for (const char* flag : {"--help", "-h"}) {
            auto args = words;
            args.emplace_back(flag);
            const auto r = ppb(args);
            BOOST_TEST(r.exit_code == 0, command << " " << flag << ": " << r.err);
            BOOST_TEST(r.err.empty(), command << ": " << r.err);
            BOOST_TEST(r.out.find("Usage: " + command) != std::string::npos, r.out);
            BOOST_TEST(listed_options(r.out) == expected, command << " --help:\n" << r.out);
        }
    }
    // The top-level help lists the commands, not the hidden child-process one.
    const auto r = ppb({"--help"});
    for (const char* command : {"plugins", "fit", "predict", "partition", "search", "design",
                                "compare", "import", "simulate", "devices"})
        BOOST_TEST(r.out.find(std::string("  ") + command + " ") != std::string::npos, command);
    BOOST_TEST(r.out.find("__probe-plugin") == std::string::npos);
    // Required options and defaults are part of what is generated.
    const auto predict = ppb({"predict", "--help"});
    BOOST_TEST(predict.out.find("--stage S REQUIRED") != std::string::npos, predict.out);
    BOOST_TEST(predict.out.find("--duplicate-tolerance X=0.01") != std::string::npos, predict.out);
}

BOOST_AUTO_TEST_CASE(unknown_options_exit_2_naming_the_option) {
    const std::vector<std::vector<std::string>> lines = {
        {"plugins", "--frobnicate"},
        {"fit", sample_dryrun, "--frobnicate"},
        {"predict", sample_dryrun, "--stage", "0", "--layers", "none=4", "--frobnicate"},
        {"partition", "--frobnicate"},
        {"compare", sample_dryrun, "--model", "dryrun-lsq", "--frobnicate"},
        {"import", "megatron", "--frobnicate"},
    };
    for (const auto& args : lines) {
        std::string command = "ppb " + args.front();
        if (args.front() == "import")
            command += " " + args[1];
        const auto r = ppb(args);
        expect_input_error(r, {"--frobnicate", "Try '" + command + " --help'."});
    }
    expect_input_error(ppb({"--frobnicate"}), {"--frobnicate", "Try 'ppb --help'."});
}

BOOST_AUTO_TEST_CASE(missing_required_options_exit_2_naming_the_option) {
    expect_input_error(ppb({"predict", sample_dryrun, "--layers", "none=4"}),
                       {"--stage is required", "Try 'ppb predict --help'."});
    expect_input_error(ppb({"partition", "--model-desc", sample_dryrun, "--stages", "8"}),
                       {"--memory-limit-mb is required", "Try 'ppb partition --help'."});
    expect_input_error(ppb({"fit"}), {"FILE is required", "Try 'ppb fit --help'."});
    expect_input_error(ppb({"fit", sample_dryrun, "--model-options"}),
                       {"--model-options", "missing"});
}

BOOST_AUTO_TEST_CASE(malformed_comma_list_items_are_named) {
    const auto predict = [](const std::string& layers) {
        return ppb({"predict", sample_dryrun, "--stage", "1", "--layers", layers});
    };
    expect_input_error(predict("none=4,oops"), {"--layers", "expected KIND=N, got 'oops'"});
    expect_input_error(predict("none=4,full=x"),
                       {"--layers", "'full=x'", "expected a whole number, got 'x'"});
    expect_input_error(predict("none=4,most=1"), {"--layers", "unknown recompute kind 'most'"});
    // One word per --layers: the dry-run FILE after it is not taken for a list item.
    const auto r = ppb({"predict", "--stage", "1", "--layers", "none=4", sample_dryrun});
    BOOST_TEST(r.exit_code == 0, r.err);
    expect_input_error(ppb({"partition", "--model-desc", sample_dryrun, "--stages", "8",
                            "--memory-limit-mb", "1000", "--kinds", "none,mostly,full"}),
                       {"--kinds", "unknown recompute kind 'mostly'"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_help_tests
