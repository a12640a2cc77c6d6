#define BOOST_DLL_USE_STD_FS
#include <ppb/abi.h>
#include <ppb/discovery.hpp>
#include <ppb/errors.hpp>

#include "elf_check.hpp"

#include <fmt/format.h>
#include <boost/dll/library_info.hpp>

#include <algorithm>
#include <charconv>
#include <exception>
#include <map>
#include <system_error>

#include <sys/stat.h>

namespace ppb {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view file_prefix = "ppb-";
constexpr std::string_view file_suffix = ".so";

struct EntryPoint {
    std::string symbol;
    std::uint32_t abi_major = 0;
    std::uint32_t api_minor = 0;
};

// "ppb_memory_model_v1_0" -> {1, 0}; nullopt for other names.
std::optional<EntryPoint> parse_entry_point(const std::string& symbol) {
    const std::string_view prefix = PPB_ENTRY_PREFIX;
    if (symbol.rfind(prefix, 0) != 0)
        return std::nullopt;
    const char* p = symbol.data() + prefix.size();
    const char* end = symbol.data() + symbol.size();
    EntryPoint entry{symbol};
    auto r = std::from_chars(p, end, entry.abi_major);
    if (r.ec != std::errc{} || r.ptr == end || *r.ptr != '_')
        return std::nullopt;
    r = std::from_chars(r.ptr + 1, end, entry.api_minor);
    if (r.ec != std::errc{} || r.ptr != end)
        return std::nullopt;
    return entry;
}

std::string octal_mode(fs::perms p) {
    return fmt::format("{:04o}", static_cast<unsigned>(p) & 07777u);
}

// A loader must not run code that others could have replaced: refuse files, and directories,
// writable by others, except root-owned sticky directories (like /tmp) whose entries only their
// owners may replace.
std::optional<std::string> unsafe_permissions(const fs::path& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && (st.st_mode & S_IWOTH) != 0) {
        return fmt::format("the file is writable by others (mode {}): refusing to load it",
                           octal_mode(static_cast<fs::perms>(st.st_mode)));
    }
    const fs::path dir = file.parent_path();
    if (::stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IWOTH) != 0) {
        const bool sticky_root = (st.st_mode & S_ISVTX) != 0 && st.st_uid == 0;
        if (!sticky_root) {
            return fmt::format(
                "its directory {} is writable by others (mode {}): refusing to load from it",
                dir.string(), octal_mode(static_cast<fs::perms>(st.st_mode)));
        }
    }
    return std::nullopt;
}

// Name and version from "ppb-<name>-<MAJOR.MINOR.PATCH>.so".
bool parse_file_name(const std::string& file, PluginCandidate& out) {
    if (file.size() <= file_prefix.size() + file_suffix.size() || file.rfind(file_prefix, 0) != 0 ||
        file.compare(file.size() - file_suffix.size(), file_suffix.size(), file_suffix) != 0) {
        return false;
    }
    const std::string stem =
        file.substr(file_prefix.size(), file.size() - file_prefix.size() - file_suffix.size());
    const std::size_t dash = stem.rfind('-');
    if (dash == std::string::npos)
        return false;
    const std::string name = stem.substr(0, dash);
    const auto version = SemVer::parse(std::string_view(stem).substr(dash + 1));
    if (!version || !is_valid_plugin_name(name))
        return false;
    out.name = name;
    out.version = version;
    return true;
}

void judge(PluginCandidate& c) {
    if (!parse_file_name(c.path.filename().string(), c)) {
        c.verdict = Verdict::not_a_plugin;
        c.reason = "file name does not follow ppb-<name>-<MAJOR.MINOR.PATCH>.so";
        return;
    }
    if (auto why = unsafe_permissions(c.path)) {
        c.verdict = Verdict::refused;
        c.reason = *why;
        return;
    }
    const auto elf = detail::check_elf_file(c.path);
    if (elf.status == detail::ElfCheck::not_elf) {
        c.verdict = Verdict::not_a_plugin;
        c.reason = elf.reason;
        return;
    }
    if (elf.status == detail::ElfCheck::malformed) {
        c.verdict = Verdict::failed;
        c.reason = elf.reason;
        return;
    }
    std::vector<std::string> symbols;
    try {
        boost::dll::library_info info(c.path, true);
        symbols = info.symbols();
    } catch (const std::exception& e) {
        c.verdict = Verdict::failed;
        c.reason = std::string("cannot read the library's symbol table: ") + e.what();
        return;
    }
    std::vector<EntryPoint> entries;
    for (const auto& symbol : symbols) {
        if (auto entry = parse_entry_point(symbol))
            entries.push_back(*entry);
    }
    if (entries.empty()) {
        c.verdict = Verdict::not_a_plugin;
        c.reason = "a shared library without a " PPB_ENTRY_PREFIX
                   "<ABI>_<API> entry point: not a ppb memory-model plugin";
        return;
    }
    // A plugin may export one entry point per ABI major it supports; take ours.
    std::vector<EntryPoint> ours;
    std::copy_if(entries.begin(), entries.end(), std::back_inserter(ours),
                 [](const EntryPoint& e) { return e.abi_major == PPB_ABI_MAJOR; });
    if (ours.size() > 1) {
        c.verdict = Verdict::not_a_plugin;
        c.reason = fmt::format("exports {} entry points for plugin ABI {} ({} and {}): ambiguous",
                               ours.size(), PPB_ABI_MAJOR, ours[0].symbol, ours[1].symbol);
        return;
    }
    const EntryPoint entry = ours.empty() ? entries.front() : ours.front();
    c.entry_point = entry.symbol;
    c.abi_major = entry.abi_major;
    c.api_minor = entry.api_minor;
    if (entry.abi_major != PPB_ABI_MAJOR) {
        c.verdict = Verdict::incompatible;
        c.reason = fmt::format(
            "built for plugin ABI {} (API {}.{}, entry point {}); this ppb supports ABI {} only "
            "(plugin API {}.x, its own being {}.{}): rebuild the plugin against this ppb's headers",
            entry.abi_major, entry.abi_major, entry.api_minor, entry.symbol, PPB_ABI_MAJOR,
            PPB_ABI_MAJOR, PPB_ABI_MAJOR, PPB_API_MINOR);
        return;
    }
    if (entry.api_minor > PPB_API_MINOR) {
        // Fields are only ever appended: the host reads the part of the table it knows.
        c.verdict = Verdict::usable;
        c.reason = fmt::format("plugin API {}.{} > host {}.{}: fields beyond {}.{} not used",
                               entry.abi_major, entry.api_minor, PPB_ABI_MAJOR, PPB_API_MINOR,
                               PPB_ABI_MAJOR, PPB_API_MINOR);
        return;
    }
    c.verdict = Verdict::usable;
    c.reason = fmt::format("plugin API {}.{}", entry.abi_major, entry.api_minor);
}

}  // namespace

std::string_view verdict_name(Verdict verdict) noexcept {
    switch (verdict) {
        case Verdict::usable:
            return "usable";
        case Verdict::incompatible:
            return "incompatible";
        case Verdict::not_a_plugin:
            return "not-a-plugin";
        case Verdict::refused:
            return "refused";
        case Verdict::shadowed:
            return "shadowed";
        case Verdict::failed:
            return "failed";
    }
    return "unknown";
}

std::string plugin_file_name(std::string_view name, const SemVer& version) {
    return fmt::format("{}{}-{}{}", file_prefix, name, version.to_string(), file_suffix);
}

PluginCandidate inspect_plugin_file(const fs::path& path) {
    PluginCandidate c;
    c.path = path;
    judge(c);
    return c;
}

std::vector<PluginCandidate> discover_plugins(const SearchPath& search_path,
                                              const DiscoveryTrace& trace) {
    std::vector<PluginCandidate> out;
    for (std::size_t d = 0; d < search_path.dirs.size(); ++d) {
        const auto& dir = search_path.dirs[d];
        if (trace)
            trace(fmt::format("searching {} ({})", dir.path.string(), dir.origin));
        std::vector<fs::path> files;
        std::error_code ec;
        for (fs::directory_iterator it(dir.path, ec), end; !ec && it != end; it.increment(ec)) {
            const fs::path& p = it->path();
            if (p.extension() != file_suffix)
                continue;
            std::error_code type_ec;
            if (!fs::is_regular_file(it->status(type_ec)))
                continue;
            files.push_back(p);
        }
        if (ec && trace)
            trace(fmt::format("  cannot list {}: {}", dir.path.string(), ec.message()));
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            PluginCandidate c = inspect_plugin_file(file);
            c.search_index = d;
            if (trace) {
                trace(fmt::format("  {}: {} ({})", file.filename().string(),
                                  verdict_name(c.verdict), c.reason));
            }
            out.push_back(std::move(c));
        }
    }
    // Of two usable files with one name and version, the first on the search path wins.
    std::map<std::pair<std::string, SemVer>, const PluginCandidate*> first;
    for (auto& c : out) {
        if (c.verdict != Verdict::usable)
            continue;
        const auto [it, inserted] = first.try_emplace({c.name, *c.version}, &c);
        if (!inserted) {
            c.verdict = Verdict::shadowed;
            c.reason = "same name and version as " + it->second->path.string() +
                       ", which comes first on the search path";
            if (trace)
                trace(fmt::format("  {}: shadowed", c.path.string()));
        }
    }
    return out;
}

const PluginCandidate& select_plugin(const std::vector<PluginCandidate>& candidates,
                                     const ModelSpec& spec) {
    const PluginCandidate* best = nullptr;
    std::vector<const PluginCandidate*> same_name;
    for (const auto& c : candidates) {
        if (c.name != spec.name)
            continue;
        same_name.push_back(&c);
        if (c.verdict != Verdict::usable || !spec.pin.matches(*c.version))
            continue;
        if (best == nullptr || *best->version < *c.version)
            best = &c;
    }
    if (best != nullptr)
        return *best;

    std::string message;
    if (same_name.empty()) {
        std::vector<std::string> names;
        for (const auto& c : candidates) {
            if (c.verdict == Verdict::usable &&
                std::find(names.begin(), names.end(), c.name) == names.end()) {
                names.push_back(c.name);
            }
        }
        message = fmt::format("no memory-model plugin named '{}' was found", spec.name);
        message += names.empty() ? "; no usable plugin is installed"
                                 : fmt::format("; usable plugins: {}", fmt::join(names, ", "));
    } else {
        message = fmt::format("no usable plugin matches '{}'; found:", spec.to_string());
        for (const auto* c : same_name) {
            message += fmt::format("\n  {} {}: {} ({}) [{}]", c->name, c->version->to_string(),
                                   verdict_name(c->verdict), c->reason, c->path.string());
        }
    }
    message +=
        "\n(search path: --plugin-path, PPB_PLUGIN_PATH, the install location, then "
        "~/.local/lib/ppb/plugins; 'ppb plugins' lists every file)";
    throw PluginError(message);
}

}  // namespace ppb
