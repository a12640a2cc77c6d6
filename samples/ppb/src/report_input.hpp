// What the report's pages read (report_html.hpp), checked before a page is drawn: the members of
// a ppb.partition/1 or ppb.search/1 document that the page shows, each of the type and within the
// range ppb writes (ppb/limits.hpp). The pages are drawn only from documents that pass, so that
// drawing cannot fail half-way, divide by a zero limit or loop on a degenerate axis.
//
// A page is drawn from the document `--json` prints (the same process made it), but the check
// does not rely on that: a document edited by hand, or written by another version of ppb, is
// refused with a ppb::InputError naming the member ("<source>: stages[2].memory_mb: expected a
// number, 0 to 1e9 MB, got \"x\""), never drawn wrong. Members the page does not show are not
// looked at. tests/fuzz/fuzz_report.cpp draws both pages from arbitrary documents.
#ifndef PPB_CLI_REPORT_INPUT_HPP
#define PPB_CLI_REPORT_INPUT_HPP

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string_view>

namespace ppb::cli::report {

// Throws ppb::InputError for the first member of `plan` a plan's page cannot show.
void check_plan_document(const boost::json::value& plan, std::string_view source);

// The same for a search's page; the best configuration's plan is checked as a plan.
void check_search_document(const boost::json::value& search, std::string_view source);

// The partitioner objective of a plan ("partitioner_objective"; documents written before it was
// named so call it "iteration_time") and of a search's entry ("partitioner_objective", before
// "estimate"). The documents are checked: one of the two is there.
[[nodiscard]] const boost::json::value& plan_objective(const boost::json::object& plan);
[[nodiscard]] const boost::json::value& entry_objective(const boost::json::object& entry);

}  // namespace ppb::cli::report

#endif  // PPB_CLI_REPORT_INPUT_HPP
