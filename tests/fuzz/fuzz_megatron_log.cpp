// libFuzzer harness: a Megatron-LM log, read for every memory figure and for what it states about
// its run (ppb::importers::scan_megatron_logs on a scratch file: the argument dump, the world-size
// and micro-batch lines), and the layout from what it found: with no flag (every value from the
// log) and with flags the log may contradict.
#include "fuzz_support.hpp"

#include <ppb/importers/megatron.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("train.log");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    const ppb::importers::LogFile log{path, "train.log", 1U, true};
    using ppb::importers::MegatronMemory;
    for (auto memory : {MegatronMemory::allocated, MegatronMemory::max_allocated,
                        MegatronMemory::reserved, MegatronMemory::max_reserved}) {
        ppb::fuzz::expect_only([&] {
            ppb::importers::Messages messages;
            const auto scan = ppb::importers::scan_megatron_logs({&log, 1}, memory, messages);
            (void)ppb::importers::megatron_layout(ppb::importers::MegatronFlags{}, scan, messages);
            ppb::importers::MegatronFlags flags;
            flags.pipeline_size = 2;
            flags.num_layers = 8;
            flags.noop_layers = "7";
            (void)ppb::importers::megatron_layout(flags, scan, messages);
        });
    }
    return 0;
}
