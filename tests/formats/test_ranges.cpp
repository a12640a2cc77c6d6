// The documented ranges (ppb/limits.hpp) in the readers: values beyond them are refused where
// they are read, naming the field and the range; values at the bounds are accepted.
#include <ppb/dryrun_format.hpp>
#include <ppb/errors.hpp>
#include <ppb/limits.hpp>
#include <ppb/sapp/layer_file.hpp>

#include "../common/error_testing.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using ppb::InputError;
namespace sapp = ppb::sapp;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace ranges_tests {

namespace {

std::string layer_file(const std::string& body_members, const std::string& top = "") {
    return R"({"layers_description": [{"name": "embedding", "type": "HEAD", "nb_layer": 1},
        {"name": "decoder", "type": "BODY", )" +
           body_members + "}]" + (top.empty() ? "" : ", " + top) + "}";
}

sapp::LayerFile parse_llama_file(const std::string& text) {
    return sapp::parse_layer_file(text, "llama.json");
}

std::string dryrun(const std::string& observation, const std::string& top = R"("num_stages": 4)") {
    return R"({"format": "ppb.dryrun/1", )" + top + R"(, "observations": [)" + observation + "]}";
}

ppb::DryRunSet parse_dryrun(const std::string& text) {
    return ppb::parse_dryrun(text, "dryrun.json", {});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ranges)

BOOST_AUTO_TEST_CASE(range_texts) {
    BOOST_TEST(ppb::limits::describe(ppb::limits::layers) == "1 to 10000 layers");
    BOOST_TEST(ppb::limits::describe(ppb::limits::memory_mb) == "0 to 1e9 MB");
    BOOST_TEST(ppb::limits::describe(ppb::limits::time) == "0 to 1e9");
    BOOST_TEST(ppb::limits::describe(ppb::limits::backward_coefficient) ==
               "greater than -1, at most 1000");
}

// Observed: nb_layer 4294967295 was accepted and `layers + 1` wrapped in the stage tables.
BOOST_AUTO_TEST_CASE(layer_file_huge_nb_layer) {
    PPB_CHECK_ERROR(InputError,
                    parse_llama_file(layer_file(R"("nb_layer": 4294967295, "time": 1)")),
                    "llama.json: layers_description[1].nb_layer: 4294967295 is out of range (1 "
                    "to 10000 layers)");
    PPB_CHECK_ERROR(InputError,
                    parse_llama_file(layer_file(R"("nb_layer": 1000000000, "time": 1)")),
                    "llama.json: layers_description[1].nb_layer: 1000000000 is out of range (1 "
                    "to 10000 layers)");
    PPB_CHECK_ERROR(InputError, parse_llama_file(layer_file(R"("nb_layer": 10001, "time": 1)")),
                    "llama.json: layers_description[1].nb_layer: 10001 is out of range (1 to "
                    "10000 layers)");
    BOOST_TEST(
        parse_llama_file(layer_file(R"("nb_layer": 10000, "time": 1)")).entries[1].nb_layer ==
        10000u);
}

// Observed: 1e307 MB or time made predictions and the iteration estimate infinite.
BOOST_AUTO_TEST_CASE(layer_file_huge_memory_and_time) {
    PPB_CHECK_ERROR(
        InputError,
        parse_llama_file(layer_file(R"("nb_layer": 8, "time": 1, "memory_parameter": 1e307)")),
        "llama.json: layers_description[1].memory_parameter: 1e+307 is out of range "
        "(0 to 1e9 MB)");
    PPB_CHECK_ERROR(
        InputError,
        parse_llama_file(layer_file(R"("nb_layer": 8, "time": 1, "memory_activation": 1e10)")),
        "llama.json: layers_description[1].memory_activation: 10000000000.0 is out "
        "of range (0 to 1e9 MB)");
    PPB_CHECK_ERROR(InputError, parse_llama_file(layer_file(R"("nb_layer": 8, "time": 1e307)")),
                    "llama.json: layers_description[1].time: 1e+307 is out of range (0 to 1e9)");
    PPB_CHECK_ERROR(
        InputError,
        parse_llama_file(layer_file(R"("nb_layer": 8, "time": 1, "backward_coef": 1001)")),
        "llama.json: layers_description[1].backward_coef: 1001 is out of range "
        "(greater than -1, at most 1000)");
    PPB_CHECK_ERROR(InputError,
                    parse_llama_file(layer_file(R"("nb_layer": 8, "time": 1)",
                                                R"("constant_memory_mb": 1e307)")),
                    "llama.json: constant_memory_mb: 1e+307 is out of range (0 to 1e9 MB)");
    const auto at_bounds = parse_llama_file(
        layer_file(R"("nb_layer": 8, "time": 1e9, "memory_parameter": 1e9, "backward_coef": 1000)",
                   R"("constant_memory_mb": 0)"));
    BOOST_TEST(*at_bounds.entries[1].time == 1e9);
    BOOST_TEST(*at_bounds.entries[1].memory_parameter == 1e9);
}

BOOST_AUTO_TEST_CASE(dryrun_counts_and_memory) {
    const std::string ok = R"({"stage": 0, "layers": {"none": 2}, "peak_memory_mb": 20000})";
    PPB_CHECK_ERROR(InputError, parse_dryrun(dryrun(ok, R"("num_stages": 4294967295)")),
                    "dryrun.json: num_stages: 4294967295 is out of range (1 to 1024 stages)");
    PPB_CHECK_ERROR(InputError,
                    parse_dryrun(dryrun(ok, R"("num_stages": 4, "micro_batches": 4294967295)")),
                    "dryrun.json: micro_batches: 4294967295 is out of range (1 to 1000000 "
                    "micro-batches)");
    PPB_CHECK_ERROR(
        InputError,
        parse_dryrun(
            dryrun(R"({"stage": 0, "layers": {"none": 4294967295}, "peak_memory_mb": 1})")),
        "dryrun.json: observations[0].layers.none: 4294967295 is out of range (0 to 10000 "
        "layers)");
    PPB_CHECK_ERROR(
        InputError,
        parse_dryrun(dryrun(R"({"stage": 0, "layers": {"none": 2}, "peak_memory_mb": 1e307})")),
        "dryrun.json: observations[0].peak_memory_mb: 1e+307 is out of range (greater than 0, at "
        "most 1e9 MB)");
    PPB_CHECK_ERROR(
        InputError,
        parse_dryrun(dryrun(
            R"({"stage": 0, "layers": {"none": 2}, "in_flight": 1000001, "peak_memory_mb": 1})")),
        "dryrun.json: observations[0].in_flight: 1000001 is out of range (1 to "
        "1000000 micro-batches)");
    const auto set =
        parse_dryrun(dryrun(R"({"stage": 1023, "layers": {"none": 10000}, "peak_memory_mb": 1e9})",
                            R"("num_stages": 1024, "micro_batches": 1000000)"));
    BOOST_TEST(set.observations.front().placement.num_stages == 1024u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ranges_tests
