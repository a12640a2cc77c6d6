#include <ppb/plugin/report_support.hpp>

#include <ppb/json_output.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace ppb::plugin {

double finite(double v) {
    if (!std::isfinite(v)) {
        throw std::runtime_error(
            "the report would contain a non-finite number, which JSON cannot carry");
    }
    return v;
}

boost::json::value number_or_null(const std::optional<double>& v) {
    if (!v)
        return nullptr;
    return finite(*v);
}

boost::json::array strings(const std::vector<std::string>& texts) {
    boost::json::array out;
    out.reserve(texts.size());
    for (const auto& t : texts)
        out.emplace_back(t);
    return out;
}

std::string make_report(boost::json::object parameters, boost::json::object diagnostics) {
    const boost::json::object report{{"parameters", std::move(parameters)},
                                     {"diagnostics", std::move(diagnostics)}};
    return to_compact_json(report);
}

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

}  // namespace ppb::plugin
