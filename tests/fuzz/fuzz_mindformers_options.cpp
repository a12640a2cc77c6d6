// libFuzzer harness: the MindFormers training YAML, as 'ppb import mindformers-options' reads it
// (ppb::importers::analytic_options_from_mindformers, which takes a path: the input goes through
// a scratch file).
#include "fuzz_support.hpp"

#include <ppb/importers/mindformers_options.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("config.yaml");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    ppb::fuzz::expect_only([&] { (void)ppb::importers::analytic_options_from_mindformers(path); });
    return 0;
}
