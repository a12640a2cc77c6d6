// Issue 38's measure: where `ppb search` ranks the configuration experts chose. For each dense
// published run the time model times (tests/data/tuned/published.json; tests/common/
// published_runs.hpp), `ppb search` runs on the run's model, devices, GPU count, global batch
// and sequence, over TP 1, 2, 4, 8 (those that divide the heads), CP 1, 2 and the run's, MBS 1, 2
// and the run's, 1F1B and interleaved with 2 chunks and the run's, no recompute (as the
// performance recipes run), the run's data-parallel sharding (Megatron-FSDP's where it used
// it), with the recipes' overlaps (--tp-comm-overlap --overlap-grad-reduce
// --overlap-param-gather, the last where the distributed optimizer gathers the weights). The
// published configuration must rank among the first three, but the runs named below with what
// we know of why; the list is kept exact, so that it stays true. The twenty MoE runs are searched
// the same way, with expert parallelism (the second case): where their configurations rank is
// kept exact too.
// The sanitizer builds do not run this suite (tests/cli/CMakeLists.txt): it is 51 searches of
// the whole space, and its code paths are the ones cli_search runs there.
#include "../common/published_runs.hpp"
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cli_published_tests {

namespace json = boost::json;
using namespace ppb_test;
using published::count;

namespace {

std::string joined(const std::set<std::uint32_t>& values) {
    std::string out;
    for (const std::uint32_t v : values)
        out += (out.empty() ? "" : ",") + std::to_string(v);
    return out;
}

// Dense runs whose published configuration ppb does not rank among its first three, and what
// we know of why (the measured places are in the test's message).
const std::map<std::string, std::string> open_ranks = {
    {"llama2_13b H100 fp8 16 TP1 PP4 VP10 CP1 MBS1",
     "6th: ppb prefers two stages (+4.7 %); at 4 stages the last of the 40 one-layer chunks "
     "also holds the LM head and the loss"},
    {"nemotron3_22b H100 fp8 64 TP2 PP4 VP10 CP1 MBS2",
     "84th: the recipe's last stage also runs the 16-bit LM head and the loss of 256 000 words "
     "(about 6 layers' work a micro-batch), which one-layer chunks cannot offset: with "
     "Megatron-LM's even split, as the recipe ran, the simulated iteration waits for that stage; "
     "two stages of 2 chunks at TP 2 are 38 % faster in ppb"},
    {"nemotron4_340b H100 fp8 128 TP8 PP8 VP12 CP1 MBS1",
     "does not fit without recompute in the analytic model (87.7 GB, over the 79 779.6 MB an "
     "H100's allocator can reserve); the NeMo 1.0 "
     "configuration of the model (NeMo-Framework-Launcher, launcher_scripts/conf/training/"
     "nemotron/nemotron_340b.yaml at 26e42fa9) recomputes selectively "
     "(activations_checkpoint_granularity: selective), which this search, without recompute, "
     "leaves out"},
    {"llama31_405b GB200 fp8 256 TP4 PP16 VP4 CP1 MBS1",
     "4th: ppb's own plan of it is timed 9.3 % under the published throughput (765 of 843 "
     "tokens/s/GPU), Megatron-LM's even layout 8.0 % under (tests/partition, tuned); ppb "
     "prefers TP 2 on 32 stages with CP 2 (+0.9 %)"},
    {"llama3_70b GB200 fp8-mx 64 TP2 PP4 VP5 CP1 MBS1",
     "10th: ppb prefers 2 stages of 5 chunks at TP 2 (+2.9 %)"},
    {"llama3_70b GB200 fp8 64 TP1 PP1 VP1 CP1 MBS2",
     "does not fit by 3.8 % in the analytic model (194 557 MB of the 187 504.4 MB a GB200's "
     "allocator can reserve, 1.8 times its standard error of 3 891 MB), with the recipe's CPU "
     "offloading of 40 of the 80 layers' "
     "activations (cpu_offloading_num_layers = 40: NVIDIA-NeMo/Megatron-Bridge, src/megatron/"
     "bridge/perf_recipes/llama/gb200/llama3.py at 067f987df) and Megatron-FSDP's sharded FP8 "
     "weights counted (482 817 MB with neither); ppb's first is the same configuration with "
     "micro-batches of 1"},
    {"llama31_405b GB300 fp8 256 TP4 PP8 VP4 CP1 MBS1",
     "11th: ppb prefers TP 2 with CP 2 on the same 8 stages of 4 chunks (+3.5 %), the "
     "configuration the same table's MXFP8 run on GB300 chose; ppb's plan of the published one "
     "is timed 10.6 % under its throughput (937 of 1 048 tokens/s/GPU)"},
    {"llama3_70b H100 fp8 64 TP4 PP8 VP5 CP1 MBS1",
     "15th: ppb prefers CP 2 on two stages (+5.5 %); the same recipe runs CP 2 on four stages at "
     "GBS 128; ppb's plan of the published configuration is timed 10.3 % under its throughput"},
};

// The MoE runs whose configuration ppb does not rank among its first three, and what we know of
// why. The common cause: the experts' work is timed at the dense layers' efficiency (Qwen3 is
// predicted 0.95 to 1.9 times as fast as it ran: tests/partition, tuned), so the all-to-all
// weighs more against it than it did, and fewer expert-parallel ranks look faster. The MoE runs
// are searched with Megatron-LM's combined 1F1B too (--overlap-moe-expert-parallel-comm, which
// Megatron-Bridge's recipes at 067f987df set for DeepSeek-V3, Qwen3-30B on 8 B200s and Qwen3 on
// H100); the tables do not say which ran, so a run's configuration is either schedule, whichever
// ranks first.
const std::map<std::string, std::string> open_moe_ranks = {
    {"deepseek_v3 B200 fp8-mx 256 TP1 PP8 VP2 CP1 EP32 MBS1",
     "8th: timed within 0.5 % of the published throughput with the combined 1F1B (3 316 of "
     "3 328; 23 % under without it); ppb prefers EP 16 with it (+28.8 %), its all-to-all over two "
     "nodes where EP 32 crosses four"},
    {"deepseek_v3 H100 fp8 1024 TP2 PP8 VP4 CP1 EP64 MBS1",
     "27th: timed 3.5 % over with the combined 1F1B (1 343 of 1 297); ppb prefers TP 4 and EP 32 "
     "with it on 8 stages of 2 chunks (+16.0 %)"},
    {"qwen3_235b_a22b B200 fp8-mx 256 TP1 PP8 VP1 CP1 EP8 MBS1",
     "25th: predicted 1.9 times the published throughput (7 199 of 3 776); ppb prefers EP 4 on 4 "
     "stages of 2 chunks with the combined 1F1B (+16.6 %)"},
    {"qwen3_235b_a22b GB200 bf16 256 TP1 PP8 VP3 CP1 EP32 MBS1",
     "17th: predicted 7 % over with the combined 1F1B (5 241 of 4 916); ppb prefers one stage "
     "with EP 32 and it (+2.1 %)"},
    {"qwen3_235b_a22b GB200 fp8-mx 256 TP1 PP8 VP3 CP1 EP32 MBS1",
     "71st: predicted 7 % over (7 776 of 7 280); ppb prefers one stage with EP 16 and the "
     "combined 1F1B (+21.7 %)"},
    {"qwen3_235b_a22b H100 fp8 256 TP2 PP8 VP4 CP1 EP32 MBS1",
     "26th: predicted 30 % over with the combined 1F1B (2 225 of 1 712); ppb prefers 4 stages "
     "with EP 16 and it (+22.3 %); the recipe (NVIDIA-NeMo/Megatron-Bridge, "
     "src/megatron/bridge/perf_recipes/qwen/h100/qwen3_moe.py at 067f987df) also overlaps the "
     "weight gradients' pass with the next and runs without tensor-parallel overlap, which this "
     "search does not model"},
    {"deepseek_v3 B300 fp8-mx 256 TP1 PP8 VP1 CP1 EP8 MBS2",
     "19th: predicted 25 % over (4 428 of 3 541); ppb prefers EP 16 on 2 stages of 2 chunks "
     "with micro-batches of 1 and the combined 1F1B (+14.4 %)"},
    {"kimi_k2 GB300 fp8-mx 256 TP1 PP4 VP4 CP1 EP64 MBS2",
     "7th: predicted 63 % over (8 730 of 5 372); its recipe runs without CUDA graphs "
     "(perf_recipes/kimi/gb300/kimi_k2.py at 067f987df: cuda_graph_scope = []) where "
     "DeepSeek-V3's on GB300, predicted 0.4 % over, captures the whole iteration "
     "(cuda_graph_impl = \"full_iteration\"), which the time model does not tell apart; ppb "
     "prefers EP 128 on 2 stages of 4 chunks with the combined 1F1B (+5.2 %)"},
    {"qwen3_235b_a22b B300 fp8-mx 256 TP1 PP8 VP1 CP1 EP8 MBS2",
     "48th: predicted 30 % over (7 735 of 5 936), as on B200; ppb prefers EP 4 on 4 stages of 2 "
     "chunks with the combined 1F1B (+20.7 %)"},
    {"qwen3_235b_a22b GB300 bf16 256 TP1 PP4 VP12 CP1 EP16 MBS2",
     "23rd: predicted 13 % under (5 309 of 6 131), the 16-bit products at the default "
     "achievable fraction (no dense 16-bit run calibrates it); ppb prefers EP 8 on 2 stages of "
     "12 chunks with the combined 1F1B (+4.3 %)"},
    {"qwen3_235b_a22b GB300 fp8-mx 256 TP1 PP4 VP12 CP1 EP32 MBS2",
     "23rd: ppb's plan of it is predicted 19 % over (10 495 of 8 816; Megatron-LM's even layout "
     "9.2 % over: tests/partition, tuned); ppb prefers one stage with EP 16 and the combined 1F1B "
     "(+10.4 %)"},
    {"qwen3_30b_a3b H100 fp8 16 TP1 PP1 VP1 CP1 EP16 MBS1",
     "7th of 12: predicted 2.1 times as fast with the combined 1F1B (18 669 of 8 826); ppb "
     "prefers EP 8 on 2 stages of 2 chunks with it and micro-batches of 2 (+10.4 %)"},
};

// Where `ppb search` places `run`'s configuration among the configurations of its model, device
// and GPU count over tensor-parallel degrees `tps` and expert-parallel degrees `eps` (none for a
// dense model), and the row of the table people read.
struct Placed {
    std::string name;
    std::optional<std::size_t> place;
    std::string row;
};

Placed place_of(const json::object& model, const json::object& run,
                const std::set<std::uint32_t>& tps, const std::set<std::uint32_t>& cps,
                const std::set<std::uint32_t>& eps) {
    const std::uint32_t tp = count(run, "tp", 1);
    const std::uint32_t pp = count(run, "pp", 1);
    const std::uint32_t vp = count(run, "vp", 1);
    const std::uint32_t cp = count(run, "cp", 1);
    const std::uint32_t ep = count(run, "ep", 1);
    const std::uint32_t mbs = count(run, "micro_batch", 1);
    const std::string precision(run.at("precision").as_string());
    Placed out;
    out.name = fmt::format(
        "{} {} {} {} TP{} PP{} VP{} CP{} {}MBS{}", std::string(run.at("model").as_string()),
        std::string(run.at("hardware").as_string()), precision, count(run, "gpus", 1), tp, pp, vp,
        cp, eps.empty() ? std::string() : fmt::format("EP{} ", ep), mbs);
    std::set<std::uint32_t> chunks{2, vp};
    chunks.erase(1);
    const std::string shape_json = published::shape_of(model, run);
    const std::string shape = write_file(shape_json, "published.json");
    const std::string cluster = write_file(
        fmt::format(R"({{"format": "ppb.cluster/1", "device": "{}", "precision": "{}"}})",
                    std::string(run.at("hardware").as_string()),
                    precision == "bf16" ? "bf16" : "fp8"),
        "published-cluster.json");
    std::vector<std::string> args = {
        "search",
        "--model",
        "analytic",
        "--model-options",
        shape,
        "--devices",
        std::to_string(count(run, "gpus", 1)),
        "--global-batch",
        std::to_string(count(run, "global_batch", 1)),
        "--cluster",
        cluster,
        "--tp-comm-overlap",
        "--overlap-grad-reduce",
        "--tensor-parallel",
        joined(tps),
        "--context-parallel",
        joined(cps),
        "--micro-batch-size",
        joined({1, 2, mbs}),
        "--schedules",
        eps.empty() ? "1f1b,interleaved" : "1f1b,interleaved,combined-1f1b",
        "--chunks",
        joined(chunks),
        "--recompute",
        "none",
        "--top",
        "0",
        "--json",
        "--progress",
        "never"};
    // The weights are gathered by the distributed optimizer only (a recipe without it, Kimi-K2's
    // Muon, does not overlap a gather it does not make).
    if (parse_json(shape_json).at("distributed_optimizer").as_bool())
        args.emplace_back("--overlap-param-gather");
    if (!eps.empty()) {
        args.emplace_back("--expert-parallel");
        args.push_back(joined(eps));
    }
    const auto r = ppb_test::ppb(args);  // the command (::ppb is the library's namespace)
    BOOST_TEST_REQUIRE(r.exit_code == 0, out.name << ": " << r.err);
    const json::value doc = parse_json(r.out);
    const json::array& ranking = doc.at("ranking").as_array();
    double predicted = 0.0;
    // The tables do not say whether a run overlapped the expert all-to-all (Megatron-LM's
    // combined 1F1B): an MoE run's configuration is either schedule with its chunks, whichever
    // ranks first.
    for (const json::value& e : ranking) {
        if (out.place)
            break;
        const std::string_view name = e.at("schedule").as_string();
        const auto v = e.at("chunks").to_number<std::uint32_t>();
        const bool combined = !eps.empty() && name == "combined-1f1b" && v == vp;
        const bool schedule =
            combined || (vp == 1 ? name == "1f1b" : name == "interleaved" && v == vp);
        const json::value* expert = e.as_object().if_contains("expert_parallel");
        if (schedule && e.at("pipeline_parallel").to_number<std::uint32_t>() == pp &&
            e.at("tensor_parallel").to_number<std::uint32_t>() == tp &&
            e.at("context_parallel").to_number<std::uint32_t>() == cp &&
            e.at("micro_batch_size").to_number<std::uint32_t>() == mbs &&
            (eps.empty() || (expert != nullptr && expert->to_number<std::uint32_t>() == ep))) {
            out.place = e.at("rank").to_number<std::size_t>();
            predicted = e.at("tokens_per_second_per_device").to_number<double>();
        }
    }
    // What ranks first, and how much faster ppb finds it than the published configuration.
    std::string first;
    if (!ranking.empty()) {
        const json::value& e = ranking.front();
        const double best = e.at("tokens_per_second_per_device").to_number<double>();
        const json::value* expert = e.as_object().if_contains("expert_parallel");
        first = fmt::format(
            "TP{} PP{} CP{} {}MBS{} {}{}{}", e.at("tensor_parallel").to_number<std::uint32_t>(),
            e.at("pipeline_parallel").to_number<std::uint32_t>(),
            e.at("context_parallel").to_number<std::uint32_t>(),
            expert != nullptr ? fmt::format("EP{} ", expert->to_number<std::uint32_t>())
                              : std::string(),
            e.at("micro_batch_size").to_number<std::uint32_t>(),
            std::string(e.at("schedule").as_string()),
            e.at("chunks").to_number<std::uint32_t>() > 1
                ? fmt::format(" v={}", e.at("chunks").to_number<std::uint32_t>())
                : std::string(),
            predicted > 0.0 ? fmt::format(" (+{:.1f} %)", 100.0 * (best / predicted - 1.0))
                            : std::string());
    }
    out.row = fmt::format("| {} | {} | {} | {:.0f} | {:.0f} | {} |\n", out.name,
                          out.place ? std::to_string(*out.place) : "does not fit", ranking.size(),
                          predicted, published::number(run.at("tokens_per_sec_per_gpu")), first);
    return out;
}

// The places of a suite's runs: each checked against its open list, the table for people.
struct Tally {
    const std::map<std::string, std::string>& open;
    std::string table =
        "| run | place | of | predicted tok/s/GPU | published | ppb's first |\n"
        "|---|---|---|---|---|---|\n";
    std::size_t searched = 0;
    std::size_t first_three = 0;

    void add(const Placed& placed) {
        ++searched;
        const bool among_three = placed.place && *placed.place <= 3;
        first_three += among_three ? 1 : 0;
        table += placed.row;
        BOOST_TEST(among_three == !open.contains(placed.name),
                   placed.name << ": place "
                               << (placed.place ? std::to_string(*placed.place) : "none")
                               << " (listed as open: " << open.contains(placed.name) << ")");
    }
    void check(std::size_t runs, std::string_view what) const {
        BOOST_TEST_MESSAGE(table << "\n"
                                 << first_three << " of " << searched << " published " << what
                                 << " among ppb's first three");
        BOOST_TEST(searched == runs);
        BOOST_TEST(first_three == searched - open.size());
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_published)

BOOST_AUTO_TEST_CASE(published_configurations_rank_among_the_first_three_but_the_open_ones) {
    const auto models = published::models();
    Tally tally{open_ranks};
    for (const json::value& v : published::document().at("runs").as_array()) {
        const json::object& run = v.as_object();
        const json::object& model = *models.at(std::string(run.at("model").as_string()));
        if (!model.at("moe").is_null() || !published::not_covered(model, run).empty())
            continue;
        std::set<std::uint32_t> tps;
        for (const std::uint32_t t : {1u, 2u, 4u, 8u}) {
            if (count(model, "num_attention_heads", 1) % t == 0 &&
                count(model, "num_kv_heads", 1) % t == 0)
                tps.insert(t);
        }
        tally.add(place_of(model, run, tps, {1, 2, count(run, "cp", 1)}, {}));
    }
    tally.check(31, "configurations");
}

// The MoE runs the time model times, searched the same way over TP 1, 2, 4 (those that divide
// the heads), CP 1 and the run's, and EP at half, once and twice the run's (those that divide the
// experts): where their configurations rank today, the places exact (the MoE layers' time is not
// calibrated: host_api/docs/cluster.md).
BOOST_AUTO_TEST_CASE(published_moe_configurations_rank_where_the_open_list_says) {
    const auto models = published::models();
    Tally tally{open_moe_ranks};
    for (const json::value& v : published::document().at("runs").as_array()) {
        const json::object& run = v.as_object();
        const json::object& model = *models.at(std::string(run.at("model").as_string()));
        if (model.at("moe").is_null() || !published::not_covered(model, run).empty())
            continue;
        std::set<std::uint32_t> tps;
        for (const std::uint32_t t : {1u, 2u, 4u}) {
            if (count(model, "num_attention_heads", 1) % t == 0 &&
                (model.at("mla").is_object() || count(model, "num_kv_heads", 1) % t == 0))
                tps.insert(t);
        }
        const std::uint32_t experts = count(model.at("moe").as_object(), "num_experts", 1);
        const std::uint32_t ep = count(run, "ep", 1);
        std::set<std::uint32_t> eps;
        for (const std::uint32_t e : {ep / 2, ep, 2 * ep}) {
            if (e >= 1 && experts % e == 0 && e <= count(run, "gpus", 1))
                eps.insert(e);
        }
        tally.add(place_of(model, run, tps, {1, count(run, "cp", 1)}, eps));
    }
    tally.check(20, "MoE configurations");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_published_tests
