// Bad options: every refusal is ppb::plugin::InvalidInput whose message names the JSON path.
#include "model.hpp"
#include "table_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace ppb::table_test;
using ppb::plugin::InvalidInput;
using ppb::table::TableModel;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace table_bad_input_tests {

namespace {

const std::string head =
    R"({"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 1, "memory_parameter": 10})";
const std::string tail =
    R"({"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 1, "memory_parameter": 30})";

// The BODY entry "decoder" with the given memory fields.
std::string body(const std::string& memory = R"("memory_parameter": 20, "memory_activation": 5)",
                 const std::string& name = "decoder") {
    return R"({"name": ")" + name + R"(", "type": "BODY", "nb_layer": 8, "time": 2, )" + memory +
           "}";
}

// {"layers_description": [entries...]} plus `extra` top-level members.
std::string file(std::initializer_list<std::string> entries, const std::string& extra = "") {
    std::string out = R"({"layers_description": [)";
    bool first = true;
    for (const auto& e : entries) {
        if (!first)
            out += ", ";
        out += e;
        first = false;
    }
    out += "]";
    if (!extra.empty())
        out += ", " + extra;
    return out + "}";
}

void check_invalid(const std::string& options, std::initializer_list<std::string_view> parts) {
    BOOST_TEST_CONTEXT("options: " << options) {
        check_throws<InvalidInput>([&] { const TableModel model(options); }, parts);
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(table_bad_input)

BOOST_AUTO_TEST_CASE(the_valid_base_file_is_accepted) {
    const TableModel model(file({head, body(), tail}, R"("stage_const_mem": 1)"));
    BOOST_TEST(model.table().param_per_layer_mb == 20.0);
}

BOOST_AUTO_TEST_CASE(malformed_json) {
    check_invalid(R"({"layers_description": [)", {"not valid JSON", "line 1, column 25"});
    check_invalid("{\"layers_description\": [1,]}", {"not valid JSON", "line 1"});
    check_invalid(file({body()}) + " x", {"not valid JSON", "unexpected text after"});
    check_invalid("", {"not valid JSON", "empty"});
    check_invalid("{\n  \"layers_description\": [\n    {\"name\" \"x\"}]}",
                  {"not valid JSON", "line 3, column 13", "syntax error at '\"'"});
}

BOOST_AUTO_TEST_CASE(not_an_object) {
    check_invalid("[1, 2]", {"must be a JSON object", "SAPP layer file", "got an array"});
    check_invalid("42", {"must be a JSON object", "got 42"});
}

BOOST_AUTO_TEST_CASE(layers_description_missing_empty_or_not_a_list) {
    check_invalid("{}", {"missing required field 'layers_description'", "SAPP layer file",
                         "--model-options FILE"});
    check_invalid(R"({"constant_memory_mb": 5})", {"missing required field 'layers_description'"});
    check_invalid(R"({"layers_description": []})", {"layers_description: the list is empty"});
    check_invalid(R"({"layers_description": {}})",
                  {"layers_description: expected an array of layer entries, got an empty object"});
}

BOOST_AUTO_TEST_CASE(entries_must_be_objects) {
    check_invalid(file({head, "5"}),
                  {"layers_description[1]: expected an object (a layer entry), got 5"});
    check_invalid(file({R"("BODY")"}),
                  {"layers_description[0]: expected an object", "got \"BODY\""});
}

// SAPP versions add keys: one neither SAPP nor ppb knows is a warning in the report's
// diagnostics, with a "did you mean", not a refusal.
BOOST_AUTO_TEST_CASE(unknown_keys_are_warnings) {
    const auto warnings_of = [](const std::string& text) {
        return TableModel(text).table().warnings;
    };
    const auto w1 = warnings_of(file({body()}, R"("stage_const_memory": 1)"));
    BOOST_TEST_REQUIRE(w1.size() >= 1u);
    BOOST_TEST(w1[0].find("unknown field 'stage_const_memory' is ignored") != std::string::npos,
               w1[0]);
    BOOST_TEST(w1[0].find("did you mean 'stage_const_mem'?") != std::string::npos, w1[0]);
    const auto w2 = warnings_of(
        file({head,
              body(R"("memory_parameter": 20, "memory_activation": 1, "memory_activations": 5)")}));
    BOOST_TEST_REQUIRE(w2.size() >= 1u);
    BOOST_TEST(w2[0].find("layers_description[1]: unknown field 'memory_activations' is ignored") !=
                   std::string::npos,
               w2[0]);
    BOOST_TEST(w2[0].find("did you mean 'memory_activation'?") != std::string::npos, w2[0]);
    const TableModel colour(
        file({R"({"name": "e", "type": "HEAD", "nb_layer": 1, "colour": "red"})", body()}));
    BOOST_TEST(colour.table().warnings.at(0).find(
                   "layers_description[0]: unknown field 'colour' is ignored") !=
               std::string::npos);
    const auto report = boost::json::parse(colour.report());
    BOOST_TEST(report.at("diagnostics")
                   .at("warnings")
                   .as_array()
                   .at(0)
                   .as_string()
                   .find("unknown field 'colour'") != boost::json::string::npos);
}

BOOST_AUTO_TEST_CASE(every_sapp_field_is_accepted) {
    const TableModel model(file({R"({"name": "decoder", "type": "BODY", "nb_layer": 8,
        "time": 2, "forward_time": 2, "backward_time": 4, "select_rec_time": 4.1,
        "select_comm_time": 4.5, "both_comm_select_time": 4.6, "recompute_time": 6,
        "backward_coef": 0, "select_rec_coef": 0.04, "select_comm_coef": 0.125,
        "both_comm_select_coef": 0.165, "recompute_coef": 0.5, "memory_parameter": 20,
        "memory_activation": 5, "memory_select_rec": 4, "memory_select_comm": 3,
        "memory_both_comm_select": 2, "memory_recompute": 1})"},
                                R"("comment": "all of them", "stage_const_mem": 0, "name": "m",
                                   "auto_partition_layer": {"decoder": 8})"));
    const auto p = model.parameters();
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->identified == 0x1ffu);
    BOOST_TEST(p->activation_mb[PPB_KIND_BOTH] == 2.0);
}

BOOST_AUTO_TEST_CASE(entry_fields_are_checked) {
    check_invalid(
        file({R"({"name": "e", "type": "head", "nb_layer": 1})", body()}),
        {R"(layers_description[0].type: expected one of "HEAD", "BODY", "TAIL", got "head")"});
    check_invalid(file({R"({"name": "e", "nb_layer": 1})", body()}),
                  {"layers_description[0]: missing required field 'type'"});
    check_invalid(file({R"({"type": "HEAD", "nb_layer": 1})", body()}),
                  {"layers_description[0]: missing required field 'name'"});
    check_invalid(file({R"({"name": 7, "type": "HEAD", "nb_layer": 1})", body()}),
                  {"layers_description[0].name: expected a string, got 7"});
    check_invalid(file({R"({"name": "e", "type": "HEAD"})", body()}),
                  {"layers_description[0]: missing required field 'nb_layer'"});
    check_invalid(file({R"({"name": "e", "type": "HEAD", "nb_layer": 0})", body()}),
                  {"layers_description[0].nb_layer: 0 is out of range (1 to 10000 layers)"});
    check_invalid(
        file({R"({"name": "e", "type": "HEAD", "nb_layer": 1.5})", body()}),
        {"layers_description[0].nb_layer: expected an integer, 1 to 10000 layers, got 1.5"});
    check_invalid(
        file({R"({"name": "e", "type": "HEAD", "nb_layer": 5000000000})", body()}),
        {"layers_description[0].nb_layer: 5000000000 is out of range (1 to 10000 layers)"});
    check_invalid(file({R"({"name": "e", "type": "HEAD", "nb_layer": 1, "time": "fast"})", body()}),
                  {R"(layers_description[0].time: expected a non-negative number, got "fast")"});
    check_invalid(file({body()}, R"("comment": 5)"), {"comment: expected a string, got 5"});
}

BOOST_AUTO_TEST_CASE(no_body_or_several_bodies) {
    check_invalid(file({head, tail}), {"layers_description: no BODY entry"});
    // Several BODY names are groups of layers (test_table_groups.cpp), each needing its memory.
    const TableModel model(
        file({head, body(), body(R"("memory_parameter": 1, "memory_activation": 1)", "mlp")}));
    BOOST_TEST(model.groups() == (std::vector<std::string>{"decoder", "mlp"}));
    check_invalid(file({head, body(), body(R"("memory_activation": 1)", "mlp")}),
                  {"layers_description[2]: the BODY entry \"mlp\" has no memory_parameter"});
}

BOOST_AUTO_TEST_CASE(negative_memory) {
    check_invalid(file({head, body(R"("memory_parameter": 20, "memory_activation": -5)")}),
                  {"layers_description[1].memory_activation: negative memory -5"});
    check_invalid(file({head, body(R"("memory_parameter": -0.25, "memory_activation": 5)")}),
                  {"layers_description[1].memory_parameter: negative memory -0.25"});
    check_invalid(
        file({R"({"name": "e", "type": "HEAD", "nb_layer": 1, "memory_parameter": -1})", body()}),
        {"layers_description[0].memory_parameter: negative memory -1"});
    check_invalid(
        file({body(R"("memory_parameter": 2, "memory_activation": 5, "memory_recompute": -1e-3)")}),
        {"layers_description[0].memory_recompute: negative memory -0.001"});
    check_invalid(file({body()}, R"("constant_memory_mb": -1)"),
                  {"constant_memory_mb: negative memory -1"});
}

BOOST_AUTO_TEST_CASE(non_finite_memory) {
    // Boost.JSON alone would read these as infinities.
    check_invalid(file({head, body(R"("memory_parameter": 20, "memory_activation": 1e400)")}),
                  {"layers_description[1].memory_activation: number out of range: 1e400 does "
                   "not fit a double"});
    check_invalid(file({head, body(R"("memory_parameter": -1E+400, "memory_activation": 5)")}),
                  {"layers_description[1].memory_parameter: number out of range: -1E+400"});
    check_invalid(file({body()}, R"("constant_memory_mb": 2e308)"),
                  {"constant_memory_mb: number out of range: 2e308"});
    // Finite values beyond their range (which keeps every sum of memories finite).
    check_invalid(file({R"({"name": "e", "type": "HEAD", "nb_layer": 1,
                            "memory_parameter": 1e300})",
                        body()}),
                  {"layers_description[0].memory_parameter: 1e+300 is out of range (0 to 1e9 MB)"});
    // Not numbers at all.
    check_invalid(
        file({head, body(R"("memory_parameter": 20, "memory_activation": "820")")}),
        {R"(layers_description[1].memory_activation: expected a number of MB (at least 0), got "820")"});
    check_invalid(file({head, body(R"("memory_parameter": 20, "memory_activation": null)")}),
                  {"layers_description[1].memory_activation: expected a number of MB", "null"});
    check_invalid(file({body()}, R"("constant_memory_mb": "3072")"),
                  {"constant_memory_mb: expected a number of MB"});
}

BOOST_AUTO_TEST_CASE(body_without_memory) {
    check_invalid(file({head, body(R"("memory_activation": 5)")}),
                  {R"(layers_description[1]: the BODY entry "decoder" has no memory_parameter)"});
    // A time-only SAPP file.
    check_invalid(file({head, body(R"("backward_coef": 0)")}),
                  {"layers_description[1]", "no memory_parameter"});
    check_invalid(file({head, body(R"("memory_parameter": 20)")}),
                  {R"(layers_description[1]: the BODY entry "decoder" gives no activation memory)",
                   "memory_activation, memory_select_rec"});
}

BOOST_AUTO_TEST_CASE(duplicate_keys) {
    check_invalid(
        file({head,
              body(R"("memory_parameter": 20, "memory_activation": 5, "memory_activation": 6)")}),
        {"layers_description[1]: duplicate field 'memory_activation'"});
    check_invalid(R"({"constant_memory_mb": 1, "constant_memory_mb": 2, "layers_description": []})",
                  {"duplicate field 'constant_memory_mb'"});
}

BOOST_AUTO_TEST_CASE(options_of_another_model) {
    // A ppb.dryrun/1 document given to the wrong model.
    check_invalid(read_text(samples_dir / "llama70b-pp8-dryrun.json"),
                  {"these look like options for another model", "'format'", "'observations'",
                   "ppb.dryrun/1 dry-run file", "The table model takes a SAPP layer file"});
    check_invalid(R"({"format": "ppb.dryrun/1", "observations": []})",
                  {"'format' and 'observations' are fields of a ppb.dryrun/1 dry-run file"});
    check_invalid(R"({"hidden_size": 8192, "num_layers": 80, "seq_length": 4096})",
                  {"these look like options for another model",
                   "'hidden_size', 'num_layers' and 'seq_length' are fields of the analytic "
                   "model's options",
                   "SAPP layer file"});
    check_invalid(read_text(samples_dir / "llama70b-shape.json"),
                  {"these look like options for another model", "'hidden_size'",
                   "the analytic model's options", "The table model takes a SAPP layer file"});
    check_invalid(R"({"rank_tolerance": 1e-10})", {"'rank_tolerance' is a field of dryrun-lsq's"});
    check_invalid(R"({"format": "ppb.fit/1", "parameters": {}})", {"ppb fit --export-sapp"});
    // Next to a layer list, a stray key is an unknown field of the layer file: a warning.
    BOOST_TEST(TableModel(file({body()}, R"("hidden_size": 8192)"))
                   .table()
                   .warnings.at(0)
                   .find("unknown field 'hidden_size' is ignored") != std::string::npos);
    BOOST_TEST(TableModel(file({body()}, R"("constant_mb": 3072)"))
                   .table()
                   .warnings.at(0)
                   .find("unknown field 'constant_mb' is ignored") != std::string::npos);
}

// The layer file is read by ppb::parse_json, like every reader: a UTF-8 byte-order mark (as some
// editors write) is skipped; repeated keys are refused (duplicate_keys).
BOOST_AUTO_TEST_CASE(a_byte_order_mark_is_accepted) {
    const std::string text = read_text(samples_dir / "llama70b-layers.json");
    const TableModel plain(text);
    const TableModel with_bom("\xEF\xBB\xBF" + text);
    const auto a = plain.parameters();
    const auto b = with_bom.parameters();
    BOOST_TEST_REQUIRE((a.has_value() && b.has_value()));
    BOOST_TEST(a->identified == b->identified);
    BOOST_TEST(a->per_layer_mb == b->per_layer_mb);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace table_bad_input_tests
