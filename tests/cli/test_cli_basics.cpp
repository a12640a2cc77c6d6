// ppb's own options and usage errors.
#include "cli_fixture.hpp"

#include <ppb/abi.h>

#include <boost/test/unit_test.hpp>

using namespace ppb_test;

BOOST_AUTO_TEST_SUITE(cli_basics)

BOOST_AUTO_TEST_CASE(version_and_help) {
    auto r = ppb({"--version"});
    BOOST_TEST(r.exit_code == 0);
    // The allocator the build linked (samples/ppb/CMakeLists.txt, PPB_MIMALLOC): mimalloc
    // unless the build is sanitized or configured without it.
#ifdef PPB_TEST_MIMALLOC
    const std::string allocator = "allocator mimalloc ";
#else
    const std::string allocator = "allocator the C library's malloc)";
#endif
    const std::string expected =
        "ppb 0.1.0 (plugin ABI 1, API 1." + std::to_string(PPB_API_MINOR) + "; " + allocator;
    BOOST_TEST(r.out.rfind(expected, 0) == 0u, r.out);
    BOOST_TEST(r.err.empty());

    r = ppb({"--help"});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.out.find("Usage: ppb [OPTIONS] [COMMAND]") != std::string::npos);
    BOOST_TEST(r.out.find("Exit status") != std::string::npos);

    for (const char* command : {"fit", "predict", "plugins"}) {
        r = ppb({command, "--help"});
        BOOST_TEST(r.exit_code == 0, command);
        BOOST_TEST(r.out.find(std::string("Usage: ppb ") + command) != std::string::npos, r.out);
    }
}

BOOST_AUTO_TEST_CASE(usage_errors_exit_2) {
    auto r = ppb({});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.out.empty());
    BOOST_TEST(r.err.find("Usage:") != std::string::npos);

    expect_input_error(ppb({"frobnicate"}), {"unknown command 'frobnicate'", "ppb --help"});
    expect_input_error(ppb({"fit"}), {"FILE is required", "ppb fit --help"});
    expect_input_error(ppb({"fit", sample_dryrun, "--frobnicate"}),
                       {"unknown option '--frobnicate'", "ppb fit --help"});
    expect_input_error(ppb({"fit", sample_dryrun, "--model"}),
                       {"--model: 1 required NAME[@VERSION] missing"});
    expect_input_error(ppb({"fit", sample_dryrun, sample_dryrun}),
                       {"not expected: " + sample_dryrun});
    expect_input_error(ppb({"fit", sample_dryrun, "--json=yes"}),
                       {"json was given a disallowed flag override"});
    expect_input_error(ppb({"fit", sample_dryrun, "--duplicate-tolerance", "abc"}),
                       {"--duplicate-tolerance: expected a number, got 'abc'"});
    expect_input_error(ppb({"fit", sample_dryrun, "--duplicate-tolerance", "2"}),
                       {"--duplicate-tolerance: expected a fraction"});
    expect_input_error(ppb({"predict", sample_dryrun, "--layers", "none=4"}),
                       {"--stage is required", "ppb predict --help"});
    expect_input_error(
        ppb({"predict", sample_dryrun, "--stage", "1"}),
        {"give the stage's layers: --layers for one chunk, or --chunk once per chunk"});
    expect_input_error(ppb({"predict", sample_dryrun, "--stage", "x", "--layers", "none=4"}),
                       {"--stage: expected a whole number, got 'x'"});
    expect_input_error(ppb({"predict", sample_dryrun, "--stage", "8", "--layers", "none=4"}),
                       {"--stage 8 is not a stage of an 8-stage pipeline (expected 0..7)"});
    expect_input_error(ppb({"predict", sample_dryrun, "--stage", "1", "--layers", "nope=4"}),
                       {"unknown recompute kind 'nope'"});
    expect_input_error(ppb({"predict", sample_dryrun, "--stage", "1", "--layers", "none=-4"}),
                       {"--layers: 'none=-4': expected a whole number, got '-4'"});
    expect_input_error(ppb({"predict", sample_dryrun, "--stage", "1", "--layers", "none=4,none=2"}),
                       {"kind 'none' is given twice"});
    expect_input_error(
        ppb({"predict", sample_dryrun, "--stage", "1", "--layers", "none=4", "--stages", "0"}),
        {"--stages: 0 is out of range (1 to 1024 stages)"});
}

BOOST_AUTO_TEST_SUITE_END()
