// The time model against published, measured throughputs of expert-tuned configurations
// (tests/data/tuned/published.json: NeMo's and Megatron-Bridge's performance summaries and
// torchtitan's benchmarks, each row with its repository, path and commit). Each configuration
// (TP, PP, VP, EP, micro- and global batch, sequence, precision) is timed as `ppb search` times
// it on the device of the table: the layers' FLOPs at the device's peak x its achievable
// fraction, their collectives, the transfers between stages and the data-parallel
// synchronisation, overlapped as NeMo's and Megatron-Bridge's performance recipes overlap them
// (tp_comm_overlap, overlap_grad_reduce and overlap_param_gather on: e.g. Megatron-Bridge's
// scripts/performance configs, NeMo's MegatronCommOverlapCallback in its perf scripts), in
// Megatron-LM's even layout the run used (L / (P V) layers a chunk; planned by ppb without a
// memory limit where the layers do not divide evenly or form several groups). The ratio of the
// published tokens per second per GPU to the predicted one is the error; the achievable fraction of
// each device and precision in the device table is the one that makes the median ratio 1
// (calibrated once per device type and precision, not per case). Rows the time model does not cover
// yet are named with why. ctest -R tuned -V prints the table.
#include "../common/published_runs.hpp"

#include <ppb/partition/cluster.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/search.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/simulator.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace json = boost::json;
using namespace ppb::partition;

namespace tuned_tests {

namespace {

struct Row {
    std::string name;         // "llama3_70b H100 fp8 64 GPUs TP4 PP4 VP5"
    std::string device;       // "H100"
    std::string precision;    // "bf16" or "fp8"
    std::string not_covered;  // why the time model does not time it (empty: timed)
    double published = 0.0;   // tokens per second per GPU
    double predicted = 0.0;
    bool moe = false;
};

using ppb_test::published::count;
using ppb_test::published::not_covered;
using ppb_test::published::number;
using ppb_test::published::shape_of;

// The iteration of configuration `c` of `base` with Megatron-LM's even layout (every chunk the
// same number of body layers, the ends on the first and the last chunk), as `ppb search` times a
// plan: simulated with the transfers between stages, then the exposed synchronisation with the
// recipes' overlaps.
double even_layout_iteration_ms(const Problem& base, const Configuration& c,
                                const ShapeSizes& sizes, const Cluster& cluster) {
    Problem problem = base;
    problem.time = with_sharded_transfers(base.time, sizes, cluster, {c.pipeline, c.data_parallel});
    problem.num_stages = c.pipeline;
    problem.micro_batches = c.micro_batches;
    problem.schedule = c.schedule.schedule;
    problem.chunks = c.schedule.chunks;
    const TimeModel& time = problem.time;
    const std::uint32_t per_chunk = time.body_layers / (c.pipeline * c.schedule.chunks);
    ppb::SimulationInput input;
    input.schedule = problem.schedule;
    input.num_stages = c.pipeline;
    input.num_chunks = c.schedule.chunks;
    input.micro_batches = c.micro_batches;
    input.comm_time =
        pipeline_transfer_ms(sizes, cluster, {c.pipeline, c.data_parallel}, problem.schedule);
    Plan plan;
    for (std::uint32_t s = 0; s < c.pipeline; ++s) {
        StagePlan stage;
        stage.stage = s;
        stage.layers[PPB_KIND_NONE] = per_chunk * c.schedule.chunks;
        input.costs.emplace_back();
        for (std::uint32_t k = 0; k < c.schedule.chunks; ++k) {
            const ChunkEnds ends = chunk_ends(problem, s, k);
            ChunkPlan chunk;
            chunk.chunk = k;
            chunk.layers[PPB_KIND_NONE] = per_chunk;
            chunk.forward_time = per_chunk * time.body_forward +
                                 (ends.head ? time.head_forward : 0.0) +
                                 (ends.tail ? time.tail_forward : 0.0);
            chunk.backward_time = per_chunk * (time.body_time[PPB_KIND_NONE] - time.body_forward) +
                                  (ends.head ? time.head_time - time.head_forward : 0.0) +
                                  (ends.tail ? time.tail_time - time.tail_forward : 0.0);
            input.costs.back().push_back(ppb::ChunkCost{chunk.forward_time, chunk.backward_time});
            stage.chunks.push_back(chunk);
        }
        plan.stages.push_back(std::move(stage));
    }
    const double makespan = ppb::simulate(input).makespan;
    return makespan + data_parallel_sync_ms(sizes, cluster, {c.pipeline, c.data_parallel}, time,
                                            plan, SyncOverlap{true, true});
}

// The predicted tokens per second per GPU of `run`, or a reason it cannot be planned.
double predict(const json::object& model, const json::object& run, const Cluster& cluster,
               std::string& why) {
    const std::string shape = shape_of(model, run);
    const std::uint32_t gpus = count(run, "gpus", 1);
    const std::uint32_t tp = count(run, "tp", 1);
    const std::uint32_t pp = count(run, "pp", 1);
    const std::uint32_t vp = count(run, "vp", 1);
    const std::uint32_t cp = count(run, "cp", 1);
    const std::uint32_t dp = gpus / (tp * pp * cp);
    const std::uint32_t mbs = count(run, "micro_batch", 1);
    const std::uint32_t gbs = count(run, "global_batch", 1);
    const double seq = number(run.at("seq_length"));
    if (dp == 0 || gbs % (mbs * dp) != 0) {
        why = "the global batch is not a whole number of micro-batches per replica";
        return 0.0;
    }
    Problem base;
    base.memory_limit_mb = 1e12;
    base.time = time_model_from_shape(shape, "published.json",
                                      ShapeTimeSettings{cluster.achieved_tflops(), cluster, true});
    // Time only: a memory model of nothing, every term identified (the published run fitted).
    ppb_linear_parameters nothing{};
    nothing.struct_size = sizeof nothing;
    nothing.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
    for (std::uint32_t k = 0; k < PPB_KIND_COUNT; ++k)
        nothing.identified |= PPB_PARAM_ACTIVATION(k);
    MemorySource memory;
    memory.kinds = 1u << PPB_KIND_NONE;
    if (base.time.grouped())
        memory.group_linear.assign(base.time.groups.size(), nothing);
    else
        memory.linear = nothing;
    Configuration c;
    c.pipeline = pp;
    c.data_parallel = dp;
    c.micro_batches = gbs / (mbs * dp);
    c.schedule = vp > 1 ? ScheduleChoice{ppb::Schedule::interleaved, vp} : ScheduleChoice{};
    c.recompute = RecomputePolicy{"none", 1u << PPB_KIND_NONE};
    const ShapeSizes sizes = shape_sizes(shape, "published.json");
    const std::uint32_t layers = count(model, "num_layers", 1);
    if (!base.time.grouped() && layers % (pp * vp) == 0) {
        // Megatron-LM's own layout, which the run used: L / (P V) layers in every chunk.
        return gbs * seq / (even_layout_iteration_ms(base, c, sizes, cluster) / 1e3) / gpus;
    }
    const SearchOutcome out = plan_with_communication(
        sizes, cluster, SyncOverlap{true, true}, base, c,
        [&](const Problem& problem, const Configuration& configuration,
            const AddedToIteration& added) {
            return plan_configuration(problem, configuration, memory, true, true, nullptr, added);
        });
    if (!out.planned) {
        why = out.message;
        return 0.0;
    }
    return gbs * seq / (out.iteration_time() / 1e3) / gpus;
}

// Every published run, timed at the device table's achievable fraction, or, when `device` is
// given, only the dense runs on `device` at `precision`, at `fraction` (what calibration reads).
std::vector<Row> evaluate(const std::string& device = "", const std::string& precision = "",
                          double fraction = 0.0) {
    const std::map<std::string, const json::object*> models = ppb_test::published::models();
    std::vector<Row> rows;
    for (const json::value& v : ppb_test::published::document().at("runs").as_array()) {
        const json::object& run = v.as_object();
        const json::object& model = *models.at(std::string(run.at("model").as_string()));
        Row row;
        row.device = std::string(run.at("hardware").as_string());
        const std::string published_precision(run.at("precision").as_string());
        row.precision = published_precision.starts_with("fp8") ? "fp8" : "bf16";
        row.published = number(run.at("tokens_per_sec_per_gpu"));
        row.name =
            fmt::format("{} {} {} {} GPUs TP{} PP{}{}{}{} GBS {} MBS {}",
                        std::string(run.at("model").as_string()), row.device, published_precision,
                        count(run, "gpus", 1), count(run, "tp", 1), count(run, "pp", 1),
                        count(run, "vp", 1) > 1 ? fmt::format(" VP{}", count(run, "vp", 1)) : "",
                        count(run, "cp", 1) > 1 ? fmt::format(" CP{}", count(run, "cp", 1)) : "",
                        count(run, "ep", 1) > 1 ? fmt::format(" EP{}", count(run, "ep", 1)) : "",
                        count(run, "global_batch", 0), count(run, "micro_batch", 0));
        row.not_covered = not_covered(model, run);
        row.moe = !model.at("moe").is_null();
        if (!device.empty() && (row.device != device || row.precision != precision || row.moe))
            continue;
        if (row.not_covered.empty()) {
            Cluster cluster = cluster_of_device(row.device);
            cluster.precision =
                row.precision == "fp8" ? MatrixPrecision::fp8 : MatrixPrecision::bf16;
            cluster.achievable_fraction =
                fraction > 0.0 ? fraction : achievable_fraction(cluster.device, cluster.precision);
            row.predicted = predict(model, run, cluster, row.not_covered);
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

// Every run at the table's fractions, evaluated once for the test cases that read them.
const std::vector<Row>& all_rows() {
    static const std::vector<Row> rows = evaluate();
    return rows;
}

double median(std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    const std::size_t n = xs.size();
    return n % 2 == 1 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

// The median of published / predicted over the dense runs of `rows` that are timed (MoE layers'
// efficiency is not calibrated: see the file's header); none when there are none.
std::optional<double> median_ratio(const std::vector<Row>& rows) {
    std::vector<double> ratios;
    for (const Row& r : rows) {
        if (r.not_covered.empty() && !r.moe)
            ratios.push_back(r.published / r.predicted);
    }
    if (ratios.empty())
        return std::nullopt;
    return median(ratios);
}

// The fraction of `device` at `precision` that makes the median ratio 1, by bisection (the
// predicted throughput grows with the fraction).
double calibrated_fraction(const std::string& device, const std::string& precision) {
    double low = 0.05;
    double high = 1.0;
    for (int i = 0; i < 16; ++i) {
        const double mid = 0.5 * (low + high);
        (*median_ratio(evaluate(device, precision, mid)) > 1.0 ? low : high) = mid;
    }
    return 0.5 * (low + high);
}

// Timed dense runs more than 15 % off at the calibrated fractions, and what we think the time
// model misses there: kept exact, so that the list stays true.
const std::map<std::string, std::string> open_gaps = {
    {"llama3_70b H100 fp8 64 GPUs TP4 PP8 VP5 GBS 256 MBS 1",
     "under: Megatron-LM's even layout gives each of the 40 chunks 2 layers, and the last one the "
     "16-bit LM head of 128 256 words and the loss too, about 2 layers' work more: the "
     "simulated iteration waits for that chunk (ppb's own plan of the configuration is 10.3 % "
     "under); the same recipe at GBS 128 with CP 2 on 4 stages is -3.8 %"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(tuned)

// The table of every run, for people (--run_test=tuned/report --log_level=message); it asserts
// nothing, so it runs only when named.
BOOST_AUTO_TEST_CASE(report, *boost::unit_test::disabled()) {
    const std::vector<Row>& rows = all_rows();
    std::string table =
        "| configuration | published tok/s/GPU | predicted | error |\n|---|---|---|---|\n";
    std::vector<double> errors;
    for (const Row& r : rows) {
        if (!r.not_covered.empty()) {
            table += fmt::format("| {} | {:.0f} | not timed: {} | |\n", r.name, r.published,
                                 r.not_covered);
            continue;
        }
        const double error = r.predicted / r.published - 1.0;
        if (!r.moe)
            errors.push_back(std::abs(error));
        table += fmt::format("| {}{} | {:.0f} | {:.0f} | {:+.1f} % |\n", r.name,
                             r.moe ? " (MoE)" : "", r.published, r.predicted, 100.0 * error);
    }
    table += fmt::format(
        "\n{} runs, {} timed, {} of them dense: median |error| {:.1f} %\n", rows.size(),
        std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.not_covered.empty(); }),
        errors.size(), 100.0 * median(errors));
    BOOST_TEST_MESSAGE(table);
}

// The device table's achievable fractions are the ones the published dense runs give.
BOOST_AUTO_TEST_CASE(the_table_fractions_are_calibrated_on_the_published_runs) {
    for (const auto& [device, precision] : {std::pair<std::string, std::string>{"H100", "fp8"},
                                            {"B200", "fp8"},
                                            {"GB200", "fp8"},
                                            {"GB300", "fp8"}}) {
        const double calibrated = calibrated_fraction(device, precision);
        const double table =
            achievable_fraction(device_named(device),
                                precision == "fp8" ? MatrixPrecision::fp8 : MatrixPrecision::bf16);
        BOOST_TEST_MESSAGE(device << " " << precision << ": calibrated " << calibrated << ", table "
                                  << table);
        BOOST_TEST(std::abs(table - calibrated) <= 0.005,
                   device << " " << precision << ": the table's " << table
                          << " is not the calibrated " << calibrated);
    }
}

// Every timed dense run within 15 % of its published throughput, but the open gaps, named.
BOOST_AUTO_TEST_CASE(dense_runs_are_predicted_within_15_percent_but_the_open_gaps) {
    std::size_t timed = 0;
    for (const Row& r : all_rows()) {
        if (!r.not_covered.empty() || r.moe)
            continue;
        ++timed;
        const double error = r.predicted / r.published - 1.0;
        const bool open = open_gaps.contains(r.name);
        BOOST_TEST((std::abs(error) > 0.15) == open,
                   r.name << ": " << 100.0 * error << " % (listed as an open gap: " << open << ")");
    }
    BOOST_TEST(timed == 31u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tuned_tests
