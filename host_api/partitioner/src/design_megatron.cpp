#include <ppb/partition/design_megatron.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace ppb::partition {

std::string megatron_layout_text(std::span<const std::uint32_t> layers_per_stage) {
    std::string out;
    for (std::size_t s = 0; s < layers_per_stage.size(); ++s) {
        if (s > 0)
            out += '|';
        if (s == 0)
            out += 'E';
        const std::uint32_t n = layers_per_stage[s];
        if (n == 1)
            out += 't';
        else if (n > 1)
            out += fmt::format("t*{}", n);
        if (s + 1 == layers_per_stage.size())
            out += 'L';
    }
    return out;
}

std::optional<MegatronRecompute> megatron_setting_of(const DesignRun& run) {
    if (run.megatron)
        return run.megatron;
    using G = MegatronRecompute::Granularity;
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
        return MegatronRecompute{G::none, 0};
    if (all_select)
        return MegatronRecompute{G::selective, 0};
    // Block recompute of the first N layers: every stage holds min(N, n_s) full layers.
    const std::uint32_t n_full = block.value_or(most_full);
    for (const DesignStage& s : run.stages) {
        if (s.layers[PPB_KIND_SELECT] != 0 ||
            s.layers[PPB_KIND_FULL] != std::min(n_full, s.total_layers()))
            return std::nullopt;
    }
    return MegatronRecompute{G::full_block, n_full};
}

std::optional<std::vector<std::string>> megatron_design_args(const DesignRun& run,
                                                             std::uint32_t num_layers) {
    const auto setting = megatron_setting_of(run);
    if (!setting)
        return std::nullopt;
    std::vector<std::uint32_t> layers;
    std::uint32_t most = 0;
    for (const DesignStage& s : run.stages) {
        layers.push_back(s.total_layers());
        most = std::max(most, s.total_layers());
    }
    std::vector<std::string> args = {"--pipeline-model-parallel-size",
                                     std::to_string(run.num_stages), "--num-layers",
                                     std::to_string(num_layers)};
    if (run.num_stages > 1) {
        args.emplace_back("--pipeline-model-parallel-layout");
        args.push_back(megatron_layout_text(layers));
    }
    using G = MegatronRecompute::Granularity;
    switch (setting->granularity) {
        case G::none:
            break;
        case G::selective:
            args.insert(args.end(), {"--recompute-granularity", "selective"});
            break;
        case G::full_block:
            if (setting->num_layers >= most)
                args.insert(args.end(), {"--recompute-granularity", "full", "--recompute-method",
                                         "uniform", "--recompute-num-layers", "1"});
            else
                args.insert(args.end(),
                            {"--recompute-granularity", "full", "--recompute-method", "block",
                             "--recompute-num-layers", std::to_string(setting->num_layers)});
            break;
    }
    return args;
}

}  // namespace ppb::partition
