// Megatron-LM's --pipeline-model-parallel-layout grammar written from its code, for tests that
// read what ppb prints without ppb's own reader: parse_str_to_list of
// megatron/core/transformer/pipeline_parallel_layer_layout.py (NVIDIA/Megatron-LM, commit
// 00caa53af30912914981c86f39db123961678bbd) removes the commas, applies
// re.sub(r'\(([^)]+)\)\*(\d+)', ...) and then re.sub(r'(.)\*(\d+)', ...), each match replaced by
// group 1 repeated int(group 2) times, and splits at '|'. The same two patterns here, with
// std::regex (ECMAScript, which reads them alike).
#ifndef PPB_TESTS_COMMON_MEGATRON_GRAMMAR_HPP
#define PPB_TESTS_COMMON_MEGATRON_GRAMMAR_HPP

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

namespace ppb_test {

inline std::string megatron_repeat_sub(const std::string& text, const std::regex& pattern) {
    std::string out;
    std::size_t last = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern);
         it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        out += text.substr(last, static_cast<std::size_t>(m.position(0)) - last);
        const int n = std::stoi(m[2].str());
        for (int i = 0; i < n; ++i)
            out += m[1].str();
        last = static_cast<std::size_t>(m.position(0) + m.length(0));
    }
    return out + text.substr(last);
}

// The virtual stages' characters, in the layout's order.
inline std::vector<std::string> megatron_virtual_stages(std::string layout) {
    std::erase(layout, ',');
    layout = megatron_repeat_sub(layout, std::regex(R"(\(([^)]+)\)\*(\d+))"));
    layout = megatron_repeat_sub(layout, std::regex(R"((.)\*(\d+))"));
    std::vector<std::string> stages(1);
    for (const char c : layout) {
        if (c == '|')
            stages.emplace_back();
        else
            stages.back() += c;
    }
    return stages;
}

}  // namespace ppb_test

#endif  // PPB_TESTS_COMMON_MEGATRON_GRAMMAR_HPP
