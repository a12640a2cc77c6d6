#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ppb::partition::detail {
namespace {

// ---- linear models ---------------------------------------------------------------------------

struct Point {
    double time;
    double memory;
    KindCounts layers;
};

// What one more layer of each kind adds to a stage's time and memory.
struct UnitCosts {
    std::array<double, PPB_KIND_COUNT> time{};
    std::array<double, PPB_KIND_COUNT> memory{};
};

UnitCosts unit_costs(const Problem& problem, const ppb_linear_parameters& c, std::uint32_t stage,
                     const std::vector<std::size_t>& kinds) {
    const double f = problem.in_flight(stage);
    UnitCosts unit;
    for (const std::size_t k : kinds) {
        unit.time[k] = problem.time.body_time[k];
        unit.memory[k] = c.per_layer_mb + c.activation_mb[k] * f;
    }
    return unit;
}

bool holds(const std::vector<std::size_t>& kinds, std::size_t kind) {
    return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

std::vector<std::size_t> without(std::vector<std::size_t> kinds, std::size_t kind) {
    kinds.erase(std::remove(kinds.begin(), kinds.end(), kind), kinds.end());
    return kinds;
}

// Every mix of `kinds` is a candidate.
StageTable linear_table(const Problem& problem, const ppb_linear_parameters& c, std::uint32_t stage,
                        const std::vector<std::size_t>& kinds) {
    const std::uint32_t layers = problem.time.body_layers;
    const double budget = problem.budget_mb();
    const UnitCosts unit = unit_costs(problem, c, stage, kinds);
    const auto& unit_time = unit.time;
    const auto& unit_memory = unit.memory;
    const auto useful = undominated(kinds, unit_time, unit_memory);
    // With no kind that frees memory, a mix over budget stays over budget as layers are added.
    const bool monotone = std::all_of(useful.begin(), useful.end(),
                                      [&](std::size_t k) { return unit_memory[k] >= 0.0; });

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
        table.least_memory[n] = linear_stage_memory(c, problem, stage, all_least);
    }

    // Pareto frontier over (time, memory) of the mixes of n layers: every Pareto-optimal mix of
    // n layers is a Pareto-optimal mix of n - 1 layers plus one layer, so the frontiers can be
    // built layer by layer, exactly.
    std::vector<Point> frontier = {
        Point{stage_time(problem, stage, {}), linear_stage_memory(c, problem, stage, {}), {}}};
    std::vector<Point> next;
    for (std::uint32_t n = 0;; ++n) {
        // The fastest mix that fits: memory falls along the frontier as time rises.
        for (const Point& p : frontier) {
            const double memory = linear_stage_memory(c, problem, stage, p.layers);
            if (within_budget(memory, budget)) {
                table.fastest[n] =
                    StageChoice{p.layers, stage_time(problem, stage, p.layers), memory};
                break;
            }
        }
        if (n == layers)
            break;
        next.clear();
        for (const Point& p : frontier) {
            for (const std::size_t k : useful) {
                Point q = p;
                q.time += unit_time[k];
                q.memory += unit_memory[k];
                ++q.layers[k];
                if (monotone && !within_budget(q.memory, budget))
                    continue;
                next.push_back(q);
            }
        }
        std::sort(next.begin(), next.end(), [](const Point& a, const Point& b) {
            return a.time != b.time ? a.time < b.time : a.memory < b.memory;
        });
        frontier.clear();
        for (const Point& p : next) {
            if (frontier.empty() || p.memory < frontier.back().memory)
                frontier.push_back(p);
        }
        if (frontier.empty())
            break;  // monotone: no mix of more layers fits either
    }
    return table;
}

// The faster choice of two tables per n (the first on ties), and the lesser least memory: the
// table over the union of two families of mixes.
StageTable merged(StageTable a, const StageTable& b) {
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
StageTable linear_table_under_rule(const Problem& problem, const ppb_linear_parameters& c,
                                   std::uint32_t stage, const std::vector<std::size_t>& kinds) {
    if (problem.rule == RecomputeRule::any)
        return linear_table(problem, c, stage, kinds);
    const UnitCosts unit = unit_costs(problem, c, stage, kinds);
    const auto useful = undominated(kinds, unit.time, unit.memory);
    if (!holds(useful, PPB_KIND_SELECT) || !holds(useful, PPB_KIND_COMM))
        return linear_table(problem, c, stage, kinds);
    return merged(linear_table(problem, c, stage, without(kinds, PPB_KIND_COMM)),
                  linear_table(problem, c, stage, without(kinds, PPB_KIND_SELECT)));
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
    std::vector<ppb_chunk> chunks;
    for (std::uint32_t n = first; n <= layers; ++n) {
        for (const std::size_t k : kinds) {
            ppb_chunk chunk{};
            chunk.layers[k] = n;
            chunk.in_flight = problem.in_flight(stage);
            chunks.push_back(chunk);
        }
    }
    std::vector<ppb_placement> placements;
    placements.reserve(chunks.size());
    for (const auto& chunk : chunks) {
        placements.push_back(ppb_placement{problem.num_stages, stage, 1, &chunk});
    }
    const std::vector<double> predicted = memory.predict_batch(placements);
    for (std::size_t i = 0; i < predicted.size(); ++i) {
        const std::uint32_t n = first + static_cast<std::uint32_t>(i / kinds.size());
        if (std::isfinite(predicted[i])) {
            table.least_memory[n] = std::min(table.least_memory[n], predicted[i]);
        }
    }
}

StageTable predicted_table(const Problem& problem, const MemorySource& memory, std::uint32_t stage,
                           const std::vector<std::size_t>& kinds) {
    const std::uint32_t layers = problem.time.body_layers;
    const double budget = problem.budget_mb();
    StageTable table;
    table.stage = stage;
    table.fastest.assign(layers + 1, std::nullopt);
    table.least_memory.assign(layers + 1, infinity);

    std::vector<KindCounts> mixes;
    std::vector<ppb_chunk> chunks;
    std::vector<ppb_placement> placements;
    for (std::uint32_t n = 0; n <= layers; ++n) {
        mixes.clear();
        KindCounts current{};
        compositions(n, kinds, 0, current, mixes);
        std::erase_if(mixes,
                      [&](const KindCounts& mix) { return !expressible(mix, problem.rule); });
        chunks.assign(mixes.size(), ppb_chunk{});
        placements.clear();
        for (std::size_t i = 0; i < mixes.size(); ++i) {
            std::copy(mixes[i].begin(), mixes[i].end(), chunks[i].layers);
            chunks[i].in_flight = problem.in_flight(stage);
            placements.push_back(ppb_placement{problem.num_stages, stage, 1, &chunks[i]});
        }
        const std::vector<double> predicted = memory.predict_batch(placements);
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
            const double t = stage_time(problem, stage, mixes[i]);
            if (!table.fastest[n] || t < table.fastest[n]->time) {
                table.fastest[n] = StageChoice{mixes[i], t, m};
            }
        }
        if (!table.fastest[n] && n >= problem.min_layers(stage)) {
            fill_least_memory_beyond(problem, memory, stage, kinds, n + 1, table);
            break;
        }
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

std::vector<StageTable> build_stage_tables(const Problem& problem, const MemorySource& memory,
                                           std::uint32_t kinds) {
    const auto list = kind_list(kinds);
    std::vector<StageTable> tables;
    tables.reserve(problem.num_stages);
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        tables.push_back(memory.linear ? linear_table_under_rule(problem, *memory.linear, s, list)
                                       : predicted_table(problem, memory, s, list));
    }
    return tables;
}

}  // namespace ppb::partition::detail
