// A Megatron-LM run's arguments from its configuration's MODEL_ARGS
// (ppb/importers/megatron_model_config.hpp): each rule of Megatron-LM's launcher
// (tests/functional_tests/shell_test_utils/_run_training.sh at d98e8a64dd) and of
// Megatron-MoE-ModelZoo's runner where they differ, the environment's variables, and every bad
// file named with its line.
#include <ppb/errors.hpp>
#include <ppb/importers/megatron_model_config.hpp>

#include <boost/test/unit_test.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

using ppb::importers::megatron_model_config;
using ppb::importers::MegatronModelConfig;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_model_config_tests {

namespace {

const std::map<std::string, std::string, std::less<>> variables = {{"TP", "4"}, {"DATA", "/data"}};

std::optional<std::string> lookup(std::string_view name) {
    const auto at = variables.find(name);
    if (at == variables.end())
        return std::nullopt;
    return at->second;
}

MegatronModelConfig read(const std::string& text) {
    return megatron_model_config(text, "run.yaml", lookup);
}

std::string refusal(const std::string& text) {
    try {
        (void)read(text);
    } catch (const ppb::InputError& e) {
        return e.what();
    }
    return "(accepted)";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(megatron_model_config_arguments)

BOOST_AUTO_TEST_CASE(each_value_becomes_the_words_megatrons_launcher_passes) {
    const MegatronModelConfig c = read(R"(ENV_VARS:
  NVTE_FUSED_ATTN: 0
MODEL_ARGS:
  --num-layers: 15
  --bf16: true
  --quoted-true: "true"
  --log-params-norm: false
  --tensorboard-dir: ""
  --recompute-modules: "[layernorm  mla_up_proj mlp]"
  --moe-layer-freq: ([0]*3+[1]*12)
  --pipeline-model-parallel-layout: "Et*3|(tt|)*6mL"
  --step-batch-size-schedule: "0:384 200B:768"
  --norm-epsilon: 1e-6
  --lr-warmup-fraction: .01
  --attention-backend: unfused # a comment is no value
  --empty-brackets: "[]"
METRICS:
  - "lm loss"
)");
    const std::vector<std::string> expected = {"--num-layers",
                                               "15",
                                               "--bf16",
                                               "--quoted-true",
                                               "--recompute-modules",
                                               "layernorm",
                                               "mla_up_proj",
                                               "mlp",
                                               "--moe-layer-freq",
                                               "([0]*3+[1]*12)",
                                               "--pipeline-model-parallel-layout",
                                               "Et*3|(tt|)*6mL",
                                               "--step-batch-size-schedule",
                                               "0:384 200B:768",
                                               "--norm-epsilon",
                                               "1e-6",
                                               "--lr-warmup-fraction",
                                               ".01",
                                               "--attention-backend",
                                               "unfused",
                                               "--empty-brackets",
                                               "[]"};
    BOOST_TEST(c.arguments == expected, boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(c.notes.size() == 2u);
    BOOST_TEST(c.notes[0] ==
               "run.yaml:8: MODEL_ARGS.--tensorboard-dir: an empty value leaves the flag out, as "
               "Megatron-LM's launcher does");
    BOOST_TEST(c.notes[1] ==
               "run.yaml: false leaves --log-params-norm out, as "
               "Megatron-MoE-ModelZoo's runner does");
}

BOOST_AUTO_TEST_CASE(variables_are_the_environments_and_unset_ones_are_kept_as_written) {
    const MegatronModelConfig c = read(R"(MODEL_ARGS:
  --tensor-model-parallel-size: ${TP}
  --data-path: $DATA/text_document
  --save: ${OUTPUT}/ckpt
  --tensorboard-dir: ${OUTPUT}
  --price: 5$
  --literal: ${unclosed
)");
    const std::vector<std::string> expected = {"--tensor-model-parallel-size",
                                               "4",
                                               "--data-path",
                                               "/data/text_document",
                                               "--save",
                                               "${OUTPUT}/ckpt",
                                               "--tensorboard-dir",
                                               "${OUTPUT}",
                                               "--price",
                                               "5$",
                                               "--literal",
                                               "${unclosed"};
    BOOST_TEST(c.arguments == expected, boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(c.notes.size() == 1u);
    BOOST_TEST(c.notes[0] ==
               "run.yaml: not set in the environment, kept as written (set those "
               "whose values ppb reads): ${OUTPUT} (--save, --tensorboard-dir)");
}

BOOST_AUTO_TEST_CASE(bad_files_are_named_with_their_line) {
    BOOST_TEST(refusal("ENV_VARS:\n  A: 1\n") ==
               "run.yaml: no MODEL_ARGS (the mapping of Megatron-LM flags to values that "
               "Megatron-LM's functional tests and Megatron-MoE-ModelZoo's configurations launch "
               "a run with)");
    BOOST_TEST(refusal("MODEL_ARGS: [--bf16]\n") ==
               "run.yaml:1: MODEL_ARGS: expected a mapping of Megatron-LM flags to their values, "
               "got a list");
    BOOST_TEST(refusal("MODEL_ARGS:\n  --bf16: true\n  num-layers: 2\n") ==
               "run.yaml:3: MODEL_ARGS.num-layers: expected a flag ('--num-layers') as the key, "
               "got 'num-layers'");
    BOOST_TEST(refusal("MODEL_ARGS:\n  --num-layers: [1, 2]\n") ==
               "run.yaml:2: MODEL_ARGS.--num-layers: expected one value, got a list: write "
               "several as Megatron-LM's configurations do, in one string (\"[a b c]\")");
    BOOST_TEST(
        refusal("MODEL_ARGS:\n  --num-layers: {a: 1}\n")
            .starts_with("run.yaml:2: MODEL_ARGS.--num-layers: expected one value, got a mapping"));
    BOOST_TEST(refusal("MODEL_ARGS:\n  --num-layers:\n  --bf16: true\n") ==
               "run.yaml:2: MODEL_ARGS.--num-layers: no value: give true for a switch, or the "
               "flag's value (Megatron-LM's launcher would pass the word null)");
    BOOST_TEST(refusal("MODEL_ARGS:\n  --: 1\n")
                   .starts_with("run.yaml:2: MODEL_ARGS.--: expected a flag"));
    BOOST_TEST(refusal("MODEL_ARGS: [a\n").starts_with("run.yaml:2:1: not valid YAML"));
    BOOST_TEST(refusal("- a\n- b\n")
                   .starts_with("run.yaml: expected a Megatron-LM run configuration with "
                                "MODEL_ARGS (a YAML mapping)"));
    BOOST_TEST(refusal("").starts_with("run.yaml: no MODEL_ARGS"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_model_config_tests
