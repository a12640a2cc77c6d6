#include "compare_output.hpp"

#include "text_table.hpp"

#include <ppb/kinds.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>

namespace ppb::cli {
namespace json = boost::json;
namespace {

struct ErrorSummary {
    std::size_t count = 0;
    double sum_abs = 0.0;
    double sum_abs_percent = 0.0;
    double sum_squares = 0.0;
    double max_abs = 0.0;
};

std::vector<ErrorSummary> summarise(const Comparison& c) {
    std::vector<ErrorSummary> out(c.models.size());
    for (const auto& p : c.placements) {
        if (!p.measured_mb)
            continue;
        for (std::size_t m = 0; m < c.models.size(); ++m) {
            if (!p.predictions[m].memory_mb)
                continue;
            const double error = *p.predictions[m].memory_mb - *p.measured_mb;
            auto& s = out[m];
            ++s.count;
            s.sum_abs += std::abs(error);
            s.sum_abs_percent += 100.0 * std::abs(error) / *p.measured_mb;
            s.sum_squares += error * error;
            s.max_abs = std::max(s.max_abs, std::abs(error));
        }
    }
    return out;
}

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

json::object comparison_document(const Comparison& c) {
    json::array models;
    for (const auto& m : c.models) {
        models.push_back(
            json::object{{"name", m.name}, {"version", m.version}, {"source", m.source}});
    }
    json::array placements;
    for (const auto& p : c.placements) {
        // Layers summed over the chunks; several chunks are listed besides.
        json::object layers;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            std::uint64_t n = 0;
            for (const auto& chunk : p.placement.chunks)
                n += chunk.layers[k];
            layers[kind_names[k]] = n;
        }
        json::array predictions;
        for (std::size_t m = 0; m < c.models.size(); ++m) {
            const auto& pr = p.predictions[m];
            json::object o{{"model", c.models[m].name}};
            if (pr.memory_mb) {
                o["memory_mb"] = *pr.memory_mb;
                if (p.measured_mb) {
                    o["error_mb"] = *pr.memory_mb - *p.measured_mb;
                    o["error_percent"] = 100.0 * (*pr.memory_mb - *p.measured_mb) / *p.measured_mb;
                }
            } else {
                o["memory_mb"] = nullptr;
                o["reason"] = pr.error;
            }
            predictions.push_back(std::move(o));
        }
        json::object row{{"label", p.label},
                         {"num_stages", p.placement.num_stages},
                         {"stage", p.placement.stage},
                         {"layers", std::move(layers)}};
        if (p.placement.chunks.size() == 1) {
            row["in_flight"] = p.placement.chunks.front().in_flight;
        } else {
            json::array in_flight;
            json::array chunks;
            for (const auto& chunk : p.placement.chunks) {
                json::object chunk_layers;
                for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                    chunk_layers[kind_names[k]] = chunk.layers[k];
                in_flight.push_back(chunk.in_flight);
                chunks.push_back(json::object{{"layers", std::move(chunk_layers)},
                                              {"in_flight", chunk.in_flight}});
            }
            row["in_flight"] = std::move(in_flight);
            row["chunks"] = std::move(chunks);
        }
        row["measured_mb"] = p.measured_mb ? json::value(*p.measured_mb) : json::value(nullptr);
        row["predictions"] = std::move(predictions);
        placements.push_back(std::move(row));
    }
    json::array summary;
    const auto sums = summarise(c);
    for (std::size_t m = 0; m < c.models.size(); ++m) {
        const auto& s = sums[m];
        json::object o{{"model", c.models[m].name}, {"count", s.count}};
        const bool any = s.count > 0;
        const double n = static_cast<double>(s.count);
        o["mean_abs_error_mb"] = any ? json::value(s.sum_abs / n) : json::value(nullptr);
        o["mean_abs_error_percent"] =
            any ? json::value(s.sum_abs_percent / n) : json::value(nullptr);
        o["rms_error_mb"] = any ? json::value(std::sqrt(s.sum_squares / n)) : json::value(nullptr);
        o["max_abs_error_mb"] = any ? json::value(s.max_abs) : json::value(nullptr);
        summary.push_back(std::move(o));
    }
    return json::object{{"format", "ppb.compare/1"},
                        {"cross_validated", c.cross_validated},
                        {"models", std::move(models)},
                        {"placements", std::move(placements)},
                        {"summary", std::move(summary)}};
}

std::string render_comparison(const Comparison& c) {
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
