// ppb/json_output.hpp: indented JSON that reads back to the same value.
#include <ppb/json_input.hpp>
#include <ppb/json_output.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

namespace json = boost::json;
using ppb::to_pretty_json;

BOOST_AUTO_TEST_SUITE(json_output)

BOOST_AUTO_TEST_CASE(layout) {
    json::object o;
    o["format"] = "ppb.fit/1";
    o["model"] = json::object{{"name", "dryrun-lsq"}, {"version", "1.0.0"}};
    o["residuals_mb"] = json::array{1.5, -2, 0.25};
    o["empty_list"] = json::array{};
    o["empty_object"] = json::object{};
    o["rows"] = 12;
    o["null"] = nullptr;
    o["flag"] = true;
    o["list"] = json::array{json::object{{"parameter", "const_mb"}}, 3};
    const std::string expected = R"({
  "format": "ppb.fit/1",
  "model": {
    "name": "dryrun-lsq",
    "version": "1.0.0"
  },
  "residuals_mb": [1.5, -2, 0.25],
  "empty_list": [],
  "empty_object": {},
  "rows": 12,
  "null": null,
  "flag": true,
  "list": [
    {
      "parameter": "const_mb"
    },
    3
  ]
}
)";
    BOOST_TEST(to_pretty_json(o) == expected);
    BOOST_TEST(to_pretty_json(json::value(3)) == "3\n");
    BOOST_TEST(to_pretty_json(json::array{}) == "[]\n");
}

BOOST_AUTO_TEST_CASE(long_arrays_take_one_line_per_element) {
    json::array long_list;
    for (int i = 0; i < 30; ++i)
        long_list.push_back(1000.25 + i);
    const std::string text = to_pretty_json(json::object{{"residuals_mb", long_list}});
    BOOST_TEST(text.starts_with("{\n  \"residuals_mb\": [\n    1000.25,\n    1001.25,\n"));
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = text.find('\n', start);
        BOOST_TEST(end - start <= 100u);
        start = end + 1;
    }
}

BOOST_AUTO_TEST_CASE(numbers) {
    BOOST_TEST(to_pretty_json(2048.0) == "2048.0\n");
    BOOST_TEST(to_pretty_json(-0.0) == "-0.0\n");
    BOOST_TEST(to_pretty_json(0.1) == "0.1\n");
    BOOST_TEST(to_pretty_json(1e20) == "1e+20\n");
    BOOST_TEST(to_pretty_json(1e15) == "1000000000000000.0\n");
    BOOST_TEST(to_pretty_json(json::value(std::uint64_t{18446744073709551615u})) ==
               "18446744073709551615\n");
    BOOST_TEST(to_pretty_json(json::value(std::int64_t{-5})) == "-5\n");
}

// Every double reads back exactly with ppb::parse_json. (Boost.JSON 1.81's own json::parse is
// not correctly rounded: it reads "123456789.12345679" as 123456789.12345681.)
BOOST_AUTO_TEST_CASE(doubles_read_back_exactly) {
    const auto check = [](double d) {
        const json::value back = ppb::parse_json(to_pretty_json(d), "out");
        BOOST_TEST_REQUIRE(back.is_double());
        BOOST_TEST(
            std::bit_cast<std::uint64_t>(back.as_double()) == std::bit_cast<std::uint64_t>(d),
            to_pretty_json(d));
    };
    for (const double d : {0.1, 1.0 / 3.0, 2.0 / 3.0 * 1e-300, 5e-324, 2.2250738585072014e-308,
                           1.7976931348623157e308, 41234.5, -1e-7, 123456789.123456789, 0.0, -0.0,
                           1e16, 9007199254740993.0}) {
        check(d);
    }
    std::mt19937_64 random(20240501);
    for (int i = 0; i < 20000; ++i) {
        const double d = std::bit_cast<double>(random());
        if (std::isfinite(d))
            check(d);
    }
    std::uniform_real_distribution<double> memory(0.0, 100000.0);
    for (int i = 0; i < 20000; ++i)
        check(memory(random));
}

BOOST_AUTO_TEST_CASE(strings_are_escaped) {
    const json::value v = json::object{{"quote\"key\n", "tab\t \\ \"q\" \x01 é \u2028"}};
    const std::string text = to_pretty_json(v);
    BOOST_TEST(text.find("\\\"key\\n") != std::string::npos);
    BOOST_TEST(text.find("\\t") != std::string::npos);
    BOOST_TEST(text.find("\\u0001") != std::string::npos);
    BOOST_TEST((json::parse(text) == v));
}

BOOST_AUTO_TEST_CASE(round_trip) {
    const json::value v = json::parse(R"({
        "format": "ppb.fit/1",
        "model": {"name": "dryrun-lsq", "version": "1.0.0"},
        "parameters": {"const_mb": 2048.0, "head_mb": 7188.5, "tail_mb": 3746.0,
                       "param_per_layer_mb": 1710.0,
                       "activation_mb": {"none": 994.0, "select": 739.0, "comm": null,
                                         "both": 403.0, "full": 32.0}},
        "diagnostics": {"rank": 8, "rows": 12, "unknowns": ["const_mb", "head_mb"],
                        "not_identifiable": [{"parameter": "activation_mb.comm",
                                              "reason": "no observation uses it",
                                              "suggestion": "add a dry run"}],
                        "residuals_mb": [0.1, -0.2, 1e-9, 3, 123456.789], "rms_residual_mb": 0.5,
                        "nested": [[1, 2], [], [{}], [[[]]]], "big": 18446744073709551615,
                        "negative": -9223372036854775808}
    })");
    const std::string text = to_pretty_json(v);
    BOOST_TEST((ppb::parse_json(text, "out") == v));
    // Member order is kept.
    BOOST_TEST(text.find("\"format\"") < text.find("\"model\""));
    BOOST_TEST(text.find("\"model\"") < text.find("\"parameters\""));
    BOOST_TEST(text.find("\"parameters\"") < text.find("\"diagnostics\""));
    BOOST_TEST(text.ends_with("}\n"));
}

BOOST_AUTO_TEST_CASE(refuses_non_finite_numbers) {
    const double inf = std::numeric_limits<double>::infinity();
    BOOST_CHECK_THROW((void)to_pretty_json(std::nan("")), std::domain_error);
    BOOST_CHECK_THROW((void)to_pretty_json(inf), std::domain_error);
    BOOST_CHECK_THROW((void)to_pretty_json(json::array{1.0, -inf}), std::domain_error);
    try {
        (void)to_pretty_json(json::object{{"a", json::array{1.0, json::object{{"b", inf}}}}});
        BOOST_ERROR("expected std::domain_error");
    } catch (const std::domain_error& e) {
        BOOST_TEST(std::string(e.what()).find("a[1].b") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()
