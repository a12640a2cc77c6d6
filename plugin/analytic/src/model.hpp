// AnalyticModel: the analytic memory model behind the plugin boundary (ppb/plugin.hpp).
#ifndef PPB_ANALYTIC_MODEL_HPP
#define PPB_ANALYTIC_MODEL_HPP

#include "options.hpp"
#include "terms.hpp"

#include <ppb/plugin.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::analytic {

// What PPB_EXPORT_MEMORY_MODEL publishes about the model.
inline constexpr char model_description[] =
    "Peak memory per stage predicted from the transformer's shape (Korthikanti et al. 2022 "
    "activation formulas, parameter and optimizer bytes), configured without dry runs";
inline constexpr std::uint32_t model_kinds = PPB_ALL_KINDS;
inline constexpr std::uint32_t model_flags = 0;  // configured from options, never fitted

// One group's terms in MB, as predict_grouped() adds them.
struct GroupCoefficients {
    std::string name;
    bool moe = false;
    std::uint32_t layers_in_model = 0;  // the most a placement may hold
    double per_layer_mb = 0.0;          // parameters (+ grads, optimizer) per layer
    std::array<double, PPB_KIND_COUNT> activation_mb{};  // per layer per in-flight micro-batch
    // per_layer_mb as its terms (predict_parts): the weights, their quantized copies, their
    // gradients and the optimizer's state (an MoE layer's experts with their own optimizer
    // share).
    double weights_per_layer_mb = 0.0;
    double quantized_per_layer_mb = 0.0;  // FP8 / FP4 copies of the linears' weights
    double gradients_per_layer_mb = 0.0;
    double optimizer_per_layer_mb = 0.0;
    // Of the model's first cpu_offloading_num_layers body layers, those of this group: their
    // activations are on the host at the peak.
    std::uint32_t offloaded_layers = 0;
};

// The model's terms in MB, as predict() adds them.
struct Coefficients {
    double const_mb = 0.0;
    double head_mb = 0.0;               // stage 0: embedding parameters (+ grads, optimizer)
    double head_activation_mb = 0.0;    // stage 0: per in-flight micro-batch of its first chunk
    double tail_mb = 0.0;               // last stage of p > 1: final norm + LM head parameters
    double tail_single_stage_mb = 0.0;  // the same for p = 1 (a tied LM head is the embedding)
    double tail_activation_mb = 0.0;    // last stage: per in-flight micro-batch of its last chunk
    double tail_logits_mb = 0.0;        // the logits' part of tail_activation_mb
    double tail_deferred_mb = 0.0;      // last stage: the deferred weight gradients' tensors
    // Held once at the peak (the larger of the two on the last stage): one layer's backward
    // gradients on every stage, the logits' 16-bit copy on the last stage.
    double layer_transient_mb = 0.0;
    double tail_transient_mb = 0.0;
    // The layer's on the last stage when it has one chunk: less the logits of the micro-batch
    // the layer runs for, which that micro-batch's loss freed in backward before its layers' (and
    // which do not exist yet while they run forward). README.md, "Peak".
    double tail_layer_transient_mb = 0.0;
    // A dense layer's terms (those of every body layer without the `moe` option).
    double per_layer_mb = 0.0;  // parameters (+ grads, optimizer) per body layer
    std::array<double, PPB_KIND_COUNT> activation_mb{};  // per layer per in-flight micro-batch
    // The groups of body layers in model order (layer_groups()): one, "body", without `moe`.
    std::vector<GroupCoefficients> groups;
    // The multi-token prediction layers, on their stage (mtp_stage_offset stages before the
    // last) and its last chunk: their parameters (+ grads, optimizer), the embedding's copy
    // (left out when that chunk is stage 0's only one), and their activations per in-flight
    // micro-batch of that chunk, of kind mtp_recompute. All 0 without MTP layers.
    double mtp_mb = 0.0;
    double mtp_embedding_mb = 0.0;
    double mtp_activation_mb = 0.0;
    // Transformer Engine's CUDA graphs of the attention (MemoryTerms::graph_kept_bytes and the
    // buffers beside it), per layer per in-flight micro-batch: all 0 without cuda_graph_scope.
    std::array<double, PPB_KIND_COUNT> graph_kept_mb{};
    double graph_input_mb = 0.0;
    double graph_output_mb = 0.0;
    // Sharded gradients or weights (FSDP): the unsharded buffers of one unit, the largest
    // layer's, the embedding's, the LM head's; a stage holds a layer's and the largest beside it
    // (the embedding's on stage 0, the LM head's on the last stage).
    double fsdp_layer_buffer_mb = 0.0;
    double fsdp_head_buffer_mb = 0.0;
    double fsdp_tail_buffer_mb = 0.0;
};

[[nodiscard]] Coefficients coefficients_of(const ShapeOptions& options, const MemoryTerms& terms);

class AnalyticModel final : public ppb::plugin::MemoryModelBase {
  public:
    // `options_json`: see parse_options(). Throws ppb::plugin::InvalidInput.
    explicit AnalyticModel(std::string_view options_json);
    // `options` as parse_options() returns them: validated, divisibility checked.
    explicit AnalyticModel(const ShapeOptions& options);

    // Stage s of p holding n_{c,k} layers of kind k in chunk c with f_c micro-batches in flight:
    //   M = const + P * sum n + sum_c sum_k A_k * n_{c,k} * f_c
    //       + [s = 0] * (H + H_act * f_0) + [s = p-1] * (T + T_act * f_last)
    // Never allocates unless it throws InvalidInput for a malformed placement.
    // A model of one group only (the generated table refuses plain placements otherwise).
    [[nodiscard]] double predict(const ppb_placement& placement) const override;
    // The same sum with per_layer and activation taken per group:
    //   M = const + sum_g P_g * n_g + sum_c sum_g sum_k A_gk * n_{c,g,k} * f_c + head + tail
    [[nodiscard]] double predict_grouped(const ppb_grouped_placement& placement) const override;
    // The prediction's standard error: relative_std_error times the prediction, the spread of the
    // model's errors on measured runs (README.md, "How sure a prediction is"); none when the
    // option is 0.
    [[nodiscard]] std::optional<double> predict_std_error(
        const ppb_placement& placement) const override {
        if (options_.relative_std_error == 0.0)
            return std::nullopt;
        return options_.relative_std_error * predict(placement);
    }
    [[nodiscard]] std::optional<double> predict_grouped_std_error(
        const ppb_grouped_placement& placement) const override {
        if (options_.relative_std_error == 0.0)
            return std::nullopt;
        return options_.relative_std_error * predict_grouped(placement);
    }
    // layer_groups(): "body" without `moe`; with it "dense" and/or "moe" (or the names the
    // options give), in model order of first appearance.
    [[nodiscard]] std::vector<std::string> groups() const override;
    // Not linear in the ABI's sense: the head and tail activations grow with the in-flight count
    // of stage 0 and of the last stage, which ppb_linear_parameters cannot express (its head and
    // tail are constants). Hosts use predict_batch instead.
    [[nodiscard]] std::optional<ppb_linear_parameters> parameters() const override {
        return std::nullopt;
    }
    // Not linear per group either, for the same reason; the report's diagnostics give each
    // group's per-layer and activation coefficients, which predict_grouped() adds as they are.
    [[nodiscard]] std::optional<ppb_linear_parameters> group_parameters(
        std::uint32_t /*group*/) const override {
        return std::nullopt;
    }
    [[nodiscard]] std::string report() const override;

    // predict_grouped()'s value as the model's terms, bottom up (README.md, "Terms of a
    // prediction"): the constant and runtime memory, the embedding and the LM head (parameters
    // with their gradients and optimizer state), the body layers' weights, gradients and
    // optimizer state, the activations of each recompute kind, the embedding's and the LM head's
    // activations, the logits the loss keeps, and what is held once. Terms of 0 MB are left out.
    [[nodiscard]] std::optional<std::vector<ppb_memory_part>> predict_parts(
        const ppb_grouped_placement& placement) const override;

    [[nodiscard]] const ShapeOptions& options() const noexcept { return options_; }
    [[nodiscard]] const MemoryTerms& terms() const noexcept { return terms_; }
    [[nodiscard]] const Coefficients& coefficients() const noexcept { return coefficients_; }

  private:
    // predict() and predict_grouped(): `group_layers` as ppb_grouped_placement has them, or null
    // for a plain placement of a one-group model.
    [[nodiscard]] double stage_memory(const ppb_placement& placement, std::uint32_t num_groups,
                                      const std::uint32_t* group_layers) const;
    // The activations CPU offloading of layers takes off the stage (cpu_offloading_num_layers):
    // those of the model's first N body layers; refuses what Megatron-LM refuses beside it.
    [[nodiscard]] double offloaded_activation_mb(const ppb_placement& placement,
                                                 std::uint32_t num_groups,
                                                 const std::uint32_t* group_layers) const;
    // Whether the placement's stage holds the multi-token prediction layers, and their memory
    // there (parameters, the embedding's copy, activations of its last chunk).
    [[nodiscard]] bool holds_mtp(const ppb_placement& placement) const noexcept;
    [[nodiscard]] double mtp_memory(const ppb_placement& placement) const noexcept;
    [[nodiscard]] double mtp_parameters_mb(const ppb_placement& placement) const noexcept;
    // One layer's backward gradients held once on the last stage, beside its logits.
    [[nodiscard]] double tail_layer_transient(const ppb_placement& placement) const noexcept;
    // The stage's memory with CUDA graphs of the attention (cuda_graph_scope), from its eager
    // peak `eager`, its parameters' memory `fixed`, and, over its layers and micro-batches in
    // flight, what the graphs keep (`kept`, part of `eager`) and how many graphed layer
    // micro-batches (`slots`): the larger of the capture's peak and the replay's (README.md,
    // "CUDA graphs").
    struct GraphPeaks {
        double capture = 0.0;
        double replay = 0.0;
    };
    [[nodiscard]] GraphPeaks graph_peaks(double eager, double fixed, double kept,
                                         double slots) const noexcept;
    void graph_parts(std::vector<ppb_memory_part>& parts,
                     const std::array<double, PPB_KIND_COUNT>& kept, double slots) const;
    // FSDP's unsharded buffers held on the placement's stage (0 without FSDP).
    [[nodiscard]] double fsdp_buffers(const ppb_placement& placement) const noexcept;

    ShapeOptions options_;
    MemoryTerms terms_;
    Coefficients coefficients_;
};

// The report() text for a configured model.
[[nodiscard]] std::string report_json(const ShapeOptions& options, const MemoryTerms& terms,
                                      const Coefficients& coefficients);

}  // namespace ppb::analytic

#endif  // PPB_ANALYTIC_MODEL_HPP
