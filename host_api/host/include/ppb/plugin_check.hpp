// ppb/plugin_check.hpp — loading a plugin in a child process, so that whatever its code does
// (abort in a static initialiser, hang, crash in its factory) cannot take the host down. The way
// GStreamer's plugin scanner works.
#ifndef PPB_PLUGIN_CHECK_HPP
#define PPB_PLUGIN_CHECK_HPP

#include <ppb/discovery.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ppb {

struct PluginCheck {
    bool loaded = false;  // the child loaded it and its table is sound
    std::string reason;   // what went wrong, or what the child reported
    std::string report;   // the child's standard output when it succeeded (JSON text)
};

// Runs `probe` with `probe_args` followed by the candidate's path, in a child process, and
// judges the outcome: exit status 0 = loaded (stdout is the report), any other status = failed
// (the child's stderr says why), a signal = crashed, no end within `timeout` = hung (killed).
[[nodiscard]] PluginCheck check_in_child(const PluginCandidate& candidate,
                                         const std::filesystem::path& probe,
                                         const std::vector<std::string>& probe_args,
                                         std::chrono::milliseconds timeout);

}  // namespace ppb

#endif  // PPB_PLUGIN_CHECK_HPP
