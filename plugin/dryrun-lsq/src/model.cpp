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

std::vector<std::string> DryRunLsqModel::groups() const {
    if (!fit_)
        return {"body"};
    return fit_->groups;
}

void DryRunLsqModel::fit_grouped(std::span<const std::string> names,
                                 std::span<const ppb_grouped_observation> observations) {
    fit_.reset();
    fit_ = dryrun_lsq::fit_grouped(names, observations, options_);
}

double DryRunLsqModel::predict_grouped(const ppb_grouped_placement& placement) const {
    return dryrun_lsq::predict(fitted(), placement);
}

std::optional<double> DryRunLsqModel::predict_grouped_std_error(
    const ppb_grouped_placement& placement) const {
    return dryrun_lsq::predict_std_error(fitted(), placement);
}

std::optional<ppb_linear_parameters> DryRunLsqModel::group_parameters(std::uint32_t group) const {
    const FitResult& fit = fitted();
    if (group >= fit.groups.size()) {
        throw ppb::plugin::InvalidInput("group " + std::to_string(group) +
                                        " is out of range: the fit has " +
                                        std::to_string(fit.groups.size()) + " groups");
    }
    return dryrun_lsq::group_parameters(fit, group);
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
