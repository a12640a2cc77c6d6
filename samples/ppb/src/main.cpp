// ppb — the reference host: a command-line front end to ppb's memory-model plugins.
//
// Exit statuses (host_api/docs/design.md, "In-flight micro-batch counts per schedule"): 0 success,
// 1 anything unexpected, 2 invalid input or usage, 3 no usable plugin / plugin failed to load /
// plugin failed while running, 4 no feasible partition. Results go to stdout only on success;
// diagnostics always go to stderr. A result that cannot be written (stdout or an output file full,
// closed, failing) is exit status 1 with a message naming where it went, never a silent 0.
#include "cli.hpp"

#include <ppb/errors.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/partition/problem.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <system_error>

namespace {

constexpr int exit_other = 1;
constexpr int exit_input = 2;
constexpr int exit_plugin = 3;
constexpr int exit_infeasible = 4;

// Whatever is still buffered for stdout, written and stdout closed: a failure there loses
// results, so it is an error (exit 1) even when the command succeeded. After a failure the
// failure has been told already.
int close_stdout(int status) {
    if (status != 0) {
        (void)std::fclose(stdout);
        return status;
    }
    errno = 0;
    const bool failed_before = std::ferror(stdout) != 0;
    const bool flushed = std::fflush(stdout) == 0;
    int error = errno;
    const bool closed = std::fclose(stdout) == 0;
    if (error == 0)
        error = errno;
    if (failed_before || !flushed || !closed) {
        fmt::print(stderr, "ppb: error: cannot write to stdout: {}\n",
                   std::generic_category().message(error != 0 ? error : EIO));
        return exit_other;
    }
    return status;
}

int run(int argc, char** argv) {
    try {
        return ppb::cli::run(argc, argv);
    } catch (const ppb::cli::OutputError& e) {
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return exit_other;
    } catch (const ppb::cli::UsageError& e) {
        fmt::print(stderr, "ppb: error: {}\nTry '{} --help'.\n", e.what(), e.command());
        return exit_input;
    } catch (const ppb::InputError& e) {
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return exit_input;
    } catch (const ppb::PluginError& e) {
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return exit_plugin;
    } catch (const ppb::ModelError& e) {
        // The model refused the user's data (invalid or not determining the answer): the input
        // is at fault. Anything else is the plugin's failure.
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return e.is_input_error() ? exit_input : exit_plugin;
    } catch (const ppb::partition::Infeasible& e) {
        fmt::print(stderr, "ppb: error: {}\n", e.what());
        return exit_infeasible;
    } catch (const std::exception& e) {
        fmt::print(stderr, "ppb: internal error: {}\n", e.what());
        return exit_other;
    }
}

}  // namespace

int main(int argc, char** argv) {
    return close_stdout(run(argc, argv));
}
