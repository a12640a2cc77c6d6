// ppb/memory_model.hpp — header-only C++ view of a loaded memory model, for hosts.
//
// MemoryModel owns one plugin instance and turns the C statuses of ppb/abi.h back into
// exceptions. It holds the plugin's table through a shared_ptr that shares ownership with the
// loaded library (see ppb/loader.hpp), so the library stays mapped while any model lives.
//
// It also checks what the plugin hands back and passes nothing on that breaks the contract of
// ppb/abi.h: a prediction or standard error that is NaN, infinite or negative; coefficients with
// bits outside the PPB_PARAM_* set or a non-finite value for a set bit; a report that is not a
// JSON object with "parameters" and "diagnostics" objects; a status outside PPB_OK ..
// PPB_ERR_INTERNAL; a null or over-long last_error() or report text; the terms of a prediction
// (API 1.4) with a name, label or number ppb/abi.h does not allow, or that do not add up to the
// prediction. Each is the plugin's fault:
// a ModelError with PPB_ERR_INTERNAL whose message names the plugin and its version, e.g.
//     plugin nan-model 1.0.0 returned a prediction that is not a number (NaN) for placement 3
#ifndef PPB_MEMORY_MODEL_HPP
#define PPB_MEMORY_MODEL_HPP

#include <ppb/abi.h>
#include <ppb/allocator_reserve.hpp>
#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/memory_part.hpp>

#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
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

// Every PPB_PARAM_* bit of ppb_linear_parameters.identified.
inline constexpr std::uint32_t all_parameter_bits =
    PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER |
    (PPB_PARAM_ACTIVATION(PPB_KIND_COUNT) - PPB_PARAM_ACTIVATION(0));

// The longest texts a host reads from a plugin: a last_error() message and a report. A text
// without its terminating NUL within these is the plugin's fault, never read further.
inline constexpr std::size_t max_error_message_bytes = std::size_t{64} << 10;
inline constexpr std::size_t max_report_bytes = std::size_t{16} << 20;
// The terms of one prediction (API 1.4): at most this many, names and labels at most this long.
inline constexpr std::uint32_t max_memory_parts = 64;
inline constexpr std::size_t max_part_name_bytes = 32;
inline constexpr std::size_t max_part_label_bytes = 120;
// How far the terms of a prediction may add up from it: rounding, relative to the prediction.
inline constexpr double memory_parts_tolerance = 1e-9;

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

// Chunk c's activation MB per micro-batch under linear coefficients, a_c = Σ_g Σ_k A_gk · n_cgk:
// `group_layers` as ppb_grouped_placement's (num_groups groups, coefficients[g] each), or null
// for a plain placement (one group, the chunks' layers). Nullopt when a coefficient the
// placement needs is not identified. The one owner of this sum: the allocator reserve's A and the
// host's zero-count rule (ppb::chunk_activations) both read it.
[[nodiscard]] inline std::optional<std::vector<double>> linear_chunk_activations(
    const ppb_placement& placement, const std::uint32_t* group_layers, std::uint32_t num_groups,
    std::span<const ppb_linear_parameters> coefficients) {
    std::vector<double> out(placement.num_chunks, 0.0);
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
        for (std::uint32_t g = 0; g < num_groups; ++g) {
            for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
                const std::uint32_t n =
                    group_layers != nullptr
                        ? group_layers[(std::size_t{c} * num_groups + g) * PPB_KIND_COUNT + k]
                        : placement.chunks[c].layers[k];
                if (n == 0)
                    continue;
                if ((coefficients[g].identified & PPB_PARAM_ACTIVATION(k)) == 0)
                    return std::nullopt;
                out[c] += coefficients[g].activation_mb[k] * n;
            }
        }
    }
    return out;
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
        : api_(std::move(other.api_)),
          model_(std::exchange(other.model_, nullptr)),
          reserve_(std::exchange(other.reserve_, std::nullopt)) {}
    MemoryModel& operator=(MemoryModel&& other) noexcept {
        if (this != &other) {
            reset();
            api_ = std::move(other.api_);
            model_ = std::exchange(other.model_, nullptr);
            reserve_ = std::exchange(other.reserve_, std::nullopt);
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
    [[nodiscard]] bool newer_than_host() const noexcept { return ppb::newer_than_host(*api_); }

    // Text describing the model's options (API 1.1), or nullopt when the plugin is older or
    // gives none.
    [[nodiscard]] std::optional<std::string> options_help() const {
        return ppb::options_help(*api_);
    }

    void fit(std::span<const ppb_observation> observations) {
        check(api_->fit(model_, observations.data(), observations.size()), "fit");
    }

    // ---- Predictions: of allocated memory, or of reserved memory with an allocator reserve ----
    //
    // Without an allocator reserve (the default) every answer below is the model's own, of the
    // memory a stage allocates. With one (set_allocator_reserve), every answer is of the memory
    // the caching allocator reserves: the model's answer plus κ + ρ · A
    // (ppb/allocator_reserve.hpp), A the placement's activation memory at its in-flight counts
    // (activation_in_flight_mb). So predictions, coefficients (const + κ and every activation
    // coefficient × (1 + ρ): the same sum for a linear model), standard errors (the model's and the
    // reserve's, in quadrature) and parts (the model's, then "allocator_reserve") all say one
    // thing, and every host use of the model (a prediction, a plan, a simulation, a comparison)
    // plans on the one basis.

    [[nodiscard]] double predict(const ppb_placement& placement) const {
        const double allocated = model_predict(placement);
        if (!reserve_)
            return allocated;
        return allocated + reserve_->reserve_mb(activation_at(placement, allocated));
    }

    [[nodiscard]] std::vector<double> predict_batch(
        std::span<const ppb_placement> placements) const {
        std::vector<double> out = model_predict_batch(placements);
        add_reserves(placements, out);
        return out;
    }

    // Standard error in MB of predict()'s value (API 1.2), or nullopt when the plugin is older or
    // the model has no estimate of its uncertainty.
    [[nodiscard]] std::optional<double> predict_std_error(const ppb_placement& placement) const {
        const std::optional<double> error = model_std_error(placement);
        if (!error || !reserve_)
            return error;
        const double allocated = model_predict(placement);
        return with_reserve_error(*error, activation_at(placement, allocated));
    }

    // The linear coefficients, or nullopt when the model is not linear.
    [[nodiscard]] std::optional<ppb_linear_parameters> parameters() const {
        std::optional<ppb_linear_parameters> out = model_parameters();
        if (out)
            add_reserve(*out);
        return out;
    }

    [[nodiscard]] double predict_grouped(const ppb_grouped_placement& placement) const {
        const double allocated = model_predict_grouped(placement);
        if (!reserve_)
            return allocated;
        return allocated + reserve_->reserve_mb(activation_at(placement, allocated));
    }

    [[nodiscard]] std::vector<double> predict_grouped_batch(
        std::span<const ppb_grouped_placement> placements) const {
        std::vector<double> out = model_predict_grouped_batch(placements);
        add_reserves(placements, out);
        return out;
    }

    [[nodiscard]] std::optional<double> predict_grouped_std_error(
        const ppb_grouped_placement& placement) const {
        const std::optional<double> error = model_grouped_std_error(placement);
        if (!error || !reserve_)
            return error;
        const double allocated = model_predict_grouped(placement);
        return with_reserve_error(*error, activation_at(placement, allocated));
    }

    // Coefficients of group `group` (shared const, head and tail; the group's per-layer and
    // activation), or nullopt when the model is not linear.
    [[nodiscard]] std::optional<ppb_linear_parameters> group_parameters(std::uint32_t group) const {
        std::optional<ppb_linear_parameters> out = model_group_parameters(group);
        if (out)
            add_reserve(*out);
        return out;
    }

    // ---- Reserved memory (ppb/allocator_reserve.hpp) ----

    // Sets (or, with nullopt, clears) the allocator reserve: from then on every prediction is of
    // reserved memory.
    void set_allocator_reserve(std::optional<AllocatorReserve> reserve) noexcept {
        reserve_ = reserve;
    }
    [[nodiscard]] const std::optional<AllocatorReserve>& allocator_reserve() const noexcept {
        return reserve_;
    }
    [[nodiscard]] MemoryBasis basis() const noexcept {
        return reserve_ ? MemoryBasis::reserved : MemoryBasis::allocated;
    }

    // A of ppb/allocator_reserve.hpp: the placement's activation memory at its in-flight counts
    // under the model's own (allocated) answers, Σ_c count_c · a_c, a_c the chunk's MB per
    // micro-batch: from a linear model's coefficients (linear_chunk_activations), otherwise the
    // model's own slope, its answer with one more micro-batch on the chunk less its answer.
    [[nodiscard]] double activation_in_flight_mb(const ppb_grouped_placement& placement) const {
        const double allocated = model_predict_grouped(placement);
        return activation_at(placement, allocated);
    }
    [[nodiscard]] double activation_in_flight_mb(const ppb_placement& placement) const {
        const double allocated = model_predict(placement);
        return activation_at(placement, allocated);
    }

    // ---- Groups of body layers (plugin API 1.3) ----

    // Whether the plugin has the grouped calls: built for API 1.3 or newer.
    [[nodiscard]] bool supports_groups() const noexcept {
        return api_->api_minor >= 3 &&
               api_->struct_size >= offsetof(ppb_memory_model_api, group_parameters) +
                                        sizeof(api_->group_parameters) &&
               api_->groups != nullptr && api_->fit_grouped != nullptr &&
               api_->predict_grouped != nullptr && api_->predict_grouped_batch != nullptr &&
               api_->predict_grouped_std_error != nullptr && api_->group_parameters != nullptr;
    }

    // The model's groups of body layers, in model order: {"body"} for a plugin older than API 1.3
    // (it knows one kind of body layer).
    [[nodiscard]] std::vector<std::string> groups() const {
        if (!supports_groups())
            return {"body"};
        const char* const* names = nullptr;
        std::uint32_t count = 0;
        check(api_->groups(model_, &names, &count), "groups");
        if (count == 0 || count > limits_max_groups)
            fault("returned " + std::to_string(count) + " groups of layers (1 to " +
                  std::to_string(limits_max_groups) + " are possible)");
        if (names == nullptr)
            fault("returned a null pointer for its group names");
        std::vector<std::string> out;
        for (std::uint32_t g = 0; g < count; ++g) {
            if (names[g] == nullptr)
                fault("returned a null name for group " + std::to_string(g));
            const std::size_t length = bounded_length(names[g], max_error_message_bytes);
            if (length > max_error_message_bytes)
                fault("returned a name for group " + std::to_string(g) + " without its end");
            out.emplace_back(names[g], length);
        }
        return out;
    }

    // fit() with layers counted per group, `names` naming the groups of group_layers. A plugin
    // older than API 1.3 takes one group as a plain fit and refuses more (ppb::InputError).
    void fit_grouped(std::span<const std::string> names,
                     std::span<const ppb_grouped_observation> observations) {
        if (!supports_groups()) {
            if (names.size() != 1)
                throw InputError(too_old_for_groups(names));
            std::vector<ppb_observation> plain;
            plain.reserve(observations.size());
            for (const auto& o : observations)
                plain.push_back(ppb_observation{o.placement.placement, o.peak_memory_mb});
            fit(plain);
            return;
        }
        std::vector<const char*> pointers;
        pointers.reserve(names.size());
        for (const auto& n : names)
            pointers.push_back(n.c_str());
        check(api_->fit_grouped(model_, pointers.data(), static_cast<std::uint32_t>(names.size()),
                                observations.data(), observations.size()),
              "fit_grouped");
    }

    // ---- The terms of a prediction (plugin API 1.4) ----

    // Whether the plugin has predict_parts: built for API 1.4 or newer.
    [[nodiscard]] bool supports_parts() const noexcept {
        return api_->api_minor >= 4 &&
               api_->struct_size >=
                   offsetof(ppb_memory_model_api, predict_parts) + sizeof(api_->predict_parts) &&
               api_->predict_parts != nullptr;
    }

    // predict_grouped()'s value for `placement` as the model's own terms, in the model's order;
    // nullopt when the plugin is older than API 1.4 or the model gives none. What the plugin hands
    // back is checked as ppb/abi.h states it (names, labels, finite non-negative MB, at most
    // max_memory_parts) and must add up to predict_grouped()'s value within
    // memory_parts_tolerance: anything else is the plugin's fault.
    [[nodiscard]] std::optional<std::vector<MemoryPart>> predict_parts(
        const ppb_grouped_placement& placement) const {
        if (!supports_parts())
            return std::nullopt;
        std::vector<ppb_memory_part> raw(16);
        std::uint32_t count = 0;
        ppb_status status = api_->predict_parts(model_, &placement, raw.data(),
                                                static_cast<std::uint32_t>(raw.size()), &count);
        if (status == PPB_OK && count > raw.size() && count <= max_memory_parts) {
            // The first buffer was too small: once more with room for all of them.
            const std::uint32_t first = count;
            raw.resize(count);
            status = api_->predict_parts(model_, &placement, raw.data(), first, &count);
            if (status == PPB_OK && count != first) {
                fault("returned " + std::to_string(first) + " parts of a prediction, then " +
                      std::to_string(count) + " for the same placement");
            }
        }
        if (status == PPB_ERR_UNSUPPORTED)
            return std::nullopt;
        check(status, "predict_parts");
        const auto where = [&] { return describe(placement.placement); };
        if (count == 0 || count > max_memory_parts) {
            fault("returned " + std::to_string(count) + " parts of a prediction (1 to " +
                  std::to_string(max_memory_parts) + " are possible) for " + where());
        }
        std::vector<MemoryPart> parts;
        double sum = 0.0;
        for (std::uint32_t i = 0; i < count; ++i) {
            const ppb_memory_part& part = raw[i];
            const std::string which = "part " + std::to_string(i) + " of a prediction";
            if (part.name == nullptr || part.label == nullptr)
                fault("returned a null name or label for " + which);
            const std::size_t name_length = bounded_length(part.name, max_part_name_bytes);
            std::string name(part.name, std::min(name_length, max_part_name_bytes));
            if (name.empty() || name_length > max_part_name_bytes ||
                name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") !=
                    std::string::npos) {
                fault("returned the name '" + name + "' for " + which + " (1 to " +
                      std::to_string(max_part_name_bytes) + " of a-z, 0-9 and '_')");
            }
            for (const MemoryPart& earlier : parts) {
                if (earlier.name == name)
                    fault("returned two parts of a prediction named '" + name + "'");
            }
            const std::size_t label_length = bounded_length(part.label, max_part_label_bytes);
            std::string label(part.label, std::min(label_length, max_part_label_bytes));
            if (label.empty() || label_length > max_part_label_bytes || !readable_text(label)) {
                fault("returned a label for part '" + name + "' of a prediction that is not 1 to " +
                      std::to_string(max_part_label_bytes) +
                      " bytes of UTF-8 text without control characters");
            }
            check_value(part.mb, ("part '" + name + "' of a prediction").c_str(), where);
            sum += part.mb;
            parts.push_back(MemoryPart{std::move(name), std::move(label), part.mb});
        }
        const double whole = model_predict_grouped(placement);
        if (std::abs(sum - whole) > memory_parts_tolerance * std::max(1.0, whole)) {
            fault("returned parts of a prediction that add up to " + number(sum) + " MB, not to " +
                  "its prediction " + number(whole) + " MB, for " + where());
        }
        if (reserve_) {
            const double a = activation_at(placement, whole);
            parts.push_back(MemoryPart{std::string(allocator_reserve_part),
                                       "the allocator's reserve (fragmentation, cached blocks)",
                                       reserve_->reserve_mb(a)});
        }
        return parts;
    }

    // JSON object {"parameters": {...}, "diagnostics": {...}}.
    [[nodiscard]] std::string report() const {
        const char* text = nullptr;
        check(api_->report(model_, &text), "report");
        if (text == nullptr)
            fault("returned a null pointer for its report");
        const std::size_t length = bounded_length(text, max_report_bytes);
        if (length > max_report_bytes) {
            fault("returned a report longer than " + std::to_string(max_report_bytes) +
                  " bytes (or without its terminating NUL)");
        }
        std::string report(text, length);
        check_report(report);
        return report;
    }

  private:
    // ---- The model's own answers (allocated memory), as the plugin gives them ----

    [[nodiscard]] double model_predict(const ppb_placement& placement) const {
        double out = 0.0;
        check(api_->predict(model_, &placement, &out), "predict");
        check_value(out, "a prediction", [&] { return describe(placement); });
        return out;
    }

    [[nodiscard]] std::vector<double> model_predict_batch(
        std::span<const ppb_placement> placements) const {
        std::vector<double> out(placements.size());
        check(api_->predict_batch(model_, placements.data(), placements.size(), out.data()),
              "predict_batch");
        for (std::size_t i = 0; i < out.size(); ++i)
            check_value(out[i], "a prediction", [&] { return "placement " + std::to_string(i); });
        return out;
    }

    // Standard error in MB of predict()'s value (API 1.2), or nullopt when the plugin is older or
    // the model has no estimate of its uncertainty.
    [[nodiscard]] std::optional<double> model_std_error(const ppb_placement& placement) const {
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
        check_value(out, "a standard error", [&] { return describe(placement); });
        return out;
    }

    // The linear coefficients, or nullopt when the model is not linear.
    [[nodiscard]] std::optional<ppb_linear_parameters> model_parameters() const {
        ppb_linear_parameters out{};
        out.struct_size = sizeof(out);
        const ppb_status status = api_->parameters(model_, &out);
        if (status == PPB_ERR_UNSUPPORTED)
            return std::nullopt;
        check(status, "parameters");
        check_parameters(out);
        return out;
    }

    [[nodiscard]] double model_predict_grouped(const ppb_grouped_placement& placement) const {
        if (!supports_groups()) {
            require_one_group(placement.num_groups);
            return model_predict(placement.placement);
        }
        double out = 0.0;
        check(api_->predict_grouped(model_, &placement, &out), "predict_grouped");
        check_value(out, "a prediction", [&] { return describe(placement.placement); });
        return out;
    }

    [[nodiscard]] std::vector<double> model_predict_grouped_batch(
        std::span<const ppb_grouped_placement> placements) const {
        if (!supports_groups()) {
            std::vector<ppb_placement> plain;
            plain.reserve(placements.size());
            for (const auto& p : placements) {
                require_one_group(p.num_groups);
                plain.push_back(p.placement);
            }
            return model_predict_batch(plain);
        }
        std::vector<double> out(placements.size());
        check(api_->predict_grouped_batch(model_, placements.data(), placements.size(), out.data()),
              "predict_grouped_batch");
        for (std::size_t i = 0; i < out.size(); ++i)
            check_value(out[i], "a prediction", [&] { return "placement " + std::to_string(i); });
        return out;
    }

    [[nodiscard]] std::optional<double> model_grouped_std_error(
        const ppb_grouped_placement& placement) const {
        if (!supports_groups()) {
            require_one_group(placement.num_groups);
            return model_std_error(placement.placement);
        }
        double out = 0.0;
        const ppb_status status = api_->predict_grouped_std_error(model_, &placement, &out);
        if (status == PPB_ERR_UNSUPPORTED)
            return std::nullopt;
        check(status, "predict_grouped_std_error");
        check_value(out, "a standard error", [&] { return describe(placement.placement); });
        return out;
    }

    // Coefficients of group `group` (shared const, head and tail; the group's per-layer and
    // activation), or nullopt when the model is not linear.
    [[nodiscard]] std::optional<ppb_linear_parameters> model_group_parameters(
        std::uint32_t group) const {
        if (!supports_groups()) {
            if (group != 0)
                throw InputError(too_old_for_groups({}));
            return model_parameters();
        }
        ppb_linear_parameters out{};
        out.struct_size = sizeof(out);
        const ppb_status status = api_->group_parameters(model_, group, &out);
        if (status == PPB_ERR_UNSUPPORTED)
            return std::nullopt;
        check(status, "group_parameters");
        check_parameters(out);
        return out;
    }

    // ---- The allocator reserve ----

    [[nodiscard]] static const ppb_placement& plain_of(const ppb_placement& p) noexcept {
        return p;
    }
    [[nodiscard]] static const ppb_placement& plain_of(const ppb_grouped_placement& p) noexcept {
        return p.placement;
    }
    [[nodiscard]] static ppb_placement& plain_of(ppb_placement& p) noexcept { return p; }
    [[nodiscard]] static ppb_placement& plain_of(ppb_grouped_placement& p) noexcept {
        return p.placement;
    }

    // Each chunk's activation MB per micro-batch of `placement` from the model's own coefficients,
    // or nullopt when it is not linear or leaves one the placement needs unidentified.
    [[nodiscard]] std::optional<std::vector<double>> own_chunk_activations(
        const ppb_placement& placement) const {
        const std::optional<ppb_linear_parameters> c = model_parameters();
        if (!c)
            return std::nullopt;
        return linear_chunk_activations(placement, nullptr, 1, std::span(&*c, 1));
    }
    [[nodiscard]] std::optional<std::vector<double>> own_chunk_activations(
        const ppb_grouped_placement& placement) const {
        if (!supports_groups())
            return own_chunk_activations(placement.placement);
        std::vector<ppb_linear_parameters> coefficients;
        for (std::uint32_t g = 0; g < placement.num_groups; ++g) {
            const std::optional<ppb_linear_parameters> c = model_group_parameters(g);
            if (!c)
                return std::nullopt;
            coefficients.push_back(*c);
        }
        return linear_chunk_activations(placement.placement, placement.group_layers,
                                        placement.num_groups, coefficients);
    }

    [[nodiscard]] std::vector<double> own_batch(std::span<const ppb_placement> placements) const {
        return model_predict_batch(placements);
    }
    [[nodiscard]] std::vector<double> own_batch(
        std::span<const ppb_grouped_placement> placements) const {
        return model_predict_grouped_batch(placements);
    }

    // A for each placement (activation_in_flight_mb), `allocated` being the model's own answers
    // for them: from coefficients where the model has them, else from one batch of the model's
    // answers with one more micro-batch on each chunk in turn.
    template <class Placement>
    [[nodiscard]] std::vector<double> activations_of(std::span<const Placement> placements,
                                                     std::span<const double> allocated) const {
        std::vector<double> out(placements.size(), 0.0);
        std::vector<std::size_t> probed;  // placements without coefficients
        for (std::size_t i = 0; i < placements.size(); ++i) {
            const ppb_placement& plain = plain_of(placements[i]);
            if (const auto a = own_chunk_activations(placements[i])) {
                for (std::uint32_t c = 0; c < plain.num_chunks; ++c)
                    out[i] += (*a)[c] * plain.chunks[c].in_flight;
            } else {
                probed.push_back(i);
            }
        }
        if (probed.empty())
            return out;
        // One copy of the chunks per probe, each with one more micro-batch on its chunk.
        std::vector<std::vector<ppb_chunk>> chunks;
        std::vector<Placement> probes;
        for (const std::size_t i : probed) {
            const ppb_placement& plain = plain_of(placements[i]);
            for (std::uint32_t c = 0; c < plain.num_chunks; ++c) {
                chunks.emplace_back(plain.chunks, plain.chunks + plain.num_chunks);
                chunks.back()[c].in_flight += 1;
            }
        }
        std::size_t next = 0;
        for (const std::size_t i : probed) {
            for (std::uint32_t c = 0; c < plain_of(placements[i]).num_chunks; ++c) {
                probes.push_back(placements[i]);
                plain_of(probes.back()).chunks = chunks[next++].data();
            }
        }
        const std::vector<double> answers = own_batch(std::span<const Placement>(probes));
        next = 0;
        for (const std::size_t i : probed) {
            const ppb_placement& plain = plain_of(placements[i]);
            for (std::uint32_t c = 0; c < plain.num_chunks; ++c) {
                const double slope = std::max(answers[next++] - allocated[i], 0.0);
                out[i] += slope * plain.chunks[c].in_flight;
            }
        }
        return out;
    }

    // A for one placement, `allocated` being the model's own answer for it.
    template <class Placement>
    [[nodiscard]] double activation_at(const Placement& placement, double allocated) const {
        return activations_of(std::span(&placement, 1), std::span(&allocated, 1))[0];
    }

    template <class Placement>
    void add_reserves(std::span<const Placement> placements, std::vector<double>& answers) const {
        if (!reserve_)
            return;
        const std::vector<double> a = activations_of(placements, std::span<const double>(answers));
        for (std::size_t i = 0; i < answers.size(); ++i)
            answers[i] += reserve_->reserve_mb(a[i]);
    }

    // const + κ, each identified activation coefficient × (1 + ρ).
    void add_reserve(ppb_linear_parameters& p) const noexcept {
        if (!reserve_)
            return;
        if ((p.identified & PPB_PARAM_CONST) != 0)
            p.const_mb += reserve_->constant_mb;
        for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if ((p.identified & PPB_PARAM_ACTIVATION(k)) != 0)
                p.activation_mb[k] *= 1.0 + reserve_->activation_ratio;
        }
    }

    // The model's standard error and the reserve's at `activation_mb`, in quadrature (the fits
    // are of different numbers, taken as independent); the model's alone when the reserve's fit
    // had no degrees of freedom left.
    [[nodiscard]] double with_reserve_error(double error, double activation_mb) const {
        const std::optional<double> reserve = reserve_->std_error_mb(activation_mb);
        return reserve ? std::hypot(error, *reserve) : error;
    }

    // limits::groups.max, without making every host include ppb/limits.hpp's implementation.
    static constexpr std::uint32_t limits_max_groups = 64;

    // Why a plugin older than API 1.3 cannot take layers counted per group.
    [[nodiscard]] std::string too_old_for_groups(std::span<const std::string> names,
                                                 std::uint32_t count = 0) const {
        std::string which;
        if (count > 1)
            which = " (" + std::to_string(count) + " groups)";
        if (!names.empty()) {
            which = " (" + std::to_string(names.size()) + " groups: ";
            for (std::size_t g = 0; g < names.size(); ++g)
                which += (g == 0 ? "" : ", ") + names[g];
            which += ")";
        }
        return std::string("memory model '") + api_->name + "' " + api_->version +
               " is built for plugin API " + std::to_string(api_->abi_major) + "." +
               std::to_string(api_->api_minor) +
               ", which knows one group of body layers; layers counted per group" + which +
               " need a plugin built for API 1.3 or newer";
    }
    void require_one_group(std::uint32_t num_groups) const {
        if (num_groups != 1)
            throw InputError(too_old_for_groups({}, num_groups));
    }

    void reset() noexcept {
        if (model_ != nullptr && api_ && api_->destroy != nullptr)
            api_->destroy(model_);
        model_ = nullptr;
    }

    [[nodiscard]] std::string context(const char* call) const {
        return std::string("memory model '") + api_->name + "' " + api_->version + ": " + call;
    }

    // "plugin <name> <version> <what>": a contract broken by the plugin, never the caller.
    [[noreturn]] void fault(const std::string& what) const {
        throw ModelError(PPB_ERR_INTERNAL,
                         std::string("plugin ") + api_->name + " " + api_->version + " " + what);
    }

    // The length of `text`, or `limit` + 1 when it has no NUL within `limit` bytes. Reads one
    // byte at a time so as never to look past the terminator.
    [[nodiscard]] static std::size_t bounded_length(const char* text, std::size_t limit) noexcept {
        std::size_t n = 0;
        while (n <= limit && text[n] != '\0')
            ++n;
        return n;
    }

    // UTF-8 (no overlong forms, surrogates or code points beyond U+10FFFF) without control
    // characters: text a person can be shown.
    [[nodiscard]] static bool readable_text(std::string_view text) noexcept {
        std::size_t i = 0;
        while (i < text.size()) {
            const auto byte = static_cast<unsigned char>(text[i]);
            if (byte < 0x80) {
                if (byte < 0x20 || byte == 0x7f)
                    return false;
                ++i;
                continue;
            }
            const std::size_t length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc2 ? 2 : 0;
            if (length == 0 || byte > 0xf4 || i + length > text.size())
                return false;
            std::uint32_t code = byte & (0x7fu >> length);
            for (std::size_t k = 1; k < length; ++k) {
                const auto next = static_cast<unsigned char>(text[i + k]);
                if ((next & 0xc0) != 0x80)
                    return false;
                code = (code << 6) | (next & 0x3fu);
            }
            const std::uint32_t least = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
            if (code < least || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ||
                (code >= 0x80 && code < 0xa0))
                return false;
            i += length;
        }
        return true;
    }

    [[nodiscard]] static std::string number(double value) {
        std::array<char, 32> buffer{};
        const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
        return std::string(buffer.data(), result.ptr);
    }

    [[nodiscard]] static std::string describe(const ppb_placement& placement) {
        return "stage " + std::to_string(placement.stage) + " of " +
               std::to_string(placement.num_stages);
    }

    // A memory in MB from the plugin: finite and not negative. `where` names the placement.
    template <class Where>
    void check_value(double value, const char* what, const Where& where) const {
        if (std::isnan(value))
            fault(std::string("returned ") + what + " that is not a number (NaN) for " + where());
        if (std::isinf(value)) {
            fault(std::string("returned ") + what + " that is infinite (" + number(value) +
                  ") for " + where());
        }
        if (value < 0.0) {
            fault(std::string("returned ") + what + " that is negative (" + number(value) +
                  " MB) for " + where());
        }
    }

    void check_parameters(const ppb_linear_parameters& p) const {
        if (const std::uint32_t stray = p.identified & ~all_parameter_bits; stray != 0) {
            char bits[16] = {};
            const auto r = std::to_chars(bits, bits + sizeof(bits), stray, 16);
            fault("returned linear coefficients with bits 0x" + std::string(bits, r.ptr) +
                  " set in 'identified' that are not PPB_PARAM_* bits");
        }
        const auto finite = [&](std::uint32_t bit, double value, const std::string& name) {
            if ((p.identified & bit) != 0 && !std::isfinite(value)) {
                fault("returned the linear coefficient " + name + " as " + number(value) +
                      ", not a finite number");
            }
        };
        finite(PPB_PARAM_CONST, p.const_mb, "const_mb");
        finite(PPB_PARAM_HEAD, p.head_mb, "head_mb");
        finite(PPB_PARAM_TAIL, p.tail_mb, "tail_mb");
        finite(PPB_PARAM_PER_LAYER, p.per_layer_mb, "per_layer_mb");
        for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
            finite(PPB_PARAM_ACTIVATION(k), p.activation_mb[k],
                   "activation_mb." + std::string(kind_names[k]));
        }
    }

    // {"parameters": {...}, "diagnostics": {...}}, read by ppb::parse_json (no repeated keys,
    // no numbers out of range).
    void check_report(const std::string& report) const {
        boost::json::value document;
        try {
            document = parse_json(report, {});
        } catch (const InputError& e) {
            fault(std::string("returned a report that is not valid JSON: ") + e.what());
        }
        const auto* object = document.if_object();
        const auto is_object_member = [&](const char* key) {
            const auto* member = object->if_contains(key);
            return member != nullptr && member->is_object();
        };
        if (object == nullptr || !is_object_member("parameters") ||
            !is_object_member("diagnostics")) {
            fault(
                "returned a report that is not a JSON object with \"parameters\" and "
                "\"diagnostics\" objects");
        }
    }

    void check(ppb_status status, const char* call) const {
        if (status == PPB_OK)
            return;
        if (status < PPB_OK || status > PPB_ERR_INTERNAL) {
            fault("returned status " + std::to_string(status) + " from " + call +
                  ", which is not a ppb_status (0 to " + std::to_string(PPB_ERR_INTERNAL) + ")");
        }
        const char* message = api_->last_error != nullptr ? api_->last_error() : nullptr;
        if (message == nullptr) {
            fault(std::string("failed in ") + call + " (" + status_name(status) +
                  ") and its last_error() returned a null pointer");
        }
        const std::size_t length = bounded_length(message, max_error_message_bytes);
        if (length > max_error_message_bytes) {
            fault(std::string("failed in ") + call + " (" + status_name(status) +
                  ") and its last_error() message is longer than " +
                  std::to_string(max_error_message_bytes) + " bytes (or has no terminating NUL)");
        }
        throw ModelError(status, context(call) + " failed (" + status_name(status) + "): " +
                                     (length != 0 ? std::string(message, length) : "no message"));
    }

    std::shared_ptr<const ppb_memory_model_api> api_;
    ppb_model* model_ = nullptr;
    // Set: every prediction is of reserved memory (see "Predictions" above).
    std::optional<AllocatorReserve> reserve_;
};

}  // namespace ppb

#endif  // PPB_MEMORY_MODEL_HPP
