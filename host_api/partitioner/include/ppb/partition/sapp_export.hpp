// ppb/partition/sapp_export.hpp — a fit written as a layer file in the public SAPP shape, the
// partitioner's own input (ppb fit --export-sapp, ppb.sapp in Python).
#ifndef PPB_PARTITION_SAPP_EXPORT_HPP
#define PPB_PARTITION_SAPP_EXPORT_HPP

#include <ppb/dryrun_format.hpp>
#include <ppb/sapp/layer_file.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace ppb::partition {

struct SappExportOptions {
    // A SAPP layer file whose entries, names and times are kept (--model-desc), if any.
    std::optional<std::string> layer_template;
    // The model's name when the template gives none (SAPP finds the file by it).
    std::string name = "model";
    // Write a negative fitted constant as 0 (--sapp-fold-negative-constant): every stage is then
    // predicted |C| MB higher than the fit predicts, a conservative file.
    bool fold_negative_constant = false;
};

// The layer file for the coefficients of `fit_document` (ppb.fit/1), in SAPP's own fields: BODY
// memory_parameter = P and memory_activation, memory_select_rec, memory_select_comm,
// memory_both_comm_select, memory_recompute = A_r (kinds not determined are left out); HEAD and
// TAIL memory_parameter = H and T, which exclude the constant; top-level stage_const_mem = C
// (0 when C was folded, as the fit then predicts), which SAPP adds to every stage; name,
// model_name of each entry, pre_defined_layer (HEAD entries 0, TAIL entries -1) and
// auto_partition_layer (the BODY entry and its nb_layer), the template's own where it gives
// them. With a template its entries, names and times are kept and only the memory fields are
// replaced (the dry-run file's body_layers, when given, must be the template's); without it,
// the entries are those SAPP's -init writes (ModelInfo in hyper-parallel's sapp_ppb
// utils/config.py): HEAD, BODY and TAIL, named after their type, the BODY's nb_layer the
// dry-run file's body_layers (else the layer count of a dry run that covers every stage), and
// each entry's time the dry-run file's layer_times (SAPP's time_config) when it gives them. One
// difference from SAPP's own file: SAPP's HEAD and TAIL memory include the constant it also
// writes as stage_const_mem; these exclude it, so the file predicts what the fit predicts. A
// negative C is written as it is, with a
// warning, or as 0 when folding (`options`). The result's `warnings` hold the template's
// reader warnings and the export's own, for the caller to show. Throws ppb::InputError when H,
// T or P is not determined or negative, or the layer count cannot be told. The template is
// read with ppb::sapp and must also be one the partitioner can time with.
[[nodiscard]] sapp::LayerFile sapp_layer_file(const boost::json::object& fit_document,
                                              const DryRunSet& dryrun,
                                              const SappExportOptions& options);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_SAPP_EXPORT_HPP
