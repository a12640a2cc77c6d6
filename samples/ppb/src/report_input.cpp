// The checks of report_input.hpp: one function per document, walking exactly the members that
// report_plan.cpp and report_search.cpp read, with the ranges of ppb/limits.hpp. Keep the two in
// step: a member a page starts to read is checked here first.
#include "report_input.hpp"

#include "framework_config.hpp"

#include <ppb/json_input.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <cstdint>

namespace ppb::cli::report {
namespace {

// An iteration's time: the limits of a layer's time, layers and micro-batches allow up to about
// 1e22 (ppb/limits.hpp); a page shows any finite non-negative time.
constexpr limits::RealRange iteration_time{0.0, 1e30, false, ""};

// A number the page shows in MB or as a time, or null (drawn as 0).
void memory_or_null(const JsonNode& node) {
    if (!node.is_null())
        (void)node.as_number_in(limits::signed_memory_mb);
}
void time_or_null(const JsonNode& node) {
    if (!node.is_null())
        (void)node.as_number_in(iteration_time);
}
// The member under its name, or under the name documents of earlier versions gave it.
JsonNode renamed_member(const JsonObject& object, std::string_view key, std::string_view old) {
    if (!object.contains(key) && object.contains(old))
        return object.required(old);
    return object.required(key);
}

void memory_member(const JsonObject& object, std::string_view key) {
    memory_or_null(object.required(key));
}

void check_breakdown(const JsonNode& node) {
    const JsonObject breakdown(node);
    if (auto terms = breakdown.optional("parts")) {
        // The model's own terms: names the page uses in class names, labels it escapes.
        const JsonArray parts(*terms);
        if (parts.empty())
            terms->fail("expected the model's terms, got none");
        for (const JsonNode& term : parts.elements()) {
            const JsonObject part(term);
            const JsonNode name = part.required("name");
            const std::string_view text = name.as_string();
            if (text.empty() || text.size() > 32 ||
                text.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") !=
                    std::string_view::npos)
                name.fail("expected a name of 1 to 32 of a-z, 0-9 and '_'");
            (void)part.required("label").as_string();
            (void)part.required("mb").as_number_in(limits::memory_mb);
        }
    } else if (breakdown.contains("constant")) {
        for (const std::string_view key : {"constant", "parameters", "head", "tail"})
            memory_member(breakdown, key);
        for (const auto& [kind, mb] : JsonObject(breakdown.required("activations")).members()) {
            if (!kind_from_name(kind))
                mb.fail("unknown recompute kind (none, select, comm, both, full)");
            memory_or_null(mb);
        }
    } else {
        if (auto total = breakdown.optional("activations_total"))
            memory_or_null(*total);
        memory_member(breakdown, "other");
    }
}

void check_stage(const JsonObject& stage, std::uint32_t num_stages) {
    const JsonNode id = stage.required("stage");
    if (id.as_uint32() >= num_stages)
        id.fail(fmt::format("not a stage of this pipeline (num_stages is {})", num_stages));
    for (const auto& [kind, count] : JsonObject(stage.required("layers")).members()) {
        if (!kind_from_name(kind))
            count.fail("unknown recompute kind (none, select, comm, both, full)");
        (void)count.as_count(limits::layers_or_none);
    }
    (void)stage.required("in_flight").as_count(limits::in_flight);
    memory_member(stage, "memory_mb");
    memory_member(stage, "uncertainty_margin_mb");
    memory_member(stage, "headroom_mb");
    if (auto breakdown = stage.optional("memory_breakdown_mb"))
        check_breakdown(*breakdown);
}

void check_model(const JsonObject& document) {
    const JsonObject model(document.required("model"));
    (void)model.required("name").as_string();
    (void)model.required("version").as_string();
}

void check_plan(const JsonNode& node) {
    const JsonObject plan(node);
    // The bars' full height: a limit of 0 would draw every bar infinitely high.
    (void)plan.required("memory_limit_mb").as_number_in(limits::positive_memory_mb);
    (void)plan.required("memory_margin_mb").as_number_in(limits::memory_mb);
    (void)plan.required("num_chunks").as_count(limits::chunks);
    (void)plan.required("schedule").as_string();
    (void)plan.required("num_layers").as_count(limits::layers);
    const std::uint32_t num_stages = plan.required("num_stages").as_count(limits::stages);
    (void)plan.required("micro_batches").as_count(limits::micro_batches);
    (void)plan.required("recompute_rule").as_string();
    check_model(plan);
    const JsonObject simulated(plan.required("simulated"));
    time_or_null(simulated.required("makespan"));
    if (const JsonNode bubble = simulated.required("bubble_fraction"); !bubble.is_null()) {
        const double fraction = bubble.as_number();
        if (fraction < 0.0 || fraction > 1.0)
            bubble.fail("expected a fraction from 0 to 1");
    }
    time_or_null(renamed_member(plan, "partitioner_objective", "iteration_time"));
    for (const JsonNode& stage : JsonArray(plan.required("stages")).elements())
        check_stage(JsonObject(stage), num_stages);
    // Each framework's configuration, as framework_config.cpp reads it.
    (void)framework_configs(node);
}

}  // namespace

void check_plan_document(const boost::json::value& plan, std::string_view source) {
    check_plan(JsonNode(plan, source));
}

void check_search_document(const boost::json::value& search, std::string_view source) {
    const JsonObject document(JsonNode(search, source));
    for (const std::string_view key : {"configurations", "num_layers", "planned"})
        (void)document.required(key).as_integer(0, INT64_MAX);
    const JsonObject searched(document.required("search"));
    (void)searched.required("global_batch").as_integer(0, INT64_MAX);
    (void)searched.required("memory_limit_mb").as_number_in(limits::positive_memory_mb);
    check_model(document);
    const JsonArray ranking(document.required("ranking"));
    for (std::size_t i = 0; i < ranking.size(); ++i) {
        const JsonObject entry(ranking.at(i));
        (void)entry.required("rank").as_integer(1, INT64_MAX);
        (void)entry.required("pipeline_parallel").as_count(limits::stages);
        (void)entry.required("data_parallel").as_integer(1, INT64_MAX);
        (void)entry.required("micro_batches").as_count(limits::micro_batches);
        (void)entry.required("schedule").as_string();
        (void)entry.required("chunks").as_count(limits::chunks);
        (void)entry.required("recompute").as_string();
        time_or_null(entry.required("iteration_time"));
        time_or_null(renamed_member(entry, "partitioner_objective", "estimate"));
        if (const JsonNode bubble = entry.required("bubble_fraction"); !bubble.is_null()) {
            const double fraction = bubble.as_number();
            if (fraction < 0.0 || fraction > 1.0)
                bubble.fail("expected a fraction from 0 to 1");
        }
        memory_member(entry, "peak_memory_mb");
        memory_member(entry, "headroom_mb");
        // Only the best configuration's plan is drawn.
        if (i == 0) {
            check_plan(entry.required("plan"));
            // Its degrees with its plan's blocks, as the page shows them (documents before
            // megatron_parallelism have the plan's alone).
            if (entry.contains("megatron_parallelism"))
                (void)framework_configs(entry.required("plan"), framework_degrees(entry.node()));
        }
    }
}

const boost::json::value& plan_objective(const boost::json::object& plan) {
    const auto* found = plan.if_contains("partitioner_objective");
    return found != nullptr ? *found : plan.at("iteration_time");
}

const boost::json::value& entry_objective(const boost::json::object& entry) {
    const auto* found = entry.if_contains("partitioner_objective");
    return found != nullptr ? *found : entry.at("estimate");
}

}  // namespace ppb::cli::report
