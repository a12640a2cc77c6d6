// The analytic plugin's exported C table: everything else lives in ppb_analytic_core.
#include "model.hpp"

#include <ppb/plugin.hpp>

PPB_EXPORT_MEMORY_MODEL(ppb::analytic::AnalyticModel, ppb::analytic::model_description,
                        ppb::analytic::model_kinds, ppb::analytic::model_flags)
