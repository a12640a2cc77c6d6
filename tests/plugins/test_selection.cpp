// Selecting a plugin by NAME[@VERSION]: highest compatible version, numeric order, pins.
#include <ppb/discovery.hpp>
#include <ppb/errors.hpp>

#include <boost/test/unit_test.hpp>

namespace fs = std::filesystem;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace selection_tests {

namespace {

std::vector<ppb::PluginCandidate> versions() {
    ppb::SearchPath path;
    path.dirs.push_back({PPB_VERSIONS_DIR, "test"});
    path.dirs.push_back({PPB_FIXTURE_DIR, "test"});
    return ppb::discover_plugins(path);
}

std::string selected(const std::string& spec) {
    const auto all = versions();
    return ppb::select_plugin(all, ppb::ModelSpec::parse(spec)).version->to_string();
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(selection)

BOOST_AUTO_TEST_CASE(highest_matching_version_wins) {
    BOOST_TEST(selected("fixed") == "2.0.0");
    BOOST_TEST(selected("fixed@2") == "2.0.0");
    BOOST_TEST(selected("fixed@1") == "1.10.0");  // 10 > 4: numbers, not text
    BOOST_TEST(selected("fixed@1.4") == "1.4.2");
    BOOST_TEST(selected("fixed@1.4.2") == "1.4.2");
    BOOST_TEST(selected("fixed@1.0") == "1.0.0");
}

BOOST_AUTO_TEST_CASE(unmatched_pin_lists_what_is_installed) {
    const auto all = versions();
    try {
        (void)ppb::select_plugin(all, ppb::ModelSpec::parse("fixed@3"));
        BOOST_FAIL("must fail");
    } catch (const ppb::PluginError& e) {
        const std::string what = e.what();
        BOOST_TEST(contains(what, "no usable plugin matches 'fixed@3'"), what);
        for (const char* v : {"fixed 1.0.0: usable", "fixed 1.4.2: usable", "fixed 1.10.0: usable",
                              "fixed 2.0.0: usable"}) {
            BOOST_TEST(contains(what, v), what);
        }
    }
}

BOOST_AUTO_TEST_CASE(incompatible_plugins_are_not_selected) {
    const auto all = versions();
    try {
        (void)ppb::select_plugin(all, ppb::ModelSpec::parse("wrong-abi"));
        BOOST_FAIL("must fail");
    } catch (const ppb::PluginError& e) {
        BOOST_TEST(contains(e.what(), "wrong-abi 1.0.0: incompatible"), e.what());
    }
    try {
        (void)ppb::select_plugin(all, ppb::ModelSpec::parse("no-such-model"));
        BOOST_FAIL("must fail");
    } catch (const ppb::PluginError& e) {
        BOOST_TEST(contains(e.what(), "no memory-model plugin named 'no-such-model'"), e.what());
        BOOST_TEST(contains(e.what(), "usable plugins: fixed"), e.what());
    }
}

BOOST_AUTO_TEST_CASE(malformed_specs_are_input_errors) {
    for (const char* bad : {"", "@1", "fixed@", "fixed@x.y", "fixed@1.2.3.4", "fixed@1..2",
                            "fixed@-1", "Fixed", "a/b", "../fixed", "fixed@1.2.3-rc1"}) {
        BOOST_CHECK_THROW((void)ppb::ModelSpec::parse(bad), ppb::InputError);
    }
    const auto spec = ppb::ModelSpec::parse("dryrun-lsq@1.4");
    BOOST_TEST(spec.name == "dryrun-lsq");
    BOOST_TEST(spec.pin.to_string() == "1.4");
    BOOST_TEST(spec.to_string() == "dryrun-lsq@1.4");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace selection_tests
