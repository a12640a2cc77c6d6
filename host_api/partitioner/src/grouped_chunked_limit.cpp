// When no cut of a model of several groups of body layers into two chunks per stage fits the
// budget (grouped_chunked.hpp): which stage cannot hold even its empty chunks, and the smallest
// memory limit with which some cut fits.
//
// A layer's least memory. In row j of stage s's profile (counts f_j0, f_j1), layer l of group g in
// chunk c costs at least u_{s,j,c}(l) = min_k (fixed_{c,g,k} + f_jc activation_{c,g,k}) over the
// kinds g may take, so a stage holding [a0, a0 + n0) in chunk 0 and [a1, a1 + n1) in chunk 1 needs
// at least
//     need_s = max_j (base_j + sum_{l in chunk 0's range} u_{s,j,0}(l)
//                            + sum_{l in chunk 1's range} u_{s,j,1}(l)),
// prefix sums over the sequence making it O(rows). It is the stage's least peak when one kind is
// the lightest of each (chunk, group) in every row (and, under MindFormers' rule, the same kind for
// every group: the whole chunk at one kind is a positional mix), as with 'full' in the usual
// models; otherwise a lower bound, and the message says so.
//
// The least limit is min over cuts of max_s need_s: the solver's knapsack (grouped_chunked_solver
// .cpp) with its sum replaced by a maximum, over the same states (i, j), from (0, L) to i = j under
// dualpipe-v and from (0, x) to (x, L) for each x interleaved. Units of at least 0 make need_s
// grow with either range, so from each state and chunk-0 count the chunk-1 count stops at the
// first need above the best value known (the balanced cut's, then the best end state's): the
// transitions are those of stages that fit the answer, about the solver's own.
#include "grouped_chunked.hpp"
#include "infeasible.hpp"
#include "stage_table.hpp"

#include <ppb/schedule.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppb::partition::detail {
namespace {

// Per stage: each row's base and, per row and chunk, prefix sums of the layers' least units.
class LeastNeeds {
  public:
    explicit LeastNeeds(const Layout& layout) : layout_(layout) {
        const Problem& p = layout.problem;
        const std::uint32_t L = layout.layers;
        stages_.resize(p.num_stages);
        for (std::uint32_t s = 0; s < p.num_stages; ++s) {
            const GroupedAffineStage& affine = layout.affine[s];
            Stage& out = stages_[s];
            const ChunkMemory none[2] = {};
            affine.rows.rows(none, out.base);
            out.prefix.assign(affine.rows.size() * 2, std::vector<double>(L + 1, 0.0));
            for (std::size_t row = 0; row < affine.rows.size(); ++row) {
                for (std::uint32_t c = 0; c < 2; ++c) {
                    const double f = affine.rows.count(row, c);
                    std::vector<double>& prefix = out.prefix[row * 2 + c];
                    // The lightest kinds of each group in this row (several on a tie: in a row
                    // where the chunk holds no micro-batch every kind weighs its fixed memory
                    // alone), and whether one of them is every row's.
                    std::vector<double> least(layout.groups, infinity);
                    for (std::size_t g = 0; g < layout.groups; ++g) {
                        for (const std::size_t k : layout.kinds[g]) {
                            least[g] = std::min(
                                least[g], affine.fixed[c][g][k] + f * affine.activation[c][g][k]);
                        }
                        std::uint32_t lightest = 0;
                        for (const std::size_t k : layout.kinds[g]) {
                            const double unit =
                                affine.fixed[c][g][k] + f * affine.activation[c][g][k];
                            if (unit <= least[g] + 1e-12 * std::abs(least[g]))
                                lightest |= 1u << k;
                        }
                        monotone_ = monotone_ && least[g] >= 0.0;
                        if (p.time.groups[g].layers != 0)
                            note_lightest(s, c, g, lightest);
                    }
                    for (std::uint32_t i = 0; i < L; ++i)
                        prefix[i + 1] = prefix[i] + least[p.time.sequence[i]];
                }
            }
        }
    }

    // need_s of chunk 0 holding [a0, a0 + n0) and chunk 1 [a1, a1 + n1).
    [[nodiscard]] double need(std::uint32_t s, std::uint32_t a0, std::uint32_t n0, std::uint32_t a1,
                              std::uint32_t n1) const {
        const Stage& stage = stages_[s];
        double most = -infinity;
        for (std::size_t row = 0; row < stage.base.size(); ++row) {
            const std::vector<double>& p0 = stage.prefix[row * 2];
            const std::vector<double>& p1 = stage.prefix[row * 2 + 1];
            most =
                std::max(most, stage.base[row] + (p0[a0 + n0] - p0[a0]) + (p1[a1 + n1] - p1[a1]));
        }
        return most;
    }

    // Every least unit is at least 0 (the search's pruning needs it).
    [[nodiscard]] bool monotone() const { return monotone_; }
    // need_s is the stage's least peak (see the header).
    [[nodiscard]] bool exact() const { return exact_; }

  private:
    struct Stage {
        std::vector<double> base;                 // [row]
        std::vector<std::vector<double>> prefix;  // [row * 2 + c][i]
    };

    // A kind among the lightest in every row for each (stage, chunk, group); under MindFormers'
    // rule also for every group of the chunk. `kinds`: this row's lightest, a mask of kind bits.
    void note_lightest(std::uint32_t s, std::uint32_t c, std::size_t g, std::uint32_t kinds) {
        const bool positional = layout_.problem.rule == RecomputeRule::mindformers;
        const std::size_t key = positional ? (s * 2 + c) : ((s * 2 + c) * layout_.groups + g);
        if (lightest_.size() <= key)
            lightest_.resize(key + 1, every_kind);
        lightest_[key] &= kinds;
        exact_ = exact_ && lightest_[key] != 0;
    }

    static constexpr std::uint32_t every_kind = (1u << PPB_KIND_COUNT) - 1;
    const Layout& layout_;
    std::vector<Stage> stages_;
    std::vector<std::uint32_t> lightest_;
    bool monotone_ = true;
    bool exact_ = true;
};

struct LeastCut {
    double need = infinity;           // min over cuts of max_s need_s
    std::uint32_t fullest_stage = 0;  // the stage needing it in such a cut
};

// The least over cuts of the largest stage need: a knapsack over (i, j) as the solver's.
class LeastLimitSearch {
  public:
    explicit LeastLimitSearch(const Layout& layout, const LeastNeeds& needs)
        : layout_(layout), needs_(needs) {}

    [[nodiscard]] LeastCut run() {
        const Problem& p = layout_.problem;
        const std::uint32_t L = layout_.layers;
        upper_ = balanced_need();
        LeastCut best;
        if (v_shaped(p.schedule)) {
            best = from(0, L, L, true);
        } else {
            std::uint32_t best_x = 0;
            for (std::uint32_t x = 0; x <= L; ++x) {
                const LeastCut at = from(x, x, L, false);
                if (at.need < best.need) {
                    best = at;
                    best_x = x;
                    upper_ = std::min(upper_, at.need);
                }
            }
            if (best.need < infinity)
                best = from(best_x, best_x, L, true);
        }
        return best;
    }

  private:
    // Each position holds an equal share (give or take one) above its fewest: a cut whose largest
    // need bounds the answer.
    [[nodiscard]] double balanced_need() const {
        const Problem& p = layout_.problem;
        const std::uint32_t P = p.num_stages;
        const std::uint32_t L = layout_.layers;
        const bool dual = v_shaped(p.schedule);
        std::vector<std::uint32_t> at_position(2 * P, 0);
        std::uint32_t fewest = 0;
        for (std::uint32_t q = 0; q < 2 * P; ++q) {
            const std::uint32_t s = q < P ? q : (dual ? 2 * P - 1 - q : q - P);
            at_position[q] = P == 1 ? 0 : p.min_layers(s, q < P ? 0 : 1);
            fewest += at_position[q];
        }
        if (fewest > L)
            return infinity;
        for (std::uint32_t q = 0, left = L - fewest; q < 2 * P; ++q) {
            const std::uint32_t share = left / (2 * P - q);
            at_position[q] += share;
            left -= share;
        }
        std::vector<std::uint32_t> first(2 * P + 1, 0);
        for (std::uint32_t q = 0; q < 2 * P; ++q)
            first[q + 1] = first[q] + at_position[q];
        double most = -infinity;
        for (std::uint32_t s = 0; s < P; ++s) {
            const std::uint32_t q1 = dual ? 2 * P - 1 - s : P + s;
            most = std::max(most,
                            needs_.need(s, first[s], at_position[s], first[q1], at_position[q1]));
        }
        return most;
    }

    // From state (0, start1): under dualpipe-v to i = j, interleaved (x, L) with x = start1.
    [[nodiscard]] LeastCut from(std::uint32_t x, std::uint32_t start1, std::uint32_t L,
                                bool trace) {
        const Problem& p = layout_.problem;
        const bool dual = v_shaped(p.schedule);
        const std::uint32_t P = p.num_stages;
        const std::size_t side = std::size_t{L} + 1;
        std::vector<double> best(side * side, infinity);
        std::vector<double> next;
        best[start1] = -infinity;  // (0, start1), no stage yet
        // Per stage and state: the state it came from (for the fullest stage).
        std::vector<std::vector<std::uint32_t>> came_from;
        for (std::uint32_t s = 0; s < P; ++s) {
            next.assign(side * side, infinity);
            std::vector<std::uint32_t> from_state(trace ? side * side : 0, 0);
            const std::uint32_t f0 = P == 1 ? 0 : p.min_layers(s, 0);
            const std::uint32_t f1 = P == 1 ? 0 : p.min_layers(s, 1);
            for (std::uint32_t i = 0; i <= L; ++i) {
                for (std::uint32_t j = 0; j <= L; ++j) {
                    const double v = best[i * side + j];
                    if (!(v < infinity) || v > upper_)
                        continue;
                    const std::uint32_t end0 = dual ? j : x;
                    for (std::uint32_t n0 = f0; i + n0 <= end0; ++n0) {
                        bool any = false;
                        for (std::uint32_t n1 = f1;; ++n1) {
                            if (dual ? i + n0 + n1 > j : j + n1 > L)
                                break;
                            const std::uint32_t a1 = dual ? j - n1 : j;
                            const double need = needs_.need(s, i, n0, a1, n1);
                            if (need > upper_)
                                break;  // more layers in chunk 1 only need more
                            any = true;
                            const std::size_t to = (i + n0) * side + (dual ? a1 : j + n1);
                            const double value = std::max(v, need);
                            if (value < next[to]) {
                                next[to] = value;
                                if (trace)
                                    from_state[to] = static_cast<std::uint32_t>(i * side + j);
                            }
                        }
                        if (!any)
                            break;  // not even the fewest in chunk 1 fits: more in chunk 0 neither
                    }
                }
            }
            best.swap(next);
            if (trace)
                came_from.push_back(std::move(from_state));
        }
        LeastCut out;
        std::size_t end = 0;
        if (dual) {
            for (std::uint32_t i = 0; i <= L; ++i) {
                if (best[i * side + i] < out.need) {
                    out.need = best[i * side + i];
                    end = i * side + i;
                }
            }
        } else {
            end = x * side + L;
            out.need = best[end];
        }
        if (!trace || !(out.need < infinity))
            return out;
        // Walk back: the stage whose own need is the answer is the fullest.
        double most = -infinity;
        for (std::uint32_t s = P; s-- > 0;) {
            const std::size_t at = came_from[s][end];
            const auto i = static_cast<std::uint32_t>(at / side);
            const auto j = static_cast<std::uint32_t>(at % side);
            const auto i_to = static_cast<std::uint32_t>(end / side);
            const auto j_to = static_cast<std::uint32_t>(end % side);
            const double need = dual ? needs_.need(s, i, i_to - i, j_to, j - j_to)
                                     : needs_.need(s, i, i_to - i, j, j_to - j);
            if (need > most) {
                most = need;
                out.fullest_stage = s;
            }
            end = at;
        }
        return out;
    }

    const Layout& layout_;
    const LeastNeeds& needs_;
    double upper_ = infinity;
};

}  // namespace

LeastLimit least_limit(const Layout& layout) {
    const LeastNeeds needs(layout);
    LeastLimit out;
    out.searched = needs.monotone();
    out.exact = needs.exact();
    if (out.searched) {
        const LeastCut cut = LeastLimitSearch(layout, needs).run();
        out.need = cut.need;
        out.fullest_stage = cut.fullest_stage;
    }
    return out;
}

[[noreturn]] void explain_grouped_chunked(const Layout& layout, const LeastLimit& least) {
    const Problem& p = layout.problem;
    const double budget = p.budget_mb();
    std::string reason;
    double worst_excess = 0.0;
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        const ChunkMemory none[2] = {};
        const double empty = layout.affine[s].rows.peak(none).memory;
        if (!within_budget(empty, budget) && empty - budget > worst_excess) {
            worst_excess = empty - budget;
            reason = fmt::format(
                "stage {} needs {:.1f} MB with no body layer, more than the {:.1f} MB available", s,
                empty, budget);
        }
    }
    if (reason.empty()) {
        reason = fmt::format(
            "within {:.1f} MB no cut of the {} body layers ({} groups) into {} stages of 2 chunks "
            "under {} fits every stage's memory over its in-flight profile, even with every layer "
            "at its group's least-memory recompute kind",
            budget, layout.layers, layout.groups, p.num_stages, schedule_name(p.schedule));
    }
    LeastFeasibleBudget found;
    found.certainty = !least.searched ? LeastFeasibleBudget::Certainty::unsearched
                      : least.exact   ? LeastFeasibleBudget::Certainty::exact
                                      : LeastFeasibleBudget::Certainty::lower_bound;
    found.unsearched_because = "a layer of the memory model needs less than 0 MB";
    found.need_mb = least.need;
    found.fullest_stage = least.fullest_stage;
    throw_infeasible(p, reason, found);
}

}  // namespace ppb::partition::detail
