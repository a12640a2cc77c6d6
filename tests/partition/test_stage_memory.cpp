// One number for a stage's memory (host_api/docs/design.md, section 4.3, "A count of 0"): for
// random plans of every schedule, the memory the partitioner plans each stage at, the peak the
// simulator finds running the plan in the schedule's own order, and the stage's prediction over
// its in-flight profile (what `ppb predict --schedule ... --chunk ...` prints) are the same
// number. With the plugins themselves, loaded from the build: the analytic model (no
// coefficients, so probed; its embedding's and LM head's activations grow with their chunk's
// in-flight count) and the table model (linear), each with one group of body layers and with two.
//
// The stages that matter are those whose peak is at a moment a chunk holds no micro-batch: the
// plugin contract cannot ask about a count of 0, and the partitioner once asked the analytic
// model about it as 1, planning stage 1 of a 2-stage interleaved plan at 79 861 MB where its
// simulation peaked at 72 729 MB. The test requires such stages to occur, and plans binding
// limits, where the difference changes the plan.
#include <ppb/discovery.hpp>
#include <ppb/errors.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/loader.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/placement.hpp>
#include <ppb/profile_prediction.hpp>
#include <ppb/schedule.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

using ppb::Schedule;
using ppb::partition::Infeasible;
using ppb::partition::PlannedPartition;
using ppb::partition::Problem;
using ppb::partition::RecomputeRule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace stage_memory_tests {

namespace {

namespace json = boost::json;

const std::filesystem::path samples = PPB_SAMPLES_DIR;
const std::filesystem::path plugins = PPB_BUILD_PLUGIN_DIR;

json::object read_json(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str()).as_object();
}

// `file` with each BODY entry's nb_layer replaced as `layers` says (by name), written beside the
// test's other scratch files: the sample models made small enough to plan many times.
std::filesystem::path with_body_layers(const std::filesystem::path& file,
                                       const std::map<std::string, std::int64_t>& layers) {
    json::object doc = read_json(file);
    for (json::value& entry : doc.at("layers_description").as_array()) {
        json::object& e = entry.as_object();
        if (const auto n = layers.find(std::string(e.at("name").as_string())); n != layers.end())
            e["nb_layer"] = n->second;
    }
    if (doc.contains("auto_partition_layer")) {
        json::object names;
        for (const auto& [name, n] : layers)
            names[name] = n;
        if (layers.size() == 1 && doc.at("auto_partition_layer").as_object().size() == 1) {
            // SAPP names the body's count as it likes ("NumberOfLayers", the layer's name).
            names = {{doc.at("auto_partition_layer").as_object().begin()->key(),
                      layers.begin()->second}};
        }
        doc["auto_partition_layer"] = std::move(names);
    }
    // Removed when the test program ends.
    static struct Scratch {
        std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ppb-stage-memory-" + std::to_string(::getpid()));
        Scratch() { std::filesystem::create_directories(dir); }
        ~Scratch() {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        }
    } scratch;
    const auto out = scratch.dir / file.filename();
    std::ofstream(out) << json::serialize(doc);
    return out;
}

// A model's options (the analytic shape) with num_layers set.
std::string shape_with_layers(const std::filesystem::path& file, std::int64_t layers) {
    json::object shape = read_json(file);
    shape["num_layers"] = layers;
    return json::serialize(shape);
}

ppb::MemoryModel open_plugin(const char* file, const std::string& options) {
    return ppb::open_model(ppb::inspect_plugin_file(plugins / file), options);
}

// A model and the layer file whose times (and, for the table model, memory) go with it.
struct Case {
    std::string name;
    ppb::MemoryModel model;
    std::filesystem::path layers;
};

// LLaMA-2 70B with 40 body layers (the analytic model: the probes of three chunks hold up to 30)
// and with 24 (the table model).
std::vector<Case> one_group_cases() {
    std::vector<Case> out;
    out.push_back({"analytic",
                   open_plugin("ppb-analytic-1.0.0.so",
                               shape_with_layers(samples / "llama70b-shape.json", 40)),
                   with_body_layers(samples / "llama70b-layers.json", {{"decoder", 40}})});
    const auto table = with_body_layers(samples / "sapp" / "llama2_70b-hyper-parallel.json",
                                        {{"LLamaDecodeLayer", 24}});
    out.push_back(
        {"table", open_plugin("ppb-table-1.0.0.so", json::serialize(read_json(table))), table});
    return out;
}

// DeepSeek-V3's shape with 3 dense and 13 MoE layers; the table model's two-group fixture.
std::vector<Case> two_group_cases() {
    std::vector<Case> out;
    out.push_back({"analytic",
                   open_plugin("ppb-analytic-1.0.0.so",
                               shape_with_layers(samples / "moe" / "deepseek-v3-shape.json", 16)),
                   with_body_layers(samples / "moe" / "deepseek-v3-layers.json",
                                    {{"dense", 3}, {"moe", 13}})});
    const auto table = samples / "sapp" / "fixture_profile_multi_group.json";
    out.push_back(
        {"table", open_plugin("ppb-table-1.0.0.so", json::serialize(read_json(table))), table});
    return out;
}

bool close(double a, double b) {
    return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
}

// What one plan showed: defects (empty when the three numbers agree everywhere), and how many of
// its stages peak where a chunk holds no micro-batch.
struct Checked {
    std::string defects;
    std::size_t stages_at_a_zero = 0;
};

// Stage s of the plan as `ppb predict` asks about it: its layers per chunk (and per group), the
// schedule, and the schedule's in-flight profile.
ppb::StagePlacement placement_of(const PlannedPartition& planned, std::uint32_t s) {
    const Problem& p = planned.problem;
    const ppb::partition::StagePlan& stage = planned.plan.stages[s];
    ppb::StagePlacement placement{p.num_stages, s, {}, p.schedule};
    std::vector<std::uint32_t> groups;
    for (const auto& chunk : stage.chunks) {
        ppb_chunk c{};
        std::copy(chunk.layers.begin(), chunk.layers.end(), c.layers);
        placement.chunks.push_back(c);
        // Per group: the chunk's own counts with several chunks, the stage's with one.
        const auto& of_groups =
            !chunk.group_layers.empty() ? chunk.group_layers : stage.group_layers;
        for (const auto& kinds : of_groups)
            groups.insert(groups.end(), kinds.begin(), kinds.end());
    }
    if (p.time.grouped())
        placement.set_group_layers(std::move(groups));
    return placement;
}

Checked check(const PlannedPartition& planned, const ppb::MemoryModel& model) {
    Checked out;
    const Problem& p = planned.problem;
    const ppb::Simulation& sim = planned.simulation;
    if (!sim.with_memory) {
        out.defects += "the simulation has no memory; ";
        return out;
    }
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        const auto& stage = planned.plan.stages[s];
        const double planned_mb = stage.memory_mb;
        const double simulated_mb = sim.stages[s].peak_memory_mb;
        const auto profile =
            ppb::in_flight_profile(p.schedule, p.num_stages, s, p.micro_batches, p.chunks);
        const ppb::ProfilePeak predicted =
            ppb::predict_over_profile(model, placement_of(planned, s), profile);
        std::vector<std::uint32_t> at;
        for (const auto& chunk : stage.chunks)
            at.push_back(chunk.in_flight);
        if (std::find(at.begin(), at.end(), 0u) != at.end())
            ++out.stages_at_a_zero;
        if (!close(planned_mb, simulated_mb) || !close(planned_mb, predicted.memory_mb)) {
            out.defects += fmt::format(
                "stage {}: planned {} MB at ({}), simulated {} MB at ({}), predicted {} MB at "
                "({}); ",
                s, planned_mb, fmt::join(at, ", "), simulated_mb,
                fmt::join(sim.stages[s].in_flight_at_peak, ", "), predicted.memory_mb,
                fmt::join(predicted.profile[predicted.active], ", "));
        }
        // The plan's counts are a vector of the profile where the model's prediction is the peak.
        const auto where = std::find(profile.begin(), profile.end(), at);
        if (where == profile.end()) {
            out.defects += fmt::format("stage {}: in flight ({}) is not in its profile; ", s,
                                       fmt::join(at, ", "));
        } else if (!close(predicted.per_vector[static_cast<std::size_t>(where - profile.begin())],
                          planned_mb)) {
            out.defects += fmt::format("stage {}: in flight ({}) is not where it peaks; ", s,
                                       fmt::join(at, ", "));
        }
    }
    return out;
}

struct Shape {
    Schedule schedule;
    std::uint32_t chunks;
};

// P, M and the rule at random for `shape`: M a multiple of P under the interleaved schedules, at
// least 2P under dualpipe-v, any under the others (fewer than P too).
Problem random_problem(std::mt19937& rng, Shape shape, const std::filesystem::path& layers,
                       std::uint32_t most_stages) {
    const auto pick = [&](std::uint32_t low, std::uint32_t high) {
        return std::uniform_int_distribution<std::uint32_t>(low, high)(rng);
    };
    Problem p;
    p.schedule = shape.schedule;
    p.chunks = shape.chunks;
    p.num_stages = pick(2, most_stages);
    switch (shape.schedule) {
        case Schedule::interleaved:
        case Schedule::interleaved_less_memory:
            p.micro_batches = p.num_stages * pick(1, 4);
            break;
        case Schedule::dualpipe_v:
            p.micro_batches = 2 * p.num_stages + pick(0, 2 * p.num_stages);
            break;
        default:
            p.micro_batches = pick(1, 4 * p.num_stages);
            break;
    }
    p.rule = pick(0, 1) == 0 ? RecomputeRule::any : RecomputeRule::mindformers;
    p.time = ppb::partition::read_time_model(layers);
    return p;
}

// Plans `count` random problems of each shape with each case's model at binding limits (a limit
// between 70 % and 100 % of the largest stage of the plan at a generous limit) and checks them.
void prove(const std::vector<Case>& cases, const std::vector<Shape>& shapes, std::uint32_t seed,
           int count, std::uint32_t most_stages) {
    std::mt19937 rng(seed);
    std::size_t plans = 0;
    std::size_t infeasible = 0;
    std::size_t at_a_zero = 0;
    std::size_t probed_at_a_zero = 0;
    for (const Shape& shape : shapes) {
        for (const Case& c : cases) {
            for (int i = 0; i < count; ++i) {
                Problem p = random_problem(rng, shape, c.layers, most_stages);
                p.memory_limit_mb = 1e6;
                const bool refine = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
                const ppb::partition::PlanWithModelOptions options{
                    .choose_objective = true, .refine = refine, .lower_bound = false};
                const std::string what = fmt::format(
                    "{} {} v={} P={} M={} rule={}{}", c.name, ppb::schedule_name(p.schedule),
                    p.chunks, p.num_stages, p.micro_batches,
                    p.rule == RecomputeRule::any ? "any" : "mindformers", refine ? " refined" : "");
                try {
                    const PlannedPartition generous =
                        ppb::partition::plan_with_model(p, c.model, options);
                    double peak = 0.0;
                    for (const auto& stage : generous.plan.stages)
                        peak = std::max(peak, stage.memory_mb);
                    p.memory_limit_mb =
                        peak * std::uniform_real_distribution<double>(0.7, 1.0)(rng);
                    const PlannedPartition planned =
                        ppb::partition::plan_with_model(p, c.model, options);
                    const Checked checked = check(planned, c.model);
                    BOOST_TEST(checked.defects.empty(),
                               what << " limit " << p.memory_limit_mb << ": " << checked.defects);
                    ++plans;
                    at_a_zero += checked.stages_at_a_zero;
                    if (c.name == "analytic")
                        probed_at_a_zero += checked.stages_at_a_zero;
                } catch (const Infeasible&) {
                    ++infeasible;
                } catch (const ppb::InputError& e) {
                    BOOST_ERROR(what << ": " << e.what());
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(
        fmt::format("{} plans ({} infeasible limits), {} stages peaking where a "
                    "chunk holds none ({} with the probed model)",
                    plans, infeasible, at_a_zero, probed_at_a_zero));
    BOOST_TEST(plans >= shapes.size() * cases.size() * static_cast<std::size_t>(count) / 2);
    // Stages peaking at a count of 0 exist only where a chunk drains while another holds some:
    // the interleaved schedules; the V-shaped ones hold one vector. Required where they can occur.
    const bool interleaved = std::any_of(shapes.begin(), shapes.end(), [](const Shape& s) {
        return s.schedule == Schedule::interleaved ||
               s.schedule == Schedule::interleaved_less_memory;
    });
    if (interleaved)
        BOOST_TEST(probed_at_a_zero > 0u);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(stage_memory)

// The plan: stage 1 peaks at (2, 1), where the simulation puts it; 0 was once asked as 1,
// (3, 1), 7 132 MB over.
BOOST_AUTO_TEST_CASE(the_analytic_interleaved_plan_is_planned_at_its_simulated_peak) {
    const ppb::MemoryModel model = open_plugin(
        "ppb-analytic-1.0.0.so", json::serialize(read_json(samples / "llama70b-shape.json")));
    Problem p;
    p.schedule = Schedule::interleaved;
    p.chunks = 2;
    p.num_stages = 2;
    p.micro_batches = 64;
    p.memory_limit_mb = 80000;
    p.rule = RecomputeRule::any;
    p.time = ppb::partition::read_time_model(samples / "llama70b-layers.json");
    const PlannedPartition planned = ppb::partition::plan_with_model(p, model);
    const Checked checked = check(planned, model);
    BOOST_TEST(checked.defects.empty(), checked.defects);
    const auto& stage1 = planned.plan.stages[1];
    BOOST_TEST(stage1.chunks[0].in_flight == 2u);
    BOOST_TEST(stage1.chunks[1].in_flight == 1u);
    BOOST_TEST(stage1.memory_mb <= p.memory_limit_mb);
}

BOOST_AUTO_TEST_CASE(one_group_every_schedule) {
    prove(one_group_cases(),
          {{Schedule::one_f_one_b, 1},
           {Schedule::interleaved, 2},
           {Schedule::interleaved, 3},
           {Schedule::interleaved_less_memory, 2},
           {Schedule::dualpipe_v, 2},
           {Schedule::zb_h1, 1},
           {Schedule::zb_v, 2}},
          20240601u, 6, 6);
}

BOOST_AUTO_TEST_CASE(two_groups_every_schedule_that_plans_them) {
    prove(two_group_cases(),
          {{Schedule::one_f_one_b, 1},
           {Schedule::interleaved, 2},
           {Schedule::interleaved_less_memory, 2},
           {Schedule::dualpipe_v, 2}},
          20240602u, 4, 4);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace stage_memory_tests
