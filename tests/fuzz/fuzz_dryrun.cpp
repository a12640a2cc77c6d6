// libFuzzer harness: the ppb.dryrun/1 reader (ppb::parse_dryrun).
#include "fuzz_support.hpp"

#include <ppb/dryrun_format.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ppb::fuzz::expect_only(
        [&] { (void)ppb::parse_dryrun(ppb::fuzz::text_of(data, size), "fuzz"); });
    return 0;
}
