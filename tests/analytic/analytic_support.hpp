// Published model shapes and small helpers shared by the analytic tests.
#ifndef PPB_TESTS_ANALYTIC_SUPPORT_HPP
#define PPB_TESTS_ANALYTIC_SUPPORT_HPP

#include "model.hpp"
#include "options.hpp"
#include "terms.hpp"

#include <ppb/plugin.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <iterator>

#include <string>
#include <string_view>
#include <vector>

namespace analytic_test {

inline constexpr double MiB = 1024.0 * 1024.0;

// GPT-3 175B as trained in Korthikanti et al. 2022 (arXiv:2205.05198), Table 3: a = 96,
// h = 12288, L = 96, s = 2048, b = 1, V = 51200; a GeLU MLP of 4h, tied embeddings, dropout.
inline constexpr std::string_view gpt3_175b =
    R"("hidden_size": 12288, "num_attention_heads": 96, "ffn_hidden_size": 49152,
       "seq_length": 2048, "micro_batch_size": 1, "vocab_size": 51200, "num_layers": 96,
       "gated_mlp": false, "untie_embeddings": false)";

// LLaMA-2 70B (Touvron et al. 2023; the published config): h = 8192, a = 64, 8 key/value
// heads, F = 28672 SwiGLU, L = 80, s = 4096, V = 32000, untied embeddings.
inline constexpr std::string_view llama2_70b =
    R"("hidden_size": 8192, "num_attention_heads": 64, "num_kv_heads": 8,
       "ffn_hidden_size": 28672, "seq_length": 4096, "micro_batch_size": 1,
       "vocab_size": 32000, "num_layers": 80)";

// Megatron-LM's CI DeepSeek-V3 proxy (tests/functional_tests/test_cases/moe/
// gpt3_mcore_te_tp2_pp2_ep4_etp1_*: MLA, h = 1024, s = 4096, b = 4, t = 2 with SP, unfused
// attention) with its MoE layers: 32 experts of 1024, top-4, one shared expert of 1024,
// EP = 4, ETP = 1, d = 2; dropless routing at the default imbalance 1.2.
inline constexpr std::string_view ci_deepseek_v3_proxy =
    R"("hidden_size": 1024, "num_attention_heads": 32, "ffn_hidden_size": 4096,
       "num_layers": 16, "seq_length": 4096, "micro_batch_size": 4, "vocab_size": 51712,
       "tensor_parallel": 2, "sequence_parallel": true, "dropout": false,
       "flash_attention": false, "data_parallel": 2, "distributed_optimizer": true,
       "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128,
               "qk_pos_emb_head_dim": 64, "v_head_dim": 128},
       "moe": {"num_experts": 32, "top_k": 4, "moe_ffn_hidden_size": 1024,
               "shared_experts": 1, "expert_parallel": 4, "expert_tensor_parallel": 1,
               "first_k_dense": 3})";

// The JSON object of the members `shape` with the members `changes` added or replaced (both are
// member lists without braces, e.g. R"("tensor_parallel": 8)").
inline std::string options_json(std::string_view shape, std::string_view changes) {
    boost::json::object out = boost::json::parse("{" + std::string(shape) + "}").as_object();
    if (!changes.empty()) {
        const boost::json::value more = boost::json::parse("{" + std::string(changes) + "}");
        for (const auto& [key, value] : more.as_object())
            out[key] = value;
    }
    return boost::json::serialize(out);
}

// The JSON object of the members `shape` without `key`.
inline std::string options_without(std::string_view shape, std::string_view key) {
    boost::json::object out = boost::json::parse("{" + std::string(shape) + "}").as_object();
    out.erase(key);
    return boost::json::serialize(out);
}

inline ppb::analytic::MemoryTerms terms(std::string_view shape, std::string_view more) {
    return ppb::analytic::memory_terms(ppb::analytic::parse_options(options_json(shape, more)));
}

// A chunk of `none_layers` layers of kind 'none' with `in_flight` micro-batches in flight.
inline ppb_chunk none_chunk(std::uint32_t none_layers, std::uint32_t in_flight) {
    ppb_chunk c{};
    c.layers[PPB_KIND_NONE] = none_layers;
    c.in_flight = in_flight;
    return c;
}

// The part `name` of a one-group model's prediction for `placement` (0 when it has none), after
// checking that every part is non-negative and that they add up to the prediction.
inline double prediction_part(const ppb::analytic::AnalyticModel& model,
                              const ppb_placement& placement, std::string_view name) {
    std::vector<std::uint32_t> layers;
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c)
        layers.insert(layers.end(), placement.chunks[c].layers,
                      placement.chunks[c].layers + PPB_KIND_COUNT);
    const ppb_grouped_placement grouped{placement, 1, layers.data()};
    const auto parts = model.predict_parts(grouped);
    double sum = 0.0;
    double found = 0.0;
    for (const ppb_memory_part& p : parts.value()) {
        BOOST_TEST(p.mb >= 0.0, p.name);
        sum += p.mb;
        if (name == p.name)
            found = p.mb;
    }
    BOOST_TEST(sum == model.predict(placement), boost::test_tools::tolerance(1e-9));
    return found;
}

inline bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

// The whole file at `path`; fails the test if it cannot be read.
inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    BOOST_TEST_REQUIRE(in.good(), "cannot read " << path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The message of the InvalidInput that parsing `json` throws; fails the test if none is thrown.
inline std::string rejection(const std::string& json) {
    try {
        (void)ppb::analytic::parse_options(json);
    } catch (const ppb::plugin::InvalidInput& e) {
        return e.what();
    }
    BOOST_ERROR("options were accepted: " << json);
    return {};
}

}  // namespace analytic_test

#endif  // PPB_TESTS_ANALYTIC_SUPPORT_HPP
