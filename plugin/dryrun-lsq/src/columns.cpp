#include "columns.hpp"

#include <ppb/plugin.hpp>

#include <algorithm>
#include <cstdint>
#include <span>

namespace ppb::dryrun_lsq {

namespace {

// Parameters whose column is not zero in every observation, in parameter order. A zero column
// means the data say nothing at all about the parameter.
std::vector<Unknown> nonzero_columns(const std::vector<ParameterVector>& rows, std::size_t groups) {
    std::vector<Unknown> columns;
    for (std::size_t j = 0; j < unknown_count(groups); ++j) {
        const bool used = std::any_of(rows.begin(), rows.end(),
                                      [j](const ParameterVector& x) { return x[j] != 0.0; });
        if (used)
            columns.push_back(unknown_at(j));
    }
    return columns;
}

Analysis analyze(const std::vector<ParameterVector>& rows, std::vector<Unknown> columns,
                 std::span<const std::string> groups, double rank_tolerance) {
    arma::mat design(rows.size(), columns.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        for (std::size_t j = 0; j < columns.size(); ++j)
            design(i, j) = rows[i][index(columns[j])];
    }
    ColumnSpace space = analyze_columns(design, rank_tolerance);
    Identifiability identifiability = assess_identifiability(space, std::move(columns), groups);
    return {std::move(design), std::move(space), std::move(identifiability)};
}

Explanation explain_in(const Analysis& a, Unknown p, const DataSummary& data) {
    const Combination* combination = a.identifiability.combination_involving(p);
    return explain_confounded(p, a.identifiability.confounded(p), data,
                              combination != nullptr ? combination->text : std::string());
}

[[noreturn]] void throw_nothing_identified(
    const Analysis& full, const ObservationSummary& summary,
    const std::vector<std::pair<Unknown, Explanation>>& undetermined) {
    std::vector<std::string> combinations;
    for (const Combination& c : full.identifiability.combinations)
        combinations.push_back(c.text);
    std::vector<Explanation> explanations;
    for (const auto& u : undetermined)
        explanations.push_back(u.second);
    throw ppb::plugin::InvalidInput(
        "the observations identify no single parameter: " +
        explain_nothing_identified(summary, combinations, explanations));
}

}  // namespace

ColumnChoice choose_columns(const std::vector<ParameterVector>& rows, const DataSummary& data,
                            double rank_tolerance) {
    const std::span<const std::string> groups = data.groups;
    std::vector<Unknown> columns = nonzero_columns(rows, groups.size());
    ColumnChoice choice;
    // Activation kinds without a column are "not considered", not undetermined.
    std::vector<Unknown> observable = {Parameter::head_mb, Parameter::tail_mb};
    for (std::uint32_t g = 0; g < groups.size(); ++g)
        observable.emplace_back(Parameter::param_per_layer_mb, g);
    for (const Unknown p : observable) {
        if (std::find(columns.begin(), columns.end(), p) == columns.end()) {
            choice.undetermined.emplace_back(p, explain_unobserved(p, data));
        }
    }

    // What the data determine of the full model: explains const_mb, and a fit that determines
    // nothing, in terms of the model's own parameters.
    const Analysis full = analyze(rows, columns, groups, rank_tolerance);
    if (full.identifiability.is_identified(Parameter::const_mb)) {
        choice.fitted = full;
    } else {
        choice.undetermined.emplace_back(Parameter::const_mb,
                                         explain_in(full, Parameter::const_mb, data));
        choice.const_folded = true;
        columns.erase(std::find(columns.begin(), columns.end(), Parameter::const_mb));
        choice.fitted = analyze(rows, columns, groups, rank_tolerance);
    }

    const Identifiability& fitted = choice.fitted.identifiability;
    for (std::size_t j = 0; j < fitted.columns.size(); ++j) {
        if (!fitted.identified[j]) {
            const Unknown p = fitted.columns[j];
            choice.undetermined.emplace_back(p, explain_in(choice.fitted, p, data));
        }
    }
    std::stable_sort(choice.undetermined.begin(), choice.undetermined.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (!fitted.any_identified())
        throw_nothing_identified(full, data.overall, choice.undetermined);
    return choice;
}

}  // namespace ppb::dryrun_lsq
