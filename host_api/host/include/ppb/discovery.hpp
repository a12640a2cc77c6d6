// ppb/discovery.hpp — finding plugin files and judging them without running their code.
//
// Everything here reads files; nothing loads them. The file name gives the plugin's name and
// version (ppb-<name>-<MAJOR.MINOR.PATCH>.so), the exported entry point's *name* gives the ABI
// major and API minor it was built for (ppb/abi.h), and the ELF symbol table is read with
// boost::dll::library_info, which reads names, never values. A plugin whose static
// initialisation would crash is therefore still listed. Loading (ppb/loader.hpp) later confirms
// that the plugin's own manifest matches.
#ifndef PPB_DISCOVERY_HPP
#define PPB_DISCOVERY_HPP

#include <ppb/search_path.hpp>
#include <ppb/semver.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb {

enum class Verdict {
    usable,        // compatible, may be selected
    incompatible,  // another ABI major, or a newer API minor than this host's
    not_a_plugin,  // not a library, no entry point, or a file name ppb does not understand
    refused,       // unsafe permissions: writable by others
    shadowed,      // same name and version as a usable file earlier on the search path
    failed,        // a library that could not be read or (with a check) loaded
};

[[nodiscard]] std::string_view verdict_name(Verdict verdict) noexcept;

struct PluginCandidate {
    std::filesystem::path path;
    std::string name;               // from the file name ("" when it does not follow the scheme)
    std::optional<SemVer> version;  // from the file name
    std::string entry_point;        // the ppb_memory_model_v<M>_<m> symbol found, if any
    std::uint32_t abi_major = 0;    // from the entry point's name
    std::uint32_t api_minor = 0;
    Verdict verdict = Verdict::not_a_plugin;
    std::string reason;
    std::size_t search_index = 0;  // index of its directory in the search path
};

// Plugin file name for a name and version: "ppb-<name>-<version>.so".
[[nodiscard]] std::string plugin_file_name(std::string_view name, const SemVer& version);

// Optional trace of each discovery step (PPB_DEBUG_PLUGINS), one line per call.
using DiscoveryTrace = std::function<void(const std::string&)>;

// Every *.so file in the search path's directories (not recursive; each directory in name
// order), judged. Never throws for a bad file: a bad file gets a verdict and a reason.
[[nodiscard]] std::vector<PluginCandidate> discover_plugins(const SearchPath& search_path,
                                                            const DiscoveryTrace& trace = {});

// Judges one file as discover_plugins does (without shadowing, which needs the whole list).
[[nodiscard]] PluginCandidate inspect_plugin_file(const std::filesystem::path& path);

// The usable candidate that `spec` selects: the highest version matching the pin. Throws
// ppb::PluginError (exit status 3) when there is none, saying what is installed instead.
[[nodiscard]] const PluginCandidate& select_plugin(const std::vector<PluginCandidate>& candidates,
                                                   const ModelSpec& spec);

}  // namespace ppb

#endif  // PPB_DISCOVERY_HPP
