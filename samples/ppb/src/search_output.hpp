// A search's ranking as a table for people (the ppb.search/1 document is
// ppb/partition/search_document.hpp).
#ifndef PPB_SEARCH_OUTPUT_HPP
#define PPB_SEARCH_OUTPUT_HPP

#include <ppb/partition/search.hpp>
#include <ppb/partition/search_document.hpp>

#include <string>

namespace ppb::cli {

[[nodiscard]] std::string render_search(const partition::SearchSpace& space,
                                        const partition::Problem& base,
                                        const partition::SearchPlan& plan,
                                        const partition::SearchResult& result,
                                        const partition::SearchContext& context);

}  // namespace ppb::cli

#endif  // PPB_SEARCH_OUTPUT_HPP
