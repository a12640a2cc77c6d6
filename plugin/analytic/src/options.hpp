// Options of the analytic model: the shape of the transformer and how it is trained, as given to
// create() in JSON (see README.md for each key and its default).
#ifndef PPB_ANALYTIC_OPTIONS_HPP
#define PPB_ANALYTIC_OPTIONS_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::analytic {

struct ShapeOptions {
    // Required.
    std::uint32_t hidden_size = 0;          // h
    std::uint32_t num_attention_heads = 0;  // a (query heads)
    std::uint32_t ffn_hidden_size = 0;      // F
    std::uint32_t seq_length = 0;           // s
    std::uint32_t micro_batch_size = 0;     // b
    std::uint32_t vocab_size = 0;           // V, as the framework allocates it (padded)
    std::uint32_t num_layers = 0;           // L
    std::uint32_t tensor_parallel = 0;      // t

    // Optional.
    std::uint32_t num_kv_heads = 0;  // key/value heads (GQA); 0 in the text means "= a"
    std::uint32_t data_parallel = 1;
    bool sequence_parallel = false;
    bool distributed_optimizer = false;
    bool gated_mlp = true;         // SwiGLU-style MLP: three matrices h x F
    bool flash_attention = false;  // a fused attention kernel: no a*s^2 tensors stored
    bool untie_embeddings = true;  // the LM head has its own weights
    bool dropout = true;           // dropout layers present (their 1-byte masks are stored)
    // With sequence parallelism: a layer that does not recompute communication keeps the
    // all-gathered full-sequence inputs of its column-parallel linears for backward.
    bool keep_gathered_inputs = false;
    double param_bytes = 2.0;
    double grad_bytes = 4.0;
    double optimizer_bytes = 12.0;
    double constant_mb = 0.0;

    // Key/value heads with the default applied.
    [[nodiscard]] std::uint32_t kv_heads() const noexcept {
        return num_kv_heads == 0 ? num_attention_heads : num_kv_heads;
    }
};

// Parses the options object. Throws ppb::plugin::InvalidInput naming the offending key for
// malformed JSON, unknown keys, a missing required key, wrong types, values out of range, shapes
// the formulas cannot split (divisibility), and options that belong to another model's input.
[[nodiscard]] ShapeOptions parse_options(std::string_view options_json);

// Remarks about options that are valid but have no effect ("sequence_parallel has no effect
// with tensor_parallel = 1"), for the report's warnings.
[[nodiscard]] std::vector<std::string> option_warnings(const ShapeOptions& options);

}  // namespace ppb::analytic

#endif  // PPB_ANALYTIC_OPTIONS_HPP
