#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace ppb::partition::detail {
namespace {

// ---- affine stages: linear models, and other models probed --------------------------------

struct Point {
    double time;
    double memory;
    KindCounts layers;
};

// A stage whose memory is affine in its layer counts: base + sum_k unit[k] x n_k. `exact` is the
// memory the plan reports for a mix (the coefficients' own sum for a linear model, the affine sum
// for a probed one, whose chosen mixes are then predicted by the model).
struct AffineMemory {
    double base = 0.0;
    std::array<double, PPB_KIND_COUNT> unit{};
    std::function<double(const KindCounts&)> exact;

    [[nodiscard]] double of(const KindCounts& layers) const {
        if (exact)
            return exact(layers);
        double m = base;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            m += unit[k] * layers[k];
        return m;
    }
};

AffineMemory linear_memory(const Problem& problem, const ppb_linear_parameters& c,
                           std::uint32_t stage) {
    const double f = problem.in_flight(stage);
    AffineMemory memory;
    memory.base = linear_stage_memory(c, problem, stage, {});
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        memory.unit[k] = c.per_layer_mb + c.activation_mb[k] * f;
    memory.exact = [&problem, &c, stage](const KindCounts& layers) {
        return linear_stage_memory(c, problem, stage, layers);
    };
    return memory;
}

std::vector<double> predict_mixes(const Problem& problem, const MemorySource& memory,
                                  std::uint32_t stage, const std::vector<KindCounts>& mixes) {
    std::vector<ppb_chunk> chunks(mixes.size(), ppb_chunk{});
    std::vector<ppb_placement> placements;
    placements.reserve(mixes.size());
    for (std::size_t i = 0; i < mixes.size(); ++i) {
        std::copy(mixes[i].begin(), mixes[i].end(), chunks[i].layers);
        chunks[i].in_flight = problem.in_flight(stage);
        placements.push_back(ppb_placement{problem.num_stages, stage, 1, &chunks[i]});
    }
    return memory.predict_batch(placements);
}

// A model without coefficients, probed at one stage as the grouped solver probes its stages: no
// layer, one and two layers of each kind, and one layer of every kind at once. When the model is
// affine there (to affine_agrees' tolerance), its base and units; otherwise nullopt.
std::optional<AffineMemory> probed_memory(const Problem& problem, const MemorySource& memory,
                                          std::uint32_t stage,
                                          const std::vector<std::size_t>& kinds) {
    const std::uint32_t layers = problem.time.body_layers;
    const std::uint32_t twice = std::min<std::uint32_t>(2, layers);
    std::vector<KindCounts> probes = {KindCounts{}};
    KindCounts mix{};
    std::uint32_t left = layers;
    for (const std::size_t k : kinds) {
        KindCounts one{};
        one[k] = std::min<std::uint32_t>(1, layers);
        probes.push_back(one);
        one[k] = twice;
        probes.push_back(one);
        if (left > 0) {
            mix[k] = 1;
            --left;
        }
    }
    probes.push_back(mix);
    const std::vector<double> predicted = predict_mixes(problem, memory, stage, probes);
    if (!std::all_of(predicted.begin(), predicted.end(), [](double m) { return std::isfinite(m); }))
        return std::nullopt;
    if (layers == 0)
        return std::nullopt;
    AffineMemory affine;
    affine.base = predicted[0];
    for (std::size_t i = 0; i < kinds.size(); ++i) {
        affine.unit[kinds[i]] = predicted[1 + 2 * i] - affine.base;
        if (!affine_agrees(affine.of(probes[2 + 2 * i]), predicted[2 + 2 * i]))
            return std::nullopt;
    }
    if (!affine_agrees(affine.of(mix), predicted.back()))
        return std::nullopt;
    return affine;
}

bool holds(const std::vector<std::size_t>& kinds, std::size_t kind) {
    return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

std::vector<std::size_t> without(std::vector<std::size_t> kinds, std::size_t kind) {
    kinds.erase(std::remove(kinds.begin(), kinds.end(), kind), kinds.end());
    return kinds;
}

std::array<double, PPB_KIND_COUNT> body_times(const Problem& problem) {
    std::array<double, PPB_KIND_COUNT> time{};
    std::copy(problem.time.body_time.begin(), problem.time.body_time.end(), time.begin());
    return time;
}

// Every mix of `kinds` is a candidate; counts above `most_layers` are left out of the table.
StageTable affine_table(const Problem& problem, const AffineMemory& stage_memory,
                        std::uint32_t stage, const std::vector<std::size_t>& kinds,
                        std::uint32_t most_layers) {
    const std::uint32_t layers = problem.time.body_layers;
    const double budget = problem.budget_mb();
    const auto unit_time = body_times(problem);
    const auto& unit_memory = stage_memory.unit;
    // With one recompute setting every kind it uses is needed (its mix of n layers is the only
    // candidate); otherwise a dominated kind never is.
    const auto& setting = problem.recompute_setting;
    const auto useful = setting ? kinds : undominated(kinds, unit_time, unit_memory);
    // With no kind that frees memory, a mix over budget stays over budget as layers are added.
    const bool monotone = std::all_of(useful.begin(), useful.end(),
                                      [&](std::size_t k) { return unit_memory[k] >= 0.0; });
    // The most memory one more layer can add, for the pruning of points that any faster point
    // makes useless (below).
    double heaviest = 0.0;
    for (const std::size_t k : useful)
        heaviest = std::max(heaviest, unit_memory[k]);

    StageTable table;
    table.stage = stage;
    table.fastest.assign(layers + 1, std::nullopt);
    table.least_memory.assign(layers + 1, infinity);
    const auto least = std::min_element(
        kinds.begin(), kinds.end(),
        [&](std::size_t a, std::size_t b) { return unit_memory[a] < unit_memory[b]; });
    table.least_memory_kind = static_cast<ppb_kind>(*least);
    for (std::uint32_t n = 0; n <= layers; ++n) {
        KindCounts all_least{};
        all_least[*least] = n;
        table.least_memory[n] = stage_memory.of(setting ? setting->chunk_layers(n) : all_least);
    }

    // Pareto frontier over (time, memory) of the mixes of n layers: every Pareto-optimal mix of
    // n layers is a Pareto-optimal mix of n - 1 layers plus one layer, so the frontiers can be
    // built layer by layer, exactly.
    std::vector<Point> frontier = {Point{stage_time(problem, stage, {}), stage_memory.base, {}}};
    std::vector<Point> next;
    for (std::uint32_t n = 0;; ++n) {
        // The fastest mix that fits: memory falls along the frontier as time rises.
        for (const Point& p : frontier) {
            const double memory = stage_memory.of(p.layers);
            if (within_budget(memory, budget)) {
                table.fastest[n] =
                    StageChoice{p.layers, stage_time(problem, stage, p.layers), memory};
                break;
            }
        }
        if (n >= std::min(layers, most_layers))
            break;
        next.clear();
        for (const Point& p : frontier) {
            for (const std::size_t k : useful) {
                Point q = p;
                q.time += unit_time[k];
                q.memory += unit_memory[k];
                ++q.layers[k];
                if (setting && q.layers != setting->chunk_layers(n + 1))
                    continue;
                if (monotone && !within_budget(q.memory, budget))
                    continue;
                next.push_back(q);
            }
        }
        std::sort(next.begin(), next.end(), [](const Point& a, const Point& b) {
            return a.time != b.time ? a.time < b.time : a.memory < b.memory;
        });
        frontier.clear();
        // A point that fits with up to most_layers - (n + 1) more layers of the heaviest kind
        // makes every slower point useless: any completion of a slower point is no faster than
        // the same completion of this one, which fits. A generous limit so leaves one point.
        const double room = heaviest * (std::min(layers, most_layers) - (n + 1));
        for (const Point& p : next) {
            if (frontier.empty() || p.memory < frontier.back().memory) {
                frontier.push_back(p);
                if (within_budget(p.memory + room, budget))
                    break;
            }
        }
        if (frontier.empty()) {
            table.exhausted = true;  // monotone: no mix of more layers fits either
            break;
        }
    }
    return table;
}

// The faster choice of two tables per n (the first on ties), and the lesser least memory: the
// table over the union of two families of mixes.
StageTable merged(StageTable a, const StageTable& b) {
    a.exhausted = a.exhausted && b.exhausted;
    for (std::size_t n = 0; n < a.fastest.size(); ++n) {
        if (b.fastest[n] && (!a.fastest[n] || b.fastest[n]->time < a.fastest[n]->time))
            a.fastest[n] = b.fastest[n];
    }
    if (!a.least_memory.empty() && b.least_memory.back() < a.least_memory.back())
        a.least_memory_kind = b.least_memory_kind;
    for (std::size_t n = 0; n < a.least_memory.size(); ++n)
        a.least_memory[n] = std::min(a.least_memory[n], b.least_memory[n]);
    return a;
}

// The candidates the problem's rule admits. Under MindFormers' rule the expressible mixes are
// those without 'comm' and those without 'select': two families, each searched exactly, the
// faster answer kept. When the unrestricted frontier cannot hold both kinds (one of them is not
// allowed, or another kind beats it on time and memory), its answers are expressible already and
// one search suffices.
StageTable affine_table_under_rule(const Problem& problem, const AffineMemory& memory,
                                   std::uint32_t stage, const std::vector<std::size_t>& kinds,
                                   std::uint32_t most_layers) {
    if (problem.rule == RecomputeRule::any || problem.recompute_setting)
        return affine_table(problem, memory, stage, kinds, most_layers);
    const auto useful = undominated(kinds, body_times(problem), memory.unit);
    if (!holds(useful, PPB_KIND_SELECT) || !holds(useful, PPB_KIND_COMM))
        return affine_table(problem, memory, stage, kinds, most_layers);
    return merged(
        affine_table(problem, memory, stage, without(kinds, PPB_KIND_COMM), most_layers),
        affine_table(problem, memory, stage, without(kinds, PPB_KIND_SELECT), most_layers));
}

// ---- other models ----------------------------------------------------------------------------

// Past the last n that fits, the least memory of n layers is taken from the single-kind mixes
// (exact for linear models, where the least memory always puts every layer on one kind); it
// only serves to explain infeasibility, and predicting every mix of many layers would be slow.
void fill_least_memory_beyond(const Problem& problem, const MemorySource& memory,
                              std::uint32_t stage, const std::vector<std::size_t>& kinds,
                              std::uint32_t first, StageTable& table) {
    const std::uint32_t layers = problem.time.body_layers;
    if (first > layers)
        return;
    std::vector<KindCounts> mixes;
    for (std::uint32_t n = first; n <= layers; ++n) {
        for (const std::size_t k : kinds) {
            KindCounts mix{};
            mix[k] = n;
            mixes.push_back(mix);
        }
    }
    const std::vector<double> predicted = predict_mixes(problem, memory, stage, mixes);
    for (std::size_t i = 0; i < predicted.size(); ++i) {
        const std::uint32_t n = first + static_cast<std::uint32_t>(i / kinds.size());
        if (std::isfinite(predicted[i])) {
            table.least_memory[n] = std::min(table.least_memory[n], predicted[i]);
        }
    }
}

// Every mix of n layers the rule admits.
std::vector<KindCounts> every_mix(const Problem& problem, std::uint32_t n,
                                  const std::vector<std::size_t>& kinds) {
    std::vector<KindCounts> mixes;
    KindCounts current{};
    compositions(n, kinds, 0, current, mixes);
    std::erase_if(mixes, [&](const KindCounts& mix) { return !admits(problem, mix); });
    return mixes;
}

// Every mix the model predicts, n = 0, 1, ... Memory is assumed not to fall when a layer is added
// (true of every physical model: a layer brings its parameters and activations). Then a mix of n
// layers fits only if every mix of n - 1 layers inside it fits, so the candidates of n layers are
// the fitting mixes of n - 1 layers plus one layer (removing a layer keeps a mix expressible), and
// the search stops at the first n, at or above the stage's minimum, where nothing fits. For a
// model that satisfies the assumption the table is exact.
StageTable enumerated_table(const Problem& problem, const MemorySource& memory, std::uint32_t stage,
                            const std::vector<std::size_t>& kinds, std::uint32_t most_layers) {
    const std::uint32_t layers = problem.time.body_layers;
    const double budget = problem.budget_mb();
    StageTable table;
    table.stage = stage;
    table.fastest.assign(layers + 1, std::nullopt);
    table.least_memory.assign(layers + 1, infinity);

    std::vector<KindCounts> fitting;
    std::vector<KindCounts> mixes;
    for (std::uint32_t n = 0; n <= std::min(layers, most_layers); ++n) {
        // Up to the stage's minimum (at most one layer) every mix; then the extensions.
        const bool every = n <= problem.min_layers(stage);
        if (every) {
            mixes = every_mix(problem, n, kinds);
        } else {
            mixes.clear();
            for (const KindCounts& mix : fitting) {
                for (const std::size_t k : kinds) {
                    KindCounts more = mix;
                    ++more[k];
                    if (admits(problem, more))
                        mixes.push_back(more);
                }
            }
            std::sort(mixes.begin(), mixes.end());
            mixes.erase(std::unique(mixes.begin(), mixes.end()), mixes.end());
        }
        const std::vector<double> predicted = predict_mixes(problem, memory, stage, mixes);
        fitting.clear();
        for (std::size_t i = 0; i < mixes.size(); ++i) {
            const double m = predicted[i];
            if (!std::isfinite(m)) {
                throw std::runtime_error("the memory model predicted a non-finite memory");
            }
            if (m < table.least_memory[n]) {
                table.least_memory[n] = m;
                if (n == 1) {
                    const auto k = std::find_if(kinds.begin(), kinds.end(), [&](std::size_t kind) {
                        return mixes[i][kind] == 1;
                    });
                    table.least_memory_kind = static_cast<ppb_kind>(*k);
                }
            }
            if (!within_budget(m, budget))
                continue;
            fitting.push_back(mixes[i]);
            const double t = stage_time(problem, stage, mixes[i]);
            if (!table.fastest[n] || t < table.fastest[n]->time) {
                table.fastest[n] = StageChoice{mixes[i], t, m};
            }
        }
        if (!table.fastest[n] && n >= problem.min_layers(stage)) {
            // The least memory of n layers, for explaining infeasibility, over every mix (the
            // candidates were only the extensions of mixes that fit).
            if (!every) {
                const auto all = every_mix(problem, n, kinds);
                for (const double m : predict_mixes(problem, memory, stage, all)) {
                    if (std::isfinite(m))
                        table.least_memory[n] = std::min(table.least_memory[n], m);
                }
            }
            fill_least_memory_beyond(problem, memory, stage, kinds, n + 1, table);
            table.exhausted = true;
            break;
        }
    }
    return table;
}

// A probed affine stage's table, its chosen mixes predicted by the model for the memory shown;
// nullopt when a prediction disagrees with the affine sum (the model is not affine beyond the
// probes) or no longer fits.
std::optional<StageTable> probed_table(const Problem& problem, const MemorySource& memory,
                                       const AffineMemory& affine, std::uint32_t stage,
                                       const std::vector<std::size_t>& kinds,
                                       std::uint32_t most_layers) {
    StageTable table = affine_table_under_rule(problem, affine, stage, kinds, most_layers);
    std::vector<KindCounts> chosen;
    for (const auto& choice : table.fastest) {
        if (choice)
            chosen.push_back(choice->layers);
    }
    const std::vector<double> predicted = predict_mixes(problem, memory, stage, chosen);
    std::size_t i = 0;
    for (auto& choice : table.fastest) {
        if (!choice)
            continue;
        const double m = predicted[i++];
        if (!affine_agrees(choice->memory, m) || !within_budget(m, problem.budget_mb()))
            return std::nullopt;
        choice->memory = m;
    }
    return table;
}

}  // namespace

std::vector<std::size_t> kind_list(std::uint32_t kinds) {
    std::vector<std::size_t> out;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((kinds & PPB_KIND_BIT(k)) != 0)
            out.push_back(k);
    }
    return out;
}

// Kinds that another kind beats on both time and memory can never be needed: swapping them
// for the better kind keeps every plan valid and no slower. Removing them keeps the search small.
std::vector<std::size_t> undominated(const std::vector<std::size_t>& kinds,
                                     const std::array<double, PPB_KIND_COUNT>& time,
                                     const std::array<double, PPB_KIND_COUNT>& memory) {
    std::vector<std::size_t> out;
    for (const std::size_t k : kinds) {
        bool dominated = false;
        for (const std::size_t o : kinds) {
            if (o == k)
                continue;
            const bool no_worse = time[o] <= time[k] && memory[o] <= memory[k];
            const bool better = time[o] < time[k] || memory[o] < memory[k] || o < k;
            if (no_worse && better) {
                dominated = true;
                break;
            }
        }
        if (!dominated)
            out.push_back(k);
    }
    return out;
}

void compositions(std::uint32_t n, const std::vector<std::size_t>& kinds, std::size_t index,
                  KindCounts& current, std::vector<KindCounts>& out) {
    const std::size_t k = kinds[index];
    if (index + 1 == kinds.size()) {
        current[k] = n;
        out.push_back(current);
        current[k] = 0;
        return;
    }
    for (std::uint32_t i = 0; i <= n; ++i) {
        current[k] = i;
        compositions(n - i, kinds, index + 1, current, out);
    }
    current[k] = 0;
}

std::uint32_t candidate_kinds(const Problem& problem, const MemorySource& memory) {
    std::uint32_t kinds = problem.kinds & memory.kinds & PPB_ALL_KINDS;
    if (memory.linear) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if ((memory.linear->identified & PPB_PARAM_ACTIVATION(k)) == 0)
                kinds &= ~PPB_KIND_BIT(k);
        }
    }
    return kinds;
}

bool affine_agrees(double expected, double got) {
    return std::abs(expected - got) <= 1e-9 * std::max({1.0, std::abs(expected), std::abs(got)});
}

std::vector<StageTable> build_stage_tables(const Problem& problem, const MemorySource& memory,
                                           std::uint32_t kinds,
                                           const std::vector<std::uint32_t>& most_layers) {
    const auto list = kind_list(kinds);
    std::vector<StageTable> tables;
    tables.reserve(problem.num_stages);
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        const std::uint32_t most = most_layers[s];
        if (memory.linear) {
            tables.push_back(affine_table_under_rule(
                problem, linear_memory(problem, *memory.linear, s), s, list, most));
            continue;
        }
        std::optional<StageTable> table;
        if (const auto affine = probed_memory(problem, memory, s, list))
            table = probed_table(problem, memory, *affine, s, list, most);
        tables.push_back(table ? std::move(*table)
                               : enumerated_table(problem, memory, s, list, most));
    }
    return tables;
}

}  // namespace ppb::partition::detail
