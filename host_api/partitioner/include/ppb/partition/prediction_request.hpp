// ppb/partition/prediction_request.hpp — the pipeline around one stage a host asks a memory model
// about.
//
// `ppb predict` and Python's Model.predict / Model.std_error take a stage, its layers (per chunk)
// and, optionally, the pipeline degree, the micro-batches, the schedule and an in-flight count, and
// must fill in what is missing alike: the pipeline and micro-batches default to the fitted dry
// run's; the schedule is the one given, else the dry run's when it has as many chunks, else 1F1B
// for one chunk and interleaved for more than two (two chunks need it named: several schedules
// run two); the in-flight counts are the given one (one chunk), else every vector of the
// schedule's in-flight profile (ppb/in_flight_profile.hpp), over which the host predicts the
// largest (ppb::predict_over_profile). This is their one owner. The hosts read the layers (the
// command's KIND=N items, Python's dicts) and show the answer.
#ifndef PPB_PARTITION_PREDICTION_REQUEST_HPP
#define PPB_PARTITION_PREDICTION_REQUEST_HPP

#include <ppb/dryrun_format.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/partition/request_error.hpp>
#include <ppb/schedule.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

struct PredictionRequest {
    std::uint32_t stage = 0;                                    // field "stage"
    std::uint32_t chunks = 1;                                   // chunks the layers are given for
    std::optional<std::uint32_t> num_stages = std::nullopt;     // field "num_stages"
    std::optional<std::uint32_t> micro_batches = std::nullopt;  // field "micro_batches"
    std::optional<std::string> schedule = std::nullopt;         // field "schedule"
    std::optional<std::uint32_t> in_flight = std::nullopt;      // field "in_flight"
};

// The pipeline the stage is in, and the in-flight vectors its peak is the largest over.
struct PredictedPipeline {
    std::uint32_t num_stages = 1;
    std::uint32_t stage = 0;
    std::uint32_t micro_batches = 0;  // 0: not known (no dry run, none given)
    Schedule schedule = Schedule::one_f_one_b;
    // {{in_flight}} when given; else the schedule's profile (one vector for one chunk).
    std::vector<InFlightVector> profile;
};

// `request` completed from `fitted` (the dry run the model was fitted to, named `fitted_source`,
// or nullptr). RequestError naming the field in `name`'s words: no pipeline degree, a stage outside
// it, an unknown schedule, two chunks without a schedule, an in-flight count with chunks, a
// schedule that cannot run the stage's chunks or micro-batches.
[[nodiscard]] PredictedPipeline pipeline_of(const PredictionRequest& request,
                                            const DryRunSet* fitted, std::string_view fitted_source,
                                            const FieldName& name);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_PREDICTION_REQUEST_HPP
