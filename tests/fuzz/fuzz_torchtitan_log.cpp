// libFuzzer harness: a torchtitan log, read for its step lines' memory figures
// (ppb::importers::scan_torchtitan_logs on a scratch file: colour codes, torchrun's rank prefix,
// the numbers).
#include "fuzz_support.hpp"

#include <ppb/importers/torchtitan.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("train.log");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    const ppb::importers::LogFile log{path, "train.log", 1U, true};
    ppb::fuzz::expect_only([&] {
        ppb::importers::Messages messages;
        (void)ppb::importers::scan_torchtitan_logs({&log, 1}, messages);
    });
    return 0;
}
