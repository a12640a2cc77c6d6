// ppb's in-flight counts against Megatron-LM's own interleaved schedule, replayed here from its
// code (NVIDIA/Megatron-LM megatron/core/pipeline_parallel/schedules.py, commit
// 3bf9b874c32ebbbaa6f895be988e04a19fdce7ee): get_pp_rank_microbatches gives stage r of P with v
// model chunks and micro-batch groups of N (microbatch_group_size_per_vp_stage, default P)
//   warm-up = min(2 (P - r - 1) + (v - 1) N, M v)   (1F1B without chunks: min(P - r - 1, M)),
// get_schedule_table orders the forwards by groups of N micro-batches, each group through chunk
// 0 .. v - 1, and the backwards take the same table with the chunk mirrored (v - 1 - c). The
// loop runs the warm-up forwards, then one forward and one backward in turn, then the remaining
// backwards. The most micro-batches a chunk holds at once is what ppb::in_flight_counts must
// give, for every stage, P = 2 .. 8, v = 1 .. 5 and every M the schedule runs (multiples of P).
#include <ppb/schedule.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_warmup_tests {

namespace {

// `combined`: with --overlap-moe-expert-parallel-comm (schedules.py and combined_1f1b.py at
// d98e8a64dd): get_pp_rank_microbatches adds one warm-up forward to the interleaved schedule's,
// and without a pipeline combined_1f1b_schedule_for_no_pipelining runs the first forward alone,
// then each backward beside the next forward ("microbatch backward + next microbatch forward"),
// then the last backward alone (one warm-up forward). A pair frees its backward's activations
// layer by layer as its forward makes its own: it is counted backward first.
std::vector<std::uint32_t> megatron_peaks(std::uint32_t p, std::uint32_t r, std::uint32_t v,
                                          std::uint32_t m, bool combined = false) {
    const std::uint32_t group = p;  // microbatch_group_size_per_vp_stage's default
    std::vector<std::pair<std::uint32_t, std::uint32_t>> table;  // (micro-batch, chunk)
    for (std::uint32_t first = 0; first < m; first += group) {
        const std::uint32_t end = std::min(first + group, m);
        for (std::uint32_t c = 0; c < v; ++c) {
            for (std::uint32_t mb = first; mb < end; ++mb)
                table.emplace_back(mb, c);
        }
    }
    const std::uint32_t total = m * v;
    const std::uint32_t warmup =
        combined ? (p == 1 ? 1 : std::min(2 * (p - r - 1) + (v - 1) * group + 1, total))
        : v == 1 ? std::min(p - r - 1, m)
                 : std::min(2 * (p - r - 1) + (v - 1) * group, total);
    std::vector<std::uint32_t> held(v, 0);
    std::vector<std::uint32_t> peak(v, 0);
    const auto forward = [&](std::uint32_t k) {
        const std::uint32_t c = table[k].second;
        peak[c] = std::max(peak[c], ++held[c]);
    };
    const auto backward = [&](std::uint32_t k) { --held[v - 1 - table[k].second]; };
    for (std::uint32_t k = 0; k < warmup; ++k)
        forward(k);
    const std::uint32_t remaining = total - warmup;
    for (std::uint32_t k = 0; k < remaining; ++k) {
        if (combined) {
            backward(k);
            forward(k + warmup);
        } else {
            forward(k + warmup);
            backward(k);
        }
    }
    for (std::uint32_t k = remaining; k < total; ++k)
        backward(k);
    return peak;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(megatron_schedule)

BOOST_AUTO_TEST_CASE(in_flight_counts_equal_megatrons_replayed_schedule) {
    int compared = 0;
    for (std::uint32_t p = 2; p <= 8; ++p) {
        for (std::uint32_t v = 1; v <= 5; ++v) {
            const ppb::Schedule schedule =
                v == 1 ? ppb::Schedule::one_f_one_b : ppb::Schedule::interleaved;
            for (std::uint32_t m = p; m <= 6 * p; m += p) {
                for (std::uint32_t r = 0; r < p; ++r) {
                    const auto expected = megatron_peaks(p, r, v, m);
                    const auto counts = ppb::in_flight_counts(schedule, p, r, m, v);
                    BOOST_TEST(counts == expected,
                               "P " << p << ", v " << v << ", M " << m << ", stage " << r);
                    ++compared;
                }
            }
        }
    }
    BOOST_TEST(compared == 1050);
}

// The combined 1F1B: Megatron-LM's order with --overlap-moe-expert-parallel-comm, v = 2 .. 5 on
// P = 2 .. 8 stages and v = 1 on one stage, against ppb's counts. Its one more warm-up forward is
// the first pair's, so every chunk holds what it holds under the interleaved schedule (1F1B's one
// micro-batch on one stage); Megatron-LM's CI runs with the flag measure that (tests/analytic,
// real_runs). Megatron-LM runs it with a pipeline only interleaved: one chunk on several stages
// is refused, in words that say so.
BOOST_AUTO_TEST_CASE(the_combined_schedule_holds_what_the_interleaved_one_holds) {
    int compared = 0;
    for (std::uint32_t p = 2; p <= 8; ++p) {
        for (std::uint32_t v = 2; v <= 5; ++v) {
            for (std::uint32_t m = p; m <= 6 * p; m += p) {
                for (std::uint32_t r = 0; r < p; ++r) {
                    const auto expected = megatron_peaks(p, r, v, m, true);
                    const auto counts =
                        ppb::in_flight_counts(ppb::Schedule::combined_1f1b, p, r, m, v);
                    BOOST_TEST(counts == expected,
                               "P " << p << ", v " << v << ", M " << m << ", stage " << r);
                    BOOST_TEST(
                        counts == ppb::in_flight_counts(ppb::Schedule::interleaved, p, r, m, v),
                        "P " << p << ", v " << v << ", M " << m << ", stage " << r);
                    ++compared;
                }
            }
        }
    }
    BOOST_TEST(compared == 840);
    for (std::uint32_t m = 1; m <= 8; ++m) {
        BOOST_TEST(ppb::in_flight_counts(ppb::Schedule::combined_1f1b, 1, 0, m, 1) ==
                       megatron_peaks(1, 0, 1, m, true),
                   "M " << m);
        BOOST_TEST(ppb::in_flight_counts(ppb::Schedule::combined_1f1b, 1, 0, m, 1) ==
                   std::vector<std::uint32_t>{1});
    }
    try {
        (void)ppb::in_flight_counts(ppb::Schedule::combined_1f1b, 4, 0, 8, 1);
        BOOST_FAIL("one chunk on four stages");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()) ==
                   "combined-1f1b runs at least two chunks per stage (one only without a "
                   "pipeline: Megatron-LM overlaps the expert all-to-all of a pipeline only in "
                   "its interleaved schedule), got 1 with 4 stages");
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_warmup_tests
