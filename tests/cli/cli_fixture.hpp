// Shared helpers of the end-to-end tests of the ppb command.
#ifndef PPB_TEST_CLI_FIXTURE_HPP
#define PPB_TEST_CLI_FIXTURE_HPP

#include "../common/run_process.hpp"

#include <boost/json/value.hpp>

#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace ppb_test {

inline const std::string sample_dryrun = std::string(PPB_SAMPLES_DIR) + "/llama70b-pp8-dryrun.json";
// SAPP's layer file of LLaMA-2 70B, the samples' main planning input.
inline const std::string layers_file = std::string(PPB_SAMPLES_DIR) + "/llama70b-layers.json";
inline const std::string fixture_dir = PPB_FIXTURE_DIR;
inline const std::string versions_dir = PPB_VERSIONS_DIR;

// Runs the built ppb with PPB_PLUGIN_PATH and PPB_DEBUG_PLUGINS cleared unless `env` sets them.
ProcessResult ppb(const std::vector<std::string>& args, std::map<std::string, std::string> env = {},
                  const std::string& stdin_text = {});

// A JSON file with this text, removed when the test program ends.
std::string write_file(const std::string& text, const std::string& name = "input.json");

// Asserts exit status 2, nothing on stdout, and one "ppb: error:" line naming each part.
void expect_input_error(const ProcessResult& r, std::initializer_list<std::string> parts);

// Asserts exit status `code`, nothing on stdout, and stderr naming each part.
void expect_failure(const ProcessResult& r, int code, std::initializer_list<std::string> parts);

boost::json::value parse_json(const std::string& text);

}  // namespace ppb_test

#endif  // PPB_TEST_CLI_FIXTURE_HPP
