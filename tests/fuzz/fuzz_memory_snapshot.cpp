// libFuzzer harness: a PyTorch memory snapshot's bytes, read as an import reads one
// (ppb::importers::scan_snapshots on a scratch file: the restricted unpickler, the snapshot's
// meaning, each device's peaks replayed from the trace's start, the notes and warnings). Only
// InputError may come out, whatever the pickle asks for.
#include "fuzz_support.hpp"

#include <ppb/importers/snapshot_import.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("snapshot_0.pickle");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    const ppb::importers::LogFile file{path, "snapshot_0.pickle", 0U, true};
    ppb::fuzz::expect_only([&] {
        ppb::importers::Messages messages;
        (void)ppb::importers::scan_snapshots({&file, 1}, messages);
    });
    return 0;
}
