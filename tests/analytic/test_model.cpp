// The model class: predictions for whole stages (the bundled sample), chunks, single-stage
// pipelines, malformed placements, allocation-free prediction, and the report.
#include "../common/allocation_counter.hpp"
#include "../common/c_boundary.hpp"
#include "analytic_support.hpp"

#include <ppb/fit_format.hpp>
#include <ppb/kinds.hpp>
#include <ppb/plugin.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

using namespace analytic_test;
using ppb::analytic::AnalyticModel;
namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace model_tests {

namespace {

AnalyticModel sample_model() {
    return AnalyticModel(read_file(std::string(PPB_SAMPLE_DATA_DIR) + "/llama70b-shape.json"));
}

ppb_chunk chunk_of(ppb_kind kind, std::uint32_t layers, std::uint32_t in_flight) {
    ppb_chunk c{};
    c.layers[kind] = layers;
    c.in_flight = in_flight;
    return c;
}

template <class M>
std::string rejection(const M& model, const ppb_placement& placement) {
    try {
        (void)model.predict(placement);
    } catch (const ppb::plugin::InvalidInput& e) {
        return e.what();
    }
    BOOST_ERROR("placement was accepted");
    return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(model)

// samples/data/llama70b-shape.json: LLaMA-2 70B, t = 8 with SP, d = 4 with the distributed
// optimizer (2 + 4 + 12/4 = 9 bytes per parameter), constant 3072 MB. From
// test_formulas.cpp: 106 971 136 parameters per layer and rank -> 962 740 224 B = 918.140625 MB;
// embedding 32 768 000 -> 281.25 MB; final norm + LM head 32 776 192 -> 281.3203125 MB;
// activations none 796, select 156, full 8 MB; head 4 MB and tail 78.5 MB per micro-batch.
BOOST_AUTO_TEST_CASE(the_sample_options_give_the_hand_computed_coefficients) {
    const AnalyticModel model = sample_model();
    const auto& c = model.coefficients();
    BOOST_TEST(c.const_mb == 3072.0);
    BOOST_TEST(c.per_layer_mb == 918.140625, tt::tolerance(1e-12));
    BOOST_TEST(c.head_mb == 281.25, tt::tolerance(1e-12));
    BOOST_TEST(c.tail_mb == 281.3203125, tt::tolerance(1e-12));
    BOOST_TEST(c.tail_single_stage_mb == c.tail_mb);
    BOOST_TEST(c.activation_mb[PPB_KIND_NONE] == 796.0, tt::tolerance(1e-12));
    BOOST_TEST(c.activation_mb[PPB_KIND_SELECT] == 156.0, tt::tolerance(1e-12));
    BOOST_TEST(c.activation_mb[PPB_KIND_COMM] == 796.0, tt::tolerance(1e-12));
    BOOST_TEST(c.activation_mb[PPB_KIND_BOTH] == 156.0, tt::tolerance(1e-12));
    BOOST_TEST(c.activation_mb[PPB_KIND_FULL] == 8.0, tt::tolerance(1e-12));
    BOOST_TEST(c.head_activation_mb == 4.0, tt::tolerance(1e-12));
    BOOST_TEST(c.tail_activation_mb == 78.5, tt::tolerance(1e-12));
}

// 8 stages of 10 'select' layers, 32 micro-batches, 1F1B: f = 8 - s.
//   every stage 3072 + 10 * 918.140625 + 10 * 156 * f
//   stage 0 adds 281.25 + 4 * 8 = 313.25  -> 3072 + 9181.40625 + 12480 + 313.25 = 25046.65625
//   stage 7 adds 281.3203125 + 78.5      -> 3072 + 9181.40625 + 1560 + 359.8203125 = 14173.2265625
BOOST_AUTO_TEST_CASE(predicts_every_stage_of_the_sample_pipeline) {
    const AnalyticModel model = sample_model();
    for (std::uint32_t s = 0; s < 8; ++s) {
        const ppb_chunk chunk = chunk_of(PPB_KIND_SELECT, 10, 8 - s);
        const ppb_placement placement{8, s, 1, &chunk};
        double expected = 3072.0 + 9181.40625 + 1560.0 * (8 - s);
        if (s == 0)
            expected += 313.25;
        if (s == 7)
            expected += 359.8203125;
        BOOST_TEST(model.predict(placement) == expected, tt::tolerance(1e-12));
    }
}

BOOST_AUTO_TEST_CASE(kinds_mix_within_a_stage) {
    const AnalyticModel model = sample_model();
    ppb_chunk chunk{};
    chunk.layers[PPB_KIND_NONE] = 2;
    chunk.layers[PPB_KIND_SELECT] = 5;
    chunk.layers[PPB_KIND_FULL] = 3;
    chunk.in_flight = 5;
    const ppb_placement placement{8, 3, 1, &chunk};
    const double expected = 3072.0 + 10 * 918.140625 + (2 * 796.0 + 5 * 156.0 + 3 * 8.0) * 5;
    BOOST_TEST(model.predict(placement) == expected, tt::tolerance(1e-12));
}

// Interleaved stages: the embedding goes with stage 0's first chunk, the LM head with the last
// stage's last chunk, each with that chunk's in-flight count.
BOOST_AUTO_TEST_CASE(head_and_tail_follow_their_chunks) {
    const AnalyticModel model = sample_model();
    const ppb_chunk first[2] = {chunk_of(PPB_KIND_FULL, 5, 6), chunk_of(PPB_KIND_FULL, 5, 3)};
    const ppb_placement head{4, 0, 2, first};
    const double body = 3072.0 + 10 * 918.140625 + 5 * 8.0 * (6 + 3);
    BOOST_TEST(model.predict(head) == body + 281.25 + 4.0 * 6, tt::tolerance(1e-12));
    const ppb_placement tail{4, 3, 2, first};
    BOOST_TEST(model.predict(tail) == body + 281.3203125 + 78.5 * 3, tt::tolerance(1e-12));
}

// p = 1: one stage is head and tail; a tied LM head is the embedding itself.
BOOST_AUTO_TEST_CASE(single_stage_pipelines) {
    const ppb_chunk chunk = chunk_of(PPB_KIND_NONE, 2, 1);
    const ppb_placement placement{1, 0, 1, &chunk};
    const AnalyticModel untied(options_json(llama2_70b, R"("tensor_parallel": 8)"));
    const auto& u = untied.coefficients();
    // The runtime (const_mb: runtime_mb 100) and, held once, the larger transient: one layer's
    // backward (unfused score gradients 4as^2b/t = 512 MB, MLP gradients 4sbF/t = 56 MB) over
    // the logits' 16-bit copy (2sbV/t = 31.25 MB). Beside the tail of a stage of one chunk the
    // layer's gradients come without the fp32 logits its micro-batch's loss freed (4sbV/t =
    // 62.5 MB): 505.5 MB.
    BOOST_TEST(u.const_mb == 100.0);
    BOOST_TEST(u.layer_transient_mb == 568.0, tt::tolerance(1e-12));
    BOOST_TEST(u.tail_transient_mb == 31.25, tt::tolerance(1e-12));
    BOOST_TEST(u.tail_layer_transient_mb == 568.0 - 62.5, tt::tolerance(1e-12));
    BOOST_TEST(
        untied.predict(placement) == u.const_mb + u.head_mb + u.tail_mb + 2 * u.per_layer_mb +
                                         2 * u.activation_mb[PPB_KIND_NONE] + u.head_activation_mb +
                                         u.tail_activation_mb + u.tail_layer_transient_mb,
        tt::tolerance(1e-12));
    const AnalyticModel tied(
        options_json(llama2_70b, R"("tensor_parallel": 8, "untie_embeddings": false)"));
    const auto& t = tied.coefficients();
    // Only the final norm's h parameters: 8192 * 18 bytes.
    BOOST_TEST(t.tail_single_stage_mb == 8192.0 * 18.0 / MiB, tt::tolerance(1e-12));
    BOOST_TEST(
        tied.predict(placement) == untied.predict(placement) - u.tail_mb + t.tail_single_stage_mb,
        tt::tolerance(1e-12));
    // With p > 1 the last stage holds its own copy of tied embeddings: the same memory.
    BOOST_TEST(t.tail_mb == u.tail_mb, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(malformed_placements_are_invalid_input) {
    // The structural checks run at the C boundary, before the model (ppb::plugin::check_*).
    const ppb::test::ThroughBoundary<AnalyticModel> model(
        read_file(std::string(PPB_SAMPLE_DATA_DIR) + "/llama70b-shape.json"));
    ppb_chunk chunk = chunk_of(PPB_KIND_NONE, 4, 1);
    BOOST_TEST(contains(rejection(model, {0, 0, 1, &chunk}), "num_stages is 0"));
    BOOST_TEST(contains(rejection(model, {4, 4, 1, &chunk}), "stage 4 is out of range"));
    BOOST_TEST(contains(rejection(model, {4, 1, 0, &chunk}), "num_chunks is 0"));
    BOOST_TEST(contains(rejection(model, {4, 1, 1, nullptr}), "chunks is null"));
    chunk.in_flight = 0;
    BOOST_TEST(contains(rejection(model, {4, 1, 1, &chunk}), "in_flight is 0"));
    const ppb_chunk too_many[2] = {chunk_of(PPB_KIND_NONE, 41, 1), chunk_of(PPB_KIND_FULL, 40, 1)};
    const std::string message = rejection(model, {4, 1, 2, too_many});
    BOOST_TEST(contains(message, "81 body layers"), message);
    BOOST_TEST(contains(message, "num_layers"), message);
}

BOOST_AUTO_TEST_CASE(predict_does_not_allocate) {
    const AnalyticModel model = sample_model();
    const ppb_chunk chunks[2] = {chunk_of(PPB_KIND_SELECT, 3, 7), chunk_of(PPB_KIND_FULL, 2, 2)};
    double sum = 0.0;
    const std::size_t before = ppb_test::allocation_count();
    for (std::uint32_t s = 0; s < 8; ++s) {
        const ppb_placement placement{8, s, 2, chunks};
        sum += model.predict(placement);
    }
    const std::size_t after = ppb_test::allocation_count();
    BOOST_TEST(after == before);
    BOOST_TEST(sum > 0.0);
}

// The terms of a prediction (plugin API 1.4), by hand for the sample, 8 stages of 10 'select'
// layers, 32 micro-batches (f = 8 - s): 106 971 136 parameters per layer and rank as 2 bytes of
// weight (204.03125 MB), 4 of gradient (408.0625 MB) and 12 / d = 3 of optimizer state
// (306.046875 MB), ten layers each; 156 MB of 'select' activations per layer and micro-batch;
// the embedding's dropout mask 4 MB per micro-batch on stage 0; on stage 7 the final norm's and
// the LM head's inputs, 2sbh/t = 8 MB each, and the fp32 logits 4sbV/t = 62.5 MB per micro-batch.
// The sample's runtime_mb and transients are 0: no such terms.
BOOST_AUTO_TEST_CASE(the_terms_of_a_prediction_are_the_formulas_terms) {
    const AnalyticModel model = sample_model();
    using Terms = std::vector<std::pair<std::string, double>>;
    const auto terms_of = [&](std::uint32_t s) {
        const ppb_chunk chunk = chunk_of(PPB_KIND_SELECT, 10, 8 - s);
        const ppb_grouped_placement placement{ppb_placement{8, s, 1, &chunk}, 1, chunk.layers};
        const auto parts = model.predict_parts(placement);
        BOOST_TEST_REQUIRE(parts.has_value());
        Terms out;
        double sum = 0.0;
        for (const ppb_memory_part& part : *parts) {
            out.emplace_back(part.name, part.mb);
            sum += part.mb;
            BOOST_TEST(std::string(part.label).size() > 5u, part.name);
        }
        BOOST_TEST(sum == model.predict(placement.placement), tt::tolerance(1e-12));
        return out;
    };
    const Terms first = terms_of(0);
    const Terms expected_first = {{"constant", 3072.0},           {"embedding", 281.25},
                                  {"weights", 2040.3125},         {"gradients", 4080.625},
                                  {"optimizer", 3060.46875},      {"select", 12480.0},
                                  {"embedding_activations", 32.0}};
    BOOST_TEST_REQUIRE(first.size() == expected_first.size());
    for (std::size_t i = 0; i < first.size(); ++i) {
        BOOST_TEST(first[i].first == expected_first[i].first);
        BOOST_TEST(first[i].second == expected_first[i].second, tt::tolerance(1e-12));
    }
    const Terms last = terms_of(7);
    const Terms expected_last = {{"constant", 3072.0},          {"lm_head", 281.3203125},
                                 {"weights", 2040.3125},        {"gradients", 4080.625},
                                 {"optimizer", 3060.46875},     {"select", 1560.0},
                                 {"lm_head_activations", 16.0}, {"logits", 62.5}};
    BOOST_TEST_REQUIRE(last.size() == expected_last.size());
    for (std::size_t i = 0; i < last.size(); ++i) {
        BOOST_TEST(last[i].first == expected_last[i].first);
        BOOST_TEST(last[i].second == expected_last[i].second, tt::tolerance(1e-12));
    }
    // A middle stage holds neither end.
    const Terms middle = terms_of(3);
    BOOST_TEST(middle.size() == 5u);
    BOOST_TEST(middle.back().first == "select");
    BOOST_TEST(middle.back().second == 10 * 156.0 * 5, tt::tolerance(1e-12));
}

// What is held once is the larger transient, named as what it is: one layer's backward
// gradients (568 MB for LLaMA-2 70B at t = 8: unfused score gradients 512 MB and the MLP's 56;
// beside the tail of a last stage of one chunk 62.5 MB less, the fp32 logits 4sbV/t its
// micro-batch's loss freed), or on the last stage the logits' 16-bit copy when that is larger
// (a 128 000-word vocabulary with flash attention: 2sbV/t = 125 MB over the MLP's 56 MB). The
// runtime is its own term.
BOOST_AUTO_TEST_CASE(the_terms_name_what_is_held_once) {
    const ppb_chunk chunk = chunk_of(PPB_KIND_NONE, 2, 1);
    const ppb_grouped_placement last{ppb_placement{4, 3, 1, &chunk}, 1, chunk.layers};
    const auto find = [](const std::vector<ppb_memory_part>& parts, std::string_view name) {
        const auto it = std::find_if(parts.begin(), parts.end(),
                                     [&](const ppb_memory_part& p) { return p.name == name; });
        BOOST_TEST_REQUIRE((it != parts.end()), name);
        return *it;
    };
    const AnalyticModel layer(options_json(llama2_70b, R"("tensor_parallel": 8)"));
    const auto layer_parts = layer.predict_parts(last).value();
    BOOST_TEST(find(layer_parts, "runtime").mb == 100.0);
    const ppb_memory_part held = find(layer_parts, "transient");
    BOOST_TEST(held.mb == 568.0 - 62.5, tt::tolerance(1e-12));
    BOOST_TEST(std::string(held.label) == "held once: one layer's backward gradients");
    // Interleaved, another micro-batch's logits may wait in the last chunk: the whole 568 MB,
    // as on every other stage.
    const std::array<ppb_chunk, 2> chunks{chunk, chunk};
    const std::array<std::uint32_t, 2 * PPB_KIND_COUNT> by_chunk{2, 0, 0, 0, 0, 2, 0, 0, 0, 0};
    const ppb_grouped_placement interleaved{ppb_placement{4, 3, 2, chunks.data()}, 1,
                                            by_chunk.data()};
    BOOST_TEST(find(layer.predict_parts(interleaved).value(), "transient").mb == 568.0,
               tt::tolerance(1e-12));
    const ppb_grouped_placement middle{ppb_placement{4, 1, 1, &chunk}, 1, chunk.layers};
    BOOST_TEST(find(layer.predict_parts(middle).value(), "transient").mb == 568.0,
               tt::tolerance(1e-12));
    const AnalyticModel logits(options_json(
        llama2_70b, R"("tensor_parallel": 8, "vocab_size": 128000, "flash_attention": true)"));
    const auto logits_parts = logits.predict_parts(last).value();
    const ppb_memory_part copy = find(logits_parts, "transient");
    BOOST_TEST(copy.mb == 125.0, tt::tolerance(1e-12));
    BOOST_TEST(std::string(copy.label) == "held once: the logits' 16-bit copy at the loss");
    double sum = 0.0;
    for (const ppb_memory_part& part : logits_parts)
        sum += part.mb;
    BOOST_TEST(sum == logits.predict(last.placement), tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(the_model_is_not_linear) {
    BOOST_TEST(!sample_model().parameters().has_value());
}

BOOST_AUTO_TEST_CASE(the_report_has_every_parameter_and_diagnostic) {
    const AnalyticModel model = sample_model();
    const boost::json::object report = boost::json::parse(model.report()).as_object();
    const auto& p = report.at("parameters").as_object();
    BOOST_TEST(p.at("const_mb").as_double() == 3072.0);
    BOOST_TEST(p.at("head_mb").as_double() == 281.25, tt::tolerance(1e-12));
    BOOST_TEST(p.at("tail_mb").as_double() == 281.3203125, tt::tolerance(1e-12));
    BOOST_TEST(p.at("param_per_layer_mb").as_double() == 918.140625, tt::tolerance(1e-12));
    const auto& a = p.at("activation_mb").as_object();
    BOOST_TEST(a.size() == 5u);
    for (const auto name : ppb::kind_names)
        BOOST_TEST(a.at(name).is_double(), name);
    BOOST_TEST(a.at("none").as_double() == 796.0, tt::tolerance(1e-12));
    BOOST_TEST(a.at("full").as_double() == 8.0, tt::tolerance(1e-12));

    const auto& d = report.at("diagnostics").as_object();
    BOOST_TEST(d.at("head_activation_mb_per_micro_batch").as_double() == 4.0, tt::tolerance(1e-12));
    BOOST_TEST(d.at("tail_activation_mb_per_micro_batch").as_double() == 78.5,
               tt::tolerance(1e-12));
    BOOST_TEST(d.at("bytes_per_parameter").as_double() == 9.0);
    BOOST_TEST(d.at("model_parameters").as_double() == 68976648192.0);
    BOOST_TEST(d.at("activation_sbh_multiples").at("none").as_double() == 199.0 / 8.0,
               tt::tolerance(1e-12));
    BOOST_TEST(contains(std::string(d.at("formulas").as_string()), "arXiv:2205.05198"));
    BOOST_TEST(!d.at("assumptions").as_array().empty());
    BOOST_TEST(d.at("warnings").as_array().empty());

    // The host accepts it as a fit document (parameters shape, no non-finite number).
    const auto document = ppb::make_fit_document("analytic", "1.0.0", model.report());
    BOOST_TEST(document.at("parameters").at("activation_mb").as_object().size() == 5u);
}

BOOST_AUTO_TEST_CASE(the_report_carries_option_warnings) {
    const AnalyticModel model(
        options_json(llama2_70b, R"("tensor_parallel": 1, "sequence_parallel": true)"));
    const auto report = boost::json::parse(model.report());
    const auto& warnings = report.at("diagnostics").at("warnings").as_array();
    BOOST_TEST_REQUIRE(warnings.size() == 1u);
    BOOST_TEST(contains(std::string(warnings[0].as_string()), "sequence_parallel has no effect"));
}

// --defer-embedding-wgrad-compute (deferred_wgrad_micro_batches): the last stage keeps, for each
// deferred micro-batch, the LM head's output gradient in bf16 (s x b x V / t: 1024 x 4 x 50 432 /
// 2 x 2 bytes = 197 MiB) and its input (sequence-parallel: 1024 x 4 x 512 / 2 x 2 bytes = 2 MiB),
// once, whatever the micro-batches in flight.
BOOST_AUTO_TEST_CASE(deferred_embedding_wgrad_is_held_on_the_last_stage) {
    const std::string shape =
        R"("hidden_size": 512, "num_attention_heads": 8, "ffn_hidden_size": 2048,
           "seq_length": 1024, "micro_batch_size": 4, "vocab_size": 50432, "num_layers": 12,
           "tensor_parallel": 2, "sequence_parallel": true)";
    const ppb::analytic::AnalyticModel plain(options_json(shape, ""));
    const ppb::analytic::AnalyticModel deferred(
        options_json(shape, R"("deferred_wgrad_micro_batches": 2)"));
    BOOST_TEST(deferred.terms().deferred_wgrad_bytes / MiB == 2.0 * (197.0 + 2.0),
               tt::tolerance(1e-12));
    for (const std::uint32_t in_flight : {1U, 3U}) {
        ppb_chunk c = none_chunk(6, in_flight);
        const ppb_placement last{2, 1, 1, &c};
        const ppb_placement first{2, 0, 1, &c};
        BOOST_TEST(deferred.predict(last) - plain.predict(last) == 398.0, tt::tolerance(1e-9));
        BOOST_TEST(deferred.predict(first) == plain.predict(first));
        BOOST_TEST(prediction_part(deferred, last, "deferred_wgrad") == 398.0,
                   tt::tolerance(1e-12));
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace model_tests
