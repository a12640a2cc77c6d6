#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>

#include <unistd.h>

namespace ppb_test {
namespace fs = std::filesystem;
namespace {

struct ScratchDir {
    fs::path path = fs::temp_directory_path() / ("ppb-cli-files-" + std::to_string(::getpid()));
    ScratchDir() { fs::create_directories(path); }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

ProcessResult ppb(const std::vector<std::string>& args, std::map<std::string, std::string> env,
                  const std::string& stdin_text) {
    env.try_emplace("PPB_PLUGIN_PATH", "");
    env.try_emplace("PPB_DEBUG_PLUGINS", "");
    return run_process(PPB_EXE, args, env, stdin_text);
}

std::string write_file(const std::string& text, const std::string& name) {
    static ScratchDir dir;
    static int counter = 0;
    const fs::path file = dir.path / (std::to_string(counter++) + "-" + name);
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
}

void expect_failure(const ProcessResult& r, int code, std::initializer_list<std::string> parts) {
    BOOST_TEST(r.exit_code == code, "exit status " << r.exit_code << ", stderr: " << r.err);
    BOOST_TEST(r.signal == 0);
    BOOST_TEST(r.out.empty(), "stdout must be empty on failure, got: " << r.out);
    BOOST_TEST(r.err.rfind("ppb: error: ", 0) == 0u, r.err);
    for (const auto& part : parts) {
        BOOST_TEST(r.err.find(part) != std::string::npos,
                   "stderr lacks '" << part << "': " << r.err);
    }
}

void expect_input_error(const ProcessResult& r, std::initializer_list<std::string> parts) {
    expect_failure(r, 2, parts);
}

boost::json::value parse_json(const std::string& text) {
    boost::system::error_code ec;
    auto value = boost::json::parse(text, ec);
    BOOST_TEST_REQUIRE(!ec, "not JSON: " << text);
    return value;
}

}  // namespace ppb_test
