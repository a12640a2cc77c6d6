#include <ppb/plugin_check.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ppb {
namespace {

std::string signal_text(int sig) {
    const char* name = sigabbrev_np(sig);
    return name != nullptr ? fmt::format("signal {}, SIG{}", sig, name)
                           : fmt::format("signal {}", sig);
}

// Reads what is available on `fd` into `out`; false at end of file.
bool drain(int fd, std::string& out) {
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
        out.append(buffer, static_cast<std::size_t>(n));
        return true;
    }
    return n < 0 && (errno == EINTR || errno == EAGAIN);
}

std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

}  // namespace

PluginCheck check_in_child(const PluginCandidate& candidate, const std::filesystem::path& probe,
                           const std::vector<std::string>& probe_args,
                           std::chrono::milliseconds timeout) {
    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0)
        return {false, "cannot create a pipe", {}};
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        return {false, "cannot create a pipe", {}};
    }
    std::vector<std::string> words = {probe.string()};
    words.insert(words.end(), probe_args.begin(), probe_args.end());
    words.push_back(candidate.path.string());
    std::vector<char*> argv;
    for (auto& w : words)
        argv.push_back(w.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, probe.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        return {false, fmt::format("cannot start {}: {}", probe.string(), std::strerror(rc)), {}};
    }

    std::string out;
    std::string err;
    bool out_open = true;
    bool err_open = true;
    bool timed_out = false;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out_open || err_open) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
        if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR)
            break;
        if (out_open && (fds[0].revents & (POLLIN | POLLHUP)) != 0)
            out_open = drain(out_pipe[0], out);
        if (err_open && (fds[1].revents & (POLLIN | POLLHUP)) != 0)
            err_open = drain(err_pipe[0], err);
    }
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }

    if (timed_out) {
        return {false,
                fmt::format("loading it did not finish within {} ms; the child was killed",
                            timeout.count()),
                {}};
    }
    if (WIFSIGNALED(status)) {
        return {false,
                fmt::format("loading it crashed the process that loaded it ({})",
                            signal_text(WTERMSIG(status))),
                {}};
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return {true, {}, out};
    std::string why = trimmed(err);
    constexpr std::string_view prefix = "ppb: error: ";
    if (why.rfind(prefix, 0) == 0)
        why.erase(0, prefix.size());
    if (why.empty())
        why = fmt::format("the loading process exited with status {}", WEXITSTATUS(status));
    return {false, why, {}};
}

}  // namespace ppb
