// ppb::partition search: the configurations a search space holds (with the micro-batch count a
// global batch gives each pipeline degree, and what is left out and why), the bad input it
// refuses, and the thread pool: outcomes identical to planning each configuration alone, in the
// same order for any number of threads, stopped cleanly, failures passed on.
#include <ppb/errors.hpp>
#include <ppb/partition/configuration_flags.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/search.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace search_tests {

namespace {

using namespace ppb::partition;
using ppb::Schedule;

TimeModel uniform_time(std::uint32_t layers) {
    TimeModel t;
    t.body_name = "layer";
    t.body_layers = layers;
    // forward 1, backward 2; recompute lengthens the backward (SAPP's default coefficients).
    t.body_time = {3.0, 3.08, 3.25, 3.33, 4.0};
    t.body_forward = 1.0;
    t.head_time = 1.5;
    t.head_forward = 0.5;
    t.tail_time = 3.0;
    t.tail_forward = 1.0;
    return t;
}

// Memory: 2000 MB constant, 500 MB per layer's parameters, activations per in-flight
// micro-batch of 100 MB (none) down to 10 MB (full); 300 MB of embedding, 600 MB of LM head.
MemorySource linear_memory() {
    ppb_linear_parameters c{};
    c.struct_size = sizeof c;
    c.identified = 0xFFu | 0x1F0u;
    c.const_mb = 2000.0;
    c.per_layer_mb = 500.0;
    c.head_mb = 300.0;
    c.tail_mb = 600.0;
    const double activation[PPB_KIND_COUNT] = {100.0, 70.0, 80.0, 50.0, 10.0};
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        c.activation_mb[k] = activation[k];
    MemorySource m;
    m.linear = c;
    return m;
}

Problem base_problem(std::uint32_t layers, double limit) {
    Problem p;
    p.time = uniform_time(layers);
    p.memory_limit_mb = limit;
    p.rule = RecomputeRule::mindformers;
    return p;
}

template <typename F>
void expect_input_error(F&& f, const std::string& part) {
    try {
        f();
        BOOST_ERROR("no error; expected one naming: " << part);
    } catch (const ppb::InputError& e) {
        BOOST_TEST(std::string(e.what()).find(part) != std::string::npos,
                   "'" << e.what() << "' does not name '" << part << "'");
    }
}

SearchSpace devices_space() {
    SearchSpace s;
    s.devices = 64;
    s.tensor_parallel = 4;
    s.global_batch = 256;
    s.micro_batch_size = 2;
    s.schedules = {
        {Schedule::one_f_one_b, 1}, {Schedule::interleaved, 2}, {Schedule::dualpipe_v, 2}};
    s.recompute = {recompute_policy("any"), recompute_policy("full")};
    return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(search_space)

BOOST_AUTO_TEST_CASE(policies_name_their_kinds) {
    BOOST_TEST(recompute_policy("any").kinds == PPB_ALL_KINDS);
    BOOST_TEST(recompute_policy("full").kinds == (1u << PPB_KIND_FULL));
    BOOST_TEST(recompute_policy("none+full").kinds ==
               ((1u << PPB_KIND_NONE) | (1u << PPB_KIND_FULL)));
    BOOST_TEST(recompute_policy("none+full").name == "none+full");
    expect_input_error([] { (void)recompute_policy("none+fast"); },
                       "recompute policy 'none+fast': unknown recompute kind 'fast'");
    expect_input_error([] { (void)recompute_policy(""); }, "unknown recompute kind ''");
}

BOOST_AUTO_TEST_CASE(every_degree_dividing_the_devices_with_its_micro_batches) {
    // 64 devices / t = 4: P in 1, 2, 4, 8, 16 (32 and 64 would leave stages without a layer
    // of the 20); d = 16 / P; M = 256 / (2 d).
    const SearchPlan plan = search_configurations(devices_space(), uniform_time(20));
    std::vector<std::uint32_t> degrees;
    for (const Configuration& c : plan.configurations) {
        BOOST_TEST(c.data_parallel * c.pipeline * 4u == 64u);
        BOOST_TEST(c.micro_batches * 2u * c.data_parallel == 256u);
        if (degrees.empty() || degrees.back() != c.pipeline)
            degrees.push_back(c.pipeline);
    }
    BOOST_TEST(degrees == (std::vector<std::uint32_t>{1, 2, 4, 8, 16}),
               boost::test_tools::per_element());
    // P = 16: M = 128, interleaved needs a multiple of 16 (it is) and P v - 2 = 30 > 20 layers.
    bool left_out_for_layers = false;
    for (const SkippedConfiguration& s : plan.skipped) {
        if (s.configuration == "P=16 d=1 M=128 interleaved v=2")
            left_out_for_layers =
                s.reason == "16 stages of 2 chunks need at least 30 body layers, the model has 20";
    }
    BOOST_TEST(left_out_for_layers);
    // Each runnable (P, schedule) appears once per policy, in the given order.
    BOOST_TEST(plan.configurations.front().recompute.name == "any");
    BOOST_TEST(plan.configurations[1].recompute.name == "full");
    BOOST_TEST(plan.configurations.size() + plan.skipped.size() * 2 == 5u * 3u * 2u);
}

BOOST_AUTO_TEST_CASE(context_parallel_degrees_split_each_replica_further) {
    // 64 devices, t = 4, cp 1, 2 and 3: a replica spans t x cp devices, d = 64 / (P t cp);
    // 3 does not divide 64 and is left out with the reason; the micro-batches follow d.
    SearchSpace space = devices_space();
    space.context_parallel_degrees = {1, 2, 3};
    space.schedules = {{Schedule::one_f_one_b, 1}};
    space.recompute = {recompute_policy("any")};
    const SearchPlan plan = search_configurations(space, uniform_time(20));
    std::set<std::uint32_t> seen;
    std::size_t with_two = 0;
    for (const Configuration& c : plan.configurations) {
        BOOST_TEST(c.pipeline * c.data_parallel * c.tensor_parallel * c.context_parallel == 64u);
        BOOST_TEST(c.micro_batches * 2u * c.data_parallel == 256u);
        seen.insert(c.context_parallel);
        with_two += c.context_parallel == 2 ? 1 : 0;
    }
    BOOST_TEST((seen == std::set<std::uint32_t>{1, 2}));
    // cp = 2: 64 / 8 = 8 devices over P in 1, 2, 4, 8.
    BOOST_TEST(with_two == 4u);
    bool three_left_out = false;
    for (const SkippedConfiguration& s : plan.skipped) {
        three_left_out =
            three_left_out || (s.configuration == "t=4 cp=3" &&
                               s.reason == "the 64 devices are not a multiple of t x cp = 12");
    }
    BOOST_TEST(three_left_out);
    // One degree that does not divide the devices is an error, not a skip.
    space.context_parallel_degrees = {3};
    expect_input_error([&] { (void)search_configurations(space, uniform_time(20)); },
                       "the 64 devices cannot be split into groups of 12");
    space.context_parallel_degrees = {0, 2};
    expect_input_error([&] { (void)search_configurations(space, uniform_time(20)); },
                       "the context-parallel degree: expected at least 1");
}

// Listed pipeline degrees with several tensor- or context-parallel degrees: a degree the devices
// take with one of them and not another is left out where it does not fit, with the reason in
// the degrees given; one that no combination takes is an error, as with one combination.
BOOST_AUTO_TEST_CASE(listed_degrees_are_left_out_where_another_degree_takes_them) {
    SearchSpace space = devices_space();  // 64 devices, t = 4, b = 2, B = 256
    space.context_parallel_degrees = {1, 2};
    space.pipeline_degrees = {2, 16};
    space.schedules = {{Schedule::one_f_one_b, 1}};
    space.recompute = {recompute_policy("any")};
    const SearchPlan plan = search_configurations(space, uniform_time(20));
    std::set<std::pair<std::uint32_t, std::uint32_t>> planned;
    for (const Configuration& c : plan.configurations)
        planned.insert({c.pipeline, c.context_parallel});
    // P = 16 with cp = 2 needs 16 x 4 x 2 = 128 devices per replica.
    BOOST_TEST(
        (planned == std::set<std::pair<std::uint32_t, std::uint32_t>>{{2, 1}, {16, 1}, {2, 2}}));
    BOOST_TEST_REQUIRE(plan.skipped.size() == 1u);
    BOOST_TEST(plan.skipped[0].configuration == "P=16 t=4 cp=2 b=2");
    BOOST_TEST(plan.skipped[0].reason ==
               "pipeline degree 16 does not divide the 64 devices: 16 stages x tensor parallel 4 "
               "x context parallel 2 = 128 devices per data-parallel replica, and 64 is not a "
               "multiple of 128");
    // P = 32 fits neither: 32 x 4 = 128 already.
    space.pipeline_degrees = {2, 32};
    expect_input_error([&] { (void)search_configurations(space, uniform_time(20)); },
                       "pipeline degree 32 fits none of the tensor-parallel and context-parallel "
                       "degrees and micro-batch sizes searched: pipeline degree 32 does not "
                       "divide the 64 devices: 32 stages x tensor parallel 4 = 128 devices");
    // A batch the data-parallel degree does not divide: with two micro-batch sizes, b = 2 and
    // P = 2 give d = 8 and 16 samples a step, which 248 is not a multiple of; b = 1 takes it.
    space = devices_space();
    space.pipeline_degrees = {2};
    space.micro_batch_sizes = {1, 2};
    space.global_batch = 248;
    space.schedules = {{Schedule::one_f_one_b, 1}};
    space.recompute = {recompute_policy("any")};
    const SearchPlan batch = search_configurations(space, uniform_time(20));
    BOOST_TEST_REQUIRE(batch.configurations.size() == 1u);
    BOOST_TEST(batch.configurations[0].micro_batch_size == 1u);
    BOOST_TEST_REQUIRE(batch.skipped.size() == 1u);
    BOOST_TEST(batch.skipped[0].configuration == "P=2 d=8 t=4 cp=1 b=2");
}

BOOST_AUTO_TEST_CASE(the_schedule_needs_are_left_out_with_the_reason) {
    SearchSpace s;
    s.pipeline_degrees = {4};
    s.data_parallel = 3;
    s.global_batch = 18;  // M = 6: not a multiple of 4, fewer than 2 x 4
    s.schedules = {
        {Schedule::one_f_one_b, 1}, {Schedule::interleaved, 2}, {Schedule::dualpipe_v, 2}};
    const SearchPlan plan = search_configurations(s, uniform_time(16));
    BOOST_TEST(plan.configurations.size() == 1u);
    BOOST_TEST(plan.configurations[0].micro_batches == 6u);
    BOOST_TEST(plan.skipped.size() == 2u);
    BOOST_TEST(plan.skipped[0].reason.find("interleaved needs a multiple of the 4 stages") == 0u);
    BOOST_TEST(
        plan.skipped[1].reason ==
        "dualpipe-v needs at least twice as many micro-batches as stages (2 x 4 = 8), got 6");
    // Without 1f1b the space is empty: exit 2 with each reason.
    s.schedules = {{Schedule::interleaved, 2}, {Schedule::dualpipe_v, 2}};
    expect_input_error([&] { (void)search_configurations(s, uniform_time(16)); },
                       "the search space is empty: no combination of pipeline degree and schedule "
                       "can run:\n  P=4 d=3 M=6 interleaved v=2: interleaved needs a multiple");
}

BOOST_AUTO_TEST_CASE(bad_spaces_are_refused_with_the_reason) {
    const TimeModel t = uniform_time(32);
    SearchSpace s = devices_space();
    s.pipeline_degrees = {2, 3};
    expect_input_error([&] { (void)search_configurations(s, t); },
                       "pipeline degree 3 does not divide the 64 devices: 3 stages x tensor "
                       "parallel 4 = 12 devices per data-parallel replica");
    s.pipeline_degrees = {4};
    s.global_batch = 100;  // d = 4, b = 2: 8 does not divide 100
    expect_input_error([&] { (void)search_configurations(s, t); },
                       "pipeline degree 4: the global batch of 100 samples is not divisible by "
                       "micro-batch size 2 x data-parallel degree 4 = 8");
    s = devices_space();
    s.tensor_parallel = 3;
    expect_input_error([&] { (void)search_configurations(s, t); },
                       "the 64 devices cannot be split into tensor-parallel groups of 3");
    s = devices_space();
    s.devices.reset();
    expect_input_error([&] { (void)search_configurations(s, t); }, "nothing to search");
    s = devices_space();
    s.recompute.clear();
    expect_input_error([&] { (void)search_configurations(s, t); }, "no recompute policy");
    s = devices_space();
    s.schedules = {{Schedule::one_f_one_b, 2}};
    expect_input_error([&] { (void)search_configurations(s, t); },
                       "schedule '1f1b': 1f1b runs one chunk per stage, got 2");
    s = devices_space();
    s.global_batch = 0;
    expect_input_error([&] { (void)search_configurations(s, t); }, "the global batch");
    // Derived degrees whose data-parallel degree does not divide the batch are left out: 64
    // devices, t = 1, B = 48: d = 64 / P divides 48 only for P >= 4 (d <= 16).
    s = devices_space();
    s.tensor_parallel = 1;
    s.micro_batch_size = 1;
    s.global_batch = 48;
    s.schedules = {{Schedule::one_f_one_b, 1}};
    const SearchPlan plan = search_configurations(s, t);
    BOOST_TEST(plan.configurations.front().pipeline == 4u);
    BOOST_TEST(plan.skipped.front().reason ==
               "the global batch of 48 samples is not divisible by micro-batch size 1 x "
               "data-parallel degree 64 = 64");
}

BOOST_AUTO_TEST_CASE(groups_of_layers_are_searched_with_every_chunk_count_and_schedule) {
    TimeModel t = uniform_time(12);
    t.groups = {{"dense", 4, t.body_time, 1.0}, {"moe", 8, t.body_time, 1.0}};
    t.sequence.assign(12, 1);
    SearchSpace s = devices_space();
    s.schedules.push_back({Schedule::interleaved, 3});
    s.schedules.push_back({Schedule::zb_v, 2});
    const SearchPlan plan = search_configurations(s, t);
    // Every schedule and chunk count is kept: two chunks are planned exactly, three chunks and
    // zb-v through one group that bounds the groups.
    std::set<std::pair<Schedule, std::uint32_t>> kept;
    for (const Configuration& c : plan.configurations)
        kept.emplace(c.schedule.schedule, c.schedule.chunks);
    BOOST_TEST(kept.count({Schedule::one_f_one_b, 1u}) == 1u);
    BOOST_TEST(kept.count({Schedule::interleaved, 2u}) == 1u);
    BOOST_TEST(kept.count({Schedule::interleaved, 3u}) == 1u);
    BOOST_TEST(kept.count({Schedule::dualpipe_v, 2u}) == 1u);
    BOOST_TEST(kept.count({Schedule::zb_v, 2u}) == 1u);
    for (const SkippedConfiguration& k : plan.skipped)
        BOOST_TEST(k.reason.find("groups of body layers") == std::string::npos, k.reason);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(search_run)

BOOST_AUTO_TEST_CASE(outcomes_are_each_configuration_planned_alone_for_any_number_of_threads) {
    const Problem base = base_problem(24, 9000.0);
    const MemorySource memory = linear_memory();
    SearchSpace s = devices_space();
    s.recompute = {recompute_policy("any"), recompute_policy("none"), recompute_policy("full"),
                   recompute_policy("select+full")};
    const SearchPlan plan = search_configurations(s, base.time);
    const auto plan_one = [&](const Configuration& c) {
        return plan_configuration(base, c, memory);
    };
    const SearchResult one = run_search(plan.configurations, plan_one, {.jobs = 1});
    const SearchResult four = run_search(plan.configurations, plan_one, {.jobs = 4});
    BOOST_TEST(!one.stopped);
    BOOST_TEST_REQUIRE(one.outcomes.size() == plan.configurations.size());
    BOOST_TEST_REQUIRE(four.outcomes.size() == plan.configurations.size());
    std::size_t planned = 0, infeasible = 0;
    for (std::size_t i = 0; i < one.outcomes.size(); ++i) {
        const SearchOutcome& a = one.outcomes[i];
        const SearchOutcome& b = four.outcomes[i];
        BOOST_TEST(describe(a.configuration) == describe(plan.configurations[i]));
        BOOST_TEST(describe(b.configuration) == describe(plan.configurations[i]));
        BOOST_TEST((a.status == b.status));
        BOOST_TEST(a.message == b.message);
        // The ground truth: the configuration's problem planned directly.
        Problem direct = base;
        direct.num_stages = a.configuration.pipeline;
        direct.micro_batches = a.configuration.micro_batches;
        direct.schedule = a.configuration.schedule.schedule;
        direct.chunks = a.configuration.schedule.chunks;
        direct.kinds = a.configuration.recompute.kinds;
        if (a.status == SearchOutcome::Status::planned) {
            ++planned;
            // A search plans every configuration as --fast does (then refine_best, not run here).
            const PlannedPartition expected = plan_with_memory(direct, memory, {.refine = false});
            BOOST_TEST(a.iteration_time() == expected.simulation.makespan);
            BOOST_TEST(b.iteration_time() == expected.simulation.makespan);
            BOOST_TEST(a.planned->plan.iteration_time == expected.plan.iteration_time);
            double peak = 0.0;
            for (std::size_t st = 0; st < expected.plan.stages.size(); ++st) {
                peak = std::max(peak, expected.plan.stages[st].memory_mb);
                BOOST_TEST((a.planned->plan.stages[st].layers == expected.plan.stages[st].layers));
                BOOST_TEST((b.planned->plan.stages[st].layers == expected.plan.stages[st].layers));
            }
            BOOST_TEST(a.peak_memory_mb == peak);
            BOOST_TEST(a.headroom_mb == 9000.0 - peak);
            BOOST_TEST(a.headroom_mb >= 0.0);
        } else if (a.status == SearchOutcome::Status::infeasible) {
            ++infeasible;
            try {
                (void)plan_with_memory(direct, memory);
                BOOST_ERROR(
                    "the search calls infeasible what plans: " << describe(a.configuration));
            } catch (const Infeasible& e) {
                BOOST_TEST(a.smallest_feasible_limit_mb == e.smallest_feasible_limit_mb());
                BOOST_TEST(a.smallest_feasible_limit_mb > 9000.0);
                // The limit it names plans the configuration.
                direct.memory_limit_mb = a.smallest_feasible_limit_mb;
                BOOST_CHECK_NO_THROW((void)plan_with_memory(direct, memory));
            }
        }
    }
    // The instance has both kinds of outcome (P = 1 holds all 24 layers: 2000 + 300 + 600 +
    // 24 x 500 = 14900 MB before any activation).
    BOOST_TEST(planned > 5u);
    BOOST_TEST(infeasible > 2u);

    // Ranked fastest first; ties keep the configurations' order.
    const auto order = ranked(one);
    BOOST_TEST(order.size() == planned);
    for (std::size_t i = 1; i < order.size(); ++i) {
        BOOST_TEST(order[i - 1]->iteration_time() <= order[i]->iteration_time());
        if (order[i - 1]->iteration_time() == order[i]->iteration_time())
            BOOST_TEST(order[i - 1] < order[i]);
    }

    // The best configurations with chunks planned again with the local search (ppb search without
    // --fast): each is then the default plan of ppb partition, whatever the threads, and the
    // others are untouched.
    const auto refine_one = [&](const Configuration& c) {
        return plan_configuration(base, c, memory, true);
    };
    SearchResult refined_one = one;
    SearchResult refined_four = four;
    const std::size_t again = refine_best(refined_one, 3, refine_one, {.jobs = 1});
    BOOST_TEST(refine_best(refined_four, 3, refine_one, {.jobs = 4}) == again);
    BOOST_TEST(again > 0u);
    // Planned again: the 3 fastest with chunks, and every other with chunks whose proven bound
    // is below the 3rd fastest iteration; none other.
    const std::vector<const SearchOutcome*> before_order = ranked(one);
    BOOST_TEST_REQUIRE(before_order.size() >= 3u);
    const double third = before_order[2]->iteration_time();
    std::size_t expected_again = 0;
    for (std::size_t place = 0; place < before_order.size(); ++place) {
        const SearchOutcome& o = *before_order[place];
        if (!o.planned->problem.chunked())
            continue;
        BOOST_TEST_REQUIRE(o.planned->lower_bound.has_value());
        BOOST_TEST(*o.planned->lower_bound <= o.planned->simulation.makespan * (1 + 1e-12));
        if (place < 3 || *o.planned->lower_bound < third)
            ++expected_again;
    }
    BOOST_TEST(again == expected_again);
    // The instance has some past the 3rd fastest whose bound is below it (6 in all).
    BOOST_TEST(again > 3u);
    // So the 3 fastest are those of planning every configuration again.
    SearchResult refined_all = one;
    (void)refine_best(refined_all, one.outcomes.size(), refine_one, {.jobs = 2});
    const auto settled = ranked(refined_one);
    const auto all = ranked(refined_all);
    BOOST_TEST_REQUIRE(settled.size() == all.size());
    for (std::size_t i = 0; i < 3; ++i)
        BOOST_TEST(settled[i]->iteration_time() == all[i]->iteration_time());
    std::size_t changed = 0;
    for (std::size_t i = 0; i < one.outcomes.size(); ++i) {
        const SearchOutcome& before = one.outcomes[i];
        const SearchOutcome& after = refined_one.outcomes[i];
        BOOST_TEST(describe(after.configuration) == describe(before.configuration));
        BOOST_TEST(refined_four.outcomes[i].iteration_time() == after.iteration_time());
        if (before.status != SearchOutcome::Status::planned)
            continue;
        BOOST_TEST(after.iteration_time() <= before.iteration_time());
        if (after.iteration_time() != before.iteration_time()) {
            ++changed;
            BOOST_TEST(after.planned->problem.chunked());
            Problem direct = base;
            direct.num_stages = after.configuration.pipeline;
            direct.micro_batches = after.configuration.micro_batches;
            direct.schedule = after.configuration.schedule.schedule;
            direct.chunks = after.configuration.schedule.chunks;
            direct.kinds = after.configuration.recompute.kinds;
            BOOST_TEST(after.iteration_time() ==
                       plan_with_memory(direct, memory).simulation.makespan);
        }
    }
    BOOST_TEST(changed <= again);

    // Planned again from the first plans (ppb search's way: the first plan is not solved again,
    // PlanWithModelOptions::solved): the same configurations, the same plans, bounds and times.
    SearchResult from_first = one;
    const std::size_t again_from_first =
        refine_best(from_first, 3,
                    [&](const Configuration& c, const SearchOutcome& before) {
                        BOOST_TEST(describe(before.configuration) == describe(c));
                        return plan_configuration(base, c, memory, true, true, &before);
                    },
                    {.jobs = 2});
    BOOST_TEST(again_from_first == again);
    for (std::size_t i = 0; i < one.outcomes.size(); ++i) {
        const SearchOutcome& a = from_first.outcomes[i];
        const SearchOutcome& b = refined_one.outcomes[i];
        BOOST_TEST_REQUIRE((a.status == b.status));
        if (a.status != SearchOutcome::Status::planned)
            continue;
        BOOST_TEST(a.iteration_time() == b.iteration_time());
        BOOST_TEST((a.planned->lower_bound == b.planned->lower_bound));
        BOOST_TEST((a.planned->problem.objective == b.planned->problem.objective));
        for (std::size_t j = 0; j < a.planned->plan.stages.size(); ++j) {
            BOOST_TEST((a.planned->plan.stages[j].layers == b.planned->plan.stages[j].layers));
            BOOST_TEST(a.planned->plan.stages[j].memory_mb == b.planned->plan.stages[j].memory_mb);
        }
    }
    // A first plan of another configuration is refused, not refined.
    const SearchOutcome* chunked_first = nullptr;
    const SearchOutcome* other = nullptr;
    for (const SearchOutcome& o : one.outcomes) {
        if (o.status != SearchOutcome::Status::planned || !o.planned->problem.chunked())
            continue;
        if (chunked_first == nullptr)
            chunked_first = &o;
        else if (o.configuration.pipeline != chunked_first->configuration.pipeline)
            other = &o;
    }
    BOOST_TEST_REQUIRE(other != nullptr);
    BOOST_CHECK_THROW(
        (void)plan_configuration(base, chunked_first->configuration, memory, true, true, other),
        std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_stop_keeps_what_was_planned_in_order) {
    const Problem base = base_problem(24, 9000.0);
    const MemorySource memory = linear_memory();
    const SearchPlan plan = search_configurations(devices_space(), base.time);
    BOOST_TEST_REQUIRE(plan.configurations.size() > 6u);
    std::atomic<bool> stop{false};
    std::atomic<int> calls{0};
    const auto plan_one = [&](const Configuration& c) {
        if (++calls == 4)
            stop = true;  // as the SIGINT handler does
        return plan_configuration(base, c, memory);
    };
    std::size_t progress_calls = 0;
    const SearchResult r = run_search(plan.configurations, plan_one,
                                      {.jobs = 1,
                                       .on_progress =
                                           [&](const SearchProgress& p) {
                                               ++progress_calls;
                                               BOOST_TEST(p.done <= p.total);
                                               BOOST_TEST(p.total == plan.configurations.size());
                                           },
                                       .stop = &stop});
    BOOST_TEST(r.stopped);
    BOOST_TEST(r.outcomes.size() == 4u);  // the one being planned when stopped finished
    for (std::size_t i = 0; i < r.outcomes.size(); ++i)
        BOOST_TEST(describe(r.outcomes[i].configuration) == describe(plan.configurations[i]));
    BOOST_TEST(progress_calls >= 1u);

    // Stopped before it starts: nothing planned.
    const SearchResult none = run_search(plan.configurations, plan_one, {.jobs = 2, .stop = &stop});
    BOOST_TEST(none.stopped);
    BOOST_TEST(none.outcomes.empty());
}

BOOST_AUTO_TEST_CASE(a_failure_stops_the_search_and_is_passed_on) {
    const Problem base = base_problem(24, 9000.0);
    const MemorySource memory = linear_memory();
    const SearchPlan plan = search_configurations(devices_space(), base.time);
    std::atomic<int> calls{0};
    const auto plan_one = [&](const Configuration& c) {
        if (++calls == 3)
            throw ppb::PluginError("the plugin crashed on configuration 3");
        return plan_configuration(base, c, memory);
    };
    BOOST_CHECK_EXCEPTION((void)run_search(plan.configurations, plan_one, {.jobs = 2}),
                          ppb::PluginError, [](const ppb::PluginError& e) {
                              return std::string(e.what()) ==
                                     "the plugin crashed on configuration 3";
                          });
    BOOST_TEST(calls.load() < static_cast<int>(plan.configurations.size()));
}

BOOST_AUTO_TEST_CASE(a_configuration_that_cannot_be_planned_is_an_outcome) {
    Problem base = base_problem(24, 9000.0);
    MemorySource memory = linear_memory();
    // The model predicts only 'none' and 'full': a policy of 'select' has no kind to plan with.
    memory.linear->identified &= ~((1u << (4 + PPB_KIND_SELECT)));
    const Configuration c{4, 4, 32, {Schedule::one_f_one_b, 1}, recompute_policy("select")};
    const SearchOutcome o = plan_configuration(base, c, memory);
    BOOST_TEST((o.status == SearchOutcome::Status::invalid));
    BOOST_TEST(!o.message.empty());
}

BOOST_AUTO_TEST_SUITE_END()

// A configuration in the frameworks' own settings: Megatron-LM's flags (megatron/training/
// arguments.py at 4e85d74ae9: Megatron-FSDP asserts --ckpt-format fsdp_dtensor) and torchtitan's
// job configuration (parallel_dims.py, job_config.py at 238fa9953e).
BOOST_AUTO_TEST_SUITE(configuration_flags)

// A configuration of P stages, d replicas, M micro-batches of b samples, t tensor-parallel ranks.
Configuration degrees(std::uint32_t p, std::uint32_t d, std::uint32_t m, std::uint32_t t,
                      std::uint32_t b) {
    Configuration c;
    c.pipeline = p;
    c.data_parallel = d;
    c.micro_batches = m;
    c.tensor_parallel = t;
    c.micro_batch_size = b;
    return c;
}

BOOST_AUTO_TEST_CASE(each_framework_gets_the_degrees_and_the_batch) {
    Configuration c = degrees(4, 2, 64, 8, 1);
    const std::vector<std::string> megatron = {"--tensor-model-parallel-size",
                                               "8",
                                               "--pipeline-model-parallel-size",
                                               "4",
                                               "--context-parallel-size",
                                               "1",
                                               "--micro-batch-size",
                                               "1",
                                               "--global-batch-size",
                                               "128"};
    BOOST_TEST(megatron_configuration_args(c).args == megatron, boost::test_tools::per_element());
    // Not searched: the model's own sharding, no flag for it; torchtitan shards (its default).
    KeyedSettings titan = torchtitan_configuration(c);
    BOOST_TEST(titan.why_not.empty());
    using Setting = std::pair<std::string, std::uint64_t>;
    const std::vector<Setting> pipelined = {{"parallelism.tensor_parallel_degree", 8},
                                            {"parallelism.pipeline_parallel_degree", 4},
                                            {"parallelism.context_parallel_degree", 1},
                                            {"parallelism.data_parallel_shard_degree", 2},
                                            {"parallelism.pipeline_parallel_microbatch_size", 1},
                                            {"training.local_batch_size", 64},
                                            {"training.global_batch_size", 128}};
    BOOST_TEST((titan.settings == pipelined));

    c.sharding = DataParallelSharding::optim_grads_params;
    std::vector<std::string> fsdp = megatron;
    fsdp.insert(fsdp.end(), {"--use-megatron-fsdp", "--data-parallel-sharding-strategy",
                             "optim_grads_params", "--ckpt-format", "fsdp_dtensor"});
    BOOST_TEST(megatron_configuration_args(c).args == fsdp, boost::test_tools::per_element());
    // The shape's sharding, not searched, gives the same flags (until 2026-12-07 the strategy
    // was read from the unsearched, empty one: "no_shard" came out).
    c.sharding = std::nullopt;
    AssumedSettings shape_sharding;
    shape_sharding.sharding = DataParallelSharding::optim_grads_params;
    BOOST_TEST(megatron_configuration_args(c, shape_sharding).args == fsdp,
               boost::test_tools::per_element());
    shape_sharding.sharding = DataParallelSharding::optim_grads;
    BOOST_TEST(megatron_configuration_args(c, shape_sharding).args.at(fsdp.size() - 3) ==
               "optim_grads");
    c.sharding = DataParallelSharding::optim;
    BOOST_TEST(megatron_configuration_args(c).args.back() == "--use-distributed-optimizer");
    BOOST_TEST(torchtitan_configuration(c).why_not ==
               "torchtitan shards the weights, gradients and optimizer state together (FSDP2, "
               "optim_grads_params) or replicates them (no_shard), not the optimizer state alone");
    BOOST_TEST(torchtitan_configuration(c).settings.empty());

    // One stage, replicas: the step runs b samples, the rest is gradient accumulation.
    c.pipeline = 1;
    c.data_parallel = 8;
    c.micro_batches = 16;
    c.sharding = DataParallelSharding::no_shard;
    BOOST_TEST(megatron_configuration_args(c).args.size() == 10u);  // DDP: no flag
    titan = torchtitan_configuration(c);
    const std::vector<Setting> replicated = {{"parallelism.tensor_parallel_degree", 8},
                                             {"parallelism.pipeline_parallel_degree", 1},
                                             {"parallelism.context_parallel_degree", 1},
                                             {"parallelism.data_parallel_replicate_degree", 8},
                                             {"training.local_batch_size", 1},
                                             {"training.global_batch_size", 128}};
    BOOST_TEST((titan.settings == replicated));
}

// MindFormers' keys (mindformers/trainer/base_trainer.py at 03542d0303): with stages the global
// batch is batch_size x data_parallel x micro_batch_num, without them batch_size x data_parallel
// x gradient_accumulation_steps; interleaving is model_config's pp_interleave_num.
BOOST_AUTO_TEST_CASE(mindformers_gets_its_parallel_config_and_runner_config) {
    using Setting = std::pair<std::string, std::uint64_t>;
    Configuration c = degrees(4, 2, 64, 8, 2);
    c.schedule = {Schedule::interleaved, 3};
    const std::vector<Setting> interleaved = {
        {"model.model_config.pp_interleave_num", 3}, {"parallel_config.data_parallel", 2},
        {"parallel_config.model_parallel", 8},       {"parallel_config.pipeline_stage", 4},
        {"parallel_config.micro_batch_num", 64},     {"runner_config.batch_size", 2}};
    KeyedSettings mf = mindformers_configuration(c);
    BOOST_TEST(mf.why_not.empty());
    BOOST_TEST((mf.settings == interleaved));
    // B = batch_size x data_parallel x micro_batch_num, the configuration's.
    BOOST_TEST(2u * 2u * 64u ==
               std::uint64_t{c.micro_batch_size} * c.data_parallel * c.micro_batches);

    // One stage: no pipeline, the micro-batches are gradient accumulation steps; CP and EP.
    c.pipeline = 1;
    c.schedule = {Schedule::one_f_one_b, 1};
    c.context_parallel = 2;
    c.expert_parallel = 8;
    c.micro_batches = 16;
    const std::vector<Setting> one_stage = {{"parallel_config.data_parallel", 2},
                                            {"parallel_config.model_parallel", 8},
                                            {"parallel_config.pipeline_stage", 1},
                                            {"parallel_config.context_parallel", 2},
                                            {"parallel_config.expert_parallel", 8},
                                            {"runner_config.batch_size", 2},
                                            {"runner_config.gradient_accumulation_steps", 16}};
    BOOST_TEST((mindformers_configuration(c).settings == one_stage));
    c.micro_batches = 1;
    BOOST_TEST(mindformers_configuration(c).settings.back().first == "runner_config.batch_size");

    // A searched sharding: no setting here, and why.
    c.sharding = DataParallelSharding::no_shard;
    BOOST_TEST(mindformers_configuration(c).why_not.empty());
    c.sharding = DataParallelSharding::optim;
    mf = mindformers_configuration(c);
    BOOST_TEST(mf.settings.empty());
    BOOST_TEST(mf.why_not ==
               "ppb does not map the data-parallel sharding optim to MindFormers' optimizer "
               "parallelism (parallel.enable_parallel_optimizer), which shards otherwise");
}

// The expert degrees each framework runs: the searched ones, else the model shape's, which the
// configuration was sized with. torchtitan's own default slices no expert (ETP 1) where ppb's and
// Megatron-LM's is t, takes ETP 1 or t only, and takes its EP ranks from the context-parallel
// (with ETP 1 also the tensor-parallel) and the data-parallel shard ranks (torchtitan/
// distributed/parallel_dims.py at 0119de156d, _validate). Until 2026-12-07 the shape's EP, not
// searched, reached only Megatron-LM's flags: torchtitan and MindFormers ran one expert-parallel
// rank where the plan was sized with eight.
BOOST_AUTO_TEST_CASE(each_framework_runs_the_experts_as_sized) {
    using Setting = std::pair<std::string, std::uint64_t>;
    Configuration c = degrees(1, 8, 4, 2, 1);
    AssumedSettings shape;
    shape.moe = true;
    shape.expert_parallel = 8;
    // A setting's value; 0 (no degree's) when absent.
    const auto value_of = [](const KeyedSettings& k, std::string_view key) -> std::uint64_t {
        for (const auto& [name, value] : k.settings) {
            if (name == key)
                return value;
        }
        return 0;
    };
    // The shape's EP 8, its ETP unsaid: t, as the configuration was sized.
    KeyedSettings titan = torchtitan_configuration(c, shape);
    BOOST_TEST(titan.why_not.empty(), titan.why_not);
    BOOST_TEST(value_of(titan, "parallelism.expert_parallel_degree") == 8u);
    BOOST_TEST(value_of(titan, "parallelism.expert_tensor_parallel_degree") == 2u);
    BOOST_TEST(value_of(mindformers_configuration(c, shape), "parallel_config.expert_parallel") ==
               8u);
    const std::vector<std::string> megatron = megatron_configuration_args(c, shape).args;
    BOOST_TEST(
        std::ranges::search(megatron, std::vector<std::string>{"--expert-model-parallel-size", "8"})
            .size() == 2u);
    // The shape's ETP 1: EP takes the tensor-parallel ranks too (8 of d x t = 16).
    shape.expert_tensor_parallel = 1;
    BOOST_TEST(value_of(torchtitan_configuration(c, shape),
                        "parallelism.expert_tensor_parallel_degree") == 1u);
    // Searched degrees come before the shape's, in every framework.
    c.expert_parallel = 4;
    c.expert_tensor_parallel = 2;
    titan = torchtitan_configuration(c, shape);
    BOOST_TEST(value_of(titan, "parallelism.expert_parallel_degree") == 4u);
    BOOST_TEST(value_of(titan, "parallelism.expert_tensor_parallel_degree") == 2u);
    const std::vector<std::string> searched = megatron_configuration_args(c, shape).args;
    BOOST_TEST(std::ranges::search(searched,
                                   std::vector<std::string>{"--expert-tensor-parallel-size", "2"})
                   .size() == 2u);
    // An ETP torchtitan does not run.
    c.expert_tensor_parallel = 4;
    titan = torchtitan_configuration(c, shape);
    BOOST_TEST(titan.settings.empty());
    BOOST_TEST(titan.why_not ==
               "torchtitan slices the experts over 1 or the tensor-parallel degree 2 "
               "(parallelism.expert_tensor_parallel_degree), not 4");
    // Replicas that are not sharded lend torchtitan's EP no ranks: 4 experts' ranks cannot come
    // from one context-parallel rank with ETP t.
    c.expert_tensor_parallel = 2;
    c.sharding = DataParallelSharding::no_shard;
    titan = torchtitan_configuration(c, shape);
    BOOST_TEST(titan.settings.empty());
    BOOST_TEST(titan.why_not ==
               "torchtitan's 4 expert-parallel ranks are taken from the context-parallel and "
               "data-parallel shard ranks: 4 must be a multiple of 1 and divide 1");
    // With ETP 1 they take the tensor-parallel ranks too: EP 2 = t runs replicated.
    c.expert_parallel = 2;
    c.expert_tensor_parallel = 1;
    titan = torchtitan_configuration(c, shape);
    BOOST_TEST(titan.why_not.empty(), titan.why_not);
    const std::vector<Setting> expected = {{"parallelism.tensor_parallel_degree", 2},
                                           {"parallelism.pipeline_parallel_degree", 1},
                                           {"parallelism.context_parallel_degree", 1},
                                           {"parallelism.data_parallel_replicate_degree", 8},
                                           {"parallelism.expert_parallel_degree", 2},
                                           {"parallelism.expert_tensor_parallel_degree", 1},
                                           {"training.local_batch_size", 1},
                                           {"training.global_batch_size", 32}};
    BOOST_TEST((titan.settings == expected));
    // MindFormers: its classic MoE splits each expert over model_parallel, ETP t, unless
    // moe_config.expert_model_parallel is 1 (ETP 1, as its grouped-matmul MoE and its current
    // models run); no other degree.
    c.expert_parallel = 4;
    c.sharding = std::nullopt;
    c.expert_tensor_parallel = 2;
    KeyedSettings mf = mindformers_configuration(c, shape);
    BOOST_TEST(mf.why_not.empty(), mf.why_not);
    BOOST_TEST(value_of(mf, "moe_config.expert_model_parallel") == 0u);
    c.expert_tensor_parallel = 1;
    mf = mindformers_configuration(c, shape);
    BOOST_TEST(value_of(mf, "moe_config.expert_model_parallel") == 1u);
    BOOST_TEST(value_of(mf, "parallel_config.expert_parallel") == 4u);
    c.expert_tensor_parallel = std::nullopt;  // the shape's ETP 1, not searched
    BOOST_TEST(value_of(mindformers_configuration(c, shape), "moe_config.expert_model_parallel") ==
               1u);
    c.expert_tensor_parallel = 4;
    mf = mindformers_configuration(c, shape);
    BOOST_TEST(mf.settings.empty());
    BOOST_TEST(mf.why_not ==
               "MindFormers splits each expert over model_parallel (2) or keeps it whole "
               "(moe_config.expert_model_parallel: 1, use_gmm, the current models), not over 4");
    // A dense model: no expert setting in any framework.
    BOOST_TEST(value_of(torchtitan_configuration(Configuration{}, AssumedSettings{}),
                        "parallelism.expert_parallel_degree") == 0u);
    BOOST_TEST(value_of(mindformers_configuration(degrees(1, 8, 4, 2, 1), AssumedSettings{}),
                        "moe_config.expert_model_parallel") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace search_tests
