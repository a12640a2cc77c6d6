// ppb::partition::solve is optimal: on every small instance shape (P = 1..4 stages, up to 7
// layers, 1, 2 or 8 micro-batches, each of the 31 sets of allowed kinds) and at memory limits
// that bind on one stage after another, it finds exactly the least iteration time of the
// exhaustive search of brute_force.hpp, with a plan that is valid by the canonical definitions,
// through the inline linear path and through predict_batch alike.
#include "brute_force.hpp"

#include <ppb/abi.h>
#include <ppb/errors.hpp>
#include <ppb/partition/problem.hpp>

#include <fmt/format.h>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace pt = ppb::partition::test;
using ppb::partition::Infeasible;
using ppb::partition::KindCounts;
using ppb::partition::MemorySource;
using ppb::partition::Plan;
using ppb::partition::Problem;
using ppb::partition::RecomputeRule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace optimality_tests {

namespace {

// What solve() did.
struct Outcome {
    std::optional<Plan> plan;
    bool infeasible = false;
    double smallest_limit_mb = 0.0;
    std::string error;  // the exception's type and message
};

Outcome run(const Problem& problem, const MemorySource& memory) {
    Outcome o;
    try {
        o.plan = ppb::partition::solve(problem, memory);
    } catch (const Infeasible& e) {
        o.infeasible = true;
        o.smallest_limit_mb = e.smallest_feasible_limit_mb();
        o.error = std::string("Infeasible: ") + e.what();
    } catch (const ppb::InputError& e) {
        o.error = std::string("ppb::InputError: ") + e.what();
    } catch (const std::exception& e) {
        o.error = std::string("exception: ") + e.what();
    }
    return o;
}

// Why `outcome` is not the brute force's answer; empty when it is.
std::string disagreement(const Outcome& outcome, const pt::Optimum& expected,
                         const pt::LeastMemory& least, const Problem& problem,
                         std::uint32_t allowed, const ppb_linear_parameters& c) {
    if (expected.feasible) {
        if (!outcome.plan) {
            return fmt::format("solve found no plan ({}); brute force: {}", outcome.error,
                               pt::describe(expected));
        }
        std::string defects = pt::plan_defects(*outcome.plan, problem, allowed, c);
        if (!pt::close(outcome.plan->iteration_time, expected.iteration_time)) {
            defects += fmt::format("{}iteration_time {:.17g}, brute force optimum {:.17g}",
                                   defects.empty() ? "" : "; ", outcome.plan->iteration_time,
                                   expected.iteration_time);
        }
        if (defects.empty())
            return {};
        return fmt::format("{}\n    solve:       {}\n    brute force: {}", defects,
                           pt::describe(*outcome.plan), pt::describe(expected));
    }
    if (outcome.plan) {
        return fmt::format("solve returned a plan where brute force finds none: {} (defects: {})",
                           pt::describe(*outcome.plan),
                           pt::plan_defects(*outcome.plan, problem, allowed, c));
    }
    if (!outcome.infeasible)
        return fmt::format("solve threw {} instead of Infeasible", outcome.error);
    const double smallest = least.smallest_limit_mb(problem.memory_margin_mb);
    if (!pt::close(outcome.smallest_limit_mb, smallest)) {
        return fmt::format("Infeasible::smallest_feasible_limit_mb() {:.17g}, brute force {:.17g}",
                           outcome.smallest_limit_mb, smallest);
    }
    return {};
}

// The least body time among the allowed kinds; a layer slower than that is recomputed.
double fastest(const Problem& problem, std::uint32_t allowed) {
    double t = pt::infinity;
    for (std::uint32_t k : pt::kinds_of(allowed))
        t = std::min(t, problem.time.body_time[k]);
    return t;
}

bool recomputes(const KindCounts& layers, const Problem& problem, std::uint32_t allowed) {
    const double t = fastest(problem, allowed);
    for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (layers[k] != 0 && problem.time.body_time[k] > t)
            return true;
    }
    return false;
}

// Budgets that bind on one stage after another: unconstrained; each stage memory of the
// unconstrained optimum and the least feasible one, S (exactly: binding at equality); midpoints
// between consecutive ones; a quarter and three quarters of the way from S to the largest; just
// below S (infeasible); just below the smaller of stages 0 and 1 of the unconstrained optimum
// (both must change: recompute or shed layers). Budgets at a knife edge of the tolerance are
// left out.
std::vector<double> budgets(const pt::OptionTable& table, const pt::Optimum& free,
                            const pt::LeastMemory& least, std::size_t* knife_edges) {
    const double s = least.max_stage_mb;
    std::vector<double> levels = free.memory_mb;
    levels.push_back(s);
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    std::vector<double> candidates = {1e12, s - 0.5};
    for (std::size_t i = 0; i < levels.size(); ++i) {
        candidates.push_back(levels[i]);
        if (i + 1 < levels.size())
            candidates.push_back((levels[i] + levels[i + 1]) / 2.0);
    }
    if (levels.back() > s) {
        candidates.push_back(s + (levels.back() - s) / 4.0);
        candidates.push_back(s + (levels.back() - s) * 3.0 / 4.0);
    }
    if (table.stages >= 2)
        candidates.push_back(std::min(free.memory_mb[0], free.memory_mb[1]) - 0.5);
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    std::vector<double> chosen;
    for (double b : candidates) {
        if (pt::knife_edge(table, b))
            ++*knife_edges;
        else
            chosen.push_back(b);
    }
    return chosen;
}

// The kinds the problem asks for and the kinds the model predicts, whose intersection is
// `allowed`: (allowed, all), (all, allowed) or each with a different extra kind.
std::pair<std::uint32_t, std::uint32_t> kind_masks(std::uint32_t allowed, std::size_t mode) {
    const std::vector<std::uint32_t> missing = pt::kinds_of(PPB_ALL_KINDS & ~allowed);
    switch (mode % 3) {
        case 1:
            return {PPB_ALL_KINDS, allowed};
        case 2:
            if (missing.size() >= 2)
                return {allowed | PPB_KIND_BIT(missing[0]), allowed | PPB_KIND_BIT(missing[1])};
            break;
        default:
            break;
    }
    return {allowed, PPB_ALL_KINDS};
}

// A linear source without the bits (and with garbage values) of the kinds not allowed: no plan
// needs them, so the solver may evaluate inline or go through predict_batch, with the same answer.
MemorySource without_unneeded_bits(MemorySource source, const ppb_linear_parameters& truth,
                                   std::uint32_t allowed) {
    ppb_linear_parameters c = truth;
    for (std::uint32_t k : pt::kinds_of(PPB_ALL_KINDS & ~allowed)) {
        c.identified &= ~PPB_PARAM_ACTIVATION(k);
        c.activation_mb[k] += 1e5;
    }
    source.linear = c;
    return source;
}

struct Stats {
    std::size_t coefficient_sets = 0;
    std::size_t instances = 0;  // (problem, limit) pairs
    std::size_t feasible = 0;
    std::size_t infeasible = 0;
    std::size_t binding = 0;             // optimum worse than without a limit
    std::size_t recompute_stage01 = 0;   // the oracle's plan recomputes on stages 0 and 1
    std::size_t recompute_forced01 = 0;  // ... and only because of the limit
    std::size_t with_margin = 0;
    std::size_t missing_unneeded_bit = 0;  // extra solve() without bits of kinds not allowed
    std::size_t knife_edges = 0;
    std::size_t rule_binds = 0;  // the rule's optimum is slower than the unrestricted one
    std::array<std::size_t, pt::variant_count> variants{};
    std::uint64_t oracle_plans = 0;
    std::uint64_t batch_placements = 0;
    double oracle_seconds = 0.0;
    double solve_seconds = 0.0;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Whether a solve() must, may or must not go through predict_batch.
enum class Batch { forbidden, either, required };

struct Shape {
    std::uint32_t stages;
    std::array<std::uint32_t, 4> layers;
};

// One coefficient set of the sweep (drawn from a seed fixed by its shape), at every budget of
// budgets(): solve() through each memory path against the brute force.
void sweep_set(std::uint32_t stages, std::uint32_t layers, std::uint32_t m, std::uint32_t allowed,
               RecomputeRule rule, std::size_t seq, Stats& stats, pt::Findings& findings) {
    std::mt19937 rng(static_cast<std::uint32_t>(7919u * stages + 104729u * layers + 31u * m +
                                                1000003u * allowed));
    const auto variant = static_cast<pt::Variant>(seq % pt::variant_count);
    const bool margin = (seq / pt::variant_count) % 2 == 1;
    const auto [problem_kinds, model_kinds] = kind_masks(allowed, seq / 7);
    const pt::Coefficients c = pt::draw(rng, variant, allowed, layers, margin);
    ++stats.coefficient_sets;

    auto oracle_start = std::chrono::steady_clock::now();
    const Problem base = pt::make_problem(stages, m, problem_kinds, c, 1e12, rule);
    const pt::OptionTable table =
        pt::make_options(base, allowed, pt::canonical_memory(c.memory, base));
    // Every mix, to tell where the rule costs time (only when there is a rule).
    std::optional<pt::OptionTable> every_mix;
    if (rule != RecomputeRule::any) {
        const Problem free = pt::make_problem(stages, m, problem_kinds, c, 1e12);
        every_mix = pt::make_options(free, allowed, pt::canonical_memory(c.memory, free));
    }
    const pt::Optimum unconstrained = pt::brute_force(table, 1e12);
    const pt::LeastMemory least = pt::least_memory(table);
    stats.oracle_seconds += seconds_since(oracle_start);
    BOOST_TEST_REQUIRE(unconstrained.feasible);

    std::size_t instance = 0;
    for (const double budget : budgets(table, unconstrained, least, &stats.knife_edges)) {
        const Problem problem = pt::make_problem(stages, m, problem_kinds, c, budget, rule);
        oracle_start = std::chrono::steady_clock::now();
        const pt::Optimum expected = pt::brute_force(table, problem.budget_mb());
        if (every_mix && expected.feasible &&
            pt::brute_force(*every_mix, problem.budget_mb()).iteration_time <
                expected.iteration_time * (1 - 1e-12))
            ++stats.rule_binds;
        stats.oracle_seconds += seconds_since(oracle_start);
        stats.oracle_plans += expected.plans;

        ++stats.instances;
        ++stats.variants[static_cast<std::size_t>(variant)];
        stats.with_margin += margin ? 1 : 0;
        if (expected.feasible) {
            ++stats.feasible;
            if (expected.iteration_time > unconstrained.iteration_time * (1 + 1e-12))
                ++stats.binding;
            if (stages >= 2 && recomputes(expected.layers[0], problem, allowed) &&
                recomputes(expected.layers[1], problem, allowed)) {
                ++stats.recompute_stage01;
                if (!recomputes(unconstrained.layers[0], problem, allowed) ||
                    !recomputes(unconstrained.layers[1], problem, allowed))
                    ++stats.recompute_forced01;
            }
        } else {
            ++stats.infeasible;
        }

        const std::string what =
            pt::describe(problem, c.memory, model_kinds) +
            fmt::format(" [variant {}, set #{}]", pt::variant_name(variant), seq);
        const pt::Findings::Key key{layers, stages, std::popcount(allowed), m, seq};
        auto compare = [&](const char* path, const MemorySource& source, const pt::BatchLog& log,
                           Batch batch) {
            const auto solve_start = std::chrono::steady_clock::now();
            const Outcome outcome = run(problem, source);
            stats.solve_seconds += seconds_since(solve_start);
            stats.batch_placements += log.placements;
            std::string d = disagreement(outcome, expected, least, problem, allowed, c.memory);
            auto add = [&](const std::string& more) { d += (d.empty() ? "" : "; ") + more; };
            if (log.bad != 0) {
                add(fmt::format("{} malformed predict_batch requests, first: {}", log.bad,
                                log.first_bad));
            }
            if (batch == Batch::required && log.calls == 0)
                add("predict_batch never called");
            if (batch == Batch::forbidden && log.calls != 0)
                add(fmt::format("complete linear coefficients, yet predict_batch called {} times",
                                log.calls));
            findings.add(key, what,
                         d.empty()
                             ? std::vector<pt::Finding>{}
                             : std::vector<pt::Finding>{{fmt::format("wrong via {}", path), d}});
        };
        auto model = [&](const std::shared_ptr<pt::BatchLog>& log) {
            return pt::batch_source(c.memory, problem, model_kinds, log);
        };

        // Complete linear coefficients: evaluated inline.
        {
            auto log = std::make_shared<pt::BatchLog>();
            MemorySource linear = model(log);
            linear.linear = c.memory;
            compare("linear", linear, *log, Batch::forbidden);
        }
        // No coefficients: every candidate through predict_batch.
        {
            auto log = std::make_shared<pt::BatchLog>();
            compare("predict_batch", model(log), *log, Batch::required);
        }
        // Coefficients without the bits of kinds not allowed, on a sample.
        if ((seq + instance) % 3 == 0 && allowed != PPB_ALL_KINDS) {
            ++stats.missing_unneeded_bit;
            auto log = std::make_shared<pt::BatchLog>();
            compare("linear without bits of kinds not allowed",
                    without_unneeded_bits(model(log), c.memory, allowed), *log, Batch::either);
        }
        ++instance;
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partition_optimality)

// ---- The oracle itself, on cases counted by hand ---------------------------------------------

BOOST_AUTO_TEST_CASE(canonical_definitions_match_the_problem_statement) {
    Problem problem;
    problem.num_stages = 4;
    problem.micro_batches = 3;
    problem.time.body_layers = 9;
    problem.time.body_time = {1.0, 1.25, 1.5, 1.75, 2.5};
    problem.time.head_time = 0.5;
    problem.time.tail_time = 0.75;
    BOOST_TEST(problem.in_flight(0) == 3u);
    BOOST_TEST(problem.in_flight(1) == 3u);
    BOOST_TEST(problem.in_flight(2) == 2u);
    BOOST_TEST(problem.in_flight(3) == 1u);
    BOOST_TEST(problem.min_layers(0) == 0u);
    BOOST_TEST(problem.min_layers(1) == 1u);
    BOOST_TEST(problem.min_layers(2) == 1u);
    BOOST_TEST(problem.min_layers(3) == 0u);
    const KindCounts layers = {2, 0, 1, 0, 3};
    // 2 x 1 + 1 x 1.5 + 3 x 2.5 = 11, plus the head on stage 0, the tail on stage 3.
    BOOST_TEST(ppb::partition::stage_time(problem, 0, layers) == 11.5);
    BOOST_TEST(ppb::partition::stage_time(problem, 1, layers) == 11.0);
    BOOST_TEST(ppb::partition::stage_time(problem, 3, layers) == 11.75);
    const std::array<double, 3> times = {1.0, 3.0, 2.0};
    BOOST_TEST(ppb::partition::iteration_time(times, 4) == 15.0);  // 6 + 3 x 3
    BOOST_TEST(ppb::partition::iteration_time(times, 1) == 6.0);

    ppb_linear_parameters c{};
    c.const_mb = 1000;
    c.head_mb = 300;
    c.tail_mb = 200;
    c.per_layer_mb = 10;
    pt::set_activation(c, {100, 50, 40, 20, 1});
    // 1000 + 6 x 10 + (2 x 100 + 1 x 40 + 3 x 1) x f
    BOOST_TEST(ppb::partition::linear_stage_memory(c, problem, 0, layers) ==
               1000 + 300 + 60 + 243 * 3);
    BOOST_TEST(ppb::partition::linear_stage_memory(c, problem, 2, layers) == 1000 + 60 + 243 * 2);
    BOOST_TEST(ppb::partition::linear_stage_memory(c, problem, 3, layers) == 1000 + 200 + 60 + 243);
    problem.num_stages = 1;  // one stage holds head and tail
    BOOST_TEST(problem.in_flight(0) == 1u);
    BOOST_TEST(problem.min_layers(0) == 0u);
    BOOST_TEST(ppb::partition::stage_time(problem, 0, layers) == 12.25);
    BOOST_TEST(ppb::partition::linear_stage_memory(c, problem, 0, layers) ==
               1000 + 300 + 200 + 60 + 243);
}

// The independent equation of the predict_batch model and the canonical one agree.
BOOST_AUTO_TEST_CASE(placement_memory_matches_linear_stage_memory) {
    std::mt19937 rng(20240611u);
    for (int i = 0; i < 2000; ++i) {
        pt::Coefficients c =
            pt::draw(rng, static_cast<pt::Variant>(i % pt::variant_count), PPB_ALL_KINDS, 7, false);
        Problem problem =
            pt::make_problem(pt::int_in(rng, 1, 6), pt::int_in(rng, 1, 9), PPB_ALL_KINDS, c, 1e12);
        const std::uint32_t s = pt::int_in(rng, 0, problem.num_stages - 1);
        KindCounts layers{};
        for (auto& n : layers)
            n = pt::int_in(rng, 0, 5);
        ppb_chunk chunk{};
        std::copy(layers.begin(), layers.end(), chunk.layers);
        chunk.in_flight = std::min(problem.num_stages - s, problem.micro_batches);
        const ppb_placement placement{problem.num_stages, s, 1, &chunk};
        BOOST_TEST(pt::close(pt::placement_memory(c.memory, placement),
                             ppb::partition::linear_stage_memory(c.memory, problem, s, layers),
                             1e-12));
    }
}

BOOST_AUTO_TEST_CASE(brute_force_enumerates_every_plan) {
    pt::Coefficients c;
    c.time.body_layers = 7;
    c.time.body_time = {1, 2, 3, 4, 5};
    c.memory = pt::all_identified(c.memory);
    auto count = [&](std::uint32_t stages, std::uint32_t layers, std::uint32_t kinds) {
        c.time.body_layers = layers;
        const Problem problem = pt::make_problem(stages, 2, kinds, c, 1e12);
        return pt::brute_force(problem, kinds, pt::canonical_memory(c.memory, problem)).plans;
    };
    // C(7 + 4, 4) compositions of 7 over 5 kinds.
    BOOST_TEST(count(1, 7, PPB_ALL_KINDS) == 330u);
    // (0,2), (1,1), (2,0)
    BOOST_TEST(count(2, 2, PPB_KIND_BIT(PPB_KIND_NONE)) == 3u);
    // Stage 1 must hold the only layer.
    BOOST_TEST(count(3, 1, PPB_ALL_KINDS) == 5u);
    // 3 layers in 6 (stage, kind) slots, stage 1's two not both empty: C(8,5) - C(6,3) = 36.
    BOOST_TEST(count(3, 3, PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_FULL)) == 36u);
    // 7 layers in 20 slots, stages 1 and 2 non-empty: C(26,7) - 2 C(21,7) + C(16,7) = 436 680.
    BOOST_TEST(count(4, 7, PPB_ALL_KINDS) == 436680u);
}

BOOST_AUTO_TEST_CASE(brute_force_optima_counted_by_hand) {
    const std::uint32_t none = PPB_KIND_BIT(PPB_KIND_NONE);
    const std::uint32_t none_full = none | PPB_KIND_BIT(PPB_KIND_FULL);
    pt::Coefficients c;
    c.memory = pt::all_identified(c.memory);
    auto optimum = [&](std::uint32_t stages, std::uint32_t micro_batches, std::uint32_t kinds,
                       double budget) {
        const Problem problem = pt::make_problem(stages, micro_batches, kinds, c, budget);
        return pt::brute_force(problem, kinds, pt::canonical_memory(c.memory, problem));
    };

    // 2 stages, 2 layers, 2 micro-batches, 1 time unit a layer: (1,1) gives 2 + 1.
    c.time.body_layers = 2;
    c.time.body_time = {1, 0, 0, 0, 0};
    pt::Optimum o = optimum(2, 2, none, 1e12);
    BOOST_TEST(o.feasible);
    BOOST_TEST(o.iteration_time == 3.0);
    BOOST_TEST(o.layers[0][0] == 1u);

    // 3 stages, 3 layers, 8 micro-batches, head time 2: (0,1,2) or (0,2,1), 5 + 7 x 2.
    c.time.body_layers = 3;
    c.time.head_time = 2;
    o = optimum(3, 8, none, 1e12);
    BOOST_TEST(o.iteration_time == 19.0);
    BOOST_TEST(o.layers[0][0] == 0u);
    c.time.head_time = 0;

    // 1 stage, 2 layers: none (time 1, 10 MB) or full (time 1.5, 1 MB).
    c.time.body_layers = 2;
    c.time.body_time = {1, 0, 0, 0, 1.5};
    pt::set_activation(c.memory, {10, 0, 0, 0, 1});
    BOOST_TEST(optimum(1, 1, none_full, 25).iteration_time == 2.0);    // none + none: 20 MB
    BOOST_TEST(optimum(1, 1, none_full, 12).iteration_time == 2.5);    // none + full: 11 MB
    BOOST_TEST(optimum(1, 1, none_full, 10.5).iteration_time == 3.0);  // full + full: 2 MB
    BOOST_TEST(!optimum(1, 1, none_full, 1.5).feasible);
    {
        const Problem problem = pt::make_problem(1, 1, none_full, c, 1.5);
        const pt::LeastMemory least = pt::least_memory(
            pt::make_options(problem, none_full, pt::canonical_memory(c.memory, problem)));
        BOOST_TEST(least.max_stage_mb == 2.0);
        BOOST_TEST(least.bottleneck == std::vector<std::uint32_t>{0});
    }

    // 2 stages, 8 micro-batches: stage 0 holds 2 in flight (20 MB a none layer, 2 a full one),
    // stage 1 one (10 and 1). Budget 10: stage 0 full (time 2), stage 1 none (time 1): 3 + 7 x 2.
    c.time.body_time = {1, 0, 0, 0, 2};
    o = optimum(2, 8, none_full, 10);
    BOOST_TEST(o.iteration_time == 17.0);
    BOOST_TEST((o.layers[0] == KindCounts{0, 0, 0, 0, 1}));
    BOOST_TEST((o.layers[1] == KindCounts{1, 0, 0, 0, 0}));
    BOOST_TEST(optimum(2, 8, none_full, 1e12).iteration_time == 9.0);  // (1,1) none: 2 + 7
}

// ---- solve() against the brute force ---------------------------------------------------------

BOOST_AUTO_TEST_CASE(solve_matches_brute_force_on_every_small_shape) {
    const auto started = std::chrono::steady_clock::now();
    const std::array<Shape, 4> shapes = {Shape{1, {1, 2, 4, 7}}, Shape{2, {1, 2, 4, 7}},
                                         Shape{3, {1, 2, 4, 7}}, Shape{4, {2, 3, 5, 7}}};
    Stats stats;
    pt::Findings findings;
    std::size_t seq = 0;
    for (const Shape& shape : shapes) {
        for (const std::uint32_t layers : shape.layers) {
            for (const std::uint32_t m : {1u, 2u, 8u}) {
                for (std::uint32_t allowed = 1; allowed <= PPB_ALL_KINDS; ++allowed, ++seq) {
                    sweep_set(shape.stages, layers, m, allowed, RecomputeRule::any, seq, stats,
                              findings);
                }
            }
        }
    }
    findings.report("optimality sweep");
    BOOST_TEST_MESSAGE(fmt::format(
        "optimality sweep: {} coefficient sets, {} instances ({} feasible, {} infeasible, {} with "
        "a binding limit, {} recomputing on stages 0 and 1 ({} only because of the limit), {} "
        "with a margin; variants generic/tie/dominated/real/shuffled {}/{}/{}/{}/{}); {} also "
        "without the coefficient bits of kinds not allowed; {} knife-edge budgets "
        "skipped; oracle: {} feasible plans enumerated in {:.2f} s; solve(): {:.2f} s, {} "
        "placements through predict_batch; total {:.2f} s",
        stats.coefficient_sets, stats.instances, stats.feasible, stats.infeasible, stats.binding,
        stats.recompute_stage01, stats.recompute_forced01, stats.with_margin, stats.variants[0],
        stats.variants[1], stats.variants[2], stats.variants[3], stats.variants[4],
        stats.missing_unneeded_bit, stats.knife_edges, stats.oracle_plans, stats.oracle_seconds,
        stats.solve_seconds, stats.batch_placements, seconds_since(started)));
    // The sweep covers what it claims to.
    BOOST_TEST(stats.binding > stats.feasible / 4);
    BOOST_TEST(stats.infeasible > 0u);
    BOOST_TEST(stats.recompute_forced01 > 0u);
    BOOST_TEST(stats.with_margin > 0u);
    for (const std::size_t n : stats.variants)
        BOOST_TEST(n > 0u);
    BOOST_TEST(stats.missing_unneeded_bit > 0u);
    BOOST_TEST(stats.knife_edges < stats.instances / 100);
}

// Under MindFormers' rule the optimum is over the mixes MindFormers can build: the oracle keeps
// only the compositions some (recompute, select_recompute, select_comm_recompute) counts build
// when applied layer by layer. Every set of allowed kinds holding both 'select' and 'comm' (the
// others are not restricted by the rule), through each memory path.
BOOST_AUTO_TEST_CASE(solve_matches_brute_force_under_the_mindformers_rule) {
    const auto started = std::chrono::steady_clock::now();
    const std::array<Shape, 4> shapes = {Shape{1, {1, 2, 4, 7}}, Shape{2, {1, 2, 4, 7}},
                                         Shape{3, {1, 2, 4, 7}}, Shape{4, {2, 3, 5, 7}}};
    const std::uint32_t select_comm = PPB_KIND_BIT(PPB_KIND_SELECT) | PPB_KIND_BIT(PPB_KIND_COMM);
    Stats stats;
    pt::Findings findings;
    std::size_t seq = 0;
    for (const Shape& shape : shapes) {
        for (const std::uint32_t layers : shape.layers) {
            for (const std::uint32_t m : {1u, 2u, 8u}) {
                for (std::uint32_t allowed = 1; allowed <= PPB_ALL_KINDS; ++allowed, ++seq) {
                    if ((allowed & select_comm) != select_comm)
                        continue;
                    sweep_set(shape.stages, layers, m, allowed, RecomputeRule::mindformers, seq,
                              stats, findings);
                }
            }
        }
    }
    findings.report("optimality sweep under MindFormers' rule");
    BOOST_TEST_MESSAGE(fmt::format(
        "MindFormers' rule: {} coefficient sets, {} instances ({} feasible, {} infeasible, {} "
        "where the rule costs time, {} with a binding limit); oracle {:.2f} s, solve() {:.2f} s, "
        "total {:.2f} s",
        stats.coefficient_sets, stats.instances, stats.feasible, stats.infeasible, stats.rule_binds,
        stats.binding, stats.oracle_seconds, stats.solve_seconds, seconds_since(started)));
    BOOST_TEST(stats.rule_binds > 0u);
    BOOST_TEST(stats.binding > stats.feasible / 4);
    BOOST_TEST(stats.infeasible > 0u);
    for (const std::size_t n : stats.variants)
        BOOST_TEST(n > 0u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace optimality_tests
