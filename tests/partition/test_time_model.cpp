// ppb/partition/time_model.hpp: the SAPP layer-file reader.
#include <ppb/errors.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/schedule.hpp>

#include "../common/error_testing.hpp"

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

using ppb::InputError;
using ppb::partition::parse_time_model;
using ppb::partition::TimeModel;

namespace tt = boost::test_tools;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace time_model_tests {

namespace {

// A layer file with the given entries (without the brackets).
std::string layers(const std::string& entries) {
    return R"({"layers_description": [)" + entries + "]}";
}

// A BODY entry with the given time members (and name "decoder", 80 layers).
std::string body(const std::string& members) {
    return R"({"name": "decoder", "type": "BODY", "nb_layer": 80, )" + members + "}";
}

// A file with one BODY entry, preceded by `head` and followed by `tail` (entries or empty).
std::string with_body(const std::string& members, const std::string& head = "",
                      const std::string& tail = "") {
    return layers((head.empty() ? "" : head + ", ") + body(members) +
                  (tail.empty() ? "" : ", " + tail));
}

// The cases below written for the older toolkit's reading of `time` (forward + backward) read
// in that convention; the cases of today's SAPP (the default) use parse_today.
TimeModel parse(const std::string& text) {
    return parse_time_model(text, "layers.json", ppb::partition::TimeConvention::toolkit);
}

TimeModel parse_today(const std::string& text) {
    return parse_time_model(text, "layers.json");
}

void check_body(const TimeModel& model, const std::array<double, PPB_KIND_COUNT>& expected) {
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        BOOST_TEST_CONTEXT("kind " << k) {
            BOOST_TEST(model.body_time[k] == expected[k], tt::tolerance(1e-12));
        }
    }
}

const std::string head_entry =
    R"({"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 12.0})";
const std::string tail_entry = R"({"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 25})";

}  // namespace

BOOST_AUTO_TEST_SUITE(time_model)

BOOST_AUTO_TEST_CASE(default_coefficients) {
    const TimeModel model = parse(layers(
        R"({"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 12.0,
            "memory_parameter": 4210},
           {"name": "decoder", "type": "BODY", "nb_layer": 80, "time": 30.0,
            "memory_parameter": 1710, "memory_activation": 820},
           {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 25.0,
            "memory_parameter": 5630})"));
    BOOST_TEST(model.body_name == "decoder");
    BOOST_TEST(model.body_layers == 80u);
    // As SAPP reads `time` = 30: forward 10, backward 20; 10 + (1 + c_r) 20 with
    // c = 0, 0.04, 0.125, 0.165, 0.5.
    check_body(model, {30.0, 30.8, 32.5, 33.3, 40.0});
    // A HEAD or TAIL entry's forward + backward is its time.
    BOOST_TEST(model.head_time == 12.0);
    BOOST_TEST(model.tail_time == 25.0);
    BOOST_TEST(model.warnings.empty());
}

BOOST_AUTO_TEST_CASE(todays_sapp_reads_time_as_the_forward) {
    // mindspore-ai/hyper-parallel utils/layer.py (17b58b3d62368d440332612d1a18419da6c62b23),
    // Layer.compute_internal_time: forward = time, backward base = 2 x time; the solver adds a
    // HEAD or TAIL as time + 2 x time.
    const TimeModel model = parse_today(layers(
        R"({"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 4},
           {"name": "decoder", "type": "BODY", "nb_layer": 80, "time": 10},
           {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 8.333333333333334})"));
    // 10 + (1 + c_r) 20
    check_body(model, {30.0, 30.8, 32.5, 33.3, 40.0});
    BOOST_TEST(model.body_forward == 10.0);
    BOOST_TEST(model.head_time == 12.0);
    BOOST_TEST(model.head_forward == 4.0);
    BOOST_TEST(model.tail_time == 25.0);
    BOOST_TEST(model.warnings.empty());
    // The same file in the toolkit's convention: a third of each.
    const TimeModel old = parse(layers(
        R"({"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 4},
           {"name": "decoder", "type": "BODY", "nb_layer": 80, "time": 10})"));
    check_body(old, {10.0, 10.0 / 3.0 + 1.04 * 20.0 / 3.0, 10.0 / 3.0 + 1.125 * 20.0 / 3.0,
                     10.0 / 3.0 + 1.165 * 20.0 / 3.0, 10.0 / 3.0 + 1.5 * 20.0 / 3.0});
    BOOST_TEST(old.head_time == 4.0);
}

BOOST_AUTO_TEST_CASE(todays_sapp_forward_time_and_per_kind_times) {
    // forward_time replaces the forward only: the backward base stays 2 x time (60).
    check_body(parse_today(with_body(R"("time": 30, "forward_time": 12)")),
               {72.0, 12.0 + 1.04 * 60.0, 12.0 + 1.125 * 60.0, 12.0 + 1.165 * 60.0, 102.0});
    // A kind's own time, when given and not 0, is its backward; SAPP's spelling of full's.
    check_body(parse_today(with_body(R"("time": 10, "backward_time": 25, "select_rec_time": 0,
                                        "select_comm_coef": 0.5, "recompute_time ": 45)")),
               {35.0, 30.8, 40.0, 33.3, 55.0});
    // Without `time` (ppb's own form) the base is backward_time, else 2 x forward_time, as in
    // either convention.
    check_body(parse_today(with_body(R"("forward_time": 10, "backward_time": 25)")),
               {35.0, 36.0, 38.125, 39.125, 47.5});
    // A HEAD that gives its own forward and backward is timed by them, with a warning that
    // SAPP's solver counts 3 x time.
    const TimeModel head = parse_today(
        with_body(R"("time": 10)", R"({"name": "e", "type": "HEAD", "nb_layer": 1, "time": 5,
                           "forward_time": 4, "backward_time": 6})"));
    BOOST_TEST(head.head_time == 10.0);
    BOOST_TEST(head.head_forward == 4.0);
    BOOST_TEST_REQUIRE(head.warnings.size() == 1u);
    BOOST_TEST(head.warnings[0] ==
               "layers_description[0] (HEAD \"e\") gives its own forward or backward time: ppb "
               "times it by them (10), as SAPP's simulator does, while SAPP's solver counts a "
               "HEAD or TAIL as 3 x time (15)");
    // The message for a missing time says what `time` means here.
    PPB_CHECK_ERROR(InputError, parse_today(with_body(R"("memory_parameter": 1)")),
                    "layers.json: layers_description[0]: missing required field 'time' (the "
                    "forward time of one layer, as today's SAPP reads it; or give "
                    "'forward_time')");
}

BOOST_AUTO_TEST_CASE(convention_names) {
    using ppb::partition::TimeConvention;
    BOOST_TEST((ppb::partition::time_convention_from_name("hyper-parallel") ==
                TimeConvention::hyper_parallel));
    BOOST_TEST((ppb::partition::time_convention_from_name("toolkit") == TimeConvention::toolkit));
    BOOST_TEST(!ppb::partition::time_convention_from_name("mindformers").has_value());
    BOOST_TEST(ppb::partition::name_of(TimeConvention::toolkit) == "toolkit");
}

BOOST_AUTO_TEST_CASE(the_default_coefficients_are_sapps) {
    const std::array<double, PPB_KIND_COUNT> expected = {0.0, 0.04, 0.125, 0.165, 0.5};
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        BOOST_TEST(ppb::partition::default_backward_coefficients[k] == expected[k]);
}

BOOST_AUTO_TEST_CASE(explicit_forward_and_backward_times) {
    // With `time`, as SAPP: forward_time replaces the forward third, backward_time is kind
    // none's backward, and the other kinds scale two thirds of `time` (66).
    check_body(parse(with_body(R"("time": 99, "forward_time": 10, "backward_time": 25)")),
               {35.0, 78.64, 84.25, 86.89, 109.0});
    // Without `time` (ppb's own form), backward_time is the base of every kind, else 2 x
    // forward_time.
    const TimeModel model =
        parse(with_body(R"("forward_time": 10, "backward_time": 25)",
                        R"({"name": "e", "type": "HEAD", "nb_layer": 1, "forward_time": 4,
                      "backward_time": 6})",
                        R"({"name": "t", "type": "TAIL", "nb_layer": 1, "forward_time": 5})"));
    // 10 + (1 + c_r) 25
    check_body(model, {35.0, 36.0, 38.125, 39.125, 47.5});
    BOOST_TEST(model.head_time == 10.0);  // 4 + 6
    BOOST_TEST(model.tail_time == 15.0);  // 5 + 2 x 5
}

BOOST_AUTO_TEST_CASE(per_kind_times_override) {
    // time 30: forward 10, backward base 20.
    check_body(parse(with_body(R"("time": 30, "select_rec_time": 21, "select_comm_time": 22,
                                  "both_comm_select_time": 23, "recompute_time": 30)")),
               {30.0, 31.0, 32.0, 33.0, 40.0});
    // A kind's own time overrides; the others still scale the base.
    check_body(parse(with_body(R"("time": 30, "backward_time": 40, "recompute_time": 50)")),
               {50.0, 30.8, 32.5, 33.3, 60.0});
    // A time may be given with another kind's coefficient.
    check_body(parse(with_body(R"("time": 30, "select_rec_time": 25, "recompute_coef": 1)")),
               {30.0, 35.0, 32.5, 33.3, 50.0});
    // A kind's time of 0 is not given, as in SAPP: its coefficient applies.
    check_body(parse(with_body(R"("time": 30, "select_rec_time": 0, "select_rec_coef": 1)")),
               {30.0, 50.0, 32.5, 33.3, 40.0});
}

BOOST_AUTO_TEST_CASE(per_kind_coefficients) {
    // Each coefficient scales the base 20; backward_coef changes only kind none.
    check_body(parse(with_body(R"("time": 30, "backward_coef": 0.5, "select_rec_coef": 0.1,
                                  "select_comm_coef": 0.2, "both_comm_select_coef": 0.3,
                                  "recompute_coef": 1.0)")),
               {40.0, 32.0, 34.0, 36.0, 50.0});
    // Coefficients between -1 and 0 shorten the backward pass; integers are numbers too.
    check_body(parse(with_body(R"("time": 30, "backward_time": 40, "select_rec_coef": -0.5,
                                  "recompute_coef": 2)")),
               {50.0, 20.0, 32.5, 33.3, 70.0});
    // HEAD and TAIL count forward + backward of kind none, with its coefficient.
    const TimeModel model = parse(with_body(
        R"("time": 30)", R"({"name": "e", "type": "HEAD", "nb_layer": 1, "time": 6,
                           "backward_coef": 1, "recompute_coef": 5})",
        R"({"name": "t", "type": "TAIL", "nb_layer": 1, "time": 15, "recompute_time": 100})"));
    BOOST_TEST(model.head_time == 10.0);  // 2 + 2 x 4
    BOOST_TEST(model.tail_time == 15.0);  // recompute_time plays no part
}

BOOST_AUTO_TEST_CASE(several_head_and_tail_entries_are_summed_once_each) {
    const TimeModel model = parse(layers(
        R"({"name": "embedding", "type": "HEAD", "nb_layer": 2, "forward_time": 4,
            "backward_time": 6},
           {"name": "rotary", "type": "HEAD", "nb_layer": 3, "time": 1},
           {"name": "decoder", "type": "BODY", "nb_layer": 7, "time": 30},
           {"name": "norm", "type": "TAIL", "nb_layer": 1, "time": 0.5},
           {"name": "lm_head", "type": "TAIL", "nb_layer": 2.0, "time": 25})"));
    // SAPP adds each entry once, whatever its nb_layer; ppb says so for each such entry.
    BOOST_TEST(model.head_time == 11.0);  // (4 + 6) + 1
    BOOST_TEST(model.tail_time == 25.5);  // 0.5 + 25
    BOOST_TEST(model.body_layers == 7u);
    BOOST_TEST_REQUIRE(model.warnings.size() == 3u);
    BOOST_TEST(model.warnings[0] ==
               "layers_description[0] (HEAD \"embedding\") has nb_layer 2: its time is counted "
               "once, as SAPP counts it (give the time of all its layers together)");
    BOOST_TEST(
        model.warnings[1].starts_with("layers_description[1] (HEAD \"rotary\") has "
                                      "nb_layer 3"));
    BOOST_TEST(
        model.warnings[2].starts_with("layers_description[4] (TAIL \"lm_head\") has "
                                      "nb_layer 2"));
    // No HEAD or TAIL entry: no such time; the entries' order does not matter.
    const TimeModel bare = parse(layers(tail_entry + ", " + body(R"("time": 1)")));
    BOOST_TEST(bare.head_time == 0.0);
    BOOST_TEST(bare.tail_time == 25.0);
    BOOST_TEST(parse(with_body(R"("time": 1)")).head_time == 0.0);
    BOOST_TEST(parse(with_body(R"("time": 1)")).tail_time == 0.0);
}

// ppb's weight_grad_time: a layer's W where the file gives it; the ends' W adds what their
// entries give to the share of the backward of those that give none. A chunk's W (chunk_cost) is
// the sum over its layers and ends, and never more than its backward without recomputation.
BOOST_AUTO_TEST_CASE(weight_gradient_times) {
    const TimeModel model = parse_today(layers(
        R"({"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 2},
           {"name": "rotary", "type": "HEAD", "nb_layer": 1, "time": 1, "weight_grad_time": 0.5},
           {"name": "decoder", "type": "BODY", "nb_layer": 4, "time": 10,
            "weight_grad_time": 8},
           {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 5})"));
    BOOST_TEST(model.body_weight_grad.value() == 8.0);
    BOOST_TEST(model.groups.at(0).weight_grad.value() == 8.0);
    BOOST_TEST(model.head_weight_grad.given == 0.5);
    BOOST_TEST(model.head_weight_grad.unsplit_backward == 4.0);  // the embedding's 2 x 2
    BOOST_TEST(model.tail_weight_grad.at(0.25) == 2.5);          // 0.25 x (2 x 5)

    ppb::partition::Problem p;
    p.time = model;
    p.num_stages = 2;
    p.micro_batches = 4;
    p.schedule = ppb::Schedule::zb_h1;
    p.weight_grad_share = 0.25;
    // Stage 0: the head, one 'none' and one 'full' layer (backward 20 and 30).
    ppb::partition::KindCounts layers{};
    layers[PPB_KIND_NONE] = 1;
    layers[PPB_KIND_FULL] = 1;
    const auto ends = ppb::partition::chunk_ends(p, 0, 0);
    BOOST_TEST(ends.head);
    BOOST_TEST(!ends.tail);
    const double forward = 1.0 + 2.0 + 20.0;
    const double backward = (2.0 + 4.0) + 20.0 + 30.0;
    const auto cost = ppb::partition::chunk_cost(p, {&layers, 1}, ends, forward, backward);
    BOOST_TEST(cost.recompute_time == 10.0);
    BOOST_TEST(cost.weight_time == 8.0 + 8.0 + 0.5 + 0.25 * 4.0);
    // The last stage: the tail's share.
    const auto last = ppb::partition::chunk_cost(p, {&layers, 1},
                                                 ppb::partition::chunk_ends(p, 1, 0), 35.0, 60.0);
    BOOST_TEST(last.weight_time == 16.0 + 2.5);

    // W is part of the backward without recomputation: a longer one is refused, by entry.
    PPB_CHECK_ERROR(InputError, parse_today(with_body(R"("time": 10, "weight_grad_time": 20.5)")),
                    "layers.json: layers_description[0]: 'weight_grad_time' (20.5) is longer than "
                    "the backward without recomputation it is part of (20): W is the "
                    "weight-gradient part of that backward, B the rest");
}

BOOST_AUTO_TEST_CASE(sapps_template_times_of_zero) {
    // SAPP's own template gives its HEAD and TAIL "time": 0.
    const TimeModel model = parse(with_body(
        R"("time": 30)", R"({"name": "LlamaEmbedding", "type": "HEAD", "nb_layer": 1, "time": 0})",
        R"({"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 0})"));
    BOOST_TEST(model.head_time == 0.0);
    BOOST_TEST(model.tail_time == 0.0);
    BOOST_TEST(model.body_time[PPB_KIND_NONE] == 30.0);
    // A body layer of time 0 leaves nothing to balance.
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 0)")),
                    "layers.json: layers_description[0]: the BODY entry's time is 0: the "
                    "partitioner balances the stages' times and needs the time of a body layer "
                    "(give 'time' > 0)");
    // forward_time alone may make it positive.
    BOOST_TEST(parse(with_body(R"("time": 0, "forward_time": 3)")).body_time[PPB_KIND_NONE] == 3.0);
}

BOOST_AUTO_TEST_CASE(top_level_members) {
    const TimeModel model = parse(R"({"comment": "llama", "stage_const_mem": -3072, "name": "llama",
                  "auto_partition_layer": {"decoder": 80}, "layers_description": [)" +
                                  body(R"("time": 1)") + "]}");
    BOOST_TEST(model.body_layers == 80u);
    // The constant is the memory model's: the time model takes it without a word.
    BOOST_TEST(model.warnings.empty());
    const TimeModel old =
        parse(R"({"constant_memory_mb": 0, "layers_description": [)" + body(R"("time": 1)") + "]}");
    BOOST_TEST_REQUIRE(old.warnings.size() == 1u);
    BOOST_TEST(old.warnings[0].find("the old name of SAPP's 'stage_const_mem'") !=
               std::string::npos);

    PPB_CHECK_ERROR(InputError, parse("[]"),
                    "layers.json: expected a JSON object (a SAPP layer file: "
                    "{\"layers_description\": [...]}), got an empty array");
    PPB_CHECK_ERROR(InputError, parse("{}"),
                    "layers.json: missing required field 'layers_description'");
    PPB_CHECK_ERROR(
        InputError, parse(R"({"layers_description": {}})"),
        "layers.json: layers_description: expected an array of layer entries, got an empty "
        "object");
    PPB_CHECK_ERROR(InputError, parse(R"({"layers_description": []})"),
                    "layers.json: layers_description: the list is empty");
    PPB_CHECK_ERROR(
        InputError, parse(layers(body(R"("time": 1)") + ", 3")),
        "layers.json: layers_description[1]: expected an object (a layer entry), got 3");
    // An unknown field is a warning; a misspelt list is then missing.
    PPB_CHECK_ERROR(InputError, parse(R"({"layer_description": []})"),
                    "layers.json: missing required field 'layers_description'");
    PPB_CHECK_ERROR(InputError, parse(R"({"comment": 5, "layers_description": []})"),
                    "layers.json: comment: expected a string, got 5");
    PPB_CHECK_ERROR(
        InputError, parse(R"({"constant_memory_mb": -1, "layers_description": []})"),
        "layers.json: constant_memory_mb: negative memory -1 (a memory in MB is at least 0)");
    PPB_CHECK_ERROR(
        InputError, parse(R"({"constant_memory_mb": "3072", "layers_description": []})"),
        "layers.json: constant_memory_mb: expected a number of MB (at least 0), got \"3072\"");
}

BOOST_AUTO_TEST_CASE(malformed_json) {
    PPB_CHECK_ERROR(InputError, parse("{\"layers_description\": [\n  {\"name\": }]}"),
                    "layers.json:2:12: malformed JSON");
    PPB_CHECK_ERROR(InputError, parse(""), "layers.json:1:1: malformed JSON: the input is empty");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 1)") + " x"),
                    "layers.json:1:", "unexpected text after the JSON document");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 1, "time": 2)")),
                    "layers.json:1:", "layers_description[0]: duplicate field 'time'");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 1e400)")),
                    "layers.json:1:", "layers_description[0].time: number out of range: 1e400");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 1, "memory_activation": -1e400)")),
                    "layers_description[0].memory_activation: number out of range: -1e400");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": NaN)")),
                    "layers.json:1:", "malformed JSON");
}

BOOST_AUTO_TEST_CASE(entry_name_and_type) {
    PPB_CHECK_ERROR(InputError, parse(layers(R"({"type": "BODY", "nb_layer": 1, "time": 1})")),
                    "layers.json: layers_description[0]: missing required field 'name'");
    PPB_CHECK_ERROR(InputError,
                    parse(layers(R"({"name": 7, "type": "BODY", "nb_layer": 1, "time": 1})")),
                    "layers.json: layers_description[0].name: expected a string, got 7");
    PPB_CHECK_ERROR(InputError, parse(layers(R"({"name": "d", "nb_layer": 1, "time": 1})")),
                    "layers.json: layers_description[0]: missing required field 'type'");
    const auto typed = [](const std::string& type) {
        return layers(head_entry + R"(, {"name": "d", "type": )" + type +
                      R"(, "nb_layer": 1, "time": 1})");
    };
    PPB_CHECK_ERROR(InputError, parse(typed(R"("body")")),
                    "layers.json: layers_description[1].type: expected one of \"HEAD\", "
                    "\"BODY\", \"TAIL\", got \"body\"");
    PPB_CHECK_ERROR(InputError, parse(typed(R"("MIDDLE")")),
                    "layers_description[1].type: expected one of \"HEAD\", \"BODY\", \"TAIL\", "
                    "got \"MIDDLE\"");
    PPB_CHECK_ERROR(InputError, parse(typed("1")),
                    "layers_description[1].type: expected one of \"HEAD\", \"BODY\", \"TAIL\", "
                    "got 1");
    PPB_CHECK_ERROR(InputError, parse(typed("null")),
                    "layers_description[1].type: expected one of \"HEAD\", \"BODY\", \"TAIL\", "
                    "got null");
}

BOOST_AUTO_TEST_CASE(nb_layer) {
    const auto counted = [](const std::string& count) {
        return layers(R"({"name": "d", "type": "BODY", "time": 1, "nb_layer": )" + count + "}");
    };
    BOOST_TEST(parse(counted("4.0")).body_layers == 4u);
    PPB_CHECK_ERROR(InputError, parse(layers(R"({"name": "d", "type": "BODY", "time": 1})")),
                    "layers.json: layers_description[0]: missing required field 'nb_layer'");
    PPB_CHECK_ERROR(InputError, parse(counted("0")),
                    "layers.json: layers_description[0].nb_layer: 0 is out of range (1 to 10000 "
                    "layers)");
    PPB_CHECK_ERROR(
        InputError, parse(counted("2.5")),
        "layers_description[0].nb_layer: expected an integer, 1 to 10000 layers, got 2.5");
    PPB_CHECK_ERROR(InputError, parse(counted("-1")),
                    "layers_description[0].nb_layer: -1 is out of range (1 to 10000 layers)");
    PPB_CHECK_ERROR(
        InputError, parse(counted("\"80\"")),
        "layers_description[0].nb_layer: expected an integer, 1 to 10000 layers, got \"80\"");
    PPB_CHECK_ERROR(InputError, parse(counted("4294967296")),
                    "layers_description[0].nb_layer: 4294967296 is out of range (1 to 10000 "
                    "layers)");
    // HEAD and TAIL entries too.
    PPB_CHECK_ERROR(InputError,
                    parse(with_body(R"("time": 1)", R"({"name": "e", "type": "HEAD", "nb_layer": 0,
                                            "time": 1})")),
                    "layers_description[0].nb_layer: 0 is out of range (1 to 10000 layers)");
}

BOOST_AUTO_TEST_CASE(times) {
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("backward_time": 2)")),
                    "layers.json: layers_description[0]: missing required field 'time' (the "
                    "forward + backward time of one layer without recompute, as the older SAPP "
                    "toolkit reads it; or give 'forward_time')");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": -30)")),
                    "layers_description[0].time: expected a non-negative number, got -30");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": "30")")),
                    "layers_description[0].time: expected a non-negative number, got \"30\"");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": null)")),
                    "layers_description[0].time: expected a non-negative number, got null");
    // time is checked even when forward_time is given.
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": -1, "forward_time": 3)")),
                    "layers_description[0].time: expected a non-negative number, got -1");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("forward_time": -2)")),
                    "layers_description[0].forward_time: expected a non-negative number, got -2");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 1, "backward_time": -0.5)")),
                    "layers_description[0].backward_time: expected a non-negative number, got "
                    "-0.5");
    PPB_CHECK_ERROR(
        InputError, parse(with_body(R"("time": 1, "recompute_time": -1.5)")),
        "layers_description[0].recompute_time: expected a non-negative number, got -1.5");
    PPB_CHECK_ERROR(InputError,
                    parse(with_body(R"("time": 1)", "",
                                    R"({"name": "t", "type": "TAIL", "nb_layer": 1, "time": 1,
                            "select_comm_time": -1e-9})")),
                    "layers_description[1].select_comm_time: expected a non-negative number, got "
                    "-1e-09");
    // Times beyond their range (which keeps every sum of times finite).
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 1e308)")),
                    "layers.json: layers_description[0].time: 1e+308 is out of range (0 to "
                    "1e9)");
    PPB_CHECK_ERROR(InputError,
                    parse(layers(R"({"name": "e", "type": "HEAD", "nb_layer": 1, "time": 3e307},
                        {"name": "f", "type": "HEAD", "nb_layer": 1, "time": 3e307},)" +
                                 body(R"("time": 1)"))),
                    "layers.json: layers_description[0].time: 3e+307 is out of range (0 to 1e9)");
}

BOOST_AUTO_TEST_CASE(coefficients) {
    const std::array<std::string_view, 5> keys = {"backward_coef", "select_rec_coef",
                                                  "select_comm_coef", "both_comm_select_coef",
                                                  "recompute_coef"};
    for (const std::string_view key : keys) {
        BOOST_TEST_CONTEXT(key) {
            const auto with = [&](const std::string& value) {
                return with_body(R"("time": 1, ")" + std::string(key) + "\": " + value);
            };
            BOOST_CHECK_NO_THROW((void)parse(with("-0.999")));
            const std::string path = "layers.json: layers_description[0]." + std::string(key) +
                                     ": expected a number greater than -1 (the backward time (1 "
                                     "+ coefficient) x base must stay positive), got ";
            PPB_CHECK_ERROR(InputError, parse(with("-1")), path + "-1");
            PPB_CHECK_ERROR(InputError, parse(with("-2.5")), path + "-2.5");
            PPB_CHECK_ERROR(InputError, parse(with("\"0.1\"")), path + "\"0.1\"");
            PPB_CHECK_ERROR(InputError, parse(with("null")), path + "null");
        }
    }
}

BOOST_AUTO_TEST_CASE(a_kinds_time_and_coefficient_together) {
    const std::array<std::array<std::string_view, 3>, 5> pairs = {{
        {"backward_time", "backward_coef", "none"},
        {"select_rec_time", "select_rec_coef", "select"},
        {"select_comm_time", "select_comm_coef", "comm"},
        {"both_comm_select_time", "both_comm_select_coef", "both"},
        {"recompute_time", "recompute_coef", "full"},
    }};
    for (const auto& [time, coef, kind] : pairs) {
        BOOST_TEST_CONTEXT(kind) {
            const std::string text = with_body(R"("time": 1, ")" + std::string(coef) +
                                               R"(": 0.2, ")" + std::string(time) + R"(": 3)");
            PPB_CHECK_ERROR(InputError, parse(text),
                            "layers.json: layers_description[0]: give either '" +
                                std::string(time) + "' or '" + std::string(coef) +
                                "', not both (the backward time of recompute kind '" +
                                std::string(kind) + "')");
        }
    }
}

BOOST_AUTO_TEST_CASE(unknown_fields_are_warnings) {
    // SAPP versions add fields: one neither SAPP nor ppb knows is reported, not refused.
    const TimeModel model = parse(layers(head_entry + ", " + body(R"("time": 30, "tme": 30)")));
    BOOST_TEST_REQUIRE(model.warnings.size() == 1u);
    BOOST_TEST(model.warnings[0].starts_with(
                   "layers.json: layers_description[1]: unknown field 'tme' is ignored (neither "
                   "SAPP nor ppb knows it; did you mean 'time'? known here: name, model_name, "
                   "type, nb_layer, time, forward_time,"),
               model.warnings[0]);
    const TimeModel coeff = parse(with_body(R"("time": 3, "recompute_coeff": 0.5)"));
    BOOST_TEST_REQUIRE(coeff.warnings.size() == 1u);
    BOOST_TEST(coeff.warnings[0].find("unknown field 'recompute_coeff' is ignored (neither SAPP "
                                      "nor ppb knows it; did you mean 'recompute_coef'?") !=
               std::string::npos);
    // Ignored means ignored: the default coefficient applies.
    BOOST_TEST(coeff.body_time[PPB_KIND_FULL] == 1.0 + 1.5 * 2.0);  // forward 1, backward 2
    // A misspelt required field is still missing.
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("tme": 1)")),
                    "layers_description[0]: missing required field 'time'");
}

BOOST_AUTO_TEST_CASE(memory_fields_are_checked) {
    const TimeModel model = parse(with_body(
        R"("time": 3, "memory_parameter": 1710, "memory_activation": 820,
           "memory_select_rec": 142, "memory_select_comm": 690, "memory_both_comm_select": 110,
           "memory_recompute": 0)"));
    BOOST_TEST(model.body_time[PPB_KIND_NONE] == 3.0);
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 1, "memory_parameter": -1)")),
                    "layers.json: layers_description[0].memory_parameter: negative memory -1 (a "
                    "memory in MB is at least 0)");
    PPB_CHECK_ERROR(InputError, parse(with_body(R"("time": 1, "memory_recompute": "16")")),
                    "layers_description[0].memory_recompute: expected a number of MB (at least 0), "
                    "got \"16\"");
}

BOOST_AUTO_TEST_CASE(body_groups) {
    PPB_CHECK_ERROR(InputError, parse(layers(head_entry + ", " + tail_entry)),
                    "layers.json: layers_description: no BODY entry: at least one entry must have "
                    "\"type\": \"BODY\"");
    // decoder (80 layers, time 1) then moe (2 layers, time 3): two groups in model order.
    const TimeModel model =
        parse(layers(head_entry + ", " + body(R"("time": 1)") + R"(, {"name": "moe",
                     "type": "BODY", "nb_layer": 2, "time": 3}, )" +
                     tail_entry));
    BOOST_TEST(model.grouped());
    BOOST_TEST(model.body_layers == 82u);
    BOOST_TEST_REQUIRE(model.groups.size() == 2u);
    BOOST_TEST(model.groups[0].name == "decoder");
    BOOST_TEST(model.groups[0].layers == 80u);
    BOOST_TEST(model.groups[1].name == "moe");
    BOOST_TEST(model.groups[1].layers == 2u);
    // SAPP's reading of each: forward T/3, backward (1 + c_k) 2T/3.
    BOOST_TEST(model.groups[1].forward == 1.0);
    BOOST_TEST(model.groups[1].time[PPB_KIND_NONE] == 3.0);
    BOOST_TEST(model.groups[1].time[PPB_KIND_FULL] == 1.0 + 1.5 * 2.0);
    BOOST_TEST(model.groups[0].time[PPB_KIND_NONE] == 1.0);
    std::vector<std::uint32_t> sequence(80, 0u);
    sequence.insert(sequence.end(), 2, 1u);
    BOOST_TEST(model.sequence == sequence, boost::test_tools::per_element());
    // One BODY name, several entries: one group.
    const TimeModel one =
        parse(layers(body(R"("time": 1)") + ", " + tail_entry + ", " + body(R"("time": 1)")));
    BOOST_TEST(!one.grouped());
    BOOST_TEST(one.body_layers == 160u);
    BOOST_TEST(one.body_time[PPB_KIND_NONE] == 1.0);
    // Entries are checked before the BODY count.
    PPB_CHECK_ERROR(InputError, parse(layers(head_entry + R"(, {"name": "x"})")),
                    "layers_description[1]: missing required field 'type'");
}

BOOST_AUTO_TEST_CASE(read_from_a_file) {
    const auto path = std::filesystem::temp_directory_path() / "ppb_test_time_model.json";
    {
        std::ofstream out(path);
        out << "{\"layers_description\": [\n"
               "  {\"name\": \"decoder\", \"type\": \"BODY\", \"nb_layer\": 8, \"time\": -1}]}\n";
    }
    PPB_CHECK_ERROR(InputError, ppb::partition::read_time_model(path),
                    path.string() + ": layers_description[0].time: expected a non-negative number");
    {
        std::ofstream out(path);
        out << "{\"layers_description\": [\n  {\"name\": 1e999}]}\n";
    }
    PPB_CHECK_ERROR(InputError, ppb::partition::read_time_model(path),
                    path.string() + ":2:", "layers_description[0].name: number out of range");
    {
        std::ofstream out(path);
        out << with_body(R"("time": 6)");
    }
    const TimeModel model = ppb::partition::read_time_model(path);
    BOOST_TEST(model.body_layers == 80u);
    // Today's SAPP, the default: 6 + 1.5 x 12; the toolkit: 2 + 1.5 x 4.
    BOOST_TEST(model.body_time[PPB_KIND_FULL] == 24.0);
    BOOST_TEST(ppb::partition::read_time_model(path, ppb::partition::TimeConvention::toolkit)
                   .body_time[PPB_KIND_FULL] == 8.0);
    std::filesystem::remove(path);
    PPB_CHECK_ERROR(InputError, ppb::partition::read_time_model(path),
                    path.string() + ": cannot read: No such file or directory");
}

BOOST_AUTO_TEST_CASE(read_from_stdin) {
    const auto path = std::filesystem::temp_directory_path() / "ppb_test_time_model_stdin.json";
    {
        std::ofstream out(path);
        out << with_body(R"("time": 2, "tme": 3)");
    }
    BOOST_TEST_REQUIRE(std::freopen(path.c_str(), "rb", stdin) != nullptr);
    const TimeModel model = ppb::partition::read_time_model("-");
    BOOST_TEST_REQUIRE(model.warnings.size() == 1u);
    BOOST_TEST(model.warnings[0].starts_with(
                   "<stdin>: layers_description[0]: unknown field 'tme' is ignored"),
               model.warnings[0]);
    std::filesystem::remove(path);
}

#ifdef PPB_SAMPLES_DIR
BOOST_AUTO_TEST_CASE(the_sapp_shaped_sample_file) {
    // SAPP's own shape: name, pre_defined_layer, auto_partition_layer, stage_const_mem,
    // model_name, two TAIL entries, no time coefficients (the defaults apply).
    const TimeModel model = ppb::partition::read_time_model(std::filesystem::path(PPB_SAMPLES_DIR) /
                                                            "sapp" / "llama-layers.json");
    BOOST_TEST(model.warnings.empty());
    BOOST_TEST(model.body_name == "LLamaDecodeLayer");
    BOOST_TEST(model.body_layers == 80u);
    check_body(model, {30.0, 30.8, 32.5, 33.3, 40.0});
    BOOST_TEST(model.head_time == 12.0);
    BOOST_TEST(model.tail_time == 25.0);
}

BOOST_AUTO_TEST_CASE(the_sample_file) {
    const TimeModel model = ppb::partition::read_time_model(std::filesystem::path(PPB_SAMPLES_DIR) /
                                                            "llama70b-layers.json");
    BOOST_TEST(model.body_name == "decoder");
    BOOST_TEST(model.body_layers == 80u);
    check_body(model, {30.0, 30.8, 32.5, 33.3, 40.0});
    BOOST_TEST(model.head_time == 12.0);
    BOOST_TEST(model.tail_time == 25.0);
}
#endif

BOOST_AUTO_TEST_SUITE_END()

}  // namespace time_model_tests
