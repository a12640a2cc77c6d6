// Stage options with several chunks per stage (chunk_tables.hpp).
//
// Exactness. Within a stage, a chunk's time, fixed memory and activation per in-flight
// micro-batch are sums over its layers, and each row of the stage's memory over its in-flight
// profile (profile_memory.hpp) is the base plus, per chunk, its fixed memory and its in-flight
// count at that vector times its activation. So every option worth keeping is built from mixes of
// each chunk that are Pareto-optimal in (time, fixed, activation): replacing a chunk's mix by one
// no slower and no larger in either keeps every row within budget and lowers neither the stage's
// total nor its slowest chunk. (A linear model's fixed memory is per layer, the same for every
// mix of n layers: the frontier is then over (time, activation).) The chunks are then combined
// one at a time, keeping the options that are Pareto-optimal in (total, slowest chunk, fixed
// memory, each chunk's activation); for the last chunk only the fastest mix with which every row
// still fits matters, which leaves options Pareto-optimal in (total, slowest chunk).
#include "chunk_tables.hpp"
#include "pareto.hpp"
#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <span>

namespace ppb::partition::detail {
namespace {

// ---- the affine description -----------------------------------------------------------------

AffineStage linear_stage(const Problem& problem, const ppb_linear_parameters& c,
                         std::uint32_t stage) {
    const StageEnds ends = stage_ends(problem.schedule, problem.num_stages, problem.chunks, stage);
    const double base = c.const_mb + (ends.head ? c.head_mb : 0.0) + (ends.tail ? c.tail_mb : 0.0);
    std::vector<InFlightVector> profile = problem.in_flight_profile(stage);
    AffineStage a;
    std::vector<double> bases(profile.size(), base);
    a.rows = StageRows(std::move(bases), std::move(profile));
    a.base_activation.assign(problem.chunks, 0.0);  // a linear model's ends hold no activations
    for (std::uint32_t chunk = 0; chunk < problem.chunks; ++chunk) {
        std::array<double, PPB_KIND_COUNT> fixed{};
        fixed.fill(c.per_layer_mb);
        a.fixed.push_back(fixed);
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

    // A placement with `layers[c]` in chunk c and `in_flight[c]` micro-batches in flight (each at
    // least 1: the plugin contract), plus `extra_in_flight` on chunk `more`.
    void add(const std::vector<KindCounts>& layers, const InFlightVector& in_flight,
             std::uint32_t more = 0, std::uint32_t extra_in_flight = 0) {
        std::vector<ppb_chunk> chunks(problem_.chunks);
        for (std::uint32_t c = 0; c < problem_.chunks; ++c) {
            std::copy(layers[c].begin(), layers[c].end(), chunks[c].layers);
            chunks[c].in_flight = in_flight[c] + (c == more ? extra_in_flight : 0);
        }
        chunks_.push_back(std::move(chunks));
        layers_.push_back(layers);
        in_flight_.push_back(in_flight);
    }

    // The placements that give the model's answer for `layers` at the true `counts` (0 allowed:
    // ppb::zero_count_probes); returns how many, to hand to ppb::answer_at_counts.
    std::size_t add_at_counts(const std::vector<KindCounts>& layers, const InFlightVector& counts) {
        const std::vector<InFlightVector> asked = zero_count_probes(counts);
        for (const InFlightVector& v : asked)
            add(layers, v);
        return asked.size();
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

    [[nodiscard]] std::size_t size() const { return chunks_.size(); }
    [[nodiscard]] const std::vector<KindCounts>& layers(std::size_t i) const { return layers_[i]; }
    [[nodiscard]] const InFlightVector& in_flight(std::size_t i) const { return in_flight_[i]; }

  private:
    const Problem& problem_;
    std::uint32_t stage_;
    std::vector<std::vector<ppb_chunk>> chunks_;
    std::vector<std::vector<KindCounts>> layers_;
    std::vector<InFlightVector> in_flight_;
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

// A model without coefficients, probed: the empty stage at every vector of the profile (the
// bases, at the true counts: ppb::zero_count_probes where a chunk holds none); at the first
// vector as asked, one layer of each kind in each chunk, and the same with one more micro-batch
// in flight on that chunk (its fixed memory and activation per micro-batch), and the empty stage
// with one more (the ends' activation per micro-batch of that chunk); and, at every vector as
// asked, check placements that an affine model must predict exactly.
AffineStage probed_stage(const Problem& problem, const MemorySource& memory, std::uint32_t stage,
                         const std::vector<std::size_t>& kinds) {
    const std::uint32_t v = problem.chunks;
    std::vector<InFlightVector> profile = problem.in_flight_profile(stage);
    const InFlightVector first = asked_in_flight(profile.front());
    const std::vector<KindCounts> empty(v, KindCounts{});
    Probe probe(problem, stage);
    std::vector<std::size_t> base_rows;  // vector j's bases: base_rows[j] .. base_rows[j + 1] - 1
    for (const InFlightVector& vector : profile) {
        base_rows.push_back(probe.size());
        (void)probe.add_at_counts(empty, vector);
    }
    base_rows.push_back(probe.size());
    probe.add(empty, first);
    const std::size_t first_unit = probe.size();
    for (std::uint32_t c = 0; c < v; ++c) {
        for (const std::size_t k : kinds) {
            std::vector<KindCounts> one = empty;
            one[c][k] = 1;
            probe.add(one, first);
            probe.add(one, first, c, 1);
        }
        probe.add(empty, first, c, 1);
    }
    // Checks: three layers of each kind in each chunk; every kind in every chunk at once (c + 1
    // layers in chunk c, as far as the model's body layers go: a model refuses a stage holding
    // more than it has, and 8 chunks of 5 kinds would ask for 180); at every vector as asked,
    // against the empty stage there (the first of its bases).
    const std::uint32_t body = problem.time.body_layers;
    const std::uint32_t three_layers = std::min<std::uint32_t>(3, body);
    std::vector<KindCounts> all = empty;
    std::uint32_t left = body;
    for (std::uint32_t c = 0; c < v; ++c) {
        for (const std::size_t k : kinds) {
            all[c][k] = std::min(c + 1, left);
            left -= all[c][k];
        }
    }
    const std::size_t first_check = probe.size();
    std::vector<std::size_t> check_row;
    for (std::size_t row = 0; row < profile.size(); ++row) {
        const InFlightVector asked = asked_in_flight(profile[row]);
        for (std::uint32_t c = 0; c < v; ++c) {
            for (const std::size_t k : kinds) {
                std::vector<KindCounts> three = empty;
                three[c][k] = three_layers;
                probe.add(three, asked);
                check_row.push_back(row);
            }
        }
        probe.add(all, asked);
        check_row.push_back(row);
    }
    const std::vector<double> predicted = probe.predict(memory);

    std::vector<double> base;
    for (std::size_t j = 0; j < profile.size(); ++j) {
        base.push_back(answer_at_counts(std::span<const double>(predicted).subspan(
            base_rows[j], base_rows[j + 1] - base_rows[j])));
    }
    const double base_first = predicted[first_unit - 1];
    AffineStage a;
    std::size_t i = first_unit;
    for (std::uint32_t c = 0; c < v; ++c) {
        std::array<double, PPB_KIND_COUNT> unit{};
        std::array<double, PPB_KIND_COUNT> fixed{};
        std::array<double, PPB_KIND_COUNT> activation{};
        std::vector<double> with_more;
        for (const std::size_t k : kinds) {
            unit[k] = predicted[i] - base_first;
            with_more.push_back(predicted[i + 1]);
            i += 2;
        }
        const double empty_more = predicted[i++];
        for (std::size_t j = 0; j < kinds.size(); ++j) {
            const std::size_t k = kinds[j];
            activation[k] = (with_more[j] - empty_more) - unit[k];
            fixed[k] = unit[k] - first[c] * activation[k];
        }
        a.fixed.push_back(fixed);
        a.activation.push_back(activation);
        a.base_activation.push_back(empty_more - base_first);
    }
    for (std::size_t check = first_check; check < predicted.size(); ++check) {
        const auto& layers = probe.layers(check);
        const InFlightVector& vector = probe.in_flight(check);
        double affine = predicted[base_rows[check_row[check - first_check]]];
        for (std::uint32_t c = 0; c < v; ++c) {
            for (const std::size_t k : kinds)
                affine += (a.fixed[c][k] + vector[c] * a.activation[c][k]) * layers[c][k];
        }
        if (!affine_agrees(affine, predicted[check])) {
            throw InputError(fmt::format(
                "the memory model is not affine in the layer counts of a stage (stage {}, {}, "
                "in flight ({}): predicted {:.6g} MB, the sum of its parts {:.6g} MB); planning "
                "several chunks per stage needs a model whose stage memory is a constant plus a "
                "cost per layer of each kind and chunk, and per layer and micro-batch in flight",
                stage, describe_layers(layers), fmt::join(vector, ", "), predicted[check], affine));
        }
    }
    a.rows = StageRows(std::move(base), std::move(profile));
    return a;
}

// ---- chunk frontiers -------------------------------------------------------------------------

struct ChunkPoint {
    double time = 0.0;   // body layers only
    ChunkMemory memory;  // body layers only
    KindCounts layers{};
};
using Frontier = std::vector<std::vector<ChunkPoint>>;  // [n]: by increasing time

// The kinds no other kind beats on time, fixed memory and activation together (ties broken by
// kind index), as undominated() does for one memory.
std::vector<std::size_t> useful_kinds(const std::vector<std::size_t>& kinds,
                                      const std::array<double, PPB_KIND_COUNT>& time,
                                      const std::array<double, PPB_KIND_COUNT>& fixed,
                                      const std::array<double, PPB_KIND_COUNT>& activation) {
    std::vector<std::size_t> out;
    for (const std::size_t k : kinds) {
        const bool dominated = std::any_of(kinds.begin(), kinds.end(), [&](std::size_t o) {
            if (o == k)
                return false;
            const bool no_worse =
                time[o] <= time[k] && fixed[o] <= fixed[k] && activation[o] <= activation[k];
            const bool better =
                time[o] < time[k] || fixed[o] < fixed[k] || activation[o] < activation[k] || o < k;
            return no_worse && better;
        });
        if (!dominated)
            out.push_back(k);
    }
    return out;
}

// How a chunk's points are weighed against the budget: `fits(point)` whether the stage with only
// this chunk's point fits in every row; `safe(point, more)` whether it fits with `more` further
// layers anywhere on the stage, each adding the most one layer can in each row.
struct ChunkBudget {
    std::function<bool(const ChunkMemory&)> fits;
    std::function<bool(const ChunkMemory&, std::uint32_t)> safe;
};

// The Pareto frontier over (time, fixed, activation) of the mixes of `kinds`, for every n up to
// `layers` (the most the stage may hold), built layer by layer; mixes that alone do not fit are
// dropped when no kind frees memory. A point is also dropped when a faster one is *safe*: it
// fits with any layers - n more layers anywhere on the stage, so no completion needs the slower
// one. (A point built from a dropped one is beaten by the same layer added to the safe one,
// which stays safe: exact, and a generous limit leaves one point per n.)
Frontier family_frontier(std::uint32_t layers, const std::vector<std::size_t>& kinds,
                         const std::array<double, PPB_KIND_COUNT>& time,
                         const std::array<double, PPB_KIND_COUNT>& fixed,
                         const std::array<double, PPB_KIND_COUNT>& activation,
                         const ChunkBudget& budget) {
    const auto useful = useful_kinds(kinds, time, fixed, activation);
    const bool monotone = std::all_of(useful.begin(), useful.end(), [&](std::size_t k) {
        return fixed[k] >= 0.0 && activation[k] >= 0.0;
    });
    Frontier frontier(layers + 1);
    frontier[0] = {ChunkPoint{}};
    for (std::uint32_t n = 1; n <= layers; ++n) {
        std::vector<ChunkPoint>& next = frontier[n];
        for (const ChunkPoint& p : frontier[n - 1]) {
            for (const std::size_t k : useful) {
                ChunkPoint q = p;
                q.time += time[k];
                q.memory.fixed += fixed[k];
                q.memory.activation += activation[k];
                ++q.layers[k];
                if (monotone && !budget.fits(q.memory))
                    continue;
                next.push_back(q);
            }
        }
        keep_time_fixed_activation_frontier(next);
        const auto safe = std::find_if(next.begin(), next.end(), [&](const ChunkPoint& q) {
            return budget.safe(q.memory, layers - n);
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
                        const std::array<double, PPB_KIND_COUNT>& time,
                        const std::array<double, PPB_KIND_COUNT>& fixed,
                        const std::array<double, PPB_KIND_COUNT>& activation,
                        const ChunkBudget& budget) {
    if (const auto& setting = problem.recompute_setting) {
        // One recompute setting: the setting's mix is the only candidate of each count.
        Frontier frontier(layers + 1);
        for (std::uint32_t n = 0; n <= layers; ++n) {
            ChunkPoint p{0.0, {}, setting->chunk_layers(n)};
            for (const std::size_t k : kinds) {
                p.time += time[k] * p.layers[k];
                p.memory.fixed += fixed[k] * p.layers[k];
                p.memory.activation += activation[k] * p.layers[k];
            }
            frontier[n] = {p};
        }
        return frontier;
    }
    const auto useful = useful_kinds(kinds, time, fixed, activation);
    const auto has = [&](std::size_t k) {
        return std::find(useful.begin(), useful.end(), k) != useful.end();
    };
    if (problem.rule == RecomputeRule::any || !has(PPB_KIND_SELECT) || !has(PPB_KIND_COMM))
        return family_frontier(layers, kinds, time, fixed, activation, budget);
    auto without = [&](std::size_t kind) {
        std::vector<std::size_t> out = kinds;
        std::erase(out, kind);
        return out;
    };
    Frontier a = family_frontier(layers, without(PPB_KIND_COMM), time, fixed, activation, budget);
    const Frontier b =
        family_frontier(layers, without(PPB_KIND_SELECT), time, fixed, activation, budget);
    for (std::uint32_t n = 0; n <= layers; ++n) {
        a[n].insert(a[n].end(), b[n].begin(), b[n].end());
        keep_time_fixed_activation_frontier(a[n]);
    }
    return a;
}

// ---- combining the chunks of a stage ---------------------------------------------------------

// The most options of one stage combined over its chunks before the last, and the most
// comparisons keeping them Pareto-optimal (several rows): beyond them (three or more chunks,
// many layers, a loosely binding limit) the exact search would take seconds to minutes and
// gigabytes, and TooLargeToPlanExactly says so. An ExactWorkBudget in scope (solve()'s exact
// attempt) bounds the work of every stage and setting together, more tightly.
constexpr std::size_t max_partial_options = 1'000'000;
constexpr std::size_t max_comparisons = 100'000'000;

thread_local ExactWorkBudget* active_budget = nullptr;

// Takes `options` partial options and `comparisons` from the budget in scope: false, taking
// nothing, when it has not that many left (true when none is in scope).
[[nodiscard]] bool take_from_budget(std::size_t options, std::size_t comparisons) {
    if (active_budget == nullptr)
        return true;
    if (active_budget->partial_options < options || active_budget->comparisons < comparisons)
        return false;
    active_budget->partial_options -= options;
    active_budget->comparisons -= comparisons;
    return true;
}

// What one stage's combination may still do: its own limits and the budget in scope.
class StageWork {
  public:
    // False when making one more partial option passes a limit.
    [[nodiscard]] bool make() { return ++made_ <= max_partial_options && take_from_budget(1, 0); }
    // False when n more comparisons pass a limit.
    [[nodiscard]] bool compare(std::size_t n) {
        compared_ += n;
        return compared_ <= max_comparisons && take_from_budget(0, n);
    }

    [[nodiscard]] std::size_t made() const noexcept { return made_; }
    [[nodiscard]] std::size_t compared() const noexcept { return compared_; }

  private:
    std::size_t made_ = 0;
    std::size_t compared_ = 0;
};

TooLargeToPlanExactly too_large_to_plan(std::uint32_t chunks, std::uint32_t stage) {
    return TooLargeToPlanExactly(fmt::format(
        "planning {} chunks per stage exactly weighs too many partial options on stage {} "
        "(many chunks and kinds under a limit that binds loosely leave many mixes to weigh)",
        chunks, stage));
}

// A partial option: a stage's chunks 0..c so far (the others empty). Partials are kept by level
// (c) and count (the layers so far), their rows in one buffer per level and count, and each
// names its own chunk's pick and its prefix one level up: nothing of its own is allocated.
struct Partial {
    double total = 0.0;
    double slowest = 0.0;
    std::size_t rows_at = 0;  // into its level's row buffer of its count
    std::uint32_t prefix_held = 0;
    std::uint32_t prefix = 0;  // the level above's partial[prefix_held][prefix]
    std::uint32_t n = 0;       // chunk c's layers
    std::uint32_t index = 0;   // and their point on chunk c's frontier
    std::uint32_t fewest = 0;  // the fewest and most layers of one chunk so far
    std::uint32_t most = 0;
};

// The partials of one level, by count.
struct PartialLevel {
    std::vector<std::vector<Partial>> partial;  // [held]
    std::vector<std::vector<double>> rows;      // [held]: row_count doubles per partial
};

// Under Problem::balanced_chunks, whether the next chunk may hold n layers after `p`: every
// chunk of a stage within one layer of every other.
bool balanced_with(const Partial& p, std::uint32_t n) {
    return std::max(p.most, n) - std::min(p.fewest, n) <= 1;
}

bool rows_no_larger(std::span<const double> a, std::span<const double> b) {
    for (std::size_t j = 0; j < a.size(); ++j) {
        if (a[j] > b[j])
            return false;
    }
    return true;
}

// Keeps the options Pareto-optimal in (total, slowest chunk, rows): p' is dominated by a p no
// slower in total and slowest chunk whose every row is no larger, since the same later chunks
// add the same to each row of both. `safe(p)`: every way to complete p fits the budget, so its
// memory no longer matters — it dominates any p' no faster in total and slowest chunk, whatever
// p' holds in memory. Without it a generous limit would keep every memory. `rows_of(p)`: its
// rows (a span). False, leaving `options` in no useful state, when the comparisons would pass
// `work`'s limits (the stage is then too large to plan exactly).
template <class Option, class RowsOf, class Safe>
[[nodiscard]] bool keep_pareto_3d(std::vector<Option>& options, RowsOf rows_of, Safe safe,
                                  StageWork& work) {
    std::sort(options.begin(), options.end(), [&](const Option& a, const Option& b) {
        if (a.total != b.total)
            return a.total < b.total;
        if (a.slowest != b.slowest)
            return a.slowest < b.slowest;
        return std::ranges::lexicographical_compare(rows_of(a), rows_of(b));
    });
    // The kept options are compacted to the front of `options` (an option moves only to an index
    // no later than its own, after it is weighed), keeping the vector's capacity for reuse.
    std::size_t kept = 0;
    if (!options.empty() && rows_of(options.front()).size() == 1) {
        // One row: the kept points' staircase over (slowest, memory): memory falls as slowest
        // rises, so the least memory among kept points no slower than p is the entry at or below
        // p.slowest.
        std::map<double, double> staircase;
        for (Option& p : options) {
            const double memory = safe(p) ? -infinity : rows_of(p)[0];
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
            if (&options[kept] != &p)
                options[kept] = std::move(p);
            ++kept;
        }
        options.resize(kept);
        return true;
    }
    // Several rows: compared with every kept option (those kept are no faster in total): the safe
    // ones at once (the fastest slowest chunk among them decides), the others row by row. These
    // comparisons grow as the square of the options; past `work`'s limits the stage is too large
    // to plan exactly.
    double safe_slowest = infinity;
    std::vector<std::size_t> unsafe;  // indices of kept options
    for (std::size_t at = 0; at < options.size(); ++at) {
        const Option& p = options[at];
        if (safe_slowest <= p.slowest)
            continue;
        if (!work.compare(unsafe.size()))
            return false;
        // The latest kept first: the closest in total, the likeliest to dominate (the answer is
        // the same in any order; only the work to find it differs).
        bool dominated = false;
        for (std::size_t i = unsafe.size(); i-- > 0 && !dominated;) {
            const Option& q = options[unsafe[i]];
            dominated = q.slowest <= p.slowest && rows_no_larger(rows_of(q), rows_of(p));
        }
        if (dominated)
            continue;
        if (safe(p))
            safe_slowest = std::min(safe_slowest, p.slowest);
        else
            unsafe.push_back(kept);
        if (kept != at)
            options[kept] = std::move(options[at]);
        ++kept;
    }
    options.resize(kept);
    return true;
}

// With one recompute setting, the least memory of n layers in row j of a stage: over every way
// to spread them over its chunks (each at least its minimum), each chunk holding the setting's
// mix, by dynamic programming over the chunks. Infinity where no spread exists. `unit(c, k)` is
// what a layer of kind k in chunk c adds to the row.
template <class Unit>
std::vector<double> least_memory_of_setting(const MegatronRecompute& setting, double empty,
                                            Unit unit, const std::vector<std::uint32_t>& fewest,
                                            std::uint32_t all, StageWork& work) {
    const std::size_t v = fewest.size();
    std::vector<KindCounts> mixes(all + 1);
    for (std::uint32_t n = 0; n <= all; ++n)
        mixes[n] = setting.chunk_layers(n);
    // adds[c][n]: what n layers add in chunk c.
    std::vector<std::vector<double>> adds(v, std::vector<double>(all + 1, 0.0));
    for (std::size_t c = 0; c < v; ++c) {
        for (std::uint32_t n = 0; n <= all; ++n) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                if (mixes[n][k] != 0)
                    adds[c][n] += unit(static_cast<std::uint32_t>(c), k) * mixes[n][k];
            }
        }
    }
    std::vector<double> least(all + 1, infinity);
    least[0] = empty;
    for (std::size_t c = 0; c < v; ++c) {
        // Charged as comparisons from 3 chunks on, where the exact attempt may give up anyway (at
        // 8 chunks, many rows and a dozen settings this is most of its work); 1 or 2 chunks are
        // always planned exactly.
        if (v >= 3 && !work.compare(static_cast<std::size_t>(all) * all / 2))
            return {};
        std::vector<double> next(all + 1, infinity);
        for (std::uint32_t held = 0; held <= all; ++held) {
            if (!std::isfinite(least[held]))
                continue;
            for (std::uint32_t n = fewest[c]; held + n <= all; ++n)
                next[held + n] = std::min(next[held + n], least[held] + adds[c][n]);
        }
        least = std::move(next);
    }
    return least;
}

// Where the search for the last chunk's fastest fitting point may start. Its points of each
// count are by increasing time; in row j a point adds fixed + f_j x activation (f_j the chunk's
// micro-batches in flight there), and no point before the first whose least add so far (a
// non-increasing prefix minimum) is within the row's room can fit that row. The largest such
// index over the rows is found by bisection; the points from it on are then checked exactly
// (StageRows::fits_with), so the point found is the same. The room is widened by 1e-6 MB and a
// relative 1e-9, far above the rounding of the sums, so no point that fits is skipped.
class LastChunkSkips {
  public:
    LastChunkSkips(const Frontier& frontier, const StageRows& rows, std::uint32_t chunk)
        : row_count_(rows.size()), least_(frontier.size()) {
        for (std::size_t n = 0; n < frontier.size(); ++n) {
            const std::vector<ChunkPoint>& points = frontier[n];
            std::vector<double>& least = least_[n];  // [j * points + i]
            least.resize(row_count_ * points.size());
            for (std::size_t j = 0; j < row_count_; ++j) {
                const double in_flight = rows.count(j, chunk);
                double so_far = infinity;
                for (std::size_t i = 0; i < points.size(); ++i) {
                    const ChunkMemory& m = points[i].memory;
                    so_far = std::min(so_far, m.fixed + in_flight * m.activation);
                    least[j * points.size() + i] = so_far;
                }
            }
        }
    }

    // The first point of count n that may fit a stage whose other chunks give `rows`.
    [[nodiscard]] std::size_t first_possible(std::uint32_t n, std::span<const double> rows,
                                             double budget) const {
        const std::vector<double>& least = least_[n];
        const std::size_t size = least.size() / row_count_;  // StageRows has a row at least
        std::size_t first = 0;
        for (std::size_t j = 0; j < row_count_ && first < size; ++j) {
            const double room = budget - rows[j];
            const double slack = 1e-6 + 1e-9 * (std::abs(budget) + std::abs(rows[j]));
            const auto begin = least.begin() + static_cast<std::ptrdiff_t>(j * size);
            const auto at = std::partition_point(
                begin + static_cast<std::ptrdiff_t>(first),
                begin + static_cast<std::ptrdiff_t>(size),
                [&](double m) { return m > room + slack + 1e-9 * std::abs(m); });
            first = static_cast<std::size_t>(at - begin);
        }
        return first;
    }

  private:
    std::size_t row_count_;
    std::vector<std::vector<double>> least_;  // [n][j * points + i]
};

// The options of one stage holding at most `max_layers` body layers (every count up to L when
// it is L or more).
ChunkedStage combine(const Problem& problem, std::uint32_t stage, AffineStage affine,
                     const std::vector<std::size_t>& kinds, std::uint32_t max_layers,
                     StageWork& work) {
    // `all` sizes the arrays and least_memory (explain() reads it for every count); the options
    // stop at `layers`.
    const std::uint32_t all = problem.time.body_layers;
    const std::uint32_t layers = std::min(all, max_layers);
    const std::uint32_t v = problem.chunks;
    const double budget = problem.budget_mb();
    const StageRows& rows = affine.rows;
    const std::size_t row_count = rows.size();

    // A layer of kind k in chunk c adds unit(j, c, k) MB to row j.
    const auto unit = [&](std::size_t j, std::uint32_t c, std::size_t k) {
        return affine.fixed[c][k] + rows.count(j, c) * affine.activation[c][k];
    };
    bool monotone = true;  // no kind frees memory: a partial option over budget stays over
    for (std::uint32_t c = 0; c < v; ++c) {
        for (const std::size_t k : kinds)
            monotone = monotone && affine.fixed[c][k] >= 0.0 && affine.activation[c][k] >= 0.0;
    }
    // Per row, the most memory one more layer can add in chunks from..v-1 (at least 0).
    const auto worst_from = [&](std::uint32_t from) {
        std::vector<double> worst(row_count, 0.0);
        for (std::size_t j = 0; j < row_count; ++j) {
            for (std::uint32_t c = from; c < v; ++c) {
                for (const std::size_t k : kinds)
                    worst[j] = std::max(worst[j], unit(j, c, k));
            }
        }
        return worst;
    };
    const std::vector<double> worst_anywhere = worst_from(0);
    std::vector<double> empty_rows;
    rows.rows({}, empty_rows);

    std::vector<Frontier> frontiers;
    std::vector<double> extra;  // the ends' time per chunk
    std::vector<std::uint32_t> fewest;
    for (std::uint32_t c = 0; c < v; ++c) {
        ChunkBudget chunk_budget{
            [&, c](const ChunkMemory& m) { return rows.fits_with(empty_rows, c, m, {}, budget); },
            [&, c](const ChunkMemory& m, std::uint32_t more) {
                return rows.fits_with(empty_rows, c, m, worst_anywhere, budget, more);
            }};
        frontiers.push_back(chunk_frontier(problem, layers, kinds,
                                           layer_times(problem, stage, c).time, affine.fixed[c],
                                           affine.activation[c], chunk_budget));
        extra.push_back(chunk_time(problem, stage, c, KindCounts{}));
        fewest.push_back(problem.min_layers(stage, c));
    }

    const auto too_large = [&] { return too_large_to_plan(v, stage); };
    ChunkedStage out;
    out.stage = stage;
    // The least memory of n layers in row j: each chunk's minimum on its lightest kind, the rest on
    // the lightest (chunk, kind) (exact for one row); with one recompute setting, the least over
    // the ways to spread them over the chunks, each chunk holding the setting's mix. With several
    // rows the largest of these is a lower bound of the least peak (one mix may not be the
    // lightest in every row), which is all the cap and the explanation need.
    std::uint32_t required_layers = 0;
    for (std::uint32_t c = 0; c < v; ++c)
        required_layers += fewest[c];
    out.least_memory.assign(all + 1, infinity);
    double heaviest_least = -infinity;
    for (std::size_t j = 0; j < row_count; ++j) {
        double lightest = infinity;
        double required = empty_rows[j];
        ppb_kind lightest_kind = PPB_KIND_NONE;
        for (std::uint32_t c = 0; c < v; ++c) {
            double chunk_lightest = infinity;
            for (const std::size_t k : kinds) {
                chunk_lightest = std::min(chunk_lightest, unit(j, c, k));
                if (unit(j, c, k) < lightest) {
                    lightest = unit(j, c, k);
                    lightest_kind = static_cast<ppb_kind>(k);
                }
            }
            required += fewest[c] * chunk_lightest;
        }
        std::vector<double> row_least(all + 1, infinity);
        // Balanced chunks (the fallback of a problem too large to plan exactly) take the bound
        // below: its many rows would make the setting's least the stage's main work.
        if (const auto& setting = problem.recompute_setting; setting && !problem.balanced_chunks) {
            row_least = least_memory_of_setting(
                *setting, empty_rows[j],
                [&](std::uint32_t c, std::size_t k) { return unit(j, c, k); }, fewest, all, work);
            if (row_least.empty())
                throw too_large();
        } else {
            for (std::uint32_t n = required_layers; n <= all; ++n)
                row_least[n] = required + (n - required_layers) * lightest;
        }
        for (std::uint32_t n = 0; n <= all; ++n) {
            if (j == 0 || row_least[n] > out.least_memory[n])
                out.least_memory[n] = row_least[n];
        }
        const double at_all = required + (all - required_layers) * lightest;
        if (j == 0 || at_all > heaviest_least) {
            heaviest_least = at_all;
            out.least_memory_kind = lightest_kind;
        }
    }

    const auto over_budget = [&](std::span<const double> r) {
        return std::any_of(r.begin(), r.end(), [&](double m) { return !within_budget(m, budget); });
    };
    // Chunk 0 alone, then each further chunk added: levels[c] holds the partials of chunks 0..c.
    std::vector<PartialLevel> levels(1);
    levels[0].partial.resize(layers + 1);
    levels[0].rows.resize(layers + 1);
    for (std::uint32_t n = fewest[0]; n <= layers; ++n) {
        const auto& points = frontiers[0][n];
        for (std::uint32_t i = 0; i < points.size(); ++i) {
            const double t = points[i].time + extra[0];
            std::vector<double>& buffer = levels[0].rows[n];
            levels[0].partial[n].push_back({t, t, buffer.size(), 0, 0, n, i, n, n});
            for (std::size_t j = 0; j < row_count; ++j)
                buffer.push_back(rows.row_with(empty_rows, j, 0, points[i].memory));
        }
    }
    const auto rows_at = [&](const PartialLevel& level, std::uint32_t held, const Partial& p) {
        return std::span<const double>(level.rows[held].data() + p.rows_at, row_count);
    };
    // The micro-batches each chunk holds in each row, and the most memory within the budget.
    std::vector<std::vector<double>> in_flight(v, std::vector<double>(row_count));
    for (std::uint32_t c = 0; c < v; ++c) {
        for (std::size_t j = 0; j < row_count; ++j)
            in_flight[c][j] = rows.count(j, c);
    }
    const double ceiling = budget_ceiling(budget);
    // The chunks between the first and the last: options kept Pareto-optimal in (total,
    // slowest chunk, rows). Each count's candidates are weighed flat (their rows in one buffer,
    // their picks as the prefix they extend) and only those kept stay, their rows compacted:
    // most are dominated.
    // The candidates of each count, reused from level to level and from stage to stage on this
    // thread (their capacity with them: fresh buffers of this size were a fifth of a 4- or
    // 8-chunk stage's time in page faults).
    thread_local PartialLevel weighed;
    if (weighed.partial.size() < layers + 1) {
        weighed.partial.resize(layers + 1);
        weighed.rows.resize(layers + 1);
    }
    for (std::uint32_t c = 1; c + 1 < v; ++c) {
        const PartialLevel& above = levels.back();
        for (std::uint32_t held = 0; held <= layers; ++held) {
            weighed.partial[held].clear();
            weighed.rows[held].clear();
        }
        for (std::uint32_t held = 0; held <= layers; ++held) {
            for (std::uint32_t at = 0; at < above.partial[held].size(); ++at) {
                const Partial& p = above.partial[held][at];
                const std::span<const double> p_rows = rows_at(above, held, p);
                for (std::uint32_t n = fewest[c]; held + n <= layers; ++n) {
                    if (problem.balanced_chunks && !balanced_with(p, n))
                        continue;
                    const auto& points = frontiers[c][n];
                    std::vector<double>& buffer = weighed.rows[held + n];
                    for (std::uint32_t i = 0; i < points.size(); ++i) {
                        const double t = points[i].time + extra[c];
                        // The candidate's rows, written where they are kept if it is (each as
                        // StageRows::row_with forms it).
                        const std::size_t at_rows = buffer.size();
                        buffer.resize(at_rows + row_count);
                        bool over = false;
                        for (std::size_t j = 0; j < row_count; ++j) {
                            const double row = p_rows[j] + points[i].memory.fixed +
                                               in_flight[c][j] * points[i].memory.activation;
                            buffer[at_rows + j] = row;
                            over = over || !(row <= ceiling);
                        }
                        if (monotone && over) {
                            buffer.resize(at_rows);
                            continue;
                        }
                        if (!work.make())
                            throw too_large();
                        weighed.partial[held + n].push_back(
                            {p.total + t, std::max(p.slowest, t), at_rows, held, at, n, i,
                             std::min(p.fewest, n), std::max(p.most, n)});
                    }
                }
            }
        }
        // The most memory a layer can add in the chunks still to come.
        const std::vector<double> worst = worst_from(c + 1);
        PartialLevel next;
        next.partial.resize(layers + 1);
        next.rows.resize(layers + 1);
        for (std::uint32_t held = 0; held <= layers; ++held) {
            const std::vector<double>& buffer = weighed.rows[held];
            const auto rows_of = [&](const Partial& f) {
                return std::span<const double>(buffer.data() + f.rows_at, row_count);
            };
            const bool kept = keep_pareto_3d(
                weighed.partial[held], rows_of,
                [&](const Partial& f) {
                    const std::span<const double> r = rows_of(f);
                    for (std::size_t j = 0; j < row_count; ++j) {
                        if (!within_budget(r[j] + (layers - held) * worst[j], budget))
                            return false;
                    }
                    return true;
                },
                work);
            if (!kept)
                throw too_large();
            std::vector<Partial>& kept_here = next.partial[held];
            std::vector<double>& compact = next.rows[held];
            kept_here.reserve(weighed.partial[held].size());
            compact.reserve(weighed.partial[held].size() * row_count);
            for (const Partial& f : weighed.partial[held]) {
                const std::span<const double> r = rows_of(f);
                kept_here.push_back(f);
                kept_here.back().rows_at = compact.size();
                compact.insert(compact.end(), r.begin(), r.end());
            }
        }
        levels.push_back(std::move(next));
    }
    const PartialLevel& last_level = levels.back();
    // A partial's picks, chunk by chunk: (layers, frontier index).
    const auto picks_of = [&](std::uint32_t held, std::uint32_t at) {
        std::vector<std::pair<std::uint32_t, std::uint32_t>> picks(levels.size());
        for (std::size_t c = levels.size(); c-- > 0;) {
            const Partial& p = levels[c].partial[held][at];
            picks[c] = {p.n, p.index};
            held = p.prefix_held;
            at = p.prefix;
        }
        return picks;
    };

    // The last chunk: for each partial option and count, only the fastest mix with which every
    // row still fits can be worth having. Each count's options are those Pareto-optimal in
    // (total, slowest chunk), and with two chunks its alternatives those Pareto-optimal in (chunk
    // 0's time, chunk 1's time): kept as the candidates come (Staircase), so of equal candidates
    // the first made stays unless another needs less memory. Candidates stay small (their
    // prefix and pick) until kept.
    struct Candidate {
        std::uint32_t held = 0;  // the prefix: last_level.partial[held][at]
        std::uint32_t at = 0;
        std::uint32_t n = 0;  // the last chunk's layers and frontier index (v > 1)
        std::uint32_t index = 0;
    };
    const auto prefix_of = [&](const Candidate& candidate) -> const Partial& {
        return last_level.partial[candidate.held][candidate.at];
    };
    std::vector<Staircase<Candidate>> options(layers + 1);
    std::vector<Staircase<Candidate>> alternatives(v == 2 ? layers + 1 : 0);
    // Of two candidates as fast in total and in every chunk, the one needing less memory (the
    // stage's largest row) is kept: the plan's headroom is larger at the same objective.
    const auto memory_of = [&](const Candidate& candidate) {
        const std::span<const double> r = rows_at(last_level, candidate.held, prefix_of(candidate));
        double peak = -infinity;
        for (std::size_t j = 0; j < row_count; ++j) {
            peak = std::max(
                peak, v == 1
                          ? r[j]
                          : rows.row_with(r, j, v - 1,
                                          frontiers[v - 1][candidate.n][candidate.index].memory));
        }
        return peak;
    };
    const auto less_memory = [&](const Candidate& offered, const Candidate& kept) {
        return memory_of(offered) < memory_of(kept);
    };
    if (v == 1) {
        for (std::uint32_t n = 0; n <= layers; ++n) {
            for (std::uint32_t at = 0; at < last_level.partial[n].size(); ++at) {
                const Partial& p = last_level.partial[n][at];
                const std::span<const double> r = rows_at(last_level, n, p);
                if (!over_budget(r))
                    options[n].offer(p.total, p.slowest, {n, at, 0, 0}, less_memory);
            }
        }
    } else {
        const std::uint32_t c = v - 1;
        const LastChunkSkips skips(frontiers[c], rows, c);
        for (std::uint32_t held = 0; held <= layers; ++held) {
            for (std::uint32_t at = 0; at < last_level.partial[held].size(); ++at) {
                const Partial& p = last_level.partial[held][at];
                const std::span<const double> p_rows = rows_at(last_level, held, p);
                for (std::uint32_t n = fewest[c]; held + n <= layers; ++n) {
                    if (problem.balanced_chunks && !balanced_with(p, n))
                        continue;
                    // By increasing time; with several rows the points that fit need not be a
                    // suffix, so the first that fits is searched for, from the first point
                    // that each row alone may admit.
                    const auto& points = frontiers[c][n];
                    const auto fit = std::find_if(
                        points.begin() +
                            static_cast<std::ptrdiff_t>(skips.first_possible(n, p_rows, budget)),
                        points.end(), [&](const auto& q) {
                            return rows.fits_with(p_rows, c, q.memory, {}, budget);
                        });
                    if (fit == points.end())
                        continue;
                    const double t = fit->time + extra[c];
                    const Candidate candidate{held, at, n,
                                              static_cast<std::uint32_t>(fit - points.begin())};
                    options[held + n].offer(p.total + t, std::max(p.slowest, t), candidate,
                                            less_memory);
                    if (v == 2)
                        alternatives[held + n].offer(p.total, t, candidate, less_memory);
                }
            }
        }
    }

    out.options.resize(all + 1);
    out.alternatives.resize(all + 1);
    const auto option_of = [&](const typename Staircase<Candidate>::Step& step) {
        const Candidate& candidate = step.value;
        auto picks = picks_of(candidate.held, candidate.at);
        if (v > 1)
            picks.emplace_back(candidate.n, candidate.index);
        StageOption option{0.0, 0.0, 0.0, {}, {}};
        std::vector<ChunkMemory> memories;
        for (std::uint32_t c = 0; c < v; ++c) {
            const auto [count, index] = picks[c];
            const ChunkPoint& point = frontiers[c][count][index];
            option.chunks.push_back(point.layers);
            option.chunk_times.push_back(point.time + extra[c]);
            memories.push_back(point.memory);
        }
        const Partial& prefix = prefix_of(candidate);
        option.total = prefix.total;
        option.slowest = prefix.slowest;
        if (v > 1) {
            const double last = option.chunk_times.back();
            option.total += last;
            option.slowest = std::max(option.slowest, last);
        }
        option.memory = rows.peak(memories).memory;
        return option;
    };
    for (std::uint32_t n = 0; n <= layers; ++n) {
        for (const auto& step : options[n].steps())
            out.options[n].push_back(option_of(step));
        if (v == 2) {
            for (const auto& step : alternatives[n].steps())
                out.alternatives[n].push_back(option_of(step));
        } else {
            out.alternatives[n] = out.options[n];
        }
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

ScopedExactWorkBudget::ScopedExactWorkBudget(ExactWorkBudget budget)
    : budget_(budget), outer_(active_budget) {
    if (outer_ == nullptr)  // the outermost budget governs (solve() within solve_megatron)
        active_budget = &budget_;
}

ScopedExactWorkBudget::ScopedExactWorkBudget(Unlimited) : outer_(active_budget) {
    active_budget = nullptr;
}

ScopedExactWorkBudget::~ScopedExactWorkBudget() {
    active_budget = outer_;
}

LayerTimes layer_times(const Problem& problem, std::uint32_t stage, std::uint32_t chunk) {
    if (problem.position_times.empty())
        return {problem.time.body_time, problem.time.body_forward, 0.0};
    const PositionTime& at = problem.position_times.at(
        model_position(problem.schedule, problem.num_stages, problem.chunks, {stage, chunk}));
    return {at.time, at.forward, at.offset};
}

std::array<double, PPB_KIND_COUNT> least_layer_times(const Problem& problem) {
    std::array<double, PPB_KIND_COUNT> least = problem.time.body_time;
    if (!problem.position_times.empty()) {
        least.fill(infinity);
        for (const PositionTime& at : problem.position_times) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                least[k] = std::min(least[k], at.time[k]);
        }
    }
    return least;
}

double chunk_time(const Problem& problem, std::uint32_t stage, std::uint32_t chunk,
                  const KindCounts& layers) {
    const LayerTimes layer = layer_times(problem, stage, chunk);
    double t =
        ends(problem, stage, chunk, problem.time.head_time, problem.time.tail_time) + layer.offset;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        t += static_cast<double>(layers[k]) * layer.time[k];
    return t;
}

double chunk_forward_time(const Problem& problem, std::uint32_t stage, std::uint32_t chunk,
                          const KindCounts& layers) {
    const std::uint32_t n = std::accumulate(layers.begin(), layers.end(), 0u);
    return ends(problem, stage, chunk, problem.time.head_forward, problem.time.tail_forward) +
           static_cast<double>(n) * layer_times(problem, stage, chunk).forward;
}

namespace {
thread_local ScopedAffineStages* active_affine_stages = nullptr;
}  // namespace

ScopedAffineStages::ScopedAffineStages(const MemorySource& memory)
    : memory_(&memory), outer_(active_affine_stages) {
    // Within a scope for the same source, that one goes on remembering.
    installed_ = outer_ == nullptr || outer_->memory_ != &memory;
    if (installed_)
        active_affine_stages = this;
}

ScopedAffineStages::~ScopedAffineStages() {
    if (installed_)
        active_affine_stages = outer_;
}

std::vector<AffineStage> affine_stages(const Problem& problem, const MemorySource& memory,
                                       std::uint32_t kinds) {
    ScopedAffineStages* scope = active_affine_stages;
    if (scope != nullptr && scope->memory() != &memory)
        scope = nullptr;
    const ScopedAffineStages::Key key{static_cast<std::uint32_t>(problem.schedule),
                                      problem.num_stages,
                                      problem.chunks,
                                      problem.micro_batches,
                                      problem.time.body_layers,
                                      kinds};
    if (scope != nullptr) {
        if (const auto it = scope->remembered().find(key); it != scope->remembered().end())
            return it->second;
    }
    const auto list = kind_list(kinds);
    std::vector<AffineStage> stages;
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        stages.push_back(memory.linear ? linear_stage(problem, *memory.linear, s)
                                       : probed_stage(problem, memory, s, list));
    }
    if (scope != nullptr)
        scope->remembered().emplace(key, stages);
    return stages;
}

namespace {
thread_local ScopedChunkedStageOptions* active_stage_options = nullptr;
}  // namespace

ScopedChunkedStageOptions::ScopedChunkedStageOptions(const MemorySource& memory)
    : memory_(&memory), outer_(active_stage_options) {
    active_stage_options = this;
}

ScopedChunkedStageOptions::~ScopedChunkedStageOptions() {
    active_stage_options = outer_;
}

std::vector<ChunkedStage> build_chunked_stages(const Problem& problem, const MemorySource& memory,
                                               std::vector<AffineStage> affine, std::uint32_t kinds,
                                               const std::vector<std::uint32_t>& max_layers) {
    const auto list = kind_list(kinds);
    ScopedChunkedStageOptions* scope = active_stage_options;
    if (scope != nullptr && scope->memory() != &memory)
        scope = nullptr;
    const auto& setting = problem.recompute_setting;
    std::vector<ChunkedStage> stages;
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        const ScopedChunkedStageOptions::Key key{
            static_cast<std::uint32_t>(problem.rule),
            setting ? static_cast<std::uint32_t>(setting->method) + 1 : 0U,
            setting ? setting->num_layers : 0U,
            problem.balanced_chunks,
            kinds,
            s,
            max_layers.at(s),
            std::bit_cast<std::uint64_t>(problem.budget_mb())};
        if (scope != nullptr) {
            if (const auto it = scope->remembered().find(key); it != scope->remembered().end()) {
                // What building it charged the budget in scope, charged again.
                if (!take_from_budget(it->second.partial_options, it->second.comparisons))
                    throw too_large_to_plan(problem.chunks, s);
                stages.push_back(it->second.stage);
                continue;
            }
        }
        StageWork work;
        stages.push_back(combine(problem, s, std::move(affine[s]), list, max_layers.at(s), work));
        if (scope != nullptr)
            scope->remembered().emplace(key, ScopedChunkedStageOptions::Remembered{
                                                 stages.back(), work.made(), work.compared()});
    }
    return stages;
}

}  // namespace ppb::partition::detail
