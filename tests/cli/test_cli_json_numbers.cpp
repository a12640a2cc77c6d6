// JSON numbers as plain numbers in every document ppb writes (host_api/docs/formats.md,
// "Numbers"): integers as integers, other numbers in the shortest form that reads back to the
// same double ("0.1", "2048.0", "1e-10"), never Boost.JSON's own "2E0" or "1E-1"; and the members
// the formats define as counts are integers. One writer owns this (ppb/json_output.hpp): every
// command's document is checked here, number by number.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_json_numbers_tests {

namespace {

const std::string samples = PPB_SAMPLES_DIR;

// The number tokens of a JSON text (outside strings), in order.
std::vector<std::string> number_tokens(std::string_view text) {
    std::vector<std::string> out;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            std::size_t end = i;
            while (end < text.size() &&
                   std::string_view("+-0123456789.eE").find(text[end]) != std::string_view::npos)
                ++end;
            out.emplace_back(text.substr(i, end - i));
            i = end - 1;
        }
    }
    return out;
}

// Why `token` is not a plain number, or "" when it is: an integer, or a double in its shortest
// round-trip form (fmt's "{}", ".0" after an integral one), with a lower-case exponent only
// where that form has one.
std::string not_plain(const std::string& token) {
    if (token.find_first_of(".eE") == std::string::npos)
        return {};  // an integer
    if (token.find('E') != std::string::npos)
        return "an upper-case exponent";
    double d = 0.0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), d);
    if (ec != std::errc{} || end != token.data() + token.size())
        return "not a number";
    std::string shortest = fmt::format("{}", d);
    if (shortest.find_first_of(".e") == std::string::npos)
        shortest += ".0";
    return shortest == token ? std::string() : "not the shortest form, " + shortest;
}

// Members every ppb format defines as whole numbers.
const std::set<std::string, std::less<>> count_members = {
    "num_stages",     "stage",     "chunk",  "micro_batches",     "num_chunks",
    "num_layers",     "in_flight", "rank",   "pipeline_parallel", "data_parallel",
    "chunks",         "nb_layer",  "layers", "body_layers",       "micro_batch",
    "configurations", "planned"};

// Members of `value` named in count_members whose numbers are not integers.
void check_counts(const json::value& value, const std::string& path, std::string& defects) {
    if (const auto* o = value.if_object()) {
        for (const auto& [key, member] : *o) {
            const std::string at = path + "." + std::string(key);
            if (count_members.count(std::string_view(key)) != 0 && member.is_double())
                defects += at + " is not an integer; ";
            check_counts(member, at, defects);
        }
    } else if (const auto* a = value.if_array()) {
        for (std::size_t i = 0; i < a->size(); ++i)
            check_counts((*a)[i], fmt::format("{}[{}]", path, i), defects);
    }
}

// `with_doubles`: the document carries numbers that are not counts, which must be seen.
void check_document(const std::string& what, const std::string& text, bool with_doubles = true) {
    BOOST_TEST_CONTEXT(what) {
        const json::value doc = parse_json(text);
        std::string defects;
        std::size_t doubles = 0;
        for (const std::string& token : number_tokens(text)) {
            const std::string why = not_plain(token);
            if (!why.empty())
                defects += token + ": " + why + "; ";
            doubles += token.find_first_of(".e") != std::string::npos ? 1 : 0;
        }
        check_counts(doc, "", defects);
        BOOST_TEST(defects.empty(), defects);
        if (with_doubles)
            BOOST_TEST(doubles > 0u);
    }
}

std::string run_ok(const std::vector<std::string>& args, const std::string& stdin_text = {}) {
    const auto r = ppb(args, {}, stdin_text);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    return r.out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_json_numbers)

BOOST_AUTO_TEST_CASE(the_token_check_sees_boost_json_s_own_forms) {
    BOOST_TEST(not_plain("2E0") == "an upper-case exponent");
    BOOST_TEST(not_plain("1E-1") == "an upper-case exponent");
    BOOST_TEST(not_plain("0.10") == "not the shortest form, 0.1");
    BOOST_TEST(not_plain("0.1").empty());
    BOOST_TEST(not_plain("2048.0").empty());
    BOOST_TEST(not_plain("1e-10").empty());
    BOOST_TEST((number_tokens(R"({"a": [1, -2.5e-07], "b": "3.0E0"})") ==
                std::vector<std::string>{"1", "-2.5e-07"}));
}

BOOST_AUTO_TEST_CASE(every_command_writes_plain_numbers) {
    const std::string partition =
        run_ok({"partition", "--model-desc", layers_file, "--dryrun", sample_dryrun, "--stages",
                "8", "--memory-limit-mb", "30000", "--schedule", "interleaved", "--json"});
    check_document("partition", partition);
    const std::string plan = write_file(partition, "numbers-plan.json");
    check_document("simulate", run_ok({"simulate", plan, "--json"}));
    check_document("fit", run_ok({"fit", sample_dryrun, "--json"}));
    check_document("predict",
                   run_ok({"predict", sample_dryrun, "--stage", "1", "--schedule", "interleaved",
                           "--chunk", "none=3", "--chunk", "full=2", "--json"}));
    check_document("compare", run_ok({"compare", sample_dryrun, "--model", "dryrun-lsq",
                                      "--partition", plan, "--json"}));
    check_document("search",
                   run_ok({"search", "--model-desc", layers_file, "--dryrun", sample_dryrun,
                           "--tensor-parallel", "8", "--pipeline-degrees", "4,8", "--global-batch",
                           "64", "--memory-limit-mb", "40000", "--progress", "never", "--json"}));
    check_document("design", run_ok({"design", "--stages", "4", "--num-layers", "8", "--json"}));
    check_document("plugins --check", run_ok({"plugins", "--check", "--json"}), false);
    const std::string dryrun = run_ok({"import", "sapp", samples + "/import/sapp/init_pp4.yaml"});
    check_document("import sapp", dryrun);
    const std::string layers = write_file("", "numbers-layers.json");
    (void)run_ok({"fit", "-", "--export-sapp", layers}, dryrun);
    std::ifstream exported(layers);
    check_document("fit --export-sapp", std::string(std::istreambuf_iterator<char>(exported), {}));
    check_document("import mindspore", run_ok({"import", "mindspore", "--config",
                                               samples + "/import/mindspore/llama13b_pp4_a.yaml",
                                               samples + "/import/mindspore/run_a"}));
}

// The analytic model's options, which held "param_bytes": 2E0 (Boost.JSON's serializer), and a
// prediction with them.
BOOST_AUTO_TEST_CASE(model_options_are_plain_numbers) {
    const std::string options = run_ok({"import",
                                        "megatron-options",
                                        "--world-size",
                                        "8",
                                        "--",
                                        "--num-layers",
                                        "12",
                                        "--hidden-size",
                                        "512",
                                        "--num-attention-heads",
                                        "8",
                                        "--seq-length",
                                        "1024",
                                        "--max-position-embeddings",
                                        "1024",
                                        "--micro-batch-size",
                                        "4",
                                        "--global-batch-size",
                                        "32",
                                        "--vocab-size",
                                        "50304",
                                        "--tensor-model-parallel-size",
                                        "1",
                                        "--pipeline-model-parallel-size",
                                        "2",
                                        "--transformer-impl",
                                        "local",
                                        "--bf16"});
    check_document("import megatron-options", options);
    BOOST_TEST(options.find("\"param_bytes\":2.0") != std::string::npos, options);
    const std::string shape = write_file(options, "numbers-shape.json");
    check_document("predict --model analytic",
                   run_ok({"predict", "--model", "analytic", "--model-options", shape, "--stages",
                           "2", "--stage", "1", "--layers", "none=6", "--json"}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_json_numbers_tests
