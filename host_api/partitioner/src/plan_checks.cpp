// What every solver checks of the plan it hands on (plan_checks.hpp).
#include "plan_checks.hpp"

#include <ppb/errors.hpp>

#include <fmt/format.h>

#include <cmath>

namespace ppb::partition::detail {

void check_finite(const Plan& plan) {
    for (const StagePlan& s : plan.stages) {
        if (!std::isfinite(s.memory_mb) || !std::isfinite(s.time)) {
            throw InputError(fmt::format(
                "the {} of stage {} overflowed (it is not a finite number: {}); the inputs are "
                "too large to plan with",
                std::isfinite(s.time) ? "memory" : "time", s.stage,
                std::isfinite(s.time) ? s.memory_mb : s.time));
        }
    }
    if (!std::isfinite(plan.iteration_time)) {
        throw InputError(
            "the iteration time estimate overflowed (it is not a finite number); the layer times "
            "are too large to plan with");
    }
}

}  // namespace ppb::partition::detail
