#include <ppb/importers/logs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <system_error>
#include <utility>

namespace ppb::importers {
namespace fs = std::filesystem;
namespace {

// `text` is "<prefix><digits><suffix>" with digits a uint32: the number.
std::optional<std::uint32_t> numbered_name(std::string_view text, std::string_view prefix,
                                           std::string_view suffix) {
    if (text.size() <= prefix.size() + suffix.size() || !text.starts_with(prefix) ||
        !text.ends_with(suffix)) {
        return std::nullopt;
    }
    const std::string_view digits =
        text.substr(prefix.size(), text.size() - prefix.size() - suffix.size());
    if (digits.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size())
        return std::nullopt;
    return value;
}

// A key that is the same for two spellings of one file.
std::string identity(const fs::path& path) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(path, ec);
    return (ec ? path.lexically_normal() : canonical).string();
}

bool same_file(const fs::path& a, const fs::path& b) {
    std::error_code ec;
    if (fs::equivalent(a, b, ec) && !ec)
        return true;
    return identity(a) == identity(b);
}

std::string lines_text(const std::vector<const MemoryReading*>& readings) {
    std::string text;
    for (const auto* r : readings)
        text += fmt::format("{}{}", text.empty() ? "" : ", ", r->line);
    return text;
}

}  // namespace

RankAssignment parse_rank_assignment(std::string_view text) {
    const std::size_t eq = text.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
        throw FlagError(
            fmt::format("--rank: expected FILE=ID (a log file and its rank), got '{}'", text));
    }
    const std::string_view id = text.substr(eq + 1);
    std::uint32_t rank = 0;
    const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), rank);
    if (ec != std::errc{} || end != id.data() + id.size()) {
        throw FlagError(
            fmt::format("--rank {}: the rank must be a whole number, got '{}'", text, id));
    }
    return RankAssignment{fs::path(std::string(text.substr(0, eq))), rank};
}

std::optional<std::uint32_t> rank_from_path(const fs::path& path) {
    const std::string file = path.filename().string();
    std::optional<std::uint32_t> from_file = numbered_name(file, "rank_", ".log");
    if (!from_file)
        from_file = numbered_name(file, "worker_", ".log");
    std::optional<std::uint32_t> from_directory;
    for (fs::path dir = path.parent_path(); !dir.empty() && dir != dir.parent_path();
         dir = dir.parent_path()) {
        from_directory = numbered_name(dir.filename().string(), "rank_", "");
        if (from_directory)
            break;
    }
    if (from_file && from_directory && *from_file != *from_directory) {
        throw InputError(fmt::format(
            "{}: the path names two ranks, {} (directory) and {} (file name); say which with "
            "--rank {}=ID",
            path.string(), *from_directory, *from_file, path.string()));
    }
    return from_file ? from_file : from_directory;
}

bool looks_like_log(const fs::path& path) {
    const std::string name = path.filename().string();
    for (const std::string_view ending : {".log", ".txt", ".out"}) {
        if (name.size() > ending.size() && name.ends_with(ending))
            return true;
    }
    // Rotated logs: info.log.1, worker_0.log.2
    const std::size_t at = name.find(".log.");
    return at != std::string::npos && at > 0 && at + 5 < name.size() &&
           name.find_first_not_of("0123456789", at + 5) == std::string::npos;
}

const FileKind& log_files() {
    static const FileKind kind{looks_like_log, rank_from_path, "log files",
                               "files named *.log, *.txt or *.out", "LOG"};
    return kind;
}

std::vector<LogFile> collect_logs(std::span<const std::string> arguments,
                                  std::span<const RankAssignment> assignments) {
    return collect_files(arguments, assignments, log_files());
}

std::vector<LogFile> collect_files(std::span<const std::string> arguments,
                                   std::span<const RankAssignment> assignments,
                                   const FileKind& kind) {
    std::vector<LogFile> logs;
    std::map<std::string, std::size_t> seen;
    const auto add = [&](const fs::path& path, bool named) {
        const auto [it, inserted] = seen.emplace(identity(path), logs.size());
        if (!inserted) {
            logs[it->second].named = logs[it->second].named || named;
            return;
        }
        logs.push_back(LogFile{path, path.string(), std::nullopt, named});
    };
    for (const std::string& argument : arguments) {
        const fs::path path(argument);
        std::error_code ec;
        const fs::file_status status = fs::status(path, ec);
        if (ec || !fs::exists(status)) {
            throw InputError(fmt::format("{}: cannot read: {}", argument,
                                         ec ? ec.message() : "no such file or directory"));
        }
        if (!fs::is_directory(status)) {
            add(path, true);
            continue;
        }
        std::vector<fs::path> found;
        fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied,
                                            ec);
        for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            std::error_code type_ec;
            if (it->is_regular_file(type_ec) && kind.accept(it->path()))
                found.push_back(it->path());
        }
        if (ec)
            throw InputError(fmt::format("{}: cannot read: {}", argument, ec.message()));
        if (found.empty()) {
            throw InputError(fmt::format("{}: no {} in this directory ({})", argument, kind.plural,
                                         kind.patterns));
        }
        std::sort(found.begin(), found.end());
        for (const auto& file : found)
            add(file, false);
    }

    std::vector<std::optional<std::uint32_t>> assigned(logs.size());
    for (const RankAssignment& a : assignments) {
        bool matched = false;
        for (std::size_t i = 0; i < logs.size(); ++i) {
            if (!same_file(a.file, logs[i].path))
                continue;
            matched = true;
            if (assigned[i] && *assigned[i] != a.rank) {
                throw FlagError(fmt::format("--rank: {} is given two ranks, {} and {}",
                                            a.file.string(), *assigned[i], a.rank));
            }
            assigned[i] = a.rank;
        }
        if (!matched) {
            throw FlagError(
                fmt::format("--rank {}={}: {} is not one of the {} read (name it as a {} argument)",
                            a.file.string(), a.rank, a.file.string(), kind.plural, kind.argument));
        }
    }
    for (std::size_t i = 0; i < logs.size(); ++i)
        logs[i].rank = assigned[i] ? assigned[i] : kind.rank_of(logs[i].path);
    return logs;
}

void for_each_line(const LogFile& file,
                   const std::function<void(std::size_t, std::string_view)>& visit) {
    std::ifstream in(file.path, std::ios::binary);
    if (!in)
        throw InputError(fmt::format("{}: cannot read: {}", file.name, std::strerror(errno)));
    std::string line;
    std::size_t number = 0;
    while (std::getline(in, line)) {
        ++number;
        std::string_view text = line;
        if (text.ends_with('\r'))
            text.remove_suffix(1);
        visit(number, text);
    }
    if (in.bad())
        throw InputError(fmt::format("{}: cannot read: {}", file.name, std::strerror(errno)));
}

std::size_t invalid_utf8_at(std::string_view text) noexcept {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    std::size_t i = 0;
    while (i < text.size()) {
        const unsigned char b = byte(i);
        if (b < 0x80) {
            ++i;
            continue;
        }
        std::size_t length = 0;
        unsigned char low = 0x80;  // bounds of the second byte (overlongs, surrogates, > U+10FFFF)
        unsigned char high = 0xBF;
        if (b >= 0xC2 && b <= 0xDF) {
            length = 2;
        } else if (b >= 0xE0 && b <= 0xEF) {
            length = 3;
            if (b == 0xE0)
                low = 0xA0;
            if (b == 0xED)
                high = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            length = 4;
            if (b == 0xF0)
                low = 0x90;
            if (b == 0xF4)
                high = 0x8F;
        } else {
            return i;
        }
        if (i + length > text.size())
            return i;
        if (byte(i + 1) < low || byte(i + 1) > high)
            return i;
        for (std::size_t k = 2; k < length; ++k) {
            if (byte(i + k) < 0x80 || byte(i + k) > 0xBF)
                return i;
        }
        i += length;
    }
    return std::string_view::npos;
}

std::string quote_excerpt(std::string_view text, std::size_t limit) {
    std::string out = "'";
    std::size_t shown = 0;
    std::size_t i = 0;
    while (i < text.size() && shown < limit) {
        const std::size_t bad = invalid_utf8_at(text.substr(i));
        const std::size_t good = bad == std::string_view::npos ? text.size() - i : bad;
        if (good == 0) {
            out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[i]));
            ++i;
            ++shown;
            continue;
        }
        // Copy valid text one character at a time, escaping control characters.
        const std::size_t end = i + good;
        while (i < end && shown < limit) {
            const auto c = static_cast<unsigned char>(text[i]);
            std::size_t length = 1;
            if (c >= 0xF0)
                length = 4;
            else if (c >= 0xE0)
                length = 3;
            else if (c >= 0xC0)
                length = 2;
            if (c < 0x20 || c == 0x7F)
                out += fmt::format("\\x{:02X}", c);
            else
                out.append(text.substr(i, length));
            i += length;
            ++shown;
        }
    }
    if (i < text.size())
        out += "...";
    return out + "'";
}

void require_utf8(std::string_view text, std::string_view file, std::size_t line,
                  std::string_view what) {
    const std::size_t bad = invalid_utf8_at(text);
    if (bad == std::string_view::npos)
        return;
    throw InputError(fmt::format(
        "{}:{}: {} holds a byte that is not UTF-8 (0x{:02X} at byte {} of the line: {}); ppb "
        "reads numbers only from clean text lines — is the log corrupted, or written in another "
        "encoding?",
        file, line, what, static_cast<unsigned char>(text[bad]), bad + 1, quote_excerpt(text)));
}

std::string MemoryReading::where() const {
    return line == 0 ? file : fmt::format("{}:{}", file, line);
}

std::vector<MemoryReading> last_reading_per_rank(const std::vector<MemoryReading>& readings,
                                                 std::string_view what, Messages& messages) {
    // Per file (in order of first appearance), per rank, the readings in line order.
    std::vector<std::string> files;
    std::map<std::string, std::map<std::uint32_t, std::vector<const MemoryReading*>>> by_file;
    for (const MemoryReading& r : readings) {
        auto [it, inserted] = by_file.try_emplace(r.file);
        if (inserted)
            files.push_back(r.file);
        it->second[r.rank].push_back(&r);
    }
    std::map<std::uint32_t, std::vector<const MemoryReading*>> last_per_rank;
    for (const std::string& file : files) {
        std::vector<std::uint32_t> repeated;
        std::size_t most = 0;
        std::size_t least = std::numeric_limits<std::size_t>::max();
        for (const auto& [rank, list] : by_file[file]) {
            last_per_rank[rank].push_back(list.back());
            if (list.size() < 2)
                continue;
            repeated.push_back(rank);
            most = std::max(most, list.size());
            least = std::min(least, list.size());
        }
        if (repeated.size() == 1) {
            const auto& list = by_file[file][repeated.front()];
            add_note(messages,
                     fmt::format("{}: {} {} for rank {} (lines {}): took the last, line {}", file,
                                 list.size(), what, repeated.front(), lines_text(list),
                                 list.back()->line));
        } else if (repeated.size() > 1) {
            add_note(
                messages,
                fmt::format("{}: several {} for ranks {} ({} each): took the last of each rank",
                            file, what, describe_numbers(repeated),
                            least == most ? fmt::format("{}", most)
                                          : fmt::format("{} to {}", least, most)));
        }
    }
    std::vector<MemoryReading> out;
    for (const auto& [rank, list] : last_per_rank) {
        for (const MemoryReading* other : list) {
            if (other->mb == list.front()->mb)
                continue;
            // Rounded as ppb shows memory; readings that round alike say how far apart they are.
            const std::string first = fmt::format("{:.1f} MB", list.front()->mb);
            const std::string second = fmt::format("{:.1f} MB", other->mb);
            throw InputError(fmt::format(
                "rank {} has different readings in two logs: {}:{} says {}, {}:{} says {}{}; "
                "read only one of them (or tell which rank each log is with --rank FILE=ID)",
                rank, list.front()->file, list.front()->line, first, other->file, other->line,
                second,
                first == second
                    ? fmt::format(" ({:.2g} MB apart)", std::abs(list.front()->mb - other->mb))
                    : std::string()));
        }
        out.push_back(*list.front());
    }
    return out;
}

}  // namespace ppb::importers
