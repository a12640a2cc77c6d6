// SAPP's planning problem as partition settings: see sapp_config.hpp.
#include "sapp_config.hpp"

#include <ppb/errors.hpp>
#include <ppb/number_text.hpp>

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <string_view>

namespace ppb::cli {
namespace {

namespace json = boost::json;
using importers::SappProblem;
using importers::SappValue;

std::string schedule_of(std::uint32_t interleave, bool less_memory) {
    if (interleave <= 1)
        return "1f1b";
    return less_memory ? "interleaved-less-memory" : "interleaved";
}

// Records what the flags and the file make of the settings.
class Report {
  public:
    explicit Report(const SappProblem& problem) : problem_(problem) {}

    template <typename Flag, typename Value>
    void overridden(std::string_view key, const Value& file_value, std::string_view flag,
                    const Flag& flag_value) {
        overridden_.push_back(json::object{{"key", fmt::format("pipeline_config.{}", key)},
                                           {"value", json::value_from(file_value)},
                                           {"flag", flag},
                                           {"flag_value", json::value_from(flag_value)}});
        notes_.push_back(fmt::format("{} {} overrides pipeline_config.{} ({}) of {}", flag,
                                     flag_value, key, file_value, problem_.file));
    }

    void not_used(std::string_view key, const json::value& value, std::string why) {
        not_used_.push_back(json::object{
            {"key", fmt::format("pipeline_config.{}", key)}, {"value", value}, {"why", why}});
        notes_.push_back(
            fmt::format("pipeline_config.{} of {} is not used: {}", key, problem_.file, why));
    }

    void note(std::string text) { notes_.push_back(std::move(text)); }

    [[nodiscard]] json::object document(const PartitionSettings& settings) const {
        json::object keys;
        const auto given_or_null = [](const SappValue<std::uint32_t>& key) {
            return key.given() ? json::value(key.value) : json::value(nullptr);
        };
        keys["pipeline_num"] = given_or_null(problem_.pipeline_num);
        keys["micro_batch_num"] = given_or_null(problem_.micro_batch_num);
        keys["num_layer"] = problem_.num_layer ? given_or_null(*problem_.num_layer) : nullptr;
        keys["num_of_interleave"] = problem_.num_of_interleave.value;
        keys["vpp_less_memory"] = problem_.vpp_less_memory.value;
        keys["optimization_level"] = problem_.optimization_level.value;
        keys["memory_limit"] = problem_.memory_limit.value;
        keys["constant_memory"] = problem_.constant_memory.value;
        keys["enable_simulation"] = problem_.enable_simulation.value;
        keys["sim_comm_time"] = problem_.sim_comm_time.value;
        keys["use_backward_time"] = problem_.use_backward_time.value;
        json::object used;
        used["stages"] = *settings.stages;
        used["micro_batches"] = *settings.micro_batches;
        used["memory_limit_mb"] = *settings.memory_limit_mb;
        used["memory_margin_mb"] = *settings.memory_margin_mb;
        used["schedule"] = *settings.schedule;
        used["chunks"] = settings.chunks ? json::value(*settings.chunks) : json::value(nullptr);
        return {{"file", problem_.file},
                {"pipeline_config", std::move(keys)},
                {"settings", std::move(used)},
                {"overridden", overridden_},
                {"not_used", not_used_}};
    }

    [[nodiscard]] const std::vector<std::string>& notes() const noexcept { return notes_; }

  private:
    const SappProblem& problem_;
    json::array overridden_;
    json::array not_used_;
    std::vector<std::string> notes_;
};

}  // namespace

SappSettings sapp_partition_settings(const SappProblem& problem, const PartitionSettings& flags) {
    SappSettings out;
    out.problem = problem;
    Report report(out.problem);
    PartitionSettings& s = out.settings;

    // The keys SAPP requires: the flag, else the file's; neither is refused naming both ways.
    const auto required = [&](const SappValue<std::uint32_t>& key, std::string_view name,
                              const std::optional<std::uint32_t>& flag, std::string_view flag_name,
                              std::string_view value_name, std::string_view what) {
        if (flag) {
            if (key.given())
                report.overridden(name, key.value, flag_name, *flag);
            return *flag;
        }
        if (!key.given()) {
            throw InputError(fmt::format(
                "{}: pipeline_config has no {} ({}; SAPP requires it): give it there, or {} {}",
                problem.file, name, what, flag_name, value_name));
        }
        return key.value;
    };
    s.stages = required(problem.pipeline_num, "pipeline_num", flags.stages, "--stages", "P",
                        "the pipeline stages");
    s.micro_batches = required(problem.micro_batch_num, "micro_batch_num", flags.micro_batches,
                               "--micro-batches", "M", "the micro-batches per iteration");

    const SappValue<std::uint64_t>& limit = problem.memory_limit;
    if (flags.memory_limit_mb) {
        s.memory_limit_mb = flags.memory_limit_mb;
        if (limit.given())
            report.overridden("memory_limit", limit.value, "--memory-limit-mb",
                              *flags.memory_limit_mb);
    } else if (limit.value == 0) {
        const std::string give =
            "give memory_limit, the MB a stage may use, or --memory-limit-mb X (SAPP needs a "
            "positive limit for its load balancing too)";
        if (limit.given())
            throw InputError(
                fmt::format("{}: 0 is no limit to plan against: {}", limit.where, give));
        throw InputError(fmt::format(
            "{}: pipeline_config has no memory_limit (SAPP's default 0 is no limit to plan "
            "against): {}",
            problem.file, give));
    } else {
        s.memory_limit_mb = static_cast<double>(limit.value);
    }

    const SappValue<std::uint64_t>& constant = problem.constant_memory;
    if (flags.memory_margin_mb) {
        s.memory_margin_mb = flags.memory_margin_mb;
        if (constant.given()) {
            report.overridden("constant_memory", constant.value, "--memory-margin-mb",
                              *flags.memory_margin_mb);
        }
    } else {
        s.memory_margin_mb = static_cast<double>(constant.value);
        if (constant.value != 0 && *s.memory_margin_mb >= *s.memory_limit_mb) {
            throw InputError(fmt::format(
                "{}: {} is not below the memory limit ({}): SAPP adds it to every stage, "
                "so no stage could fit",
                constant.where, format_mb(static_cast<double>(constant.value)),
                format_mb(*s.memory_limit_mb)));
        }
    }

    // Chunks per stage: --chunks, else num_of_interleave; the schedule: --schedule, else the one
    // num_of_interleave and vpp_less_memory state.
    const SappValue<std::uint32_t>& interleave = problem.num_of_interleave;
    const SappValue<bool>& less = problem.vpp_less_memory;
    if (flags.chunks && interleave.given())
        report.overridden("num_of_interleave", interleave.value, "--chunks", *flags.chunks);
    const std::uint32_t chunks = flags.chunks.value_or(interleave.value);
    if (flags.schedule) {
        s.schedule = flags.schedule;
        if (less.given())
            report.overridden("vpp_less_memory", less.value, "--schedule", *flags.schedule);
        if (flags.chunks) {
            s.chunks = flags.chunks;
        } else if (*flags.schedule != "1f1b" && *flags.schedule != "dualpipe-v" && chunks > 1) {
            s.chunks = chunks;  // the interleave degree still gives the chunks
        } else if (interleave.given()) {
            report.overridden("num_of_interleave", interleave.value, "--schedule", *flags.schedule);
        }
    } else {
        s.schedule = schedule_of(chunks, less.value);
        s.chunks = chunks;
        if (less.value && chunks <= 1) {
            report.note(fmt::format(
                "{}: true with one chunk per stage: SAPP's less-memory activation counts are then "
                "1F1B's, so the schedule is 1f1b",
                less.where));
        }
    }

    const SappValue<std::uint32_t>& level = problem.optimization_level;
    if (level.given()) {
        report.not_used("optimization_level", json::value(level.value),
                        "it picks which of SAPP's ILP formulations of the iteration time SAPP "
                        "solves; ppb plans for its own iteration estimate, exactly (--objective "
                        "chooses it with several chunks)");
    }
    if (problem.enable_simulation.given() && !problem.enable_simulation.value) {
        report.not_used("enable_simulation", json::value(false),
                        "ppb always simulates the plan it prints (the simulated iteration)");
    }
    if (problem.sim_comm_time.given() && problem.sim_comm_time.value != 0.0) {
        report.note(fmt::format(
            "{}: {:g} is taken as the communication time of every stage boundary (--comm-time, "
            "which overrides it): ppb's simulated iteration waits for each transfer between "
            "stages, while the stages stay free (SAPP's simulator also has the sending and the "
            "receiving stage busy for it)",
            problem.sim_comm_time.where, problem.sim_comm_time.value));
    }
    if (problem.use_backward_time.given()) {
        report.not_used("use_backward_time", json::value(problem.use_backward_time.value),
                        "ppb's simulator always takes each layer's backward time from the "
                        "layer file, as its planner does");
    }
    out.report = report.document(s);
    out.notes = report.notes();
    return out;
}

void check_sapp_layers(const SappSettings& sapp, std::uint32_t body_layers,
                       std::span<const std::string> body_names, const std::string& source) {
    if (const auto& n = sapp.problem.num_layer; n && n->value != body_layers) {
        throw InputError(fmt::format(
            "{}: {} does not match the {} body layers of {} (SAPP refuses the mismatch too): give "
            "the model's body layers or leave num_layer out",
            n->where, n->value, body_layers, source));
    }
    if (const auto name = importers::sapp_reserved_name(body_names)) {
        throw InputError(fmt::format(
            "{}: BODY '{}' has the name of a variable of SAPP's solver, which SAPP refuses "
            "(its group would overwrite the variable; with --sapp-config ppb refuses it too): "
            "rename the BODY entry (SAPP's reserved names: {})",
            source, *name, fmt::join(importers::sapp_solver_names, ", ")));
    }
}

}  // namespace ppb::cli
