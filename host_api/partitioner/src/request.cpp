// A partition problem as a host is asked for it (ppb/partition/request.hpp).
#include <ppb/partition/request.hpp>

#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/schedule.hpp>
#include <ppb/simulator.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ppb::partition {
namespace {

[[noreturn]] void fail(std::string_view field, const FieldName& name, std::string_view what) {
    throw RequestError(std::string(field), fmt::format("{}: {}", name(field), what));
}

void check_count(std::string_view field, std::uint32_t value, const limits::CountRange& range,
                 const FieldName& name) {
    if (!range.contains(value))
        fail(field, name, limits::out_of_range(std::to_string(value), range));
}

}  // namespace

std::string keyword_name(std::string_view field) {
    return std::string(field);
}

std::string flag_name(std::string_view field) {
    std::string out = "--";
    for (const char c : field)
        out += c == '_' ? '-' : c;
    return out;
}

Problem problem_of(const PartitionRequest& request, const FieldName& name) {
    Problem problem;
    check_count("stages", request.stages, limits::stages, name);
    problem.num_stages = request.stages;
    if (!(request.memory_limit_mb > 0.0) || !std::isfinite(request.memory_limit_mb))
        fail("memory_limit_mb", name, "expected a positive number of MB");
    problem.memory_limit_mb = request.memory_limit_mb;
    if (!(request.memory_margin_mb >= 0.0) || request.memory_margin_mb >= request.memory_limit_mb) {
        fail("memory_margin_mb", name,
             fmt::format("expected at least 0 and less than {}", name("memory_limit_mb")));
    }
    problem.memory_margin_mb = request.memory_margin_mb;
    if (!limits::margin_sigma.contains(request.memory_margin_sigma)) {
        fail("memory_margin_sigma", name,
             limits::out_of_range(fmt::format("{}", request.memory_margin_sigma),
                                  limits::margin_sigma));
    }
    problem.memory_margin_sigma = request.memory_margin_sigma;
    if (!request.kinds.empty()) {
        std::uint32_t mask = 0;
        for (const std::string& kind_text : request.kinds) {
            const auto kind = kind_from_name(kind_text);
            if (!kind) {
                fail("kinds", name,
                     fmt::format("unknown recompute kind '{}' (expected none, select, comm, both "
                                 "or full)",
                                 kind_text));
            }
            mask |= PPB_KIND_BIT(*kind);
        }
        problem.kinds = mask;
    }
    const auto rule = rule_from_name(request.recompute_rule);
    if (!rule) {
        fail("recompute_rule", name,
             fmt::format("expected 'mindformers', 'any', 'megatron' or 'torchtitan', got '{}'",
                         request.recompute_rule));
    }
    problem.rule = *rule;
    const auto schedule = schedule_from_name(request.schedule);
    if (!schedule) {
        fail("schedule", name,
             fmt::format("unknown schedule '{}' (expected {})", request.schedule,
                         names_or(schedule_names())));
    }
    problem.schedule = *schedule;
    problem.chunks = request.chunks.value_or(default_chunks(problem.schedule));
    check_count("chunks", problem.chunks, limits::chunks, name);
    if (request.objective != "auto" && request.objective != "stages" &&
        request.objective != "slots") {
        fail("objective", name,
             fmt::format("expected 'auto', 'stages' or 'slots', got '{}'", request.objective));
    }
    problem.objective =
        request.objective == "slots" ? ChunkObjective::slots : ChunkObjective::stages;
    for (const double c : request.comm_time) {
        if (!std::isfinite(c) || c < 0.0) {
            fail("comm_time", name,
                 fmt::format("{} is not a time: give a finite number, at least 0, in the layer "
                             "times' unit (one for every stage boundary, or one per boundary)",
                             c));
        }
    }
    problem.comm_time = request.comm_time;
    try {
        (void)boundary_comm_times(problem.schedule, problem.num_stages, problem.comm_time);
    } catch (const InputError& e) {
        fail("comm_time", name, e.what());
    }
    if (!(request.weight_grad_share >= 0.0 && request.weight_grad_share <= 1.0)) {
        fail(
            "weight_grad_share", name,
            fmt::format("{} is not a share: give a number from 0 to 1", request.weight_grad_share));
    }
    problem.weight_grad_share = request.weight_grad_share;
    return problem;
}

PlanWithModelOptions plan_options_of(const PartitionRequest& request, const Problem& problem,
                                     const FieldName& name) {
    if (request.refine && !problem.chunked())
        fail("refine", name, "1f1b plans are exact already; it is for the schedules with chunks");
    if (request.refine && request.fast) {
        throw RequestError("refine", fmt::format("{} and {}: the local search is the default; {} "
                                                 "skips it",
                                                 name("refine"), name("fast"), name("fast")));
    }
    return {.choose_objective = request.objective == "auto", .refine = !request.fast};
}

}  // namespace ppb::partition
