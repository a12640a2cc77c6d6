// Loading from disk: the real dryrun-lsq plugin works through the C boundary, and every broken
// fixture fails with its own clear message while the host keeps working.
#include <ppb/discovery.hpp>
#include <ppb/errors.hpp>
#include <ppb/loader.hpp>
#include <ppb/placement.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <optional>
#include <string>

#include <dlfcn.h>

namespace fs = std::filesystem;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace loading_tests {

namespace {

const fs::path fixture_dir = PPB_FIXTURE_DIR;
const fs::path build_plugin_dir = PPB_BUILD_PLUGIN_DIR;

ppb::PluginCandidate fixture(const std::string& file) {
    return ppb::inspect_plugin_file(fixture_dir / file);
}

ppb::PluginCandidate dryrun_lsq() {
    return ppb::inspect_plugin_file(build_plugin_dir / "ppb-dryrun-lsq-1.0.0.so");
}

// Ground truth, MB.
constexpr double C = 2048, H = 7188, T = 3746, P = 1710, A_none = 994, A_full = 32;

double truth(std::uint32_t p, std::uint32_t s, std::uint32_t none, std::uint32_t full,
             std::uint32_t f) {
    return C + (s == 0 ? H : 0) + (s == p - 1 ? T : 0) + P * (none + full) +
           (A_none * none + A_full * full) * f;
}

ppb::Observation observe(std::uint32_t p, std::uint32_t s, std::uint32_t none, std::uint32_t full,
                         std::uint32_t m) {
    ppb::Observation o;
    ppb_chunk chunk{};
    chunk.layers[PPB_KIND_NONE] = none;
    chunk.layers[PPB_KIND_FULL] = full;
    chunk.in_flight = std::min(p - s, m);
    o.placement = {p, s, {chunk}};
    o.peak_memory_mb = truth(p, s, none, full, chunk.in_flight);
    return o;
}

// Two dry runs of an 8-stage pipeline with different offsets: everything identifiable.
std::vector<ppb::Observation> dry_runs() {
    std::vector<ppb::Observation> out;
    const std::uint32_t none_a[8] = {3, 4, 4, 4, 4, 4, 4, 3};
    const std::uint32_t none_b[8] = {2, 5, 3, 6, 4, 4, 5, 1};
    for (std::uint32_t s = 0; s < 8; ++s)
        out.push_back(observe(8, s, none_a[s], s % 2, 32));
    for (std::uint32_t s = 0; s < 8; ++s)
        out.push_back(observe(8, s, none_b[s], 1, 32));
    return out;
}

bool is_loaded(const fs::path& path) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr)
        return false;
    ::dlclose(handle);  // balance the reference RTLD_NOLOAD took
    return true;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// `call` fails with a ModelError that is the plugin's fault (PPB_ERR_INTERNAL, not the caller's
// input) and whose message starts "plugin <name> 1.0.0 " and contains `part`.
template <class Call>
void expect_fault(const std::string& name, Call&& call, const std::string& part) {
    try {
        call();
        BOOST_ERROR("no error for " << name << ": expected '" << part << "'");
    } catch (const ppb::ModelError& e) {
        const std::string message = e.what();
        BOOST_TEST(e.status() == PPB_ERR_INTERNAL, message);
        BOOST_TEST(!e.is_input_error());
        BOOST_TEST(message.starts_with("plugin " + name + " 1.0.0 "), message);
        BOOST_TEST(contains(message, part), message);
    }
}

// A misbehaving fixture, opened with `options` and fitted.
ppb::MemoryModel fitted_fixture(const std::string& name, const std::string& options = "{}") {
    ppb::MemoryModel model = ppb::open_model(fixture("ppb-" + name + "-1.0.0.so"), options);
    const std::vector<ppb::Observation> obs = {
        ppb::Observation{{1, 0, {ppb_chunk{{3}, 1}}}, 16.0, "", 0}};
    const std::vector<ppb_observation> views = ppb::views(obs);
    model.fit(views);
    return model;
}

// The eight stages of one pipeline, each with two layers.
std::vector<ppb::StagePlacement> pipeline() {
    std::vector<ppb::StagePlacement> out;
    for (std::uint32_t s = 0; s < 8; ++s)
        out.push_back(ppb::StagePlacement{8, s, {ppb_chunk{{2}, 1}}});
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(loading)

BOOST_AUTO_TEST_CASE(dryrun_lsq_loads_fits_and_predicts_through_the_c_boundary) {
    const auto candidate = dryrun_lsq();
    BOOST_TEST_REQUIRE((candidate.verdict == ppb::Verdict::usable), candidate.reason);
    ppb::MemoryModel model = ppb::open_model(candidate);
    BOOST_TEST(model.name() == "dryrun-lsq");
    BOOST_TEST(model.version() == "1.0.0");
    BOOST_TEST(model.needs_fit());
    BOOST_TEST(model.kinds() == PPB_ALL_KINDS);

    const auto observations = dry_runs();
    model.fit(ppb::views(observations));

    // A placement that was never observed.
    ppb_chunk chunk{};
    chunk.layers[PPB_KIND_NONE] = 7;
    chunk.layers[PPB_KIND_FULL] = 2;
    chunk.in_flight = 5;
    const ppb::StagePlacement unseen{8, 3, {chunk}};
    BOOST_TEST(model.predict(unseen.view()) == truth(8, 3, 7, 2, 5),
               boost::test_tools::tolerance(1e-9));

    const auto params = model.parameters();
    BOOST_TEST_REQUIRE(params.has_value());
    BOOST_TEST(params->identified ==
               (PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER |
                PPB_PARAM_ACTIVATION(PPB_KIND_NONE) | PPB_PARAM_ACTIVATION(PPB_KIND_FULL)));
    BOOST_TEST(params->const_mb == C, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(params->head_mb == H, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(params->tail_mb == T, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(params->per_layer_mb == P, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(params->activation_mb[PPB_KIND_NONE] == A_none, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(params->activation_mb[PPB_KIND_FULL] == A_full, boost::test_tools::tolerance(1e-9));

    // API 1.2: over-determined (16 observations, 6 unknowns) and exact: a standard error of ~0.
    const auto se = model.predict_std_error(unseen.view());
    BOOST_TEST_REQUIRE(se.has_value());
    BOOST_TEST(*se < 1e-6);

    const auto report = boost::json::parse(model.report()).as_object();
    BOOST_TEST(report.at("parameters").at("activation_mb").at("comm").is_null());

    const std::vector<ppb_placement> batch = {unseen.view(), observations[0].placement.view()};
    const auto predicted = model.predict_batch(batch);
    BOOST_TEST_REQUIRE(predicted.size() == 2u);
    BOOST_TEST(predicted[1] == observations[0].peak_memory_mb, boost::test_tools::tolerance(1e-9));
}

// A plugin written in C against ppb/abi.h alone (tests/plugins/fixtures/c_linear.c, exported
// with PPB_EXPORT_MEMORY_MODEL_TABLE): found, loaded, fitted and asked like any other, its
// refusals carrying its status and message.
BOOST_AUTO_TEST_CASE(a_plugin_written_in_c_loads_fits_and_predicts) {
    const ppb::PluginCandidate candidate = fixture("ppb-c-linear-1.0.0.so");
    BOOST_TEST_REQUIRE((candidate.verdict == ppb::Verdict::usable), candidate.reason);
    BOOST_TEST(candidate.entry_point == "ppb_memory_model_v1_4");
    ppb::MemoryModel model = ppb::open_model(candidate);
    BOOST_TEST(model.name() == "c-linear");
    BOOST_TEST(model.needs_fit());
    const ppb::StagePlacement four{4, 1, {ppb_chunk{{3, 0, 0, 0, 1}, 3}}};
    try {
        (void)model.predict(four.view());
        BOOST_FAIL("predict before fit must fail");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_NOT_FITTED);
        BOOST_TEST(contains(e.what(), "fit c-linear before predicting"), e.what());
    }
    // Stages of one layer count cannot tell the constant from the per-layer memory.
    std::vector<ppb_observation> one_count;
    std::vector<ppb::StagePlacement> kept;
    for (std::uint32_t s = 0; s < 2; ++s)
        kept.push_back(ppb::StagePlacement{2, s, {ppb_chunk{{4}, 2 - s}}});
    for (const auto& k : kept)
        one_count.push_back(ppb_observation{k.view(), 900.0});
    try {
        model.fit(one_count);
        BOOST_FAIL("one layer count must be refused");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(contains(e.what(), "2 observations of one layer count"), e.what());
    }
    // M = 500 + 120 n, recovered by its least squares.
    std::vector<ppb::StagePlacement> stages;
    for (std::uint32_t n : {2u, 3u, 5u, 8u})
        stages.push_back(ppb::StagePlacement{4, n % 4, {ppb_chunk{{n}, 1}}});
    std::vector<ppb_observation> observations;
    for (const auto& st : stages) {
        observations.push_back(
            ppb_observation{st.view(), 500.0 + 120.0 * st.chunks.front().layers[PPB_KIND_NONE]});
    }
    model.fit(observations);
    BOOST_TEST(model.predict(four.view()) == 500.0 + 120.0 * 4, boost::test_tools::tolerance(1e-9));
    const auto parameters = model.parameters();
    BOOST_TEST_REQUIRE(parameters.has_value());
    BOOST_TEST(parameters->const_mb == 500.0, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(parameters->per_layer_mb == 120.0, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(!model.predict_std_error(four.view()).has_value());  // unsupported: none given
    BOOST_TEST(model.groups() == std::vector<std::string>{"body"});
    const auto report = boost::json::parse(model.report()).as_object();
    BOOST_TEST(report.at("diagnostics").at("language").as_string() == "C");
    // Its own checks of the input, with its message.
    const ppb_placement beyond{4, 7, 1, four.chunks.data()};
    try {
        (void)model.predict(beyond);
        BOOST_FAIL("stage 7 of 4 must be refused");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.is_input_error());
    }
    try {
        (void)ppb::open_model(candidate, "{\"const_mb\": 1}");
        BOOST_FAIL("an option must be refused");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(contains(e.what(), "c-linear takes no options"), e.what());
    }
    // Through the bare table, what the host's own checks would stop first: the plugin's checks
    // and messages, per observation.
    const auto table = ppb::load_plugin(candidate);
    ppb_model* raw = nullptr;
    BOOST_TEST_REQUIRE(table->create("{}", &raw) == PPB_OK);
    std::vector<ppb_observation> bad = observations;
    bad[1].peak_memory_mb = std::nan("");
    BOOST_TEST(table->fit(raw, bad.data(), bad.size()) == PPB_ERR_INVALID_INPUT);
    BOOST_TEST(std::string(table->last_error()) == "observation 2: peak memory nan MB");
    bad = observations;
    bad[2].placement.stage = 9;
    BOOST_TEST(table->fit(raw, bad.data(), bad.size()) == PPB_ERR_INVALID_INPUT);
    BOOST_TEST(std::string(table->last_error()) == "observation 3: stage 9 of a 4-stage pipeline");
    double mb = 0.0;
    BOOST_TEST(table->predict(raw, &observations[0].placement, &mb) == PPB_ERR_NOT_FITTED);
    table->destroy(raw);
}

BOOST_AUTO_TEST_CASE(the_library_lives_exactly_as_long_as_its_models) {
    const auto candidate =
        ppb::inspect_plugin_file(fs::path(PPB_VERSIONS_DIR) / "ppb-fixed-1.4.2.so");
    BOOST_TEST_REQUIRE((candidate.verdict == ppb::Verdict::usable), candidate.reason);
    const fs::path file = fs::canonical(candidate.path);
    BOOST_TEST(!is_loaded(file));
    {
        std::optional<ppb::MemoryModel> model;
        {
            auto table = ppb::load_plugin(candidate);
            model.emplace(table, "{\"const_mb\": 10, \"per_layer_mb\": 2}");
        }  // the table's own reference is gone; the model's keeps the library mapped
        BOOST_TEST(is_loaded(file));
        const std::vector<ppb::Observation> obs = {
            ppb::Observation{{1, 0, {ppb_chunk{{3}, 1}}}, 16.0, "", 0}};
        model->fit(ppb::views(obs));
        BOOST_TEST(model->predict(obs[0].placement.view()) == 16.0);
    }
    BOOST_TEST(!is_loaded(file));
}

BOOST_AUTO_TEST_CASE(model_errors_carry_status_and_message) {
    ppb::MemoryModel model = ppb::open_model(dryrun_lsq());
    const ppb::StagePlacement placement{4, 1, {ppb_chunk{{2}, 3}}};
    try {
        (void)model.predict(placement.view());
        BOOST_FAIL("predict before fit must fail");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_NOT_FITTED);
        BOOST_TEST(contains(e.what(), "memory model 'dryrun-lsq' 1.0.0: predict failed"), e.what());
    }
    try {
        model.fit({});
        BOOST_FAIL("fit without observations must fail");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(e.is_input_error());
    }
    BOOST_CHECK_THROW(ppb::open_model(dryrun_lsq(), "{\"no_such_option\": 1}"), ppb::ModelError);
}

BOOST_AUTO_TEST_CASE(missing_factory_is_a_plugin_error) {
    try {
        (void)ppb::open_model(fixture("ppb-no-factory-1.0.0.so"));
        BOOST_FAIL("must fail");
    } catch (const ppb::PluginError& e) {
        BOOST_TEST(contains(e.what(), "no create function (missing factory)"), e.what());
        BOOST_TEST(contains(e.what(), "ppb-no-factory-1.0.0.so"), e.what());
    }
}

BOOST_AUTO_TEST_CASE(throwing_factory_and_fit_become_model_errors) {
    try {
        (void)ppb::open_model(fixture("ppb-throwing-factory-1.0.0.so"));
        BOOST_FAIL("must fail");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INTERNAL);
        BOOST_TEST(!e.is_input_error());
        BOOST_TEST(contains(e.what(), "'throwing-factory' 1.0.0: create failed"), e.what());
        BOOST_TEST(contains(e.what(), "constructor throws on purpose"), e.what());
    }
    ppb::MemoryModel model = ppb::open_model(fixture("ppb-throwing-fit-1.0.0.so"));
    const std::vector<ppb::Observation> obs = {
        ppb::Observation{{1, 0, {ppb_chunk{{3}, 1}}}, 16.0, "", 0}};
    try {
        model.fit(ppb::views(obs));
        BOOST_FAIL("must fail");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INTERNAL);
        BOOST_TEST(contains(e.what(), "fit throws on purpose"), e.what());
    }
}

BOOST_AUTO_TEST_CASE(dynamic_loader_errors_are_reported_with_its_message) {
    try {
        (void)ppb::load_plugin(fixture("ppb-unresolved-1.0.0.so"));
        BOOST_FAIL("must fail");
    } catch (const ppb::PluginError& e) {
        BOOST_TEST(contains(e.what(), "cannot load it"), e.what());
        BOOST_TEST(contains(e.what(), "ppb_fixture_symbol_that_does_not_exist"), e.what());
    }
}

BOOST_AUTO_TEST_CASE(manifest_must_match_the_file_name) {
    try {
        (void)ppb::load_plugin(fixture("ppb-mismatch-1.0.0.so"));
        BOOST_FAIL("must fail");
    } catch (const ppb::PluginError& e) {
        BOOST_TEST(contains(e.what(),
                            "file name says 'mismatch' 1.0.0 but the plugin says "
                            "'mismatch' 9.9.9"),
                   e.what());
    }
}

BOOST_AUTO_TEST_CASE(older_api_minor_loads_and_newer_features_are_unavailable) {
    ppb::MemoryModel older = ppb::open_model(fixture("ppb-older-api-1.0.0.so"));
    BOOST_TEST(older.api_minor() == 0u);
    // Its table ends before options_help: the host must not read past it.
    BOOST_TEST(!older.options_help().has_value());
    const std::vector<ppb::Observation> obs = {
        ppb::Observation{{1, 0, {ppb_chunk{{3}, 1}}}, 16.0, "", 0}};
    older.fit(ppb::views(obs));
    BOOST_TEST(older.predict(obs[0].placement.view()) == 1000.0 + 100.0 * 3);
    BOOST_TEST(!older.predict_std_error(obs[0].placement.view()).has_value());

    // A current build offers it.
    const ppb::MemoryModel current = ppb::open_model(dryrun_lsq());
    BOOST_TEST(current.api_minor() == std::uint32_t{PPB_API_MINOR});
    BOOST_TEST_REQUIRE(current.options_help().has_value());
    BOOST_TEST(current.options_help()->find("rank_tolerance") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(newer_api_minor_loads_and_works_through_the_part_the_host_knows) {
    ppb::MemoryModel newer = ppb::open_model(fixture("ppb-newer-api-1.0.0.so"),
                                             R"({"const_mb": 500, "per_layer_mb": 10})");
    BOOST_TEST(newer.api_minor() == 9u);
    BOOST_TEST(newer.newer_than_host());
    BOOST_TEST(newer.api().struct_size > sizeof(ppb_memory_model_api));
    BOOST_TEST(!ppb::open_model(dryrun_lsq()).newer_than_host());
    // Everything of the host's API works, 1.1's options help and 1.2's predict_std_error too.
    BOOST_TEST(newer.options_help().value() ==
               "const_mb: constant memory in MB\nper_layer_mb: memory per layer in MB");
    const std::vector<ppb::Observation> obs = {
        ppb::Observation{{2, 1, {ppb_chunk{{4}, 1}}}, 600.0, "", 0}};
    newer.fit(ppb::views(obs));
    BOOST_TEST(newer.predict(obs[0].placement.view()) == 500.0 + 10.0 * 4);
    const std::vector<ppb_placement> batch = {obs[0].placement.view(), obs[0].placement.view()};
    BOOST_TEST(newer.predict_batch(batch) == (std::vector<double>{540.0, 540.0}));
    BOOST_TEST(!newer.predict_std_error(obs[0].placement.view()).has_value());
    // The boundary's checks run in the plugin, as in one built for this host.
    try {
        (void)newer.predict(ppb_placement{2, 2, 1, obs[0].placement.chunks.data()});
        BOOST_ERROR("an out-of-range stage was predicted");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(contains(e.what(),
                            "placement: stage 2 is out of range for a pipeline of 2 stages (0..1)"),
                   e.what());
    }
}

BOOST_AUTO_TEST_CASE(a_table_smaller_than_its_claimed_minor_is_refused) {
    try {
        (void)ppb::load_plugin(fixture("ppb-short-table-1.0.0.so"));
        BOOST_ERROR("a table too small for its API minor was loaded");
    } catch (const ppb::PluginError& e) {
        BOOST_TEST(
            contains(e.what(), "its function table is " + std::to_string(PPB_API_1_1_TABLE_SIZE) +
                                   " bytes, smaller than the " +
                                   std::to_string(PPB_API_1_2_TABLE_SIZE) +
                                   " bytes that API 1.2 (which it claims) needs"),
            e.what());
    }
}

BOOST_AUTO_TEST_CASE(another_abi_major_is_refused_naming_both_versions) {
    try {
        (void)ppb::load_plugin(fixture("ppb-wrong-abi-1.0.0.so"));
        BOOST_ERROR("a plugin of ABI 2 was loaded");
    } catch (const ppb::PluginError& e) {
        BOOST_TEST(contains(e.what(), "is incompatible: built for plugin ABI 2 (API 2.0"),
                   e.what());
        BOOST_TEST(contains(e.what(),
                            "this ppb supports ABI 1 only (plugin API 1.x, its own being "
                            "1." +
                                std::to_string(PPB_API_MINOR) + ")"),
                   e.what());
    }
}

BOOST_AUTO_TEST_CASE(incompatible_candidates_are_never_loaded) {
    for (const char* file : {"ppb-wrong-abi-1.0.0.so", "ppb-short-table-1.0.0.so",
                             "ppb-not-a-library-1.0.0.so", "ppb-no-entry-1.0.0.so"}) {
        BOOST_CHECK_THROW((void)ppb::load_plugin(fixture(file)), ppb::PluginError);
    }
    // After every failure above, the host still loads and uses a good plugin.
    ppb::MemoryModel model = ppb::open_model(dryrun_lsq());
    const auto observations = dry_runs();
    model.fit(ppb::views(observations));
    BOOST_TEST(model.predict(observations[3].placement.view()) == observations[3].peak_memory_mb,
               boost::test_tools::tolerance(1e-9));
}

// What a plugin hands back is checked by the host (ppb::MemoryModel) and never passed on.
BOOST_AUTO_TEST_CASE(nan_infinite_or_negative_predictions_are_the_plugins_fault) {
    const std::vector<ppb::StagePlacement> stages = pipeline();
    std::vector<ppb_placement> views;
    for (const auto& s : stages)
        views.push_back(s.view());
    const std::pair<std::string, std::string> cases[] = {
        {"returns-nan", "that is not a number (NaN)"},
        {"returns-infinite", "that is infinite (inf)"},
        {"returns-negative", "that is negative (-1.5 MB)"}};
    for (const auto& [name, what] : cases) {
        BOOST_TEST_CONTEXT(name) {
            const ppb::MemoryModel model = fitted_fixture(name);
            BOOST_TEST(model.predict(views[2]) == 1200.0);
            expect_fault(
                name, [&] { (void)model.predict(views[3]); },
                "returned a prediction " + what + " for stage 3 of 8");
            expect_fault(
                name, [&] { (void)model.predict_batch(views); },
                "returned a prediction " + what + " for placement 3");
            expect_fault(
                name, [&] { (void)model.predict_std_error(views[0]); },
                "returned a standard error " + what + " for stage 0 of 8");
        }
    }
    const ppb::MemoryModel nan = fitted_fixture("returns-nan");
    expect_fault(
        "returns-nan", [&] { (void)nan.predict_batch(views); },
        "plugin returns-nan 1.0.0 returned a prediction that is not a number (NaN) for "
        "placement 3");
}

BOOST_AUTO_TEST_CASE(a_report_that_is_not_the_documented_json_is_the_plugins_fault) {
    const std::pair<std::string, std::string> cases[] = {
        {"truncated", "returned a report that is not valid JSON: line 1, column"},
        {"repeated-key", "returned a report that is not valid JSON: line 1, column"},
        {"array", R"(returned a report that is not a JSON object with "parameters" and)"},
        {"no-diagnostics", R"(returned a report that is not a JSON object with "parameters" and)"}};
    for (const auto& [mode, part] : cases) {
        BOOST_TEST_CONTEXT(mode) {
            const ppb::MemoryModel model =
                fitted_fixture("bad-report-json", R"({"mode": ")" + mode + R"("})");
            expect_fault(
                "bad-report-json", [&] { (void)model.report(); }, part);
        }
    }
    const ppb::MemoryModel repeated =
        fitted_fixture("bad-report-json", R"({"mode": "repeated-key"})");
    expect_fault(
        "bad-report-json", [&] { (void)repeated.report(); }, "duplicate field 'diagnostics'");
}

BOOST_AUTO_TEST_CASE(coefficients_with_stray_bits_or_non_finite_values_are_the_plugins_fault) {
    const ppb::MemoryModel stray = fitted_fixture("stray-parameter-bits");
    expect_fault(
        "stray-parameter-bits", [&] { (void)stray.parameters(); },
        "returned linear coefficients with bits 0x400 set in 'identified' that are not "
        "PPB_PARAM_* bits");
    const ppb::MemoryModel nan = fitted_fixture("stray-parameter-bits", R"({"mode": "nan"})");
    expect_fault(
        "stray-parameter-bits", [&] { (void)nan.parameters(); },
        "returned the linear coefficient per_layer_mb as nan, not a finite number");
    // The well-behaved model's coefficients pass.
    const ppb::MemoryModel good = fitted_fixture("returns-nan");
    BOOST_TEST(good.parameters()->identified == (PPB_PARAM_CONST | PPB_PARAM_PER_LAYER));
}

BOOST_AUTO_TEST_CASE(a_status_outside_the_defined_range_is_the_plugins_fault) {
    const ppb::MemoryModel model = fitted_fixture("bad-status");
    const ppb::StagePlacement placement{8, 1, {ppb_chunk{{2}, 1}}};
    const ppb_placement view = placement.view();
    expect_fault(
        "bad-status", [&] { (void)model.predict(view); },
        "returned status 42 from predict, which is not a ppb_status (0 to 6)");
    expect_fault(
        "bad-status",
        [&] {
            (void)model.predict_batch({&view, 1});
        },
        "returned status -1 from predict_batch");
    expect_fault(
        "bad-status", [&] { (void)model.predict_std_error(view); },
        "returned status 7 from predict_std_error");
    expect_fault(
        "bad-status", [&] { (void)model.parameters(); }, "returned status 1000 from parameters");
    BOOST_TEST(!model.report().empty());
}

BOOST_AUTO_TEST_CASE(null_or_over_long_texts_are_the_plugins_fault) {
    const std::vector<ppb::Observation> obs = {
        ppb::Observation{{1, 0, {ppb_chunk{{3}, 1}}}, 16.0, "", 0}};
    const std::vector<ppb_observation> views = ppb::views(obs);
    const auto candidate = fixture("ppb-bad-last-error-1.0.0.so");

    ppb::MemoryModel null_texts = ppb::open_model(candidate, R"({"mode": "null"})");
    expect_fault(
        "bad-last-error", [&] { null_texts.fit(views); },
        "failed in fit (invalid input) and its last_error() returned a null pointer");
    expect_fault(
        "bad-last-error", [&] { (void)null_texts.report(); },
        "returned a null pointer for its report");

    ppb::MemoryModel long_texts = ppb::open_model(candidate, R"({"mode": "long"})");
    expect_fault(
        "bad-last-error", [&] { long_texts.fit(views); },
        "failed in fit (invalid input) and its last_error() message is longer than "
        "65536 bytes");
    expect_fault(
        "bad-last-error", [&] { (void)long_texts.report(); },
        "returned a report longer than 16777216 bytes");
}

BOOST_AUTO_TEST_SUITE_END()

// Plugin API 1.3: a model of two groups of body layers, loaded from disk, answers the grouped
// calls, refuses plain placements, and a plugin older than 1.3 is refused groups with the API it
// would need.
BOOST_AUTO_TEST_CASE(groups_of_layers_cross_the_boundary) {
    ppb::MemoryModel model = ppb::open_model(fixture("ppb-two-groups-1.0.0.so"));
    BOOST_TEST(model.supports_groups());
    BOOST_TEST((model.groups() == std::vector<std::string>{"dense", "moe"}));

    // Stage 0 of 4, in-flight 4: dense 2 none + 1 full, moe 3 none.
    ppb::StagePlacement placement{4, 0, {ppb_chunk{{}, 4}}};
    std::vector<std::uint32_t> counts(2 * PPB_KIND_COUNT, 0);
    counts[PPB_KIND_NONE] = 2;
    counts[PPB_KIND_FULL] = 1;
    counts[PPB_KIND_COUNT + PPB_KIND_NONE] = 3;
    placement.set_group_layers(counts);
    BOOST_TEST(placement.chunks[0].layers[PPB_KIND_NONE] == 5u);
    const double expected = 100 + 40 + 3 * 10 + (2 * 5 + 1 * 1) * 4 + 3 * 50 + 3 * 20 * 4;
    BOOST_TEST(model.predict_grouped(placement.grouped_view()) == expected);
    const std::vector<ppb_grouped_placement> batch = {placement.grouped_view(),
                                                      placement.grouped_view()};
    BOOST_TEST(model.predict_grouped_batch(batch) == (std::vector<double>{expected, expected}));
    // The coefficients per group, and none for the model as a whole.
    BOOST_TEST(model.group_parameters(1).value().per_layer_mb == 50.0);
    BOOST_TEST(!model.parameters().has_value());
    // A plain placement means nothing to it.
    try {
        (void)model.predict(placement.view());
        BOOST_ERROR("a plain placement was predicted by a model of two groups");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(contains(e.what(),
                            "distinguishes 2 groups (dense, moe) of body layers: a "
                            "placement must count its layers per group"),
                   e.what());
    }
    // Counts of another number of groups, or not adding up to the chunk's.
    ppb::StagePlacement three = placement;
    three.set_group_layers(std::vector<std::uint32_t>(3 * PPB_KIND_COUNT, 1));
    try {
        (void)model.predict_grouped(three.grouped_view());
        BOOST_ERROR("three groups were predicted by a model of two");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(contains(e.what(),
                            "placement: num_groups is 3 but this memory model has 2 "
                            "groups (dense, moe)"),
                   e.what());
    }
    ppb::StagePlacement wrong = placement;
    wrong.chunks[0].layers[PPB_KIND_NONE] = 4;
    try {
        (void)model.predict_grouped(wrong.grouped_view());
        BOOST_ERROR("counts that do not add up were predicted");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(contains(e.what(),
                            "chunk 0: layers[0] is 4 but the groups' layers of that "
                            "kind add up to 5"),
                   e.what());
    }
    try {
        (void)model.group_parameters(2);
        BOOST_ERROR("group 2 of 2 was answered");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(contains(e.what(), "group 2 is out of range"), e.what());
    }

    // A plugin built for API 1.0: one group, and a clear refusal of more.
    ppb::MemoryModel older = ppb::open_model(fixture("ppb-older-api-1.0.0.so"));
    BOOST_TEST(!older.supports_groups());
    BOOST_TEST((older.groups() == std::vector<std::string>{"body"}));
    try {
        (void)older.predict_grouped(placement.grouped_view());
        BOOST_ERROR("an API 1.0 plugin was given two groups");
    } catch (const ppb::InputError& e) {
        BOOST_TEST(contains(e.what(),
                            "is built for plugin API 1.0, which knows one group of body "
                            "layers; layers counted per group (2 groups) need a plugin "
                            "built for API 1.3 or newer"),
                   e.what());
    }
}

// Plugin API 1.4: the terms of a prediction cross the boundary as the model gives them, checked
// by the host (ppb::MemoryModel::predict_parts) against ppb/abi.h, and a plugin older than 1.4 is
// never asked for them.
BOOST_AUTO_TEST_CASE(the_terms_of_a_prediction_cross_the_boundary_checked) {
    // Stage 1 of 8 with 2 layers: FixedModel's 1000 + 100 x 2.
    ppb::StagePlacement placement{8, 1, {ppb_chunk{{2}, 1}}};
    placement.set_group_layers(std::vector<std::uint32_t>{2, 0, 0, 0, 0});
    const ppb_grouped_placement view = placement.grouped_view();

    const ppb::MemoryModel good = fitted_fixture("bad-parts");
    BOOST_TEST(good.supports_parts());
    const auto parts = good.predict_parts(view);
    BOOST_TEST_REQUIRE(parts.has_value());
    BOOST_TEST_REQUIRE(parts->size() == 2u);
    BOOST_TEST((*parts)[0].name == "constant");
    BOOST_TEST((*parts)[0].label == "constant memory");
    BOOST_TEST((*parts)[0].mb == 1000.0);
    BOOST_TEST((*parts)[1].name == "layers");
    BOOST_TEST((*parts)[1].mb == 200.0);
    // More terms than the host's first buffer holds: asked again with room for all.
    const auto many = fitted_fixture("bad-parts", R"({"mode": "many"})").predict_parts(view);
    BOOST_TEST_REQUIRE(many.has_value());
    BOOST_TEST(many->size() == 20u);
    BOOST_TEST(many->back().name == "part_19");
    BOOST_TEST(many->back().mb == 60.0);
    // A model that gives none.
    BOOST_TEST(!fitted_fixture("bad-parts", R"({"mode": "none"})").predict_parts(view));

    const std::pair<std::string, std::string> cases[] = {
        {"nan",
         "returned part 'layers' of a prediction that is not a number (NaN) for stage 1 "
         "of 8"},
        {"negative",
         "returned part 'layers' of a prediction that is negative (-1.5 MB) for "
         "stage 1 of 8"},
        {"bad-name",
         "returned the name 'Layers' for part 1 of a prediction (1 to 32 of a-z, 0-9 "
         "and '_')"},
        {"long-name",
         "returned the name 'a_name_of_thirty_three_character' for part 1 of a "
         "prediction"},
        {"duplicate", "returned two parts of a prediction named 'constant'"},
        {"empty-label",
         "returned a label for part 'layers' of a prediction that is not 1 to 120 "
         "bytes of UTF-8 text without control characters"},
        {"control-label", "returned a label for part 'layers' of a prediction that is not"},
        {"not-utf8", "returned a label for part 'layers' of a prediction that is not"},
        {"null-label", "returned a null name or label for part 1 of a prediction"},
        {"zero", "returned 0 parts of a prediction (1 to 64 are possible) for stage 1 of 8"},
        {"too-many", "returned 65 parts of a prediction (1 to 64 are possible) for stage 1 of 8"},
        {"not-adding-up",
         "returned parts of a prediction that add up to 1201 MB, not to its "
         "prediction 1200 MB, for stage 1 of 8"}};
    for (const auto& [mode, part] : cases) {
        BOOST_TEST_CONTEXT(mode) {
            const ppb::MemoryModel model =
                fitted_fixture("bad-parts", R"({"mode": ")" + mode + R"("})");
            expect_fault(
                "bad-parts", [&] { (void)model.predict_parts(view); }, part);
        }
    }
    // The caller's mistakes are the caller's: a placement the model refuses.
    ppb::StagePlacement outside = placement;
    outside.stage = 8;
    try {
        (void)good.predict_parts(outside.grouped_view());
        BOOST_ERROR("a stage outside the pipeline was broken into terms");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(contains(e.what(), "predict_parts failed (invalid input)"), e.what());
    }

    // Built for API 1.3 (the table ends before predict_parts) and for API 1.0: never asked.
    for (const std::string name : {"api-1-3", "older-api"}) {
        BOOST_TEST_CONTEXT(name) {
            ppb::MemoryModel older = ppb::open_model(fixture("ppb-" + name + "-1.0.0.so"));
            BOOST_TEST(!older.supports_parts());
            const std::vector<ppb::Observation> obs = {
                ppb::Observation{{1, 0, {ppb_chunk{{3}, 1}}}, 16.0, "", 0}};
            older.fit(ppb::views(obs));
            BOOST_TEST(older.predict(placement.view()) == 1200.0);
            BOOST_TEST(!older.predict_parts(view).has_value());
        }
    }
}

}  // namespace loading_tests
