// libFuzzer harness: the request of `ppb design` (ppb::partition::design_dry_runs) from bytes —
// degrees, layers, kinds, rule, micro-batches, runs, and a limit on a linear prior. Every request
// gives a design, an InputError or Infeasible, never a crash; a design's runs obey the request
// (every stage at least one layer, L in all, only the kinds named, one Megatron setting per run
// under that rule) and identify every coefficient.
#include "fuzz_support.hpp"

#include <ppb/partition/design.hpp>
#include <ppb/partition/design_megatron.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "%s\n", what);
    std::abort();
}

void check(const ppb::partition::DesignRequest& r, const ppb::partition::Design& d) {
    for (const auto& run : d.runs) {
        std::uint32_t total = 0;
        if (run.stages.size() != run.num_stages)
            finding("a run's stages are not its degree");
        for (const auto& s : run.stages) {
            if (s.total_layers() == 0)
                finding("a stage without layers");
            total += s.total_layers();
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                if (s.layers[k] != 0 && (r.kinds & PPB_KIND_BIT(k)) == 0)
                    finding("a kind that was not asked for");
            }
        }
        if (total != r.num_layers)
            finding("a run does not hold the model's layers");
        if (r.rule == ppb::partition::DesignRule::megatron &&
            !ppb::partition::megatron_setting_of(run))
            finding("a Megatron run without one setting");
    }
    if (!ppb::partition::design_precision(r, d.runs).identified)
        finding("a design that does not identify every coefficient");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 8)
        return 0;
    ppb::partition::DesignRequest r;
    // At most two degrees and 12 layers: the coordinate exchange over three degrees, 24 layers and
    // every kind takes over 10 s in this sanitized build (libFuzzer's timeout); larger designs are
    // test_design's (tests/design).
    for (std::size_t i = 0; i < 1U + data[0] % 2U; ++i)
        r.stages.push_back(data[1 + i] % 7U);  // 0 is refused
    r.num_layers = data[4] % 13U;
    r.kinds = data[5] & PPB_ALL_KINDS;
    r.rule = static_cast<ppb::partition::DesignRule>(data[6] % 3U);
    r.micro_batches = data[7] % 9U;
    r.runs = size > 8 ? data[8] % 5U : 0;
    r.restarts = 1;
    if (size > 9 && data[9] % 2U == 1U) {
        r.memory_limit_mb = 100.0 + data[9];
        r.prior = [](std::span<const ppb_placement> ps) {
            std::vector<double> out;
            for (const auto& p : ps) {
                double m = 50.0 + (p.stage == 0 ? 20.0 : 0.0);
                for (const auto n : p.chunks[0].layers)
                    m += 10.0 * n + 3.0 * n * p.chunks[0].in_flight;
                out.push_back(m);
            }
            return out;
        };
    }
    try {
        check(r, ppb::partition::design_dry_runs(r));
    } catch (const ppb::InputError&) {
    } catch (const ppb::partition::Infeasible&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "undocumented exception: %s\n", e.what());
        std::abort();
    }
    return 0;
}
