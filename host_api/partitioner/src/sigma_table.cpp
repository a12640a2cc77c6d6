// Stage tables when every stage is planned against its predicted memory plus K standard errors
// (Problem::memory_margin_sigma = K > 0): the fastest mix of n layers whose
//     need = memory + K x se  fits the budget,
// for each stage and each n.
//
// The standard error of a linear fit's prediction is sqrt(x' S x) for the placement's design row
// x: not linear in the layer counts, so the layer-by-layer Pareto search of stage_table.cpp does
// not apply (a mix that is slower and predicted larger can have the smaller standard error, and
// adding a layer can lower it). The search here is exact instead, by two facts:
//   1. K x se >= 0, so a mix whose predicted memory alone is over the budget never fits. Only the
//      other mixes ("candidates") can, and only their standard errors are asked for.
//   2. The entry for n is the fastest candidate whose need fits: candidates are checked in order
//      of time and the check stops at the first time past a fit (ties: the least need).
// Linear models enumerate the candidates inline, pruning any partial mix that even the least
// memory of its remaining layers puts over the budget; when no kind frees memory (every unit
// memory >= 0) the least predicted memory of n layers, base + n x the least unit memory, does not
// fall as n grows, so once there is no candidate of n layers there is none of more. Other models
// predict every mix of n layers, as stage_table.cpp does, and stop at the first n without a
// candidate (memory is assumed not to fall when a layer is added).
//
// least_memory[n] is the least need among the mixes whose standard error was asked for (every
// single-kind mix of n layers, and the candidates checked): the need of some mix, so a budget it
// fits is feasible, and within the budget exactly when some mix of n layers fits (that mix's
// candidate was checked, or an earlier one fitted).
#include "stage_table.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ppb::partition::detail {
namespace {

// The most candidates of one stage and layer count checked against their standard errors'
// margin; beyond it the problem is refused rather than searched for minutes.
constexpr std::size_t max_candidates = 2'000'000;

using Batch = std::function<std::vector<double>(std::span<const ppb_placement>)>;

struct Candidate {
    KindCounts layers{};
    double time = 0.0;
    double memory = 0.0;
};

// `batch` (predict_batch or std_error) over `mixes` held by `stage`, one value each.
std::vector<double> ask(const Batch& batch, const char* what, const Problem& problem,
                        std::uint32_t stage, std::span<const KindCounts> mixes) {
    std::vector<ppb_chunk> chunks(mixes.size());
    std::vector<ppb_placement> placements;
    placements.reserve(mixes.size());
    for (std::size_t i = 0; i < mixes.size(); ++i) {
        std::copy(mixes[i].begin(), mixes[i].end(), chunks[i].layers);
        chunks[i].in_flight = problem.in_flight(stage);
        placements.push_back(ppb_placement{problem.num_stages, stage, 1, &chunks[i]});
    }
    std::vector<double> out = batch(placements);
    if (out.size() != mixes.size()) {
        throw std::runtime_error(fmt::format("the memory model returned {} {} for {} placements",
                                             out.size(), what, mixes.size()));
    }
    for (const double v : out) {
        if (!std::isfinite(v) || (std::string_view(what) == "standard errors" && v < 0.0))
            throw std::runtime_error(fmt::format("the memory model returned {} {}", what, v));
    }
    return out;
}

void too_many(std::uint32_t stage, std::uint32_t n) {
    throw InputError(fmt::format(
        "planning against the uncertainty would check more than {} recompute mixes of {} layers "
        "on stage {}; allow fewer recompute kinds",
        max_candidates, n, stage));
}

class SigmaTableBuilder {
  public:
    SigmaTableBuilder(const Problem& problem, const MemorySource& memory, std::uint32_t stage,
                      const std::vector<std::size_t>& kinds)
        : problem_(problem), memory_(memory), stage_(stage), kinds_(kinds) {
        if (memory_.linear) {
            const double f = problem_.in_flight(stage_);
            unit_.assign(kinds_.size(), 0.0);
            for (std::size_t i = 0; i < kinds_.size(); ++i)
                unit_[i] =
                    memory_.linear->per_layer_mb + memory_.linear->activation_mb[kinds_[i]] * f;
            // suffix_min_[i]: the least unit memory of kinds i.. (0 past the last).
            suffix_min_.assign(kinds_.size() + 1, 0.0);
            for (std::size_t i = kinds_.size(); i-- > 0;) {
                suffix_min_[i] =
                    i + 1 == kinds_.size() ? unit_[i] : std::min(unit_[i], suffix_min_[i + 1]);
            }
            monotone_ = suffix_min_[0] >= 0.0;
        }
    }

    StageTable build() {
        const std::uint32_t layers = problem_.time.body_layers;
        StageTable table;
        table.stage = stage_;
        table.fastest.assign(layers + 1, std::nullopt);
        table.least_memory.assign(layers + 1, infinity);
        for (std::uint32_t n = 0; n <= layers; ++n) {
            std::vector<Candidate> candidates =
                memory_.linear ? linear_candidates(n) : predicted_candidates(n);
            single_kind_needs(n, table);
            const bool none = candidates.empty();
            choose(n, std::move(candidates), table);
            if (none && monotone_ && n >= problem_.min_layers(stage_)) {
                for (std::uint32_t m = n + 1; m <= layers; ++m)
                    single_kind_needs(m, table);
                break;
            }
        }
        return table;
    }

  private:
    [[nodiscard]] double budget() const { return problem_.budget_mb(); }

    // Mixes of n layers whose predicted memory is within the budget (linear coefficients).
    std::vector<Candidate> linear_candidates(std::uint32_t n) const {
        std::vector<Candidate> out;
        // A partial mix is pruned only when clearly over: the exact test is at the leaf.
        const double slack = 1e-7 * std::max(1.0, std::abs(budget()));
        const double base = linear_stage_memory(*memory_.linear, problem_, stage_, {});
        KindCounts current{};
        const auto place = [&](const auto& self, std::size_t i, std::uint32_t left,
                               double partial) -> void {
            if (i + 1 == kinds_.size()) {
                current[kinds_[i]] = left;
                const double m = linear_stage_memory(*memory_.linear, problem_, stage_, current);
                if (within_budget(m, budget()) && admits(problem_, current)) {
                    if (out.size() == max_candidates)
                        too_many(stage_, n);
                    out.push_back(Candidate{current, stage_time(problem_, stage_, current), m});
                }
                current[kinds_[i]] = 0;
                return;
            }
            for (std::uint32_t c = 0; c <= left; ++c) {
                const double here = partial + c * unit_[i];
                const double least = here + (left - c) * suffix_min_[i + 1];
                if (least > budget() + slack) {
                    // The bound grows with c when this kind needs no less than the rest.
                    if (unit_[i] >= suffix_min_[i + 1])
                        break;
                    continue;
                }
                current[kinds_[i]] = c;
                self(self, i + 1, left - c, here);
            }
            current[kinds_[i]] = 0;
        };
        place(place, 0, n, base);
        return out;
    }

    // Every mix of n layers predicted; those within the budget.
    std::vector<Candidate> predicted_candidates(std::uint32_t n) const {
        std::vector<KindCounts> mixes;
        KindCounts current{};
        compositions(n, kinds_, 0, current, mixes);
        // Mixes the recompute rule forbids are never candidates (a single kind always is, so
        // the stop rule above still holds).
        std::erase_if(mixes, [this](const KindCounts& mix) { return !admits(problem_, mix); });
        const std::vector<double> predicted =
            ask(memory_.predict_batch, "predictions", problem_, stage_, mixes);
        std::vector<Candidate> out;
        for (std::size_t i = 0; i < mixes.size(); ++i) {
            if (within_budget(predicted[i], budget())) {
                if (out.size() == max_candidates)
                    too_many(stage_, n);
                out.push_back(
                    Candidate{mixes[i], stage_time(problem_, stage_, mixes[i]), predicted[i]});
            }
        }
        return out;
    }

    std::vector<double> margins(std::span<const KindCounts> mixes) const {
        std::vector<double> se = ask(memory_.std_error, "standard errors", problem_, stage_, mixes);
        for (double& v : se)
            v *= problem_.memory_margin_sigma;
        return se;
    }

    // The needs of the single-kind mixes of n layers, into least_memory[n] (and the kind of the
    // least need of one layer, for messages).
    void single_kind_needs(std::uint32_t n, StageTable& table) const {
        std::vector<KindCounts> mixes;
        for (const std::size_t k : kinds_) {
            KindCounts mix{};
            mix[k] = n;
            mixes.push_back(mix);
            if (n == 0)
                break;  // one empty mix
        }
        std::vector<double> predicted;
        if (memory_.linear) {
            for (const auto& mix : mixes)
                predicted.push_back(linear_stage_memory(*memory_.linear, problem_, stage_, mix));
        } else {
            predicted = ask(memory_.predict_batch, "predictions", problem_, stage_, mixes);
        }
        const std::vector<double> margin = margins(mixes);
        for (std::size_t i = 0; i < mixes.size(); ++i) {
            const double need = predicted[i] + margin[i];
            if (need < table.least_memory[n]) {
                table.least_memory[n] = need;
                if (n == 1)
                    table.least_memory_kind = static_cast<ppb_kind>(kinds_[i]);
            }
        }
    }

    // fastest[n]: the fastest candidate whose need fits, checked in order of time.
    void choose(std::uint32_t n, std::vector<Candidate> candidates, StageTable& table) const {
        std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
            return a.time != b.time ? a.time < b.time : a.memory < b.memory;
        });
        std::optional<StageChoice> best;
        std::size_t block = 16;
        std::vector<KindCounts> mixes;
        for (std::size_t next = 0; next < candidates.size();) {
            const std::size_t end = std::min(candidates.size(), next + block);
            mixes.clear();
            for (std::size_t i = next; i < end; ++i)
                mixes.push_back(candidates[i].layers);
            const std::vector<double> margin = margins(mixes);
            for (std::size_t i = next; i < end; ++i) {
                const Candidate& c = candidates[i];
                if (best && c.time > best->time)
                    return;
                const double need = c.memory + margin[i - next];
                table.least_memory[n] = std::min(table.least_memory[n], need);
                if (within_budget(need, budget()) &&
                    (!best || need < best->memory + best->margin)) {
                    best = StageChoice{c.layers, c.time, c.memory, margin[i - next]};
                    table.fastest[n] = best;
                }
            }
            next = end;
            block = std::min<std::size_t>(block * 2, 4096);
        }
    }

    const Problem& problem_;
    const MemorySource& memory_;
    std::uint32_t stage_;
    const std::vector<std::size_t>& kinds_;
    std::vector<double> unit_;        // unit memory of kinds_[i] on this stage (linear)
    std::vector<double> suffix_min_;  // least unit memory of kinds_[i..] (linear)
    bool monotone_ = true;            // least memory of n layers does not fall as n grows
};

}  // namespace

std::vector<StageTable> build_sigma_tables(const Problem& problem, const MemorySource& memory,
                                           std::uint32_t kinds) {
    if (!memory.std_error)
        throw InputError("the memory model gives no standard errors to plan against");
    std::vector<std::size_t> list;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((kinds & PPB_KIND_BIT(k)) != 0)
            list.push_back(k);
    }
    std::vector<StageTable> tables;
    tables.reserve(problem.num_stages);
    for (std::uint32_t s = 0; s < problem.num_stages; ++s)
        tables.push_back(SigmaTableBuilder(problem, memory, s, list).build());
    return tables;
}

}  // namespace ppb::partition::detail
