// The analytic plugin's options from Megatron-LM's arguments (see megatron_arguments.hpp). The
// arguments are read by megatron_argparse.hpp as the run's release reads them; every default
// below is that release's (the flag table's argparse defaults, megatron_release_defaults.hpp for
// what Megatron's code does): ffn_hidden_size 4h, or with --swiglu int(4h * 2/3 / 64) * 64;
// num_query_groups 1 once --group-query-attention is given; position_embedding_type
// learned_absolute; attention and hidden dropout 0.1; linear biases on;
// make_vocab_size_divisible_by 128; the transformer implementation, the GPT model class and the
// attention kernel of the release. The newer features (multi-latent attention, multi-token
// prediction, context parallelism, FP8 and FP4, sharded data parallelism, recompute modules,
// offloading, CUDA graphs) are mapped by megatron_features.cpp through the same reading.
#include "launcher_words.hpp"
#include "megatron_features.hpp"
#include "megatron_flag_roles.hpp"

#include <ppb/importers/layout.hpp>
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_argparse.hpp>
#include <ppb/importers/megatron_arguments.hpp>
#include <ppb/importers/megatron_release_defaults.hpp>
#include <ppb/json_output.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <string_view>
#include <utility>

namespace ppb::importers {
namespace {

namespace json = boost::json;
namespace mg = megatron;

// The run's arguments as the mapping reads them, by flag name without "--". Every attribute the
// mapping asks about is recorded: the flags setting it are the ones it models (or refuses), and
// only the others need the roles of megatron_flag_roles.hpp.
class Flags {
  public:
    explicit Flags(const mg::ParsedArguments& parsed) : parsed_(parsed) {}

    [[nodiscard]] mg::ReleaseIndex release() const { return parsed_.release(); }

    // The attribute's value (given or default); nullopt when the release does not know the flag.
    [[nodiscard]] std::optional<json::value> value(std::string_view name) const {
        note_read(name);
        return parsed_.value("--" + std::string(name));
    }

    // The value without recording it: for a flag the mapping models in part, so that what it
    // leaves out is still warned about (warn_unread).
    [[nodiscard]] std::optional<json::value> peek(std::string_view name) const {
        return parsed_.value("--" + std::string(name));
    }

    [[nodiscard]] bool given(std::string_view name) const {
        note_read(name);
        return parsed_.given("--" + std::string(name));
    }

    // Whether the mapping read the attribute `flag` ("--x") sets.
    [[nodiscard]] bool was_read(std::string_view flag) const {
        const mg::Flag* f = mg::find_flag(flag, release());
        return f && read_.contains(f->dest);
    }

    [[nodiscard]] const mg::ParsedArguments& parsed() const { return parsed_; }

    // Records that the mapping read the attribute `name` sets without asking its value (a
    // setting of a modelled feature that changes no tensor's size).
    void note_read(std::string_view name) const {
        if (const mg::Flag* f = mg::find_flag("--" + std::string(name), release()))
            read_.emplace(f->dest);
    }

  private:
    const mg::ParsedArguments& parsed_;
    mutable std::set<std::string, std::less<>> read_;  // dests
};

// A switch: whether the attribute holds what the flag stores ("--disable-bias-linear" is on when
// add_bias_linear is false, by that flag or its default); `record` false: Flags::peek.
bool is_on(const Flags& flags, std::string_view name, bool record = true) {
    const std::optional<json::value> v = record ? flags.value(name) : flags.peek(name);
    const mg::Flag* f = mg::find_flag("--" + std::string(name), flags.release());
    if (!v || !f || !v->is_bool())
        return false;
    switch (f->action) {
        case mg::FlagAction::store_true:
            return v->as_bool();
        case mg::FlagAction::store_false:
            return !v->as_bool();
        case mg::FlagAction::boolean_optional:
            return v->as_bool() == !f->name.starts_with("--no-");
        case mg::FlagAction::store:
            return v->as_bool();
    }
    return false;
}

std::string describe(const json::value& v) {
    if (v.is_string())
        return std::string(v.as_string());
    if (v.is_bool())
        return v.as_bool() ? "True" : "False";
    if (v.is_array()) {
        std::string out;
        for (const json::value& e : v.as_array())
            out += fmt::format("{}{}", out.empty() ? "" : " ", describe(e));
        return out;
    }
    if (v.is_double())
        return fmt::format("{}", v.as_double());
    return json::serialize(v);
}

// The value as text (a list's values joined by spaces), nullopt for None or an unknown flag.
std::optional<std::string> text(const Flags& flags, std::string_view name) {
    const std::optional<json::value> v = flags.value(name);
    if (!v || v->is_null())
        return std::nullopt;
    return describe(*v);
}

// A count from min to 2^31 - 1 (the analytic plugin's range); nullopt for None.
std::optional<std::uint32_t> count(const Flags& flags, std::string_view name,
                                   std::uint32_t min = 1) {
    const std::optional<json::value> v = flags.value(name);
    if (!v || v->is_null())
        return std::nullopt;
    std::optional<std::int64_t> n;
    if (v->is_int64())
        n = v->as_int64();
    if (!n || *n < static_cast<std::int64_t>(min) || *n > 2147483647)
        throw FlagError(fmt::format("--{} '{}': expected an integer from {} to 2147483647", name,
                                    describe(*v), min));
    return static_cast<std::uint32_t>(*n);
}

// The values of a list flag (nargs '*', '+' or N: argparse gives them as a list), each as text;
// a flag of one value gives a list of one, None (or an unknown flag) an empty list. One value
// written as a YAML list ("[a b]", copied from a Megatron-LM test's configuration) gives its
// words, as the harness that runs such a configuration passes them.
std::vector<std::string> words(const Flags& flags, std::string_view name) {
    const std::optional<json::value> v = flags.value(name);
    std::vector<std::string> out;
    if (!v || v->is_null())
        return out;
    if (!v->is_array())
        return {describe(*v)};
    for (const json::value& e : v->as_array())
        out.push_back(describe(e));
    if (out.size() == 1) {
        if (auto listed = detail::yaml_list_words(out.front()); listed && !listed->empty())
            return std::move(*listed);
    }
    return out;
}

// The integers of a list flag of integers (argparse has converted them), each from min to
// 2^31 - 1; empty for None.
std::vector<std::uint32_t> counts(const Flags& flags, std::string_view name, std::uint32_t min) {
    const std::optional<json::value> v = flags.value(name);
    std::vector<std::uint32_t> out;
    if (!v || v->is_null())
        return out;
    const json::array one{*v};
    for (const json::value& e : v->is_array() ? v->as_array() : one) {
        if (!e.is_int64() || e.as_int64() < static_cast<std::int64_t>(min) ||
            e.as_int64() > 2147483647)
            throw FlagError(fmt::format("--{} '{}': expected integers from {} to 2147483647", name,
                                        describe(e), min));
        out.push_back(static_cast<std::uint32_t>(e.as_int64()));
    }
    return out;
}

std::optional<double> number(const Flags& flags, std::string_view name) {
    const std::optional<json::value> v = flags.value(name);
    if (!v || v->is_null())
        return std::nullopt;
    const double x = v->is_int64()    ? static_cast<double>(v->as_int64())
                     : v->is_double() ? v->as_double()
                                      : std::nan("");
    if (!std::isfinite(x) || x < 0.0)
        throw FlagError(
            fmt::format("--{} '{}': expected a number of at least 0", name, describe(*v)));
    return x;
}

// A count that may be given under two names (Megatron copies --encoder-num-layers into
// num_layers when --num-layers is absent, at every release). Both are read: the alias given
// beside the name changes nothing.
std::uint32_t required(const Flags& flags, std::string_view name, std::string_view alias,
                       std::string_view meaning) {
    const auto n = count(flags, name);
    const auto a = count(flags, alias);
    if (n)
        return *n;
    if (a)
        return *a;
    throw FlagError(fmt::format("missing --{} ({})", name, meaning));
}

using detail::refuse;

// Models other than the decoder-only transformer the analytic model describes, and the flags
// Megatron-LM itself refuses (validate_args asserts them None at every release).
void refuse_other_families(const Flags& flags) {
    constexpr std::pair<std::string_view, std::string_view> retired[] = {
        {"batch-size", "--micro-batch-size"},
        {"warmup", "--lr-warmup-fraction"},
        {"model-parallel-size", "--tensor-model-parallel-size"},
    };
    for (const auto& [flag, instead] : retired) {
        if (flags.given(flag))
            throw FlagError(fmt::format("--{}: Megatron-LM refuses it (no longer valid: use {})",
                                        flag, instead));
    }
    constexpr std::string_view hybrid =
        "a hybrid model (Mamba state-space layers among attention and MLP layers): the analytic "
        "model describes transformer layers only";
    if (text(flags, "hybrid-layer-pattern"))
        refuse("hybrid-layer-pattern", hybrid);
    if (text(flags, "hybrid-override-pattern"))
        refuse("hybrid-override-pattern", hybrid);
    for (const std::string_view ratio : {"hybrid-attention-ratio", "hybrid-mlp-ratio"}) {
        if (const auto r = number(flags, ratio); r && *r > 0.0)
            refuse(ratio, hybrid);
    }
    if (is_on(flags, "is-hybrid-model"))
        refuse("is-hybrid-model", hybrid);
    if (const auto spec = text(flags, "spec"); spec && *spec != "local") {
        if (spec->find("hybrid") != std::string::npos || spec->find("mamba") != std::string::npos)
            refuse("spec", fmt::format("'{}' is {}", *spec, hybrid));
        refuse("spec", fmt::format("'{}' is a layer specification of its own (the analytic model "
                                   "describes Megatron's GPT layers)",
                                   *spec));
    }
    if (text(flags, "experimental-attention-variant"))
        refuse("experimental-attention-variant",
               "an experimental attention (gated delta net, DeepSeek sparse attention) with other "
               "activations and state");
    if (text(flags, "linear-attention-freq"))
        refuse("linear-attention-freq", "linear-attention layers with other activations");
    if (is_on(flags, "enable-mhc-connections"))
        refuse("enable-mhc-connections",
               "hyper-connections keep several residual streams per layer");
    for (const std::string_view h :
         {"heterogeneous-layers-config-path", "heterogeneous-layers-config-encoded-json"}) {
        if (text(flags, h))
            refuse(h, "layers of different shapes (a heterogeneous model)");
    }
    if (text(flags, "yaml-cfg"))
        refuse("yaml-cfg",
               "the run's settings are in the YAML file, which ppb does not read: give "
               "them as flags");
    if (is_on(flags, "retro-add-retriever"))
        refuse("retro-add-retriever", "RETRO's retrieval encoder and chunked cross-attention");
    if (count(flags, "decoder-num-layers"))
        refuse("decoder-num-layers", "an encoder-decoder model (T5)");
    for (const std::string_view encoder :
         {"encoder-pipeline-model-parallel-size", "encoder-tensor-model-parallel-size"}) {
        if (const auto p = count(flags, encoder, 0); p && *p > 0)
            refuse(encoder, "a separate encoder (multimodal models)");
    }
    if (count(flags, "pipeline-model-parallel-split-rank"))
        refuse("pipeline-model-parallel-split-rank", "an encoder-decoder model split over stages");
    if (is_on(flags, "vision-pretraining"))
        refuse("vision-pretraining", "a vision model");
    if (is_on(flags, "perform-rl-step"))
        refuse("perform-rl-step",
               "reinforcement learning: the inference engine and its KV cache share the GPUs");
    if (text(flags, "transformer-impl") == "inference_optimized")
        refuse("transformer-impl", "inference_optimized layers are for inference, not training");
}

// Megatron-LM's _vocab_size_with_padding (megatron/training/tokenizer/tokenizer.py).
std::uint64_t padded_vocabulary(std::uint64_t size, std::uint32_t divisible_by, std::uint32_t t) {
    const std::uint64_t multiple = static_cast<std::uint64_t>(divisible_by) * t;
    return (size + multiple - 1) / multiple * multiple;
}

// Whether the run's GPT model is the legacy one (megatron/model, megatron/legacy/model) rather
// than Megatron-core's: by the release's default and --use-mcore-models / --use-legacy-models.
bool legacy_model(const Flags& flags) {
    const bool mcore_asked = is_on(flags, "use-mcore-models");
    const bool legacy_asked = is_on(flags, "use-legacy-models");
    const std::string_view model = mg::release_default("gpt_model", flags.release());
    if (model == "legacy")
        return true;
    if (model == "legacy unless --use-mcore-models")
        return !mcore_asked;
    if (model == "core unless --use-legacy-models")
        return legacy_asked;
    return false;
}

// Whether FusedScaleMaskSoftmax runs its CUDA kernel for GPT's causal attention of s keys, b
// micro-batch and `heads` heads per rank (is_kernel_available of the release's
// fused_softmax.py): 16 < s <= the release's longest key, s a multiple of 4, b * heads a
// multiple of the kernel's batches per block (8 for s <= 128, 4 above, from
// get_batch_per_block). Otherwise the PyTorch softmax runs.
bool fused_softmax_kernel_runs(const Flags& flags, bool legacy, std::uint32_t s, std::uint32_t b,
                               std::uint32_t heads) {
    const std::string_view longest = mg::release_default(
        legacy ? "legacy_softmax_max_keys" : "core_softmax_max_keys", flags.release());
    std::uint32_t max_keys = 0;
    std::from_chars(longest.data(), longest.data() + longest.size(), max_keys);
    const std::uint64_t batches = static_cast<std::uint64_t>(b) * heads;
    const std::uint32_t per_block = s <= 128 ? 8U : 4U;
    return s > 16 && s <= max_keys && s % 4 == 0 && batches % per_block == 0;
}

// The options for one release's reading of the arguments.
MegatronAnalyticOptions map_release(const Flags& flags, const MegatronRunContext& context) {
    refuse_other_families(flags);
    MegatronAnalyticOptions out;

    const std::uint32_t L =
        required(flags, "num-layers", "encoder-num-layers", "transformer layers");
    const std::uint32_t h = required(flags, "hidden-size", "hidden-size", "the hidden size");
    const std::uint32_t a =
        required(flags, "num-attention-heads", "num-attention-heads", "attention heads");
    const std::uint32_t s =
        required(flags, "seq-length", "encoder-seq-length", "the sequence length");
    const std::uint32_t b = count(flags, "micro-batch-size").value_or(1);
    const std::uint32_t t = count(flags, "tensor-model-parallel-size").value_or(1);
    const std::uint32_t p = count(flags, "pipeline-model-parallel-size").value_or(1);
    const bool swiglu = is_on(flags, "swiglu");
    const bool gated = swiglu || is_on(flags, "quick-geglu");
    const std::uint32_t F =
        count(flags, "ffn-hidden-size")
            .value_or(swiglu ? static_cast<std::uint32_t>(4.0 * h * 2.0 / 3.0 / 64.0) * 64U
                             : 4U * h);
    std::uint32_t kv = a;
    if (is_on(flags, "group-query-attention"))
        kv = count(flags, "num-query-groups").value_or(1);
    else if (flags.given("num-query-groups"))
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
            throw FlagError(cp == 1 ? fmt::format("{} {} is not a multiple of tensor x pipeline "
                                                  "parallel = {} x {}",
                                                  setting_name("world_size", context.words),
                                                  *context.world_size, t, p)
                                    : fmt::format("{} {} is not a multiple of tensor x pipeline x "
                                                  "context parallel = {} x {} x {}",
                                                  setting_name("world_size", context.words),
                                                  *context.world_size, t, p, cp));
        d = static_cast<std::uint32_t>(*context.world_size / tp);
    } else if (is_on(flags, "use-distributed-optimizer")) {
        out.warnings.push_back(
            fmt::format("--use-distributed-optimizer without the world size: the data-parallel "
                        "size is taken as 1 (give {})",
                        setting_name("world_size", context.words)));
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

    // The vocabulary, padded as Megatron pads it. pretrain_gpt.py's args_defaults make
    // GPT2BPETokenizer the tokenizer when none is given.
    std::uint64_t vocabulary = 0;
    const std::string tokenizer = text(flags, "tokenizer-type").value_or("GPT2BPETokenizer");
    const bool pad = !is_on(flags, "no-pad-vocab-size");       // --disable-pad-vocab-size too
    const auto given_vocabulary = count(flags, "vocab-size");  // read even where it is not used
    if (const auto padded = count(flags, "padded-vocab-size")) {
        vocabulary = *padded;
    } else if (context.tokenizer_size) {
        vocabulary = *context.tokenizer_size;
    } else if (const auto v = given_vocabulary) {
        // NullTokenizer(vocab_size) counts its end-of-document token on top, up to 0.17.
        const bool extra_token =
            tokenizer == "NullTokenizer" &&
            mg::release_default("null_tokenizer_vocabulary", flags.release()) == "vocab_size + 1";
        vocabulary = *v + (extra_token ? 1U : 0U);
    } else if (tokenizer == "GPT2BPETokenizer" && text(flags, "vocab-file")) {
        vocabulary = 50257;  // GPT-2's BPE vocabulary (vocab.json)
    } else {
        throw FlagError(fmt::format(
            "the vocabulary size is unknown: give --vocab-size, or the tokenizer's size with "
            "ppb's {}",
            setting_name("tokenizer_size", context.words)));
    }
    const std::uint32_t divisible = count(flags, "make-vocab-size-divisible-by").value_or(128);
    const std::uint64_t V = count(flags, "padded-vocab-size") || !pad
                                ? vocabulary
                                : padded_vocabulary(vocabulary, divisible, t);
    if (V > 2147483647U)
        throw FlagError(fmt::format("the padded vocabulary {} is too large", V));

    // Attention. Megatron-core: a fused kernel unless the layers are Megatron's own ('local') or
    // the backend says unfused. The legacy model: Transformer Engine's layers, or its own
    // ParallelAttention, which runs FlashAttention with --use-flash-attn.
    const bool legacy = legacy_model(flags);
    const std::string impl =
        text(flags, "transformer-impl")
            .value_or(std::string(mg::release_default("transformer_impl", flags.release())));
    const std::string backend = text(flags, "attention-backend").value_or("auto");
    const bool flash_attn_flag = is_on(flags, "use-flash-attn");
    bool flash = impl != "local";
    if (legacy) {
        if (impl == "local" && flash_attn_flag)
            flash = true;
    } else if (backend == "unfused" || backend == "local") {
        flash = false;
    } else if (backend == "flash" || backend == "fused") {
        flash = true;
    }
    // The softmax in fp32 outside the fused kernel: FusedScaleMaskSoftmax takes its PyTorch path
    // with --no-masked-softmax-fusion, or when its kernel does not run for the shape, and keeps
    // the fp32 output with --attention-softmax-in-fp32, which query-key layer scaling forces
    // ("if self.apply_query_key_layer_scaling: self.attention_softmax_in_fp32 = True"; scaling
    // is on by default up to 23.06). Transformer Engine's unfused attention has its own kernel.
    const bool fp32_softmax =
        is_on(flags, "attention-softmax-in-fp32") ||
        is_on(flags, "apply-query-key-layer-scaling") ||
        (flags.value("no-query-key-layer-scaling") && !is_on(flags, "no-query-key-layer-scaling"));
    const bool torch_softmax = is_on(flags, "no-masked-softmax-fusion") ||
                               !fused_softmax_kernel_runs(flags, legacy, s, b, a / t);
    const bool softmax_in_fp32 =
        !flash && impl == "local" && (fp16 || bf16) && fp32_softmax && torch_softmax;

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
    // The gradients' switches are read at every precision (they change nothing at the others).
    const bool accumulate_in_fp32 = is_on(flags, "accumulate-allreduce-grads-in-fp32");
    const bool reduce_in_bf16 = is_on(flags, "grad-reduce-in-bf16");
    double param_bytes = 2.0;
    double grad_bytes = 4.0;
    double optimizer_bytes = 12.0;
    if (fp16) {
        grad_bytes = accumulate_in_fp32 ? 4.0 : 2.0;
    } else if (!bf16) {
        param_bytes = 4.0;
        optimizer_bytes = 8.0;
    }
    if (bf16 && reduce_in_bf16)
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
    // Without --bf16 and --fp16 Megatron-LM trains in fp32 (args.params_dtype = torch.float,
    // megatron/training/arguments.py at commit adfb8ec7926215bfd0d5120aaf6b080de224d328): the
    // layers compute in the parameters' dtype, so the activations they keep are 4 bytes.
    const bool fp32 = !fp16 && !bf16;
    if (fp32)
        o["activation_bytes"] = 4.0;
    o["gated_mlp"] = gated;
    o["flash_attention"] = flash;
    if (softmax_in_fp32)
        o["softmax_in_fp32"] = true;
    // The fused cross entropy (--cross-entropy-loss-fusion, the native implementation of
    // megatron/core/fusions/fused_cross_entropy.py, from 0.8): its steps run under jit_fuser
    // (torch.compile from PyTorch 2.2, torch.jit.script before), which return new tensors rather
    // than working in place, so one more fp32 logits-sized buffer is alive at the loss. Megatron-
    // LM's CI measured it: gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion peaks 4 s*b*V/t bytes
    // above the same run unfused (tests/data/real).
    const bool native_fusion =
        text(flags, "cross-entropy-fusion-impl").value_or("native") == "native";
    // In fp32 there is no 16-bit copy of the logits to count beside that buffer. The releases
    // whose vocab-parallel cross entropy subtracts the logits' maximum out of place (23.04 to
    // 0.7: megatron/core/tensor_parallel/cross_entropy.py, 55817ec9b9 to 9634c0e4a3) hold the
    // same one more buffer: the fp32 logits it is given stay alive beside the new tensor through
    // its forward. Measured: GPT-2 345M at Megatron-LM 992da75 (tests/data/real, gpt2-345m-*),
    // whose last stages peak 4 s*b*V/t bytes above the in-place count.
    const bool subtraction_out_of_place =
        mg::release_default("cross_entropy_subtraction", flags.release()) == "out of place";
    if ((is_on(flags, "cross-entropy-loss-fusion") && native_fusion) || subtraction_out_of_place)
        o["logits_transient_bytes"] = (fp32 ? 0.0 : 2.0) + 4.0;
    // Which kernels run the loss: the time model times their passes over the logits.
    if (is_on(flags, "cross-entropy-loss-fusion")) {
        o["cross_entropy_loss_fusion"] = true;
        if (!native_fusion)
            o["cross_entropy_fusion_impl"] = "te";
    }
    // --defer-embedding-wgrad-compute: the last stage keeps the LM head's output gradient and
    // input of the first --wgrad-deferral-limit micro-batches (0: all of the iteration's) until
    // the iteration's end (megatron/core/tensor_parallel/layers.py, grad_output_buffer, at commit
    // d98e8a64ddf34856e74b24714e3bedb2f5a39553).
    const std::uint32_t limit = count(flags, "wgrad-deferral-limit", 0).value_or(0);
    if (is_on(flags, "defer-embedding-wgrad-compute")) {
        if (limit == 0 && !out.micro_batches) {
            throw FlagError(
                "--defer-embedding-wgrad-compute keeps the LM head's output gradient of every "
                "micro-batch of the iteration: give --global-batch-size (or "
                "--wgrad-deferral-limit)");
        }
        const std::uint32_t deferred =
            limit == 0 ? *out.micro_batches
                       : (out.micro_batches ? std::min(limit, *out.micro_batches) : limit);
        if (deferred > 0)
            o["deferred_wgrad_micro_batches"] = deferred;
    }
    o["dropout"] = dropout;
    o["untie_embeddings"] = is_on(flags, "untie-embeddings-and-output-weights");
    o["linear_biases"] = !is_on(flags, "disable-bias-linear");
    std::string positions = text(flags, "position-embedding-type").value_or("learned_absolute");
    if (is_on(flags, "use-rotary-position-embeddings"))
        positions = "rope";
    if (is_on(flags, "no-position-embedding"))
        positions = "none";
    const std::uint32_t max_positions = count(flags, "max-position-embeddings").value_or(s);
    if (positions == "learned_absolute")
        o["position_embeddings"] = max_positions;

    // Transformer Engine's cuBLAS workspaces beyond the one every GEMM shares (which runtime_mb
    // holds), each allocated once for the process through PyTorch's caching allocator and kept
    // (transformer_engine/pytorch/cpp_extensions/gemm.py, get_cublas_workspace, an lru_cache, at
    // NVIDIA/TransformerEngine commit b9d690e042b1c4e455214e7dab65d6d3512c05d6, the one Megatron-
    // LM's uv.lock pins at commit 4828d651e768da5e3a833f8dbfc4dbec76f3fcdf). One workspace is
    // get_cublas_workspace_size_bytes(): 32 MiB + 1 KiB from compute capability 9, 4 MiB below.
    //   --moe-grouped-gemm: the grouped GEMM's own streams, one workspace each (4 streams).
    //   --tp-comm-overlap: the GEMMs overlapped with userbuffers' communication take one
    //     workspace of _NUM_MAX_UB_STREAMS (3) times the size (since Transformer Engine 2.10;
    //     up to 2.9 initialize_ub grew the shared one to that size, one workspace less). The
    //     userbuffers themselves are allocated by Transformer Engine's own cudaMalloc or cuMem
    //     calls (transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp,
    //     register_user_buffer_collective with alloc = true), outside PyTorch's allocator, and
    //     so outside the memory Megatron-LM reports.
    // Both need Transformer Engine's layers: Megatron-LM's local ones run neither.
    {
        constexpr double runtime_mb = 100.0;  // the analytic model's default
        const double workspace_mb = context.compute_capability >= 9 ? 32.0 + 1.0 / 1024.0 : 4.0;
        // (each flag read whatever the layers, so that a local run's is not "unread")
        const bool grouped_gemm = count(flags, "num-experts") && is_on(flags, "moe-grouped-gemm");
        const bool tp_comm_overlap = is_on(flags, "tp-comm-overlap");
        double workspaces = 0.0;
        if (impl != "local" && grouped_gemm)
            workspaces += 4.0;
        if (impl != "local" && tp_comm_overlap)
            workspaces += 3.0;
        if (workspaces > 0.0)
            o["runtime_mb"] = runtime_mb + workspaces * workspace_mb;
    }
    if (const auto E = count(flags, "num-experts")) {
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
        // How tokens reach their experts, for the time model (DeepEP and HybridEP, flex, send a
        // token once to each node that holds one of its experts: host_api/docs/cluster.md).
        // Megatron-LM's default, allgather, is not written: the time model takes alltoall.
        if (const auto dispatcher = text(flags, "moe-token-dispatcher-type");
            dispatcher && (*dispatcher == "flex" || *dispatcher == "alltoall"))
            moe["token_dispatcher"] = *dispatcher;
        // Where the routing weights multiply the expert outputs (megatron_release_defaults.cpp),
        // and, inside the experts, whether the weighted SwiGLU is Megatron-LM's fused kernel
        // (experts.py, bias_act_func: Transformer Engine's activation comes first, then the
        // fused kernel under bias_activation_fusion, which is --no-bias-swiglu-fusion's switch
        // for SwiGLU). That flag is peeked: the dense SwiGLU's silu(gate) it also keeps is not
        // modelled, and warn_unread says so.
        const std::string_view weights =
            mg::release_default("moe_routing_weights", flags.release());
        moe["routing_weights"] = weights.empty() ? "combine" : std::string(weights);
        if (weights == "experts" && swiglu &&
            (is_on(flags, "use-te-activation-func") ||
             is_on(flags, "no-bias-swiglu-fusion", false)))
            moe["activation_fused"] = false;
        if (flags.given("moe-layer-freq")) {
            // An integer N, or a 0/1 list expression, read as 'ppb import megatron' reads it.
            json::array pattern;
            std::uint32_t leading_dense = 0;
            bool leading = true;
            for (const bool is_moe : moe_layer_pattern(*text(flags, "moe-layer-freq"), L)) {
                pattern.emplace_back(is_moe ? 1 : 0);
                leading = leading && !is_moe;
                leading_dense += leading ? 1U : 0U;
            }
            moe["layer_freq"] = std::move(pattern);
            if (leading_dense > 0)
                moe["first_k_dense"] = leading_dense;
        }
        o["moe"] = std::move(moe);
    } else {
        // A dense model: the experts' settings change nothing.
        for (const std::string_view name :
             {"moe-router-topk", "moe-ffn-hidden-size", "moe-shared-expert-intermediate-size",
              "expert-model-parallel-size", "expert-tensor-parallel-size",
              "moe-expert-capacity-factor", "moe-layer-freq", "moe-grouped-gemm"})
            flags.note_read(name);
    }

    // DeepEP's (flex) dispatcher pre-allocates its communication buffers; the all-to-all and
    // all-gather dispatchers' permutation buffers are inside moe.routing_imbalance.
    if (text(flags, "moe-token-dispatcher-type") == "flex")
        out.warnings.push_back(
            "--moe-token-dispatcher-type flex changes memory but is not modelled: DeepEP's "
            "pre-allocated buffers (add them as constant_mb)");

    // The newer features: megatron_features.cpp, through the same reading of the flags. The
    // settings it reads without asking their values count as read too.
    const detail::MegatronFlagView view{
        [&](std::string_view name) { return flags.given(name); },
        [&](std::string_view name) { return is_on(flags, name); },
        [&](std::string_view name) { return text(flags, name); },
        [&](std::string_view name) { return words(flags, name); },
        [&](std::string_view name, std::uint32_t min) { return counts(flags, name, min); },
        [&](std::string_view name, std::uint32_t min) { return count(flags, name, min); },
        [&](std::string_view name) { return number(flags, name); },
    };
    for (const std::string& name : detail::add_megatron_features(view, context, o, out))
        flags.note_read(name);
    out.options_json = to_compact_json(o);
    return out;
}

// Whether a given flag leaves its attribute at the release's default.
bool at_default(const mg::ParsedArguments& parsed, std::string_view flag) {
    const mg::Flag* f = mg::find_flag(flag, parsed.release());
    if (!f)
        return false;
    const std::optional<json::value> v = parsed.value(flag);
    for (const mg::Flag& other : mg::flags()) {
        if (other.dest == f->dest && other.sets_default && other.first <= parsed.release() &&
            parsed.release() <= other.last)
            return v && *v == json::parse(other.default_json);
    }
    return false;
}

// The flags given that the mapping did not read: a warning for those that can change memory.
void warn_unread(const Flags& flags, std::vector<std::string>& warnings) {
    std::set<std::string_view> seen;
    for (const mg::GivenFlag& g : flags.parsed().given_flags()) {
        const std::string_view name = g.name;
        if (!seen.insert(name).second || flags.was_read(name))
            continue;
        // Without biases there is nothing for the bias fusions to keep.
        if (name.starts_with("--no-bias-") && is_on(flags, "disable-bias-linear"))
            continue;
        const auto role = detail::megatron_flag_role(name);
        if (role && role->role != detail::MegatronFlagRole::unmodelled)
            continue;
        if (at_default(flags.parsed(), name))
            continue;
        if (role)
            warnings.push_back(
                fmt::format("{} changes memory but is not modelled: {}", name, role->reason));
        else
            warnings.push_back(fmt::format(
                "{} is a Megatron-LM flag whose effect on memory ppb does not know: if it changes "
                "memory, the options leave it out",
                name));
    }
}

// What differs between two options objects, as "key value" of `other`.
std::string differences(const json::object& chosen, const json::object& other) {
    std::set<std::string_view> keys;
    for (const auto& kv : chosen)
        keys.insert(kv.key());
    for (const auto& kv : other)
        keys.insert(kv.key());
    std::string out;
    for (const std::string_view key : keys) {
        const json::value* a = chosen.if_contains(key);
        const json::value* b = other.if_contains(key);
        if (a && b && *a == *b)
            continue;
        out += fmt::format("{}{} {}", out.empty() ? "" : ", ", key,
                           b ? ppb::to_compact_json(*b) : std::string("absent"));
    }
    return out;
}

}  // namespace

MegatronAnalyticOptions analytic_options_from_megatron(std::span<const std::string> arguments,
                                                       const MegatronRunContext& context) {
    std::vector<mg::DeclaredFlag> declared;
    for (const std::string& d : context.declared_flags)
        declared.push_back(mg::declared_flag(d, context.words));
    const mg::MegatronArguments read = mg::read_megatron_arguments(
        arguments,
        context.megatron_version ? std::optional<std::string_view>(*context.megatron_version)
                                 : std::nullopt,
        declared, context.words);
    const Flags flags(read.parsed);
    MegatronAnalyticOptions out = map_release(flags, context);
    out.release = mg::describe_release(read.parsed.release());
    out.notes = read.notes;
    // A value outside its flag's choices: an error where the mapping reads the flag, a warning
    // elsewhere (the choices of a branch's Megatron-LM may differ, and the value is not needed).
    for (const mg::ChoiceError& e : read.choice_errors) {
        if (flags.was_read(e.flag))
            throw FlagError(fmt::format("{} (Megatron-LM {})", e.message, out.release));
        out.warnings.push_back(
            fmt::format("{}: Megatron-LM {} would refuse it; its value does not change the options",
                        e.message, out.release));
    }
    warn_unread(flags, out.warnings);
    if (context.megatron_version)
        return out;

    // Other releases that read the same arguments: do their defaults give other options?
    const json::object chosen = json::parse(out.options_json).as_object();
    struct Group {
        mg::ReleaseIndex first, last;
        std::string options;
    };
    std::vector<Group> groups;
    for (const mg::ReleaseIndex r : read.accepting) {
        std::string options;
        if (r == read.parsed.release()) {
            options = out.options_json;
        } else {
            const mg::ParseOutcome outcome = mg::parse_megatron_arguments(arguments, r, declared);
            if (!outcome.parsed)
                continue;
            try {
                options = map_release(Flags(*outcome.parsed), context).options_json;
            } catch (const FlagError&) {
                continue;  // that release refuses the run: no options to compare
            }
        }
        if (!groups.empty() && groups.back().options == options && groups.back().last + 1 == r)
            groups.back().last = r;
        else
            groups.push_back({r, r, std::move(options)});
    }
    std::set<std::string> distinct;
    for (const Group& g : groups)
        distinct.insert(g.options);
    if (distinct.size() > 1) {
        std::string others;
        for (const Group& g : groups) {
            if (g.options == out.options_json)
                continue;
            const std::string range = g.first == g.last
                                          ? std::string(mg::releases()[g.first].name)
                                          : fmt::format("{} to {}", mg::releases()[g.first].name,
                                                        mg::releases()[g.last].name);
            others += fmt::format("{}{}: {}", others.empty() ? "" : "; ", range,
                                  differences(chosen, json::parse(g.options).as_object()));
        }
        out.warnings.push_back(fmt::format(
            "these arguments fit Megatron-LM {} to {}, whose defaults differ ({}): the options "
            "of {} are written; give {} with the run's release",
            mg::releases()[groups.front().first].name, mg::releases()[groups.back().last].name,
            others, out.release, setting_name("megatron_version", context.words)));
    }
    return out;
}

}  // namespace ppb::importers
