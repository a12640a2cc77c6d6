// Memory snapshot file names (ppb/importers/snapshot_files.hpp).
#include <ppb/importers/snapshot_files.hpp>

#include <ppb/errors.hpp>
#include <ppb/importers/logs.hpp>

#include <fmt/format.h>

#include <charconv>
#include <string_view>

namespace ppb::importers {
namespace fs = std::filesystem;
namespace {

// `digits` as a number when it is one (only digits, in range).
template <typename Number>
std::optional<Number> number_of(std::string_view digits) {
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    Number value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size())
        return std::nullopt;
    return value;
}

// The digits at the end of `text` after `marker` ("..._oom_rank_" then "3"), when text ends so.
std::optional<std::uint32_t> number_after(std::string_view text, std::string_view marker) {
    const std::size_t at = text.rfind(marker);
    if (at == std::string_view::npos)
        return std::nullopt;
    return number_of<std::uint32_t>(text.substr(at + marker.size()));
}

// A step directory: step_<n> and iteration_<n> (torchtitan), with "_exit" for the dump of an
// out-of-memory error.
bool read_step_directory(std::string_view name, SnapshotName& out) {
    for (const std::string_view prefix : {"step_", "iteration_"}) {
        if (!name.starts_with(prefix))
            continue;
        std::string_view rest = name.substr(prefix.size());
        const bool exit = rest.ends_with("_exit");
        if (exit)
            rest.remove_suffix(5);
        if (const auto step = number_of<std::uint64_t>(rest)) {
            out.step = step;
            out.out_of_memory = out.out_of_memory || exit;
            return true;
        }
    }
    return false;
}

}  // namespace

SnapshotName snapshot_name(const fs::path& path) {
    SnapshotName out;
    const std::string stem = path.stem().string();
    const std::string_view s = stem;
    std::optional<std::uint32_t> from_file;
    if (const std::size_t at = s.find("_step_"); at != std::string_view::npos &&
                                                 number_of<std::uint32_t>(s.substr(0, at)) &&
                                                 number_of<std::uint64_t>(s.substr(at + 6))) {
        // torchtitan: <rank, 6 digits>_step_<step>
        from_file = number_of<std::uint32_t>(s.substr(0, at));
        out.step = number_of<std::uint64_t>(s.substr(at + 6));
    } else if (s.starts_with("rank") && s.ends_with("_memory_snapshot")) {
        // torchtitan before b2cd149f6: rank<rank>_memory_snapshot
        from_file = number_of<std::uint32_t>(s.substr(4, s.size() - 4 - 16));
    } else if (const auto oom = s.rfind("oom_rank");
               oom != std::string_view::npos && (oom == 0 || s[oom - 1] == '_') &&
               oom + 9 <= s.size() && (s[oom + 8] == '_' || s[oom + 8] == '-')) {
        // Megatron-LM's out-of-memory dump: <base>_oom_rank_<rank> (or _oom_rank-<rank>)
        from_file = number_of<std::uint32_t>(s.substr(oom + 9));
        out.out_of_memory = from_file.has_value();
    } else {
        // Megatron-LM: <base>_<rank>; also rank_<id>
        from_file = number_after(s, "_");
    }

    for (fs::path dir = path.parent_path(); !dir.empty() && dir != dir.parent_path();
         dir = dir.parent_path()) {
        if (read_step_directory(dir.filename().string(), out))
            break;
    }
    // A directory rank_<id>, as for logs.
    std::optional<std::uint32_t> from_directory;
    for (fs::path dir = path.parent_path(); !dir.empty() && dir != dir.parent_path();
         dir = dir.parent_path()) {
        const std::string name = dir.filename().string();
        if (name.starts_with("rank_")) {
            from_directory = number_of<std::uint32_t>(std::string_view(name).substr(5));
            if (from_directory)
                break;
        }
    }
    if (from_file && from_directory && *from_file != *from_directory) {
        throw InputError(fmt::format(
            "{}: the path names two ranks, {} (directory) and {} (file name); say which with "
            "--rank {}=ID",
            path.string(), *from_directory, *from_file, path.string()));
    }
    out.rank = from_file ? from_file : from_directory;
    return out;
}

bool looks_like_snapshot(const fs::path& path) {
    const std::string extension = path.extension().string();
    return (extension == ".pickle" || extension == ".pkl") && path.stem() != "";
}

}  // namespace ppb::importers
