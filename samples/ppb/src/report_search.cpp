// A search's page of the report (report_html.hpp): the ranking as a table, each configuration's
// simulated iteration time against its memory headroom as a scatter chart (SVG drawn here, every
// coordinate computed from the ppb.search/1 document), and the best configuration's plan.
#include "report_input.hpp"
#include "report_parts.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace ppb::cli::report {
namespace json = boost::json;
namespace {

std::string schedule_text(const json::object& entry) {
    const std::string schedule(entry.at("schedule").as_string());
    const auto chunks = entry.at("chunks").to_number<std::uint32_t>();
    return schedule.starts_with("interleaved") ? fmt::format("{} v={}", schedule, chunks)
                                               : schedule;
}

std::string ranking_table(const json::array& ranking, std::string_view unit) {
    std::string rows;
    for (const json::value& v : ranking) {
        const json::object& e = v.as_object();
        const auto rank = e.at("rank").to_number<std::uint64_t>();
        rows += fmt::format(
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td>"
            "<td class=\"text\">{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f} %</td>"
            "<td>{:.1f}</td><td>{:.1f}</td></tr>",
            rank == 1 ? " class=\"best\"" : "", rank,
            e.at("pipeline_parallel").to_number<std::uint64_t>(),
            e.at("data_parallel").to_number<std::uint64_t>(),
            e.at("micro_batches").to_number<std::uint64_t>(), escape(schedule_text(e)),
            escape(std::string(e.at("recompute").as_string())),
            number_or_zero(e.at("iteration_time")), number_or_zero(entry_objective(e)),
            100.0 * number_or_zero(e.at("bubble_fraction")), number_or_zero(e.at("peak_memory_mb")),
            number_or_zero(e.at("headroom_mb")));
    }
    const std::string u =
        unit.empty() ? std::string("layer file's time unit") : fmt::format("unit {}", escape(unit));
    return fmt::format(
        "<p class=\"caption\">Times per global batch in the {0}; memory in MB; PP, DP: "
        "pipeline and data-parallel degrees; M: micro-batches</p>"
        "<div class=\"scroll\"><table "
        "class=\"ranking\"><thead><tr><th>rank</th><th>PP</th><th>DP</th><th>M</th>"
        "<th class=\"text\">schedule</th><th class=\"text\">recompute</th><th>iteration</th>"
        "<th>objective</th><th>bubble</th><th>peak memory</th><th>headroom</th></tr></thead>"
        "<tbody>{1}</tbody></table></div>",
        u, rows);
}

// A round step for about `ticks` intervals over `span`: 1, 2 or 5 times a power of ten.
double nice_step(double span, int ticks) {
    const double raw = span / ticks;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0}) {
        if (m * power >= raw)
            return m * power;
    }
    return 10.0 * power;
}

std::string scatter_chart(const json::array& ranking, std::string_view unit) {
    constexpr double width = 640;
    constexpr double height = 360;
    constexpr double left = 78;  // the time axis' labels
    constexpr double right = 16;
    constexpr double top = 16;
    constexpr double bottom = 52;  // the headroom axis' labels
    double x_max = 0.0;
    double y_min = 0.0;
    double y_max = 0.0;
    bool first = true;
    for (const json::value& v : ranking) {
        const double x = number_or_zero(v.at("headroom_mb"));
        const double y = number_or_zero(v.at("iteration_time"));
        x_max = std::max(x_max, x);
        y_min = first ? y : std::min(y_min, y);
        y_max = first ? y : std::max(y_max, y);
        first = false;
    }
    // Axes from 0 MB of headroom, and from a round time below the fastest to one above the
    // slowest. A single configuration, or times equal to within a millionth, get a span around
    // their value: a span near the doubles' own spacing would give steps that adding to the
    // axis' start does not move (and a headroom of almost nothing a step of 0).
    const double x_span = x_max > 1e-6 ? x_max : 1.0;
    const double x_step = nice_step(x_span, 5);
    const double x_end = std::max(x_step, std::ceil(x_max / x_step) * x_step);
    const bool spread = y_max - y_min > 1e-6 * std::max(1.0, std::abs(y_max));
    const double y_span = spread ? y_max - y_min : std::max(1.0, std::abs(y_max) * 0.1);
    const double y_step = nice_step(y_span, 5);
    const double y_start = std::floor((spread ? y_min : y_min - y_span / 2) / y_step) * y_step;
    const double y_end = std::max(
        y_start + y_step, std::ceil((spread ? y_max : y_max + y_span / 2) / y_step) * y_step);
    // The grid lines, counted rather than stepped to (no accumulated rounding): about 5 each.
    const auto x_lines = static_cast<int>(std::lround(x_end / x_step));
    const auto y_lines = static_cast<int>(std::lround((y_end - y_start) / y_step));
    const double plot_w = width - left - right;
    const double plot_h = height - top - bottom;
    const auto px = [&](double x) { return left + plot_w * x / x_end; };
    const auto py = [&](double y) {
        return top + plot_h * (1.0 - (y - y_start) / (y_end - y_start));
    };

    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" role=\"img\" "
        "aria-label=\"iteration time against memory headroom\">",
        width, height);
    for (int i = 0; i <= x_lines; ++i) {
        const double x = i * x_step;
        svg += fmt::format(
            "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eef1f4\"/>"
            "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:.0f}</text>",
            px(x), top, top + plot_h, top + plot_h + 16, x);
    }
    for (int i = 0; i <= y_lines; ++i) {
        const double y = y_start + i * y_step;
        svg += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#eef1f4\"/>"
            "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>",
            left, left + plot_w, py(y), left - 6, py(y) + 4, y);
    }
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#c5ccd6\"/>",
        left, top, plot_w, plot_h);
    svg += fmt::format(
        "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">memory "
        "headroom (MB)</text>",
        left + plot_w / 2, height - 10);
    svg += fmt::format(
        "<text class=\"axis-title\" transform=\"translate(16 {}) rotate(-90)\" "
        "text-anchor=\"middle\">"
        "iteration ({})</text>",
        top + plot_h / 2, escape(unit_name(unit)));
    // The best last, on top of the others.
    for (auto it = ranking.rbegin(); it != ranking.rend(); ++it) {
        const json::object& e = it->as_object();
        const auto rank = e.at("rank").to_number<std::uint64_t>();
        const double x = number_or_zero(e.at("headroom_mb"));
        const double y = number_or_zero(e.at("iteration_time"));
        svg += fmt::format(
            "<circle class=\"point{}\" cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"{}\" data-rank=\"{}\" "
            "data-iteration-time=\"{:.17g}\" data-headroom-mb=\"{:.17g}\"><title>rank {}: PP {}, "
            "{}, recompute {}: {}, headroom {}</title></circle>",
            rank == 1 ? " best" : "", px(x), py(y), rank == 1 ? 7 : 5, rank, y, x, rank,
            e.at("pipeline_parallel").to_number<std::uint64_t>(), escape(schedule_text(e)),
            escape(std::string(e.at("recompute").as_string())), time_text(y, unit), mb(x));
    }
    return svg + "</svg>";
}

}  // namespace

}  // namespace ppb::cli::report

namespace ppb::cli {

std::string search_report_html(const boost::json::object& search,
                               std::string_view best_timeline_svg, const ReportTexts& texts) {
    report::check_search_document(boost::json::value(search), "the ppb.search/1 document");
    const boost::json::array& ranking = search.at("ranking").as_array();
    const boost::json::object& searched = search.at("search").as_object();
    const boost::json::object& model = search.at("model").as_object();
    std::string body = fmt::format(
        "<header><h1>ppb search</h1><p>{} configurations of {} body layers, {} planned; "
        "global batch {}, memory limit {}.</p><p class=\"muted\">memory model {} {}{}</p>"
        "</header>\n",
        search.at("configurations").to_number<std::uint64_t>(),
        search.at("num_layers").to_number<std::uint64_t>(),
        search.at("planned").to_number<std::uint64_t>(),
        searched.at("global_batch").to_number<std::uint64_t>(),
        report::mb(searched.at("memory_limit_mb").to_number<double>()),
        report::escape(std::string(model.at("name").as_string())),
        report::escape(std::string(model.at("version").as_string())),
        texts.source.empty() ? std::string() : report::escape(" (" + texts.source + ")"));
    body += fmt::format(
        "<section class=\"search\" id=\"ranking\"><h2>Ranking</h2><p class=\"muted\">By the "
        "simulated iteration of each configuration's optimal plan, per global batch; the "
        "objective is the partitioner objective, the estimate each plan minimises.</p>{}"
        "</section>\n",
        report::ranking_table(ranking, texts.time_unit));
    if (!ranking.empty()) {
        body += fmt::format(
            "<section class=\"scatter\" id=\"chart\"><h2>Iteration time against memory "
            "headroom</h2><p class=\"muted\">One point per configuration; the best in red. Down "
            "is faster, right leaves more memory free.</p>{}</section>\n",
            report::scatter_chart(ranking, texts.time_unit));
        const boost::json::object& best = ranking.front().at("plan").as_object();
        // Its degrees, where the document has them (checked: report_input.cpp).
        std::optional<FrameworkDegrees> degrees;
        if (ranking.front().as_object().contains("megatron_parallelism"))
            degrees = framework_degrees(JsonNode(ranking.front(), "ranking[0]"));
        body += "<section class=\"best-plan\"><h2>The best configuration's plan</h2>" +
                report::plan_summary(best, texts) + "</section>\n" + report::memory_section(best) +
                report::timeline_section(best_timeline_svg) +
                report::configuration_section(best, degrees ? &*degrees : nullptr);
    }
    return report::page("ppb search report", body);
}

}  // namespace ppb::cli
