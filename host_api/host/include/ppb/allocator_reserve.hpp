// ppb/allocator_reserve.hpp — what the caching allocator reserves beyond the memory a stage
// allocates, fitted where dry runs give both numbers (host_api/docs/design.md, "Reserved memory").
//
// A job runs out of memory when PyTorch's caching allocator cannot map another segment, so the
// number that meets a device's capacity is the peak *reserved* memory (the segments), not the peak
// *allocated* (the live tensors) a memory model predicts. The model of the difference is stated
// from the allocator's rules (c10/cuda/CUDACachingAllocator.cpp):
//
//     reserved = allocated + reserve,   reserve = κ + ρ · A
//
// - A is the stage's activation memory at its peak: what its in-flight micro-batches hold, the
//   part of the memory model's answer that grows with the in-flight counts (Σ_c count_c · a_c,
//   a_c the chunk's MB per micro-batch: a linear model's activation coefficients, any other
//   model's own slope).
// - κ is what does not churn. Weights, gradients and optimizer states are allocated once, in
//   large buffers (Megatron's contiguous gradient and parameter buffers, FSDP's flat shards): a
//   request above 10 MB gets a segment of its own rounded up to 2 MB, and it is never freed, so it
//   strands at most 2 MB. Small requests (≤ 1 MB) share 2 MB segments and mid-sized ones (1 to
//   10 MB) 20 MB segments, whose spare room is about the same from one stage to the next: a
//   constant.
// - ρ · A is what churns. Activations are allocated in forward and freed in backward, micro-batch
//   by micro-batch, in orders that differ; a freed block stays cached, and a request no cached
//   free block can hold (blocks above max_split_size are never split; adjacent free blocks merge
//   only within one segment) maps a new segment while the free ones stay reserved. The stranded
//   room grows with what churns. With expandable_segments a stream's one segment grows and
//   shrinks by pages, and ρ comes out near 0: the fit finds it, nothing is assumed.
//
// Both are fitted by least squares to the observations that give reserved_mb (y_i = reserved_i −
// allocated_i, A_i from the fitted memory model at the observation's placement), with κ, ρ ≥ 0
// (reserved is at least allocated, and more activations do not strand less): when the
// unconstrained optimum has one below 0 it is held at 0 and the other refitted. One observation,
// or observations whose A are all equal, determine κ alone (ρ is then 0, and said so). The
// uncertainty is the fit's: residual standard error s with n − (parameters) degrees of freedom,
// and the standard error of the reserve at A, sqrt(x Σ xᵀ) with Σ = s² (XᵀX)⁻¹.
#ifndef PPB_ALLOCATOR_RESERVE_HPP
#define PPB_ALLOCATOR_RESERVE_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string_view>

namespace ppb {

struct AllocatorReserve {
    double constant_mb = 0.0;       // κ, MB
    double activation_ratio = 0.0;  // ρ, MB reserved per MB of activations
    std::size_t observations = 0;   // observations that gave reserved_mb
    // Whether ρ was estimated; false when the data held it at 0 (one observation, equal A, or an
    // optimum below 0). Likewise for κ.
    bool ratio_fitted = false;
    bool constant_fitted = false;
    // The residual standard error, and the covariance of (κ, ρ) as [var κ, cov, var ρ], when the
    // fit has degrees of freedom left (n greater than the parameters fitted).
    std::optional<double> residual_std_mb;
    std::array<double, 3> covariance{};
    // The range of A the fit saw, MB: a reserve for A far outside it is an extrapolation.
    double smallest_activation_mb = 0.0;
    double largest_activation_mb = 0.0;

    // κ + ρ · A.
    [[nodiscard]] double reserve_mb(double activation_mb) const noexcept {
        return constant_mb + activation_ratio * activation_mb;
    }
    // The standard error of reserve_mb(A), or nullopt when the fit has no degrees of freedom.
    [[nodiscard]] std::optional<double> std_error_mb(double activation_mb) const noexcept {
        if (!residual_std_mb)
            return std::nullopt;
        const double variance = covariance[0] + 2.0 * activation_mb * covariance[1] +
                                activation_mb * activation_mb * covariance[2];
        return std::sqrt(std::max(variance, 0.0));
    }
};

// The name of the term a prediction of reserved memory adds after the model's own
// (MemoryModel::predict_parts), and of the reserve in a plan's memory breakdown.
inline constexpr std::string_view allocator_reserve_part = "allocator_reserve";

// Which memory a prediction and a plan are about.
enum class MemoryBasis {
    allocated,  // the live tensors: what a memory model predicts
    reserved,   // the caching allocator's segments: allocated plus its reserve
};

}  // namespace ppb

#endif  // PPB_ALLOCATOR_RESERVE_HPP
