#include "model.hpp"

#include <ppb/kinds.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

namespace ppb::analytic {

namespace {

using ppb::plugin::InvalidInput;

[[noreturn]] void reject(const std::string& problem) {
    throw InvalidInput("placement: " + problem);
}

// The parts of predict_parts() that are parameters (weights, their copies, gradients, optimizer
// state) or fixed: allocated already while the CUDA graphs are captured.
bool is_parameter_part(std::string_view name) {
    constexpr std::array<std::string_view, 9> fixed = {"constant",  "runtime",   "embedding",
                                                       "lm_head",   "weights",   "fp8_weights",
                                                       "gradients", "optimizer", "mtp"};
    return std::ranges::find(fixed, name) != fixed.end();
}

}  // namespace

Coefficients coefficients_of(const ShapeOptions& options, const MemoryTerms& terms) {
    const double bpp = terms.bytes_per_parameter;
    Coefficients c;
    c.const_mb = options.constant_mb + options.runtime_mb;
    c.head_mb = terms.embedding_parameters * bpp / bytes_per_mb;
    c.head_activation_mb = terms.head_activation_bytes / bytes_per_mb;
    c.tail_mb = terms.tail_parameters * bpp / bytes_per_mb;
    c.tail_single_stage_mb = terms.tail_parameters_single_stage * bpp / bytes_per_mb;
    c.tail_activation_mb = terms.tail_activation_bytes / bytes_per_mb;
    c.tail_logits_mb = terms.tail_logits_bytes / bytes_per_mb;
    c.tail_deferred_mb = terms.deferred_wgrad_bytes / bytes_per_mb;
    c.layer_transient_mb = terms.layer_transient_bytes / bytes_per_mb;
    c.tail_transient_mb = terms.tail_transient_bytes / bytes_per_mb;
    // The model's own logits; the MTP layers' are left in (their losses' order in backward is
    // not relied on).
    const double own_logits =
        terms.tail_logits_bytes - (terms.mtp ? terms.mtp->tail_logits_bytes : 0.0);
    c.tail_layer_transient_mb =
        std::max(0.0, terms.layer_transient_bytes - own_logits) / bytes_per_mb;
    // FP8 / FP4 (README.md, "FP8 and FP4"): per linear parameter, the quantized copies
    // Transformer Engine caches, less the 16-bit weight when the weights are kept quantized only.
    const ParameterBytes& pb = terms.parameter_bytes;
    const double gathered_weight = options.fp8_param_gather ? pb.weight : 0.0;
    // The copies' bytes per linear parameter of the dense parts and of the routed experts (their
    // shards differ: the data-parallel ranks with the context-parallel ones, the expert-data-
    // parallel ranks).
    const double dense_shard =
        terms.linear.sharded_copy
            ? static_cast<double>(options.data_parallel) * options.context_parallel
            : 1.0;
    const double expert_shard =
        terms.linear.sharded_copy && terms.moe ? terms.moe->expert_data_parallel : dense_shard;
    const auto quantized_mb = [&](double linear) {
        return linear * terms.linear.weight_copy / dense_shard / bytes_per_mb;
    };
    const auto expert_quantized_mb = [&](double linear) {
        return linear * terms.linear.weight_copy / expert_shard / bytes_per_mb;
    };
    const auto replaced_mb = [&](double linear) { return linear * gathered_weight / bytes_per_mb; };
    c.per_layer_mb =
        terms.layer_parameters * bpp / bytes_per_mb +
        (quantized_mb(terms.layer_linear_parameters) - replaced_mb(terms.layer_linear_parameters));
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        c.activation_mb[k] = terms.activation_bytes[k] / bytes_per_mb;
        c.graph_kept_mb[k] = terms.graph_kept_bytes[k] / bytes_per_mb;
    }
    c.graph_input_mb = terms.graph_input_bytes / bytes_per_mb;
    c.graph_output_mb = terms.graph_output_bytes / bytes_per_mb;
    double largest_unit = terms.layer_parameters * pb.unsharded;  // FSDP: bytes unsharded
    for (const LayerGroup& g : layer_groups(options)) {
        GroupCoefficients group{g.name, g.moe, g.layers, c.per_layer_mb, c.activation_mb};
        double quantized = quantized_mb(terms.layer_linear_parameters);
        double weight_bytes = terms.layer_parameters * pb.weight;
        double gradient_bytes = terms.layer_parameters * pb.gradient;
        double optimizer_bytes = terms.layer_parameters * pb.optimizer;
        double replaced = replaced_mb(terms.layer_linear_parameters);
        if (g.moe) {
            const MoeLayerTerms& moe = *terms.moe;
            const ParameterBytes& epb = moe.expert_parameter_bytes;
            quantized = quantized_mb(moe.dense_linear_parameters) +
                        expert_quantized_mb(moe.expert_parameters);
            // The 16-bit weights the quantized ones replace, each at its own sharding (the
            // experts' over their expert-data-parallel ranks under Megatron-FSDP).
            replaced = replaced_mb(moe.dense_linear_parameters) +
                       (options.fp8_param_gather ? moe.expert_parameters * epb.weight : 0.0) /
                           bytes_per_mb;
            group.per_layer_mb = (moe.dense_parameters * bpp +
                                  moe.expert_parameters * moe.bytes_per_expert_parameter) /
                                     bytes_per_mb +
                                 (quantized - replaced);
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                group.activation_mb[k] = moe.activation_bytes[k] / bytes_per_mb;
            weight_bytes = moe.dense_parameters * pb.weight + moe.expert_parameters * epb.weight;
            gradient_bytes =
                moe.dense_parameters * pb.gradient + moe.expert_parameters * epb.gradient;
            optimizer_bytes =
                moe.dense_parameters * pb.optimizer + moe.expert_parameters * epb.optimizer;
            largest_unit = std::max(largest_unit, moe.dense_parameters * pb.unsharded +
                                                      moe.expert_parameters * epb.unsharded);
        }
        group.weights_per_layer_mb = weight_bytes / bytes_per_mb - replaced;
        group.quantized_per_layer_mb = quantized;
        for (std::uint32_t i = 0; i < options.cpu_offloading_num_layers; ++i) {
            if ((options.moe && options.moe->moe_layer[i]) == g.moe)
                ++group.offloaded_layers;
        }
        group.gradients_per_layer_mb = gradient_bytes / bytes_per_mb;
        group.optimizer_per_layer_mb = optimizer_bytes / bytes_per_mb;
        c.groups.push_back(std::move(group));
    }
    // Megatron-FSDP holds two units unsharded at a time (the one computing and the one
    // prefetched; megatron_fsdp docs: "at least two FSDP units worth of un-sharded weight
    // memory"): a layer and the largest unit beside it on the stage.
    c.fsdp_layer_buffer_mb = largest_unit / bytes_per_mb;
    c.fsdp_head_buffer_mb = terms.embedding_parameters * pb.unsharded / bytes_per_mb;
    c.fsdp_tail_buffer_mb = terms.tail_parameters * pb.unsharded / bytes_per_mb;
    if (terms.mtp) {
        // Each MTP layer is a transformer layer of the model's last layer's kind (its group's
        // coefficients, MoE experts at their own bytes) with its projection and norms.
        const MtpTerms& mtp = *terms.mtp;
        const double n = options.mtp_num_layers;
        double layer_mb = c.per_layer_mb;
        double layer_activation_mb = c.activation_mb[options.mtp_recompute];
        for (const GroupCoefficients& g : c.groups) {
            if (g.moe == mtp.moe) {
                layer_mb = g.per_layer_mb;
                layer_activation_mb = g.activation_mb[options.mtp_recompute];
            }
        }
        // Full recompute checkpoints the whole MTP module: its layer keeps nothing of its own.
        if (options.mtp_recompute == PPB_KIND_FULL)
            layer_activation_mb = 0.0;
        c.mtp_mb =
            n *
            (layer_mb + mtp.own_parameters * bpp / bytes_per_mb +
             (quantized_mb(mtp.own_linear_parameters) - replaced_mb(mtp.own_linear_parameters)));
        c.mtp_embedding_mb = mtp.embedding_parameters * bpp / bytes_per_mb;
        c.mtp_activation_mb = n * (layer_activation_mb +
                                   mtp.own_activation_bytes[options.mtp_recompute] / bytes_per_mb);
    }
    return c;
}

AnalyticModel::AnalyticModel(std::string_view options_json)
    : AnalyticModel(parse_options(options_json)) {}

AnalyticModel::AnalyticModel(const ShapeOptions& options)
    : options_(options),
      terms_(memory_terms(options_)),
      coefficients_(coefficients_of(options_, terms_)) {}

double AnalyticModel::predict(const ppb_placement& placement) const {
    if (coefficients_.groups.size() != 1) {
        throw InvalidInput(
            "placement: this model has several groups of body layers: count the layers per group "
            "(predict_grouped)");
    }
    return stage_memory(placement, 1, nullptr);
}

double AnalyticModel::predict_grouped(const ppb_grouped_placement& placement) const {
    if (placement.num_groups != coefficients_.groups.size()) {
        throw InvalidInput("placement: num_groups is " + std::to_string(placement.num_groups) +
                           " but the model has " + std::to_string(coefficients_.groups.size()));
    }
    return stage_memory(placement.placement, placement.num_groups, placement.group_layers);
}

std::vector<std::string> AnalyticModel::groups() const {
    std::vector<std::string> names;
    for (const auto& g : coefficients_.groups)
        names.push_back(g.name);
    return names;
}

double AnalyticModel::stage_memory(const ppb_placement& placement, std::uint32_t num_groups,
                                   const std::uint32_t* group_layers) const {
    // The placement is well formed: the C boundary checked it (ppb/plugin/placement_checks.hpp),
    // and for a grouped one that the groups add up to the plain counts.
    const std::uint32_t p = placement.num_stages;
    const Coefficients& k = coefficients_;
    // At most two groups (dense and MoE): counted without allocating.
    std::array<std::uint64_t, 2> layers{};
    double activation = 0.0;
    double graph_kept = 0.0;   // CUDA graphs: what the graphed attention keeps
    double graph_slots = 0.0;  // graphed layer micro-batches in flight
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
        const ppb_chunk& chunk = placement.chunks[c];
        const double f = chunk.in_flight;
        for (std::uint32_t g = 0; g < num_groups; ++g) {
            const GroupCoefficients& group = k.groups[g];
            for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
                const std::uint32_t n =
                    group_layers == nullptr
                        ? chunk.layers[kind]
                        : group_layers[(static_cast<std::size_t>(c) * num_groups + g) *
                                           PPB_KIND_COUNT +
                                       kind];
                layers[g] += n;
                activation += group.activation_mb[kind] * static_cast<double>(n) * f;
                graph_kept += k.graph_kept_mb[kind] * static_cast<double>(n) * f;
                graph_slots += static_cast<double>(n) * f;
            }
        }
    }
    std::uint64_t total = 0;
    for (std::uint32_t g = 0; g < num_groups; ++g) {
        total += layers[g];
        if (layers[g] > k.groups[g].layers_in_model && options_.moe) {
            reject("the stage holds " + std::to_string(layers[g]) + " layers of group '" +
                   k.groups[g].name + "', more than the " +
                   std::to_string(k.groups[g].layers_in_model) +
                   " of the model (options num_layers and the moe layout)");
        }
    }
    if (total > options_.num_layers) {
        reject("the stage holds " + std::to_string(total) + " body layers, more than the " +
               std::to_string(options_.num_layers) + " of the model (option num_layers)");
    }
    if (options_.mtp_num_layers > 0 && options_.mtp_stage_offset >= p) {
        reject("the multi-token prediction layers are " +
               std::to_string(options_.mtp_stage_offset) +
               " stages before the last (option mtp_stage_offset), but there are " +
               std::to_string(p) + " stages");
    }

    activation -= offloaded_activation_mb(placement, num_groups, group_layers);
    double memory = k.const_mb;
    for (std::uint32_t g = 0; g < num_groups; ++g)
        memory += k.groups[g].per_layer_mb * static_cast<double>(layers[g]);
    double fixed = memory;  // the parameters' memory, for the CUDA graphs' capture
    memory += activation;
    if (placement.stage == 0) {
        // The embedding belongs to the first chunk (the model's first layers).
        memory += k.head_mb + k.head_activation_mb * placement.chunks[0].in_flight;
        fixed += k.head_mb;
    }
    // Held once, whatever the stage's layer count: the stage memory stays affine in the layer
    // counts (the partitioner probes it so), and a stage without layers is not planned anyway.
    double transient = k.layer_transient_mb;
    if (placement.stage == p - 1) {
        // The LM head and loss belong to the last chunk (the model's last layers).
        const double f = placement.chunks[placement.num_chunks - 1].in_flight;
        memory += (p == 1 ? k.tail_single_stage_mb : k.tail_mb) + k.tail_activation_mb * f +
                  k.tail_deferred_mb;
        fixed += p == 1 ? k.tail_single_stage_mb : k.tail_mb;
        transient = std::max(tail_layer_transient(placement), k.tail_transient_mb);
    }
    if (holds_mtp(placement)) {
        memory += mtp_memory(placement);
        fixed += mtp_parameters_mb(placement);
    }
    const double eager = memory + fsdp_buffers(placement) + transient;
    if (!options_.cuda_graph_scope.any())
        return eager;
    const GraphPeaks peaks = graph_peaks(eager, fixed, graph_kept, graph_slots);
    return std::max(peaks.capture, peaks.replay);
}

// CPU offloading of layers (README.md, "CPU offloading of layers"). Megatron-LM hands
// --cpu-offloading-num-layers N to Transformer Engine's get_cpu_offload_context for the layers of
// its one stage (transformer_block.py at d98e8a64dd), which offloads layers 0 .. N - 1 and frees
// layer i's device copy before layer L - N + i runs forward, reloading it from the backward of
// layer L - 1 - N + i: the peak holds the saved activations of L - N layers, the last ones
// (transformer_engine/pytorch/cpu_offload.py, OffloadSynchronizer, at 00382b96b4). Tensors under
// 2^20 elements stay; they are left out here. Megatron-LM refuses it with more than one pipeline
// stage and with any recomputation (transformer_config.py at d98e8a64dd).
double AnalyticModel::offloaded_activation_mb(const ppb_placement& placement,
                                              std::uint32_t num_groups,
                                              const std::uint32_t* group_layers) const {
    const std::uint32_t offloaded = options_.cpu_offloading_num_layers;
    if (offloaded == 0)
        return 0.0;
    if (placement.num_stages > 1) {
        reject("the model offloads the activations of its first " + std::to_string(offloaded) +
               " layers to the host (option cpu_offloading_num_layers), which Megatron-LM does on "
               "one pipeline stage only, and the placement has " +
               std::to_string(placement.num_stages) + " stages");
    }
    const Coefficients& k = coefficients_;
    // The offloaded layers of each group not yet met, in model order.
    std::array<std::uint32_t, 2> left{};
    for (std::uint32_t g = 0; g < num_groups; ++g)
        left[g] = k.groups[g].offloaded_layers;
    double removed = 0.0;
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
        const ppb_chunk& chunk = placement.chunks[c];
        for (std::uint32_t g = 0; g < num_groups; ++g) {
            const std::uint32_t* counts =
                group_layers == nullptr
                    ? chunk.layers
                    : group_layers +
                          (static_cast<std::size_t>(c) * num_groups + g) * PPB_KIND_COUNT;
            for (std::size_t kind = PPB_KIND_SELECT; kind < PPB_KIND_COUNT; ++kind) {
                if (counts[kind] > 0) {
                    reject(
                        "the model offloads layers' activations to the host (option "
                        "cpu_offloading_num_layers), and Megatron-LM refuses recomputation "
                        "beside it: the placement has " +
                        std::to_string(counts[kind]) + " '" + std::string(ppb::kind_names[kind]) +
                        "' layers (plan with the kind none only)");
                }
            }
            const std::uint32_t here = std::min(left[g], counts[PPB_KIND_NONE]);
            left[g] -= here;
            removed += k.groups[g].activation_mb[PPB_KIND_NONE] * static_cast<double>(here) *
                       chunk.in_flight;
        }
    }
    return removed;
}

// Transformer Engine's CUDA graphs with no eager iteration before them (README.md, "CUDA
// graphs"; megatron/core/transformer/cuda_graphs.py, TECudaGraphHelper, and
// transformer_engine/pytorch/graph.py, make_graphed_callables, at the Megatron-LM commit of
// terms.cpp). The graphs are captured before the first step, in the schedule's order, the
// attention of each layer and micro-batch alone: at the capture's peak the parameters are
// allocated with the attention's saved tensors, inputs and outputs of every micro-batch in
// flight (freed once its backward is captured). While the graphs replay, what they save lives in
// their pool, which the allocator does not see: the eager peak less it, plus the static inputs,
// allocated for the whole run (one per micro-batch in flight, reused once its backward ran).
// PyTorch's max_memory_allocated is the larger of the two; the pool is reserved memory beyond.
AnalyticModel::GraphPeaks AnalyticModel::graph_peaks(double eager, double fixed, double kept,
                                                     double slots) const noexcept {
    const Coefficients& k = coefficients_;
    return {fixed + kept + slots * (k.graph_input_mb + k.graph_output_mb),
            eager - kept + slots * k.graph_input_mb};
}

// One layer's backward gradients as the last stage holds them beside its tail (README.md,
// "Peak"). With one chunk, the micro-batch whose layer runs backward has freed its logits in its
// loss's backward, and one running forward has none yet: they do not add up. In an interleaved
// schedule another micro-batch's logits may wait in the last chunk while an earlier chunk runs
// backward: the gradients are counted whole.
double AnalyticModel::tail_layer_transient(const ppb_placement& placement) const noexcept {
    return placement.num_chunks == 1 ? coefficients_.tail_layer_transient_mb
                                     : coefficients_.layer_transient_mb;
}

double AnalyticModel::fsdp_buffers(const ppb_placement& placement) const noexcept {
    const Coefficients& k = coefficients_;
    double beside = k.fsdp_layer_buffer_mb;
    if (placement.stage == 0)
        beside = std::max(beside, k.fsdp_head_buffer_mb);
    if (placement.stage + 1 == placement.num_stages)
        beside = std::max(beside, k.fsdp_tail_buffer_mb);
    return k.fsdp_layer_buffer_mb + beside;
}

bool AnalyticModel::holds_mtp(const ppb_placement& placement) const noexcept {
    return options_.mtp_num_layers > 0 &&
           placement.stage + 1 + options_.mtp_stage_offset == placement.num_stages;
}

double AnalyticModel::mtp_parameters_mb(const ppb_placement& placement) const noexcept {
    // The MTP layers are in the stage's last chunk; a chunk that is not the model's first
    // (stage 0's only chunk) holds its own copy of the embedding.
    const bool shares_embedding = placement.stage == 0 && placement.num_chunks == 1;
    return coefficients_.mtp_mb + (shares_embedding ? 0.0 : coefficients_.mtp_embedding_mb);
}

double AnalyticModel::mtp_memory(const ppb_placement& placement) const noexcept {
    return mtp_parameters_mb(placement) +
           coefficients_.mtp_activation_mb * placement.chunks[placement.num_chunks - 1].in_flight;
}

std::optional<std::vector<ppb_memory_part>> AnalyticModel::predict_parts(
    const ppb_grouped_placement& placement) const {
    // The prediction first: it refuses what the model cannot predict, as predict_grouped() does.
    (void)predict_grouped(placement);
    const ppb_placement& stage = placement.placement;
    const std::uint32_t p = stage.num_stages;
    const std::uint32_t num_groups = placement.num_groups;
    const Coefficients& k = coefficients_;
    double weights = 0.0;
    double quantized = 0.0;
    double gradients = 0.0;
    double optimizer = 0.0;
    std::array<double, PPB_KIND_COUNT> activations{};
    std::array<double, PPB_KIND_COUNT> graph_kept{};
    double graph_slots = 0.0;
    for (std::uint32_t c = 0; c < stage.num_chunks; ++c) {
        const double f = stage.chunks[c].in_flight;
        for (std::uint32_t g = 0; g < num_groups; ++g) {
            const GroupCoefficients& group = k.groups[g];
            for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
                const double n =
                    placement.group_layers[(static_cast<std::size_t>(c) * num_groups + g) *
                                               PPB_KIND_COUNT +
                                           kind];
                weights += group.weights_per_layer_mb * n;
                quantized += group.quantized_per_layer_mb * n;
                gradients += group.gradients_per_layer_mb * n;
                optimizer += group.optimizer_per_layer_mb * n;
                activations[kind] += group.activation_mb[kind] * n * f;
                graph_kept[kind] += k.graph_kept_mb[kind] * n * f;
                graph_slots += n * f;
            }
        }
    }
    const bool first = stage.stage == 0;
    const bool last = stage.stage == p - 1;
    const double head_flight = stage.chunks[0].in_flight;
    const double tail_flight = stage.chunks[stage.num_chunks - 1].in_flight;
    const double layer_transient = last ? tail_layer_transient(stage) : k.layer_transient_mb;
    const bool logits_copy = last && k.tail_transient_mb > layer_transient;
    const bool mtp = holds_mtp(stage);

    std::vector<ppb_memory_part> parts = {
        {"constant", "constant (constant_mb: what the formulas leave out)", options_.constant_mb},
        {"runtime", "runtime buffers (runtime_mb: workspaces, token ids, RNG states)",
         options_.runtime_mb},
        {"embedding", "embedding: weights, gradients, optimizer state", first ? k.head_mb : 0.0},
        {"lm_head", "final norm and LM head: weights, gradients, optimizer state",
         last ? (p == 1 ? k.tail_single_stage_mb : k.tail_mb) : 0.0},
        {"weights",
         options_.fp8_param_gather ? "body layers' weights (the linears' in FP8 below)"
                                   : "body layers' weights",
         weights},
        {"fp8_weights",
         "body layers' quantized weights (Transformer Engine's cached FP8 / FP4 copies and "
         "transposes)",
         quantized},
        {"gradients", "body layers' gradients", gradients},
        {"optimizer", "body layers' optimizer state", optimizer},
        {"none",
         options_.cpu_offloading_num_layers > 0
             ? "activations, 'none' layers (those of the layers offloaded to the host not held)"
             : "activations, 'none' layers",
         activations[PPB_KIND_NONE] -
             offloaded_activation_mb(stage, num_groups, placement.group_layers)},
        {"select", "activations, 'select' layers", activations[PPB_KIND_SELECT]},
        {"comm", "activations, 'comm' layers", activations[PPB_KIND_COMM]},
        {"both", "activations, 'both' layers", activations[PPB_KIND_BOTH]},
        {"full", "activations, 'full' layers (their inputs)", activations[PPB_KIND_FULL]},
        {"embedding_activations", "embedding's activations (dropout masks)",
         first ? k.head_activation_mb * head_flight : 0.0},
        {"lm_head_activations", "final norm's and LM head's inputs",
         last ? (k.tail_activation_mb - k.tail_logits_mb) * tail_flight : 0.0},
        {"logits",
         options_.mtp_num_layers > 0 ? "logits the losses keep (the model's and the MTP layers')"
                                     : "logits the loss keeps",
         last ? k.tail_logits_mb * tail_flight : 0.0},
        {"deferred_wgrad",
         "LM head's output gradients and inputs kept for the deferred weight gradient",
         last ? k.tail_deferred_mb : 0.0},
        {"mtp",
         "multi-token prediction layers and their embedding copy: weights, gradients, optimizer "
         "state",
         mtp ? mtp_parameters_mb(stage) : 0.0},
        {"mtp_activations", "multi-token prediction layers' activations",
         mtp ? k.mtp_activation_mb * tail_flight : 0.0},
        {"fsdp_buffers",
         "held once: FSDP's unsharded buffers (two units' gathered weights and gradients)",
         fsdp_buffers(stage)},
        {"transient",
         logits_copy
             ? (options_.activation_bytes >= 4.0 ? "held once: the logits' fp32 copy at the loss"
                                                 : "held once: the logits' 16-bit copy at the loss")
         : options_.context_parallel > 1 || options_.offload_modules.any()
             ? "held once: one layer's backward gradients and its exchange or reloaded buffers"
             : "held once: one layer's backward gradients",
         logits_copy ? k.tail_transient_mb : layer_transient},
    };
    if (options_.cuda_graph_scope.any())
        graph_parts(parts, graph_kept, graph_slots);
    std::erase_if(parts, [](const ppb_memory_part& part) { return part.mb == 0.0; });
    if (parts.empty())
        parts.push_back({"constant", "constant (constant_mb: what the formulas leave out)", 0.0});
    return parts;
}

// The eager parts as the CUDA graphs' peak has them: at the replay's, the activations less what
// the graphs keep in their pool, and the graphs' static inputs; at the capture's, the parameters
// and what the capture holds.
void AnalyticModel::graph_parts(std::vector<ppb_memory_part>& parts,
                                const std::array<double, PPB_KIND_COUNT>& kept,
                                double slots) const {
    const Coefficients& k = coefficients_;
    double eager = 0.0;
    double fixed = 0.0;
    double kept_total = 0.0;
    for (const ppb_memory_part& part : parts) {
        eager += part.mb;
        if (is_parameter_part(part.name))
            fixed += part.mb;
    }
    for (const double x : kept)
        kept_total += x;
    const GraphPeaks peaks = graph_peaks(eager, fixed, kept_total, slots);
    if (peaks.replay >= peaks.capture) {
        for (ppb_memory_part& part : parts) {
            for (std::size_t kind = 0; kind < PPB_KIND_COUNT; ++kind) {
                if (std::string_view(part.name) == kind_names[kind])
                    part.mb = std::max(0.0, part.mb - kept[kind]);
            }
        }
        parts.push_back({"cuda_graph_inputs",
                         "CUDA graphs' static inputs (hidden states, attention mask), per "
                         "micro-batch in flight; their saved tensors are in the graphs' pool",
                         slots * k.graph_input_mb});
        return;
    }
    std::erase_if(parts, [](const ppb_memory_part& part) { return !is_parameter_part(part.name); });
    parts.push_back({"cuda_graph_capture",
                     "CUDA graph capture: the attention's saved tensors, inputs and outputs of "
                     "every micro-batch in flight",
                     peaks.capture - fixed});
}

std::string AnalyticModel::report() const {
    return report_json(options_, terms_, coefficients_);
}

}  // namespace ppb::analytic
