// Where results go: files replaced atomically, FIFOs and devices written through, directories
// refused, and results that cannot be written (a full stdout) an error rather than a silent 0.
// Also: messages about inputs name the file and the real reason.
#include "cli_fixture.hpp"

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using namespace ppb_test;
namespace fs = std::filesystem;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_output_tests {

namespace {

const std::string megatron_log = std::string(PPB_SAMPLES_DIR) + "/import/megatron/selective.log";

std::vector<std::string> import_to(const std::vector<std::string>& output) {
    std::vector<std::string> args = {"import",
                                     "megatron",
                                     "--pipeline-model-parallel-size",
                                     "4",
                                     "--num-layers",
                                     "32",
                                     "--num-microbatches",
                                     "32",
                                     "--decoder-first-pipeline-num-layers",
                                     "7",
                                     "--decoder-last-pipeline-num-layers",
                                     "7",
                                     "--recompute-granularity",
                                     "selective",
                                     megatron_log};
    args.insert(args.end(), output.begin(), output.end());
    return args;
}

struct ScratchDir {
    fs::path path;
    ScratchDir() {
        std::string templ = (fs::temp_directory_path() / "ppb-output-XXXXXX").string();
        path = ::mkdtemp(templ.data());
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
};

std::string slurp(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

mode_t mode_of(const fs::path& file) {
    struct stat info {};
    BOOST_REQUIRE(::stat(file.c_str(), &info) == 0);
    return info.st_mode;
}

// `words` run through /bin/sh with stdout redirected to /dev/full.
ProcessResult ppb_to_full(const std::vector<std::string>& words) {
    std::string command = fmt::format("exec '{}'", PPB_EXE);
    for (const auto& w : words)
        command += " '" + w + "'";
    command += " > /dev/full";
    return run_process("/bin/sh", {"-c", command}, {{"PPB_PLUGIN_PATH", ""}});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_output)

BOOST_AUTO_TEST_CASE(output_file_is_replaced_keeping_its_permissions) {
    ScratchDir dir;
    const fs::path out = dir.path / "dryrun.json";
    std::ofstream(out) << "old";
    ::chmod(out.c_str(), 0640);
    const auto r = ppb(import_to({"-o", out.string()}));
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(slurp(out).find("ppb.dryrun/1") != std::string::npos);
    BOOST_TEST((mode_of(out) & 07777) == 0640u);
    BOOST_TEST(S_ISREG(mode_of(out)));
}

BOOST_AUTO_TEST_CASE(output_to_a_fifo_is_written_through) {
    ScratchDir dir;
    const fs::path fifo = dir.path / "pipe";
    BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto reader = std::async(std::launch::async, [&] { return slurp(fifo); });
    const auto r = ppb(import_to({"-o", fifo.string()}));
    const std::string received = reader.get();
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(S_ISFIFO(mode_of(fifo)), "the FIFO was replaced");
    BOOST_TEST(received.find("ppb.dryrun/1") != std::string::npos, received);
}

BOOST_AUTO_TEST_CASE(output_to_dev_null_leaves_it_a_device) {
    const auto r = ppb(import_to({"-o", "/dev/null"}));
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(S_ISCHR(mode_of("/dev/null")), "/dev/null is no longer a character device");
    const auto fit = ppb({"fit", sample_dryrun, "--export-sapp", "/dev/null"});
    BOOST_TEST(fit.exit_code == 0, fit.err);
    BOOST_TEST(S_ISCHR(mode_of("/dev/null")), "/dev/null is no longer a character device");
}

BOOST_AUTO_TEST_CASE(output_dash_is_stdout) {
    const auto r = ppb(import_to({"-o", "-"}));
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(r.out.find("ppb.dryrun/1") != std::string::npos);
    BOOST_TEST(!fs::exists("-"));
}

BOOST_AUTO_TEST_CASE(output_to_a_directory_is_refused) {
    ScratchDir dir;
    expect_input_error(ppb(import_to({"-o", dir.path.string()})),
                       {dir.path.string(), "is a directory"});
    BOOST_TEST(fs::is_directory(dir.path));
    expect_input_error(ppb({"fit", sample_dryrun, "--export-sapp", dir.path.string()}),
                       {dir.path.string(), "is a directory"});
    BOOST_TEST(fs::is_empty(dir.path), "a temporary file was left behind");
    // A socket is not replaced either.
    const fs::path socket_path = dir.path / "sock";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    BOOST_REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
    BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    expect_input_error(ppb(import_to({"-o", socket_path.string()})),
                       {socket_path.string(), "is a socket"});
    BOOST_TEST(S_ISSOCK(mode_of(socket_path)));
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(a_full_stdout_is_an_error) {
    const std::vector<std::vector<std::string>> commands = {
        import_to({}),
        import_to({"-o", "-"}),
        {"fit", sample_dryrun},
        {"fit", sample_dryrun, "--json"},
        {"plugins"},
        {"--help"},
        {"--version"},
    };
    for (const auto& words : commands) {
        const auto r = ppb_to_full(words);
        BOOST_TEST(r.exit_code == 1,
                   words.front() << ": exit status " << r.exit_code << ", stderr: " << r.err);
        BOOST_TEST(r.err.find("ppb: error: cannot write to stdout: No space left on device") !=
                       std::string::npos,
                   words.front() << ": " << r.err);
        BOOST_TEST(r.err.find("imported") == std::string::npos, r.err);
    }
}

BOOST_AUTO_TEST_CASE(a_full_output_file_is_an_error) {
    const auto r = ppb(import_to({"-o", "/dev/full"}));
    BOOST_TEST(r.exit_code == 1, r.err);
    BOOST_TEST(r.err.find("/dev/full: cannot write: No space left on device") != std::string::npos,
               r.err);
    BOOST_TEST(S_ISCHR(mode_of("/dev/full")));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cli_messages_name_the_file)

BOOST_AUTO_TEST_CASE(model_options_directory) {
    ScratchDir dir;
    expect_input_error(ppb({"fit", sample_dryrun, "--model-options", dir.path.string()}),
                       {"--model-options", dir.path.string(), "is a directory"});
}

BOOST_AUTO_TEST_CASE(model_options_empty_file) {
    const std::string file = write_file("", "empty-options.json");
    expect_input_error(ppb({"fit", sample_dryrun, "--model-options", file}),
                       {file, "the file is empty"});
}

BOOST_AUTO_TEST_CASE(model_option_errors_name_the_file) {
    const std::string file = write_file(R"({"rank_tolerance": -1})", "bad-options.json");
    expect_input_error(ppb({"fit", sample_dryrun, "--model-options", file}),
                       {file + ": ", "rank_tolerance"});
}

BOOST_AUTO_TEST_CASE(plugin_path_too_long) {
    const std::string long_path = "/tmp/" + std::string(5000, 'x');
    const auto r = ppb({"plugins", "--plugin-path", long_path});
    BOOST_TEST(r.err.find("path too long (") != std::string::npos, r.err);
    BOOST_TEST(r.err.find("the limit is PATH_MAX=4096") != std::string::npos, r.err);
    BOOST_TEST(r.err.find("does not exist") == std::string::npos, r.err);
    const auto component = ppb({"plugins", "--plugin-path", "/tmp/" + std::string(300, 'y')});
    BOOST_TEST(component.err.find("the limit is NAME_MAX=255") != std::string::npos, component.err);
}

BOOST_AUTO_TEST_CASE(unreadable_inputs_name_the_path) {
    ScratchDir dir;
    expect_input_error(ppb({"fit", dir.path.string()}),
                       {dir.path.string() + ": cannot read: Is a directory"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_output_tests
