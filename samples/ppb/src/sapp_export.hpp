// Writing a fit as a layer file in the public SAPP shape (ppb fit --export-sapp).
#ifndef PPB_SAPP_EXPORT_HPP
#define PPB_SAPP_EXPORT_HPP

#include <ppb/dryrun_format.hpp>
#include <ppb/sapp/layer_file.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace ppb::cli {

// The layer file for the coefficients of `fit_document` (ppb.fit/1): BODY memory_parameter = P
// and memory_activation, memory_select_rec, memory_select_comm, memory_both_comm_select,
// memory_recompute = A_r (kinds not determined are left out); HEAD and TAIL memory_parameter =
// H and T; top-level constant_memory_mb = C (0 when C was folded, as the fit then predicts).
// With `layer_template` (a SAPP layer file) its entries, names and times are kept and only the
// memory fields are replaced; without it, entries are named head/body/tail and the body's
// nb_layer is the layer count of a dry run that covers every stage. Throws ppb::InputError when
// H, T or P is not determined, or the layer count cannot be told.
// The template is read with ppb::sapp and must also be one the partitioner can time with.
[[nodiscard]] sapp::LayerFile sapp_layer_file(const boost::json::object& fit_document,
                                              const DryRunSet& dryrun,
                                              const std::optional<std::string>& layer_template);

}  // namespace ppb::cli

#endif  // PPB_SAPP_EXPORT_HPP
