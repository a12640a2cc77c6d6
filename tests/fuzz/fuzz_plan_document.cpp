// libFuzzer harness: a saved plan read back, both views of its one reader (plan_reader.hpp).
//   - read_plan_stages, what `ppb compare --partition PLAN` reads. Every placement it accepts must
//     be one a model can be asked about: its view holds its chunks, a chunked stage's profile has
//     one count per chunk, and a plan of several groups gives each chunk's counts per group.
//   - read_plan_times and the simulation on it, what `ppb simulate` and ppb.simulate run. Every
//     plan it accepts has a cost per stage and chunk, and (when small enough to simulate within
//     the harness's time) a finite iteration whose document has one entry per stage.
#include "fuzz_support.hpp"

#include <ppb/partition/plan_reader.hpp>
#include <ppb/partition/simulate_saved_plan.hpp>

#include <cmath>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto text = ppb::fuzz::text_of(data, size);
    ppb::fuzz::expect_only([&] {
        const auto plan = ppb::partition::read_plan_stages(text, "fuzz");
        for (const auto& stage : plan.stages) {
            const ppb_placement view = stage.placement.view();
            if (view.num_chunks != stage.placement.chunks.size() ||
                stage.placement.stage >= stage.placement.num_stages)
                std::abort();
            for (const auto& vector : stage.profile) {
                if (vector.size() != stage.placement.chunks.size())
                    std::abort();
            }
            // Per chunk, per group, per kind (ppb_grouped_placement::group_layers).
            if (!plan.groups.empty() &&
                stage.placement.group_layers.size() !=
                    stage.placement.chunks.size() * plan.groups.size() * PPB_KIND_COUNT)
                std::abort();
        }
    });
    ppb::fuzz::expect_only([&] {
        const auto times =
            ppb::partition::read_plan_times(text, "fuzz", {}, ppb::partition::keyword_name);
        const ppb::SimulationInput& in = times.input;
        if (in.costs.size() != in.num_stages)
            std::abort();
        for (const auto& stage : in.costs) {
            if (stage.size() != in.num_chunks)
                std::abort();
        }
        if (in.with_memory && (in.static_mb.size() != in.num_stages ||
                               times.planned_memory_mb.size() != in.num_stages))
            std::abort();
        // The simulation takes time in P·v·M operations; the reader is what is fuzzed beyond.
        if (std::uint64_t{in.num_stages} * in.num_chunks * in.micro_batches > 4096)
            return;
        const auto simulated =
            ppb::partition::simulate_saved_plan(text, "fuzz", {}, ppb::partition::keyword_name);
        if (!std::isfinite(simulated.simulation.makespan) ||
            simulated.simulation.stages.size() != in.num_stages)
            std::abort();
        (void)ppb::partition::simulation_document(simulated);
    });
    return 0;
}
