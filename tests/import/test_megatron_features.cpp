// The analytic options of Megatron-LM's newer features from a run's flags
// (host_api/importers/src/megatron_features.cpp through analytic_options_from_megatron):
// multi-latent attention and the recompute modules, with Megatron-LM's defaults
// (NVIDIA/Megatron-LM d98e8a64ddf34856e74b24714e3bedb2f5a39553, megatron/training/arguments.py).
#include <ppb/importers/layout.hpp>
#include <ppb/importers/megatron_arguments.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb::importers;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_features_tests {

namespace {

// Whitespace-separated arguments, as a shell gives them: a list flag's values are the words
// after it ("--recompute-modules core_attn mlp").
std::vector<std::string> split(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    std::string word;
    while (in >> word)
        out.push_back(word);
    return out;
}

MegatronAnalyticOptions map(const std::string& args, MegatronRunContext context = {8U, {}, 9U}) {
    return analytic_options_from_megatron(split(args), context);
}

json::object options_of(const MegatronAnalyticOptions& r) {
    return json::parse(r.options_json).as_object();
}

bool warns_about(const MegatronAnalyticOptions& r, const std::string& text) {
    return std::ranges::any_of(
        r.warnings, [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

std::string flag_error(const std::string& args) {
    try {
        (void)map(args);
    } catch (const FlagError& e) {
        return e.what();
    }
    BOOST_ERROR("accepted: " << args);
    return {};
}

// The DeepSeek-V3 proxy of Megatron-LM's CI (tests/functional_tests/test_cases/moe/
// gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental/model_config.yaml, commit
// 18e953661ea2b151361d5d0e7d14ce1f4a5cf75a): the flags of its attention.
const std::string proxy =
    "--num-layers 16 --hidden-size 1024 --ffn-hidden-size 4096 --num-attention-heads 32 "
    "--kv-channels 128 --seq-length 4096 --micro-batch-size 4 --tensor-model-parallel-size 2 "
    "--sequence-parallel --bf16 --swiglu --disable-bias-linear --vocab-size 50000 "
    "--attention-dropout 0.0 --hidden-dropout 0.0 --position-embedding-type rope "
    "--multi-latent-attention --qk-layernorm --q-lora-rank 1536 --kv-lora-rank 512 "
    "--qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 --rotary-scaling-factor 40 "
    "--mscale 1.0 --mscale-all-dim 1.0 ";

}  // namespace

BOOST_AUTO_TEST_SUITE(megatron_features)

BOOST_AUTO_TEST_CASE(multi_latent_attention_maps_its_widths_and_norms) {
    const auto r = map(proxy);
    const json::object mla = options_of(r).at("mla").as_object();
    BOOST_TEST(mla.at("q_lora_rank").as_int64() == 1536);
    BOOST_TEST(mla.at("kv_lora_rank").as_int64() == 512);
    BOOST_TEST(mla.at("qk_head_dim").as_int64() == 128);
    BOOST_TEST(mla.at("qk_pos_emb_head_dim").as_int64() == 64);
    BOOST_TEST(mla.at("v_head_dim").as_int64() == 128);
    BOOST_TEST(mla.at("qk_layernorm").as_bool());
    // MLA's heads have their own widths: --kv-channels (128, not h / a = 32) is not refused, and
    // --qk-layernorm is MLA's latent norms, not a warning.
    BOOST_TEST(r.warnings.empty(), (r.warnings.empty() ? std::string() : r.warnings.front()));
}

BOOST_AUTO_TEST_CASE(megatrons_mla_defaults_apply_to_flags_not_given) {
    // arguments.py: no query latent, --kv-lora-rank 32, heads of 128 + 64 and values of 128;
    // without --qk-layernorm Megatron-LM builds no latent norms.
    const auto r =
        map("--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
            "--vocab-size 1000 --bf16 --multi-latent-attention");
    const json::object mla = options_of(r).at("mla").as_object();
    BOOST_TEST(!mla.contains("q_lora_rank"));
    BOOST_TEST(mla.at("kv_lora_rank").as_int64() == 32);
    BOOST_TEST(mla.at("qk_head_dim").as_int64() == 128);
    BOOST_TEST(mla.at("qk_pos_emb_head_dim").as_int64() == 64);
    BOOST_TEST(mla.at("v_head_dim").as_int64() == 128);
    BOOST_TEST(!mla.at("qk_layernorm").as_bool());
}

BOOST_AUTO_TEST_CASE(without_mla_head_widths_and_query_key_norms_are_passed_on) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 ";
    // Heads of another width than h / a (16 here) are passed on (Qwen3's --kv-channels 128);
    // equal to h / a they are Megatron's default and left out.
    BOOST_TEST(options_of(map(base + "--kv-channels 32")).at("kv_channels").as_int64() == 32);
    BOOST_TEST(!options_of(map(base + "--kv-channels 16")).contains("kv_channels"));
    const auto r = map(base + "--qk-layernorm");
    BOOST_TEST(options_of(r).at("qk_layernorm").as_bool());
    BOOST_TEST(!warns_about(r, "--qk-layernorm"));
    BOOST_TEST(!options_of(r).contains("mla"));
    BOOST_TEST(flag_error(base + "--multi-latent-attention --group-query-attention")
                   .find("--group-query-attention with --multi-latent-attention") !=
               std::string::npos);
}

// Transformer Engine's CUDA graphs are the eager run's memory (their buffers reused across
// micro-batches, their saved tensors in one shared pool: megatron/core/transformer/cuda_graphs.py,
// TECudaGraphHelper), said in a warning; Megatron's own (local, --enable-cuda-graph) are refused.
BOOST_AUTO_TEST_CASE(transformer_engines_cuda_graphs_are_predicted_megatrons_own_refused) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 ";
    const auto eager = map(base);
    const auto graphed =
        map(base + "--cuda-graph-impl transformer_engine --cuda-graph-scope attn mlp");
    BOOST_TEST(options_of(graphed) == options_of(eager));
    BOOST_TEST(warns_about(graphed,
                           "--cuda-graph-impl transformer_engine: Transformer Engine's "
                           "CUDA graphs are counted as the eager run's memory"));
    const auto external = map(base + "--external-cuda-graph");
    BOOST_TEST(warns_about(external, "Transformer Engine's CUDA graphs are counted"),
               (external.warnings.empty() ? std::string() : external.warnings.back()));
    BOOST_TEST(flag_error(base + "--cuda-graph-impl local")
                   .find("--cuda-graph-impl: Megatron-LM's "
                         "own CUDA graphs") != std::string::npos);
    BOOST_TEST(flag_error(base + "--enable-cuda-graph").find("--enable-cuda-graph") !=
               std::string::npos);
}

// With no eager iteration before the capture (--cuda-graph-warmup-steps 0; the default is 3,
// megatron/training/arguments.py at commit 69ba8096f0daf65490b5c5a26e93b1d11367fd68) the peak is
// the capture's or the replay's, which the model counts for the attention's graphs; the scope's
// other parts stay eager, said by name, and the pool beyond the allocated memory is said too.
BOOST_AUTO_TEST_CASE(attention_graphs_without_warm_up_are_counted_as_the_allocator_sees_them) {
    const std::string base =
        "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 1000 --bf16 --cuda-graph-impl transformer_engine ";
    const auto attn = map(base + "--cuda-graph-scope attn --cuda-graph-warmup-steps 0");
    BOOST_TEST(json::serialize(options_of(attn).at("cuda_graph_scope")) == R"(["attn"])");
    BOOST_TEST(warns_about(attn, "leaves out the graphs' memory pool"));
    // The deprecated name of the scope, and a scope with more than the attention.
    const auto old_name = map(base + "--cuda-graph-modules attn --cuda-graph-warmup-steps 0");
    BOOST_TEST(options_of(old_name).contains("cuda_graph_scope"));
    const auto router =
        map(base + "--cuda-graph-scope attn moe_router --cuda-graph-warmup-steps 0");
    BOOST_TEST(json::serialize(options_of(router).at("cuda_graph_scope")) == R"(["attn"])");
    BOOST_TEST(warns_about(router, "the scope's moe_router is counted as the eager run's memory"));
    // Warm-up steps run eagerly first (given, or the default): the eager run's memory.
    for (const std::string& warm :
         {base + "--cuda-graph-scope attn", base + "--cuda-graph-scope attn "
                                                   "--cuda-graph-warmup-steps 1"}) {
        const auto r = map(warm);
        BOOST_TEST(!options_of(r).contains("cuda_graph_scope"), warm);
        BOOST_TEST(warns_about(r, "the peak of the warm-up steps run before the capture"), warm);
    }
    // The whole layer (no scope) and a scope without the attention: eager.
    for (const std::string& whole :
         {base + "--cuda-graph-warmup-steps 0", base + "--cuda-graph-scope mlp "
                                                       "--cuda-graph-warmup-steps 0"}) {
        const auto r = map(whole);
        BOOST_TEST(!options_of(r).contains("cuda_graph_scope"), whole);
        BOOST_TEST(warns_about(r, "only the attention's scope is counted"), whole);
    }
}

BOOST_AUTO_TEST_CASE(recompute_modules_are_the_select_kinds_modules) {
    // argparse's nargs='+': every value up to the next flag.
    const json::array listed = options_of(map(proxy + "--recompute-modules core_attn mla_up_proj"))
                                   .at("recompute_modules")
                                   .as_array();
    BOOST_TEST(listed.size() == 2U);
    BOOST_TEST(listed[0].as_string() == "core_attn");
    BOOST_TEST(listed[1].as_string() == "mla_up_proj");
    const json::array one = options_of(map(proxy + "--recompute-modules mla_up_proj"))
                                .at("recompute_modules")
                                .as_array();
    BOOST_TEST(one.size() == 1U);
    // Without --recompute-modules the model's default is Megatron-LM's, core attention.
    BOOST_TEST(!options_of(map(proxy)).contains("recompute_modules"));
    BOOST_TEST(flag_error("--num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                          "--seq-length 128 --vocab-size 1000 --recompute-modules mla_up_proj")
                   .find("--recompute-modules mla_up_proj recomputes multi-latent attention") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(mtp_layers_go_where_megatron_places_them) {
    const std::string base = proxy + "--pipeline-model-parallel-size 2 --mtp-num-layers 1 ";
    // No layout: the last stage, no recompute unless the decoder recomputes.
    const json::object last = options_of(map(base + "--mtp-loss-scaling-factor 0.1"));
    BOOST_TEST(last.at("mtp_num_layers").as_int64() == 1);
    BOOST_TEST(!last.contains("mtp_stage_offset"));
    BOOST_TEST(!last.contains("mtp_recompute"));
    // The CI proxy's layout: 8 virtual stages over 2 ranks, 'm' in the last (rank 1, chunk 3).
    BOOST_TEST(!options_of(map(base + "--pipeline-model-parallel-layout Et*3|(tt|)*6tmL"))
                    .contains("mtp_stage_offset"));
    // Megatron-MoE-ModelZoo's "...|m|L" on 4 ranks: 'm' is virtual stage 6, rank 2, one before
    // the last.
    const json::object earlier = options_of(
        map(proxy + "--num-layers 14 --pipeline-model-parallel-size 4 --mtp-num-layers 1 "
                    "--pipeline-model-parallel-layout Et*3|(tt|)*4ttt|m|L",
            {16U, {}, 9U}));
    BOOST_TEST(earlier.at("mtp_stage_offset").as_int64() == 1);
    BOOST_TEST(options_of(map(base + "--recompute-granularity selective"))
                   .at("mtp_recompute")
                   .as_string() == "select");
    BOOST_TEST(options_of(map(base + "--recompute-granularity full --recompute-method uniform "
                                     "--recompute-num-layers 1"))
                   .at("mtp_recompute")
                   .as_string() == "full");
    // Megatron-LM skips the MTP module's recompute for the 'block' method.
    BOOST_TEST(!options_of(map(base + "--recompute-granularity full --recompute-method block "
                                      "--recompute-num-layers 1"))
                    .contains("mtp_recompute"));
    BOOST_TEST(flag_error(base + "--pipeline-model-parallel-layout Et*8|t*8L")
                   .find("does not hold the 1 MTP layer") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(context_parallelism_maps_its_size_kind_and_data_parallel_size) {
    const std::string base =
        "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 8192 "
        "--vocab-size 32000 --bf16 --tensor-model-parallel-size 2 --sequence-parallel "
        "--use-distributed-optimizer --global-batch-size 16 --context-parallel-size 2 ";
    // 16 ranks / (TP 2 x PP 1 x CP 2) = 4 data-parallel ranks, 16 / 4 = 4 micro-batches.
    // Its release named: arguments this short fit releases whose defaults differ (which the
    // warning would say).
    const auto r = map(base, {16U, {}, 9U, "main"});
    const json::object o = options_of(r);
    BOOST_TEST(o.at("context_parallel").as_int64() == 2);
    BOOST_TEST(o.at("cp_comm_type").as_string() == "p2p");  // Megatron-LM's default
    BOOST_TEST(o.at("data_parallel").as_int64() == 4);
    BOOST_TEST(r.micro_batches.value() == 4U);
    BOOST_TEST(r.warnings.empty(), (r.warnings.empty() ? std::string() : r.warnings.front()));
    BOOST_TEST(options_of(map(base + "--cp-comm-type allgather", {16U, {}, 9U}))
                   .at("cp_comm_type")
                   .as_string() == "all_gather");
    BOOST_TEST(options_of(map(base + "--cp-comm-type a2a+p2p "
                                     "--hierarchical-context-parallel-sizes 2 1",
                              {16U, {}, 9U}))
                   .at("cp_comm_type")
                   .as_string() == "a2a+p2p");
    // One kind per layer, different: counted as a2a+p2p for all, with a warning.
    const auto mixed = map(base + "--cp-comm-type p2p p2p a2a a2a", {16U, {}, 9U});
    BOOST_TEST(options_of(mixed).at("cp_comm_type").as_string() == "a2a+p2p");
    BOOST_TEST(warns_about(mixed, "--cp-comm-type gives the layers different kinds"));
    BOOST_TEST(flag_error(base + "--cp-comm-type ring").find("--cp-comm-type ring: not one of") !=
               std::string::npos);
    BOOST_TEST(flag_error(base + "--cp-comm-type a2a+p2p")
                   .find("needs --hierarchical-context-parallel-sizes") != std::string::npos);
    BOOST_TEST(flag_error(base + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes "
                                 "2 2")
                   .find("multiply to 4, not the --context-parallel-size 2") != std::string::npos);
    BOOST_TEST(flag_error(base + "--attention-backend unfused")
                   .find("--context-parallel-size 2 with unfused attention") != std::string::npos);
    try {
        (void)map(base, {10U, {}, 9U});
        BOOST_ERROR("accepted");
    } catch (const FlagError& e) {
        BOOST_TEST(std::string(e.what()).find("tensor x pipeline x context parallel = 2 x 1 x 2") !=
                   std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(fp8_and_fp4_recipes_map_as_megatron_applies_them) {
    const std::string base =
        "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
        "--vocab-size 32000 --bf16 --use-distributed-optimizer ";
    // --fp8-recipe defaults to delayed (megatron/core/transformer/transformer_config.py).
    BOOST_TEST(options_of(map(base + "--fp8-format hybrid")).at("fp8_recipe").as_string() ==
               "delayed");
    const json::object tensorwise =
        options_of(map(base + "--fp8-format e4m3 --fp8-recipe tensorwise --fp8-param-gather"));
    BOOST_TEST(tensorwise.at("fp8_recipe").as_string() == "tensorwise");
    BOOST_TEST(tensorwise.at("fp8_param_gather").as_bool());
    BOOST_TEST(!tensorwise.contains("fp8_transposes"));  // Hopper by default
    // Blackwell (compute capability 10): no transposed copies.
    BOOST_TEST(!options_of(map(base + "--fp8-format hybrid --fp8-recipe mxfp8", {8U, {}, 10U}))
                    .at("fp8_transposes")
                    .as_bool());
    BOOST_TEST(options_of(map(base + "--fp4-format e2m1 --fp4-param-gather", {8U, {}, 10U}))
                   .at("fp8_recipe")
                   .as_string() == "nvfp4");
    // Without a format the recipe means nothing (Megatron-LM trains in 16 bits).
    BOOST_TEST(!options_of(map(base + "--fp8-recipe tensorwise")).contains("fp8_recipe"));
    BOOST_TEST(flag_error(base + "--fp8-format hybrid --fp8-recipe custom")
                   .find("--fp8-recipe: a custom quantizer") != std::string::npos);
    // A format outside argparse's choices: refused as the release's parser refuses it.
    BOOST_TEST(flag_error(base + "--fp8-format e5m2")
                   .find("--fp8-format 'e5m2': not one of its choices (e4m3, hybrid)") !=
               std::string::npos);
    BOOST_TEST(flag_error(base + "--fp8-format hybrid --fp4-format e2m1")
                   .find("--fp8-format and --fp4-format together") != std::string::npos);
    BOOST_TEST(
        flag_error(base + "--fp8-param-gather").find("--fp8-param-gather without --fp8-format") !=
        std::string::npos);
    BOOST_TEST(warns_about(map(base + "--fp8-format hybrid --first-last-layers-bf16"),
                           "--first-last-layers-bf16 changes memory but is not modelled"));
}

// Transformer Engine's FusedAdam keeps the master weights of a bf16 model as the 16-bit
// remainders of the fp32 values (store_param_remainders), Adam's moments in their dtypes
// (megatron/core/optimizer/distrib_optimizer.py, commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553).
BOOST_AUTO_TEST_CASE(the_precision_aware_optimizer_keeps_its_state_in_its_dtypes) {
    const std::string base =
        "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
        "--vocab-size 32000 --bf16 --use-distributed-optimizer --use-precision-aware-optimizer ";
    const json::object fp32 = options_of(map(base));
    BOOST_TEST(fp32.at("optimizer_bytes").as_double() == 2.0 + 4.0 + 4.0);
    BOOST_TEST(fp32.at("grad_bytes").as_double() == 4.0);
    const json::object low = options_of(map(base + "--main-grads-dtype bf16 --exp-avg-dtype bf16 "
                                                   "--exp-avg-sq-dtype fp8 --main-params-dtype "
                                                   "fp16"));
    BOOST_TEST(low.at("optimizer_bytes").as_double() == 2.0 + 2.0 + 1.0);
    BOOST_TEST(low.at("grad_bytes").as_double() == 2.0);
    // Tensorwise FP8 with fp32 master weights: Megatron-LM keeps them itself, whole.
    BOOST_TEST(options_of(map(base + "--fp8-format hybrid --fp8-recipe tensorwise"))
                   .at("optimizer_bytes")
                   .as_double() == 4.0 + 4.0 + 4.0);
    BOOST_TEST(flag_error("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 "
                          "--seq-length 2048 --vocab-size 32000 --bf16 --exp-avg-dtype bf16")
                   .find("--exp-avg-dtype bf16 needs --use-precision-aware-optimizer") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_recompute_module_megatron_lists_for_these_layers_maps) {
    const json::array modules =
        options_of(map(proxy + "--recompute-granularity selective --recompute-modules "
                               "core_attn mla_up_proj layernorm mlp moe moe_act shared_experts"))
            .at("recompute_modules")
            .as_array();
    BOOST_TEST(modules.size() == 7U);
    // --moe-layer-recompute's old module name.
    BOOST_TEST(options_of(map(proxy + "--recompute-modules moe_layer"))
                   .at("recompute_modules")
                   .as_array()
                   .front()
                   .as_string() == "moe");
    // Other architectures' modules are named in a warning and left out.
    const auto other = map(proxy + "--recompute-modules mlp gdn_norm_out");
    BOOST_TEST(warns_about(other,
                           "--recompute-modules gdn_norm_out changes memory but is not "
                           "modelled"));
    BOOST_TEST(options_of(other).at("recompute_modules").as_array().size() == 1U);
    // Megatron-LM's local spec has its norms as modules of their own.
    BOOST_TEST(!options_of(map(proxy + "--transformer-impl local")).at("fused_norms").as_bool());
    BOOST_TEST(!options_of(map(proxy)).contains("fused_norms"));
}

BOOST_AUTO_TEST_CASE(offloading_maps_its_modules_and_fractions) {
    const json::object o = options_of(
        map(proxy + "--fine-grained-activation-offloading --offload-modules expert_fc1 moe_act "
                    "attn_norm mlp_norm qkv_linear core_attn attn_proj "
                    "--activation-offload-fraction 0.8 --min-offloaded-tensor-size 1048576"));
    BOOST_TEST(o.at("offload_modules").as_array().size() == 7U);
    BOOST_TEST(o.at("activation_offload_fraction").as_double() == 0.8);
    // Without --fine-grained-activation-offloading the modules mean nothing.
    BOOST_TEST(!options_of(map(proxy + "--offload-modules core_attn")).contains("offload_modules"));
    const auto fused = map(proxy +
                           "--fine-grained-activation-offloading --offload-modules "
                           "fused_group_mlp --delta-offload-bytes-across-pp-ranks 1024");
    BOOST_TEST(warns_about(fused, "--offload-modules fused_group_mlp changes memory"));
    BOOST_TEST(warns_about(fused, "--delta-offload-bytes-across-pp-ranks changes memory"));
    BOOST_TEST(
        flag_error(proxy + "--fine-grained-activation-offloading --offload-modules attn_proj")
            .find("attn_proj without core_attn") != std::string::npos);
    // The optimizer's state: all of it in host memory unless a fraction is given.
    BOOST_TEST(options_of(map(proxy + "--optimizer-cpu-offload --use-precision-aware-optimizer"))
                   .at("optimizer_offload_fraction")
                   .as_double() == 1.0);
    BOOST_TEST(options_of(map(proxy + "--optimizer-cpu-offload --use-precision-aware-optimizer "
                                      "--optimizer-offload-fraction 0.5"))
                   .at("optimizer_offload_fraction")
                   .as_double() == 0.5);
}

// Layer-level CPU offloading: --cpu-offloading-num-layers N (Megatron-Bridge's
// cpu_offloading_num_layers) is the model's option; what Megatron-LM refuses beside it
// (transformer_config.py at d98e8a64dd) is refused naming the flags; 0 is no offloading.
BOOST_AUTO_TEST_CASE(layer_offloading_maps_its_layer_count) {
    const auto offloading = map(proxy +
                                "--cpu-offloading-num-layers 5 "
                                "--cpu-offloading-retain-pinned-cpu-buffers");
    BOOST_TEST(options_of(offloading).at("cpu_offloading_num_layers").as_int64() == 5);
    BOOST_TEST(!warns_about(offloading, "--cpu-offloading"));
    BOOST_TEST(!options_of(map(proxy + "--cpu-offloading-num-layers 0"))
                    .contains("cpu_offloading_num_layers"));
    BOOST_TEST(flag_error(proxy + "--cpu-offloading-num-layers 5 --pipeline-model-parallel-size 2")
                   .find("--cpu-offloading-num-layers with --pipeline-model-parallel-size above "
                         "1: Megatron-LM has no CPU offloading of layers with pipeline "
                         "parallelism") != std::string::npos);
    BOOST_TEST(flag_error(proxy + "--cpu-offloading-num-layers 5 --recompute-granularity "
                                  "selective")
                   .find("does not work with activation recomputation") != std::string::npos);
    BOOST_TEST(flag_error(proxy + "--cpu-offloading-num-layers 16")
                   .find("--cpu-offloading-num-layers 16: Megatron-LM offloads fewer layers than "
                         "the model's 16 (--num-layers)") != std::string::npos);
    BOOST_TEST(flag_error(proxy + "--cpu-offloading-num-layers 2 "
                                  "--fine-grained-activation-offloading --offload-modules "
                                  "core_attn")
                   .find("refuses the two together") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(no_cuda_graphs_is_megatrons_default) {
    const auto none = map(proxy + "--cuda-graph-impl none --cuda-graph-warmup-steps 3");
    BOOST_TEST(none.warnings.empty(),
               (none.warnings.empty() ? std::string() : none.warnings.front()));
}

// Megatron-FSDP (commit d98e8a64ddf34856e74b24714e3bedb2f5a39553):
// --data-parallel-sharding-strategy defaults to optim_grads_params (from 0.18; no_shard before)
// and means nothing without it; its main gradients are in the model's dtype and its main weights
// fp32 unless its dtype flags say otherwise.
BOOST_AUTO_TEST_CASE(sharded_data_parallelism_maps_the_strategy_and_its_dtypes) {
    const std::string base =
        "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
        "--vocab-size 32000 --bf16 --untie-embeddings-and-output-weights ";
    const json::object fsdp = options_of(map(base + "--use-megatron-fsdp"));
    BOOST_TEST(fsdp.at("data_parallel_sharding").as_string() == "optim_grads_params");
    BOOST_TEST(fsdp.at("grad_bytes").as_double() == 2.0);
    BOOST_TEST(fsdp.at("optimizer_bytes").as_double() == 12.0);
    BOOST_TEST(!fsdp.at("distributed_optimizer").as_bool());
    const json::object zero2 = options_of(
        map(base + "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads "
                   "--megatron-fsdp-main-grads-dtype fp32 --megatron-fsdp-main-params-dtype bf16 "
                   "--use-distributed-optimizer"));
    BOOST_TEST(zero2.at("data_parallel_sharding").as_string() == "optim_grads");
    BOOST_TEST(zero2.at("grad_bytes").as_double() == 4.0);
    BOOST_TEST(zero2.at("optimizer_bytes").as_double() == 2.0 + 8.0);
    // The flag's earlier name, at the releases that have it (0.12, 0.13), whose default strategy
    // is no_shard (megatron/training/arguments.py at core_v0.13.0,
    // c550cf6c41c31cd3ec72e05c25ea0c979f2b6631: default='no_shard').
    MegatronRunContext release_0_13{8U, {}, 9U};
    release_0_13.megatron_version = "0.13";
    BOOST_TEST(options_of(map(base + "--use-custom-fsdp", release_0_13))
                   .at("data_parallel_sharding")
                   .as_string() == "no_shard");
    BOOST_TEST(options_of(map(base + "--use-custom-fsdp --data-parallel-sharding-strategy optim",
                              release_0_13))
                   .at("data_parallel_sharding")
                   .as_string() == "optim");
    // Without FSDP the strategy flag changes nothing.
    BOOST_TEST(!options_of(map(base + "--data-parallel-sharding-strategy optim_grads_params"))
                    .contains("data_parallel_sharding"));
    // torch FSDP2: the weights resharded after forward, unless told not to.
    BOOST_TEST(
        options_of(map(base + "--use-torch-fsdp2")).at("data_parallel_sharding").as_string() ==
        "optim_grads_params");
    BOOST_TEST(options_of(map(base + "--use-torch-fsdp2 --torch-fsdp2-no-reshard-after-forward"))
                   .at("data_parallel_sharding")
                   .as_string() == "optim_grads");
    BOOST_TEST(flag_error(base + "--use-megatron-fsdp --data-parallel-sharding-strategy zero3")
                   .find("--data-parallel-sharding-strategy 'zero3': not one of its choices") !=
               std::string::npos);
    BOOST_TEST(flag_error(base + "--use-megatron-fsdp --use-torch-fsdp2")
                   .find("--use-megatron-fsdp and --use-torch-fsdp2 together") !=
               std::string::npos);
    BOOST_TEST(warns_about(map(base + "--use-megatron-fsdp --outer-dp-sharding-strategy optim"),
                           "--outer-dp-sharding-strategy (hybrid sharding) changes memory"));
}

// Up to 23.06 FP8 was two switches, trained with Transformer Engine's DelayedScaling
// (megatron/model/transformer.py at 23.04, 2360d732a399dd818d40cbe32828f65b260dee11), and
// Megatron-LM refused the two together (megatron/arguments.py).
BOOST_AUTO_TEST_CASE(the_fp8_switches_of_2023_are_the_delayed_recipe) {
    const std::string base =
        "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
        "--vocab-size 32000 --bf16 --transformer-impl transformer_engine ";
    MegatronRunContext release_23_04{8U, {}, 9U};
    release_23_04.megatron_version = "23.04";
    for (const std::string format : {"e4m3", "hybrid"}) {
        const auto r = map(base + "--fp8-" + format + " --fp8-margin 1", release_23_04);
        BOOST_TEST(options_of(r).at("fp8_recipe").as_string() == "delayed");
        // The recipe's own settings change no tensor's size: read, not warned about.
        BOOST_TEST(r.warnings.empty(), (r.warnings.empty() ? std::string() : r.warnings.front()));
    }
    BOOST_TEST(
        flag_error(base + "--fp8-e4m3 --fp8-hybrid").find("--fp8-e4m3 and --fp8-hybrid together") !=
        std::string::npos);
}

BOOST_AUTO_TEST_CASE(list_flags_take_argparses_values_and_types) {
    const std::string base =
        "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 8192 "
        "--vocab-size 32000 --bf16 --context-parallel-size 4 --cp-comm-type a2a+p2p ";
    // nargs='+' of type int: argparse refuses a word that is not an integer.
    BOOST_TEST(flag_error(base + "--hierarchical-context-parallel-sizes 2 two")
                   .find("--hierarchical-context-parallel-sizes 'two'") != std::string::npos);
    BOOST_TEST(flag_error(base + "--hierarchical-context-parallel-sizes 2 0")
                   .find("--hierarchical-context-parallel-sizes '0': expected integers from 1") !=
               std::string::npos);
    BOOST_TEST(options_of(map(base + "--hierarchical-context-parallel-sizes 2 2", {16U, {}, 9U}))
                   .at("cp_comm_type")
                   .as_string() == "a2a+p2p");
    // A list ends at the next flag.
    const json::object o = options_of(
        map(proxy + "--recompute-modules core_attn mlp --recompute-granularity selective"));
    BOOST_TEST(json::serialize(o.at("recompute_modules")) == R"(["core_attn","mlp"])");
}

BOOST_AUTO_TEST_CASE(a_yaml_list_is_the_words_megatrons_harness_passes) {
    // Megatron-LM's CI configuration writes --recompute-modules: "[layernorm mla_up_proj mlp
    // moe_act]"; its harness (tests/functional_tests/shell_test_utils/_run_training.sh, commit
    // c08d89bea05b2071855733da684a5c15873e913f) strips the brackets and bash splits the rest.
    std::vector<std::string> args = split(proxy + "--recompute-granularity selective");
    args.insert(args.end(), {"--recompute-modules", "[layernorm mla_up_proj mlp moe_act]"});
    const json::object listed =
        options_of(analytic_options_from_megatron(args, MegatronRunContext{8U, {}, 9U}));
    BOOST_TEST(json::serialize(listed.at("recompute_modules")) ==
               R"(["layernorm","mla_up_proj","mlp","moe_act"])");
    // A name Megatron-LM does not recompute fails its configuration's check
    // (transformer_config.py, allowed_modules): refused, not left out with a warning.
    const std::string error =
        flag_error(proxy + "--recompute-granularity selective --recompute-modules mlp [mlp");
    BOOST_TEST(error.find("--recompute-modules '[mlp': not a module Megatron-LM recomputes (it "
                          "takes core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                          "shared_experts, gdn_norm_out, gdp_in_proj, gdp_qkv, mhc;") == 0U,
               error);
}

BOOST_AUTO_TEST_CASE(refusals_come_after_the_arguments_are_read_whole) {
    // An unknown flag is named before the feature the model refuses.
    const std::string error = flag_error(proxy + "--cuda-graph-impl local --no-such-flag");
    BOOST_TEST(error.find("--no-such-flag") != std::string::npos, error);
    BOOST_TEST(error.find("CUDA graphs") == std::string::npos, error);
    BOOST_TEST(flag_error(proxy + "--hybrid-context-parallel")
                   .find("--hybrid-context-parallel: context parallelism whose degree varies") !=
               std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_features_tests
