// The report() text: the terms of the model in the linear model's vocabulary, with what they
// assume and how they were computed.
#include "model.hpp"

#include <ppb/kinds.hpp>
#include <ppb/plugin/report_support.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppb::analytic {

namespace {

namespace json = boost::json;
using ppb::plugin::finite;
using ppb::plugin::format_number;
using ppb::plugin::strings;

std::string format_mb(double mb) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.1f MB", mb);
    return buffer;
}

std::vector<std::string> assumptions_of(const ShapeOptions& o, const MemoryTerms& terms,
                                        const Coefficients& c) {
    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    std::vector<std::string> out;
    const bool fp32 = o.activation_bytes >= 4.0;
    out.emplace_back(
        std::string(fp32 ? "activations are fp32 (activation_bytes 4: 4 bytes per element)"
                         : "activations are 16-bit (2 bytes per element)") +
        ", dropout masks 1 byte per element, as in Korthikanti et al. 2022 §4.1; normalisation "
        "statistics and other per-token scalars are ignored");
    out.emplace_back(o.dropout
                         ? "dropout is on: the masks after the attention projection and the MLP "
                           "(and the embedding's) are stored"
                         : "dropout is off: no dropout masks are stored");
    if (o.flash_attention) {
        out.emplace_back(
            "flash attention: the a*s^2 softmax and dropout tensors are never stored (so "
            "'select' keeps as much as 'none'), K and V are kept at num_kv_heads heads; its "
            "per-row softmax statistics (4asb/t bytes) are ignored");
    } else {
        out.emplace_back(
            "unfused attention (flash_attention false): softmax output, dropout mask and "
            "dropout output, " +
            std::string(fp32 ? "(4 + 5*dropout)" : "(2 + 3*dropout)") +
            "*a*s^2*b bytes, are stored unless the layer "
            "recomputes selectively; K and V are expanded to all a heads before the batched "
            "matmuls, so grouped-query attention saves no activation memory");
    }
    if (o.mla) {
        out.emplace_back(
            "multi-latent attention (Megatron-LM's MLASelfAttention): the down-projections and "
            "latent norms are whole on every tensor-parallel rank, the up-projections and the "
            "output projection split; the latents, the fused norms' outputs, Q, K, V of a*(" +
            format_number(static_cast<double>(o.mla->qk_head_dim) + o.mla->qk_pos_emb_head_dim) +
            ") and " + format_number(o.mla->v_head_dim) +
            " channels per head and the core's output are kept for backward");
    }
    std::string recomputed;
    const RecomputeModules& r = o.recompute_modules;
    for (const auto& [flag, name] : {std::pair{r.core_attn, "core_attn"},
                                     {r.mla_up_proj, "mla_up_proj"},
                                     {r.layernorm, "layernorm"},
                                     {r.mlp, "mlp"},
                                     {r.moe, "moe"},
                                     {r.moe_act, "moe_act"},
                                     {r.shared_experts, "shared_experts"}}) {
        if (flag)
            recomputed += std::string(recomputed.empty() ? "" : ", ") + name;
    }
    out.emplace_back("'select' layers recompute " +
                     (recomputed.empty() ? std::string("nothing (recompute_modules is empty)")
                                         : "the modules " + recomputed));
    if (o.offload_modules.any()) {
        out.emplace_back(
            "fine-grained activation offloading: the offloaded modules' saved tensors (" +
            format_number(o.activation_offload_fraction) +
            " of them) leave the device after forward; one layer's come back for its backward "
            "(held once); copies still in flight cost no allocated memory");
    }
    if (o.cpu_offloading_num_layers > 0) {
        out.emplace_back("CPU offloading of layers: the saved activations of the model's first " +
                         std::to_string(o.cpu_offloading_num_layers) +
                         " body layers are on the host at the peak (one stage, no recompute)");
    }
    if (o.fp8_recipe) {
        out.emplace_back(
            "FP8/FP4: the linears keep their inputs quantized and cache quantized copies of their "
            "weights (" +
            format_number(terms.linear.weight_copy) + " bytes a linear parameter" +
            (o.fp8_param_gather ? ", instead of their 16-bit weights)" : ")") +
            "; attention, norms, the embedding and the LM head stay " + (fp32 ? "fp32" : "16-bit"));
    }
    if (o.context_parallel > 1) {
        out.emplace_back("context parallelism over " + std::to_string(o.context_parallel) +
                         " ranks: every per-token term at seq_length / " +
                         std::to_string(o.context_parallel) +
                         ", plus what the key/value exchange keeps and its buffers");
    }
    out.emplace_back(o.gated_mlp
                         ? "gated MLP (SwiGLU): three h x F matrices; the fused activation keeps "
                           "its two inputs (4sbF bytes) and the down projection its input (2sbF)"
                         : "MLP of two h x F matrices: the activation function's input and the "
                           "second linear's input are stored (4sbF bytes)");
    if (split_sequence) {
        out.emplace_back(
            o.keep_gathered_inputs
                ? "sequence parallelism; 'none' and 'select' layers keep the all-gathered "
                  "full-sequence inputs of the QKV and first MLP linears (4sbh bytes), 'comm' "
                  "and 'both' re-gather them in backward (Korthikanti et al.'s accounting)"
                : "sequence parallelism as in Megatron-LM: the column-parallel linears keep "
                  "their sequence-sharded inputs and re-gather them in backward for every kind, "
                  "so 'comm' equals 'none' and 'both' equals 'select'");
    } else {
        out.emplace_back(
            "no sequence parallelism: norms, dropout masks and the linears' inputs are "
            "replicated on every tensor-parallel rank; 'comm' equals 'none' and 'both' equals "
            "'select' (there is no activation all-gather to recompute)");
    }
    out.emplace_back(
        "'full' keeps only each layer's input; while one layer is recomputed in backward its "
        "activations exist once more, up to " +
        format_mb(c.activation_mb[PPB_KIND_NONE]) +
        " for one micro-batch: not included, put it in constant_mb if it matters");
    out.emplace_back(
        "stage 0 holds the embedding (V*h/t parameters; its dropout mask per in-flight "
        "micro-batch of its first chunk), the last stage the final norm and the LM head (h + "
        "V*h/t parameters; per in-flight micro-batch of its last chunk the final norm's and the "
        "LM head's inputs and the logits the loss keeps, logits_bytes*sbV/t bytes)");
    out.emplace_back("held once at the peak, the larger of: one layer's backward gradients (" +
                     format_mb(c.layer_transient_mb) + ", every stage) and the logits' " +
                     (fp32 ? "fp32" : "16-bit") + " copy (" + format_mb(c.tail_transient_mb) +
                     ", last stage)");
    out.emplace_back(
        o.untie_embeddings
            ? "untied embeddings: the LM head has its own V*h/t parameters"
            : "tied embeddings: with p > 1 the last stage still holds a copy of the word "
              "embeddings for the LM head (Megatron-LM), with p = 1 the LM head is the embedding");
    out.emplace_back(
        std::string(o.linear_biases ? "parameters: linear biases" : "parameters: no biases") +
        ", one weight vector of h per norm (replicated on every tensor-parallel rank), " +
        (o.position_embeddings > 0 ? "learned position embeddings on stage 0"
                                   : "no learned position embeddings") +
        "; vocab_size is taken as given (give the padded size your framework allocates)");
    out.emplace_back("bytes per parameter = param_bytes + grad_bytes + optimizer_bytes" +
                     std::string(o.distributed_optimizer ? " / data_parallel" : "") + " = " +
                     format_number(terms.bytes_per_parameter));
    out.emplace_back(
        "runtime_mb " + format_mb(o.runtime_mb) +
        " on every stage (workspaces, the batch); not included: allocator fragmentation, other "
        "frameworks' buffers: give them as constant_mb");
    out.emplace_back(
        "not linear in the ABI's sense: head and tail activations grow with the in-flight count "
        "of stage 0 and of the last stage, so parameters() and group_parameters() are unsupported "
        "and hosts call predict_batch (predict_grouped_batch)");
    if (o.moe) {
        const MoeOptions& m = *o.moe;
        const MoeLayerTerms& moe = *terms.moe;
        out.emplace_back(
            m.capacity_factor
                ? "tokens per routed expert: capacity_factor " + format_number(*m.capacity_factor) +
                      " times the balanced share top_k * s * b / num_experts (token drop or "
                      "padding to capacity)"
                : std::string("tokens per routed expert: the balanced expectation top_k * s * b / "
                              "num_experts (dropless routing without capacity_factor); an "
                              "unbalanced router puts more on some ranks"));
        const auto weights_keep = [&]() -> std::string_view {
            switch (m.routing_weights) {
                case RoutingWeights::combine:
                    return "the outputs the combine weights";
                case RoutingWeights::combine_fp32:
                    return "the outputs the combine weights, in fp32";
                case RoutingWeights::experts:
                    break;
            }
            return o.gated_mlp && m.activation_fused
                       ? "nothing more for the routing weights (the fused weighted SwiGLU)"
                       : "the activation's output the routing weights multiply";
        };
        out.emplace_back(
            "MoE layers: attention and norms as a dense layer's; router scores in fp32 and a "
            "one-byte routing map per token and expert; shared experts as a dense MLP split over "
            "tensor_parallel; routed experts keep their input, inner activations and " +
            std::string(weights_keep()) + ", " + format_number(moe.routed_tokens) +
            " routed tokens per rank and micro-batch");
        out.emplace_back(
            "recompute kinds on MoE layers: 'select' recomputes the attention core only (the "
            "experts keep their activations), 'comm' re-gathers the QKV and shared-expert inputs "
            "under sequence parallelism (the all-to-all of the dispatch is not recomputed), "
            "'full' keeps only the layer input");
        out.emplace_back(
            "routed expert parameters: num_experts / expert_parallel experts per rank, each "
            "sliced over expert_tensor_parallel; bytes per expert parameter " +
            format_number(moe.bytes_per_expert_parameter) +
            (o.distributed_optimizer
                 ? " (optimizer state sharded over the expert data parallel ranks, tensor_parallel "
                   "* data_parallel / (expert_parallel * expert_tensor_parallel) = " +
                       format_number(moe.expert_data_parallel) + ")"
                 : std::string()));
    }
    return out;
}

json::object activation_object(const std::array<double, PPB_KIND_COUNT>& mb) {
    json::object out;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        out[kind_name(static_cast<ppb_kind>(k))] = finite(mb[k]);
    return out;
}

}  // namespace

std::string report_json(const ShapeOptions& o, const MemoryTerms& terms, const Coefficients& c) {
    json::object activation_mb;
    json::object sbh_multiples;
    const double sbh = static_cast<double>(o.seq_length) * o.micro_batch_size * o.hidden_size;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const auto kind = static_cast<ppb_kind>(k);
        activation_mb[kind_name(kind)] = finite(c.activation_mb[k]);
        sbh_multiples[kind_name(kind)] = finite(terms.activation_bytes[k] / sbh);
    }
    json::object parameters{
        {"const_mb", finite(c.const_mb)},
        {"head_mb", finite(c.head_mb)},
        {"tail_mb", finite(c.tail_mb)},
        {"param_per_layer_mb", finite(c.per_layer_mb)},
        {"activation_mb", std::move(activation_mb)},
    };
    if (o.moe) {
        // One group: its coefficients; several: no one set describes the layers (each group's
        // are in the diagnostics).
        if (c.groups.size() == 1) {
            parameters["param_per_layer_mb"] = finite(c.groups.front().per_layer_mb);
            parameters["activation_mb"] = activation_object(c.groups.front().activation_mb);
        } else {
            parameters["param_per_layer_mb"] = nullptr;
            json::object none;
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                none[kind_name(static_cast<ppb_kind>(k))] = nullptr;
            parameters["activation_mb"] = std::move(none);
        }
    }

    const LayerActivationTerms& layer = terms.layer;
    json::object diagnostics{
        {"head_activation_mb_per_micro_batch", finite(c.head_activation_mb)},
        {"tail_activation_mb_per_micro_batch", finite(c.tail_activation_mb)},
        {"layer_transient_mb", finite(c.layer_transient_mb)},
        {"tail_transient_mb", finite(c.tail_transient_mb)},
        {"tail_mb_single_stage", finite(c.tail_single_stage_mb)},
        {"bytes_per_parameter", finite(terms.bytes_per_parameter)},
        {"parameters_per_layer_per_rank", finite(terms.layer_parameters)},
        {"embedding_parameters_per_rank", finite(terms.embedding_parameters)},
        {"model_parameters", finite(terms.model_parameters)},
        {"activation_sbh_multiples", std::move(sbh_multiples)},
        {"activation_terms_mb",
         json::object{
             {"replicated", finite(layer.replicated / bytes_per_mb)},
             {"tensor_parallel", finite(layer.tensor_parallel / bytes_per_mb)},
             {"attention_core", finite(layer.attention_core / bytes_per_mb)},
             {"gathered_inputs", finite(layer.gathered_inputs / bytes_per_mb)},
             {"layer_input", finite(layer.layer_input / bytes_per_mb)},
         }},
        {"formulas",
         "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models "
         "(arXiv:2205.05198) §4: activation bytes per layer per micro-batch sbh(34 + 5as/h), with "
         "tensor parallelism sbh(10 + 24/t + 5as/(ht)), with sequence parallelism "
         "sbh/t(34 + 5as/h), selective recompute drops 5as/h, full recompute keeps 2sbh (/t with "
         "sequence parallelism); generalised to ffn_hidden_size, gated MLPs, grouped-query and "
         "flash attention; parameters times (param_bytes + grad_bytes + optimizer_bytes, / d "
         "with the distributed optimizer). Derivation: plugin/analytic/README.md"},
        {"assumptions", strings(assumptions_of(o, terms, c))},
        {"warnings", strings(option_warnings(o))},
    };
    if (o.moe) {
        const MoeLayerTerms& moe = *terms.moe;
        json::array groups;
        for (const GroupCoefficients& g : c.groups) {
            groups.push_back(json::object{
                {"name", g.name},
                {"moe", g.moe},
                {"layers_in_model", g.layers_in_model},
                {"param_per_layer_mb", finite(g.per_layer_mb)},
                {"activation_mb", activation_object(g.activation_mb)},
            });
        }
        json::array layout;
        for (const bool m : o.moe->moe_layer)
            layout.push_back(m ? 1 : 0);
        diagnostics["groups"] = std::move(groups);
        diagnostics["active_parameters"] = finite(terms.active_parameters);
        diagnostics["moe"] = json::object{
            {"moe_layer", std::move(layout)},
            {"dense_parameters_per_layer_per_rank", finite(moe.dense_parameters)},
            {"expert_parameters_per_layer_per_rank", finite(moe.expert_parameters)},
            {"expert_data_parallel", finite(moe.expert_data_parallel)},
            {"bytes_per_expert_parameter", finite(moe.bytes_per_expert_parameter)},
            {"routed_tokens_per_rank", finite(moe.routed_tokens)},
            {"activation_terms_mb",
             json::object{
                 {"replicated", finite(moe.layer.replicated / bytes_per_mb)},
                 {"router", finite(moe.router / bytes_per_mb)},
                 {"tensor_parallel", finite(moe.layer.tensor_parallel / bytes_per_mb)},
                 {"shared_experts", finite(moe.shared_experts / bytes_per_mb)},
                 {"attention_core", finite(moe.layer.attention_core / bytes_per_mb)},
                 {"gathered_inputs", finite(moe.layer.gathered_inputs / bytes_per_mb)},
                 {"routed_experts_per_rank", finite(moe.routed_experts / bytes_per_mb)},
             }},
        };
    }
    if (o.cuda_graph_scope.any()) {
        // What the graphs keep in their pool per layer and micro-batch in flight (reserved
        // memory beyond the allocated peak while they replay), and their buffers (README.md,
        // "CUDA graphs").
        diagnostics["cuda_graphs"] = json::object{
            {"kept_in_pool_mb", activation_object(c.graph_kept_mb)},
            {"static_input_mb", finite(c.graph_input_mb)},
            {"capture_output_mb", finite(c.graph_output_mb)},
        };
    }
    return ppb::plugin::make_report(std::move(parameters), std::move(diagnostics));
}

}  // namespace ppb::analytic
