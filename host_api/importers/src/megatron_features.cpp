// The analytic options of Megatron-LM's newer features (see megatron_features.hpp). Defaults and
// choices are those of NVIDIA/Megatron-LM at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553:
// megatron/training/arguments.py (_add_mla_args: --q-lora-rank None, --kv-lora-rank 32,
// --qk-head-dim 128, --qk-pos-emb-head-dim 64, --v-head-dim 128) and
// megatron/core/transformer/transformer_config.py (recompute_modules, default ["core_attn"]).
#include "megatron_features.hpp"

#include <ppb/importers/layout.hpp>
#include <ppb/importers/megatron_layout.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/json/array.hpp>

#include <algorithm>
#include <array>
#include <utility>

namespace ppb::importers::detail {

void refuse(std::string_view flag, std::string_view what) {
    throw FlagError(fmt::format(
        "--{}: {}; the analytic model does not cover it (measure with a dry run and 'ppb import "
        "megatron')",
        flag, what));
}

namespace {

namespace json = boost::json;

using ReadFlags = std::set<std::string, std::less<>>;

// Multi-latent attention (--multi-latent-attention) and the shape of its heads. Without it,
// --kv-channels gives the heads' width (Megatron-LM's validate_args sets it to hidden-size /
// num-attention-heads when absent; megatron/training/arguments.py at commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553): passed on when it differs (Qwen3's 128-channel
// heads on a narrower hidden size).
void add_attention(const MegatronFlagView& flags, json::object& options, ReadFlags& read) {
    read.insert("kv-channels");
    if (!flags.on("multi-latent-attention")) {
        // --qk-layernorm: norms of the query and key heads, each keeping its input.
        read.insert("qk-layernorm");
        if (flags.on("qk-layernorm"))
            options["qk_layernorm"] = true;
        if (const auto kv = flags.count("kv-channels", 1)) {
            const auto h = flags.count("hidden-size", 1);
            const auto a = flags.count("num-attention-heads", 1);
            if (h && a && *kv * static_cast<std::uint64_t>(*a) != *h)
                options["kv_channels"] = *kv;
        }
        return;
    }
    // MLA's heads have their own widths; --kv-channels is not used by it. Its rotary scaling
    // (YaRN's mscale) changes no tensor's size; --mla-down-proj-fusion fuses the input norm into
    // one down-projection, which keeps the same input and norm output.
    for (const std::string_view flag :
         {"multi-latent-attention", "q-lora-rank", "kv-lora-rank", "qk-head-dim",
          "qk-pos-emb-head-dim", "v-head-dim", "qk-layernorm", "mla-down-proj-fusion", "mscale",
          "mscale-all-dim"})
        read.insert(std::string(flag));
    if (flags.on("group-query-attention"))
        throw FlagError(
            "--group-query-attention with --multi-latent-attention: multi-latent attention has "
            "one key/value head per query head (Megatron-LM refuses the two together)");
    json::object mla;
    if (const auto q = flags.count("q-lora-rank", 1))
        mla["q_lora_rank"] = *q;
    mla["kv_lora_rank"] = flags.count("kv-lora-rank", 1).value_or(32);
    mla["qk_head_dim"] = flags.count("qk-head-dim", 1).value_or(128);
    mla["qk_pos_emb_head_dim"] = flags.count("qk-pos-emb-head-dim", 1).value_or(64);
    mla["v_head_dim"] = flags.count("v-head-dim", 1).value_or(128);
    // --qk-layernorm gives MLA its latent norms (fused into the up-projections); without it
    // Megatron-LM builds none (megatron/core/transformer/mla_qk_norm_config.py).
    mla["qk_layernorm"] = flags.on("qk-layernorm");
    options["mla"] = std::move(mla);
}

// Multi-token prediction (--mtp-num-layers): the layers, the stage that holds them and how they
// recompute. Without a layout Megatron-LM puts them on the last stage; a layout's 'm' says where
// (megatron/core/transformer/multi_token_prediction.py, mtp_on_this_rank).
void add_mtp(const MegatronFlagView& flags, json::object& options, ReadFlags& read) {
    read.insert("mtp-num-layers");
    read.insert("mtp-loss-scaling-factor");  // scales a loss: no tensor's size
    const std::uint32_t n = flags.count("mtp-num-layers", 0).value_or(0);
    if (n == 0)
        return;
    options["mtp_num_layers"] = n;
    if (const auto layout = flags.text("pipeline-model-parallel-layout")) {
        const std::uint32_t p = flags.count("pipeline-model-parallel-size", 1).value_or(1);
        const std::vector<LayoutStage> stages = parse_megatron_layout(*layout);
        const auto holder =
            std::ranges::find_if(stages, [](const LayoutStage& s) { return s.mtp > 0; });
        if (holder == stages.end() || holder->mtp != n)
            throw FlagError(fmt::format(
                "--pipeline-model-parallel-layout '{}' does not hold the {} MTP layer{} of "
                "--mtp-num-layers in one virtual stage ('m'; Megatron requires it)",
                *layout, n, n == 1 ? "" : "s"));
        const auto at = static_cast<std::uint32_t>(holder - stages.begin());
        if (const std::uint32_t offset = p - 1 - at % p; offset > 0)
            options["mtp_stage_offset"] = offset;
    }
    // The MTP module recomputes with the decoder's granularity: selective through its
    // transformer layer's modules, full (uniform only; Megatron-LM skips it for 'block') as one
    // checkpoint of the whole module.
    const std::optional<std::string> granularity = flags.text("recompute-granularity");
    if (granularity == "selective")
        options["mtp_recompute"] = "select";
    else if (granularity == "full" &&
             flags.text("recompute-method").value_or("uniform") == "uniform")
        options["mtp_recompute"] = "full";
}

// Context parallelism (--context-parallel-size, --cp-comm-type with one value per layer or one
// for all, --hierarchical-context-parallel-sizes for a2a+p2p). The reader has taken the
// data-parallel size as world / (TP x PP x CP).
void add_context_parallel(const MegatronFlagView& flags, json::object& options,
                          MegatronAnalyticOptions& result) {
    if (flags.on("hybrid-context-parallel"))
        refuse("hybrid-context-parallel",
               "context parallelism whose degree varies with each sequence's length");
    const std::uint32_t c = flags.count("context-parallel-size", 1).value_or(1);
    if (c == 1)
        return;
    options["context_parallel"] = c;
    if (!options.at("flash_attention").as_bool())
        throw FlagError(fmt::format(
            "--context-parallel-size {} with unfused attention (--attention-backend or "
            "--transformer-impl): Transformer Engine runs context-parallel attention in its fused "
            "kernels only",
            c));
    std::vector<std::string> types = flags.words("cp-comm-type");
    if (types.empty())
        types = {"p2p"};  // before 0.9 (no --cp-comm-type): p2p only
    for (const std::string& type : types) {
        if (type != "p2p" && type != "a2a" && type != "allgather" && type != "all_gather" &&
            type != "a2a+p2p")
            throw FlagError(
                fmt::format("--cp-comm-type {}: not one of p2p, a2a, allgather, a2a+p2p", type));
    }
    std::string type = types.front();
    if (std::ranges::any_of(types, [&](const std::string& t) { return t != type; })) {
        // One kind per layer: the model takes one for all, the one that keeps the most.
        type = "a2a+p2p";
        result.warnings.push_back(
            "--cp-comm-type gives the layers different kinds: every layer is counted as a2a+p2p, "
            "which keeps what p2p and a2a keep (an upper bound)");
    }
    if (std::ranges::find(types, "a2a+p2p") != types.end()) {
        // Megatron-LM: the a2a and p2p group sizes, whose product is the context-parallel size.
        const std::vector<std::uint32_t> sizes =
            flags.counts("hierarchical-context-parallel-sizes", 1);
        if (sizes.empty())
            throw FlagError(
                "--cp-comm-type a2a+p2p needs --hierarchical-context-parallel-sizes (Megatron-LM "
                "requires it)");
        std::uint64_t product = 1;
        for (const std::uint32_t n : sizes) {
            if (n > c)
                throw FlagError(fmt::format(
                    "--hierarchical-context-parallel-sizes {}: above the context-parallel size {}",
                    n, c));
            product *= n;
        }
        if (product != c)
            throw FlagError(
                fmt::format("--hierarchical-context-parallel-sizes multiply to {}, not the "
                            "--context-parallel-size {} (Megatron-LM requires them to)",
                            product, c));
    }
    options["cp_comm_type"] = type == "allgather" ? "all_gather" : type;
}

// The FP8 format: --fp8-format, or up to 23.06 the switches --fp8-e4m3 and --fp8-hybrid
// (megatron/arguments.py at 23.04, 2360d732a399dd818d40cbe32828f65b260dee11, asserts "not
// (args.fp8_e4m3 and args.fp8_hybrid)"; megatron/model/transformer.py trains them with
// DelayedScaling, the only recipe then).
std::optional<std::string> fp8_format(const MegatronFlagView& flags) {
    if (auto format = flags.text("fp8-format"))
        return format;
    const bool e4m3 = flags.on("fp8-e4m3");
    const bool hybrid = flags.on("fp8-hybrid");
    if (e4m3 && hybrid)
        throw FlagError(
            "--fp8-e4m3 and --fp8-hybrid together: give one (Megatron-LM refuses both)");
    if (e4m3)
        return "e4m3";
    if (hybrid)
        return "hybrid";
    return std::nullopt;
}

// FP8 and FP4 training (--fp8-format with --fp8-recipe, default delayed; --fp4-format with
// --fp4-recipe, default nvfp4) and weights kept quantized only (--fp8-param-gather,
// --fp4-param-gather). Blackwell's FP8 GEMMs (compute capability 10 and later) take every layout:
// no transposed copies. The delayed recipe's settings (amax history, margin, interval) change no
// tensor's size.
void add_fp8(const MegatronFlagView& flags, const MegatronRunContext& context,
             json::object& options, MegatronAnalyticOptions& result, ReadFlags& read) {
    for (const std::string_view flag : {"fp8-amax-history-len", "fp8-amax-compute-algo",
                                        "fp8-margin", "fp8-interval", "first-last-layers-bf16"})
        read.insert(std::string(flag));
    const std::optional<std::string> fp8 = fp8_format(flags);
    const std::optional<std::string> fp4 = flags.text("fp4-format");
    if (fp8 && fp4)
        throw FlagError(
            "--fp8-format and --fp4-format together: give one (Megatron-LM refuses both)");
    if (!fp8 && !fp4) {
        for (const std::string_view flag : {"fp8-param-gather", "fp4-param-gather"}) {
            if (flags.on(flag))
                throw FlagError(fmt::format(
                    "--{} without --{}-format: the weights are kept quantized only when the layers "
                    "train quantized",
                    flag, flag.substr(0, 3)));
        }
        return;
    }
    std::string recipe;
    if (fp8) {
        if (*fp8 != "e4m3" && *fp8 != "hybrid")
            throw FlagError(fmt::format("--fp8-format {}: not e4m3 or hybrid", *fp8));
        recipe = flags.text("fp8-recipe").value_or("delayed");
        if (recipe == "custom")
            refuse("fp8-recipe",
                   "a custom quantizer factory keeps tensors of formats the model "
                   "does not know");
        if (recipe != "delayed" && recipe != "tensorwise" && recipe != "blockwise" &&
            recipe != "mxfp8")
            throw FlagError(fmt::format(
                "--fp8-recipe {}: not delayed, tensorwise, blockwise, mxfp8 or custom", recipe));
    } else {
        if (*fp4 != "e2m1")
            throw FlagError(fmt::format("--fp4-format {}: not e2m1", *fp4));
        const std::string fp4_recipe = flags.text("fp4-recipe").value_or("nvfp4");
        if (fp4_recipe == "custom")
            refuse("fp4-recipe",
                   "a custom quantizer factory keeps tensors of formats the model "
                   "does not know");
        if (fp4_recipe != "nvfp4")
            throw FlagError(fmt::format("--fp4-recipe {}: not nvfp4 or custom", fp4_recipe));
        recipe = "nvfp4";
    }
    options["fp8_recipe"] = recipe;
    if (flags.on(fp8 ? "fp8-param-gather" : "fp4-param-gather"))
        options["fp8_param_gather"] = true;
    if (context.compute_capability >= 10)
        options["fp8_transposes"] = false;
    if (flags.on("first-last-layers-bf16")) {
        result.warnings.push_back(
            "--first-last-layers-bf16 changes memory but is not modelled: every layer is counted "
            "in the FP8 recipe (the 16-bit ones keep 16-bit inputs and no quantized weights)");
    }
}

// Bytes of one value of Megatron-LM's optimizer dtypes (--main-grads-dtype, --exp-avg-dtype, ...).
double dtype_bytes(std::string_view flag, const std::string& dtype) {
    if (dtype == "fp32")
        return 4.0;
    if (dtype == "bf16" || dtype == "fp16")
        return 2.0;
    if (dtype == "fp8")
        return 1.0;
    throw FlagError(fmt::format("--{} {}: not fp32, bf16, fp16 or fp8", flag, dtype));
}

// The precision-aware optimizer (--use-precision-aware-optimizer; Transformer Engine's FusedAdam):
// its master weights, Adam's moments and the main gradients in the dtypes given
// (megatron/core/optimizer/optimizer_config.py and distrib_optimizer.py at commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553). Where Transformer Engine keeps the master weights
// (no FP8, or delayed scaling, or fp16 master weights) of a bf16 model with fp32 master weights,
// it stores only their low 16 bits (store_param_remainders, on by default): 2 bytes.
void add_precision_aware_optimizer(const MegatronFlagView& flags, json::object& options,
                                   ReadFlags& read) {
    constexpr std::string_view dtype_flags[] = {"main-grads-dtype", "main-params-dtype",
                                                "exp-avg-dtype", "exp-avg-sq-dtype"};
    read.insert("use-precision-aware-optimizer");
    for (const std::string_view flag : dtype_flags)
        read.insert(std::string(flag));
    if (!flags.on("use-precision-aware-optimizer")) {
        for (const std::string_view flag : dtype_flags) {
            if (const auto dtype = flags.text(flag); dtype && *dtype != "fp32")
                throw FlagError(fmt::format(
                    "--{} {} needs --use-precision-aware-optimizer (Megatron-LM refuses other "
                    "dtypes than fp32 without it)",
                    flag, *dtype));
        }
        return;
    }
    const std::string main_params = flags.text("main-params-dtype").value_or("fp32");
    const double exp_avg =
        dtype_bytes("exp-avg-dtype", flags.text("exp-avg-dtype").value_or("fp32"));
    const double exp_avg_sq =
        dtype_bytes("exp-avg-sq-dtype", flags.text("exp-avg-sq-dtype").value_or("fp32"));
    const double main_grads =
        dtype_bytes("main-grads-dtype", flags.text("main-grads-dtype").value_or("fp32"));
    const bool bf16 = flags.on("bf16");
    const auto recipe = options.if_contains("fp8_recipe");
    const bool managed_by_te = main_params != "fp32" || recipe == nullptr ||
                               recipe->as_string() == "delayed" ||
                               flags.on("optimizer-cpu-offload");
    double master = dtype_bytes("main-params-dtype", main_params);
    if (managed_by_te && main_params == "fp32" && bf16)
        master = 2.0;  // the 16-bit remainders of the fp32 master weights
    options["optimizer_bytes"] = master + exp_avg + exp_avg_sq;
    options["grad_bytes"] = main_grads;
}

// Bytes of a Megatron-FSDP dtype flag's value (fp32, bf16, fp16; auto: the model's 16 bits, or
// fp32 for an fp32 model).
double fsdp_dtype_bytes(std::string_view flag, const std::string& dtype, bool sixteen_bit) {
    if (dtype == "auto")
        return sixteen_bit ? 2.0 : 4.0;
    if (dtype == "fp8")
        throw FlagError(fmt::format("--{} fp8: not fp32, bf16, fp16 or auto", flag));
    return dtype_bytes(flag, dtype);
}

// Sharded data parallelism: Megatron-FSDP (--use-megatron-fsdp, earlier --use-custom-fsdp) with
// --data-parallel-sharding-strategy (the release's default: no_shard up to 0.17,
// optim_grads_params from 0.18; without FSDP the flag has no
// effect), and torch FSDP2 (--use-torch-fsdp2: parameters resharded after forward unless
// --torch-fsdp2-no-reshard-after-forward). Megatron-FSDP keeps its main gradients in the model's
// dtype and its main weights in fp32 unless --megatron-fsdp-main-grads-dtype /
// --megatron-fsdp-main-params-dtype say otherwise (megatron/core/distributed/fsdp/src/
// megatron_fsdp/param_and_grad_buffer.py, _resolve_group_grad_dtype, commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553).
void add_sharding(const MegatronFlagView& flags, json::object& options,
                  MegatronAnalyticOptions& result, ReadFlags& read) {
    for (const std::string_view flag :
         {"use-megatron-fsdp", "use-custom-fsdp", "use-torch-fsdp2",
          "data-parallel-sharding-strategy", "torch-fsdp2-no-reshard-after-forward",
          "megatron-fsdp-main-params-dtype", "megatron-fsdp-main-grads-dtype",
          "megatron-fsdp-grad-comm-dtype", "fsdp-double-buffer",
          "megatron-fsdp-max-pool-double-buffer", "suggested-communication-unit-size",
          "use-nccl-ub", "fsdp-manual-registration", "init-model-with-meta-device",
          "create-all-gather-group", "keep-fp8-transpose-cache", "megatron-fsdp-version"})
        read.insert(std::string(flag));
    const bool megatron_fsdp = flags.on("use-megatron-fsdp") || flags.on("use-custom-fsdp");
    const bool torch_fsdp2 = flags.on("use-torch-fsdp2");
    if (megatron_fsdp && torch_fsdp2)
        throw FlagError("--use-megatron-fsdp and --use-torch-fsdp2 together: give one");
    if (!megatron_fsdp && !torch_fsdp2)
        return;
    std::string strategy = "optim_grads_params";
    if (megatron_fsdp) {
        strategy = flags.text("data-parallel-sharding-strategy").value_or(strategy);
        if (strategy != "no_shard" && strategy != "optim" && strategy != "optim_grads" &&
            strategy != "optim_grads_params")
            throw FlagError(fmt::format(
                "--data-parallel-sharding-strategy {}: not no_shard, optim, optim_grads or "
                "optim_grads_params",
                strategy));
        const bool sixteen_bit = flags.on("bf16") || flags.on("fp16");
        options["grad_bytes"] = fsdp_dtype_bytes(
            "megatron-fsdp-main-grads-dtype",
            flags.text("megatron-fsdp-main-grads-dtype").value_or("auto"), sixteen_bit);
        const double main_params = fsdp_dtype_bytes(
            "megatron-fsdp-main-params-dtype",
            flags.text("megatron-fsdp-main-params-dtype").value_or("fp32"), sixteen_bit);
        // A 16-bit model's main weights in their dtype instead of fp32, beside the optimizer's
        // moments (the precision-aware optimizer's dtypes are its own).
        if (sixteen_bit && !flags.on("use-precision-aware-optimizer"))
            options["optimizer_bytes"] =
                options.at("optimizer_bytes").to_number<double>() - 4.0 + main_params;
    } else if (flags.on("torch-fsdp2-no-reshard-after-forward")) {
        strategy = "optim_grads";  // the weights stay gathered from forward to backward
    }
    options["data_parallel_sharding"] = strategy;
    options["distributed_optimizer"] = false;
    read.insert("outer-dp-sharding-strategy");
    if (flags.given("outer-dp-sharding-strategy"))
        result.warnings.push_back(
            "--outer-dp-sharding-strategy (hybrid sharding) changes memory but is not modelled: "
            "the state is counted as sharded over all the data-parallel ranks (under-predicted)");
}

// Megatron-LM's recompute modules the analytic model counts (the others belong to other
// architectures: GatedDeltaNet, GatedDeltaProduct, hyper-connections).
constexpr std::array<std::string_view, 7> modelled_modules = {
    "core_attn", "mla_up_proj", "layernorm", "mlp", "moe", "moe_act", "shared_experts"};

// Every name Megatron-LM's selective recompute takes (transformer_config.py, allowed_modules, at
// commit d98e8a64ddf34856e74b24714e3bedb2f5a39553; older releases take a subset): another name
// fails its configuration's check ("Invalid choices for recompute_modules").
constexpr std::array<std::string_view, 11> megatron_modules = {
    "core_attn",      "moe_act",      "layernorm",   "mla_up_proj", "mlp", "moe",
    "shared_experts", "gdn_norm_out", "gdp_in_proj", "gdp_qkv",     "mhc"};

// --recompute-modules (with --recompute-granularity selective: what a 'select' layer recomputes)
// and the norms it may recompute: Transformer Engine's layer specs fuse them into the following
// linears, Megatron-LM's local spec (--transformer-impl local) has them as modules of their own.
void add_recompute_modules(const MegatronFlagView& flags, json::object& options,
                           MegatronAnalyticOptions& result, ReadFlags& read) {
    if (flags.text("transformer-impl") == "local")
        options["fused_norms"] = false;
    if (!flags.given("recompute-modules"))
        return;
    read.insert("recompute-modules");
    json::array modules;
    for (const std::string& module : flags.words("recompute-modules")) {
        if (module == "mla_up_proj" && !flags.on("multi-latent-attention"))
            throw FlagError(
                "--recompute-modules mla_up_proj recomputes multi-latent attention's "
                "up-projections: it needs --multi-latent-attention (Megatron-LM refuses it "
                "without)");
        const bool known = module == "moe_layer" ||
                           std::ranges::find(megatron_modules, module) != megatron_modules.end();
        if (!known && flags.text("recompute-granularity") == "selective")
            throw FlagError(fmt::format(
                "--recompute-modules '{}': not a module Megatron-LM recomputes (it takes {}; "
                "several are several arguments, or one YAML list such as '[layernorm mlp]')",
                module, fmt::join(megatron_modules, ", ")));
        if (module == "moe_layer") {
            // --moe-layer-recompute's old name (transformer_config.py appends "moe")
            modules.emplace_back("moe");
        } else if (std::ranges::find(modelled_modules, module) != modelled_modules.end()) {
            modules.emplace_back(module);
        } else {
            result.warnings.push_back(fmt::format(
                "--recompute-modules {} changes memory but is not modelled: the layers of kind "
                "'select' are counted as keeping what it recomputes",
                module));
        }
    }
    options["recompute_modules"] = std::move(modules);
}

// Fine-grained activation offloading (--fine-grained-activation-offloading with
// --offload-modules and --activation-offload-fraction) and the optimizer state in host memory
// (--optimizer-cpu-offload with --optimizer-offload-fraction, default 1).
void add_offloading(const MegatronFlagView& flags, json::object& options,
                    MegatronAnalyticOptions& result, ReadFlags& read) {
    // Its settings that keep what is offloaded: the modules are the same with CUDA graphs
    // (refused) delaying it, and the bytes across stages are named below when given.
    for (const std::string_view flag :
         {"fine-grained-activation-offloading", "offload-modules", "activation-offload-fraction",
          "delta-offload-bytes-across-pp-ranks", "delay-offload-until-cuda-graph",
          "optimizer-cpu-offload", "optimizer-offload-fraction"})
        read.insert(std::string(flag));
    if (flags.on("fine-grained-activation-offloading")) {
        constexpr std::array<std::string_view, 7> counted = {
            "attn_norm", "qkv_linear", "core_attn", "attn_proj",
            "mlp_norm",  "expert_fc1", "moe_act"};
        json::array modules;
        for (const std::string& module : flags.words("offload-modules")) {
            if (std::ranges::find(counted, module) != counted.end())
                modules.emplace_back(module);
            else
                result.warnings.push_back(fmt::format(
                    "--offload-modules {} changes memory but is not modelled: what it offloads "
                    "is counted on the device (over-predicted)",
                    module));
        }
        const bool projection =
            std::ranges::find(modules, json::value("attn_proj")) != modules.end();
        const bool core = std::ranges::find(modules, json::value("core_attn")) != modules.end();
        if (projection && !core)
            throw FlagError(
                "--offload-modules attn_proj without core_attn: Megatron-LM requires the two "
                "together");
        if (!modules.empty())
            options["offload_modules"] = std::move(modules);
        if (const auto fraction = flags.number("activation-offload-fraction")) {
            if (*fraction > 1.0)
                throw FlagError(
                    fmt::format("--activation-offload-fraction {}: above 1", *fraction));
            options["activation_offload_fraction"] = *fraction;
        }
        if (flags.count("delta-offload-bytes-across-pp-ranks", 0).value_or(0) > 0)
            result.warnings.push_back(
                "--delta-offload-bytes-across-pp-ranks changes memory but is not modelled: later "
                "stages keep that many more bytes a rank on the device (under-predicted there)");
    }
    // Layer-level CPU offloading (--cpu-offloading-num-layers N > 0 turns --cpu-offloading on:
    // megatron/training/arguments.py at d98e8a64dd), with Megatron-LM's refusals in its words
    // (transformer_config.py, same commit); the pinned host buffers it may keep are host memory.
    read.insert("cpu-offloading-num-layers");
    read.insert("cpu-offloading-retain-pinned-cpu-buffers");
    if (const auto layers = flags.count("cpu-offloading-num-layers", 0); layers && *layers > 0) {
        if (flags.count("pipeline-model-parallel-size", 1).value_or(1) > 1)
            throw FlagError(
                "--cpu-offloading-num-layers with --pipeline-model-parallel-size above 1: "
                "Megatron-LM has no CPU offloading of layers with pipeline parallelism");
        if (flags.text("recompute-granularity"))
            throw FlagError(
                "--cpu-offloading-num-layers with --recompute-granularity: Megatron-LM's CPU "
                "offloading does not work with activation recomputation");
        if (flags.on("fine-grained-activation-offloading"))
            throw FlagError(
                "--cpu-offloading-num-layers with --fine-grained-activation-offloading: "
                "Megatron-LM refuses the two together");
        if (const auto model = flags.count("num-layers", 1); model && *layers >= *model)
            throw FlagError(fmt::format(
                "--cpu-offloading-num-layers {}: Megatron-LM offloads fewer layers than the "
                "model's {} (--num-layers)",
                *layers, *model));
        options["cpu_offloading_num_layers"] = *layers;
    }
    if (flags.on("optimizer-cpu-offload")) {
        const double fraction = flags.number("optimizer-offload-fraction").value_or(1.0);
        if (fraction > 1.0)
            throw FlagError(fmt::format("--optimizer-offload-fraction {}: above 1", fraction));
        options["optimizer_offload_fraction"] = fraction;
    }
}

// CUDA graphs. Transformer Engine's (--cuda-graph-impl transformer_engine, or the deprecated
// --external-cuda-graph) are captured by TE's make_graphed_callables for each (layer or scope,
// micro-batch) in the schedule's order, once --cuda-graph-warmup-steps eager iterations have run
// (default 3): the static input buffers are reused once a micro-batch's backward has run, the
// output buffers too (TE 2.7 on), and what the graphs save for backward lives in one memory pool
// all of them share (megatron/core/transformer/cuda_graphs.py, TECudaGraphHelper, and
// megatron/training/training.py, where create_cudagraphs runs, at NVIDIA/Megatron-LM commit
// 69ba8096f0daf65490b5c5a26e93b1d11367fd68). After eager iterations the peak allocated memory is
// theirs, the eager run's, which the model counts (Megatron-LM's CI runs with three warm-up
// steps peak within 0.7 % of it). With none, the peak is the capture's or the replay's, where
// the pool is not allocated memory: the model counts that for the attention's graphs
// (cuda_graph_scope); other scopes are counted as the eager run's memory. Megatron's own graphs
// (--cuda-graph-impl local, or the deprecated --enable-cuda-graph: CudaGraphManager, one graph
// per layer and micro-batch with its own buffers) have no measured run: refused by name.
void add_cuda_graphs(const MegatronFlagView& flags, json::object& options,
                     MegatronAnalyticOptions& result, ReadFlags& read) {
    for (const std::string_view flag :
         {"cuda-graph-impl", "enable-cuda-graph", "external-cuda-graph", "cuda-graph-scope",
          "cuda-graph-modules", "cuda-graph-warmup-steps"})
        read.insert(std::string(flag));
    const auto impl = flags.text("cuda-graph-impl");
    if ((impl && *impl == "local") || flags.on("enable-cuda-graph")) {
        refuse(impl && *impl == "local" ? "cuda-graph-impl" : "enable-cuda-graph",
               "Megatron-LM's own CUDA graphs (CudaGraphManager) keep static buffers per layer "
               "and micro-batch that no measured run has shown the size of; the model does not "
               "count them");
    }
    if (impl && *impl != "none" && *impl != "transformer_engine") {
        refuse("cuda-graph-impl",
               fmt::format("'{}' is not a CUDA graph implementation ppb knows (none, local, "
                           "transformer_engine)",
                           *impl));
    }
    if (!(impl && *impl == "transformer_engine") && !flags.on("external-cuda-graph"))
        return;
    const std::string how = impl ? "--cuda-graph-impl transformer_engine" : "--external-cuda-graph";
    // The scope's list (--cuda-graph-modules is its name in older Megatron-LM); none, or "full":
    // the whole layer.
    std::vector<std::string> scope;
    for (const std::string_view flag : {"cuda-graph-scope", "cuda-graph-modules"}) {
        if (flags.given(flag)) {
            for (const std::string& part : flags.words(flag))
                scope.push_back(part);
        }
    }
    const bool attn = std::ranges::find(scope, "attn") != scope.end();
    const double warmup = flags.number("cuda-graph-warmup-steps").value_or(3.0);
    if (warmup > 0.0 || !attn) {
        result.warnings.push_back(fmt::format(
            "{}: Transformer Engine's CUDA graphs are counted as the eager run's memory ({}); "
            "Megatron-LM's CI runs with them peak within 0.7 % of that",
            how,
            warmup > 0.0 ? "the peak of the warm-up steps run before the capture"
                         : "the graphs' saved tensors share one pool; only the attention's "
                           "scope is counted as the allocator reports it"));
        return;
    }
    options["cuda_graph_scope"] = json::array{"attn"};
    std::string others;
    for (const std::string& part : scope) {
        if (part != "attn")
            others += (others.empty() ? "" : ", ") + part;
    }
    result.warnings.push_back(fmt::format(
        "{} --cuda-graph-scope attn with --cuda-graph-warmup-steps 0: the peak predicted is "
        "Megatron-LM's max allocated memory, the capture's or the replay's, which leaves out "
        "the graphs' memory pool (the attention's saved tensors of every micro-batch in flight, "
        "reserved beyond the allocated memory: plan with a margin for it, or against reserved "
        "memory){}",
        how,
        others.empty()
            ? ""
            : fmt::format("; the scope's {} is counted as the eager run's memory", others)));
}

}  // namespace

std::set<std::string, std::less<>> add_megatron_features(const MegatronFlagView& flags,
                                                         const MegatronRunContext& context,
                                                         json::object& options,
                                                         MegatronAnalyticOptions& result) {
    ReadFlags read;
    add_attention(flags, options, read);
    add_mtp(flags, options, read);
    add_context_parallel(flags, options, result);
    add_fp8(flags, context, options, result, read);
    add_precision_aware_optimizer(flags, options, read);
    add_sharding(flags, options, result, read);
    add_recompute_modules(flags, options, result, read);
    add_offloading(flags, options, result, read);
    add_cuda_graphs(flags, options, result, read);
    return read;
}

}  // namespace ppb::importers::detail
