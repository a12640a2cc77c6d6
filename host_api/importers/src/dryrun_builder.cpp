#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/importers/output_file.hpp>
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ppb::importers {
namespace fs = std::filesystem;
namespace json = boost::json;
namespace {

// A relative difference above which the ranks of one stage look like different runs.
constexpr double replica_tolerance = 0.01;

json::object observation_json(const ImportedDryRun& run, const StageObservation& o,
                              std::optional<std::uint32_t> num_stages,
                              std::optional<std::uint32_t> micro_batches,
                              std::optional<std::uint32_t> in_flight) {
    json::object obj;
    obj["config"] = run.label;
    if (num_stages)
        obj["num_stages"] = *num_stages;
    if (micro_batches)
        obj["micro_batches"] = *micro_batches;
    obj["stage"] = o.stage;
    json::object layers;
    for (std::size_t k = 0; k < o.layers.size(); ++k) {
        if (o.layers[k] != 0)
            layers[kind_names[k]] = o.layers[k];
    }
    obj["layers"] = std::move(layers);
    if (in_flight)
        obj["in_flight"] = *in_flight;
    obj["peak_memory_mb"] = o.peak_memory_mb;
    if (!o.comment.empty())
        obj["comment"] = o.comment;
    return obj;
}

std::string checked_text(const json::value& document, std::string_view source,
                         const DryRunReadOptions& options) {
    std::string text = to_pretty_json(document);
    (void)parse_dryrun(text, source, options);  // throws InputError if it is not a valid file
    return text;
}

void check_label(const std::string& label) {
    if (label.empty())
        throw FlagError("--label: the label must not be empty");
}

}  // namespace

std::vector<StageObservation> stage_observations(const PipelineLayout& layout,
                                                 std::span<const MemoryReading> readings,
                                                 Messages& messages) {
    std::map<std::uint32_t, std::vector<const MemoryReading*>> by_stage;
    for (const MemoryReading& r : readings) {
        if (r.rank >= layout.world_size()) {
            throw InputError(fmt::format(
                "{}:{}: rank {} is not a rank of this job: {} stage{} x {} rank{} per stage ({}) = "
                "{} ranks, 0..{}",
                r.file, r.line, r.rank, layout.num_stages, layout.num_stages == 1 ? "" : "s",
                layout.ranks_per_stage, layout.ranks_per_stage == 1 ? "" : "s",
                layout.ranks_explained, layout.world_size(), layout.world_size() - 1));
        }
        by_stage[r.rank / layout.ranks_per_stage].push_back(&r);
    }

    std::vector<StageObservation> out;
    std::vector<std::string> replicated;
    for (const auto& [stage, list] : by_stage) {
        const auto largest = std::max_element(
            list.begin(), list.end(),
            [](const MemoryReading* a, const MemoryReading* b) { return a->mb < b->mb; });
        const auto smallest = std::min_element(
            list.begin(), list.end(),
            [](const MemoryReading* a, const MemoryReading* b) { return a->mb < b->mb; });
        const MemoryReading& r = **largest;
        StageObservation o;
        o.stage = stage;
        o.layers = layout.stages.at(stage);
        o.peak_memory_mb = r.mb;
        if (list.size() == 1) {
            o.comment = fmt::format("rank {}, {}:{}", r.rank, r.file, r.line);
        } else {
            std::vector<std::uint32_t> ranks;
            for (const auto* reading : list)
                ranks.push_back(reading->rank);
            o.comment = fmt::format("largest of ranks {}: rank {}, {}:{}", describe_numbers(ranks),
                                    r.rank, r.file, r.line);
            replicated.push_back(fmt::format("stage {}: ranks {}", stage, describe_numbers(ranks)));
            const double spread = (r.mb - (*smallest)->mb) / r.mb;
            if (spread > replica_tolerance) {
                add_warning(messages,
                            fmt::format("stage {}: its ranks' readings differ by {:.1f} % (rank "
                                        "{}: {} MB at {}:{}, rank {}: {} MB at {}:{}); ranks of "
                                        "one stage should measure alike: are the logs of one "
                                        "dry run?",
                                        stage, 100.0 * spread, (*smallest)->rank, (*smallest)->mb,
                                        (*smallest)->file, (*smallest)->line, r.rank, r.mb, r.file,
                                        r.line));
            }
        }
        out.push_back(std::move(o));
    }
    if (!replicated.empty()) {
        add_note(messages, fmt::format("several ranks per stage: took each stage's largest reading "
                                       "(peak memory is what must fit): {}",
                                       fmt::join(replicated, "; ")));
    }
    std::vector<std::uint32_t> missing;
    std::vector<std::uint32_t> present;
    for (std::uint32_t s = 0; s < layout.num_stages; ++s)
        (by_stage.count(s) != 0 ? present : missing).push_back(s);
    if (!missing.empty() && !present.empty()) {
        add_note(messages,
                 fmt::format("no log for stage{} {} of the {}-stage pipeline: imported stage{} {}",
                             missing.size() == 1 ? "" : "s", describe_numbers(missing),
                             layout.num_stages, present.size() == 1 ? "" : "s",
                             describe_numbers(present)));
    }
    return out;
}

std::string new_dryrun_text(const ImportedDryRun& run, const DryRunReadOptions& options) {
    check_label(run.label);
    json::object doc;
    doc["format"] = dryrun_format_v1;
    if (!run.comment.empty())
        doc["comment"] = run.comment;
    doc["num_stages"] = run.num_stages;
    if (run.micro_batches)
        doc["micro_batches"] = *run.micro_batches;
    doc["schedule"] = "1f1b";
    json::array observations;
    for (const StageObservation& o : run.observations)
        observations.push_back(observation_json(run, o, std::nullopt, std::nullopt, std::nullopt));
    doc["observations"] = std::move(observations);
    return checked_text(doc, "the imported dry run", options);
}

std::string appended_dryrun_text(std::string_view existing, std::string_view source,
                                 const ImportedDryRun& run, const DryRunReadOptions& options,
                                 Messages& messages) {
    check_label(run.label);
    const DryRunSet set = parse_dryrun(existing, source, options);
    for (std::size_t i = 0; i < set.observations.size(); ++i) {
        if (set.observations[i].config == run.label) {
            throw InputError(fmt::format(
                "{}: observations[{}] already has config '{}'; give the appended dry run another "
                "--label",
                source, i, run.label));
        }
    }
    json::value document = parse_json(existing, source);
    json::object& top = document.as_object();

    std::optional<std::uint32_t> num_stages;
    if (set.num_stages != run.num_stages) {
        num_stages = run.num_stages;
        add_note(messages,
                 set.num_stages == 0
                     ? fmt::format("{} gives no top-level num_stages: each appended observation "
                                   "gives its own ({})",
                                   source, run.num_stages)
                     : fmt::format("{} is of a {}-stage pipeline: each appended observation gives "
                                   "its own num_stages ({})",
                                   source, set.num_stages, run.num_stages));
    }
    std::optional<std::uint32_t> micro_batches;
    bool explicit_in_flight = false;
    if (run.micro_batches && *run.micro_batches != set.micro_batches) {
        micro_batches = run.micro_batches;
        add_note(messages, fmt::format("{} {}: each appended observation gives its own "
                                       "micro_batches ({})",
                                       source,
                                       set.micro_batches == 0
                                           ? std::string("gives no top-level micro_batches")
                                           : fmt::format("has micro_batches {}", set.micro_batches),
                                       *run.micro_batches));
    } else if (!run.micro_batches && set.micro_batches != 0) {
        explicit_in_flight = true;
        add_note(messages, fmt::format("{} has micro_batches {} but the appended dry run has no "
                                       "micro-batch count: each appended observation gives its "
                                       "in_flight as P - stage",
                                       source, set.micro_batches));
    }
    json::value& list = top["observations"];
    for (const StageObservation& o : run.observations) {
        std::optional<std::uint32_t> in_flight;
        if (explicit_in_flight)
            in_flight = run.num_stages - o.stage;
        list.as_array().push_back(observation_json(run, o, num_stages, micro_batches, in_flight));
    }
    return checked_text(document, source, options);
}

void write_file_atomically(const fs::path& path, std::string_view text) {
    write_output_file(path, text);
}

}  // namespace ppb::importers
