// The host's words for the settings it passes an importer (ppb/importers/setting_words.hpp).
#include <ppb/importers/setting_words.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace ppb::importers {

std::string setting_name(std::string_view setting, SettingWords words) {
    if (words == SettingWords::keywords)
        return std::string(setting);
    // The command takes one declared flag per --megatron-flag.
    if (setting == "megatron_flags")
        return "--megatron-flag";
    std::string flag = "--" + std::string(setting);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

std::string declare_flag_hint(std::string_view name, SettingWords words) {
    return words == SettingWords::keywords ? fmt::format("megatron_flags=[\"{}[:VALUES]\"]", name)
                                           : fmt::format("--megatron-flag {}[:VALUES]", name);
}

}  // namespace ppb::importers
