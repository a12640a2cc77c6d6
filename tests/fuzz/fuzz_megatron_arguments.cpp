// libFuzzer harness: a Megatron-LM argument list (the input split at whitespace), read as
// Megatron's argparse reads it and mapped to the analytic model's options
// (ppb::importers::analytic_options_from_megatron) with and without a world size and a
// tokenizer size, the release recognised or named (23.04, 0.8), a branch's flag declared.
// Whatever options it writes must be JSON the analytic model either accepts or refuses as
// invalid input (a divisibility it checks), never anything else.
#include "fuzz_support.hpp"

#include "model.hpp"

#include <ppb/importers/megatron_arguments.hpp>
#include <ppb/plugin.hpp>

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = ppb::fuzz::text_of(data, size);
    std::vector<std::string> arguments;
    std::string token;
    for (const char c : text) {
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            if (!token.empty())
                arguments.push_back(std::move(token));
            token.clear();
        } else {
            token.push_back(c);
        }
    }
    if (!token.empty())
        arguments.push_back(std::move(token));
    using Context = ppb::importers::MegatronRunContext;
    for (const Context& context :
         {Context{}, Context{8U, {}, 9U}, Context{64U, 32000U, 8U},
          Context{8U, {}, 9U, std::string("23.04")},
          Context{16U, {}, 8U, std::string("core_r0.8.0"), {"my-flag:+", "my-switch:0"}}}) {
        ppb::fuzz::expect_only([&] {
            const auto result = ppb::importers::analytic_options_from_megatron(arguments, context);
            ppb::fuzz::expect_only<ppb::plugin::InvalidInput>(
                [&] { ppb::analytic::AnalyticModel model(result.options_json); });
        });
    }
    return 0;
}
