// Runs a program with arguments and extra environment, capturing stdout, stderr and status: a
// thin use of ppb::run_process (ppb/process.hpp), kept apart so that test files, which call
// their helper ppb(...), do not see the namespace ppb.
#ifndef PPB_TEST_RUN_PROCESS_HPP
#define PPB_TEST_RUN_PROCESS_HPP

#include <map>
#include <string>
#include <vector>

namespace ppb_test {

struct ProcessResult {
    int exit_code = -1;  // -1 when killed by a signal
    int signal = 0;
    std::string out;
    std::string err;
};

// `env` entries are added to (or, when the value is empty, removed from) this process's
// environment for the child. No shell is involved: arguments are passed as they are.
// A non-empty `working_directory` is where the child starts.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env = {},
                          const std::string& stdin_text = {},
                          const std::string& working_directory = {});

}  // namespace ppb_test

#endif  // PPB_TEST_RUN_PROCESS_HPP
