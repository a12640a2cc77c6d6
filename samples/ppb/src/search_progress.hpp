// The progress bar of a long-running command, on stderr: drawn on a terminal once the work has
// taken a second (never when stderr is piped, so logs and scripts see only the messages), or
// always or never when asked.
#ifndef PPB_SEARCH_PROGRESS_HPP
#define PPB_SEARCH_PROGRESS_HPP

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace ppb::cli {

enum class ProgressMode { automatic, always, never };

class ProgressBar {
  public:
    ProgressBar(ProgressMode mode, std::string_view what);
    // Redraws the bar for `done` of `total` (when the mode and the time allow).
    void update(std::size_t done, std::size_t total);
    // Clears the bar from a terminal (a piped one ends with a newline), if it was drawn.
    void finish();

  private:
    ProgressMode mode_;
    std::string what_;
    bool terminal_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_;
};

// "automatic", "always" or "never" as CLI11 checks them ("auto", "always", "never").
[[nodiscard]] ProgressMode progress_mode(std::string_view name);

}  // namespace ppb::cli

#endif  // PPB_SEARCH_PROGRESS_HPP
