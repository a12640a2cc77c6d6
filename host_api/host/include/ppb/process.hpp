// ppb/process.hpp — running a program in a child process: arguments as they are (no shell),
// optional standard input text, environment changes and working directory, its standard output
// and error captured, how it ended (exit status or signal), and a time limit.
#ifndef PPB_PROCESS_HPP
#define PPB_PROCESS_HPP

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ppb {

struct ProcessOptions {
    std::string stdin_text;  // the child's standard input (empty: end of file at once)
    // Added to (or, when the value is empty, removed from) this process's environment.
    std::map<std::string, std::string> env;
    std::filesystem::path working_directory;           // empty: this process's
    std::optional<std::chrono::milliseconds> timeout;  // killed (SIGKILL) when it runs longer
};

struct ProcessResult {
    int exit_code = -1;      // -1 when ended by a signal
    int signal = 0;          // the signal that ended it, 0 if it exited
    bool timed_out = false;  // killed at the time limit (signal is SIGKILL)
    std::string out;
    std::string err;
};

// Runs `program` with `args` and waits for it to end. Throws std::system_error when it
// cannot be started ("cannot start PROGRAM: why").
[[nodiscard]] ProcessResult run_process(const std::filesystem::path& program,
                                        const std::vector<std::string>& args,
                                        const ProcessOptions& options = {});

// "signal 6, SIGABRT".
[[nodiscard]] std::string signal_text(int signal);

}  // namespace ppb

#endif  // PPB_PROCESS_HPP
