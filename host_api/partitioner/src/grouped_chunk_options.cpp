// A chunk's candidate mixes and a stage's options (grouped_chunked.hpp), for the knapsack of
// grouped_chunked_solver.cpp.
//
// A range's layers, in order, are its groups; a chunk's candidate mixes are those the rule admits:
// any mix of kinds per group (RecomputeRule::any), or MindFormers' positional counts applied to
// the range's first layers (RecomputeRule::mindformers: full, then both, then select or comm,
// then none, whatever the group). A chunk's time, fixed memory and activation per in-flight
// micro-batch are sums over its layers, so only mixes Pareto-optimal in (time, fixed, activation)
// can matter (replacing one by a mix no slower and no larger fits every row and slows neither
// chunk). For each mix of chunk 0 only the fastest mix of chunk 1 with which every row fits
// matters (both the stage's total and its slowest chunk grow with chunk 1's time); the options
// kept are Pareto-optimal in (total, slowest chunk), by increasing total. A range's mixes depend
// only on its counts per group (any) or on its sequence of groups (mindformers), so ranges alike
// share them, and each pair of ranges' options is built once, when the knapsack first asks.
#include "chunk_tables.hpp"
#include "grouped_chunked.hpp"
#include "pareto.hpp"
#include "stage_table.hpp"

#include <ppb/kinds.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <utility>
#include <vector>

namespace ppb::partition::detail {

GroupMix Layout::mix_of(std::uint32_t stage, std::uint32_t chunk,
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
std::vector<GroupMix> Layout::any_mixes(std::uint32_t stage, std::uint32_t chunk,
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
            keep_time_fixed_activation_frontier(next);
            mixes = std::move(next);
        }
    }
    return mixes;
}

// MindFormers' positional mixes of layers [first, first + n): the first r full, then 'both'
// up to p2, then 'select' (or 'comm') up to p3, then 'none'; a mix giving a group a kind it
// may not take is left out.
std::vector<GroupMix> Layout::positional_mixes(std::uint32_t stage, std::uint32_t chunk,
                                               std::uint32_t first, std::uint32_t n) const {
    // O(n^3) candidates: each is weighed from prefix counts without building its layers per
    // group, the Pareto-optimal ones kept, and only those built (long ranges made this the
    // planner's hot spot).
    struct Candidate {
        double time = 0.0;
        ChunkMemory memory;
        MindFormersCounts counts;
    };
    const GroupedAffineStage& a = affine[stage];
    // Layers of group g at positions [from, to) of the range.
    const auto count = [&](std::size_t g, std::uint32_t from, std::uint32_t to) {
        return prefix[g][first + to] - prefix[g][first + from];
    };
    std::vector<Candidate> candidates;
    for (std::uint32_t r = 0; r <= n; ++r) {
        for (std::uint32_t p2 = r; p2 <= n; ++p2) {
            for (std::uint32_t p3 = p2; p3 <= n; ++p3) {
                for (const bool comm : {false, true}) {
                    if (comm && p3 == p2)
                        continue;  // the same mix as without
                    // Full [0, r), both [r, p2), select or comm [p2, p3), none [p3, n).
                    const std::array<std::pair<std::size_t, std::array<std::uint32_t, 2>>, 4>
                        segments{{{PPB_KIND_FULL, {0, r}},
                                  {PPB_KIND_BOTH, {r, p2}},
                                  {comm ? PPB_KIND_COMM : PPB_KIND_SELECT, {p2, p3}},
                                  {PPB_KIND_NONE, {p3, n}}}};
                    Candidate candidate{
                        0.0,
                        {},
                        comm ? MindFormersCounts{r, p2, p3} : MindFormersCounts{r, p3, p2}};
                    bool allowed = true;
                    for (std::size_t g = 0; g < groups && allowed; ++g) {
                        for (const auto& [k, range] : segments) {
                            const std::uint32_t held = count(g, range[0], range[1]);
                            if (held == 0)
                                continue;
                            if (std::find(kinds[g].begin(), kinds[g].end(), k) == kinds[g].end()) {
                                allowed = false;
                                break;
                            }
                            candidate.time += held * layer_time(g, k);
                            candidate.memory.fixed += held * a.fixed[chunk][g][k];
                            candidate.memory.activation += held * a.activation[chunk][g][k];
                        }
                    }
                    if (allowed)
                        candidates.push_back(candidate);
                }
            }
        }
    }
    // As keep_time_fixed_activation_frontier (pareto.hpp): by increasing time, each kept unless
    // an earlier one is no larger.
    std::sort(candidates.begin(), candidates.end(), ByTimeFixedActivation{});
    // Whether an earlier one is no larger: the kept ones' staircase of (fixed, least activation
    // among those with no more fixed memory), strictly falling, answers in O(log) per candidate.
    std::vector<const Candidate*> kept;
    std::map<double, double> staircase;  // fixed -> activation
    for (const Candidate& c : candidates) {
        auto above = staircase.upper_bound(c.memory.fixed);
        if (above != staircase.begin() && std::prev(above)->second <= c.memory.activation)
            continue;  // beaten
        kept.push_back(&c);
        // c joins the staircase; the steps it covers (more fixed, no less activation) leave it.
        while (above != staircase.end() && above->second >= c.memory.activation)
            above = staircase.erase(above);
        staircase[c.memory.fixed] = c.memory.activation;
    }
    std::vector<GroupMix> mixes;
    for (const Candidate* c : kept)
        mixes.push_back(
            mix_of(stage, chunk, positional_group_layers(problem, first, n, c->counts)));
    // The sums in mix_of's order may differ in the last bit.
    keep_time_fixed_activation_frontier(mixes);
    return mixes;
}

StageOptions::StageOptions(const Layout& layout, std::uint32_t stage, std::uint32_t width)
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

const std::vector<GroupedOption>& StageOptions::options(std::uint32_t a0, std::uint32_t n0,
                                                        std::uint32_t a1, std::uint32_t n1) {
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

std::vector<GroupedOption> StageOptions::combine(const std::vector<GroupMix>& first,
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

}  // namespace ppb::partition::detail
