// The HTML report of `ppb partition --report FILE.html` and `ppb search --report FILE.html`
// (host_api/docs/report.md): one self-contained page — styles and the one script inline, no
// request to anything outside the file — rendered from the documents `--json` prints.
//
// A plan's page holds, from its ppb.partition/1 document: a summary; each stage's memory as a
// stacked bar whose full height is the memory limit (the parts of "memory_breakdown_mb" bottom
// up, then the uncertainty margin, the headroom and the reserved --memory-margin-mb at the top),
// with the numbers in a table beneath; the schedule's simulated timeline (the SVG of
// ppb/timeline_svg.hpp, inline); and the configuration for the frameworks the document has a
// member for — "mindformers" and any other object of strings or arrays (e.g. "megatron",
// "torchtitan") — as text with copy buttons that hold exactly the document's values. A search's
// page holds the ranking as a table, a chart of each configuration's iteration time against its
// memory headroom, and the best configuration's plan as above.
//
// Every element a test reads carries data- attributes with the document's numbers: a bar
// data-stage, data-memory-mb, data-limit-mb; a segment data-part and data-mb; a copy button
// data-copy (the text copied) and data-key (the document's member); a chart point data-rank,
// data-iteration-time, data-headroom-mb.
#ifndef PPB_CLI_REPORT_HTML_HPP
#define PPB_CLI_REPORT_HTML_HPP

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace ppb::cli {

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
