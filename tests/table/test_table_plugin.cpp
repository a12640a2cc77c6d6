// The built plugin loaded from disk through ppb::host: its manifest, predictions through the C
// boundary, statuses, and the round trip from a dryrun-lsq fit exported as a SAPP layer file.
#include "table_support.hpp"

#include <ppb/discovery.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/loader.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/placement.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <bit>
#include <charconv>
#include <optional>
#include <string>
#include <vector>

using namespace ppb::table_test;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace table_plugin_tests {

namespace {

ppb::PluginCandidate plugin_file(const std::string& file) {
    const auto candidate = ppb::inspect_plugin_file(build_plugin_dir / file);
    BOOST_TEST_REQUIRE((candidate.verdict == ppb::Verdict::usable),
                       file << ": " << candidate.reason);
    return candidate;
}

ppb::PluginCandidate table_plugin() {
    return plugin_file("ppb-table-1.0.0.so");
}

std::string llama_layers() {
    return read_text(samples_dir / "llama70b-layers.json");
}

// Runs `call`, which must fail with `status`, and checks its message holds every part.
template <class Call>
void check_status(Call&& call, ppb_status status, std::initializer_list<std::string_view> parts) {
    try {
        call();
        BOOST_ERROR("no error; expected status " << ppb::status_name(status));
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == status, e.what());
        for (const std::string_view part : parts)
            BOOST_TEST(contains(e.what(), part), "'" << part << "' not in: " << e.what());
    }
}

std::string shortest(double d) {
    char buffer[40];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, d);
    BOOST_TEST_REQUIRE((ec == std::errc()));
    return std::string(buffer, end);
}

// What `ppb fit --export-sapp` writes for a fit: the BODY's memory keys from P and the
// activations (a kind whose bit is unset is left out), HEAD and TAIL memory_parameter = H and T,
// stage_const_mem = C; numbers in their shortest round-trip form.
std::string export_sapp(const ppb_linear_parameters& p) {
    static constexpr std::array<const char*, PPB_KIND_COUNT> keys = {
        "memory_activation", "memory_select_rec", "memory_select_comm", "memory_both_comm_select",
        "memory_recompute"};
    std::string body = R"({"name": "decoder", "type": "BODY", "nb_layer": 80, "time": 30.0, )"
                       R"("memory_parameter": )" +
                       shortest(p.per_layer_mb);
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((p.identified & PPB_PARAM_ACTIVATION(k)) != 0)
            body += std::string(", \"") + keys[k] + "\": " + shortest(p.activation_mb[k]);
    }
    body += "}";
    return R"({"stage_const_mem": )" + shortest(p.const_mb) +
           R"(, "layers_description": [)"
           R"({"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 12.0, )"
           R"("memory_parameter": )" +
           shortest(p.head_mb) + "}, " + body +
           R"(, {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 25.0, )"
           R"("memory_parameter": )" +
           shortest(p.tail_mb) + "}]}";
}

// A model's prediction, or nullopt when it says NotEstimable.
std::optional<double> predict_or_not(const ppb::MemoryModel& model, const ppb_placement& p) {
    try {
        return model.predict(p);
    } catch (const ppb::ModelError& e) {
        BOOST_TEST_REQUIRE(e.status() == PPB_ERR_NOT_ESTIMABLE, e.what());
        return std::nullopt;
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(table_plugin_from_disk)

BOOST_AUTO_TEST_CASE(loads_from_disk_and_predicts_through_the_c_boundary) {
    const ppb::MemoryModel model = ppb::open_model(table_plugin(), llama_layers());
    BOOST_TEST(model.name() == "table");
    BOOST_TEST(model.version() == "1.0.0");
    BOOST_TEST(!model.needs_fit());
    BOOST_TEST(model.kinds() == PPB_ALL_KINDS);
    BOOST_TEST(contains(model.api().description, "SAPP layer file"));
    BOOST_TEST_REQUIRE(model.api().api_minor >= 1u);
    BOOST_TEST_REQUIRE(model.api().options_help != nullptr);
    BOOST_TEST(contains(model.api().options_help, "layers_description"));

    // As in test_table_model: 29872 (stage 0), 27272 (stage 3), 29934 (stage 7).
    const auto s0 = stage(8, 0, {0, 6, 0, 0, 3}, 8);
    const auto s3 = stage(8, 3, {0, 10, 0, 0, 0}, 5);
    const auto s7 = stage(8, 7, {4, 6, 0, 0, 0}, 1);
    BOOST_TEST(model.predict(s0.view()) == 29872.0);
    BOOST_TEST(model.predict(s3.view()) == 27272.0);
    BOOST_TEST(model.predict(s7.view()) == 29934.0);
    const std::vector<ppb_placement> batch = {s0.view(), s3.view(), s7.view()};
    BOOST_TEST(model.predict_batch(batch) == (std::vector<double>{29872.0, 27272.0, 29934.0}),
               boost::test_tools::per_element());

    const auto p = model.parameters();
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->identified == 0x1ffu);
    BOOST_TEST(p->const_mb == 3072.0);
    BOOST_TEST(p->head_mb == 4210.0);
    BOOST_TEST(p->tail_mb == 5630.0);
    BOOST_TEST(p->per_layer_mb == 1710.0);
    BOOST_TEST(p->activation_mb[PPB_KIND_COMM] == 690.0);

    const auto report = boost::json::parse(model.report()).as_object();
    BOOST_TEST(report.at("diagnostics").at("source").as_string() == "SAPP layer file");
    BOOST_TEST(report.at("parameters").at("activation_mb").at("full").to_number<double>() == 16.0);
}

BOOST_AUTO_TEST_CASE(statuses_through_the_c_boundary) {
    ppb::MemoryModel model = ppb::open_model(table_plugin(), llama_layers());
    check_status([&] { model.fit({}); }, PPB_ERR_UNSUPPORTED, {"configured from its options"});

    const auto bad = stage(8, 8, {1, 0, 0, 0, 0}, 1);
    check_status([&] { (void)model.predict(bad.view()); }, PPB_ERR_INVALID_INPUT,
                 {"placement: stage 8 is out of range"});

    // Bad options fail create() with the JSON path.
    check_status([] { (void)ppb::open_model(table_plugin(), "{}"); }, PPB_ERR_INVALID_INPUT,
                 {"memory model 'table' 1.0.0: create failed",
                  "missing required field 'layers_description'"});
    std::string negative = llama_layers();
    const std::string key = "\"memory_activation\": 820";
    negative.replace(negative.find(key), key.size(), "\"memory_activation\": -5");
    check_status([&] { (void)ppb::open_model(table_plugin(), negative); }, PPB_ERR_INVALID_INPUT,
                 {"layers_description[1].memory_activation: negative memory -5"});

    // A kind the file does not give: NotEstimable, and its bit unset.
    std::string no_both = llama_layers();
    const std::string both = "\"memory_both_comm_select\": 110,";
    no_both.erase(no_both.find(both), both.size());
    const ppb::MemoryModel partial = ppb::open_model(table_plugin(), no_both);
    const auto with_both = stage(8, 2, {0, 5, 0, 5, 0}, 6);
    check_status([&] { (void)partial.predict(with_both.view()); }, PPB_ERR_NOT_ESTIMABLE,
                 {"the layer file gives no memory_both_comm_select for the BODY entry 'decoder'"});
    // The placement owns its chunks: it must outlive the views predict_batch reads.
    const auto select_only = stage(8, 2, {0, 10, 0, 0, 0}, 6);
    const std::vector<ppb_placement> batch = {select_only.view()};
    BOOST_TEST(partial.predict_batch(batch).size() == 1u);
    const auto p = partial.parameters();
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->identified == (0x1ffu & ~PPB_PARAM_ACTIVATION(PPB_KIND_BOTH)));
    const auto report = boost::json::parse(partial.report()).as_object();
    BOOST_TEST(report.at("parameters").at("activation_mb").at("both").is_null());
}

// The contract of `ppb fit --export-sapp`: the table model reading the exported file predicts
// exactly what the dryrun-lsq fit predicts, bit for bit, and fails where it fails.
BOOST_AUTO_TEST_CASE(dryrun_lsq_fit_exported_as_sapp_predicts_the_same) {
    ppb::MemoryModel lsq = ppb::open_model(plugin_file("ppb-dryrun-lsq-1.0.0.so"));
    const auto dry_runs = ppb::read_dryrun_file(samples_dir / "llama70b-pp8-dryrun.json");
    lsq.fit(ppb::views(dry_runs.observations));
    const auto fitted = lsq.parameters();
    BOOST_TEST_REQUIRE(fitted.has_value());
    constexpr std::uint32_t required =
        PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
    BOOST_TEST_REQUIRE((fitted->identified & required) == required);
    // The sample never uses 'both': the export leaves it out.
    BOOST_TEST((fitted->identified & PPB_PARAM_ACTIVATION(PPB_KIND_BOTH)) == 0u);

    const std::string exported = export_sapp(*fitted);
    BOOST_TEST_MESSAGE("exported layer file: " << exported);
    const ppb::MemoryModel table = ppb::open_model(table_plugin(), exported);
    const auto read = table.parameters();
    BOOST_TEST_REQUIRE(read.has_value());
    BOOST_TEST(read->identified == fitted->identified);

    std::size_t compared = 0;
    std::size_t not_estimable = 0;
    for (std::uint32_t p = 1; p <= 16; p *= 2) {
        for (std::uint32_t s = 0; s < p; ++s) {
            for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
                for (std::uint32_t n = 0; n <= 11; n += 1 + n / 3) {
                    Layers layers{};
                    layers[k] = n;
                    layers[(k + 1) % PPB_KIND_COUNT] = (n * 7) % 5;
                    const std::uint32_t f = std::min<std::uint32_t>(p - s, 32);
                    const std::vector<ppb::StagePlacement> stages = {
                        stage(p, s, layers, f),
                        ppb::StagePlacement{
                            p, s, {chunk(layers, f), chunk({n, 1, 0, 0, 2}, f + 3)}},
                    };
                    for (const auto& placement : stages) {
                        const auto a = predict_or_not(lsq, placement.view());
                        const auto b = predict_or_not(table, placement.view());
                        BOOST_TEST_REQUIRE(a.has_value() == b.has_value());
                        if (!a) {
                            ++not_estimable;
                            continue;
                        }
                        ++compared;
                        BOOST_TEST(
                            std::bit_cast<std::uint64_t>(*a) == std::bit_cast<std::uint64_t>(*b),
                            "p " << p << ", s " << s << ": dryrun-lsq " << shortest(*a)
                                 << ", table " << shortest(*b));
                    }
                }
            }
        }
    }
    BOOST_TEST(compared > 500u);
    BOOST_TEST(not_estimable > 0u);  // the 'both' placements
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace table_plugin_tests
