// Megatron-LM's arguments read as its argparse reads them (ppb/importers/megatron_argparse.hpp):
// the flag table against the facts extracted from Megatron-LM's parsers
// (tests/data/megatron/argparse-flags.tsv, each release's arguments.py and commit named there),
// argparse's tokenization, the release recognised from the flags or named, and the defaults that
// changed between releases.
#include <ppb/importers/layout.hpp>
#include <ppb/importers/megatron_argparse.hpp>
#include <ppb/importers/megatron_arguments.hpp>
#include <ppb/importers/megatron_flags.hpp>
#include <ppb/importers/megatron_release_defaults.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb::importers;
namespace mg = ppb::importers::megatron;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace megatron_argparse_tests {

namespace {

std::vector<std::string> split(const std::string& text, char by = ' ') {
    std::vector<std::string> out;
    std::string field;
    std::istringstream in(text);
    while (std::getline(in, field, by)) {
        if (by != ' ' || !field.empty())
            out.push_back(field);
    }
    return out;
}

mg::ReleaseIndex release(std::string_view name) {
    const auto all = mg::releases();
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].name == name)
            return static_cast<mg::ReleaseIndex>(i);
    }
    BOOST_FAIL("no release " << name);
    return 0;
}

mg::ReleaseIndex newest() {
    return static_cast<mg::ReleaseIndex>(mg::releases().size() - 1);
}

mg::ParsedArguments parse(const std::string& args, mg::ReleaseIndex r = newest()) {
    const auto list = split(args);
    mg::ParseOutcome outcome = mg::parse_megatron_arguments(list, r);
    // The messages name every error or unknown value (Boost.Test forms the message before the
    // check: no front() of an empty list).
    const auto all = [](const auto& items) {
        std::string text;
        for (const auto& item : items)
            text += "; " + std::string(item);
        return text;
    };
    BOOST_TEST_REQUIRE(outcome.errors.empty(), args << all(outcome.errors));
    BOOST_TEST_REQUIRE(outcome.unknown.empty(), args << all(outcome.unknown));
    BOOST_TEST_REQUIRE(outcome.parsed.has_value());
    return std::move(*outcome.parsed);
}

std::vector<std::string> errors_of(const std::vector<std::string>& list,
                                   mg::ReleaseIndex r = newest()) {
    const mg::ParseOutcome outcome = mg::parse_megatron_arguments(list, r);
    BOOST_TEST(!outcome.parsed.has_value());
    return outcome.errors;
}

std::string flag_error(const std::string& args, std::optional<std::string> version = {}) {
    const auto list = split(args);
    try {
        (void)mg::read_megatron_arguments(list, version);
    } catch (const FlagError& e) {
        return e.what();
    }
    BOOST_ERROR("accepted: " << args);
    return {};
}

json::value value(const mg::ParsedArguments& p, std::string_view flag) {
    const auto v = p.value(flag);
    BOOST_TEST_REQUIRE(v.has_value(), flag);
    return *v;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

const std::string gpt =
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 256 "
    "--vocab-size 1000 ";
// Flags every release has, 2.6 (which has no --vocab-size) included.
const std::string gpt_any_release =
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 256 "
    "--vocab-file gpt2-vocab.json ";

}  // namespace

BOOST_AUTO_TEST_SUITE(megatron_argparse)

// The table holds, release by release, exactly the facts extracted from each release's parser.
BOOST_AUTO_TEST_CASE(the_flag_table_is_megatrons_parser_release_by_release) {
    std::ifstream in(std::string(PPB_MEGATRON_DATA_DIR) + "/argparse-flags.tsv");
    BOOST_TEST_REQUIRE(in.good());
    std::vector<std::string> release_lines;
    std::map<mg::ReleaseIndex, std::size_t> per_release;
    std::size_t rows = 0;
    const auto nargs_name = [](const mg::Flag& f) {
        switch (f.arity) {
            case mg::FlagArity::none:
                return std::string("none");
            case mg::FlagArity::one:
                return std::string("one");
            case mg::FlagArity::optional:
                return std::string("optional");
            case mg::FlagArity::any:
                return std::string("any");
            case mg::FlagArity::at_least_one:
                return std::string("at_least_one");
            case mg::FlagArity::exactly:
                return "exactly " + std::to_string(f.count);
        }
        return std::string();
    };
    const auto action_name = [](mg::FlagAction a) {
        switch (a) {
            case mg::FlagAction::store:
                return "store";
            case mg::FlagAction::store_true:
                return "store_true";
            case mg::FlagAction::store_false:
                return "store_false";
            case mg::FlagAction::boolean_optional:
                return "boolean_optional";
        }
        return "";
    };
    const auto type_name = [](mg::FlagValueType t) {
        switch (t) {
            case mg::FlagValueType::none:
                return "none";
            case mg::FlagValueType::text:
                return "text";
            case mg::FlagValueType::integer:
                return "integer";
            case mg::FlagValueType::real:
                return "real";
            case mg::FlagValueType::boolean:
                return "boolean";
            case mg::FlagValueType::custom:
                return "custom";
        }
        return "";
    };
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("# release ")) {
            release_lines.push_back(line);
            continue;
        }
        if (line.starts_with("#"))
            continue;
        const std::vector<std::string> f = split(line, '\t');
        BOOST_TEST_REQUIRE(f.size() == 10U, line);
        ++rows;
        for (mg::ReleaseIndex r = release(f[1]); r <= release(f[2]); ++r) {
            const mg::Flag* flag = mg::find_flag(f[0], r);
            BOOST_TEST_REQUIRE(flag != nullptr, f[0] << " at " << mg::releases()[r].name);
            BOOST_TEST(flag->dest == f[3], f[0]);
            BOOST_TEST(action_name(flag->action) == f[4], f[0]);
            BOOST_TEST(nargs_name(*flag) == f[5], f[0]);
            BOOST_TEST(type_name(flag->type) == f[6], f[0]);
            BOOST_TEST(flag->choices == f[7], f[0]);
            BOOST_TEST(flag->default_json == f[8], f[0]);
            BOOST_TEST(flag->sets_default == (f[9] == "default"), f[0]);
            ++per_release[r];
        }
    }
    BOOST_TEST(rows == mg::flags().size());
    // No flag of the table beyond the facts: each release knows as many flags as the file says.
    for (mg::ReleaseIndex r = 0; r <= newest(); ++r) {
        const auto known = std::ranges::count_if(
            mg::flags(), [r](const mg::Flag& f) { return f.first <= r && r <= f.last; });
        BOOST_TEST(static_cast<std::size_t>(known) == per_release[r], mg::releases()[r].name);
    }
    // The releases are those the facts name, with their commits and dates.
    BOOST_TEST_REQUIRE(release_lines.size() == mg::releases().size());
    for (std::size_t i = 0; i < release_lines.size(); ++i) {
        const mg::Release& r = mg::releases()[i];
        BOOST_TEST(release_lines[i].starts_with("# release " + std::string(r.name) + " " +
                                                std::string(r.commit) + " " + std::string(r.date)),
                   release_lines[i]);
    }
    // Figures every reader can check against Megatron-LM's own file: --recompute-modules takes
    // '+' values at main, --spec took exactly 2 at 0.4 and '*' later, --transformer-impl's
    // default became transformer_engine at 0.6.
    BOOST_TEST(
        (mg::find_flag("--recompute-modules", newest())->arity == mg::FlagArity::at_least_one));
    BOOST_TEST(mg::find_flag("--spec", release("0.4"))->count == 2U);
    BOOST_TEST((mg::find_flag("--spec", release("0.5"))->arity == mg::FlagArity::any));
    BOOST_TEST(mg::find_flag("--transformer-impl", release("0.5"))->default_json == "\"local\"");
    BOOST_TEST(mg::find_flag("--transformer-impl", release("0.6"))->default_json ==
               "\"transformer_engine\"");
    BOOST_TEST(mg::find_flag("--use-legacy-models", release("0.7")) == nullptr);
    BOOST_TEST(mg::find_flag("--use-legacy-models", release("0.18")) == nullptr);
}

// Every row of the defaults table names real releases, and a flag's default agrees with the
// flag table at every release the row covers; rows of one setting never overlap.
BOOST_AUTO_TEST_CASE(the_release_defaults_agree_with_the_flag_table) {
    std::map<std::string, std::vector<std::pair<mg::ReleaseIndex, mg::ReleaseIndex>>> covered;
    for (const mg::ReleaseDefault& row : mg::release_defaults()) {
        const mg::ReleaseIndex first = release(row.first);
        const mg::ReleaseIndex last = release(row.last);
        BOOST_TEST_REQUIRE(first <= last, row.setting);
        BOOST_TEST(!row.source.empty(), row.setting);
        for (const auto& [a, b] : covered[std::string(row.key)])
            BOOST_TEST((last < a || first > b), row.key << " covered twice");
        covered[std::string(row.key)].emplace_back(first, last);
        if (row.flag.empty())
            continue;
        for (mg::ReleaseIndex r = first; r <= last; ++r) {
            const mg::Flag* f = mg::find_flag(row.flag, r);
            BOOST_TEST_REQUIRE(f != nullptr, row.flag << " at " << mg::releases()[r].name);
            BOOST_TEST(json::parse(f->default_json) == json::parse(row.value),
                       row.flag << " at " << mg::releases()[r].name);
        }
        BOOST_TEST(mg::release_default(row.key, first) == row.value);
    }
    BOOST_TEST(mg::release_default("transformer_impl", release("23.06")) == "\"local\"");
    BOOST_TEST(mg::release_default("null_tokenizer_vocabulary", release("0.17")) ==
               "vocab_size + 1");
    BOOST_TEST(mg::release_default("null_tokenizer_vocabulary", release("0.18")) == "vocab_size");
}

BOOST_AUTO_TEST_CASE(flags_take_their_values_as_argparse_reads_them) {
    // nargs '+': every value up to the next flag.
    auto p = parse(gpt + "--recompute-modules core_attn mlp moe_act --bf16");
    BOOST_TEST(json::serialize(value(p, "--recompute-modules")) ==
               R"(["core_attn","mlp","moe_act"])");
    BOOST_TEST(value(p, "--bf16").as_bool());
    // '*' may take none; FLAG=VALUE gives one value, also to a '+' flag.
    p = parse(gpt + "--data-path --cuda-graph-modules=attn --lr=3e-4");
    BOOST_TEST(json::serialize(value(p, "--data-path")) == "[]");
    BOOST_TEST(json::serialize(value(p, "--cuda-graph-modules")) == R"(["attn"])");
    BOOST_TEST(value(p, "--lr").as_double() == 3e-4);
    // Negative numbers are values; int() and float() as Python reads them.
    p = parse(gpt +
              "--init-method-std -.5 --null-tokenizer-pad-id -1 --train-iters 1_000 "
              "--min-lr 1E-5");
    BOOST_TEST(value(p, "--init-method-std").as_double() == -0.5);
    BOOST_TEST(value(p, "--null-tokenizer-pad-id").as_int64() == -1);
    BOOST_TEST(value(p, "--train-iters").as_int64() == 1000);
    BOOST_TEST(value(p, "--min-lr").as_double() == 1e-5);
    // A repeated flag keeps its last value; flags of one attribute overwrite each other.
    p = parse(gpt +
              "--micro-batch-size 2 --micro-batch-size 4 --rl-persist-cuda-graphs "
              "--no-rl-persist-cuda-graphs");
    BOOST_TEST(value(p, "--micro-batch-size").as_int64() == 4);
    BOOST_TEST(!value(p, "--rl-persist-cuda-graphs").as_bool());
    BOOST_TEST(!value(p, "--no-rl-persist-cuda-graphs").as_bool());
    // Exactly N: --rampup-batch-size START INCREMENT SAMPLES.
    p = parse(gpt + "--rampup-batch-size 32 32 1000 --bf16");
    BOOST_TEST(json::serialize(value(p, "--rampup-batch-size")) == "[32,32,1000]");
    // Defaults of the release for flags not given; given flags are listed in order.
    BOOST_TEST(value(p, "--attention-dropout").as_double() == 0.1);
    BOOST_TEST(value(p, "--transformer-impl").as_string() == "transformer_engine");
    BOOST_TEST(parse(gpt, release("0.5")).value("--transformer-impl")->as_string() == "local");
    BOOST_TEST(p.given("--rampup-batch-size"));
    BOOST_TEST(!p.given("--attention-dropout"));
}

BOOST_AUTO_TEST_CASE(what_argparse_refuses_is_an_error_naming_the_argument) {
    const auto with = [](const std::string& extra) { return split(gpt + extra); };
    BOOST_TEST(errors_of(with("--recompute-modules --bf16")).front() ==
               "--recompute-modules: expected at least one value, found the flag --bf16");
    BOOST_TEST(errors_of(with("--lr")).front() == "--lr: expected one value");
    BOOST_TEST(errors_of(with("--rampup-batch-size 32 32")).front() ==
               "--rampup-batch-size: expected 3 values");
    BOOST_TEST(errors_of(with("--rampup-batch-size=32")).front() ==
               "--rampup-batch-size=32: --rampup-batch-size takes exactly 3 values");
    BOOST_TEST(errors_of(with("--bf16=1")).front() ==
               "--bf16=1: --bf16 is a switch and takes no value (argparse's ignored explicit "
               "argument)");
    BOOST_TEST(errors_of(with("--train-iters 1__0")).front() ==
               "--train-iters '1__0': not an integer (argparse's invalid int value)");
    BOOST_TEST(errors_of(with("--lr fast")).front() ==
               "--lr 'fast': not a number (argparse's invalid float value)");
    BOOST_TEST(errors_of(with("--bf16 yes -- --fp16")).front() ==
               "values 'yes' '--' '--fp16': no flag takes them (argparse's unrecognized "
               "arguments)");
    // Values outside the choices are kept apart, the attribute at its default.
    const mg::ParseOutcome outcome =
        mg::parse_megatron_arguments(with("--distributed-backend nccl2"), newest());
    BOOST_TEST_REQUIRE(outcome.choice_errors.size() == 1U);
    BOOST_TEST(outcome.choice_errors.front().message ==
               "--distributed-backend 'nccl2': not one of its choices (nccl, gloo)");
    BOOST_TEST(outcome.parsed->value("--distributed-backend")->as_string() == "nccl");
}

BOOST_AUTO_TEST_CASE(unknown_flags_are_errors_with_a_suggestion_and_come_first) {
    // No abbreviations (allow_abbrev=False): --num-lay is unknown, not --num-layers.
    std::string e = flag_error(gpt + "--num-lay 2");
    BOOST_TEST(contains(e, "--num-lay is not a Megatron-LM flag (did you mean --num-layers?)"), e);
    // All unknown flags before anything else, each with its values, and before a refusal of the
    // mapping (multi-latent attention here).
    std::vector<std::string> list =
        split(gpt + "--multi-latent-attention --untie-embedding-and-output-weights --frobnicate 3");
    try {
        (void)analytic_options_from_megatron(list, {});
        BOOST_ERROR("accepted");
    } catch (const FlagError& error) {
        e = error.what();
    }
    BOOST_TEST(contains(e, "2 problems in the Megatron-LM arguments:"), e);
    BOOST_TEST(contains(e,
                        "--untie-embedding-and-output-weights is not a Megatron-LM flag (did "
                        "you mean --untie-embeddings-and-output-weights?)"),
               e);
    BOOST_TEST(contains(e, "--frobnicate is not a flag of any Megatron-LM release ppb knows"), e);
    BOOST_TEST(contains(e, "declare it: --megatron-flag frobnicate[:VALUES]"), e);
    BOOST_TEST(!contains(e, "multi-latent"), e);
    // A declared flag is read with its values and named in a warning.
    MegatronRunContext context;
    context.declared_flags = {"frobnicate:+", "--quietly:0"};
    list = split(gpt + "--frobnicate 1 2 --quietly --bf16");
    const MegatronAnalyticOptions r = analytic_options_from_megatron(list, context);
    BOOST_TEST(std::ranges::any_of(r.warnings, [](const std::string& w) {
        return contains(w, "--frobnicate is a Megatron-LM flag whose effect on memory");
    }));
    BOOST_TEST(std::ranges::any_of(r.warnings,
                                   [](const std::string& w) { return contains(w, "--quietly"); }));
    BOOST_CHECK_THROW((void)mg::declared_flag("bad name:2"), FlagError);
    BOOST_CHECK_THROW((void)mg::declared_flag("x:many"), FlagError);
    BOOST_TEST((mg::declared_flag("x:*").arity == mg::FlagArity::any));
    BOOST_TEST((mg::declared_flag("--x:3").arity == mg::FlagArity::exactly));
}

BOOST_AUTO_TEST_CASE(releases_are_named_as_users_write_them) {
    BOOST_TEST(mg::release_named("0.8").release == release("0.8"));
    BOOST_TEST(mg::release_named("0.8.0").release == release("0.8"));
    BOOST_TEST(mg::release_named("core_r0.8.0").release == release("0.8"));
    BOOST_TEST(mg::release_named("core_v0.8.0").release == release("0.8"));
    BOOST_TEST(mg::release_named("v0.12.3").release == release("0.12"));
    BOOST_TEST(mg::release_named("0.13.0rc2").release == release("0.13"));
    BOOST_TEST(mg::release_named("23.04").release == release("23.04"));
    BOOST_TEST(mg::release_named("v2.6").release == release("2.6"));
    BOOST_TEST(mg::release_named("main").release == newest());
    // Newer than the table: main's flags and defaults, said so.
    BOOST_TEST(mg::release_named("0.25").newer_than_known);
    BOOST_TEST(mg::release_named("core_r1.0.0").release == newest());
    for (const std::string bad : {"0.3", "banana", "23.08", "0.8.x", "0.8.0rc", ""}) {
        try {
            (void)mg::release_named(bad);
            BOOST_ERROR("accepted " << bad);
        } catch (const FlagError& e) {
            BOOST_TEST(contains(e.what(), "--megatron-version '" + bad + "'"), e.what());
        }
    }
}

BOOST_AUTO_TEST_CASE(the_release_is_recognised_from_flags_of_one_era) {
    const auto read = [](const std::string& args) {
        const auto list = split(args);
        return mg::read_megatron_arguments(list, std::nullopt);
    };
    // Flags removed after 23.06 (--data-impl, --DDP-impl, --no-query-key-layer-scaling).
    auto r = read(gpt_any_release + "--data-impl mmap");
    BOOST_TEST(r.parsed.release() == release("23.06"));
    BOOST_TEST_REQUIRE(r.notes.size() == 1U);
    BOOST_TEST(r.notes.front() ==
               "Megatron-LM releases 2.6 to 23.06 recognised from --data-impl (up to 23.06): the "
               "flags and defaults of 23.06 are taken (--megatron-version gives another)");
    r = read(gpt_any_release + "--DDP-impl local --transformer-impl local");
    BOOST_TEST(r.notes.front() ==
               "Megatron-LM releases 23.04 to 23.06 recognised from --transformer-impl (from "
               "23.04) and --DDP-impl (up to 23.06): the flags and defaults of 23.06 are taken "
               "(--megatron-version gives another)");
    // Core 0.4 to 0.7: --use-mcore-models with its own attribute, before --use-legacy-models.
    r = read(gpt + "--use-legacy-models");
    BOOST_TEST(r.parsed.release() == release("0.17"));
    BOOST_TEST(contains(r.notes.front(),
                        "releases 0.8 to 0.17 recognised from "
                        "--use-legacy-models (from 0.8) and --use-legacy-models "
                        "(up to 0.17)"),
               r.notes.front());
    // A choice that only later releases have.
    r = read(gpt + "--position-embedding-type yarn");
    BOOST_TEST(r.parsed.release() == newest());
    BOOST_TEST(r.accepting.front() == release("0.18"));
    // Flags of every release: main, without a note.
    r = read(gpt_any_release);
    BOOST_TEST(r.parsed.release() == newest());
    BOOST_TEST(r.notes.empty());
    BOOST_TEST(r.accepting.size() == mg::releases().size());
}

BOOST_AUTO_TEST_CASE(a_named_release_overrides_and_contradictions_name_both) {
    // --megatron-version decides, and says so.
    const auto list = split(gpt);
    const mg::MegatronArguments r = mg::read_megatron_arguments(list, "core_r0.5.0");
    BOOST_TEST(r.parsed.release() == release("0.5"));
    BOOST_TEST(r.notes.front() ==
               "the flags and defaults of Megatron-LM 0.5 (core_v0.5.0) "
               "(--megatron-version)");
    // A flag the named release does not have.
    std::string e = flag_error(gpt + "--use-legacy-models", "0.19");
    BOOST_TEST(e ==
               "--use-legacy-models is not a flag of Megatron-LM 0.19 (core_v0.19.0), the "
               "release --megatron-version 0.19 names: Megatron-LM has it in 0.8 to 0.17 (give "
               "the run's release, or leave --megatron-version out to have it recognised)");
    // Flags of releases that never met.
    e = flag_error(gpt + "--DDP-impl local --use-legacy-models");
    BOOST_TEST(e ==
               "--DDP-impl (Megatron-LM 2.6 to 23.06) and --use-legacy-models (Megatron-LM "
               "0.8 to 0.17) are not flags of one Megatron-LM release: the arguments mix "
               "releases");
}

// The options follow the release's defaults (megatron_release_defaults.hpp), values from
// Megatron-LM's code at each release.
BOOST_AUTO_TEST_CASE(the_options_follow_the_defaults_of_the_release) {
    const auto options = [](const std::string& args, std::optional<std::string> version = {}) {
        MegatronRunContext context;
        context.megatron_version = std::move(version);
        const auto list = split(args);
        return json::parse(analytic_options_from_megatron(list, context).options_json).as_object();
    };
    // GPT-2 345M as Megatron-LM 23.04's examples/pretrain_gpt.sh trains it (fp16, 4 x 1024
    // tokens): Megatron's own layers (transformer_impl local) and the legacy model without
    // --use-flash-attn, so the attention keeps its a*s^2 scores; the fused softmax kernel runs
    // (1024 keys, 4 x 16 heads), so query-key scaling's fp32 softmax stays inside it.
    const std::string gpt2 =
        "--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
        "--max-position-embeddings 1024 --micro-batch-size 4 --global-batch-size 8 --lr 0.00015 "
        "--fp16 --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt --split 949,50,1 ";
    json::object o = options(gpt2 + "--data-impl mmap");
    BOOST_TEST(!o.at("flash_attention").as_bool());
    BOOST_TEST(!o.contains("softmax_in_fp32"));
    BOOST_TEST(o.at("vocab_size").as_int64() == 50304);
    // The same run named as 0.5 (local default) and 0.6 (Transformer Engine by default).
    BOOST_TEST(!options(gpt2, "0.5").at("flash_attention").as_bool());
    BOOST_TEST(options(gpt2, "0.6").at("flash_attention").as_bool());
    // With 8192 tokens 23.04's legacy kernel (keys up to 4096) does not run: the torch softmax
    // keeps its fp32 output, query-key scaling being on by default before 0.4.
    o = options(
        "--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 8192 "
        "--micro-batch-size 1 --fp16 --vocab-file v.json",
        "23.04");
    BOOST_TEST(o.at("softmax_in_fp32").as_bool());
    // The NullTokenizer's end-of-document token: one more entry up to 0.17.
    const std::string null_tokenizer = gpt + "--tokenizer-type NullTokenizer --vocab-size 131072 ";
    BOOST_TEST(options(null_tokenizer, "0.17").at("vocab_size").as_int64() == 131200);
    BOOST_TEST(options(null_tokenizer, "0.18").at("vocab_size").as_int64() == 131072);
    // --no-pad-vocab-size (0.18 on) keeps the tokenizer's size.
    BOOST_TEST(options(gpt + "--vocab-size 1000 --no-pad-vocab-size").at("vocab_size").as_int64() ==
               1000);
    // The legacy model from 0.8 on only with --use-legacy-models: --use-flash-attn counts there.
    BOOST_TEST(options(gpt + "--transformer-impl local --use-flash-attn --use-legacy-models")
                   .at("flash_attention")
                   .as_bool());
    BOOST_TEST(!options(gpt + "--transformer-impl local --use-flash-attn", "0.16")
                    .at("flash_attention")
                    .as_bool());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace megatron_argparse_tests
