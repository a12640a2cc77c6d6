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
// largest (ppb::predict_over_profile). predict_stage then gives the peak, its standard error and,
// where an allocator reserve was fitted, the reserved memory too; prediction_document writes the
// ppb.prediction/1 document of `ppb predict --json` and Python's Model.prediction. This is their
// one owner. The hosts read the layers (the command's KIND=N items, Python's dicts) and show the
// answer.
#ifndef PPB_PARTITION_PREDICTION_REQUEST_HPP
#define PPB_PARTITION_PREDICTION_REQUEST_HPP

#include <ppb/allocator_reserve.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/partition/request_error.hpp>
#include <ppb/placement.hpp>
#include <ppb/schedule.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
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

// One stage predicted: the peak over the pipeline's profile, on allocated memory and, with a
// reserve, on reserved memory.
struct StagePrediction {
    std::string model_name;
    std::string model_version;
    // The stage at the vector of the peak (counts of 0 where a chunk then holds none), its layers
    // per group in `groups` when the model counts them so.
    StagePlacement placement;
    std::vector<std::string> groups;
    // Every vector evaluated, the prediction at each, and which one is the peak.
    std::vector<InFlightVector> profile;
    std::vector<double> per_vector_mb;
    std::size_t active = 0;
    double memory_mb = 0.0;              // the peak of allocated memory
    std::optional<double> std_error_mb;  // the model's at the peak (API 1.2), or none
    struct Reserved {
        double memory_mb = 0.0;
        std::optional<double> std_error_mb;
        AllocatorReserve reserve;
    };
    std::optional<Reserved> reserved;  // with a reserve: the peak of reserved memory
};

// `placement`'s peak (its layers; its in-flight counts are the pipeline's profile's) as `model`
// predicts it on allocated memory and, with `reserve`, on reserved memory; the model's own basis
// is left as it was. ModelError when the model cannot predict it.
[[nodiscard]] StagePrediction predict_stage(MemoryModel& model, StagePlacement placement,
                                            const PredictedPipeline& pipeline,
                                            const std::optional<AllocatorReserve>& reserve);

// Chunk `chunk`'s layers of a prediction, {"none": 2, "full": 1}, or per group {"dense": {...}}.
[[nodiscard]] boost::json::object chunk_layers_object(const StagePrediction& prediction,
                                                      std::size_t chunk);

// The ppb.prediction/1 document (host_api/docs/formats.md).
[[nodiscard]] boost::json::object prediction_document(const StagePrediction& prediction);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_PREDICTION_REQUEST_HPP
