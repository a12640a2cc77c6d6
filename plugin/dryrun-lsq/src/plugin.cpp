// The dryrun-lsq plugin's exported C table: everything else lives in ppb_dryrun_lsq_core.
#include "model.hpp"

#include <ppb/plugin.hpp>

PPB_EXPORT_MEMORY_MODEL_WITH_OPTIONS(ppb::dryrun_lsq::DryRunLsqModel,
                                     ppb::dryrun_lsq::model_description,
                                     ppb::dryrun_lsq::model_kinds, ppb::dryrun_lsq::model_flags,
                                     ppb::dryrun_lsq::model_options_help)
