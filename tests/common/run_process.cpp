#include "run_process.hpp"

#include <ppb/process.hpp>

namespace ppb_test {

ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env,
                          const std::string& stdin_text, const std::string& working_directory) {
    ppb::ProcessOptions options;
    options.env = env;
    options.stdin_text = stdin_text;
    options.working_directory = working_directory;
    ppb::ProcessResult r = ppb::run_process(program, args, options);
    return ProcessResult{r.exit_code, r.signal, std::move(r.out), std::move(r.err)};
}

}  // namespace ppb_test
