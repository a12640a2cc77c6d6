#include "text_table.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ppb::cli {
namespace {

// Display width of UTF-8 text: counts code points, not bytes (tables use "×" and "±").
std::size_t display_width(const std::string& text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

}  // namespace

TextTable::TextTable(std::vector<std::string> header, std::vector<Align> align)
    : align_(std::move(align)) {
    align_.resize(header.size(), Align::left);
    rows_.push_back(std::move(header));
}

void TextTable::add_row(std::vector<std::string> cells) {
    cells.resize(align_.size());
    rows_.push_back(std::move(cells));
}

std::string TextTable::render(std::size_t indent) const {
    std::vector<std::size_t> width(align_.size(), 0);
    for (const auto& row : rows_) {
        for (std::size_t c = 0; c < row.size(); ++c)
            width[c] = std::max(width[c], display_width(row[c]));
    }
    std::string out;
    for (const auto& row : rows_) {
        std::string line(indent, ' ');
        for (std::size_t c = 0; c < row.size(); ++c) {
            const std::string pad(width[c] - display_width(row[c]), ' ');
            if (c != 0)
                line += "  ";
            line += align_[c] == Align::right ? pad + row[c] : row[c] + pad;
        }
        line.erase(line.find_last_not_of(' ') + 1);
        out += line + '\n';
    }
    return out;
}

}  // namespace ppb::cli
