// ppb/sapp/layer_file.hpp: the one reader and writer of the SAPP layer file.
#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/sapp/layer_file.hpp>

#include "../common/error_testing.hpp"

#include <boost/json/value.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

using ppb::InputError;
namespace sapp = ppb::sapp;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace sapp_layer_file_tests {

namespace {

sapp::LayerFile parse_layers(const std::string& text) {
    return sapp::parse_layer_file(text, "layers.json");
}

// A file with the given entries (without the brackets) and extra top-level members.
std::string layers(const std::string& entries, const std::string& extra = "") {
    return R"({"layers_description": [)" + entries + "]" + (extra.empty() ? "" : ", " + extra) +
           "}";
}

// A BODY entry named "decoder" with 8 layers and the given further members.
std::string body(const std::string& members = R"("time": 1)") {
    return R"({"name": "decoder", "type": "BODY", "nb_layer": 8)" +
           (members.empty() ? "" : ", " + members) + "}";
}

// Every field set, with values that are hard to write exactly.
sapp::LayerFile full_file() {
    sapp::LayerFile file;
    file.comment = "all fields \"quoted\"";
    file.stage_const_mem = -3071.9999999999995;
    file.name = "llama";
    file.pre_defined_layer = {{"embedding", 0}, {"lm head \u00e9", -1}};
    file.auto_partition_layer = {{"decoder", 80}};
    sapp::Entry head{.name = "embedding", .type = sapp::EntryType::head, .nb_layer = 1};
    head.time = 0.1;
    head.memory_parameter = 4210.123456789012;
    head.model_name = "llama";
    sapp::Entry decoder{.name = "decoder", .type = sapp::EntryType::body, .nb_layer = 80};
    decoder.time = 30.0;
    decoder.forward_time = 1.0 / 3.0;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        decoder.backward_time[k] = std::nextafter(2.0 + static_cast<double>(k), 10.0);
        decoder.backward_coef[k] = -0.999 + 1e-17 * static_cast<double>(k);
        decoder.memory_activation[k] = 820.0 / (3.0 + static_cast<double>(k));
    }
    decoder.memory_parameter = 1e-300;
    sapp::Entry tail{.name = "lm head \u00e9", .type = sapp::EntryType::tail, .nb_layer = 10000u};
    tail.memory_parameter = std::nextafter(1e9, 0.0);  // the largest memory below the range's end
    file.entries = {head, decoder, tail};
    return file;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sapp_layer_file)

BOOST_AUTO_TEST_CASE(reads_every_field) {
    const sapp::LayerFile file = parse_layers(layers(
        R"({"name": "embedding", "type": "HEAD", "nb_layer": 2.0, "time": 12,
            "memory_parameter": 0},
           {"name": "decoder", "type": "BODY", "nb_layer": 80, "time": 30, "forward_time": 29,
            "backward_time": 60, "select_rec_coef": 0.04, "recompute_time": 91,
            "memory_parameter": 1710, "memory_activation": 820, "memory_recompute": 0.5},
           {"name": "lm_head", "type": "TAIL", "nb_layer": 1})",
        R"("stage_const_mem": 3072, "comment": "llama")"));
    BOOST_TEST_REQUIRE(file.entries.size() == 3u);
    BOOST_TEST(file.body_index() == 1u);
    BOOST_TEST(file.comment.value() == "llama");
    BOOST_TEST(file.stage_const_mem.value() == 3072.0);
    BOOST_TEST(file.warnings.empty());
    const sapp::Entry& head = file.entries[0];
    BOOST_TEST((head.type == sapp::EntryType::head));
    BOOST_TEST(head.nb_layer == 2u);
    BOOST_TEST(head.time.value() == 12.0);
    BOOST_TEST(head.memory_parameter.value() == 0.0);
    const sapp::Entry& decoder = file.entries[1];
    BOOST_TEST(decoder.forward_time.value() == 29.0);
    BOOST_TEST(decoder.backward_time[PPB_KIND_NONE].value() == 60.0);
    BOOST_TEST(decoder.backward_time[PPB_KIND_FULL].value() == 91.0);
    BOOST_TEST(!decoder.backward_time[PPB_KIND_SELECT].has_value());
    BOOST_TEST(decoder.backward_coef[PPB_KIND_SELECT].value() == 0.04);
    BOOST_TEST(decoder.memory_activation[PPB_KIND_NONE].value() == 820.0);
    BOOST_TEST(decoder.memory_activation[PPB_KIND_FULL].value() == 0.5);
    BOOST_TEST(!decoder.memory_activation[PPB_KIND_COMM].has_value());
    const sapp::Entry& tail = file.entries[2];
    BOOST_TEST(!tail.time.has_value());
    BOOST_TEST(!tail.memory_parameter.has_value());
    // Optional top-level members.
    const sapp::LayerFile bare = parse_layers(layers(body()));
    BOOST_TEST(!bare.comment.has_value());
    BOOST_TEST(!bare.stage_const_mem.has_value());
}

BOOST_AUTO_TEST_CASE(read_write_read_is_exact) {
    const sapp::LayerFile original = full_file();
    const std::string text = sapp::write_layer_file(original);
    const sapp::LayerFile read = parse_layers(text);
    BOOST_TEST((read == original), text);
    // Writing what was read gives the same text.
    BOOST_TEST(sapp::write_layer_file(read) == text);
    // A file as people write it: integers for times, fields in another order.
    const std::string hand = layers(
        R"({"memory_activation": 0.1, "type": "BODY", "name": "d", "time": 3, "nb_layer": 5,
            "memory_parameter": 123456789.12345679})",
        R"("stage_const_mem": 0.30000000000000004)");
    const sapp::LayerFile first = parse_layers(hand);
    const sapp::LayerFile again = parse_layers(sapp::write_layer_file(first));
    BOOST_TEST((again == first));
    BOOST_TEST(again.entries[0].memory_parameter.value() == 123456789.12345679);
    BOOST_TEST(again.stage_const_mem.value() == 0.30000000000000004);
}

BOOST_AUTO_TEST_CASE(writes_fields_in_a_fixed_order) {
    sapp::LayerFile file;
    file.comment = "c";
    file.stage_const_mem = 2.0;
    file.name = "m";
    file.auto_partition_layer = {{"b", 3}};
    file.pre_defined_layer = {{"h", 0}};
    sapp::Entry entry{.name = "b", .type = sapp::EntryType::body, .nb_layer = 3};
    entry.memory_activation[PPB_KIND_FULL] = 1.0;
    entry.time = 4.0;
    entry.model_name = "m";
    file.entries.push_back(entry);
    file.warnings = {"not written"};
    BOOST_TEST(sapp::write_layer_file(file) == R"({
  "comment": "c",
  "name": "m",
  "pre_defined_layer": {
    "h": 0
  },
  "auto_partition_layer": {
    "b": 3
  },
  "stage_const_mem": 2.0,
  "layers_description": [
    {
      "name": "b",
      "model_name": "m",
      "type": "BODY",
      "nb_layer": 3,
      "time": 4.0,
      "memory_recompute": 1.0
    }
  ]
}
)");
    // JSON has no infinity: the writer refuses it rather than write a file no one can read.
    file.entries[0].time = std::numeric_limits<double>::infinity();
    BOOST_CHECK_THROW((void)sapp::write_layer_file(file), std::domain_error);
}

BOOST_AUTO_TEST_CASE(the_document_and_the_list) {
    PPB_CHECK_ERROR(InputError, parse_layers("[]"),
                    "layers.json: expected a JSON object (a SAPP layer file: "
                    "{\"layers_description\": [...]}), got an empty array");
    PPB_CHECK_ERROR(InputError, parse_layers("{\"layers_description\": [\n  {\"name\": }]}"),
                    "layers.json:2:12: malformed JSON");
    PPB_CHECK_ERROR(InputError, parse_layers("{}"),
                    "layers.json: missing required field 'layers_description' (a SAPP layer "
                    "file is {\"layers_description\": [");
    PPB_CHECK_ERROR(InputError, parse_layers(R"({"layers_description": 5})"),
                    "layers.json: layers_description: expected an array of layer entries, got 5");
    PPB_CHECK_ERROR(InputError, parse_layers(R"({"layers_description": []})"),
                    "layers.json: layers_description: the list is empty");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body() + R"(, "HEAD")")),
                    "layers.json: layers_description[1]: expected an object (a layer entry), got "
                    "\"HEAD\"");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(), R"("comment": ["x"])")),
                    "layers.json: comment: expected a string, got an array");
}

BOOST_AUTO_TEST_CASE(unknown_fields_warn_with_did_you_mean) {
    // SAPP versions add fields: a field neither SAPP nor ppb knows is a warning, not a refusal.
    const sapp::LayerFile file =
        parse_layers(layers(body(R"("time": 1, "memory_activations": 5)"),
                            R"("stage_const_memory": 1, "colour": "red")"));
    BOOST_TEST_REQUIRE(file.warnings.size() == 3u);
    BOOST_TEST(file.warnings[0].starts_with(
                   "layers.json: unknown field 'stage_const_memory' is ignored (neither SAPP nor "
                   "ppb knows it; did you mean 'stage_const_mem'? known here: comment, name, "
                   "pre_defined_layer, auto_partition_layer, stage_const_mem, "
                   "layers_description, constant_memory_mb, layers_description_new)"),
               file.warnings[0]);
    BOOST_TEST(file.warnings[1].starts_with("layers.json: unknown field 'colour' is ignored "
                                            "(neither SAPP nor ppb knows it known here:"),
               file.warnings[1]);
    BOOST_TEST(file.warnings[2].starts_with(
                   "layers.json: layers_description[0]: unknown field 'memory_activations' is "
                   "ignored (neither SAPP nor ppb knows it; did you mean 'memory_activation'?"),
               file.warnings[2]);
    BOOST_TEST(!file.stage_const_mem.has_value());
    BOOST_TEST(!file.entries[0].memory_activation[PPB_KIND_NONE].has_value());
}

BOOST_AUTO_TEST_CASE(sapp_top_level_fields) {
    const std::string head = R"({"name": "emb", "model_name": "llama", "type": "HEAD",
                                 "nb_layer": 1})";
    const std::string tail = R"({"name": "norm", "type": "TAIL", "nb_layer": 1})";
    const sapp::LayerFile file = parse_layers(layers(head + ", " + body() + ", " + tail,
                                                     R"("name": "llama", "stage_const_mem": -12.5,
                        "pre_defined_layer": {"emb": 0, "norm": -1, "lm_head-Linear": -1},
                        "auto_partition_layer": {"decoder": 8})"));
    BOOST_TEST(file.name.value() == "llama");
    BOOST_TEST(file.stage_const_mem.value() == -12.5);
    BOOST_TEST(file.entries[0].model_name.value() == "llama");
    BOOST_TEST_REQUIRE(file.pre_defined_layer.size() == 3u);
    BOOST_TEST(file.pre_defined_layer[1].name == "norm");
    BOOST_TEST(file.pre_defined_layer[1].value == -1);
    BOOST_TEST((file.auto_partition_layer == std::vector<sapp::NamedValue>{{"decoder", 8}}));
    // A predefined name that is no entry is a note.
    BOOST_TEST_REQUIRE(file.warnings.size() == 1u);
    BOOST_TEST(file.warnings[0] ==
               "layers.json: pre_defined_layer.lm_head-Linear: \"lm_head-Linear\" is no entry "
               "of layers_description: ppb places every HEAD entry on stage 0 and every TAIL "
               "entry on the last stage");
    // An auto-partitioned name other than the BODY's (SAPP's files name the profiler's layer
    // class) is taken silently when the number agrees.
    const sapp::LayerFile other =
        parse_layers(layers(body(), R"("auto_partition_layer": {"LLamaDecodeLayer": 8})"));
    BOOST_TEST(other.warnings.empty());
}

BOOST_AUTO_TEST_CASE(auto_partition_layer_disagreeing_is_a_warning) {
    // The entries are what ppb plans with: a count that disagrees is told, not refused.
    const auto one = parse_layers(layers(body(), R"("auto_partition_layer": {"decoder": 96})"));
    BOOST_TEST_REQUIRE(one.warnings.size() == 1u);
    BOOST_TEST(one.warnings[0] ==
               "layers.json: auto_partition_layer.decoder: 96 layers, but the BODY entries named "
               "\"decoder\" have 8 in all: ppb plans with the entries' nb_layer");
    BOOST_TEST(one.body_layers() == 8u);
    // Names that are not the BODY's: their numbers in all against all body layers.
    const auto names =
        parse_layers(layers(body(), R"("auto_partition_layer": {"enc": 4, "dec": 4})"));
    BOOST_TEST(names.warnings.empty());
    const auto more =
        parse_layers(layers(body(), R"("auto_partition_layer": {"enc": 4, "dec": 5})"));
    BOOST_TEST_REQUIRE(more.warnings.size() == 1u);
    BOOST_TEST(more.warnings[0] ==
               "layers.json: auto_partition_layer: \"enc\" and \"dec\" 9 layers in all, but the "
               "BODY entries have 8: ppb plans with the entries' nb_layer");
    PPB_CHECK_ERROR(InputError,
                    parse_layers(layers(body(), R"("auto_partition_layer": {"decoder": 0})")),
                    "auto_partition_layer.decoder: 0 is out of range (1 to 10000 layers)");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(), R"("auto_partition_layer": [8])")),
                    "layers.json: auto_partition_layer: expected an object");
}

BOOST_AUTO_TEST_CASE(pre_defined_layer_stages) {
    const std::string head = R"({"name": "emb", "type": "HEAD", "nb_layer": 1})";
    PPB_CHECK_ERROR(
        InputError,
        parse_layers(layers(head + ", " + body(), R"("pre_defined_layer": {"emb": 3})")),
        "layers.json: pre_defined_layer.emb: stage 3 is not supported: ppb places "
        "the layers SAPP predefines on stage 0");
    // A stage that does not fit the entry's type: the type places it, with a warning.
    const auto tail_stage =
        parse_layers(layers(head + ", " + body(), R"("pre_defined_layer": {"emb": -1})"));
    BOOST_TEST_REQUIRE(tail_stage.warnings.size() == 1u);
    BOOST_TEST(tail_stage.warnings[0] ==
               "layers.json: pre_defined_layer.emb: stage -1 does not fit layers_description[0] "
               "(HEAD \"emb\"): ppb places it by its type (HEAD), as it places every HEAD entry "
               "on stage 0 and every TAIL entry on the last stage");
    const auto body_stage = parse_layers(layers(body(), R"("pre_defined_layer": {"decoder": 0})"));
    BOOST_TEST_REQUIRE(body_stage.warnings.size() == 1u);
    BOOST_TEST(body_stage.warnings[0].find("(BODY layers are distributed over the stages)") !=
               std::string::npos);
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(), R"("pre_defined_layer": {"x": 0.5})")),
                    "pre_defined_layer.x: expected");
}

BOOST_AUTO_TEST_CASE(the_old_constant_name) {
    const sapp::LayerFile file = parse_layers(layers(body(), R"("constant_memory_mb": 3072)"));
    BOOST_TEST(file.stage_const_mem.value() == 3072.0);
    BOOST_TEST_REQUIRE(file.warnings.size() == 1u);
    BOOST_TEST(file.warnings[0].starts_with(
                   "layers.json: constant_memory_mb: 'constant_memory_mb' is the old name of "
                   "SAPP's 'stage_const_mem'"),
               file.warnings[0]);
    PPB_CHECK_ERROR(
        InputError,
        parse_layers(layers(body(), R"("constant_memory_mb": 1, "stage_const_mem": 1)")),
        "layers.json: constant_memory_mb: give 'stage_const_mem' only");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(), R"("stage_const_mem": -2e9)")),
                    "layers.json: stage_const_mem: -2000000000.0 is out of range (-1e9 to 1e9 MB)");
}

BOOST_AUTO_TEST_CASE(entry_fields) {
    PPB_CHECK_ERROR(InputError, parse_layers(layers(R"({"type": "BODY", "nb_layer": 1})")),
                    "layers.json: layers_description[0]: missing required field 'name' (the "
                    "entry's name)");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(R"({"name": "d", "nb_layer": 1})")),
                    "layers_description[0]: missing required field 'type' (HEAD, BODY or TAIL)");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(R"({"name": "d", "type": "BODY"})")),
                    "layers_description[0]: missing required field 'nb_layer' (the number of "
                    "layers of this entry)");
    PPB_CHECK_ERROR(InputError,
                    parse_layers(layers(R"({"name": null, "type": "BODY", "nb_layer": 1})")),
                    "layers_description[0].name: expected a string, got null");
    PPB_CHECK_ERROR(InputError,
                    parse_layers(layers(R"({"name": "d", "type": "Body", "nb_layer": 1})")),
                    "layers_description[0].type: expected one of \"HEAD\", \"BODY\", \"TAIL\", "
                    "got \"Body\"");
    PPB_CHECK_ERROR(
        InputError, parse_layers(layers(R"({"name": "d", "type": "BODY", "nb_layer": 0.5})")),
        "layers_description[0].nb_layer: expected an integer, 1 to 10000 layers, got 0.5");
    PPB_CHECK_ERROR(
        InputError,
        parse_layers(layers(R"({"name": "d", "type": "BODY", "nb_layer": 4294967296})")),
        "layers_description[0].nb_layer: 4294967296 is out of range (1 to 10000 "
        "layers)");
}

BOOST_AUTO_TEST_CASE(times_and_coefficients) {
    // Times may be 0 (SAPP's template gives its HEAD and TAIL "time": 0), not negative.
    BOOST_TEST(*parse_layers(layers(body(R"("time": 0)"))).entries[0].time == 0.0);
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(R"("time": -0.5)"))),
                    "layers.json: layers_description[0].time: expected a non-negative number, got "
                    "-0.5");
    PPB_CHECK_ERROR(
        InputError, parse_layers(layers(body(R"("forward_time": "3")"))),
        "layers_description[0].forward_time: expected a non-negative number, got \"3\"");
    // ppb's own weight_grad_time (a layer's W), read and written back.
    const sapp::LayerFile with_w =
        parse_layers(layers(body(R"("time": 4, "weight_grad_time": 3.5)")));
    BOOST_TEST(with_w.warnings.empty());
    BOOST_TEST(*with_w.entries[0].weight_grad_time == 3.5);
    BOOST_TEST(*parse_layers(sapp::write_layer_file(with_w)).entries[0].weight_grad_time == 3.5);
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(R"("weight_grad_time": -1)"))),
                    "layers_description[0].weight_grad_time: expected a non-negative number, got "
                    "-1");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(R"("both_comm_select_time": -2.5)"))),
                    "layers_description[0].both_comm_select_time: expected a non-negative "
                    "number, got -2.5");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(R"("select_comm_coef": -1)"))),
                    "layers_description[0].select_comm_coef: expected a number greater than -1");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(R"("time": 1e400)"))),
                    "layers_description[0].time: number out of range: 1e400");
    // Times are optional to the reader: a memory-only file is a layer file.
    BOOST_CHECK_NO_THROW((void)parse_layers(layers(body(R"("memory_parameter": 1)"))));
}

BOOST_AUTO_TEST_CASE(memory) {
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(R"("memory_parameter": -0.25)"))),
                    "layers.json: layers_description[0].memory_parameter: negative memory -0.25 "
                    "(a memory in MB is at least 0)");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(R"("memory_select_comm": true)"))),
                    "layers_description[0].memory_select_comm: expected a number of MB (at least "
                    "0), got true");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(), R"("constant_memory_mb": -1)")),
                    "layers.json: constant_memory_mb: negative memory -1");
    PPB_CHECK_ERROR(InputError, parse_layers(layers(body(), R"("constant_memory_mb": {})")),
                    "constant_memory_mb: expected a number of MB (at least 0), got an empty "
                    "object");
}

BOOST_AUTO_TEST_CASE(at_least_one_body) {
    const std::string head = R"({"name": "e", "type": "HEAD", "nb_layer": 1})";
    PPB_CHECK_ERROR(InputError, parse_layers(layers(head)),
                    "layers.json: layers_description: no BODY entry: at least one entry must have "
                    "\"type\": \"BODY\"");
}

BOOST_AUTO_TEST_CASE(body_entries_of_one_name_are_one_group) {
    const std::string head = R"({"name": "e", "type": "HEAD", "nb_layer": 1})";
    const auto file = parse_layers(layers(body() + ", " + head + ", " + body()));
    const auto groups = file.body_groups();
    BOOST_TEST_REQUIRE(groups.size() == 1u);
    BOOST_TEST(groups[0].name == "decoder");
    BOOST_TEST(groups[0].layers == 2 * file.entries[0].nb_layer);
    BOOST_TEST((groups[0].entries == std::vector<std::size_t>{0, 2}));
    BOOST_TEST(file.body_layers() == groups[0].layers);
    BOOST_TEST(file.body_sequence() == std::vector<std::uint32_t>(groups[0].layers, 0u),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(body_groups_in_model_order) {
    // dense, moe, dense, moe: two groups, the sequence following the entries.
    const std::string dense = R"({"name": "dense", "type": "BODY", "nb_layer": 1, "time": 1})";
    const std::string moe = R"({"name": "moe", "type": "BODY", "nb_layer": 2, "time": 3})";
    const auto file = parse_layers(layers(dense + ", " + moe + ", " + dense + ", " + moe));
    const auto groups = file.body_groups();
    BOOST_TEST_REQUIRE(groups.size() == 2u);
    BOOST_TEST(groups[0].name == "dense");
    BOOST_TEST(groups[0].layers == 2u);
    BOOST_TEST(groups[1].name == "moe");
    BOOST_TEST(groups[1].layers == 4u);
    BOOST_TEST(file.body_layers() == 6u);
    BOOST_TEST(file.body_sequence() == (std::vector<std::uint32_t>{0, 1, 1, 0, 1, 1}),
               boost::test_tools::per_element());
    BOOST_TEST(file.body_index() == 0u);

    // Entries of one name must be alike but for nb_layer.
    const std::string other_moe = R"({"name": "moe", "type": "BODY", "nb_layer": 2, "time": 4})";
    PPB_CHECK_ERROR(InputError, parse_layers(layers(dense + ", " + moe + ", " + other_moe)),
                    "layers.json: layers_description: layers_description[1] and "
                    "layers_description[2] are both BODY \"moe\" but differ in more than "
                    "nb_layer");
    // auto_partition_layer names groups, each with its number of layers.
    const auto with = [&](const std::string& extra) { return layers(dense + ", " + moe, extra); };
    BOOST_TEST(parse_layers(with(R"("auto_partition_layer": {"dense": 1, "moe": 2})"))
                   .auto_partition_layer.size() == 2u);
    const auto other_names =
        parse_layers(with(R"("auto_partition_layer": {"dense": 1, "mlp": 2})"));
    BOOST_TEST(other_names.warnings.empty());  // 3 layers in all, as the entries
    const auto fewer = parse_layers(with(R"("auto_partition_layer": {"moe": 3})"));
    BOOST_TEST_REQUIRE(fewer.warnings.size() == 1u);
    BOOST_TEST(fewer.warnings[0].find("auto_partition_layer.moe: 3 layers, but the BODY entries "
                                      "named \"moe\" have 2 in all") != std::string::npos);
    // More body layers in all than a model may have.
    const std::string big = R"({"name": "a", "type": "BODY", "nb_layer": 6000, "time": 1})";
    const std::string big2 = R"({"name": "b", "type": "BODY", "nb_layer": 6000, "time": 1})";
    PPB_CHECK_ERROR(InputError, parse_layers(layers(big + ", " + big2)),
                    "layers_description: the BODY entries hold 12000 layers in all");
}

BOOST_AUTO_TEST_CASE(a_parsed_document_keeps_its_source_and_paths) {
    const boost::json::value document = ppb::parse_json(
        R"({"layers_description": [{"name": "d", "type": "BODY", "nb_layer": 0}]})", "");
    PPB_CHECK_ERROR(
        InputError, sapp::read_layer_file(ppb::JsonNode(document, "options")),
        "options: layers_description[0].nb_layer: 0 is out of range (1 to 10000 layers)");
}

BOOST_AUTO_TEST_CASE(paths_for_consumers) {
    BOOST_TEST(sapp::entry_path(3) == "layers_description[3]");
    BOOST_TEST(sapp::entry_field_path(0, "memory_parameter") ==
               "layers_description[0].memory_parameter");
    const sapp::LayerFile file = full_file();
    BOOST_TEST(sapp::describe_entry(file, 0) == "layers_description[0] (HEAD \"embedding\")");
}

BOOST_AUTO_TEST_CASE(sapps_spellings_with_trailing_spaces) {
    // SAPP (hyper-parallel utils/recompute.py at 71c100e76feaa8b56c55e71d8c0fe8fda7439050) reads
    // full recompute's backward time from "recompute_time " and has aligned memory names.
    const auto file = parse_layers(layers(body(
        R"("time": 3, "recompute_time ": 9, "memory_activation ": 50, "memory_select_rec ": 20,
           "memory_recompute  ": 2)")));
    BOOST_TEST(file.warnings.empty());
    const sapp::Entry& e = file.entries[0];
    BOOST_TEST(e.backward_time[PPB_KIND_FULL].value() == 9.0);
    BOOST_TEST(e.memory_activation[PPB_KIND_NONE].value() == 50.0);
    BOOST_TEST(e.memory_activation[PPB_KIND_SELECT].value() == 20.0);
    BOOST_TEST(e.memory_activation[PPB_KIND_FULL].value() == 2.0);
    // Both spellings agreeing (9 and 9.0 alike) are one value; disagreeing, refused by name.
    BOOST_TEST(
        parse_layers(layers(body(R"("time": 3, "recompute_time": 9, "recompute_time ": 9.0)")))
            .entries[0]
            .backward_time[PPB_KIND_FULL]
            .value() == 9.0);
    PPB_CHECK_ERROR(
        InputError,
        parse_layers(layers(body(R"("time": 3, "recompute_time": 9, "recompute_time ": 8)"))),
        "layers.json: layers_description[0][\"recompute_time \"]: 'recompute_time ' is "
        "SAPP's spelling of 'recompute_time' and the entry gives both, with different "
        "values (8 and 9): give one");
    PPB_CHECK_ERROR(
        InputError,
        parse_layers(layers(body(R"("time": 3, "memory_recompute": 1, "memory_recompute  ": 2)"))),
        "'memory_recompute  ' is SAPP's spelling of 'memory_recompute'");
    // The spaced spelling's value is checked as the field's.
    PPB_CHECK_ERROR(InputError,
                    parse_layers(layers(body(R"("time": 3, "memory_activation ": -1)"))),
                    "layers_description[0][\"memory_activation \"]: negative memory");
    // The writer writes the spelling SAPP reads.
    const std::string written = sapp::write_layer_file(file);
    BOOST_TEST(written.find("\"recompute_time \": 9.0") != std::string::npos, written);
    BOOST_TEST(written.find("\"memory_activation\": 50.0") != std::string::npos, written);
    BOOST_TEST((parse_layers(written) == file));
}

BOOST_AUTO_TEST_CASE(sapp_nd_per_option_form) {
    // SAPP-ND's lay_ppb_new (hyper-parallel sapp_nd/memory_estimation/_ppb.py at
    // 0f0e617a156b700b28ca248c343db6a6e7bd9369), wrapped as layers_description_new.
    const std::string text = R"({"layers_description_new": [
        {"name": "HEAD", "type": "HEAD", "nb_layer": 1, "time": 1, "options": ["NONE", "FULL"],
         "memory_parameter": 100, "memory_activation": {"NONE": 0, "FULL": 0},
         "forward_time": {"NONE": 1, "FULL": 1}, "backward_time": {"NONE": 2, "FULL": 2}},
        {"name": "BODY_0", "type": "BODY", "nb_layer": 6, "time": 1,
         "options": ["NONE", "COMM", "SLCT", "BOTH", "FULL"], "memory_parameter": 50,
         "memory_activation": {"NONE": 40, "COMM": 30, "SLCT": 20, "BOTH": 15, "FULL": 2},
         "forward_time": {"NONE": 3, "COMM": 3, "SLCT": 3, "BOTH": 3, "FULL": 3},
         "backward_time": {"NONE": 6, "COMM": 6.5, "SLCT": 6.2, "BOTH": 6.7, "FULL": 9}},
        {"name": "COMBINED_BODY_1", "type": "BODY", "nb_layer": 2, "time": 1,
         "options": ["NONE", "FULL"], "memory_activation": {"NONE": 80, "FULL": 4},
         "backward_time": {"NONE": 12}},
        {"name": "TAIL", "type": "TAIL", "nb_layer": 1, "time": 1}]})";
    const auto file = parse_layers(text);
    BOOST_TEST(file.warnings.empty());
    BOOST_TEST_REQUIRE(file.entries.size() == 4u);
    const sapp::Entry& b = file.entries[1];
    BOOST_TEST(b.forward_time.value() == 3.0);
    BOOST_TEST(b.backward_time[PPB_KIND_NONE].value() == 6.0);
    BOOST_TEST(b.backward_time[PPB_KIND_COMM].value() == 6.5);
    BOOST_TEST(b.backward_time[PPB_KIND_SELECT].value() == 6.2);
    BOOST_TEST(b.backward_time[PPB_KIND_BOTH].value() == 6.7);
    BOOST_TEST(b.backward_time[PPB_KIND_FULL].value() == 9.0);
    BOOST_TEST(b.memory_activation[PPB_KIND_COMM].value() == 30.0);
    BOOST_TEST(b.memory_activation[PPB_KIND_FULL].value() == 2.0);
    const sapp::Entry& c = file.entries[2];
    BOOST_TEST(!c.forward_time.has_value());
    BOOST_TEST(!c.memory_activation[PPB_KIND_SELECT].has_value());
    BOOST_TEST(c.memory_activation[PPB_KIND_FULL].value() == 4.0);
    // The groups: BODY_0 and the combined body, in file order.
    const auto groups = file.body_groups();
    BOOST_TEST_REQUIRE(groups.size() == 2u);
    BOOST_TEST(groups[1].name == "COMBINED_BODY_1");
    BOOST_TEST(file.body_layers() == 8u);
    // Written in the flat form, it reads back the same.
    BOOST_TEST((parse_layers(sapp::write_layer_file(file)) == file));

    // What it cannot mean, refused by name.
    const auto entry = [](const std::string& members) {
        return layers(R"({"name": "BODY_0", "type": "BODY", "nb_layer": 2, "time": 1, )" + members +
                      "}");
    };
    PPB_CHECK_ERROR(InputError, parse_layers(entry(R"("memory_activation": {"NONE": 1})")),
                    "layers.json: layers_description[0].memory_activation: a dict per "
                    "recomputation option (SAPP-ND's form) needs the entry's 'options' list");
    PPB_CHECK_ERROR(
        InputError,
        parse_layers(entry(R"("options": ["NONE"], "memory_activation": {"NONE": 1, "FULL": 2})")),
        "layers.json: layers_description[0].memory_activation.FULL: 'FULL' is not one "
        "of the entry's options");
    PPB_CHECK_ERROR(InputError, parse_layers(entry(R"("options": ["NONE", "SWAP"])")),
                    "layers.json: layers_description[0].options[1]: expected one of SAPP's "
                    "recomputation options NONE, SLCT, COMM, BOTH, FULL, got \"SWAP\"");
    PPB_CHECK_ERROR(InputError, parse_layers(entry(R"("options": ["NONE", "NONE"])")),
                    "options[1]: option NONE is listed twice");
    PPB_CHECK_ERROR(InputError, parse_layers(entry(R"("options": "NONE")")),
                    "layers_description[0].options: expected a list of recomputation options");
    PPB_CHECK_ERROR(InputError,
                    parse_layers(entry(
                        R"("options": ["NONE", "FULL"], "forward_time": {"NONE": 1, "FULL": 2})")),
                    "layers.json: layers_description[0].forward_time.FULL: the forward time of "
                    "option FULL differs from layers_description[0].forward_time.NONE (1): ppb's "
                    "time model has one forward time per layer");
    PPB_CHECK_ERROR(InputError, parse_layers(entry(R"("options": ["FULL"], "memory_recompute": 3,
                                   "memory_activation": {"FULL": 4})")),
                    "layers_description[0].memory_activation.FULL: 4 disagrees with "
                    "layers_description[0].memory_recompute of the same entry (3.0)");
    PPB_CHECK_ERROR(InputError,
                    parse_layers(entry(R"("options": ["FULL"], "backward_time": {"FULL": -4})")),
                    "layers_description[0].backward_time.FULL: expected");
    PPB_CHECK_ERROR(InputError,
                    parse_layers(R"({"layers_description": [)" + body() +
                                 R"(], "layers_description_new": [)" + body() + "]}"),
                    "layers.json: layers_description_new: give 'layers_description' or "
                    "'layers_description_new' (SAPP-ND's name of the list), not both");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sapp_layer_file_tests
