#include <ppb/search_path.hpp>

#include <climits>
#include <cstdlib>
#include <string>
#include <system_error>

#include <unistd.h>

namespace ppb {
namespace fs = std::filesystem;
namespace {

// Why `path` cannot be looked at: ENAMETOOLONG said with the limit that was exceeded.
std::string unusable_reason(const fs::path& path, const std::error_code& ec) {
    if (ec == std::errc::filename_too_long) {
        const std::size_t length = path.native().size();
        if (length >= PATH_MAX) {
            return "path too long (" + std::to_string(length) +
                   " bytes, the limit is PATH_MAX=" + std::to_string(PATH_MAX) + ")";
        }
        for (const auto& part : path) {
            if (part.native().size() > NAME_MAX) {
                return "a path component too long (" + std::to_string(part.native().size()) +
                       " bytes, the limit is NAME_MAX=" + std::to_string(NAME_MAX) + ")";
            }
        }
    }
    return ec.message();
}

void add_entry(SearchPath& out, std::string_view entry, const std::string& origin) {
    if (entry.empty())
        return;  // "a::b" and a trailing ':' mean nothing
    std::error_code ec;
    fs::path path = fs::absolute(fs::path(entry), ec);
    if (ec) {
        out.warnings.push_back(origin + " entry '" + std::string(entry) +
                               "' cannot be resolved: " + ec.message());
        return;
    }
    path = path.lexically_normal();
    const auto status = fs::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
        // An entry too long to use is shown shortened.
        const std::string shown = entry.size() <= 200
                                      ? std::string(entry)
                                      : std::string(entry.substr(0, 100)) + "..." +
                                            std::string(entry.substr(entry.size() - 40));
        out.warnings.push_back(origin + " entry '" + shown +
                               "' cannot be used: " + unusable_reason(path, ec));
        return;
    }
    if (!fs::exists(status)) {
        out.warnings.push_back(origin + " entry '" + std::string(entry) + "' does not exist");
        return;
    }
    if (!fs::is_directory(status)) {
        out.warnings.push_back(origin + " entry '" + std::string(entry) + "' is not a directory");
        return;
    }
    for (const auto& dir : out.dirs) {
        if (fs::equivalent(dir.path, path, ec))
            return;  // already searched earlier
    }
    out.dirs.push_back(SearchDir{path, origin});
}

}  // namespace

SearchPath make_search_path_with_install_dir(const std::vector<std::string>& explicit_dirs,
                                             const char* env_value,
                                             const fs::path& install_plugin_dir,
                                             const std::string& explicit_origin) {
    SearchPath out;
    for (const auto& dir : explicit_dirs)
        add_entry(out, dir, explicit_origin);
    if (env_value != nullptr) {
        const std::string_view env(env_value);
        std::size_t start = 0;
        while (start <= env.size()) {
            const std::size_t colon = env.find(':', start);
            const std::size_t end = colon == std::string_view::npos ? env.size() : colon;
            add_entry(out, env.substr(start, end - start), std::string(plugin_path_variable));
            start = end + 1;
        }
    }
    if (!install_plugin_dir.empty()) {
        const fs::path install = install_plugin_dir.lexically_normal();
        std::error_code ec;
        // The install location is not an error when absent (a host built elsewhere).
        if (fs::is_directory(install, ec))
            add_entry(out, install.string(), "install location");
    }
    // Nor is the user's directory: most users have none. When it is the install location (ppb
    // itself installed into ~/.local), it is searched once, as the install location.
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
        const fs::path user = fs::path(home) / fs::path(user_plugin_subdir);
        std::error_code ec;
        if (fs::is_directory(user, ec))
            add_entry(out, user.string(), "user plugins");
    }
    return out;
}

SearchPath make_search_path(const std::vector<std::string>& explicit_dirs, const char* env_value,
                            const fs::path& executable) {
    const fs::path install =
        executable.empty() ? fs::path()
                           : executable.parent_path() / ".." / fs::path(plugin_install_subdir);
    return make_search_path_with_install_dir(explicit_dirs, env_value, install);
}

fs::path current_executable() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec)
        return {};
    return exe;
}

}  // namespace ppb
