// Options: defaults, and every kind of bad option rejected with the key named.
#include "analytic_support.hpp"

#include <ppb/model_shape_keys.hpp>
#include <ppb/plugin.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace analytic_test;
using ppb::analytic::parse_options;
using ppb::analytic::ShapeOptions;
using ppb::plugin::InvalidInput;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace options_tests {

namespace {

constexpr std::string_view minimal =
    R"("hidden_size": 4096, "num_attention_heads": 32, "ffn_hidden_size": 11008,
       "seq_length": 4096, "micro_batch_size": 1, "vocab_size": 32000, "num_layers": 32,
       "tensor_parallel": 4)";

}  // namespace

BOOST_AUTO_TEST_SUITE(options)

// The options the plugin reads are the model shape's keys the host's time model knows
// (ppb/model_shape_keys.hpp), in the same order: a key added to one reader is added to both.
BOOST_AUTO_TEST_CASE(the_options_are_the_model_shapes_keys) {
    const std::vector<std::string_view> read = ppb::analytic::option_names();
    const std::vector<std::string_view> shape(ppb::model_shape::keys.begin(),
                                              ppb::model_shape::keys.end());
    BOOST_TEST(read == shape, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(defaults) {
    const ShapeOptions o = parse_options(options_json(minimal, ""));
    BOOST_TEST(o.kv_heads() == 32u);
    BOOST_TEST(o.data_parallel == 1u);
    BOOST_TEST(!o.sequence_parallel);
    BOOST_TEST(!o.distributed_optimizer);
    BOOST_TEST(o.gated_mlp);
    BOOST_TEST(!o.flash_attention);
    BOOST_TEST(o.untie_embeddings);
    BOOST_TEST(o.dropout);
    BOOST_TEST(!o.keep_gathered_inputs);
    BOOST_TEST(o.param_bytes == 2.0);
    BOOST_TEST(o.grad_bytes == 4.0);
    BOOST_TEST(o.optimizer_bytes == 12.0);
    BOOST_TEST(o.constant_mb == 0.0);
}

BOOST_AUTO_TEST_CASE(integral_numbers_written_as_decimals_are_integers) {
    const ShapeOptions o = parse_options(R"({"hidden_size": 4096.0, "num_attention_heads": 32,
        "ffn_hidden_size": 11008, "seq_length": 4096, "micro_batch_size": 1,
        "vocab_size": 32000, "num_layers": 32, "tensor_parallel": 4e0})");
    BOOST_TEST(o.hidden_size == 4096u);
    BOOST_TEST(o.tensor_parallel == 4u);
}

BOOST_AUTO_TEST_CASE(every_missing_required_option_is_named) {
    for (const std::string key :
         {"hidden_size", "num_attention_heads", "ffn_hidden_size", "seq_length", "micro_batch_size",
          "vocab_size", "num_layers", "tensor_parallel"}) {
        const std::string message = rejection(options_without(minimal, key));
        BOOST_TEST(contains(message, "missing required option '" + key + "'"), message);
    }
    BOOST_TEST(contains(rejection("{}"), "missing required option 'hidden_size'"));
}

BOOST_AUTO_TEST_CASE(bad_values_are_rejected_naming_the_key) {
    struct Case {
        const char* member;
        const char* key;
    };
    const Case cases[] = {
        {R"("hidden_size": "4096")", "hidden_size"},
        {R"("hidden_size": 4096.5)", "hidden_size"},
        {R"("seq_length": 0)", "seq_length"},
        {R"("micro_batch_size": -1)", "micro_batch_size"},
        {R"("vocab_size": 1e20)", "vocab_size"},
        {R"("num_layers": 18446744073709551615)", "num_layers"},
        {R"("tensor_parallel": true)", "tensor_parallel"},
        {R"("num_kv_heads": null)", "num_kv_heads"},
        {R"("data_parallel": 0)", "data_parallel"},
        {R"("sequence_parallel": 1)", "sequence_parallel"},
        {R"("distributed_optimizer": "yes")", "distributed_optimizer"},
        {R"("gated_mlp": null)", "gated_mlp"},
        {R"("flash_attention": 0)", "flash_attention"},
        {R"("untie_embeddings": [])", "untie_embeddings"},
        {R"("dropout": 0.1)", "dropout"},
        {R"("keep_gathered_inputs": {})", "keep_gathered_inputs"},
        {R"("param_bytes": 0)", "param_bytes"},
        {R"("grad_bytes": -1)", "grad_bytes"},
        {R"("optimizer_bytes": "12")", "optimizer_bytes"},
        {R"("constant_mb": -5)", "constant_mb"},
    };
    for (const auto& c : cases) {
        const std::string message = rejection(options_json(minimal, c.member));
        BOOST_TEST(contains(message, std::string("'") + c.key + "'"), message);
    }
    const std::string fraction = rejection(options_json(minimal, R"("hidden_size": 4096.5)"));
    BOOST_TEST(contains(fraction, "got 4096.5"), fraction);
    // A number a double cannot hold is refused, never taken as an infinity.
    for (const char* key : {"constant_mb", "hidden_size"}) {
        const std::string rest = options_without(minimal, key);
        const std::string message =
            rejection(rest.substr(0, rest.size() - 1) + ", \"" + key + "\": 1e400}");
        // ppb::parse_json refuses it while parsing, naming the option by its JSON path.
        BOOST_TEST(contains(message, std::string(key) + ": number out of range: 1e400"), message);
    }
}

BOOST_AUTO_TEST_CASE(unknown_keys_are_named_with_a_suggestion) {
    const std::string message = rejection(options_json(minimal, R"("sequence_paralel": true)"));
    BOOST_TEST(contains(message, "no option 'sequence_paralel'"), message);
    BOOST_TEST(contains(message, "did you mean 'sequence_parallel'"), message);
    BOOST_TEST(contains(message, "known options: hidden_size"), message);
    const std::string far = rejection(options_json(minimal, R"("colour": "blue")"));
    BOOST_TEST(contains(far, "no option 'colour'"), far);
    BOOST_TEST(!contains(far, "did you mean"), far);
}

BOOST_AUTO_TEST_CASE(shapes_the_formulas_cannot_split) {
    struct Case {
        const char* changes;
        std::vector<const char*> parts;
    };
    const Case cases[] = {
        {R"("num_attention_heads": 30, "tensor_parallel": 1)",
         {"hidden_size 4096", "num_attention_heads 30", "h/a"}},
        {R"("tensor_parallel": 3)", {"num_attention_heads 32", "tensor_parallel 3"}},
        {R"("num_kv_heads": 12, "tensor_parallel": 1)", {"num_kv_heads 12"}},
        {R"("num_kv_heads": 4, "tensor_parallel": 8)", {"num_kv_heads 4", "tensor_parallel 8"}},
        {R"("num_kv_heads": 64)", {"num_kv_heads 64", "exceeds"}},
        {R"("ffn_hidden_size": 11000, "tensor_parallel": 16)", {"ffn_hidden_size 11000"}},
        {R"("vocab_size": 32001)", {"vocab_size 32001", "padded"}},
        {R"("seq_length": 1001, "sequence_parallel": true)", {"seq_length 1001"}},
    };
    for (const auto& c : cases) {
        const std::string message = rejection(options_json(minimal, c.changes));
        for (const char* part : c.parts)
            BOOST_TEST(contains(message, part), message);
    }
    // Without sequence parallelism the sequence is not split: any length will do.
    BOOST_CHECK_NO_THROW((void)parse_options(options_json(minimal, R"("seq_length": 1000)")));
}

BOOST_AUTO_TEST_CASE(another_models_input_is_recognised) {
    const std::string sapp = rejection(R"({"layers_description": []})");
    BOOST_TEST(contains(sapp, "that is a SAPP layer file: use --model table"), sapp);
    const std::string dryrun =
        rejection(R"({"format": "ppb.dryrun/1", "num_stages": 8, "observations": []})");
    BOOST_TEST(contains(dryrun, "dry-run file"), dryrun);
    BOOST_TEST(contains(dryrun, "dryrun-lsq"), dryrun);
    const std::string observations = rejection(R"({"observations": []})");
    BOOST_TEST(contains(observations, "'observations'"), observations);
    BOOST_TEST(contains(observations, "dry-run file"), observations);
    const std::string fit = rejection(R"({"format": "ppb.fit/1", "parameters": {}})");
    BOOST_TEST(contains(fit, "fit result"), fit);
    const std::string partition = rejection(R"({"format": "ppb.partition/1"})");
    BOOST_TEST(contains(partition, "ppb document"), partition);
    const std::string lsq = rejection(R"({"rank_tolerance": 1e-10})");
    BOOST_TEST(contains(lsq, "option of the dryrun-lsq model"), lsq);
}

BOOST_AUTO_TEST_CASE(malformed_json) {
    BOOST_TEST(contains(rejection("{"), "not valid JSON"));
    BOOST_TEST(contains(rejection("[1, 2]"), "must be a JSON object, got an array"));
    BOOST_TEST(contains(rejection(""), "not valid JSON"));
}

BOOST_AUTO_TEST_CASE(options_without_effect_are_warned_about) {
    const auto warnings = ppb::analytic::option_warnings(
        parse_options(options_json(minimal, R"("tensor_parallel": 1, "sequence_parallel": true,
                   "keep_gathered_inputs": true, "distributed_optimizer": true)")));
    BOOST_TEST(warnings.size() == 3u);
    BOOST_TEST(ppb::analytic::option_warnings(parse_options(options_json(minimal, ""))).empty());
}

// The options are read by ppb::parse_json, like every reader: a repeated key is refused (Boost.JSON
// alone would keep the last value) and a UTF-8 byte-order mark is skipped.
BOOST_AUTO_TEST_CASE(a_repeated_key_is_refused_and_a_byte_order_mark_accepted) {
    const std::string one = options_json(minimal, "");
    const std::string twice = one.substr(0, one.size() - 1) + R"(, "hidden_size": 8192})";
    const std::string message = rejection(twice);
    BOOST_TEST(contains(message, "duplicate field 'hidden_size'"), message);
    const ShapeOptions o = parse_options("\xEF\xBB\xBF" + one);
    BOOST_TEST(o.kv_heads() == 32u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace options_tests
