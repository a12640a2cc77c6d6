// The table plugin's exported C table: everything else lives in ppb_table_core.
#include "model.hpp"

#include <ppb/plugin.hpp>

PPB_EXPORT_MEMORY_MODEL_WITH_OPTIONS(ppb::table::TableModel, ppb::table::model_description,
                                     ppb::table::model_kinds, ppb::table::model_flags,
                                     ppb::table::model_options_help)
