// The built plugin, loaded from disk through ppb::host: it is found usable without loading,
// created with options, predicts through the C boundary as the core does, and reports errors
// with their status and the offending key.
#include "analytic_support.hpp"

#include <ppb/discovery.hpp>
#include <ppb/fit_format.hpp>
#include <ppb/loader.hpp>
#include <ppb/memory_model.hpp>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <vector>

using namespace analytic_test;
namespace fs = std::filesystem;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(plugin)

BOOST_AUTO_TEST_CASE(loads_from_disk_and_predicts_through_the_c_boundary) {
    const auto candidate =
        ppb::inspect_plugin_file(fs::path(PPB_BUILD_PLUGIN_DIR) / "ppb-analytic-1.0.0.so");
    BOOST_TEST_REQUIRE((candidate.verdict == ppb::Verdict::usable), candidate.reason);
    BOOST_TEST(candidate.name == "analytic");

    const std::string options =
        options_json(llama2_70b, R"("tensor_parallel": 8, "sequence_parallel": true,
                                    "data_parallel": 4, "distributed_optimizer": true,
                                    "constant_mb": 3072)");
    ppb::MemoryModel model = ppb::open_model(candidate, options);
    BOOST_TEST(model.name() == "analytic");
    BOOST_TEST(model.version() == "1.0.0");
    BOOST_TEST(!model.needs_fit());
    BOOST_TEST(model.kinds() == PPB_ALL_KINDS);
    BOOST_TEST(!model.parameters().has_value());

    // The same placements through the boundary and through the core linked here.
    const ppb::analytic::AnalyticModel core(options);
    std::vector<ppb_chunk> chunks(8);
    std::vector<ppb_placement> placements;
    for (std::uint32_t s = 0; s < 8; ++s) {
        chunks[s].layers[PPB_KIND_SELECT] = 9;
        chunks[s].layers[PPB_KIND_FULL] = 1;
        chunks[s].in_flight = 8 - s;
        placements.push_back(ppb_placement{8, s, 1, &chunks[s]});
    }
    const std::vector<double> batch = model.predict_batch(placements);
    BOOST_TEST_REQUIRE(batch.size() == placements.size());
    for (std::size_t i = 0; i < placements.size(); ++i) {
        BOOST_TEST(model.predict(placements[i]) == core.predict(placements[i]));
        BOOST_TEST(batch[i] == core.predict(placements[i]));
    }
    // Stage 0: 3072 + runtime_mb 100 + 10 * 918.140625 + (9 * 156 + 8) * 8 + 281.25 + 4 * 8,
    // and one layer's backward held once: unfused score gradients 4as^2b/t = 512 MB and the
    // MLP's gradients 4sbF/t = 56 MB.
    BOOST_TEST(batch[0] == 3072.0 + 100.0 + 9181.40625 + 11296.0 + 313.25 + 568.0,
               tt::tolerance(1e-12));

    const auto document = ppb::make_fit_document(model.name(), model.version(), model.report());
    BOOST_TEST(document.at("parameters").at("param_per_layer_mb").as_double() == 918.140625,
               tt::tolerance(1e-12));

    // Errors cross the boundary with their status and message.
    ppb_chunk bad{};
    bad.in_flight = 1;
    bad.layers[PPB_KIND_NONE] = 81;
    try {
        (void)model.predict(ppb_placement{8, 1, 1, &bad});
        BOOST_FAIL("a stage with more layers than the model must be refused");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(contains(e.what(), "81 body layers"), e.what());
    }
    try {
        model.fit({});
        BOOST_FAIL("the analytic model is not fitted");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_UNSUPPORTED);
    }
    try {
        (void)ppb::open_model(candidate, options_without(llama2_70b, "hidden_size"));
        BOOST_FAIL("options without hidden_size must be refused");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT);
        BOOST_TEST(contains(e.what(), "missing required option 'hidden_size'"), e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()
