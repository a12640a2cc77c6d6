// Planning a model of several groups of body layers with two chunks per stage (interleaved,
// interleaved-less-memory, dualpipe-v): host_api/docs/design.md, "Groups of layers with chunks".
//
// The layout. The L body layers keep model order and are cut into 2P contiguous ranges, one per
// position (stage, chunk) in the schedule's order (ppb::model_position): a cut is
// 0 = a_0 <= a_1 <= ... <= a_2P = L, position q holding [a_q, a_{q+1}). Stage s holds two
// positions, chunk 0 at q = s and chunk 1 at q = P + s (interleaved) or q = 2P - 1 - s
// (dualpipe-v). Its memory couples the two (the largest row over its in-flight profile,
// profile_memory.hpp), so the stage's choice depends on both ranges at once.
//
// A knapsack over stages whose state is two cut points. Take the stages in order. After stages
// 0 .. s - 1, the chunk-0 positions have consumed [0, a_s) and the chunk-1 positions a range
// that ends (dualpipe-v: starts) at a second cut point; stage s extends both. So the state is the
// pair of cut points (i, j):
//   dualpipe-v:  chunk 1 runs back up the stages, so it fills the sequence from the end: state
//                (a_s, a_{2P-s}) from (0, L); stage s takes [i, i + n0) and [j - n1, j); the plan
//                is complete when the two meet, i = j.
//   interleaved: chunk 1 of stage 0 starts where chunk 0 of stage P - 1 ends, at a_P = x: for
//                each x, state (a_s, a_{P+s}) from (0, x) to (x, L); stage s takes [i, i + n0)
//                and [j, j + n1).
// Every cut is one path and every path one cut, so the knapsack is exact over layouts.
//
// A stage's options for a pair of ranges. A range's layers, in order, are its groups; a chunk's
// candidate mixes are those the rule admits: any mix of kinds per group (RecomputeRule::any), or
// MindFormers' positional counts applied to the range's first layers (RecomputeRule::mindformers:
// full, then both, then select or comm, then none, whatever the group). A chunk's time, fixed
// memory and activation per in-flight micro-batch are sums over its layers, so only mixes
// Pareto-optimal in (time, fixed, activation) can matter (replacing one by a mix no slower and no
// larger fits every row and slows neither chunk). For each mix of chunk 0 only the fastest mix of
// chunk 1 with which every row fits matters (both the stage's total and its slowest chunk grow
// with chunk 1's time); the options kept are Pareto-optimal in (total, slowest chunk), by
// increasing total. A range's mixes depend only on its counts per group (any) or on its sequence
// of groups (mindformers), so ranges alike share them.
//
// The objectives are the chunked solver's (problem.hpp, ChunkObjective), minimised as there:
//   stages: M max_s T_s + min_{s*} sum_{s != s*} m_s — for a threshold A on T_s the knapsack's
//           cost is each stage's least slowest chunk among its options with total <= A, plus one
//           bit for the stage s* whose slowest chunk is not counted; A swept upwards from the
//           smallest feasible total until M A + D(infinity) cannot beat the best;
//   slots:  (2M - 1) max_s m_s + sum_s m_s — a threshold on m_s, the cost m_s.
//
// Cost. States (L + 1)^2, per stage at most w^2 transitions (w the most layers a stage may hold),
// so O(P L^2 w^2) per threshold for dualpipe-v and L times that for interleaved (each x). Each
// stage's count is capped first at about twice the balanced count, and the plan found bounds it
// (M T_s is at most the objective), as in the chunked solver.
#include "chunk_tables.hpp"
#include "grouped_solver.hpp"
#include "profile_memory.hpp"
#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

namespace ppb::partition::detail {
namespace {

constexpr std::size_t kind_count = PPB_KIND_COUNT;
using UnitArray = std::array<double, kind_count>;

// One mix of a chunk's layers: its body time, memory and layers per group and kind.
struct GroupMix {
    double time = 0.0;
    ChunkMemory memory;
    std::vector<KindCounts> groups;
};

// One way to fill a stage holding given ranges in its two chunks.
struct GroupedOption {
    double total = 0.0;
    double slowest = 0.0;
    double memory = 0.0;  // the largest row
    std::array<const GroupMix*, 2> mixes{};
    std::array<double, 2> chunk_times{};
};

// What a stage holds with no body layer (per row of its profile), and per layer of each group and
// kind in each chunk: fixed MB and MB per in-flight micro-batch.
struct GroupedAffineStage {
    StageRows rows;
    std::array<std::vector<UnitArray>, 2> fixed;       // [c][g][k]
    std::array<std::vector<UnitArray>, 2> activation;  // [c][g][k]
};

// ---- the affine description of each stage ---------------------------------------------------

GroupedAffineStage linear_grouped_stage(const Problem& problem,
                                        std::span<const ppb_linear_parameters> c,
                                        std::uint32_t stage) {
    const StageEnds ends = stage_ends(problem.schedule, problem.num_stages, problem.chunks, stage);
    const double base =
        c[0].const_mb + (ends.head ? c[0].head_mb : 0.0) + (ends.tail ? c[0].tail_mb : 0.0);
    std::vector<InFlightVector> profile = problem.in_flight_profile(stage, ZeroCounts::exact);
    GroupedAffineStage a;
    std::vector<double> bases(profile.size(), base);
    a.rows = StageRows(std::move(bases), std::move(profile));
    for (std::size_t chunk = 0; chunk < 2; ++chunk) {
        for (const ppb_linear_parameters& group : c) {
            UnitArray fixed{};
            fixed.fill(group.per_layer_mb);
            UnitArray activation{};
            std::copy(std::begin(group.activation_mb), std::end(group.activation_mb),
                      activation.begin());
            a.fixed[chunk].push_back(fixed);
            a.activation[chunk].push_back(activation);
        }
    }
    return a;
}

// Grouped placements of one two-chunk stage, as the model is asked about it (ppb::abi_stage).
class GroupedProbe {
  public:
    GroupedProbe(const Problem& problem, std::uint32_t stage, std::size_t groups)
        : problem_(problem), stage_(stage), groups_(groups) {}

    // layers[c][g]: chunk c's layers of group g; in_flight[c], plus `extra` on chunk `more`.
    void add(const std::array<std::vector<KindCounts>, 2>& layers, const InFlightVector& in_flight,
             std::uint32_t more = 0, std::uint32_t extra = 0) {
        std::array<ppb_chunk, 2> chunks{};
        std::vector<std::uint32_t> counts;
        for (std::uint32_t c = 0; c < 2; ++c) {
            chunks[c].in_flight = in_flight[c] + (c == more ? extra : 0);
            for (std::size_t g = 0; g < groups_; ++g) {
                for (std::size_t k = 0; k < kind_count; ++k) {
                    chunks[c].layers[k] += layers[c][g][k];
                    counts.push_back(layers[c][g][k]);
                }
            }
        }
        chunks_.push_back(chunks);
        counts_.push_back(std::move(counts));
        layers_.push_back(layers);
        in_flight_.push_back(in_flight);
    }

    [[nodiscard]] std::vector<double> predict(const MemorySource& memory) const {
        const AbiStage view = abi_stage(problem_.schedule, problem_.num_stages, 2, stage_);
        std::vector<ppb_grouped_placement> placements;
        for (std::size_t i = 0; i < chunks_.size(); ++i) {
            placements.push_back(ppb_grouped_placement{
                ppb_placement{view.num_stages, view.stage, 2, chunks_[i].data()},
                static_cast<std::uint32_t>(groups_), counts_[i].data()});
        }
        return memory.predict_grouped_batch(placements);
    }

    [[nodiscard]] const std::array<std::vector<KindCounts>, 2>& layers(std::size_t i) const {
        return layers_[i];
    }
    [[nodiscard]] const InFlightVector& in_flight(std::size_t i) const { return in_flight_[i]; }
    [[nodiscard]] std::size_t size() const { return chunks_.size(); }

  private:
    const Problem& problem_;
    std::uint32_t stage_;
    std::size_t groups_;
    std::vector<std::array<ppb_chunk, 2>> chunks_;
    std::vector<std::vector<std::uint32_t>> counts_;
    std::vector<std::array<std::vector<KindCounts>, 2>> layers_;
    std::vector<InFlightVector> in_flight_;
};

// A model without coefficients, probed as the one-group chunked path probes it (chunk_tables.cpp),
// per group: the empty stage at every vector of the profile; at the first vector one layer of
// each group and kind in each chunk, and the same with one more micro-batch in flight on that
// chunk; then checks, at every vector, of up to three layers of each group, kind and chunk and of
// a mix of every group and kind, which an affine model predicts exactly. A model that fails them
// is refused.
GroupedAffineStage probed_grouped_stage(const Problem& problem, const MemorySource& memory,
                                        std::uint32_t stage,
                                        const std::vector<std::vector<std::size_t>>& kinds) {
    const std::size_t G = kinds.size();
    std::vector<InFlightVector> profile = problem.in_flight_profile(stage, ZeroCounts::as_one);
    const InFlightVector first = profile.front();
    const std::array<std::vector<KindCounts>, 2> empty{std::vector<KindCounts>(G),
                                                       std::vector<KindCounts>(G)};
    GroupedProbe probe(problem, stage, G);
    for (const InFlightVector& vector : profile)
        probe.add(empty, vector);
    for (std::uint32_t c = 0; c < 2; ++c) {
        for (std::size_t g = 0; g < G; ++g) {
            for (const std::size_t k : kinds[g]) {
                auto one = empty;
                one[c][g][k] = 1;
                probe.add(one, first);
                probe.add(one, first, c, 1);
            }
        }
        probe.add(empty, first, c, 1);
    }
    // The checks hold no more layers of a group than the model has (a model may refuse more).
    const std::size_t first_check = probe.size();
    auto all = empty;
    for (std::size_t g = 0; g < G; ++g) {
        std::uint32_t left = problem.time.groups[g].layers;
        for (std::uint32_t c = 0; c < 2; ++c) {
            for (const std::size_t k : kinds[g]) {
                if (left == 0)
                    break;
                all[c][g][k] = 1;
                --left;
            }
        }
    }
    for (const InFlightVector& vector : profile) {
        for (std::uint32_t c = 0; c < 2; ++c) {
            for (std::size_t g = 0; g < G; ++g) {
                const std::uint32_t some =
                    std::min<std::uint32_t>(3, problem.time.groups[g].layers);
                for (const std::size_t k : kinds[g]) {
                    auto several = empty;
                    several[c][g][k] = some;
                    probe.add(several, vector);
                }
            }
        }
        probe.add(all, vector);
    }
    const std::vector<double> predicted = probe.predict(memory);

    std::vector<double> base(predicted.begin(),
                             predicted.begin() + static_cast<std::ptrdiff_t>(profile.size()));
    GroupedAffineStage a;
    std::size_t i = profile.size();
    for (std::uint32_t c = 0; c < 2; ++c) {
        std::vector<UnitArray> unit(G, UnitArray{});
        std::vector<UnitArray> with_more(G, UnitArray{});
        for (std::size_t g = 0; g < G; ++g) {
            for (const std::size_t k : kinds[g]) {
                unit[g][k] = predicted[i] - base[0];
                with_more[g][k] = predicted[i + 1];
                i += 2;
            }
        }
        const double empty_more = predicted[i++];
        a.fixed[c].assign(G, UnitArray{});
        a.activation[c].assign(G, UnitArray{});
        for (std::size_t g = 0; g < G; ++g) {
            for (const std::size_t k : kinds[g]) {
                a.activation[c][g][k] = (with_more[g][k] - empty_more) - unit[g][k];
                a.fixed[c][g][k] = unit[g][k] - first[c] * a.activation[c][g][k];
            }
        }
    }
    a.rows = StageRows(base, profile);
    for (std::size_t check = first_check; check < predicted.size(); ++check) {
        const auto& layers = probe.layers(check);
        const InFlightVector& vector = probe.in_flight(check);
        const std::size_t row = static_cast<std::size_t>(
            std::find(profile.begin(), profile.end(), vector) - profile.begin());
        double affine = base[row];
        for (std::uint32_t c = 0; c < 2; ++c) {
            for (std::size_t g = 0; g < G; ++g) {
                for (std::size_t k = 0; k < kind_count; ++k) {
                    affine +=
                        (a.fixed[c][g][k] + vector[c] * a.activation[c][g][k]) * layers[c][g][k];
                }
            }
        }
        if (!affine_agrees(affine, predicted[check])) {
            throw InputError(fmt::format(
                "the memory model is not affine in the layer counts of stage {} (a probe with "
                "several groups in two chunks predicted {:.6g} MB, the sum of its parts {:.6g} "
                "MB); planning several groups of body layers with chunks needs a model whose "
                "stage memory is a constant plus a cost per layer of each group, kind and chunk, "
                "and per layer and micro-batch in flight",
                stage, predicted[check], affine));
        }
    }
    return a;
}

// ---- a chunk's candidate mixes ----------------------------------------------------------------

// The mixes no other beats in (time, fixed, activation), by increasing time.
void keep_pareto_mixes(std::vector<GroupMix>& mixes) {
    std::sort(mixes.begin(), mixes.end(), [](const GroupMix& a, const GroupMix& b) {
        if (a.time != b.time)
            return a.time < b.time;
        if (a.memory.fixed != b.memory.fixed)
            return a.memory.fixed < b.memory.fixed;
        return a.memory.activation < b.memory.activation;
    });
    std::vector<GroupMix> kept;
    for (GroupMix& m : mixes) {
        const bool beaten = std::any_of(kept.begin(), kept.end(), [&](const GroupMix& k) {
            return k.memory.fixed <= m.memory.fixed && k.memory.activation <= m.memory.activation;
        });
        if (!beaten)
            kept.push_back(std::move(m));
    }
    mixes = std::move(kept);
}

// The sequence, the groups' times and kinds, and the stages' affine descriptions.
struct Layout {
    explicit Layout(const Problem& p) : problem(p) {}

    const Problem& problem;
    std::uint32_t layers = 0;
    std::size_t groups = 0;
    std::vector<std::vector<std::size_t>> kinds;     // [g]
    std::vector<std::vector<std::uint32_t>> prefix;  // [g][i]: layers of g among the first i
    std::vector<GroupedAffineStage> affine;

    [[nodiscard]] double layer_time(std::size_t g, std::size_t k) const {
        return problem.time.groups[g].time[k];
    }

    GroupMix mix_of(std::uint32_t stage, std::uint32_t chunk,
                    const std::vector<KindCounts>& counts) const {
        GroupMix m;
        m.groups = counts;
        for (std::size_t g = 0; g < groups; ++g) {
            for (std::size_t k = 0; k < kind_count; ++k) {
                if (counts[g][k] == 0)
                    continue;
                m.time += counts[g][k] * layer_time(g, k);
                m.memory.fixed += counts[g][k] * affine[stage].fixed[chunk][g][k];
                m.memory.activation += counts[g][k] * affine[stage].activation[chunk][g][k];
            }
        }
        return m;
    }

    // Every mix of counts[g] layers of each group (any rule), grown one layer at a time and kept
    // Pareto-optimal after each.
    std::vector<GroupMix> any_mixes(std::uint32_t stage, std::uint32_t chunk,
                                    const std::vector<std::uint32_t>& counts) const {
        std::vector<GroupMix> mixes{mix_of(stage, chunk, std::vector<KindCounts>(groups))};
        for (std::size_t g = 0; g < groups; ++g) {
            for (std::uint32_t n = 0; n < counts[g]; ++n) {
                std::vector<GroupMix> next;
                for (const GroupMix& m : mixes) {
                    for (const std::size_t k : kinds[g]) {
                        GroupMix q = m;
                        ++q.groups[g][k];
                        q.time += layer_time(g, k);
                        q.memory.fixed += affine[stage].fixed[chunk][g][k];
                        q.memory.activation += affine[stage].activation[chunk][g][k];
                        next.push_back(std::move(q));
                    }
                }
                keep_pareto_mixes(next);
                mixes = std::move(next);
            }
        }
        return mixes;
    }

    // MindFormers' positional mixes of layers [first, first + n): the first r full, then 'both'
    // up to p2, then 'select' (or 'comm') up to p3, then 'none'; a mix giving a group a kind it
    // may not take is left out.
    std::vector<GroupMix> positional_mixes(std::uint32_t stage, std::uint32_t chunk,
                                           std::uint32_t first, std::uint32_t n) const {
        std::vector<GroupMix> mixes;
        for (std::uint32_t r = 0; r <= n; ++r) {
            for (std::uint32_t p2 = r; p2 <= n; ++p2) {
                for (std::uint32_t p3 = p2; p3 <= n; ++p3) {
                    for (const bool comm : {false, true}) {
                        if (comm && p3 == p2)
                            continue;  // the same mix as without
                        const MindFormersCounts counts =
                            comm ? MindFormersCounts{r, p2, p3} : MindFormersCounts{r, p3, p2};
                        const std::vector<KindCounts> mix =
                            positional_group_layers(problem, first, n, counts);
                        bool allowed = true;
                        for (std::size_t g = 0; g < groups && allowed; ++g) {
                            for (std::size_t k = 0; k < kind_count; ++k) {
                                if (mix[g][k] != 0 && std::find(kinds[g].begin(), kinds[g].end(),
                                                                k) == kinds[g].end())
                                    allowed = false;
                            }
                        }
                        if (allowed)
                            mixes.push_back(mix_of(stage, chunk, mix));
                    }
                }
            }
        }
        keep_pareto_mixes(mixes);
        return mixes;
    }
};

// ---- the options of each stage --------------------------------------------------------------

// Per stage: an id for each range a chunk may hold (ranges alike share it), each id's mixes,
// and the options of each pair of ids, built when first asked.
class StageOptions {
  public:
    StageOptions(const Layout& layout, std::uint32_t stage, std::uint32_t width)
        : layout_(layout), stage_(stage), width_(width) {
        const Problem& p = layout.problem;
        for (std::uint32_t c = 0; c < 2; ++c) {
            ends_time_[c] = chunk_time(p, stage, c, KindCounts{});
            ends_forward_[c] = chunk_forward_time(p, stage, c, KindCounts{});
            std::map<std::vector<std::uint32_t>, std::int32_t> ids;
            range_id_[c].assign(std::size_t{layout.layers + 1} * (width + 1), -1);
            for (std::uint32_t a = 0; a <= layout.layers; ++a) {
                for (std::uint32_t n = 0; n <= width && a + n <= layout.layers; ++n) {
                    std::vector<std::uint32_t> key;
                    if (p.rule == RecomputeRule::mindformers) {
                        key.assign(p.time.sequence.begin() + a, p.time.sequence.begin() + a + n);
                    } else {
                        for (std::size_t g = 0; g < layout.groups; ++g)
                            key.push_back(layout.prefix[g][a + n] - layout.prefix[g][a]);
                    }
                    auto [it, added] =
                        ids.emplace(std::move(key), static_cast<std::int32_t>(mixes_[c].size()));
                    if (added) {
                        mixes_[c].push_back(p.rule == RecomputeRule::mindformers
                                                ? layout.positional_mixes(stage, c, a, n)
                                                : layout.any_mixes(stage, c, it->first));
                    }
                    range_id_[c][std::size_t{a} * (width + 1) + n] = it->second;
                }
            }
        }
        pair_.assign(mixes_[0].size() * mixes_[1].size(), -1);
    }

    [[nodiscard]] double ends_time(std::uint32_t c) const { return ends_time_[c]; }
    [[nodiscard]] double ends_forward(std::uint32_t c) const { return ends_forward_[c]; }

    // The options of chunk 0 holding [a0, a0 + n0) and chunk 1 [a1, a1 + n1), Pareto-optimal in
    // (total, slowest) by increasing total; empty when nothing fits.
    const std::vector<GroupedOption>& options(std::uint32_t a0, std::uint32_t n0, std::uint32_t a1,
                                              std::uint32_t n1) {
        const std::int32_t id0 = range_id_[0][std::size_t{a0} * (width_ + 1) + n0];
        const std::int32_t id1 = range_id_[1][std::size_t{a1} * (width_ + 1) + n1];
        std::int32_t& slot =
            pair_[static_cast<std::size_t>(id0) * mixes_[1].size() + static_cast<std::size_t>(id1)];
        if (slot < 0) {
            slot = static_cast<std::int32_t>(lists_.size());
            lists_.push_back(combine(mixes_[0][static_cast<std::size_t>(id0)],
                                     mixes_[1][static_cast<std::size_t>(id1)]));
        }
        return lists_[static_cast<std::size_t>(slot)];
    }

    // Every option built so far (their totals and slowest chunks are the thresholds).
    [[nodiscard]] const std::deque<std::vector<GroupedOption>>& built() const { return lists_; }

  private:
    std::vector<GroupedOption> combine(const std::vector<GroupMix>& first,
                                       const std::vector<GroupMix>& second) const {
        const GroupedAffineStage& affine = layout_.affine[stage_];
        const double budget = layout_.problem.budget_mb();
        std::vector<GroupedOption> out;
        std::vector<double> rows;
        for (const GroupMix& m0 : first) {
            const ChunkMemory chunk0[1] = {m0.memory};
            affine.rows.rows(chunk0, rows);
            // The fastest mix of chunk 1 with which every row fits (mixes by increasing time).
            for (const GroupMix& m1 : second) {
                if (!affine.rows.fits_with(rows, 1, m1.memory, {}, budget))
                    continue;
                GroupedOption o;
                o.chunk_times = {ends_time_[0] + m0.time, ends_time_[1] + m1.time};
                o.total = o.chunk_times[0] + o.chunk_times[1];
                o.slowest = std::max(o.chunk_times[0], o.chunk_times[1]);
                const ChunkMemory both[2] = {m0.memory, m1.memory};
                o.memory = affine.rows.peak(both).memory;
                o.mixes = {&m0, &m1};
                out.push_back(o);
                break;
            }
        }
        std::sort(out.begin(), out.end(), [](const GroupedOption& a, const GroupedOption& b) {
            return a.total != b.total ? a.total < b.total : a.slowest < b.slowest;
        });
        std::vector<GroupedOption> kept;
        for (const GroupedOption& o : out) {
            if (kept.empty() || o.slowest < kept.back().slowest)
                kept.push_back(o);
        }
        return kept;
    }

    const Layout& layout_;
    std::uint32_t stage_;
    std::uint32_t width_;
    std::array<double, 2> ends_time_{};
    std::array<double, 2> ends_forward_{};
    std::array<std::vector<std::int32_t>, 2> range_id_;
    std::array<std::deque<std::vector<GroupMix>>, 2> mixes_;
    std::vector<std::int32_t> pair_;
    std::deque<std::vector<GroupedOption>> lists_;
};

// ---- the knapsack over stages ---------------------------------------------------------------

// The option a stage takes under a threshold: 'stages', the least slowest chunk among totals
// <= A (the last such); 'slots', the least slowest chunk if it is <= A.
const GroupedOption* pick(const std::vector<GroupedOption>& options, ChunkObjective objective,
                          double threshold) {
    if (options.empty())
        return nullptr;
    if (objective == ChunkObjective::slots)
        return options.back().slowest <= threshold ? &options.back() : nullptr;
    const auto it =
        std::upper_bound(options.begin(), options.end(), threshold,
                         [](double a, const GroupedOption& option) { return a < option.total; });
    return it == options.begin() ? nullptr : &*std::prev(it);
}

struct Layers {
    std::uint32_t n0 = 0;
    std::uint32_t n1 = 0;
};

struct Knapsack {
    double value = infinity;  // D(A): the least sum of slowest chunks (but s*'s for 'stages')
    std::uint32_t split = 0;  // interleaved: a_P
    std::vector<Layers> layers;
};

class GroupedKnapsack {
  public:
    GroupedKnapsack(const Layout& layout, std::vector<StageOptions>& stages,
                    std::vector<std::uint32_t> most)
        : layout_(layout), stages_(stages), most_(std::move(most)) {}

    // The least value under `threshold`, and with `trace` the layers per stage reaching it.
    Knapsack solve(ChunkObjective objective, double threshold, bool trace) {
        const Problem& p = layout_.problem;
        const std::uint32_t L = layout_.layers;
        Knapsack best;
        if (p.schedule == Schedule::dualpipe_v)
            return run(objective, threshold, trace, 0, L, L);
        for (std::uint32_t x = 0; x <= L; ++x) {
            Knapsack k = run(objective, threshold, false, x, x, L);
            if (k.value < best.value) {
                best = k;
                best.split = x;
            }
        }
        if (trace && best.value < infinity) {
            const std::uint32_t x = best.split;
            best = run(objective, threshold, true, x, x, L);
            best.split = x;
        }
        return best;
    }

  private:
    // From state (0, start1) to the end state: dualpipe-v (i == j), interleaved (x, L).
    Knapsack run(ChunkObjective objective, double threshold, bool trace, std::uint32_t x,
                 std::uint32_t start1, std::uint32_t L) {
        const Problem& p = layout_.problem;
        const bool dual = p.schedule == Schedule::dualpipe_v;
        const std::uint32_t P = p.num_stages;
        const std::size_t side = std::size_t{L} + 1;
        const std::size_t states = side * side;
        const bool free_stage = objective == ChunkObjective::stages;
        best0_.assign(states, infinity);
        best1_.assign(states, infinity);
        best0_[start1] = 0.0;  // (i, j) = (0, start1)
        struct Step {
            std::uint32_t from = 0;
            std::uint16_t n0 = 0;
            std::uint16_t n1 = 0;
            std::uint8_t from_flag = 0;
        };
        std::vector<std::vector<Step>> steps0, steps1;
        for (std::uint32_t s = 0; s < P; ++s) {
            next0_.assign(states, infinity);
            next1_.assign(states, infinity);
            std::vector<Step> t0(trace ? states : 0), t1(trace ? states : 0);
            StageOptions& stage = stages_[s];
            const std::uint32_t f0 = p.num_stages == 1 ? 0 : p.min_layers(s, 0);
            const std::uint32_t f1 = p.num_stages == 1 ? 0 : p.min_layers(s, 1);
            const std::uint32_t most = most_[s];
            for (std::uint32_t i = 0; i <= L; ++i) {
                for (std::uint32_t j = 0; j <= L; ++j) {
                    const std::size_t at = i * side + j;
                    const double v0 = best0_[at];
                    const double v1 = best1_[at];
                    if (!(v0 < infinity) && !(v1 < infinity))
                        continue;
                    // Room for chunk 0 (up to the meeting point or to x) and chunk 1.
                    const std::uint32_t end0 = dual ? j : x;
                    for (std::uint32_t n0 = f0; n0 <= most && i + n0 <= end0; ++n0) {
                        for (std::uint32_t n1 = f1; n0 + n1 <= most; ++n1) {
                            std::uint32_t a1 = 0;
                            std::uint32_t j_next = 0;
                            if (dual) {
                                if (i + n0 + n1 > j)
                                    break;
                                a1 = j - n1;
                                j_next = a1;
                            } else {
                                if (j + n1 > L)
                                    break;
                                a1 = j;
                                j_next = j + n1;
                            }
                            const GroupedOption* option =
                                pick(stage.options(i, n0, a1, n1), objective, threshold);
                            if (option == nullptr)
                                continue;
                            const std::size_t to = (i + n0) * side + j_next;
                            const Step step{static_cast<std::uint32_t>(at),
                                            static_cast<std::uint16_t>(n0),
                                            static_cast<std::uint16_t>(n1), 0};
                            if (v0 < infinity) {
                                const double as_other = v0 + option->slowest;
                                if (as_other < next0_[to]) {
                                    next0_[to] = as_other;
                                    if (trace)
                                        t0[to] = step;
                                }
                                if (free_stage && v0 < next1_[to]) {  // this stage is s*
                                    next1_[to] = v0;
                                    if (trace)
                                        t1[to] = step;
                                }
                            }
                            if (v1 < infinity && v1 + option->slowest < next1_[to]) {
                                next1_[to] = v1 + option->slowest;
                                if (trace) {
                                    t1[to] = step;
                                    t1[to].from_flag = 1;
                                }
                            }
                        }
                    }
                }
            }
            best0_.swap(next0_);
            best1_.swap(next1_);
            if (trace) {
                steps0.push_back(std::move(t0));
                steps1.push_back(std::move(t1));
            }
        }
        // The end states.
        Knapsack out;
        std::size_t end = 0;
        const std::vector<double>& last = free_stage ? best1_ : best0_;
        if (dual) {
            for (std::uint32_t i = 0; i <= L; ++i) {
                if (last[i * side + i] < out.value) {
                    out.value = last[i * side + i];
                    end = i * side + i;
                }
            }
        } else {
            end = x * side + L;
            out.value = last[end];
        }
        if (!trace || !(out.value < infinity))
            return out;
        out.layers.assign(P, Layers{});
        std::uint8_t flag = free_stage ? 1 : 0;
        for (std::uint32_t s = P; s-- > 0;) {
            const Step step = flag ? steps1[s][end] : steps0[s][end];
            out.layers[s] = Layers{step.n0, step.n1};
            end = step.from;
            flag = step.from_flag;
        }
        return out;
    }

    const Layout& layout_;
    std::vector<StageOptions>& stages_;
    std::vector<std::uint32_t> most_;
    std::vector<double> best0_, best1_, next0_, next1_;
};

// The chosen option of every stage, and where each chunk's range starts.
struct Chosen {
    std::vector<const GroupedOption*> options;
    std::vector<std::array<std::uint32_t, 2>> first;  // [s][c]
};

Chosen choose(const Layout& layout, std::vector<StageOptions>& stages, const Knapsack& k,
              ChunkObjective objective, double threshold) {
    const Problem& p = layout.problem;
    const std::uint32_t P = p.num_stages;
    const bool dual = p.schedule == Schedule::dualpipe_v;
    Chosen out;
    std::uint32_t i = 0;
    std::uint32_t j = dual ? layout.layers : k.split;
    for (std::uint32_t s = 0; s < P; ++s) {
        const auto [n0, n1] = k.layers[s];
        const std::uint32_t a1 = dual ? j - n1 : j;
        out.options.push_back(pick(stages[s].options(i, n0, a1, n1), objective, threshold));
        out.first.push_back({i, a1});
        i += n0;
        j = dual ? a1 : j + n1;
    }
    return out;
}

double objective_of(const Problem& problem, const Chosen& chosen) {
    std::vector<std::vector<double>> times;
    for (const GroupedOption* o : chosen.options)
        times.push_back({o->chunk_times[0], o->chunk_times[1]});
    return schedule_iteration_time(times, problem.micro_batches, problem.objective);
}

// The exact optimum within the stages' caps, or nothing when no plan exists within them.
std::optional<Chosen> best_within(const Layout& layout, std::vector<StageOptions>& stages,
                                  const std::vector<std::uint32_t>& most) {
    const Problem& p = layout.problem;
    const ChunkObjective objective = p.objective;
    GroupedKnapsack knapsack(layout, stages, most);
    const Knapsack unconstrained = knapsack.solve(objective, infinity, false);
    if (!(unconstrained.value < infinity))
        return std::nullopt;
    // Every option the knapsack may take has been built by now: the thresholds are theirs.
    std::vector<double> thresholds;
    for (const StageOptions& stage : stages) {
        for (const auto& list : stage.built()) {
            for (const GroupedOption& o : list)
                thresholds.push_back(objective == ChunkObjective::slots ? o.slowest : o.total);
        }
    }
    std::sort(thresholds.begin(), thresholds.end());
    thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
    std::size_t lo = 0;
    std::size_t hi = thresholds.size() - 1;
    while (lo < hi) {  // the smallest feasible threshold (feasibility is monotone)
        const std::size_t mid = (lo + hi) / 2;
        if (knapsack.solve(objective, thresholds[mid], false).value < infinity)
            hi = mid;
        else
            lo = mid + 1;
    }
    // 'stages': M A + D(A); 'slots': (2M - 1) A + sum m.
    const double weight = objective == ChunkObjective::slots ? 2.0 * p.micro_batches - 1.0
                                                             : static_cast<double>(p.micro_batches);
    double best = infinity;
    double best_threshold = thresholds.back();
    for (std::size_t t = lo; t < thresholds.size(); ++t) {
        const double a = thresholds[t];
        if (weight * a + unconstrained.value >= best)
            break;  // D only falls as A grows: no larger threshold can do better
        const Knapsack k = knapsack.solve(objective, a, true);
        if (!(k.value < infinity))
            continue;
        const double value = objective_of(p, choose(layout, stages, k, objective, a));
        if (value < best) {
            best = value;
            best_threshold = a;
        }
    }
    const Knapsack k = knapsack.solve(objective, best_threshold, true);
    return choose(layout, stages, k, objective, best_threshold);
}

// The most body layers stage s can hold in a plan whose objective is at most `objective`: both
// objectives are at least M x T_s, and T_s is at least the stage's ends plus n x the fastest
// candidate body layer of any group.
std::vector<std::uint32_t> most_layers_within(const Layout& layout, double objective) {
    const Problem& p = layout.problem;
    double fastest = infinity;
    for (std::size_t g = 0; g < layout.groups; ++g) {
        for (const std::size_t k : layout.kinds[g])
            fastest = std::min(fastest, layout.layer_time(g, k));
    }
    std::vector<std::uint32_t> most(p.num_stages, layout.layers);
    if (!(fastest > 0.0) || !std::isfinite(objective))
        return most;
    const double m = p.micro_batches;
    const double slack = 1e-9 * std::max(1.0, std::abs(objective));
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        const double ends = chunk_time(p, s, 0, KindCounts{}) + chunk_time(p, s, 1, KindCounts{});
        std::uint32_t n = p.min_layers(s);
        while (n < layout.layers && m * (ends + (n + 1) * fastest) <= objective + slack)
            ++n;
        most[s] = n;
    }
    return most;
}

Plan plan_of(const Layout& layout, const MemorySource& memory, const Chosen& chosen) {
    const Problem& p = layout.problem;
    Plan plan;
    std::vector<std::vector<double>> chunk_times;
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        const GroupedOption& option = *chosen.options[s];
        const GroupedAffineStage& affine = layout.affine[s];
        const ChunkMemory memories[2] = {option.mixes[0]->memory, option.mixes[1]->memory};
        const StageRows::Peak peak = affine.rows.peak(memories);
        const InFlightVector& at_peak = affine.rows.profile()[peak.row];
        StagePlan sp;
        sp.stage = s;
        sp.in_flight = at_peak[0];
        sp.memory_mb = option.memory;
        sp.first_layer = chosen.first[s][0];
        sp.group_layers.assign(layout.groups, KindCounts{});
        for (std::uint32_t c = 0; c < 2; ++c) {
            const GroupMix& mix = *option.mixes[c];
            ChunkPlan chunk;
            chunk.chunk = c;
            chunk.in_flight = at_peak[c];
            chunk.first_layer = chosen.first[s][c];
            chunk.group_layers = mix.groups;
            chunk.forward_time = chunk_forward_time(p, s, c, KindCounts{});
            for (std::size_t g = 0; g < layout.groups; ++g) {
                for (std::size_t k = 0; k < kind_count; ++k) {
                    const std::uint32_t n = mix.groups[g][k];
                    chunk.layers[k] += n;
                    sp.layers[k] += n;
                    sp.group_layers[g][k] += n;
                    chunk.forward_time += n * p.time.groups[g].forward;
                    chunk.activation_mb += n * affine.activation[c][g][k];
                }
            }
            chunk.backward_time = option.chunk_times[c] - chunk.forward_time;
            sp.time += option.chunk_times[c];
            sp.chunks.push_back(std::move(chunk));
        }
        chunk_times.push_back({option.chunk_times[0], option.chunk_times[1]});
        plan.stages.push_back(std::move(sp));
    }
    if (memory.group_linear.empty()) {
        // A probed model reports its own prediction, its largest over each stage's profile.
        for (StagePlan& sp : plan.stages) {
            GroupedProbe probe(p, sp.stage, layout.groups);
            const std::array<std::vector<KindCounts>, 2> layers{sp.chunks[0].group_layers,
                                                                sp.chunks[1].group_layers};
            const auto& profile = layout.affine[sp.stage].rows.profile();
            for (const InFlightVector& v : profile)
                probe.add(layers, v);
            const std::vector<double> predicted = probe.predict(memory);
            const auto most = std::max_element(predicted.begin(), predicted.end());
            const std::size_t row = static_cast<std::size_t>(most - predicted.begin());
            if (!within_budget(*most, p.budget_mb())) {
                throw InputError(fmt::format(
                    "the memory model predicts {} MB for stage {} of the plan, over the {} MB "
                    "budget its probes implied it fits: it is not affine in the layer counts",
                    *most, sp.stage, p.budget_mb()));
            }
            sp.memory_mb = *most;
            sp.in_flight = profile[row][0];
            for (std::uint32_t c = 0; c < 2; ++c)
                sp.chunks[c].in_flight = profile[row][c];
        }
    }
    plan.iteration_time = schedule_iteration_time(chunk_times, p.micro_batches, p.objective);
    plan.activations_known = true;
    for (const StagePlan& s : plan.stages) {
        if (!std::isfinite(s.memory_mb) || !std::isfinite(s.time)) {
            throw InputError(
                fmt::format("the {} of stage {} overflowed; the inputs are too large to plan with",
                            std::isfinite(s.time) ? "memory" : "time", s.stage));
        }
    }
    return plan;
}

// Nothing fits: the least memory of the fewest layers each position needs is the same for every
// stage whatever the layout, so say which stage cannot hold even that, or that the layers cannot
// be spread within the budget at all.
[[noreturn]] void explain_grouped_chunked(const Layout& layout) {
    const Problem& p = layout.problem;
    const double budget = p.budget_mb();
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        const ChunkMemory none[2] = {};
        const double least = layout.affine[s].rows.peak(none).memory;
        if (!within_budget(least, budget)) {
            throw Infeasible(fmt::format("no placement fits: stage {} needs {:.1f} MB with no body "
                                         "layer, more than the {:.1f} MB available",
                                         s, least, budget),
                             infinity);
        }
    }
    throw Infeasible(
        fmt::format("no placement fits: within {:.1f} MB no cut of the {} body layers ({} groups) "
                    "into {} stages of 2 chunks under {} fits every stage's memory over its "
                    "in-flight profile (the smallest feasible limit is not searched for with "
                    "groups and chunks: raise the limit, or plan more stages)",
                    budget, layout.layers, layout.groups, p.num_stages, schedule_name(p.schedule)),
        infinity);
}

}  // namespace

Plan solve_grouped_chunked(const Problem& problem, const MemorySource& memory,
                           const std::vector<std::vector<std::size_t>>& kinds) {
    validate_chunked(problem);
    if (problem.chunks != 2) {
        throw InputError(fmt::format(
            "several groups of body layers are planned with 2 chunks per stage (interleaved or "
            "dualpipe-v), not {}: the search's state is one cut point per chunk",
            problem.chunks));
    }
    if (problem.rule != RecomputeRule::any && problem.rule != RecomputeRule::mindformers) {
        throw InputError(
            "several groups of body layers with chunks are planned under --recompute-rule any or "
            "mindformers");
    }
    Layout layout(problem);
    layout.layers = problem.time.body_layers;
    layout.groups = problem.time.groups.size();
    layout.kinds = kinds;
    layout.prefix.assign(layout.groups, std::vector<std::uint32_t>(layout.layers + 1, 0));
    for (std::uint32_t i = 0; i < layout.layers; ++i) {
        for (std::size_t g = 0; g < layout.groups; ++g)
            layout.prefix[g][i + 1] = layout.prefix[g][i] + (problem.time.sequence[i] == g ? 1 : 0);
    }
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        layout.affine.push_back(memory.group_linear.empty()
                                    ? probed_grouped_stage(problem, memory, s, kinds)
                                    : linear_grouped_stage(problem, memory.group_linear, s));
    }
    const std::uint32_t L = layout.layers;
    const std::uint32_t P = problem.num_stages;
    const auto with_cap = [&](std::uint32_t cap) {
        std::vector<std::uint32_t> most(P);
        for (std::uint32_t s = 0; s < P; ++s)
            most[s] = std::max(std::min(cap, L), problem.min_layers(s));
        return most;
    };
    const auto options_for = [&](const std::vector<std::uint32_t>& most) {
        const std::uint32_t width = *std::max_element(most.begin(), most.end());
        std::vector<StageOptions> stages;
        stages.reserve(P);
        for (std::uint32_t s = 0; s < P; ++s)
            stages.emplace_back(layout, s, width);
        return stages;
    };
    // First with each stage capped at about twice the balanced count (doubling while nothing
    // fits); that plan's objective bounds every stage's count in the optimum.
    std::uint32_t cap = std::min(L, 2 * ((L + P - 1) / P) + 2);
    std::vector<std::uint32_t> most = with_cap(cap);
    std::vector<StageOptions> stages = options_for(most);
    std::optional<Chosen> first = best_within(layout, stages, most);
    while (!first && cap < L) {
        cap = std::min(L, 2 * cap);
        most = with_cap(cap);
        stages = options_for(most);
        first = best_within(layout, stages, most);
    }
    if (!first)
        explain_grouped_chunked(layout);
    std::vector<std::uint32_t> bound = most_layers_within(layout, objective_of(problem, *first));
    bool within = true;
    for (std::uint32_t s = 0; s < P; ++s)
        within = within && bound[s] <= most[s];
    if (within)
        return plan_of(layout, memory, *first);
    for (std::uint32_t s = 0; s < P; ++s)
        bound[s] = std::max(bound[s], most[s]);
    std::vector<StageOptions> wider = options_for(bound);
    const std::optional<Chosen> best = best_within(layout, wider, bound);
    if (best && objective_of(problem, *best) <= objective_of(problem, *first))
        return plan_of(layout, memory, *best);
    return plan_of(layout, memory, *first);
}

}  // namespace ppb::partition::detail
