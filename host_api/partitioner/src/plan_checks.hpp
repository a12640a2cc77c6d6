// Internal: what every solver checks of the plan it hands on.
#ifndef PPB_PARTITION_PLAN_CHECKS_HPP
#define PPB_PARTITION_PLAN_CHECKS_HPP

#include <ppb/partition/problem.hpp>

namespace ppb::partition::detail {

// Throws InputError when a stage's memory or time, or the plan's iteration estimate, is not a
// finite number. Finite inputs within their ranges cannot overflow, but a model's huge memory
// or huge layer times can, and an infinite number must never be handed on to be printed as
// "inf".
void check_finite(const Plan& plan);

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_PLAN_CHECKS_HPP
