// The pieces the report's pages are made of (report_html.hpp): escaping, numbers with their
// units, the page around the sections, and a plan's sections, shared by the plan's page and the
// search's page.
#ifndef PPB_CLI_REPORT_PARTS_HPP
#define PPB_CLI_REPORT_PARTS_HPP

#include "framework_config.hpp"
#include "report_html.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace ppb::cli::report {

// Text for HTML content and attribute values: & < > " ' escaped.
[[nodiscard]] std::string escape(std::string_view text);

// A checked document's number; null (a figure the plan does not have) reads as 0.
[[nodiscard]] double number_or_zero(const boost::json::value& value);

// "29878.1 MB".
[[nodiscard]] std::string mb(double value);
// "12958.2 ms", or "12958.2" followed by the unit's name when the layer file gives none.
[[nodiscard]] std::string time_text(double value, std::string_view unit);
// The unit as a column heading says it: "ms", or "layer file's unit".
[[nodiscard]] std::string unit_name(std::string_view unit);

// The whole page: doctype, head with the inline style, `body` in <main>, the inline script.
[[nodiscard]] std::string page(std::string_view title, std::string_view body);

// A plan's sections: each stage's memory (bars, legend, table), the timeline (an SVG document,
// scaled with the column down to the size it is drawn at), the frameworks' configurations.
[[nodiscard]] std::string memory_section(const boost::json::object& plan);
[[nodiscard]] std::string timeline_section(std::string_view svg);
// With a searched configuration's `degrees`, each framework's block has them too
// (framework_config.hpp).
[[nodiscard]] std::string configuration_section(const boost::json::object& plan,
                                                const FrameworkDegrees* degrees = nullptr);
// One line about the plan: layers, stages, micro-batches, schedule, limit, and its times.
[[nodiscard]] std::string plan_summary(const boost::json::object& plan, const ReportTexts& texts);

}  // namespace ppb::cli::report

#endif  // PPB_CLI_REPORT_PARTS_HPP
