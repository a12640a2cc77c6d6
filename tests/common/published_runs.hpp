// The published, measured runs of expert-tuned configurations (tests/data/tuned/published.json:
// NeMo's and Megatron-Bridge's performance summaries and torchtitan's benchmarks, each row with
// its repository, path and commit) as the tests read them: the run's figures, the analytic
// model's shape of its model as the run ran it, and why the time model does not time a run yet.
// One owner for the suites that time the runs (tests/partition/test_tuned_configurations.cpp)
// and that rank them in `ppb search` (tests/cli/test_cli_published.cpp).
#ifndef PPB_TEST_COMMON_PUBLISHED_RUNS_HPP
#define PPB_TEST_COMMON_PUBLISHED_RUNS_HPP

#include <ppb/partition/cluster.hpp>

#include <boost/json.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ppb_test::published {

namespace json = boost::json;

inline double number(const json::value& v) {
    return v.to_number<double>();
}

// A run's count `key`, or `fallback` where the source leaves it out (null or absent).
inline std::uint32_t count(const json::object& o, std::string_view key, std::uint32_t fallback) {
    const json::value* v = o.if_contains(key);
    return v == nullptr || v->is_null() ? fallback : v->to_number<std::uint32_t>();
}

// The whole document, read once.
inline const json::value& document() {
    static const json::value doc = [] {
        std::ifstream in(std::string(PPB_TEST_DATA_DIR) + "/tuned/published.json");
        if (!in.good())
            throw std::runtime_error("tests/data/tuned/published.json cannot be read");
        return json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    }();
    return doc;
}

// The models by name.
inline std::map<std::string, const json::object*> models() {
    std::map<std::string, const json::object*> out;
    for (const json::value& m : document().at("models").as_array())
        out[std::string(m.at("model").as_string())] = &m.as_object();
    return out;
}

// Transformer Engine's recipe of a published precision: NeMo 24.07's "FP8" is its default,
// delayed scaling; Megatron-Bridge names current scaling "fp8-cs" and MXFP8 "fp8-mx"; none for
// 16 bits.
inline std::string fp8_recipe_of(std::string_view precision) {
    if (precision == "fp8")
        return "delayed";
    if (precision == "fp8-cs" || precision == "fp8-tensorwise")
        return "tensorwise";
    if (precision == "fp8-mx")
        return "mxfp8";
    return "";
}

// The loss's kernels a run used (the time model times their passes over the logits), as its
// recipe set them:
//  - NeMo 24.07's performance runs (NVIDIA/NeMo's performance summary): the launcher's training
//    configurations set cross_entropy_loss_fusion: true for Nemotron 4B to 22B and LLaMA-3 and
//    3.1 (NVIDIA/NeMo-Framework-Launcher, tag 24.07 = 8325688d83, launcher_scripts/conf/training/
//    nemotron/nemotron_{4b,8b,15b,22b}.yaml and llama/llama3_{8b,70b}.yaml,
//    llama3_1_{8b,70b,405b}.yaml), not for GPT-3, LLaMA-2 and Nemotron-4 340B: the native fusion;
//  - Megatron-Bridge's: its recipes set cross_entropy_loss_fusion = True with
//    cross_entropy_fusion_impl = "te" (NVIDIA-NeMo/Megatron-Bridge,
//    src/megatron/bridge/recipes/llama/llama3.py at 6f6f95e09f);
//  - the others: Megatron-LM's default, unfused.
inline void set_loss_kernels(json::object& shape, std::string_view model, const json::object& run) {
    const json::value* source = run.if_contains("source");
    const std::string_view repository =
        source != nullptr ? source->at("repository").as_string() : std::string_view();
    if (repository == "NVIDIA-NeMo/Megatron-Bridge") {
        shape["cross_entropy_loss_fusion"] = true;
        shape["cross_entropy_fusion_impl"] = "te";
    } else if (repository == "NVIDIA/NeMo" &&
               (model == "nemotron3_8b" || model == "nemotron3_22b" ||
                model.starts_with("llama3"))) {
        shape["cross_entropy_loss_fusion"] = true;
    }
}

// The MoE dispatcher a run's recipe used (the time model times a flex dispatch, DeepEP or
// HybridEP, as one copy of a token per node of its experts), from NVIDIA-NeMo/Megatron-Bridge's
// performance presets of the release each row's container maps to: DeepSeek-V3 on B200
// (v0.4.2, c810129341: DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2, moe_flex_dispatcher_backend
// "deepep"), and its MXFP8 runs on B300 and GB300 (HybridEP: _enable_deepseek_full_iteration_mxfp8
// in src/megatron/bridge/perf_recipes/deepseek/common.py at 067f987df, which
// deepseek/b300/deepseek_v3.py and gb300/deepseek_v3.py call); Qwen3-235B on B200 and H100 (v0.4.2:
// qwen3_235b_a22b_pretrain_config_b200 and _h100 force "alltoall"); the other Qwen3 rows HybridEP
// (flex): GB200 (v0.2.0's 64-GPU preset and v0.6.0, 51885cf, perf_recipes/qwen/gb200/qwen3_moe.py),
// Qwen3-30B on B200 (v0.4.2) and H100 (v0.5.0, fcbb603110), and every Qwen3 recipe on B300 and
// GB300 (perf_recipes/qwen/b300 and gb300/qwen3_moe.py at 067f987df).
inline void set_dispatcher(json::object& moe, std::string_view model, const json::object& run) {
    const std::string_view hardware = run.at("hardware").as_string();
    if (model == "deepseek_v3" &&
        (hardware == "B200" ||
         ((hardware == "B300" || hardware == "GB300") && run.at("precision") == "fp8-mx")))
        moe["token_dispatcher"] = "flex";
    else if (model == "qwen3_235b_a22b" && (hardware == "B200" || hardware == "H100"))
        moe["token_dispatcher"] = "alltoall";
    else if (model.starts_with("qwen3") || model == "kimi_k2")
        moe["token_dispatcher"] = "flex";
}

// Whether a run's FP8 recipe keeps the weights in FP8 (the analytic model's fp8_param_gather):
// Megatron-Bridge's FP8 precision configurations, delayed, current scaling and MXFP8 alike, set
// fp8_param_gather = True (src/megatron/bridge/training/mixed_precision.py at 067f987df,
// bf16_with_fp8_delayed_scaling_mixed, bf16_with_fp8_current_scaling_mixed,
// bf16_with_mxfp8_mixed), as NeMo 2.0's did (nemo/collections/llm/recipes/precision/
// mixed_precision.py at 8cfedd7203). The NeMo 24.07 table's runs predate both, and torchtitan's
// Float8 keeps 16-bit weights unless asked: left as they were.
inline bool fp8_weights_of(const json::object& run) {
    return run.at("source").as_object().at("repository").as_string() ==
           "NVIDIA-NeMo/Megatron-Bridge";
}

// The analytic model's shape of `model` run as `run` describes: its sizes, sequence, micro-batch,
// TP with sequence parallelism, CP, EP, the distributed optimizer (FSDP's sharding where the run
// used it), gradients reduced in bf16 (the performance recipes set grad_reduce_in_fp32 = False),
// flash attention and the run's FP8 recipe, its weights in FP8 where the recipe keeps them
// (fp8_weights_of).
// The multi-token-prediction layers a run trained with: the model's (DeepSeek-V3: 1, as its
// Megatron-Bridge recipe sets mtp_num_layers = 1 and no performance script overrides it,
// src/megatron/bridge/recipes/deepseek/deepseek_v3.py at v0.4.2, c810129341), but none in a row the
// table marks "w/o MTP". The published model TFLOP/s agree: per token, 864 / 3328 (B200, 26.04.01),
// 1276 / 4912 (GB200 MXFP8, 26.08) and 338 / 1297 (H100, 25.09) are 260 GFLOP, Megatron-Bridge's
// figure with the MTP layer, and 782 / 3139 (GB200 BF16, 25.11, "w/o MTP") 249 GFLOP, without.
inline std::uint32_t mtp_layers_of(const json::object& model, const json::object& run) {
    const json::value* layers = model.if_contains("mtp_layers");
    if (layers == nullptr || layers->is_null())
        return 0;
    const json::value* row = run.at("source").as_object().if_contains("row");
    if (row != nullptr && row->is_string() &&
        std::string_view(row->as_string()).find("w/o MTP") != std::string_view::npos)
        return 0;
    return static_cast<std::uint32_t>(layers->to_number<std::int64_t>());
}

// The expert tensor parallelism a run used where its table gives none: Megatron-Bridge's MoE
// recipes set expert_tensor_parallel_size = 1 (NVIDIA-NeMo/Megatron-Bridge at 067f987df:
// src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py and gb200/qwen3_moe.py, every Qwen3 MoE
// recipe the performance recipes start from; recipes/deepseek/h100/deepseek_v3.py), where
// Megatron-LM's default is the tensor-parallel degree (--expert-tensor-parallel-size), the
// analytic model's default too.
inline std::uint32_t expert_tensor_parallel_of(const json::object& run) {
    return run.at("source").as_object().at("repository").as_string() ==
                   "NVIDIA-NeMo/Megatron-Bridge"
               ? 1
               : count(run, "tp", 1);
}

inline std::string shape_of(const json::object& model, const json::object& run) {
    const std::uint32_t tp = count(run, "tp", 1);
    json::object shape{{"hidden_size", model.at("hidden_size")},
                       {"num_attention_heads", model.at("num_attention_heads")},
                       {"num_kv_heads", model.at("num_kv_heads")},
                       {"ffn_hidden_size", model.at("ffn_hidden_size")},
                       {"vocab_size", model.at("vocab_size")},
                       {"num_layers", model.at("num_layers")},
                       {"gated_mlp", model.at("gated_mlp")},
                       {"seq_length", run.at("seq_length")},
                       {"micro_batch_size", run.at("micro_batch")},
                       {"tensor_parallel", tp},
                       {"sequence_parallel", tp > 1},
                       {"distributed_optimizer", true},
                       {"grad_bytes", 2},
                       {"flash_attention", true}};
    if (const std::string recipe = fp8_recipe_of(run.at("precision").as_string());
        !recipe.empty()) {
        shape["fp8_recipe"] = recipe;
        if (fp8_weights_of(run))
            shape["fp8_param_gather"] = true;
        // Where the device's FP8 products take either layout (Blackwell), no transposed copies,
        // as the device table says (the analytic model's default, true, is Hopper's).
        if (!ppb::partition::device_named(run.at("hardware").as_string()).fp8_transposes)
            shape["fp8_transposes"] = false;
    }
    if (const json::value* kv = model.if_contains("kv_channels"); kv != nullptr && !kv->is_null())
        shape["kv_channels"] = *kv;
    if (const std::uint32_t cp = count(run, "cp", 1); cp > 1)
        shape["context_parallel"] = cp;
    // The FSDP column: 0 data-parallel replicas, > 0 Megatron-FSDP (torchtitan: FSDP2) sharding
    // the weights, gradients and optimizer state over that many ranks (the archive's
    // nomenclature; the runs shard over all their data-parallel ranks).
    if (const json::value* f = run.if_contains("fsdp");
        f != nullptr && !f->is_null() && number(*f) > 0.0)
        shape["data_parallel_sharding"] = "optim_grads_params";
    // The optimizer a model's recipe trains with where it is not Adam: Muon (Kimi-K2's,
    // _apply_kimi_k2_optimizer in NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/recipes/kimi/
    // h100/kimi_k2.py at 067f987df) keeps fp32 master weights and one fp32 momentum, 8 bytes a
    // parameter, and fp32 main gradients, without the distributed optimizer.
    if (const json::value* o = model.if_contains("optimizer"); o != nullptr && *o == "muon") {
        shape["distributed_optimizer"] = false;
        shape["optimizer_bytes"] = 8;
        shape["grad_bytes"] = 4;
    }
    // The modules a recipe recomputes (its note names the recipe).
    if (const json::value* modules = run.if_contains("recompute_modules"); modules != nullptr)
        shape["recompute_modules"] = *modules;
    // Layer-level CPU offloading where the recipe sets it (its note names the recipe).
    if (const std::uint32_t offloaded = count(run, "cpu_offloading_num_layers", 0); offloaded > 0)
        shape["cpu_offloading_num_layers"] = offloaded;
    if (const json::value& mla = model.at("mla"); !mla.is_null()) {
        json::object m;
        for (const char* key :
             {"q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim"})
            m[key] = mla.at(key);
        shape["mla"] = std::move(m);
        shape.erase("num_kv_heads");  // one key/value head per query head, from the latent
    }
    if (const json::value& moe = model.at("moe"); !moe.is_null()) {
        const json::object& m = moe.as_object();
        json::object out{
            {"num_experts", m.at("num_experts")},
            {"top_k", m.at("top_k")},
            {"moe_ffn_hidden_size", m.at("moe_ffn_hidden_size")},
            {"expert_parallel", count(run, "ep", 1)},
            {"expert_tensor_parallel", count(run, "etp", expert_tensor_parallel_of(run))}};
        if (const std::uint32_t shared = count(m, "shared_experts", 0); shared > 0) {
            out["shared_experts"] = shared;
            out["shared_expert_ffn_hidden_size"] = m.at("shared_expert_ffn_hidden_size");
        }
        if (const std::uint32_t dense = count(m, "first_k_dense", 0); dense > 0)
            out["first_k_dense"] = dense;
        set_dispatcher(out, run.at("model").as_string(), run);
        shape["moe"] = std::move(out);
    }
    if (const std::uint32_t mtp = mtp_layers_of(model, run); mtp > 0)
        shape["mtp_num_layers"] = mtp;
    set_loss_kernels(shape, run.at("model").as_string(), run);
    return json::serialize(shape);
}

// Why the time model does not time `run` of `model` yet, or "".
inline std::string not_covered(const json::object& model, const json::object& run) {
    if (model.at("model").as_string() == "gpt_oss_120b")
        return "attention sinks and sliding windows are not in the time model";
    if (run.at("precision") == "nvfp4")
        return "NVFP4 matrix products are not in the time model";
    if (run.at("seq_length").is_null() || run.at("global_batch").is_null() ||
        run.at("micro_batch").is_null())
        return "the source does not state the sequence, global or micro-batch";
    return "";
}

}  // namespace ppb_test::published

#endif  // PPB_TEST_COMMON_PUBLISHED_RUNS_HPP
