// The timeline picture: SVG written by hand, every coordinate computed here.
#include <ppb/timeline_svg.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb {
namespace {

constexpr double left = 90.0;  // stage labels
constexpr double right = 20.0;
constexpr double title_height = 26.0;  // the title's line, above the legend
constexpr double legend_row = 16.0;    // one line of the legend
constexpr double legend_gap = 6.0;     // between the legend and the first stage
constexpr double row_height = 24.0;
constexpr double row_gap = 4.0;
constexpr double axis_height = 36.0;
constexpr double lane_height = 48.0;  // one stage's memory curve
constexpr double lane_gap = 10.0;

struct ChunkColours {
    std::string_view forward;
    std::string_view backward;
};
// Light for forwards, the same hue dark for backwards; chunks beyond the palette reuse it.
constexpr std::array<ChunkColours, 6> palette = {{
    {"#9ecae9", "#2f6a9f"},
    {"#ffbf79", "#b85a0c"},
    {"#8cd17d", "#2f7a24"},
    {"#ff9d9a", "#a8242a"},
    {"#d4a6c8", "#7a3f6e"},
    {"#f1ce63", "#8c6d0c"},
}};

const ChunkColours& colours(std::uint32_t chunk) {
    return palette[chunk % palette.size()];
}

std::string escape(std::string_view text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

// A round step for about `count` ticks over [0, span]: 1, 2 or 5 times a power of ten.
double tick_step(double span, int count) {
    if (!(span > 0.0))
        return 1.0;
    const double raw = span / count;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double f : {1.0, 2.0, 5.0}) {
        if (f * power >= raw)
            return f * power;
    }
    return 10.0 * power;
}

// One entry of the legend: its swatches and text (in the SVG's 11-unit font) and its width.
struct LegendEntry {
    std::string svg;  // drawn at (0, 0): swatches from y 0 to 12, text on y 10
    double width = 0.0;
};

// About the width of `text` in the 11-unit sans-serif font: 7 units a character, generous (DejaVu
// Sans, the usual sans-serif on Linux, averages about 6.5).
double text_width(std::string_view text) {
    return 7.0 * static_cast<double>(text.size());
}

std::vector<LegendEntry> legend_entries(const Simulation& sim) {
    std::vector<LegendEntry> entries;
    for (std::uint32_t c = 0; c < sim.num_chunks; ++c) {
        const std::string text = fmt::format("chunk {} forward / backward", c);
        entries.push_back(
            {fmt::format("<rect x=\"0\" y=\"0\" width=\"12\" height=\"12\" fill=\"{}\"/>"
                         "<rect x=\"13\" y=\"0\" width=\"12\" height=\"12\" fill=\"{}\"/>"
                         "<text x=\"30\" y=\"10\">{}</text>",
                         colours(c).forward, colours(c).backward, text),
             30.0 + text_width(text)});
    }
    entries.push_back(
        {"<rect x=\"0\" y=\"0\" width=\"25\" height=\"12\" fill=\"#555555\"/>"
         "<rect x=\"0\" y=\"0\" width=\"25\" height=\"12\" "
         "fill=\"url(#recompute)\"/><text x=\"30\" y=\"10\">recomputation</text>",
         30.0 + text_width("recomputation")});
    return entries;
}

// The legend laid out in lines from x = `left` that do not pass `right_edge`, 20 units apart:
// each entry's position, and the number of lines.
struct LegendLayout {
    std::vector<std::pair<double, double>> at;  // (x, line) per entry
    std::size_t lines = 1;
};
LegendLayout lay_out(const std::vector<LegendEntry>& entries, double right_edge) {
    LegendLayout layout;
    double x = left;
    std::size_t line = 0;
    for (const LegendEntry& e : entries) {
        if (x > left && x + e.width > right_edge) {
            x = left;
            ++line;
        }
        layout.at.emplace_back(x, static_cast<double>(line));
        x += e.width + 20.0;
    }
    layout.lines = line + 1;
    return layout;
}

std::string default_title(const Simulation& sim) {
    return fmt::format("{}: {} stages, {} chunk{}, {} micro-batches; makespan {:g}, bubble {:.1f}%",
                       schedule_name(sim.schedule), sim.num_stages, sim.num_chunks,
                       sim.num_chunks == 1 ? "" : "s", sim.micro_batches, sim.makespan,
                       100.0 * sim.bubble_fraction);
}

}  // namespace

double timeline_svg_width(const TimelineOptions& options) {
    return left + options.width_px + right;
}

std::string timeline_svg(const Simulation& sim, const TimelineOptions& options) {
    const std::vector<LegendEntry> legend = legend_entries(sim);
    const LegendLayout legend_layout = lay_out(legend, left + options.width_px);
    const double top = title_height + legend_row * static_cast<double>(legend_layout.lines) +
                       legend_gap;  // title and legend
    const double span = sim.makespan > 0.0 ? sim.makespan : 1.0;
    const double scale = options.width_px / span;
    const auto x_of = [&](double t) { return left + t * scale; };
    const double rows_bottom = top + sim.num_stages * (row_height + row_gap);
    const double axis_y = rows_bottom + 4.0;
    const double memory_top = axis_y + axis_height + 20.0;
    const double height = sim.with_memory
                              ? memory_top + sim.num_stages * (lane_height + lane_gap) + 10.0
                              : axis_y + axis_height;
    const double width = timeline_svg_width(options);

    std::string out;
    out += fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
        "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"11\">\n",
        width, height, width, height);
    // The hatching that marks recomputation inside a backward block.
    out +=
        "<defs><pattern id=\"recompute\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"none\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#ffffff\" stroke-width=\"2.5\"/>"
        "</pattern></defs>\n";
    out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    out += fmt::format("<text class=\"title\" x=\"{:.1f}\" y=\"18\" font-size=\"14\">{}</text>\n",
                       left, escape(options.title.empty() ? default_title(sim) : options.title));

    // Legend: one forward and one backward swatch per chunk, and the recompute hatching, in as
    // many lines as the width needs.
    for (std::size_t i = 0; i < legend.size(); ++i) {
        const auto [x, line] = legend_layout.at[i];
        out += fmt::format("<g class=\"legend\" transform=\"translate({:.1f} {:.1f})\">{}</g>\n", x,
                           title_height + line * legend_row, legend[i].svg);
    }

    // One row per stage.
    for (std::uint32_t s = 0; s < sim.num_stages; ++s) {
        const double y = top + s * (row_height + row_gap);
        out += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">stage {}</text>\n"
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
            "fill=\"#f2f2f2\"/>\n",
            left - 8, y + row_height / 2 + 4, s, left, y, options.width_px, row_height);
    }
    for (const SimulatedOperation& op : sim.operations) {
        const bool forward = op.pass == Pass::forward;
        const double y = top + op.stage * (row_height + row_gap);
        const double x = x_of(op.start);
        const double w = (op.end - op.start) * scale;
        const ChunkColours& colour = colours(op.chunk);
        out += fmt::format(
            "<rect class=\"op\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" "
            "fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"0.5\" data-stage=\"{}\" "
            "data-chunk=\"{}\" data-micro-batch=\"{}\" data-pass=\"{}\" data-start=\"{}\" "
            "data-end=\"{}\"{}><title>stage {} chunk {} micro-batch {} {} {:g} to {:g}</title>"
            "</rect>\n",
            x, y, w, row_height, forward ? colour.forward : colour.backward, op.stage, op.chunk,
            op.micro_batch, pass_name(op.pass), op.start, op.end,
            // A weight-gradient pass (zero-bubble schedules): the backward's colour, lighter.
            op.pass == Pass::weight ? " fill-opacity=\"0.55\"" : "", op.stage, op.chunk,
            op.micro_batch, pass_name(op.pass), op.start, op.end);
        if (!forward && op.recompute_time > 0.0) {
            // Recomputation runs first in a backward: the hatched part is its beginning.
            out += fmt::format(
                "<rect class=\"recompute\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                "height=\"{:.1f}\" fill=\"url(#recompute)\"/>\n",
                x, y, op.recompute_time * scale, row_height);
        }
        const std::string label = std::to_string(op.micro_batch);
        if (w >= 7.0 * static_cast<double>(label.size()) + 2.0) {
            out += fmt::format(
                "<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
                x + w / 2, y + row_height / 2 + 4, forward ? "#1a1a1a" : "#ffffff", label);
        }
    }

    // Time axis.
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333333\"/>\n",
        left, axis_y, left + options.width_px, axis_y);
    const double step = tick_step(span, 10);
    for (int i = 0; i * step <= span * (1 + 1e-9); ++i) {
        const double t = i * step;
        out += fmt::format(
            "<line x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" y2=\"{:.1f}\" stroke=\"#333333\"/>"
            "<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:g}</text>\n",
            x_of(t), axis_y, x_of(t), axis_y + 5, x_of(t), axis_y + 18, t);
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">time</text>\n",
                       left - 8, axis_y + 18);

    // Memory over time: one lane per stage, all on the same scale so stages compare.
    if (sim.with_memory) {
        double most = 0.0;
        for (const StageSimulation& st : sim.stages)
            most = std::max(most, st.peak_memory_mb);
        if (!(most > 0.0))
            most = 1.0;
        out += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"13\">memory over time (MB; lanes share "
            "one scale, 0 to {:.1f})</text>\n",
            left, memory_top - 8, most);
        for (std::uint32_t s = 0; s < sim.num_stages; ++s) {
            const StageSimulation& st = sim.stages[s];
            const double y0 = memory_top + s * (lane_height + lane_gap);
            const double base = y0 + lane_height;
            const auto y_of = [&](double mb) {
                return base - std::max(0.0, mb) / most * lane_height;
            };
            out += fmt::format(
                "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">stage {}</text>"
                "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#555555\">peak "
                "{:.1f}</text>\n"
                "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                "fill=\"#f7f7f7\"/>\n",
                left - 8, y0 + 14, s, left - 8, y0 + 28, st.peak_memory_mb, left, y0,
                options.width_px, lane_height);
            std::string points;
            double previous = 0.0;
            for (std::size_t i = 0; i < st.memory.size(); ++i) {
                const MemoryPoint& point = st.memory[i];
                if (i > 0)  // a step: hold the previous level until this point's time
                    points += fmt::format(" {:.2f},{:.2f}", x_of(point.time), y_of(previous));
                points += fmt::format("{}{:.2f},{:.2f}", i > 0 ? " " : "", x_of(point.time),
                                      y_of(point.mb));
                previous = point.mb;
            }
            points += fmt::format(" {:.2f},{:.2f}", x_of(span), y_of(previous));
            out += fmt::format(
                "<polyline class=\"memory\" data-stage=\"{}\" data-peak-mb=\"{}\" points=\"{}\" "
                "fill=\"none\" stroke=\"#2f6a9f\" stroke-width=\"1.5\"/>\n",
                s, st.peak_memory_mb, points);
            // The moment of the peak, and what each chunk holds then.
            std::string held;
            for (const std::uint32_t f : st.in_flight_at_peak)
                held += fmt::format("{}{}", held.empty() ? "" : ",", f);
            out += fmt::format(
                "<circle class=\"memory-peak\" data-stage=\"{}\" data-time=\"{}\" "
                "data-peak-mb=\"{}\" data-in-flight=\"{}\" cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"3\" "
                "fill=\"#c0392b\"><title>stage {} peak {:.1f} MB at {:.4g}, in flight per chunk "
                "({})</title></circle>\n",
                s, st.peak_memory_time, st.peak_memory_mb, held, x_of(st.peak_memory_time),
                y_of(st.peak_memory_mb), s, st.peak_memory_mb, st.peak_memory_time, held);
        }
    }
    out += "</svg>\n";
    return out;
}

}  // namespace ppb
