// libFuzzer harness: SAPP's -init YAML, as 'ppb import sapp' reads its dry runs and time_config
// (ppb::importers::read_sapp_init) and 'ppb partition --sapp-config' its planning problem
// (ppb::importers::read_sapp_problem). Both take a path: the input goes through a scratch file.
#include "fuzz_support.hpp"

#include <ppb/importers/sapp.hpp>
#include <ppb/importers/sapp_problem.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static ppb::fuzz::ScratchFile scratch("init.yaml");
    const auto& path = scratch.write(ppb::fuzz::text_of(data, size));
    ppb::fuzz::expect_only([&] {
        ppb::importers::Messages messages;
        (void)ppb::importers::read_sapp_init(path, messages);
    });
    ppb::fuzz::expect_only([&] { (void)ppb::importers::read_sapp_problem(path); });
    return 0;
}
