// ppb/partition/request.hpp — a partition problem as a host is asked for it.
//
// `ppb partition` and Python's ppb.partition take the same settings (stages, the memory limit
// and its margins, the recompute kinds and rule, the schedule and its chunks, the objective, the
// transfers between stages, the weight-gradient share, the local search) and must check and
// read them alike. This is their one owner: the host fills a PartitionRequest from what it was
// given, and problem_of checks every field and builds the Problem (all but its times and its
// micro-batch count, which come from the layer file or the model shape, and from the dry run).
//
// Errors carry the field they are about (RequestError::field(), the Python keyword's name,
// "memory_margin_mb"); their message names fields in the host's own words, through the host's
// FieldName ("--memory-margin-mb" for the command, "memory_margin_mb" for Python), so that no
// user is told about a flag they never typed.
#ifndef PPB_PARTITION_REQUEST_HPP
#define PPB_PARTITION_REQUEST_HPP

#include <ppb/errors.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/problem.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::partition {

struct PartitionRequest {
    std::uint32_t stages = 1;
    double memory_limit_mb = 0.0;
    double memory_margin_mb = 0.0;
    double memory_margin_sigma = 0.0;
    std::vector<std::string> kinds = {};  // recompute kinds' names; empty: every kind
    std::string recompute_rule = "mindformers";
    std::string schedule = "1f1b";
    std::optional<std::uint32_t> chunks = std::nullopt;  // default_chunks(schedule)
    std::string objective = "auto";                      // auto, stages or slots
    // One time for every stage boundary or one per boundary, in the layer times' unit.
    std::vector<double> comm_time = {};
    double weight_grad_share = 0.5;
    bool refine = false;  // kept for scripts: the local search is the default
    bool fast = false;    // the exact optimum alone, no local search
};

// A field's name in the host's words: "memory_margin_mb" -> "--memory-margin-mb".
using FieldName = std::function<std::string(std::string_view field)>;
// The fields as Python's keywords name them (the request's own names).
[[nodiscard]] std::string keyword_name(std::string_view field);
// The fields as the command's flags name them: "--" and '-' for '_'.
[[nodiscard]] std::string flag_name(std::string_view field);

// A request's field that cannot be planned: field() is its name in the request ("chunks").
class RequestError : public InputError {
  public:
    RequestError(std::string field, const std::string& message)
        : InputError(message), field_(std::move(field)) {}
    [[nodiscard]] const std::string& field() const noexcept { return field_; }

  private:
    std::string field_;
};

// The problem `request` asks for, every field checked (RequestError naming the first wrong one,
// in `name`'s words); its `time` empty and its `micro_batches` 1, for the host to set.
[[nodiscard]] Problem problem_of(const PartitionRequest& request, const FieldName& name);

// How plan_with_model plans `problem` (problem_of's) for `request`: the objective chosen by
// simulation when it is "auto", the local search unless `fast`. RequestError for refine with
// fast, or refine on a problem without chunks (whose plans are exact already).
[[nodiscard]] PlanWithModelOptions plan_options_of(const PartitionRequest& request,
                                                   const Problem& problem, const FieldName& name);

}  // namespace ppb::partition

#endif  // PPB_PARTITION_REQUEST_HPP
