// The tests run programs (mostly the ppb executable) with ppb's own process runner.
#ifndef PPB_TEST_RUN_PROCESS_HPP
#define PPB_TEST_RUN_PROCESS_HPP

#include <ppb/process.hpp>

#include <map>
#include <string>
#include <vector>

namespace ppb_test {

using ppb::ProcessResult;

// `env` entries are added to (or, when the value is empty, removed from) this process's
// environment for the child; a non-empty `working_directory` is where the child starts.
inline ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env = {},
                                 const std::string& stdin_text = {},
                                 const std::string& working_directory = {}) {
    ppb::ProcessOptions options;
    options.env = env;
    options.stdin_text = stdin_text;
    options.working_directory = working_directory;
    return ppb::run_process(program, args, options);
}

}  // namespace ppb_test

#endif  // PPB_TEST_RUN_PROCESS_HPP
