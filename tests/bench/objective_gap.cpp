// How far the partitioner's iteration estimates are from the simulated iteration, per schedule,
// on random instances; and whether a local search on the simulated makespan, started from the
// exact optimum, finds faster plans. Not a test and not run by CI: a measurement for
// host_api/docs/schedules.md ("Every schedule"). Usage: objective_gap [instances per schedule,
// default 200].
#include <ppb/errors.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/refine.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/schedule.hpp>
#include <ppb/schedule_order.hpp>
#include <ppb/simulator.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using ppb::Schedule;
using ppb::partition::ChunkObjective;
using ppb::partition::MemorySource;
using ppb::partition::Plan;
using ppb::partition::Problem;

namespace {

struct Stats {
    std::vector<double> gap;  // (estimate - simulated) / simulated
    std::vector<double> simulated;
    void add(double estimate, double sim) {
        gap.push_back((estimate - sim) / sim);
        simulated.push_back(sim);
    }
    [[nodiscard]] double mean_abs() const {
        double s = 0;
        for (double g : gap)
            s += std::abs(g);
        return gap.empty() ? 0 : s / gap.size();
    }
    [[nodiscard]] double worst() const {
        double w = 0;
        for (double g : gap)
            w = std::max(w, std::abs(g));
        return w;
    }
};

double simulate(const Problem& p, const Plan& plan) {
    return ppb::simulate(ppb::partition::simulation_input(p, plan)).makespan;
}

}  // namespace

int main(int argc, char** argv) {
    const int instances = argc > 1 ? std::atoi(argv[1]) : 200;
    struct Case {
        Schedule schedule;
        std::uint32_t chunks;
    };
    const Case cases[] = {{Schedule::interleaved, 2},
                          {Schedule::interleaved, 3},
                          {Schedule::interleaved_less_memory, 2},
                          {Schedule::dualpipe_v, 2}};
    fmt::print("{:<28} {:>9} {:>22} {:>22} {:>16} {:>16} {:>16}\n", "schedule", "instances",
               "stages: |gap| mean/max", "slots: |gap| mean/max", "slots vs stages",
               "auto vs stages", "refined gain");
    // A second argument runs only the case of that index (0 .. 3).
    const int only = argc > 2 ? std::atoi(argv[2]) : -1;
    int index = -1;
    for (const Case& c : cases) {
        if (++index, only >= 0 && index != only)
            continue;
        std::mt19937 rng(12345 + static_cast<unsigned>(c.schedule) * 7 + c.chunks);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        Stats stages_stats, slots_stats;
        double slot_gain = 0, refine_gain = 0, auto_gain = 0;
        int solved = 0;
        int refused = 0;
        for (int i = 0; i < instances; ++i) {
            Problem p;
            p.schedule = c.schedule;
            p.chunks = c.chunks;
            p.num_stages = u(rng) < 0.5 ? 4 : 8;
            p.micro_batches = p.num_stages * (2 + static_cast<std::uint32_t>(u(rng) * 4));
            p.time.body_layers =
                p.num_stages * c.chunks * (2 + static_cast<std::uint32_t>(u(rng) * 4)) +
                static_cast<std::uint32_t>(u(rng) * p.num_stages);
            const double t = 10.0 + 20.0 * u(rng);
            const std::array<double, 5> coef = {0.0, 0.04, 0.125, 0.165, 0.5};
            for (std::size_t k = 0; k < 5; ++k)
                p.time.body_time[k] = t / 3.0 + (1.0 + coef[k]) * 2.0 * t / 3.0;
            p.time.body_forward = t / 3.0;
            p.time.head_time = 2.0 * t * u(rng);
            p.time.head_forward = p.time.head_time / 3.0;
            p.time.tail_time = 3.0 * t * u(rng);
            p.time.tail_forward = p.time.tail_time / 3.0;
            p.rule = ppb::partition::RecomputeRule::mindformers;
            ppb_linear_parameters k{};
            k.struct_size = sizeof k;
            k.identified = 0xFFu | 0x1F0u;
            k.const_mb = 2000 + 2000 * u(rng);
            k.head_mb = 2000 + 4000 * u(rng);
            k.tail_mb = 2000 + 6000 * u(rng);
            k.per_layer_mb = 500 + 1500 * u(rng);
            const double a = 200 + 800 * u(rng);
            const std::array<double, 5> share = {1.0, 0.18, 0.85, 0.14, 0.02};
            for (std::size_t kind = 0; kind < 5; ++kind)
                k.activation_mb[kind] = a * share[kind];
            // A limit between "everything on 'none' fits" and "barely anything fits".
            const double layers_per_stage = static_cast<double>(p.time.body_layers) / p.num_stages;
            const double roomy = k.const_mb + k.head_mb + k.tail_mb +
                                 layers_per_stage * (k.per_layer_mb + a * 2 * p.num_stages);
            const double tight = k.const_mb + k.head_mb + k.tail_mb +
                                 layers_per_stage * (k.per_layer_mb + 0.02 * a * 2 * p.num_stages);
            p.memory_limit_mb = tight + (roomy - tight) * (0.15 + 0.6 * u(rng));
            MemorySource memory;
            memory.linear = k;
            const auto began = std::chrono::steady_clock::now();
            try {
                p.objective = ChunkObjective::stages;
                const Plan by_stages = ppb::partition::solve(p, memory);
                const double t_stages =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
                p.objective = ChunkObjective::slots;
                const Plan by_slots = ppb::partition::solve(p, memory);
                if (t_stages > 1.0)
                    std::fprintf(stderr, "  solve (stages objective) took %.1f s\n", t_stages);
                const double sim_stages = simulate(p, by_stages);
                const double sim_slots = simulate(p, by_slots);
                stages_stats.add(by_stages.iteration_time, sim_stages);
                slots_stats.add(by_slots.iteration_time, sim_slots);
                slot_gain += (sim_stages - sim_slots) / sim_stages;
                const double best_start = std::min(sim_stages, sim_slots);
                const Plan refined = ppb::partition::refine_by_simulation(
                    p, memory, sim_slots <= sim_stages ? by_slots : by_stages, 100);
                auto_gain += (sim_stages - best_start) / sim_stages;
                refine_gain += (best_start - simulate(p, refined)) / best_start;
                ++solved;
            } catch (const ppb::partition::Infeasible&) {
            } catch (const ppb::InputError&) {
                ++refused;  // too large to search exactly (three chunks, a loose limit)
            }
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
            if (seconds > 2.0) {
                std::fprintf(stderr, "slow instance: P=%u L=%u M=%u limit=%.0f: %.1f s\n",
                             p.num_stages, p.time.body_layers, p.micro_batches, p.memory_limit_mb,
                             seconds);
            }
        }
        fmt::print(
            "{:<28} {:>9} {:>13.1f}% / {:>4.1f}% {:>13.1f}% / {:>4.1f}% {:>15.1f}% {:>15.1f}% "
            "{:>15.1f}%\n",
            fmt::format("{} v={}", ppb::schedule_name(c.schedule), c.chunks), solved,
            100 * stages_stats.mean_abs(), 100 * stages_stats.worst(), 100 * slots_stats.mean_abs(),
            100 * slots_stats.worst(), solved ? 100 * slot_gain / solved : 0.0,
            solved ? 100 * auto_gain / solved : 0.0, solved ? 100 * refine_gain / solved : 0.0);
    }
    return 0;
}
