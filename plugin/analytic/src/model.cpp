#include "model.hpp"

#include <string>

namespace ppb::analytic {

namespace {

using ppb::plugin::InvalidInput;

[[noreturn]] void reject(const std::string& problem) {
    throw InvalidInput("placement: " + problem);
}

}  // namespace

Coefficients coefficients_of(const ShapeOptions& options, const MemoryTerms& terms) {
    const double bpp = terms.bytes_per_parameter;
    Coefficients c;
    c.const_mb = options.constant_mb;
    c.head_mb = terms.embedding_parameters * bpp / bytes_per_mb;
    c.head_activation_mb = terms.head_activation_bytes / bytes_per_mb;
    c.tail_mb = terms.tail_parameters * bpp / bytes_per_mb;
    c.tail_single_stage_mb = terms.tail_parameters_single_stage * bpp / bytes_per_mb;
    c.tail_activation_mb = terms.tail_activation_bytes / bytes_per_mb;
    c.per_layer_mb = terms.layer_parameters * bpp / bytes_per_mb;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        c.activation_mb[k] = terms.activation_bytes[k] / bytes_per_mb;
    return c;
}

AnalyticModel::AnalyticModel(std::string_view options_json)
    : AnalyticModel(parse_options(options_json)) {}

AnalyticModel::AnalyticModel(const ShapeOptions& options)
    : options_(options),
      terms_(memory_terms(options_)),
      coefficients_(coefficients_of(options_, terms_)) {}

double AnalyticModel::predict(const ppb_placement& placement) const {
    // The placement is well formed: the C boundary checked it (ppb/plugin/placement_checks.hpp).
    const std::uint32_t p = placement.num_stages;
    const Coefficients& k = coefficients_;
    std::uint64_t layers = 0;
    double activation = 0.0;
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
        const ppb_chunk& chunk = placement.chunks[c];
        const double f = chunk.in_flight;
        for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
            layers += chunk.layers[kind];
            activation += k.activation_mb[kind] * static_cast<double>(chunk.layers[kind]) * f;
        }
    }
    if (layers > options_.num_layers) {
        reject("the stage holds " + std::to_string(layers) + " body layers, more than the " +
               std::to_string(options_.num_layers) + " of the model (option num_layers)");
    }

    double memory = k.const_mb + k.per_layer_mb * static_cast<double>(layers) + activation;
    if (placement.stage == 0) {
        // The embedding belongs to the first chunk (the model's first layers).
        memory += k.head_mb + k.head_activation_mb * placement.chunks[0].in_flight;
    }
    if (placement.stage == p - 1) {
        // The LM head and loss belong to the last chunk (the model's last layers).
        const double f = placement.chunks[placement.num_chunks - 1].in_flight;
        memory += (p == 1 ? k.tail_single_stage_mb : k.tail_mb) + k.tail_activation_mb * f;
    }
    return memory;
}

std::string AnalyticModel::report() const {
    return report_json(options_, terms_, coefficients_);
}

}  // namespace ppb::analytic
