// The analytic plugin's options from Megatron-LM's arguments (see megatron_arguments.hpp).
// Megatron-LM's defaults are those of megatron/training/arguments.py (NVIDIA/Megatron-LM, main
// as of commit 3bf9b874c32ebbbaa6f895be988e04a19fdce7ee): ffn_hidden_size 4h, or with --swiglu
// int(4h * 2/3 / 64) * 64; num_query_groups 1 once --group-query-attention is given;
// position_embedding_type learned_absolute; attention and hidden dropout 0.1; linear biases on;
// make_vocab_size_divisible_by 128; transformer_impl transformer_engine with the attention
// backend chosen by Transformer Engine (a fused kernel).
#include "megatron_features.hpp"

#include <ppb/importers/layout.hpp>
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_arguments.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <string_view>

namespace ppb::importers {
namespace {

namespace json = boost::json;

// The flags as given: name (without "--") -> value ("" for a switch). A repeated flag keeps its
// last value, as argparse does.
using Flags = std::map<std::string, std::string, std::less<>>;

Flags read_flags(std::span<const std::string> arguments) {
    Flags flags;
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        const std::string_view token = arguments[i];
        if (!token.starts_with("--") || token.size() == 2)
            throw FlagError(fmt::format(
                "Megatron argument {} '{}': expected a flag such as --num-layers (a value must "
                "follow its flag)",
                i + 1, token));
        const std::string_view body = token.substr(2);
        const std::size_t equals = body.find('=');
        if (equals != std::string_view::npos) {
            flags[std::string(body.substr(0, equals))] = std::string(body.substr(equals + 1));
            continue;
        }
        std::string value;
        if (i + 1 < arguments.size() && !arguments[i + 1].starts_with("--")) {
            value = arguments[i + 1];
            ++i;
        }
        flags[std::string(body)] = value;
    }
    return flags;
}

// A switch: given alone, or with a truthy value ("true", "1") as YAML configs write it.
bool is_on(const Flags& flags, std::string_view name) {
    const auto it = flags.find(name);
    if (it == flags.end())
        return false;
    const std::string& v = it->second;
    if (v.empty() || v == "true" || v == "True" || v == "1")
        return true;
    if (v == "false" || v == "False" || v == "0")
        return false;
    throw FlagError(fmt::format("--{} is a switch; '{}' is not true or false", name, v));
}

std::optional<std::string> text(const Flags& flags, std::string_view name) {
    const auto it = flags.find(name);
    if (it == flags.end())
        return std::nullopt;
    if (it->second.empty())
        throw FlagError(fmt::format("--{} needs a value", name));
    return it->second;
}

// A positive count, at most 2^31 - 1 (the analytic plugin's range).
std::optional<std::uint32_t> count(const Flags& flags, std::string_view name,
                                   std::uint32_t min = 1) {
    const std::optional<std::string> v = text(flags, name);
    if (!v)
        return std::nullopt;
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc{} || end != v->data() + v->size() || n < min || n > 2147483647U)
        throw FlagError(
            fmt::format("--{} '{}': expected an integer from {} to 2147483647", name, *v, min));
    return static_cast<std::uint32_t>(n);
}

// The values of a flag Megatron reads with nargs='+', given as one value: "a b", or as YAML
// configs write the list, "[a b]" (commas and quotes allowed).
std::vector<std::string> values(const Flags& flags, std::string_view name) {
    std::vector<std::string> out;
    const auto it = flags.find(name);
    if (it == flags.end())
        return out;
    std::string word;
    for (const char c : it->second + " ") {
        if (c == ' ' || c == '\t' || c == ',' || c == '[' || c == ']' || c == '"' || c == '\'') {
            if (!word.empty())
                out.push_back(std::move(word));
            word.clear();
        } else {
            word += c;
        }
    }
    if (out.empty())
        throw FlagError(fmt::format("--{} needs a value", name));
    return out;
}

std::optional<double> number(const Flags& flags, std::string_view name) {
    const std::optional<std::string> v = text(flags, name);
    if (!v)
        return std::nullopt;
    double x = 0.0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec != std::errc{} || end != v->data() + v->size() || !std::isfinite(x) || x < 0.0)
        throw FlagError(fmt::format("--{} '{}': expected a number of at least 0", name, *v));
    return x;
}

std::uint32_t required(const Flags& flags, std::string_view name, std::string_view meaning) {
    const std::optional<std::uint32_t> n = count(flags, name);
    if (!n)
        throw FlagError(fmt::format("missing --{} ({})", name, meaning));
    return *n;
}

// Flags that change memory but are not modelled: named in a warning.
constexpr std::pair<std::string_view, std::string_view> unmodelled[] = {
    {"cpu-offloading", "activations and weights offloaded to the host"},
    {"tp-comm-overlap", "Transformer Engine's userbuffers for overlapped communication"},
    {"num-distributed-optimizer-instances", "several distributed-optimizer replicas"},
    {"use-legacy-models", "the legacy (non-core) model: the formulas follow Megatron-core"},
    {"no-bias-gelu-fusion", "unfused bias-GeLU keeps its intermediate"},
    {"no-bias-swiglu-fusion", "unfused bias-SwiGLU keeps silu(gate)"},
    {"qk-layernorm", "the query and key layer norms keep their inputs for backward"},
};

// Flags known not to change the memory of the tensors, or read by the mapping below, or the
// layout's (read by 'ppb import megatron'). Prefixes end in '-'.
constexpr std::string_view neutral[] = {
    // read below
    "num-layers", "hidden-size", "ffn-hidden-size", "num-attention-heads", "group-query-attention",
    "num-query-groups", "kv-channels", "seq-length", "max-position-embeddings", "micro-batch-size",
    "global-batch-size", "tensor-model-parallel-size", "pipeline-model-parallel-size",
    "context-parallel-size", "sequence-parallel", "use-distributed-optimizer", "bf16", "fp16",
    "swiglu", "untie-embeddings-and-output-weights", "position-embedding-type", "attention-backend",
    "use-flash-attn", "transformer-impl", "attention-dropout", "hidden-dropout",
    "disable-bias-linear", "add-bias-linear", "num-experts", "moe-router-topk",
    "moe-ffn-hidden-size", "moe-shared-expert-intermediate-size", "moe-layer-freq",
    "expert-model-parallel-size", "expert-tensor-parallel-size", "moe-expert-capacity-factor",
    "cross-entropy-loss-fusion", "cross-entropy-fusion-impl", "vocab-size",
    "make-vocab-size-divisible-by", "tokenizer-type", "accumulate-allreduce-grads-in-fp32",
    "grad-reduce-in-bf16", "optimizer", "use-rotary-position-embeddings", "mtp-num-layers",
    "multi-latent-attention", "data-parallel-sharding-strategy",
    // the layout ('ppb import megatron')
    "recompute-", "num-layers-per-virtual-pipeline-stage", "num-virtual-stages-per-pipeline-rank",
    "virtual-pipeline-model-parallel-size", "decoder-first-pipeline-num-layers",
    "decoder-last-pipeline-num-layers", "num-layers-in-first-pipeline-stage",
    "num-layers-in-last-pipeline-stage", "pipeline-model-parallel-layout", "account-for-",
    "first-k-dense-replace",
    // no effect on the tensors' memory
    "log-", "tensorboard-", "wandb-", "save", "load", "data-", "split", "vocab-file", "merge-file",
    "tokenizer-model", "tokenizer-library", "mock-data", "lr", "lr-", "min-lr", "save-", "load-",
    "use-checkpoint-", "decoupled-", "moe-token-dispatcher-type", "no-ckpt-", "weight-decay",
    "clip-grad", "adam-", "init-method-std", "seed", "train-", "eval-", "exit-", "timing-log-level",
    "distributed-", "ckpt-", "dist-ckpt-", "async-save", "use-persistent-ckpt-worker",
    "deterministic-mode", "no-gradient-accumulation-fusion", "use-mcore-models", "normalization",
    "norm-epsilon", "rotary-", "no-rope-fusion", "manual-gc", "no-check-for-nan-in-loss-and-grad",
    "overlap-grad-reduce", "overlap-param-gather", "moe-router-", "moe-aux-loss-coeff",
    "moe-z-loss-coeff", "moe-permute-fusion", "moe-grouped-gemm", "apply-query-key-layer-scaling",
    "no-masked-softmax-fusion", "attention-softmax-in-fp32", "no-persist-layer-norm", "num-workers",
    "no-mmap-bin-files", "rampup-batch-size", "use-checkpoint-args", "no-load-", "finetune",
    "logging-level", "check-weight-hash-across-dp-replicas-interval", "q-lora-rank", "kv-lora-rank",
    "qk-head-dim", "qk-pos-emb-head-dim", "v-head-dim", "mscale", "mtp-loss-scaling-factor",
    "use-cpu-initialization", "override-opt_param-scheduler"};

bool is_neutral(std::string_view flag) {
    return std::ranges::any_of(neutral, [flag](std::string_view known) {
        return known.ends_with('-') ? flag.starts_with(known) : flag == known;
    });
}

// Megatron-LM's _vocab_size_with_padding (megatron/training/tokenizer/tokenizer.py).
std::uint64_t padded_vocabulary(std::uint64_t size, std::uint32_t divisible_by, std::uint32_t t) {
    const std::uint64_t multiple = static_cast<std::uint64_t>(divisible_by) * t;
    return (size + multiple - 1) / multiple * multiple;
}

}  // namespace

MegatronAnalyticOptions analytic_options_from_megatron(std::span<const std::string> arguments,
                                                       const MegatronRunContext& context) {
    const Flags flags = read_flags(arguments);
    MegatronAnalyticOptions out;

    const std::uint32_t L = required(flags, "num-layers", "transformer layers");
    const std::uint32_t h = required(flags, "hidden-size", "the hidden size");
    const std::uint32_t a = required(flags, "num-attention-heads", "attention heads");
    const std::uint32_t s = required(flags, "seq-length", "the sequence length");
    const std::uint32_t b = count(flags, "micro-batch-size").value_or(1);
    const std::uint32_t t = count(flags, "tensor-model-parallel-size").value_or(1);
    const std::uint32_t p = count(flags, "pipeline-model-parallel-size").value_or(1);
    const bool swiglu = is_on(flags, "swiglu");
    const std::uint32_t F =
        count(flags, "ffn-hidden-size")
            .value_or(swiglu ? static_cast<std::uint32_t>(4.0 * h * 2.0 / 3.0 / 64.0) * 64U
                             : 4U * h);
    std::uint32_t kv = a;
    if (is_on(flags, "group-query-attention"))
        kv = count(flags, "num-query-groups").value_or(1);
    else if (flags.contains("num-query-groups"))
        out.warnings.push_back(
            "--num-query-groups without --group-query-attention: Megatron-LM ignores it, so "
            "does ppb");

    if (is_on(flags, "bf16") && is_on(flags, "fp16"))
        throw FlagError("--bf16 and --fp16 together: give one");
    const bool fp16 = is_on(flags, "fp16");
    const bool bf16 = is_on(flags, "bf16");

    // The data-parallel size: world / (t * p * cp); the context-parallel ranks share their
    // micro-batches.
    const std::uint32_t cp = count(flags, "context-parallel-size").value_or(1);
    std::uint32_t d = 1;
    if (context.world_size) {
        const std::uint64_t tp = static_cast<std::uint64_t>(t) * p * cp;
        if (*context.world_size % tp != 0)
            throw FlagError(
                cp == 1 ? fmt::format("--world-size {} is not a multiple of tensor x pipeline "
                                      "parallel = {} x {}",
                                      *context.world_size, t, p)
                        : fmt::format("--world-size {} is not a multiple of tensor x pipeline x "
                                      "context parallel = {} x {} x {}",
                                      *context.world_size, t, p, cp));
        d = static_cast<std::uint32_t>(*context.world_size / tp);
    } else if (is_on(flags, "use-distributed-optimizer")) {
        out.warnings.push_back(
            "--use-distributed-optimizer without the world size: the data-parallel size is taken "
            "as 1 (give --world-size)");
    }
    out.pipeline_size = p;
    out.data_parallel = d;
    if (const auto gbs = count(flags, "global-batch-size")) {
        const std::uint64_t per_step = static_cast<std::uint64_t>(b) * d;
        if (*gbs % per_step != 0)
            throw FlagError(
                fmt::format("--global-batch-size {} is not a multiple of micro-batch "
                            "size x data-parallel size = {} x {}",
                            *gbs, b, d));
        out.micro_batches = static_cast<std::uint32_t>(*gbs / per_step);
    }

    // The vocabulary, padded as Megatron pads it.
    std::uint64_t vocabulary = 0;
    const std::optional<std::string> tokenizer = text(flags, "tokenizer-type");
    if (context.tokenizer_size) {
        vocabulary = *context.tokenizer_size;
    } else if (const auto v = count(flags, "vocab-size")) {
        // NullTokenizer(vocab_size) counts its end-of-document token on top.
        vocabulary = *v + (tokenizer == "NullTokenizer" ? 1U : 0U);
    } else if (tokenizer.value_or("GPT2BPETokenizer") == "GPT2BPETokenizer" &&
               flags.contains("vocab-file")) {
        vocabulary = 50257;  // GPT-2's BPE vocabulary (vocab.json)
    } else {
        throw FlagError(
            "the vocabulary size is unknown: give --vocab-size, or the tokenizer's size with "
            "ppb's --tokenizer-size");
    }
    const std::uint32_t divisible = count(flags, "make-vocab-size-divisible-by").value_or(128);
    const std::uint64_t V = padded_vocabulary(vocabulary, divisible, t);
    if (V > 2147483647U)
        throw FlagError(fmt::format("the padded vocabulary {} is too large", V));

    // Attention: a fused kernel unless the run says unfused ('local' without --use-flash-attn is
    // Megatron's own unfused DotProductAttention).
    const std::string impl = text(flags, "transformer-impl").value_or("transformer_engine");
    const std::string backend = text(flags, "attention-backend").value_or("auto");
    bool flash = impl != "local";
    if (backend == "unfused" || backend == "local")
        flash = false;
    else if (backend == "flash" || backend == "fused")
        flash = true;
    if (is_on(flags, "use-flash-attn"))
        flash = true;
    // The softmax in fp32 outside the fused kernel (FusedScaleMaskSoftmax's torch fallback, taken
    // with --no-masked-softmax-fusion; Transformer Engine's unfused attention has its own kernel
    // switch): --attention-softmax-in-fp32, which --apply-query-key-layer-scaling forces
    // (Megatron's attention: "if self.apply_query_key_layer_scaling: self.attention_softmax_in_fp32
    // = True").
    const bool softmax_in_fp32 = !flash && impl == "local" && (fp16 || bf16) &&
                                 is_on(flags, "no-masked-softmax-fusion") &&
                                 (is_on(flags, "attention-softmax-in-fp32") ||
                                  is_on(flags, "apply-query-key-layer-scaling"));

    const double attention_dropout = number(flags, "attention-dropout").value_or(0.1);
    const double hidden_dropout = number(flags, "hidden-dropout").value_or(0.1);
    if ((attention_dropout > 0.0) != (hidden_dropout > 0.0))
        out.warnings.push_back(fmt::format(
            "--attention-dropout {} and --hidden-dropout {}: the model has one dropout switch; "
            "taken as on",
            attention_dropout, hidden_dropout));
    const bool dropout = attention_dropout > 0.0 || hidden_dropout > 0.0;

    json::object o;
    o["hidden_size"] = h;
    o["num_attention_heads"] = a;
    o["ffn_hidden_size"] = F;
    o["seq_length"] = s;
    o["micro_batch_size"] = b;
    o["vocab_size"] = V;
    o["num_layers"] = L;
    o["tensor_parallel"] = t;
    if (kv != a)
        o["num_kv_heads"] = kv;
    o["sequence_parallel"] = is_on(flags, "sequence-parallel") && t > 1;
    o["data_parallel"] = d;
    o["distributed_optimizer"] = is_on(flags, "use-distributed-optimizer");
    // Bytes per parameter. bf16: bf16 weights, fp32 main gradients (Megatron forces
    // accumulate_allreduce_grads_in_fp32 for bf16), fp32 master weights and Adam's m and v.
    // fp16: Float16Optimizer's fp32 gradient copy is freed before forward (zero_grad sets it to
    // None), so forward and backward hold 2 + 2 + 12 bytes. fp32: 4 + 4 + Adam's 8.
    double param_bytes = 2.0;
    double grad_bytes = 4.0;
    double optimizer_bytes = 12.0;
    if (fp16) {
        grad_bytes = is_on(flags, "accumulate-allreduce-grads-in-fp32") ? 4.0 : 2.0;
    } else if (!bf16) {
        param_bytes = 4.0;
        optimizer_bytes = 8.0;
    }
    if (bf16 && is_on(flags, "grad-reduce-in-bf16"))
        grad_bytes = 2.0;
    const std::string optimizer = text(flags, "optimizer").value_or("adam");
    if (optimizer == "sgd")
        optimizer_bytes -= 4.0;  // momentum only
    else if (optimizer != "adam" && optimizer != "adamw")
        out.warnings.push_back(
            fmt::format("--optimizer {}: its state is not modelled; counted as Adam's", optimizer));
    o["param_bytes"] = param_bytes;
    o["grad_bytes"] = grad_bytes;
    o["optimizer_bytes"] = optimizer_bytes;
    o["gated_mlp"] = swiglu;
    o["flash_attention"] = flash;
    if (softmax_in_fp32)
        o["softmax_in_fp32"] = true;
    // The fused cross entropy (--cross-entropy-loss-fusion, the native implementation): its
    // torch.compile'd steps materialize a fresh fp32 logits-sized buffer at the loss instead of
    // working in place, as the note in megatron/core/fusions/fused_cross_entropy.py (commit
    // 0cb4a9c81767ff391c3b18ce171c4084ebbc4789, which rewrote it in place) says; Megatron-LM's CI
    // measured it: gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion peaks 4 s*b*V/t bytes above
    // the same run unfused. Counted on top of the unfused transient (later Megatron versions
    // then over-predict by that much).
    if (is_on(flags, "cross-entropy-loss-fusion") &&
        text(flags, "cross-entropy-fusion-impl").value_or("native") == "native")
        o["logits_transient_bytes"] = 2.0 + 4.0;
    o["dropout"] = dropout;
    o["untie_embeddings"] = is_on(flags, "untie-embeddings-and-output-weights");
    o["linear_biases"] = !is_on(flags, "disable-bias-linear");
    std::string positions = text(flags, "position-embedding-type").value_or("learned_absolute");
    if (is_on(flags, "use-rotary-position-embeddings"))
        positions = "rope";
    if (positions == "learned_absolute") {
        o["position_embeddings"] = count(flags, "max-position-embeddings").value_or(s);
    }

    if (const auto E = count(flags, "num-experts")) {
        // Transformer Engine's grouped GEMM runs on its own cuBLAS streams, each with a workspace
        // (transformer_engine/pytorch/module/base.py, get_multi_stream_cublas_workspace: 4
        // streams of get_cublas_workspace_size_bytes(), 32 MiB on Hopper and later, 4 MiB
        // before), allocated once for the process on top of the usual runtime.
        if (impl != "local" && is_on(flags, "moe-grouped-gemm")) {
            constexpr double runtime_mb = 100.0;  // the analytic model's default
            const double workspace_mb = context.compute_capability >= 9 ? 32.0 : 4.0;
            o["runtime_mb"] = runtime_mb + 4.0 * workspace_mb;
        }
        json::object moe;
        moe["num_experts"] = *E;
        moe["top_k"] = count(flags, "moe-router-topk").value_or(2);
        moe["moe_ffn_hidden_size"] = count(flags, "moe-ffn-hidden-size").value_or(F);
        if (const auto shared = count(flags, "moe-shared-expert-intermediate-size")) {
            moe["shared_experts"] = 1;
            moe["shared_expert_ffn_hidden_size"] = *shared;
        }
        moe["expert_parallel"] = count(flags, "expert-model-parallel-size").value_or(1);
        moe["expert_tensor_parallel"] = count(flags, "expert-tensor-parallel-size").value_or(t);
        if (const auto cf = number(flags, "moe-expert-capacity-factor"))
            moe["capacity_factor"] = *cf;
        if (const auto freq = text(flags, "moe-layer-freq")) {
            // An integer N, or a 0/1 list expression, read as 'ppb import megatron' reads it.
            json::array pattern;
            std::uint32_t leading_dense = 0;
            bool leading = true;
            for (const bool is_moe : moe_layer_pattern(*freq, L)) {
                pattern.emplace_back(is_moe ? 1 : 0);
                leading = leading && !is_moe;
                leading_dense += leading ? 1U : 0U;
            }
            moe["layer_freq"] = std::move(pattern);
            if (leading_dense > 0)
                moe["first_k_dense"] = leading_dense;
        }
        o["moe"] = std::move(moe);
    }

    // DeepEP's (flex) dispatcher pre-allocates its communication buffers; the all-to-all and
    // all-gather dispatchers' permutation buffers are inside moe.routing_imbalance.
    if (text(flags, "moe-token-dispatcher-type") == "flex")
        out.warnings.push_back(
            "--moe-token-dispatcher-type flex changes memory but is not modelled: DeepEP's "
            "pre-allocated buffers (add them as constant_mb)");
    // The newer features (multi-latent attention, ...): megatron_features.cpp.
    const detail::MegatronFlagView view{
        [&](std::string_view name) { return flags.contains(name); },
        [&](std::string_view name) { return is_on(flags, name); },
        [&](std::string_view name) { return text(flags, name); },
        [&](std::string_view name) { return values(flags, name); },
        [&](std::string_view name, std::uint32_t min) { return count(flags, name, min); },
        [&](std::string_view name) { return number(flags, name); },
    };
    const auto read_by_features = detail::add_megatron_features(view, context, o, out);

    for (const auto& [flag, value] : flags) {
        if (read_by_features.contains(flag))
            continue;
        // Without biases there is nothing for the bias fusions to keep.
        if (flag.starts_with("no-bias-") && is_on(flags, "disable-bias-linear"))
            continue;
        const auto it = std::ranges::find(unmodelled, std::string_view(flag),
                                          &std::pair<std::string_view, std::string_view>::first);
        if (it != std::end(unmodelled))
            out.warnings.push_back(
                fmt::format("--{} changes memory but is not modelled: {}", flag, it->second));
        else if (!is_neutral(flag))
            out.warnings.push_back(fmt::format(
                "--{} is not known to ppb: if it changes memory, the options do not include it",
                flag));
    }
    out.options_json = json::serialize(o);
    return out;
}

}  // namespace ppb::importers
