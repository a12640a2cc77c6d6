// ppb::partition::solve when no plan fits: it throws Infeasible exactly when the exhaustive
// search of brute_force.hpp finds nothing, its smallest_feasible_limit_mb() is the least limit at
// which the search finds a plan (the least over plans of the largest stage memory, plus the
// margin), and its message names a binding stage and that limit in MB. A problem without
// candidate kinds, without stages or with a margin not below the limit is ppb::InputError.
#include "brute_force.hpp"

#include <ppb/abi.h>
#include <ppb/errors.hpp>
#include <ppb/partition/problem.hpp>

#include <fmt/format.h>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::partition::Infeasible;
using ppb::partition::MemorySource;
using ppb::partition::Plan;
using ppb::partition::Problem;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace infeasible_tests {

namespace {

// What solve() did.
struct Caught {
    std::optional<Plan> plan;
    bool infeasible = false;
    double smallest_limit_mb = 0.0;
    std::string message;
    std::string other;  // any other exception
};

Caught run(const Problem& problem, const MemorySource& memory) {
    Caught r;
    try {
        r.plan = ppb::partition::solve(problem, memory);
    } catch (const Infeasible& e) {
        r.infeasible = true;
        r.smallest_limit_mb = e.smallest_feasible_limit_mb();
        r.message = e.what();
    } catch (const std::exception& e) {
        r.other = e.what();
    }
    return r;
}

Problem with_limit(Problem problem, double limit_mb) {
    problem.memory_limit_mb = limit_mb;
    return problem;
}

// The stage numbers the message mentions as "stage N".
std::set<std::uint32_t> stages_named(const std::string& message) {
    static const std::regex stage_number("stage ([0-9]+)");
    std::set<std::uint32_t> stages;
    for (auto it = std::sregex_iterator(message.begin(), message.end(), stage_number);
         it != std::sregex_iterator(); ++it) {
        stages.insert(static_cast<std::uint32_t>(std::stoul((*it)[1].str())));
    }
    return stages;
}

// Whether stage s can hold its fewest layers (in the lightest way) within `budget_mb`.
bool fits_minimum(const pt::OptionTable& table, std::uint32_t s, double budget_mb) {
    const auto& options = table.options[s][pt::oracle_min_layers(table.stages, s)];
    return std::any_of(options.begin(), options.end(), [&](const pt::Option& o) {
        return pt::fits_budget(o.memory_mb, budget_mb);
    });
}

struct Counts {
    std::size_t instances = 0;
    std::size_t solves = 0;
    std::uint64_t oracle_plans = 0;
};

// One infeasible instance, through the linear path and the predict_batch path: Infeasible, the
// smallest limit of the brute force, a message naming a binding stage and that limit, and at that
// limit a plan of the brute force's optimal iteration time. Returns what is wrong (empty when
// nothing is) and sets the stages that bind at the smallest limit.
std::vector<pt::Finding> check_infeasible(const Problem& problem, const ppb_linear_parameters& c,
                                          std::uint32_t model_kinds, Counts& counts,
                                          std::vector<std::uint32_t>* bottleneck = nullptr) {
    const std::uint32_t allowed = problem.kinds & model_kinds;
    const pt::OptionTable table =
        pt::make_options(problem, allowed, pt::canonical_memory(c, problem));
    const pt::LeastMemory least = pt::least_memory(table);
    counts.oracle_plans += least.plans;
    ++counts.instances;
    if (bottleneck != nullptr)
        *bottleneck = least.bottleneck;
    const double smallest = least.smallest_limit_mb(problem.memory_margin_mb);
    auto feasible_at = [&](double limit_mb) {
        return pt::brute_force(table, with_limit(problem, limit_mb).budget_mb()).feasible;
    };
    // The instance is what it is meant to be: plans exist, none within this limit, and the
    // smallest limit is the threshold of the brute force.
    BOOST_TEST_CONTEXT(pt::describe(problem, c, model_kinds)) {
        BOOST_TEST_REQUIRE(least.any_plan);
        BOOST_TEST_REQUIRE(!feasible_at(problem.memory_limit_mb));
        BOOST_TEST_REQUIRE(feasible_at(smallest));
        BOOST_TEST_REQUIRE(!feasible_at(smallest * (1 - 1e-6)));
    }
    // Stages a message may name: one that binds at the smallest limit, or one that cannot hold
    // even its fewest layers within this limit.
    std::set<std::uint32_t> binding(least.bottleneck.begin(), least.bottleneck.end());
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        if (!fits_minimum(table, s, problem.budget_mb()))
            binding.insert(s);
    }
    std::string binding_text;
    for (std::uint32_t s : binding)
        binding_text += fmt::format(" {}", s);

    std::vector<pt::Finding> found;
    for (const bool linear : {true, false}) {
        const std::string path = linear ? "linear" : "predict_batch";
        auto add = [&](const std::string& category, const std::string& detail) {
            found.push_back({fmt::format("{} (via {})", category, path), detail});
        };
        auto log = std::make_shared<pt::BatchLog>();
        MemorySource source = pt::batch_source(c, problem, model_kinds, log);
        if (linear)
            source.linear = c;
        const Caught r = run(problem, source);
        ++counts.solves;
        if (log->bad != 0)
            add("malformed predict_batch request", log->first_bad);
        if (r.plan) {
            add("plan where brute force finds none",
                fmt::format("{} (defects: {})", pt::describe(*r.plan),
                            pt::plan_defects(*r.plan, problem, allowed, c)));
            continue;
        }
        if (!r.infeasible) {
            add("exception other than Infeasible", r.other);
            continue;
        }
        if (!pt::close(r.smallest_limit_mb, smallest)) {
            add("wrong smallest_feasible_limit_mb()",
                fmt::format("{:.17g}, brute force {:.17g}", r.smallest_limit_mb, smallest));
        }
        // Feasible at the solver's limit, not a hair below it.
        if (!feasible_at(r.smallest_limit_mb)) {
            add("brute force infeasible at the reported limit",
                fmt::format("{:.17g}", r.smallest_limit_mb));
        }
        if (feasible_at(r.smallest_limit_mb * (1 - 1e-6))) {
            add("brute force feasible below the reported limit",
                fmt::format("{:.17g}", r.smallest_limit_mb));
        }
        // The message: the limit in MB with one decimal, rounded up so that the figure shown is
        // itself feasible, and a stage that binds.
        const std::string limit_text =
            fmt::format("{:.1f} MB", std::ceil(r.smallest_limit_mb * 10.0) / 10.0);
        if (r.message.find("MB") == std::string::npos)
            add("message without \"MB\"", r.message);
        if (r.message.find(limit_text) == std::string::npos) {
            add("message without the smallest limit rounded up to 0.1 MB",
                fmt::format("\"{}\" should contain \"{}\" (smallest limit {:.17g})", r.message,
                            limit_text, r.smallest_limit_mb));
        }
        const std::set<std::uint32_t> named = stages_named(r.message);
        if (std::none_of(named.begin(), named.end(),
                         [&](std::uint32_t s) { return binding.count(s) != 0; })) {
            add("message without \"stage N\" for a binding stage",
                fmt::format("\"{}\" should name stage N, N in{}", r.message, binding_text));
        }
        // At that limit, solve finds the brute force's optimum.
        const Problem at = with_limit(problem, r.smallest_limit_mb);
        const pt::Optimum expected = pt::brute_force(table, at.budget_mb());
        const Caught fixed = run(at, source);
        ++counts.solves;
        if (!fixed.plan) {
            add("no plan at the reported limit",
                fmt::format("{:.17g}: {}{}", r.smallest_limit_mb, fixed.message, fixed.other));
        } else if (expected.feasible) {
            const std::string defects = pt::plan_defects(*fixed.plan, at, allowed, c);
            if (!defects.empty())
                add("invalid plan at the reported limit", defects);
            if (!pt::close(fixed.plan->iteration_time, expected.iteration_time)) {
                add("suboptimal at the reported limit",
                    fmt::format("solve {}; brute force {}", pt::describe(*fixed.plan),
                                pt::describe(expected)));
            }
        }
    }
    return found;
}

// The findings as one line each.
std::string text(const std::vector<pt::Finding>& found) {
    std::string t;
    for (const pt::Finding& f : found)
        t += fmt::format("\n  {}: {}", f.category, f.detail);
    return t;
}

// Coefficients for the named cases: small everywhere, so one term decides.
pt::Coefficients quiet(std::uint32_t layers) {
    pt::Coefficients c;
    c.time.body_name = "body";
    c.time.body_layers = layers;
    c.time.body_time = {1.0, 1.0625, 1.125, 1.25, 1.5};
    c.time.head_time = 0.5;
    c.time.tail_time = 0.75;
    c.memory.const_mb = 2000;
    c.memory.head_mb = 1000;
    c.memory.tail_mb = 1500;
    c.memory.per_layer_mb = 1000;
    pt::set_activation(c.memory, {800, 200, 600, 150, 20});
    c.memory = pt::all_identified(c.memory);
    return c;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partition_infeasible)

BOOST_AUTO_TEST_CASE(stage_0_cannot_hold_even_no_layers) {
    pt::Coefficients c = quiet(4);
    c.memory.head_mb = 60000;
    c.margin_mb = 1234.5;
    Counts counts;
    // Stage 0 alone needs 2000 + 60000 MB; the others far less.
    const Problem problem = pt::make_problem(3, 8, PPB_ALL_KINDS, c, 50000);
    std::vector<std::uint32_t> bottleneck;
    const auto found = check_infeasible(problem, c.memory, PPB_ALL_KINDS, counts, &bottleneck);
    BOOST_TEST(found.empty(), text(found));
    BOOST_TEST(bottleneck == std::vector<std::uint32_t>{0});
    const Caught r = run(problem, MemorySource{c.memory, {}, PPB_ALL_KINDS});
    BOOST_TEST(r.smallest_limit_mb == 63234.5);
    BOOST_TEST(r.message.find("stage 0") != std::string::npos, r.message);
    BOOST_TEST(r.message.find("63234.5 MB") != std::string::npos, r.message);
}

BOOST_AUTO_TEST_CASE(last_stage_cannot_hold_its_tail) {
    pt::Coefficients c = quiet(5);
    c.memory.tail_mb = 70000;
    Counts counts;
    const Problem problem = pt::make_problem(4, 2, PPB_ALL_KINDS, c, 40000.25);
    std::vector<std::uint32_t> bottleneck;
    const auto found = check_infeasible(problem, c.memory, PPB_ALL_KINDS, counts, &bottleneck);
    BOOST_TEST(found.empty(), text(found));
    BOOST_TEST(bottleneck == std::vector<std::uint32_t>{3});
    const Caught r = run(problem, MemorySource{c.memory, {}, PPB_ALL_KINDS});
    BOOST_TEST(r.smallest_limit_mb == 72000.0);
    BOOST_TEST(r.message.find("stage 3") != std::string::npos, r.message);
    BOOST_TEST(r.message.find("72000.0 MB") != std::string::npos, r.message);
}

BOOST_AUTO_TEST_CASE(body_stage_cannot_hold_its_one_layer) {
    // Stages 1 and 2 of 4 hold one layer each; stage 1 has 3 micro-batches in flight, stage 2 two:
    // stage 1 needs 2000 + 1000 + 3 x 5000 even with the lightest allowed kind.
    pt::Coefficients c = quiet(2);
    pt::set_activation(c.memory, {9000, 5000, 7000, 6000, 8000});
    c.margin_mb = 500;
    Counts counts;
    const std::uint32_t kinds = PPB_KIND_BIT(PPB_KIND_SELECT) | PPB_KIND_BIT(PPB_KIND_FULL);
    const Problem problem = pt::make_problem(4, 8, kinds, c, 17000);
    std::vector<std::uint32_t> bottleneck;
    const auto found = check_infeasible(problem, c.memory, PPB_ALL_KINDS, counts, &bottleneck);
    BOOST_TEST(found.empty(), text(found));
    BOOST_TEST(bottleneck == std::vector<std::uint32_t>{1});
    const Caught r = run(problem, MemorySource{c.memory, {}, PPB_ALL_KINDS});
    BOOST_TEST(r.smallest_limit_mb == 18500.0);
    BOOST_TEST(r.message.find("stage 1") != std::string::npos, r.message);
    BOOST_TEST(r.message.find("18500.0 MB") != std::string::npos, r.message);
}

BOOST_AUTO_TEST_CASE(single_stage_holds_every_layer) {
    // P = 1: 2000 + 1000 + 1500 + 6 x 1000 + 6 x 20 (full, the lightest; one in flight).
    pt::Coefficients c = quiet(6);
    Counts counts;
    const Problem problem = pt::make_problem(1, 8, PPB_ALL_KINDS, c, 10000);
    std::vector<std::uint32_t> bottleneck;
    const auto found = check_infeasible(problem, c.memory, PPB_ALL_KINDS, counts, &bottleneck);
    BOOST_TEST(found.empty(), text(found));
    BOOST_TEST(bottleneck == std::vector<std::uint32_t>{0});
    const Caught r = run(problem, MemorySource{c.memory, {}, PPB_ALL_KINDS});
    BOOST_TEST(r.smallest_limit_mb == 10620.0);
    BOOST_TEST(r.message.find("10620.0 MB") != std::string::npos, r.message);
}

BOOST_AUTO_TEST_CASE(only_the_kinds_allowed_count) {
    // With 'full' the stage would fit; only 'none' and 'comm' are allowed (by problem and model).
    pt::Coefficients c = quiet(3);
    Counts counts;
    const std::uint32_t problem_kinds =
        PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_COMM) | PPB_KIND_BIT(PPB_KIND_FULL);
    const std::uint32_t model_kinds =
        PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_COMM) | PPB_KIND_BIT(PPB_KIND_SELECT);
    // One stage, 3 comm layers: 2000 + 1000 + 1500 + 3000 + 3 x 600 = 9300; 3 full: 7560.
    const Problem problem = pt::make_problem(1, 1, problem_kinds, c, 9000);
    const auto found = check_infeasible(problem, c.memory, model_kinds, counts);
    BOOST_TEST(found.empty(), text(found));
    const Caught r = run(problem, MemorySource{c.memory, {}, model_kinds});
    BOOST_TEST(r.smallest_limit_mb == 9300.0);
}

// A margin that leaves no budget is the caller's mistake, not an infeasible pipeline.
BOOST_AUTO_TEST_CASE(margin_not_below_the_limit_is_an_input_error) {
    pt::Coefficients c = quiet(3);
    c.margin_mb = 4000;
    const Problem below = pt::make_problem(2, 2, PPB_ALL_KINDS, c, -1000);  // limit 3000 MB
    BOOST_CHECK_THROW((void)ppb::partition::solve(below, MemorySource{c.memory, {}, PPB_ALL_KINDS}),
                      ppb::InputError);
    c.margin_mb = -100;
    const Problem negative = pt::make_problem(2, 2, PPB_ALL_KINDS, c, 1e6);
    BOOST_CHECK_THROW(
        (void)ppb::partition::solve(negative, MemorySource{c.memory, {}, PPB_ALL_KINDS}),
        ppb::InputError);
}

// Every small shape, every set of kinds, limits half a MB below the smallest feasible one and
// well below it.
BOOST_AUTO_TEST_CASE(infeasible_exactly_when_brute_force_finds_nothing) {
    struct Shape {
        std::uint32_t stages;
        std::array<std::uint32_t, 3> layers;
    };
    const std::array<Shape, 4> shapes = {Shape{1, {1, 3, 6}}, Shape{2, {1, 3, 6}},
                                         Shape{3, {1, 3, 6}}, Shape{4, {2, 4, 6}}};
    Counts counts;
    pt::Findings findings;
    std::size_t seq = 0;
    for (const Shape& shape : shapes) {
        for (const std::uint32_t layers : shape.layers) {
            for (const std::uint32_t m : {1u, 2u, 8u}) {
                for (std::uint32_t allowed = 1; allowed <= PPB_ALL_KINDS; ++allowed, ++seq) {
                    std::mt19937 rng(static_cast<std::uint32_t>(
                        6007u * shape.stages + 3001u * layers + 17u * m + 900001u * allowed));
                    const auto variant = static_cast<pt::Variant>(seq % pt::variant_count);
                    const pt::Coefficients c =
                        pt::draw(rng, variant, allowed, layers, seq % 2 == 1);
                    // The problem asks for `allowed`; the model predicts all kinds or just those.
                    const std::uint32_t model_kinds = seq % 3 == 0 ? PPB_ALL_KINDS : allowed;
                    const Problem base = pt::make_problem(shape.stages, m, PPB_ALL_KINDS, c, 1e12);
                    const double least =
                        pt::least_memory(
                            pt::make_options(base, allowed, pt::canonical_memory(c.memory, base)))
                            .max_stage_mb;
                    // Budgets: half a MB short; a quarter or a tenth short.
                    const pt::Findings::Key key{layers, shape.stages, std::popcount(allowed), m,
                                                seq};
                    Problem problem = pt::make_problem(shape.stages, m, allowed, c, least - 0.5);
                    findings.add(key, pt::describe(problem, c.memory, model_kinds),
                                 check_infeasible(problem, c.memory, model_kinds, counts));
                    const double budget = (seq % 2 == 0 ? 0.75 : 0.9) * least;
                    problem = pt::make_problem(shape.stages, m, allowed, c, budget);
                    findings.add(key, pt::describe(problem, c.memory, model_kinds),
                                 check_infeasible(problem, c.memory, model_kinds, counts));
                }
            }
        }
    }
    findings.report("infeasible sweep");
    BOOST_TEST_MESSAGE(
        fmt::format("infeasible sweep: {} instances, {} solve() calls, {} plans "
                    "enumerated for the smallest limits",
                    counts.instances, counts.solves, counts.oracle_plans));
}

BOOST_AUTO_TEST_CASE(no_candidate_kinds_is_an_input_error) {
    pt::Coefficients c = quiet(3);
    const Problem none_asked = pt::make_problem(3, 2, 0, c, 1e6);
    BOOST_CHECK_THROW(
        (void)ppb::partition::solve(none_asked, MemorySource{c.memory, {}, PPB_ALL_KINDS}),
        ppb::InputError);
    // The problem asks for kinds the model cannot predict.
    const Problem disjoint =
        pt::make_problem(3, 2, PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_SELECT), c, 1e6);
    const std::uint32_t model_kinds = PPB_KIND_BIT(PPB_KIND_FULL) | PPB_KIND_BIT(PPB_KIND_COMM);
    BOOST_CHECK_THROW(
        (void)ppb::partition::solve(disjoint, MemorySource{c.memory, {}, model_kinds}),
        ppb::InputError);
    auto log = std::make_shared<pt::BatchLog>();
    BOOST_CHECK_THROW((void)ppb::partition::solve(
                          disjoint, pt::batch_source(c.memory, disjoint, model_kinds, log)),
                      ppb::InputError);
}

BOOST_AUTO_TEST_CASE(no_stages_is_an_input_error) {
    pt::Coefficients c = quiet(3);
    const Problem problem = pt::make_problem(0, 2, PPB_ALL_KINDS, c, 1e6);
    BOOST_CHECK_THROW(
        (void)ppb::partition::solve(problem, MemorySource{c.memory, {}, PPB_ALL_KINDS}),
        ppb::InputError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace infeasible_tests
