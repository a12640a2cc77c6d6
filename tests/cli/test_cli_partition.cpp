// ppb partition end to end: the plan, its JSON, infeasibility (exit 4) and bad input (exit 2).
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_partition_tests {

namespace {

std::vector<std::string> partition_args(const std::string& limit,
                                        std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "partition", "--model-desc",    layers_file, "--dryrun",          sample_dryrun, "--stages",
        "8",         "--micro-batches", "32",        "--memory-limit-mb", limit};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// What MindFormers builds on each stage from the `mindformers` arrays of a ppb.partition/1
// document, applying its rule layer by layer: the first `recompute` layers of a stage fully
// recomputed; of the others, a layer below both the select and the comm count 'both', below one
// of them 'select' or 'comm', below neither 'none'. Per stage: none, select, comm, both, full.
std::vector<std::array<std::int64_t, 5>> built_by_mindformers(const json::object& doc) {
    const auto& mf = doc.at("mindformers").as_object();
    const auto at = [&](const char* key, std::size_t s) {
        return mf.at(key).at(0).at(s).to_number<std::int64_t>();
    };
    const std::int64_t stages = doc.at("num_stages").to_number<std::int64_t>();
    const std::int64_t base = doc.at("num_layers").to_number<std::int64_t>() / stages;
    std::vector<std::array<std::int64_t, 5>> built;
    for (std::size_t s = 0; s < static_cast<std::size_t>(stages); ++s) {
        std::array<std::int64_t, 5> kinds{};
        const std::int64_t layers = base + at("offset", s);
        for (std::int64_t j = 0; j < layers; ++j) {
            const bool select = j < at("select_recompute", s);
            const bool comm = j < at("select_comm_recompute", s);
            ++kinds[j < at("recompute", s) ? 4 : select && comm ? 3 : comm ? 2 : select ? 1 : 0];
        }
        built.push_back(kinds);
    }
    return built;
}

std::vector<std::array<std::int64_t, 5>> planned(const json::object& doc) {
    std::vector<std::array<std::int64_t, 5>> plan;
    for (const auto& st : doc.at("stages").as_array()) {
        std::array<std::int64_t, 5> kinds{};
        std::size_t k = 0;
        for (const char* kind : {"none", "select", "comm", "both", "full"})
            kinds[k++] = st.at("layers").at(kind).to_number<std::int64_t>();
        plan.push_back(kinds);
    }
    return plan;
}

std::string text(const std::vector<std::array<std::int64_t, 5>>& stages) {
    std::string out;
    for (const auto& k : stages)
        out += fmt::format("[{}]", fmt::join(k, ","));
    return out;
}

// A model whose 'select' is fast and heavy and 'comm' slow and light: within a tight limit the
// fastest mix of a stage holds both, which MindFormers cannot configure.
std::string select_comm_layers() {
    return write_file(R"({"constant_memory_mb": 1000, "layers_description": [
        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 10, "memory_parameter": 2000},
        {"name": "decoder", "type": "BODY", "nb_layer": 12, "time": 10,
         "backward_coef": 0, "select_rec_coef": 0.05, "select_comm_coef": 0.3,
         "both_comm_select_coef": 0.35, "recompute_coef": 1.0,
         "memory_parameter": 500, "memory_activation": 1000, "memory_select_rec": 600,
         "memory_select_comm": 300, "memory_both_comm_select": 250, "memory_recompute": 20},
        {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 10, "memory_parameter": 2000}
    ]})");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_partition)

// The arrays ppb prints rebuild its plan exactly when MindFormers applies them (the default
// rule), at limits from generous to tight and with every set of kinds that can mix.
BOOST_AUTO_TEST_CASE(printed_arrays_rebuild_the_plan) {
    std::size_t plans = 0;
    for (const std::string limit : {"58000", "40000", "32000", "27000"}) {
        for (const std::string kinds : {"", "none,select,comm", "select,comm,full"}) {
            std::vector<std::string> extra = {"--json"};
            if (!kinds.empty())
                extra.insert(extra.end(), {"--kinds", kinds});
            const auto r = ppb(partition_args(limit, extra));
            if (r.exit_code == 4)
                continue;  // this limit does not fit these kinds
            BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
            const auto doc = parse_json(r.out).as_object();
            BOOST_TEST(doc.at("recompute_rule").as_string() == "mindformers");
            BOOST_TEST(text(built_by_mindformers(doc)) == text(planned(doc)),
                       "limit " << limit << " kinds " << kinds);
            ++plans;
        }
    }
    BOOST_TEST(plans >= 8u);

    // A model where the free optimum mixes 'select' and 'comm' on a stage.
    const std::string layers = select_comm_layers();
    std::size_t mixed = 0;
    for (int limit = 4000; limit <= 12000; limit += 250) {
        auto args = [&](const std::string& rule, bool json) {
            std::vector<std::string> a = {"partition",
                                          "--model-desc",
                                          layers,
                                          "--model",
                                          "table",
                                          "--model-options",
                                          layers,
                                          "--stages",
                                          "2",
                                          "--micro-batches",
                                          "4",
                                          "--memory-limit-mb",
                                          std::to_string(limit),
                                          "--kinds",
                                          "select,comm",
                                          "--recompute-rule",
                                          rule};
            if (json)
                a.push_back("--json");
            return a;
        };
        const auto strict = ppb(args("mindformers", true));
        const auto free = ppb(args("any", true));
        BOOST_TEST_REQUIRE(strict.exit_code == free.exit_code, strict.err << free.err);
        if (strict.exit_code != 0)
            continue;
        const auto strict_doc = parse_json(strict.out).as_object();
        const auto free_doc = parse_json(free.out).as_object();
        BOOST_TEST(text(built_by_mindformers(strict_doc)) == text(planned(strict_doc)));
        BOOST_TEST(free_doc.at("recompute_rule").as_string() == "any");
        BOOST_TEST(free_doc.at("partitioner_objective").to_number<double>() <=
                   strict_doc.at("partitioner_objective").to_number<double>());
        bool free_mixes = false;
        for (const auto& k : planned(free_doc))
            free_mixes = free_mixes || (k[1] > 0 && k[2] > 0);
        if (free_mixes) {
            ++mixed;
            // No arrays could build it: none are printed, and the table says why, as the
            // document does.
            BOOST_TEST(free_doc.at("mindformers").is_null());
            const std::string why(free_doc.at("mindformers_why_not").as_string());
            BOOST_TEST(
                why.find("'select' and 'comm' layers, which MindFormers' recompute counts cannot "
                         "build") != std::string::npos,
                why);
            const auto table = ppb(args("any", false));
            BOOST_TEST(table.out.find("MindFormers / SAPP configuration:\n  none (" + why +
                                      ")\n") != std::string::npos,
                       table.out);
            BOOST_TEST(free_doc.at("partitioner_objective").to_number<double>() <
                       strict_doc.at("partitioner_objective").to_number<double>());
        } else {
            BOOST_TEST(text(built_by_mindformers(free_doc)) == text(planned(free_doc)));
        }
    }
    BOOST_TEST(mixed > 0u);
}

BOOST_AUTO_TEST_CASE(plan_respects_the_limit_and_is_consistent) {
    for (const std::string limit : {"58000", "36000", "26000"}) {
        const auto r = ppb(partition_args(limit, {"--json", "--memory-margin-mb", "500"}));
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
        BOOST_TEST(r.err.empty(), r.err);
        const auto doc = parse_json(r.out).as_object();
        BOOST_TEST(doc.at("format").as_string() == "ppb.partition/1");
        BOOST_TEST(doc.at("memory_limit_mb").to_number<double>() == std::stod(limit));
        BOOST_TEST(doc.at("memory_margin_mb").to_number<double>() == 500.0);
        const auto& stages = doc.at("stages").as_array();
        BOOST_TEST_REQUIRE(stages.size() == 8u);
        std::uint64_t total = 0;
        double max_time = 0.0;
        double sum_time = 0.0;
        const auto& mf = doc.at("mindformers").as_object();
        for (std::size_t s = 0; s < stages.size(); ++s) {
            const auto& st = stages[s].as_object();
            BOOST_TEST(st.at("stage").to_number<std::size_t>() == s);
            BOOST_TEST(st.at("memory_mb").to_number<double>() <= std::stod(limit) - 500.0 + 1e-6);
            BOOST_TEST(st.at("in_flight").to_number<std::uint32_t>() == 8 - s);
            const auto& layers = st.at("layers").as_object();
            std::int64_t n = 0;
            for (const char* kind : {"none", "select", "comm", "both", "full"}) {
                n += layers.at(kind).to_number<std::int64_t>();
            }
            total += static_cast<std::uint64_t>(n);
            BOOST_TEST(mf.at("offset").at(0).at(s).to_number<std::int64_t>() == n - 10);
            BOOST_TEST(mf.at("recompute").at(0).at(s).to_number<std::int64_t>() ==
                       layers.at("full").to_number<std::int64_t>());
            BOOST_TEST(mf.at("select_recompute").at(0).at(s).to_number<std::int64_t>() ==
                       layers.at("select").to_number<std::int64_t>() +
                           layers.at("both").to_number<std::int64_t>() +
                           layers.at("full").to_number<std::int64_t>());
            BOOST_TEST(mf.at("select_comm_recompute").at(0).at(s).to_number<std::int64_t>() ==
                       layers.at("comm").to_number<std::int64_t>() +
                           layers.at("both").to_number<std::int64_t>() +
                           layers.at("full").to_number<std::int64_t>());
            const double t = st.at("time").to_number<double>();
            sum_time += t;
            max_time = std::max(max_time, t);
        }
        BOOST_TEST(total == 80u);
        BOOST_TEST(doc.at("partitioner_objective").to_number<double>() == sum_time + 31 * max_time,
                   boost::test_tools::tolerance(1e-9));
    }
}

BOOST_AUTO_TEST_CASE(table_for_people) {
    const auto r = ppb(partition_args("58000"));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    for (const char* part :
         {"80 'decoder' layers over 8 stages, 32 micro-batches", "memory limit 58000.0 MB", "STAGE",
          "HEADROOM", " MB", "Partitioner objective:", "offset: [[", "select_recompute: [["}) {
        BOOST_TEST(r.out.find(part) != std::string::npos, "missing '" << part << "' in\n" << r.out);
    }
}

BOOST_AUTO_TEST_CASE(issue_example_with_sixteen_stages) {
    const auto r = ppb({"partition", "--model-desc", layers_file, "--model", "dryrun-lsq",
                        "--dryrun", sample_dryrun, "--stages", "16", "--micro-batches", "32",
                        "--memory-limit-mb", "58000", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(parse_json(r.out).at("stages").as_array().size() == 16u);
}

BOOST_AUTO_TEST_CASE(kinds_can_be_restricted) {
    const auto r = ppb(partition_args("30000", {"--json", "--kinds", "none,full"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out);
    for (const auto& st : doc.at("stages").as_array()) {
        BOOST_TEST(st.at("layers").at("select").to_number<int>() == 0);
        BOOST_TEST(st.at("layers").at("comm").to_number<int>() == 0);
    }
}

BOOST_AUTO_TEST_CASE(infeasible_limit_exits_4_with_the_smallest_feasible_limit) {
    for (const std::string limit : {"20000", "8000"}) {
        const auto r = ppb(partition_args(limit));
        expect_failure(
            r, 4,
            {"no placement fits", "MB", "the smallest memory limit that would be feasible is"});
        std::smatch m;
        BOOST_TEST_REQUIRE(std::regex_search(r.err, m, std::regex("feasible is ([0-9.]+) MB")),
                           r.err);
        // The limit it names does fit, and 1 MB less does not.
        const double smallest = std::stod(m[1]);
        BOOST_TEST(ppb(partition_args(m[1])).exit_code == 0);
        BOOST_TEST(ppb(partition_args(fmt::format("{:.1f}", smallest - 1.0))).exit_code == 4);
    }
    BOOST_TEST(ppb(partition_args("8000")).err.find("stage 7 needs at least") != std::string::npos);
    BOOST_TEST(ppb(partition_args("20000")).err.find("hold at most") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_input_exits_2) {
    expect_input_error(ppb({"partition", "--stages", "8", "--memory-limit-mb", "1000"}),
                       {"give --model-desc (a SAPP layer file), or a model shape as "
                        "--model-options",
                        "ppb partition --help"});
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--memory-limit-mb", "1000"}),
                       {"--stages is required"});
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--stages", "8"}),
                       {"--memory-limit-mb is required"});
    expect_input_error(ppb(partition_args("58000", {"--stages", "4"})),
                       {"--stages given twice (8 and 4): give it once"});
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--dryrun", sample_dryrun,
                            "--stages", "0", "--memory-limit-mb", "1000"}),
                       {"--stages: 0 is out of range (1 to 1024 stages)"});
    // The micro-batches: given, else the dry run's; without either, said which is missing.
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--model", "table",
                            "--stages", "8", "--memory-limit-mb", "60000"}),
                       {"--micro-batches: missing: give the micro-batches per iteration (a dry "
                        "run would give them)"});
    {
        std::ifstream in(sample_dryrun);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const std::string key = "\"micro_batches\": 32,";
        const auto at = text.find(key);
        BOOST_TEST_REQUIRE(at != std::string::npos);
        text.erase(at, key.size());
        const std::string without = write_file(text, "no-micro-batches.json");
        expect_input_error(ppb({"partition", "--model-desc", layers_file, "--dryrun", without,
                                "--stages", "8", "--memory-limit-mb", "60000"}),
                           {"--micro-batches: missing, and the dry-run file does not give "
                            "micro_batches"});
    }
    expect_input_error(ppb(partition_args("-5")), {"--memory-limit-mb"});
    expect_input_error(ppb(partition_args("1000", {"--memory-margin-mb", "1000"})),
                       {"--memory-margin-mb"});
    expect_input_error(ppb(partition_args("1000", {"--recompute-rule", "deepspeed"})),
                       {"--recompute-rule"});
    expect_input_error(ppb(partition_args("1000", {"--kinds", "none,most"})),
                       {"unknown recompute kind 'most'"});
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--stages", "8",
                            "--micro-batches", "4", "--memory-limit-mb", "58000"}),
                       {"give --dryrun FILE"});
    expect_input_error(ppb({"partition", "--model-desc", layers_file, "--dryrun", sample_dryrun,
                            "--stages", "90", "--memory-limit-mb", "58000"}),
                       {"90 stages need at least 88 body layers"});
    // 'both' never occurs in the dry runs, so the fitted model cannot predict it.
    expect_input_error(ppb(partition_args("58000", {"--kinds", "both"})),
                       {"no recompute kind can be used"});

    const std::string two_bodies = write_file(R"({"layers_description": [
        {"name": "a", "type": "BODY", "nb_layer": 4, "time": 1},
        {"name": "b", "type": "BODY", "nb_layer": 4, "time": 1}]})");
    auto r = ppb({"partition", "--model-desc", two_bodies, "--dryrun", sample_dryrun, "--stages",
                  "2", "--memory-limit-mb", "58000"});
    expect_input_error(r, {"the layer file's group of body layers 'a' is not a group of the memory "
                           "model 'dryrun-lsq'"});
}

// --memory-margin-sigma 2: every stage's memory + 2 standard errors fits the limit, and the margin
// reported per stage is 2 x the standard error 'ppb predict --json' gives for that placement.
BOOST_AUTO_TEST_CASE(sigma_margin_holds_at_two_standard_errors) {
    for (const std::string limit : {"34000", "30000"}) {
        const auto r = ppb(partition_args(limit, {"--json", "--memory-margin-sigma", "2"}));
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
        const auto doc = parse_json(r.out).as_object();
        BOOST_TEST(doc.at("memory_margin_sigma").to_number<double>() == 2.0);
        const auto plain = parse_json(ppb(partition_args(limit, {"--json"})).out).as_object();
        BOOST_TEST(plain.at("memory_margin_sigma").to_number<double>() == 0.0);
        // Planning against more memory is never faster.
        BOOST_TEST(doc.at("partitioner_objective").to_number<double>() >=
                   plain.at("partitioner_objective").to_number<double>());
        for (const auto& stage : doc.at("stages").as_array()) {
            const auto& st = stage.as_object();
            const double memory = st.at("memory_mb").to_number<double>();
            const double margin = st.at("uncertainty_margin_mb").to_number<double>();
            BOOST_TEST(margin > 0.0);
            BOOST_TEST(memory + margin <= std::stod(limit) + 1e-6);
            BOOST_TEST(
                st.at("headroom_mb").to_number<double>() == std::stod(limit) - memory - margin,
                boost::test_tools::tolerance(1e-9));
            std::string layers;
            for (const char* kind : {"none", "select", "comm", "both", "full"}) {
                const auto n = st.at("layers").at(kind).to_number<std::int64_t>();
                if (n != 0)
                    layers += fmt::format("{}{}={}", layers.empty() ? "" : ",", kind, n);
            }
            const auto stage_index = st.at("stage").to_number<std::uint32_t>();
            const auto p = ppb({"predict", sample_dryrun, "--stage", std::to_string(stage_index),
                                "--layers", layers, "--json"});
            BOOST_TEST_REQUIRE(p.exit_code == 0, p.err);
            const auto prediction = parse_json(p.out).as_object();
            const double se = prediction.at("std_error_mb").to_number<double>();
            BOOST_TEST(margin == 2.0 * se, boost::test_tools::tolerance(1e-9));
            BOOST_TEST(memory == prediction.at("peak_memory_mb").to_number<double>(),
                       boost::test_tools::tolerance(1e-9));
            BOOST_TEST(memory + 2.0 * se <= std::stod(limit) + 1e-6);
        }
    }
    // At 34000 MB the margin binds: the plan differs from the prediction-only one.
    const auto with =
        parse_json(ppb(partition_args("34000", {"--json", "--memory-margin-sigma", "2"})).out);
    const auto without = parse_json(ppb(partition_args("34000", {"--json"})).out);
    BOOST_TEST(with.at("partitioner_objective").to_number<double>() >
               without.at("partitioner_objective").to_number<double>());
}

BOOST_AUTO_TEST_CASE(sigma_margin_in_the_table_and_with_the_mb_margin) {
    const auto r =
        ppb(partition_args("34000", {"--memory-margin-sigma", "2", "--memory-margin-mb", "500"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.out.find("with a 500.0 MB margin and 2 standard errors of each stage's "
                          "prediction (MARGIN)") != std::string::npos,
               r.out);
    BOOST_TEST(r.out.find(" MARGIN ") != std::string::npos, r.out);
    // Both subtract: every stage's memory + margin fits 34000 - 500.
    const auto doc =
        parse_json(ppb(partition_args("34000", {"--memory-margin-sigma", "2", "--memory-margin-mb",
                                                "500", "--json"}))
                       .out);
    for (const auto& st : doc.at("stages").as_array()) {
        BOOST_TEST(st.at("memory_mb").to_number<double>() +
                       st.at("uncertainty_margin_mb").to_number<double>() <=
                   33500.0 + 1e-6);
    }
    // K = 0 (the default) is today's output: no MARGIN column.
    const auto plain = ppb(partition_args("34000", {"--memory-margin-sigma", "0"}));
    BOOST_TEST_REQUIRE(plain.exit_code == 0, plain.err);
    BOOST_TEST(plain.out == ppb(partition_args("34000")).out);
    BOOST_TEST(plain.out.find("MARGIN") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(sigma_margin_needs_an_uncertainty_estimate_and_a_valid_k) {
    for (const std::string k : {"-1", "101", "nan", "inf", "x"}) {
        expect_input_error(ppb(partition_args("34000", {"--memory-margin-sigma", k})),
                           {"--memory-margin-sigma"});
    }
    const std::vector<std::string> analytic = {
        "partition",
        "--model-desc",
        layers_file,
        "--stages",
        "8",
        "--micro-batches",
        "32",
        "--memory-limit-mb",
        "30000",
        "--model",
        "analytic",
        "--model-options",
        std::string(PPB_SAMPLES_DIR) + "/llama70b-shape.json"};
    auto with_k = analytic;
    with_k.insert(with_k.end(), {"--memory-margin-sigma", "2"});
    expect_input_error(ppb(with_k), {"memory model 'analytic'", "no uncertainty estimate"});
    // K = 0 asks for no estimate.
    with_k.back() = "0";
    BOOST_TEST(ppb(with_k).exit_code == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_partition_tests
