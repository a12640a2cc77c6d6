// 'ppb import torchtitan-options': the analytic model's options from a torchtitan training TOML.
// The files of tests/data/torchtitan hold the keys of torchtitan's own configurations
// (tests/data/torchtitan/README.md); the figures expected are torchtitan's arithmetic on them
// (pytorch/torchtitan commit 238fa9953e4aec2a62582121564273d7cbb1e9f1): the flavour tables,
// llama3's FeedForward width, the parallel dimensions' rules. Bad files and flags are refused
// with exit status 2, a message naming the key and its line, and nothing on stdout.
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
namespace torchtitan_options_tests {

namespace {

const fs::path data_dir = PPB_TORCHTITAN_DATA_DIR;

ppb_test::ProcessResult ppb(const std::vector<std::string>& args) {
    return ppb_test::run_process(
        PPB_EXE, args, {{"PPB_PLUGIN_PATH", PPB_BUILD_PLUGIN_DIR}, {"PPB_DEBUG_PLUGINS", ""}});
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

struct Imported {
    json::object options;
    std::string err;
};

Imported import(const fs::path& config, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = {"import", "torchtitan-options"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(config.string());
    const auto r = ppb(args);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    return {json::parse(r.out).as_object(), r.err};
}

void expect_refusal(const fs::path& config, const std::vector<std::string>& flags,
                    const std::vector<std::string>& parts) {
    std::vector<std::string> args = {"import", "torchtitan-options"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(config.string());
    const auto r = ppb(args);
    BOOST_TEST(r.exit_code == 2, "exit status " << r.exit_code << ", stderr: " << r.err);
    BOOST_TEST(r.out.empty(), r.out);
    for (const std::string& part : parts)
        BOOST_TEST(contains(r.err, part), "'" << part << "' not in: " << r.err);
}

// A scratch TOML file, removed with the object.
struct ScratchToml {
    fs::path path;
    ScratchToml(const std::string& name, const std::string& text) {
        path = fs::temp_directory_path() / ("ppb-test-torchtitan-" + name + ".toml");
        std::ofstream(path) << text;
    }
    ScratchToml(const ScratchToml&) = delete;
    ScratchToml& operator=(const ScratchToml&) = delete;
    ~ScratchToml() { fs::remove(path); }
};

double predicted_mb(const json::object& options, const std::string& layers) {
    const auto r = ppb({"predict", "--model", "analytic", "--model-options",
                        json::serialize(options), "--stages", "1", "--stage", "0", "--layers",
                        layers, "--micro-batches", "1", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    return json::parse(r.out).as_object().at("peak_memory_mb").to_number<double>();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(torchtitan_options)

// Llama 3.1 70B on 64 GPUs: data_parallel_shard_degree -1 is 64 / 8 = 8 (parallel_dims.py);
// its FFN 28 672 by llama3's rule: int(2 * 4 * 8192 / 3) = 21 845, int(1.3 * 21 845) = 28 398,
// up to a multiple of 4096: 28 672 (the published width); FSDP2 over the 8 shards with fp32
// parameters, gradients and AdamW state (training.dtype float32) and bf16 compute; tensor
// parallelism with its sequence sharding; full activation checkpointing.
BOOST_AUTO_TEST_CASE(llama3_70b_gets_its_shape_and_fsdp) {
    const Imported r = import(data_dir / "llama3_70b.toml", {"--world-size", "64"});
    const json::object& o = r.options;
    BOOST_TEST(o.at("hidden_size").as_int64() == 8192);
    BOOST_TEST(o.at("num_layers").as_int64() == 80);
    BOOST_TEST(o.at("num_attention_heads").as_int64() == 64);
    BOOST_TEST(o.at("num_kv_heads").as_int64() == 8);
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 28672);
    BOOST_TEST(o.at("vocab_size").as_int64() == 128256);
    BOOST_TEST(o.at("seq_length").as_int64() == 8192);
    BOOST_TEST(o.at("micro_batch_size").as_int64() == 8);  // no pipeline: the local batch
    BOOST_TEST(o.at("tensor_parallel").as_int64() == 8);
    BOOST_TEST(o.at("sequence_parallel").as_bool());
    BOOST_TEST(o.at("data_parallel").as_int64() == 8);
    BOOST_TEST(o.at("data_parallel_sharding").as_string() == "optim_grads_params");
    BOOST_TEST(o.at("param_bytes").as_double() == 4.0);
    BOOST_TEST(o.at("grad_bytes").as_double() == 4.0);
    BOOST_TEST(o.at("optimizer_bytes").as_double() == 8.0);
    BOOST_TEST(!o.contains("activation_bytes"));  // bf16 compute: the default 2
    BOOST_TEST(o.at("untie_embeddings").as_bool());
    BOOST_TEST(contains(r.err, "every layer 'full'"), r.err);
    BOOST_TEST(predicted_mb(o, "full=80") > 0.0);
    // Without --world-size the -1 cannot be resolved; a world size the degrees do not give is
    // refused.
    expect_refusal(data_dir / "llama3_70b.toml", {},
                   {"data_parallel_shard_degree is -1", "--world-size"});
    expect_refusal(data_dir / "llama3_70b.toml", {"--world-size", "60"},
                   {"--world-size 60 is not a multiple of", "= 8"});
}

// Llama 3.1 405B: int(2 * 4 * 16384 / 3) = 43 690, int(1.2 * 43 690) = 52 428, up to 4096:
// 53 248; its float8 converter under the old name "float8", torchao's tensorwise scaling (no
// recipe_name), with transposed FP8 copies on Hopper and none on Blackwell.
BOOST_AUTO_TEST_CASE(llama3_405b_trains_its_linears_in_float8) {
    const Imported hopper = import(data_dir / "llama3_405b.toml", {"--world-size", "512"});
    BOOST_TEST(hopper.options.at("ffn_hidden_size").as_int64() == 53248);
    BOOST_TEST(hopper.options.at("data_parallel").as_int64() == 64);
    BOOST_TEST(hopper.options.at("fp8_recipe").as_string() == "tensorwise");
    BOOST_TEST(hopper.options.at("fp8_transposes").as_bool());
    const Imported blackwell = import(data_dir / "llama3_405b.toml",
                                      {"--world-size", "512", "--compute-capability", "10"});
    BOOST_TEST(!blackwell.options.at("fp8_transposes").as_bool());
    // Hopper's transposed FP8 copies of the weights are memory Blackwell does not hold.
    BOOST_TEST(predicted_mb(hopper.options, "full=126") >
               predicted_mb(blackwell.options, "full=126"));
}

// DeepSeek-V3 16B (deepseekv3_args["16B"]): multi-latent attention without a query latent
// (q_lora_rank 0), 64 routed experts of 1408 with 6 chosen, 2 shared experts fused into one
// MLP of 2 x 1408 = 2816 (moe.py), the first layer dense of inter_dim 10 944; expert parallel 8
// over the 8 FSDP shards, each expert whole (expert_tensor_parallel_degree 1). Op-level
// selective checkpointing is counted as no recompute, said.
BOOST_AUTO_TEST_CASE(deepseek_v3_16b_gets_mla_and_experts) {
    const Imported r = import(data_dir / "deepseek_v3_16b.toml", {"--world-size", "8"});
    const json::object& o = r.options;
    BOOST_TEST(o.at("ffn_hidden_size").as_int64() == 10944);
    BOOST_TEST(o.at("num_layers").as_int64() == 27);
    BOOST_TEST(!o.contains("num_kv_heads"));
    const json::object& mla = o.at("mla").as_object();
    BOOST_TEST(!mla.contains("q_lora_rank"));
    BOOST_TEST(mla.at("kv_lora_rank").as_int64() == 512);
    BOOST_TEST(mla.at("qk_head_dim").as_int64() == 128);
    BOOST_TEST(mla.at("qk_pos_emb_head_dim").as_int64() == 64);
    BOOST_TEST(mla.at("v_head_dim").as_int64() == 128);
    const json::object& moe = o.at("moe").as_object();
    BOOST_TEST(moe.at("num_experts").as_int64() == 64);
    BOOST_TEST(moe.at("top_k").as_int64() == 6);
    BOOST_TEST(moe.at("moe_ffn_hidden_size").as_int64() == 1408);
    BOOST_TEST(moe.at("shared_experts").as_int64() == 1);
    BOOST_TEST(moe.at("shared_expert_ffn_hidden_size").as_int64() == 2816);
    BOOST_TEST(moe.at("expert_parallel").as_int64() == 8);
    BOOST_TEST(moe.at("expert_tensor_parallel").as_int64() == 1);
    BOOST_TEST(moe.at("first_k_dense").as_int64() == 1);
    // torchtitan's combine weighs an fp32 copy of the expert outputs (token_dispatcher.py).
    BOOST_TEST(moe.at("routing_weights").as_string() == "combine_fp32");
    BOOST_TEST(contains(r.err, "every layer 'none'"), r.err);
    BOOST_TEST(contains(r.err, "op-level selective checkpointing"), r.err);
    BOOST_TEST(predicted_mb(o, "dense.none=1,moe.none=26") > 0.0);
}

// Qwen3-30B-A3B with every degree: heads of 128 channels on a hidden size of 2048 (kv_channels),
// every layer MoE, context parallelism rotating keys and values round the ring (alltoall),
// two pipeline stages of ZBVZeroBubble (two stages a rank), 8 / 2 = 4 micro-batches of 2.
BOOST_AUTO_TEST_CASE(qwen3_moe_with_every_degree) {
    const ScratchToml toml("qwen3-4d",
                           "[model]\nname = \"qwen3\"\nflavor = \"30B-A3B\"\n"
                           "[training]\nlocal_batch_size = 8\nseq_len = 4096\n"
                           "[parallelism]\ndata_parallel_shard_degree = 2\n"
                           "tensor_parallel_degree = 2\ncontext_parallel_degree = 2\n"
                           "context_parallel_rotate_method = \"alltoall\"\n"
                           "pipeline_parallel_degree = 2\n"
                           "pipeline_parallel_schedule = \"ZBVZeroBubble\"\n"
                           "pipeline_parallel_microbatch_size = 2\nexpert_parallel_degree = 4\n"
                           "[activation_checkpoint]\nmode = \"selective\"\n"
                           "selective_ac_option = \"2\"\n");
    const Imported r = import(toml.path, {"--world-size", "16"});
    const json::object& o = r.options;
    BOOST_TEST(o.at("kv_channels").as_int64() == 128);
    BOOST_TEST(o.at("num_kv_heads").as_int64() == 4);
    BOOST_TEST(o.at("context_parallel").as_int64() == 2);
    BOOST_TEST(o.at("cp_comm_type").as_string() == "p2p");
    BOOST_TEST(o.at("micro_batch_size").as_int64() == 2);
    BOOST_TEST(o.at("moe").at("num_experts").as_int64() == 128);
    BOOST_TEST(o.at("moe").at("expert_parallel").as_int64() == 4);
    BOOST_TEST(!o.at("moe").as_object().contains("first_k_dense"));
    BOOST_TEST(contains(r.err, "--stages 2 --micro-batches 4 --schedule zb-v --chunks 2"), r.err);
    BOOST_TEST(contains(r.err, "every 2-th block checkpointed"), r.err);
    BOOST_TEST(o.at("qk_layernorm").as_bool());  // Qwen3's q_norm and k_norm
    // With 16 GPUs of degrees 2 x 2 x 2 x 2 the shard degree must be 2: 8 is refused.
    expect_refusal(toml.path, {"--world-size", "64"}, {"--world-size 64, but", "gives 16 GPUs"});
}

// Bad files: each refused naming the key and its line, with what ppb knows.
BOOST_AUTO_TEST_CASE(bad_files_are_refused_naming_the_key_and_line) {
    const ScratchToml model("model", "[model]\nname = \"gpt5\"\n");
    expect_refusal(model.path, {},
                   {":2: model.name", "'gpt5'", "known: llama3, qwen3, deepseek_v3"});
    const ScratchToml flavour("flavour", "[model]\nname = \"llama3\"\nflavor = \"7B\"\n");
    expect_refusal(flavour.path, {},
                   {":3: model.flavor", "llama3 has no flavour '7B'", "8B, 8B_flex"});
    const ScratchToml kind("kind",
                           "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                           "data_parallel_shard_degree = \"8\"\n");
    expect_refusal(kind.path, {},
                   {":5: parallelism.data_parallel_shard_degree",
                    "expected an integer, got the string \"8\""});
    const ScratchToml zero("zero",
                           "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                           "tensor_parallel_degree = 0\ndata_parallel_shard_degree = 1\n");
    expect_refusal(zero.path, {}, {":5: parallelism.tensor_parallel_degree", "from 1"});
    const ScratchToml heads("heads",
                            "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                            "tensor_parallel_degree = 3\ndata_parallel_shard_degree = 1\n");
    expect_refusal(heads.path, {}, {"tensor_parallel_degree", "does not divide"});
    const ScratchToml syntax("syntax", "[model\nname = \"llama3\"\n");
    expect_refusal(syntax.path, {}, {"ppb-test-torchtitan-syntax.toml:1:", "not TOML"});
    const ScratchToml micro("micro",
                            "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\n"
                            "local_batch_size = 3\n[parallelism]\npipeline_parallel_degree = 2\n"
                            "pipeline_parallel_microbatch_size = 2\n"
                            "data_parallel_shard_degree = 1\n");
    expect_refusal(micro.path, {},
                   {":8: parallelism.pipeline_parallel_microbatch_size",
                    "does not divide training.local_batch_size 3"});
    const ScratchToml mode("mode",
                           "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                           "[parallelism]\ndata_parallel_shard_degree = 1\n"
                           "[activation_checkpoint]\nmode = \"half\"\n");
    expect_refusal(mode.path, {}, {"activation_checkpoint.mode", "'half'"});
    const ScratchToml experts("experts",
                              "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                              "data_parallel_shard_degree = 8\nexpert_parallel_degree = 8\n");
    expect_refusal(experts.path, {}, {"expert_parallel_degree", "has no experts"});
    // An unknown key of a section read is named, not fatal.
    const ScratchToml unknown("unknown",
                              "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                              "data_parallel_shard_degree = 1\ntensor_parallel_degre = 2\n");
    const Imported u = import(unknown.path);
    BOOST_TEST(contains(u.err, ":6: parallelism.tensor_parallel_degre is not known to ppb"), u.err);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace torchtitan_options_tests
