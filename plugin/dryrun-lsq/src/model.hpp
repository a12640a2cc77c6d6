// DryRunLsqModel: the dryrun-lsq memory model behind the plugin boundary (ppb/plugin.hpp).
#ifndef PPB_DRYRUN_LSQ_MODEL_HPP
#define PPB_DRYRUN_LSQ_MODEL_HPP

#include "lsq_fit.hpp"
#include "options.hpp"

#include <ppb/plugin.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::dryrun_lsq {

// What PPB_EXPORT_MEMORY_MODEL publishes about the model.
inline constexpr char model_description[] =
    "Peak memory per stage fitted by least squares from dry-run measurements: const, head, "
    "tail, per-layer parameters and per-kind activations";
inline constexpr std::uint32_t model_kinds = PPB_ALL_KINDS;
inline constexpr char model_options_help[] =
    "rank_tolerance: relative tolerance on the singular values of the column-scaled design that "
    "decides its rank and what is identifiable (default 1e-10, in (0, 1))";
inline constexpr std::uint32_t model_flags = PPB_MODEL_NEEDS_FIT;

class DryRunLsqModel final : public ppb::plugin::MemoryModelBase {
  public:
    // `options_json`: see parse_options(). Throws ppb::plugin::InvalidInput.
    explicit DryRunLsqModel(std::string_view options_json);

    // Replaces any previous fit. A fit that fails leaves the model unfitted, so that nobody
    // predicts from observations they did not mean to use.
    void fit(std::span<const ppb_observation> observations) override;
    [[nodiscard]] double predict(const ppb_placement& placement) const override;
    [[nodiscard]] std::optional<ppb_linear_parameters> parameters() const override;
    [[nodiscard]] std::optional<double> predict_std_error(
        const ppb_placement& placement) const override;
    [[nodiscard]] std::string report() const override;

    // Groups of body layers (plugin API 1.3): {"body"} until a fit, then the fit's groups.
    [[nodiscard]] std::vector<std::string> groups() const override;
    void fit_grouped(std::span<const std::string> names,
                     std::span<const ppb_grouped_observation> observations) override;
    [[nodiscard]] double predict_grouped(const ppb_grouped_placement& placement) const override;
    [[nodiscard]] std::optional<double> predict_grouped_std_error(
        const ppb_grouped_placement& placement) const override;
    [[nodiscard]] std::optional<ppb_linear_parameters> group_parameters(
        std::uint32_t group) const override;

    [[nodiscard]] const FitOptions& options() const noexcept { return options_; }
    // The current fit; throws ppb::plugin::NotFitted before a successful fit.
    [[nodiscard]] const FitResult& fitted() const;

  private:
    FitOptions options_;
    std::optional<FitResult> fit_;
};

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_MODEL_HPP
