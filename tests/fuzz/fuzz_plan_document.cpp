// libFuzzer harness: a saved plan read back (ppb::partition::read_plan_stages), what
// `ppb compare --partition PLAN` reads. Every placement it accepts must be one a model can be
// asked about: its view holds its chunks, a chunked stage's profile has one count per chunk, and
// a plan of several groups gives each chunk's counts per group.
#include "fuzz_support.hpp"

#include <ppb/partition/plan_reader.hpp>

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ppb::fuzz::expect_only([&] {
        const auto plan = ppb::partition::read_plan_stages(ppb::fuzz::text_of(data, size), "fuzz");
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
    return 0;
}
