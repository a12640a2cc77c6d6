// ppb/importers/megatron_model_config.hpp — a Megatron-LM run's arguments from the YAML file it is
// launched from: the MODEL_ARGS mapping of Megatron-LM's functional tests (model_config.yaml) and
// of Megatron-MoE-ModelZoo's benchmarking configurations, flag to value.
//
// Megatron-LM's launcher (tests/functional_tests/shell_test_utils/_run_training.sh at
// d98e8a64dd) turns each entry into arguments, in the file's order:
//   true                      the flag alone (a switch);
//   ""                        nothing (the entry is left out);
//   "(...)"                   the flag and the value, one argument;
//   "[a b c]"                 the flag and the words inside the brackets, one argument each
//                             ("--recompute-modules: \"[layernorm mla_up_proj]\"");
//   anything else             the flag and the value, one argument (a value with spaces, '|' or
//                             parentheses too: "--pipeline-model-parallel-layout: \"Et*3|tmL\"").
// The value is the scalar as written, trimmed. Megatron-MoE-ModelZoo's runner
// (sbatch_benchmarking.sh at 38ce2ed2e1) reads the same files with two differences ppb follows,
// since neither changes a file Megatron-LM's launcher runs: `false` leaves the flag out (Megatron-
// LM's launcher would pass the word "false", which argparse refuses after a switch). Both take
// the file's $NAME and ${NAME} from the environment (envsubst, the launcher's eval); an unset one
// is kept as written, with a note (the paths Megatron-LM reads and ppb does not need none; a
// count's reader names the flag whose value is not one). A value that is a YAML list or mapping,
// or null, is refused naming its line.
#ifndef PPB_IMPORTERS_MEGATRON_MODEL_CONFIG_HPP
#define PPB_IMPORTERS_MEGATRON_MODEL_CONFIG_HPP

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers {

// The value of an environment variable, nullopt when it is not set.
using Environment = std::function<std::optional<std::string>(std::string_view)>;

struct MegatronModelConfig {
    std::vector<std::string> arguments;  // "--num-layers", "32", "--bf16", ...
    std::vector<std::string> notes;      // what was left out, and why
};

// The arguments of the file whose contents are `text` (named `source` in messages). InputError,
// naming the file, the line and the flag: not YAML, no MODEL_ARGS mapping, a key that is not a
// flag, a value that is a list, a mapping or null.
[[nodiscard]] MegatronModelConfig megatron_model_config(const std::string& text, std::string source,
                                                        const Environment& environment);

// The same from the file at `path`.
[[nodiscard]] MegatronModelConfig megatron_model_config(const std::filesystem::path& path,
                                                        const Environment& environment);

// The process's environment (std::getenv).
[[nodiscard]] std::optional<std::string> process_environment(std::string_view name);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MEGATRON_MODEL_CONFIG_HPP
