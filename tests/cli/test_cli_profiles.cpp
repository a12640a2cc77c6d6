// Chunked stages' memory over their in-flight profiles, end to end (ppb/in_flight_profile.hpp):
// `ppb predict` of an interleaved stage is the largest weighted in-flight sum over Megatron-LM's
// program order, executed here step by step; interleaved dry runs whose counts the schedule gives
// are fitted exactly by alternating, and the fit says which vector was active for each.
//
// The order is written from Megatron-LM's rules (NVIDIA/Megatron-LM
// megatron/core/pipeline_parallel/schedules.py at 00611e6eeb0b09b5ee074750956855215ddbd67f,
// get_pp_rank_microbatches and get_model_chunk_id): (P − r − 1)·2 + (v − 1)·P warm-up forwards,
// then one forward and one backward in turn, then the remaining backwards; forward k runs chunk
// (k div P) mod v, backward k chunk v − 1 − (k div P) mod v.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_profiles_tests {

namespace {

constexpr std::array<const char*, 5> kind_names = {"none", "select", "comm", "both", "full"};
using Mix = std::array<std::uint32_t, 5>;

// Every in-flight vector rank r passes through under Megatron's interleaved order.
std::vector<std::vector<std::uint32_t>> megatron_states(std::uint32_t p, std::uint32_t v,
                                                        std::uint32_t m, std::uint32_t r) {
    const std::uint32_t total = m * v;
    const std::uint32_t warm_up = std::min(total, (p - r - 1) * 2 + (v - 1) * p);
    std::vector<std::vector<std::uint32_t>> states;
    std::vector<std::uint32_t> held(v, 0);
    // A chunk may hold none: dryrun-lsq is linear, so ppb evaluates it there exactly
    // (ppb::ZeroCounts::exact), in predictions and in the fit.
    const auto record = [&] { states.push_back(held); };
    const auto forward = [&](std::uint32_t k) {
        ++held[(k / p) % v];
        record();
    };
    const auto backward = [&](std::uint32_t k) {
        --held[v - 1 - (k / p) % v];
        record();
    };
    for (std::uint32_t k = 0; k < warm_up; ++k)
        forward(k);
    for (std::uint32_t k = 0; k + warm_up < total; ++k) {
        forward(k + warm_up);
        backward(k);
    }
    for (std::uint32_t k = total - warm_up; k < total; ++k)
        backward(k);
    return states;
}

// The states no other state dominates (at least as large in every chunk), each once, sorted:
// the profile ppb must give (only they can hold the largest non-negatively weighted sum).
std::vector<std::vector<std::uint32_t>> pareto(std::vector<std::vector<std::uint32_t>> states) {
    std::sort(states.begin(), states.end());
    states.erase(std::unique(states.begin(), states.end()), states.end());
    std::vector<std::vector<std::uint32_t>> kept;
    for (const auto& a : states) {
        const bool dominated = std::any_of(states.begin(), states.end(), [&](const auto& b) {
            if (a == b)
                return false;
            for (std::size_t c = 0; c < a.size(); ++c) {
                if (b[c] < a[c])
                    return false;
            }
            return true;
        });
        if (!dominated)
            kept.push_back(a);
    }
    return kept;
}

// A JSON array of vectors, sorted.
std::vector<std::vector<std::uint32_t>> sorted_vectors(const json::array& list,
                                                       const char* field = nullptr) {
    std::vector<std::vector<std::uint32_t>> out;
    for (const auto& entry : list) {
        const json::array& counts = field ? entry.at(field).as_array() : entry.as_array();
        std::vector<std::uint32_t> v;
        for (const auto& c : counts)
            v.push_back(c.to_number<std::uint32_t>());
        out.push_back(std::move(v));
    }
    std::sort(out.begin(), out.end());
    return out;
}

struct Truth {
    double c = 0, head = 0, tail = 0, per_layer = 0;
    std::array<double, 5> a{};
};

// The stage's memory at one moment, and its peak over the order, with the vector of the peak.
double memory_at(const Truth& t, std::uint32_t p, std::uint32_t s, const std::vector<Mix>& chunks,
                 const std::vector<std::uint32_t>& f) {
    double m = t.c + (s == 0 ? t.head : 0.0) + (s + 1 == p ? t.tail : 0.0);
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        for (std::size_t k = 0; k < 5; ++k)
            m += chunks[c][k] * (t.per_layer + t.a[k] * f[c]);
    }
    return m;
}

struct Peak {
    double memory = 0;
    std::vector<std::uint32_t> at;
    bool unique = true;  // no other vector reaches it
};

Peak peak_over_order(const Truth& t, std::uint32_t p, std::uint32_t v, std::uint32_t m,
                     std::uint32_t s, const std::vector<Mix>& chunks) {
    Peak best{-1.0, {}, true};
    for (const auto& f : megatron_states(p, v, m, s)) {
        const double x = memory_at(t, p, s, chunks, f);
        if (x > best.memory + 1e-9) {
            best = {x, f, true};
        } else if (std::abs(x - best.memory) <= 1e-9 && f != best.at) {
            best.unique = false;
        }
    }
    return best;
}

std::string layers_json(const Mix& mix) {
    std::string out;
    for (std::size_t k = 0; k < 5; ++k) {
        if (mix[k] != 0)
            out += fmt::format("{}\"{}\": {}", out.empty() ? "" : ", ", kind_names[k], mix[k]);
    }
    return "{" + out + "}";
}

std::string chunk_items(const Mix& mix) {
    std::string out;
    for (std::size_t k = 0; k < 5; ++k) {
        if (mix[k] != 0)
            out += fmt::format("{}{}={}", out.empty() ? "" : ",", kind_names[k], mix[k]);
    }
    return out.empty() ? "none=0" : out;
}

double number_or_nan(const json::value& v) {
    return v.is_null() ? std::nan("") : v.to_number<double>();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_profiles)

// The issue's shape: P = 4, v = 2, M = 8, unequal chunks (a fully recomputed chunk 1 moves the
// peak). The model is dryrun-lsq fitted to the 1F1B sample; its coefficients give the weights.
BOOST_AUTO_TEST_CASE(predict_is_the_largest_weighted_sum_over_megatrons_order) {
    const auto fit = ppb({"fit", sample_dryrun, "--json"});
    BOOST_TEST_REQUIRE(fit.exit_code == 0, fit.err);
    const json::value doc = parse_json(fit.out);
    const auto& params = doc.at("parameters");
    Truth t;
    t.c = number_or_nan(params.at("const_mb"));
    t.head = number_or_nan(params.at("head_mb"));
    t.tail = number_or_nan(params.at("tail_mb"));
    t.per_layer = number_or_nan(params.at("param_per_layer_mb"));
    for (std::size_t k = 0; k < 5; ++k) {
        const auto& a = params.at("activation_mb").at(kind_names[k]);
        t.a[k] = a.is_null() ? 0.0 : a.to_number<double>();
    }
    BOOST_TEST_REQUIRE(std::isfinite(t.c + t.head + t.tail + t.per_layer));
    const std::vector<std::vector<Mix>> cases = {
        {{4, 0, 0, 0, 0}, {0, 0, 0, 0, 4}},  // chunk 1 fully recomputed
        {{0, 0, 0, 0, 5}, {3, 0, 0, 0, 0}},  // chunk 0 fully recomputed
        {{2, 1, 0, 0, 0}, {1, 0, 0, 0, 2}},
    };
    for (const auto& chunks : cases) {
        for (std::uint32_t s = 0; s < 4; ++s) {
            const auto r =
                ppb({"predict", sample_dryrun, "--stages", "4", "--micro-batches", "8",
                     "--schedule", "interleaved", "--stage", std::to_string(s), "--chunk",
                     chunk_items(chunks[0]), "--chunk", chunk_items(chunks[1]), "--json"});
            BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
            const json::value out = parse_json(r.out);
            const double predicted = out.at("peak_memory_mb").to_number<double>();
            const Peak expected = peak_over_order(t, 4, 2, 8, s, chunks);
            BOOST_TEST(std::abs(predicted - expected.memory) <= 1e-9 * expected.memory,
                       "stage " << s << ": " << predicted << " vs " << expected.memory);
            // The chunks' in-flight counts are a vector of the peak.
            std::vector<std::uint32_t> at;
            for (const auto& chunk : out.at("placement").at("chunks").as_array())
                at.push_back(chunk.at("in_flight").to_number<std::uint32_t>());
            BOOST_TEST(std::abs(memory_at(t, 4, s, chunks, at) - expected.memory) <=
                       1e-9 * expected.memory);
            // The profile is the Pareto set of the executed order's states (two on the last
            // stage: (5, 0) and (4, 1)).
            const auto want = pareto(megatron_states(4, 2, 8, s));
            BOOST_TEST((sorted_vectors(out.at("placement").at("in_flight_profile").as_array(),
                                       "in_flight") == want),
                       "stage " << s);
            BOOST_TEST(want.size() >= 2u, "stage " << s);
        }
    }
    // Rank 1 with a fully recomputed chunk 1 peaks at (8, 1), as the issue measured.
    const auto r =
        ppb({"predict", sample_dryrun, "--stages", "4", "--micro-batches", "8", "--schedule",
             "interleaved", "--stage", "1", "--chunk", "none=4", "--chunk", "full=4"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.out.find("at the peak in flight: (8, 1)") != std::string::npos, r.out);
}

// Known coefficients, interleaved dry runs with unequal chunks whose peaks are the largest row
// over the executed order: `ppb fit` recovers every coefficient and names the active vectors.
BOOST_AUTO_TEST_CASE(interleaved_dry_runs_are_fitted_exactly_by_alternating) {
    const Truth t{1800.0, 2600.0, 3100.0, 410.0, {52.0, 31.0, 0.0, 0.0, 6.0}};
    std::mt19937 random(2027);
    std::uniform_int_distribution<std::uint32_t> count(0, 4);
    std::string observations;
    struct Expected {
        std::vector<std::uint32_t> at;
        bool unique;
        std::vector<std::vector<std::uint32_t>> profile;
    };
    std::vector<Expected> expected;
    for (int config = 0; config < 6; ++config) {
        for (std::uint32_t s = 0; s < 4; ++s) {
            std::vector<Mix> chunks(2);
            for (auto& mix : chunks) {
                mix[0] = count(random);
                mix[1] = count(random) / 2;
                mix[4] = count(random);
                if (mix[0] + mix[1] + mix[4] == 0)
                    mix[0] = 1;
            }
            const Peak peak = peak_over_order(t, 4, 2, 8, s, chunks);
            expected.push_back({peak.at, peak.unique, pareto(megatron_states(4, 2, 8, s))});
            observations += fmt::format(
                "{}{{\"config\": \"c{}\", \"stage\": {}, \"chunks\": [{{\"layers\": {}}}, "
                "{{\"layers\": {}}}], \"peak_memory_mb\": {:.17g}}}",
                observations.empty() ? "" : ",\n", config, s, layers_json(chunks[0]),
                layers_json(chunks[1]), peak.memory);
        }
    }
    const std::string file =
        write_file(R"({"format": "ppb.dryrun/2", "num_stages": 4, "micro_batches": 8, )"
                   R"("schedule": "interleaved", "num_chunks": 2, "observations": [)" +
                       observations + "]}",
                   "interleaved-profile-dryrun.json");
    const auto r = ppb({"fit", file, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    const auto& params = doc.at("parameters");
    const auto close = [](const json::value& v, double want) {
        return !v.is_null() && std::abs(v.to_number<double>() - want) <= 1e-6 * std::max(1.0, want);
    };
    BOOST_TEST(close(params.at("const_mb"), t.c), params);
    BOOST_TEST(close(params.at("head_mb"), t.head), params);
    BOOST_TEST(close(params.at("tail_mb"), t.tail), params);
    BOOST_TEST(close(params.at("param_per_layer_mb"), t.per_layer), params);
    for (const std::size_t k : {0u, 1u, 4u})
        BOOST_TEST(close(params.at("activation_mb").at(kind_names[k]), t.a[k]), kind_names[k]);
    const auto& profiles = doc.at("in_flight_profiles");
    BOOST_TEST(profiles.at("converged").as_bool());
    BOOST_TEST(profiles.at("fits").to_number<int>() >= 1);
    // Listed: every observation whose profile has several vectors (every stage's: the last
    // stage's is (5, 0) and (4, 1)), with that profile and its active vector.
    const auto& list = profiles.at("observations").as_array();
    std::vector<std::size_t> listed;
    for (const auto& entry : list) {
        const auto i = entry.at("index").to_number<std::size_t>();
        BOOST_TEST_REQUIRE(i < expected.size());
        listed.push_back(i);
        BOOST_TEST((sorted_vectors(entry.at("profile").as_array()) == expected[i].profile),
                   "observation " << i);
        if (!expected[i].unique)
            continue;
        std::vector<std::uint32_t> at;
        for (const auto& c : entry.at("in_flight").as_array())
            at.push_back(c.to_number<std::uint32_t>());
        BOOST_TEST((at == expected[i].at), "observation " << i);
    }
    std::vector<std::size_t> several;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (expected[i].profile.size() > 1)
            several.push_back(i);
    }
    BOOST_TEST(listed == several);
    BOOST_TEST(several.size() == 24u);  // 6 configurations x 4 stages
    // The table says so too.
    const auto table = ppb({"fit", file});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(table.out.find("In-flight profiles: fitted by alternating") != std::string::npos,
               table.out);
    // A prediction from the fit is the truth's peak over the order.
    const auto p =
        ppb({"predict", file, "--stage", "1", "--chunk", "none=4", "--chunk", "full=4", "--json"});
    BOOST_TEST_REQUIRE(p.exit_code == 0, p.err);
    const double want =
        peak_over_order(t, 4, 2, 8, 1, {Mix{4, 0, 0, 0, 0}, Mix{0, 0, 0, 0, 4}}).memory;
    BOOST_TEST(std::abs(parse_json(p.out).at("peak_memory_mb").to_number<double>() - want) <=
               1e-6 * want);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_profiles_tests
