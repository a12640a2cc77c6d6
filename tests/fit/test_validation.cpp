// Observations and placements come from any host: each defect is rejected with a message that
// names the observation and the field. The structural checks run at the C boundary
// (ppb::plugin::check_*), so these tests call the model through it.
#include "../common/c_boundary.hpp"
#include "fit_support.hpp"
#include "model.hpp"

#include <ppb/plugin.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <limits>

using namespace ppb::fit_test;
using ppb::plugin::InvalidInput;
using Boundary = ppb::test::ThroughBoundary<ppb::dryrun_lsq::DryRunLsqModel>;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace validation_tests {

namespace {

// Four valid observations of which the one at index 3 is then broken by `damage`.
void expect_rejected(const std::function<void(ppb_observation&, ppb_chunk&)>& damage,
                     const std::string& expected_words) {
    DryRuns runs;
    for (std::uint32_t s = 1; s < 5; ++s)
        runs.observe(8, s, {s + 1, 0, 0, 0, 0}, 8);
    auto views = runs.views();
    ppb_chunk chunk = views[3].placement.chunks[0];
    views[3].placement.chunks = &chunk;
    damage(views[3], chunk);
    try {
        Boundary("{}").fit(views);
        BOOST_ERROR("a broken observation was accepted (expected: " << expected_words << ")");
    } catch (const InvalidInput& e) {
        BOOST_TEST_CONTEXT("message: " << e.what()) {
            BOOST_TEST(mentions(e.what(), "observation 3: "));
            BOOST_TEST(mentions(e.what(), expected_words));
        }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(validation)

BOOST_AUTO_TEST_CASE(invalid_observations_are_rejected) {
    expect_rejected([](ppb_observation& o, ppb_chunk&) { o.peak_memory_mb = -100.0; },
                    "peak_memory_mb is -100");
    expect_rejected([](ppb_observation& o, ppb_chunk&) { o.peak_memory_mb = 0.0; },
                    "peak_memory_mb is 0");
    expect_rejected([](ppb_observation& o,
                       ppb_chunk&) { o.peak_memory_mb = std::numeric_limits<double>::quiet_NaN(); },
                    "peak_memory_mb is nan");
    expect_rejected([](ppb_observation& o,
                       ppb_chunk&) { o.peak_memory_mb = std::numeric_limits<double>::infinity(); },
                    "peak_memory_mb is inf");
    expect_rejected([](ppb_observation& o, ppb_chunk&) { o.placement.stage = 8; },
                    "stage 8 is out of range for a pipeline of 8 stages (0..7)");
    expect_rejected([](ppb_observation& o, ppb_chunk&) { o.placement.num_stages = 0; },
                    "num_stages is 0");
    expect_rejected([](ppb_observation& o, ppb_chunk&) { o.placement.num_chunks = 0; },
                    "num_chunks is 0");
    expect_rejected([](ppb_observation& o, ppb_chunk&) { o.placement.chunks = nullptr; },
                    "chunks is null");
    expect_rejected([](ppb_observation&, ppb_chunk& c) { c.in_flight = 0; },
                    "chunk 0: in_flight is 0");
}

BOOST_AUTO_TEST_CASE(no_observations_are_rejected) {
    BOOST_CHECK_EXCEPTION(Boundary("{}").fit({}), InvalidInput, [](const InvalidInput& e) {
        return std::string(e.what()) ==
               "no observations: a fit needs at least one dry-run measurement";
    });
}

// The boundary's message for each defect, exactly.
BOOST_AUTO_TEST_CASE(boundary_messages_are_exact) {
    ppb_chunk chunk{{2, 0, 0, 0, 0}, 1};
    const auto message = [&](ppb_observation o) {
        try {
            Boundary("{}").fit(std::span<const ppb_observation>(&o, 1));
        } catch (const InvalidInput& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    BOOST_TEST(message({{4, 4, 1, &chunk}, 100.0}) ==
               "observation 0: stage 4 is out of range for a pipeline of 4 stages (0..3)");
    BOOST_TEST(message({{4, 1, 1, &chunk}, -0.5}) ==
               "observation 0: peak_memory_mb is -0.5; it must be a finite number of MB greater "
               "than 0");
    BOOST_TEST(message({{4, 1, 1, nullptr}, 100.0}) ==
               "observation 0: chunks is null although num_chunks is 1");
    chunk.in_flight = 0;
    BOOST_TEST(message({{4, 1, 1, &chunk}, 100.0}) ==
               "observation 0: chunk 0: in_flight is 0; a chunk holds the activations of at "
               "least one micro-batch at its peak");
}

BOOST_AUTO_TEST_CASE(invalid_placements_are_rejected_by_predict) {
    DryRuns runs;
    const std::array<std::uint32_t, 6> counts = {2, 3, 5, 4, 3, 2};
    for (std::uint32_t s = 0; s < 6; ++s)
        runs.observe(6, s, {counts[s], 0, 0, 0, 0}, 8);
    Boundary model("{}");
    const auto views = runs.views();
    model.fit(views);

    auto placement = stage(6, 6, {3, 0, 0, 0, 0}, 8);
    BOOST_CHECK_EXCEPTION(static_cast<void>(model.predict(placement.view())), InvalidInput,
                          [](const InvalidInput& e) {
                              return mentions(e.what(), "placement: stage 6 is out of range");
                          });
    placement.stage = 2;
    placement.chunks[0].in_flight = 0;
    BOOST_CHECK_THROW(static_cast<void>(model.predict(placement.view())), InvalidInput);
    BOOST_CHECK_THROW(static_cast<void>(model.predict_std_error(placement.view())), InvalidInput);
    std::vector<double> out(1);
    const ppb_placement batch[1] = {placement.view()};
    BOOST_CHECK_EXCEPTION(model.predict_batch(batch, out), InvalidInput, [](const InvalidInput& e) {
        return std::string(e.what()) ==
               "placement 0: chunk 0: in_flight is 0; a chunk holds the "
               "activations of at least one micro-batch at its peak";
    });
    placement.chunks.clear();
    BOOST_CHECK_THROW(static_cast<void>(model.predict(placement.view())), InvalidInput);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace validation_tests
