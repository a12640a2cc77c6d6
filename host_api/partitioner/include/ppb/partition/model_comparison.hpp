// ppb/partition/model_comparison.hpp — several memory models' predictions of the same placements,
// beside the memory measured for them: how a user decides which model to trust.
//
// `ppb compare` and Python's ppb.compare do the same: gather placements (the observations of a dry
// run, with their measured peaks, and/or the stages of a saved plan, measured when a run of the
// plan is given), add one column per model (compare_model: fitted to the dry run when the model
// needs a fit, or leaving each config out in turn when cross-validated) and answer with the
// ppb.compare/1 document. This is their one owner; each host opens models its own way (through a
// ModelOpener) and shows the answer (the command as tables or JSON, Python as a dict).
#ifndef PPB_PARTITION_MODEL_COMPARISON_HPP
#define PPB_PARTITION_MODEL_COMPARISON_HPP

#include <ppb/dryrun_format.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/partition/plan_reader.hpp>
#include <ppb/partition/request_error.hpp>
#include <ppb/placement.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

struct ComparedModel {
    std::string name;
    std::string version;
    std::string source;  // how its numbers were obtained
};

struct Prediction {
    std::optional<double> memory_mb;
    std::string error;  // why there is no prediction
};

struct ComparedPlacement {
    std::string label;  // the observation's config ("-" without one), or "plan"
    StagePlacement placement;
    std::optional<double> measured_mb;
    std::vector<Prediction> predictions;  // one per model
    // The groups of placement.group_layers, in their order (empty: not counted per group).
    std::vector<std::string> groups = {};
    // With several chunks whose counts come from the schedule: the stage's in-flight profile
    // (ppb/in_flight_profile.hpp); a model's prediction is its largest over the vectors.
    std::vector<InFlightVector> profile = {};
};

struct Comparison {
    std::string source;  // the placements' file(s)
    bool cross_validated = false;
    std::vector<ComparedModel> models;
    std::vector<ComparedPlacement> placements;
};

// The placements to compare, without a model yet: the observations of `dryrun` (named
// `dryrun_source`, or nullptr), each with its measured peak and labelled by its config, then the
// stages of `plan` (named `plan_source`, or nullptr), labelled "plan". With `measured`, a run of
// the plan (named `measured_source`), each plan stage gets the peak of the same placement there
// (degree, stage, schedule, every chunk's layers, groups and in-flight count) and its config in the
// label; `notes` gets a sentence for each stage it holds no observation of. `source` names them all
// ("A and B and C").
[[nodiscard]] Comparison placements_to_compare(const DryRunSet* dryrun,
                                               std::string_view dryrun_source,
                                               const PlanStages* plan, std::string_view plan_source,
                                               const DryRunSet* measured,
                                               std::string_view measured_source,
                                               std::vector<std::string>& notes);

// A new instance of the model to compare, configured by its options (each cross-validation fold
// fits its own).
using ModelOpener = std::function<MemoryModel()>;

// Adds a column to `comparison` (whose placements are set; observations of `dryrun`, when given,
// first and in its order): the model `open` gives, fitted to `dryrun` (named `dryrun_source`) when
// it needs a fit. With comparison.cross_validated, a model that needs a fit predicts each config's
// observations from a fit to the other configs only (the plan's stages from a fit to all). A
// placement the model cannot predict (its data or the placement refused) keeps the reason in its
// cell. RequestError on `dryrun_field` (named in `name`'s words) when a model needs a fit and there
// is no dry run, or cross-validation has no dry run or fewer than two configs in it.
void compare_model(Comparison& comparison, const ModelOpener& open, const DryRunSet* dryrun,
                   std::string_view dryrun_source, std::string_view dryrun_field,
                   const FieldName& name);

// Per model, over the placements with a measurement and a prediction: the count, the sums of
// absolute errors (MB and %) and squares, and the largest absolute error.
struct ErrorSummary {
    std::size_t count = 0;
    double sum_abs = 0.0;
    double sum_abs_percent = 0.0;
    double sum_squares = 0.0;
    double max_abs = 0.0;
};
[[nodiscard]] std::vector<ErrorSummary> summarise(const Comparison& comparison);

// The ppb.compare/1 document (host_api/docs/formats.md).
[[nodiscard]] boost::json::object comparison_document(const Comparison& comparison);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_MODEL_COMPARISON_HPP
