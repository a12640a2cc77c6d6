#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/output_file.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
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

json::object layers_json(const KindCounts& counts) {
    json::object layers;
    for (std::size_t k = 0; k < counts.size(); ++k) {
        if (counts[k] != 0)
            layers[kind_names[k]] = counts[k];
    }
    return layers;
}

// {"dense": {"none": 3}, "moe": {"full": 1, "none": 2}}: groups without layers left out.
json::object group_layers_json(const std::vector<std::string>& names,
                               const std::vector<KindCounts>& counts) {
    json::object layers;
    for (std::size_t g = 0; g < names.size(); ++g) {
        if (total_layers(counts.at(g)) != 0)
            layers[names[g]] = layers_json(counts[g]);
    }
    return layers;
}

// What an appended observation must say for itself because the document's top level says
// otherwise.
struct OwnSettings {
    std::optional<std::uint32_t> num_stages;
    std::optional<std::uint32_t> micro_batches;
    bool schedule = false;  // the run's schedule and num_chunks
    // Explicit in-flight counts, one per chunk (the run has no micro-batch count but the
    // document has one, which would otherwise cap them).
    std::vector<std::uint32_t> in_flight;
};

json::object observation_json(const ImportedDryRun& run, const StageObservation& o,
                              const OwnSettings& own) {
    json::object obj;
    obj["config"] = run.label;
    if (own.num_stages)
        obj["num_stages"] = *own.num_stages;
    if (own.micro_batches)
        obj["micro_batches"] = *own.micro_batches;
    if (own.schedule) {
        obj["schedule"] = schedule_name(run.schedule);
        if (run.num_chunks != 1)
            obj["num_chunks"] = run.num_chunks;
    }
    obj["stage"] = o.stage;
    const bool grouped = !run.groups.empty();
    const auto chunk_layers = [&](std::size_t c, const KindCounts& plain) {
        return grouped ? group_layers_json(run.groups, o.group_layers.at(c)) : layers_json(plain);
    };
    if (o.chunks.empty()) {
        obj["layers"] = chunk_layers(0, o.layers);
        if (!own.in_flight.empty())
            obj["in_flight"] = own.in_flight.front();
    } else {
        json::array chunks;
        for (std::size_t c = 0; c < o.chunks.size(); ++c) {
            json::object chunk{{"layers", chunk_layers(c, o.chunks[c])}};
            if (!own.in_flight.empty())
                chunk["in_flight"] = own.in_flight.at(c);
            chunks.push_back(std::move(chunk));
        }
        obj["chunks"] = std::move(chunks);
    }
    obj["peak_memory_mb"] = o.peak_memory_mb;
    if (o.reserved_mb)
        obj["reserved_mb"] = *o.reserved_mb;
    if (!o.comment.empty())
        obj["comment"] = o.comment;
    return obj;
}

json::object layer_times_json(const HeadBodyTailTimes& times) {
    return {{"head", times.head}, {"body", times.body}, {"tail", times.tail}};
}

// The run's body_layers and layer_times into `doc`, as the document's own.
void put_model_facts(json::object& doc, const ImportedDryRun& run) {
    if (run.body_layers)
        doc["body_layers"] = *run.body_layers;
    if (run.layer_times)
        doc["layer_times"] = layer_times_json(*run.layer_times);
}

std::string times_text(const HeadBodyTailTimes& t) {
    return fmt::format("head {}, body {}, tail {}", t.head, t.body, t.tail);
}

// The run's body_layers and layer_times into the existing document `top` (read as `set`): added
// where it has none, refused where it says otherwise.
void merge_model_facts(json::object& top, const DryRunSet& set, std::string_view source,
                       const ImportedDryRun& run, Messages& messages) {
    if (run.body_layers) {
        if (!set.body_layers) {
            top["body_layers"] = *run.body_layers;
            add_note(messages, fmt::format("{} gave no body_layers: it now says the model has {} "
                                           "(the appended '{}' dry run's)",
                                           source, *run.body_layers, run.label));
        } else if (*set.body_layers != *run.body_layers) {
            throw InputError(fmt::format(
                "{}: body_layers: the document's model has {} body layers, the appended '{}' "
                "dry run's {}: are they dry runs of one model?",
                source, *set.body_layers, run.label, *run.body_layers));
        }
    }
    if (run.layer_times) {
        if (!set.layer_times) {
            top["layer_times"] = layer_times_json(*run.layer_times);
            add_note(messages, fmt::format("{} gave no layer_times: it now has the appended '{}' "
                                           "dry run's ({})",
                                           source, run.label, times_text(*run.layer_times)));
        } else if (*set.layer_times != *run.layer_times) {
            throw InputError(fmt::format(
                "{}: layer_times: the document's ({}) differ from the appended '{}' dry run's "
                "({}); give one model's times",
                source, times_text(*set.layer_times), run.label, times_text(*run.layer_times)));
        }
    }
}

// A run that ppb.dryrun/1 cannot describe.
bool needs_revision_2(const ImportedDryRun& run) {
    return run.num_chunks != 1 || run.schedule != Schedule::one_f_one_b;
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

// A run with groups: every observation counts its layers per group, and they add up to the
// chunk's. A defect of the importer when not (std::logic_error).
void check_groups(const ImportedDryRun& run) {
    for (const StageObservation& o : run.observations) {
        const std::size_t chunks = o.chunks.empty() ? 1 : o.chunks.size();
        if (o.group_layers.size() != chunks) {
            throw std::logic_error(fmt::format("stage {}: {} chunks counted per group, {} chunks",
                                               o.stage, o.group_layers.size(), chunks));
        }
        for (std::size_t c = 0; c < chunks; ++c) {
            KindCounts sum{};
            if (o.group_layers[c].size() != run.groups.size())
                throw std::logic_error(fmt::format("stage {}: wrong number of groups", o.stage));
            for (const KindCounts& group : o.group_layers[c]) {
                for (std::size_t k = 0; k < sum.size(); ++k)
                    sum[k] += group[k];
            }
            if (sum != (o.chunks.empty() ? o.layers : o.chunks[c])) {
                throw std::logic_error(fmt::format(
                    "stage {}: the groups' layers do not add up to the chunk's", o.stage));
            }
        }
    }
}

}  // namespace

std::vector<StageObservation> stage_observations(const PipelineLayout& layout,
                                                 std::span<const MemoryReading> readings,
                                                 Messages& messages, std::string_view source) {
    std::map<std::uint32_t, std::vector<const MemoryReading*>> by_stage;
    for (const MemoryReading& r : readings) {
        if (r.rank >= layout.world_size()) {
            throw InputError(fmt::format(
                "{}: rank {} is not a rank of this job: {} stage{} x {} rank{} per stage ({}) = "
                "{} ranks, 0..{}",
                r.where(), r.rank, layout.num_stages, layout.num_stages == 1 ? "" : "s",
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
        if (!layout.chunks.empty())
            o.chunks = layout.chunks.at(stage);
        if (!layout.group_layers.empty())
            o.group_layers = layout.group_layers.at(stage);
        o.peak_memory_mb = r.mb;
        if (std::all_of(list.begin(), list.end(),
                        [](const MemoryReading* x) { return x->reserved_mb.has_value(); })) {
            const auto most_reserved = std::max_element(
                list.begin(), list.end(), [](const MemoryReading* a, const MemoryReading* b) {
                    return *a->reserved_mb < *b->reserved_mb;
                });
            o.reserved_mb = (*most_reserved)->reserved_mb;
        }
        if (list.size() == 1) {
            o.comment = fmt::format("rank {}, {}", r.rank, r.where());
        } else {
            std::vector<std::uint32_t> ranks;
            for (const auto* reading : list)
                ranks.push_back(reading->rank);
            o.comment = fmt::format("largest of ranks {}: rank {}, {}", describe_numbers(ranks),
                                    r.rank, r.where());
            replicated.push_back(fmt::format("stage {}: ranks {}", stage, describe_numbers(ranks)));
            const double spread = (r.mb - (*smallest)->mb) / r.mb;
            if (spread > replica_tolerance) {
                add_warning(messages,
                            fmt::format("stage {}: its ranks' readings differ by {:.1f} % (rank "
                                        "{}: {:.1f} MB at {}, rank {}: {:.1f} MB at {}); ranks of "
                                        "one stage should measure alike: are the {}s of one "
                                        "dry run?",
                                        stage, 100.0 * spread, (*smallest)->rank, (*smallest)->mb,
                                        (*smallest)->where(), r.rank, r.mb, r.where(), source));
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
                 fmt::format("no {} for stage{} {} of the {}-stage pipeline: imported stage{} {}",
                             source, missing.size() == 1 ? "" : "s", describe_numbers(missing),
                             layout.num_stages, present.size() == 1 ? "" : "s",
                             describe_numbers(present)));
    }
    return out;
}

std::string new_dryrun_text(const ImportedDryRun& run, const DryRunReadOptions& options) {
    check_label(run.label);
    // A document of one group (/1 or /2); with groups, the /3 document is this one with its
    // layers counted per group, so this one is what parse_dryrun checks.
    ImportedDryRun plain = run;
    plain.groups.clear();
    json::object doc;
    doc["format"] = needs_revision_2(run) ? dryrun_format_v2 : dryrun_format_v1;
    if (!run.comment.empty())
        doc["comment"] = run.comment;
    doc["num_stages"] = run.num_stages;
    if (run.micro_batches)
        doc["micro_batches"] = *run.micro_batches;
    doc["schedule"] = schedule_name(run.schedule);
    if (run.num_chunks != 1)
        doc["num_chunks"] = run.num_chunks;
    put_model_facts(doc, run);
    json::array observations;
    for (const StageObservation& o : run.observations)
        observations.push_back(observation_json(plain, o, {}));
    doc["observations"] = std::move(observations);
    std::string text = checked_text(doc, "the imported dry run", options);
    if (run.groups.empty())
        return text;

    check_groups(run);
    doc["format"] = grouped_dryrun_format;
    json::array groups;
    for (const std::string& name : run.groups)
        groups.emplace_back(name);
    // "groups" right after "schedule" / "num_chunks", before the observations.
    json::object grouped;
    for (const auto& member : doc) {
        if (member.key() == "observations")
            grouped["groups"] = groups;
        grouped[member.key()] = member.value();
    }
    json::array grouped_observations;
    for (const StageObservation& o : run.observations)
        grouped_observations.push_back(observation_json(run, o, {}));
    grouped["observations"] = std::move(grouped_observations);
    // Read back by the /3 reader as any file would be.
    return checked_text(grouped, "the imported dry run", options);
}

std::string appended_dryrun_text(std::string_view existing, std::string_view source,
                                 const ImportedDryRun& run, const DryRunReadOptions& options,
                                 Messages& messages) {
    check_label(run.label);
    if (!run.groups.empty()) {
        throw InputError(fmt::format(
            "{}: cannot append: the imported dry run counts its layers per group of body layers "
            "({}), which only a {} file can say, and appending to one is not supported yet; "
            "write a new file (--output) instead",
            source, fmt::join(run.groups, ", "), grouped_dryrun_format));
    }
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
    if (set.revision == 1 && needs_revision_2(run)) {
        top["format"] = dryrun_format_v2;
        add_note(messages,
                 fmt::format("{} was {}: it is now {}, which describes the {} chunks per stage "
                             "of the appended '{}' dry run (its other observations mean what "
                             "they meant)",
                             source, dryrun_format_v1, dryrun_format_v2, run.num_chunks,
                             schedule_name(run.schedule)));
    }

    merge_model_facts(top, set, source, run, messages);

    OwnSettings own;
    own.schedule = set.schedule != run.schedule || set.num_chunks != run.num_chunks;
    std::optional<std::uint32_t>& num_stages = own.num_stages;
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
    std::optional<std::uint32_t>& micro_batches = own.micro_batches;
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
                                       "in_flight counts, uncapped (1F1B: P - stage)",
                                       source, set.micro_batches));
    }
    json::value& list = top["observations"];
    for (const StageObservation& o : run.observations) {
        own.in_flight.clear();
        if (explicit_in_flight) {
            own.in_flight =
                in_flight_counts(run.schedule, run.num_stages, o.stage, 0, run.num_chunks);
        }
        list.as_array().push_back(observation_json(run, o, own));
    }
    return checked_text(document, source, options);
}

void write_file_atomically(const fs::path& path, std::string_view text) {
    write_output_file(path, text);
}

}  // namespace ppb::importers
