// ppb/partition/shape_time.hpp: the time model from a model shape, against FLOP counts worked
// out here independently, the samples' shapes, and the reader's rules.
#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/sapp/layer_file.hpp>

#include "../common/error_testing.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using ppb::InputError;
using ppb::partition::layer_file_from_shape;
using ppb::partition::ShapeTimeSettings;
using ppb::partition::time_model_from_shape;
using ppb::partition::TimeModel;

namespace json = boost::json;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace shape_time_tests {

namespace {

// 1 TFLOP/s: a time in ms is FLOPs / 1e9.
const ShapeTimeSettings one_tflops{.device_tflops = 1.0};

// The tiny shape: h 64, a 4 (h/a = 16), F 256, s 32, b 2, V 1000, t 2, 3 layers; `extra`
// members are appended (with a leading comma).
std::string tiny(const std::string& extra = "") {
    return R"({"hidden_size": 64, "num_attention_heads": 4, "ffn_hidden_size": 256,
               "seq_length": 32, "micro_batch_size": 2, "vocab_size": 1000,
               "num_layers": 3, "tensor_parallel": 2)" +
           extra + "}";
}

std::string sample(const std::string& name) {
    return ppb::read_text_file(std::string(PPB_SAMPLES_DIR) + "/" + name);
}

// The shape `text` with `key` set to `value`.
std::string with_member(const std::string& text, const std::string& key, const json::value& value) {
    json::value shape = ppb::parse_json(text, "shape");
    shape.as_object()[key] = value;
    return json::serialize(shape);
}

// The shape `text` with moe.<key> set to `value`.
std::string with_moe_member(const std::string& text, const std::string& key,
                            const json::value& value) {
    json::value shape = ppb::parse_json(text, "shape");
    shape.as_object()["moe"].as_object()[key] = value;
    return json::serialize(shape);
}

TimeModel model_of(const std::string& text, const ShapeTimeSettings& settings = one_tflops) {
    return time_model_from_shape(text, "shape.json", settings);
}

const json::array& entries_of(const json::object& file) {
    return file.at("layers_description").as_array();
}

std::vector<std::string> group_names(const TimeModel& model) {
    std::vector<std::string> out;
    for (const auto& g : model.groups)
        out.push_back(g.name);
    return out;
}

// The BODY entries of a generated file as (name, nb_layer), in file order.
std::vector<std::pair<std::string, std::int64_t>> body_runs(const json::object& file) {
    std::vector<std::pair<std::string, std::int64_t>> out;
    for (const auto& e : entries_of(file)) {
        const auto& entry = e.as_object();
        if (entry.at("type").as_string() == "BODY") {
            out.emplace_back(std::string(entry.at("name").as_string()),
                             entry.at("nb_layer").to_number<std::int64_t>());
        }
    }
    return out;
}

using Runs = std::vector<std::pair<std::string, std::int64_t>>;

}  // namespace

BOOST_AUTO_TEST_SUITE(shape_time)

BOOST_AUTO_TEST_CASE(tiny_dense_shape_by_hand) {
    // Forward FLOPs of one layer on one of the t = 2 ranks, multiply-add = 2.
    constexpr double b = 2, s = 32, h = 64, F = 256, V = 1000, t = 2;
    constexpr double qkv = 2 * b * s * h * (h + 2 * h);  // multi-head: K and V h wide
    constexpr double scores = 2 * b * s * s * h;
    constexpr double context = 2 * b * s * s * h;
    constexpr double projection = 2 * b * s * h * h;
    constexpr double gated = 3 * 2 * b * s * h * F;  // gate, up and down: three h x F
    constexpr double plain = 2 * 2 * b * s * h * F;  // two h x F
    constexpr double lm_head = 2 * b * s * h * V;

    for (const bool is_gated : {true, false}) {
        BOOST_TEST_CONTEXT("gated_mlp " << is_gated) {
            const std::string text =
                is_gated ? tiny() : tiny(R"(, "gated_mlp": false, "param_bytes": 4)");
            const double forward =
                (qkv + scores + context + projection + (is_gated ? gated : plain)) / t / 1e9;
            const TimeModel model = model_of(text);
            BOOST_TEST(model.body_name == "body");
            BOOST_TEST(model.body_layers == 3u);
            BOOST_TEST(!model.grouped());
            BOOST_TEST(model.body_forward == forward, tt::tolerance(1e-12));
            // time = forward + backward (2 x forward); full recompute adds one forward (SAPP's
            // coefficient 0.5 on the backward); select 0.04 x the backward.
            BOOST_TEST(model.body_time[PPB_KIND_NONE] == 3 * forward, tt::tolerance(1e-12));
            BOOST_TEST(model.body_time[PPB_KIND_FULL] == 4 * forward, tt::tolerance(1e-12));
            BOOST_TEST(model.body_time[PPB_KIND_SELECT] == forward + 1.04 * 2 * forward,
                       tt::tolerance(1e-12));
            // The embedding is a lookup; the LM head one h x V product split over t.
            BOOST_TEST(model.head_time == 0.0);
            BOOST_TEST(model.head_forward == 0.0);
            BOOST_TEST(model.tail_forward == lm_head / t / 1e9, tt::tolerance(1e-12));
            BOOST_TEST(model.tail_time == 3 * lm_head / t / 1e9, tt::tolerance(1e-12));
            BOOST_TEST(model.warnings.empty());
            BOOST_TEST(model.sequence == std::vector<std::uint32_t>(3, 0));

            // The file itself: HEAD, one BODY of 3, TAIL; `time` the forward, as today's SAPP
            // reads it.
            const json::object file = layer_file_from_shape(text, "shape.json", one_tflops);
            const auto& entries = entries_of(file);
            BOOST_TEST_REQUIRE(entries.size() == 3u);
            const auto& body = entries[1].as_object();
            BOOST_TEST(body.at("type").as_string() == "BODY");
            BOOST_TEST(body.at("nb_layer").to_number<std::int64_t>() == 3);
            BOOST_TEST(body.at("time").as_double() == forward, tt::tolerance(1e-12));
            // No per-kind fields: the reader's coefficients apply.
            BOOST_TEST(body.size() == 4u);  // name, type, nb_layer, time
            BOOST_TEST(entries[0].as_object().at("name").as_string() == "embedding");
            BOOST_TEST(entries[2].as_object().at("name").as_string() == "lm_head");
            const std::string comment(file.at("comment").as_string());
            BOOST_TEST(comment.find("shape.json at 1 TFLOP/s") != std::string::npos);
            BOOST_TEST(comment.find("ms per micro-batch") != std::string::npos);
        }
    }
}

// The loss's passes over the s / cp x b x V / t logits, at the cluster's streamed bandwidth,
// on the TAIL: its whole (3 x time, as SAPP reads a TAIL) grows by the bytes each setting moves
// over that bandwidth (38 + 14 unfused, 22 + 10 with the native fusion, 8 + 14 with Transformer
// Engine's), and by as much again for each multi-token prediction layer; nothing without a
// bandwidth.
BOOST_AUTO_TEST_CASE(the_loss_is_timed_at_the_memory_bandwidth) {
    constexpr double b = 2, s = 32, h = 64, V = 1000, t = 2;
    constexpr double logits = s * b * V / t;
    const auto settings_on = [](double bandwidth_tb_s) {
        ppb::partition::Cluster cluster = ppb::partition::cluster_of_device("H100");
        cluster.device.memory_bandwidth_tb_s = bandwidth_tb_s;
        return ShapeTimeSettings{.device_tflops = 1.0, .cluster = cluster};
    };
    // 1 TFLOP/s and 2e-6 TB/s: the loss weighs about as much as the LM head's products.
    const double bandwidth = 2e-6 * 1e12 * ppb::partition::default_memory_bandwidth_fraction;
    const auto tail_whole = [](const std::string& text, const ShapeTimeSettings& settings) {
        const json::object file = layer_file_from_shape(text, "shape.json", settings);
        for (const auto& e : entries_of(file)) {
            const auto& entry = e.as_object();
            if (entry.at("type").as_string() == "TAIL") {
                // A TAIL gives `time` alone: SAPP's solver and simulator read it alike.
                BOOST_TEST(!entry.contains("forward_time"));
                return 3.0 * entry.at("time").as_double();
            }
        }
        BOOST_FAIL("no TAIL");
        return 0.0;
    };
    const double lm_head = 3.0 * 2 * b * s * h * V / t / 1e9;  // forward + backward, ms
    BOOST_TEST(tail_whole(tiny(), one_tflops) == lm_head, tt::tolerance(1e-12));
    BOOST_TEST(tail_whole(tiny(), settings_on(0.0)) == lm_head, tt::tolerance(1e-12));
    const struct {
        const char* extra;
        double bytes;
    } losses[] = {
        {"", 38.0 + 14.0},
        {R"(, "cross_entropy_loss_fusion": false, "cross_entropy_fusion_impl": "te")", 38.0 + 14.0},
        {R"(, "cross_entropy_loss_fusion": true)", 22.0 + 10.0},
        {R"(, "cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "native")",
         22.0 + 10.0},
        {R"(, "cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "te")", 8.0 + 14.0},
    };
    for (const auto& loss : losses) {
        BOOST_TEST_CONTEXT("shape" << loss.extra) {
            BOOST_TEST(tail_whole(tiny(loss.extra), settings_on(2e-6)) ==
                           lm_head + loss.bytes * logits / bandwidth * 1e3,
                       tt::tolerance(1e-9));
        }
    }
    // Context parallelism splits the tokens; the loss of each MTP layer is one more pass.
    const double one_loss = 52.0 * logits / bandwidth * 1e3;
    const double with_cp = tail_whole(tiny(R"(, "context_parallel": 2)"), settings_on(2e-6));
    BOOST_TEST(with_cp == lm_head / 2 + one_loss / 2, tt::tolerance(1e-9));
    // The analytic model's options: its key is accepted, a wrong value named.
    for (const char* bad : {R"("linear")", "true", "2"}) {
        try {
            (void)layer_file_from_shape(
                tiny(std::string(R"(, "cross_entropy_fusion_impl": )") + bad), "shape.json",
                one_tflops);
            BOOST_ERROR("accepted cross_entropy_fusion_impl " << bad);
        } catch (const ppb::InputError& e) {
            BOOST_TEST(std::string(e.what()).find("shape.json: cross_entropy_fusion_impl") !=
                           std::string::npos,
                       e.what());
        }
    }
}

BOOST_AUTO_TEST_CASE(grouped_query_attention_and_the_rate) {
    // 2 key/value heads of 4: K and V are h_kv = 2 x 64 / 4 = 32 wide.
    constexpr double b = 2, s = 32, h = 64, F = 256, t = 2, h_kv = 32;
    constexpr double forward = (2 * b * s * h * (h + 2 * h_kv) + 4 * b * s * s * h +
                                2 * b * s * h * h + 6 * b * s * h * F) /
                               t;
    // At 250 TFLOP/s: FLOPs / 250e12 s = FLOPs / 250e9 ms.
    const TimeModel model =
        model_of(tiny(R"(, "num_kv_heads": 2)"), ShapeTimeSettings{.device_tflops = 250.0});
    BOOST_TEST(model.body_forward == forward / 250e9, tt::tolerance(1e-12));
    BOOST_TEST(model.body_time[PPB_KIND_NONE] == 3 * forward / 250e9, tt::tolerance(1e-12));
    // The default is 400 TFLOP/s.
    BOOST_TEST(ShapeTimeSettings{}.device_tflops == 400.0);
    BOOST_TEST(time_model_from_shape(tiny(R"(, "num_kv_heads": 2)"), "s", {}).body_forward ==
                   forward / 400e9,
               tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(tiny_moe_shape_by_hand) {
    // 4 layers, the first dense; MoE: 8 experts, top 2 of inner size 128, one shared expert of
    // inner size 96, t = 2 (with sequence parallelism, as MoE with t > 1 needs).
    constexpr double b = 2, s = 32, h = 64, F = 256, t = 2, E = 8;
    constexpr double attention =
        2 * b * s * h * (h + 2 * h) + 2 * b * s * s * h + 2 * b * s * s * h + 2 * b * s * h * h;
    const std::string moe = R"(, "sequence_parallel": true, "moe": {
        "num_experts": 8, "top_k": 2, "moe_ffn_hidden_size": 128, "shared_experts": 1,
        "shared_expert_ffn_hidden_size": 96, "first_k_dense": 1, "expert_parallel": 2,
        "capacity_factor": 1.5})";
    const std::string text = with_member(tiny(moe), "num_layers", 4);
    for (const bool is_gated : {true, false}) {
        BOOST_TEST_CONTEXT("gated_mlp " << is_gated) {
            const double m = is_gated ? 6 : 4;  // multiply-adds x 2 per token, h and inner size
            const double dense = (attention + m * b * s * h * F) / t / 1e9;
            const double router = 2 * b * s * h * E;
            const double routed = 2 * (m * b * s * h * 128);
            const double shared = 1 * (m * b * s * h * 96);
            const double moe_forward = (attention + router + routed + shared) / t / 1e9;
            const std::string shape =
                is_gated ? text : text.substr(0, 1) + R"("gated_mlp": false, )" + text.substr(1);
            const TimeModel model = model_of(shape);
            BOOST_TEST_REQUIRE(model.groups.size() == 2u);
            BOOST_TEST(group_names(model) == (std::vector<std::string>{"dense", "moe"}));
            BOOST_TEST(model.groups[0].layers == 1u);
            BOOST_TEST(model.groups[1].layers == 3u);
            BOOST_TEST(model.groups[0].forward == dense, tt::tolerance(1e-12));
            BOOST_TEST(model.groups[1].forward == moe_forward, tt::tolerance(1e-12));
            BOOST_TEST(model.groups[1].time[PPB_KIND_NONE] == 3 * moe_forward,
                       tt::tolerance(1e-12));
            BOOST_TEST(model.groups[1].time[PPB_KIND_FULL] == 4 * moe_forward,
                       tt::tolerance(1e-12));
            BOOST_TEST(model.sequence == (std::vector<std::uint32_t>{0, 1, 1, 1}));
            BOOST_TEST(model.body_layers == 4u);
        }
    }
    // Without shared experts nor moe_ffn_hidden_size: the routed experts are F wide.
    const std::string plain = R"({"hidden_size": 64, "num_attention_heads": 4,
        "ffn_hidden_size": 256, "seq_length": 32, "micro_batch_size": 2, "vocab_size": 1000,
        "num_layers": 2, "tensor_parallel": 1, "moe": {"num_experts": 8, "top_k": 2}})";
    const TimeModel model = model_of(plain);
    BOOST_TEST(group_names(model) == (std::vector<std::string>{"moe"}));
    BOOST_TEST(!model.grouped());
    BOOST_TEST(model.body_name == "moe");
    BOOST_TEST(
        model.body_forward == (attention + 2 * b * s * h * E + 2 * (6 * b * s * h * F)) / 1 / 1e9,
        tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(llama_70b_flops) {
    const std::string text = sample("llama70b-shape.json");
    const TimeModel model = model_of(text, ShapeTimeSettings{.device_tflops = 400.0});
    BOOST_TEST(model.body_name == "body");
    BOOST_TEST(model.body_layers == 80u);
    BOOST_TEST(!model.grouped());
    // Forward + backward FLOPs of the whole body on all t = 8 ranks, from the times.
    const double t = 8;
    const double body_flops = model.body_time[PPB_KIND_NONE] * 80 * 400e9 * t;
    // Independently: 6 FLOPs per parameter and token (2 forward, 4 backward) over the body's
    // parameters — LLaMA-2 70B's published 68 976 648 192 less the untied embedding and LM head
    // (2 x 32000 x 8192) and the final norm (8192) — plus the attention scores and context,
    // 4bs^2h forward per layer, three times for forward + backward.
    const double parameters = 68'976'648'192.0 - 2.0 * 32000 * 8192 - 8192;
    const double tokens = 4096;  // s x b
    const double expected = 6 * parameters * tokens + 3 * 4 * 4096.0 * 4096.0 * 8192 * 80;
    BOOST_TEST(body_flops == expected, tt::tolerance(0.01));
    // The LM head: 2 x 4096 x 8192 x 32000 forward, split over 8.
    BOOST_TEST(model.tail_forward * 400e9 * t == 2.0 * 4096 * 8192 * 32000, tt::tolerance(1e-12));

    // The generated file round-trips through ppb's layer-file reader and writer, and the time
    // model read from its text is the same.
    const json::object file = layer_file_from_shape(text, "llama70b-shape.json", {});
    const std::string written = ppb::to_pretty_json(file);
    const ppb::sapp::LayerFile read = ppb::sapp::parse_layer_file(written, "generated.json");
    BOOST_TEST(read.warnings.empty());
    BOOST_TEST(ppb::sapp::to_json(read) == file);
    BOOST_TEST(ppb::sapp::write_layer_file(read) == written);
    const TimeModel reread = ppb::partition::parse_time_model(written, "generated.json");
    BOOST_TEST(reread.body_time == model.body_time);
    BOOST_TEST(reread.tail_time == model.tail_time);
    BOOST_TEST(reread.head_time == model.head_time);
    BOOST_TEST(reread.body_forward == model.body_forward);
    // SAPP's own keys are there: the HEAD and TAIL placed, the BODY auto-partitioned.
    BOOST_TEST(json::serialize(file.at("pre_defined_layer")) == R"({"embedding":0,"lm_head":-1})");
    BOOST_TEST(json::serialize(file.at("auto_partition_layer")) == R"({"body":80})");
}

BOOST_AUTO_TEST_CASE(deepseek_v3_groups) {
    const std::string text = sample("moe/deepseek-v3-shape.json");
    const TimeModel model = model_of(text);
    BOOST_TEST(group_names(model) == (std::vector<std::string>{"dense", "moe"}));
    BOOST_TEST(model.groups[0].layers == 3u);
    BOOST_TEST(model.groups[1].layers == 58u);
    std::vector<std::uint32_t> sequence(3, 0);
    sequence.resize(61, 1);
    BOOST_TEST(model.sequence == sequence);
    const json::object file = layer_file_from_shape(text, "deepseek-v3-shape.json", {});
    BOOST_TEST((body_runs(file) == (Runs{{"dense", 3}, {"moe", 58}})));
    BOOST_TEST(json::serialize(file.at("auto_partition_layer")) == R"({"dense":3,"moe":58})");
    // DeepSeek-V3's 8 routed experts and one shared expert of 2048 are as wide as its dense MLP
    // (9 x 2048 = 18432): an MoE layer is a dense layer and the router, 2bsh x 256 (t = 1), at
    // 1 TFLOP/s.
    BOOST_TEST(model.groups[1].forward - model.groups[0].forward == 2.0 * 4096 * 7168 * 256 / 1e9,
               tt::tolerance(1e-9));

    // The group names given in the shape.
    const std::string named =
        with_moe_member(with_moe_member(text, "dense_group", "mlp"), "moe_group", "experts");
    const TimeModel renamed = model_of(named);
    BOOST_TEST(group_names(renamed) == (std::vector<std::string>{"mlp", "experts"}));
    BOOST_TEST(
        (body_runs(layer_file_from_shape(named, "s", {})) == (Runs{{"mlp", 3}, {"experts", 58}})));
    BOOST_TEST(renamed.groups[1].time == model.groups[1].time);

    // Mixtral: every layer MoE, one group "moe".
    const TimeModel mixtral = model_of(sample("moe/mixtral-8x7b-shape.json"));
    BOOST_TEST(group_names(mixtral) == (std::vector<std::string>{"moe"}));
    BOOST_TEST(mixtral.body_layers == 32u);
}

BOOST_AUTO_TEST_CASE(layouts) {
    const std::string moe = R"(, "num_layers": 4, "moe": {"num_experts": 4, "top_k": 1)";
    const auto shape = [&](const std::string& members) {
        std::string text = R"({"hidden_size": 64, "num_attention_heads": 4,
            "ffn_hidden_size": 256, "seq_length": 32, "micro_batch_size": 2,
            "vocab_size": 1000, "tensor_parallel": 1)" +
                           moe + members + "}}";
        return text;
    };
    // layer_freq 2: layers 0 and 2 MoE, alternating from the MoE group.
    const TimeModel every_second = model_of(shape(R"(, "layer_freq": 2)"));
    BOOST_TEST(group_names(every_second) == (std::vector<std::string>{"moe", "dense"}));
    BOOST_TEST(every_second.sequence == (std::vector<std::uint32_t>{0, 1, 0, 1}));
    BOOST_TEST((body_runs(layer_file_from_shape(shape(R"(, "layer_freq": 2)"), "s", {})) ==
                (Runs{{"moe", 1}, {"dense", 1}, {"moe", 1}, {"dense", 1}})));
    // layer_freq 2 from first_k_dense 1 on: layer 2 only (layer 0 is among the first dense).
    BOOST_TEST(model_of(shape(R"(, "layer_freq": 2, "first_k_dense": 1)")).sequence ==
               (std::vector<std::uint32_t>{0, 0, 1, 0}));
    // A list (1.0 is 1), with first_k_dense agreeing with it.
    const std::string list = shape(R"(, "layer_freq": [0, 1, 1.0, 0], "first_k_dense": 1)");
    BOOST_TEST(model_of(list).sequence == (std::vector<std::uint32_t>{0, 1, 1, 0}));
    BOOST_TEST((body_runs(layer_file_from_shape(list, "s", {})) ==
                (Runs{{"dense", 1}, {"moe", 2}, {"dense", 1}})));
}

BOOST_AUTO_TEST_CASE(bad_shapes) {
    const auto bad = [](const std::string& text) {
        return layer_file_from_shape(text, "shape.json", one_tflops);
    };
    PPB_CHECK_ERROR(InputError, bad("{"), "shape.json:1:2: malformed JSON");
    PPB_CHECK_ERROR(InputError, bad(""), "shape.json:1:1: malformed JSON");
    PPB_CHECK_ERROR(InputError, bad(R"({"hidden_size": 1, "hidden_size": 2})"),
                    "shape.json:", "duplicate field 'hidden_size'");
    PPB_CHECK_ERROR(InputError, bad("[]"), "shape.json: expected a model shape",
                    "got an empty array");
    PPB_CHECK_ERROR(InputError, bad(R"({"layers_description": []})"),
                    "shape.json: ", "SAPP layer file");
    // Required keys.
    for (const std::string key :
         {"hidden_size", "num_attention_heads", "ffn_hidden_size", "seq_length", "micro_batch_size",
          "vocab_size", "num_layers", "tensor_parallel"}) {
        BOOST_TEST_CONTEXT(key) {
            json::value shape = ppb::parse_json(tiny(), "tiny");
            shape.as_object().erase(key);
            PPB_CHECK_ERROR(InputError, bad(json::serialize(shape)),
                            "shape.json: missing required field '" + key + "'");
            for (const json::value& wrong : {json::value(2.5), json::value(0), json::value(-3),
                                             json::value("64"), json::value(nullptr)}) {
                shape.as_object()[key] = wrong;
                // "expected a positive integer, got 2.5"; for num_layers "0 is out of range (1 to
                // 10000 layers)".
                PPB_CHECK_ERROR(InputError, bad(json::serialize(shape)),
                                "shape.json: " + key + ": ", ppb::describe_json(wrong));
            }
        }
    }
    PPB_CHECK_ERROR(InputError, bad(tiny(R"(, "num_kv_heads": 0)")),
                    "shape.json: num_kv_heads: expected a positive integer, got 0");
    PPB_CHECK_ERROR(InputError, bad(tiny(R"(, "num_kv_heads": 8)")),
                    "shape.json: num_kv_heads: 8 exceeds num_attention_heads 4");
    PPB_CHECK_ERROR(InputError, bad(tiny(R"(, "gated_mlp": 1)")),
                    "shape.json: gated_mlp: expected true or false, got 1");
    PPB_CHECK_ERROR(InputError, bad(with_member(tiny(), "num_layers", 10001)),
                    "shape.json: num_layers: ", "1 to 10000 layers");
    // A misspelt key.
    PPB_CHECK_ERROR(InputError, bad(tiny(R"(, "gated_mpl": false)")),
                    "shape.json: unknown field 'gated_mpl' (did you mean 'gated_mlp'?");
    // The memory model's keys are accepted, whatever they hold: the memory model checks them.
    BOOST_CHECK_NO_THROW(bad(tiny(R"(, "param_bytes": 2, "distributed_optimizer": true,
        "data_parallel": 4, "flash_attention": true, "dropout": false, "constant_mb": 1024,
        "sequence_parallel": true, "grad_bytes": 4, "optimizer_bytes": 12,
        "keep_gathered_inputs": false, "untie_embeddings": false)")));
}

BOOST_AUTO_TEST_CASE(bad_moe) {
    const auto bad = [](const std::string& members, std::uint32_t layers = 4) {
        std::string text = R"({"hidden_size": 64, "num_attention_heads": 4,
            "ffn_hidden_size": 256, "seq_length": 32, "micro_batch_size": 2,
            "vocab_size": 1000, "tensor_parallel": 1, "num_layers": )" +
                           std::to_string(layers) + R"(, "moe": )" + members + "}";
        return layer_file_from_shape(text, "shape.json", one_tflops);
    };
    PPB_CHECK_ERROR(InputError, bad("8"), "shape.json: moe: expected an object, got 8");
    PPB_CHECK_ERROR(InputError, bad(R"({"top_k": 2})"),
                    "shape.json: moe: missing required field 'num_experts'");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8})"),
                    "shape.json: moe: missing required field 'top_k'");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 9})"),
                    "shape.json: moe.top_k: 9 exceeds moe.num_experts 8");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 1, "top_k": 1})"),
                    "shape.json: moe.num_experts: expected an integer of at least 2, got 1");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2.5})"),
                    "shape.json: moe.top_k: expected a positive integer, got 2.5");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "moe_ffn_hidden_size": 0})"),
                    "shape.json: moe.moe_ffn_hidden_size: expected a positive integer, got 0");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "shared_experts": -1})"),
                    "shape.json: moe.shared_experts: expected a non-negative integer, got -1");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "topk": 2})"),
                    "shape.json: moe: unknown member 'topk' (did you mean 'top_k'?");
    // layer_freq lists.
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": [1, 1, 0]})"),
                    "shape.json: moe.layer_freq: ", "3 entries, but num_layers is 4");
    PPB_CHECK_ERROR(InputError,
                    bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": [1, 2, 0, 1]})"),
                    "shape.json: moe.layer_freq[1]: expected 0 (dense) or 1 (MoE), got 2");
    PPB_CHECK_ERROR(InputError,
                    bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": [1, 0.5, 0, 1]})"),
                    "shape.json: moe.layer_freq[1]: expected 0 (dense) or 1 (MoE), got 0.5");
    PPB_CHECK_ERROR(InputError,
                    bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": [1, true, 0, 1]})"),
                    "shape.json: moe.layer_freq[1]: expected 0 (dense) or 1 (MoE), got true");
    PPB_CHECK_ERROR(InputError,
                    bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": [0, 0, 0, 0]})"),
                    "shape.json: moe.layer_freq: no layer is MoE");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": [0, 1, 0, 1],
                            "first_k_dense": 2})"),
                    "shape.json: moe.first_k_dense: 2 disagrees with the moe.layer_freq list, "
                    "which starts with 1 dense layers");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": 0})"),
                    "shape.json: moe.layer_freq: expected a positive integer, got 0");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": "2"})"),
                    "shape.json: moe.layer_freq: expected an integer N");
    PPB_CHECK_ERROR(InputError,
                    bad(R"({"num_experts": 8, "top_k": 2, "layer_freq": 5, "first_k_dense": 1})"),
                    "shape.json: moe.layer_freq: no layer is MoE");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "first_k_dense": 4})"),
                    "shape.json: moe.first_k_dense: 4 is not below num_layers 4");
    // Group names.
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "first_k_dense": 1,
                            "dense_group": "x", "moe_group": "x"})"),
                    "shape.json: moe: dense_group and moe_group are both 'x'");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "moe_group": ""})"),
                    "shape.json: moe.moe_group: expected a group name");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "moe_group": 3})"),
                    "shape.json: moe.moe_group: expected a string, got 3");
    PPB_CHECK_ERROR(InputError, bad(R"({"num_experts": 8, "top_k": 2, "moe_group": "lm_head"})"),
                    "shape.json: moe.moe_group: 'lm_head' is the name of the generated TAIL entry");
    // One name for both is fine when every layer is MoE (there is no dense group).
    BOOST_CHECK_NO_THROW(bad(R"({"num_experts": 8, "top_k": 2, "dense_group": "x",
                                 "moe_group": "x"})"));
    // The memory model's members are accepted.
    BOOST_CHECK_NO_THROW(bad(R"({"num_experts": 8, "top_k": 2, "expert_parallel": 4,
                                 "expert_tensor_parallel": 1, "capacity_factor": 1.25})"));
}

BOOST_AUTO_TEST_CASE(bad_rates) {
    for (const double tflops : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN()}) {
        BOOST_TEST_CONTEXT("device_tflops " << tflops) {
            PPB_CHECK_ERROR(
                InputError, layer_file_from_shape(tiny(), "shape.json", {.device_tflops = tflops}),
                "device_tflops: expected a finite number greater than 0", "to time shape.json");
            PPB_CHECK_ERROR(InputError,
                            time_model_from_shape(tiny(), "shape.json", {.device_tflops = tflops}),
                            "device_tflops");
        }
    }
    // So slow that a layer's time leaves the layer file's range.
    PPB_CHECK_ERROR(InputError,
                    layer_file_from_shape(tiny(), "shape.json", {.device_tflops = 1e-20}),
                    "shape.json: the forward + backward time of one BODY layer 'body' would be",
                    "device_tflops 1e-20 is too small");
    // Errors of the shape reach time_model_from_shape as they are.
    PPB_CHECK_ERROR(InputError, time_model_from_shape("[]", "shape.json", {}),
                    "shape.json: expected a model shape");
}

// Multi-latent attention (Megatron-LM's MLASelfAttention) counted by its own projections, context
// parallelism splitting a sequence's tokens and scores, the multi-token prediction layers on the
// last stage's LM head entry, and every key the analytic model's options hold accepted: h 1024,
// a 8, q_lora 256, kv_lora 128, qk 64 + 32 rotary, v 64, s 1024, b 1, t 1, a non-gated MLP of
// 2048, V 32000, at 1 TFLOP/s.
BOOST_AUTO_TEST_CASE(mla_context_parallel_and_mtp_are_counted) {
    const std::string mla =
        R"({"hidden_size": 1024, "num_attention_heads": 8, "ffn_hidden_size": 2048,
            "seq_length": 1024, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 4,
            "tensor_parallel": 1, "gated_mlp": false,
            "mla": {"q_lora_rank": 256, "kv_lora_rank": 128, "qk_head_dim": 64,
                    "qk_pos_emb_head_dim": 32, "v_head_dim": 64},
            "fp8_recipe": "tensorwise", "data_parallel_sharding": "optim_grads_params",
            "activation_bytes": 4, "recompute_modules": ["mla_up_proj"]})";
    // Queries 2bs(h q_lora + q_lora a (qk + pos)) = 939 524 096, keys' and values' latent
    // 2bs h (kv_lora + pos) = 335 544 320, their up-projection 2bs kv_lora a (qk + v) =
    // 268 435 456, scores 2bs^2 a (qk + pos) = 1 610 612 736, context 2bs^2 a v =
    // 1 073 741 824, output 2bs a v h = 1 073 741 824; the MLP 4bshF = 8 589 934 592.
    const double layer = 939'524'096.0 + 335'544'320.0 + 268'435'456.0 + 1'610'612'736.0 +
                         1'073'741'824.0 + 1'073'741'824.0 + 8'589'934'592.0;
    const TimeModel plain = model_of(mla);
    BOOST_TEST(plain.body_forward == layer / 1e9, tt::tolerance(1e-12));
    // Two context-parallel ranks hold half the tokens each, and half the scores.
    const TimeModel split = model_of(with_member(mla, "context_parallel", 2));
    BOOST_TEST(split.body_forward == layer / 2e9, tt::tolerance(1e-12));
    // One MTP layer: a layer, its 2h x h projection (4 294 967 296) and the LM head again
    // (2bshV = 67 108 864 000 each).
    const double lm_head = 67'108'864'000.0;
    BOOST_TEST(plain.tail_forward == lm_head / 1e9, tt::tolerance(1e-12));
    const TimeModel with_mtp = model_of(with_member(mla, "mtp_num_layers", 1));
    BOOST_TEST(with_mtp.tail_forward == (2.0 * lm_head + layer + 4'294'967'296.0) / 1e9,
               tt::tolerance(1e-12));
    // A misspelt member of mla is still refused with its did-you-mean.
    try {
        (void)model_of(R"({"hidden_size": 1024, "num_attention_heads": 8, "ffn_hidden_size": 2048,
            "seq_length": 1024, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 4,
            "tensor_parallel": 1, "mla": {"kv_lora_rnak": 128, "qk_head_dim": 64,
            "qk_pos_emb_head_dim": 32, "v_head_dim": 64}})");
        BOOST_ERROR("a misspelt mla member was accepted");
    } catch (const InputError& e) {
        BOOST_TEST(std::string(e.what()).find("kv_lora_rank") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace shape_time_tests
