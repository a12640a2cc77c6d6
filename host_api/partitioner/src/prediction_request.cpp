// The pipeline around a stage a host predicts (ppb/partition/prediction_request.hpp).
#include <ppb/partition/prediction_request.hpp>

#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/profile_prediction.hpp>
#include <ppb/reserve_fit.hpp>

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <exception>
#include <string>
#include <utility>

namespace ppb::partition {
namespace json = boost::json;

PredictedPipeline pipeline_of(const PredictionRequest& request, const DryRunSet* fitted,
                              std::string_view fitted_source, const FieldName& name) {
    PredictedPipeline out;
    out.num_stages = request.num_stages.value_or(fitted ? fitted->num_stages : 0);
    if (out.num_stages == 0) {
        throw RequestError("num_stages",
                           fitted ? fmt::format("{} has no top-level num_stages: give {}",
                                                fitted_source, name("num_stages"))
                                  : fmt::format("missing {}", name("num_stages")));
    }
    out.stage = request.stage;
    if (out.stage >= out.num_stages) {
        throw RequestError(
            "stage", fmt::format("{} {}", name("stage"), not_a_stage(out.stage, out.num_stages)));
    }
    out.micro_batches = request.micro_batches.value_or(fitted ? fitted->micro_batches : 0);
    if (request.schedule) {
        out.schedule = schedule_named(*request.schedule, name);
    } else if (fitted && fitted->num_chunks == request.chunks) {
        out.schedule = fitted->schedule;
    } else if (request.chunks == 2) {
        throw RequestError("schedule", fmt::format("two chunks: give {} ({})", name("schedule"),
                                                   names_or(chunked_schedule_names())));
    } else if (request.chunks > 2) {
        out.schedule = Schedule::interleaved;
    }
    if (request.in_flight) {
        if (request.chunks != 1) {
            throw RequestError("in_flight",
                               fmt::format("{} is for one chunk; with chunks the schedule's "
                                           "counts are used",
                                           name("in_flight")));
        }
        out.profile = {{*request.in_flight}};
        return out;
    }
    try {
        out.profile = in_flight_profile(out.schedule, out.num_stages, out.stage, out.micro_batches,
                                        request.chunks);
    } catch (const std::exception& e) {
        throw RequestError("schedule", fmt::format("{} {}: {}", name("schedule"),
                                                   schedule_name(out.schedule), e.what()));
    }
    return out;
}

namespace {

// The model's standard error of `placement` at `counts` as it may be asked (counts of 0 as 1).
std::optional<double> std_error_at(const MemoryModel& model, const StagePlacement& placement,
                                   const InFlightVector& counts) {
    const StagePlacement asked = with_in_flight(placement, asked_in_flight(counts));
    return asked.grouped() ? model.predict_grouped_std_error(asked.grouped_view())
                           : model.predict_std_error(asked.view());
}

// Restores a model's reserve when the prediction ends, however it ends.
class ReserveScope {
  public:
    explicit ReserveScope(MemoryModel& model) : model_(model), saved_(model.allocator_reserve()) {}
    ReserveScope(const ReserveScope&) = delete;
    ReserveScope& operator=(const ReserveScope&) = delete;
    ~ReserveScope() { model_.set_allocator_reserve(saved_); }

  private:
    MemoryModel& model_;
    std::optional<AllocatorReserve> saved_;
};

}  // namespace

StagePrediction predict_stage(MemoryModel& model, StagePlacement placement,
                              const PredictedPipeline& pipeline,
                              const std::optional<AllocatorReserve>& reserve) {
    const ReserveScope restore(model);
    model.set_allocator_reserve(std::nullopt);
    StagePrediction out;
    out.model_name = model.name();
    out.model_version = model.version();
    if (placement.grouped())
        out.groups = model.groups();
    const ProfilePeak peak = predict_over_profile(model, placement, pipeline.profile);
    out.profile = peak.profile;  // the vectors evaluated: counts of 0 as 1 without coefficients
    out.per_vector_mb = peak.per_vector;
    out.active = peak.active;
    out.memory_mb = peak.memory_mb;
    out.placement = with_in_flight(std::move(placement), out.profile[peak.active]);
    // From the fit's residuals (API 1.2); models without an uncertainty estimate give none.
    out.std_error_mb = std_error_at(model, out.placement, out.profile[peak.active]);
    if (reserve) {
        // The same stage with the allocator's fitted reserve, at its own peak over the profile.
        model.set_allocator_reserve(reserve);
        const ProfilePeak at_peak = predict_over_profile(model, out.placement, out.profile);
        out.reserved = StagePrediction::Reserved{
            at_peak.memory_mb, std_error_at(model, out.placement, out.profile[at_peak.active]),
            *reserve};
    }
    return out;
}

json::object chunk_layers_object(const StagePrediction& prediction, std::size_t chunk) {
    const auto of_kinds = [](const std::uint32_t* counts) {
        json::object layers;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (counts[k] != 0)
                layers[kind_names[k]] = counts[k];
        }
        return layers;
    };
    const StagePlacement& placement = prediction.placement;
    if (!placement.grouped())
        return of_kinds(placement.chunks[chunk].layers);
    json::object layers;
    const std::size_t G = prediction.groups.size();
    for (std::size_t g = 0; g < G; ++g) {
        json::object of_group = of_kinds(&placement.group_layers[(chunk * G + g) * PPB_KIND_COUNT]);
        if (!of_group.empty())
            layers[prediction.groups[g]] = std::move(of_group);
    }
    return layers;
}

json::object prediction_document(const StagePrediction& prediction) {
    const StagePlacement& placement = prediction.placement;
    json::object doc;
    doc["format"] = "ppb.prediction/1";
    doc["model"] =
        json::object{{"name", prediction.model_name}, {"version", prediction.model_version}};
    json::object where{{"num_stages", placement.num_stages},
                       {"stage", placement.stage},
                       {"layers", chunk_layers_object(prediction, 0)},
                       {"in_flight", placement.chunks.front().in_flight}};
    if (placement.chunks.size() > 1) {
        // With chunks: the schedule and every chunk; "layers" and "in_flight" are chunk 0's.
        where["schedule"] = schedule_name(placement.schedule);
        json::array list;
        for (std::size_t c = 0; c < placement.chunks.size(); ++c) {
            list.push_back(json::object{{"layers", chunk_layers_object(prediction, c)},
                                        {"in_flight", placement.chunks[c].in_flight}});
        }
        where["chunks"] = std::move(list);
        // The chunks' in_flight are the vector of the peak; the profile is every vector that can
        // hold it, with the prediction at each.
        json::array vectors;
        for (std::size_t j = 0; j < prediction.profile.size(); ++j) {
            vectors.push_back(json::object{{"in_flight", json::array(prediction.profile[j].begin(),
                                                                     prediction.profile[j].end())},
                                           {"peak_memory_mb", prediction.per_vector_mb[j]}});
        }
        where["in_flight_profile"] = std::move(vectors);
    }
    doc["placement"] = std::move(where);
    doc["peak_memory_mb"] = prediction.memory_mb;
    doc["std_error_mb"] =
        prediction.std_error_mb ? json::value(*prediction.std_error_mb) : json::value(nullptr);
    if (prediction.reserved) {
        doc["reserved_memory_mb"] = prediction.reserved->memory_mb;
        doc["reserved_std_error_mb"] = prediction.reserved->std_error_mb
                                           ? json::value(*prediction.reserved->std_error_mb)
                                           : json::value(nullptr);
        doc["allocator_reserve"] = reserve_document(prediction.reserved->reserve);
    }
    return doc;
}

}  // namespace ppb::partition
