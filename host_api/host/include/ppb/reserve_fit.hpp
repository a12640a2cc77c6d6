// ppb/reserve_fit.hpp — fitting the allocator reserve (ppb/allocator_reserve.hpp) to the dry runs
// that measured both the allocated and the reserved peak, and its place in a fit document.
#ifndef PPB_RESERVE_FIT_HPP
#define PPB_RESERVE_FIT_HPP

#include <ppb/allocator_reserve.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/profile_fit.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ppb {

// κ and ρ fitted to the observations of `dryrun` that give reserved_mb (ppb/allocator_reserve.hpp
// says how), `model` being fitted to `dryrun` already (ppb::fit_model, whose result `fit` says at
// which in-flight vector each observation was fitted: A is taken there). The model's own answers
// are used whatever reserve it holds. Nullopt when no observation gives reserved_mb.
[[nodiscard]] std::optional<AllocatorReserve> fit_allocator_reserve(const MemoryModel& model,
                                                                    const DryRunSet& dryrun,
                                                                    const ProfileFit& fit);

// What a person should know about a fitted reserve: one sentence per caveat (too few
// observations for an uncertainty, ρ held at 0 and why), empty when there is none.
[[nodiscard]] std::vector<std::string> reserve_caveats(const AllocatorReserve& reserve);

// {"constant_mb", "activation_ratio", "observations", "ratio_fitted", "constant_fitted",
//  "residual_std_mb" (number or null), "std_error": {"constant_mb", "activation_ratio"} (numbers
//  or null), "activation_range_mb": [smallest, largest]}: the "allocator_reserve" member of
// ppb.fit/1 and of the documents of plans and predictions on reserved memory.
[[nodiscard]] boost::json::object reserve_document(const AllocatorReserve& reserve);

// A one-line statement of the reserve for people: "reserved = allocated + 312.0 MB + 0.184 ×
// activations (6 observations with reserved_mb; residual 21.3 MB)".
[[nodiscard]] std::string describe_reserve(const AllocatorReserve& reserve);

}  // namespace ppb

#endif  // PPB_RESERVE_FIT_HPP
