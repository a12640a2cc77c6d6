// Stage options with several chunks per stage (chunk_tables.hpp).
//
// Exactness. Within a stage, a chunk's time and memory are sums over its layers, and the stage's
// memory is the sum over its chunks. So, as for one chunk (stage_table.cpp), every option worth
// keeping is built from Pareto-optimal mixes of each chunk: replacing a chunk's mix by one no
// slower and no larger keeps the stage within budget and lowers neither the stage's total nor
// its slowest chunk. The chunks are then combined one at a time, keeping the options that are
// Pareto-optimal in (total, slowest chunk, memory); for the last chunk only the fastest mix that
// still fits matters, which leaves options Pareto-optimal in (total, slowest chunk).
#include "chunk_tables.hpp"
#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace ppb::partition::detail {
namespace {

// ---- the affine description -----------------------------------------------------------------

AffineStage linear_stage(const Problem& problem, const ppb_linear_parameters& c,
                         std::uint32_t stage) {
    const StageEnds ends = stage_ends(problem.schedule, problem.num_stages, problem.chunks, stage);
    AffineStage a;
    a.base = c.const_mb + (ends.head ? c.head_mb : 0.0) + (ends.tail ? c.tail_mb : 0.0);
    for (std::uint32_t chunk = 0; chunk < problem.chunks; ++chunk) {
        const double f = problem.in_flight(stage, chunk);
        std::array<double, PPB_KIND_COUNT> unit{};
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            unit[k] = c.per_layer_mb + c.activation_mb[k] * f;
        a.unit.push_back(unit);
        a.activation.push_back(std::array<double, PPB_KIND_COUNT>{
            c.activation_mb[0], c.activation_mb[1], c.activation_mb[2], c.activation_mb[3],
            c.activation_mb[4]});
    }
    return a;
}

// Placements of one stage, as the model is asked about it (ppb::abi_stage).
class Probe {
  public:
    Probe(const Problem& problem, std::uint32_t stage) : problem_(problem), stage_(stage) {}

    // A placement with `layers[c]` in chunk c; in-flight counts the schedule's, plus
    // `extra_in_flight` on chunk `more`.
    void add(const std::vector<KindCounts>& layers, std::uint32_t more = 0,
             std::uint32_t extra_in_flight = 0) {
        std::vector<ppb_chunk> chunks(problem_.chunks);
        for (std::uint32_t c = 0; c < problem_.chunks; ++c) {
            std::copy(layers[c].begin(), layers[c].end(), chunks[c].layers);
            chunks[c].in_flight = problem_.in_flight(stage_, c) + (c == more ? extra_in_flight : 0);
        }
        chunks_.push_back(std::move(chunks));
        layers_.push_back(layers);
    }

    std::vector<double> predict(const MemorySource& memory) const {
        const AbiStage view =
            abi_stage(problem_.schedule, problem_.num_stages, problem_.chunks, stage_);
        std::vector<ppb_placement> placements;
        for (const auto& chunks : chunks_) {
            placements.push_back(
                ppb_placement{view.num_stages, view.stage, problem_.chunks, chunks.data()});
        }
        return memory.predict_batch(placements);
    }

    [[nodiscard]] const std::vector<KindCounts>& layers(std::size_t i) const { return layers_[i]; }

  private:
    const Problem& problem_;
    std::uint32_t stage_;
    std::vector<std::vector<ppb_chunk>> chunks_;
    std::vector<std::vector<KindCounts>> layers_;
};

std::string describe_layers(const std::vector<KindCounts>& layers) {
    std::string out;
    for (std::size_t c = 0; c < layers.size(); ++c) {
        std::string mix;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (layers[c][k] != 0) {
                mix += fmt::format("{}{} {}", mix.empty() ? "" : ", ", layers[c][k],
                                   kind_name(static_cast<ppb_kind>(k)));
            }
        }
        out += fmt::format("{}chunk {}: {}", c == 0 ? "" : "; ", c, mix.empty() ? "none" : mix);
    }
    return out;
}

// A model without coefficients, probed: the empty stage, one layer of each kind in each chunk
// (the units), the same with one more micro-batch in flight (the activation per micro-batch),
// and check placements that an affine model must predict exactly.
AffineStage probed_stage(const Problem& problem, const MemorySource& memory, std::uint32_t stage,
                         const std::vector<std::size_t>& kinds) {
    const std::uint32_t v = problem.chunks;
    const std::vector<KindCounts> empty(v, KindCounts{});
    Probe probe(problem, stage);
    probe.add(empty);
    for (std::uint32_t c = 0; c < v; ++c) {
        for (const std::size_t k : kinds) {
            std::vector<KindCounts> one = empty;
            one[c][k] = 1;
            probe.add(one);
            probe.add(one, c, 1);
        }
        probe.add(empty, c, 1);
    }
    // Checks: three layers of each kind in each chunk; every kind in every chunk at once.
    const std::size_t first_check = 1 + v * (2 * kinds.size() + 1);
    std::vector<KindCounts> all = empty;
    for (std::uint32_t c = 0; c < v; ++c) {
        for (const std::size_t k : kinds) {
            std::vector<KindCounts> three = empty;
            three[c][k] = 3;
            probe.add(three);
            all[c][k] = c + 1;
        }
    }
    probe.add(all);
    const std::vector<double> predicted = probe.predict(memory);

    AffineStage a;
    a.base = predicted[0];
    std::size_t i = 1;
    for (std::uint32_t c = 0; c < v; ++c) {
        std::array<double, PPB_KIND_COUNT> unit{};
        std::array<double, PPB_KIND_COUNT> activation{};
        std::vector<double> with_more;
        for (const std::size_t k : kinds) {
            unit[k] = predicted[i] - a.base;
            with_more.push_back(predicted[i + 1]);
            i += 2;
        }
        const double empty_more = predicted[i++];
        for (std::size_t j = 0; j < kinds.size(); ++j) {
            const std::size_t k = kinds[j];
            activation[k] = (with_more[j] - empty_more) - unit[k];
        }
        a.unit.push_back(unit);
        a.activation.push_back(activation);
    }
    for (std::size_t check = first_check; check < predicted.size(); ++check) {
        const auto& layers = probe.layers(check);
        double affine = a.base;
        for (std::uint32_t c = 0; c < v; ++c) {
            for (const std::size_t k : kinds)
                affine += a.unit[c][k] * layers[c][k];
        }
        if (!affine_agrees(affine, predicted[check])) {
            throw InputError(fmt::format(
                "the memory model is not affine in the layer counts of a stage (stage {}, {}: "
                "predicted {:.6g} MB, the sum of its parts {:.6g} MB); planning several chunks "
                "per stage needs a model whose stage memory is a constant plus a cost per layer "
                "of each kind and chunk",
                stage, describe_layers(layers), predicted[check], affine));
        }
    }
    return a;
}

// ---- chunk frontiers -------------------------------------------------------------------------

struct ChunkPoint {
    double time = 0.0;    // body layers only
    double memory = 0.0;  // body layers only
    KindCounts layers{};
};
using Frontier = std::vector<std::vector<ChunkPoint>>;  // [n]: by increasing time

void keep_pareto_2d(std::vector<ChunkPoint>& points) {
    std::sort(points.begin(), points.end(), [](const ChunkPoint& a, const ChunkPoint& b) {
        return a.time != b.time ? a.time < b.time : a.memory < b.memory;
    });
    std::vector<ChunkPoint> kept;
    for (const ChunkPoint& p : points) {
        if (kept.empty() || p.memory < kept.back().memory)
            kept.push_back(p);
    }
    points = std::move(kept);
}

// The Pareto frontier over (time, memory) of the mixes of `kinds`, for every n up to `layers`
// (the most the stage may hold), built layer by layer; mixes whose memory alone exceeds `room`
// are dropped when no kind frees memory. A point is also dropped when a faster one is *safe*: it
// fits with any layers - n more layers anywhere on the stage (each adding at most `worst` MB), so
// no completion needs the slower one. (A point built from a dropped one is beaten by the same
// layer added to the safe one, which stays safe: exact, and a generous limit leaves one point
// per n.)
Frontier family_frontier(std::uint32_t layers, const std::vector<std::size_t>& kinds,
                         const std::array<double, PPB_KIND_COUNT>& time,
                         const std::array<double, PPB_KIND_COUNT>& memory, double base,
                         double budget, double worst) {
    const auto useful = undominated(kinds, time, memory);
    const bool monotone =
        std::all_of(useful.begin(), useful.end(), [&](std::size_t k) { return memory[k] >= 0.0; });
    Frontier frontier(layers + 1);
    frontier[0] = {ChunkPoint{}};
    for (std::uint32_t n = 1; n <= layers; ++n) {
        std::vector<ChunkPoint>& next = frontier[n];
        for (const ChunkPoint& p : frontier[n - 1]) {
            for (const std::size_t k : useful) {
                ChunkPoint q = p;
                q.time += time[k];
                q.memory += memory[k];
                ++q.layers[k];
                if (monotone && !within_budget(base + q.memory, budget))
                    continue;
                next.push_back(q);
            }
        }
        keep_pareto_2d(next);
        const auto safe = std::find_if(next.begin(), next.end(), [&](const ChunkPoint& q) {
            return within_budget(base + q.memory + (layers - n) * worst, budget);
        });
        if (safe != next.end())
            next.erase(std::next(safe), next.end());
        if (next.empty() && monotone)
            break;
    }
    return frontier;
}

// The frontier over the mixes `rule` admits, for up to `layers` layers: under MindFormers' rule,
// the mixes without 'comm' and those without 'select', merged (stage_table.cpp's families).
Frontier chunk_frontier(const Problem& problem, std::uint32_t layers,
                        const std::vector<std::size_t>& kinds,
                        const std::array<double, PPB_KIND_COUNT>& memory, double base,
                        double worst) {
    const auto& time = problem.time.body_time;
    const double budget = problem.budget_mb();
    if (const auto& setting = problem.recompute_setting) {
        // One recompute setting: the setting's mix is the only candidate of each count.
        Frontier frontier(layers + 1);
        for (std::uint32_t n = 0; n <= layers; ++n) {
            ChunkPoint p{0.0, 0.0, setting->chunk_layers(n)};
            for (const std::size_t k : kinds) {
                p.time += time[k] * p.layers[k];
                p.memory += memory[k] * p.layers[k];
            }
            frontier[n] = {p};
        }
        return frontier;
    }
    const auto useful = undominated(kinds, time, memory);
    const auto has = [&](std::size_t k) {
        return std::find(useful.begin(), useful.end(), k) != useful.end();
    };
    if (problem.rule == RecomputeRule::any || !has(PPB_KIND_SELECT) || !has(PPB_KIND_COMM))
        return family_frontier(layers, kinds, time, memory, base, budget, worst);
    auto without = [&](std::size_t kind) {
        std::vector<std::size_t> out = kinds;
        std::erase(out, kind);
        return out;
    };
    Frontier a = family_frontier(layers, without(PPB_KIND_COMM), time, memory, base, budget, worst);
    const Frontier b =
        family_frontier(layers, without(PPB_KIND_SELECT), time, memory, base, budget, worst);
    for (std::uint32_t n = 0; n <= layers; ++n) {
        a[n].insert(a[n].end(), b[n].begin(), b[n].end());
        keep_pareto_2d(a[n]);
    }
    return a;
}

// ---- combining the chunks of a stage ---------------------------------------------------------

// The most options of one stage combined over its chunks before the last: beyond it (three or
// more chunks, many layers, a loosely binding limit) the exact search would take seconds and
// gigabytes, and the problem is refused with what to change instead.
constexpr std::size_t max_partial_options = 2'000'000;

struct Partial {
    double total = 0.0;
    double slowest = 0.0;
    double memory = 0.0;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> picks;  // per chunk: (n, frontier index)
};

// `safe(p)`: every way to complete p fits the budget, so its memory no longer matters — it
// dominates any p' no faster in total and slowest chunk, whatever p' holds in memory (p' is
// completed by the same layers as p). Without it a generous limit would keep every memory.
template <class Safe>
void keep_pareto_3d(std::vector<Partial>& options, Safe safe) {
    std::sort(options.begin(), options.end(), [](const Partial& a, const Partial& b) {
        if (a.total != b.total)
            return a.total < b.total;
        if (a.slowest != b.slowest)
            return a.slowest < b.slowest;
        return a.memory < b.memory;
    });
    // The kept points' staircase over (slowest, memory): memory falls as slowest rises, so the
    // least memory among kept points no slower than p is the entry at or below p.slowest.
    std::map<double, double> staircase;
    std::vector<Partial> kept;
    for (Partial& p : options) {
        const double memory = safe(p) ? -infinity : p.memory;
        auto it = staircase.upper_bound(p.slowest);
        if (it != staircase.begin() && std::prev(it)->second <= memory)
            continue;  // dominated (its total is no smaller either)
        // Entries p now dominates: no faster slowest chunk, no less memory.
        auto from = staircase.lower_bound(p.slowest);
        auto to = from;
        while (to != staircase.end() && to->second >= memory)
            ++to;
        staircase.erase(from, to);
        staircase.emplace(p.slowest, memory);
        kept.push_back(std::move(p));
    }
    options = std::move(kept);
}

// Index of the fastest point of `points` (by increasing time, decreasing memory) whose memory
// is at most `room` under within_budget, or points.size().
std::size_t fastest_within(const std::vector<ChunkPoint>& points, double used, double budget) {
    // The points that fit are a suffix: memory falls as time rises.
    std::size_t lo = 0;
    std::size_t hi = points.size();
    while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (within_budget(used + points[mid].memory, budget))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

// With one recompute setting, the least memory of n layers on a stage: over every way to spread
// them over its chunks (each at least its minimum), each chunk holding the setting's mix, by
// dynamic programming over the chunks. Infinity where no spread exists.
std::vector<double> least_memory_of_setting(const MegatronRecompute& setting,
                                            const AffineStage& affine,
                                            const std::vector<std::uint32_t>& fewest,
                                            std::uint32_t all) {
    std::vector<double> least(all + 1, infinity);
    least[0] = affine.base;
    for (std::size_t c = 0; c < affine.unit.size(); ++c) {
        std::vector<double> next(all + 1, infinity);
        for (std::uint32_t held = 0; held <= all; ++held) {
            if (!std::isfinite(least[held]))
                continue;
            for (std::uint32_t n = fewest[c]; held + n <= all; ++n) {
                const KindCounts mix = setting.chunk_layers(n);
                double m = least[held];
                for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                    m += affine.unit[c][k] * mix[k];
                next[held + n] = std::min(next[held + n], m);
            }
        }
        least = std::move(next);
    }
    return least;
}

// The options of one stage holding at most `max_layers` body layers (every count up to L when
// it is L or more).
ChunkedStage combine(const Problem& problem, std::uint32_t stage, AffineStage affine,
                     const std::vector<std::size_t>& kinds, std::uint32_t max_layers) {
    // `all` sizes the arrays and least_memory (explain() reads it for every count); the options
    // stop at `layers`.
    const std::uint32_t all = problem.time.body_layers;
    const std::uint32_t layers = std::min(all, max_layers);
    const std::uint32_t v = problem.chunks;
    const double budget = problem.budget_mb();

    bool monotone = true;  // no kind frees memory: a partial option over budget stays over
    for (const auto& unit : affine.unit) {
        for (const std::size_t k : kinds)
            monotone = monotone && unit[k] >= 0.0;
    }
    // The most memory one more layer can add anywhere on the stage (at least 0).
    double worst_anywhere = 0.0;
    for (const auto& unit : affine.unit) {
        for (const std::size_t k : kinds)
            worst_anywhere = std::max(worst_anywhere, unit[k]);
    }
    std::vector<Frontier> frontiers;
    std::vector<double> extra;  // the ends' time per chunk
    std::vector<std::uint32_t> fewest;
    for (std::uint32_t c = 0; c < v; ++c) {
        frontiers.push_back(
            chunk_frontier(problem, layers, kinds, affine.unit[c], affine.base, worst_anywhere));
        extra.push_back(chunk_time(problem, stage, c, KindCounts{}));
        fewest.push_back(problem.min_layers(stage, c));
    }

    ChunkedStage out;
    out.stage = stage;
    // The least memory of n layers: each chunk's minimum on its lightest kind, the rest on the
    // lightest (chunk, kind) (exact for an affine stage).
    double lightest = infinity;
    double required = affine.base;
    std::uint32_t required_layers = 0;
    for (std::uint32_t c = 0; c < v; ++c) {
        double chunk_lightest = infinity;
        for (const std::size_t k : kinds) {
            chunk_lightest = std::min(chunk_lightest, affine.unit[c][k]);
            if (affine.unit[c][k] < lightest) {
                lightest = affine.unit[c][k];
                out.least_memory_kind = static_cast<ppb_kind>(k);
            }
        }
        required += fewest[c] * chunk_lightest;
        required_layers += fewest[c];
    }
    out.least_memory.assign(all + 1, infinity);
    for (std::uint32_t n = required_layers; n <= all; ++n)
        out.least_memory[n] = required + (n - required_layers) * lightest;
    if (const auto& setting = problem.recompute_setting)
        out.least_memory = least_memory_of_setting(*setting, affine, fewest, all);

    // Chunk 0 alone, then each further chunk added.
    std::vector<std::vector<Partial>> partial(layers + 1);
    for (std::uint32_t n = fewest[0]; n <= layers; ++n) {
        const auto& points = frontiers[0][n];
        for (std::uint32_t i = 0; i < points.size(); ++i) {
            const double t = points[i].time + extra[0];
            partial[n].push_back(Partial{t, t, points[i].memory, {{n, i}}});
        }
    }
    // The chunks between the first and the last: options kept Pareto-optimal in (total,
    // slowest chunk, memory).
    for (std::uint32_t c = 1; c + 1 < v; ++c) {
        std::vector<std::vector<Partial>> next(layers + 1);
        std::size_t made = 0;
        for (std::uint32_t held = 0; held <= layers; ++held) {
            for (const Partial& p : partial[held]) {
                for (std::uint32_t n = fewest[c]; held + n <= layers; ++n) {
                    const auto& points = frontiers[c][n];
                    for (std::size_t i = 0; i < points.size(); ++i) {
                        const double t = points[i].time + extra[c];
                        const double memory = p.memory + points[i].memory;
                        if (monotone && !within_budget(affine.base + memory, budget))
                            continue;
                        if (++made > max_partial_options) {
                            throw InputError(fmt::format(
                                "planning {} chunks per stage exactly needs more than {} partial "
                                "options on stage {} (a limit that binds loosely leaves many "
                                "mixes to weigh); plan with fewer chunks, fewer recompute kinds "
                                "(--kinds; --recompute in a search) or a tighter "
                                "--memory-limit-mb",
                                v, max_partial_options, stage));
                        }
                        Partial q{p.total + t, std::max(p.slowest, t), memory, p.picks};
                        q.picks.emplace_back(n, static_cast<std::uint32_t>(i));
                        next[held + n].push_back(std::move(q));
                    }
                }
            }
        }
        // The most memory a layer can add in the chunks still to come.
        double worst = 0.0;
        for (std::uint32_t later = c + 1; later < v; ++later) {
            for (const std::size_t k : kinds)
                worst = std::max(worst, affine.unit[later][k]);
        }
        for (std::uint32_t held = 0; held <= layers; ++held) {
            keep_pareto_3d(next[held], [&](const Partial& p) {
                return within_budget(affine.base + p.memory + (layers - held) * worst, budget);
            });
        }
        partial = std::move(next);
    }

    // The last chunk: for each partial option and count, only the fastest mix that still fits
    // can be worth having. Candidates stay small (no copy of the picks) until kept.
    struct Candidate {
        double total = 0.0;
        double slowest = 0.0;
        double memory = 0.0;
        double last_time = 0.0;
        const Partial* prefix = nullptr;
        std::uint32_t n = 0;
        std::uint32_t index = 0;
    };
    std::vector<std::vector<Candidate>> candidates(layers + 1);
    if (v == 1) {
        for (std::uint32_t n = 0; n <= layers; ++n) {
            for (const Partial& p : partial[n]) {
                if (within_budget(affine.base + p.memory, budget))
                    candidates[n].push_back({p.total, p.slowest, p.memory, p.total, &p, 0, 0});
            }
        }
    } else {
        const std::uint32_t c = v - 1;
        for (std::uint32_t held = 0; held <= layers; ++held) {
            for (const Partial& p : partial[held]) {
                for (std::uint32_t n = fewest[c]; held + n <= layers; ++n) {
                    const auto& points = frontiers[c][n];
                    const std::size_t i = fastest_within(points, affine.base + p.memory, budget);
                    if (i == points.size())
                        continue;
                    const double t = points[i].time + extra[c];
                    candidates[held + n].push_back({p.total + t, std::max(p.slowest, t),
                                                    p.memory + points[i].memory, t, &p, n,
                                                    static_cast<std::uint32_t>(i)});
                }
            }
        }
    }

    out.options.resize(all + 1);
    out.alternatives.resize(all + 1);
    const auto option_of = [&](const Candidate& candidate) {
        StageOption option{
            candidate.total, candidate.slowest, affine.base + candidate.memory, {}, {}};
        auto picks = candidate.prefix->picks;
        if (v > 1)
            picks.emplace_back(candidate.n, candidate.index);
        for (std::uint32_t c = 0; c < v; ++c) {
            const auto [count, index] = picks[c];
            const ChunkPoint& point = frontiers[c][count][index];
            option.chunks.push_back(point.layers);
            option.chunk_times.push_back(point.time + extra[c]);
        }
        return option;
    };
    for (std::uint32_t n = 0; n <= layers; ++n) {
        std::vector<Candidate>& list = candidates[n];
        if (v == 2) {
            // Pareto-optimal in (chunk 0's time, chunk 1's time): chunk 0's is the prefix's.
            std::sort(list.begin(), list.end(), [](const Candidate& a, const Candidate& b) {
                return a.prefix->total != b.prefix->total ? a.prefix->total < b.prefix->total
                                                          : a.last_time < b.last_time;
            });
            double least_last = infinity;
            for (const Candidate& candidate : list) {
                if (candidate.last_time < least_last) {
                    least_last = candidate.last_time;
                    out.alternatives[n].push_back(option_of(candidate));
                }
            }
        }
        std::sort(list.begin(), list.end(), [](const Candidate& a, const Candidate& b) {
            return a.total != b.total ? a.total < b.total : a.slowest < b.slowest;
        });
        for (const Candidate& candidate : list) {
            if (out.options[n].empty() || candidate.slowest < out.options[n].back().slowest)
                out.options[n].push_back(option_of(candidate));
        }
        if (v != 2)
            out.alternatives[n] = out.options[n];
    }
    out.affine = std::move(affine);
    return out;
}

}  // namespace

namespace {

// `head` if chunk c of stage s holds the model's first block, plus `tail` if it holds the last.
double ends(const Problem& problem, std::uint32_t stage, std::uint32_t chunk, double head,
            double tail) {
    const std::uint32_t position =
        model_position(problem.schedule, problem.num_stages, problem.chunks, {stage, chunk});
    return (position == 0 ? head : 0.0) +
           (position + 1 == problem.num_stages * problem.chunks ? tail : 0.0);
}

}  // namespace

double chunk_time(const Problem& problem, std::uint32_t stage, std::uint32_t chunk,
                  const KindCounts& layers) {
    double t = ends(problem, stage, chunk, problem.time.head_time, problem.time.tail_time);
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        t += static_cast<double>(layers[k]) * problem.time.body_time[k];
    return t;
}

double chunk_forward_time(const Problem& problem, std::uint32_t stage, std::uint32_t chunk,
                          const KindCounts& layers) {
    const std::uint32_t n = std::accumulate(layers.begin(), layers.end(), 0u);
    return ends(problem, stage, chunk, problem.time.head_forward, problem.time.tail_forward) +
           static_cast<double>(n) * problem.time.body_forward;
}

std::vector<AffineStage> affine_stages(const Problem& problem, const MemorySource& memory,
                                       std::uint32_t kinds) {
    const auto list = kind_list(kinds);
    std::vector<AffineStage> stages;
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        stages.push_back(memory.linear ? linear_stage(problem, *memory.linear, s)
                                       : probed_stage(problem, memory, s, list));
    }
    return stages;
}

std::vector<ChunkedStage> build_chunked_stages(const Problem& problem,
                                               std::vector<AffineStage> affine, std::uint32_t kinds,
                                               const std::vector<std::uint32_t>& max_layers) {
    const auto list = kind_list(kinds);
    std::vector<ChunkedStage> stages;
    for (std::uint32_t s = 0; s < problem.num_stages; ++s)
        stages.push_back(combine(problem, s, std::move(affine[s]), list, max_layers.at(s)));
    return stages;
}

}  // namespace ppb::partition::detail
