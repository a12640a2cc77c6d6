// ppb partition of a dense + MoE model (DeepSeek-V3's 3 dense and 58 MoE layers, the analytic
// model) with two chunks per stage, end to end, checked independently of the planner:
//   - the chunks' ranges, read in the schedule's position order (dualpipe-v: chunk 0 of stages
//     0 .. P-1, then chunk 1 of stages P-1 .. 0; interleaved: chunk 0 of 0 .. P-1, then chunk 1
//     of 0 .. P-1), follow one another and cover layers 0 .. 60 exactly;
//   - each chunk's layers per group are those of its range in the layer file (dense 0-2, moe
//     3-60) and add up to its layers per kind;
//   - each stage's memory is what `ppb predict` gives for the same two chunks, and within the
//     limit;
// then the same with three chunks per stage (planned through one group that bounds the groups, with
// its proven bound), what reads such a plan back (ppb compare --partition, ppb simulate, the
// report), the zero-bubble schedules (planned the same way), and the refusals: an uncertainty
// margin, the Megatron rule.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace grouped_chunks_tests {

namespace {

const std::string moe_dir = std::string(PPB_SAMPLES_DIR) + "/moe";
const std::string layers_file = moe_dir + "/deepseek-v3-layers.json";
const std::string shape_file = moe_dir + "/deepseek-v3-shape.json";
constexpr std::int64_t stages = 16;
constexpr std::int64_t body_layers = 61;
constexpr std::int64_t dense_layers = 3;  // layers 0-2; 3-60 are 'moe'
constexpr double limit_mb = 76000.0;

std::vector<std::string> deepseek_args(const std::string& schedule,
                                       std::vector<std::string> extra = {},
                                       const std::string& limit = "76000") {
    std::vector<std::string> args = {"partition",
                                     "--model-desc",
                                     layers_file,
                                     "--model",
                                     "analytic",
                                     "--model-options",
                                     shape_file,
                                     "--stages",
                                     std::to_string(stages),
                                     "--micro-batches",
                                     "64",
                                     "--memory-limit-mb",
                                     limit,
                                     "--schedule",
                                     schedule};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

std::int64_t sum_of(const json::object& kinds) {
    std::int64_t n = 0;
    for (const auto& kind : kinds)
        n += kind.value().as_int64();
    return n;
}

// `ppb predict --chunk` items of one chunk: GROUP.KIND=N for every count (zeros included, so that
// an empty chunk still names its groups).
std::string chunk_items(const json::object& chunk) {
    std::string items;
    for (const auto& [group, kinds] : chunk.at("groups").as_object()) {
        for (const auto& kind : kinds.as_object()) {
            items += (items.empty() ? "" : ",") + std::string(group) + "." +
                     std::string(kind.key()) + "=" + std::to_string(kind.value().as_int64());
        }
    }
    return items;
}

// The (stage, chunk) at position q of the schedule's order.
std::pair<std::int64_t, std::int64_t> at_position(const std::string& schedule, std::int64_t q) {
    if ((schedule == "dualpipe-v" || schedule == "zb-v") && q >= stages)
        return {2 * stages - 1 - q, 1};
    return {q % stages, q / stages};
}

// Runs the plan and checks it as the header says; returns the plan document.
json::object check_plan(const std::string& schedule, std::int64_t chunks = 2) {
    const auto r = ppb(deepseek_args(schedule, {"--json", "--chunks", std::to_string(chunks)}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    json::object doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("schedule").as_string() == schedule);
    BOOST_TEST(doc.at("num_chunks").as_int64() == chunks);
    BOOST_TEST(doc.at("num_layers").as_int64() == body_layers);
    const json::array& planned = doc.at("stages").as_array();
    BOOST_TEST_REQUIRE(planned.size() == static_cast<std::size_t>(stages));

    // Position order: each range starts where the last ended; together they hold 0 .. 60.
    std::int64_t next = 0;
    for (std::int64_t q = 0; q < chunks * stages; ++q) {
        const auto [s, c] = at_position(schedule, q);
        const json::object& chunk =
            planned[static_cast<std::size_t>(s)].at("chunks").as_array()[c].as_object();
        BOOST_TEST(chunk.at("chunk").as_int64() == c);
        const std::int64_t n = sum_of(chunk.at("layers").as_object());
        BOOST_TEST(chunk.at("first_layer").as_int64() == next, "stage " << s << " chunk " << c);
        BOOST_TEST(chunk.at("last_layer").as_int64() == next + n - 1,
                   "stage " << s << " chunk " << c);
        // Its groups are those of its range: dense layers are 0 .. 2.
        const std::int64_t dense = std::max<std::int64_t>(
            0, std::min(dense_layers, next + n) - std::min(dense_layers, next));
        const json::object& groups = chunk.at("groups").as_object();
        BOOST_TEST(sum_of(groups.at("dense").as_object()) == dense,
                   "stage " << s << " chunk " << c);
        BOOST_TEST(sum_of(groups.at("moe").as_object()) == n - dense,
                   "stage " << s << " chunk " << c);
        for (const auto& kind : chunk.at("layers").as_object()) {
            BOOST_TEST(groups.at("dense").at(kind.key()).as_int64() +
                           groups.at("moe").at(kind.key()).as_int64() ==
                       kind.value().as_int64());
        }
        next += n;
    }
    BOOST_TEST(next == body_layers);

    // Every stage's memory is the model's own prediction of its chunks, within the limit.
    for (const auto& value : planned) {
        const json::object& stage = value.as_object();
        std::vector<std::string> args = {"predict",
                                         "--model",
                                         "analytic",
                                         "--model-options",
                                         shape_file,
                                         "--stages",
                                         std::to_string(stages),
                                         "--stage",
                                         std::to_string(stage.at("stage").as_int64()),
                                         "--micro-batches",
                                         "64",
                                         "--schedule",
                                         schedule,
                                         "--json"};
        for (const auto& chunk : stage.at("chunks").as_array()) {
            args.push_back("--chunk");
            args.push_back(chunk_items(chunk.as_object()));
        }
        const auto predicted = ppb(args);
        BOOST_TEST_REQUIRE(predicted.exit_code == 0, predicted.err);
        BOOST_TEST(parse_json(predicted.out).at("peak_memory_mb").as_double() ==
                       stage.at("memory_mb").as_double(),
                   "stage " << stage.at("stage").as_int64());
        BOOST_TEST(stage.at("memory_mb").as_double() <= limit_mb);
    }
    // The iteration breakdown's recomputation is the mean stage's, from each chunk's own groups:
    // a fully recomputed layer repeats its forward (dense 10, moe 16 in the layer file).
    double recompute = 0.0;
    for (const auto& value : planned) {
        for (const auto& chunk : value.at("chunks").as_array()) {
            const json::object& groups = chunk.at("groups").as_object();
            recompute += static_cast<double>(groups.at("dense").at("full").as_int64()) * 10.0 +
                         static_cast<double>(groups.at("moe").at("full").as_int64()) * 16.0;
        }
    }
    BOOST_TEST(doc.at("iteration_breakdown").at("recompute").as_double() ==
               recompute * 64.0 / static_cast<double>(stages));
    return doc;
}

// Megatron-LM's --pipeline-model-parallel-layout with its repeats written out: "X*n" repeats the
// symbol X, "(...)*n" the group (megatron/core/transformer/pipeline_parallel_layer_layout.py's
// grammar), written here independently of ppb's writer.
std::string expand_layout(const std::string& text) {
    std::string out;
    std::size_t i = 0;
    const auto count_at = [&](std::size_t& at) {
        std::size_t n = 0;
        while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0)
            n = 10 * n + static_cast<std::size_t>(text[at++] - '0');
        return n;
    };
    while (i < text.size()) {
        std::string unit;
        if (text[i] == '(') {
            int depth = 0;
            std::size_t j = i;
            for (; j < text.size(); ++j) {
                depth += text[j] == '(' ? 1 : text[j] == ')' ? -1 : 0;
                if (depth == 0)
                    break;
            }
            unit = expand_layout(text.substr(i + 1, j - i - 1));
            i = j + 1;
        } else {
            unit = std::string(1, text[i++]);
        }
        std::size_t times = 1;
        if (i < text.size() && text[i] == '*') {
            ++i;
            times = count_at(i);
        }
        for (std::size_t k = 0; k < times; ++k)
            out += unit;
    }
    return out;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_grouped_chunks)

BOOST_AUTO_TEST_CASE(deepseek_v3_with_dualpipe_v) {
    const json::object doc = check_plan("dualpipe-v");
    // The V: stage 0 holds the last layers (its chunk 1 is the last position) and no first ones.
    const json::array& planned = doc.at("stages").as_array();
    BOOST_TEST(planned[0].at("chunks").as_array()[1].at("last_layer").as_int64() == 60);
}

BOOST_AUTO_TEST_CASE(deepseek_v3_interleaved) {
    const json::object doc = check_plan("interleaved");
    const json::array& planned = doc.at("stages").as_array();
    BOOST_TEST(planned[15].at("chunks").as_array()[1].at("last_layer").as_int64() == 60);
}

// More than two chunks: not planned exactly (the state of the exact planner is a cut point per
// chunk), but a plan that fits, checked as above, with its proven bound and gap.
BOOST_AUTO_TEST_CASE(deepseek_v3_with_three_chunks_is_planned_and_bounded) {
    const json::object doc = check_plan("interleaved", 3);
    BOOST_TEST(!doc.at("exact").as_bool());
    BOOST_TEST(std::string(doc.at("not_exact_because").as_string())
                   .find("2 groups of body layers with 3 chunks per stage under interleaved are "
                         "planned through one group that bounds them") == 0);
    const json::object& simulated = doc.at("simulated").as_object();
    const double makespan = simulated.at("makespan").as_double();
    const double bound = simulated.at("lower_bound").as_double();
    BOOST_TEST(bound > 0.0);
    BOOST_TEST(bound <= makespan);
    BOOST_TEST(simulated.at("gap").as_double() == (makespan - bound) / makespan,
               boost::test_tools::tolerance(1e-12));
    const json::array& planned = doc.at("stages").as_array();
    BOOST_TEST(planned[15].at("chunks").as_array()[2].at("last_layer").as_int64() == 60);
}

BOOST_AUTO_TEST_CASE(a_saved_plan_is_read_back_by_compare_simulate_and_the_report) {
    const auto r = ppb(deepseek_args("dualpipe-v", {"--json"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = parse_json(r.out).as_object();
    const json::array& planned = doc.at("stages").as_array();
    const std::string plan = write_file(r.out, "deepseek-v3-dualpipe-v-plan.json");

    // compare reads each chunk's groups and predicts the stage over its profile: the plan's memory.
    const auto compared =
        ppb({"compare", "--model", "analytic=" + shape_file, "--partition", plan, "--json"});
    BOOST_TEST_REQUIRE(compared.exit_code == 0, compared.err);
    std::size_t rows = 0;
    const json::value compared_doc = parse_json(compared.out);
    for (const auto& value : compared_doc.at("placements").as_array()) {
        const auto stage = static_cast<std::size_t>(value.at("stage").as_int64());
        BOOST_TEST(value.at("predictions").as_array()[0].at("memory_mb").as_double() ==
                   planned[stage].at("memory_mb").as_double());
        ++rows;
    }
    BOOST_TEST(rows == static_cast<std::size_t>(stages));

    // The reader checks each chunk's groups against its layers.
    const auto compare_edited = [&](const std::function<void(json::array&)>& edit) {
        json::object edited = doc;
        edit(edited.at("stages").as_array());
        return ppb({"compare", "--model", "analytic=" + shape_file, "--partition",
                    write_file(json::serialize(edited), "edited-grouped-chunks.json")});
    };
    const auto chunk_of = [](json::array& st, std::size_t s, std::size_t c) -> json::object& {
        return st.at(s).at("chunks").as_array().at(c).as_object();
    };
    expect_input_error(compare_edited([&](json::array& st) {
                           auto& moe = chunk_of(st, 1, 0)["groups"].as_object()["moe"].as_object();
                           moe["none"] = moe["none"].as_int64() + 1;
                       }),
                       {"edited-grouped-chunks.json: stages[1].chunks[0].groups: the groups' "
                        "layers do not add up to the chunk's layers"});
    expect_input_error(compare_edited([&](json::array& st) { chunk_of(st, 2, 1).erase("groups"); }),
                       {"stages[2].chunks[1]: missing required field 'groups'"});

    // simulate times the plan as partition did, and draws it.
    const std::string svg = (std::filesystem::temp_directory_path() / "ppb-grouped-v.svg").string();
    const auto simulated = ppb({"simulate", plan, "--json", "--timeline", svg});
    BOOST_TEST_REQUIRE(simulated.exit_code == 0, simulated.err);
    const json::object sim = parse_json(simulated.out).as_object();
    BOOST_TEST(sim.at("makespan").as_double() == doc.at("simulated").at("makespan").as_double());
    // Under dualpipe-v the simulated peak of every stage is the planned one (its profile has no
    // count of 0 that a model without coefficients is asked about as 1).
    for (const auto& value : sim.at("stages").as_array()) {
        BOOST_TEST(value.at("peak_memory_mb").as_double() ==
                   value.at("planned_memory_mb").as_double());
    }
    BOOST_TEST(read_file(svg).find("<svg") != std::string::npos);
    std::filesystem::remove(svg);

    // The report of the plan: one page, each stage's memory against the limit.
    const std::string html =
        (std::filesystem::temp_directory_path() / "ppb-grouped-v.html").string();
    const auto reported = ppb(deepseek_args("dualpipe-v", {"--report", html}));
    BOOST_TEST_REQUIRE(reported.exit_code == 0, reported.err);
    const std::string page = read_file(html);
    BOOST_TEST(page.find("dualpipe-v, 2 chunks per stage") != std::string::npos);
    std::filesystem::remove(html);
}

// The memory breakdown of a model with coefficients per group (the two-groups fixture, its
// coefficients in tests/plugins/fixtures/two_groups.cpp): each chunk's layers of each group with
// that chunk's in-flight count at the peak, adding up to the stage's memory.
BOOST_AUTO_TEST_CASE(memory_breakdown_counts_each_chunks_groups_at_its_in_flight_count) {
    const std::string file = write_file(R"({"layers_description": [
        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 3},
        {"name": "dense", "type": "BODY", "nb_layer": 2, "time": 4},
        {"name": "moe", "type": "BODY", "nb_layer": 6, "time": 10},
        {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "time": 3}]})",
                                        "dense-moe-chunks.json");
    const auto r = ppb({"partition", "--model-desc", file, "--model", "two-groups", "--plugin-path",
                        fixture_dir, "--stages", "2", "--micro-batches", "4", "--memory-limit-mb",
                        "400", "--schedule", "interleaved", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::value doc = parse_json(r.out);
    for (const auto& value : doc.at("stages").as_array()) {
        const json::object& stage = value.as_object();
        const std::int64_t s = stage.at("stage").as_int64();
        double parameters = 0.0;
        double none = 0.0;
        double full = 0.0;
        for (const auto& chunk : stage.at("chunks").as_array()) {
            const double f = static_cast<double>(chunk.at("in_flight").as_int64());
            const auto n = [&](const char* group, const char* kind) {
                return static_cast<double>(chunk.at("groups").at(group).at(kind).as_int64());
            };
            parameters += (n("dense", "none") + n("dense", "full")) * 10.0 +
                          (n("moe", "none") + n("moe", "full")) * 50.0;
            none += (n("dense", "none") * 5.0 + n("moe", "none") * 20.0) * f;
            full += (n("dense", "full") * 1.0 + n("moe", "full") * 2.0) * f;
        }
        const json::object& b = stage.at("memory_breakdown_mb").as_object();
        BOOST_TEST(b.at("constant").as_double() == 100.0);
        BOOST_TEST(b.at("head").as_double() == (s == 0 ? 40.0 : 0.0));
        BOOST_TEST(b.at("tail").as_double() == (s == 1 ? 30.0 : 0.0));
        BOOST_TEST(b.at("parameters").as_double() == parameters, "stage " << s);
        BOOST_TEST(b.at("activations").at("none").as_double() == none, "stage " << s);
        BOOST_TEST(b.at("activations").at("full").as_double() == full, "stage " << s);
        BOOST_TEST(b.at("activations_total").as_double() == none + full, "stage " << s);
        BOOST_TEST(100.0 + (s == 0 ? 40.0 : 0.0) + (s == 1 ? 30.0 : 0.0) + parameters + none +
                       full ==
                   stage.at("memory_mb").as_double());
    }
    // The plan as it stands (interleaved, chunk 0 of stage 0 holds layer 0 with 3 in flight,
    // chunk 1 layers 5-7 with 2): 'none' activations 1 x 5 x 3 + 2 x 20 x 2 = 95 MB; the stage's
    // 1F1B count (2) for every layer would say 90.
    const json::object& first = doc.at("stages").as_array()[0].as_object();
    BOOST_TEST(first.at("memory_breakdown_mb").at("activations").at("none").as_double() == 95.0);
    BOOST_TEST(first.at("memory_mb").as_double() == 399.0);
}

// Too little memory: the smallest limit that fits is searched for, and it is the smallest: the plan
// fits it and fails 0.1 MB below.
BOOST_AUTO_TEST_CASE(when_nothing_fits_the_smallest_feasible_limit_is_said) {
    const struct {
        std::string schedule;
        std::string smallest;
        std::string below;
        std::string fullest;
    } cases[] = {{"dualpipe-v", "21670.2", "21670.1", "15"},
                 {"interleaved", "22006.2", "22006.1", "4"}};
    for (const auto& c : cases) {
        expect_failure(
            ppb(deepseek_args(c.schedule, {}, "21000")), 4,
            {"no placement fits: within 21000.0 MB no cut of the 61 body layers (2 groups) into 16 "
             "stages of 2 chunks under " +
             c.schedule +
             " fits every stage's memory over its in-flight profile, even with every layer at "
             "its group's least-memory recompute kind; the smallest memory limit that would be "
             "feasible is " +
             c.smallest + " MB, where stage " + c.fullest + " is the fullest"});
        const auto fits = ppb(deepseek_args(c.schedule, {"--json"}, c.smallest));
        BOOST_TEST(fits.exit_code == 0, c.schedule << ": " << fits.err);
        const auto below = ppb(deepseek_args(c.schedule, {}, c.below));
        BOOST_TEST(below.exit_code == 4, c.schedule << ": " << below.err);
        BOOST_TEST(below.err.find("the smallest memory limit that would be feasible is " +
                                  c.smallest + " MB") != std::string::npos,
                   below.err);
    }
    // Stage 0 of dualpipe-v holds the embedding and the LM head: alone over a small limit.
    expect_failure(ppb(deepseek_args("dualpipe-v", {}, "10000")), 4,
                   {"no placement fits: stage 0 needs 13068.4 MB with no body layer, more than "
                    "the 10000.0 MB available; the smallest memory limit that would be feasible "
                    "is 21670.2 MB"});
}

// The zero-bubble schedules, whose weight-gradient passes the exact planner's estimate leaves out,
// are planned through one group too: their plans are checked as above, with their bounds.
BOOST_AUTO_TEST_CASE(deepseek_v3_under_the_zero_bubble_schedules_is_planned_and_bounded) {
    for (const auto& [schedule, chunks] :
         std::vector<std::pair<std::string, std::int64_t>>{{"zb-v", 2}, {"zb-h1", 1}}) {
        const json::object doc = check_plan(schedule, chunks);
        BOOST_TEST(!doc.at("exact").as_bool());
        BOOST_TEST(std::string(doc.at("not_exact_because").as_string())
                       .find("leaves out the weight-gradient passes of the zero-bubble "
                             "schedules") != std::string::npos);
        const json::object& simulated = doc.at("simulated").as_object();
        BOOST_TEST(simulated.at("lower_bound").as_double() <= simulated.at("makespan").as_double());
    }
}

// One recompute setting per run (Megatron-LM's rule): under 1F1B the exact optimum (every
// setting's best cut, design.md section 6.9), with chunks planned through one group that bounds
// the groups; every chunk holds the setting's mix, and the plan is given as Megatron-LM's flags,
// the layout with the chunks' ranges and the setting.
namespace {
void check_megatron_plan(const std::string& schedule) {
    const std::int64_t chunks = schedule == "1f1b" ? 1 : 2;
    const auto r = ppb(deepseek_args(schedule, {"--json", "--recompute-rule", "megatron"}));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object doc = parse_json(r.out).as_object();
    BOOST_TEST(doc.at("exact").as_bool() == (chunks == 1));
    const json::array& args = doc.at("megatron").at("args").as_array();
    std::vector<std::string> flags;
    for (const auto& a : args)
        flags.emplace_back(a.as_string());
    const auto value_of = [&](const std::string& flag) {
        const auto it = std::find(flags.begin(), flags.end(), flag);
        BOOST_TEST_REQUIRE((it != flags.end() && it + 1 != flags.end()), flag);
        return *(it + 1);
    };
    BOOST_TEST(value_of("--pipeline-model-parallel-size") == "16");
    BOOST_TEST(value_of("--num-layers") == "61");
    // The layout: each chunk's layers in position order ("E" the embedding, "L" the loss).
    std::string layout;
    std::int64_t full_first = -1;
    for (std::int64_t q = 0; q < chunks * stages; ++q) {
        const auto [s, c] = at_position(schedule, q);
        const json::object& chunk = doc.at("stages")
                                        .as_array()[static_cast<std::size_t>(s)]
                                        .at("chunks")
                                        .as_array()[c]
                                        .as_object();
        const std::int64_t n = sum_of(chunk.at("layers").as_object());
        std::string part = q == 0 ? "E" : "";
        for (std::int64_t i = 0; i < n; ++i)
            part += "t";
        if (q + 1 == chunks * stages)
            part += "L";
        layout += (q == 0 ? "" : "|") + part;
        // One setting: the first N layers of every chunk 'full', the others 'none'.
        const std::int64_t full = chunk.at("layers").at("full").as_int64();
        BOOST_TEST(full + chunk.at("layers").at("none").as_int64() == n);
        if (full < n)
            full_first = full_first < 0 ? full : full_first;
    }
    const std::string method = value_of("--recompute-method");
    BOOST_TEST((method == "block" || method == "uniform"), method);
    if (method == "block")
        BOOST_TEST(std::to_string(full_first) == value_of("--recompute-num-layers"));
    // Megatron's layout grammar compresses repeats ("t*3", "(t|)*4"): expanded, it is ours.
    BOOST_TEST(expand_layout(value_of("--pipeline-model-parallel-layout")) == layout);
    BOOST_TEST(doc.at("megatron").at("recompute").as_string().size() > 0u);
}
}  // namespace

BOOST_AUTO_TEST_CASE(deepseek_v3_under_megatron_s_rule_gives_megatron_s_flags) {
    for (const std::string schedule : {"1f1b", "interleaved"}) {
        BOOST_TEST_CONTEXT(schedule) {
            check_megatron_plan(schedule);
        }
    }
}

BOOST_AUTO_TEST_CASE(what_groups_with_chunks_do_not_plan_exit_2) {
    expect_input_error(ppb(deepseek_args("dualpipe-v", {"--memory-margin-sigma", "2"})),
                       {"a margin of standard errors is not supported yet with several groups "
                        "of body layers; give the margin in MB instead"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace grouped_chunks_tests
