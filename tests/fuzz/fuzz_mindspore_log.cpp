// libFuzzer harness: a MindSpore dry-run log, read for both peak-memory figures and for the
// layout MindFormers states in it (ppb::importers::scan_mindspore_logs on a scratch file named
// as rank 3's log), and the layout from what it states, with the flags that leave the rest to
// defaults.
#include "fuzz_support.hpp"

#include <ppb/importers/mindspore.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("rank_3.log");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    const ppb::importers::LogFile log{path, "rank_3.log", 3U, true};
    for (auto memory :
         {ppb::importers::MindSporeMemory::used, ppb::importers::MindSporeMemory::actual}) {
        ppb::fuzz::expect_only([&] {
            ppb::importers::Messages messages;
            ppb::importers::MindSporeLogLayout stated;
            (void)ppb::importers::scan_mindspore_logs({&log, 1}, memory, messages, &stated);
            (void)ppb::importers::mindspore_layout(std::nullopt, {}, messages, stated);
        });
    }
    return 0;
}
