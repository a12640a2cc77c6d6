// The oracle of the partitioner tests: an exhaustive search over every plan of a small problem,
// written independently of the solver, the instance helpers test_optimality.cpp and
// test_infeasible.cpp share (memory sources, plan checks, instance descriptions), and the
// in-flight states of a stage's executed order that the chunked, grouped-chunked and Megatron-rule
// oracles weigh memory over (executed_states), and what every suite's oracle enumerates with:
// the cuts of the layers into positions (for_each_cut), MindFormers' positional rule
// (mindformers_kind_at) and the one-setting rules' settings (oracle_settings, allowed_settings,
// setting_mix), each written from its definition, never from the code under test.
//
// The search is deliberately naive. For every stage s and every layer count n it lists every
// composition of n over the allowed kinds (with its time and memory, computed by the canonical
// stage_time and a memory function); then it walks every way of giving each stage a count
// (stages other than the first and last at least one layer, the last one taking the rest) and
// each stage one of its compositions, and keeps the plan of least iteration_time among those
// whose every stage fits the budget. Nothing is pruned except compositions over budget.
//
// Size: a problem of P stages, L layers and k allowed kinds has at most C(L + kP - 1, kP - 1)
// plans (all placements of L layers into kP (stage, kind) slots); for P = 4, L = 7, k = 5 that is
// at most 657 800, and 436 680 once stages 1 and 2 hold a layer each.
#ifndef PPB_TESTS_PARTITION_BRUTE_FORCE_HPP
#define PPB_TESTS_PARTITION_BRUTE_FORCE_HPP

#include <ppb/abi.h>
#include <ppb/partition/problem.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>

#include <fmt/format.h>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ppb::partition::test {

inline constexpr double infinity = std::numeric_limits<double>::infinity();

// Feasibility rule shared with the solver: a stage fits iff its memory is at most
// budget + 1e-9 * max(1, |budget|). The tests keep every plan's memory either exactly at a budget
// (up to rounding) or far from it (see knife_edge()), so they do not depend on the 1e-9.
inline bool fits_budget(double memory_mb, double budget_mb) {
    return memory_mb <= budget_mb + 1e-9 * std::max(1.0, std::abs(budget_mb));
}

// a == b to relative `tolerance` (absolute below 1).
inline bool close(double a, double b, double tolerance = 1e-9) {
    return std::abs(a - b) <= tolerance * std::max({1.0, std::abs(a), std::abs(b)});
}

// Written here from the problem statement, not taken from the code under test.
inline std::uint32_t oracle_in_flight(std::uint32_t stages, std::uint32_t stage,
                                      std::uint32_t micro_batches) {
    return std::min(stages - stage, micro_batches);
}
inline std::uint32_t oracle_min_layers(std::uint32_t stages, std::uint32_t stage) {
    return (stage == 0 || stage + 1 == stages) ? 0 : 1;
}

// Every in-flight vector stage s of `problem` passes through (micro-batches held per chunk), by
// executing its program order (ppb::stage_order) step by step: +1 on a forward's chunk, -1 on a
// backward's (a W's under the zero-bubble schedules, which hold the activations until W). A
// chunk holding none counts as none for every model, linear or probed (ppb/in_flight_profile.hpp,
// "A count of 0": the host takes a probed model's own slope there, and the tests' models are
// affine in each chunk's count wherever a count of 0 occurs). Each distinct vector once, in no
// particular order: the steady state passes through the same few vectors again and again, and
// the oracles weigh every mix of every stage against each (a stage's peak is their maximum,
// which repeats do not change; the repeats were three quarters of the chunked oracle's time
// under ASan). The suites' one copy of the rule the solver's in-flight profile is proved against.
inline const std::vector<std::vector<std::uint32_t>>& executed_states(const Problem& problem,
                                                                      std::uint32_t stage) {
    static std::map<std::tuple<int, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>,
                    std::vector<std::vector<std::uint32_t>>>
        cache;
    auto& states = cache[{static_cast<int>(problem.schedule), problem.num_stages, problem.chunks,
                          problem.micro_batches, stage}];
    if (states.empty()) {
        const ppb::Pass frees =
            ppb::splits_backward(problem.schedule) ? ppb::Pass::weight : ppb::Pass::backward;
        std::vector<std::uint32_t> held(problem.chunks, 0);
        for (const auto& step : ppb::stage_order(problem.schedule, problem.num_stages,
                                                 problem.chunks, problem.micro_batches, stage)) {
            if (step.pass == ppb::Pass::forward)
                ++held[step.chunk];
            else if (step.pass == frees)
                --held[step.chunk];
            else
                continue;
            states.push_back(held);
        }
        std::sort(states.begin(), states.end());
        states.erase(std::unique(states.begin(), states.end()), states.end());
    }
    return states;
}

// Memory of a placement by the linear model equation, written independently of
// linear_stage_memory (the predict_batch model of the tests computes with this).
inline double placement_memory(const ppb_linear_parameters& c, const ppb_placement& placement) {
    double m = c.const_mb;
    if (placement.stage == 0)
        m += c.head_mb;
    if (placement.stage + 1 == placement.num_stages)
        m += c.tail_mb;
    for (std::uint32_t chunk = 0; chunk < placement.num_chunks; ++chunk) {
        const ppb_chunk& ch = placement.chunks[chunk];
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            m += c.per_layer_mb * ch.layers[k];
            m += c.activation_mb[k] * ch.layers[k] * ch.in_flight;
        }
    }
    return m;
}

// Memory of stage `stage` holding `layers`, as the oracle is told it.
using StageMemory = std::function<double(std::uint32_t stage, const KindCounts& layers)>;

// The canonical linear memory of the problem's stages.
inline StageMemory canonical_memory(const ppb_linear_parameters& c, const Problem& problem) {
    return [c, problem](std::uint32_t stage, const KindCounts& layers) {
        return linear_stage_memory(c, problem, stage, layers);
    };
}

inline std::uint32_t allowed_kinds(const Problem& problem, const MemorySource& memory) {
    return problem.kinds & memory.kinds & PPB_ALL_KINDS;
}

// Every composition of n layers over the kinds in `allowed` (counts of other kinds 0).
template <typename Visit>
void for_each_composition(std::uint32_t n, std::uint32_t allowed, Visit&& visit) {
    KindCounts counts{};
    auto place = [&](auto& self, std::size_t kind, std::uint32_t left) -> void {
        if (kind == PPB_KIND_COUNT) {
            if (left == 0)
                visit(static_cast<const KindCounts&>(counts));
            return;
        }
        if ((allowed & PPB_KIND_BIT(kind)) == 0) {
            self(self, kind + 1, left);
            return;
        }
        for (std::uint32_t c = 0; c <= left; ++c) {
            counts[kind] = c;
            self(self, kind + 1, left - c);
        }
        counts[kind] = 0;
    };
    place(place, 0, n);
}

// What MindFormers builds from a stage's counts, applied layer by layer as its layer setting
// does: layer j < recompute is fully recomputed; otherwise it gets selective recompute when
// j < select and communication recompute when j < comm ('both' when both). Written from
// MindFormers' rule, not from the code under test.
inline std::size_t mindformers_kind_at(std::uint32_t j, std::uint32_t recompute,
                                       std::uint32_t select, std::uint32_t comm) {
    if (j < recompute)
        return PPB_KIND_FULL;
    if (j < select && j < comm)
        return PPB_KIND_BOTH;
    if (j < select)
        return PPB_KIND_SELECT;
    if (j < comm)
        return PPB_KIND_COMM;
    return PPB_KIND_NONE;
}

// The kinds of a stage of n layers, counted (mindformers_kind_at of each layer).
inline KindCounts mindformers_build(std::uint32_t n, std::uint32_t recompute, std::uint32_t select,
                                    std::uint32_t comm) {
    KindCounts built{};
    for (std::uint32_t j = 0; j < n; ++j)
        ++built[mindformers_kind_at(j, recompute, select, comm)];
    return built;
}

// Whether a stage may hold `mix` under `rule`: always under `any`; under `mindformers` when some
// counts (each 0 .. n) make MindFormers build exactly it, found by trying them all.
inline bool oracle_expressible(const KindCounts& mix, RecomputeRule rule) {
    if (rule == RecomputeRule::any)
        return true;
    std::uint32_t n = 0;
    for (const std::uint32_t c : mix)
        n += c;
    static std::vector<std::vector<KindCounts>> buildable;  // per n, sorted
    while (buildable.size() <= n) {
        const auto m = static_cast<std::uint32_t>(buildable.size());
        std::vector<KindCounts> all;
        for (std::uint32_t r = 0; r <= m; ++r) {
            for (std::uint32_t sel = 0; sel <= m; ++sel) {
                for (std::uint32_t com = 0; com <= m; ++com)
                    all.push_back(mindformers_build(m, r, sel, com));
            }
        }
        std::sort(all.begin(), all.end());
        all.erase(std::unique(all.begin(), all.end()), all.end());
        buildable.push_back(std::move(all));
    }
    return std::binary_search(buildable[n].begin(), buildable[n].end(), mix);
}

// One recompute setting for the whole model (Megatron-LM's and torchtitan's rules), as the oracles
// write it from Megatron-LM's definitions (megatron/core/transformer/transformer_block.py,
// NVIDIA/Megatron-LM 767a8a81dce870c23d284f1571fca1d5898d624d, _checkpointed_forward: the loop
// runs over a block's own layers, one block per chunk): the kind of the i-th layer of a chunk.
// none: 'none'; selective: 'select'; uniform: 'full'; block N: 'full' for the first N, then 'none'.
inline std::size_t setting_kind_at(const MegatronRecompute& setting, std::uint32_t i) {
    switch (setting.method) {
        case MegatronRecompute::Method::none:
            return PPB_KIND_NONE;
        case MegatronRecompute::Method::selective:
            return PPB_KIND_SELECT;
        case MegatronRecompute::Method::uniform:
            return PPB_KIND_FULL;
        case MegatronRecompute::Method::block:
            return i < setting.num_layers ? PPB_KIND_FULL : PPB_KIND_NONE;
    }
    return PPB_KIND_NONE;
}

// A chunk of n layers under `setting`: its kinds, layer by layer.
inline KindCounts setting_mix(const MegatronRecompute& setting, std::uint32_t n) {
    KindCounts out{};
    for (std::uint32_t i = 0; i < n; ++i)
        ++out[setting_kind_at(setting, i)];
    return out;
}

// Every setting of `rule` for L layers: none, selective, uniform and, under Megatron-LM's rule,
// block N for every N = 1 .. L (torchtitan's activation_checkpoint has no block).
inline std::vector<MegatronRecompute> oracle_settings(RecomputeRule rule, std::uint32_t L) {
    using M = MegatronRecompute::Method;
    std::vector<MegatronRecompute> out = {{M::none, 0}, {M::selective, 0}, {M::uniform, 0}};
    if (rule == RecomputeRule::megatron) {
        for (std::uint32_t n = 1; n <= L; ++n)
            out.push_back({M::block, n});
    }
    return out;
}

// The settings of oracle_settings(rule, L) whose every kind is in `allowed` (block N uses 'full'
// and 'none').
inline std::vector<MegatronRecompute> allowed_settings(RecomputeRule rule, std::uint32_t L,
                                                       std::uint32_t allowed) {
    std::vector<MegatronRecompute> out;
    for (const MegatronRecompute& setting : oracle_settings(rule, L)) {
        const KindCounts uses = setting_mix(setting, L + 1);
        bool ok = true;
        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind)
            ok = ok && (uses[kind] == 0 || (allowed & PPB_KIND_BIT(kind)) != 0);
        if (ok)
            out.push_back(setting);
    }
    return out;
}

// Calls visit(cut) for every cut of L layers in model order into Q positions: position q takes
// [cut[q], cut[q + 1]) (cut[0] = 0, cut[Q] = L), every position but the first and the last
// holding at least one layer (Problem::fewest_layers' rule, written here from the problem).
template <typename Visit>
void for_each_cut(std::uint32_t Q, std::uint32_t L, Visit&& visit) {
    std::vector<std::uint32_t> cut(Q + 1, 0);
    cut[Q] = L;
    if (Q == 1) {
        visit(static_cast<const std::vector<std::uint32_t>&>(cut));
        return;
    }
    const auto walk = [&](auto&& self, std::uint32_t q) -> void {
        if (q + 1 == Q) {
            visit(static_cast<const std::vector<std::uint32_t>&>(cut));
            return;
        }
        // Position q ends at cut[q + 1]; the positions after it but the last need one each.
        const std::uint32_t fewest = q == 0 ? 0 : 1;
        const std::uint32_t after = Q - 2 - q;
        for (std::uint32_t next = cut[q] + fewest; next + after <= L; ++next) {
            cut[q + 1] = next;
            self(self, q + 1);
        }
    };
    walk(walk, 0);
}

struct Option {
    KindCounts layers{};
    double time = 0.0;
    double memory_mb = 0.0;
};

// options[s][n]: every composition stage s may hold with n body layers (none when n is below the
// stage's minimum; only those problem.rule admits). Independent of the memory limit: build once,
// search at many limits.
struct OptionTable {
    std::uint32_t stages = 0;
    std::uint32_t layers = 0;
    std::uint32_t micro_batches = 0;
    std::vector<std::vector<std::vector<Option>>> options;
};

inline OptionTable make_options(const Problem& problem, std::uint32_t allowed,
                                const StageMemory& memory) {
    OptionTable table;
    table.stages = problem.num_stages;
    table.layers = problem.time.body_layers;
    table.micro_batches = problem.micro_batches;
    table.options.resize(table.stages);
    for (std::uint32_t s = 0; s < table.stages; ++s) {
        table.options[s].resize(table.layers + 1);
        for (std::uint32_t n = oracle_min_layers(table.stages, s); n <= table.layers; ++n) {
            for_each_composition(n, allowed, [&](const KindCounts& counts) {
                if (!oracle_expressible(counts, problem.rule))
                    return;
                table.options[s][n].push_back(
                    Option{counts, stage_time(problem, s, counts), memory(s, counts)});
            });
        }
    }
    return table;
}

// Calls visit(choice) for every plan whose stages all satisfy admit(option); choice[s] is stage
// s's option. Returns the number of plans visited.
template <typename Admit, typename Visit>
std::uint64_t for_each_plan(const OptionTable& table, Admit&& admit, Visit&& visit) {
    std::vector<const Option*> choice(table.stages, nullptr);
    std::uint64_t plans = 0;
    auto assign = [&](auto& self, std::uint32_t s, std::uint32_t left) -> void {
        if (s == table.stages) {
            ++plans;
            visit(static_cast<const std::vector<const Option*>&>(choice));
            return;
        }
        // The last stage takes every layer left; the others any count up to that.
        const std::uint32_t low = s + 1 == table.stages ? left : 0;
        for (std::uint32_t n = low; n <= left; ++n) {
            for (const Option& option : table.options[s][n]) {
                if (!admit(option))
                    continue;
                choice[s] = &option;
                self(self, s + 1, left - n);
            }
        }
    };
    if (table.stages > 0)
        assign(assign, 0, table.layers);
    return plans;
}

struct Optimum {
    bool feasible = false;
    double iteration_time = infinity;
    std::vector<KindCounts> layers;  // one optimal plan, per stage
    std::vector<double> times;
    std::vector<double> memory_mb;
    std::uint64_t plans = 0;  // feasible plans enumerated
};

// The least iteration time over every plan whose every stage fits `budget_mb`.
inline Optimum brute_force(const OptionTable& table, double budget_mb) {
    Optimum best;
    std::vector<double> times(table.stages);
    best.plans = for_each_plan(
        table, [&](const Option& o) { return fits_budget(o.memory_mb, budget_mb); },
        [&](const std::vector<const Option*>& choice) {
            for (std::uint32_t s = 0; s < table.stages; ++s)
                times[s] = choice[s]->time;
            const double t = iteration_time(times, table.micro_batches);
            if (!best.feasible || t < best.iteration_time) {
                best.feasible = true;
                best.iteration_time = t;
                best.layers.clear();
                best.memory_mb.clear();
                for (const Option* o : choice) {
                    best.layers.push_back(o->layers);
                    best.memory_mb.push_back(o->memory_mb);
                }
                best.times = times;
            }
        });
    return best;
}

inline Optimum brute_force(const Problem& problem, std::uint32_t allowed,
                           const StageMemory& memory) {
    return brute_force(make_options(problem, allowed, memory), problem.budget_mb());
}

struct LeastMemory {
    bool any_plan = false;           // some plan exists at all (enough layers for the stages)
    double max_stage_mb = infinity;  // min over plans of the plan's largest stage memory
    std::vector<std::uint32_t> bottleneck;  // stages that are largest in some such plan
    std::uint64_t plans = 0;
    // The smallest memory limit at which a plan exists.
    [[nodiscard]] double smallest_limit_mb(double margin_mb) const {
        return max_stage_mb + margin_mb;
    }
};

// The least, over every plan regardless of the limit, of its largest stage memory, and which
// stages attain it.
inline LeastMemory least_memory(const OptionTable& table) {
    LeastMemory least;
    const auto all = [](const Option&) { return true; };
    auto plan_max = [&](const std::vector<const Option*>& choice) {
        double m = -infinity;
        for (const Option* o : choice)
            m = std::max(m, o->memory_mb);
        return m;
    };
    least.plans = for_each_plan(table, all, [&](const std::vector<const Option*>& choice) {
        least.any_plan = true;
        least.max_stage_mb = std::min(least.max_stage_mb, plan_max(choice));
    });
    if (!least.any_plan)
        return least;
    std::vector<bool> seen(table.stages, false);
    for_each_plan(table, all, [&](const std::vector<const Option*>& choice) {
        if (!close(plan_max(choice), least.max_stage_mb, 1e-12))
            return;
        for (std::uint32_t s = 0; s < table.stages; ++s) {
            if (close(choice[s]->memory_mb, least.max_stage_mb, 1e-12))
                seen[s] = true;
        }
    });
    for (std::uint32_t s = 0; s < table.stages; ++s) {
        if (seen[s])
            least.bottleneck.push_back(s);
    }
    return least;
}

// True when some option's memory lies just above the budget, where the exact tolerance of the
// feasibility rule would decide: such budgets are not used (the tests must not depend on it).
inline bool knife_edge(const OptionTable& table, double budget_mb) {
    const double scale = std::max(1.0, std::abs(budget_mb));
    for (const auto& per_count : table.options) {
        for (const auto& options : per_count) {
            for (const Option& o : options) {
                const double above = o.memory_mb - budget_mb;
                if (above > 1e-11 * scale && above <= 1e-7 * scale)
                    return true;
            }
        }
    }
    return false;
}

// ---- Memory sources --------------------------------------------------------------------------

inline ppb_linear_parameters all_identified(ppb_linear_parameters c) {
    c.struct_size = sizeof(ppb_linear_parameters);
    c.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
    for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k)
        c.identified |= PPB_PARAM_ACTIVATION(k);
    return c;
}

inline void set_activation(ppb_linear_parameters& c,
                           const std::array<double, PPB_KIND_COUNT>& activation_mb) {
    std::copy(activation_mb.begin(), activation_mb.end(), c.activation_mb);
}

// What the solver asked the predict_batch model, and whether every request was well-formed.
struct BatchLog {
    std::uint64_t calls = 0;
    std::uint64_t placements = 0;
    std::uint64_t bad = 0;
    std::string first_bad;
};

// A memory model that predicts every placement with `truth` (the linear equation, evaluated by
// placement_memory) and checks each request against the problem: a 1F1B placement of this
// pipeline, one chunk, in-flight min(P - s, M), no more than L layers, only kinds the model
// predicts.
inline MemorySource batch_source(const ppb_linear_parameters& truth, const Problem& problem,
                                 std::uint32_t model_kinds, std::shared_ptr<BatchLog> log) {
    MemorySource source;
    source.kinds = model_kinds;
    const std::uint32_t p = problem.num_stages;
    const std::uint32_t m = problem.micro_batches;
    const std::uint32_t l = problem.time.body_layers;
    source.predict_batch = [truth, p, m, l, model_kinds,
                            log](std::span<const ppb_placement> placements) {
        ++log->calls;
        std::vector<double> out;
        out.reserve(placements.size());
        for (const ppb_placement& pl : placements) {
            ++log->placements;
            std::string problem_found;
            if (pl.num_stages != p || pl.stage >= p) {
                problem_found =
                    fmt::format("stage {} of {} in a {}-stage problem", pl.stage, pl.num_stages, p);
            } else if (pl.num_chunks != 1 || pl.chunks == nullptr) {
                problem_found = fmt::format("{} chunks", pl.num_chunks);
            } else {
                const ppb_chunk& ch = pl.chunks[0];
                std::uint64_t n = 0;
                for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
                    n += ch.layers[k];
                    if (ch.layers[k] != 0 && (model_kinds & PPB_KIND_BIT(k)) == 0)
                        problem_found = fmt::format("kind {} not predicted by the model", k);
                }
                if (n > l)
                    problem_found = fmt::format("{} layers of {}", n, l);
                if (ch.in_flight != oracle_in_flight(p, pl.stage, m))
                    problem_found = fmt::format("stage {} in-flight {} (1F1B: {})", pl.stage,
                                                ch.in_flight, oracle_in_flight(p, pl.stage, m));
            }
            if (!problem_found.empty()) {
                if (log->bad++ == 0)
                    log->first_bad = problem_found;
                out.push_back(0.0);
                continue;
            }
            out.push_back(placement_memory(truth, pl));
        }
        return out;
    };
    return source;
}

// ---- Random instances ------------------------------------------------------------------------
// Drawn from std::mt19937's raw output (its sequence is fixed by the standard), so every standard
// library draws the same instances.

inline std::uint32_t int_in(std::mt19937& rng, std::uint32_t low, std::uint32_t high) {
    return low + static_cast<std::uint32_t>(rng() % (high - low + 1));
}
inline double real_in(std::mt19937& rng, double low, double high) {
    return low + (high - low) * (static_cast<double>(rng()) / 4294967296.0);
}
// A multiple of 1/64 (exact in binary, so sums of them tie exactly).
inline double sixty_fourths(double x) {
    return std::round(x * 64.0) / 64.0;
}

inline std::vector<std::uint32_t> kinds_of(std::uint32_t mask) {
    std::vector<std::uint32_t> kinds;
    for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((mask & PPB_KIND_BIT(k)) != 0)
            kinds.push_back(k);
    }
    return kinds;
}

enum class Variant { generic, tie, dominated, real, shuffled };
inline constexpr std::size_t variant_count = 5;
inline const char* variant_name(Variant v) {
    switch (v) {
        case Variant::generic:
            return "generic";
        case Variant::tie:
            return "tie";
        case Variant::dominated:
            return "dominated";
        case Variant::real:
            return "real";
        case Variant::shuffled:
            return "shuffled";
    }
    return "?";
}

// Times and memory coefficients of one instance.
//   generic:   'none' fastest and heaviest, the others in the SAPP order of time with less
//              activation memory; integer MB, times in 1/64.
//   tie:       like generic, two allowed kinds with the same time (and, every other draw, the
//              same activation memory too).
//   dominated: like generic, one allowed kind slower AND heavier than another allowed kind.
//   real:      like generic with non-integer values everywhere.
//   shuffled:  times and activations drawn independently (no order), heavy head and tail.
struct Coefficients {
    TimeModel time;
    ppb_linear_parameters memory{};
    double margin_mb = 0.0;
};

inline Coefficients draw(std::mt19937& rng, Variant variant, std::uint32_t allowed,
                         std::uint32_t layers, bool with_margin) {
    Coefficients c;
    c.time.body_name = "body";
    c.time.body_layers = layers;
    const bool exact = variant != Variant::real;
    auto mb = [&](double low, double high) {
        return exact ? static_cast<double>(int_in(rng, static_cast<std::uint32_t>(low),
                                                  static_cast<std::uint32_t>(high)))
                     : real_in(rng, low, high);
    };
    auto tm = [&](double x) { return exact ? sixty_fourths(x) : x; };

    const double t0 = tm(real_in(rng, 1.0, 4.0));
    auto& bt = c.time.body_time;
    auto& act = c.memory.activation_mb;
    if (variant == Variant::shuffled) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            bt[k] = tm(real_in(rng, 1.0, 6.0));
            act[k] = mb(5, 1200);
        }
    } else {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            bt[k] = tm(t0 * (1.0 + default_backward_coefficients[k] * real_in(rng, 0.5, 1.5)));
        act[0] = mb(400, 1000);
        act[1] =
            exact ? std::round(act[0] * real_in(rng, 0.1, 0.4)) : act[0] * real_in(rng, 0.1, 0.4);
        act[2] =
            exact ? std::round(act[0] * real_in(rng, 0.5, 0.9)) : act[0] * real_in(rng, 0.5, 0.9);
        act[3] = exact ? std::round(std::min(act[1], act[2]) * real_in(rng, 0.3, 0.9))
                       : std::min(act[1], act[2]) * real_in(rng, 0.3, 0.9);
        act[4] = mb(5, 40);
    }
    const std::vector<std::uint32_t> kinds = kinds_of(allowed);
    if (kinds.size() >= 2 && (variant == Variant::tie || variant == Variant::dominated)) {
        const std::uint32_t a = kinds[rng() % kinds.size()];
        std::uint32_t b = kinds[rng() % kinds.size()];
        while (b == a)
            b = kinds[rng() % kinds.size()];
        if (variant == Variant::tie) {
            bt[a] = bt[b];
            if (rng() % 2 == 0)
                act[a] = act[b];
        } else {
            bt[a] = bt[b] + tm(real_in(rng, 0.05, 1.0));
            act[a] = act[b] + mb(1, 300);
        }
    }
    const bool heavy = variant == Variant::shuffled;
    c.time.head_time = tm(real_in(rng, 0.0, heavy ? 8.0 : 3.0) * t0);
    c.time.tail_time = tm(real_in(rng, 0.0, heavy ? 8.0 : 3.0) * t0);
    c.memory.const_mb = mb(1000, 4000);
    c.memory.head_mb = mb(1000, heavy ? 20000 : 8000);
    c.memory.tail_mb = mb(1000, heavy ? 20000 : 8000);
    c.memory.per_layer_mb = mb(500, 2000);
    c.memory = all_identified(c.memory);
    c.margin_mb = with_margin ? mb(100, 4000) : 0.0;
    return c;
}

inline Problem make_problem(std::uint32_t stages, std::uint32_t micro_batches, std::uint32_t kinds,
                            const Coefficients& c, double budget_mb,
                            RecomputeRule rule = RecomputeRule::any) {
    Problem problem;
    problem.rule = rule;
    problem.num_stages = stages;
    problem.micro_batches = micro_batches;
    problem.time = c.time;
    problem.kinds = kinds;
    problem.memory_margin_mb = c.margin_mb;
    problem.memory_limit_mb = budget_mb + c.margin_mb;
    return problem;
}

// ---- Describing instances and checking plans -------------------------------------------------

inline std::string kinds_text(std::uint32_t mask) {
    static constexpr std::array<const char*, PPB_KIND_COUNT> names = {"none", "select", "comm",
                                                                      "both", "full"};
    std::string text = fmt::format("0x{:02x}{{", mask);
    bool first = true;
    for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((mask & PPB_KIND_BIT(k)) != 0) {
            text += fmt::format("{}{}", first ? "" : ",", names[k]);
            first = false;
        }
    }
    return text + "}";
}

inline std::string counts_text(const KindCounts& c) {
    return fmt::format("[{},{},{},{},{}]", c[0], c[1], c[2], c[3], c[4]);
}

// Every number of an instance, at full precision, to reproduce it.
inline std::string describe(const Problem& problem, const ppb_linear_parameters& c,
                            std::uint32_t model_kinds) {
    const auto& t = problem.time;
    return fmt::format(
        "P={} L={} M={} memory_limit_mb={:.17g} memory_margin_mb={:.17g} (budget {:.17g}) "
        "problem.kinds={} rule={} memory.kinds={} "
        "body_time=[{:.17g},{:.17g},{:.17g},{:.17g},{:.17g}] "
        "head_time={:.17g} tail_time={:.17g} const_mb={:.17g} head_mb={:.17g} tail_mb={:.17g} "
        "per_layer_mb={:.17g} activation_mb=[{:.17g},{:.17g},{:.17g},{:.17g},{:.17g}]",
        problem.num_stages, t.body_layers, problem.micro_batches, problem.memory_limit_mb,
        problem.memory_margin_mb, problem.budget_mb(), kinds_text(problem.kinds),
        problem.rule == RecomputeRule::any ? "any" : "mindformers", kinds_text(model_kinds),
        t.body_time[0], t.body_time[1], t.body_time[2], t.body_time[3], t.body_time[4], t.head_time,
        t.tail_time, c.const_mb, c.head_mb, c.tail_mb, c.per_layer_mb, c.activation_mb[0],
        c.activation_mb[1], c.activation_mb[2], c.activation_mb[3], c.activation_mb[4]);
}

inline std::string describe(const Optimum& o) {
    if (!o.feasible)
        return "infeasible";
    std::string text = fmt::format("iteration_time {:.17g}, stages", o.iteration_time);
    for (std::size_t s = 0; s < o.layers.size(); ++s) {
        text += fmt::format(" {}:{} t={:.17g} mem={:.17g}", s, counts_text(o.layers[s]), o.times[s],
                            o.memory_mb[s]);
    }
    return text;
}

inline std::string describe(const Plan& plan) {
    std::string text = fmt::format("iteration_time {:.17g}, stages", plan.iteration_time);
    for (const StagePlan& sp : plan.stages) {
        text += fmt::format(" {}:{} f={} t={:.17g} mem={:.17g}", sp.stage, counts_text(sp.layers),
                            sp.in_flight, sp.time, sp.memory_mb);
    }
    return text;
}

// Everything wrong with `plan` as an answer to `problem` (empty when nothing is): recomputed
// with the canonical stage_time, iteration_time and linear_stage_memory.
inline std::string plan_defects(const Plan& plan, const Problem& problem, std::uint32_t allowed,
                                const ppb_linear_parameters& c) {
    std::string defects;
    auto defect = [&](const std::string& d) { defects += (defects.empty() ? "" : "; ") + d; };
    const std::uint32_t p = problem.num_stages;
    if (plan.stages.size() != p) {
        defect(fmt::format("{} stages instead of {}", plan.stages.size(), p));
        return defects;
    }
    std::uint64_t total = 0;
    std::vector<double> times;
    for (std::uint32_t s = 0; s < p; ++s) {
        const StagePlan& sp = plan.stages[s];
        std::uint64_t n = 0;
        for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
            n += sp.layers[k];
            if (sp.layers[k] != 0 && (allowed & PPB_KIND_BIT(k)) == 0)
                defect(fmt::format("stage {} uses kind {}, not allowed", s, k));
        }
        total += n;
        if (!oracle_expressible(sp.layers, problem.rule))
            defect(fmt::format("stage {} mix {} cannot be built by MindFormers", s,
                               counts_text(sp.layers)));
        if (sp.stage != s)
            defect(fmt::format("stages[{}].stage is {}", s, sp.stage));
        if (sp.total_layers() != n)
            defect(fmt::format("stage {} total_layers() {} != {}", s, sp.total_layers(), n));
        if (n < oracle_min_layers(p, s))
            defect(fmt::format("stage {} holds {} layers, fewer than its minimum", s, n));
        if (sp.in_flight != oracle_in_flight(p, s, problem.micro_batches))
            defect(fmt::format("stage {} in_flight {} != {}", s, sp.in_flight,
                               oracle_in_flight(p, s, problem.micro_batches)));
        const double memory = linear_stage_memory(c, problem, s, sp.layers);
        if (!fits_budget(memory, problem.budget_mb()))
            defect(fmt::format("stage {} memory {:.17g} over budget {:.17g}", s, memory,
                               problem.budget_mb()));
        if (!close(sp.memory_mb, memory))
            defect(fmt::format("stage {} memory_mb {:.17g} != {:.17g}", s, sp.memory_mb, memory));
        const double t = stage_time(problem, s, sp.layers);
        if (!close(sp.time, t))
            defect(fmt::format("stage {} time {:.17g} != {:.17g}", s, sp.time, t));
        times.push_back(t);
    }
    if (total != problem.time.body_layers)
        defect(fmt::format("{} layers placed, not {}", total, problem.time.body_layers));
    const double it = iteration_time(times, problem.micro_batches);
    if (!close(plan.iteration_time, it))
        defect(fmt::format("plan.iteration_time {:.17g} != {:.17g} from its stages",
                           plan.iteration_time, it));
    return defects;
}

// ---- Collecting the findings of a sweep -------------------------------------------------------

// One thing wrong with one solve() result: its kind (to count) and the details.
struct Finding {
    std::string category;
    std::string detail;
};

// The findings of a sweep, reported at the end in one assertion: how many of each kind, and for
// each kind the smallest instance (fewest layers, then stages, kinds, micro-batches) in full.
class Findings {
  public:
    // layers, stages, number of allowed kinds, micro-batches, sequence number
    using Key = std::tuple<std::uint32_t, std::uint32_t, int, std::uint32_t, std::size_t>;

    void add(const Key& key, const std::string& instance, const std::vector<Finding>& found) {
        ++checked_;
        if (!found.empty())
            ++failed_;
        for (const Finding& f : found)
            entries_.push_back({key, f.category, fmt::format("{}\n    {}", instance, f.detail)});
    }

    void report(const std::string& sweep) {
        BOOST_TEST_MESSAGE(sweep << ": " << checked_ << " results checked");
        std::stable_sort(entries_.begin(), entries_.end(),
                         [](const Entry& a, const Entry& b) { return a.key < b.key; });
        std::vector<std::string> categories;
        std::string text;
        for (const Entry& e : entries_) {
            if (std::find(categories.begin(), categories.end(), e.category) != categories.end())
                continue;
            categories.push_back(e.category);
            const auto n = std::count_if(entries_.begin(), entries_.end(),
                                         [&](const Entry& o) { return o.category == e.category; });
            text += fmt::format("\n  {} x {}; smallest instance:\n    {}", n, e.category, e.text);
        }
        BOOST_TEST(entries_.empty(), sweep << ": " << failed_ << " of " << checked_
                                           << " results checked are wrong:" << text);
    }

  private:
    struct Entry {
        Key key;
        std::string category;
        std::string text;
    };
    std::size_t checked_ = 0;
    std::size_t failed_ = 0;
    std::vector<Entry> entries_;
};

}  // namespace ppb::partition::test

#endif  // PPB_TESTS_PARTITION_BRUTE_FORCE_HPP
