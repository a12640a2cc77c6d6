#include "explain.hpp"

#include <ppb/kinds.hpp>
#include <ppb/plugin/report_support.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

namespace ppb::dryrun_lsq {

using ppb::plugin::format_number;
using ppb::plugin::join_words;

namespace {

// Whether `set` holds parameter `p` (of any group).
bool contains(std::span<const Unknown> set, Parameter p) {
    return std::any_of(set.begin(), set.end(), [p](Unknown u) { return u.parameter == p; });
}

std::vector<Unknown> activations_in(std::span<const Unknown> set) {
    std::vector<Unknown> out;
    std::copy_if(set.begin(), set.end(), std::back_inserter(out),
                 [](Unknown u) { return is_activation(u.parameter); });
    return out;
}

std::vector<Unknown> select(std::span<const Unknown> set, std::initializer_list<Parameter> of) {
    std::vector<Unknown> out;
    std::copy_if(set.begin(), set.end(), std::back_inserter(out), [&](Unknown u) {
        return std::find(of.begin(), of.end(), u.parameter) != of.end();
    });
    return out;
}

std::string quoted_group(const DataSummary& data, std::uint32_t group) {
    return "'" + data.groups[group] + "'";
}

// "select layers", "select and comm layers"; with several groups, "select layers of group 'moe'".
std::string layers_of(std::span<const Unknown> activations, const DataSummary& data) {
    std::vector<std::string> kinds;
    for (const Unknown u : activations) {
        std::string kind(kind_name(kind_of(u.parameter)));
        if (data.grouped())
            kind += " layers of group " + quoted_group(data, u.group);
        kinds.push_back(std::move(kind));
    }
    return join_words(kinds) + (data.grouped() ? "" : " layers");
}

// The activations among `others` whose kind (of their group) occurs only on the head (tail)
// stage.
std::vector<Unknown> kinds_only_on(std::span<const Unknown> others, const DataSummary& data,
                                   bool head) {
    std::vector<Unknown> out;
    for (const Unknown u : activations_in(others)) {
        const ObservationSummary& s = data.of(u);
        const auto k = static_cast<std::size_t>(kind_of(u.parameter));
        if (head ? s.kind_only_on_head[k] : s.kind_only_on_tail[k])
            out.push_back(u);
    }
    return out;
}

constexpr char in_flight_suggestion[] =
    "add observations with other in-flight counts: other stages of a dry run with p >= 2 (1F1B "
    "holds min(p - s, m) micro-batches on stage s), or a dry run with another micro-batch count";

std::optional<Explanation> explain_const(std::span<const Unknown> others, const DataSummary& data) {
    const ObservationSummary& s = data.overall;
    const auto names = [&](std::span<const Unknown> set) { return join_names(set, data.groups); };
    if (!data.grouped() && contains(others, Parameter::param_per_layer_mb) &&
        s.common_body_layers && *s.common_body_layers > 0) {
        const std::string n = std::to_string(*s.common_body_layers);
        return Explanation{
            "every observed body stage (neither first nor last) holds the same number of layers "
            "(n = " +
                n + "), so const_mb cannot be told apart from " + n + " * param_per_layer_mb",
            "add a dry run in which body stages hold different numbers of layers (a non-zero "
            "offset, e.g. one stage with a layer more than another), or observations at another "
            "pipeline degree whose body stages hold another number of layers"};
    }
    if (data.grouped() && contains(others, Parameter::param_per_layer_mb) && s.any_body_stage) {
        // Each group's layers the same on every observed body stage: the constant is their sum.
        std::vector<std::string> counts;
        std::vector<std::string> terms;
        bool every_group_fixed = true;
        for (std::uint32_t g = 0; g < data.groups.size(); ++g) {
            const auto& n = data.per_group[g].common_body_layers;
            if (!n) {
                every_group_fixed = false;
                break;
            }
            counts.push_back(std::to_string(*n) + " of group " + quoted_group(data, g));
            if (*n > 0) {
                terms.push_back(std::to_string(*n) + " * " +
                                name(Unknown(Parameter::param_per_layer_mb, g), data.groups));
            }
        }
        if (every_group_fixed && !terms.empty()) {
            std::string sum;
            for (std::size_t i = 0; i < terms.size(); ++i)
                sum += (i == 0 ? "" : " + ") + terms[i];
            return Explanation{
                "every observed body stage (neither first nor last) holds the same layers of "
                "each group (" +
                    join_words(counts) + "), so const_mb cannot be told apart from " + sum,
                "add a dry run in which body stages hold different numbers of layers of some "
                "group, or observations at another pipeline degree whose body stages hold "
                "other layers"};
        }
    }
    const auto head_tail = select(others, {Parameter::head_mb, Parameter::tail_mb});
    if (s.all_single_stage) {
        return Explanation{
            "every observation is of a single-stage pipeline (p = 1), whose only stage holds the "
            "head and the tail, so const_mb cannot be told apart from " +
                names(head_tail.empty() ? std::vector<Unknown>(others.begin(), others.end())
                                        : head_tail),
            "add the stages of a dry run with p >= 3 whose body stages hold different numbers of "
            "layers"};
    }
    if (!s.any_body_stage && !head_tail.empty()) {
        return Explanation{
            "no observation is of a body stage (neither first nor last): every observed stage "
            "also holds the head or the tail, so const_mb cannot be told apart from " +
                names(head_tail),
            "add the measurement of a middle stage of a dry run with p >= 3"};
    }
    return std::nullopt;
}

// head_mb or tail_mb.
std::optional<Explanation> explain_end_stage(Unknown p, std::span<const Unknown> others,
                                             const DataSummary& data) {
    const ObservationSummary& s = data.overall;
    const bool head = p.parameter == Parameter::head_mb;
    const std::string me(name(p.parameter));
    const std::string where = head ? "stage 0" : "the last stage";
    const auto kinds = kinds_only_on(others, data, head);
    if (!kinds.empty()) {
        const std::string layers = layers_of(kinds, data);
        return Explanation{layers + " occur only on " + where + ", so " + me +
                               " cannot be told apart from " + join_names(kinds, data.groups),
                           "add a dry run in which " + layers + " also sit on a stage other than " +
                               (head ? "stage 0" : "the last") + ", or in which " + where +
                               " holds a different number of them"};
    }
    const bool only_single_stage = head ? s.head_only_in_single_stage : s.tail_only_in_single_stage;
    const auto partners =
        select(others, {Parameter::const_mb, head ? Parameter::tail_mb : Parameter::head_mb});
    if (only_single_stage && !partners.empty()) {
        return Explanation{where +
                               " was observed only in single-stage pipelines (p = 1), where it "
                               "also holds the " +
                               (head ? "tail" : "head") + ", so " + me +
                               " cannot be told apart from " + join_names(partners, data.groups),
                           "add the " + std::string(head ? "stage 0" : "last-stage") +
                               " measurement of a dry run with p >= 2"};
    }
    return std::nullopt;
}

std::optional<Explanation> explain_per_layer(Unknown p, std::span<const Unknown> others,
                                             const DataSummary& data) {
    const ObservationSummary& s = data.of(p);
    const auto activations = activations_in(others);
    if (s.common_in_flight && !activations.empty()) {
        return Explanation{
            "every observed layer" +
                (data.grouped() ? " of group " + quoted_group(data, p.group) : std::string()) +
                " is held with the same in-flight count (f = " +
                std::to_string(*s.common_in_flight) + "), so " + name(p, data.groups) +
                " cannot be told apart from " + join_names(activations, data.groups),
            in_flight_suggestion};
    }
    return std::nullopt;
}

std::optional<Explanation> explain_activation(Unknown p, std::span<const Unknown> others,
                                              const DataSummary& data) {
    const ObservationSummary& s = data.of(p);
    const auto k = static_cast<std::size_t>(kind_of(p.parameter));
    const std::string me = name(p, data.groups);
    const std::string layers = layers_of(std::span<const Unknown>(&p, 1), data);
    if (s.kind_only_on_head[k] && contains(others, Parameter::head_mb)) {
        return Explanation{
            layers + " occur only on stage 0, so " + me + " cannot be told apart from head_mb",
            "add a dry run with " + layers +
                " on a stage other than 0, or with a different number of them on stage 0"};
    }
    if (s.kind_only_on_tail[k] && contains(others, Parameter::tail_mb)) {
        return Explanation{
            layers + " occur only on the last stage, so " + me +
                " cannot be told apart from tail_mb",
            "add a dry run with " + layers +
                " on a stage other than the last, or with a different number of them on the last "
                "stage"};
    }
    auto per_layer_terms = activations_in(others);
    const auto per_layer = select(others, {Parameter::param_per_layer_mb});
    per_layer_terms.insert(per_layer_terms.begin(), per_layer.begin(), per_layer.end());
    if (s.common_in_flight && !per_layer_terms.empty()) {
        return Explanation{
            "every observed layer" +
                (data.grouped() ? " of group " + quoted_group(data, p.group) : std::string()) +
                " is held with the same in-flight count (f = " +
                std::to_string(*s.common_in_flight) + "), so " + me +
                " cannot be told apart from " + join_names(per_layer_terms, data.groups),
            in_flight_suggestion};
    }
    return std::nullopt;
}

// A group parameter confounded with the same parameter of another group (or, failing that,
// with any parameter of another group): the data never vary the groups' layers independently.
std::optional<Explanation> explain_across_groups(Unknown p, std::span<const Unknown> others,
                                                 const DataSummary& data) {
    if (!data.grouped() || is_shared(p.parameter))
        return std::nullopt;
    const Unknown* partner = nullptr;
    for (const Unknown& u : others) {
        if (is_shared(u.parameter) || u.group == p.group)
            continue;
        if (u.parameter == p.parameter) {
            partner = &u;
            break;
        }
        if (partner == nullptr)
            partner = &u;
    }
    if (partner == nullptr)
        return std::nullopt;
    const auto what = [](Parameter q) {
        return q == Parameter::param_per_layer_mb
                   ? std::string("the parameter memory")
                   : "the activation memory of " + std::string(kind_name(kind_of(q))) + " layers";
    };
    const std::string mine = data.groups[p.group];
    const std::string theirs = data.groups[partner->group];
    std::string reason = what(p.parameter) + " of group '" + mine + "' and " +
                         (partner->parameter == p.parameter
                              ? std::string("of group '") + theirs + "'"
                              : what(partner->parameter) + " of group '" + theirs + "'") +
                         " are not separated: the observed stages never vary the layers of the "
                         "two groups independently, so " +
                         name(p, data.groups) + " cannot be told apart from " +
                         join_names(others, data.groups);
    std::string suggestion = "a dry run with a stage holding only '" + mine +
                             "' layers (or a different mix of " + theirs + " and " + mine +
                             " layers) would separate them";
    if (is_activation(p.parameter)) {
        suggestion += "; the " + std::string(kind_name(kind_of(p.parameter))) +
                      " layers of each group must also be held with different in-flight counts";
    }
    return Explanation{std::move(reason), std::move(suggestion)};
}

constexpr char generic_suggestion[] =
    "add dry runs that differ in the stages observed, in the layer counts per stage and recompute "
    "kind, or in the pipeline degree";

Explanation explain_generically(Unknown p, std::span<const Unknown> others, const DataSummary& data,
                                const std::string& combination) {
    const std::string me = name(p, data.groups);
    const std::string them = join_names(others, data.groups);
    std::string reason = me + " is confounded with " + them + ": the data determine only ";
    reason += combination.empty() ? "combinations of them" : "combinations such as " + combination;
    return Explanation{std::move(reason),
                       "add dry runs in which " + me + " contributes independently of " + them +
                           ": runs that differ in the stages observed, in the layer counts per "
                           "stage and recompute kind, or in the pipeline degree",
                       /*specific=*/false};
}

}  // namespace

Explanation explain_unobserved(Unknown p, const DataSummary& data) {
    switch (p.parameter) {
        case Parameter::head_mb:
            return {"no observation of stage 0",
                    "add the dry run's stage 0 measurement (the stage that holds the embedding)"};
        case Parameter::tail_mb:
            return {"no observation of the last stage",
                    "add the dry run's last-stage measurement (stage p - 1, which holds the final "
                    "norm, the LM head and the loss)"};
        case Parameter::param_per_layer_mb:
            if (data.grouped()) {
                const std::string group = quoted_group(data, p.group);
                return {"no observed stage holds a layer of group " + group,
                        "add measurements of stages that hold layers of group " + group};
            }
            return {"no observed stage holds a body layer",
                    "add measurements of stages that hold body layers"};
        default:
            return {name(p, data.groups) + " does not occur in any observation",
                    "add a dry run in which it occurs"};
    }
}

Explanation explain_confounded(Unknown p, std::span<const Unknown> others, const DataSummary& data,
                               const std::string& combination) {
    // Groups whose layers never vary independently explain their parameters first: the other
    // explanations assume the group's layers alone.
    std::optional<Explanation> specific = explain_across_groups(p, others, data);
    if (!specific) {
        if (p.parameter == Parameter::const_mb) {
            specific = explain_const(others, data);
        } else if (p.parameter == Parameter::head_mb || p.parameter == Parameter::tail_mb) {
            specific = explain_end_stage(p, others, data);
        } else if (p.parameter == Parameter::param_per_layer_mb) {
            specific = explain_per_layer(p, others, data);
        } else {
            specific = explain_activation(p, others, data);
        }
    }
    if (!specific)
        return explain_generically(p, others, data, combination);
    if (!combination.empty())
        specific->reason += " (the data determine " + combination + ")";
    return std::move(*specific);
}

std::string explain_nothing_identified(const ObservationSummary& summary,
                                       std::span<const std::string> combinations,
                                       std::span<const Explanation> explanations) {
    std::string text;
    if (summary.all_single_stage) {
        text =
            "every observation is of a single-stage pipeline (p = 1), whose only stage holds both "
            "the head and the tail with every in-flight count 1, so only combinations of "
            "parameters "
            "are determined";
    } else {
        text = "every parameter is confounded with others";
    }
    if (!combinations.empty()) {
        std::vector<std::string> quoted(combinations.begin(), combinations.end());
        text += " (the data determine " + join_words(quoted) + ")";
    }
    std::vector<std::string> fixes;
    if (summary.all_single_stage) {
        fixes.emplace_back(
            "add the stages of a dry run with p >= 3 whose body stages hold different numbers of "
            "layers");
    } else {
        bool any_generic = false;
        for (const Explanation& e : explanations) {
            any_generic = any_generic || !e.specific;
            if (e.specific && std::find(fixes.begin(), fixes.end(), e.suggestion) == fixes.end()) {
                fixes.push_back(e.suggestion);
            }
        }
        if (any_generic)
            fixes.push_back(generic_suggestion);
    }
    if (!fixes.empty()) {
        text += "; to determine them, ";
        for (std::size_t i = 0; i < fixes.size(); ++i) {
            if (i > 0)
                text += "; or ";
            text += fixes[i];
        }
    }
    return text;
}

}  // namespace ppb::dryrun_lsq
