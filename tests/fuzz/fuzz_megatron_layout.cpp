// libFuzzer harness: Megatron-LM's --pipeline-model-parallel-layout as `ppb import megatron`
// reads it (ppb::importers::megatron_pp_layout). The first byte is the pipeline degree (1..16),
// the second the decoder layers (0..255), the rest the layout text: a layout or a FlagError,
// never a crash; what it accepts holds exactly that many layers in P stages of equal chunks.
#include "fuzz_support.hpp"

#include <ppb/importers/megatron.hpp>

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2)
        return 0;
    const std::uint32_t p = 1U + data[0] % 16U;
    const std::uint32_t layers = data[1];
    ppb::fuzz::expect_only([&] {
        const auto out =
            ppb::importers::megatron_pp_layout(ppb::fuzz::text_of(data + 2, size - 2), p, layers);
        std::uint64_t total = 0;
        bool ok = out.size() == p;
        for (const auto& stage : out) {
            ok = ok && !stage.empty() && stage.size() == out.front().size();
            for (const auto n : stage)
                total += n;
        }
        if (!ok || total != layers) {
            std::fprintf(stderr, "an accepted layout does not hold its layers in P stages\n");
            std::abort();
        }
    });
    return 0;
}
