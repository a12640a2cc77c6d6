// libFuzzer harness: the cluster description (ppb.cluster/1), as --cluster FILE reads it
// (ppb::partition::read_cluster), and device names as --device takes them.
#include "fuzz_support.hpp"

#include <ppb/partition/cluster.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = ppb::fuzz::text_of(data, size);
    ppb::fuzz::expect_only([&] { (void)ppb::partition::read_cluster(text, "cluster.json"); });
    ppb::fuzz::expect_only([&] { (void)ppb::partition::cluster_of_device(text); });
    return 0;
}
