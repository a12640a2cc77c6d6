// SAPP's -init description of dry runs: see sapp.hpp.
#include "yaml_config.hpp"

#include <ppb/importers/sapp.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

namespace ppb::importers {
namespace {

using detail::boolean_of;
using detail::Config;
using detail::count_in;
using detail::describe;
using detail::integer_of;
using detail::number_of;
using detail::Setting;

Setting required(const Config& config, std::initializer_list<std::string_view> keys,
                 std::string_view key_path, std::string_view what) {
    Setting setting = config.lookup(keys);
    if (!setting.present() || setting.node().IsNull())
        throw InputError(fmt::format("{}: no {} ({})", config.name(), key_path, what));
    return setting;
}

bool is_zero(const YAML::Node& node) {
    const auto value = integer_of(node);
    return value && *value == 0;
}

bool has_row(const YAML::Node& node) {
    if (!node.IsSequence())
        return false;
    for (std::size_t i = 0; i < node.size(); ++i) {
        if (node[i].IsSequence())
            return true;
    }
    return false;
}

// The entries of a per-stage list: exactly one per stage.
std::vector<Setting> per_stage(const Setting& row, std::uint32_t stages) {
    if (!row.node().IsSequence())
        row.fail(
            fmt::format("expected a list with one entry per stage, got {}", describe(row.node())));
    if (row.node().size() != stages) {
        row.fail(
            fmt::format("has {} entr{} but pipeline_config.pipeline_num is {}: give one per "
                        "stage",
                        row.node().size(), row.node().size() == 1 ? "y" : "ies", stages));
    }
    std::vector<Setting> entries;
    for (std::size_t i = 0; i < stages; ++i)
        entries.push_back(row.element(i));
    return entries;
}

// One setting per round: `rounds` entries of a list of rounds, or (one round) the setting
// itself; a scalar, or nothing, stands for every round.
std::vector<Setting> per_round(const Setting& setting, std::size_t rounds) {
    const YAML::Node& node = setting.node();
    if (!setting.present() || !node.IsSequence())
        return std::vector<Setting>(rounds, setting);
    if (rounds == 1 && !has_row(node))
        return {setting};
    if (node.size() != rounds) {
        setting.fail(fmt::format(
            "has {} entr{} but pipeline_config.offset describes {} dry run{}: give one per dry "
            "run",
            node.size(), node.size() == 1 ? "y" : "ies", rounds, rounds == 1 ? "" : "s"));
    }
    std::vector<Setting> entries;
    for (std::size_t i = 0; i < rounds; ++i)
        entries.push_back(setting.element(i));
    return entries;
}

// The offsets of every round: 0, one list of P integers, or a list of rounds each 0 or such a
// list.
std::vector<std::vector<std::int64_t>> read_offsets(const Setting& setting, std::uint32_t stages) {
    const YAML::Node& node = setting.node();
    const auto zeros = std::vector<std::int64_t>(stages, 0);
    if (!setting.present() || node.IsNull() || is_zero(node))
        return {zeros};
    const auto row_of = [&](const Setting& row) {
        std::vector<std::int64_t> offsets;
        for (const Setting& entry : per_stage(row, stages)) {
            const auto value = integer_of(entry.node());
            if (!value)
                entry.fail("expected an integer offset (layers), got " + describe(entry.node()));
            offsets.push_back(*value);
        }
        return offsets;
    };
    if (!node.IsSequence()) {
        setting.fail(fmt::format(
            "expected 0, a list of one offset per stage, or a list of such lists (one per dry "
            "run), got {}",
            describe(node)));
    }
    if (!has_row(node))
        return {row_of(setting)};
    if (node.size() == 0)
        setting.fail("expected at least one dry run");
    std::vector<std::vector<std::int64_t>> rounds;
    for (std::size_t i = 0; i < node.size(); ++i) {
        const Setting row = setting.element(i);
        if (is_zero(row.node())) {
            rounds.push_back(zeros);
        } else if (row.node().IsSequence()) {
            rounds.push_back(row_of(row));
        } else {
            row.fail("expected 0 or a list of one offset per stage, got " + describe(row.node()));
        }
    }
    return rounds;
}

// Layers covered by a recompute setting of one round, per stage: true every layer, false / 0 /
// nothing none, else one count (or true / false) per stage.
std::vector<std::uint32_t> recompute_counts(const Setting& setting,
                                            const std::vector<std::uint32_t>& layers) {
    const auto stages = static_cast<std::uint32_t>(layers.size());
    const YAML::Node& node = setting.node();
    if (!setting.present() || node.IsNull() || is_zero(node))
        return std::vector<std::uint32_t>(stages, 0);
    if (const auto flag = boolean_of(node))
        return *flag ? layers : std::vector<std::uint32_t>(stages, 0);
    if (!node.IsSequence()) {
        setting.fail(fmt::format(
            "expected true, false, 0 or a list of one count of layers per stage, got {}",
            describe(node)));
    }
    return detail::layer_counts(per_stage(setting, stages), layers);
}

double memory_of(const Setting& setting) {
    const auto value = number_of(setting.node());
    if (!value)
        setting.fail("expected a peak memory in MB, got " + describe(setting.node()));
    if (!limits::positive_memory_mb.contains(*value))
        setting.fail(limits::out_of_range(setting.node().Scalar(), limits::positive_memory_mb));
    return *value;
}

std::string where_of(const Setting& setting) {
    return setting.where();
}

// What Python's truth test makes of a YAML value: SAPP acts on profiling_config only when it is
// "truthy" (not null, false, 0, an empty string, list or mapping).
bool truthy(const YAML::Node& node) {
    if (node.IsNull())
        return false;
    if (node.IsMap() || node.IsSequence())
        return node.size() != 0;
    if (const auto flag = boolean_of(node))
        return *flag;
    if (const auto number = number_of(node))
        return *number != 0.0;
    return !node.Scalar().empty();
}

// time_config's three times, as SAPP's time_parser takes them: all of head, body and tail, or
// (where some are missing) the times it would measure in profiling_config's timeline, which ppb
// does not read.
std::optional<HeadBodyTailTimes> read_times(const Config& config, Messages& messages) {
    const Setting times = config.lookup({"time_config"});
    const Setting profiling = config.lookup({"profiling_config"});
    const bool profiled = profiling.present() && truthy(profiling.node());
    const bool given = times.present() && !times.node().IsNull();
    std::vector<std::string_view> missing;
    std::array<double, 3> values{};
    constexpr std::array<std::string_view, 3> keys = {"head", "body", "tail"};
    if (given) {
        for (std::size_t i = 0; i < keys.size(); ++i) {
            const Setting time = config.lookup({"time_config", keys[i]});
            if (!time.present() || time.node().IsNull()) {
                missing.push_back(keys[i]);
                continue;
            }
            const auto value = number_of(time.node());
            if (!value) {
                time.fail("expected the time of one layer (a number of 0 or more), got " +
                          describe(time.node()));
            }
            if (!limits::time.contains(*value))
                time.fail(limits::out_of_range(time.node().Scalar(), limits::time));
            values[i] = *value;
        }
    }
    if (profiled && (!given || !missing.empty())) {
        profiling.fail(fmt::format(
            "ppb does not read profiler timelines (SAPP's -init measures each layer's time in "
            "the timeline folder named here{}): give the times instead as time_config: {{head: "
            "T, body: T, tail: T}}, the time of one head, body and tail layer as SAPP's layer "
            "file gives it (today's SAPP: a layer's forward time), or leave both out and give "
            "the times in the layer file of 'ppb partition --model-desc'",
            given ? fmt::format("; time_config lacks {}", fmt::join(missing, " and ")) : ""));
    }
    if (!given) {
        add_note(messages,
                 "no time_config: the dry-run file carries no layer times, so 'ppb fit "
                 "--export-sapp' writes a layer file of memory only (SAPP's -init writes time "
                 "0); give time_config: {head: T, body: T, tail: T} for a complete one");
        return std::nullopt;
    }
    if (!missing.empty()) {
        times.fail(fmt::format(
            "no {} time (SAPP's -init would write its layer file with that time null): give "
            "head, body and tail, the time of one layer each",
            fmt::join(missing, " and ")));
    }
    if (profiling.present() && !profiling.node().IsNull()) {
        add_note(messages, fmt::format("{}: not read: time_config gives every time (SAPP reads it "
                                       "first too)",
                                       profiling.where()));
    }
    return HeadBodyTailTimes{values[0], values[1], values[2]};
}

}  // namespace

SappDryRuns read_sapp_init(const std::filesystem::path& file, Messages& messages) {
    const Config config(file, "a SAPP -init description");
    SappDryRuns result;

    const Setting pipeline = required(config, {"pipeline_config", "pipeline_num"},
                                      "pipeline_config.pipeline_num", "the number of stages");
    result.num_stages = count_in(pipeline, limits::stages);
    if (result.num_stages < 2) {
        pipeline.fail(
            "SAPP describes pipelines of 2 or more stages (head_memory is stage 0's, "
            "tail_memory the last stage's)");
    }
    const std::uint32_t stages = result.num_stages;
    const Setting num_layer_setting = required(config, {"pipeline_config", "num_layer"},
                                               "pipeline_config.num_layer", "the body layers");
    result.num_layers = count_in(num_layer_setting, limits::layers);
    const std::uint32_t num_layers = result.num_layers;

    const Setting offset_setting = config.lookup({"pipeline_config", "offset"});
    const auto offsets = read_offsets(offset_setting, stages);
    const std::size_t rounds = offsets.size();
    const bool nested = has_row(offset_setting.node());

    // Layers per stage of each round: num_layer // pipeline_num plus the offset, summing to
    // num_layer.
    const std::int64_t base = num_layers / stages;
    std::vector<std::vector<std::uint32_t>> layers(rounds);
    for (std::size_t r = 0; r < rounds; ++r) {
        const Setting at = nested ? offset_setting.element(r) : offset_setting;
        std::int64_t sum = 0;
        std::string terms;
        for (std::uint32_t s = 0; s < stages; ++s) {
            const std::int64_t off = offsets[r][s];
            if (off > static_cast<std::int64_t>(num_layers) || base + off < 0) {
                at.fail(fmt::format(
                    "stage {} would hold {} + ({}) layers (num_layer {} // pipeline_num {} = {} "
                    "plus its offset), outside 0 to {}",
                    s, base, off, num_layers, stages, base, num_layers));
            }
            layers[r].push_back(static_cast<std::uint32_t>(base + off));
            sum += base + off;
            terms += fmt::format("{}{}", terms.empty() ? "" : " + ", base + off);
        }
        if (sum != num_layers) {
            const std::string problem = fmt::format(
                "the stages hold {} = {} layers, but num_layer is {}: each stage holds num_layer "
                "// pipeline_num = {} plus its offset, so the offsets must sum to {}, not {}",
                terms, sum, num_layers, base, num_layers - base * stages, sum - base * stages);
            if (at.present())
                at.fail(problem);
            num_layer_setting.fail(problem);
        }
    }

    // Recompute kinds of every stage of every round.
    const Setting full = config.lookup({"recompute_config", "recompute"});
    const Setting select = config.lookup({"recompute_config", "select_recompute"});
    const Setting comm = config.lookup({"recompute_config", "select_comm_recompute"});
    const auto full_rounds = per_round(full, rounds);
    const auto select_rounds = per_round(select, rounds);
    const auto comm_rounds = per_round(comm, rounds);
    result.rounds.resize(rounds);
    for (std::size_t r = 0; r < rounds; ++r) {
        const auto f = recompute_counts(full_rounds[r], layers[r]);
        const auto sel = recompute_counts(select_rounds[r], layers[r]);
        const auto c = recompute_counts(comm_rounds[r], layers[r]);
        for (std::uint32_t s = 0; s < stages; ++s)
            result.rounds[r].stages.push_back(split_recompute(layers[r][s], f[s], sel[s], c[s]));
    }

    // Peak memories: head (stage 0), tail (stage P-1), body stages by id.
    std::vector<std::vector<std::pair<std::uint32_t, Setting>>> memories(rounds);
    const auto head_or_tail = [&](std::string_view key, std::uint32_t stage) {
        const Setting setting =
            required(config, {"memory_usage", key}, fmt::format("memory_usage.{}", key),
                     fmt::format("the peak memory of stage {}; SAPP needs it", stage));
        if (!setting.node().IsSequence()) {
            if (rounds > 1) {
                add_note(messages,
                         fmt::format("{}: one value for {} dry runs: taken as stage {} of the "
                                     "last, as SAPP reads it (give a list for one per dry run)",
                                     setting.where(), rounds, stage));
            }
            memories[rounds - 1].emplace_back(stage, setting);
            return;
        }
        if (setting.node().size() != rounds) {
            setting.fail(
                fmt::format("has {} entries but pipeline_config.offset describes {} dry "
                            "run{}: give one per dry run, or one value for the last",
                            setting.node().size(), rounds, rounds == 1 ? "" : "s"));
        }
        for (std::size_t r = 0; r < rounds; ++r) {
            if (!setting.element(r).node().IsNull())
                memories[r].emplace_back(stage, setting.element(r));
        }
    };
    head_or_tail("head_memory", 0);
    head_or_tail("tail_memory", stages - 1);

    const Setting ids = config.lookup({"memory_usage", "body_memories", "stage_id"});
    const Setting values = config.lookup({"memory_usage", "body_memories", "memories"});
    const bool have_ids = ids.present() && !ids.node().IsNull();
    const bool have_values = values.present() && !values.node().IsNull();
    if (have_ids != have_values) {
        (have_ids ? ids : values)
            .fail(fmt::format("given without memory_usage.body_memories.{}: give both, one "
                              "memory per stage id",
                              have_ids ? "memories" : "stage_id"));
    }
    if (have_ids) {
        const auto list_of = [&](const Setting& setting) {
            if (!setting.node().IsSequence())
                setting.fail("expected a list, got " + describe(setting.node()));
        };
        list_of(ids);
        list_of(values);
        const auto id_rounds = per_round(ids, rounds);
        const auto value_rounds = per_round(values, rounds);
        for (std::size_t r = 0; r < rounds; ++r) {
            const Setting& id_list = id_rounds[r];
            const Setting& value_list = value_rounds[r];
            list_of(id_list);
            list_of(value_list);
            if (id_list.node().size() != value_list.node().size()) {
                value_list.fail(fmt::format(
                    "has {} memor{} but {} has {} stage id{}: give one memory per stage id",
                    value_list.node().size(), value_list.node().size() == 1 ? "y" : "ies",
                    id_list.where(), id_list.node().size(), id_list.node().size() == 1 ? "" : "s"));
            }
            for (std::size_t i = 0; i < id_list.node().size(); ++i) {
                const Setting id = id_list.element(i);
                const auto value = integer_of(id.node());
                if (!value || *value < 0 || *value >= stages) {
                    id.fail(fmt::format("expected a stage id from 0 to {}, got {}", stages - 1,
                                        describe(id.node())));
                }
                if (*value == 0 || *value == stages - 1) {
                    id.fail(fmt::format(
                        "stage {} is the {} stage: its memory is memory_usage.{}, not a body "
                        "memory",
                        *value, *value == 0 ? "head" : "tail",
                        *value == 0 ? "head_memory" : "tail_memory"));
                }
                memories[r].emplace_back(static_cast<std::uint32_t>(*value), value_list.element(i));
            }
        }
    }

    for (std::size_t r = 0; r < rounds; ++r) {
        auto& entries = memories[r];
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const auto& [stage, setting] = entries[i];
            if (i > 0 && entries[i - 1].first == stage) {
                setting.fail(fmt::format("stage {} is given twice{} (also at {})", stage,
                                         rounds > 1 ? fmt::format(" in dry run {}", r + 1) : "",
                                         where_of(entries[i - 1].second)));
            }
            StageObservation o;
            o.stage = stage;
            o.layers = result.rounds[r].stages[stage];
            o.peak_memory_mb = memory_of(setting);
            o.comment = where_of(setting);
            result.rounds[r].observations.push_back(std::move(o));
        }
    }

    result.times = read_times(config, messages);
    return result;
}

}  // namespace ppb::importers
