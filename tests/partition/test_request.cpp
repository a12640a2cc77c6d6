// A partition request (ppb/partition/request.hpp): what `ppb partition` and Python's
// ppb.partition share. Every field is checked, each error names its field in the host's words,
// and the chunks default as every host defaults them. A saved plan's simulation
// (simulate_saved_plan.hpp), what `ppb simulate` and ppb.simulate share, words its fields alike.
#include <ppb/partition/request.hpp>
#include <ppb/partition/simulate_saved_plan.hpp>
#include <ppb/schedule.hpp>

#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>

namespace request_tests {

using namespace ppb;
using namespace ppb::partition;

namespace {

PartitionRequest valid() {
    PartitionRequest r;
    r.stages = 4;
    r.memory_limit_mb = 60000.0;
    return r;
}

// The error `change` gives a valid request: its field and its message in both hosts' words.
struct Refusal {
    std::string field;
    std::string as_flags;
    std::string as_keywords;
};

Refusal refusal(const std::function<void(PartitionRequest&)>& change) {
    PartitionRequest r = valid();
    change(r);
    Refusal out;
    for (const bool flags : {true, false}) {
        try {
            (void)problem_of(r, flags ? FieldName(flag_name) : FieldName(keyword_name));
            BOOST_FAIL("expected a RequestError");
        } catch (const RequestError& e) {
            out.field = e.field();
            (flags ? out.as_flags : out.as_keywords) = e.what();
        }
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(partition_request)

BOOST_AUTO_TEST_CASE(fields_are_named_in_each_hosts_words) {
    BOOST_TEST(flag_name("memory_margin_mb") == "--memory-margin-mb");
    BOOST_TEST(keyword_name("memory_margin_mb") == "memory_margin_mb");

    const Refusal margin = refusal([](PartitionRequest& r) { r.memory_margin_mb = 60000.0; });
    BOOST_TEST(margin.field == "memory_margin_mb");
    BOOST_TEST(margin.as_flags ==
               "--memory-margin-mb: expected at least 0 and less than --memory-limit-mb");
    BOOST_TEST(margin.as_keywords ==
               "memory_margin_mb: expected at least 0 and less than memory_limit_mb");

    const Refusal limit = refusal([](PartitionRequest& r) { r.memory_limit_mb = -1.0; });
    BOOST_TEST(limit.field == "memory_limit_mb");
    BOOST_TEST(limit.as_flags == "--memory-limit-mb: expected a positive number of MB");

    const Refusal nan_limit =
        refusal([](PartitionRequest& r) { r.memory_limit_mb = std::nan(""); });
    BOOST_TEST(nan_limit.field == "memory_limit_mb");

    const Refusal stages = refusal([](PartitionRequest& r) { r.stages = 0; });
    BOOST_TEST(stages.field == "stages");
    BOOST_TEST(stages.as_keywords.starts_with("stages: 0 is out of range"));

    const Refusal sigma = refusal([](PartitionRequest& r) { r.memory_margin_sigma = -0.5; });
    BOOST_TEST(sigma.field == "memory_margin_sigma");

    const Refusal kinds = refusal([](PartitionRequest& r) { r.kinds = {"none", "half"}; });
    BOOST_TEST(kinds.field == "kinds");
    BOOST_TEST(kinds.as_flags ==
               "--kinds: unknown recompute kind 'half' (expected none, select, comm, both or "
               "full)");
    // A near miss is named, as every reader of kinds names it (ppb::unknown_kind).
    const Refusal near = refusal([](PartitionRequest& r) { r.kinds = {"selct"}; });
    BOOST_TEST(near.as_keywords ==
               "kinds: unknown recompute kind 'selct' (did you mean 'select'? expected none, "
               "select, comm, both or full)");

    const Refusal rule = refusal([](PartitionRequest& r) { r.recompute_rule = "some"; });
    BOOST_TEST(rule.field == "recompute_rule");
    BOOST_TEST(rule.as_keywords ==
               "recompute_rule: expected 'mindformers', 'any', 'megatron' or 'torchtitan', got "
               "'some'");

    const Refusal schedule = refusal([](PartitionRequest& r) { r.schedule = "gpipe"; });
    BOOST_TEST(schedule.field == "schedule");
    BOOST_TEST(
        schedule.as_flags.starts_with("--schedule: unknown schedule 'gpipe' (expected 1f1b"));

    const Refusal chunks = refusal([](PartitionRequest& r) {
        r.schedule = "interleaved";
        r.chunks = 0;
    });
    BOOST_TEST(chunks.field == "chunks");

    const Refusal objective = refusal([](PartitionRequest& r) { r.objective = "fastest"; });
    BOOST_TEST(objective.field == "objective");

    const Refusal comm = refusal([](PartitionRequest& r) { r.comm_time = {1.0, -2.0}; });
    BOOST_TEST(comm.field == "comm_time");
    BOOST_TEST(comm.as_flags.starts_with("--comm-time: -2 is not a time"));
    // Per boundary: a 4-stage 1F1B pipeline has 3 boundaries, not 2.
    const Refusal boundaries = refusal([](PartitionRequest& r) { r.comm_time = {1.0, 2.0}; });
    BOOST_TEST(boundaries.field == "comm_time");
    BOOST_TEST(boundaries.as_keywords.starts_with("comm_time: "));

    const Refusal share = refusal([](PartitionRequest& r) { r.weight_grad_share = 1.5; });
    BOOST_TEST(share.field == "weight_grad_share");
    BOOST_TEST(share.as_flags ==
               "--weight-grad-share: 1.5 is not a share: give a number from 0 to 1");
}

BOOST_AUTO_TEST_CASE(a_valid_request_is_the_problem_it_asks_for) {
    PartitionRequest r = valid();
    r.memory_margin_mb = 2000.0;
    r.kinds = {"none", "full"};
    r.recompute_rule = "megatron";
    r.schedule = "interleaved";
    r.chunks = 4;
    r.objective = "slots";
    r.comm_time = {0.5};
    r.weight_grad_share = 0.4;
    const Problem p = problem_of(r, flag_name);
    BOOST_TEST(p.num_stages == 4u);
    BOOST_TEST(p.memory_limit_mb == 60000.0);
    BOOST_TEST(p.memory_margin_mb == 2000.0);
    BOOST_TEST(p.kinds == (PPB_KIND_BIT(PPB_KIND_NONE) | PPB_KIND_BIT(PPB_KIND_FULL)));
    BOOST_TEST((p.rule == RecomputeRule::megatron));
    BOOST_TEST((p.schedule == Schedule::interleaved));
    BOOST_TEST(p.chunks == 4u);
    BOOST_TEST((p.objective == ChunkObjective::slots));
    BOOST_TEST(p.comm_time == std::vector<double>{0.5});
    BOOST_TEST(p.weight_grad_share == 0.4);
    // "auto" chooses the objective by simulation; the local search unless fast.
    r.objective = "auto";
    const PlanWithModelOptions auto_options =
        plan_options_of(r, problem_of(r, flag_name), flag_name);
    BOOST_TEST(auto_options.choose_objective);
    BOOST_TEST(auto_options.refine);
    r.fast = true;
    BOOST_TEST(!plan_options_of(r, problem_of(r, flag_name), flag_name).refine);
}

BOOST_AUTO_TEST_CASE(chunks_default_as_every_host_defaults_them) {
    // The schedules of one chunk, the V-shaped ones of two, the interleaved ones and the combined
    // 1F1B 2 by default (the combined 1F1B of one stage 1: Megatron-LM without a pipeline).
    const std::vector<std::pair<std::string, std::uint32_t>> expected = {
        {"1f1b", 1},         {"zb-h1", 1},       {"dualpipe-v", 2},
        {"zb-v", 2},         {"interleaved", 2}, {"interleaved-less-memory", 2},
        {"combined-1f1b", 2}};
    BOOST_TEST(expected.size() == schedule_names().size());
    for (const auto& [name, chunks] : expected) {
        PartitionRequest r = valid();
        r.schedule = name;
        BOOST_TEST(problem_of(r, keyword_name).chunks == chunks, name);
        const Schedule s = *schedule_from_name(name);
        BOOST_TEST(default_chunks(s) == chunks, name);
        BOOST_TEST(fixed_chunks(s).has_value() ==
                       (name.find("interleaved") == std::string::npos && name != "combined-1f1b"),
                   name);
    }
}

BOOST_AUTO_TEST_CASE(refine_is_for_schedules_with_chunks_and_not_with_fast) {
    PartitionRequest r = valid();
    r.refine = true;
    try {
        (void)plan_options_of(r, problem_of(r, keyword_name), keyword_name);
        BOOST_FAIL("refine on 1f1b");
    } catch (const RequestError& e) {
        BOOST_TEST(e.field() == "refine");
        BOOST_TEST(std::string(e.what()) ==
                   "refine: 1f1b plans are exact already; it is for the schedules with chunks");
    }
    r.schedule = "interleaved";
    r.fast = true;
    try {
        (void)plan_options_of(r, problem_of(r, flag_name), flag_name);
        BOOST_FAIL("refine with fast");
    } catch (const RequestError& e) {
        BOOST_TEST(std::string(e.what()) ==
                   "--refine and --fast: the local search is the default; --fast skips it");
    }
}

// Two stages of one chunk, forward 1 and backward 2 per micro-batch: 1F1B's iteration is
// (M + P - 1)(f + b), the first micro-batch's way down and back plus M - 1 more of each stage.
constexpr std::string_view two_stage_plan = R"({"format": "ppb.partition/1", "num_stages": 2,
    "micro_batches": 4, "schedule": "1f1b", "stages": [
    {"stage": 0, "forward_time": 1, "backward_time": 2},
    {"stage": 1, "forward_time": 1, "backward_time": 2}]})";

BOOST_AUTO_TEST_CASE(a_saved_plan_is_simulated_with_its_overrides_named_by_each_host) {
    const SavedPlanSimulation plain =
        simulate_saved_plan(two_stage_plan, "plan.json", {}, flag_name);
    BOOST_TEST(plain.simulation.makespan == (4 + 2 - 1) * 3.0);
    BOOST_TEST(plain.source == "plan.json");
    BOOST_TEST(!plain.simulation.with_memory);
    const boost::json::object doc = simulation_document(plain);
    BOOST_TEST(doc.at("format").as_string() == "ppb.simulation/1");
    BOOST_TEST(doc.at("plan").as_string() == "plan.json");
    BOOST_TEST(doc.at("operations").as_array().size() == 2u * 4u * 2u);

    // One micro-batch with a transfer: down and back, each way crossing the boundary once.
    SimulationRequest one;
    one.micro_batches = 1;
    one.comm_time = {0.5};
    const SavedPlanSimulation alone =
        simulate_saved_plan(two_stage_plan, "plan.json", one, keyword_name);
    BOOST_TEST(alone.simulation.makespan == 2 * 1.0 + 2 * 2.0 + 2 * 0.5);
    BOOST_TEST(alone.simulation.micro_batches == 1u);

    const auto refused = [](const SimulationRequest& request, const FieldName& name) {
        try {
            (void)simulate_saved_plan(two_stage_plan, "plan.json", request, name);
        } catch (const RequestError& e) {
            return e.field() + " | " + e.what();
        }
        return std::string("accepted");
    };
    SimulationRequest interleaved;
    interleaved.schedule = "interleaved";
    BOOST_TEST(refused(interleaved, flag_name) ==
               "schedule | --schedule: interleaved runs at least two chunks per stage, got 1");
    BOOST_TEST(refused(interleaved, keyword_name).starts_with("schedule | schedule: interleaved"));
    interleaved.micro_batches = 3;
    BOOST_TEST(
        refused(interleaved, flag_name).starts_with("schedule | --schedule, --micro-batches: "));
    SimulationRequest misspelt;
    misspelt.schedule = "interleave";
    BOOST_TEST(refused(misspelt, keyword_name) ==
               "schedule | schedule: unknown schedule 'interleave' (did you mean 'interleaved'? "
               "expected 1f1b, interleaved, interleaved-less-memory, dualpipe-v, zb-h1, zb-v or "
               "combined-1f1b)");
    SimulationRequest transfers;
    transfers.comm_time = {0.1, 0.2};
    BOOST_TEST(refused(transfers, flag_name).starts_with("comm_time | --comm-time: "));
    transfers.comm_time = {-1.0};
    BOOST_TEST(refused(transfers, keyword_name) ==
               "comm_time | comm_time: communication time 1 is -1: it must be a finite number, at "
               "least 0");
    SimulationRequest none;
    none.micro_batches = 0;
    BOOST_TEST(refused(none, keyword_name) ==
               "micro_batches | micro_batches: 0 is out of range (1 to 1000000 micro-batches)");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace request_tests
