// `ppb design` for people: each run's stages, its MindFormers arrays, Megatron flags and SAPP
// -init skeleton, then the expected standard error of every coefficient.
#ifndef PPB_DESIGN_OUTPUT_HPP
#define PPB_DESIGN_OUTPUT_HPP

#include <ppb/partition/design.hpp>

#include <string>

namespace ppb::cli {

[[nodiscard]] std::string render_design(const partition::DesignRequest& request,
                                        const partition::Design& design,
                                        const std::string& prior_model);

}  // namespace ppb::cli

#endif  // PPB_DESIGN_OUTPUT_HPP
