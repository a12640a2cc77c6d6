// The joint fit of groups of body layers (dense and MoE layers): exact recovery of each group's
// coefficients, a fit of one group that is the plain fit to the bit, what the data must vary to
// separate the groups, and prediction of grouped placements.
#include "fit_support.hpp"
#include "model.hpp"

#include <ppb/placement.hpp>
#include <ppb/plugin.hpp>
#include <ppb/schedule.hpp>

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

using namespace ppb::fit_test;
using ppb::Observation;
using ppb::StagePlacement;
using ppb::dryrun_lsq::FitResult;
using ppb::dryrun_lsq::Unknown;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace fit_groups_tests {

namespace {

// Ground truth of two groups, DeepSeek-like magnitudes in MB: shared constants, then the dense
// and the MoE layers' parameter memory and activation per kind per micro-batch.
struct GroupTruth {
    double const_mb = 3100.0;
    double head_mb = 4650.0;
    double tail_mb = 5320.0;
    std::array<double, 2> per_layer_mb = {1210.0, 8640.0};
    std::array<std::array<double, PPB_KIND_COUNT>, 2> activation_mb = {
        std::array<double, PPB_KIND_COUNT>{702.0, 530.0, 610.0, 420.0, 45.0},
        std::array<double, PPB_KIND_COUNT>{1530.0, 1120.0, 1300.0, 910.0, 60.0}};

    // The model equation, written independently of the code under test.
    [[nodiscard]] double memory(const StagePlacement& p) const {
        double m = const_mb;
        if (p.stage == 0)
            m += head_mb;
        if (p.stage + 1 == p.num_stages)
            m += tail_mb;
        for (std::size_t c = 0; c < p.chunks.size(); ++c) {
            for (std::size_t g = 0; g < 2; ++g) {
                for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                    const double n = p.group_layer(c, g, k);
                    m += per_layer_mb[g] * n + activation_mb[g][k] * n * p.chunks[c].in_flight;
                }
            }
        }
        return m;
    }
    [[nodiscard]] double value(Unknown u) const {
        using ppb::dryrun_lsq::Parameter;
        switch (u.parameter) {
            case Parameter::const_mb:
                return const_mb;
            case Parameter::head_mb:
                return head_mb;
            case Parameter::tail_mb:
                return tail_mb;
            case Parameter::param_per_layer_mb:
                return per_layer_mb[u.group];
            default:
                return activation_mb[u.group][static_cast<std::size_t>(
                    ppb::dryrun_lsq::kind_of(u.parameter))];
        }
    }
};

using GroupLayers = std::array<Layers, 2>;  // dense, moe

const std::vector<std::string> dense_moe = {"dense", "moe"};

// A stage whose chunk c holds layers[c] with in-flight count in_flight[c].
StagePlacement grouped_stage(std::uint32_t p, std::uint32_t s,
                             const std::vector<GroupLayers>& layers,
                             const std::vector<std::uint32_t>& in_flight,
                             ppb::Schedule schedule = ppb::Schedule::one_f_one_b) {
    StagePlacement placement;
    placement.num_stages = p;
    placement.stage = s;
    placement.schedule = schedule;
    std::vector<std::uint32_t> counts;
    for (std::size_t c = 0; c < layers.size(); ++c) {
        ppb_chunk chunk{};
        chunk.in_flight = in_flight[c];
        placement.chunks.push_back(chunk);
        for (const Layers& group : layers[c])
            counts.insert(counts.end(), group.begin(), group.end());
    }
    placement.set_group_layers(std::move(counts));
    return placement;
}

class GroupedRuns {
  public:
    void observe(StagePlacement placement) {
        Observation o;
        o.peak_memory_mb = truth_.memory(placement);
        o.placement = std::move(placement);
        observations_.push_back(std::move(o));
    }
    // Stage s of a 1F1B dry run of p stages and m micro-batches.
    void observe_1f1b(std::uint32_t p, std::uint32_t s, const GroupLayers& layers,
                      std::uint32_t m) {
        observe(grouped_stage(p, s, {layers}, {one_f_one_b(p, s, m)}));
    }
    [[nodiscard]] std::vector<ppb_grouped_observation> views() const {
        std::vector<ppb_grouped_observation> out;
        for (const auto& o : observations_)
            out.push_back(o.grouped_view());
        return out;
    }
    [[nodiscard]] FitResult fit() const {
        const auto v = views();
        return ppb::dryrun_lsq::fit_grouped(dense_moe, v, {});
    }
    [[nodiscard]] const GroupTruth& truth() const { return truth_; }

  private:
    GroupTruth truth_;
    std::vector<Observation> observations_;
};

constexpr Layers none_full(std::uint32_t none_layers, std::uint32_t full_layers) {
    return {none_layers, 0, 0, 0, full_layers};
}

// 3 dense then 12 MoE layers over 4 stages, in several splits and micro-batch counts, some MoE
// layers fully recomputed; and 2-stage runs.
GroupedRuns deepseek_like_1f1b() {
    GroupedRuns runs;
    const std::vector<std::array<GroupLayers, 4>> splits = {
        {GroupLayers{none(3), none(1)}, GroupLayers{none(0), none(4)},
         GroupLayers{none(0), none(4)}, GroupLayers{none(0), none(3)}},
        {GroupLayers{none(2), none(0)}, GroupLayers{none(1), none(4)},
         GroupLayers{none(0), none(4)}, GroupLayers{none(0), none(4)}},
        {GroupLayers{none(3), none_full(0, 1)}, GroupLayers{none(0), none_full(2, 2)},
         GroupLayers{none(0), none_full(0, 4)}, GroupLayers{none(0), none(5)}},
    };
    const std::array<std::uint32_t, 3> micro_batches_of_run = {8, 8, 2};
    for (std::size_t r = 0; r < splits.size(); ++r) {
        for (std::uint32_t s = 0; s < 4; ++s)
            runs.observe_1f1b(4, s, splits[r][s], micro_batches_of_run[r]);
    }
    runs.observe_1f1b(2, 0, GroupLayers{none(3), none(5)}, 8);
    runs.observe_1f1b(2, 1, GroupLayers{none(0), none(7)}, 8);
    return runs;
}

void check_unknown(const FitResult& fit, Unknown u, double expected) {
    const auto& estimate = fit.estimates[ppb::dryrun_lsq::index(u)];
    BOOST_TEST_CONTEXT("unknown " << fit.name_of(u)) {
        BOOST_TEST_REQUIRE(estimate.has_value());
        BOOST_TEST(close(*estimate, expected, 1e-9),
                   "estimate " << *estimate << " != truth " << expected);
    }
}

using P = ppb::dryrun_lsq::Parameter;

}  // namespace

BOOST_AUTO_TEST_SUITE(fit_groups)

BOOST_AUTO_TEST_CASE(recovers_each_groups_coefficients_from_1f1b_runs) {
    const GroupedRuns runs = deepseek_like_1f1b();
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.groups == dense_moe, boost::test_tools::per_element());
    BOOST_TEST(fit.not_identifiable.empty());
    BOOST_TEST(fit.max_abs_residual_mb < 1e-6);
    const GroupTruth& t = runs.truth();
    for (const Unknown u : {Unknown(P::const_mb), Unknown(P::head_mb), Unknown(P::tail_mb),
                            Unknown(P::param_per_layer_mb, 0), Unknown(P::param_per_layer_mb, 1),
                            Unknown(P::activation_none, 0), Unknown(P::activation_none, 1),
                            Unknown(P::activation_full, 1)}) {
        check_unknown(fit, u, t.value(u));
    }
    // Kinds a group never holds are not considered: no dense layer is fully recomputed.
    BOOST_TEST(!fit.group_kind_considered[0][PPB_KIND_FULL]);
    BOOST_TEST(fit.group_kind_considered[1][PPB_KIND_FULL]);
    BOOST_TEST(!fit.estimates[ppb::dryrun_lsq::index(Unknown(P::activation_full, 0))]);

    // Each group's coefficients, as group_parameters gives them.
    const ppb_linear_parameters moe = ppb::dryrun_lsq::group_parameters(fit, 1);
    BOOST_TEST(close(moe.per_layer_mb, 8640.0));
    BOOST_TEST(close(moe.activation_mb[PPB_KIND_FULL], 60.0));
    BOOST_TEST(close(moe.const_mb, 3100.0));
    BOOST_TEST(close(moe.head_mb, 4650.0));
    BOOST_TEST((moe.identified & PPB_PARAM_PER_LAYER) != 0u);
    BOOST_TEST((moe.identified & PPB_PARAM_ACTIVATION(PPB_KIND_SELECT)) == 0u);
    const ppb_linear_parameters dense = ppb::dryrun_lsq::group_parameters(fit, 0);
    BOOST_TEST(close(dense.per_layer_mb, 1210.0));
    BOOST_TEST(close(dense.activation_mb[PPB_KIND_NONE], 702.0));
    BOOST_TEST((dense.identified & PPB_PARAM_ACTIVATION(PPB_KIND_FULL)) == 0u);

    // A placement unlike every observation: 2 dense + 5 MoE layers, 3 of them fully recomputed.
    const StagePlacement other = grouped_stage(8, 3, {GroupLayers{none(2), none_full(2, 3)}}, {5});
    BOOST_TEST(close(ppb::dryrun_lsq::predict(fit, other.grouped_view()), t.memory(other)));
}

BOOST_AUTO_TEST_CASE(recovers_each_groups_coefficients_from_interleaved_runs) {
    GroupedRuns runs;
    using ppb::Schedule;
    // p = 2 and p = 4 stages, 2 chunks each, the in-flight counts of Megatron's interleaved
    // order; dense layers in the first chunk of stage 0 only, as in the model.
    const std::uint32_t m = 8;
    for (const std::uint32_t p : {2u, 4u}) {
        for (std::uint32_t s = 0; s < p; ++s) {
            const auto f = ppb::in_flight_counts(Schedule::interleaved, p, s, m, 2);
            const GroupLayers first =
                s == 0 ? GroupLayers{none(p == 2 ? 3 : 2), none(1 + p % 3)}
                       : GroupLayers{none(s == 1 && p == 4 ? 1 : 0), none(2 + s)};
            const GroupLayers second = GroupLayers{none(0), none_full(1 + s % 2, s)};
            runs.observe(grouped_stage(p, s, {first, second}, f, Schedule::interleaved));
        }
    }
    // One more split of the 4-stage run, so that the dense layers' share varies.
    for (std::uint32_t s = 0; s < 4; ++s) {
        const auto f = ppb::in_flight_counts(Schedule::interleaved, 4, s, 4, 2);
        const GroupLayers first =
            s == 0 ? GroupLayers{none(3), none(0)} : GroupLayers{none(0), none(3)};
        runs.observe(grouped_stage(4, s, {first, GroupLayers{none(0), none_full(2, 1)}}, f,
                                   Schedule::interleaved));
    }
    const FitResult fit = runs.fit();
    BOOST_TEST(fit.not_identifiable.empty());
    const GroupTruth& t = runs.truth();
    for (const Unknown u : {Unknown(P::const_mb), Unknown(P::head_mb), Unknown(P::tail_mb),
                            Unknown(P::param_per_layer_mb, 0), Unknown(P::param_per_layer_mb, 1),
                            Unknown(P::activation_none, 0), Unknown(P::activation_none, 1),
                            Unknown(P::activation_full, 1)}) {
        check_unknown(fit, u, t.value(u));
    }
}

BOOST_AUTO_TEST_CASE(one_group_is_the_plain_fit_to_the_bit) {
    // A plain data set with chunks, kinds and a folded constant, fitted plain and as one group.
    DryRuns runs;
    const std::array<Layers, 4> layers = {Layers{2, 1, 0, 0, 1}, Layers{3, 0, 1, 0, 0},
                                          Layers{1, 2, 0, 1, 1}, Layers{4, 0, 0, 0, 0}};
    for (std::uint32_t s = 0; s < 4; ++s) {
        runs.observe(4, s, layers[s], 8, 0.37 * s);
        runs.observe(4, s, layers[(s + 1) % 4], 3, -0.21 * s);
    }
    runs.observe(2, 0, Layers{5, 1, 1, 1, 0}, 8, 0.5);
    runs.observe(2, 1, Layers{3, 3, 1, 0, 2}, 8);
    const FitResult plain = runs.fit();

    std::vector<Observation> grouped = runs.observations();
    for (auto& o : grouped) {
        std::vector<std::uint32_t> counts;
        for (const auto& chunk : o.placement.chunks)
            counts.insert(counts.end(), std::begin(chunk.layers), std::end(chunk.layers));
        o.placement.set_group_layers(std::move(counts));
    }
    std::vector<ppb_grouped_observation> views;
    for (const auto& o : grouped)
        views.push_back(o.grouped_view());
    const std::vector<std::string> one = {"all layers"};
    const FitResult as_group = ppb::dryrun_lsq::fit_grouped(one, views, {});

    BOOST_TEST(as_group.rank == plain.rank);
    BOOST_TEST_REQUIRE(as_group.estimates.size() == plain.estimates.size());
    for (std::size_t j = 0; j < plain.estimates.size(); ++j) {
        BOOST_TEST_CONTEXT("unknown " << j) {
            BOOST_TEST(as_group.estimates[j].has_value() == plain.estimates[j].has_value());
            if (plain.estimates[j]) {
                BOOST_TEST(*as_group.estimates[j] == *plain.estimates[j]);  // bit for bit
                BOOST_TEST(*as_group.std_errors[j] == *plain.std_errors[j]);
            }
        }
    }
    BOOST_TEST(as_group.residuals_mb == plain.residuals_mb, boost::test_tools::per_element());
    // The same report, word for word: one group keeps the plain model's names and shape.
    BOOST_TEST(ppb::dryrun_lsq::report_json(as_group) == ppb::dryrun_lsq::report_json(plain));
    // And the same predictions, plain or grouped.
    const StagePlacement probe = stage(4, 2, Layers{3, 1, 0, 0, 1}, 8);
    StagePlacement grouped_probe = probe;
    grouped_probe.set_group_layers({3, 1, 0, 0, 1});
    BOOST_TEST(ppb::dryrun_lsq::predict(as_group, grouped_probe.grouped_view()) ==
               ppb::dryrun_lsq::predict(plain, probe.view()));
    BOOST_TEST(*ppb::dryrun_lsq::predict_std_error(as_group, grouped_probe.grouped_view()) ==
               *ppb::dryrun_lsq::predict_std_error(plain, probe.view()));
}

BOOST_AUTO_TEST_CASE(groups_held_in_one_proportion_are_not_separated) {
    // Every stage holds dense and MoE layers 1 : 3 (with the same in-flight structure), so only
    // P_dense + 3 P_moe is determined.
    GroupedRuns runs;
    const std::array<GroupLayers, 4> stages = {
        GroupLayers{none(1), none(3)}, GroupLayers{none(2), none(6)}, GroupLayers{none(1), none(3)},
        GroupLayers{none(0), none(0)}};
    for (const std::uint32_t m : {8u, 2u}) {
        for (std::uint32_t s = 0; s < 4; ++s)
            runs.observe_1f1b(4, s, stages[s], m);
    }
    const FitResult fit = runs.fit();
    const auto* why = fit.why_not_identified(Unknown(P::param_per_layer_mb, 1));
    BOOST_TEST_REQUIRE(why != nullptr);
    BOOST_TEST(mentions(why->reason,
                        "the parameter memory of group 'moe' and of group 'dense' "
                        "are not separated"),
               why->reason);
    BOOST_TEST(mentions(why->reason,
                        "param_per_layer_mb[moe] cannot be told apart from "
                        "param_per_layer_mb[dense]"),
               why->reason);
    BOOST_TEST(why->suggestion ==
               "a dry run with a stage holding only 'moe' layers (or a "
               "different mix of dense and moe layers) would separate them");
    const auto* dense = fit.why_not_identified(Unknown(P::param_per_layer_mb, 0));
    BOOST_TEST_REQUIRE(dense != nullptr);
    BOOST_TEST(mentions(dense->reason,
                        "the parameter memory of group 'dense' and of group 'moe' "
                        "are not separated"),
               dense->reason);
    const auto* activation = fit.why_not_identified(Unknown(P::activation_none, 1));
    BOOST_TEST_REQUIRE(activation != nullptr);
    BOOST_TEST(mentions(activation->reason,
                        "the activation memory of none layers of group 'moe' "
                        "and of group 'dense' are not separated"),
               activation->reason);
    // The shared parameters are still determined.
    check_unknown(fit, P::head_mb, runs.truth().head_mb);
    check_unknown(fit, P::tail_mb, runs.truth().tail_mb);
    check_unknown(fit, P::const_mb, runs.truth().const_mb);

    // A placement in the observed proportion is predictable; one of MoE layers only is not.
    const StagePlacement same_mix = grouped_stage(4, 1, {GroupLayers{none(3), none(9)}}, {3});
    BOOST_TEST(close(ppb::dryrun_lsq::predict(fit, same_mix.grouped_view()),
                     runs.truth().memory(same_mix), 1e-9));
    const StagePlacement moe_only = grouped_stage(4, 1, {GroupLayers{none(0), none(4)}}, {3});
    try {
        (void)ppb::dryrun_lsq::predict(fit, moe_only.grouped_view());
        BOOST_ERROR("predicting MoE layers alone should be refused");
    } catch (const ppb::plugin::NotEstimable& e) {
        const std::string message = e.what();
        BOOST_TEST(mentions(message,
                            "predicting stage 1 (p = 4) needs param_per_layer_mb[moe] "
                            "and activation_mb.none[moe], which the observations do "
                            "not determine: the parameter memory of group 'moe'"),
                   message);
    }
    // MoE layers of a kind never observed in group 'moe'.
    const StagePlacement moe_select =
        grouped_stage(4, 1, {GroupLayers{none(1), Layers{2, 1, 0, 0, 0}}}, {3});
    try {
        (void)ppb::dryrun_lsq::predict(fit, moe_select.grouped_view());
        BOOST_ERROR("predicting select MoE layers should be refused");
    } catch (const ppb::plugin::NotEstimable& e) {
        BOOST_TEST(std::string(e.what()) ==
                   "predicting stage 1 (p = 4) needs activation_mb.select[moe], but "
                   "activation_mb.select[moe] was never observed: no observation holds select "
                   "layers of group 'moe'");
    }
}

BOOST_AUTO_TEST_CASE(a_group_never_observed_is_named) {
    GroupedRuns runs;
    for (std::uint32_t s = 0; s < 4; ++s)
        runs.observe_1f1b(4, s, GroupLayers{none(s + 1), none(0)}, 8);
    for (std::uint32_t s = 0; s < 4; ++s)
        runs.observe_1f1b(4, s, GroupLayers{none(4 - s), none(0)}, 3);
    const FitResult fit = runs.fit();
    const auto* why = fit.why_not_identified(Unknown(P::param_per_layer_mb, 1));
    BOOST_TEST_REQUIRE(why != nullptr);
    BOOST_TEST(why->reason == "no observed stage holds a layer of group 'moe'");
    BOOST_TEST(why->suggestion == "add measurements of stages that hold layers of group 'moe'");
    check_unknown(fit, Unknown(P::param_per_layer_mb, 0), 1210.0);
}

BOOST_AUTO_TEST_CASE(the_report_of_several_groups_nests_their_parameters) {
    const FitResult fit = deepseek_like_1f1b().fit();
    const auto report = boost::json::parse(ppb::dryrun_lsq::report_json(fit)).as_object();
    const auto& parameters = report.at("parameters").as_object();
    BOOST_TEST(!parameters.contains("param_per_layer_mb"));
    BOOST_TEST(close(parameters.at("const_mb").to_number<double>(), 3100.0));
    const auto& moe = parameters.at("groups").at("moe").as_object();
    BOOST_TEST(close(moe.at("param_per_layer_mb").to_number<double>(), 8640.0));
    BOOST_TEST(close(moe.at("activation_mb").at("full").to_number<double>(), 60.0));
    BOOST_TEST(moe.at("activation_mb").at("select").is_null());
    const auto& dense = parameters.at("groups").at("dense").as_object();
    BOOST_TEST(close(dense.at("activation_mb").at("none").to_number<double>(), 702.0));
    const auto& diagnostics = report.at("diagnostics").as_object();
    BOOST_TEST(diagnostics.at("groups").as_array().size() == 2u);
    BOOST_TEST(diagnostics.at("unknowns").as_array().at(3).as_string() ==
               "param_per_layer_mb[dense]");
    BOOST_TEST(diagnostics.at("not_considered").as_array().at(0).as_string() ==
               "activation_mb.select[dense]");
}

BOOST_AUTO_TEST_CASE(the_model_answers_the_grouped_calls) {
    ppb::dryrun_lsq::DryRunLsqModel model("{}");
    BOOST_TEST(model.groups() == std::vector<std::string>{"body"},
               boost::test_tools::per_element());
    const GroupedRuns runs = deepseek_like_1f1b();
    const auto views = runs.views();
    model.fit_grouped(dense_moe, views);
    BOOST_TEST(model.groups() == dense_moe, boost::test_tools::per_element());
    BOOST_TEST(close(model.group_parameters(1)->per_layer_mb, 8640.0));
    BOOST_CHECK_THROW((void)model.group_parameters(2), ppb::plugin::InvalidInput);
    const StagePlacement probe = grouped_stage(4, 2, {GroupLayers{none(1), none(3)}}, {2});
    BOOST_TEST(close(model.predict_grouped(probe.grouped_view()), runs.truth().memory(probe)));
    // The data follow the model exactly: the standard error is that of rounding.
    const auto error = model.predict_grouped_std_error(probe.grouped_view());
    BOOST_TEST_REQUIRE(error.has_value());
    BOOST_TEST(*error < 1e-6);
    // A plain placement does not say which group its layers are of.
    BOOST_CHECK_THROW((void)model.predict(probe.view()), ppb::plugin::InvalidInput);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fit_groups_tests
