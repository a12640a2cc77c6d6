#include "model.hpp"

#include <ppb/kinds.hpp>

#include <string>
#include <utility>

namespace ppb::table {

namespace {

using ppb::plugin::NotEstimable;

std::string context(std::size_t index) {
    return index == no_index ? std::string("placement") : "placement " + std::to_string(index);
}

}  // namespace

TableModel::TableModel(std::string_view options_json)
    : TableModel(parse_layer_table(options_json)) {}

TableModel::TableModel(LayerTable table) : table_(std::move(table)) {
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

std::string TableModel::report() const {
    return report_json(table_);
}

}  // namespace ppb::table
