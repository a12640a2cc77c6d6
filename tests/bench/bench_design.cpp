// ppb design's search: time per design, and its precision against SAPP's way of choosing dry runs
// (random configurations until the coefficient matrix has full rank; mindspore-ai/hyper-parallel,
// hyper_parallel/auto_parallel/sapp_ppb, generate_solvable_config). The counter "ratio" is the
// design's worst prediction standard error over the median of 41 random full-rank designs of as
// many runs (below 1: more precise); host_api/docs/dryrun-loop.md reports it.
#include <ppb/partition/design.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

namespace pp = ppb::partition;

namespace {

pp::DesignRequest request(std::uint32_t stages, std::uint32_t layers, std::uint32_t kinds,
                          pp::DesignRule rule) {
    pp::DesignRequest r;
    r.stages = {stages};
    r.num_layers = layers;
    r.kinds = kinds;
    r.rule = rule;
    return r;
}

double median_random(const pp::DesignRequest& r, std::uint32_t runs) {
    std::vector<double> worst;
    for (std::uint32_t i = 0; i < 41; ++i) {
        const auto design = pp::random_full_rank_design(r, runs, 1000 + i);
        if (design)
            worst.push_back(pp::design_precision(r, *design).worst_prediction_std_error_mb);
    }
    std::nth_element(worst.begin(), worst.begin() + worst.size() / 2, worst.end());
    return worst[worst.size() / 2];
}

void run(benchmark::State& state, const pp::DesignRequest& r) {
    pp::Design design;
    for (auto _ : state) {
        design = pp::design_dry_runs(r);
        benchmark::DoNotOptimize(design);
    }
    state.counters["runs"] = static_cast<double>(design.runs.size());
    state.counters["worst_se"] = design.worst_prediction_std_error_mb;
    state.counters["ratio"] = design.worst_prediction_std_error_mb /
                              median_random(r, static_cast<std::uint32_t>(design.runs.size()));
}

constexpr std::uint32_t none_full = PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_FULL);
constexpr std::uint32_t three = none_full | PPB_KIND_BIT(PPB_KIND_SELECT);
constexpr std::uint32_t all = PPB_ALL_KINDS;

void BM_design_p4_none_full(benchmark::State& s) {
    run(s, request(4, 16, none_full, pp::DesignRule::mindformers));
}
void BM_design_p8_three_kinds(benchmark::State& s) {
    run(s, request(8, 32, three, pp::DesignRule::mindformers));
}
void BM_design_p8_all_kinds_any(benchmark::State& s) {
    run(s, request(8, 32, all, pp::DesignRule::any));
}
void BM_design_p4_megatron(benchmark::State& s) {
    run(s, request(4, 12, three, pp::DesignRule::megatron));
}

}  // namespace

BENCHMARK(BM_design_p4_none_full)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_design_p8_three_kinds)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_design_p8_all_kinds_any)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_design_p4_megatron)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
