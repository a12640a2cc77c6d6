// Recompute kinds from MindFormers' per-stage counts (the SAPP split), and message helpers.
#include "scratch.hpp"

#include <ppb/importers/layout.hpp>

#include <boost/test/unit_test.hpp>

using ppb_test::kinds;
using namespace ppb::importers;

BOOST_AUTO_TEST_SUITE(layout)

BOOST_AUTO_TEST_CASE(split_follows_the_sapp_tool) {
    // 10 layers: the first 3 full, select on the first 7, comm on the first 5.
    // both = min(7 - 3, 5 - 3) = 2; select = 4 - 2; comm = 2 - 2; none = 10 - 3 - 2 - 2.
    BOOST_TEST(split_recompute(10, 3, 7, 5) == kinds(3, 2, 0, 2, 3));
    BOOST_TEST(split_recompute(10, 0, 10, 0) == kinds(0, 10, 0, 0, 0));
    BOOST_TEST(split_recompute(10, 0, 0, 4) == kinds(6, 0, 4, 0, 0));
    BOOST_TEST(split_recompute(10, 0, 6, 6) == kinds(4, 0, 0, 6, 0));
    BOOST_TEST(split_recompute(10, 0, 0, 0) == kinds(10, 0, 0, 0, 0));
}

BOOST_AUTO_TEST_CASE(split_floors_at_zero_when_full_covers_the_others) {
    BOOST_TEST(split_recompute(10, 4, 2, 6) == kinds(4, 0, 2, 0, 4));
    BOOST_TEST(split_recompute(10, 6, 2, 3) == kinds(4, 0, 0, 0, 6));
}

BOOST_AUTO_TEST_CASE(split_counts_above_the_stage_mean_every_layer) {
    BOOST_TEST(split_recompute(5, 8, 0, 0) == kinds(0, 0, 0, 0, 5));
    BOOST_TEST(split_recompute(5, 0, 99, 2) == kinds(0, 3, 0, 2, 0));
    BOOST_TEST(split_recompute(0, 3, 3, 3) == kinds(0, 0, 0, 0, 0));
}

BOOST_AUTO_TEST_CASE(split_always_sums_to_the_stage_layers) {
    for (std::uint32_t n = 0; n <= 6; ++n) {
        for (std::uint32_t f = 0; f <= 7; ++f) {
            for (std::uint32_t s = 0; s <= 7; ++s) {
                for (std::uint32_t c = 0; c <= 7; ++c)
                    BOOST_TEST(total_layers(split_recompute(n, f, s, c)) == n);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(descriptions) {
    BOOST_TEST(describe_layers(kinds(0, 6, 0, 0, 3)) == "9 layers (full 3, select 6)");
    BOOST_TEST(describe_layers(kinds(1, 0, 0, 0, 0)) == "1 layer (none 1)");
    BOOST_TEST(describe_layers(KindCounts{}) == "0 layers");
    BOOST_TEST(describe_numbers({3, 0, 1, 2, 5, 7, 8, 2}) == "0-3, 5, 7, 8");
    BOOST_TEST(describe_numbers({}) == "");
    BOOST_TEST(describe_numbers({4}) == "4");
}

BOOST_AUTO_TEST_SUITE_END()
