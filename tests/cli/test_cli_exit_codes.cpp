// Exit statuses exactly as host_api/docs/commands.md documents them, for every command: a result
// that cannot be written exits 1 with a message naming where it was going (stdout full, an output
// file on a full device, a file ppb may not write, a directory that does not exist), nothing is
// written half, and a path ppb refuses to write over (a directory) is a usage mistake, 2.
#include "cli_fixture.hpp"

#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

using namespace ppb_test;
namespace fs = std::filesystem;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_exit_codes_tests {

namespace {

const std::string samples = PPB_SAMPLES_DIR;
const std::string init_yaml = samples + "/import/sapp/init_pp4.yaml";

std::vector<std::string> partition_args(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"partition", "--model-desc",      layers_file,
                                     "--dryrun",  sample_dryrun,       "--stages",
                                     "8",         "--memory-limit-mb", "30000"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

std::vector<std::string> search_args(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {
        "search",      "--model-desc",      layers_file, "--dryrun",
        sample_dryrun, "--tensor-parallel", "8",         "--pipeline-degrees",
        "4,8",         "--global-batch",    "64",        "--memory-limit-mb",
        "40000",       "--schedules",       "1f1b",      "--progress",
        "never"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

std::vector<std::string> megatron_options_args(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"import", "megatron-options", "--world-size", "8"};
    args.insert(args.end(), more.begin(), more.end());
    for (const char* a : {"--",    "--num-layers",
                          "12",    "--hidden-size",
                          "512",   "--num-attention-heads",
                          "8",     "--seq-length",
                          "1024",  "--max-position-embeddings",
                          "1024",  "--micro-batch-size",
                          "4",     "--global-batch-size",
                          "32",    "--vocab-size",
                          "50304", "--tensor-model-parallel-size",
                          "1",     "--pipeline-model-parallel-size",
                          "2",     "--transformer-impl",
                          "local", "--bf16"})
        args.emplace_back(a);
    return args;
}

// A plan file for `ppb simulate`.
const std::string& plan_file() {
    static const std::string file = [] {
        const auto r = ppb(partition_args({"--json"}));
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
        return write_file(r.out, "plan.json");
    }();
    return file;
}

// One successful run of every command and subcommand, each writing its result to stdout.
std::vector<std::vector<std::string>> every_command() {
    return {
        {"--help"},
        {"--version"},
        {"help"},
        {"plugins"},
        {"plugins", "--json"},
        {"plugins", "--check"},
        {"fit", sample_dryrun},
        {"fit", sample_dryrun, "--json"},
        {"predict", sample_dryrun, "--stage", "1", "--layers", "none=4"},
        partition_args(),
        partition_args({"--json"}),
        search_args(),
        {"simulate", plan_file()},
        {"simulate", plan_file(), "--json"},
        {"compare", sample_dryrun, "--model", "dryrun-lsq"},
        {"import", "sapp", init_yaml},
        {"import", "mindspore", "--config", samples + "/import/mindspore/llama13b_pp4_a.yaml",
         samples + "/import/mindspore/run_a"},
        megatron_options_args(),
        {"design", "--stages", "4", "--num-layers", "8"},
    };
}

// `words` run by the shell with stdout on /dev/full.
ProcessResult ppb_to_full(const std::vector<std::string>& words) {
    std::string command = fmt::format("exec '{}'", PPB_EXE);
    for (const auto& w : words)
        command += " '" + w + "'";
    command += " > /dev/full";
    return run_process("/bin/sh", {"-c", command}, {{"PPB_PLUGIN_PATH", ""}});
}

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words)
        out += (out.empty() ? "" : " ") + w;
    return out;
}

// Exit status `code`, nothing on stdout, and `line` a whole line of stderr.
void expect_exit(const ProcessResult& r, int code, const std::string& line) {
    BOOST_TEST(r.exit_code == code, "exit status " << r.exit_code << ", stderr: " << r.err);
    BOOST_TEST(r.out.empty(), r.out);
    BOOST_TEST(("\n" + r.err).find("\n" + line + "\n") != std::string::npos,
               "stderr lacks '" << line << "': " << r.err);
}

// A directory under /tmp that an unprivileged user can read but not write.
struct ReadOnlyDir {
    fs::path path = fs::temp_directory_path() / fmt::format("ppb-exit-codes-{}", ::getpid());
    ReadOnlyDir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    void seal() const { ::chmod(path.c_str(), 0555); }
    ~ReadOnlyDir() {
        ::chmod(path.c_str(), 0755);
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_exit_codes)

BOOST_AUTO_TEST_CASE(every_command_exits_1_when_stdout_is_full) {
    for (const auto& words : every_command()) {
        BOOST_TEST_CONTEXT(joined(words)) {
            const auto ok = ppb(words);
            BOOST_TEST_REQUIRE(ok.exit_code == 0, ok.err);
            BOOST_TEST(!ok.out.empty());
            expect_exit(ppb_to_full(words), 1,
                        "ppb: error: cannot write to stdout: No space left on device");
        }
    }
}

BOOST_AUTO_TEST_CASE(every_output_file_on_a_full_device_exits_1) {
    const std::vector<std::vector<std::string>> commands = {
        partition_args({"--report", "/dev/full"}),
        partition_args({"--timeline", "/dev/full"}),
        search_args({"--report", "/dev/full"}),
        {"simulate", plan_file(), "--timeline", "/dev/full"},
        {"fit", sample_dryrun, "--export-sapp", "/dev/full"},
        {"import", "sapp", init_yaml, "-o", "/dev/full"},
        {"import", "mindspore", "--config", samples + "/import/mindspore/llama13b_pp4_a.yaml",
         samples + "/import/mindspore/run_a", "-o", "/dev/full"},
        megatron_options_args({"-o", "/dev/full"}),
    };
    for (const auto& words : commands) {
        BOOST_TEST_CONTEXT(joined(words)) {
            const auto r = ppb(words);
            expect_exit(r, 1, "ppb: error: /dev/full: cannot write: No space left on device");
        }
    }
}

BOOST_AUTO_TEST_CASE(an_output_in_a_missing_directory_exits_1) {
    const std::string missing =
        (fs::temp_directory_path() / fmt::format("ppb-no-such-dir-{}", ::getpid()) / "out.json")
            .string();
    for (const auto& words :
         std::vector<std::vector<std::string>>{{"import", "sapp", init_yaml, "-o", missing},
                                               partition_args({"--report", missing}),
                                               partition_args({"--timeline", missing}),
                                               {"fit", sample_dryrun, "--export-sapp", missing},
                                               {"simulate", plan_file(), "--timeline", missing}}) {
        BOOST_TEST_CONTEXT(joined(words)) {
            expect_exit(ppb(words), 1,
                        "ppb: error: " + missing + ": cannot write: No such file or directory");
        }
    }
    BOOST_TEST(!fs::exists(fs::path(missing).parent_path()));
}

// --append to a dry-run file ppb may read but not replace (its directory is not writable): exit
// 1, the file as it was. Root writes anywhere, so as root ppb runs as the unprivileged user
// 'nobody' (util-linux's setpriv), from a copy of the binary that user can reach.
BOOST_AUTO_TEST_CASE(append_to_a_file_ppb_may_not_write_exits_1) {
    ReadOnlyDir dir;
    const fs::path exe = dir.path / "ppb";
    fs::copy_file(PPB_EXE, exe);
    const fs::path yaml = dir.path / "init.yaml";
    fs::copy_file(init_yaml, yaml);
    const fs::path dryrun = dir.path / "dryrun.json";
    const auto first = ppb({"import", "sapp", yaml.string(), "-o", dryrun.string()});
    BOOST_TEST_REQUIRE(first.exit_code == 0, first.err);
    std::ifstream in(dryrun);
    const std::string before((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    ::chmod(dryrun.c_str(), 0644);
    dir.seal();
    const std::vector<std::string> args = {
        "import", "sapp", yaml.string(), "--append", dryrun.string(), "--label", "B"};
    ProcessResult r;
    if (::geteuid() == 0) {
        std::vector<std::string> as_nobody = {"--reuid=65534", "--regid=65534", "--clear-groups",
                                              exe.string()};
        as_nobody.insert(as_nobody.end(), args.begin(), args.end());
        r = run_process("/usr/bin/setpriv", as_nobody, {{"PPB_PLUGIN_PATH", ""}});
    } else {
        r = run_process(exe.string(), args, {{"PPB_PLUGIN_PATH", ""}});
    }
    expect_exit(r, 1, "ppb: error: " + dryrun.string() + ": cannot write: Permission denied");
    std::ifstream again(dryrun);
    const std::string after((std::istreambuf_iterator<char>(again)),
                            std::istreambuf_iterator<char>());
    BOOST_TEST(after == before);
}

// What ppb refuses to write over is the command line's mistake (commands.md: exit 2).
BOOST_AUTO_TEST_CASE(an_output_over_a_directory_exits_2) {
    const std::string dir = fs::temp_directory_path().string();
    expect_exit(ppb({"import", "sapp", init_yaml, "-o", dir}), 2,
                "ppb: error: " + dir + ": cannot write: is a directory");
    expect_exit(ppb(partition_args({"--report", dir})), 2,
                "ppb: error: " + dir + ": cannot write: is a directory");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_exit_codes_tests
