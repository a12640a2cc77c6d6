// What `ppb compare` prints for people: the predictions beside the measurements as tables (the
// comparison and its ppb.compare/1 document are the library's, ppb/partition/model_comparison.hpp).
#ifndef PPB_COMPARE_OUTPUT_HPP
#define PPB_COMPARE_OUTPUT_HPP

#include <ppb/partition/model_comparison.hpp>

#include <string>

namespace ppb::cli {

[[nodiscard]] std::string render_comparison(const partition::Comparison& comparison);

}  // namespace ppb::cli

#endif  // PPB_COMPARE_OUTPUT_HPP
