// ppb compare: several models' predictions side by side, with errors against measurements.
#ifndef PPB_COMPARE_OUTPUT_HPP
#define PPB_COMPARE_OUTPUT_HPP

#include <ppb/placement.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ppb::cli {

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
    std::string label;  // the observation's config, or "plan"
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

[[nodiscard]] boost::json::object comparison_document(const Comparison& comparison);
[[nodiscard]] std::string render_comparison(const Comparison& comparison);

}  // namespace ppb::cli

#endif  // PPB_COMPARE_OUTPUT_HPP
