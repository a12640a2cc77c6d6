// ppb/memory_model.hpp — header-only C++ view of a loaded memory model, for hosts.
//
// MemoryModel owns one plugin instance and turns the C statuses of ppb/abi.h back into
// exceptions. It holds the plugin's table through a shared_ptr that shares ownership with the
// loaded library (see ppb/loader.hpp), so the library stays mapped while any model lives.
#ifndef PPB_MEMORY_MODEL_HPP
#define PPB_MEMORY_MODEL_HPP

#include <ppb/abi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb {

// A call into a plugin failed. status() is the plugin's ppb_status.
class ModelError : public std::runtime_error {
  public:
    ModelError(ppb_status status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    [[nodiscard]] ppb_status status() const noexcept { return status_; }
    // True when the caller's data, not the plugin, is at fault.
    [[nodiscard]] bool is_input_error() const noexcept {
        return status_ == PPB_ERR_INVALID_INPUT || status_ == PPB_ERR_NOT_ESTIMABLE;
    }

  private:
    ppb_status status_;
};

inline const char* status_name(ppb_status status) noexcept {
    switch (status) {
        case PPB_OK:
            return "ok";
        case PPB_ERR_INVALID_INPUT:
            return "invalid input";
        case PPB_ERR_NOT_FITTED:
            return "not fitted";
        case PPB_ERR_NOT_ESTIMABLE:
            return "not estimable";
        case PPB_ERR_UNSUPPORTED:
            return "unsupported";
        case PPB_ERR_OUT_OF_MEMORY:
            return "out of memory";
        case PPB_ERR_INTERNAL:
            return "internal error";
        default:
            return "unknown status";
    }
}

// The options help of a table (API 1.1): nullopt for a plugin built for API 1.0, whose table
// ends before the field, or one that gives none.
[[nodiscard]] inline std::optional<std::string> options_help(const ppb_memory_model_api& api) {
    const bool has_field =
        api.api_minor >= 1 &&
        api.struct_size >= offsetof(ppb_memory_model_api, options_help) + sizeof(api.options_help);
    if (!has_field || api.options_help == nullptr)
        return std::nullopt;
    return std::string(api.options_help);
}

// Whether the table is of a newer API minor than this host's, whose appended fields the host
// does not use.
[[nodiscard]] inline bool newer_than_host(const ppb_memory_model_api& api) noexcept {
    return api.api_minor > PPB_API_MINOR;
}

class MemoryModel {
  public:
    // `api` must share ownership with the library that holds the table.
    MemoryModel(std::shared_ptr<const ppb_memory_model_api> api, std::string_view options_json)
        : api_(std::move(api)) {
        if (!api_ || api_->create == nullptr) {
            throw ModelError(PPB_ERR_INTERNAL, "plugin table has no create function");
        }
        const std::string options(options_json);
        ppb_model* raw = nullptr;
        check(api_->create(options.c_str(), &raw), "create");
        if (raw == nullptr) {
            throw ModelError(PPB_ERR_INTERNAL, context("create") + ": returned no model");
        }
        model_ = raw;
    }
    MemoryModel(const MemoryModel&) = delete;
    MemoryModel& operator=(const MemoryModel&) = delete;
    MemoryModel(MemoryModel&& other) noexcept
        : api_(std::move(other.api_)), model_(std::exchange(other.model_, nullptr)) {}
    MemoryModel& operator=(MemoryModel&& other) noexcept {
        if (this != &other) {
            reset();
            api_ = std::move(other.api_);
            model_ = std::exchange(other.model_, nullptr);
        }
        return *this;
    }
    ~MemoryModel() { reset(); }

    [[nodiscard]] std::string name() const { return api_->name; }
    [[nodiscard]] std::string version() const { return api_->version; }
    [[nodiscard]] std::uint32_t kinds() const noexcept { return api_->kinds; }
    [[nodiscard]] bool needs_fit() const noexcept {
        return (api_->flags & PPB_MODEL_NEEDS_FIT) != 0;
    }
    [[nodiscard]] const ppb_memory_model_api& api() const noexcept { return *api_; }

    // The plugin API minor it was built for; features newer than it are unavailable.
    [[nodiscard]] std::uint32_t api_minor() const noexcept { return api_->api_minor; }
    // Built for a newer API minor than this host's (ppb/abi.h, Versioning): the host uses the
    // part of the table it knows and ignores the fields appended after it.
    [[nodiscard]] bool newer_than_host() const noexcept {
        return ppb::newer_than_host(*api_);
    }

    // Text describing the model's options (API 1.1), or nullopt when the plugin is older or
    // gives none.
    [[nodiscard]] std::optional<std::string> options_help() const {
        return ppb::options_help(*api_);
    }

    void fit(std::span<const ppb_observation> observations) {
        check(api_->fit(model_, observations.data(), observations.size()), "fit");
    }

    [[nodiscard]] double predict(const ppb_placement& placement) const {
        double out = 0.0;
        check(api_->predict(model_, &placement, &out), "predict");
        return out;
    }

    [[nodiscard]] std::vector<double> predict_batch(
        std::span<const ppb_placement> placements) const {
        std::vector<double> out(placements.size());
        check(api_->predict_batch(model_, placements.data(), placements.size(), out.data()),
              "predict_batch");
        return out;
    }

    // Standard error in MB of predict()'s value (API 1.2), or nullopt when the plugin is older or
    // the model has no estimate of its uncertainty.
    [[nodiscard]] std::optional<double> predict_std_error(const ppb_placement& placement) const {
        const bool has_field =
            api_->api_minor >= 2 &&
            api_->struct_size >= offsetof(ppb_memory_model_api, predict_std_error) +
                                     sizeof(api_->predict_std_error) &&
            api_->predict_std_error != nullptr;
        if (!has_field)
            return std::nullopt;
        double out = 0.0;
        const ppb_status status = api_->predict_std_error(model_, &placement, &out);
        if (status == PPB_ERR_UNSUPPORTED)
            return std::nullopt;
        check(status, "predict_std_error");
        return out;
    }

    // The linear coefficients, or nullopt when the model is not linear.
    [[nodiscard]] std::optional<ppb_linear_parameters> parameters() const {
        ppb_linear_parameters out{};
        out.struct_size = sizeof(out);
        const ppb_status status = api_->parameters(model_, &out);
        if (status == PPB_ERR_UNSUPPORTED)
            return std::nullopt;
        check(status, "parameters");
        return out;
    }

    // JSON object {"parameters": {...}, "diagnostics": {...}}.
    [[nodiscard]] std::string report() const {
        const char* text = nullptr;
        check(api_->report(model_, &text), "report");
        if (text == nullptr)
            throw ModelError(PPB_ERR_INTERNAL, context("report") + ": no text");
        return text;
    }

  private:
    void reset() noexcept {
        if (model_ != nullptr && api_ && api_->destroy != nullptr)
            api_->destroy(model_);
        model_ = nullptr;
    }

    [[nodiscard]] std::string context(const char* call) const {
        return std::string("memory model '") + api_->name + "' " + api_->version + ": " + call;
    }

    void check(ppb_status status, const char* call) const {
        if (status == PPB_OK)
            return;
        const char* message = api_->last_error != nullptr ? api_->last_error() : nullptr;
        throw ModelError(
            status, context(call) + " failed (" + status_name(status) +
                        "): " + (message != nullptr && *message != '\0' ? message : "no message"));
    }

    std::shared_ptr<const ppb_memory_model_api> api_;
    ppb_model* model_ = nullptr;
};

}  // namespace ppb

#endif  // PPB_MEMORY_MODEL_HPP
