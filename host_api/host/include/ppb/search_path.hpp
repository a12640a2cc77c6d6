// ppb/search_path.hpp — where a host looks for plugins, in order.
//
//   1. each --plugin-path given explicitly,
//   2. each entry of PPB_PLUGIN_PATH (colon-separated),
//   3. the install location: <dir of the executable>/../lib/ppb/plugins, so an installed tree
//      can be moved anywhere, and the build tree (which mirrors it) runs without flags,
//   4. the user's plugins: $HOME/.local/lib/ppb/plugins, where `cmake --install ... --prefix
//      ~/.local` puts a plugin built out of tree (samples/plugin-template), so that every ppb of
//      the user finds it, a build tree's included. Last, so that an installed tree's own plugins
//      come first; skipped without a word when HOME is unset or the directory does not exist.
// Relative entries are resolved once, against the working directory, when the path is built.
#ifndef PPB_SEARCH_PATH_HPP
#define PPB_SEARCH_PATH_HPP

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ppb {

inline constexpr std::string_view plugin_path_variable = "PPB_PLUGIN_PATH";
inline constexpr std::string_view plugin_install_subdir = "lib/ppb/plugins";
inline constexpr std::string_view user_plugin_subdir = ".local/lib/ppb/plugins";  // under $HOME

struct SearchDir {
    std::filesystem::path path;  // absolute
    std::string origin;  // "--plugin-path", "PPB_PLUGIN_PATH", "install location" or "user plugins"
};

struct SearchPath {
    std::vector<SearchDir> dirs;
    // Entries that were skipped, one message each ("PPB_PLUGIN_PATH entry '/x' does not exist").
    std::vector<std::string> warnings;
};

// env_value: the value of PPB_PLUGIN_PATH, or nullptr when unset.
// executable: the running program's path; empty to leave out the install location. The user's
// plugins are found from the HOME of the environment.
[[nodiscard]] SearchPath make_search_path(const std::vector<std::string>& explicit_dirs,
                                          const char* env_value,
                                          const std::filesystem::path& executable);

// As make_search_path, for a host that is not an executable in <prefix>/bin (the Python module,
// which knows where its package sits in the prefix): the install location is the plugin
// directory `install_plugin_dir` itself (none when empty), and `explicit_origin` names the
// explicit entries in warnings ("plugin_path").
[[nodiscard]] SearchPath make_search_path_with_install_dir(
    const std::vector<std::string>& explicit_dirs, const char* env_value,
    const std::filesystem::path& install_plugin_dir,
    const std::string& explicit_origin = "--plugin-path");

// The absolute path of the running executable.
[[nodiscard]] std::filesystem::path current_executable();

}  // namespace ppb

#endif  // PPB_SEARCH_PATH_HPP
