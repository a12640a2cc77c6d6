#include "compare_output.hpp"

#include "text_table.hpp"

#include <ppb/kinds.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ppb::cli {
using partition::ErrorSummary;
using partition::summarise;
namespace {

// "3 none, 1 full"; the chunks separated by " | " when there are several.
std::string layer_text(const StagePlacement& p) {
    std::string out;
    for (std::size_t c = 0; c < p.chunks.size(); ++c) {
        std::string chunk;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (p.chunks[c].layers[k] == 0)
                continue;
            chunk += fmt::format("{}{} {}", chunk.empty() ? "" : ", ", p.chunks[c].layers[k],
                                 kind_names[k]);
        }
        if (p.chunks.size() > 1)
            out += fmt::format("{}{}", c == 0 ? "" : " | ", chunk.empty() ? "-" : chunk);
        else
            out = chunk;
    }
    return out.empty() ? "-" : out;
}

// "8", or each chunk's count: "7/4".
std::string in_flight_text(const StagePlacement& p) {
    std::string out;
    for (const auto& chunk : p.chunks)
        out += fmt::format("{}{}", out.empty() ? "" : "/", chunk.in_flight);
    return out;
}

}  // namespace

std::string render_comparison(const partition::Comparison& c) {
    std::string out = fmt::format("{} placements of {}", c.placements.size(), c.source);
    if (c.cross_validated) {
        out += "; fitted models predict each dry-run config from a fit to the other configs";
    }
    out += "\n";
    for (std::size_t m = 0; m < c.models.size(); ++m) {
        out += fmt::format("  [{}] {} {}: {}\n", m + 1, c.models[m].name, c.models[m].version,
                           c.models[m].source);
    }
    out += "\n";
    using A = TextTable::Align;
    std::vector<std::string> header = {"#", "CONFIG", "P", "STAGE", "LAYERS", "F", "MEASURED"};
    std::vector<A> align = {A::right, A::left, A::right, A::right, A::left, A::right, A::right};
    for (std::size_t m = 0; m < c.models.size(); ++m) {
        header.push_back(fmt::format("[{}] PREDICTED", m + 1));
        header.push_back("ERROR");
        align.push_back(A::right);
        align.push_back(A::right);
    }
    TextTable table(header, align);
    // One note per model and reason, listing the placements it applies to.
    std::vector<std::pair<std::string, std::vector<std::size_t>>> notes;
    const auto note = [&](std::size_t model, const std::string& reason, std::size_t placement) {
        const std::string key = fmt::format("[{}] {}", model + 1, reason);
        const auto it =
            std::find_if(notes.begin(), notes.end(), [&](const auto& n) { return n.first == key; });
        if (it == notes.end()) {
            notes.push_back({key, {placement}});
        } else {
            it->second.push_back(placement);
        }
    };
    for (std::size_t i = 0; i < c.placements.size(); ++i) {
        const auto& p = c.placements[i];
        std::vector<std::string> row = {fmt::format("{}", i),
                                        p.label,
                                        fmt::format("{}", p.placement.num_stages),
                                        fmt::format("{}", p.placement.stage),
                                        layer_text(p.placement),
                                        in_flight_text(p.placement),
                                        p.measured_mb ? format_mb(*p.measured_mb) : "-"};
        for (std::size_t m = 0; m < c.models.size(); ++m) {
            const auto& pr = p.predictions[m];
            if (!pr.memory_mb) {
                row.push_back("n/a");
                row.push_back("");
                note(m, pr.error, i);
                continue;
            }
            row.push_back(format_mb(*pr.memory_mb));
            if (p.measured_mb) {
                const double error = *pr.memory_mb - *p.measured_mb;
                row.push_back(
                    fmt::format("{:+.1f} MB ({:+.2f} %)", error, 100.0 * error / *p.measured_mb));
            } else {
                row.push_back("");
            }
        }
        table.add_row(std::move(row));
    }
    out += table.render(2);

    const auto sums = summarise(c);
    if (std::any_of(sums.begin(), sums.end(), [](const ErrorSummary& s) { return s.count > 0; })) {
        out += "\nError against the measurements:\n";
        TextTable summary(
            {"MODEL", "PLACEMENTS", "MEAN |ERROR|", "MEAN |ERROR| %", "RMS", "MAX |ERROR|"},
            {A::left, A::right, A::right, A::right, A::right, A::right});
        for (std::size_t m = 0; m < c.models.size(); ++m) {
            const auto& s = sums[m];
            const std::string name =
                fmt::format("[{}] {} {}", m + 1, c.models[m].name, c.models[m].version);
            if (s.count == 0) {
                summary.add_row({name, "0", "-", "-", "-", "-"});
                continue;
            }
            const double n = static_cast<double>(s.count);
            summary.add_row({name, fmt::format("{}", s.count), format_mb(s.sum_abs / n),
                             fmt::format("{:.2f} %", s.sum_abs_percent / n),
                             format_mb(std::sqrt(s.sum_squares / n)), format_mb(s.max_abs)});
        }
        out += summary.render(2);
    }
    if (!notes.empty()) {
        out += "\nNo prediction:\n";
        for (const auto& [reason, which] : notes) {
            std::string list;
            for (const std::size_t i : which)
                list += fmt::format("{}#{}", list.empty() ? "" : " ", i);
            const std::size_t close = reason.find(']');
            out += fmt::format("  {} {}: {}\n", reason.substr(0, close + 1), list,
                               reason.substr(close + 2));
        }
    }
    return out;
}

}  // namespace ppb::cli
