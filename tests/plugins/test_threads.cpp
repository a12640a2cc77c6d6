// One model, many threads (ppb/abi.h, Threads): a model may serve its predictions, their terms and
// its coefficients from several threads at once. Each real plugin is loaded from disk (dryrun-lsq
// fitted first), answered once on one thread, then hammered from eight threads at once; every
// answer, including every error and its message, must equal the single-threaded one. The CI
// runs this under ThreadSanitizer too (tests/run-all.sh).
#define BOOST_TEST_MODULE ppb threads
#include <ppb/discovery.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/loader.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/search.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/placement.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path plugin_dir = PPB_BUILD_PLUGIN_DIR;
const fs::path samples_dir = PPB_SAMPLES_DIR;

constexpr unsigned thread_count = 8;
constexpr unsigned rounds = 50;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    BOOST_REQUIRE_MESSAGE(in, "cannot open " << path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ppb::MemoryModel open(const std::string& file, const std::string& options) {
    const ppb::PluginCandidate candidate = ppb::inspect_plugin_file(plugin_dir / file);
    BOOST_REQUIRE_MESSAGE(candidate.verdict == ppb::Verdict::usable,
                          file << ": " << candidate.reason);
    return ppb::open_model(candidate, options);
}

// Placements of 1, 2, 4 and 8 stages with layers of every kind the model supports, several
// in-flight counts, and a few a model refuses (no layers, a kind it does not know, two chunks).
std::vector<ppb::StagePlacement> placements() {
    std::vector<ppb::StagePlacement> out;
    for (std::uint32_t p : {1U, 2U, 4U, 8U}) {
        for (std::uint32_t s = 0; s < p; ++s) {
            for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k) {
                ppb_chunk chunk{};
                chunk.layers[k] = 1 + (s + k) % 7;
                chunk.layers[PPB_KIND_FULL] += s % 3;
                chunk.in_flight = 1 + (p - s + k) % 9;
                out.push_back({p, s, {chunk}});
            }
        }
    }
    out.push_back({4, 1, {ppb_chunk{}}});  // no layers
    out.push_back({2, 5, {ppb_chunk{}}});  // stage outside the pipeline
    ppb_chunk every{};
    for (auto& n : every.layers)
        n = 2;
    every.in_flight = 3;
    out.push_back({4, 2, {every}});         // every kind, supported or not
    out.push_back({4, 2, {every, every}});  // two chunks (virtual pipeline)
    return out;
}

// A result or the error it gave, comparable bit for bit.
struct Answer {
    bool ok = false;
    double value = 0.0;
    std::string error;
    friend bool operator==(const Answer& a, const Answer& b) {
        return a.ok == b.ok && std::memcmp(&a.value, &b.value, sizeof a.value) == 0 &&
               a.error == b.error;
    }
};

template <class F>
Answer answer(F&& call) {
    Answer a;
    try {
        a.value = call();
        a.ok = true;
    } catch (const ppb::ModelError& e) {
        a.error = e.what();
    }
    return a;
}

struct Expected {
    std::vector<Answer> predict;
    std::vector<Answer> std_error;
    std::vector<Answer> parts;
    std::vector<Answer> batch;  // predict_batch of all of them, one answer per placement
    std::string batch_error;
    std::optional<ppb_linear_parameters> parameters;
};

std::vector<Answer> batch_answers(const ppb::MemoryModel& model,
                                  const std::vector<ppb_placement>& views, std::string& error) {
    std::vector<Answer> out;
    try {
        for (double v : model.predict_batch(views))
            out.push_back({true, v, {}});
    } catch (const ppb::ModelError& e) {
        error = e.what();
    }
    return out;
}

Answer std_error_answer(const ppb::MemoryModel& model, const ppb_placement& view) {
    Answer a;
    try {
        const auto se = model.predict_std_error(view);
        a.ok = se.has_value();
        a.value = se.value_or(0.0);
        if (!se)
            a.error = "none";
    } catch (const ppb::ModelError& e) {
        a.error = e.what();
    }
    return a;
}

// The terms of a prediction (API 1.4): their sum and names, none, or the error.
Answer parts_answer(const ppb::MemoryModel& model, const ppb_grouped_placement& view) {
    Answer a;
    try {
        const auto parts = model.predict_parts(view);
        a.ok = parts.has_value();
        if (!parts)
            a.error = "none";
        for (const ppb::MemoryPart& part : parts.value_or(std::vector<ppb::MemoryPart>{})) {
            a.value += part.mb;
            a.error += part.name + " ";
        }
    } catch (const ppb::ModelError& e) {
        a.error = e.what();
    }
    return a;
}

bool same_parameters(const std::optional<ppb_linear_parameters>& a,
                     const std::optional<ppb_linear_parameters>& b) {
    if (a.has_value() != b.has_value())
        return false;
    return !a || std::memcmp(&*a, &*b, sizeof(ppb_linear_parameters)) == 0;
}

void hammer(const ppb::MemoryModel& model) {
    const auto owned = placements();
    std::vector<ppb_placement> views;
    for (const auto& p : owned)
        views.push_back(p.view());
    // The same placements as one group of layers, for predict_parts.
    std::vector<std::vector<std::uint32_t>> one_group;
    for (const auto& p : owned) {
        std::vector<std::uint32_t> counts;
        for (const ppb_chunk& c : p.chunks)
            counts.insert(counts.end(), std::begin(c.layers), std::end(c.layers));
        one_group.push_back(std::move(counts));
    }
    std::vector<ppb_grouped_placement> grouped;
    for (std::size_t i = 0; i < views.size(); ++i)
        grouped.push_back(ppb_grouped_placement{views[i], 1, one_group[i].data()});
    // A batch of the placements every call accepts, so that predict_batch has answers to compare.
    std::vector<ppb_placement> accepted;

    Expected expected;
    for (const auto& v : views) {
        expected.predict.push_back(answer([&] { return model.predict(v); }));
        expected.std_error.push_back(std_error_answer(model, v));
        if (expected.predict.back().ok)
            accepted.push_back(v);
    }
    for (const auto& g : grouped)
        expected.parts.push_back(parts_answer(model, g));
    BOOST_TEST_REQUIRE(accepted.size() >= views.size() / 2,
                       model.name() << " accepts too few placements to test anything");
    expected.batch = batch_answers(model, accepted, expected.batch_error);
    BOOST_TEST_REQUIRE(expected.batch.size() == accepted.size(), expected.batch_error);
    std::string all_error;
    const auto all = batch_answers(model, views, all_error);  // fails: some are refused
    expected.parameters = model.parameters();

    std::atomic<unsigned> mismatches{0};
    std::atomic<bool> start{false};
    std::vector<std::string> first_mismatch(thread_count);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < thread_count; ++t) {
        threads.emplace_back([&, t] {
            while (!start.load(std::memory_order_acquire))
                std::this_thread::yield();
            auto miss = [&](const std::string& what) {
                mismatches.fetch_add(1);
                if (first_mismatch[t].empty())
                    first_mismatch[t] = what;
            };
            for (unsigned r = 0; r < rounds; ++r) {
                // Each thread walks the placements from its own offset, mixing the calls.
                for (std::size_t i = 0; i < views.size(); ++i) {
                    const std::size_t j = (i + t * 7 + r) % views.size();
                    switch ((j + t + r) % 5) {
                        case 0:
                        case 1:
                            if (!(answer([&] { return model.predict(views[j]); }) ==
                                  expected.predict[j]))
                                miss("predict of placement " + std::to_string(j));
                            break;
                        case 2:
                            if (!(std_error_answer(model, views[j]) == expected.std_error[j]))
                                miss("predict_std_error of placement " + std::to_string(j));
                            break;
                        case 3:
                            if (!(parts_answer(model, grouped[j]) == expected.parts[j]))
                                miss("predict_parts of placement " + std::to_string(j));
                            break;
                        default:
                            if (!same_parameters(model.parameters(), expected.parameters))
                                miss("parameters");
                            break;
                    }
                }
                std::string error;
                if (!(batch_answers(model, accepted, error) == expected.batch) || !error.empty())
                    miss("predict_batch: " + error);
                std::string refused_error;
                if (!(batch_answers(model, views, refused_error) == all) ||
                    refused_error != all_error)
                    miss("predict_batch of refused placements: " + refused_error);
            }
        });
    }
    start.store(true, std::memory_order_release);
    for (auto& thread : threads)
        thread.join();
    for (const auto& m : first_mismatch) {
        if (!m.empty())
            BOOST_TEST_MESSAGE(model.name() << ": " << m);
    }
    BOOST_TEST(mismatches.load() == 0U, model.name() << ": " << mismatches.load()
                                                     << " answers differ from the single-threaded "
                                                        "ones");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(threads)

BOOST_AUTO_TEST_CASE(dryrun_lsq_fitted) {
    auto model = open("ppb-dryrun-lsq-1.0.0.so", "{}");
    const auto set = ppb::read_dryrun_file(samples_dir / "llama70b-pp8-dryrun.json");
    const auto observations = ppb::views(set.observations);
    model.fit(observations);
    hammer(model);
}

BOOST_AUTO_TEST_CASE(table) {
    auto model = open("ppb-table-1.0.0.so", read_text(samples_dir / "llama70b-layers.json"));
    hammer(model);
}

BOOST_AUTO_TEST_CASE(analytic) {
    auto model = open("ppb-analytic-1.0.0.so", read_text(samples_dir / "llama70b-shape.json"));
    hammer(model);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// A search over configurations of `layers` with memory from `model` (ppb::partition::run_search),
// on eight threads and on one: every outcome the same, in the same order. Linear models are read
// through their coefficients; the analytic model is probed through predict_batch (one group) or
// predict_grouped_batch (dense + MoE) from every thread at once.
void search_on_threads(const ppb::MemoryModel& model, const fs::path& layers, std::uint32_t devices,
                       std::uint32_t tensor_parallel, std::uint64_t global_batch, double limit_mb,
                       bool chunked) {
    using namespace ppb::partition;
    Problem base;
    base.time = read_time_model(layers);
    base.memory_limit_mb = limit_mb;
    const MemorySource memory = model_memory_source(base, model);
    SearchSpace space;
    space.devices = devices;
    space.tensor_parallel = tensor_parallel;
    space.global_batch = global_batch;
    space.schedules = {{ppb::Schedule::one_f_one_b, 1}};
    if (chunked) {
        space.schedules.push_back({ppb::Schedule::interleaved, 2});
        space.schedules.push_back({ppb::Schedule::dualpipe_v, 2});
    }
    space.recompute = {recompute_policy("any"), recompute_policy("full"),
                       recompute_policy("none+select")};
    const SearchPlan plan = search_configurations(space, base.time);
    const auto plan_one = [&](const Configuration& c) {
        return plan_configuration(base, c, memory);
    };
    const SearchResult one = run_search(plan.configurations, plan_one, {.jobs = 1});
    const SearchResult eight = run_search(plan.configurations, plan_one, {.jobs = thread_count});
    BOOST_TEST_REQUIRE(one.outcomes.size() == plan.configurations.size());
    BOOST_TEST_REQUIRE(eight.outcomes.size() == plan.configurations.size());
    std::size_t planned = 0;
    for (std::size_t i = 0; i < one.outcomes.size(); ++i) {
        const SearchOutcome& a = one.outcomes[i];
        const SearchOutcome& b = eight.outcomes[i];
        BOOST_TEST((a.status == b.status), describe(a.configuration));
        BOOST_TEST(a.message == b.message);
        if (a.status != SearchOutcome::Status::planned || b.status != a.status)
            continue;
        ++planned;
        BOOST_TEST(std::memcmp(&a.planned->simulation.makespan, &b.planned->simulation.makespan,
                               sizeof(double)) == 0);
        for (std::size_t s = 0; s < a.planned->plan.stages.size(); ++s) {
            const auto& x = a.planned->plan.stages[s];
            const auto& y = b.planned->plan.stages[s];
            BOOST_TEST((x.layers == y.layers && x.group_layers == y.group_layers));
            BOOST_TEST(std::memcmp(&x.memory_mb, &y.memory_mb, sizeof(double)) == 0);
        }
    }
    BOOST_TEST(planned >= 2u, model.name() << ": too few configurations fit to test anything");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(search_threads)

BOOST_AUTO_TEST_CASE(dryrun_lsq_fitted_coefficients) {
    auto model = open("ppb-dryrun-lsq-1.0.0.so", "{}");
    const auto set = ppb::read_dryrun_file(samples_dir / "llama70b-pp8-dryrun.json");
    const auto observations = ppb::views(set.observations);
    model.fit(observations);
    search_on_threads(model, samples_dir / "llama70b-layers.json", 256, 8, 512, 40000.0, true);
}

BOOST_AUTO_TEST_CASE(analytic_probed) {
    auto model = open("ppb-analytic-1.0.0.so", read_text(samples_dir / "llama70b-shape.json"));
    search_on_threads(model, samples_dir / "llama70b-layers.json", 256, 8, 512, 60000.0, true);
}

BOOST_AUTO_TEST_CASE(analytic_moe_probed_by_group) {
    auto model =
        open("ppb-analytic-1.0.0.so", read_text(samples_dir / "moe" / "deepseek-v3-shape.json"));
    search_on_threads(model, samples_dir / "moe" / "deepseek-v3-layers.json", 1024, 1, 4096,
                      76000.0, false);
}

BOOST_AUTO_TEST_SUITE_END()
