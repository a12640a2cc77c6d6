// ppb/memory_part.hpp — one term of a memory model's prediction as a host keeps it (plugin API
// 1.4, ppb_memory_part of ppb/abi.h, checked by ppb::MemoryModel::predict_parts).
#ifndef PPB_MEMORY_PART_HPP
#define PPB_MEMORY_PART_HPP

#include <string>

namespace ppb {

struct MemoryPart {
    std::string name;   // for programs: a-z, 0-9, '_'; a recompute kind's name for its activations
    std::string label;  // the model's words for people
    double mb = 0.0;    // finite, not negative
};

}  // namespace ppb

#endif  // PPB_MEMORY_PART_HPP
