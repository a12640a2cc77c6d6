// ppb/schedule.hpp: in-flight micro-batch counts per schedule (host_api/docs/design.md, "In-flight
// micro-batch counts per schedule").
#define BOOST_TEST_MODULE ppb schedule
#include <ppb/schedule.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using ppb::in_flight_counts;
using ppb::Schedule;
using Counts = std::vector<std::uint32_t>;

BOOST_AUTO_TEST_CASE(names) {
    for (const auto s : {Schedule::one_f_one_b, Schedule::interleaved,
                         Schedule::interleaved_less_memory, Schedule::dualpipe_v}) {
        const auto back = ppb::schedule_from_name(ppb::schedule_name(s));
        BOOST_TEST_REQUIRE(back.has_value());
        BOOST_TEST((*back == s));
    }
    BOOST_TEST(ppb::schedule_name(Schedule::one_f_one_b) == "1f1b");
    BOOST_TEST(ppb::schedule_name(Schedule::interleaved_less_memory) == "interleaved-less-memory");
    BOOST_TEST(!ppb::schedule_from_name("1F1B").has_value());
    BOOST_TEST(!ppb::schedule_from_name("").has_value());
}

BOOST_AUTO_TEST_CASE(one_f_one_b_without_micro_batches_is_p_minus_s) {
    for (std::uint32_t s = 0; s < 8; ++s) {
        BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 8, s, 0) == Counts{8 - s}));
    }
    BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 1, 0, 0) == Counts{1}));
}

BOOST_AUTO_TEST_CASE(one_f_one_b_is_capped_by_micro_batches) {
    // min(p - s, m)
    BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 8, 0, 4) == Counts{4}));
    BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 8, 4, 4) == Counts{4}));
    BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 8, 5, 4) == Counts{3}));
    BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 8, 7, 4) == Counts{1}));
    BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 8, 0, 32) == Counts{8}));
    BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 8, 0, 1) == Counts{1}));
    BOOST_TEST((in_flight_counts(Schedule::one_f_one_b, 8, 0, 4, 1) == Counts{4}));
}

BOOST_AUTO_TEST_CASE(interleaved) {
    // Megatron-LM's order (host_api/docs/design.md, "In-flight micro-batch counts per schedule"):
    // chunk c < v - 1 holds p + clamp((v - 2c)p - 2s - 1, 0, p), the last chunk min(p, 2p - 2s -
    // 1). tests/schedule checks these against the simulator.
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 0, 0, 2) == Counts{8, 4}));
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 1, 0, 2) == Counts{8, 4}));
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 2, 0, 2) == Counts{7, 3}));
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 3, 0, 2) == Counts{5, 1}));
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 0, 0, 3) == Counts{8, 7, 4}));
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 3, 0, 3) == Counts{8, 4, 1}));
    // Each capped at m, a multiple of p.
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 0, 4, 2) == Counts{4, 4}));
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 0, 8, 2) == Counts{8, 4}));
    BOOST_TEST((in_flight_counts(Schedule::interleaved, 4, 3, 4, 3) == Counts{4, 4, 1}));
}

BOOST_AUTO_TEST_CASE(interleaved_less_memory) {
    // Chunk c < v - 1 holds p + clamp((v - 1 - 2c)p - s, 0, p), the last chunk p - s.
    BOOST_TEST((in_flight_counts(Schedule::interleaved_less_memory, 4, 0, 0, 2) == Counts{8, 4}));
    BOOST_TEST((in_flight_counts(Schedule::interleaved_less_memory, 4, 3, 0, 2) == Counts{5, 1}));
    BOOST_TEST(
        (in_flight_counts(Schedule::interleaved_less_memory, 4, 2, 0, 3) == Counts{8, 4, 2}));
    BOOST_TEST(
        (in_flight_counts(Schedule::interleaved_less_memory, 4, 1, 4, 3) == Counts{4, 4, 3}));
}

BOOST_AUTO_TEST_CASE(dualpipe_v) {
    // Chunk 0: 2p - s; chunk 1: s + 1 (m >= 2p, so never capped).
    BOOST_TEST((in_flight_counts(Schedule::dualpipe_v, 4, 0, 0, 2) == Counts{8, 1}));
    BOOST_TEST((in_flight_counts(Schedule::dualpipe_v, 4, 3, 0, 2) == Counts{5, 4}));
    BOOST_TEST((in_flight_counts(Schedule::dualpipe_v, 4, 0, 8, 2) == Counts{8, 1}));
    BOOST_TEST((in_flight_counts(Schedule::dualpipe_v, 4, 3, 20, 2) == Counts{5, 4}));
    BOOST_TEST((in_flight_counts(Schedule::dualpipe_v, 1, 0, 0, 2) == Counts{2, 1}));
}

BOOST_AUTO_TEST_CASE(impossible_arguments_throw) {
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::one_f_one_b, 0, 0, 0),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::one_f_one_b, 8, 8, 0),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::one_f_one_b, 8, 0, 0, 2),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::one_f_one_b, 8, 0, 0, 0),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::interleaved, 8, 0, 0, 1),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::interleaved_less_memory, 8, 0, 0, 0),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::dualpipe_v, 8, 0, 0, 1),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::dualpipe_v, 8, 0, 0, 3),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::dualpipe_v, 4, 4, 0, 2),
                      std::invalid_argument);
    // Micro-batch counts the schedule cannot run.
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::interleaved, 4, 0, 6, 2),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::interleaved_less_memory, 4, 0, 2, 2),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)in_flight_counts(Schedule::dualpipe_v, 4, 0, 7, 2),
                      std::invalid_argument);
    try {
        (void)in_flight_counts(Schedule::dualpipe_v, 4, 0, 6, 2);
        BOOST_ERROR("dualpipe-v with 6 micro-batches on 4 stages should throw");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()) ==
                   "dualpipe-v needs at least twice as many micro-batches as stages (2 x 4 = 8), "
                   "got 6");
    }
    try {
        (void)in_flight_counts(Schedule::one_f_one_b, 8, 9, 0);
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("stage 9 is not a stage of") != std::string::npos,
                   e.what());
    }
}
