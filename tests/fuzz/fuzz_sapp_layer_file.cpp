// libFuzzer harness: the SAPP layer file reader (ppb::sapp::parse_layer_file), and its writer on
// whatever it accepts: what the reader accepts, the writer writes and the reader reads back equal.
#include "fuzz_support.hpp"

#include <ppb/sapp/layer_file.hpp>

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ppb::fuzz::expect_only([&] {
        const auto file = ppb::sapp::parse_layer_file(ppb::fuzz::text_of(data, size), "fuzz");
        const auto again = ppb::sapp::parse_layer_file(ppb::sapp::write_layer_file(file), "again");
        if (!(again == file)) {
            std::fprintf(stderr, "a layer file read, written and read again differs\n");
            std::abort();
        }
    });
    return 0;
}
