#include <ppb/plugin_check.hpp>
#include <ppb/process.hpp>

#include <fmt/format.h>

#include <system_error>

namespace ppb {
namespace {

std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

}  // namespace

PluginCheck check_in_child(const PluginCandidate& candidate, const std::filesystem::path& probe,
                           const std::vector<std::string>& probe_args,
                           std::chrono::milliseconds timeout) {
    std::vector<std::string> args = probe_args;
    args.push_back(candidate.path.string());
    ProcessOptions options;
    options.timeout = timeout;
    ProcessResult child;
    try {
        child = run_process(probe, args, options);
    } catch (const std::system_error& e) {
        return {false, e.what(), {}};
    }
    if (child.timed_out) {
        return {false,
                fmt::format("loading it did not finish within {} ms; the child was killed",
                            timeout.count()),
                {}};
    }
    if (child.signal != 0) {
        return {false,
                fmt::format("loading it crashed the process that loaded it ({})",
                            signal_text(child.signal)),
                {}};
    }
    if (child.exit_code == 0)
        return {true, {}, std::move(child.out)};
    std::string why = trimmed(std::move(child.err));
    constexpr std::string_view prefix = "ppb: error: ";
    if (why.rfind(prefix, 0) == 0)
        why.erase(0, prefix.size());
    if (why.empty())
        why = fmt::format("the loading process exited with status {}", child.exit_code);
    return {false, why, {}};
}

}  // namespace ppb
