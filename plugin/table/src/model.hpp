// TableModel: the table memory model behind the plugin boundary (ppb/plugin.hpp). Configured
// from a SAPP layer file given as its options, not fitted.
#ifndef PPB_TABLE_MODEL_HPP
#define PPB_TABLE_MODEL_HPP

#include "layer_table.hpp"

#include <ppb/plugin.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::table {

// What PPB_EXPORT_MEMORY_MODEL publishes about the model. The mask is static, so it names every
// kind; which kinds one instance predicts depends on its layer file and is told by the
// PPB_PARAM_ACTIVATION bits of parameters() (and by NotEstimable from predict).
inline constexpr char model_description[] =
    "Peak memory per stage from the per-layer memory of a SAPP layer file (memory_parameter, "
    "memory_activation, ...) given as the options: configured, not fitted";
inline constexpr std::uint32_t model_kinds = PPB_ALL_KINDS;
inline constexpr std::uint32_t model_flags = 0;
inline constexpr char model_options_help[] =
    "the options are a SAPP layer file (--model-options FILE): {\"layers_description\": [...], "
    "\"stage_const_mem\": C}\n"
    "layers_description: HEAD, BODY and TAIL entries; BODY entries with "
    "memory_parameter (MB per layer) and memory_activation, memory_select_rec, "
    "memory_select_comm, memory_both_comm_select, memory_recompute (MB per layer and in-flight "
    "micro-batch of kinds none, select, comm, both, full; an absent kind is not predicted)\n"
    "several BODY names (dense and moe layers, encoder and decoder): each name is a group of "
    "layers with its own memory, and placements count their layers per group (plugin API 1.3)\n"
    "HEAD and TAIL entries: memory_parameter (once, whatever nb_layer) is added to stage 0 and the "
    "last stage\n"
    "stage_const_mem: memory of every stage, as SAPP adds it (default 0; the old name "
    "constant_memory_mb is read with a warning)";

class TableModel final : public ppb::plugin::MemoryModelBase {
  public:
    // `options_json`: a SAPP layer file, see parse_layer_table(). Throws
    // ppb::plugin::InvalidInput.
    explicit TableModel(std::string_view options_json);
    explicit TableModel(LayerTable table);

    // fit() keeps the base class's: Unsupported.
    // predict, predict_batch and parameters: a file of one group of body layers (a file of
    // several is refused them by the C boundary; called directly they throw InvalidInput and
    // Unsupported).
    [[nodiscard]] double predict(const ppb_placement& placement) const override;
    void predict_batch(std::span<const ppb_placement> placements,
                       std::span<double> out_mb) const override;
    [[nodiscard]] std::optional<ppb_linear_parameters> parameters() const override;
    [[nodiscard]] std::string report() const override;

    // Groups of body layers (API 1.3): the BODY names of the layer file, in model order. A
    // grouped placement of a file of one group is predicted as its plain placement is.
    [[nodiscard]] std::vector<std::string> groups() const override;
    [[nodiscard]] double predict_grouped(const ppb_grouped_placement& placement) const override;
    void predict_grouped_batch(std::span<const ppb_grouped_placement> placements,
                               std::span<double> out_mb) const override;
    [[nodiscard]] std::optional<ppb_linear_parameters> group_parameters(
        std::uint32_t group) const override;

    [[nodiscard]] const LayerTable& table() const noexcept { return table_; }

  private:
    // Number of coefficients: const, head, tail, per layer, one activation per kind.
    static constexpr std::size_t coefficient_count = 4 + PPB_KIND_COUNT;

    // predict() of one placement; `index` is its index in a batch, for messages (no_index for
    // predict()).
    [[nodiscard]] double evaluate(const ppb_placement& placement, std::size_t index) const;
    [[noreturn]] void throw_absent_kind(const ppb_placement& placement, std::size_t index,
                                        ppb_kind kind) const;
    // predict_grouped() of a file of several groups.
    [[nodiscard]] double evaluate_grouped(const ppb_grouped_placement& placement,
                                          std::size_t index) const;
    [[noreturn]] void throw_too_many_layers(const ppb_placement& placement, std::size_t index,
                                            std::size_t group, std::uint64_t layers) const;
    [[noreturn]] void throw_absent_group_kind(const ppb_placement& placement, std::size_t index,
                                              std::size_t group, ppb_kind kind,
                                              std::uint64_t layers) const;

    // Number of coefficients of one group: per layer, one activation per kind.
    static constexpr std::size_t group_coefficient_count = 1 + PPB_KIND_COUNT;
    struct GroupCoefficients {
        std::array<double, group_coefficient_count> theta{};  // 0 for a kind the file lacks
        std::uint32_t available_kinds = 0;  // PPB_KIND_BIT of the kinds the group's entry gives
    };

    LayerTable table_;
    // The coefficients in that order (the first group's per layer and activations); 0 for a kind
    // the file does not give.
    std::array<double, coefficient_count> theta_{};
    std::uint32_t available_kinds_ = 0;                  // PPB_KIND_BIT of the kinds the file gives
    std::vector<GroupCoefficients> group_coefficients_;  // one per table_.groups
};

inline constexpr std::size_t no_index = static_cast<std::size_t>(-1);

}  // namespace ppb::table

#endif  // PPB_TABLE_MODEL_HPP
