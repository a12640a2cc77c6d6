// ppb/importers/setting_words.hpp — how a host names, in an importer's messages, the settings it
// passes beside the framework's own files (the run's world size, tokenizer size, GPU generation,
// Megatron-LM release and declared flags): the command's flags ("--world-size") or Python's
// keywords ("world_size"). The framework's own flags and keys are named as the framework names
// them, whatever the host.
#ifndef PPB_IMPORTERS_SETTING_WORDS_HPP
#define PPB_IMPORTERS_SETTING_WORDS_HPP

#include <string>
#include <string_view>

namespace ppb::importers {

enum class SettingWords { flags, keywords };

// The setting named by its keyword ("world_size", "tokenizer_size", "compute_capability",
// "megatron_version", "megatron_flags") in `words`: "--world-size", ..., "--megatron-flag" (one
// flag a declaration), or the keyword itself.
[[nodiscard]] std::string setting_name(std::string_view setting, SettingWords words);

// How to declare a flag `name` ("my-flag") with its values in `words`: "--megatron-flag
// my-flag[:VALUES]" or "megatron_flags=[\"my-flag[:VALUES]\"]".
[[nodiscard]] std::string declare_flag_hint(std::string_view name, SettingWords words);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_SETTING_WORDS_HPP
