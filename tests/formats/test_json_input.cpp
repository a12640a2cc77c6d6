// ppb/json_input.hpp: parsing with locations, typed access with JSON paths.
#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>

#include "../common/error_testing.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace json = boost::json;
using ppb::InputError;
using ppb::JsonNode;
using ppb::parse_json;

BOOST_AUTO_TEST_SUITE(json_input)

BOOST_AUTO_TEST_CASE(parses_a_document) {
    const json::value v = parse_json(R"({"a": [1, -2, 2.5, "x", true, null], "b": {}})", "t.json");
    BOOST_TEST(v.at("a").at(0).as_int64() == 1);
    BOOST_TEST(v.at("a").at(1).as_int64() == -2);
    BOOST_TEST(v.at("a").at(2).as_double() == 2.5);
    BOOST_TEST(v.at("a").at(3).as_string() == "x");
    BOOST_TEST(v.at("b").as_object().empty());
}

BOOST_AUTO_TEST_CASE(doubles_are_correctly_rounded) {
    // Boost.JSON 1.81's parser gives 123456789.12345681 here.
    BOOST_TEST(parse_json("123456789.12345679", "t").as_double() == 123456789.12345679);
    BOOST_TEST(parse_json("[0.1, 5e-324, -2.5E+3]", "t").at(0).as_double() == 0.1);
    BOOST_TEST(parse_json("[0.1, 5e-324, -2.5E+3]", "t").at(1).as_double() == 5e-324);
    BOOST_TEST(parse_json("[0.1, 5e-324, -2.5E+3]", "t").at(2).as_double() == -2500.0);
}

BOOST_AUTO_TEST_CASE(skips_a_byte_order_mark) {
    BOOST_TEST(parse_json("\xEF\xBB\xBF{\"a\": 1}", "t.json").at("a").as_int64() == 1);
}

BOOST_AUTO_TEST_CASE(malformed_json_has_line_and_column) {
    PPB_CHECK_ERROR(InputError, parse_json("{\n  \"a\": 1,\n  \"b\" 2\n}", "t.json"),
                    "t.json:3:7: malformed JSON: syntax error at '2'");
    // A trailing comma: the position of the closing bracket.
    PPB_CHECK_ERROR(InputError, parse_json("[1, 2,]", "t.json"), "t.json:1:7: malformed JSON");
    // Columns count characters, not bytes.
    PPB_CHECK_ERROR(InputError, parse_json("{\"é\": x}", "t.json"), "t.json:1:7: malformed JSON");
    PPB_CHECK_ERROR(InputError, parse_json("NaN", "t.json"), "t.json:1:1: malformed JSON");
    PPB_CHECK_ERROR(InputError, parse_json("[\"\xff\"]", "t.json"),
                    "t.json:1:3: malformed JSON: syntax error at byte 0xff (not UTF-8)");
    PPB_CHECK_ERROR(InputError, parse_json("{\"a\": \x01}", "t.json"),
                    "t.json:1:7: malformed JSON: syntax error at control character 0x01");
    PPB_CHECK_ERROR(InputError, parse_json("[1,\n é]", "t.json"),
                    "t.json:2:2: malformed JSON: syntax error at 'é'");
    PPB_CHECK_ERROR(InputError, parse_json("{\"a\": 1", "t.json"),
                    "t.json:1:8: malformed JSON: unexpected end of input");
}

BOOST_AUTO_TEST_CASE(empty_input_and_trailing_text) {
    PPB_CHECK_ERROR(InputError, parse_json("", "t.json"),
                    "t.json:1:1: malformed JSON: the input is empty");
    PPB_CHECK_ERROR(InputError, parse_json(" \n  ", "t.json"),
                    "malformed JSON: the input is empty");
    PPB_CHECK_ERROR(InputError, parse_json("{\"a\": 1}\n{\"b\": 2}", "t.json"),
                    "t.json:2:1: malformed JSON: unexpected text after the JSON document");
    PPB_CHECK_ERROR(InputError, parse_json("[1] x", "t.json"), "t.json:1:5: malformed JSON");
    // Trailing whitespace is fine.
    BOOST_TEST(parse_json("[1]  \n", "t.json").as_array().size() == 1u);
}

BOOST_AUTO_TEST_CASE(location_without_a_source) {
    PPB_CHECK_ERROR(InputError, parse_json("[1,\n 2,]", ""), "line 2, column 4: malformed JSON");
}

BOOST_AUTO_TEST_CASE(duplicate_keys_are_refused) {
    PPB_CHECK_ERROR(InputError, parse_json(R"({"a": 1, "a": 2})", "t.json"),
                    "t.json:1:12: duplicate field 'a' (a JSON object must not repeat a key)");
    PPB_CHECK_ERROR(InputError,
                    parse_json(R"({"obs": [{"s": 1}, {"s": 2, "t": 3, "s": 4}]})", "t.json"),
                    "obs[1]: duplicate field 's'");
    // The same key in different objects is fine.
    BOOST_CHECK_NO_THROW((void)parse_json(R"([{"a": 1}, {"a": 2}, {"b": {"a": 3}}])", "t.json"));
}

BOOST_AUTO_TEST_CASE(numbers_that_overflow_are_refused) {
    PPB_CHECK_ERROR(InputError, parse_json(R"({"x": [1, 1e400]})", "t.json"),
                    "t.json:1:11: x[1]: number out of range: 1e400");
    PPB_CHECK_ERROR(InputError, parse_json("-1e400", "t.json"), "number out of range: -1e400");
    PPB_CHECK_ERROR(InputError, parse_json("[1.5e99999999999999999999]", "t.json"),
                    "number out of range");
    // Underflow is zero, not an error; huge integers become doubles.
    BOOST_TEST(parse_json("1e-400", "t.json").as_double() == 0.0);
    BOOST_TEST(parse_json("123456789012345678901234", "t.json").is_double());
}

BOOST_AUTO_TEST_CASE(deep_nesting_is_refused) {
    const std::string deep = std::string(100, '[') + std::string(100, ']');
    PPB_CHECK_ERROR(InputError, parse_json(deep, "t.json"), "malformed JSON: nested more than");
}

BOOST_AUTO_TEST_CASE(paths) {
    BOOST_TEST(ppb::json_path_member("", "a") == "a");
    BOOST_TEST(ppb::json_path_member("a", "b_c-2") == "a.b_c-2");
    BOOST_TEST(ppb::json_path_member("a", "my key") == R"(a["my key"])");
    BOOST_TEST(ppb::json_path_member("a", "") == R"(a[""])");
    BOOST_TEST(ppb::json_path_element("a", 3) == "a[3]");
    BOOST_TEST(ppb::json_path_element("", 0) == "[0]");
}

BOOST_AUTO_TEST_CASE(describe) {
    BOOST_TEST(ppb::describe_json(2.5) == "2.5");
    BOOST_TEST(ppb::describe_json(-1) == "-1");
    BOOST_TEST(ppb::describe_json(3.0) == "3.0");
    BOOST_TEST(ppb::describe_json("x") == "\"x\"");
    BOOST_TEST(ppb::describe_json(nullptr) == "null");
    BOOST_TEST(ppb::describe_json(true) == "true");
    BOOST_TEST(ppb::describe_json(json::array{1}) == "an array");
    BOOST_TEST(ppb::describe_json(json::object{}) == "an empty object");
    const std::string shown = ppb::describe_json(json::value(std::string(100, 'a')));
    BOOST_TEST(shown.size() < 50u);
    BOOST_TEST(shown.ends_with("...\""));
}

BOOST_AUTO_TEST_CASE(typed_access_names_the_path) {
    const json::value doc =
        parse_json(R"({"obs": [{"stage": 2.5, "name": 3, "m": "x"}]})", "d.json");
    const JsonNode obs = JsonNode(doc, "d.json").as_object().required("obs").as_array().at(0);
    const auto o = obs.as_object();
    BOOST_TEST(obs.path() == "obs[0]");
    PPB_CHECK_ERROR(InputError, o.required("stage").as_uint32(),
                    "d.json: obs[0].stage: expected a non-negative integer, got 2.5");
    PPB_CHECK_ERROR(InputError, o.required("name").as_string(),
                    "d.json: obs[0].name: expected a string, got 3");
    PPB_CHECK_ERROR(InputError, o.required("m").as_number(),
                    "d.json: obs[0].m: expected a number, got \"x\"");
    PPB_CHECK_ERROR(InputError, o.required("m").as_object(),
                    "d.json: obs[0].m: expected an object, got \"x\"");
    PPB_CHECK_ERROR(InputError, o.required("m").as_array(),
                    "d.json: obs[0].m: expected an array, got \"x\"");
    PPB_CHECK_ERROR(InputError, o.required("m").as_bool(),
                    "d.json: obs[0].m: expected true or false, got \"x\"");
    PPB_CHECK_ERROR(InputError, o.required("peak_memory_mb"),
                    "d.json: obs[0]: missing required field 'peak_memory_mb'");
    BOOST_TEST(!o.optional("peak_memory_mb").has_value());
    BOOST_TEST(o.optional("name").has_value());
    // At the top level there is no path to show.
    PPB_CHECK_ERROR(InputError, JsonNode(doc, "d.json").as_array(),
                    "d.json: expected an array, got an object");
    // Without a source, only the path.
    const json::value one = json::object{{"a", "b"}};
    const std::string m = ppb_test::error_message<InputError>(
        [&] { (void)JsonNode(one, "").as_object().required("a").as_number(); });
    BOOST_TEST(m == "a: expected a number, got \"b\"");
}

BOOST_AUTO_TEST_CASE(integers) {
    const auto node = [](const json::value& v) { return JsonNode(v, "t", "x"); };
    BOOST_TEST(node(7).as_uint32() == 7u);
    BOOST_TEST(node(7.0).as_uint32() == 7u);
    BOOST_TEST(node(json::value(std::uint64_t{7})).as_uint32(1) == 7u);
    BOOST_TEST(node(4294967295LL).as_uint32() == 4294967295u);
    PPB_CHECK_ERROR(InputError, node(-1).as_uint32(),
                    "t: x: expected a non-negative integer, got -1");
    PPB_CHECK_ERROR(InputError, node(-1.0).as_uint32(),
                    "expected a non-negative integer, got -1.0");
    PPB_CHECK_ERROR(InputError, node(0).as_uint32(1), "expected a positive integer, got 0");
    PPB_CHECK_ERROR(InputError, node(1).as_uint32(2), "expected an integer of at least 2, got 1");
    PPB_CHECK_ERROR(InputError, node(2.5).as_uint32(), "expected a non-negative integer, got 2.5");
    PPB_CHECK_ERROR(InputError, node(4294967296LL).as_uint32(),
                    "x: number out of range: 4294967296 is more than 4294967295");
    PPB_CHECK_ERROR(InputError, node(1e20).as_uint32(), "number out of range");
    PPB_CHECK_ERROR(InputError,
                    node(json::value(std::numeric_limits<std::uint64_t>::max())).as_uint32(),
                    "number out of range");
    PPB_CHECK_ERROR(InputError, node(-1e20).as_uint32(), "expected a non-negative integer");
    PPB_CHECK_ERROR(InputError, node("3").as_uint32(),
                    "expected a non-negative integer, got \"3\"");
    PPB_CHECK_ERROR(InputError, node(nullptr).as_uint32(),
                    "expected a non-negative integer, got null");
    BOOST_TEST(node(-5).as_integer(-10, 10) == -5);
    PPB_CHECK_ERROR(InputError, node(11).as_integer(-10, 10),
                    "expected an integer from -10 to 10, got 11");
    BOOST_TEST(node(-9007199254740992.0)
                   .as_integer(std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max()) == -9007199254740992LL);
}

BOOST_AUTO_TEST_CASE(numbers) {
    const auto node = [](const json::value& v) { return JsonNode(v, "t", "x"); };
    BOOST_TEST(node(3).as_number() == 3.0);
    BOOST_TEST(node(2.5).as_positive_number() == 2.5);
    BOOST_TEST(node(0).as_non_negative_number() == 0.0);
    PPB_CHECK_ERROR(InputError, node(0.0).as_positive_number(),
                    "expected a positive number, got 0.0");
    PPB_CHECK_ERROR(InputError, node(-1).as_non_negative_number(),
                    "expected a non-negative number, got -1");
    // Values built by code may hold what no JSON text can.
    PPB_CHECK_ERROR(InputError, node(std::numeric_limits<double>::infinity()).as_number(),
                    "x: number out of range");
    PPB_CHECK_ERROR(InputError, node(std::nan("")).as_number(), "x: number out of range");
    PPB_CHECK_ERROR(InputError, node(std::nan("")).as_uint32(), "x: number out of range");
    PPB_CHECK_ERROR(InputError, node(std::nan("")).as_positive_number(), "x: number out of range");
}

BOOST_AUTO_TEST_CASE(unknown_fields) {
    const json::value doc = parse_json(R"({"stage": 1, "peak_mem": 3})", "d.json");
    const auto o = JsonNode(doc, "d.json").as_object();
    PPB_CHECK_ERROR(InputError, o.allow_only({"stage", "layers", "peak_memory_mb"}),
                    "d.json: unknown field 'peak_mem' (did you mean 'peak_memory_mb'? expected "
                    "one of: stage, layers, peak_memory_mb)");
    PPB_CHECK_ERROR(InputError, o.allow_only({"stage", "zzz"}),
                    "unknown field 'peak_mem' (expected one of: stage, zzz)");
    BOOST_CHECK_NO_THROW(o.allow_only({"peak_mem", "stage"}));
    const json::value kinds = parse_json(R"({"ful": 1})", "d.json");
    PPB_CHECK_ERROR(InputError,
                    JsonNode(kinds, "d.json", "layers")
                        .as_object()
                        .allow_only({"none", "full"}, "recompute kind"),
                    "d.json: layers: unknown recompute kind 'ful' (did you mean 'full'?");
}

BOOST_AUTO_TEST_CASE(members_in_document_order) {
    const json::value doc = parse_json(R"({"b": 1, "a": 2, "my key": 3})", "d.json");
    const auto members = JsonNode(doc, "d.json").as_object().members();
    BOOST_TEST(members.size() == 3u);
    BOOST_TEST(members[0].first == "b");
    BOOST_TEST(members[1].second.path() == "a");
    BOOST_TEST(members[2].second.path() == R"(["my key"])");
    const json::value arr = parse_json("[[1, 2]]", "d.json");
    const auto inner = JsonNode(arr, "d.json").as_array().at(0).as_array().elements();
    BOOST_TEST(inner[1].path() == "[0][1]");
}

BOOST_AUTO_TEST_CASE(read_text_file_and_errors) {
    const auto path = std::filesystem::temp_directory_path() / "ppb_test_json_input.json";
    {
        std::ofstream out(path, std::ios::binary);
        out << "{\"a\": 1}";
    }
    BOOST_TEST(ppb::read_text_file(path) == "{\"a\": 1}");
    std::filesystem::remove(path);
    PPB_CHECK_ERROR(InputError, ppb::read_text_file(path),
                    path.string() + ": cannot read: No such file or directory");
    PPB_CHECK_ERROR(InputError, ppb::read_text_file(std::filesystem::temp_directory_path()),
                    ": cannot read: Is a directory");
    PPB_CHECK_ERROR(InputError, ppb::read_text_file("/tmp/" + std::string(5000, 'x')),
                    ": cannot read: path too long (5005 bytes, the limit is PATH_MAX=4096)");
    BOOST_TEST(ppb::source_name("-") == "<stdin>");
}

BOOST_AUTO_TEST_CASE(read_text_file_from_stdin) {
    const auto path = std::filesystem::temp_directory_path() / "ppb_test_json_stdin.json";
    {
        std::ofstream out(path, std::ios::binary);
        out << "[1, 2]\n";
    }
    BOOST_TEST_REQUIRE(std::freopen(path.c_str(), "rb", stdin) != nullptr);
    BOOST_TEST(ppb::read_text_file("-") == "[1, 2]\n");
    std::filesystem::remove(path);
    BOOST_TEST(ppb::source_name("a/b.json") == "a/b.json");
}

BOOST_AUTO_TEST_SUITE_END()
