// How a launcher's shell turns configuration text into words, for the Megatron-LM readers:
// trimming, and the words of a YAML list given as one value. Internal to ppb_importers (the
// run-configuration reader, the arguments' mapping and the layout's Python reprs share it).
#ifndef PPB_IMPORTERS_SRC_LAUNCHER_WORDS_HPP
#define PPB_IMPORTERS_SRC_LAUNCHER_WORDS_HPP

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb::importers::detail {

// `text` without the white space around it.
inline std::string_view trimmed(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0)
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0)
        text.remove_suffix(1);
    return text;
}

// The words of a YAML list given as one value, "[a b]", as Megatron-LM's test harness passes
// them (tests/functional_tests/shell_test_utils/_run_training.sh, NVIDIA/Megatron-LM commit
// c08d89bea05b2071855733da684a5c15873e913f, the same at d98e8a64dd: a value matching
// ^\[[^]]+\]$ loses its brackets and bash splits it at blanks); nullopt for any other value.
inline std::optional<std::vector<std::string>> yaml_list_words(std::string_view value) {
    if (value.size() < 3 || value.front() != '[' || value.back() != ']' ||
        value.substr(1, value.size() - 2).find(']') != std::string_view::npos)
        return std::nullopt;
    std::vector<std::string> out;
    std::string word;
    for (const char c : value.substr(1, value.size() - 2)) {
        if (c == ' ' || c == '\t' || c == '\n') {
            if (!word.empty())
                out.push_back(std::exchange(word, {}));
        } else {
            word.push_back(c);
        }
    }
    if (!word.empty())
        out.push_back(word);
    return out;
}

}  // namespace ppb::importers::detail

#endif  // PPB_IMPORTERS_SRC_LAUNCHER_WORDS_HPP
