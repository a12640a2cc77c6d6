#include "model.hpp"

#include <ppb/kinds.hpp>
#include <ppb/sapp/layer_file.hpp>

#include <string>
#include <utility>

namespace ppb::table {

namespace {

using ppb::plugin::InvalidInput;
using ppb::plugin::NotEstimable;
using ppb::plugin::Unsupported;

std::string context(std::size_t index) {
    return index == no_index ? std::string("placement") : "placement " + std::to_string(index);
}

}  // namespace

TableModel::TableModel(std::string_view options_json)
    : TableModel(parse_layer_table(options_json)) {}

TableModel::TableModel(LayerTable table) : table_(std::move(table)) {
    if (table_.groups.empty()) {
        // A table put together by hand with the one-group fields only.
        table_.groups.push_back(BodyGroupTable{.name = table_.body_name,
                                               .num_layers = table_.num_layers,
                                               .first_entry = 0,
                                               .param_per_layer_mb = table_.param_per_layer_mb,
                                               .activation_mb = table_.activation_mb});
    }
    for (const BodyGroupTable& group : table_.groups) {
        GroupCoefficients& coefficients = group_coefficients_.emplace_back();
        coefficients.theta[0] = group.param_per_layer_mb;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (group.activation_mb[k]) {
                coefficients.theta[1 + k] = *group.activation_mb[k];
                coefficients.available_kinds |= PPB_KIND_BIT(k);
            }
        }
    }
    theta_[0] = table_.const_mb;
    theta_[1] = table_.head_mb;
    theta_[2] = table_.tail_mb;
    theta_[3] = table_.param_per_layer_mb;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (table_.activation_mb[k]) {
            theta_[4 + k] = *table_.activation_mb[k];
            available_kinds_ |= PPB_KIND_BIT(k);
        }
    }
}

// M = x . theta with x = (1, [s = 0], [s = p-1], n, sum_c n_c,none f_c, ..., sum_c n_c,full f_c),
// summed in that order: the same arithmetic as dryrun-lsq's prediction, so that a layer file
// exported from a dryrun-lsq fit predicts bit for bit what the fit predicts.
// The placement is well formed: the C boundary checked it (ppb/plugin/placement_checks.hpp).
double TableModel::evaluate(const ppb_placement& placement, std::size_t index) const {
    if (table_.grouped()) {
        throw InvalidInput((index == no_index ? std::string() : context(index) + ": ") +
                           "the layer file has " + std::to_string(table_.groups.size()) +
                           " groups of BODY layers: a placement must count its layers per group "
                           "(predict_grouped)");
    }
    std::array<double, coefficient_count> x{};
    x[0] = 1.0;
    x[1] = placement.stage == 0 ? 1.0 : 0.0;
    x[2] = placement.stage + 1 == placement.num_stages ? 1.0 : 0.0;
    std::uint64_t layers = 0;
    std::uint32_t kinds_used = 0;
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
        const ppb_chunk& chunk = placement.chunks[c];
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            layers += chunk.layers[k];
            if (chunk.layers[k] != 0)
                kinds_used |= PPB_KIND_BIT(k);
            x[4 + k] += static_cast<double>(chunk.layers[k]) * static_cast<double>(chunk.in_flight);
        }
    }
    x[3] = static_cast<double>(layers);
    if (const std::uint32_t absent = kinds_used & ~available_kinds_; absent != 0) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if ((absent & PPB_KIND_BIT(k)) != 0)
                throw_absent_kind(placement, index, static_cast<ppb_kind>(k));
        }
    }
    double memory = 0.0;
    for (std::size_t j = 0; j < coefficient_count; ++j)
        memory += x[j] * theta_[j];
    return memory;
}

double TableModel::predict(const ppb_placement& placement) const {
    return evaluate(placement, no_index);
}

void TableModel::predict_batch(std::span<const ppb_placement> placements,
                               std::span<double> out_mb) const {
    for (std::size_t i = 0; i < placements.size(); ++i)
        out_mb[i] = evaluate(placements[i], i);
}

void TableModel::throw_absent_kind(const ppb_placement& placement, std::size_t index,
                                   ppb_kind kind) const {
    std::uint64_t count = 0;
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c)
        count += placement.chunks[c].layers[kind];
    const std::string name(kind_name(kind));
    throw NotEstimable((index == no_index ? std::string() : context(index) + ": ") + "stage " +
                       std::to_string(placement.stage) + " of " +
                       std::to_string(placement.num_stages) + " holds " + std::to_string(count) +
                       " '" + name + "' layer" + (count == 1 ? "" : "s") +
                       ", but the layer file gives no " + std::string(activation_keys[kind]) +
                       " for the BODY entry '" + table_.body_name +
                       "': the table model cannot predict recompute kind '" + name + "' (add " +
                       std::string(activation_keys[kind]) + " to the BODY entry, or place no '" +
                       name + "' layers)");
}

std::optional<ppb_linear_parameters> TableModel::parameters() const {
    if (table_.grouped()) {
        throw Unsupported("the layer file has " + std::to_string(table_.groups.size()) +
                          " groups of BODY layers: each has its coefficients (group_parameters)");
    }
    ppb_linear_parameters out{};
    out.struct_size = sizeof(ppb_linear_parameters);
    out.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
    out.const_mb = theta_[0];
    out.head_mb = theta_[1];
    out.tail_mb = theta_[2];
    out.per_layer_mb = theta_[3];
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        out.activation_mb[k] = theta_[4 + k];
        if ((available_kinds_ & PPB_KIND_BIT(k)) != 0)
            out.identified |= PPB_PARAM_ACTIVATION(k);
    }
    return out;
}

std::vector<std::string> TableModel::groups() const {
    std::vector<std::string> names;
    names.reserve(table_.groups.size());
    for (const BodyGroupTable& group : table_.groups)
        names.push_back(group.name);
    return names;
}

double TableModel::predict_grouped(const ppb_grouped_placement& placement) const {
    if (!table_.grouped())
        return evaluate(placement.placement, no_index);
    return evaluate_grouped(placement, no_index);
}

void TableModel::predict_grouped_batch(std::span<const ppb_grouped_placement> placements,
                                       std::span<double> out_mb) const {
    for (std::size_t i = 0; i < placements.size(); ++i) {
        out_mb[i] = table_.grouped() ? evaluate_grouped(placements[i], i)
                                     : evaluate(placements[i].placement, i);
    }
}

// SAPP's memory of a stage with each group's own coefficients:
//   M = C + H [s = 0] + T [s = p-1] + sum_g (P_g n_g + sum_k A_g,k sum_c n_c,g,k f_c),
// summed in that order, group by group: the order ppb/abi.h writes the formula of
// group_parameters() in, so that a host evaluating it inline from them gets this value bit for
// bit. Of one group it is evaluate()'s sum term for term.
// The placement is well formed and has one count per group (the C boundary checked it).
double TableModel::evaluate_grouped(const ppb_grouped_placement& grouped, std::size_t index) const {
    const ppb_placement& placement = grouped.placement;
    const std::size_t num_groups = group_coefficients_.size();
    double memory = 0.0;
    memory += 1.0 * theta_[0];
    memory += (placement.stage == 0 ? 1.0 : 0.0) * theta_[1];
    memory += (placement.stage + 1 == placement.num_stages ? 1.0 : 0.0) * theta_[2];
    for (std::size_t g = 0; g < num_groups; ++g) {
        const GroupCoefficients& coefficients = group_coefficients_[g];
        std::array<double, group_coefficient_count> x{};
        std::array<std::uint64_t, PPB_KIND_COUNT> kind_layers{};
        std::uint64_t layers = 0;
        for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
            const std::uint32_t* counts =
                grouped.group_layers + (c * num_groups + g) * PPB_KIND_COUNT;
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                layers += counts[k];
                kind_layers[k] += counts[k];
                x[1 + k] += static_cast<double>(counts[k]) *
                            static_cast<double>(placement.chunks[c].in_flight);
            }
        }
        x[0] = static_cast<double>(layers);
        if (layers > table_.groups[g].num_layers)
            throw_too_many_layers(placement, index, g, layers);
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (kind_layers[k] != 0 && (coefficients.available_kinds & PPB_KIND_BIT(k)) == 0)
                throw_absent_group_kind(placement, index, g, static_cast<ppb_kind>(k),
                                        kind_layers[k]);
        }
        for (std::size_t j = 0; j < group_coefficient_count; ++j)
            memory += x[j] * coefficients.theta[j];
    }
    return memory;
}

void TableModel::throw_too_many_layers(const ppb_placement& placement, std::size_t index,
                                       std::size_t group, std::uint64_t layers) const {
    const BodyGroupTable& g = table_.groups[group];
    throw InvalidInput((index == no_index ? std::string() : context(index) + ": ") + "stage " +
                       std::to_string(placement.stage) + " of " +
                       std::to_string(placement.num_stages) + " holds " + std::to_string(layers) +
                       " layers of group '" + g.name + "', more than the " +
                       std::to_string(g.num_layers) +
                       " the layer file gives it (the nb_layer of its BODY entries)");
}

void TableModel::throw_absent_group_kind(const ppb_placement& placement, std::size_t index,
                                         std::size_t group, ppb_kind kind,
                                         std::uint64_t layers) const {
    const BodyGroupTable& g = table_.groups[group];
    const std::string name(kind_name(kind));
    const std::string field(activation_keys[kind]);
    throw InvalidInput((index == no_index ? std::string() : context(index) + ": ") + "stage " +
                       std::to_string(placement.stage) + " of " +
                       std::to_string(placement.num_stages) + " holds " + std::to_string(layers) +
                       " '" + name + "' layer" + (layers == 1 ? "" : "s") + " of group '" + g.name +
                       "', but the layer file gives no " + field + " for it (" +
                       sapp::entry_path(g.first_entry) + ", BODY '" + g.name +
                       "'): the table model cannot predict recompute kind '" + name +
                       "' in that group (add " + field + " to its BODY entries, or place no '" +
                       name + "' layers of group '" + g.name + "')");
}

std::optional<ppb_linear_parameters> TableModel::group_parameters(std::uint32_t group) const {
    if (!table_.grouped())
        return parameters();
    if (group >= group_coefficients_.size()) {
        throw InvalidInput("group " + std::to_string(group) +
                           " is out of range: the layer file has " +
                           std::to_string(group_coefficients_.size()) + " groups of BODY layers");
    }
    const GroupCoefficients& coefficients = group_coefficients_[group];
    ppb_linear_parameters out{};
    out.struct_size = sizeof(ppb_linear_parameters);
    out.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
    out.const_mb = theta_[0];
    out.head_mb = theta_[1];
    out.tail_mb = theta_[2];
    out.per_layer_mb = coefficients.theta[0];
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        out.activation_mb[k] = coefficients.theta[1 + k];
        if ((coefficients.available_kinds & PPB_KIND_BIT(k)) != 0)
            out.identified |= PPB_PARAM_ACTIVATION(k);
    }
    return out;
}

std::string TableModel::report() const {
    return report_json(table_);
}

}  // namespace ppb::table
