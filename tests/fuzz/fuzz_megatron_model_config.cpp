// libFuzzer harness: a Megatron-LM run configuration's MODEL_ARGS, as 'ppb import megatron-options
// --model-config' reads them (ppb::importers::megatron_model_config, with an environment that
// sets one variable), and the arguments it gives read as Megatron's argparse reads them and
// mapped to the analytic model's options. Either step may refuse the input (ppb::InputError);
// nothing else may escape.
#include "fuzz_support.hpp"

#include <ppb/importers/megatron_arguments.hpp>
#include <ppb/importers/megatron_model_config.hpp>

#include <optional>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(ppb::fuzz::text_of(data, size));
    const auto environment = [](std::string_view name) -> std::optional<std::string> {
        if (name == "TP")
            return std::string("2");
        return std::nullopt;
    };
    ppb::fuzz::expect_only([&] {
        const ppb::importers::MegatronModelConfig config =
            ppb::importers::megatron_model_config(text, "fuzz.yaml", environment);
        (void)ppb::importers::analytic_options_from_megatron(
            config.arguments, ppb::importers::MegatronRunContext{8U, 32000U, 9U});
    });
    return 0;
}
