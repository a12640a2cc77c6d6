// One recompute setting for the whole model (RecomputeRule::megatron).
//
// Exactness. A Megatron-LM run applies one setting to every model chunk (problem.hpp,
// MegatronRecompute), so a plan under the rule is a setting plus layer counts per (stage, chunk),
// each chunk's mix following from its count. For a fixed setting the solver's tables hold a single
// candidate mix per count (admits()), and the 1F1B and chunked solvers are exact over their
// candidates (with several groups under 1F1B each range takes its one mix: grouped_solver.cpp);
// the optimum under the rule is the fastest of the settings' optima. The settings are none,
// selective, uniform and block N for N = 1 .. L - 1 (with N >= L block is uniform): at most L + 2
// plans.
#include "megatron_solver.hpp"
#include "stage_table.hpp"

#include <ppb/errors.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ppb::partition {

KindCounts MegatronRecompute::chunk_layers(std::uint32_t n) const {
    KindCounts mix{};
    switch (method) {
        case Method::none:
            mix[PPB_KIND_NONE] = n;
            break;
        case Method::selective:
            mix[PPB_KIND_SELECT] = n;
            break;
        case Method::uniform:
            mix[PPB_KIND_FULL] = n;
            break;
        case Method::block:
            mix[PPB_KIND_FULL] = std::min(n, num_layers);
            mix[PPB_KIND_NONE] = n - mix[PPB_KIND_FULL];
            break;
    }
    return mix;
}

std::uint32_t MegatronRecompute::kinds() const {
    switch (method) {
        case Method::none:
            return PPB_KIND_BIT(PPB_KIND_NONE);
        case Method::selective:
            return PPB_KIND_BIT(PPB_KIND_SELECT);
        case Method::uniform:
            return PPB_KIND_BIT(PPB_KIND_FULL);
        case Method::block:
            return PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_FULL);
    }
    return 0;
}

std::string describe(const MegatronRecompute& setting) {
    switch (setting.method) {
        case MegatronRecompute::Method::none:
            return "no recompute";
        case MegatronRecompute::Method::selective:
            return "selective recompute (every layer 'select')";
        case MegatronRecompute::Method::uniform:
            return "full recompute of every layer (uniform)";
        case MegatronRecompute::Method::block:
            return fmt::format("full recompute of the first {} layer{} of every chunk (block)",
                               setting.num_layers, setting.num_layers == 1 ? "" : "s");
    }
    return {};
}

std::optional<MegatronRecompute> megatron_recompute_of(const Plan& plan) {
    if (plan.recompute_setting)
        return plan.recompute_setting;
    const auto builds = [&](const MegatronRecompute& setting) {
        for (const StagePlan& s : plan.stages) {
            for (const ChunkPlan& c : s.chunks) {
                const std::uint32_t n = std::accumulate(c.layers.begin(), c.layers.end(), 0u);
                if (setting.chunk_layers(n) != c.layers)
                    return false;
            }
        }
        return true;
    };
    using Method = MegatronRecompute::Method;
    for (const Method m : {Method::none, Method::selective, Method::uniform}) {
        if (builds(MegatronRecompute{m, 0}))
            return MegatronRecompute{m, 0};
    }
    // Block N: N is the most 'full' layers of a chunk that also holds 'none' layers.
    std::uint32_t n = 0;
    for (const StagePlan& s : plan.stages) {
        for (const ChunkPlan& c : s.chunks) {
            if (c.layers[PPB_KIND_NONE] > 0)
                n = std::max(n, c.layers[PPB_KIND_FULL]);
        }
    }
    if (n > 0 && builds(MegatronRecompute{Method::block, n}))
        return MegatronRecompute{Method::block, n};
    return std::nullopt;
}

namespace detail {

namespace {

// The most body layers one chunk of `problem` can hold: all but what every other chunk must hold
// (a layer, or none at the model's ends).
std::uint32_t most_in_one_chunk(const Problem& problem) {
    std::uint32_t least_total = 0;
    std::uint32_t least_of_one = 0;
    for (std::uint32_t s = 0; s < problem.num_stages; ++s) {
        for (std::uint32_t c = 0; c < problem.chunks; ++c) {
            least_total += problem.min_layers(s, c);
            least_of_one = std::max(least_of_one, problem.min_layers(s, c));
        }
    }
    const std::uint32_t layers = problem.time.body_layers;
    return least_total - least_of_one >= layers ? 0 : layers - (least_total - least_of_one);
}

}  // namespace

std::vector<MegatronRecompute> megatron_settings(const Problem& problem, std::uint32_t kinds) {
    using Method = MegatronRecompute::Method;
    std::vector<MegatronRecompute> all = {{Method::none, 0}, {Method::selective, 0}};
    // Block N with N at least the most one chunk can hold recomputes every layer, as uniform
    // does, and so does every larger N: of them only that first one is weighed (it comes first
    // on a tie, as it did among them all).
    const std::uint32_t layers = problem.time.body_layers;
    const std::uint32_t last_block =
        layers <= 1 ? 0 : std::min(layers - 1, std::max(1u, most_in_one_chunk(problem)));
    for (std::uint32_t n = 1; n <= last_block; ++n) {
        if (problem.rule != RecomputeRule::torchtitan)
            all.push_back({Method::block, n});
    }
    all.push_back({Method::uniform, 0});
    std::vector<MegatronRecompute> usable;
    for (const auto& setting : all) {
        if ((setting.kinds() & ~kinds) == 0)
            usable.push_back(setting);
    }
    return usable;
}

Plan solve_megatron(const Problem& problem, const MemorySource& memory) {
    const std::uint32_t kinds = candidate_kinds(problem, memory);
    const auto settings = megatron_settings(problem, kinds);
    if (settings.empty()) {
        throw InputError(
            "one recompute setting per run (Megatron-LM's and torchtitan's rules) needs the kind "
            "'none', 'select' or 'full' (their settings use no others), but none of them is both "
            "allowed and predictable by the memory model");
    }
    std::optional<Plan> best;
    std::optional<Infeasible> closest;
    std::optional<MegatronRecompute> closest_setting;
    for (const auto& setting : settings) {
        Problem fixed = problem;
        fixed.recompute_setting = setting;
        fixed.kinds = problem.kinds & setting.kinds();
        try {
            Plan plan = solve(fixed, memory);
            if (!best || plan.iteration_time < best->iteration_time)
                best = std::move(plan);
        } catch (const Infeasible& e) {
            if (!closest ||
                e.smallest_feasible_limit_mb() < closest->smallest_feasible_limit_mb()) {
                closest.emplace(e);
                closest_setting = setting;
            }
        }
    }
    if (!best) {
        throw Infeasible(
            fmt::format("{} (under every one of Megatron's recompute settings; the figures are "
                        "those of the setting that comes closest, {})",
                        closest->what(), describe(*closest_setting)),
            closest->smallest_feasible_limit_mb());
    }
    // Block N where every chunk holds at most N layers is uniform: say so.
    if (best->recompute_setting &&
        best->recompute_setting->method == MegatronRecompute::Method::block) {
        bool every_layer_full = true;
        for (const auto& s : best->stages)
            every_layer_full = every_layer_full && s.layers[PPB_KIND_NONE] == 0;
        if (every_layer_full)
            best->recompute_setting = MegatronRecompute{MegatronRecompute::Method::uniform, 0};
    }
    return *best;
}

}  // namespace detail
}  // namespace ppb::partition
