// libFuzzer harness: what the HTML report's pages read (samples/ppb/src/report_input.hpp). Any
// JSON object is drawn as a plan's page and as a search's page; a document the page cannot show
// must be refused with ppb::InputError before anything is drawn, and a page drawn must be whole.
#include "fuzz_support.hpp"

#include "report_html.hpp"

#include <ppb/json_input.hpp>

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const ppb::cli::ReportTexts texts{"fuzz", "ms"};
    ppb::fuzz::expect_only([&] {
        const boost::json::value document = ppb::parse_json(ppb::fuzz::text_of(data, size), "");
        if (!document.is_object())
            return;
        for (const bool search : {false, true}) {
            try {
                const std::string page =
                    search ? ppb::cli::search_report_html(document.get_object(), "", texts)
                           : ppb::cli::plan_report_html(document.get_object(), "", texts);
                if (!page.ends_with("</html>\n"))
                    std::abort();
            } catch (const ppb::InputError&) {
            }
        }
    });
    return 0;
}
