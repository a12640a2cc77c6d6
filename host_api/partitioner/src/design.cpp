// The dry-run design search of ppb/partition/design.hpp: rows of the model, the criterion, random
// runs under each rule, their neighbours, and coordinate exchange with restarts.
#include <ppb/partition/design.hpp>

#include "design_precision.hpp"

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <utility>

namespace ppb::partition {

using design_detail::Gram;
using design_detail::Inverse;

std::string_view design_rule_name(DesignRule rule) noexcept {
    switch (rule) {
        case DesignRule::mindformers:
            return "mindformers";
        case DesignRule::megatron:
            return "megatron";
        case DesignRule::torchtitan:
            return "torchtitan";
        case DesignRule::any:
            return "any";
    }
    return "any";
}

std::optional<DesignRule> design_rule_from_name(std::string_view name) noexcept {
    for (const DesignRule rule :
         {DesignRule::mindformers, DesignRule::megatron, DesignRule::torchtitan, DesignRule::any}) {
        if (design_rule_name(rule) == name)
            return rule;
    }
    return std::nullopt;
}

std::uint32_t DesignStage::total_layers() const {
    std::uint32_t n = 0;
    for (const auto k : layers)
        n += k;
    return n;
}

std::vector<std::string> design_coefficients(std::uint32_t kinds) {
    std::vector<std::string> names = {"const_mb", "head_mb", "tail_mb", "param_per_layer_mb"};
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((kinds & PPB_KIND_BIT(k)) != 0)
            names.push_back("activation_mb." + std::string(kind_names[k]));
    }
    return names;
}

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

// What every part of the search needs to know about the request.
struct Setup {
    const DesignRequest* request = nullptr;
    FieldName name = keyword_name;   // the request's settings in the host's words
    std::vector<std::size_t> kinds;  // kind indices named, ascending
    std::size_t unknowns = 0;
    std::uint32_t micro_batches = 0;
    std::uint32_t max_degree = 0;
    std::vector<std::vector<double>> vertices;  // V of the header comment
    // The prior's predictions, by (degree, stage, layers).
    mutable std::map<std::tuple<std::uint32_t, std::uint32_t, KindCounts>, double> prior_cache;

    [[nodiscard]] bool has_kind(std::size_t k) const {
        return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
    }
    [[nodiscard]] bool limited() const {
        return request->memory_limit_mb > 0.0 && static_cast<bool>(request->prior);
    }
    [[nodiscard]] std::uint32_t in_flight(std::uint32_t p, std::uint32_t s) const {
        return std::min(p - s, micro_batches);
    }
    [[nodiscard]] std::vector<double> row(std::uint32_t p, std::uint32_t s,
                                          const KindCounts& layers) const {
        std::vector<double> x(unknowns, 0.0);
        x[0] = 1.0;
        x[1] = s == 0 ? 1.0 : 0.0;
        x[2] = s + 1 == p ? 1.0 : 0.0;
        const double f = in_flight(p, s);
        double n = 0.0;
        for (std::size_t i = 0; i < kinds.size(); ++i) {
            n += layers[kinds[i]];
            x[4 + i] = layers[kinds[i]] * f;
        }
        x[3] = n;
        return x;
    }
    [[nodiscard]] double prior_mb(std::uint32_t p, std::uint32_t s,
                                  const KindCounts& layers) const {
        const auto key = std::make_tuple(p, s, layers);
        if (const auto it = prior_cache.find(key); it != prior_cache.end())
            return it->second;
        ppb_chunk chunk{};
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            chunk.layers[k] = layers[k];
        chunk.in_flight = in_flight(p, s);
        const ppb_placement placement{p, s, 1, &chunk};
        const double mb = request->prior(std::span<const ppb_placement>(&placement, 1)).at(0);
        prior_cache.emplace(key, mb);
        return mb;
    }
};

// A run while it is searched: its degree, each stage's layers, and Megatron's setting.
struct Run {
    std::uint32_t p = 1;
    std::vector<KindCounts> layers;
    MegatronRecompute megatron;
};

std::uint32_t total(const KindCounts& c) {
    std::uint32_t n = 0;
    for (const auto k : c)
        n += k;
    return n;
}

// Megatron's setting applied to each stage's layer count.
void apply_megatron(Run& run) {
    for (KindCounts& stage : run.layers) {
        const std::uint32_t n = total(stage);
        stage = run.megatron.chunk_layers(n);  // a designed run has one chunk per stage
    }
}

bool stage_expressible(const Setup& setup, const KindCounts& c) {
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (c[k] != 0 && !setup.has_kind(k))
            return false;
    }
    if (setup.request->rule == DesignRule::mindformers)
        return expressible(c, RecomputeRule::mindformers);
    return true;
}

// The criterion's pieces, compared lexicographically: memory over the limit, rank deficit, G.
struct Score {
    double excess_mb = 0.0;
    std::size_t deficit = 0;
    double g = infinity;  // or, when minimising the peak, the largest prior stage memory

    [[nodiscard]] bool better_than(const Score& o) const {
        if (excess_mb < o.excess_mb - 1e-9)
            return true;
        if (excess_mb > o.excess_mb + 1e-9)
            return false;
        if (deficit != o.deficit)
            return deficit < o.deficit;
        return g < o.g * (1.0 - 1e-12);
    }
};

enum class Goal { precision, lowest_peak };

Gram run_gram(const Setup& setup, const Run& run) {
    Gram g(setup.unknowns);
    for (std::uint32_t s = 0; s < run.p; ++s)
        g.add_row(setup.row(run.p, s, run.layers[s]));
    return g;
}

double worst_g(const Setup& setup, const Inverse& inverse) {
    double worst = 0.0;
    for (const auto& x : setup.vertices)
        worst = std::max(worst, inverse.prediction_variance(x));
    return std::sqrt(worst);
}

Score score_of(const Setup& setup, const Gram& gram, double excess, double peak, Goal goal) {
    Score score;
    score.excess_mb = goal == Goal::lowest_peak ? 0.0 : excess;
    const Inverse inverse = design_detail::invert(gram);
    score.deficit = setup.unknowns - inverse.rank;
    if (goal == Goal::lowest_peak)
        score.g = peak;
    else
        score.g = inverse.full_rank() ? worst_g(setup, inverse) : infinity;
    return score;
}

double run_excess(const Setup& setup, const Run& run, double* peak) {
    double excess = 0.0;
    if (!setup.request->prior)
        return 0.0;
    for (std::uint32_t s = 0; s < run.p; ++s) {
        const double mb = setup.prior_mb(run.p, s, run.layers[s]);
        if (peak != nullptr)
            *peak = std::max(*peak, mb);
        if (setup.limited())
            excess += std::max(0.0, mb - setup.request->memory_limit_mb);
    }
    return excess;
}

// A random composition of L layers into p stages of at least one each.
std::vector<std::uint32_t> random_counts(std::uint32_t layers, std::uint32_t p,
                                         std::mt19937_64& rng) {
    std::vector<std::uint32_t> counts(p, 1);
    std::uniform_int_distribution<std::uint32_t> stage(0, p - 1);
    for (std::uint32_t i = p; i < layers; ++i)
        ++counts[stage(rng)];
    return counts;
}

std::vector<MegatronRecompute> megatron_settings(const Setup& setup, std::uint32_t max_layers) {
    std::vector<MegatronRecompute> out;
    using M = MegatronRecompute::Method;
    if (setup.has_kind(PPB_KIND_NONE))
        out.push_back({M::none, 0});
    if (setup.has_kind(PPB_KIND_SELECT))
        out.push_back({M::selective, 0});
    if (setup.has_kind(PPB_KIND_FULL)) {
        // Block N of the first N layers (not under torchtitan's one mode); N covering every
        // stage is the uniform method.
        if (setup.has_kind(PPB_KIND_NONE) && setup.request->rule != DesignRule::torchtitan) {
            for (std::uint32_t n = 1; n < max_layers; ++n)
                out.push_back({M::block, n});
        }
        out.push_back({M::uniform, 0});
    }
    return out;
}

Run random_run(const Setup& setup, std::mt19937_64& rng) {
    const DesignRequest& r = *setup.request;
    Run run;
    run.p = r.stages[std::uniform_int_distribution<std::size_t>(0, r.stages.size() - 1)(rng)];
    const auto counts = random_counts(r.num_layers, run.p, rng);
    run.layers.assign(run.p, KindCounts{});
    if (one_setting_per_run(r.rule)) {
        for (std::uint32_t s = 0; s < run.p; ++s)
            run.layers[s][PPB_KIND_NONE] = counts[s];
        const auto settings = megatron_settings(setup, r.num_layers);
        run.megatron =
            settings[std::uniform_int_distribution<std::size_t>(0, settings.size() - 1)(rng)];
        apply_megatron(run);
        return run;
    }
    std::uniform_int_distribution<std::size_t> kind(0, setup.kinds.size() - 1);
    for (std::uint32_t s = 0; s < run.p; ++s) {
        for (std::uint32_t i = 0; i < counts[s]; ++i) {
            KindCounts next = run.layers[s];
            ++next[setup.kinds[kind(rng)]];
            if (!stage_expressible(setup, next)) {
                // 'select' beside 'comm' under MindFormers' rule: the layer takes the other.
                next = run.layers[s];
                ++next[next[PPB_KIND_SELECT] != 0 ? PPB_KIND_SELECT : PPB_KIND_COMM];
            }
            run.layers[s] = next;
        }
    }
    return run;
}

// Every neighbour of `run` (header comment), valid under the rule.
std::vector<Run> neighbours(const Setup& setup, const Run& run, std::mt19937_64& rng) {
    const DesignRequest& r = *setup.request;
    std::vector<Run> out;
    const bool megatron = one_setting_per_run(r.rule);
    // One layer from stage a to stage b (of the same kind; Megatron re-applies its setting).
    for (std::uint32_t a = 0; a < run.p; ++a) {
        if (total(run.layers[a]) <= 1)
            continue;
        for (std::uint32_t b = 0; b < run.p; ++b) {
            if (a == b)
                continue;
            for (const std::size_t k : setup.kinds) {
                if (run.layers[a][k] == 0)
                    continue;
                Run next = run;
                --next.layers[a][k];
                ++next.layers[b][k];
                if (megatron) {
                    apply_megatron(next);
                } else if (!stage_expressible(setup, next.layers[b])) {
                    continue;
                }
                out.push_back(std::move(next));
                if (megatron)
                    break;
            }
        }
    }
    if (megatron) {
        std::uint32_t most = 0;
        for (const auto& c : run.layers)
            most = std::max(most, total(c));
        for (const MegatronRecompute& setting : megatron_settings(setup, most)) {
            if (setting == run.megatron)
                continue;
            Run next = run;
            next.megatron = setting;
            apply_megatron(next);
            out.push_back(std::move(next));
        }
    } else {
        // One layer of stage s from kind k1 to kind k2.
        for (std::uint32_t s = 0; s < run.p; ++s) {
            for (const std::size_t k1 : setup.kinds) {
                if (run.layers[s][k1] == 0)
                    continue;
                for (const std::size_t k2 : setup.kinds) {
                    if (k1 == k2)
                        continue;
                    Run next = run;
                    --next.layers[s][k1];
                    ++next.layers[s][k2];
                    if (stage_expressible(setup, next.layers[s]))
                        out.push_back(std::move(next));
                }
            }
        }
    }
    // Another degree: a random run of it.
    for (const std::uint32_t p : r.stages) {
        if (p == run.p)
            continue;
        for (int attempt = 0; attempt < 4; ++attempt) {
            Run next = random_run(setup, rng);
            if (next.p == p) {
                out.push_back(std::move(next));
                break;
            }
        }
    }
    return out;
}

struct SearchState {
    std::vector<Run> runs;
    Score score;
};

// Coordinate exchange from random starts (header comment).
SearchState search(const Setup& setup, std::uint32_t n, Goal goal, std::uint64_t seed) {
    const DesignRequest& r = *setup.request;
    std::mt19937_64 rng(seed);
    SearchState best;
    for (std::uint32_t restart = 0; restart < std::max<std::uint32_t>(1, r.restarts); ++restart) {
        std::vector<Run> runs;
        for (std::uint32_t i = 0; i < n; ++i)
            runs.push_back(random_run(setup, rng));
        std::vector<Gram> grams;
        std::vector<double> excess;
        std::vector<double> peaks;
        for (const Run& run : runs) {
            grams.push_back(run_gram(setup, run));
            double peak = 0.0;
            excess.push_back(run_excess(setup, run, &peak));
            peaks.push_back(peak);
        }
        const auto score_with = [&](std::size_t i, const Gram& g, double e, double pk) {
            Gram sum(setup.unknowns);
            double ex = e;
            double peak = pk;
            for (std::size_t j = 0; j < runs.size(); ++j) {
                sum.add(j == i ? g : grams[j]);
                if (j != i) {
                    ex += excess[j];
                    peak = std::max(peak, peaks[j]);
                }
            }
            return score_of(setup, sum, ex, peak, goal);
        };
        Score current = score_with(0, grams[0], excess[0], peaks[0]);
        for (int sweep = 0; sweep < 200; ++sweep) {
            bool improved = false;
            for (std::size_t i = 0; i < runs.size(); ++i) {
                for (Run& candidate : neighbours(setup, runs[i], rng)) {
                    Gram g = run_gram(setup, candidate);
                    double pk = 0.0;
                    const double e = run_excess(setup, candidate, &pk);
                    const Score s = score_with(i, g, e, pk);
                    if (s.better_than(current)) {
                        current = s;
                        runs[i] = std::move(candidate);
                        grams[i] = std::move(g);
                        excess[i] = e;
                        peaks[i] = pk;
                        improved = true;
                    }
                }
            }
            if (!improved)
                break;
        }
        if (best.runs.empty() || current.better_than(best.score)) {
            best.runs = runs;
            best.score = current;
        }
    }
    return best;
}

Setup make_setup(const DesignRequest& r, const FieldName& name = keyword_name) {
    if (r.stages.empty())
        refuse("stages", name, "no pipeline degree: give one (P) or several (P1,P2)");
    Setup setup;
    setup.request = &r;
    setup.name = name;
    for (const std::uint32_t p : r.stages) {
        check_count("stages", p, limits::stages, name);
        setup.max_degree = std::max(setup.max_degree, p);
    }
    if (r.num_layers < setup.max_degree) {
        refuse("num_layers", name,
               fmt::format("{} is fewer than the {} stages of the largest degree: every stage "
                           "holds at least one layer",
                           r.num_layers, setup.max_degree));
    }
    check_count("num_layers", r.num_layers, limits::layers, name);
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((r.kinds & PPB_KIND_BIT(k)) != 0)
            setup.kinds.push_back(k);
    }
    if (setup.kinds.empty())
        refuse("kinds", name, "no recompute kind: give none, select, comm, both or full");
    if (one_setting_per_run(r.rule)) {
        const bool megatron = r.rule == DesignRule::megatron;
        for (const std::size_t k : setup.kinds) {
            if (k == PPB_KIND_COMM || k == PPB_KIND_BOTH) {
                refuse("kinds", name,
                       fmt::format("{}: {} has no communication recompute; under {} {} the kinds "
                                   "are none, select and full",
                                   kind_names[k], megatron ? "Megatron-LM" : "torchtitan",
                                   name("recompute_rule"), design_rule_name(r.rule)));
            }
        }
    }
    if (!(r.noise_mb > 0.0) || !std::isfinite(r.noise_mb))
        refuse("noise_mb", name, fmt::format("{} must be a positive number of MB", r.noise_mb));
    if (r.memory_limit_mb < 0.0 || !std::isfinite(r.memory_limit_mb))
        refuse("memory_limit_mb", name, "must be a positive number of MB");
    setup.micro_batches = r.micro_batches == 0 ? setup.max_degree : r.micro_batches;
    setup.unknowns = 4 + setup.kinds.size();
    for (const std::uint32_t p : r.stages) {
        for (std::uint32_t s = 0; s < p; ++s) {
            for (const std::uint32_t n : {1U, r.num_layers - (p - 1)}) {
                for (const std::size_t k : setup.kinds) {
                    KindCounts c{};
                    c[k] = n;
                    setup.vertices.push_back(setup.row(p, s, c));
                }
            }
        }
    }
    return setup;
}

DesignRun finished_run(const Setup& setup, const Run& run, std::size_t index) {
    DesignRun out;
    out.label = fmt::format("run-{}", index + 1);
    out.num_stages = run.p;
    for (std::uint32_t s = 0; s < run.p; ++s) {
        DesignStage stage;
        stage.stage = s;
        stage.layers = run.layers[s];
        stage.in_flight = setup.in_flight(run.p, s);
        if (setup.request->prior)
            stage.prior_mb = setup.prior_mb(run.p, s, run.layers[s]);
        out.stages.push_back(stage);
    }
    if (one_setting_per_run(setup.request->rule))
        out.megatron = run.megatron;
    return out;
}

std::vector<Run> as_search_runs(std::span<const DesignRun> runs) {
    std::vector<Run> out;
    for (const DesignRun& d : runs) {
        Run run;
        run.p = d.num_stages;
        for (const DesignStage& s : d.stages)
            run.layers.push_back(s.layers);
        if (d.megatron)
            run.megatron = *d.megatron;
        out.push_back(std::move(run));
    }
    return out;
}

DesignPrecision precision_of(const Setup& setup, const std::vector<Run>& runs) {
    Gram gram(setup.unknowns);
    for (const Run& run : runs)
        gram.add(run_gram(setup, run));
    const Inverse inverse = design_detail::invert(gram);
    DesignPrecision out;
    const auto names = design_coefficients(setup.request->kinds);
    out.identified = inverse.full_rank();
    for (std::size_t j = 0; j < setup.unknowns; ++j) {
        if (!inverse.identified[j])
            out.unidentified.push_back(names[j]);
    }
    const double noise = setup.request->noise_mb;
    out.worst_prediction_std_error_mb = out.identified ? noise * worst_g(setup, inverse) : infinity;
    if (out.identified) {
        for (std::size_t j = 0; j < setup.unknowns; ++j)
            out.std_errors.push_back(
                {names[j],
                 noise * std::sqrt(std::max(0.0, inverse.covariance[j * setup.unknowns + j]))});
    }
    return out;
}

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0)
            out += i + 1 == words.size() ? " and " : ", ";
        out += words[i];
    }
    return out;
}

// Why the degrees and counts asked for cannot identify `missing`, and what would.
std::string structural_reason(const Setup& setup, const std::vector<std::string>& missing) {
    const auto lacks = [&](std::string_view name) {
        return std::find(missing.begin(), missing.end(), name) != missing.end();
    };
    const FieldName& name = setup.name;
    std::vector<std::string> why;
    if (setup.max_degree < 3 && (lacks("const_mb") || lacks("head_mb") || lacks("tail_mb")))
        why.emplace_back(fmt::format(
            "separating const_mb from head_mb and tail_mb needs a stage that is neither first "
            "nor last: add a pipeline degree of 3 or more to {}",
            name("stages")));
    if (setup.micro_batches < 2 || setup.max_degree < 2)
        why.emplace_back(fmt::format(
            "every stage then holds one micro-batch, so param_per_layer_mb and the activations "
            "are seen only as sums: use {} 2 or more with a degree of 2 or more",
            name("micro_batches")));
    if (why.empty())
        why.emplace_back(fmt::format(
            "the layer counts leave too little to vary: more {}, another degree in {}, or more "
            "{}",
            name("num_layers"), name("stages"), name("runs")));
    return joined(why);
}

}  // namespace

DesignPrecision design_precision(const DesignRequest& request, std::span<const DesignRun> runs) {
    const Setup setup = make_setup(request);
    return precision_of(setup, as_search_runs(runs));
}

Design design_dry_runs(const DesignRequest& request, const FieldName& name) {
    const Setup setup = make_setup(request, name);
    if (request.runs != 0)
        check_count("runs", request.runs, {1, 64, "dry runs"}, name);
    // Rows needed: every run gives at most max_degree of them.
    const std::uint32_t fewest_rows =
        static_cast<std::uint32_t>((setup.unknowns + setup.max_degree - 1) / setup.max_degree);
    const std::uint32_t most = std::max<std::uint32_t>(fewest_rows + 4, request.runs);
    // No run fits the limit: every run places all L layers over its stages, so more runs cannot
    // help; said as soon as the search for the lowest peak finds nothing under the limit, rather
    // than after a precision search of every number of runs (the slowest requests are these).
    std::optional<SearchState> lowest;
    const auto lowest_peak = [&]() -> const SearchState& {
        if (!lowest)
            lowest = search(setup, std::max(fewest_rows, 1U), Goal::lowest_peak, request.seed);
        return *lowest;
    };
    const auto nothing_fits = [&] {
        throw Infeasible(
            fmt::format("no dry run fits {} {:.1f}: every design the search tried has a stage "
                        "over it; the lowest peak it found is {:.1f} MB",
                        name("memory_limit_mb"), request.memory_limit_mb, lowest_peak().score.g),
            lowest_peak().score.g);
    };
    std::optional<SearchState> found;
    std::uint32_t found_n = 0;
    SearchState closest;  // the best design short of the goal, for the explanation
    for (std::uint32_t n = std::max<std::uint32_t>(fewest_rows, 1); n <= most; ++n) {
        SearchState state = search(setup, n, Goal::precision, request.seed + n);
        if (state.score.excess_mb <= 0.0 && state.score.deficit == 0) {
            found = std::move(state);
            found_n = n;
            break;
        }
        if (state.score.excess_mb > 0.0 && lowest_peak().score.g > request.memory_limit_mb)
            nothing_fits();
        if (closest.runs.empty() || state.score.better_than(closest.score))
            closest = std::move(state);
    }
    if (!found) {
        const DesignPrecision best = precision_of(setup, closest.runs);
        if (closest.score.excess_mb > 0.0 || !setup.limited()) {
            if (closest.score.excess_mb > 0.0)
                nothing_fits();
            throw Infeasible(
                fmt::format("no design of up to {} dry runs identifies {}: {}", most,
                            joined(best.unidentified), structural_reason(setup, best.unidentified)),
                infinity);
        }
        // Within the limit some coefficients stay undetermined: what limit would do?
        SearchState low;
        for (std::uint32_t n = std::max<std::uint32_t>(fewest_rows, 1); n <= most; ++n) {
            low = search(setup, n, Goal::lowest_peak, request.seed + n);
            if (low.score.deficit == 0)
                break;
        }
        const std::string would =
            low.score.deficit == 0
                ? fmt::format(
                      "a limit of {:.1f} MB would do (the lowest peak of a design that "
                      "identifies everything)",
                      low.score.g)
                : std::string("no limit would do: ") + structural_reason(setup, best.unidentified);
        throw Infeasible(
            fmt::format("within {} {:.1f} no design of up to {} dry runs identifies {}; {}",
                        name("memory_limit_mb"), request.memory_limit_mb, most,
                        joined(best.unidentified), would),
            low.score.deficit == 0 ? low.score.g : infinity);
    }
    if (request.runs != 0 && request.runs < found_n)
        throw Infeasible(fmt::format("{} {}: {} dry runs cannot identify every coefficient "
                                     "here; the fewest that do are {}",
                                     name("runs"), request.runs, request.runs, found_n),
                         infinity);
    if (request.runs > found_n) {
        SearchState more =
            search(setup, request.runs, Goal::precision, request.seed + request.runs);
        if (more.score.excess_mb <= 0.0 && more.score.deficit == 0 &&
            more.score.g <= found->score.g)
            found = std::move(more);
        else {
            // The search's restarts did worse with more runs: the fewest-run design plus runs
            // repeated from it cannot be less precise.
            std::vector<Run> runs = found->runs;
            for (std::size_t i = 0; runs.size() < request.runs; ++i)
                runs.push_back(found->runs[i % found->runs.size()]);
            found->runs = std::move(runs);
        }
    }
    Design design;
    design.micro_batches = setup.micro_batches;
    design.fewest_runs = found_n;
    for (std::size_t i = 0; i < found->runs.size(); ++i)
        design.runs.push_back(finished_run(setup, found->runs[i], i));
    const DesignPrecision precision = precision_of(setup, found->runs);
    design.std_errors = precision.std_errors;
    design.worst_prediction_std_error_mb = precision.worst_prediction_std_error_mb;
    design.placements = setup.vertices.size();
    return design;
}

std::optional<std::vector<DesignRun>> random_full_rank_design(const DesignRequest& request,
                                                              std::uint32_t runs,
                                                              std::uint64_t seed,
                                                              std::uint32_t attempts) {
    const Setup setup = make_setup(request);
    std::mt19937_64 rng(seed);
    for (std::uint32_t attempt = 0; attempt < attempts; ++attempt) {
        std::vector<Run> draw;
        for (std::uint32_t i = 0; i < runs; ++i) {
            // SAPP's draw (sapp_ppb's generate_solvable_config): offsets from random weights
            // 1..9 scaled to L (each stage at least one layer), then for each kind in turn a
            // count uniform in what the stage has left; the rest are the last kind's.
            Run run;
            run.p = request.stages[std::uniform_int_distribution<std::size_t>(
                0, request.stages.size() - 1)(rng)];
            std::vector<double> weights(run.p);
            double sum = 0.0;
            for (auto& w : weights) {
                w = static_cast<double>(std::uniform_int_distribution<int>(1, 9)(rng));
                sum += w;
            }
            std::vector<std::uint32_t> counts(run.p);
            std::int64_t placed = 0;
            for (std::uint32_t s = 0; s < run.p; ++s) {
                counts[s] = std::max<std::uint32_t>(
                    1,
                    static_cast<std::uint32_t>(std::lround(weights[s] / sum * request.num_layers)));
                placed += counts[s];
            }
            for (std::uint32_t s = 0; placed < request.num_layers; s = (s + 1) % run.p, ++placed)
                ++counts[s];
            while (placed > request.num_layers) {
                for (std::uint32_t s = run.p; s-- > 0 && placed > request.num_layers;) {
                    if (counts[s] > 1) {
                        --counts[s];
                        --placed;
                    }
                }
            }
            run.layers.assign(run.p, KindCounts{});
            if (one_setting_per_run(request.rule)) {
                for (std::uint32_t s = 0; s < run.p; ++s)
                    run.layers[s][PPB_KIND_NONE] = counts[s];
                const auto settings = megatron_settings(setup, request.num_layers);
                run.megatron = settings[std::uniform_int_distribution<std::size_t>(
                    0, settings.size() - 1)(rng)];
                apply_megatron(run);
            } else {
                for (std::uint32_t s = 0; s < run.p; ++s) {
                    std::uint32_t left = counts[s];
                    for (std::size_t j = 0; j + 1 < setup.kinds.size(); ++j) {
                        const std::uint32_t n =
                            std::uniform_int_distribution<std::uint32_t>(0, left)(rng);
                        run.layers[s][setup.kinds[j]] = n;
                        left -= n;
                    }
                    run.layers[s][setup.kinds.back()] += left;
                    if (!stage_expressible(setup, run.layers[s])) {
                        run.layers[s][PPB_KIND_SELECT] += run.layers[s][PPB_KIND_COMM];
                        run.layers[s][PPB_KIND_COMM] = 0;
                    }
                }
            }
            draw.push_back(std::move(run));
        }
        const DesignPrecision p = precision_of(setup, draw);
        if (p.identified) {
            std::vector<DesignRun> out;
            for (std::size_t i = 0; i < draw.size(); ++i)
                out.push_back(finished_run(setup, draw[i], i));
            return out;
        }
    }
    return std::nullopt;
}

}  // namespace ppb::partition
