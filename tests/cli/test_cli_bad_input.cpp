// Every kind of bad dry-run file: exit 2, nothing on stdout, one message naming place and problem.
#include "cli_fixture.hpp"

#include <boost/test/unit_test.hpp>

using namespace ppb_test;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_bad_input_tests {

namespace {

// A valid document around the given observations.
std::string dryrun(const std::string& observations, const std::string& top = R"("num_stages": 4)") {
    return R"({"format": "ppb.dryrun/1", )" + top + R"(, "observations": [)" + observations + "]}";
}

void expect_fit_rejects(const std::string& text, std::initializer_list<std::string> parts) {
    const std::string file = write_file(text);
    std::vector<std::string> all(parts);
    auto r = ppb({"fit", file});
    expect_input_error(r, {file});
    for (const auto& part : all) {
        BOOST_TEST(r.err.find(part) != std::string::npos,
                   "stderr lacks '" << part << "': " << r.err);
    }
    // --json changes nothing about errors.
    r = ppb({"fit", file, "--json"});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.out.empty());
}

const std::string ok0 = R"({"stage": 0, "layers": {"none": 2}, "peak_memory_mb": 20000})";

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_bad_input)

BOOST_AUTO_TEST_CASE(unreadable_and_malformed_files) {
    expect_input_error(ppb({"fit", "/nonexistent/dryrun.json"}),
                       {"/nonexistent/dryrun.json", "cannot read"});
    expect_fit_rejects("{\"format\": \"ppb.dryrun/1\",\n  \"num_stages\": 4,,\n}",
                       {"malformed JSON", ":2:"});
    expect_fit_rejects("", {"malformed JSON"});
    expect_fit_rejects("[1, 2]", {"expected a JSON object"});
    expect_fit_rejects(dryrun(ok0) + " trailing", {"malformed JSON"});
}

BOOST_AUTO_TEST_CASE(format_and_top_level_fields) {
    expect_fit_rejects(R"({"num_stages": 4, "observations": [)" + ok0 + "]}", {"format"});
    expect_fit_rejects(
        R"({"format": "ppb.dryrun/9", "num_stages": 4, "observations": [)" + ok0 + "]}",
        {"ppb.dryrun/9", "ppb.dryrun/1", "ppb.dryrun/2"});
    expect_fit_rejects(dryrun(ok0, R"("num_stages": "4")"), {"num_stages"});
    expect_fit_rejects(dryrun(ok0, R"("num_stages": 0)"), {"num_stages"});
    expect_fit_rejects(dryrun(""), {"observations", "empty"});
    expect_fit_rejects(dryrun(ok0, R"("num_stages": 4, "typo_field": 1)"), {"typo_field"});
}

BOOST_AUTO_TEST_CASE(observation_fields) {
    expect_fit_rejects(dryrun(ok0 + R"(, {"stage": 1, "layers": {"none": 2}})"),
                       {"observations[1]", "peak_memory_mb"});
    expect_fit_rejects(dryrun(R"({"stage": "1", "layers": {"none": 2}, "peak_memory_mb": 1})"),
                       {"observations[0].stage"});
    expect_fit_rejects(
        dryrun(ok0 + R"(, {"stage": 4, "layers": {"none": 2}, "peak_memory_mb": 1})"),
        {"observations[1].stage", "4"});
    expect_fit_rejects(dryrun(R"({"stage": -1, "layers": {"none": 2}, "peak_memory_mb": 1})"),
                       {"observations[0].stage"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": {"none": -2}, "peak_memory_mb": 1})"),
                       {"observations[0].layers.none"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": {"none": 2.5}, "peak_memory_mb": 1})"),
                       {"observations[0].layers.none", "2.5"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": {"most": 2}, "peak_memory_mb": 1})"),
                       {"observations[0].layers", "most"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": [2], "peak_memory_mb": 1})"),
                       {"observations[0].layers"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": {"none": 2}, "peak_memory_mb": 0})"),
                       {"observations[0].peak_memory_mb"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": {"none": 2}, "peak_memory_mb": -5})"),
                       {"observations[0].peak_memory_mb"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": {"none": 2}, "peak_memory_mb": 1e400})"),
                       {"observations[0].peak_memory_mb"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": {"none": 2}, "peak_memory_mb": NaN})"),
                       {"malformed JSON"});
    expect_fit_rejects(
        dryrun(R"({"stage": 1, "layers": {"none": 2}, "in_flight": 0, "peak_memory_mb": 1})"),
        {"observations[0].in_flight"});
    expect_fit_rejects(dryrun(R"({"stage": 1, "layers": {"none": 2}, "peak_mem": 1})"),
                       {"observations[0]", "peak_mem"});
}

BOOST_AUTO_TEST_CASE(contradictory_observations_and_tolerance) {
    // Stage 1 measured twice with the same layers: 5 % apart.
    const std::string text = dryrun(
        R"({"stage": 0, "layers": {"none": 2}, "peak_memory_mb": 20000},
           {"stage": 1, "layers": {"none": 3}, "peak_memory_mb": 20000},
           {"stage": 1, "layers": {"none": 4}, "peak_memory_mb": 23000},
           {"stage": 2, "layers": {"none": 5}, "peak_memory_mb": 23000},
           {"stage": 3, "layers": {"none": 3}, "peak_memory_mb": 21000},
           {"stage": 2, "layers": {"none": 2}, "peak_memory_mb": 17000},
           {"stage": 1, "layers": {"none": 3}, "peak_memory_mb": 21000})");
    const std::string file = write_file(text);
    expect_input_error(ppb({"fit", file}),
                       {"observations[1] and observations[6]", "--duplicate-tolerance"});
    const auto r = ppb({"fit", file, "--duplicate-tolerance", "0.1"});
    BOOST_TEST(r.exit_code == 0, r.err);
}

BOOST_AUTO_TEST_CASE(data_that_identify_nothing) {
    // One stage, so head, tail and constant coincide, and per-layer memory is inseparable from
    // activation memory.
    expect_fit_rejects(dryrun(R"({"stage": 0, "layers": {"none": 2}, "peak_memory_mb": 20000},
                                 {"stage": 0, "layers": {"none": 3}, "peak_memory_mb": 23000})",
                              R"("num_stages": 1)"),
                       {"identify no single parameter"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_bad_input_tests
