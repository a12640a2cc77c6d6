// libFuzzer harness: the torchtitan training TOML, as 'ppb import torchtitan-options' reads it
// (ppb::importers::analytic_options_from_torchtitan, which takes a path: the input goes through a
// scratch file), with and without a world size.
#include "fuzz_support.hpp"

#include <ppb/importers/torchtitan_options.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("config.toml");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    ppb::fuzz::expect_only(
        [&] { (void)ppb::importers::analytic_options_from_torchtitan(path, {}); });
    ppb::fuzz::expect_only([&] {
        (void)ppb::importers::analytic_options_from_torchtitan(path, {64, 10});
    });
    return 0;
}
