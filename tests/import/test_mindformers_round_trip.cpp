// A plan MindFormers can build survives the trip plan -> MindFormers arrays (the partitioner's
// mindformers_counts, which `ppb partition` prints) -> the MindSpore importer's reading of them
// (mindspore_layout, split_recompute) unchanged; a mix MindFormers cannot build is detected
// rather than printed as arrays that would build another one.
#include "../partition/brute_force.hpp"

#include <ppb/importers/layout.hpp>
#include <ppb/importers/mindspore.hpp>
#include <ppb/partition/problem.hpp>

#include <fmt/format.h>
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::importers::split_recompute;
using ppb::partition::KindCounts;
using ppb::partition::RecomputeRule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace mindformers_round_trip_tests {

namespace {

std::string row(const std::vector<std::int64_t>& values) {
    return fmt::format("[[{}]]", fmt::join(values, ", "));
}

// A random mix MindFormers can build: any numbers of none, both and full layers, and select-only
// or comm-only layers (or neither), each count 0 .. 5.
KindCounts expressible_mix(std::mt19937& rng) {
    KindCounts mix{};
    mix[PPB_KIND_NONE] = pt::int_in(rng, 0, 5);
    mix[PPB_KIND_BOTH] = pt::int_in(rng, 0, 5);
    mix[PPB_KIND_FULL] = pt::int_in(rng, 0, 5);
    switch (rng() % 3) {
        case 0:
            mix[PPB_KIND_SELECT] = pt::int_in(rng, 1, 5);
            break;
        case 1:
            mix[PPB_KIND_COMM] = pt::int_in(rng, 1, 5);
            break;
        default:
            break;
    }
    return mix;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mindformers_round_trip)

// The importer splits counts into kinds exactly as MindFormers applies them, layer by layer.
BOOST_AUTO_TEST_CASE(split_recompute_is_mindformers_layer_rule) {
    for (std::uint32_t n = 0; n <= 8; ++n) {
        for (std::uint32_t f = 0; f <= 9; ++f) {
            for (std::uint32_t s = 0; s <= 9; ++s) {
                for (std::uint32_t c = 0; c <= 9; ++c) {
                    BOOST_TEST(split_recompute(n, f, s, c) == pt::mindformers_build(n, f, s, c),
                               fmt::format("n={} recompute={} select={} comm={}", n, f, s, c));
                }
            }
        }
    }
}

// Random expressible plans: P stages (1 .. 8), each a random expressible mix; their arrays as
// `ppb partition` prints them, given to the importer as MindFormers settings; the layout it
// reads holds each stage's mix.
BOOST_AUTO_TEST_CASE(expressible_plans_come_back_from_their_arrays) {
    std::mt19937 rng(20240917u);
    std::size_t stages_checked = 0;
    for (int trial = 0; trial < 500; ++trial) {
        const std::uint32_t p = pt::int_in(rng, 1, 8);
        std::vector<KindCounts> plan;
        std::int64_t layers = 0;
        for (std::uint32_t s = 0; s < p; ++s) {
            plan.push_back(expressible_mix(rng));
            for (const std::uint32_t n : plan.back())
                layers += n;
        }
        if (layers == 0)
            continue;  // MindFormers needs a layer
        const std::int64_t base = layers / p;
        std::vector<std::int64_t> offset, recompute, select, comm;
        for (const KindCounts& mix : plan) {
            const auto counts = ppb::partition::mindformers_counts(mix);
            BOOST_TEST_REQUIRE(counts.has_value(), pt::counts_text(mix));
            std::int64_t n = 0;
            for (const std::uint32_t k : mix)
                n += k;
            offset.push_back(n - base);
            recompute.push_back(counts->recompute);
            select.push_back(counts->select_recompute);
            comm.push_back(counts->select_comm_recompute);
        }
        ppb::importers::MindSporeFlags flags;
        flags.pipeline_stage = std::to_string(p);
        flags.num_layers = std::to_string(layers);
        flags.micro_batch_num = "4";
        flags.offset = row(offset);
        flags.recompute = row(recompute);
        flags.select_recompute = row(select);
        flags.select_comm_recompute = row(comm);
        ppb::importers::Messages messages;
        const auto layout = ppb::importers::mindspore_layout(std::nullopt, flags, messages);
        BOOST_TEST_REQUIRE(layout.stages.size() == p);
        for (std::uint32_t s = 0; s < p; ++s) {
            BOOST_TEST(
                layout.stages[s] == plan[s],
                fmt::format("trial {} stage {}: {} imported as {} (arrays offset {} "
                            "recompute {} select {} comm {})",
                            trial, s, pt::counts_text(plan[s]), pt::counts_text(layout.stages[s]),
                            *flags.offset, *flags.recompute, *flags.select_recompute,
                            *flags.select_comm_recompute));
            ++stages_checked;
        }
    }
    BOOST_TEST(stages_checked > 1000u);
}

// The same with chunks: v = 2 or 3 chunks per stage (MindFormers' pp_interleave_num), each
// (stage, chunk) a random expressible mix, the arrays one row per chunk as `ppb partition
// --schedule interleaved` prints them (chunk c of stage s: floor(L / (P v)) + offset[c][s]
// layers, its counts on its first layers); the importer reads back every chunk's mix.
BOOST_AUTO_TEST_CASE(interleaved_plans_come_back_from_their_arrays) {
    std::mt19937 rng(20261130u);
    std::size_t chunks_checked = 0;
    const auto rows = [](const std::vector<std::vector<std::int64_t>>& values) {
        std::vector<std::string> out;
        for (const auto& r : values)
            out.push_back(fmt::format("[{}]", fmt::join(r, ", ")));
        return fmt::format("[{}]", fmt::join(out, ", "));
    };
    for (int trial = 0; trial < 300; ++trial) {
        const std::uint32_t p = pt::int_in(rng, 2, 6);
        const std::uint32_t v = pt::int_in(rng, 2, 3);
        std::vector<std::vector<KindCounts>> plan(p);
        std::int64_t layers = 0;
        for (std::uint32_t s = 0; s < p; ++s) {
            for (std::uint32_t c = 0; c < v; ++c) {
                KindCounts mix = expressible_mix(rng);
                if (mix == KindCounts{})
                    mix[PPB_KIND_NONE] = 1;  // MindFormers gives every chunk a layer
                plan[s].push_back(mix);
                for (const std::uint32_t n : mix)
                    layers += n;
            }
        }
        const std::int64_t base = layers / (p * v);
        std::vector<std::vector<std::int64_t>> offset(v), recompute(v), select(v), comm(v);
        for (std::uint32_t c = 0; c < v; ++c) {
            for (std::uint32_t s = 0; s < p; ++s) {
                const auto counts = ppb::partition::mindformers_counts(plan[s][c]);
                BOOST_TEST_REQUIRE(counts.has_value());
                std::int64_t n = 0;
                for (const std::uint32_t k : plan[s][c])
                    n += k;
                offset[c].push_back(n - base);
                recompute[c].push_back(counts->recompute);
                select[c].push_back(counts->select_recompute);
                comm[c].push_back(counts->select_comm_recompute);
            }
        }
        ppb::importers::MindSporeFlags flags;
        flags.pipeline_stage = std::to_string(p);
        flags.num_layers = std::to_string(layers);
        flags.micro_batch_num = std::to_string(4 * p);
        flags.pp_interleave_num = std::to_string(v);
        flags.offset = rows(offset);
        flags.recompute = rows(recompute);
        flags.select_recompute = rows(select);
        flags.select_comm_recompute = rows(comm);
        ppb::importers::Messages messages;
        const auto layout = ppb::importers::mindspore_layout(std::nullopt, flags, messages);
        BOOST_TEST_REQUIRE(layout.num_chunks == v);
        BOOST_TEST_REQUIRE(layout.chunks.size() == p);
        for (std::uint32_t s = 0; s < p; ++s) {
            for (std::uint32_t c = 0; c < v; ++c) {
                BOOST_TEST(layout.chunks[s][c] == plan[s][c],
                           fmt::format("trial {} stage {} chunk {}: {} imported as {} (offset {})",
                                       trial, s, c, pt::counts_text(plan[s][c]),
                                       pt::counts_text(layout.chunks[s][c]), *flags.offset));
                ++chunks_checked;
            }
        }
    }
    BOOST_TEST(chunks_checked > 1500u);
}

// A stage with select-only and comm-only layers has no counts: mindformers_counts says so
// (and the rule rejects it). Counts written as select + both + full and comm + both + full would
// build a different mix, with min(select, comm) more 'both' layers.
BOOST_AUTO_TEST_CASE(a_mix_mindformers_cannot_build_is_detected) {
    std::mt19937 rng(7u);
    for (int trial = 0; trial < 500; ++trial) {
        KindCounts mix = expressible_mix(rng);
        mix[PPB_KIND_SELECT] = pt::int_in(rng, 1, 5);
        mix[PPB_KIND_COMM] = pt::int_in(rng, 1, 5);
        BOOST_TEST(!ppb::partition::mindformers_counts(mix).has_value(), pt::counts_text(mix));
        BOOST_TEST(!ppb::partition::expressible(mix, RecomputeRule::mindformers));
        std::uint32_t n = 0;
        for (const std::uint32_t k : mix)
            n += k;
        const std::uint32_t full = mix[PPB_KIND_FULL];
        const std::uint32_t both = mix[PPB_KIND_BOTH];
        const KindCounts naive = split_recompute(n, full, full + both + mix[PPB_KIND_SELECT],
                                                 full + both + mix[PPB_KIND_COMM]);
        BOOST_TEST(naive != mix, pt::counts_text(mix));
        BOOST_TEST(naive[PPB_KIND_BOTH] ==
                   both + std::min(mix[PPB_KIND_SELECT], mix[PPB_KIND_COMM]));
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace mindformers_round_trip_tests
