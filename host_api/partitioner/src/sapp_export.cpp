#include <ppb/partition/sapp_export.hpp>

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/number_text.hpp>
#include <ppb/partition/time_model.hpp>

#include <fmt/format.h>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <unistd.h>

namespace ppb::partition {
namespace json = boost::json;
namespace {

// A layer file holds memory >= 0; a negative estimate is refused, not written.
double non_negative(double value, std::string_view key) {
    if (value < 0.0) {
        throw InputError(fmt::format(
            "--export-sapp: the fitted {} is negative ({}), and a SAPP layer file holds "
            "memory of at least 0 (see the fit's warnings: more or more varied dry runs)",
            key, format_mb(value)));
    }
    return value;
}

double required(const json::object& params, const char* key) {
    const auto& v = params.at(key);
    if (v.is_null()) {
        throw InputError(fmt::format(
            "--export-sapp: {} is not determined by these observations, and a SAPP layer file "
            "needs it (see the fit's not_identifiable diagnostics)",
            key));
    }
    return non_negative(v.to_number<double>(), key);
}

// A per-layer value x with x * count == total exactly, so that a reader multiplying it back
// (nb_layer x memory_parameter) gets the fitted total to the last bit; the nearest such double
// to total / count, or total / count itself when none is within a few ulps.
double per_layer_share(double total, double count) {
    const double first = total / count;
    double down = first;
    double up = first;
    for (int step = 0; step < 8; ++step) {
        if (down * count == total)
            return down;
        if (up * count == total)
            return up;
        down = std::nextafter(down, -std::numeric_limits<double>::infinity());
        up = std::nextafter(up, std::numeric_limits<double>::infinity());
    }
    return first;
}

// Layers of a dry run (one config label at one pipeline degree) that measured every stage.
std::optional<std::uint64_t> complete_dry_run_layers(const DryRunSet& dryrun) {
    std::map<std::pair<std::string, std::uint32_t>, std::map<std::uint32_t, std::uint64_t>> runs;
    for (const auto& o : dryrun.observations) {
        runs[{o.config, o.placement.num_stages}][o.placement.stage] = o.placement.total_layers();
    }
    std::optional<std::uint64_t> most;
    for (const auto& [key, stages] : runs) {
        if (stages.size() != key.second)
            continue;
        std::uint64_t total = 0;
        for (const auto& [stage, n] : stages)
            total += n;
        most = std::max(most.value_or(0), total);
    }
    return most;
}

void set_body_memory(sapp::Entry& entry, double per_layer, const json::object& activation) {
    entry.memory_parameter = per_layer;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const auto& v = activation.at(kind_names[k]);
        entry.memory_activation[k] =
            v.is_null()
                ? std::nullopt
                : std::optional<double>(non_negative(
                      v.to_number<double>(), fmt::format("activation_mb.{}", kind_names[k])));
    }
}

}  // namespace

sapp::LayerFile sapp_layer_file(const json::object& fit_document, const DryRunSet& dryrun,
                                const SappExportOptions& options) {
    const auto& layer_template = options.layer_template;
    const auto& params = fit_document.at("parameters").as_object();
    const double head = required(params, "head_mb");
    const double tail = required(params, "tail_mb");
    const double per_layer = required(params, "param_per_layer_mb");
    const auto& activation = params.at("activation_mb").as_object();
    const auto& c = params.at("const_mb");
    // SAPP adds its constant to every stage and reads any number: a negative one is written.
    const double constant = c.is_null() ? 0.0 : c.to_number<double>();

    sapp::LayerFile out;
    if (layer_template) {
        out = sapp::load_layer_file(*layer_template);
        // The template must be a layer file the partitioner can time with.
        (void)time_model(out, source_name(*layer_template));
        if (dryrun.body_layers && *dryrun.body_layers != out.body_layers()) {
            throw InputError(fmt::format(
                "--export-sapp: {} describes a model of {} body layers, the dry-run file one of "
                "{} (its body_layers): is it the layer file of that model?",
                *layer_template, out.body_layers(), *dryrun.body_layers));
        }
        if (dryrun.layer_times) {
            out.warnings.push_back(fmt::format(
                "--export-sapp: the dry-run file's layer_times are not written: {}'s own times "
                "are kept",
                *layer_template));
        }
        bool head_set = false;
        bool tail_set = false;
        for (sapp::Entry& entry : out.entries) {
            const auto count = static_cast<double>(entry.nb_layer);
            switch (entry.type) {
                case sapp::EntryType::body:
                    set_body_memory(entry, per_layer, activation);
                    break;
                case sapp::EntryType::head:
                    // H is the whole head: it goes on the first HEAD entry, per layer of it.
                    entry.memory_parameter = head_set ? 0.0 : per_layer_share(head, count);
                    head_set = true;
                    break;
                case sapp::EntryType::tail:
                    entry.memory_parameter = tail_set ? 0.0 : per_layer_share(tail, count);
                    tail_set = true;
                    break;
            }
        }
        if (!head_set || !tail_set) {
            throw InputError(fmt::format(
                "--export-sapp: {} has no {} entry to hold the fitted {} memory", *layer_template,
                head_set ? "TAIL" : "HEAD", head_set ? "tail" : "head"));
        }
    } else {
        // The model's body layers as the dry-run file states them (ppb import sapp writes
        // SAPP's num_layer), else those of a dry run that measured every stage.
        const auto layers = dryrun.body_layers ? std::optional<std::uint64_t>(*dryrun.body_layers)
                                               : complete_dry_run_layers(dryrun);
        if (!layers) {
            throw InputError(
                "--export-sapp: the dry-run file gives no body_layers and no dry run in it "
                "measured every stage, so the model's number of body layers is unknown: give "
                "--model-desc LAYERS (your SAPP layer file) to export into");
        }
        if (*layers > std::numeric_limits<std::uint32_t>::max()) {
            throw InputError(fmt::format(
                "--export-sapp: the dry runs' {} body layers are more than a layer file's "
                "nb_layer holds",
                *layers));
        }
        // The entries SAPP's -init writes (hyper-parallel sapp_ppb utils/config.py, ModelInfo):
        // HEAD, BODY and TAIL, named after their type, each with the time SAPP's time_config
        // gives it when the dry-run file carries them.
        const auto& times = dryrun.layer_times;
        const auto time_of = [&](double HeadBodyTailTimes::*member) {
            return times ? std::optional<double>((*times).*member) : std::nullopt;
        };
        sapp::Entry body{.name = "BODY",
                         .type = sapp::EntryType::body,
                         .nb_layer = static_cast<std::uint32_t>(*layers),
                         .time = time_of(&HeadBodyTailTimes::body)};
        set_body_memory(body, per_layer, activation);
        out.comment = times ? "memory fitted by ppb (dryrun-lsq); times from SAPP's time_config "
                              "(as its -init writes them)"
                            : "memory fitted by ppb (dryrun-lsq); add each entry's time before "
                              "timing with it";
        out.entries = {
            sapp::Entry{.name = "HEAD",
                        .type = sapp::EntryType::head,
                        .nb_layer = 1,
                        .time = time_of(&HeadBodyTailTimes::head),
                        .memory_parameter = head},
            std::move(body),
            sapp::Entry{.name = "TAIL",
                        .type = sapp::EntryType::tail,
                        .nb_layer = 1,
                        .time = time_of(&HeadBodyTailTimes::tail),
                        .memory_parameter = tail},
        };
    }
    if (!out.name)
        out.name = options.name;
    for (sapp::Entry& entry : out.entries) {
        if (!entry.model_name)
            entry.model_name = out.name;
    }
    if (out.pre_defined_layer.empty()) {
        for (const sapp::Entry& entry : out.entries) {
            if (entry.type != sapp::EntryType::body)
                out.pre_defined_layer.push_back(
                    {entry.name, entry.type == sapp::EntryType::head ? 0 : -1});
        }
    }
    if (out.auto_partition_layer.empty()) {
        const sapp::Entry& body = out.entries[out.body_index()];
        out.auto_partition_layer.push_back({body.name, body.nb_layer});
    }
    out.stage_const_mem = constant;
    if (constant < 0.0) {
        const std::string what = fmt::format(
            "the fitted constant memory of every stage (const_mb) is negative ({}): the dry "
            "runs do not pin it down well (the per-layer terms absorb part of it), though the "
            "fit's predictions are right where it was fitted",
            format_mb(constant));
        if (options.fold_negative_constant) {
            out.stage_const_mem = 0.0;
            out.warnings.push_back(fmt::format(
                "--export-sapp: {}; --sapp-fold-negative-constant wrote stage_const_mem = 0 "
                "instead, so the file predicts every stage {} higher than the fit: "
                "conservative. Fit more varied dry runs (other layer counts per stage and "
                "pipeline sizes) for a physical constant",
                what, format_mb(-constant)));
        } else {
            out.warnings.push_back(fmt::format(
                "--export-sapp: {}; written as it is (stage_const_mem {}) so that SAPP predicts "
                "what the fit predicts. For a physical (non-negative) constant fit more varied "
                "dry runs (other layer counts per stage and pipeline sizes); for a conservative "
                "file give --sapp-fold-negative-constant (stage_const_mem = 0, every stage {} "
                "higher)",
                what, format_mb(constant), format_mb(-constant)));
        }
    }
    return out;
}

}  // namespace ppb::partition
