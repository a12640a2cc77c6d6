#include <ppb/partition/design_megatron.hpp>
#include <ppb/partition/framework_args.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace ppb::partition {

std::optional<MegatronRecompute> megatron_setting_of(const DesignRun& run) {
    if (run.megatron)
        return run.megatron;
    using M = MegatronRecompute::Method;
    bool all_none = true;
    bool all_select = true;
    std::optional<std::uint32_t> block;  // the full count of a stage that has 'none' layers too
    std::uint32_t most_full = 0;
    for (const DesignStage& s : run.stages) {
        const auto& c = s.layers;
        const std::uint32_t n = s.total_layers();
        if (c[PPB_KIND_COMM] != 0 || c[PPB_KIND_BOTH] != 0)
            return std::nullopt;
        all_none = all_none && c[PPB_KIND_NONE] == n;
        all_select = all_select && c[PPB_KIND_SELECT] == n;
        if (c[PPB_KIND_SELECT] != 0 && c[PPB_KIND_SELECT] != n)
            return std::nullopt;
        most_full = std::max(most_full, c[PPB_KIND_FULL]);
        if (c[PPB_KIND_NONE] != 0 && c[PPB_KIND_FULL] != 0) {
            if (block && *block != c[PPB_KIND_FULL])
                return std::nullopt;
            block = c[PPB_KIND_FULL];
        }
    }
    if (all_none)
        return MegatronRecompute{M::none, 0};
    if (all_select)
        return MegatronRecompute{M::selective, 0};
    // Block recompute of the first N layers: every stage holds min(N, n_s) full layers.
    const std::uint32_t n_full = block.value_or(most_full);
    for (const DesignStage& s : run.stages) {
        if (s.layers[PPB_KIND_SELECT] != 0 ||
            s.layers[PPB_KIND_FULL] != std::min(n_full, s.total_layers()))
            return std::nullopt;
    }
    std::uint32_t most = 0;
    for (const DesignStage& s : run.stages)
        most = std::max(most, s.total_layers());
    // Block recompute covering every stage's layers is the uniform method.
    return n_full >= most ? MegatronRecompute{M::uniform, 0} : MegatronRecompute{M::block, n_full};
}

std::optional<std::vector<std::string>> megatron_design_args(const DesignRun& run,
                                                             std::uint32_t num_layers) {
    const auto setting = megatron_setting_of(run);
    if (!setting)
        return std::nullopt;
    std::vector<std::uint32_t> layers;
    for (const DesignStage& s : run.stages)
        layers.push_back(s.total_layers());
    std::vector<std::string> args = {"--pipeline-model-parallel-size",
                                     std::to_string(run.num_stages), "--num-layers",
                                     std::to_string(num_layers)};
    // One chunk per stage: the layout's positions are the stages (the one writer of the layout
    // and of the recompute flags is ppb/partition/framework_args.hpp).
    if (run.num_stages > 1) {
        args.emplace_back("--pipeline-model-parallel-layout");
        args.push_back(megatron_layout_string(layers));
    }
    const std::vector<std::string> recompute = megatron_recompute_args(*setting);
    args.insert(args.end(), recompute.begin(), recompute.end());
    return args;
}

}  // namespace ppb::partition
