#define BOOST_DLL_USE_STD_FS
#include <ppb/errors.hpp>
#include <ppb/loader.hpp>

#include <fmt/format.h>
#include <boost/dll/shared_library.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

namespace ppb {
namespace {

// A plugin built for API 1.0 has at least the table of 1.0; newer fields are read only when
// its api_minor and struct_size say they are there.
constexpr std::size_t minimum_table_size = PPB_API_1_0_TABLE_SIZE;

// The bytes a table claiming API <major>.`minor` must have. A minor newer than this host's
// appends to the table this host knows, so it has at least all of it.
constexpr std::size_t table_size_of_minor(std::uint32_t minor) noexcept {
    static_assert(PPB_API_MINOR == 4, "give the table size of the new API minor here");
    switch (minor) {
        case 0:
            return PPB_API_1_0_TABLE_SIZE;
        case 1:
            return PPB_API_1_1_TABLE_SIZE;
        case 2:
            return PPB_API_1_2_TABLE_SIZE;
        case 3:
            return PPB_API_1_3_TABLE_SIZE;
        case 4:
            return PPB_API_1_4_TABLE_SIZE;
        default:
            return sizeof(ppb_memory_model_api);
    }
}

std::string describe(const PluginCandidate& c) {
    return fmt::format("plugin '{}' {} ({})", c.name, c.version ? c.version->to_string() : "?",
                       c.path.string());
}

// Boost.DLL wraps the dynamic loader's own words ("... (dlerror system message: X): ...");
// X is what the user needs.
std::string loader_message(const std::string& what) {
    constexpr std::string_view marker = "dlerror system message: ";
    const std::size_t start = what.find(marker);
    if (start == std::string::npos)
        return what;
    const std::size_t end = what.rfind("): ");
    const std::size_t from = start + marker.size();
    return what.substr(from,
                       end != std::string::npos && end > from ? end - from : std::string::npos);
}

void check_table(const PluginCandidate& c, const ppb_memory_model_api* t) {
    const auto fail = [&](const std::string& what) {
        throw PluginError(describe(c) + ": " + what);
    };
    if (t == nullptr)
        fail("its entry point " + c.entry_point + " is a null pointer");
    if (t->struct_size < minimum_table_size) {
        fail(fmt::format("its function table is {} bytes, smaller than the {} bytes of API {}.0",
                         t->struct_size, minimum_table_size, PPB_ABI_MAJOR));
    }
    if (t->abi_major != c.abi_major || t->api_minor != c.api_minor) {
        fail(fmt::format("its table says plugin API {}.{} but its entry point {} says {}.{}",
                         t->abi_major, t->api_minor, c.entry_point, c.abi_major, c.api_minor));
    }
    if (const std::size_t needed = table_size_of_minor(t->api_minor); t->struct_size < needed) {
        fail(fmt::format(
            "its function table is {} bytes, smaller than the {} bytes that API {}.{} (which it "
            "claims) needs{}",
            t->struct_size, needed, t->abi_major, t->api_minor,
            t->api_minor > PPB_API_MINOR
                ? fmt::format(" (all of this ppb's API {}.{} table)", PPB_ABI_MAJOR, PPB_API_MINOR)
                : std::string()));
    }
    if (t->name == nullptr || t->version == nullptr)
        fail("its table has no name or version");
    if (c.name != t->name || c.version->to_string() != t->version) {
        fail(fmt::format("the file name says '{}' {} but the plugin says '{}' {}", c.name,
                         c.version->to_string(), t->name, t->version));
    }
    if (t->create == nullptr)
        fail("its table has no create function (missing factory)");
    const std::pair<const void*, const char*> required[] = {
        {reinterpret_cast<const void*>(t->destroy), "destroy"},
        {reinterpret_cast<const void*>(t->fit), "fit"},
        {reinterpret_cast<const void*>(t->predict), "predict"},
        {reinterpret_cast<const void*>(t->predict_batch), "predict_batch"},
        {reinterpret_cast<const void*>(t->parameters), "parameters"},
        {reinterpret_cast<const void*>(t->report), "report"},
        {reinterpret_cast<const void*>(t->last_error), "last_error"},
    };
    for (const auto& [fn, name] : required) {
        if (fn == nullptr)
            fail(std::string("its table has no ") + name + " function");
    }
    if ((t->kinds & ~PPB_ALL_KINDS) != 0 || t->kinds == 0) {
        fail(fmt::format("its recompute-kind mask {:#x} is invalid", t->kinds));
    }
}

}  // namespace

std::shared_ptr<const ppb_memory_model_api> load_plugin(const PluginCandidate& candidate) {
    if (candidate.verdict != Verdict::usable) {
        throw PluginError(fmt::format("{} is {}: {}", describe(candidate),
                                      verdict_name(candidate.verdict), candidate.reason));
    }
    std::shared_ptr<boost::dll::shared_library> library;
    try {
        // rtld_now: an unresolved symbol is reported now, by the dynamic loader, not as a crash
        // in the middle of a fit. rtld_local: plugins do not see each other's symbols.
        library = std::make_shared<boost::dll::shared_library>(
            candidate.path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
        throw PluginError(describe(candidate) + ": cannot load it: " + loader_message(e.what()));
    }
    if (!library->has(candidate.entry_point)) {
        throw PluginError(describe(candidate) + ": the loaded library has no " +
                          candidate.entry_point);
    }
    const void* address = library->get<const void*>(candidate.entry_point);
    const auto* table = static_cast<const ppb_memory_model_api*>(address);
    check_table(candidate, table);
    // Aliasing constructor: the table pointer keeps the library loaded.
    return std::shared_ptr<const ppb_memory_model_api>(std::move(library), table);
}

MemoryModel open_model(const PluginCandidate& candidate, std::string_view options_json) {
    return MemoryModel(load_plugin(candidate), options_json);
}

}  // namespace ppb
