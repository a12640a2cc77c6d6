// Speed of the schedule simulator on a large pipeline: P = 64 stages, v = 2 chunks, M = 256
// micro-batches (65 536 operations), with memory over time. Target: at most 50 ms.
//   build/tests/bench/bench_simulator --benchmark_min_time=0.5
#include <ppb/simulator.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>

namespace {

ppb::SimulationInput large_input(ppb::Schedule schedule) {
    ppb::SimulationInput in;
    in.schedule = schedule;
    in.num_stages = 64;
    in.num_chunks = 2;
    in.micro_batches = 256;
    in.with_memory = true;
    for (std::uint32_t s = 0; s < in.num_stages; ++s) {
        // Uneven stages, so that stages wait on each other as in a real plan.
        const double f = 1.0 + 0.01 * (s % 7);
        in.costs.push_back({{f, 2.0 * f, 0.3, 120.0}, {f * 1.1, 2.2 * f, 0.0, 110.0}});
        in.static_mb.push_back(20000.0);
    }
    return in;
}

void BM_Simulate(benchmark::State& state) {
    const auto schedule = static_cast<ppb::Schedule>(state.range(0));
    const ppb::SimulationInput in = large_input(schedule);
    for (auto _ : state) {
        ppb::Simulation sim = ppb::simulate(in);
        benchmark::DoNotOptimize(sim.makespan);
    }
    state.SetItemsProcessed(state.iterations() * 2 * 64 * 2 * 256);
}
BENCHMARK(BM_Simulate)
    ->ArgName("schedule")
    ->Arg(static_cast<int>(ppb::Schedule::interleaved))
    ->Arg(static_cast<int>(ppb::Schedule::interleaved_less_memory))
    ->Arg(static_cast<int>(ppb::Schedule::dualpipe_v))
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
