#include "search_progress.hpp"

#include <fmt/format.h>

#include <unistd.h>
#include <cstdio>

namespace ppb::cli {

ProgressMode progress_mode(std::string_view name) {
    if (name == "always")
        return ProgressMode::always;
    if (name == "never")
        return ProgressMode::never;
    return ProgressMode::automatic;
}

ProgressBar::ProgressBar(ProgressMode mode, std::string_view what)
    : mode_(mode),
      what_(what),
      terminal_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(std::size_t done, std::size_t total) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (mode_ == ProgressMode::never ||
        (mode_ == ProgressMode::automatic && (!terminal_ || seconds < 1.0))) {
        return;
    }
    constexpr std::size_t width = 30;
    const std::size_t filled = total == 0 ? width : done * width / total;
    const std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
    // On a terminal the line is redrawn in place; piped (--progress always), one line each time.
    fmt::print(stderr, "{}{}: [{}] {}/{} {}, {:.1f} s{}", terminal_ ? "\r" : "", "ppb search", bar,
               done, total, what_, seconds, terminal_ ? "" : "\n");
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressBar::finish() {
    if (drawn_ && terminal_) {
        fmt::print(stderr, "\r\033[K");
        std::fflush(stderr);
    }
    drawn_ = false;
}

}  // namespace ppb::cli
