// Aligned plain-text tables for people (the default output of every ppb command).
#ifndef PPB_TEXT_TABLE_HPP
#define PPB_TEXT_TABLE_HPP

#include <ppb/number_text.hpp>

#include <string>
#include <vector>

namespace ppb::cli {

class TextTable {
  public:
    enum class Align { left, right };
    explicit TextTable(std::vector<std::string> header, std::vector<Align> align = {});
    void add_row(std::vector<std::string> cells);
    // Rows of `indent` spaces, columns separated by two spaces, trailing spaces trimmed.
    [[nodiscard]] std::string render(std::size_t indent = 0) const;

  private:
    std::vector<std::vector<std::string>> rows_;
    std::vector<Align> align_;
};

// Memory and times for people: ppb::format_mb, ppb::format_time (the one rounding of each).
using ppb::format_mb;
using ppb::format_time;

}  // namespace ppb::cli

#endif  // PPB_TEXT_TABLE_HPP
