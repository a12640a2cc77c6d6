// libFuzzer harness: Megatron-LM's layout flags (ppb/importers/megatron_layout.hpp). The input's
// first line chooses the other flags — "P L MTP FLAGS" (pipeline size, --num-layers,
// --mtp-num-layers or '-', and letters: e --account-for-embedding-in-pipeline-split,
// l --account-for-loss-in-pipeline-split, v2 / v3 virtual stages, b block recompute) — and the
// rest is the --pipeline-model-parallel-layout string; the layout is also imported without the
// layout flag (the --account-for split alone). Only FlagError / InputError may come out.
#include "fuzz_support.hpp"

#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_layout.hpp>

#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(ppb::fuzz::text_of(data, size));
    const std::size_t newline = text.find('\n');
    std::istringstream header(text.substr(0, newline));
    const std::string layout = newline == std::string::npos ? text : text.substr(newline + 1);
    std::uint32_t p = 2, layers = 8;
    std::string mtp, letters;
    header >> p >> layers >> mtp >> letters;
    ppb::importers::MegatronFlags flags;
    flags.pipeline_size = 1 + p % 64;
    flags.num_layers = 1 + layers % 512;
    flags.world_size = *flags.pipeline_size;
    flags.micro_batches = 4 * *flags.pipeline_size;
    if (!mtp.empty() && mtp != "-")
        flags.mtp_layers = static_cast<std::uint32_t>(mtp.size());
    flags.account_for_embedding = letters.find('e') != std::string::npos;
    flags.account_for_loss = letters.find('l') != std::string::npos;
    if (letters.find("v2") != std::string::npos)
        flags.virtual_stages = 2;
    if (letters.find("v3") != std::string::npos)
        flags.virtual_stages = 3;
    if (letters.find('b') != std::string::npos) {
        flags.recompute_granularity = "full";
        flags.recompute_method = "block";
        flags.recompute_num_layers = 2;
    }
    ppb::fuzz::expect_only([&] { (void)ppb::importers::parse_megatron_layout(layout); });
    ppb::fuzz::expect_only([&] {
        ppb::importers::Messages messages;
        (void)ppb::importers::megatron_layout(flags, {}, messages);
    });
    flags.layout = layout;
    ppb::fuzz::expect_only([&] {
        ppb::importers::Messages messages;
        (void)ppb::importers::megatron_layout(flags, {}, messages);
    });
    return 0;
}
