#include "text.hpp"

#include <cstdio>

namespace ppb::dryrun_lsq {

std::string format_number(double value, int digits) {
    char buffer[64];
    const int written = std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (written < 0)
        return "?";
    std::string text(buffer);
    if (text == "-0")
        text = "0";
    return text;
}

std::string join_words(std::span<const std::string> words) {
    std::string out;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0)
            out += (i + 1 == words.size()) ? " and " : ", ";
        out += words[i];
    }
    return out;
}

std::string join_names(std::span<const Parameter> parameters) {
    std::vector<std::string> words;
    words.reserve(parameters.size());
    for (const Parameter p : parameters)
        words.emplace_back(name(p));
    return join_words(words);
}

}  // namespace ppb::dryrun_lsq
