// libFuzzer harness: the table model's options, as create() hands them to its constructor.
#include "fuzz_support.hpp"

#include "model.hpp"

#include <ppb/plugin.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ppb::fuzz::expect_only<ppb::plugin::InvalidInput>(
        [&] { ppb::table::TableModel model(ppb::fuzz::text_of(data, size)); });
    return 0;
}
