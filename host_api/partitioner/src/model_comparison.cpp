// Several models' predictions beside measured memory (ppb/partition/model_comparison.hpp).
#include <ppb/partition/model_comparison.hpp>

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/model_session.hpp>
#include <ppb/profile_prediction.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <string_view>
#include <utility>

namespace ppb::partition {
namespace json = boost::json;
namespace {

// The same placement: degree, stage, schedule, and every chunk's layers and in-flight count.
bool same_placement(const StagePlacement& a, const StagePlacement& b) {
    if (a.num_stages != b.num_stages || a.stage != b.stage || a.schedule != b.schedule ||
        a.chunks.size() != b.chunks.size() || a.group_layers != b.group_layers)
        return false;
    for (std::size_t c = 0; c < a.chunks.size(); ++c) {
        if (a.chunks[c].in_flight != b.chunks[c].in_flight ||
            !std::equal(std::begin(a.chunks[c].layers), std::end(a.chunks[c].layers),
                        std::begin(b.chunks[c].layers)))
            return false;
    }
    return true;
}

// Predicts the placements `which` one by one into column `slot`, so that one placement the model
// cannot predict does not hide the others.
void predict_each(const MemoryModel& model, std::vector<ComparedPlacement>& placements,
                  const std::vector<std::size_t>& which, std::size_t slot) {
    const std::vector<std::string> model_groups = model.groups();
    for (const std::size_t i : which) {
        ComparedPlacement& p = placements[i];
        try {
            // Layers counted per group go to the model in its own groups' order.
            const StagePlacement placement =
                p.groups.empty() ? p.placement : regrouped(p.placement, p.groups, model_groups);
            if (!p.profile.empty())
                p.predictions[slot].memory_mb =
                    predict_over_profile(model, placement, p.profile).memory_mb;
            else if (p.groups.empty())
                p.predictions[slot].memory_mb = model.predict(placement.view());
            else
                p.predictions[slot].memory_mb = model.predict_grouped(placement.grouped_view());
        } catch (const ModelError& e) {
            if (!e.is_input_error())
                throw;
            p.predictions[slot].error = e.what();
        } catch (const InputError& e) {
            p.predictions[slot].error = e.what();
        }
    }
}

}  // namespace

Comparison placements_to_compare(const DryRunSet* dryrun, std::string_view dryrun_source,
                                 const PlanStages* plan, std::string_view plan_source,
                                 const DryRunSet* measured, std::string_view measured_source,
                                 std::vector<std::string>& notes) {
    Comparison out;
    std::vector<std::string_view> sources;
    if (dryrun != nullptr) {
        for (const Observation& o : dryrun->observations) {
            out.placements.push_back(ComparedPlacement{o.config.empty() ? "-" : o.config,
                                                       o.placement,
                                                       o.peak_memory_mb,
                                                       {},
                                                       dryrun->groups,
                                                       o.in_flight_profile});
        }
        sources.push_back(dryrun_source);
    }
    if (plan != nullptr) {
        sources.push_back(plan_source);
        for (const PlannedStage& stage : plan->stages) {
            ComparedPlacement p{"plan", stage.placement, std::nullopt,
                                {},     plan->groups,    stage.profile};
            if (measured != nullptr) {
                const auto found = std::find_if(
                    measured->observations.begin(), measured->observations.end(),
                    [&](const Observation& o) { return same_placement(o.placement, p.placement); });
                if (found == measured->observations.end()) {
                    notes.push_back(fmt::format(
                        "{} holds no observation of the plan's stage {} (the same layers, kinds "
                        "and in-flight counts): it has no measurement",
                        measured_source, p.placement.stage));
                } else {
                    p.measured_mb = found->peak_memory_mb;
                    if (!found->config.empty())
                        p.label = "plan (" + found->config + ")";
                }
            }
            out.placements.push_back(std::move(p));
        }
        if (measured != nullptr)
            sources.push_back(measured_source);
    }
    out.source = fmt::format("{}", fmt::join(sources, " and "));
    return out;
}

void compare_model(Comparison& comparison, const ModelOpener& open, const DryRunSet* dryrun,
                   std::string_view dryrun_source, std::string_view dryrun_field,
                   const FieldName& name) {
    if (comparison.cross_validated && dryrun == nullptr) {
        throw RequestError("cross_validate",
                           fmt::format("{} needs {}", name("cross_validate"), name(dryrun_field)));
    }
    const std::size_t slot = comparison.models.size();
    for (ComparedPlacement& p : comparison.placements)
        p.predictions.resize(slot + 1);
    std::vector<std::size_t> all(comparison.placements.size());
    for (std::size_t i = 0; i < all.size(); ++i)
        all[i] = i;

    MemoryModel model = open();
    ComparedModel described{model.name(), model.version(), "configured by its options"};
    if (model.needs_fit() && dryrun == nullptr) {
        throw RequestError(
            std::string(dryrun_field),
            fmt::format("memory model '{}' is fitted to dry-run observations: give {}",
                        model.name(), name(dryrun_field)));
    }
    if (!model.needs_fit()) {
        predict_each(model, comparison.placements, all, slot);
    } else if (!comparison.cross_validated) {
        (void)fit_model(model, *dryrun, dryrun_source);
        described.source = fmt::format("fitted to {} observations of {}",
                                       dryrun->observations.size(), dryrun_source);
        predict_each(model, comparison.placements, all, slot);
    } else {
        // Leave one config out: fit to the others, predict it.
        std::set<std::string> configs;
        for (const Observation& o : dryrun->observations)
            configs.insert(o.config);
        if (configs.size() < 2) {
            throw RequestError("cross_validate",
                               fmt::format("{} needs observations of at least two configs in {}",
                                           name("cross_validate"), dryrun_source));
        }
        for (const std::string& held_out : configs) {
            DryRunSet training = *dryrun;
            std::erase_if(training.observations,
                          [&](const Observation& o) { return o.config == held_out; });
            std::vector<std::size_t> which;
            for (std::size_t i = 0; i < dryrun->observations.size(); ++i) {
                if (dryrun->observations[i].config == held_out)
                    which.push_back(i);
            }
            MemoryModel fold = open();
            try {
                (void)fit_model(fold, training, dryrun_source);
            } catch (const ModelError& e) {
                if (!e.is_input_error())
                    throw;
                for (const std::size_t i : which) {
                    comparison.placements[i].predictions[slot].error =
                        fmt::format("fitted without config '{}': {}", held_out, e.what());
                }
                continue;
            }
            predict_each(fold, comparison.placements, which, slot);
        }
        // Plan stages, which no config holds out, come from the fit to everything.
        const std::vector<std::size_t> plan(
            all.begin() + static_cast<std::ptrdiff_t>(dryrun->observations.size()), all.end());
        if (!plan.empty()) {
            (void)fit_model(model, *dryrun, dryrun_source);
            predict_each(model, comparison.placements, plan, slot);
        }
        described.source = fmt::format(
            "fitted to {} without the config of each placement (cross-validated)", dryrun_source);
    }
    comparison.models.push_back(std::move(described));
}

std::vector<ErrorSummary> summarise(const Comparison& comparison) {
    std::vector<ErrorSummary> out(comparison.models.size());
    for (const ComparedPlacement& p : comparison.placements) {
        if (!p.measured_mb)
            continue;
        for (std::size_t m = 0; m < comparison.models.size(); ++m) {
            if (!p.predictions[m].memory_mb)
                continue;
            const double error = *p.predictions[m].memory_mb - *p.measured_mb;
            ErrorSummary& s = out[m];
            ++s.count;
            s.sum_abs += std::abs(error);
            s.sum_abs_percent += 100.0 * std::abs(error) / *p.measured_mb;
            s.sum_squares += error * error;
            s.max_abs = std::max(s.max_abs, std::abs(error));
        }
    }
    return out;
}

json::object comparison_document(const Comparison& c) {
    json::array models;
    for (const auto& m : c.models) {
        models.push_back(
            json::object{{"name", m.name}, {"version", m.version}, {"source", m.source}});
    }
    json::array placements;
    for (const auto& p : c.placements) {
        // Layers summed over the chunks; several chunks are listed besides.
        json::object layers;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            std::uint64_t n = 0;
            for (const auto& chunk : p.placement.chunks)
                n += chunk.layers[k];
            layers[kind_names[k]] = n;
        }
        json::array predictions;
        for (std::size_t m = 0; m < c.models.size(); ++m) {
            const auto& pr = p.predictions[m];
            json::object o{{"model", c.models[m].name}};
            if (pr.memory_mb) {
                o["memory_mb"] = *pr.memory_mb;
                if (p.measured_mb) {
                    o["error_mb"] = *pr.memory_mb - *p.measured_mb;
                    o["error_percent"] = 100.0 * (*pr.memory_mb - *p.measured_mb) / *p.measured_mb;
                }
            } else {
                o["memory_mb"] = nullptr;
                o["reason"] = pr.error;
            }
            predictions.push_back(std::move(o));
        }
        json::object row{{"label", p.label},
                         {"num_stages", p.placement.num_stages},
                         {"stage", p.placement.stage},
                         {"layers", std::move(layers)}};
        if (p.placement.chunks.size() == 1) {
            row["in_flight"] = p.placement.chunks.front().in_flight;
        } else {
            json::array in_flight;
            json::array chunks;
            for (const auto& chunk : p.placement.chunks) {
                json::object chunk_layers;
                for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                    chunk_layers[kind_names[k]] = chunk.layers[k];
                in_flight.push_back(chunk.in_flight);
                chunks.push_back(json::object{{"layers", std::move(chunk_layers)},
                                              {"in_flight", chunk.in_flight}});
            }
            row["in_flight"] = std::move(in_flight);
            row["chunks"] = std::move(chunks);
        }
        row["measured_mb"] = p.measured_mb ? json::value(*p.measured_mb) : json::value(nullptr);
        row["predictions"] = std::move(predictions);
        placements.push_back(std::move(row));
    }
    json::array summary;
    const auto sums = summarise(c);
    for (std::size_t m = 0; m < c.models.size(); ++m) {
        const auto& s = sums[m];
        json::object o{{"model", c.models[m].name}, {"count", s.count}};
        const bool any = s.count > 0;
        const double n = static_cast<double>(s.count);
        o["mean_abs_error_mb"] = any ? json::value(s.sum_abs / n) : json::value(nullptr);
        o["mean_abs_error_percent"] =
            any ? json::value(s.sum_abs_percent / n) : json::value(nullptr);
        o["rms_error_mb"] = any ? json::value(std::sqrt(s.sum_squares / n)) : json::value(nullptr);
        o["max_abs_error_mb"] = any ? json::value(s.max_abs) : json::value(nullptr);
        summary.push_back(std::move(o));
    }
    return json::object{{"format", "ppb.compare/1"},
                        {"cross_validated", c.cross_validated},
                        {"models", std::move(models)},
                        {"placements", std::move(placements)},
                        {"summary", std::move(summary)}};
}

}  // namespace ppb::partition
