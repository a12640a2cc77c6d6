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

BOOST_AUTO_TEST_CASE(unknown_model_keys_are_named_in_a_warning) {
    const ScratchConfig config("unknown", llama2_7b_shape + "    shiny_new_feature: 3\n");
    const auto r = ppb({"import", "mindformers-options", config.path.string()});
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(contains(r.err, "model.model_config.shiny_new_feature is not known to ppb"), r.err);
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

    // Runs the analytic model does not cover: refused by name, with the line.
    const ScratchConfig cp("cp", llama2_7b_shape,
                           "parallel_config:\n  model_parallel: 2\n  context_parallel: 2\n");
    expect_refusal(cp.path, {"ppb-test-mindformers-cp.yaml:", "parallel_config.context_parallel",
                             "does not cover"});
    const ScratchConfig moe("moe", llama2_7b_shape, "moe_config:\n  expert_num: 8\n");
    expect_refusal(moe.path, {"moe_config.expert_num", "does not cover"});
    const ScratchConfig mla("mla", llama2_7b_shape + "    kv_lora_rank: 512\n");
    expect_refusal(mla.path, {"model.model_config.kv_lora_rank", "does not cover"});

    // Not a MindFormers configuration at all.
    const fs::path list = fs::temp_directory_path() / "ppb-test-mindformers-list.yaml";
    std::ofstream(list) << "- 1\n- 2\n";
    expect_refusal(list, {"expected a MindFormers training configuration"});
    fs::remove(list);
    expect_refusal(data_dir / "no-such-file.yaml", {"no-such-file.yaml"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace mindformers_options_tests
