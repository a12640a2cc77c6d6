// Interleaved and V-shaped dry runs: several chunks per stage, each with the in-flight count the
// host's schedule function gives it. The activation term is sum_k A_k sum_c n_{c,k} f_c, so a fit
// to noise-free chunked observations recovers the generating coefficients exactly; observations
// read from a ppb.dryrun/2 document reach the fit with the same counts.
#include "fit_support.hpp"

#include <ppb/dryrun_format.hpp>
#include <ppb/kinds.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <ostream>

namespace bdata = boost::unit_test::data;
using namespace ppb::fit_test;
using ppb::Schedule;
using ppb::dryrun_lsq::FitResult;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace fit_chunks_tests {

namespace {

struct ScheduleCase {
    Schedule schedule;
    std::uint32_t chunks;
};

std::ostream& operator<<(std::ostream& out, const ScheduleCase& c) {
    return out << ppb::schedule_name(c.schedule) << " with " << c.chunks << " chunks";
}

const ScheduleCase schedule_cases[] = {{Schedule::interleaved, 2},
                                       {Schedule::interleaved, 3},
                                       {Schedule::interleaved_less_memory, 2},
                                       {Schedule::dualpipe_v, 2}};

// Stage s of a p-stage dry run under `c`, holding chunk_layers[i] in chunk i, with the in-flight
// counts of ppb::in_flight_counts (whatever they are: the test never assumes the numbers).
ppb::StagePlacement chunked_stage(const ScheduleCase& c, std::uint32_t p, std::uint32_t s,
                                  std::uint32_t m, const std::vector<Layers>& chunk_layers) {
    const auto counts = ppb::in_flight_counts(c.schedule, p, s, m, c.chunks);
    ppb::StagePlacement placement;
    placement.num_stages = p;
    placement.stage = s;
    placement.schedule = c.schedule;  // dualpipe-v: stage 0 holds both ends
    for (std::uint32_t i = 0; i < c.chunks; ++i) {
        ppb_chunk chunk{};
        std::copy(chunk_layers[i].begin(), chunk_layers[i].end(), chunk.layers);
        chunk.in_flight = counts[i];
        placement.chunks.push_back(chunk);
    }
    return placement;
}

std::vector<Layers> random_chunks(std::mt19937& rng, std::uint32_t chunks, std::uint32_t kinds) {
    std::vector<Layers> out;
    for (std::uint32_t i = 0; i < chunks; ++i)
        out.push_back(random_layers(rng, kinds, 0, 3));
    return out;
}

void check_all_recovered(const FitResult& fit, const DryRuns& runs) {
    BOOST_TEST(fit.not_identifiable.empty());
    BOOST_TEST(!fit.const_folded);
    for (const Parameter p : all_parameters)
        check_estimate(fit, p, runs.truth().value(p));
    for (const auto& o : runs.observations())
        BOOST_TEST(close(ppb::dryrun_lsq::predict(fit, o.placement.view()), o.peak_memory_mb));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(chunked_fits)

// P = 4, every kind, three dry runs of random per-chunk layouts (two micro-batch counts, so
// the cap at m shows too).
BOOST_DATA_TEST_CASE(exact_recovery_for_each_schedule, bdata::make(schedule_cases), c) {
    constexpr std::uint32_t p = 4;
    std::mt19937 rng(4242 + c.chunks + static_cast<unsigned>(c.schedule));
    DryRuns runs;
    for (const std::uint32_t m : {8u, 16u, 12u}) {
        for (std::uint32_t s = 0; s < p; ++s)
            runs.observe(chunked_stage(c, p, s, m, random_chunks(rng, c.chunks, PPB_ALL_KINDS)));
    }
    if (c.schedule == Schedule::dualpipe_v) {
        // Under dualpipe-v stage 0 holds both the embedding and the LM head: its dry runs
        // determine only their sum, and the fit says so.
        const FitResult alone = runs.fit();
        const auto* why = alone.why_not_identified(Parameter::head_mb);
        BOOST_TEST_REQUIRE(why != nullptr);
        BOOST_TEST(alone.why_not_identified(Parameter::tail_mb) != nullptr);
        // One 1F1B dry run beside them separates the two.
        const ScheduleCase one_f_one_b{Schedule::one_f_one_b, 1};
        for (std::uint32_t s = 0; s < p; ++s)
            runs.observe(chunked_stage(one_f_one_b, p, s, 8, random_chunks(rng, 1, PPB_ALL_KINDS)));
    }
    const FitResult fit = runs.fit();
    check_all_recovered(fit, runs);

    // A placement no dry run had: stage 2 of an 8-stage pipeline.
    const auto unseen = chunked_stage(c, 8, 2, 32, random_chunks(rng, c.chunks, PPB_ALL_KINDS));
    BOOST_TEST(
        close(ppb::dryrun_lsq::predict(fit, unseen.view()), runs.truth().memory(unseen.view())));
}

// The ppb.dryrun/2 reader fills in the same counts: observations written without in_flight,
// read back and fitted, give the truth (P = 4, v = 2, interleaved and dualpipe-V in one file).
BOOST_AUTO_TEST_CASE(observations_read_from_a_v2_document_fit_exactly) {
    constexpr std::uint32_t p = 4;
    constexpr std::uint32_t m = 8;
    const Truth truth;
    std::mt19937 rng(77);
    std::string observations;
    std::vector<double> expected;
    for (const ScheduleCase c :
         {ScheduleCase{Schedule::interleaved, 2}, ScheduleCase{Schedule::dualpipe_v, 2}}) {
        for (int run = 0; run < 2; ++run) {
            for (std::uint32_t s = 0; s < p; ++s) {
                const auto layers = random_chunks(rng, c.chunks, PPB_ALL_KINDS);
                const auto placement = chunked_stage(c, p, s, m, layers);
                const double memory = truth.memory(placement.view());
                expected.push_back(memory);
                std::string chunks;
                for (const Layers& l : layers) {
                    std::string kinds;
                    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                        kinds += fmt::format("{}\"{}\": {}", k == 0 ? "" : ", ", ppb::kind_names[k],
                                             l[k]);
                    chunks +=
                        fmt::format("{}{{\"layers\": {{{}}}}}", chunks.empty() ? "" : ", ", kinds);
                }
                observations += fmt::format(
                    "{}{{\"config\": \"{}-{}\", \"schedule\": \"{}\", \"stage\": {}, "
                    "\"chunks\": [{}], \"peak_memory_mb\": {:.17g}}}",
                    observations.empty() ? "" : ",\n", ppb::schedule_name(c.schedule), run,
                    ppb::schedule_name(c.schedule), s, chunks, memory);
            }
        }
    }
    const std::string text = fmt::format(
        R"({{"format": "ppb.dryrun/2", "num_stages": {}, "micro_batches": {}, "num_chunks": 2,
            "schedule": "interleaved", "observations": [{}]}})",
        p, m, observations);
    const ppb::DryRunSet set = ppb::parse_dryrun(text, "synthetic.json");
    BOOST_TEST_REQUIRE(set.observations.size() == expected.size());
    const auto views = ppb::views(set.observations);
    const FitResult fit = ppb::dryrun_lsq::fit(views, {});
    BOOST_TEST(fit.not_identifiable.empty());
    for (const Parameter parameter : all_parameters)
        check_estimate(fit, parameter, truth.value(parameter));
    for (std::size_t i = 0; i < expected.size(); ++i)
        BOOST_TEST(close(set.observations[i].peak_memory_mb, expected[i]));
}

// Interleaved dry runs with evenly divided layers: every body stage holds the same number, so
// the constant folds into the per-layer term as with 1F1B, and says why; the activation is still
// identified, because the chunks' in-flight counts vary between stages.
BOOST_AUTO_TEST_CASE(even_interleaved_layers_fold_the_constant_and_say_why) {
    constexpr std::uint32_t p = 4;
    const ScheduleCase c{Schedule::interleaved, 2};
    DryRuns runs;
    const Layers two_none = {2, 0, 0, 0, 0};
    for (std::uint32_t s = 0; s < p; ++s)
        runs.observe(chunked_stage(c, p, s, 8, {two_none, two_none}));
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.const_folded);
    const auto* why = fit.why_not_identified(Parameter::const_mb);
    BOOST_TEST_REQUIRE(why != nullptr);
    BOOST_TEST(mentions(why->reason, "the same number of layers"), why->reason);
    BOOST_TEST(!why->suggestion.empty());
    // C + 4 P is what the body stages determine: P absorbs C / 4.
    check_estimate(fit, Parameter::param_per_layer_mb,
                   runs.truth().per_layer_mb + runs.truth().const_mb / 4.0);
    check_estimate(fit, Parameter::activation_none, runs.truth().activation_mb[PPB_KIND_NONE]);
    BOOST_TEST(fit.why_not_identified(Parameter::activation_none) == nullptr);
}

// Chunks of one stage with the same in-flight count everywhere confound P with the activation,
// as one chunk does: the reason names the in-flight count, not something about chunks.
BOOST_AUTO_TEST_CASE(equal_in_flight_counts_in_every_chunk_still_confound) {
    DryRuns runs;
    for (std::uint32_t s = 0; s < 4; ++s) {
        ppb::StagePlacement placement;
        placement.num_stages = 4;
        placement.stage = s;
        for (std::uint32_t n : {1u + s, 2u}) {
            ppb_chunk chunk{};
            chunk.layers[PPB_KIND_NONE] = n;
            chunk.in_flight = 4;
            placement.chunks.push_back(chunk);
        }
        runs.observe(std::move(placement));
    }
    const FitResult fit = runs.fit();
    const auto* why = fit.why_not_identified(Parameter::param_per_layer_mb);
    BOOST_TEST_REQUIRE(why != nullptr);
    BOOST_TEST(mentions(why->reason, "in-flight count"), why->reason);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fit_chunks_tests
