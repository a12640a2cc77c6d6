// ppb/loader.hpp — loading a plugin file and checking its table before use.
#ifndef PPB_LOADER_HPP
#define PPB_LOADER_HPP

#include <ppb/abi.h>
#include <ppb/discovery.hpp>
#include <ppb/memory_model.hpp>

#include <memory>
#include <string_view>

namespace ppb {

// Loads the library of a usable candidate and returns its function table. The shared_ptr
// shares ownership with the loaded library: the library stays mapped while the table, or any
// MemoryModel made from it, lives. Throws ppb::PluginError (exit status 3) with the dynamic
// loader's own message, or with what is wrong with the table (version mismatch, a name or version
// that disagrees with the file name, a missing function).
[[nodiscard]] std::shared_ptr<const ppb_memory_model_api> load_plugin(
    const PluginCandidate& candidate);

// Loads the candidate and creates a model with the given options.
[[nodiscard]] MemoryModel open_model(const PluginCandidate& candidate,
                                     std::string_view options_json = "{}");

}  // namespace ppb

#endif  // PPB_LOADER_HPP
