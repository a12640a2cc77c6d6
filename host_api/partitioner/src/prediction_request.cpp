// The pipeline around a stage a host predicts (ppb/partition/prediction_request.hpp).
#include <ppb/partition/prediction_request.hpp>

#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <exception>
#include <string>

namespace ppb::partition {

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
        const auto schedule = schedule_from_name(*request.schedule);
        if (!schedule)
            refuse("schedule", name, unknown_schedule(*request.schedule));
        out.schedule = *schedule;
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

}  // namespace ppb::partition
