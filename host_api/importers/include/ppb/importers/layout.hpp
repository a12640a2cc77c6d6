// ppb/importers/layout.hpp — what a training job's pipeline layout says about each stage, and the
// messages an import leaves for the user.
#ifndef PPB_IMPORTERS_LAYOUT_HPP
#define PPB_IMPORTERS_LAYOUT_HPP

#include <ppb/abi.h>
#include <ppb/errors.hpp>
#include <ppb/schedule.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppb::importers {

// A wrong value in a command-line flag ("--offset: ..."). It is an InputError; a command-line
// host reports it as a usage mistake.
class FlagError : public InputError {
  public:
    using InputError::InputError;
};

// Body layers of one stage per recompute kind, indexed by ppb_kind (none, select, comm, both,
// full).
using KindCounts = std::array<std::uint32_t, PPB_KIND_COUNT>;

[[nodiscard]] std::uint32_t total_layers(const KindCounts& counts) noexcept;

// "10 layers (full 3, select 7)", "0 layers".
[[nodiscard]] std::string describe_layers(const KindCounts& counts);

// Layers per recompute kind of a stage of `layers` body layers whose configuration recomputes
// the first `full` layers fully, applies selective recompute to the first `select` and
// communication recompute to the first `comm` (MindFormers' per-stage counts). As the public
// SAPP tool splits them: full = `full`; both = max(0, min(select - full, comm - full)); select
// and comm the remainders; none the rest. Counts above `layers` mean every layer, as in
// MindFormers.
[[nodiscard]] KindCounts split_recompute(std::uint32_t layers, std::uint32_t full,
                                         std::uint32_t select, std::uint32_t comm) noexcept;

// A pipeline of `num_stages` stages in which stage s is run by the consecutive ranks
// s * ranks_per_stage ... (s + 1) * ranks_per_stage - 1 (MindSpore's and Megatron's default
// rank order), holding stages[s] body layers; with an interleaved schedule each stage holds
// num_chunks chunks, chunks[s][c] the layers of chunk c.
struct PipelineLayout {
    std::uint32_t num_stages = 1;
    std::uint32_t ranks_per_stage = 1;
    std::optional<std::uint32_t> micro_batches;  // when the configuration says
    std::vector<KindCounts> stages;              // one per stage: its chunks' layers summed
    Schedule schedule = Schedule::one_f_one_b;
    std::uint32_t num_chunks = 1;
    // [stage][chunk] when num_chunks > 1; empty with one chunk per stage (stages says it all).
    std::vector<std::vector<KindCounts>> chunks;
    std::string ranks_explained;  // "data_parallel 2 x model_parallel 4"
    // Groups of body layers (dense and MoE layers), in model order; empty when the body layers
    // are all alike (one group), and then group_layers is empty too.
    std::vector<std::string> groups;
    // [stage][chunk][group]: the layers of each group and recompute kind in each chunk (one chunk
    // per stage without interleaving); summed over the groups they are the chunk's layers.
    std::vector<std::vector<std::vector<KindCounts>>> group_layers;

    [[nodiscard]] std::uint64_t world_size() const noexcept {
        return std::uint64_t{num_stages} * ranks_per_stage;
    }
};

// Which group of body layers each of the model's layers belongs to.
struct LayerGroups {
    std::vector<std::string> names;       // in model order (order of first appearance)
    std::vector<std::uint32_t> group_of;  // per body layer in model order: index into names
};

// The groups "dense" and "moe" of a model whose layer i is an MoE layer when is_moe[i], named in
// the order they first appear.
[[nodiscard]] LayerGroups moe_groups(const std::vector<bool>& is_moe);

// Sets layout.groups and layout.group_layers from `groups` when it has several (leaves them empty
// for one). The chunks hold the model's layers in order: chunk 0 of every stage, stage 0 first,
// then chunk 1 of every stage, ... (Megatron's and MindFormers' virtual pipeline order; one chunk
// per stage: stage 0's layers first). Within a chunk the layers take their recompute kinds by
// position, the most recomputed first: full, then both, select, comm, none, as MindFormers and
// Megatron's block method recompute the first layers of a chunk (the counts are split_recompute's
// or the importer's own). Each layer's group is that of its global index. Throws
// std::logic_error when the layout's layers are not groups.group_of.size().
void split_into_groups(PipelineLayout& layout, const LayerGroups& groups);

// "dense 3 (none 3), moe 1 (full 1)".
[[nodiscard]] std::string describe_group_layers(const std::vector<std::string>& names,
                                                const std::vector<KindCounts>& counts);

// "stage 0: 10 layers (full 3, select 7); stage 1: ...", with each stage's chunks
// ("stage 0: chunk 0 5 layers, chunk 1 5 layers (full 2); ...") when it has several.
[[nodiscard]] std::string describe_stages(const PipelineLayout& layout);

// What an import tells the user besides its result: notes (choices made for them) and warnings
// (something looks wrong but the import went on).
struct Message {
    enum class Level { note, warning };
    Level level = Level::note;
    std::string text;
};
using Messages = std::vector<Message>;

void add_note(Messages& messages, std::string text);
void add_warning(Messages& messages, std::string text);

// "0-3, 5, 7-8": sorted, duplicates dropped, runs of three or more collapsed.
[[nodiscard]] std::string describe_numbers(std::vector<std::uint32_t> numbers);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_LAYOUT_HPP
