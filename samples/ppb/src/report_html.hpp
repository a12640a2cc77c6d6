// The HTML report of `ppb partition --report FILE.html` and `ppb search --report FILE.html`
// (host_api/docs/report.md): one self-contained page — styles and the one script inline, no
// request to anything outside the file — rendered from the documents `--json` prints.
//
// A plan's page holds, from its ppb.partition/1 document: a summary; each stage's memory as a
// stacked bar whose full height is the memory limit (the parts of "memory_breakdown_mb" bottom
// up, then the uncertainty margin, the headroom and the reserved --memory-margin-mb at the top),
// with the numbers in a table beneath; the schedule's simulated timeline (the SVG of
// ppb/timeline_svg.hpp, inline, drawn with report_timeline_options()); and each framework's
// configuration as that framework takes it, exactly as `ppb partition` prints it
// (framework_config.hpp: a MindFormers YAML block, Megatron-LM and MindSpeed-LLM flags, a
// torchtitan TOML block), one copy button per block, or why the framework cannot run the plan.
// A search's page holds the ranking as a table, a chart of each configuration's iteration time
// against its memory headroom, and the best configuration's plan as above.
//
// Every element a test reads carries data- attributes with the document's numbers: a bar
// data-stage, data-memory-mb, data-limit-mb; a segment data-part and data-mb; a configuration
// block data-framework (FrameworkConfig::framework), its copy button data-copy (the text
// copied); a chart point data-rank, data-iteration-time, data-headroom-mb.
#ifndef PPB_CLI_REPORT_HTML_HPP
#define PPB_CLI_REPORT_HTML_HPP

#include <ppb/timeline_svg.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace ppb::cli {

// The timeline as the pages draw it (ppb/timeline_svg.hpp): a time axis of 620 units, so that
// the picture, 730 units wide, fits the page's column at 800 px with its 11-unit text at 11 px
// or more; the page scales it with the column (up to 1.5 times) and, where the column is
// narrower, lets it scroll sideways in its own box rather than shrink its text
// (host_api/docs/report.md, "The schedule").
[[nodiscard]] inline TimelineOptions report_timeline_options() {
    return TimelineOptions{.title = {}, .width_px = 620.0};
}

struct ReportTexts {
    std::string source;     // what the layer times and the model came from, for the summary
    std::string time_unit;  // "ms", or empty: the layer file's own unit
};

// The page of one plan (a ppb.partition/1 document) and its timeline (an SVG document).
[[nodiscard]] std::string plan_report_html(const boost::json::object& plan,
                                           std::string_view timeline_svg, const ReportTexts& texts);

// The page of a search (a ppb.search/1 document with every planned configuration ranked) and
// the timeline of its best plan (empty when nothing was planned).
[[nodiscard]] std::string search_report_html(const boost::json::object& search,
                                             std::string_view best_timeline_svg,
                                             const ReportTexts& texts);

}  // namespace ppb::cli

#endif  // PPB_CLI_REPORT_HTML_HPP
