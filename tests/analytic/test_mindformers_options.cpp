// 'ppb import mindformers-options': the analytic model's options from a MindFormers training
// YAML. The real-shaped file tests/data/mindformers/llama3_1_70b_finetune.yaml (MindFormers'
// Llama-3.1-70B fine-tuning configuration) must give Llama-3.1-70B's published shape, with the
// FFN width derived by MindFormers' own rule, and options 'ppb predict' loads; bad files are
// refused with exit status 2, a message naming the key and its line, and nothing on stdout.
#include "../common/run_process.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace mindformers_options_tests {

namespace {

const fs::path data_dir = PPB_MINDFORMERS_DATA_DIR;

ppb_test::ProcessResult ppb(const std::vector<std::string>& args) {
    return ppb_test::run_process(
        PPB_EXE, args, {{"PPB_PLUGIN_PATH", PPB_BUILD_PLUGIN_DIR}, {"PPB_DEBUG_PLUGINS", ""}});
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// A scratch YAML: the smallest configuration the command accepts, with `extra` appended (YAML
// keeps the last of a repeated key, so `extra` may override a section's values only by giving
// the whole section).
struct ScratchConfig {
    fs::path path;
    explicit ScratchConfig(const std::string& name, const std::string& model_config,
                           const std::string& extra = "") {
        path = fs::temp_directory_path() / ("ppb-test-mindformers-" + name + ".yaml");
        std::ofstream(path) << "model:\n  model_config:\n"
                            << model_config << "parallel_config:\n  data_parallel: 2\n"
                            << "  model_parallel: 2\n  pipeline_stage: 2\n"
                            << extra;
    }
    ScratchConfig(const ScratchConfig&) = delete;
    ScratchConfig& operator=(const ScratchConfig&) = delete;
    ~ScratchConfig() { fs::remove(path); }
};

const std::string llama2_7b_shape =
    "    type: LlamaConfig\n    seq_length: 4096\n    hidden_size: 4096\n    num_layers: 32\n"
    "    num_heads: 32\n    vocab_size: 32000\n    multiple_of: 256\n";

void expect_refusal(const fs::path& config, const std::vector<std::string>& parts) {
    const auto r = ppb({"import", "mindformers-options", config.string()});
    BOOST_TEST(r.exit_code == 2, "exit status " << r.exit_code << ", stderr: " << r.err);
    BOOST_TEST(r.out.empty(), r.out);
    for (const std::string& part : parts)
        BOOST_TEST(contains(r.err, part), "'" << part << "' not in: " << r.err);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mindformers_options)

BOOST_AUTO_TEST_CASE(llama3_1_70b_gets_its_published_shape_and_loads_in_predict) {
    const fs::path config = data_dir / "llama3_1_70b_finetune.yaml";
    const auto r = ppb({"import", "mindformers-options", config.string()});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object o = json::parse(r.out).as_object();
    // Llama-3.1-70B: 80 layers of 8192, 64 heads with 8 key/value heads, FFN 28672 (from
    // ffn_dim_multiplier 1.3 and multiple_of 256: int(2/3 * int(1.31 * 32768)) rounded up).
    BOOST_TEST(o.at("num_layers").as_int64() == 80);
    BOOST_TEST(o.at("hidden_size").as_int64() == 8192);
    BOOST_TEST(o.at("num_attention_heads").as_int64() == 64);
    BOOST_TEST(o.at("num_kv_heads").as_int64() == 8);
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 28672);
    BOOST_TEST(o.at("vocab_size").as_int64() == 128256);
    BOOST_TEST(o.at("seq_length").as_int64() == 8192);
    BOOST_TEST(o.at("tensor_parallel").as_int64() == 8);
    BOOST_TEST(o.at("sequence_parallel").as_bool());
    BOOST_TEST(o.at("flash_attention").as_bool());
    BOOST_TEST(o.at("gated_mlp").as_bool());
    BOOST_TEST(o.at("untie_embeddings").as_bool());
    BOOST_TEST(!o.at("linear_biases").as_bool());
    BOOST_TEST(o.at("param_bytes").as_double() == 4.0);  // param_init_type float32
    // The layout for ppb predict / partition, and the keys that change memory, by name and line.
    BOOST_TEST(contains(r.err, "8 pipeline stages"), r.err);
    BOOST_TEST(contains(r.err, "--stages 8 --micro-batches 256"), r.err);
    BOOST_TEST(contains(r.err, "model.model_config.fine_grain_interleave changes memory"), r.err);
    BOOST_TEST(contains(r.err, "recompute_config.recompute_slice_activation changes memory"),
               r.err);
    BOOST_TEST(contains(r.err, "llama3_1_70b_finetune.yaml:"), r.err);

    const fs::path options = fs::temp_directory_path() / "ppb-test-mindformers-70b.json";
    std::ofstream(options) << r.out;
    const auto p =
        ppb({"predict", "--model", "analytic", "--model-options", options.string(), "--stages", "8",
             "--stage", "0", "--layers", "none=10", "--micro-batches", "256", "--json"});
    fs::remove(options);
    BOOST_TEST_REQUIRE(p.exit_code == 0, p.err);
    BOOST_TEST(json::parse(p.out).as_object().at("peak_memory_mb").as_double() > 0.0);
}

BOOST_AUTO_TEST_CASE(the_ffn_width_without_a_multiplier_is_llama2s) {
    // Llama-2-7B: 2/3 of 4h = 10922, rounded up to a multiple of 256: 11008.
    const ScratchConfig config("llama2", llama2_7b_shape);
    const auto r = ppb({"import", "mindformers-options", config.path.string()});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object o = json::parse(r.out).as_object();
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 11008);
    BOOST_TEST(!o.contains("num_kv_heads"));
    // Without use_flash_attention the attention is taken as unfused; vocab_emb_dp (on by
    // default) with model parallelism is named.
    BOOST_TEST(!o.at("flash_attention").as_bool());
    BOOST_TEST(contains(r.err, "parallel_config.vocab_emb_dp (default true) changes memory"),
               r.err);
    // intermediate_size wins over the rule.
    const ScratchConfig given("llama2-width", llama2_7b_shape + "    intermediate_size: 13824\n");
    const auto w = ppb({"import", "mindformers-options", given.path.string()});
    BOOST_TEST_REQUIRE(w.exit_code == 0, w.err);
    BOOST_TEST(json::parse(w.out).as_object().at("ffn_hidden_size").as_int64() == 13824);
}

// The layers compute in compute_dtype: float32 activations are 4 bytes (activation_bytes 4);
// float16 and bfloat16 are the model's default 2 and leave the key out.
BOOST_AUTO_TEST_CASE(compute_dtype_gives_the_activations_bytes) {
    const ScratchConfig fp32("fp32", llama2_7b_shape + "    compute_dtype: \"float32\"\n");
    const auto r = ppb({"import", "mindformers-options", fp32.path.string()});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(json::parse(r.out).as_object().at("activation_bytes").as_double() == 4.0);
    BOOST_TEST(!contains(r.err, "compute_dtype"), r.err);
    const ScratchConfig bf16("bf16", llama2_7b_shape + "    compute_dtype: \"bfloat16\"\n");
    const auto b = ppb({"import", "mindformers-options", bf16.path.string()});
    BOOST_TEST_REQUIRE(b.exit_code == 0, b.err);
    BOOST_TEST(!json::parse(b.out).as_object().contains("activation_bytes"));
}

BOOST_AUTO_TEST_CASE(unknown_model_keys_are_named_in_a_warning) {
    const ScratchConfig config("unknown", llama2_7b_shape + "    shiny_new_feature: 3\n");
    const auto r = ppb({"import", "mindformers-options", config.path.string()});
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(contains(r.err, config.path.string() +
                                   ":10: model.model_config.shiny_new_feature is not known to ppb"),
               r.err);
}

BOOST_AUTO_TEST_CASE(bad_files_are_refused_with_exit_2_naming_the_key) {
    const ScratchConfig missing("missing",
                                "    seq_length: 4096\n    hidden_size: 4096\n    num_layers: 32\n"
                                "    vocab_size: 32000\n");
    expect_refusal(missing.path, {"missing model.model_config.num_heads"});

    const ScratchConfig negative("negative", llama2_7b_shape + "    n_kv_heads: -8\n");
    expect_refusal(negative.path, {"model.model_config.n_kv_heads", "positive integer"});

    const ScratchConfig divisor("divisor", llama2_7b_shape + "    n_kv_heads: 5\n");
    expect_refusal(divisor.path, {"model.model_config.n_kv_heads", "not a divisor"});

    const ScratchConfig dtype("dtype", llama2_7b_shape + "    param_init_type: \"int8\"\n");
    expect_refusal(dtype.path, {"model.model_config.param_init_type", "int8"});

    // What MindFormers itself refuses, refused by name with the line: context parallelism
    // without flash attention, hybrid_cp in the current models, more MTP layers than they take,
    // an algorithm it does not know, more experts chosen than there are.
    const ScratchConfig cp("cp", llama2_7b_shape,
                           "parallel_config:\n  model_parallel: 2\n  context_parallel: 2\n");
    expect_refusal(cp.path, {"ppb-test-mindformers-cp.yaml:", "parallel_config.context_parallel",
                             "use_flash_attention"});
    const ScratchConfig hybrid(
        "hybrid", "    model_type: qwen3\n" + llama2_7b_shape + "    use_flash_attention: True\n",
        "use_legacy: False\nparallel_config:\n  context_parallel: 4\n"
        "  context_parallel_algo: hybrid_cp\n");
    expect_refusal(hybrid.path, {"parallel_config.context_parallel_algo", "hybrid_cp",
                                 "transformer_config_utils.py"});
    const ScratchConfig algo("algo", llama2_7b_shape + "    use_flash_attention: True\n",
                             "parallel_config:\n  context_parallel: 2\n"
                             "  context_parallel_algo: ring\n");
    expect_refusal(algo.path, {"context_parallel_algo", "expected colossalai_cp"});
    const ScratchConfig mtp("mtp",
                            "    model_type: qwen3\n" + llama2_7b_shape + "    mtp_num_layers: 2\n",
                            "use_legacy: False\n");
    expect_refusal(mtp.path, {"model.model_config.mtp_num_layers", "at most one"});
    const ScratchConfig chosen("chosen", llama2_7b_shape,
                               "moe_config:\n  expert_num: 8\n  num_experts_chosen: 9\n");
    expect_refusal(chosen.path, {"moe_config.num_experts_chosen", "9 experts chosen"});

    // Not a MindFormers configuration at all.
    const fs::path list = fs::temp_directory_path() / "ppb-test-mindformers-list.yaml";
    std::ofstream(list) << "- 1\n- 2\n";
    expect_refusal(list, {"expected a MindFormers training configuration"});
    fs::remove(list);
    expect_refusal(data_dir / "no-such-file.yaml", {"no-such-file.yaml"});
}

// MindFormers' current configurations name the model's settings as HuggingFace does; the names
// MindFormers accepts are COMMON_CONFIG_MAPPING's (mindspore-lab/mindformers,
// mindformers/parallel_core/transformer_config_utils.py at commit
// f52743ca27a5a8af5fbc77c5b2037c1147c7004c). Qwen3-32B (tests/data/mindformers/README.md).
BOOST_AUTO_TEST_CASE(qwen3_32bs_huggingface_names_give_its_shape) {
    const fs::path config = data_dir / "qwen3_32b_mcore.yaml";
    const auto r = ppb({"import", "mindformers-options", config.string()});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object o = json::parse(r.out).as_object();
    BOOST_TEST(o.at("num_layers").as_int64() == 64);           // num_hidden_layers
    BOOST_TEST(o.at("num_attention_heads").as_int64() == 64);  // num_attention_heads
    BOOST_TEST(o.at("num_kv_heads").as_int64() == 8);          // num_key_value_heads
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 25600);   // intermediate_size
    BOOST_TEST(o.at("hidden_size").as_int64() == 5120);
    BOOST_TEST(o.at("vocab_size").as_int64() == 151936);
    BOOST_TEST(o.at("seq_length").as_int64() == 4096);
    BOOST_TEST(o.at("tensor_parallel").as_int64() == 4);
    BOOST_TEST(o.at("param_bytes").as_double() == 4.0);  // params_dtype float32
    BOOST_TEST(o.at("untie_embeddings").as_bool());      // tie_word_embeddings False
    BOOST_TEST(o.at("gated_mlp").as_bool());
    BOOST_TEST(!o.at("linear_biases").as_bool());  // add_bias_linear False
    // 64 heads of head_dim 128 make the attention 8192 wide, not hidden_size 5120: the heads'
    // width is passed on (TransformerConfig.kv_channels).
    BOOST_TEST(o.at("kv_channels").as_int64() == 128);
    BOOST_TEST(!contains(r.err, "head_dim"), r.err);
    BOOST_TEST(o.at("qk_layernorm").as_bool());  // qk_layernorm: True
    BOOST_TEST(!contains(r.err, "qk_layernorm"), r.err);
    // The spellings it reads are known; none is "not known to ppb".
    BOOST_TEST(!contains(r.err, "not known to ppb"), r.err);
}

// GLM-4-9B's ChatGLM2Config (mindformers/models/glm2/glm2_config.py, same commit): the
// vocabulary is padded_vocab_size, the FFN ffn_hidden_size, and the key/value heads
// multi_query_group_num when multi_query_attention is on (its default in that class, 2 groups).
BOOST_AUTO_TEST_CASE(glm4s_chatglm2_names_give_its_shape) {
    const fs::path config = data_dir / "glm4_9b.yaml";
    const auto r = ppb({"import", "mindformers-options", config.string()});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object o = json::parse(r.out).as_object();
    BOOST_TEST(o.at("num_layers").as_int64() == 40);
    BOOST_TEST(o.at("num_attention_heads").as_int64() == 32);
    BOOST_TEST(o.at("num_kv_heads").as_int64() == 2);
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 13696);
    BOOST_TEST(o.at("vocab_size").as_int64() == 151552);
    BOOST_TEST(o.at("seq_length").as_int64() == 8192);
    BOOST_TEST(o.at("data_parallel").as_int64() == 2);
    BOOST_TEST(contains(r.err, config.string() +
                                   ":21: model.model_config.add_qkv_bias changes memory but is "
                                   "not modelled: biases of the query, key and value projections"),
               r.err);
    BOOST_TEST(!contains(r.err, "not known to ppb"), r.err);

    // ChatGLM2Config's defaults: multi_query_attention on, 2 groups, QKV biases.
    const std::string glm_shape =
        "    type: ChatGLM2Config\n    seq_length: 4096\n    hidden_size: 4096\n"
        "    num_layers: 8\n    num_attention_heads: 32\n    padded_vocab_size: 65024\n"
        "    ffn_hidden_size: 13696\n";
    const ScratchConfig defaults("glm-defaults", glm_shape);
    const auto d = ppb({"import", "mindformers-options", defaults.path.string()});
    BOOST_TEST_REQUIRE(d.exit_code == 0, d.err);
    BOOST_TEST(json::parse(d.out).as_object().at("num_kv_heads").as_int64() == 2);
    BOOST_TEST(contains(d.err, defaults.path.string() +
                                   ": model.model_config.add_qkv_bias (ChatGLM2Config's default "
                                   "true) changes memory"),
               d.err);
    // multi_query_attention off: as many key/value heads as heads.
    const ScratchConfig mha("glm-mha", glm_shape +
                                           "    multi_query_attention: False\n"
                                           "    add_qkv_bias: False\n");
    const auto m = ppb({"import", "mindformers-options", mha.path.string()});
    BOOST_TEST_REQUIRE(m.exit_code == 0, m.err);
    BOOST_TEST(!json::parse(m.out).as_object().contains("num_kv_heads"));
    BOOST_TEST(!contains(m.err, "add_qkv_bias"), m.err);
}

namespace {

json::object options_of(const fs::path& config, std::string* err = nullptr) {
    const auto r = ppb({"import", "mindformers-options", config.string()});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    if (err != nullptr)
        *err = r.err;
    return json::parse(r.out).as_object();
}

// The predicted peak of `options` for the stage `stage` of `stages` holding `layers`.
double predicted_mb(const json::object& options, const std::string& stage,
                    const std::string& stages, const std::string& layers) {
    const auto r = ppb({"predict", "--model", "analytic", "--model-options",
                        json::serialize(options), "--stages", stages, "--stage", stage, "--layers",
                        layers, "--micro-batches", "8", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    return json::parse(r.out).as_object().at("peak_memory_mb").to_number<double>();
}

}  // namespace

// Qwen3-30B-A3B in MindFormers' current models (tests/data/mindformers/README.md): every layer an
// MoE layer of 128 experts, 8 chosen, 768 wide (num_experts, num_experts_per_tok,
// moe_intermediate_size); expert_parallel 4 of the data_parallel x model_parallel = 4 ranks, each
// expert whole (training_graph/transformer/moe/ffn.py: the experts' weights are laid out over
// inner_dp only); dropless (an AlltoAllV dispatch: no capacity); heads of head_dim 128.
BOOST_AUTO_TEST_CASE(qwen3_moe_maps_to_the_analytic_models_experts) {
    const fs::path config = data_dir / "qwen3_30b_a3b_mcore.yaml";
    const json::object o = options_of(config);
    const json::object& moe = o.at("moe").as_object();
    BOOST_TEST(moe.at("num_experts").as_int64() == 128);
    BOOST_TEST(moe.at("top_k").as_int64() == 8);
    BOOST_TEST(moe.at("moe_ffn_hidden_size").as_int64() == 768);
    BOOST_TEST(moe.at("expert_parallel").as_int64() == 4);
    BOOST_TEST(moe.at("expert_tensor_parallel").as_int64() == 1);
    BOOST_TEST(!moe.contains("capacity_factor"));
    BOOST_TEST(!moe.contains("shared_experts"));
    BOOST_TEST(!moe.contains("first_k_dense"));
    BOOST_TEST(!moe.contains("layer_freq"));
    // Where MindFormers weighs the expert outputs is not read from its code: ppb's count from
    // before moe.routing_weights, the combine's.
    BOOST_TEST(moe.at("routing_weights").as_string() == "combine");
    BOOST_TEST(o.at("kv_channels").as_int64() == 128);
    BOOST_TEST(o.at("num_kv_heads").as_int64() == 4);
    BOOST_TEST(predicted_mb(o, "3", "4", "moe.none=12") > 0.0);

    // The model type alone takes Qwen3MoeConfig's defaults (num_experts 128,
    // num_experts_per_tok 8, moe_intermediate_size 768: configuration_qwen3_moe.py).
    const ScratchConfig type("moe-type", llama2_7b_shape + "    model_type: qwen3_moe\n",
                             "use_legacy: False\n");
    const json::object t = options_of(type.path);
    BOOST_TEST(t.at("moe").at("num_experts").as_int64() == 128);
    BOOST_TEST(t.at("moe").at("top_k").as_int64() == 8);
    BOOST_TEST(t.at("moe").at("moe_ffn_hidden_size").as_int64() == 768);
    // A setting only experts have, without a count, cannot be mapped: the count is in the
    // model's own files.
    const ScratchConfig topk("moe-topk", llama2_7b_shape + "    num_experts_per_tok: 8\n");
    expect_refusal(topk.path,
                   {":10: model.model_config.num_experts_per_tok: a setting only MoE layers have",
                    "give the experts' count"});
    // One expert is no mixture (MoEConfig's expert_num 1, its default): planned as dense.
    const ScratchConfig one("moe-one", llama2_7b_shape, "moe_config:\n  expert_num: 1\n");
    BOOST_TEST(!options_of(one.path).contains("moe"));
}

// The classic MoE (moe_config with LLaMA-style layers, mindformers/modules/transformer/moe.py):
// the routed experts are the model's FFN (intermediate_size, or LlamaFeedForward's width), each
// split over model_parallel (llama_layer.py: w1 sharded (ep, mp, 1)), one chosen and a capacity
// factor of 1.1 by default (MoEConfig); moe_config.expert_model_parallel 1 keeps each expert
// whole. Qwen2-57B-A14B (tests/data/mindformers/README.md): 64 experts of 2560, 8 chosen, the
// shared experts one MLP of int(2560 x 8.0) = 20 480 (llama_layer.py), capacity 1.1.
BOOST_AUTO_TEST_CASE(the_classic_moe_keeps_its_capacity_and_splits_experts_over_model_parallel) {
    const ScratchConfig moe("moe", llama2_7b_shape, "moe_config:\n  expert_num: 8\n");
    const json::object m = options_of(moe.path).at("moe").as_object();
    BOOST_TEST(m.at("num_experts").as_int64() == 8);
    BOOST_TEST(m.at("top_k").as_int64() == 1);
    BOOST_TEST(m.at("moe_ffn_hidden_size").as_int64() == 11008);  // LlamaFeedForward's 4096 width
    BOOST_TEST(m.at("expert_tensor_parallel").as_int64() == 2);   // model_parallel
    BOOST_TEST(m.at("expert_parallel").as_int64() == 1);
    BOOST_TEST(m.at("capacity_factor").as_double() == 1.1);
    const ScratchConfig whole("moe-whole", llama2_7b_shape,
                              "moe_config:\n  expert_num: 8\n  expert_model_parallel: 1\n"
                              "  capacity_factor: 2.0\n");
    const json::object w = options_of(whole.path).at("moe").as_object();
    BOOST_TEST(w.at("expert_tensor_parallel").as_int64() == 1);
    BOOST_TEST(w.at("capacity_factor").as_double() == 2.0);

    std::string err;
    const json::object q = options_of(data_dir / "qwen2_57b_moe.yaml", &err);
    const json::object& qm = q.at("moe").as_object();
    BOOST_TEST(qm.at("num_experts").as_int64() == 64);
    BOOST_TEST(qm.at("top_k").as_int64() == 8);
    BOOST_TEST(qm.at("moe_ffn_hidden_size").as_int64() == 2560);
    BOOST_TEST(qm.at("shared_experts").as_int64() == 1);
    BOOST_TEST(qm.at("shared_expert_ffn_hidden_size").as_int64() == 20480);
    BOOST_TEST(qm.at("expert_parallel").as_int64() == 2);
    BOOST_TEST(qm.at("expert_tensor_parallel").as_int64() == 4);
    BOOST_TEST(qm.at("capacity_factor").as_double() == 1.1);
    // Under sequence parallelism MindFormers keeps the shared experts whole on every
    // model_parallel rank (llama_layer.py: parallel_config_sp.model_parallel = 1).
    BOOST_TEST(qm.at("shared_experts_replicated").as_bool());
    BOOST_TEST(predicted_mb(q, "3", "4", "none=7") > 0.0);
}

// DeepSeek-V3 671B as MindFormers' research model builds it (tests/data/mindformers/README.md;
// research/deepseek3/deepseek2_model.py): MLA with both latents and their norms, 256 experts of
// 2048 with one shared expert of moe_intermediate_size x 1, the first 3 layers dense of
// intermediate_size 18 432, the grouped-matmul MoE (use_gmm: dropless, "Capacity factor is
// ignored", each expert whole: moev3.py), expert_parallel 8, one MTP layer on the last stage.
BOOST_AUTO_TEST_CASE(deepseek_v3s_mla_mtp_and_experts_are_mapped) {
    std::string err;
    const json::object o = options_of(data_dir / "deepseek3_671b.yaml", &err);
    const json::object& mla = o.at("mla").as_object();
    BOOST_TEST(mla.at("q_lora_rank").as_int64() == 1536);
    BOOST_TEST(mla.at("kv_lora_rank").as_int64() == 512);
    BOOST_TEST(mla.at("qk_head_dim").as_int64() == 128);         // qk_nope_head_dim
    BOOST_TEST(mla.at("qk_pos_emb_head_dim").as_int64() == 64);  // qk_rope_head_dim
    BOOST_TEST(mla.at("v_head_dim").as_int64() == 128);
    BOOST_TEST(mla.at("qk_layernorm").as_bool());
    BOOST_TEST(!o.contains("num_kv_heads"));  // MLA's heads: n_kv_heads is not used
    const json::object& moe = o.at("moe").as_object();
    BOOST_TEST(moe.at("num_experts").as_int64() == 256);
    BOOST_TEST(moe.at("top_k").as_int64() == 8);
    BOOST_TEST(moe.at("moe_ffn_hidden_size").as_int64() == 2048);
    BOOST_TEST(moe.at("shared_experts").as_int64() == 1);
    BOOST_TEST(moe.at("shared_expert_ffn_hidden_size").as_int64() == 2048);
    BOOST_TEST(moe.at("expert_parallel").as_int64() == 8);
    BOOST_TEST(moe.at("expert_tensor_parallel").as_int64() == 1);
    BOOST_TEST(moe.at("first_k_dense").as_int64() == 3);
    BOOST_TEST(!moe.contains("capacity_factor"));
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 18432);
    BOOST_TEST(o.at("mtp_num_layers").as_int64() == 1);
    BOOST_TEST(contains(err, "the last stage also holds the 1 MTP layer"), err);
    // The last of 16 stages: (61 + 1) // 16 = 3 layers and offset -1 (LayerSetting,
    // mindformers/models/utils.py): 2 layers, one of them the MTP layer.
    const double last = predicted_mb(o, "15", "16", "moe.full=1");
    json::object without_mtp = o;
    without_mtp.erase("mtp_num_layers");
    BOOST_TEST(last > predicted_mb(without_mtp, "15", "16", "moe.full=1"));
    BOOST_TEST(predicted_mb(o, "0", "16", "dense.full=3,moe.full=1") > 0.0);
}

// MLA of the current models (MLATransformerConfig): q_lora_rank null is no query latent, the
// latent norms come with qk_layernorm; the classic model always has both (deepseek3_config.py
// defaults). Context parallelism: colossalai_cp (the default) gathers keys and values,
// use_ring_attention passes them round a ring, ulysses_cp is an all-to-all
// (modules/flash_attention.py, llama_transformer.py); classic hybrid_cp without the ring is
// counted as a2a+p2p, said.
BOOST_AUTO_TEST_CASE(mla_and_context_parallelism_follow_each_family) {
    const ScratchConfig mla("mla", llama2_7b_shape + "    kv_lora_rank: 512\n");
    const json::object classic = options_of(mla.path).at("mla").as_object();
    BOOST_TEST(classic.at("q_lora_rank").as_int64() == 1536);
    BOOST_TEST(classic.at("qk_layernorm").as_bool());
    const ScratchConfig lite("mla-lite",
                             "    model_type: deepseek_v3\n" + llama2_7b_shape +
                                 "    q_lora_rank: null\n    kv_lora_rank: 512\n"
                                 "    qk_layernorm: False\n    num_experts: 8\n",
                             "use_legacy: False\n");
    const json::object current = options_of(lite.path).at("mla").as_object();
    BOOST_TEST(!current.contains("q_lora_rank"));
    BOOST_TEST(!current.at("qk_layernorm").as_bool());

    const auto cp_type = [](const std::string& name, const std::string& parallel) {
        const ScratchConfig c(
            name, llama2_7b_shape + "    use_flash_attention: True\n",
            "parallel_config:\n  model_parallel: 2\n  context_parallel: 4\n" + parallel);
        std::string err;
        const json::object o = options_of(c.path, &err);
        BOOST_TEST(o.at("context_parallel").as_int64() == 4);
        return std::make_pair(std::string(o.at("cp_comm_type").as_string()), err);
    };
    BOOST_TEST(cp_type("cp-gather", "").first == "all_gather");
    BOOST_TEST(cp_type("cp-ulysses", "  context_parallel_algo: ulysses_cp\n").first == "a2a");
    BOOST_TEST(cp_type("cp-ring", "  use_ring_attention: True\n").first == "p2p");
    const auto hybrid = cp_type("cp-hybrid", "  context_parallel_algo: hybrid_cp\n");
    BOOST_TEST(hybrid.first == "a2a+p2p");
    BOOST_TEST(contains(hybrid.second, "an upper bound"), hybrid.second);
}

// Two names of one setting: taken when they agree, refused naming both keys, values and lines
// when they do not (MindFormers' converter refuses two names of one field at all).
BOOST_AUTO_TEST_CASE(two_names_of_one_setting_must_agree) {
    const ScratchConfig agree("agree", llama2_7b_shape +
                                           "    num_hidden_layers: 32\n"
                                           "    num_attention_heads: 32\n");
    const auto a = ppb({"import", "mindformers-options", agree.path.string()});
    BOOST_TEST_REQUIRE(a.exit_code == 0, a.err);
    BOOST_TEST(json::parse(a.out).as_object().at("num_layers").as_int64() == 32);

    const ScratchConfig layers("layers", llama2_7b_shape + "    num_hidden_layers: 40\n");
    const auto l = ppb({"import", "mindformers-options", layers.path.string()});
    BOOST_TEST(l.exit_code == 2);
    BOOST_TEST(l.out.empty());
    const std::string file = layers.path.string();
    BOOST_TEST(l.err == "ppb: error: " + file + ":6: model.model_config.num_layers is 32, but " +
                            file +
                            ":10: model.model_config.num_hidden_layers is 40: MindFormers reads "
                            "both as the transformer layers; give one of them, or make them "
                            "agree\n");

    const ScratchConfig kv("kv", llama2_7b_shape +
                                     "    n_kv_heads: 8\n"
                                     "    multi_query_attention: True\n"
                                     "    multi_query_group_num: 2\n");
    const auto k = ppb({"import", "mindformers-options", kv.path.string()});
    BOOST_TEST(k.exit_code == 2);
    BOOST_TEST(k.err == "ppb: error: " + kv.path.string() +
                            ":10: model.model_config.n_kv_heads is 8, but " + kv.path.string() +
                            ":12: model.model_config.multi_query_group_num is 2: MindFormers reads "
                            "both as the key/value heads; give one of them, or make them agree\n");

    // moe_config's keys are the model's for MindFormers' current models (build_model.py).
    const ScratchConfig experts("experts", llama2_7b_shape + "    num_experts: 16\n",
                                "moe_config:\n  expert_num: 8\n");
    const auto e = ppb({"import", "mindformers-options", experts.path.string()});
    BOOST_TEST(e.exit_code == 2);
    BOOST_TEST(e.err == "ppb: error: " + experts.path.string() +
                            ":16: moe_config.expert_num is 8, but " + experts.path.string() +
                            ":10: model.model_config.num_experts is 16: MindFormers reads both as "
                            "the number of experts; give one of them, or make them agree\n");

    // The dtype of the parameters by either name.
    const ScratchConfig dtypes("dtypes", llama2_7b_shape +
                                             "    param_init_type: float16\n"
                                             "    params_dtype: float32\n");
    expect_refusal(dtypes.path, {":10: model.model_config.param_init_type is float16, but",
                                 ":11: model.model_config.params_dtype is float32"});
}

// A current configuration that takes the model's shape from pretrained_model_dir (the
// HuggingFace config.json, which ppb does not read) says so when a key is missing.
BOOST_AUTO_TEST_CASE(a_missing_key_names_every_name_and_pretrained_model_dir) {
    const ScratchConfig config("pretrained", "    seq_length: 4096\n    hidden_size: 4096\n",
                               "pretrained_model_dir: \"/path/to/Qwen3-32B\"\n");
    const auto r = ppb({"import", "mindformers-options", config.path.string()});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.err ==
               "ppb: error: " + config.path.string() +
                   ": missing model.model_config.num_layers (or num_hidden_layers, n_layer), the "
                   "transformer layers; the model's shape is read from pretrained_model_dir "
                   "'/path/to/Qwen3-32B' (" +
                   config.path.string() +
                   ":9: pretrained_model_dir), whose config.json ppb does not read: copy "
                   "num_hidden_layers from it into model.model_config\n");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace mindformers_options_tests
