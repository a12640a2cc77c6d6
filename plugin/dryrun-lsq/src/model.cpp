#include "model.hpp"

namespace ppb::dryrun_lsq {

DryRunLsqModel::DryRunLsqModel(std::string_view options_json)
    : options_(parse_options(options_json)) {}

void DryRunLsqModel::fit(std::span<const ppb_observation> observations) {
    fit_.reset();
    fit_ = dryrun_lsq::fit(observations, options_);
}

double DryRunLsqModel::predict(const ppb_placement& placement) const {
    return dryrun_lsq::predict(fitted(), placement);
}

std::optional<double> DryRunLsqModel::predict_std_error(const ppb_placement& placement) const {
    return dryrun_lsq::predict_std_error(fitted(), placement);
}

std::optional<ppb_linear_parameters> DryRunLsqModel::parameters() const {
    return linear_parameters(fitted());
}

std::string DryRunLsqModel::report() const {
    return report_json(fitted());
}

const FitResult& DryRunLsqModel::fitted() const {
    if (!fit_) {
        throw ppb::plugin::NotFitted(
            "dryrun-lsq has not been fitted: call fit() with dry-run observations first");
    }
    return *fit_;
}

}  // namespace ppb::dryrun_lsq
