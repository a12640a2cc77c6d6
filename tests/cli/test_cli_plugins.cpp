// ppb plugins, plugin selection and broken plugins, end to end.
#include "cli_fixture.hpp"

#include <ppb/abi.h>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_plugins_tests {

namespace {

const json::object* entry(const json::array& plugins, const std::string& file) {
    for (const auto& p : plugins) {
        const auto& o = p.as_object();
        if (std::filesystem::path(std::string(o.at("path").as_string())).filename() == file)
            return &o;
    }
    return nullptr;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_plugins)

BOOST_AUTO_TEST_CASE(build_tree_finds_its_plugin_without_flags) {
    const auto r = ppb({"plugins"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.out.find("dryrun-lsq") != std::string::npos, r.out);
    BOOST_TEST(r.out.find("usable") != std::string::npos, r.out);
    BOOST_TEST(r.out.find("(install location)") != std::string::npos, r.out);
}

BOOST_AUTO_TEST_CASE(json_listing_gives_every_verdict) {
    const auto r = ppb({"plugins", "--json", "--plugin-path", fixture_dir});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    const auto& plugins = doc.at("plugins").as_array();
    const std::map<std::string, std::string> expected = {
        {"ppb-wrong-abi-1.0.0.so", "incompatible"}, {"ppb-newer-api-1.0.0.so", "usable"},
        {"ppb-no-entry-1.0.0.so", "not-a-plugin"},  {"ppb-not-a-library-1.0.0.so", "not-a-plugin"},
        {"ppb-no-factory-1.0.0.so", "usable"},      {"ppb-abort-on-load-1.0.0.so", "usable"},
        {"ppb-dryrun-lsq-1.0.0.so", "usable"}};
    for (const auto& [file, verdict] : expected) {
        const auto* o = entry(plugins, file);
        BOOST_TEST_REQUIRE(o != nullptr, file);
        BOOST_TEST(o->at("verdict").as_string() == verdict, file);
        for (const char* key : {"name", "version", "api", "path", "verdict", "reason"}) {
            BOOST_TEST(o->contains(key), file << " lacks " << key);
        }
    }
    BOOST_TEST(entry(plugins, "ppb-abort-on-load-1.0.0.so")->at("name").as_string() ==
               "abort-on-load");
    const auto* newer = entry(plugins, "ppb-newer-api-1.0.0.so");
    BOOST_TEST(newer->at("api").as_string() == "1.9");
    BOOST_TEST(newer->at("newer_than_host").as_bool());
    const std::string host = "1." + std::to_string(PPB_API_MINOR);
    BOOST_TEST(newer->at("reason").as_string() ==
               "plugin API 1.9 > host " + host + ": fields beyond " + host + " not used");
    BOOST_TEST(!entry(plugins, "ppb-dryrun-lsq-1.0.0.so")->at("newer_than_host").as_bool());
    BOOST_TEST(doc.at("host_api").as_string() == host);
    BOOST_TEST(entry(plugins, "ppb-not-a-library-1.0.0.so")->at("api").is_null());
    BOOST_TEST(doc.at("search_path").as_array().size() == 2u);
}

BOOST_AUTO_TEST_CASE(table_listing_says_which_newer_api_fields_are_not_used) {
    const auto r = ppb({"plugins", "--plugin-path", fixture_dir});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const std::string host = "1." + std::to_string(PPB_API_MINOR);
    BOOST_TEST(r.out.find("\nNewer plugin API than this ppb's " + host +
                          ":\n  ppb-newer-api-1.0.0.so: plugin API 1.9 > host " + host +
                          ": fields beyond " + host + " not used\n") != std::string::npos,
               r.out);
    // Not among the unusable ones.
    const std::size_t not_usable = r.out.find("\nNot usable:\n");
    BOOST_TEST_REQUIRE(not_usable != std::string::npos, r.out);
    const std::string unusable = r.out.substr(not_usable, r.out.find("\nNewer") - not_usable);
    BOOST_TEST(unusable.find("newer-api") == std::string::npos, unusable);
    BOOST_TEST(unusable.find("ppb-wrong-abi-1.0.0.so: built for plugin ABI 2") != std::string::npos,
               unusable);
}

BOOST_AUTO_TEST_CASE(search_path_problems_are_warnings) {
    const auto r =
        ppb({"plugins"}, {{"PPB_PLUGIN_PATH", "/nonexistent/ppb-plugins:" + versions_dir}});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.err.find("ppb: warning: PPB_PLUGIN_PATH entry '/nonexistent/ppb-plugins' does not "
                          "exist (skipped)") != std::string::npos,
               r.err);
    BOOST_TEST(r.out.find("ppb-fixed-2.0.0.so") != std::string::npos, r.out);

    const auto traced = ppb({"plugins"}, {{"PPB_DEBUG_PLUGINS", "1"}});
    BOOST_TEST(traced.err.find("ppb: plugins: searching") != std::string::npos, traced.err);
}

BOOST_AUTO_TEST_CASE(broken_plugins_exit_3_and_say_why) {
    const auto fit_with = [](const std::string& model) {
        return ppb({"fit", sample_dryrun, "--model", model, "--plugin-path", fixture_dir});
    };
    expect_failure(fit_with("no-factory"), 3, {"missing factory"});
    expect_failure(fit_with("throwing-factory"), 3, {"constructor throws on purpose"});
    expect_failure(fit_with("throwing-fit"), 3, {"fit throws on purpose"});
    expect_failure(fit_with("unresolved"), 3, {"ppb_fixture_symbol_that_does_not_exist"});
    expect_failure(fit_with("mismatch"), 3, {"the file name says 'mismatch' 1.0.0"});
    expect_failure(fit_with("wrong-abi"), 3, {"incompatible", "plugin ABI 2"});
    expect_failure(fit_with("short-table"), 3,
                   {"its function table is", "bytes that API 1.2 (which it claims) needs"});
    expect_failure(fit_with("no-such-model"), 3, {"no memory-model plugin named 'no-such-model'"});
    expect_failure(fit_with("dryrun-lsq@2"), 3,
                   {"no usable plugin matches 'dryrun-lsq@2'", "dryrun-lsq 1.0.0: usable"});
    expect_input_error(fit_with("dryrun-lsq@x.y"), {"MAJOR.MINOR.PATCH"});
    expect_input_error(fit_with("../evil"), {"a model is named, not given as a path"});
}

// What a plugin hands back is checked before ppb uses it: its fault, exit 3, nothing printed.
BOOST_AUTO_TEST_CASE(plugins_returning_what_the_host_must_not_trust_exit_3) {
    const auto with = [](const std::string& command, const std::string& model,
                         std::vector<std::string> more = {}) {
        std::vector<std::string> args = {command, sample_dryrun,   "--model",
                                         model,   "--plugin-path", fixture_dir};
        args.insert(args.end(), more.begin(), more.end());
        return ppb(args);
    };
    const std::vector<std::string> stage_3 = {"--stage", "3", "--layers", "none=4"};
    const std::vector<std::string> stage_1 = {"--stage", "1", "--layers", "none=4"};
    expect_failure(with("predict", "returns-nan", stage_3), 3,
                   {"plugin returns-nan 1.0.0 returned a prediction that is not a number (NaN) "
                    "for stage 3 of 8"});
    expect_failure(with("predict", "returns-infinite", stage_3), 3,
                   {"plugin returns-infinite 1.0.0 returned a prediction that is infinite (inf)"});
    // Its prediction for stage 1 is fine; its standard error is negative.
    expect_failure(with("predict", "returns-negative", stage_1), 3,
                   {"plugin returns-negative 1.0.0 returned a standard error that is negative"});
    expect_failure(with("predict", "bad-status", stage_1), 3,
                   {"plugin bad-status 1.0.0 returned status 42 from predict"});
    expect_failure(with("fit", "bad-report-json"), 3,
                   {"plugin bad-report-json 1.0.0 returned a report that is not valid JSON"});
    expect_failure(with("fit", "bad-last-error"), 3,
                   {"plugin bad-last-error 1.0.0 failed in fit (invalid input) and its "
                    "last_error() returned a null pointer"});
    expect_failure(
        ppb({"partition", "--model-desc", std::string(PPB_SAMPLES_DIR) + "/llama70b-layers.json",
             "--dryrun", sample_dryrun, "--stages", "8", "--micro-batches", "32",
             "--memory-limit-mb", "30000", "--model", "stray-parameter-bits", "--plugin-path",
             fixture_dir}),
        3,
        {"plugin stray-parameter-bits 1.0.0 returned linear coefficients with bits "
         "0x400 set in 'identified' that are not PPB_PARAM_* bits"});
}

BOOST_AUTO_TEST_CASE(model_options_reach_the_plugin) {
    expect_input_error(ppb({"fit", sample_dryrun, "--model-options", R"({"rank_tolerance": -1})"}),
                       {"rank_tolerance"});
    const auto r = ppb({"fit", sample_dryrun, "--model-options", R"({"rank_tolerance": 1e-9})"});
    BOOST_TEST(r.exit_code == 0, r.err);
    expect_input_error(ppb({"fit", sample_dryrun, "--model-options", "/nonexistent/options.json"}),
                       {"neither a JSON object nor a readable file"});
}

BOOST_AUTO_TEST_CASE(selected_version_is_used) {
    const auto r = ppb(
        {"fit", sample_dryrun, "--json", "--model", "fixed@1.4", "--plugin-path", versions_dir});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("model").at("name").as_string() == "fixed");
    BOOST_TEST(doc.at("model").at("version").as_string() == "1.4.2");
}

BOOST_AUTO_TEST_CASE(check_loads_each_plugin_in_a_child_process) {
    // abort-on-load aborts while loading: ppb itself must survive and report it.
    const auto r = ppb({"plugins", "--check", "--json", "--plugin-path", fixture_dir});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.signal == 0);
    const auto doc = parse_json(r.out).as_object();
    const auto& plugins = doc.at("plugins").as_array();
    const std::map<std::string, std::pair<std::string, std::string>> expected = {
        {"ppb-abort-on-load-1.0.0.so", {"failed", "signal 6, SIGABRT"}},
        {"ppb-unresolved-1.0.0.so",
         {"failed", "undefined symbol: ppb_fixture_symbol_that_does_not_exist"}},
        {"ppb-no-factory-1.0.0.so", {"failed", "missing factory"}},
        {"ppb-throwing-factory-1.0.0.so", {"failed", "constructor throws on purpose"}},
        {"ppb-mismatch-1.0.0.so", {"failed", "but the plugin says 'mismatch' 9.9.9"}},
        {"ppb-throwing-fit-1.0.0.so", {"usable", "loaded in a child process: ok"}},
        {"ppb-older-api-1.0.0.so", {"usable", "built for API 1.0: no options help"}},
        {"ppb-dryrun-lsq-1.0.0.so", {"usable", "loaded in a child process: ok"}},
        {"ppb-newer-api-1.0.0.so",
         {"usable", "fields beyond 1." + std::to_string(PPB_API_MINOR) +
                        " not used; loaded in a child process: ok"}},
        {"ppb-short-table-1.0.0.so", {"failed", "bytes that API 1.2 (which it claims) needs"}},
        {"ppb-wrong-abi-1.0.0.so", {"incompatible", "plugin ABI 2"}}};
    for (const auto& [file, verdict_reason] : expected) {
        const auto* o = entry(plugins, file);
        BOOST_TEST_REQUIRE(o != nullptr, file);
        BOOST_TEST(o->at("verdict").as_string() == verdict_reason.first,
                   file << ": " << o->at("reason"));
        BOOST_TEST(std::string(o->at("reason").as_string()).find(verdict_reason.second) !=
                       std::string::npos,
                   file << ": " << o->at("reason"));
    }
    const auto* lsq = entry(plugins, "ppb-dryrun-lsq-1.0.0.so");
    BOOST_TEST(lsq->at("checked").as_bool());
    BOOST_TEST(std::string(lsq->at("options_help").as_string()).find("rank_tolerance") !=
               std::string::npos);
    BOOST_TEST(std::string(lsq->at("build_id").as_string()).find("C++") != std::string::npos);
    BOOST_TEST(!entry(plugins, "ppb-wrong-abi-1.0.0.so")->at("checked").as_bool());
}

BOOST_AUTO_TEST_CASE(search_path_entries_that_are_files_or_relative) {
    const std::string file = write_file("not a directory", "entry.txt");
    auto r = ppb({"plugins"}, {{"PPB_PLUGIN_PATH", file}});
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.err.find("is not a directory (skipped)") != std::string::npos, r.err);
    // A relative entry is resolved against the working directory, once, and listed absolute.
    const auto parent = std::filesystem::path(fixture_dir).parent_path();
    r = run_process(PPB_EXE, {"plugins", "--json", "--plugin-path", "broken"},
                    {{"PPB_PLUGIN_PATH", ""}}, {}, parent.string());
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(parse_json(r.out).at("search_path").at(0).at("path").as_string() == fixture_dir);
}

BOOST_AUTO_TEST_CASE(truncated_library_is_failed_and_selecting_it_exits_3) {
    // The first 4 KB of a real plugin, under a plugin's name.
    const auto dir = std::filesystem::path(write_file("", "unused")).parent_path() / "truncated";
    std::filesystem::create_directories(dir);
    std::ifstream in(std::filesystem::path(versions_dir) / "ppb-fixed-1.0.0.so", std::ios::binary);
    std::string bytes(4096, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::ofstream(dir / "ppb-truncated-1.0.0.so", std::ios::binary) << bytes;

    const auto listed = ppb({"plugins", "--json", "--plugin-path", dir.string()});
    BOOST_TEST_REQUIRE(listed.exit_code == 0, listed.err);
    const auto doc = parse_json(listed.out);
    const auto* o = entry(doc.at("plugins").as_array(), "ppb-truncated-1.0.0.so");
    BOOST_TEST_REQUIRE(o != nullptr);
    BOOST_TEST(o->at("verdict").as_string() == "failed");
    BOOST_TEST(std::string(o->at("reason").as_string()).find("truncated ELF file") !=
               std::string::npos);

    expect_failure(
        ppb({"fit", sample_dryrun, "--model", "truncated", "--plugin-path", dir.string()}), 3,
        {"truncated 1.0.0: failed", "truncated ELF file"});
    expect_input_error(ppb({"fit", sample_dryrun, "--model", "truncated@"}), {"MAJOR.MINOR.PATCH"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_plugins_tests
