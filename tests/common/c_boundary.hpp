// A model class called through the C functions that PPB_EXPORT_MEMORY_MODEL generates, with the
// checks they run before the class sees anything (ppb/plugin/placement_checks.hpp), as a host
// calls it but without building a module. A failure is rethrown as the ppb::plugin exception of
// its status, carrying last_error()'s message, so tests read like calls on the class itself.
#ifndef PPB_TESTS_COMMON_C_BOUNDARY_HPP
#define PPB_TESTS_COMMON_C_BOUNDARY_HPP

#include <ppb/plugin.hpp>

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ppb::test {

template <class Model>
class ThroughBoundary {
  public:
    explicit ThroughBoundary(std::string_view options_json) {
        const std::string options(options_json);
        check(plugin::detail::create<Model>(options.c_str(), &model_));
    }
    ThroughBoundary(const ThroughBoundary&) = delete;
    ThroughBoundary& operator=(const ThroughBoundary&) = delete;
    ~ThroughBoundary() { plugin::detail::destroy(model_); }

    void fit(std::span<const ppb_observation> observations) {
        check(plugin::detail::fit(model_, observations.data(), observations.size()));
    }
    [[nodiscard]] double predict(const ppb_placement& placement) const {
        double out = 0.0;
        check(plugin::detail::predict(model_, &placement, &out));
        return out;
    }
    void predict_batch(std::span<const ppb_placement> placements, std::span<double> out) const {
        check(plugin::detail::predict_batch(model_, placements.data(), placements.size(),
                                            out.data()));
    }
    [[nodiscard]] double predict_std_error(const ppb_placement& placement) const {
        double out = 0.0;
        check(plugin::detail::predict_std_error(model_, &placement, &out));
        return out;
    }

  private:
    static void check(ppb_status status) {
        const std::string message = plugin::detail::last_error();
        switch (status) {
            case PPB_OK:
                return;
            case PPB_ERR_INVALID_INPUT:
                throw plugin::InvalidInput(message);
            case PPB_ERR_NOT_FITTED:
                throw plugin::NotFitted(message);
            case PPB_ERR_NOT_ESTIMABLE:
                throw plugin::NotEstimable(message);
            case PPB_ERR_UNSUPPORTED:
                throw plugin::Unsupported(message);
            default:
                throw std::runtime_error("status " + std::to_string(status) + ": " + message);
        }
    }

    ppb_model* model_ = nullptr;
};

}  // namespace ppb::test

#endif  // PPB_TESTS_COMMON_C_BOUNDARY_HPP
