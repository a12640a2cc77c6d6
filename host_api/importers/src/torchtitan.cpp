// torchtitan's step lines (ppb/importers/torchtitan.hpp).
#include <ppb/importers/torchtitan.hpp>

#include <ppb/errors.hpp>
#include <ppb/number_text.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

namespace ppb::importers {
namespace {

constexpr std::string_view memory_marker = "memory:";
constexpr double mb_per_gib = 1024.0;

// "[rank3]:" at the line's start (torchrun's --tee prefix): 3.
std::optional<std::uint32_t> torchrun_rank(std::string_view line) {
    constexpr std::string_view open = "[rank";
    if (!line.starts_with(open))
        return std::nullopt;
    const std::size_t close = line.find("]:");
    if (close == std::string_view::npos || close == open.size())
        return std::nullopt;
    const std::string_view digits = line.substr(open.size(), close - open.size());
    std::uint32_t rank = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (ec != std::errc{} || end != digits.data() + digits.size())
        return std::nullopt;
    return rank;
}

// The step of a step line: "step:  12" (or "validate step: 12"), or nullopt for another line.
std::optional<std::string_view> step_of(std::string_view line) {
    const std::size_t at = line.find("step:");
    if (at == std::string_view::npos || line.find(memory_marker, at) == std::string_view::npos)
        return std::nullopt;
    std::string_view rest = line.substr(at + 5);
    rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
    return rest.substr(0, std::min(rest.find(' '), rest.size()));
}

struct StepReading {
    double mb = 0.0;
    std::string file;
    std::size_t line = 0;
    std::string step;
    std::size_t lines = 0;  // step lines of the rank
};

}  // namespace

std::string without_ansi_codes(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
            std::size_t j = i + 2;
            while (j < text.size() && (static_cast<unsigned char>(text[j]) < 0x40 ||
                                       static_cast<unsigned char>(text[j]) > 0x7E))
                ++j;
            i = j < text.size() ? j + 1 : text.size();
            continue;
        }
        out.push_back(text[i++]);
    }
    return out;
}

std::vector<MemoryReading> scan_torchtitan_logs(std::span<const LogFile> logs, Messages& messages) {
    std::map<std::uint32_t, StepReading> by_rank;
    std::vector<std::string> skipped;
    for (const LogFile& log : logs) {
        std::size_t found = 0;
        for_each_line(log, [&](std::size_t line, std::string_view raw) {
            if (raw.find(memory_marker) == std::string_view::npos)
                return;
            const std::string text = without_ansi_codes(raw);
            const auto step = step_of(text);
            if (!step)
                return;
            require_utf8(text, log.name, line, "the step line");
            std::optional<std::uint32_t> rank = torchrun_rank(text);
            if (rank && log.rank && *rank != *log.rank) {
                // Two answers to whose memory this is: refused, not one silently preferred.
                throw InputError(fmt::format(
                    "{}:{}: the step line is rank {}'s (torchrun's '[rank{}]:' prefix), but the "
                    "file's rank is {} (from --rank or its name): leave out --rank for a log of "
                    "prefixed lines, or give the file its own rank's log",
                    log.name, line, *rank, *rank, *log.rank));
            }
            if (!rank)
                rank = log.rank;
            if (!rank) {
                throw InputError(fmt::format(
                    "{}:{}: a step line without torchrun's '[rankN]:' prefix, and the log's rank "
                    "is not known: give --rank {}=ID",
                    log.name, line, log.name));
            }
            const std::string_view after =
                std::string_view(text).substr(text.find(memory_marker) + memory_marker.size());
            const std::string_view number =
                after.substr(std::min(after.find_first_not_of(' '), after.size()));
            double gib = 0.0;
            const auto [end, ec] =
                std::from_chars(number.data(), number.data() + number.size(), gib);
            const std::string_view unit =
                number.substr(static_cast<std::size_t>(end - number.data()));
            if (number.empty() || ec != std::errc{} || !unit.starts_with("GiB") ||
                !std::isfinite(gib)) {
                throw InputError(fmt::format(
                    "{}:{}: malformed step line: expected a number of GiB such as '19.05GiB' "
                    "after 'memory:', got {}",
                    log.name, line, quote_excerpt(number, 40)));
            }
            if (!(gib > 0.0)) {
                throw InputError(fmt::format(
                    "{}:{}: the step line says memory: {}GiB, which is not a measured peak "
                    "(expected a positive number)",
                    log.name, line,
                    number.substr(0, static_cast<std::size_t>(end - number.data()))));
            }
            StepReading& r = by_rank[*rank];
            ++r.lines;
            if (gib * mb_per_gib > r.mb) {
                r.mb = gib * mb_per_gib;
                r.file = log.name;
                r.line = line;
                r.step = std::string(*step);
            }
            ++found;
        });
        if (found > 0)
            continue;
        if (!log.named) {
            skipped.push_back(log.name);
            continue;
        }
        throw InputError(fmt::format(
            "{}: no torchtitan step line with a memory figure ('step: N  loss: ...  memory: "
            "X.XXGiB(Y.YY%)'): torchtitan logs it every metrics.log_freq steps on the ranks "
            "LOG_RANK lets through; did the run log a step?",
            log.name));
    }
    if (!skipped.empty()) {
        add_note(messages,
                 fmt::format("skipped {} log{} without torchtitan step lines: {}", skipped.size(),
                             skipped.size() == 1 ? "" : "s", fmt::join(skipped, ", ")));
    }
    if (by_rank.empty())
        throw InputError("none of the logs read has a torchtitan step line with a memory figure");

    std::vector<MemoryReading> readings;
    std::vector<std::uint32_t> ranks;
    for (const auto& [rank, r] : by_rank) {
        ranks.push_back(rank);
        if (r.lines > 1) {
            add_note(messages,
                     fmt::format("rank {}: {} step lines: took the largest, {} at step {} ({}:{})",
                                 rank, r.lines, format_mb(r.mb), r.step, r.file, r.line));
        }
        readings.push_back(MemoryReading{rank, r.mb, r.file, r.line, r.mb, {}});
    }
    add_note(messages,
             fmt::format("torchtitan logs the peak reserved memory only (torch.cuda's "
                         "reserved_bytes.all.peak, in GiB to 2 decimals, about 5 MB): each "
                         "observation's peak_memory_mb and reserved_mb are that figure, for rank{} "
                         "{}",
                         ranks.size() == 1 ? "" : "s", describe_numbers(ranks)));
    return readings;
}

}  // namespace ppb::importers
