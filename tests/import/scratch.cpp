#include "scratch.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace ppb_test {
namespace fs = std::filesystem;

Scratch::Scratch() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("ppb-import-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
}

Scratch::~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

fs::path Scratch::write(const std::string& relative, std::string_view text) const {
    const fs::path file = path_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string from_hex(std::string_view hex) {
    std::string out;
    int high = -1;
    for (const char c : hex) {
        if (c == ' ')
            continue;
        const int digit = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
        if (high < 0) {
            high = digit;
        } else {
            out.push_back(static_cast<char>(high * 16 + digit));
            high = -1;
        }
    }
    return out;
}

std::string mindspore_log(int used_mb, int actual_mb) {
    return "2024-11-20 10:31:05,402 - mindformers[mindformers/tools/utils.py:167] - INFO - set "
           "output path\n"
           "2024-11-20 10:36:02,131 - mindformers[mindformers/trainer/base_trainer.py:1011] - INFO "
           "- .........Training Over!.............\n"
           "Device MOC memory size: 62432M\n"
           "MindSpore Used memory size: 59392M\n"
           "MindSpore memory base address: 0\n"
           "Used peak memory usage (without fragments): " +
           std::to_string(used_mb) +
           "M\n"
           "Actual peak memory usage (with fragments): " +
           std::to_string(actual_mb) + "M\n";
}

}  // namespace ppb_test
