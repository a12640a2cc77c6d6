// Planning against the uncertainty (Problem::memory_margin_sigma = K > 0) is exact: with a fake
// model whose standard error is known, sqrt(x' S x) for the placement's design row x (as a linear
// fit's is, with correlated coefficients, so that a slower or larger mix can have the smaller
// error and adding a layer can lower it), solve() finds exactly the least iteration time of the
// exhaustive search over every plan whose every stage's memory + K x se fits the budget, on every
// small shape, through the inline linear path and through predict_batch alike; each stage
// reports K x se as its margin. K = 0 never asks for a standard error and is today's answer.
#include "brute_force.hpp"

#include <ppb/abi.h>
#include <ppb/errors.hpp>
#include <ppb/partition/problem.hpp>

#include <fmt/format.h>
#include <boost/test/unit_test.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::partition::Infeasible;
using ppb::partition::KindCounts;
using ppb::partition::MemorySource;
using ppb::partition::Plan;
using ppb::partition::Problem;
using ppb::partition::RecomputeRule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace sigma_tests {

namespace {

// Design row: const, head, tail, per-layer (all layers), activation of each kind (layers x f).
constexpr std::size_t row_size = 4 + PPB_KIND_COUNT;
using Row = std::array<double, row_size>;
using Factor = std::array<Row, row_size>;  // S = A A': se(x) = |A' x|

Row design_row(std::uint32_t stages, std::uint32_t stage, const KindCounts& layers,
               std::uint32_t in_flight) {
    Row x{};
    x[0] = 1.0;
    x[1] = stage == 0 ? 1.0 : 0.0;
    x[2] = stage + 1 == stages ? 1.0 : 0.0;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        x[3] += layers[k];
        x[4 + k] = static_cast<double>(layers[k]) * in_flight;
    }
    return x;
}

double known_se(const Factor& a, const Row& x) {
    double sum = 0.0;
    for (std::size_t j = 0; j < row_size; ++j) {
        double component = 0.0;
        for (std::size_t i = 0; i < row_size; ++i)
            component += a[i][j] * x[i];
        sum += component * component;
    }
    return std::sqrt(sum);
}

// A factor with entries of both signs: correlated coefficients, some negatively. Activation
// rows are scaled down (they are multiplied by layers x in-flight).
Factor draw_factor(std::mt19937& rng, double scale) {
    Factor a{};
    for (std::size_t i = 0; i < row_size; ++i) {
        const double row_scale = i >= 4 ? scale / 4.0 : scale;
        for (std::size_t j = 0; j < row_size; ++j)
            a[i][j] = pt::real_in(rng, -row_scale, row_scale);
    }
    return a;
}

struct SeLog {
    std::uint64_t calls = 0;
    std::uint64_t placements = 0;
};

// The fake model's std_error: known_se of each placement.
MemorySource with_std_error(MemorySource source, const Factor& a, std::shared_ptr<SeLog> log) {
    source.std_error = [a, log](std::span<const ppb_placement> placements) {
        ++log->calls;
        std::vector<double> out;
        for (const ppb_placement& p : placements) {
            ++log->placements;
            KindCounts layers{};
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                layers[k] = p.chunks[0].layers[k];
            out.push_back(
                known_se(a, design_row(p.num_stages, p.stage, layers, p.chunks[0].in_flight)));
        }
        return out;
    };
    return source;
}

struct Outcome {
    std::optional<Plan> plan;
    bool infeasible = false;
    double smallest_limit_mb = 0.0;
    std::string error;
};

Outcome run(const Problem& problem, const MemorySource& memory) {
    Outcome o;
    try {
        o.plan = ppb::partition::solve(problem, memory);
    } catch (const Infeasible& e) {
        o.infeasible = true;
        o.smallest_limit_mb = e.smallest_feasible_limit_mb();
        o.error = e.what();
    } catch (const std::exception& e) {
        o.error = std::string("exception: ") + e.what();
    }
    return o;
}

// Budgets: the distinct needs of every option (binding at equality), the midpoints between a
// spread of them, and far above; knife edges left out.
std::vector<double> budgets(const pt::OptionTable& table) {
    std::vector<double> needs;
    for (const auto& per_count : table.options) {
        for (const auto& options : per_count) {
            for (const pt::Option& o : options)
                needs.push_back(o.memory_mb);
        }
    }
    std::sort(needs.begin(), needs.end());
    needs.erase(std::unique(needs.begin(), needs.end()), needs.end());
    std::vector<double> out = {1e12};
    const std::size_t step = std::max<std::size_t>(1, needs.size() / 12);
    for (std::size_t i = 0; i < needs.size(); i += step) {
        out.push_back(needs[i]);
        if (i + 1 < needs.size())
            out.push_back((needs[i] + needs[i + 1]) / 2.0);
    }
    std::vector<double> chosen;
    for (const double b : out) {
        if (!pt::knife_edge(table, b))
            chosen.push_back(b);
    }
    return chosen;
}

// Everything wrong with `outcome` against the brute force over needs.
std::string disagreement(const Outcome& outcome, const pt::Optimum& expected,
                         const Problem& problem, std::uint32_t allowed,
                         const ppb_linear_parameters& c, const Factor& a,
                         const pt::OptionTable& table) {
    const double k = problem.memory_margin_sigma;
    if (expected.feasible) {
        if (!outcome.plan)
            return fmt::format("no plan ({}); brute force: {}", outcome.error,
                               pt::describe(expected));
        // Valid by the mean (the defects of the plain problem, its budget raised so that only
        // the need is checked below) ...
        Problem loose = problem;
        loose.memory_limit_mb = 1e12;
        std::string defects = pt::plan_defects(*outcome.plan, loose, allowed, c);
        // ... each stage's margin is K x its known standard error and its need fits ...
        for (const auto& s : outcome.plan->stages) {
            const double se = known_se(
                a, design_row(problem.num_stages, s.stage, s.layers, problem.in_flight(s.stage)));
            if (!pt::close(s.margin_mb, k * se)) {
                defects += fmt::format("; stage {} margin {:.17g}, K x se = {:.17g}", s.stage,
                                       s.margin_mb, k * se);
            }
            if (!pt::fits_budget(s.memory_mb + k * se, problem.budget_mb())) {
                defects += fmt::format("; stage {} needs {:.17g} over budget {:.17g}", s.stage,
                                       s.memory_mb + k * se, problem.budget_mb());
            }
        }
        // ... and nothing is faster.
        if (!pt::close(outcome.plan->iteration_time, expected.iteration_time)) {
            defects += fmt::format("; iteration_time {:.17g}, brute force optimum {:.17g}",
                                   outcome.plan->iteration_time, expected.iteration_time);
        }
        if (defects.empty())
            return {};
        return fmt::format("{}\n    solve:       {}\n    brute force: {}", defects,
                           pt::describe(*outcome.plan), pt::describe(expected));
    }
    if (outcome.plan)
        return "a plan where brute force finds none: " + pt::describe(*outcome.plan);
    if (!outcome.infeasible)
        return "threw instead of Infeasible: " + outcome.error;
    // The limit it reports is feasible, and no smaller than the least feasible one.
    const pt::LeastMemory least = pt::least_memory(table);
    const double smallest = least.smallest_limit_mb(problem.memory_margin_mb);
    if (outcome.smallest_limit_mb < smallest * (1 - 1e-12)) {
        return fmt::format("reported smallest limit {:.17g} below the least feasible {:.17g}",
                           outcome.smallest_limit_mb, smallest);
    }
    if (!pt::brute_force(table, outcome.smallest_limit_mb - problem.memory_margin_mb).feasible &&
        std::isfinite(outcome.smallest_limit_mb)) {
        return fmt::format("reported smallest limit {:.17g} is not feasible",
                           outcome.smallest_limit_mb);
    }
    // The figure is feasible but not searched to be the least: the message says so.
    if (std::isfinite(outcome.smallest_limit_mb) &&
        outcome.error.find("a memory limit that would be feasible is") == std::string::npos) {
        return "the message does not say the limit is a feasible one, not the least: " +
               outcome.error;
    }
    return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partition_sigma)

BOOST_AUTO_TEST_CASE(solve_matches_brute_force_over_memory_plus_k_standard_errors) {
    const std::array<std::uint32_t, 8> masks = {PPB_ALL_KINDS, 0x01, 0x03, 0x11,
                                                0x12,          0x1A, 0x07, 0x19};
    const std::array<double, 4> sigmas = {0.5, 1.0, 2.0, 3.0};
    const std::array<pt::Variant, 3> variants = {pt::Variant::generic, pt::Variant::real,
                                                 pt::Variant::shuffled};
    pt::Findings findings;
    std::size_t instances = 0;
    std::size_t binding = 0;     // K x se changes the optimum of the mean-only problem
    std::size_t infeasible = 0;  // nothing fits
    std::size_t under_mindformers = 0;
    std::size_t under_any = 0;
    auto se_log = std::make_shared<SeLog>();
    std::size_t seq = 0;
    for (std::uint32_t stages = 1; stages <= 3; ++stages) {
        for (std::uint32_t layers = std::max(1u, stages - 1); layers <= 6; ++layers) {
            for (const std::uint32_t m : {1u, 4u}) {
                for (const std::uint32_t allowed : masks) {
                    ++seq;
                    std::mt19937 rng(static_cast<std::uint32_t>(7919u * stages + 104729u * layers +
                                                                31u * m + 1000003u * allowed));
                    const pt::Variant variant = variants[seq % variants.size()];
                    const double k = sigmas[seq % sigmas.size()];
                    // Both recompute rules: the margin and MindFormers' rule together.
                    const RecomputeRule rule =
                        (seq / 2) % 2 == 0 ? RecomputeRule::mindformers : RecomputeRule::any;
                    const pt::Coefficients c =
                        pt::draw(rng, variant, allowed, layers, seq % 2 == 0);
                    const Factor a = draw_factor(rng, pt::real_in(rng, 20.0, 300.0));

                    const Problem base = pt::make_problem(stages, m, allowed, c, 1e12, rule);
                    const auto need = [&](std::uint32_t s, const KindCounts& l) {
                        const double se = known_se(a, design_row(stages, s, l, base.in_flight(s)));
                        return ppb::partition::linear_stage_memory(c.memory, base, s, l) + k * se;
                    };
                    const pt::OptionTable needs = pt::make_options(base, allowed, need);
                    const pt::OptionTable means =
                        pt::make_options(base, allowed, pt::canonical_memory(c.memory, base));
                    for (const double budget : budgets(needs)) {
                        Problem problem = pt::make_problem(stages, m, allowed, c, budget, rule);
                        problem.memory_margin_sigma = k;
                        ++(rule == RecomputeRule::mindformers ? under_mindformers : under_any);
                        const pt::Optimum expected = pt::brute_force(needs, problem.budget_mb());
                        const pt::Optimum mean_only = pt::brute_force(means, problem.budget_mb());
                        ++instances;
                        infeasible += expected.feasible ? 0 : 1;
                        if (expected.feasible &&
                            (!mean_only.feasible ||
                             !pt::close(mean_only.iteration_time, expected.iteration_time)))
                            ++binding;
                        // Binding on mean_only.feasible only: a plan the mean alone rejects is
                        // rejected with the margin too.
                        BOOST_TEST_REQUIRE((mean_only.feasible || !expected.feasible));

                        MemorySource inline_source;
                        inline_source.linear = c.memory;
                        auto batch_log = std::make_shared<pt::BatchLog>();
                        const MemorySource sources[] = {
                            with_std_error(inline_source, a, se_log),
                            with_std_error(
                                pt::batch_source(c.memory, problem, PPB_ALL_KINDS, batch_log), a,
                                se_log)};
                        const char* names[] = {"linear", "predict_batch"};
                        std::vector<pt::Finding> found;
                        for (std::size_t i = 0; i < 2; ++i) {
                            const std::string d =
                                disagreement(run(problem, sources[i]), expected, problem, allowed,
                                             c.memory, a, needs);
                            if (!d.empty())
                                found.push_back({fmt::format("wrong via {}", names[i]), d});
                        }
                        if (batch_log->bad != 0)
                            found.push_back({"bad predict_batch request", batch_log->first_bad});
                        findings.add(
                            {layers, stages, std::popcount(allowed), m, seq},
                            fmt::format("K={} {}", k, pt::describe(problem, c.memory, allowed)),
                            found);
                    }
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(fmt::format(
        "sigma sweep: {} instances ({} under MindFormers' rule), {} where the margin changes the "
        "optimum, {} infeasible, {} "
        "standard errors asked for in {} calls",
        instances, under_mindformers, binding, infeasible, se_log->placements, se_log->calls));
    findings.report("sigma sweep");
    // The sweep exercises what it claims: the margin changes many optima, and some budgets
    // leave no plan at all.
    BOOST_TEST(binding >= instances / 10);
    BOOST_TEST(infeasible > 0u);
    BOOST_TEST(under_mindformers >= instances / 3);
    BOOST_TEST(under_any >= instances / 3);
}

BOOST_AUTO_TEST_CASE(k_zero_never_asks_for_a_standard_error_and_is_todays_answer) {
    std::mt19937 rng(12345u);
    const pt::Coefficients c = pt::draw(rng, pt::Variant::generic, PPB_ALL_KINDS, 6, false);
    for (const std::uint32_t stages : {1u, 2u, 3u}) {
        const Problem problem = pt::make_problem(stages, 4, PPB_ALL_KINDS, c, 9000.0);
        MemorySource plain;
        plain.linear = c.memory;
        MemorySource throwing = plain;
        throwing.std_error = [](std::span<const ppb_placement>) -> std::vector<double> {
            throw std::logic_error("asked for a standard error with K = 0");
        };
        const Outcome expected = run(problem, plain);
        const Outcome got = run(problem, throwing);
        BOOST_TEST(got.error == expected.error);
        BOOST_TEST_REQUIRE(got.plan.has_value() == expected.plan.has_value());
        if (got.plan) {
            BOOST_TEST(got.plan->iteration_time == expected.plan->iteration_time);
            for (std::size_t s = 0; s < got.plan->stages.size(); ++s) {
                BOOST_TEST(got.plan->stages[s].layers == expected.plan->stages[s].layers);
                BOOST_TEST(got.plan->stages[s].margin_mb == 0.0);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(k_must_be_finite_and_not_negative_and_needs_standard_errors) {
    std::mt19937 rng(777u);
    const pt::Coefficients c = pt::draw(rng, pt::Variant::generic, PPB_ALL_KINDS, 4, false);
    MemorySource plain;
    plain.linear = c.memory;
    for (const double k : {-1.0, std::nan(""), pt::infinity}) {
        Problem problem = pt::make_problem(2, 4, PPB_ALL_KINDS, c, 1e9);
        problem.memory_margin_sigma = k;
        BOOST_CHECK_THROW((void)ppb::partition::solve(problem, plain), ppb::InputError);
    }
    Problem problem = pt::make_problem(2, 4, PPB_ALL_KINDS, c, 1e9);
    problem.memory_margin_sigma = 2.0;
    BOOST_CHECK_THROW((void)ppb::partition::solve(problem, plain), ppb::InputError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sigma_tests
