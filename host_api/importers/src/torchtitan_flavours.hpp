// torchtitan's model flavours: the shapes `[model] name` and `flavor` select, as torchtitan's
// tables give them (pytorch/torchtitan commit 238fa9953e4aec2a62582121564273d7cbb1e9f1:
// torchtitan/models/llama3/__init__.py llama3_args, torchtitan/models/qwen3/__init__.py
// qwen3_args, torchtitan/models/deepseek_v3/__init__.py deepseekv3_args; the same values at
// b5bcd76c66d0acb1a08b176d9639425bc55e0b2a). Internal to ppb_importers.
#ifndef PPB_IMPORTERS_SRC_TORCHTITAN_FLAVOURS_HPP
#define PPB_IMPORTERS_SRC_TORCHTITAN_FLAVOURS_HPP

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ppb::importers::detail {

struct TorchtitanMoe {
    std::uint32_t experts = 0;
    std::uint32_t top_k = 0;
    std::uint32_t inner = 0;         // moe_inter_dim: one routed expert
    std::uint32_t shared = 0;        // num_shared_experts, one fused MLP of shared x inner
    std::uint32_t dense_layers = 0;  // n_dense_layers (DeepSeek): the first layers dense
};

struct TorchtitanMla {
    std::uint32_t q_lora_rank = 0;  // 0: the query is projected from dim directly
    std::uint32_t kv_lora_rank = 0;
    std::uint32_t qk_nope_head_dim = 0;
    std::uint32_t qk_rope_head_dim = 0;
    std::uint32_t v_head_dim = 0;
};

struct TorchtitanFlavour {
    std::string_view model;   // [model] name
    std::string_view flavor;  // [model] flavor
    std::uint32_t dim = 0;
    std::uint32_t n_layers = 0;
    std::uint32_t n_heads = 0;
    std::uint32_t n_kv_heads = 0;  // 0: n_heads
    std::uint32_t vocab_size = 0;
    // The dense MLP's width: given (qwen3's hidden_dim, DeepSeek's inter_dim), or 0 for llama3's
    // rule from dim, ffn_dim_multiplier and multiple_of.
    std::uint32_t hidden_dim = 0;
    double ffn_dim_multiplier = 0.0;  // 0: none
    std::uint32_t multiple_of = 0;
    std::uint32_t head_dim = 0;  // 0: dim / n_heads
    bool qk_norm = false;
    bool tied_embeddings = false;  // enable_weight_tying
    std::optional<TorchtitanMoe> moe;
    std::optional<TorchtitanMla> mla;
};

// Every flavour ppb knows, in table order.
[[nodiscard]] std::span<const TorchtitanFlavour> torchtitan_flavours();

// llama3's FeedForward width: int(2 * 4 * dim / 3), times ffn_dim_multiplier when given, rounded
// up to a multiple of multiple_of (torchtitan/models/llama3/model/model.py, FeedForward).
[[nodiscard]] std::uint32_t llama3_ffn_width(const TorchtitanFlavour& f);

}  // namespace ppb::importers::detail

#endif  // PPB_IMPORTERS_SRC_TORCHTITAN_FLAVOURS_HPP
