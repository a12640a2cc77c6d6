// The table model linked directly: coefficients read from a layer file, predictions checked by
// hand, absent kinds, placement validation and the report.
#include "../common/allocation_counter.hpp"
#include "../common/c_boundary.hpp"
#include "model.hpp"
#include "table_support.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

using namespace ppb::table_test;
using ppb::plugin::InvalidInput;
using ppb::plugin::NotEstimable;
using ppb::plugin::Unsupported;
using ppb::table::TableModel;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace table_model_tests {

namespace {

// C = 100; two HEAD entries: H = 2 x 50 + 1 x 25 = 125; T = 300; P = 10; activations none 4,
// select 2, full 0.5; comm and both absent. Every prediction below is exact in binary.
constexpr std::string_view small_file = R"({
  "comment": "hand-checked example",
  "stage_const_mem": 100,
  "layers_description": [
    {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 1.0, "memory_parameter": 100},
    {"name": "decoder", "type": "BODY", "nb_layer": 12, "time": 3.0, "backward_coef": 1.0,
     "memory_parameter": 10, "memory_activation": 4, "memory_select_rec": 2,
     "memory_recompute": 0.5},
    {"name": "rotary", "type": "HEAD", "nb_layer": 1, "time": 0.5, "memory_parameter": 25},
    {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 2.0, "memory_parameter": 300}
  ]
})";

constexpr std::uint32_t all_bits =
    PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER |
    PPB_PARAM_ACTIVATION(PPB_KIND_NONE) | PPB_PARAM_ACTIVATION(PPB_KIND_SELECT) |
    PPB_PARAM_ACTIVATION(PPB_KIND_COMM) | PPB_PARAM_ACTIVATION(PPB_KIND_BOTH) |
    PPB_PARAM_ACTIVATION(PPB_KIND_FULL);

double predict(const TableModel& model, const ppb::StagePlacement& placement) {
    return model.predict(placement.view());
}

boost::json::object report_of(const TableModel& model) {
    return boost::json::parse(model.report()).as_object();
}

std::vector<std::string> strings(const boost::json::value& array) {
    std::vector<std::string> out;
    for (const auto& v : array.as_array())
        out.emplace_back(v.as_string());
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(table_model)

BOOST_AUTO_TEST_CASE(coefficients_come_from_the_layer_file) {
    const TableModel model(small_file);
    const auto& t = model.table();
    BOOST_TEST(t.const_mb == 100.0);
    BOOST_TEST(t.head_mb == 125.0);  // 100 + 25
    BOOST_TEST(t.tail_mb == 300.0);
    BOOST_TEST(t.param_per_layer_mb == 10.0);
    BOOST_TEST(t.activation_mb[PPB_KIND_NONE].value() == 4.0);
    BOOST_TEST(t.activation_mb[PPB_KIND_SELECT].value() == 2.0);
    BOOST_TEST(!t.activation_mb[PPB_KIND_COMM].has_value());
    BOOST_TEST(!t.activation_mb[PPB_KIND_BOTH].has_value());
    BOOST_TEST(t.activation_mb[PPB_KIND_FULL].value() == 0.5);
    BOOST_TEST(t.body_name == "decoder");
    BOOST_TEST(t.num_layers == 12u);
    BOOST_TEST(!t.const_defaulted);
    BOOST_TEST(t.warnings.empty());

    const auto p = model.parameters();
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->struct_size == sizeof(ppb_linear_parameters));
    BOOST_TEST(p->identified == (all_bits & ~PPB_PARAM_ACTIVATION(PPB_KIND_COMM) &
                                 ~PPB_PARAM_ACTIVATION(PPB_KIND_BOTH)));
    BOOST_TEST(p->const_mb == 100.0);
    BOOST_TEST(p->head_mb == 125.0);
    BOOST_TEST(p->tail_mb == 300.0);
    BOOST_TEST(p->per_layer_mb == 10.0);
    BOOST_TEST(p->activation_mb[PPB_KIND_NONE] == 4.0);
    BOOST_TEST(p->activation_mb[PPB_KIND_SELECT] == 2.0);
    BOOST_TEST(p->activation_mb[PPB_KIND_COMM] == 0.0);
    BOOST_TEST(p->activation_mb[PPB_KIND_BOTH] == 0.0);
    BOOST_TEST(p->activation_mb[PPB_KIND_FULL] == 0.5);
}

BOOST_AUTO_TEST_CASE(hand_computed_predictions) {
    const TableModel model(small_file);
    // Stage 0 of 4, 3 none layers, 4 in flight: 100 + 125 + 10*3 + 4*3*4 = 303.
    BOOST_TEST(predict(model, stage(4, 0, {3, 0, 0, 0, 0}, 4)) == 303.0);
    // Last stage, 2 select + 1 full, 1 in flight: 100 + 300 + 10*3 + 2*2 + 0.5*1 = 434.5.
    BOOST_TEST(predict(model, stage(4, 3, {0, 2, 0, 0, 1}, 1)) == 434.5);
    // Body stage, one layer each of none, select, full, 3 in flight:
    // 100 + 10*3 + 4*3 + 2*3 + 0.5*3 = 149.5.
    BOOST_TEST(predict(model, stage(4, 1, {1, 1, 0, 0, 1}, 3)) == 149.5);
    // p = 1: stage 0 is head and tail: 100 + 125 + 300 + 10*2 + 4*2*1 = 553.
    BOOST_TEST(predict(model, stage(1, 0, {2, 0, 0, 0, 0}, 1)) == 553.0);
    // An empty body stage holds the constant only.
    BOOST_TEST(predict(model, stage(4, 2, {0, 0, 0, 0, 0}, 1)) == 100.0);
    // Two chunks: (2 none, f 3) and (1 none + 2 full, f 2):
    // 100 + 10*5 + 4*(2*3 + 1*2) + 0.5*(2*2) = 100 + 50 + 32 + 2 = 184.
    const ppb::StagePlacement interleaved{
        4, 1, {chunk({2, 0, 0, 0, 0}, 3), chunk({1, 0, 0, 0, 2}, 2)}};
    BOOST_TEST(predict(model, interleaved) == 184.0);
}

BOOST_AUTO_TEST_CASE(sample_llama70b_layer_file) {
    // samples/data/llama70b-layers.json: C 3072, H 4210, T 5630, P 1710, activations none 820,
    // select 142, comm 690, both 110, full 16; 8 stages, 32 micro-batches (1F1B: f = 8 - s).
    const TableModel model(read_text(samples_dir / "llama70b-layers.json"));
    // Stage 0, 6 select + 3 full, f = 8:
    // 3072 + 4210 + 1710*9 + 142*6*8 + 16*3*8 = 3072 + 4210 + 15390 + 6816 + 384 = 29872.
    BOOST_TEST(predict(model, stage(8, 0, {0, 6, 0, 0, 3}, 8)) == 29872.0);
    // Stage 3, 10 select, f = 5: 3072 + 17100 + 142*10*5 = 3072 + 17100 + 7100 = 27272.
    BOOST_TEST(predict(model, stage(8, 3, {0, 10, 0, 0, 0}, 5)) == 27272.0);
    // Stage 4, 10 both, f = 4: 3072 + 17100 + 110*10*4 = 24572.
    BOOST_TEST(predict(model, stage(8, 4, {0, 0, 0, 10, 0}, 4)) == 24572.0);
    // Stage 5, 2 comm + 8 select, f = 3: 3072 + 17100 + 690*2*3 + 142*8*3 = 3072 + 17100 +
    // 4140 + 3408 = 27720.
    BOOST_TEST(predict(model, stage(8, 5, {0, 8, 2, 0, 0}, 3)) == 27720.0);
    // Last stage, 4 none + 6 select, f = 1: 3072 + 5630 + 17100 + 820*4 + 142*6 = 29934.
    BOOST_TEST(predict(model, stage(8, 7, {4, 6, 0, 0, 0}, 1)) == 29934.0);

    const auto p = model.parameters();
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->identified == all_bits);

    const auto report = report_of(model);
    const auto& d = report.at("diagnostics");
    BOOST_TEST(d.at("body").as_string() == "decoder");
    BOOST_TEST(d.at("num_layers").to_number<int>() == 80);
    BOOST_TEST(strings(d.at("head_entries")) == std::vector<std::string>{"embedding"});
    BOOST_TEST(strings(d.at("tail_entries")) == std::vector<std::string>{"lm_head"});
    BOOST_TEST(d.at("const_defaulted").as_bool() == false);
    BOOST_TEST(d.at("not_considered").as_array().empty());
    BOOST_TEST(d.at("warnings").as_array().empty());
    BOOST_TEST(report.at("parameters").at("activation_mb").at("both").to_number<double>() == 110.0);
}

BOOST_AUTO_TEST_CASE(absent_kinds_are_not_estimable_and_their_bits_unset) {
    const TableModel model(small_file);
    check_throws<NotEstimable>(
        [&] {
            (void)predict(model, stage(4, 1, {1, 0, 2, 0, 0}, 3));
        },
        {"stage 1 of 4 holds 2 'comm' layers",
         "the layer file gives no memory_select_comm for the BODY entry 'decoder'"});
    check_throws<NotEstimable>(
        [&] {
            (void)predict(model, stage(4, 0, {0, 0, 0, 1, 0}, 4));
        },
        {"memory_both_comm_select", "'decoder'", "'both'"});
    // In a second chunk too.
    const ppb::StagePlacement interleaved{
        4, 1, {chunk({1, 0, 0, 0, 0}, 3), chunk({0, 0, 1, 0, 0}, 2)}};
    check_throws<NotEstimable>([&] { (void)predict(model, interleaved); }, {"memory_select_comm"});
    // The absent kinds are not needed when no layer uses them.
    BOOST_TEST(predict(model, stage(4, 1, {1, 0, 0, 0, 0}, 3)) == 122.0);  // 100 + 10 + 4*3

    const auto p = model.parameters();
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST((p->identified & PPB_PARAM_ACTIVATION(PPB_KIND_COMM)) == 0u);
    BOOST_TEST((p->identified & PPB_PARAM_ACTIVATION(PPB_KIND_BOTH)) == 0u);

    const auto report = report_of(model);
    const auto& a = report.at("parameters").at("activation_mb");
    BOOST_TEST(a.at("comm").is_null());
    BOOST_TEST(a.at("both").is_null());
    BOOST_TEST(a.at("full").to_number<double>() == 0.5);
    BOOST_TEST(strings(report.at("diagnostics").at("not_considered")) ==
               (std::vector<std::string>{"activation_mb.comm", "activation_mb.both"}));
}

BOOST_AUTO_TEST_CASE(report_describes_the_configuration) {
    const TableModel model(small_file);
    const auto report = report_of(model);
    BOOST_TEST(report.size() == 2u);
    const auto& parameters = report.at("parameters").as_object();
    BOOST_TEST(parameters.at("const_mb").to_number<double>() == 100.0);
    BOOST_TEST(parameters.at("head_mb").to_number<double>() == 125.0);
    BOOST_TEST(parameters.at("tail_mb").to_number<double>() == 300.0);
    BOOST_TEST(parameters.at("param_per_layer_mb").to_number<double>() == 10.0);
    BOOST_TEST(parameters.at("activation_mb").as_object().size() == 5u);
    const auto& d = report.at("diagnostics").as_object();
    BOOST_TEST(d.at("source").as_string() == "SAPP layer file");
    BOOST_TEST(d.at("body").as_string() == "decoder");
    BOOST_TEST(d.at("num_layers").to_number<int>() == 12);
    BOOST_TEST(strings(d.at("head_entries")) == (std::vector<std::string>{"embedding", "rotary"}));
    BOOST_TEST(strings(d.at("tail_entries")) == std::vector<std::string>{"lm_head"});
    BOOST_TEST(d.at("const_defaulted").as_bool() == false);
    BOOST_TEST(d.at("warnings").as_array().empty());
}

BOOST_AUTO_TEST_CASE(defaults_are_reported) {
    // A plain SAPP file: no constant, no HEAD, no TAIL.
    const TableModel model(R"({"layers_description": [
        {"name": "block", "type": "BODY", "nb_layer": 4, "time": 1,
         "memory_parameter": 8, "memory_activation": 3}]})");
    const auto& t = model.table();
    BOOST_TEST(t.const_mb == 0.0);
    BOOST_TEST(t.head_mb == 0.0);
    BOOST_TEST(t.tail_mb == 0.0);
    BOOST_TEST(t.const_defaulted);
    // Stage 0 of 2 (also no tail), 2 none layers, f = 2: 0 + 0 + 8*2 + 3*2*2 = 28.
    BOOST_TEST(predict(model, stage(2, 0, {2, 0, 0, 0, 0}, 2)) == 28.0);

    const auto report = report_of(model);
    const auto& d = report.at("diagnostics");
    BOOST_TEST(d.at("const_defaulted").as_bool());
    BOOST_TEST(d.at("head_entries").as_array().empty());
    BOOST_TEST(d.at("tail_entries").as_array().empty());
    const auto warnings = strings(d.at("warnings"));
    BOOST_TEST_REQUIRE(warnings.size() == 3u);
    BOOST_TEST(
        contains(warnings[0], "no stage_const_mem: const_mb is taken as 0 MB, as SAPP takes it"));
    BOOST_TEST(contains(warnings[1], "no HEAD entry: head_mb is 0 MB"));
    BOOST_TEST(contains(warnings[2], "no TAIL entry: tail_mb is 0 MB"));
    BOOST_TEST(report.at("parameters").at("const_mb").to_number<double>() == 0.0);
    BOOST_TEST(strings(d.at("not_considered")) ==
               (std::vector<std::string>{"activation_mb.select", "activation_mb.comm",
                                         "activation_mb.both", "activation_mb.full"}));
}

BOOST_AUTO_TEST_CASE(head_and_tail_entries_without_memory_or_with_activations_warn) {
    const TableModel model(R"({"stage_const_mem": 1, "layers_description": [
        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 1},
        {"name": "block", "type": "BODY", "nb_layer": 4, "time": 1,
         "memory_parameter": 8, "memory_recompute": 3},
        {"name": "head", "type": "TAIL", "nb_layer": 3, "time": 1, "memory_parameter": 7,
         "memory_activation": 99}]})");
    const auto& t = model.table();
    BOOST_TEST(t.head_mb == 0.0);
    // SAPP counts an entry's memory_parameter once, whatever its nb_layer; the activation is
    // not counted.
    BOOST_TEST(t.tail_mb == 7.0);
    BOOST_TEST_REQUIRE(t.warnings.size() == 3u);
    BOOST_TEST(contains(t.warnings[0],
                        "layers_description[0] (HEAD \"embedding\") gives no "
                        "memory_parameter: it adds 0 MB to stage 0"));
    BOOST_TEST(t.warnings[1] ==
               "layers_description[2] (TAIL \"head\") has nb_layer 3: its "
               "memory_parameter is counted once, as SAPP counts it (give the "
               "memory of all its layers together)");
    BOOST_TEST(contains(t.warnings[2],
                        "layers_description[2] (TAIL \"head\"): "
                        "'memory_activation' is ignored"));
    // Last stage of 3, 2 full layers, f = 1: 1 + 7 + 8*2 + 3*2 = 30.
    BOOST_TEST(predict(model, stage(3, 2, {0, 0, 0, 0, 2}, 1)) == 30.0);
}

BOOST_AUTO_TEST_CASE(placements_are_validated) {
    // The structural checks run at the C boundary, before the model (ppb::plugin::check_*).
    const ppb::test::ThroughBoundary<TableModel> model(small_file);
    ppb_chunk c = chunk({1, 0, 0, 0, 0}, 1);
    check_throws<InvalidInput>(
        [&] {
            (void)model.predict(ppb_placement{0, 0, 1, &c});
        },
        {"placement: num_stages is 0"});
    check_throws<InvalidInput>(
        [&] {
            (void)model.predict(ppb_placement{4, 4, 1, &c});
        },
        {"placement: stage 4 is out of range for a pipeline of 4 stages"});
    check_throws<InvalidInput>(
        [&] {
            (void)model.predict(ppb_placement{4, 1, 0, &c});
        },
        {"placement: num_chunks is 0"});
    check_throws<InvalidInput>(
        [&] {
            (void)model.predict(ppb_placement{4, 1, 1, nullptr});
        },
        {"placement: chunks is null"});
    ppb_chunk idle = chunk({1, 0, 0, 0, 0}, 0);
    check_throws<InvalidInput>(
        [&] {
            (void)model.predict(ppb_placement{4, 1, 1, &idle});
        },
        {"placement: chunk 0: in_flight is 0"});
}

BOOST_AUTO_TEST_CASE(predict_batch_agrees_with_predict) {
    const TableModel model(small_file);
    std::vector<ppb::StagePlacement> stages;
    for (std::uint32_t p = 1; p <= 5; ++p) {
        for (std::uint32_t s = 0; s < p; ++s) {
            for (std::uint32_t n = 0; n <= 4; ++n)
                stages.push_back(stage(p, s, {n, 4 - n, 0, 0, n / 2}, p - s));
        }
    }
    std::vector<ppb_placement> views;
    for (const auto& s : stages)
        views.push_back(s.view());
    std::vector<double> out(views.size(), -1.0);
    model.predict_batch(views, out);
    for (std::size_t i = 0; i < views.size(); ++i)
        BOOST_TEST(out[i] == model.predict(views[i]));

    // A failure names the placement's index.
    const auto comm = stage(4, 1, {0, 0, 1, 0, 0}, 1);
    const std::vector<ppb_placement> with_comm = {views[0], views[1], comm.view()};
    check_throws<NotEstimable>([&] { model.predict_batch(with_comm, out); },
                               {"placement 2: stage 1 of 4 holds 1 'comm' layer,"});
    ppb_chunk idle = chunk({1, 0, 0, 0, 0}, 0);
    const std::vector<ppb_placement> with_idle = {views[0], ppb_placement{4, 1, 1, &idle}};
    const ppb::test::ThroughBoundary<TableModel> boundary(small_file);
    check_throws<InvalidInput>([&] { boundary.predict_batch(with_idle, out); },
                               {"placement 1: chunk 0: in_flight is 0"});
}

BOOST_AUTO_TEST_CASE(predictions_do_not_allocate) {
    const TableModel model(read_text(samples_dir / "llama70b-layers.json"));
    std::vector<ppb::StagePlacement> stages;
    for (std::uint32_t s = 0; s < 8; ++s)
        stages.push_back(stage(8, s, {s, 1, 2, 3, 4}, 8 - s));
    std::vector<ppb_placement> views;
    for (const auto& s : stages)
        views.push_back(s.view());
    std::vector<double> out(views.size());
    double sum = 0.0;
    const std::size_t before = ppb_test::allocation_count();
    for (const auto& v : views)
        sum += model.predict(v);
    model.predict_batch(views, out);
    const std::size_t after = ppb_test::allocation_count();
    BOOST_TEST(after == before);
    BOOST_TEST(sum > 0.0);
}

BOOST_AUTO_TEST_CASE(fit_is_unsupported) {
    TableModel model(small_file);
    check_throws<Unsupported>([&] { model.fit({}); }, {"configured from its options"});
    // Still usable afterwards.
    BOOST_TEST(predict(model, stage(4, 2, {0, 0, 0, 0, 0}, 1)) == 100.0);
}

BOOST_AUTO_TEST_CASE(report_numbers_at_the_range_ends_are_exact) {
    // The extremes of the memory range are reported exactly.
    const TableModel model(R"({"stage_const_mem": 1e9,
        "layers_description": [{"name": "b", "type": "BODY", "nb_layer": 10000,
        "memory_parameter": 1e9, "memory_activation": 5e-324}]})");
    const auto report = report_of(model);
    const auto& p = report.at("parameters");
    BOOST_TEST(p.at("const_mb").to_number<double>() == 1e9);
    BOOST_TEST(p.at("activation_mb").at("none").to_number<double>() == 5e-324);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sapp_files)

// A file in SAPP's own shape (name, pre_defined_layer, auto_partition_layer, stage_const_mem,
// model_name, two TAIL entries): read without a warning, stage_const_mem on every stage.
BOOST_AUTO_TEST_CASE(a_sapp_shaped_file) {
    const TableModel model(read_text(samples_dir / "sapp" / "llama-layers.json"));
    const auto& t = model.table();
    BOOST_TEST(t.warnings.empty());
    BOOST_TEST(!t.const_defaulted);
    BOOST_TEST(t.const_mb == 3072.0);
    BOOST_TEST(t.head_mb == 4210.0);
    BOOST_TEST(t.tail_mb == 5630.0);  // LlamaRMSNorm 30 + lm_head-Linear 5600
    BOOST_TEST(t.body_name == "LLamaDecodeLayer");
    // SAPP: stage_const_mem + HEAD on stage 0 + n x memory_parameter + n x activation x in-flight.
    BOOST_TEST(predict(model, stage(8, 0, {10, 0, 0, 0, 0}, 8)) ==
               3072.0 + 4210.0 + 10 * 1710.0 + 10 * 820.0 * 8);
    BOOST_TEST(predict(model, stage(8, 3, {4, 0, 0, 0, 6}, 5)) ==
               3072.0 + 10 * 1710.0 + (4 * 820.0 + 6 * 16.0) * 5);
    BOOST_TEST(predict(model, stage(8, 7, {10, 0, 0, 0, 0}, 1)) ==
               3072.0 + 5630.0 + 10 * 1710.0 + 10 * 820.0);
}

BOOST_AUTO_TEST_CASE(a_negative_constant_is_taken_with_a_warning) {
    const TableModel model(R"({"stage_const_mem": -500, "layers_description": [
        {"name": "block", "type": "BODY", "nb_layer": 4, "memory_parameter": 800,
         "memory_activation": 3}]})");
    BOOST_TEST(model.table().const_mb == -500.0);
    BOOST_TEST(predict(model, stage(2, 1, {2, 0, 0, 0, 0}, 1)) == -500.0 + 1600.0 + 6.0);
    const auto& warnings = model.table().warnings;
    BOOST_TEST_REQUIRE(!warnings.empty());
    BOOST_TEST(contains(warnings[0], "stage_const_mem is negative (-500.0 MB)"), warnings[0]);
}

BOOST_AUTO_TEST_CASE(the_old_constant_name_is_read_with_a_warning) {
    const TableModel model(R"({"constant_memory_mb": 64, "layers_description": [
        {"name": "block", "type": "BODY", "nb_layer": 4, "memory_parameter": 8,
         "memory_activation": 3}]})");
    BOOST_TEST(model.table().const_mb == 64.0);
    BOOST_TEST(!model.table().const_defaulted);
    const auto report = report_of(model);
    const auto warnings = strings(report.at("diagnostics").at("warnings"));
    BOOST_TEST_REQUIRE(!warnings.empty());
    BOOST_TEST(contains(warnings[0],
                        "'constant_memory_mb' is the old name of SAPP's "
                        "'stage_const_mem'"),
               warnings[0]);
}

BOOST_AUTO_TEST_CASE(several_body_entries_are_groups) {
    // An encoder and a decoder: two groups of body layers, each with its own memory
    // (test_table_groups.cpp predicts them).
    const TableModel model(R"({"layers_description": [
        {"name": "encoder", "type": "BODY", "nb_layer": 4, "memory_parameter": 8,
         "memory_activation": 3},
        {"name": "decoder", "type": "BODY", "nb_layer": 4, "memory_parameter": 9,
         "memory_activation": 5}]})");
    BOOST_TEST(model.groups() == (std::vector<std::string>{"encoder", "decoder"}));
    const auto decoder = model.group_parameters(1);
    BOOST_TEST_REQUIRE(decoder.has_value());
    BOOST_TEST(decoder->per_layer_mb == 9.0);
    BOOST_TEST(decoder->activation_mb[PPB_KIND_NONE] == 5.0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace table_model_tests
