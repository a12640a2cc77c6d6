// Models without coefficients that are not linear: solve() probes each stage and, where the model
// is affine in the layer counts there, searches it as a linear one; where it is not, it falls back
// to predicting the mixes (each built from a smaller one that fits). Both must find exactly the
// brute force's optimum (brute_force.hpp) on every small shape, at limits that bind.
#include "brute_force.hpp"

#include <ppb/abi.h>
#include <ppb/discovery.hpp>
#include <ppb/errors.hpp>
#include <ppb/loader.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/partition/problem.hpp>

#include <fmt/format.h>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <span>
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
namespace probed_tests {

namespace {

// Memory of a stage from its in-flight count f, whether it holds the head or the tail, and its
// layers.
using ModelMemory = std::function<double(std::uint32_t stages, std::uint32_t stage, double f,
                                         const KindCounts& layers)>;

// Affine in the counts at each stage, not linear: the head and tail grow with sqrt(f) and f^2,
// and a layer's activations with f^1.5 (as the analytic model's terms depend on the in-flight
// count).
ModelMemory affine_not_linear(const ppb_linear_parameters& c) {
    return [c](std::uint32_t stages, std::uint32_t stage, double f, const KindCounts& layers) {
        double m = c.const_mb;
        if (stage == 0)
            m += c.head_mb + 37.0 * std::sqrt(f);
        if (stage + 1 == stages)
            m += c.tail_mb + 5.0 * f * f;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            m += layers[k] * (c.per_layer_mb + c.activation_mb[k] * std::pow(f, 1.5) / 2.0);
        return m;
    };
}

// Not affine: a term in the square of the layer count (as buffers shared by the layers would
// grow), and one coupling 'none' and 'full' layers; memory still grows with every count.
ModelMemory not_affine(const ppb_linear_parameters& c) {
    return [c](std::uint32_t stages, std::uint32_t stage, double f, const KindCounts& layers) {
        double m = c.const_mb;
        if (stage == 0)
            m += c.head_mb;
        if (stage + 1 == stages)
            m += c.tail_mb;
        double n = 0.0;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            m += layers[k] * (c.per_layer_mb + c.activation_mb[k] * f);
            n += layers[k];
        }
        return m + 61.0 * n * n + 13.0 * layers[PPB_KIND_NONE] * layers[PPB_KIND_FULL];
    };
}

struct Counts {
    std::size_t instances = 0;
    std::size_t feasible = 0;
    std::size_t binding = 0;
    std::size_t infeasible = 0;
    std::size_t skipped = 0;  // coefficient sets where a layer frees memory (not monotone)
    std::size_t placements = 0;
};

// Every distinct stage memory of the options, thinned to a few budgets, and a generous one.
std::vector<double> budgets_of(const pt::OptionTable& table) {
    std::vector<double> memories;
    for (const auto& stage : table.options) {
        for (const auto& options : stage) {
            for (const pt::Option& o : options)
                memories.push_back(o.memory_mb);
        }
    }
    std::sort(memories.begin(), memories.end());
    memories.erase(std::unique(memories.begin(), memories.end()), memories.end());
    std::vector<double> out;
    const std::size_t step = std::max<std::size_t>(1, memories.size() / 7);
    for (std::size_t i = 0; i < memories.size(); i += step)
        out.push_back(memories[i]);
    out.push_back(1e12);
    return out;
}

// solve() against the brute force for one model over every budget of budgets_of(); returns the
// disagreements.
std::string check(const Problem& base, std::uint32_t allowed, const ModelMemory& model,
                  Counts& counts, const std::string& name) {
    const std::uint32_t p = base.num_stages;
    const pt::StageMemory stage_memory = [&](std::uint32_t s, const KindCounts& layers) {
        return model(p, s, base.in_flight(s), layers);
    };
    const pt::OptionTable table = pt::make_options(base, allowed, stage_memory);
    const pt::Optimum unconstrained = pt::brute_force(table, 1e12);
    auto placements = std::make_shared<std::size_t>(0);
    MemorySource source;
    source.kinds = allowed;
    source.predict_batch = [model, placements](std::span<const ppb_placement> batch) {
        std::vector<double> out;
        for (const ppb_placement& placement : batch) {
            KindCounts layers{};
            std::copy(placement.chunks[0].layers, placement.chunks[0].layers + PPB_KIND_COUNT,
                      layers.begin());
            out.push_back(model(placement.num_stages, placement.stage,
                                placement.chunks[0].in_flight, layers));
        }
        *placements += batch.size();
        return out;
    };
    std::string wrong;
    for (const double budget : budgets_of(table)) {
        if (pt::knife_edge(table, budget))
            continue;
        Problem problem = base;
        problem.memory_limit_mb = budget + problem.memory_margin_mb;
        const pt::Optimum expected = pt::brute_force(table, problem.budget_mb());
        ++counts.instances;
        std::string d;
        try {
            const Plan plan = ppb::partition::solve(problem, source);
            if (!expected.feasible) {
                d = "a plan where brute force finds none: " + pt::describe(plan);
            } else if (!pt::close(plan.iteration_time, expected.iteration_time)) {
                d = fmt::format(
                    "iteration time {:.17g}, brute force {:.17g}\n  solve: {}\n  "
                    "brute force: {}",
                    plan.iteration_time, expected.iteration_time, pt::describe(plan),
                    pt::describe(expected));
            }
            std::uint32_t held = 0;
            for (const auto& stage : plan.stages) {
                held += stage.total_layers();
                const double m = stage_memory(stage.stage, stage.layers);
                if (!pt::close(stage.memory_mb, m) || !pt::fits_budget(m, problem.budget_mb()))
                    d += fmt::format("; stage {} memory {} (the model: {})", stage.stage,
                                     stage.memory_mb, m);
                if (!pt::oracle_expressible(stage.layers, problem.rule))
                    d += fmt::format("; stage {} holds a mix the rule forbids", stage.stage);
                for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                    if (stage.layers[k] != 0 && (allowed & PPB_KIND_BIT(k)) == 0)
                        d += fmt::format("; stage {} uses a kind not allowed", stage.stage);
                }
            }
            if (held != problem.time.body_layers)
                d += fmt::format("; {} layers placed", held);
        } catch (const Infeasible&) {
            if (expected.feasible)
                d = "Infeasible where brute force finds " + pt::describe(expected);
        } catch (const std::exception& e) {
            d = std::string("threw ") + e.what();
        }
        if (expected.feasible) {
            ++counts.feasible;
            if (expected.iteration_time > unconstrained.iteration_time * (1 + 1e-12))
                ++counts.binding;
        } else {
            ++counts.infeasible;
        }
        if (!d.empty() && wrong.size() < 4000) {
            wrong += fmt::format("\n{} P={} L={} M={} kinds={} rule={} budget {:.17g}: {}", name, p,
                                 problem.time.body_layers, problem.micro_batches, allowed,
                                 problem.rule == RecomputeRule::any ? "any" : "mindformers",
                                 problem.budget_mb(), d);
        }
    }
    counts.placements += *placements;
    return wrong;
}

void sweep(RecomputeRule rule, Counts& affine, Counts& fallback, std::string& wrong) {
    const struct {
        std::uint32_t stages;
        std::vector<std::uint32_t> layers;
    } shapes[] = {{1, {1, 3, 5}}, {2, {1, 3, 6}}, {3, {1, 4, 6}}, {4, {2, 5}}};
    std::size_t seq = 0;
    for (const auto& shape : shapes) {
        for (const std::uint32_t layers : shape.layers) {
            for (const std::uint32_t m : {1u, 2u, 8u}) {
                // Every third set of kinds (all of them on small shapes), and all five.
                for (std::uint32_t allowed = 1; allowed <= PPB_ALL_KINDS; ++allowed, ++seq) {
                    if (allowed != PPB_ALL_KINDS && layers > 3 && seq % 3 != 0)
                        continue;
                    std::mt19937 rng(static_cast<std::uint32_t>(
                        1000003u * allowed + 7919u * layers + 104729u * shape.stages + m));
                    const auto variant = static_cast<pt::Variant>(seq % pt::variant_count);
                    const pt::Coefficients c =
                        pt::draw(rng, variant, allowed, layers, seq % 2 == 1);
                    const Problem problem =
                        pt::make_problem(shape.stages, m, allowed, c, 1e12, rule);
                    wrong += check(problem, allowed, affine_not_linear(c.memory), affine,
                                   "affine per stage");
                    bool monotone = true;
                    for (std::uint32_t s = 0; s < shape.stages; ++s) {
                        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                            monotone =
                                monotone && c.memory.per_layer_mb + c.memory.activation_mb[k] *
                                                                        problem.in_flight(s) >=
                                                0.0;
                        }
                    }
                    if (!monotone) {
                        ++fallback.skipped;
                        continue;
                    }
                    wrong += check(problem, allowed, not_affine(c.memory), fallback, "not affine");
                }
            }
        }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partition_probed)

BOOST_AUTO_TEST_CASE(probed_and_enumerated_models_match_brute_force) {
    for (const RecomputeRule rule : {RecomputeRule::any, RecomputeRule::mindformers}) {
        Counts affine;
        Counts fallback;
        std::string wrong;
        sweep(rule, affine, fallback, wrong);
        BOOST_TEST_MESSAGE(fmt::format(
            "rule {}: affine per stage {} instances ({} feasible, {} binding, {} infeasible, {} "
            "placements predicted); not affine {} instances ({} feasible, {} binding, {} "
            "infeasible, {} placements predicted, {} sets skipped)",
            rule == RecomputeRule::any ? "any" : "mindformers", affine.instances, affine.feasible,
            affine.binding, affine.infeasible, affine.placements, fallback.instances,
            fallback.feasible, fallback.binding, fallback.infeasible, fallback.placements,
            fallback.skipped));
        BOOST_TEST(wrong.empty(), wrong);
        // The sweep covers what it claims to.
        for (const Counts* c : {&affine, &fallback}) {
            BOOST_TEST(c->binding > c->feasible / 8);
            BOOST_TEST(c->infeasible > 0u);
        }
    }
}

// The analytic plugin itself, loaded from disk: it has no coefficients, so the partitioner probes
// it stage by stage and plans its affine stages with the Pareto search. Its plans must be the
// brute force's optimum over its own predictions, on every small shape, both rules, every budget.
BOOST_AUTO_TEST_CASE(the_analytic_plugin_is_planned_exactly) {
    const std::string shape = R"({"hidden_size": 256, "num_attention_heads": 8,
        "num_kv_heads": 4, "ffn_hidden_size": 704, "num_layers": 6, "seq_length": 512,
        "micro_batch_size": 2, "vocab_size": 4096, "tensor_parallel": 2,
        "sequence_parallel": true, "data_parallel": 4, "distributed_optimizer": true,
        "constant_mb": 100})";
    const std::filesystem::path plugin =
        std::filesystem::path(PPB_BUILD_PLUGIN_DIR) / "ppb-analytic-1.0.0.so";
    const ppb::MemoryModel model = ppb::open_model(ppb::inspect_plugin_file(plugin), shape);
    BOOST_TEST_REQUIRE(!model.parameters().has_value());  // probed, not read from coefficients
    const ModelMemory analytic = [&model](std::uint32_t stages, std::uint32_t stage, double f,
                                          const KindCounts& layers) {
        ppb_chunk chunk{};
        std::copy(layers.begin(), layers.end(), chunk.layers);
        chunk.in_flight = static_cast<std::uint32_t>(f);
        const ppb_placement placement{stages, stage, 1, &chunk};
        return model.predict(placement);
    };
    for (const RecomputeRule rule : {RecomputeRule::any, RecomputeRule::mindformers}) {
        Counts counts;
        std::string wrong;
        std::size_t seq = 0;
        for (const std::uint32_t stages : {1u, 2u, 3u, 4u}) {
            for (const std::uint32_t layers : {2u, 4u, 6u}) {
                if (layers + 2 < stages)
                    continue;
                for (const std::uint32_t m : {1u, 3u, 8u}) {
                    for (const std::uint32_t allowed :
                         {PPB_ALL_KINDS, 0x11u, 0x13u, 0x0Fu, 0x1Au}) {
                        std::mt19937 rng(static_cast<std::uint32_t>(
                            7919u * layers + 104729u * stages + m + allowed));
                        const pt::Coefficients c =
                            pt::draw(rng, static_cast<pt::Variant>(seq++ % pt::variant_count),
                                     allowed, layers, false);
                        const Problem problem = pt::make_problem(stages, m, allowed, c, 1e12, rule);
                        wrong += check(problem, allowed, analytic, counts, "analytic plugin");
                    }
                }
            }
        }
        BOOST_TEST_MESSAGE(fmt::format(
            "analytic plugin, rule {}: {} instances ({} feasible, {} binding, {} infeasible), {} "
            "placements predicted",
            rule == RecomputeRule::any ? "any" : "mindformers", counts.instances, counts.feasible,
            counts.binding, counts.infeasible, counts.placements));
        BOOST_TEST(wrong.empty(), wrong);
        BOOST_TEST(counts.binding > 50u);
        BOOST_TEST(counts.infeasible > 10u);
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace probed_tests
