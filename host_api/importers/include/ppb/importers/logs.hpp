// ppb/importers/logs.hpp — finding training logs, telling which rank wrote each, reading them line
// by line, and keeping one memory reading per rank.
//
// Logs are read as bytes. Lines an importer does not use may hold anything (logs written in a
// GBK locale, colour escapes, partial writes); a line an importer takes a number from must be
// valid UTF-8, or the import fails naming the file and line.
#ifndef PPB_IMPORTERS_LOGS_HPP
#define PPB_IMPORTERS_LOGS_HPP

#include <ppb/importers/layout.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb::importers {

struct LogFile {
    std::filesystem::path path;
    std::string name;                   // how messages name it: the path as the user gave it
    std::optional<std::uint32_t> rank;  // from --rank FILE=ID, else from the path
    bool named = true;                  // named on the command line, not found in a directory
};

// --rank FILE=ID.
struct RankAssignment {
    std::filesystem::path file;
    std::uint32_t rank = 0;
};

// Parses "FILE=ID" (the last '=' separates them). Throws FlagError.
[[nodiscard]] RankAssignment parse_rank_assignment(std::string_view text);

// The rank a path names: a file called rank_<id>.log or worker_<id>.log, else the nearest
// directory called rank_<id>. nullopt when the path names none; InputError when it names two
// different ranks ("rank_3/worker_5.log").
[[nodiscard]] std::optional<std::uint32_t> rank_from_path(const std::filesystem::path& path);

// Whether a file found while walking a directory is read as a log: names ending in .log, .txt or
// .out, or rotated logs (info.log.1). Files named on the command line are always read.
[[nodiscard]] bool looks_like_log(const std::filesystem::path& path);

// What kind of file the arguments of an import name: which files a directory yields, how
// messages call them, and how a file's rank is told from its path.
struct FileKind {
    std::function<bool(const std::filesystem::path&)> accept;  // found in a directory
    std::function<std::optional<std::uint32_t>(const std::filesystem::path&)> rank_of;
    std::string_view plural;    // "log files"
    std::string_view patterns;  // "files named *.log, *.txt or *.out"
    std::string_view argument;  // the command line's name of one: "LOG"
};

// Logs: looks_like_log() and rank_from_path().
[[nodiscard]] const FileKind& log_files();

// The files behind the arguments: a file as it is; a directory walked recursively for files that
// `kind` accepts, in path order. A file reached twice is read once. Each file's rank comes from
// `assignments`, else from its path (kind.rank_of). Throws InputError for an argument that does
// not exist or a directory without such files, FlagError for an assignment naming none of the
// files.
[[nodiscard]] std::vector<LogFile> collect_files(std::span<const std::string> arguments,
                                                 std::span<const RankAssignment> assignments,
                                                 const FileKind& kind);
// collect_files() of log_files().
[[nodiscard]] std::vector<LogFile> collect_logs(std::span<const std::string> arguments,
                                                std::span<const RankAssignment> assignments);

// Calls `visit(line_number, text)` for every line of `file` (from 1; without the line break and
// a trailing '\r'). Throws InputError "<name>: cannot read: <reason>".
void for_each_line(const LogFile& file,
                   const std::function<void(std::size_t, std::string_view)>& visit);

// The offset of the first byte of `text` that is not part of well-formed UTF-8, or npos.
[[nodiscard]] std::size_t invalid_utf8_at(std::string_view text) noexcept;

// `text` for a message: at most `limit` characters, invalid bytes and control characters
// written as \xNN, quoted.
[[nodiscard]] std::string quote_excerpt(std::string_view text, std::size_t limit = 80);

// Throws InputError "<file>:<line>: <what> holds a byte that is not UTF-8 (0xNN at column C)"
// when `text` is not valid UTF-8.
void require_utf8(std::string_view text, std::string_view file, std::size_t line,
                  std::string_view what);

// One peak-memory figure read from a log (or a memory snapshot).
struct MemoryReading {
    MemoryReading() = default;
    MemoryReading(std::uint32_t rank_, double mb_, std::string file_, std::size_t line_,
                  std::optional<double> reserved = std::nullopt, std::string reserved_at = {})
        : rank(rank_),
          mb(mb_),
          file(std::move(file_)),
          line(line_),
          reserved_mb(reserved),
          reserved_where(std::move(reserved_at)) {}

    std::uint32_t rank = 0;
    double mb = 0.0;
    std::string file;
    std::size_t line = 0;  // 0 for a file without lines (a snapshot)
    // The rank's peak reserved memory, when the source states it beside `mb` (Megatron's "max
    // reserved", MindSpore's peak "with fragments", a snapshot's segments): at least `mb`.
    std::optional<double> reserved_mb;
    std::string reserved_where;  // "<file>:<line>" when not the same line as `mb`

    // "<file>:<line>", or "<file>" without a line.
    [[nodiscard]] std::string where() const;
};

// One reading per rank, by rank: of several lines of one rank in one file the last (noted in
// `messages`: `what` names the line, e.g. "'Used peak memory' lines"); readings of one rank
// from several files must be equal, or InputError names both.
[[nodiscard]] std::vector<MemoryReading> last_reading_per_rank(
    const std::vector<MemoryReading>& readings, std::string_view what, Messages& messages);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_LOGS_HPP
