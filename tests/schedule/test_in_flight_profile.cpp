// In-flight profiles (ppb/in_flight_profile.hpp) against the program orders executed step by
// step here. The interleaved order is written from Megatron-LM's own rules
// (NVIDIA/Megatron-LM megatron/core/pipeline_parallel/schedules.py at
// 00611e6eeb0b09b5ee074750956855215ddbd67f: get_pp_rank_microbatches gives
// (P − r − 1)·2 + (v − 1)·P warm-up forwards with a micro-batch group of P; get_schedule_table /
// get_model_chunk_id give forward k chunk (k div P) mod v of micro-batch
// (k div P·v)·P + k mod P, and backward k the mirrored chunk v − 1 − (k div P) mod v), not from
// ppb::stage_order, so the profile is checked against the framework's order itself.
#include <ppb/in_flight_profile.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>
#include <ppb/simulator.hpp>
#include <ppb/timeline_svg.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace in_flight_profile_tests {

namespace {

using ppb::InFlightVector;
using ppb::Schedule;

struct Op {
    bool forward = true;
    std::uint32_t chunk = 0;
};

// Megatron-LM's interleaved program order of rank r (warm-up forwards, then one forward and
// one backward in turn, then the remaining backwards), with `warm_up` forwards before the first
// backward (capped at M·v as get_pp_rank_microbatches does).
std::vector<Op> megatron_interleaved(std::uint32_t p, std::uint32_t v, std::uint32_t m,
                                     std::uint32_t warm_up) {
    const std::uint32_t total = m * v;
    warm_up = std::min(warm_up, total);
    const auto forward_chunk = [&](std::uint32_t k) { return (k / p) % v; };
    const auto backward_chunk = [&](std::uint32_t k) { return v - 1 - (k / p) % v; };
    std::vector<Op> ops;
    for (std::uint32_t k = 0; k < warm_up; ++k)
        ops.push_back({true, forward_chunk(k)});
    for (std::uint32_t k = 0; k + warm_up < total; ++k) {
        ops.push_back({true, forward_chunk(k + warm_up)});
        ops.push_back({false, backward_chunk(k)});
    }
    for (std::uint32_t k = total - warm_up; k < total; ++k)
        ops.push_back({false, backward_chunk(k)});
    return ops;
}

std::uint32_t megatron_warm_up(std::uint32_t p, std::uint32_t v, std::uint32_t r) {
    return (p - r - 1) * 2 + (v - 1) * p;
}

// Every vector seen while executing `ops`, and the Pareto set of them by brute force.
std::set<InFlightVector> executed(const std::vector<Op>& ops, std::uint32_t v) {
    std::set<InFlightVector> seen;
    InFlightVector held(v, 0);
    for (const Op& op : ops) {
        if (op.forward) {
            ++held[op.chunk];
        } else {
            BOOST_REQUIRE(held[op.chunk] > 0);
            --held[op.chunk];
        }
        seen.insert(held);
    }
    return seen;
}

std::set<InFlightVector> undominated(const std::set<InFlightVector>& seen) {
    std::set<InFlightVector> out;
    for (const auto& a : seen) {
        const bool dominated = std::any_of(seen.begin(), seen.end(), [&](const InFlightVector& b) {
            if (a == b)
                return false;
            for (std::size_t c = 0; c < a.size(); ++c) {
                if (b[c] < a[c])
                    return false;
            }
            return true;
        });
        if (!dominated)
            out.insert(a);
    }
    return out;
}

std::set<InFlightVector> as_set(const std::vector<InFlightVector>& profile) {
    return {profile.begin(), profile.end()};
}

std::string fmt_in_flight(const std::vector<std::uint32_t>& held) {
    std::string out;
    for (const auto f : held)
        out += (out.empty() ? "" : ",") + std::to_string(f);
    return "data-in-flight=\"" + out + "\"";
}

std::vector<Op> from_stage_order(const std::vector<ppb::StageStep>& order) {
    std::vector<Op> ops;
    for (const auto& step : order)
        ops.push_back({step.pass == ppb::Pass::forward, step.chunk});
    return ops;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(in_flight_profile)

BOOST_AUTO_TEST_CASE(interleaved_profiles_are_the_pareto_set_of_megatrons_order) {
    for (std::uint32_t p = 1; p <= 6; ++p) {
        for (std::uint32_t v = 2; v <= 4; ++v) {
            for (std::uint32_t m = p; m <= 4 * p; m += p) {
                for (std::uint32_t r = 0; r < p; ++r) {
                    const auto seen =
                        executed(megatron_interleaved(p, v, m, megatron_warm_up(p, v, r)), v);
                    const auto profile = ppb::in_flight_profile(Schedule::interleaved, p, r, m, v);
                    BOOST_TEST((as_set(profile) == undominated(seen)),
                               "P=" << p << " v=" << v << " M=" << m << " rank " << r);
                    BOOST_TEST(profile.size() == as_set(profile).size());
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(less_memory_profiles_follow_mindformers_warm_up) {
    // MindFormers' less-memory variant: the same tables with v·P − s − 1 warm-up forwards.
    for (std::uint32_t p = 1; p <= 6; ++p) {
        for (std::uint32_t v = 2; v <= 3; ++v) {
            for (std::uint32_t m = p; m <= 3 * p; m += p) {
                for (std::uint32_t r = 0; r < p; ++r) {
                    const auto seen = executed(megatron_interleaved(p, v, m, v * p - r - 1), v);
                    BOOST_TEST((as_set(ppb::in_flight_profile(Schedule::interleaved_less_memory, p,
                                                              r, m, v)) == undominated(seen)));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(dualpipe_v_and_1f1b_profiles_are_their_orders_pareto_sets) {
    for (std::uint32_t p = 1; p <= 6; ++p) {
        for (std::uint32_t m = 2 * p; m <= 4 * p + 1; ++m) {
            for (std::uint32_t s = 0; s < p; ++s) {
                const auto seen = executed(
                    from_stage_order(ppb::stage_order(Schedule::dualpipe_v, p, 2, m, s)), 2);
                BOOST_TEST((as_set(ppb::in_flight_profile(Schedule::dualpipe_v, p, s, m, 2)) ==
                            undominated(seen)));
            }
        }
        for (std::uint32_t m = 1; m <= 2 * p; ++m) {
            for (std::uint32_t s = 0; s < p; ++s) {
                const InFlightVector only{std::min(p - s, m)};
                BOOST_TEST((ppb::in_flight_profile(Schedule::one_f_one_b, p, s, m) ==
                            std::vector<InFlightVector>{only}));
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(the_issues_figures_for_p4_v2_m8) {
    // Per-chunk maxima (ppb::in_flight_counts) and the counts just before the first backward,
    // which are the older SAPP counts (7,4), (5,4), (4,3), (4,1).
    const std::vector<InFlightVector> maxima = {{8, 4}, {8, 4}, {7, 3}, {5, 1}};
    const std::vector<InFlightVector> sapp = {{7, 4}, {5, 4}, {4, 3}, {4, 1}};
    for (std::uint32_t r = 0; r < 4; ++r) {
        const auto profile = ppb::in_flight_profile(Schedule::interleaved, 4, r, 8, 2);
        BOOST_TEST((ppb::profile_maxima(profile) == maxima[r]), "rank " << r);
        BOOST_TEST((ppb::in_flight_counts(Schedule::interleaved, 4, r, 8, 2) == maxima[r]));
        const auto ops = megatron_interleaved(4, 2, 8, megatron_warm_up(4, 2, r));
        const auto first_backward =
            std::find_if(ops.begin(), ops.end(), [](const Op& op) { return !op.forward; });
        const auto before = executed({ops.begin(), first_backward}, 2);
        BOOST_TEST((*std::max_element(before.begin(), before.end()) == sapp[r]), "rank " << r);
        BOOST_TEST(as_set(profile).count(sapp[r]) == 1u, "rank " << r);
    }
    // The issue's peaks: rank 0 at (7, 4) and rank 1 at (8, 1) are vectors of the profiles.
    BOOST_TEST(as_set(ppb::in_flight_profile(Schedule::interleaved, 4, 1, 8, 2)).count({8, 1}) ==
               1u);
}

BOOST_AUTO_TEST_CASE(the_largest_weighted_sum_over_the_profile_is_the_largest_over_the_order) {
    std::mt19937 random(27);
    std::uniform_real_distribution<double> weight(0.0, 10.0);
    for (const Schedule schedule :
         {Schedule::interleaved, Schedule::interleaved_less_memory, Schedule::dualpipe_v}) {
        const std::uint32_t v = schedule == Schedule::dualpipe_v ? 2 : 3;
        for (std::uint32_t s = 0; s < 4; ++s) {
            const auto order = ppb::stage_order(schedule, 4, v, 12, s);
            const auto states = ppb::in_flight_states(order, v);
            const auto profile = ppb::in_flight_profile(schedule, 4, s, 12, v);
            for (int trial = 0; trial < 50; ++trial) {
                std::vector<double> w(v);
                for (auto& x : w)
                    x = weight(random);
                const double over_profile = ppb::heaviest_vector(profile, w).sum;
                const double over_order = ppb::heaviest_vector(states, w).sum;
                BOOST_TEST(over_profile == over_order);
            }
        }
    }
}

// Two moments whose memory differs in the last bits only are a tie, and the earlier vector stays
// the peak: with equal chunks (7, 0) and (6, 1) weigh the same, whatever order a model adds in.
BOOST_AUTO_TEST_CASE(a_tie_up_to_rounding_keeps_the_earlier_vector) {
    const std::vector<ppb::InFlightVector> profile = {{7, 0}, {6, 1}};
    const double a = 0.1;
    const double b = std::nextafter(0.1, 1.0);  // a rounding above a: (6, 1) by 1 ulp
    const std::vector<double> weights = {a, b};
    BOOST_TEST(weights[1] > weights[0]);
    BOOST_TEST(ppb::heaviest_vector(profile, weights).index == 0u);
    BOOST_TEST(!ppb::heavier_than(7 * a + 1e-13, 7 * a));
    BOOST_TEST(ppb::heavier_than(7 * a + 1e-9, 7 * a));
    // A real difference still decides.
    const std::vector<double> unequal = {0.1, 0.2};
    BOOST_TEST(ppb::heaviest_vector(profile, unequal).index == 1u);
}

BOOST_AUTO_TEST_CASE(an_unknown_micro_batch_count_is_a_long_iteration) {
    for (std::uint32_t p = 1; p <= 6; ++p) {
        for (std::uint32_t s = 0; s < p; ++s) {
            for (std::uint32_t v = 2; v <= 4; ++v) {
                BOOST_TEST((ppb::in_flight_profile(Schedule::interleaved, p, s, 0, v) ==
                            ppb::in_flight_profile(Schedule::interleaved, p, s, 12 * p, v)));
                BOOST_TEST((ppb::profile_maxima(
                                ppb::in_flight_profile(Schedule::interleaved, p, s, 0, v)) ==
                            ppb::in_flight_counts(Schedule::interleaved, p, s, 0, v)));
            }
            BOOST_TEST((ppb::in_flight_profile(Schedule::dualpipe_v, p, s, 0, 2) ==
                        ppb::in_flight_profile(Schedule::dualpipe_v, p, s, 12 * p, 2)));
        }
    }
}

// The profile is found from the states just before each release that follows a forward (the
// others are dominated by a neighbour) and remembered per shape; it is the Pareto set of every
// state of the order, for every schedule (the zero-bubble ones release on W, not B), and the
// same when asked again.
BOOST_AUTO_TEST_CASE(
    the_profile_is_the_pareto_set_of_every_state_and_asking_again_changes_nothing) {
    struct Shape {
        Schedule schedule;
        std::uint32_t p, v, m;
    };
    const Shape shapes[] = {
        {Schedule::one_f_one_b, 4, 1, 3}, {Schedule::one_f_one_b, 6, 1, 20},
        {Schedule::interleaved, 4, 2, 8}, {Schedule::interleaved, 4, 4, 12},
        {Schedule::interleaved, 3, 8, 9}, {Schedule::interleaved_less_memory, 4, 3, 12},
        {Schedule::dualpipe_v, 4, 2, 8},  {Schedule::dualpipe_v, 6, 2, 30},
        {Schedule::zb_h1, 4, 1, 8},       {Schedule::zb_h1, 5, 1, 3},
        {Schedule::zb_v, 4, 2, 8},        {Schedule::zb_v, 3, 2, 12},
    };
    for (const Shape& x : shapes) {
        for (std::uint32_t s = 0; s < x.p; ++s) {
            const auto order = ppb::stage_order(x.schedule, x.p, x.v, x.m, s);
            const auto all = ppb::pareto_in_flight(ppb::in_flight_states(order, x.v));
            const auto profile = ppb::in_flight_profile(x.schedule, x.p, s, x.m, x.v);
            BOOST_TEST((profile == all), ppb::schedule_name(x.schedule)
                                             << " P " << x.p << " v " << x.v << " M " << x.m
                                             << " stage " << s);
            BOOST_TEST((ppb::in_flight_profile(x.schedule, x.p, s, x.m, x.v) == profile));
        }
    }
    // A refused shape is refused again, not remembered.
    for (int i = 0; i < 2; ++i) {
        BOOST_CHECK_THROW((void)ppb::in_flight_profile(Schedule::interleaved, 4, 0, 6, 2),
                          std::invalid_argument);
    }
}

// One list of the schedules for every message: each name reads back as its schedule, and the
// chunked ones are exactly those that run two chunks per stage.
BOOST_AUTO_TEST_CASE(every_message_lists_the_same_schedules) {
    BOOST_TEST(
        ppb::names_or(ppb::schedule_names()) ==
        "1f1b, interleaved, interleaved-less-memory, dualpipe-v, zb-h1, zb-v or combined-1f1b");
    std::vector<std::string_view> two_chunks;
    for (const std::string_view name : ppb::schedule_names()) {
        const auto schedule = ppb::schedule_from_name(name);
        BOOST_TEST_REQUIRE(schedule.has_value(), name);
        BOOST_TEST(ppb::schedule_name(*schedule) == name);
        try {
            (void)ppb::in_flight_counts(*schedule, 4, 0, 8, 2);
            two_chunks.push_back(name);
        } catch (const std::invalid_argument&) {
        }
    }
    BOOST_TEST((ppb::chunked_schedule_names() == two_chunks));
    BOOST_TEST(ppb::names_or({"a"}) == "a");
    BOOST_TEST(ppb::names_or({"a", "b"}) == "a or b");
}

BOOST_AUTO_TEST_CASE(impossible_shapes_are_refused_as_the_counts_are) {
    BOOST_CHECK_THROW((void)ppb::in_flight_profile(Schedule::interleaved, 4, 0, 6, 2),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)ppb::in_flight_profile(Schedule::dualpipe_v, 4, 0, 8, 3),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)ppb::in_flight_profile(Schedule::one_f_one_b, 4, 4, 8),
                      std::invalid_argument);
    BOOST_CHECK_THROW((void)ppb::heaviest_vector({}, std::vector<double>{}), std::invalid_argument);
}

// The simulator's memory trace peaks at the heaviest vector of the profile, at the moment the
// stage first holds it; the timeline marks that moment on each stage's lane.
BOOST_AUTO_TEST_CASE(the_simulated_peak_is_the_heaviest_vector_and_the_svg_marks_it) {
    for (const Schedule schedule :
         {Schedule::interleaved, Schedule::interleaved_less_memory, Schedule::dualpipe_v}) {
        // Unequal chunks: chunk 1 holds little per micro-batch (fully recomputed), then the
        // other way round.
        for (const std::vector<double>& activation :
             {std::vector<double>{10.0, 1.0}, std::vector<double>{1.0, 10.0}}) {
            ppb::SimulationInput in;
            in.schedule = schedule;
            in.num_stages = 4;
            in.num_chunks = 2;
            in.micro_batches = 8;
            in.with_memory = true;
            in.static_mb = {100.0, 200.0, 300.0, 400.0};
            in.costs.assign(4, std::vector<ppb::ChunkCost>(2));
            for (auto& stage : in.costs) {
                for (std::size_t c = 0; c < 2; ++c)
                    stage[c] = {1.0, 2.0, 0.0, activation[c]};
            }
            const auto sim = ppb::simulate(in);
            for (std::uint32_t s = 0; s < 4; ++s) {
                const auto& st = sim.stages[s];
                const auto profile = ppb::in_flight_profile(schedule, 4, s, 8, 2);
                const auto heaviest = ppb::heaviest_vector(profile, activation);
                BOOST_TEST(st.peak_memory_mb == in.static_mb[s] + heaviest.sum);
                double at_peak = in.static_mb[s];
                for (std::size_t c = 0; c < 2; ++c)
                    at_peak += activation[c] * st.in_flight_at_peak.at(c);
                BOOST_TEST(at_peak == st.peak_memory_mb);
                // The curve holds the peak from that moment, and never before.
                for (const auto& point : st.memory) {
                    if (point.time < st.peak_memory_time)
                        BOOST_TEST(point.mb < st.peak_memory_mb);
                    if (point.time == st.peak_memory_time)
                        BOOST_TEST(point.mb == st.peak_memory_mb);
                }
                // The peak is below the sum of each chunk's own peak when the chunks' peaks do
                // not coincide (the old over-count).
                const auto maxima = ppb::profile_maxima(profile);
                BOOST_TEST(st.peak_memory_mb <=
                           in.static_mb[s] + activation[0] * maxima[0] + activation[1] * maxima[1]);
            }
            const std::string svg = ppb::timeline_svg(sim);
            std::size_t marks = 0;
            for (std::size_t at = svg.find("class=\"memory-peak\""); at != std::string::npos;
                 at = svg.find("class=\"memory-peak\"", at + 1))
                ++marks;
            BOOST_TEST(marks == 4u);
            const auto& st0 = sim.stages[0];
            BOOST_TEST(svg.find(fmt_in_flight(st0.in_flight_at_peak)) != std::string::npos);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace in_flight_profile_tests
