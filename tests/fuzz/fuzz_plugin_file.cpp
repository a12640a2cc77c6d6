// libFuzzer harness: judging a plugin file without loading it (ppb::inspect_plugin_file: the
// ELF bounds check, then the symbol table through boost::dll::library_info) on arbitrary bytes
// in a file with a plugin's name. It never throws: every bad file gets a verdict and a reason.
#include "fuzz_support.hpp"

#include <ppb/discovery.hpp>

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("ppb-fuzz-1.0.0.so");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    ppb::fuzz::expect_only<ppb::fuzz::Nothing>([&] {
        const auto candidate = ppb::inspect_plugin_file(path);
        if (candidate.reason.empty()) {
            std::fprintf(stderr, "a verdict without a reason\n");
            std::abort();
        }
    });
    return 0;
}
