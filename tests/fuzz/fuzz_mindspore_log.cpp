// libFuzzer harness: a MindSpore dry-run log, read for both peak-memory figures
// (ppb::importers::scan_mindspore_logs on a scratch file named as rank 3's log) and for the
// layout MindFormers states in it (mindspore_log_layout), and the layout from what it states,
// with no flag or configuration.
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
            (void)ppb::importers::scan_mindspore_logs({&log, 1}, memory, messages);
            (void)ppb::importers::mindspore_layout(std::nullopt, {}, messages,
                                                   ppb::importers::mindspore_log_layout({&log, 1}));
        });
    }
    return 0;
}
