// The design library: its answers identify the model, obey their rule, and are more precise than
// SAPP's way of choosing dry runs — random configurations drawn until the coefficient matrix has
// full rank (mindspore-ai/hyper-parallel, hyper_parallel/auto_parallel/sapp_ppb,
// generate_solvable_config) — by the median over such random designs of the same size.
#define BOOST_TEST_MODULE design
#include <ppb/errors.hpp>
#include <ppb/partition/design.hpp>
#include <ppb/partition/design_megatron.hpp>
#include <ppb/partition/framework_args.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

namespace pp = ppb::partition;

namespace {

pp::DesignRequest request(std::vector<std::uint32_t> stages, std::uint32_t layers,
                          std::uint32_t kinds, pp::DesignRule rule) {
    pp::DesignRequest r;
    r.stages = std::move(stages);
    r.num_layers = layers;
    r.kinds = kinds;
    r.rule = rule;
    return r;
}

constexpr std::uint32_t none_full = PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_FULL);
constexpr std::uint32_t none_select_full = none_full | PPB_KIND_BIT(PPB_KIND_SELECT);

// The design's worst prediction standard error over the median of `draws` random full-rank
// designs of as many runs.
double ratio_to_random(const pp::DesignRequest& r, std::uint32_t draws) {
    const pp::Design design = pp::design_dry_runs(r);
    std::vector<double> worst;
    for (std::uint32_t i = 0; i < draws; ++i) {
        const auto runs = pp::random_full_rank_design(
            r, static_cast<std::uint32_t>(design.runs.size()), 1000 + i);
        BOOST_TEST_REQUIRE(runs.has_value());
        const pp::DesignPrecision p = pp::design_precision(r, *runs);
        BOOST_TEST_REQUIRE(p.identified);
        worst.push_back(p.worst_prediction_std_error_mb);
    }
    std::nth_element(worst.begin(), worst.begin() + worst.size() / 2, worst.end());
    const double median = worst[worst.size() / 2];
    BOOST_TEST_MESSAGE("design " << design.worst_prediction_std_error_mb << " MB, random median "
                                 << median << " MB");
    return design.worst_prediction_std_error_mb / median;
}

}  // namespace

BOOST_AUTO_TEST_CASE(design_beats_the_median_random_full_rank_design) {
    // host_api/docs/dryrun-loop.md reports these ratios (bench_design prints them too).
    BOOST_TEST(ratio_to_random(request({4}, 16, none_full, pp::DesignRule::mindformers), 41) < 0.5);
    BOOST_TEST(
        ratio_to_random(request({8}, 32, none_select_full, pp::DesignRule::mindformers), 41) < 0.5);
    BOOST_TEST(ratio_to_random(request({4}, 12, none_select_full, pp::DesignRule::megatron), 41) <
               0.5);
}

BOOST_AUTO_TEST_CASE(the_precision_of_a_design_is_its_own_answer) {
    const auto r = request({4}, 8, none_full, pp::DesignRule::mindformers);
    const pp::Design d = pp::design_dry_runs(r);
    const pp::DesignPrecision p = pp::design_precision(r, d.runs);
    BOOST_TEST(p.identified);
    BOOST_TEST(p.worst_prediction_std_error_mb == d.worst_prediction_std_error_mb);
    BOOST_TEST(p.std_errors.size() == 6U);
    // Two runs of four stages: 8 rows for 6 unknowns; one run's 4 rows cannot.
    BOOST_TEST(d.runs.size() == 2U);
    BOOST_TEST(d.fewest_runs == 2U);
}

BOOST_AUTO_TEST_CASE(one_run_alone_leaves_coefficients_undetermined) {
    const auto r = request({4}, 8, none_full, pp::DesignRule::mindformers);
    const pp::Design d = pp::design_dry_runs(r);
    const pp::DesignPrecision p = pp::design_precision(r, std::span(d.runs).first(1));
    BOOST_TEST(!p.identified);
    BOOST_TEST(!p.unidentified.empty());
}

BOOST_AUTO_TEST_CASE(megatron_runs_have_one_setting_each) {
    const auto r = request({4}, 10, none_select_full, pp::DesignRule::megatron);
    const pp::Design d = pp::design_dry_runs(r);
    for (const pp::DesignRun& run : d.runs) {
        BOOST_TEST_REQUIRE(run.megatron.has_value());
        // The setting read back from the stages is the run's own.
        pp::DesignRun bare = run;
        bare.megatron.reset();
        const auto setting = pp::megatron_setting_of(bare);
        BOOST_TEST_REQUIRE(setting.has_value());
        const auto args = pp::megatron_design_args(run, 10);
        BOOST_TEST_REQUIRE(args.has_value());
        BOOST_TEST(args->at(0) == "--pipeline-model-parallel-size");
    }
}

BOOST_AUTO_TEST_CASE(layout_text_follows_megatron_grammar) {
    const std::vector<std::uint32_t> layers = {3, 1, 2, 2};
    BOOST_TEST(pp::megatron_layout_string(layers) == "Et*3|t|t*2|t*2L");
    const std::vector<std::uint32_t> one = {4};
    BOOST_TEST(pp::megatron_layout_string(one) == "Et*4L");
}

BOOST_AUTO_TEST_CASE(a_prior_over_every_limit_says_the_lowest_peak) {
    auto r = request({4}, 8, none_full, pp::DesignRule::mindformers);
    r.memory_limit_mb = 10.0;
    r.prior = [](std::span<const ppb_placement> ps) {
        std::vector<double> out;
        for (const auto& p : ps) {
            double n = 0;
            for (const auto k : p.chunks[0].layers)
                n += k;
            out.push_back(100.0 + 10.0 * n);
        }
        return out;
    };
    BOOST_CHECK_EXCEPTION(
        (void)pp::design_dry_runs(r), pp::Infeasible, [](const pp::Infeasible& e) {
            return std::string(e.what()).find("lowest peak") != std::string::npos &&
                   e.smallest_feasible_limit_mb() >= 110.0;
        });
}
