// Speed of the paths a partitioner runs often: fitting, predicting through the C boundary,
// reading dry-run files, discovering plugins.
//   build/tests/bench/bench_ppb --benchmark_min_time=0.2
#include <ppb/discovery.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/loader.hpp>
#include <ppb/partition/cluster.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/search.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/partition/time_model.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

namespace {

const std::filesystem::path plugin_dir = PPB_BUILD_PLUGIN_DIR;

ppb::MemoryModel open_dryrun_lsq() {
    return ppb::open_model(ppb::inspect_plugin_file(plugin_dir / "ppb-dryrun-lsq-1.0.0.so"));
}

// `count` observations of 16-stage pipelines with every recompute kind, from known coefficients.
std::vector<ppb::Observation> observations(std::size_t count) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::uint32_t> layers(0, 4);
    std::normal_distribution<double> noise(0.0, 20.0);
    std::vector<ppb::Observation> out;
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t p = 16;
        const auto s = static_cast<std::uint32_t>(i % p);
        ppb_chunk chunk{};
        double n = 0;
        double activation = 0;
        const double a[PPB_KIND_COUNT] = {820, 300, 690, 140, 16};
        chunk.in_flight = std::min<std::uint32_t>(p - s, 32);
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            chunk.layers[k] = layers(rng);
            n += chunk.layers[k];
            activation += a[k] * chunk.layers[k] * chunk.in_flight;
        }
        const double m = 3072 + (s == 0 ? 4210 : 0) + (s == p - 1 ? 5630 : 0) + 1710 * n +
                         activation + noise(rng);
        out.push_back(ppb::Observation{{p, s, {chunk}}, m, "bench", 32});
    }
    return out;
}

void BM_Fit(benchmark::State& state) {
    const auto obs = observations(static_cast<std::size_t>(state.range(0)));
    const auto views = ppb::views(obs);
    ppb::MemoryModel model = open_dryrun_lsq();
    for (auto _ : state)
        model.fit(views);
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Fit)->Arg(13)->Arg(64)->Arg(512)->Unit(benchmark::kMicrosecond);

void BM_PredictBatch(benchmark::State& state) {
    const auto obs = observations(64);
    ppb::MemoryModel model = open_dryrun_lsq();
    model.fit(ppb::views(obs));
    std::vector<ppb_placement> placements;
    const auto count = static_cast<std::size_t>(state.range(0));
    for (std::size_t i = 0; i < count; ++i)
        placements.push_back(obs[i % obs.size()].placement.view());
    for (auto _ : state)
        benchmark::DoNotOptimize(model.predict_batch(placements));
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PredictBatch)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

void BM_PredictOne(benchmark::State& state) {
    const auto obs = observations(64);
    ppb::MemoryModel model = open_dryrun_lsq();
    model.fit(ppb::views(obs));
    const ppb_placement placement = obs[5].placement.view();
    for (auto _ : state)
        benchmark::DoNotOptimize(model.predict(placement));
}
BENCHMARK(BM_PredictOne);

void BM_ParseDryrun(benchmark::State& state) {
    std::string text =
        R"({"format": "ppb.dryrun/1", "num_stages": 16, "micro_batches": 32, "observations": [)";
    for (std::int64_t i = 0; i < state.range(0); ++i) {
        text += (i == 0 ? "" : ",");
        text += R"({"config": "A", "stage": )" + std::to_string(i % 16) +
                R"(, "layers": {"none": 3, "select": )" + std::to_string(i % 5) +
                R"(, "full": 1}, "peak_memory_mb": )" + std::to_string(30000 + i) + ".5}";
    }
    text += "]}";
    ppb::DryRunReadOptions options;
    options.duplicate_tolerance = 1.0;  // the synthetic rows repeat placements
    for (auto _ : state)
        benchmark::DoNotOptimize(ppb::parse_dryrun(text, "bench", options));
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_ParseDryrun)->Arg(16)->Arg(1024)->Unit(benchmark::kMicrosecond);

// Many measurements of one placement: the duplicate check must stay linear in their number.
void BM_ParseRepeatedPlacement(benchmark::State& state) {
    std::string text =
        R"({"format": "ppb.dryrun/1", "num_stages": 16, "micro_batches": 32, "observations": [)";
    for (std::int64_t i = 0; i < state.range(0); ++i) {
        text += (i == 0 ? "" : ",");
        text += R"({"stage": 3, "layers": {"none": 4}, "peak_memory_mb": )" +
                std::to_string(30000 + i % 100) + "}";
    }
    text += "]}";
    for (auto _ : state)
        benchmark::DoNotOptimize(ppb::parse_dryrun(text, "bench"));
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ParseRepeatedPlacement)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_DiscoverPlugins(benchmark::State& state) {
    ppb::SearchPath path;
    path.dirs.push_back({plugin_dir, "bench"});
    for (auto _ : state)
        benchmark::DoNotOptimize(ppb::discover_plugins(path));
}
BENCHMARK(BM_DiscoverPlugins)->Unit(benchmark::kMicrosecond);

// P stages x L layers of a LLaMA-like decoder, 32 micro-batches, times per recompute kind and of
// the embedding and LM head.
ppb::partition::Problem llama_like_problem(std::uint32_t stages, std::uint32_t layers) {
    ppb::partition::Problem problem;
    problem.num_stages = stages;
    problem.time.body_layers = layers;
    problem.micro_batches = 32;
    problem.time.body_name = "decoder";
    problem.time.body_time = {90.0, 92.4, 97.5, 99.9, 120.0};
    problem.time.head_time = 36.0;
    problem.time.tail_time = 75.0;
    return problem;
}

// Every coefficient identified; constant, head and tail of a 70B model (MB).
ppb_linear_parameters llama_like_coefficients() {
    ppb_linear_parameters c{};
    c.struct_size = sizeof c;
    c.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER |
                   (PPB_ALL_KINDS << 4);
    c.const_mb = 3072;
    c.head_mb = 4210;
    c.tail_mb = 5630;
    return c;
}

// llama_like_coefficients() with a per-layer and per-kind activation memory that shrinks with the
// layers per stage, so that a 30 000 MB limit binds on most stages whatever P and L, and all five
// kinds trade time for memory (none is dominated).
ppb_linear_parameters hard_coefficients(std::uint32_t stages, std::uint32_t layers,
                                        double per_layer_scale = 1.0) {
    ppb_linear_parameters c = llama_like_coefficients();
    const double layers_per_stage = static_cast<double>(layers) / stages;
    c.per_layer_mb = 1710.0 * 10.0 / layers_per_stage * per_layer_scale;
    const double act[PPB_KIND_COUNT] = {820, 600, 400, 250, 16};
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        c.activation_mb[k] = act[k] * 10.0 / layers_per_stage * 8.0 / stages;
    return c;
}

// A partition where all five recompute kinds trade time for memory (none is dominated) and the
// limit binds on most stages: the hardest case for the per-stage search. The third argument is
// the rule: 0 every mix, 1 MindFormers' (two searches per stage, one without 'comm', one without
// 'select'). The fourth is the memory limit in MB: 30000 binds, 1e9 does not (then the time
// bound on each stage's layer count, not memory, keeps the tables small).
void BM_Partition(benchmark::State& state) {
    namespace pt = ppb::partition;
    pt::Problem problem = llama_like_problem(static_cast<std::uint32_t>(state.range(0)),
                                             static_cast<std::uint32_t>(state.range(1)));
    const ppb_linear_parameters c = hard_coefficients(static_cast<std::uint32_t>(state.range(0)),
                                                      static_cast<std::uint32_t>(state.range(1)));
    problem.memory_limit_mb = static_cast<double>(state.range(3));
    problem.rule = state.range(2) == 0 ? pt::RecomputeRule::any : pt::RecomputeRule::mindformers;
    pt::MemorySource memory;
    memory.linear = c;
    pt::Plan plan;
    for (auto _ : state) {
        plan = pt::solve(problem, memory);
        benchmark::DoNotOptimize(plan);
    }
    // Evidence that the case is the hard one: layers that recompute, kinds in use, stages within
    // 2 % of the limit.
    double recomputing = 0;
    double tight = 0;
    std::uint32_t kinds = 0;
    for (const auto& s : plan.stages) {
        recomputing += s.total_layers() - s.layers[PPB_KIND_NONE];
        if (s.memory_mb > 0.98 * problem.memory_limit_mb)
            tight += 1;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (s.layers[k] > 0)
                kinds |= PPB_KIND_BIT(k);
        }
    }
    state.counters["recomputing_layers"] = recomputing;
    state.counters["tight_stages"] = tight;
    state.counters["kinds_used"] = std::popcount(kinds);
}
BENCHMARK(BM_Partition)
    ->Args({16, 96, 0, 30000})
    ->Args({16, 96, 1, 30000})
    ->Args({64, 512, 0, 30000})
    ->Args({64, 512, 1, 30000})
    ->Args({16, 96, 0, 1000000000})
    ->Args({16, 96, 1, 1000000000})
    ->Args({64, 512, 0, 1000000000})
    ->Args({64, 512, 1, 1000000000})
    ->Unit(benchmark::kMillisecond);

// A model without coefficients, like the analytic plugin: BM_Partition's hard coefficients, but
// the head and tail memory grow with the square root of the stage's in-flight count, so the model
// is not linear overall yet affine in the layer counts at each stage (the partitioner probes it).
// Arguments: stages, layers, rule (0 every mix, 1 MindFormers').
void BM_PartitionProbed(benchmark::State& state) {
    namespace pt = ppb::partition;
    const auto stages = static_cast<std::uint32_t>(state.range(0));
    const auto layers = static_cast<std::uint32_t>(state.range(1));
    pt::Problem problem = llama_like_problem(stages, layers);
    problem.rule = state.range(2) == 0 ? pt::RecomputeRule::any : pt::RecomputeRule::mindformers;
    problem.memory_limit_mb = 30000;
    const ppb_linear_parameters hard = hard_coefficients(stages, layers);
    const double per_layer = hard.per_layer_mb;
    std::array<double, PPB_KIND_COUNT> activation{};
    std::copy(std::begin(hard.activation_mb), std::end(hard.activation_mb), activation.begin());
    pt::MemorySource memory;
    memory.predict_batch = [=](std::span<const ppb_placement> placements) {
        std::vector<double> out;
        out.reserve(placements.size());
        for (const ppb_placement& p : placements) {
            const ppb_chunk& chunk = p.chunks[0];
            const double f = chunk.in_flight;
            double m = 3072.0;
            if (p.stage == 0)
                m += 4210.0 + 300.0 * std::sqrt(f);
            if (p.stage + 1 == p.num_stages)
                m += 5630.0 + 500.0 * std::sqrt(f);
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                m += chunk.layers[k] * (per_layer + activation[k] * f);
            out.push_back(m);
        }
        return out;
    };
    pt::Plan plan;
    for (auto _ : state) {
        plan = pt::solve(problem, memory);
        benchmark::DoNotOptimize(plan);
    }
    double tight = 0;
    for (const auto& s : plan.stages) {
        if (s.memory_mb > 0.98 * problem.memory_limit_mb)
            tight += 1;
    }
    state.counters["tight_stages"] = tight;
}
BENCHMARK(BM_PartitionProbed)
    ->Args({8, 160, 0})
    ->Args({8, 160, 1})
    ->Args({64, 512, 0})
    ->Args({64, 512, 1})
    ->Unit(benchmark::kMillisecond);

// The default plan with chunks against --fast on SAPP's README instance (issue 25: its
// llama2-70B layer file, 16 stages, 32 micro-batches, 2 chunks, 56 000 MB, the table model):
// both estimates' exact optima, then (refine = 1) the local search on the simulated iteration, and
// the lower bound. Arguments: schedule (1 interleaved, 2 interleaved-less-memory, 3 dualpipe-v),
// refine (0: --fast), lower bound (0 or 1). Counters: the plan's simulated iteration and bound.
void BM_DefaultChunkedPlan(benchmark::State& state) {
    namespace pt = ppb::partition;
    const std::filesystem::path file =
        std::filesystem::path(PPB_SAMPLES_DIR) / "sapp" / "llama2_70b-hyper-parallel.json";
    std::ifstream in(file);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const ppb::MemoryModel model =
        ppb::open_model(ppb::inspect_plugin_file(plugin_dir / "ppb-table-1.0.0.so"), text);
    pt::Problem problem;
    problem.time = pt::read_time_model(file);
    problem.num_stages = 16;
    problem.micro_batches = 32;
    problem.memory_limit_mb = 56000.0;
    problem.rule = pt::RecomputeRule::mindformers;
    problem.schedule = static_cast<ppb::Schedule>(state.range(0));
    problem.chunks = 2;
    pt::PlannedPartition planned;
    for (auto _ : state) {
        planned = pt::plan_with_model(problem, model,
                                      {.refine = state.range(1) != 0,
                                       .lower_bound = state.range(2) != 0,
                                       .simulate_memory = false});
        benchmark::DoNotOptimize(planned);
    }
    state.counters["simulated"] = planned.simulation.makespan;
    state.counters["bound"] = planned.lower_bound.value_or(0.0);
}
BENCHMARK(BM_DefaultChunkedPlan)
    ->ArgsProduct({{1, 2, 3}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

// Several chunks per stage (issue target: P = 16, v = 2, 96 layers, 5 kinds within 100 ms): the
// same hard coefficients as BM_Partition under each schedule with chunks. Arguments: stages,
// layers, schedule (1 interleaved, 2 interleaved-less-memory, 3 dualpipe-v), chunks, objective
// (0 stages, 1 slots), memory limit in MB (30000 binds; 1e9 does not, and each stage's layer count
// is then bounded only by a first plan's objective).
void BM_PartitionChunked(benchmark::State& state) {
    namespace pt = ppb::partition;
    const auto stages = static_cast<std::uint32_t>(state.range(0));
    const auto layers = static_cast<std::uint32_t>(state.range(1));
    pt::Problem problem = llama_like_problem(stages, layers);
    problem.schedule = static_cast<ppb::Schedule>(state.range(2));
    problem.chunks = static_cast<std::uint32_t>(state.range(3));
    problem.objective =
        state.range(4) == 0 ? pt::ChunkObjective::stages : pt::ChunkObjective::slots;
    problem.micro_batches = 4 * stages;
    problem.rule = pt::RecomputeRule::mindformers;
    const ppb_linear_parameters c = hard_coefficients(stages, layers);
    problem.memory_limit_mb = static_cast<double>(state.range(5));
    pt::MemorySource memory;
    memory.linear = c;
    pt::Plan plan;
    for (auto _ : state) {
        plan = pt::solve(problem, memory);
        benchmark::DoNotOptimize(plan);
    }
    double recomputing = 0;
    for (const auto& s : plan.stages)
        recomputing += s.total_layers() - s.layers[PPB_KIND_NONE];
    state.counters["recomputing_layers"] = recomputing;
}
BENCHMARK(BM_PartitionChunked)
    ->Args({16, 96, 1, 2, 0, 30000})
    ->Args({16, 96, 1, 2, 1, 30000})
    ->Args({16, 96, 2, 2, 1, 30000})
    ->Args({16, 96, 3, 2, 0, 30000})
    ->Args({8, 96, 1, 3, 1, 30000})
    ->Args({16, 96, 1, 2, 0, 1000000000})
    ->Args({16, 96, 1, 2, 1, 1000000000})
    ->Args({16, 96, 2, 2, 1, 1000000000})
    ->Args({16, 96, 3, 2, 0, 1000000000})
    ->Args({8, 96, 1, 3, 1, 1000000000})
    ->Unit(benchmark::kMillisecond);

// Two groups of body layers on `problem` (dense, then MoE 1.6 times slower and with 4 times the
// parameter memory: BM_Partition's hard coefficients), each layer's group from `group_of`; returns
// each group's coefficients.
template <typename GroupOf>
std::vector<ppb_linear_parameters> dense_and_moe(ppb::partition::Problem& problem,
                                                 std::uint32_t stages, std::uint32_t layers,
                                                 GroupOf group_of) {
    std::vector<ppb_linear_parameters> groups;
    for (std::size_t g = 0; g < 2; ++g) {
        groups.push_back(hard_coefficients(stages, layers, g == 0 ? 0.25 : 1.0));
        ppb::partition::BodyGroupTime time;
        time.name = g == 0 ? "dense" : "moe";
        time.time = problem.time.body_time;
        for (auto& t : time.time)
            t *= g == 0 ? 1.0 : 1.6;
        time.forward = time.time[PPB_KIND_NONE] / 3.0;
        problem.time.groups.push_back(time);
    }
    for (std::uint32_t i = 0; i < layers; ++i) {
        const std::uint32_t g = group_of(i);
        problem.time.sequence.push_back(g);
        ++problem.time.groups[g].layers;
    }
    return groups;
}

// Two groups of body layers (dense and MoE, the MoE layer 1.6 times slower and with 4 times the
// parameter memory) under the same hard coefficients as BM_Partition, the limit binding.
// Arguments: stages, layers, layout (0: the first 1/16 dense then MoE, as DeepSeek-V3; 1: dense
// and MoE alternating), rule (0 every mix, 1 MindFormers').
void BM_PartitionGrouped(benchmark::State& state) {
    namespace pt = ppb::partition;
    const auto stages = static_cast<std::uint32_t>(state.range(0));
    const auto layers = static_cast<std::uint32_t>(state.range(1));
    pt::Problem problem = llama_like_problem(stages, layers);
    problem.rule = state.range(3) == 0 ? pt::RecomputeRule::any : pt::RecomputeRule::mindformers;
    const std::vector<ppb_linear_parameters> groups =
        dense_and_moe(problem, stages, layers, [&](std::uint32_t i) -> std::uint32_t {
            return state.range(2) == 0 ? (i < layers / 16 ? 0 : 1) : i % 2;
        });
    problem.memory_limit_mb = 30000;
    pt::MemorySource memory;
    memory.group_linear = groups;
    pt::Plan plan;
    for (auto _ : state) {
        plan = pt::solve(problem, memory);
        benchmark::DoNotOptimize(plan);
    }
    double recomputing = 0;
    double tight = 0;
    for (const auto& s : plan.stages) {
        recomputing += s.total_layers() - s.layers[PPB_KIND_NONE];
        if (s.memory_mb > 0.98 * problem.memory_limit_mb)
            tight += 1;
    }
    state.counters["recomputing_layers"] = recomputing;
    state.counters["tight_stages"] = tight;
}
BENCHMARK(BM_PartitionGrouped)
    ->Args({16, 96, 0, 1})
    ->Args({64, 512, 0, 0})
    ->Args({64, 512, 0, 1})
    ->Args({64, 512, 1, 0})
    ->Args({64, 512, 1, 1})
    ->Unit(benchmark::kMillisecond);

// Two groups with more chunks than the exact grouped planner carries, or a zero-bubble schedule:
// planned through one group that bounds them; with two chunks, exactly. Then (as `ppb partition`
// and the search's best configurations) searched locally and bounded through one group that
// bounds them (plan_with_memory). DeepSeek-V3's 61 layers, the first 3 dense, M = 64,
// BM_PartitionGrouped's coefficients and times. Arguments: stages, chunks, schedule (0
// interleaved, 1 zb-v, 2 dualpipe-v), the local search and the bound (0 no: the estimate's plan
// alone, as the search's first pass plans most configurations; 1 yes).
void BM_PartitionGroupedManyChunks(benchmark::State& state) {
    namespace pt = ppb::partition;
    const auto stages = static_cast<std::uint32_t>(state.range(0));
    constexpr std::uint32_t layers = 61;
    pt::Problem problem = llama_like_problem(stages, layers);
    problem.micro_batches = 64;
    problem.chunks = static_cast<std::uint32_t>(state.range(1));
    problem.schedule = state.range(2) == 0   ? ppb::Schedule::interleaved
                       : state.range(2) == 1 ? ppb::Schedule::zb_v
                                             : ppb::Schedule::dualpipe_v;
    problem.rule = pt::RecomputeRule::any;
    const std::vector<ppb_linear_parameters> groups = dense_and_moe(
        problem, stages, layers, [](std::uint32_t i) -> std::uint32_t { return i < 3 ? 0 : 1; });
    problem.memory_limit_mb = 30000;
    pt::MemorySource memory;
    memory.group_linear = groups;
    const bool refine = state.range(3) != 0;
    pt::PlannedPartition planned;
    for (auto _ : state) {
        planned = pt::plan_with_memory(
            problem, memory, {.refine = refine, .lower_bound = refine, .simulate_memory = false});
        benchmark::DoNotOptimize(planned);
    }
    state.counters["simulated"] = planned.simulation.makespan;
    if (planned.lower_bound)
        state.counters["gap_percent"] =
            100.0 * (1.0 - *planned.lower_bound / planned.simulation.makespan);
}
BENCHMARK(BM_PartitionGroupedManyChunks)
    ->Args({8, 4, 0, 0})
    ->Args({8, 4, 0, 1})
    ->Args({4, 8, 0, 0})
    ->Args({4, 8, 0, 1})
    ->Args({16, 2, 1, 0})
    ->Args({16, 2, 1, 1})
    ->Args({16, 2, 0, 0})
    ->Args({16, 2, 0, 1})
    ->Args({16, 2, 2, 0})
    ->Args({16, 2, 2, 1})
    ->Unit(benchmark::kMillisecond);

// An infeasible problem with many layers: explaining it (the binding constraint, the smallest
// feasible limit, the fullest stage) must stay near-linear in the layer count.
void BM_ExplainInfeasible(benchmark::State& state) {
    namespace pt = ppb::partition;
    pt::Problem problem = llama_like_problem(8, static_cast<std::uint32_t>(state.range(0)));
    ppb_linear_parameters c = llama_like_coefficients();
    c.per_layer_mb = 1710;
    const double act[PPB_KIND_COUNT] = {820, 300, 690, 140, 16};
    std::copy(std::begin(act), std::end(act), std::begin(c.activation_mb));
    problem.memory_limit_mb = 30000;
    pt::MemorySource memory;
    memory.linear = c;
    for (auto _ : state) {
        try {
            benchmark::DoNotOptimize(pt::solve(problem, memory));
            state.SkipWithError("the problem was feasible");
        } catch (const pt::Infeasible& e) {
            benchmark::DoNotOptimize(e.smallest_feasible_limit_mb());
        }
    }
}
BENCHMARK(BM_ExplainInfeasible)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

// `ppb search` of the bundled 70B-class model (80 layers, samples/data/llama70b-layers.json):
// pipeline degrees 1 to 80 x {1f1b, interleaved v = 2, dualpipe-v} x 8 recompute policies (any,
// none, select, full, none+select, none+full, select+full, both+full), 960 micro-batches (d = 1):
// 1 080 configurations (interleaved runs where P divides 960, the chunks only where every chunk
// gets a layer). The first argument is the memory model (0: dryrun-lsq fitted to
// the sample dry runs, through its coefficients; 1: the analytic model of the sample shape, probed
// through predictions), the second the threads, the third whether the first 8 places are settled
// (refine_best: the 8 best configurations with chunks and every other that could still enter them
// planned again with the local search), as `ppb search` does without --fast.
void BM_Search(benchmark::State& state) {
    namespace pt = ppb::partition;
    const std::filesystem::path samples = PPB_SAMPLES_DIR;
    ppb::MemoryModel model = [&] {
        if (state.range(0) == 0) {
            ppb::MemoryModel m = open_dryrun_lsq();
            const auto set = ppb::read_dryrun_file(samples / "llama70b-pp8-dryrun.json");
            m.fit(ppb::views(set.observations));
            return m;
        }
        std::ifstream in(samples / "llama70b-shape.json");
        const std::string shape{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
        return ppb::open_model(ppb::inspect_plugin_file(plugin_dir / "ppb-analytic-1.0.0.so"),
                               shape);
    }();
    pt::Problem base;
    base.time = pt::read_time_model(samples / "llama70b-layers.json");
    base.memory_limit_mb = state.range(0) == 0 ? 40000.0 : 60000.0;
    base.rule = pt::RecomputeRule::mindformers;
    const pt::MemorySource memory = pt::model_memory_source(base, model);
    pt::SearchSpace space;
    space.recompute.clear();
    for (std::uint32_t p = 1; p <= 80; ++p)
        space.pipeline_degrees.push_back(p);
    space.global_batch = 960;
    space.schedules = {{ppb::Schedule::one_f_one_b, 1},
                       {ppb::Schedule::interleaved, 2},
                       {ppb::Schedule::dualpipe_v, 2}};
    for (const char* policy :
         {"any", "none", "select", "full", "none+select", "none+full", "select+full", "both+full"})
        space.recompute.push_back(pt::recompute_policy(policy));
    const pt::SearchPlan plan = pt::search_configurations(space, base.time);
    pt::SearchResult result;
    std::size_t again = 0;
    for (auto _ : state) {
        result = pt::run_search(plan.configurations,
                                [&](const pt::Configuration& c) {
                                    // The bounds only serve refine_best, as in ppb search without
                                    // --fast.
                                    return pt::plan_configuration(base, c, memory, false,
                                                                  state.range(2) != 0);
                                },
                                {.jobs = static_cast<unsigned>(state.range(1))});
        if (state.range(2) != 0) {
            again = pt::refine_best(result, pt::refined_configurations,
                                    [&](const pt::Configuration& c) {
                                        return pt::plan_configuration(base, c, memory, true);
                                    },
                                    {.jobs = static_cast<unsigned>(state.range(1))});
        }
        benchmark::DoNotOptimize(result);
    }
    std::size_t planned = 0;
    for (const auto& o : result.outcomes)
        planned += o.status == pt::SearchOutcome::Status::planned ? 1 : 0;
    state.counters["configurations"] = static_cast<double>(plan.configurations.size());
    state.counters["planned"] = static_cast<double>(planned);
    state.counters["planned_again"] = static_cast<double>(again);
}
BENCHMARK(BM_Search)
    ->ArgsProduct({{0, 1}, {1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

// One configuration of the search at 10 240 H100s (host_api/docs/performance.md, "A search at
// scale"): the 70B shape with t = 8 on P = 10 stages, d = 128, M = 40, interleaved with v chunks
// (2, 4, 8), the analytic model probed, recompute 'any' under MindFormers' rule; planned as
// ppb search plans it (both estimates), with the local search and the bound (argument 1) as for
// its best configurations, or without. v = 4 and 8 are too large to plan exactly: the budget,
// then one setting with balanced chunks (design 6.12).
void BM_SearchConfigurationAtScale(benchmark::State& state) {
    namespace pt = ppb::partition;
    const std::filesystem::path samples = PPB_SAMPLES_DIR;
    std::ifstream in(samples / "llama70b-shape.json");
    std::string shape{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    // The search gives each configuration's model its data-parallel degree.
    const std::string key = "\"data_parallel\": 4";
    if (const auto at = shape.find(key); at != std::string::npos)
        shape.replace(at, key.size(), "\"data_parallel\": 128");
    const pt::Cluster cluster = pt::cluster_of_device("H100");
    pt::Problem base;
    base.time =
        pt::time_model_from_shape(shape, "llama70b-shape.json",
                                  {.device_tflops = cluster.achieved_tflops(), .cluster = cluster});
    base.memory_limit_mb = 81920.0;
    base.rule = pt::RecomputeRule::mindformers;
    ppb::MemoryModel model =
        ppb::open_model(ppb::inspect_plugin_file(plugin_dir / "ppb-analytic-1.0.0.so"), shape);
    const pt::MemorySource memory = pt::model_memory_source(base, model);
    const auto chunks = static_cast<std::uint32_t>(state.range(0));
    pt::Configuration c;
    c.pipeline = 10;
    c.data_parallel = 128;
    c.micro_batches = 40;
    c.schedule = {ppb::Schedule::interleaved, chunks};
    c.recompute = pt::recompute_policy("any");
    pt::SearchOutcome outcome;
    for (auto _ : state) {
        outcome = pt::plan_configuration(base, c, memory, state.range(1) != 0);
        benchmark::DoNotOptimize(outcome);
    }
    if (outcome.status != pt::SearchOutcome::Status::planned) {
        state.SkipWithError(outcome.message.c_str());
        return;
    }
    state.counters["exact"] = outcome.planned->plan.not_exact_because.empty() ? 1 : 0;
    state.counters["makespan_ms"] = outcome.planned->simulation.makespan;
}
BENCHMARK(BM_SearchConfigurationAtScale)
    ->ArgsProduct({{2, 4, 8}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// How planning time grows (host_api/docs/performance.md, scaling): one axis at a time from P = 16
// stages, L = 512 layers, all 5 kinds, 1 chunk (1F1B, M = 32; the chunks from L = 256,
// interleaved with M = 4P),
// every mix, the same hard coefficients as BM_Partition with the limit binding (30 000 MB).
// Arguments: stages, layers, kinds (1: none; 2: none, full; 3: none, select, full; 5: all),
// chunks.
void BM_PartitionScaling(benchmark::State& state) {
    namespace pt = ppb::partition;
    const auto stages = static_cast<std::uint32_t>(state.range(0));
    const auto layers = static_cast<std::uint32_t>(state.range(1));
    const auto chunks = static_cast<std::uint32_t>(state.range(3));
    pt::Problem problem = llama_like_problem(stages, layers);
    problem.rule = pt::RecomputeRule::any;
    const std::uint32_t none = 1u << PPB_KIND_NONE;
    const std::uint32_t full = 1u << PPB_KIND_FULL;
    const std::uint32_t select = 1u << PPB_KIND_SELECT;
    switch (state.range(2)) {
        case 1:
            problem.kinds = none;
            break;
        case 2:
            problem.kinds = none | full;
            break;
        case 3:
            problem.kinds = none | select | full;
            break;
        default:
            problem.kinds = PPB_ALL_KINDS;
            break;
    }
    if (chunks > 1) {
        problem.schedule = ppb::Schedule::interleaved;
        problem.chunks = chunks;
        problem.micro_batches = 4 * stages;
    }
    const ppb_linear_parameters c = hard_coefficients(stages, layers);
    // One kind cannot trade time for memory: give it room.
    problem.memory_limit_mb = state.range(2) == 1 ? 60000 : 30000;
    pt::MemorySource memory;
    memory.linear = c;
    pt::Plan plan;
    for (auto _ : state) {
        plan = pt::solve(problem, memory);
        benchmark::DoNotOptimize(plan);
    }
}
BENCHMARK(BM_PartitionScaling)
    ->Args({4, 512, 5, 1})
    ->Args({16, 512, 5, 1})
    ->Args({64, 512, 5, 1})
    ->Args({256, 512, 5, 1})
    ->Args({16, 128, 5, 1})
    ->Args({16, 2048, 5, 1})
    ->Args({16, 8192, 5, 1})
    ->Args({16, 512, 1, 1})
    ->Args({16, 512, 2, 1})
    ->Args({16, 512, 3, 1})
    ->Args({16, 256, 5, 1})
    ->Args({16, 256, 5, 2})
    ->Args({16, 256, 5, 3})
    ->Args({16, 256, 5, 4})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
