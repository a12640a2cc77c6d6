// The layers' compute times (ppb/partition/time_model.hpp), from a SAPP layer file read by
// ppb::sapp.
#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/partition/time_model.hpp>

#include <fmt/core.h>

#include <cmath>
#include <cstddef>
#include <string>

namespace ppb::partition {
namespace {

[[noreturn]] void fail(std::string_view source, std::string_view path, std::string_view problem) {
    throw InputError(located_message(source, path, problem));
}

struct LayerTimes {
    double forward = 0.0;
    std::array<double, PPB_KIND_COUNT> total{};  // forward + backward, per recompute kind
    std::optional<double> weight_grad;           // W, where the entry gives it
    // The backward without recomputation.
    [[nodiscard]] double backward() const { return total[PPB_KIND_NONE] - forward; }
};

// Forward, and forward + backward, time of one layer of each recompute kind, under `convention`
// (time_model.hpp).
LayerTimes layer_times(const sapp::Entry& entry, std::size_t index, std::string_view source,
                       TimeConvention convention) {
    const std::string path = sapp::entry_path(index);
    if (!entry.time && !entry.forward_time) {
        fail(source, path,
             convention == TimeConvention::hyper_parallel
                 ? "missing required field 'time' (the forward time of one layer, as today's "
                   "SAPP reads it; or give 'forward_time')"
                 : "missing required field 'time' (the forward + backward time of one layer "
                   "without recompute, as the older SAPP toolkit reads it; or give "
                   "'forward_time')");
    }
    // hyper_parallel (Layer.compute_internal_time): forward = forward_time else time, backward
    // base = backward_default_ratio (2) x time, even when forward_time is given. toolkit: time
    // is forward + backward, split a third forward, two thirds backward. Without `time` (ppb's
    // own form), the backward base is backward_time, else twice the forward.
    const bool today = convention == TimeConvention::hyper_parallel;
    const double forward = entry.forward_time ? *entry.forward_time
                           : today            ? *entry.time
                                              : *entry.time / 3.0;
    const auto& backward_time = entry.backward_time;
    const double base = entry.time                     ? *entry.time * (today ? 2.0 : 2.0 / 3.0)
                        : backward_time[PPB_KIND_NONE] ? *backward_time[PPB_KIND_NONE]
                                                       : 2.0 * forward;

    std::array<double, PPB_KIND_COUNT> times{};
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (backward_time[k] && *backward_time[k] > 0.0 && entry.backward_coef[k]) {
            fail(source, path,
                 fmt::format("give either '{}' or '{}', not both (the backward time of "
                             "recompute kind '{}')",
                             sapp::backward_time_fields[k], sapp::backward_coef_fields[k],
                             kind_names[k]));
        }
        // SAPP takes a kind's time of 0 as not given, and so does ppb.
        const bool timed = backward_time[k] && *backward_time[k] > 0.0;
        const double c = entry.backward_coef[k].value_or(default_backward_coefficients[k]);
        const double backward = timed ? *backward_time[k] : (1.0 + c) * base;
        times[k] = forward + backward;
        // nb_layer layers of one kind must add up to a finite time, whatever the stage.
        if (!std::isfinite(static_cast<double>(entry.nb_layer) * times[k])) {
            fail(source, path,
                 fmt::format("the forward + backward time of {} layer(s) of recompute kind '{}' "
                             "is out of range (the times are too large)",
                             entry.nb_layer, kind_names[k]));
        }
    }
    // W is part of the backward without recomputation (the rest is B, the input gradient).
    const double unsplit = times[PPB_KIND_NONE] - forward;
    if (entry.weight_grad_time && *entry.weight_grad_time > unsplit) {
        fail(source, path,
             fmt::format("'weight_grad_time' ({:g}) is longer than the backward without "
                         "recomputation it is part of ({:g}): W is the weight-gradient part of "
                         "that backward, B the rest",
                         *entry.weight_grad_time, unsplit));
    }
    return {forward, times, entry.weight_grad_time};
}

void add_end(EndsWeightGrad& ends, const LayerTimes& layer) {
    if (layer.weight_grad)
        ends.given += *layer.weight_grad;
    else
        ends.unsplit_backward += layer.backward();
}

}  // namespace

TimeModel time_model(const sapp::LayerFile& file, std::string_view source,
                     TimeConvention convention) {
    TimeModel model;
    model.warnings = file.warnings;
    for (std::size_t i = 0; i < file.entries.size(); ++i) {
        const sapp::Entry& entry = file.entries[i];
        const LayerTimes layer = layer_times(entry, i, source, convention);
        const auto& times = layer.total;
        // SAPP adds a HEAD or TAIL entry's time once, whatever its nb_layer.
        const double total = times[PPB_KIND_NONE];
        if (entry.type != sapp::EntryType::body && entry.nb_layer != 1) {
            model.warnings.push_back(fmt::format(
                "{} has nb_layer {}: its time is counted once, as SAPP counts it (give the time "
                "of all its layers together)",
                sapp::describe_entry(file, i), entry.nb_layer));
        }
        if (convention == TimeConvention::hyper_parallel && entry.type != sapp::EntryType::body &&
            entry.time && total != 3.0 * *entry.time) {
            model.warnings.push_back(fmt::format(
                "{} gives its own forward or backward time: ppb times it by them ({:g}), as "
                "SAPP's simulator does, while SAPP's solver counts a HEAD or TAIL as 3 x time "
                "({:g})",
                sapp::describe_entry(file, i), total, 3.0 * *entry.time));
        }
        switch (entry.type) {
            case sapp::EntryType::body:
                if (!(times[PPB_KIND_NONE] > 0.0)) {
                    fail(source, sapp::entry_path(i),
                         "the BODY entry's time is 0: the partitioner balances the stages' "
                         "times and needs the time of a body layer (give 'time' > 0)");
                }
                if (model.body_layers == 0) {
                    model.body_name = entry.name;
                    model.body_time = times;
                    model.body_forward = layer.forward;
                    model.body_weight_grad = layer.weight_grad;
                }
                model.body_layers += entry.nb_layer;
                break;
            case sapp::EntryType::head:
                model.head_time += total;
                model.head_forward += layer.forward;
                add_end(model.head_weight_grad, layer);
                break;
            case sapp::EntryType::tail:
                model.tail_time += total;
                model.tail_forward += layer.forward;
                add_end(model.tail_weight_grad, layer);
                break;
        }
    }
    for (const auto& group : file.body_groups()) {
        const std::size_t first = group.entries.front();
        const LayerTimes layer = layer_times(file.entries[first], first, source, convention);
        model.groups.push_back(
            BodyGroupTime{group.name, group.layers, layer.total, layer.forward, layer.weight_grad});
    }
    model.sequence = file.body_sequence();
    if (!std::isfinite(model.head_time) || !std::isfinite(model.tail_time)) {
        fail(source, sapp::list_field,
             fmt::format("the {} entries' times add up to more than a number can hold",
                         std::isfinite(model.head_time) ? "TAIL" : "HEAD"));
    }
    return model;
}

TimeModel parse_time_model(std::string_view json_text, std::string_view source,
                           TimeConvention convention) {
    return time_model(sapp::parse_layer_file(json_text, source), source, convention);
}

TimeModel read_time_model(const std::filesystem::path& path, TimeConvention convention) {
    return time_model(sapp::load_layer_file(path), source_name(path), convention);
}

}  // namespace ppb::partition
