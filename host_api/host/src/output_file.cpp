#include <ppb/errors.hpp>
#include <ppb/output_file.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ppb {
namespace fs = std::filesystem;
namespace {

std::string reason(int error) {
    return std::generic_category().message(error);
}

std::string cannot_write(const fs::path& path, const std::string& why) {
    return fmt::format("{}: cannot write: {}", path.string(), why);
}

// Writes all of `text` to `fd`; the errno of the failure, or 0.
int write_all(int fd, std::string_view text) {
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO;
        written += static_cast<std::size_t>(n);
    }
    return 0;
}

// "a directory", "a socket": what a file that ppb does not write to is.
std::string kind_of(mode_t mode) {
    if (S_ISDIR(mode))
        return "is a directory";
    if (S_ISSOCK(mode))
        return "is a socket (not a regular file, a FIFO or a character device)";
    if (S_ISBLK(mode))
        return "is a block device (not a regular file, a FIFO or a character device)";
    return "is not a regular file, a FIFO or a character device";
}

// A FIFO or a character device: opened and written in place, never replaced.
void write_through(const fs::path& path, std::string_view text) {
    int fd = -1;
    do {
        fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        throw OutputError(cannot_write(path, reason(errno)));
    const int error = write_all(fd, text);
    if (error != 0) {
        ::close(fd);
        throw OutputError(cannot_write(path, reason(error)));
    }
    if (::close(fd) != 0 && errno != EINTR)
        throw OutputError(cannot_write(path, reason(errno)));
}

// A regular file or a new path: a temporary file in the same directory, renamed over it.
void replace_atomically(const fs::path& shown, const fs::path& target, const struct stat* old,
                        std::string_view text) {
    const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
    const mode_t mode = old != nullptr ? (old->st_mode & 07777) : 0666;
    fs::path temporary;
    int fd = -1;
    for (int attempt = 0; fd < 0; ++attempt) {
        // Beside the file, named after it unless that name would be too long for the directory.
        std::string name = fmt::format(".{}.ppb-{}-{}.tmp", target.filename().string(),
                                       static_cast<long>(::getpid()), attempt);
        if (name.size() > NAME_MAX)
            name = fmt::format(".ppb-{}-{}.tmp", static_cast<long>(::getpid()), attempt);
        temporary = directory / name;
        fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0 && !(errno == EEXIST && attempt < 100) && errno != EINTR)
            throw OutputError(cannot_write(shown, reason(errno)));
    }
    const auto abandon = [&](int error) {
        ::close(fd);
        ::unlink(temporary.c_str());
        throw OutputError(cannot_write(shown, reason(error)));
    };
    if (const int error = write_all(fd, text); error != 0)
        abandon(error);
    if (old != nullptr) {
        // As before, whatever the umask; the owner too when allowed (as root).
        if (old->st_uid != ::geteuid() || old->st_gid != ::getegid())
            (void)::fchown(fd, old->st_uid, old->st_gid);
        (void)::fchmod(fd, mode);
    }
    if (::fsync(fd) != 0)
        abandon(errno);
    if (::close(fd) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw OutputError(cannot_write(shown, reason(error)));
    }
    if (::rename(temporary.c_str(), target.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw OutputError(cannot_write(shown, reason(error)));
    }
    // The rename itself to disk, as far as the file system allows.
    const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        (void)::fsync(dir);
        ::close(dir);
    }
}

}  // namespace

void write_stdout(std::string_view text) {
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
        const int error = errno != 0 ? errno : EIO;
        throw OutputError("cannot write to stdout: " + reason(error));
    }
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
        const int error = errno != 0 ? errno : EIO;
        throw OutputError("cannot write to stdout: " + reason(error));
    }
}

void write_output_file(const fs::path& path, std::string_view text) {
    if (path == "-") {
        write_stdout(text);
        return;
    }
    if (path.empty())
        throw InputError("cannot write: the file name is empty");
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0) {
        if (S_ISFIFO(info.st_mode) || S_ISCHR(info.st_mode)) {
            write_through(path, text);
            return;
        }
        if (!S_ISREG(info.st_mode))
            throw InputError(cannot_write(path, kind_of(info.st_mode)));
        fs::path target = path;
        std::error_code ec;
        if (fs::is_symlink(path, ec)) {
            target = fs::canonical(path, ec);  // replace the file the link points to
            if (ec)
                throw OutputError(cannot_write(path, ec.message()));
        }
        replace_atomically(path, target, &info, text);
        return;
    }
    const int error = errno;
    if (error != ENOENT)
        throw OutputError(cannot_write(path, reason(error)));
    std::error_code ec;
    if (fs::is_symlink(path, ec))  // a dangling link: say so rather than replace the link
        throw InputError(cannot_write(path, "a symbolic link to a missing file"));
    replace_atomically(path, path, nullptr, text);
}

}  // namespace ppb
