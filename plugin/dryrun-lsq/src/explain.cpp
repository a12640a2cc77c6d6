#include "explain.hpp"

#include <ppb/kinds.hpp>
#include <ppb/plugin/report_support.hpp>

#include <algorithm>
#include <array>
#include <iterator>
#include <optional>
#include <vector>

namespace ppb::dryrun_lsq {

using ppb::plugin::format_number;
using ppb::plugin::join_words;

namespace {

bool contains(std::span<const Parameter> set, Parameter p) {
    return std::find(set.begin(), set.end(), p) != set.end();
}

std::vector<Parameter> activations_in(std::span<const Parameter> set) {
    std::vector<Parameter> out;
    std::copy_if(set.begin(), set.end(), std::back_inserter(out), is_activation);
    return out;
}

std::vector<Parameter> select(std::span<const Parameter> set, std::initializer_list<Parameter> of) {
    std::vector<Parameter> out;
    std::copy_if(set.begin(), set.end(), std::back_inserter(out),
                 [&](Parameter p) { return std::find(of.begin(), of.end(), p) != of.end(); });
    return out;
}

// "select layers", "select and comm layers".
std::string layers_of(std::span<const Parameter> activations) {
    std::vector<std::string> kinds;
    for (const Parameter p : activations)
        kinds.emplace_back(kind_name(kind_of(p)));
    return join_words(kinds) + " layers";
}

// The kinds among `others` that occur only on the head (tail) stage.
std::vector<Parameter> kinds_only_on(std::span<const Parameter> others,
                                     const std::array<bool, PPB_KIND_COUNT>& only_there) {
    std::vector<Parameter> out;
    for (const Parameter p : activations_in(others)) {
        if (only_there[static_cast<std::size_t>(kind_of(p))])
            out.push_back(p);
    }
    return out;
}

constexpr char in_flight_suggestion[] =
    "add observations with other in-flight counts: other stages of a dry run with p >= 2 (1F1B "
    "holds min(p - s, m) micro-batches on stage s), or a dry run with another micro-batch count";

std::optional<Explanation> explain_const(std::span<const Parameter> others,
                                         const ObservationSummary& s) {
    if (contains(others, Parameter::param_per_layer_mb) && s.common_body_layers &&
        *s.common_body_layers > 0) {
        const std::string n = std::to_string(*s.common_body_layers);
        return Explanation{
            "every observed body stage (neither first nor last) holds the same number of layers "
            "(n = " +
                n + "), so const_mb cannot be told apart from " + n + " * param_per_layer_mb",
            "add a dry run in which body stages hold different numbers of layers (a non-zero "
            "offset, e.g. one stage with a layer more than another), or observations at another "
            "pipeline degree whose body stages hold another number of layers"};
    }
    const auto head_tail = select(others, {Parameter::head_mb, Parameter::tail_mb});
    if (s.all_single_stage) {
        return Explanation{
            "every observation is of a single-stage pipeline (p = 1), whose only stage holds the "
            "head and the tail, so const_mb cannot be told apart from " +
                join_names(head_tail.empty() ? std::vector<Parameter>(others.begin(), others.end())
                                             : head_tail),
            "add the stages of a dry run with p >= 3 whose body stages hold different numbers of "
            "layers"};
    }
    if (!s.any_body_stage && !head_tail.empty()) {
        return Explanation{
            "no observation is of a body stage (neither first nor last): every observed stage "
            "also holds the head or the tail, so const_mb cannot be told apart from " +
                join_names(head_tail),
            "add the measurement of a middle stage of a dry run with p >= 3"};
    }
    return std::nullopt;
}

// head_mb or tail_mb.
std::optional<Explanation> explain_end_stage(Parameter p, std::span<const Parameter> others,
                                             const ObservationSummary& s) {
    const bool head = p == Parameter::head_mb;
    const std::string where = head ? "stage 0" : "the last stage";
    const auto kinds = kinds_only_on(others, head ? s.kind_only_on_head : s.kind_only_on_tail);
    if (!kinds.empty()) {
        const std::string layers = layers_of(kinds);
        return Explanation{layers + " occur only on " + where + ", so " + std::string(name(p)) +
                               " cannot be told apart from " + join_names(kinds),
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
                               (head ? "tail" : "head") + ", so " + std::string(name(p)) +
                               " cannot be told apart from " + join_names(partners),
                           "add the " + std::string(head ? "stage 0" : "last-stage") +
                               " measurement of a dry run with p >= 2"};
    }
    return std::nullopt;
}

std::optional<Explanation> explain_per_layer(std::span<const Parameter> others,
                                             const ObservationSummary& s) {
    const auto activations = activations_in(others);
    if (s.common_in_flight && !activations.empty()) {
        return Explanation{"every observed layer is held with the same in-flight count (f = " +
                               std::to_string(*s.common_in_flight) +
                               "), so param_per_layer_mb cannot be told apart from " +
                               join_names(activations),
                           in_flight_suggestion};
    }
    return std::nullopt;
}

std::optional<Explanation> explain_activation(Parameter p, std::span<const Parameter> others,
                                              const ObservationSummary& s) {
    const auto k = static_cast<std::size_t>(kind_of(p));
    const std::string layers = std::string(kind_name(kind_of(p))) + " layers";
    if (s.kind_only_on_head[k] && contains(others, Parameter::head_mb)) {
        return Explanation{
            layers + " occur only on stage 0, so " + std::string(name(p)) +
                " cannot be told apart from head_mb",
            "add a dry run with " + layers +
                " on a stage other than 0, or with a different number of them on stage 0"};
    }
    if (s.kind_only_on_tail[k] && contains(others, Parameter::tail_mb)) {
        return Explanation{
            layers + " occur only on the last stage, so " + std::string(name(p)) +
                " cannot be told apart from tail_mb",
            "add a dry run with " + layers +
                " on a stage other than the last, or with a different number of them on the last "
                "stage"};
    }
    auto per_layer_terms = activations_in(others);
    if (contains(others, Parameter::param_per_layer_mb)) {
        per_layer_terms.insert(per_layer_terms.begin(), Parameter::param_per_layer_mb);
    }
    if (s.common_in_flight && !per_layer_terms.empty()) {
        return Explanation{"every observed layer is held with the same in-flight count (f = " +
                               std::to_string(*s.common_in_flight) + "), so " +
                               std::string(name(p)) + " cannot be told apart from " +
                               join_names(per_layer_terms),
                           in_flight_suggestion};
    }
    return std::nullopt;
}

constexpr char generic_suggestion[] =
    "add dry runs that differ in the stages observed, in the layer counts per stage and recompute "
    "kind, or in the pipeline degree";

Explanation explain_generically(Parameter p, std::span<const Parameter> others,
                                const std::string& combination) {
    const std::string me(name(p));
    const std::string them = join_names(others);
    std::string reason = me + " is confounded with " + them + ": the data determine only ";
    reason += combination.empty() ? "combinations of them" : "combinations such as " + combination;
    return Explanation{std::move(reason),
                       "add dry runs in which " + me + " contributes independently of " + them +
                           ": runs that differ in the stages observed, in the layer counts per "
                           "stage and recompute kind, or in the pipeline degree",
                       /*specific=*/false};
}

}  // namespace

Explanation explain_unobserved(Parameter p) {
    switch (p) {
        case Parameter::head_mb:
            return {"no observation of stage 0",
                    "add the dry run's stage 0 measurement (the stage that holds the embedding)"};
        case Parameter::tail_mb:
            return {"no observation of the last stage",
                    "add the dry run's last-stage measurement (stage p - 1, which holds the final "
                    "norm, the LM head and the loss)"};
        case Parameter::param_per_layer_mb:
            return {"no observed stage holds a body layer",
                    "add measurements of stages that hold body layers"};
        default:
            return {std::string(name(p)) + " does not occur in any observation",
                    "add a dry run in which it occurs"};
    }
}

Explanation explain_confounded(Parameter p, std::span<const Parameter> others,
                               const ObservationSummary& summary, const std::string& combination) {
    std::optional<Explanation> specific;
    if (p == Parameter::const_mb) {
        specific = explain_const(others, summary);
    } else if (p == Parameter::head_mb || p == Parameter::tail_mb) {
        specific = explain_end_stage(p, others, summary);
    } else if (p == Parameter::param_per_layer_mb) {
        specific = explain_per_layer(others, summary);
    } else {
        specific = explain_activation(p, others, summary);
    }
    if (!specific)
        return explain_generically(p, others, combination);
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
