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
#include <utility>
#include <vector>

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_warmup_tests {

namespace {

std::vector<std::uint32_t> megatron_peaks(std::uint32_t p, std::uint32_t r, std::uint32_t v,
                                          std::uint32_t m) {
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
        v == 1 ? std::min(p - r - 1, m) : std::min(2 * (p - r - 1) + (v - 1) * group, total);
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
        forward(k + warmup);
        backward(k);
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

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_warmup_tests
