#include <ppb/process.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ppb {
namespace {

// A file descriptor closed when it goes out of scope.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    [[nodiscard]] int get() const noexcept { return fd_; }
    void reset() noexcept {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = -1;
    }

  private:
    int fd_ = -1;
};

[[noreturn]] void fail(int error, const std::string& what) {
    throw std::system_error(error, std::generic_category(), what);
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

// The child's standard input: an in-memory file holding `text`, read from its start. A file,
// not a pipe, so that a child that does not read it neither blocks nor signals this process.
int stdin_file(const std::string& text) {
    const int fd = ::memfd_create("ppb-stdin", MFD_CLOEXEC);
    if (fd < 0)
        fail(errno, "cannot create the child's standard input");
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            const int error = errno;
            ::close(fd);
            fail(error, "cannot write the child's standard input");
        }
        done += static_cast<std::size_t>(n);
    }
    ::lseek(fd, 0, SEEK_SET);
    return fd;
}

std::vector<std::string> environment(const std::map<std::string, std::string>& changes) {
    std::vector<std::string> out;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry = *e;
        if (changes.count(std::string(entry.substr(0, entry.find('=')))) == 0)
            out.emplace_back(entry);
    }
    for (const auto& [key, value] : changes) {
        if (!value.empty())
            out.push_back(key + "=" + value);
    }
    return out;
}

std::vector<char*> pointers(std::vector<std::string>& words) {
    std::vector<char*> out;
    for (auto& w : words)
        out.push_back(w.data());
    out.push_back(nullptr);
    return out;
}

}  // namespace

std::string signal_text(int signal) {
    const char* name = sigabbrev_np(signal);
    return name != nullptr ? fmt::format("signal {}, SIG{}", signal, name)
                           : fmt::format("signal {}", signal);
}

ProcessResult run_process(const std::filesystem::path& program,
                          const std::vector<std::string>& args, const ProcessOptions& options) {
    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0)
        fail(errno, "cannot create a pipe");
    Fd out_read(out_pipe[0]);
    Fd out_write(out_pipe[1]);
    if (::pipe2(err_pipe, O_CLOEXEC) != 0)
        fail(errno, "cannot create a pipe");
    Fd err_read(err_pipe[0]);
    Fd err_write(err_pipe[1]);
    const Fd input(stdin_file(options.stdin_text));

    std::vector<std::string> words = {program.string()};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<std::string> env = environment(options.env);
    const auto argv = pointers(words);
    const auto envp = pointers(env);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, input.get(), 0);
    posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
    if (!options.working_directory.empty()) {
        posix_spawn_file_actions_addchdir_np(&actions, options.working_directory.c_str());
    }
    pid_t pid = 0;
    const int rc =
        ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    out_write.reset();
    err_write.reset();
    if (rc != 0)
        fail(rc, fmt::format("cannot start {}", program.string()));

    ProcessResult result;
    bool out_open = true;
    bool err_open = true;
    const auto deadline = options.timeout ? std::chrono::steady_clock::now() + *options.timeout
                                          : std::chrono::steady_clock::time_point::max();
    while (out_open || err_open) {
        int wait_ms = -1;
        if (options.timeout) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
                result.timed_out = true;
                ::kill(pid, SIGKILL);
                break;
            }
            wait_ms = static_cast<int>(left.count());
        }
        pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
        if (!out_open)
            fds[0].fd = -1;
        if (!err_open)
            fds[1].fd = -1;
        if (::poll(fds, 2, wait_ms) < 0 && errno != EINTR)
            break;
        if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
            out_open = drain(out_read.get(), result.out);
        if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
            err_open = drain(err_read.get(), result.err);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status))
        result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        result.signal = WTERMSIG(status);
    return result;
}

}  // namespace ppb
