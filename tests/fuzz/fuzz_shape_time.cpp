// libFuzzer harness: the layer times of a model shape (ppb::partition::time_model_from_shape) and
// its transfers' sizes (shape_sizes): any bytes give a time model or an InputError, never a
// crash; what it accepts has finite, positive body times and as many layers in its groups as in
// the model, and its sharded data parallelism's per-layer transfers on a cluster
// (with_sharded_transfers) only lengthen them, by finite amounts.
#include "fuzz_support.hpp"

#include <ppb/partition/cluster.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/shape_time.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ppb::fuzz::expect_only([&] {
        const ppb::partition::TimeModel t = ppb::partition::time_model_from_shape(
            ppb::fuzz::text_of(data, size), "fuzz", ppb::partition::ShapeTimeSettings{});
        std::uint64_t layers = 0;
        for (const auto& g : t.groups)
            layers += g.layers;
        const bool grouped_ok = t.groups.size() <= 1 || layers == t.body_layers;
        if (t.body_layers == 0 || !grouped_ok || !(t.body_time[0] > 0.0) ||
            !std::isfinite(t.body_time[0]) || !std::isfinite(t.tail_time)) {
            std::fprintf(stderr, "an accepted shape gives an impossible time model\n");
            std::abort();
        }
        const std::string_view text = ppb::fuzz::text_of(data, size);
        const ppb::partition::ShapeSizes sizes = ppb::partition::shape_sizes(text, "fuzz");
        const ppb::partition::Cluster h100 = ppb::partition::cluster_of_device("H100");
        const ppb::partition::TimeModel sharded =
            ppb::partition::with_sharded_transfers(t, sizes, h100, {1, 16});
        for (std::size_t k = 0; k < t.body_time.size(); ++k) {
            if (!(sharded.body_time[k] >= t.body_time[k]) || !std::isfinite(sharded.body_time[k])) {
                std::fprintf(stderr, "sharded transfers shorten a layer or make it endless\n");
                std::abort();
            }
        }
    });
    return 0;
}
