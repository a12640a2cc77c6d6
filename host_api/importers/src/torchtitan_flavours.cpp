// torchtitan's model flavours: see torchtitan_flavours.hpp. Each row is the flavour's arguments
// in torchtitan's table (pytorch/torchtitan commit 238fa9953e4aec2a62582121564273d7cbb1e9f1);
// arguments a row leaves out take the model's defaults there (llama3 TransformerModelArgs:
// vocab_size 128256, multiple_of 256, n_kv_heads = n_heads; MoEArgs num_shared_experts 1).
// The attention variants (debugmodel_flex_attn, 8B_flex, 8B_varlen, ...) are their base
// flavour's shape with another kernel, none of which keeps the s^2 scores.
#include "torchtitan_flavours.hpp"

#include <array>
#include <cmath>

namespace ppb::importers::detail {
namespace {

using Moe = TorchtitanMoe;
using Mla = TorchtitanMla;

TorchtitanFlavour llama3(std::string_view flavor, std::uint32_t dim, std::uint32_t layers,
                         std::uint32_t heads, std::uint32_t kv_heads, std::uint32_t vocab,
                         double multiplier, std::uint32_t multiple_of) {
    TorchtitanFlavour f;
    f.model = "llama3";
    f.flavor = flavor;
    f.dim = dim;
    f.n_layers = layers;
    f.n_heads = heads;
    f.n_kv_heads = kv_heads;
    f.vocab_size = vocab;
    f.ffn_dim_multiplier = multiplier;
    f.multiple_of = multiple_of;
    return f;
}

TorchtitanFlavour tied(TorchtitanFlavour f) {
    f.tied_embeddings = true;
    return f;
}

// Qwen3: every flavour has heads of 128 channels and query/key norms.
TorchtitanFlavour qwen3(std::string_view flavor, std::uint32_t vocab, std::uint32_t dim,
                        std::uint32_t layers, std::uint32_t heads, std::uint32_t kv_heads,
                        std::uint32_t hidden, bool tied, std::optional<Moe> moe = std::nullopt) {
    TorchtitanFlavour f;
    f.model = "qwen3";
    f.flavor = flavor;
    f.vocab_size = vocab;
    f.dim = dim;
    f.n_layers = layers;
    f.n_heads = heads;
    f.n_kv_heads = kv_heads;
    f.hidden_dim = hidden;
    f.head_dim = 128;
    f.qk_norm = true;
    f.tied_embeddings = tied;
    f.moe = moe;
    return f;
}

// DeepSeek-V3: multi-latent attention and MoE in every flavour, untied embeddings.
TorchtitanFlavour deepseek(std::string_view flavor, std::uint32_t vocab, std::uint32_t dim,
                           std::uint32_t inter, std::uint32_t layers, std::uint32_t heads, Moe moe,
                           std::uint32_t q_lora_rank) {
    TorchtitanFlavour f;
    f.model = "deepseek_v3";
    f.flavor = flavor;
    f.vocab_size = vocab;
    f.dim = dim;
    f.hidden_dim = inter;
    f.n_layers = layers;
    f.n_heads = heads;
    f.moe = moe;
    f.mla = Mla{q_lora_rank, 512, 128, 64, 128};
    return f;
}

const std::array<TorchtitanFlavour, 25> flavours = {
    llama3("debugmodel", 256, 6, 16, 0, 2048, 0.0, 256),
    llama3("debugmodel_flex_attn", 256, 6, 16, 0, 2048, 0.0, 256),
    llama3("debugmodel_varlen_attn", 256, 6, 16, 0, 2048, 0.0, 256),
    llama3("8B", 4096, 32, 32, 8, 128256, 1.3, 1024),
    llama3("8B_flex", 4096, 32, 32, 8, 128256, 1.3, 1024),
    llama3("8B_varlen", 4096, 32, 32, 8, 128256, 1.3, 1024),
    llama3("70B", 8192, 80, 64, 8, 128256, 1.3, 4096),
    llama3("405B", 16384, 126, 128, 8, 128256, 1.2, 4096),
    qwen3("debugmodel", 2048, 256, 8, 16, 8, 3072, true),
    qwen3("0.6B", 151936, 1024, 28, 16, 8, 3072, true),
    qwen3("1.7B", 151936, 2048, 28, 16, 8, 6144, true),
    qwen3("4B", 151936, 2560, 36, 32, 8, 9728, true),
    qwen3("8B", 151936, 4096, 36, 32, 8, 12288, false),
    qwen3("14B", 151936, 5120, 40, 40, 8, 17408, false),
    qwen3("32B", 151936, 5120, 64, 64, 8, 25600, false),
    qwen3("debugmodel_moe", 2048, 256, 8, 16, 8, 3072, false, Moe{64, 8, 768, 0, 0}),
    qwen3("30B-A3B", 151936, 2048, 48, 32, 4, 6144, false, Moe{128, 8, 768, 0, 0}),
    qwen3("235B-A22B", 151936, 4096, 94, 64, 4, 12288, false, Moe{128, 8, 1536, 0, 0}),
    deepseek("debugmodel", 2048, 256, 1024, 6, 16, Moe{8, 3, 256, 2, 1}, 0),
    deepseek("debugmodel_flex_attn", 2048, 256, 1024, 6, 16, Moe{8, 3, 256, 2, 1}, 0),
    deepseek("16B", 102400, 2048, 10944, 27, 16, Moe{64, 6, 1408, 2, 1}, 0),
    deepseek("236B", 102400, 5120, 12288, 60, 128, Moe{160, 6, 1536, 2, 1}, 1536),
    deepseek("671B", 129280, 7168, 18432, 61, 128, Moe{256, 8, 2048, 1, 3}, 1536),
    // The flavours the table adds at b5bcd76c66d0acb1a08b176d9639425bc55e0b2a
    // (torchtitan/models/llama3/__init__.py: 1B and 3B, which tie their embeddings).
    tied(llama3("1B", 2048, 16, 32, 8, 128256, 1.5, 1024)),
    tied(llama3("3B", 3072, 28, 24, 8, 128256, 1.0, 1024)),
};

}  // namespace

std::span<const TorchtitanFlavour> torchtitan_flavours() {
    return flavours;
}

std::uint32_t llama3_ffn_width(const TorchtitanFlavour& f) {
    auto hidden = static_cast<std::uint64_t>(2.0 * 4.0 * f.dim / 3.0);
    if (f.ffn_dim_multiplier > 0.0)
        hidden = static_cast<std::uint64_t>(f.ffn_dim_multiplier * static_cast<double>(hidden));
    const std::uint64_t m = f.multiple_of;
    return static_cast<std::uint32_t>((hidden + m - 1) / m * m);
}

}  // namespace ppb::importers::detail
