// libFuzzer harness: the MindFormers training YAML, as 'ppb import mindspore --config' reads it
// (ppb::importers::mindspore_layout, which takes a path: the input goes through a scratch file).
#include "fuzz_support.hpp"

#include <ppb/importers/mindspore.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("config.yaml");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    ppb::fuzz::expect_only([&] {
        ppb::importers::Messages messages;
        (void)ppb::importers::mindspore_layout(path, {}, messages);
    });
    return 0;
}
