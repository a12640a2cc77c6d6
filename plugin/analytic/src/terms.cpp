#include "terms.hpp"

namespace ppb::analytic {

MemoryTerms memory_terms(const ShapeOptions& o) noexcept {
    const double h = o.hidden_size;
    const double a = o.num_attention_heads;
    const double kv = o.kv_heads();
    const double F = o.ffn_hidden_size;
    const double s = o.seq_length;
    const double b = o.micro_batch_size;
    const double V = o.vocab_size;
    const double L = o.num_layers;
    const double t = o.tensor_parallel;
    const double d = o.data_parallel;
    const double dropout = o.dropout ? 1.0 : 0.0;
    const double sbh = s * b * h;
    const double h_kv = kv * h / a;  // width of K (and of V): num_kv_heads * head dimension

    MemoryTerms out;

    // --- Activations of one layer for one micro-batch (README.md, "Activations per layer").
    LayerActivationTerms& layer = out.layer;
    layer.replicated = (8.0 + 2.0 * dropout) * sbh;
    // Unfused attention expands K and V to all a heads before its batched matmuls and autograd
    // keeps the expanded copies; a fused (flash) kernel keeps the grouped K and V.
    const double kv_width = o.flash_attention ? h_kv : h;
    const double mlp_inner = (o.gated_mlp ? 6.0 : 4.0) * s * b * F;
    layer.tensor_parallel = 2.0 * sbh + 4.0 * s * b * kv_width + 2.0 * sbh + mlp_inner;
    layer.attention_core = o.flash_attention ? 0.0 : (2.0 + 3.0 * dropout) * a * s * s * b;
    layer.gathered_inputs = 4.0 * sbh;
    layer.layer_input = 2.0 * sbh;

    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    // Under sequence parallelism, what keeping the all-gathered inputs adds to the shards.
    const double kept_gathered =
        split_sequence && o.keep_gathered_inputs ? layer.gathered_inputs * (1.0 - 1.0 / t) : 0.0;
    double with_core = 0.0;     // attention core stored
    double without_core = 0.0;  // attention core recomputed (selective) or never stored (flash)
    if (split_sequence) {
        without_core = (layer.replicated + layer.tensor_parallel) / t;
        with_core = without_core + layer.attention_core / t;
    } else {
        without_core = layer.replicated + layer.tensor_parallel / t;
        with_core = without_core + layer.attention_core / t;
    }
    out.activation_bytes[PPB_KIND_NONE] = with_core + kept_gathered;
    out.activation_bytes[PPB_KIND_SELECT] = without_core + kept_gathered;
    out.activation_bytes[PPB_KIND_COMM] = with_core;
    out.activation_bytes[PPB_KIND_BOTH] = without_core;
    out.activation_bytes[PPB_KIND_FULL] =
        split_sequence ? layer.layer_input / t : layer.layer_input;

    // --- Head and tail activations per micro-batch (paper §4.3).
    const double sequence_share = split_sequence ? 1.0 / t : 1.0;
    out.head_activation_bytes = dropout * sbh * sequence_share;
    const double norm_input = 2.0 * sbh * sequence_share;
    const double lm_head_input =
        split_sequence && !o.keep_gathered_inputs ? 2.0 * sbh / t : 2.0 * sbh;
    const double logits = 4.0 * s * b * V / t;
    out.tail_activation_bytes = norm_input + lm_head_input + logits;

    // --- Parameters (README.md, "Parameters").
    const double attention = h * (h + 2.0 * h_kv) + h * h;  // QKV and output projection
    const double mlp = (o.gated_mlp ? 3.0 : 2.0) * h * F;
    const double norms = 2.0 * h;  // two norm weights, replicated on every rank
    out.layer_parameters = (attention + mlp) / t + norms;
    out.embedding_parameters = V * h / t;
    const double lm_head = V * h / t;
    out.tail_parameters = h + lm_head;
    out.tail_parameters_single_stage = o.untie_embeddings ? h + lm_head : h;
    out.model_parameters =
        L * (attention + mlp + norms) + V * h * (o.untie_embeddings ? 2.0 : 1.0) + h;

    const double optimizer_share =
        o.distributed_optimizer ? o.optimizer_bytes / d : o.optimizer_bytes;
    out.bytes_per_parameter = o.param_bytes + o.grad_bytes + optimizer_share;
    return out;
}

}  // namespace ppb::analytic
