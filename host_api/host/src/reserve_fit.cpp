// Fitting the allocator reserve: least squares of y = reserved − allocated on (1, A) with both
// coefficients held non-negative (ppb/allocator_reserve.hpp states the model and why).
#include <ppb/number_text.hpp>
#include <ppb/reserve_fit.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace ppb {
namespace {

struct Sample {
    double activation_mb = 0.0;  // A_i
    double reserve_mb = 0.0;     // y_i = reserved_i − allocated_i
};

// The two-parameter fit (κ, ρ); the caller checks the signs.
struct Line {
    double constant = 0.0;
    double ratio = 0.0;
};
Line least_squares(const std::vector<Sample>& samples) {
    double mean_a = 0.0;
    double mean_y = 0.0;
    for (const Sample& s : samples) {
        mean_a += s.activation_mb;
        mean_y += s.reserve_mb;
    }
    const auto n = static_cast<double>(samples.size());
    mean_a /= n;
    mean_y /= n;
    double saa = 0.0;
    double say = 0.0;
    for (const Sample& s : samples) {
        saa += (s.activation_mb - mean_a) * (s.activation_mb - mean_a);
        say += (s.activation_mb - mean_a) * (s.reserve_mb - mean_y);
    }
    const double ratio = say / saa;
    return Line{mean_y - ratio * mean_a, ratio};
}

// Whether activations from `low` to `high` MB differ enough to tell ρ from κ: a spread beyond
// rounding of the largest.
bool activations_vary(double low, double high) {
    return high - low > 1e-6 * std::max(1.0, std::abs(high));
}

}  // namespace

std::optional<AllocatorReserve> fit_allocator_reserve(const MemoryModel& model,
                                                      const DryRunSet& dryrun,
                                                      const ProfileFit& fit) {
    // Each observation at the in-flight vector it was fitted at, as the model is asked there.
    const DryRunSet rows = at_vectors(dryrun, fit.active);
    std::vector<Sample> samples;
    for (const Observation& o : rows.observations) {
        if (!o.reserved_mb)
            continue;
        const double a = o.placement.grouped()
                             ? model.activation_in_flight_mb(o.placement.grouped_view())
                             : model.activation_in_flight_mb(o.placement.view());
        samples.push_back(Sample{a, *o.reserved_mb - o.peak_memory_mb});
    }
    if (samples.empty())
        return std::nullopt;

    AllocatorReserve out;
    out.observations = samples.size();
    const auto [low, high] = std::minmax_element(
        samples.begin(), samples.end(),
        [](const Sample& a, const Sample& b) { return a.activation_mb < b.activation_mb; });
    out.smallest_activation_mb = low->activation_mb;
    out.largest_activation_mb = high->activation_mb;

    const auto n = static_cast<double>(samples.size());
    double sum_y = 0.0;
    double sum_ay = 0.0;
    double sum_aa = 0.0;
    for (const Sample& s : samples) {
        sum_y += s.reserve_mb;
        sum_ay += s.activation_mb * s.reserve_mb;
        sum_aa += s.activation_mb * s.activation_mb;
    }
    // The constant alone (the mean), the ratio alone (through the origin), or both.
    const auto constant_only = [&] {
        out.constant_mb = sum_y / n;
        out.constant_fitted = true;
    };
    if (samples.size() >= 2 &&
        activations_vary(out.smallest_activation_mb, out.largest_activation_mb)) {
        const Line line = least_squares(samples);
        if (line.ratio < 0.0) {
            constant_only();
        } else if (line.constant < 0.0) {
            out.activation_ratio = sum_ay / sum_aa;
            out.ratio_fitted = true;
        } else {
            out.constant_mb = line.constant;
            out.activation_ratio = line.ratio;
            out.constant_fitted = out.ratio_fitted = true;
        }
    } else {
        constant_only();
    }

    const std::size_t parameters = (out.constant_fitted ? 1 : 0) + (out.ratio_fitted ? 1 : 0);
    if (samples.size() > parameters) {
        double squares = 0.0;
        for (const Sample& s : samples) {
            const double r = s.reserve_mb - out.reserve_mb(s.activation_mb);
            squares += r * r;
        }
        const double variance = squares / static_cast<double>(samples.size() - parameters);
        out.residual_std_mb = std::sqrt(variance);
        // Σ = s² (XᵀX)⁻¹ over the coefficients fitted; a coefficient held at 0 has no variance.
        if (out.constant_fitted && out.ratio_fitted) {
            const double sum_a = [&] {
                double sum = 0.0;
                for (const Sample& s : samples)
                    sum += s.activation_mb;
                return sum;
            }();
            const double det = n * sum_aa - sum_a * sum_a;
            out.covariance = {variance * sum_aa / det, -variance * sum_a / det, variance * n / det};
        } else if (out.constant_fitted) {
            out.covariance = {variance / n, 0.0, 0.0};
        } else {
            out.covariance = {0.0, 0.0, variance / sum_aa};
        }
    }
    return out;
}

std::vector<std::string> reserve_caveats(const AllocatorReserve& reserve) {
    std::vector<std::string> out;
    if (!reserve.ratio_fitted) {
        if (reserve.observations == 1) {
            out.push_back(
                "one observation gives reserved_mb: the reserve is taken as a constant (ρ = 0); "
                "dry runs of stages with different activation memory would tell how it grows");
        } else if (!activations_vary(reserve.smallest_activation_mb,
                                     reserve.largest_activation_mb)) {
            out.push_back(fmt::format(
                "the observations that give reserved_mb hold the same activation memory ({}): "
                "the reserve is taken as a constant (ρ = 0)",
                format_mb(reserve.largest_activation_mb)));
        } else {
            out.push_back(
                "the reserve does not grow with activation memory in these observations (its "
                "slope fitted below 0): it is taken as a constant (ρ = 0)");
        }
    }
    if (!reserve.constant_fitted) {
        out.push_back(
            "the reserve fitted a constant below 0: it is taken as proportional to activation "
            "memory (κ = 0)");
    }
    if (!reserve.residual_std_mb) {
        out.push_back(fmt::format(
            "{} observation{} with reserved_mb leave{} no degrees of freedom: the reserve's "
            "uncertainty is unknown and not in the standard errors",
            reserve.observations, reserve.observations == 1 ? "" : "s",
            reserve.observations == 1 ? "s" : ""));
    }
    return out;
}

boost::json::object reserve_document(const AllocatorReserve& reserve) {
    boost::json::object out;
    out["constant_mb"] = reserve.constant_mb;
    out["activation_ratio"] = reserve.activation_ratio;
    out["observations"] = reserve.observations;
    out["constant_fitted"] = reserve.constant_fitted;
    out["ratio_fitted"] = reserve.ratio_fitted;
    const auto number_or_null = [](bool known, double value) {
        return known ? boost::json::value(value) : boost::json::value(nullptr);
    };
    const bool known = reserve.residual_std_mb.has_value();
    out["residual_std_mb"] = number_or_null(known, known ? *reserve.residual_std_mb : 0.0);
    out["std_error"] = boost::json::object{
        {"constant_mb",
         number_or_null(known && reserve.constant_fitted, std::sqrt(reserve.covariance[0]))},
        {"activation_ratio",
         number_or_null(known && reserve.ratio_fitted, std::sqrt(reserve.covariance[2]))}};
    out["activation_range_mb"] =
        boost::json::array{reserve.smallest_activation_mb, reserve.largest_activation_mb};
    boost::json::array notes;
    for (const std::string& caveat : reserve_caveats(reserve))
        notes.emplace_back(caveat);
    out["notes"] = std::move(notes);
    return out;
}

std::string describe_reserve(const AllocatorReserve& reserve) {
    std::string residual;
    if (reserve.residual_std_mb)
        residual = fmt::format("; residual {}", format_mb(*reserve.residual_std_mb));
    return fmt::format(
        "reserved = allocated + {} + {:.3f} × activations ({} observation{} with reserved_mb{})",
        format_mb(reserve.constant_mb), reserve.activation_ratio, reserve.observations,
        reserve.observations == 1 ? "" : "s", residual);
}

}  // namespace ppb
