// The measured points of tests/data/real, read and checked, and the placement of their measured
// stage (see real_points.hpp).
#include "real_points.hpp"

#include <ppb/importers/layout.hpp>
#include <ppb/importers/megatron.hpp>
#include <ppb/kinds.hpp>
#include <ppb/schedule.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace real_points {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace imp = ::ppb::importers;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The value at `key` of `object`, which must be there with the type `is` accepts.
const json::value& field(const json::object& object, const std::string& key, const std::string& at,
                         bool (json::value::*is)() const noexcept) {
    const json::value* value = object.if_contains(key);
    BOOST_TEST_REQUIRE((value != nullptr && (value->*is)()),
                       at << ": '" << key << "' missing or of the wrong type");
    return *value;
}

std::string string_field(const json::object& object, const std::string& key,
                         const std::string& at) {
    return std::string(field(object, key, at, &json::value::is_string).get_string());
}

std::uint64_t count_field(const json::object& object, const std::string& key,
                          const std::string& at) {
    const json::value& v = field(object, key, at, &json::value::is_number);
    BOOST_TEST_REQUIRE(!v.is_double(), at << ": '" << key << "' is not a whole number");
    const auto n = json::value_to<std::int64_t>(v);
    BOOST_TEST_REQUIRE(n > 0, at << ": '" << key << "' is not positive");
    return static_cast<std::uint64_t>(n);
}

// A "bytes" and "mb" pair: the MB figure is the bytes in MiB, rounded to 1 kB (the files'
// three decimals). Returns the MiB.
double bytes_in_mb(const json::object& figure, const std::string& at) {
    const double bytes = static_cast<double>(count_field(figure, "bytes", at));
    const double mb = json::value_to<double>(field(figure, "mb", at, &json::value::is_number));
    const double exact = bytes / (1024.0 * 1024.0);
    BOOST_TEST(std::abs(mb - exact) < 0.001, at << ": mb " << mb << " is not bytes / 2^20");
    return exact;
}

bool switch_on(const std::vector<std::string>& arguments, const std::string& name) {
    const auto v = flag_value(arguments, name);
    return v && (v->empty() || *v == "true");
}

std::optional<std::uint32_t> count_flag(const std::vector<std::string>& arguments,
                                        const std::string& name, const std::string& at) {
    const auto v = flag_value(arguments, name);
    if (!v)
        return std::nullopt;
    std::uint32_t n = 0;
    const auto [end, error] = std::from_chars(v->data(), v->data() + v->size(), n);
    BOOST_TEST_REQUIRE((error == std::errc{} && end == v->data() + v->size()),
                       at << ": " << name << " '" << *v << "' is not a count");
    return n;
}

// The feature tags the arguments make, by the flags of Megatron-LM that turn each feature on
// (megatron/training/arguments.py and megatron/core/transformer/transformer_config.py, commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553): --cp-comm-type defaults to p2p, --fp8-recipe to
// delayed.
std::vector<std::string> feature_tags(const std::vector<std::string>& a, const std::string& at) {
    std::vector<std::string> tags;
    if (count_flag(a, "--num-experts", at).value_or(0) > 0)
        tags.emplace_back("moe");
    if (switch_on(a, "--multi-latent-attention"))
        tags.emplace_back("mla");
    if (count_flag(a, "--mtp-num-layers", at).value_or(0) > 0)
        tags.emplace_back("mtp");
    if (count_flag(a, "--context-parallel-size", at).value_or(1) > 1) {
        std::string comm = flag_value(a, "--cp-comm-type").value_or("p2p");
        std::replace(comm.begin(), comm.end(), ' ', '/');
        tags.push_back("cp-" + comm);
    }
    if (flag_value(a, "--fp8-format"))
        tags.push_back("fp8-" + flag_value(a, "--fp8-recipe").value_or("delayed"));
    if (flag_value(a, "--fp4-format"))
        tags.emplace_back("fp4");
    if (switch_on(a, "--use-megatron-fsdp") || switch_on(a, "--use-torch-fsdp2") ||
        switch_on(a, "--use-custom-fsdp"))
        tags.emplace_back("fsdp");
    if (flag_value(a, "--recompute-modules"))
        tags.emplace_back("recompute-modules");
    if (switch_on(a, "--fine-grained-activation-offloading"))
        tags.emplace_back("activation-offloading");
    if (switch_on(a, "--optimizer-cpu-offload"))
        tags.emplace_back("optimizer-offload");
    const auto graphs = flag_value(a, "--cuda-graph-impl");
    if ((graphs && *graphs != "none") || switch_on(a, "--enable-cuda-graph") ||
        switch_on(a, "--external-cuda-graph"))
        tags.emplace_back("cuda-graphs");
    return tags;
}

// Megatron's layout of the point's run, as ppb's importer of Megatron's flags builds it.
imp::PipelineLayout megatron_layout_of(const Point& p) {
    const auto& a = p.arguments;
    const std::string& at = p.file;
    imp::MegatronFlags flags;
    flags.pipeline_size = count_flag(a, "--pipeline-model-parallel-size", at).value_or(1);
    flags.num_layers = count_flag(a, "--num-layers", at);
    flags.first_stage_layers = count_flag(a, "--decoder-first-pipeline-num-layers", at);
    if (!flags.first_stage_layers)
        flags.first_stage_layers = count_flag(a, "--num-layers-in-first-pipeline-stage", at);
    flags.last_stage_layers = count_flag(a, "--decoder-last-pipeline-num-layers", at);
    if (!flags.last_stage_layers)
        flags.last_stage_layers = count_flag(a, "--num-layers-in-last-pipeline-stage", at);
    flags.layers_per_virtual_stage = count_flag(a, "--num-layers-per-virtual-pipeline-stage", at);
    flags.virtual_stages = count_flag(a, "--num-virtual-stages-per-pipeline-rank", at);
    if (!flags.virtual_stages)
        flags.virtual_stages = count_flag(a, "--virtual-pipeline-model-parallel-size", at);
    flags.layout = flag_value(a, "--pipeline-model-parallel-layout");
    flags.account_for_embedding = switch_on(a, "--account-for-embedding-in-pipeline-split");
    flags.account_for_loss = switch_on(a, "--account-for-loss-in-pipeline-split");
    flags.mtp_layers = count_flag(a, "--mtp-num-layers", at);
    flags.recompute_granularity = flag_value(a, "--recompute-granularity");
    flags.recompute_method = flag_value(a, "--recompute-method");
    flags.recompute_num_layers = count_flag(a, "--recompute-num-layers", at);
    flags.overlap_moe_expert_parallel_comm = switch_on(a, "--overlap-moe-expert-parallel-comm");
    flags.num_experts = count_flag(a, "--num-experts", at);
    flags.moe_layer_freq = flag_value(a, "--moe-layer-freq");
    flags.first_k_dense_replace = count_flag(a, "--first-k-dense-replace", at);
    flags.world_size = p.world_size;
    // Micro-batches per iteration: the global batch over b x d, d = world / (TP x PP x CP).
    const std::uint32_t model_ranks =
        count_flag(a, "--tensor-model-parallel-size", at).value_or(1) * *flags.pipeline_size *
        count_flag(a, "--context-parallel-size", at).value_or(1);
    BOOST_TEST_REQUIRE(p.world_size % model_ranks == 0, at << ": world size " << p.world_size
                                                           << " is not a multiple of TP x PP x CP "
                                                           << model_ranks);
    const std::uint32_t micro_batch = count_flag(a, "--micro-batch-size", at).value_or(1);
    const std::uint32_t per_micro_batch = micro_batch * (p.world_size / model_ranks);
    const std::uint32_t global = count_flag(a, "--global-batch-size", at).value_or(per_micro_batch);
    BOOST_TEST_REQUIRE(global % per_micro_batch == 0, at << ": --global-batch-size " << global
                                                         << " is not a multiple of "
                                                         << per_micro_batch);
    flags.micro_batches = global / per_micro_batch;
    imp::Messages messages;
    try {
        return imp::megatron_layout(flags, imp::MegatronScan{}, messages);
    } catch (const std::exception& e) {
        BOOST_FAIL(at << ": the layout flags are refused: " << e.what());
    }
    return {};
}

// "moe.none=2,moe.select=1", or "none=0" for an empty chunk.
std::string kinds_text(const std::vector<imp::KindCounts>& by_group,
                       const std::vector<std::string>& groups) {
    std::string text;
    for (std::size_t g = 0; g < by_group.size(); ++g) {
        for (std::size_t k = 0; k < by_group[g].size(); ++k) {
            if (by_group[g][k] == 0)
                continue;
            text += text.empty() ? "" : ",";
            text += groups.empty() ? "" : groups[g] + ".";
            text += std::string(::ppb::kind_names[k]) + "=" + std::to_string(by_group[g][k]);
        }
    }
    if (text.empty())
        text = (groups.empty() ? std::string() : groups.front() + ".") + "none=0";
    return text;
}

Point read_point(const fs::path& path) {
    const std::string at = path.filename().string();
    json::value doc;
    try {
        doc = json::parse(read_text(path));
    } catch (const std::exception& e) {
        BOOST_FAIL(at << ": not JSON: " << e.what());
    }
    BOOST_TEST_REQUIRE(doc.is_object(), at << ": not a JSON object");
    const json::object& o = doc.get_object();
    BOOST_TEST_REQUIRE(string_field(o, "format", at) == "ppb.real/1", at);
    Point p;
    p.file = at;
    p.name = string_field(o, "name", at);
    BOOST_TEST(p.name + ".json" == at, at << ": name " << p.name << " is not the file's");
    p.set = string_field(o, "set", at);
    BOOST_TEST_REQUIRE(std::ranges::count(set_names, p.set) == 1, at << ": set " << p.set);
    for (const auto& a : field(o, "arguments", at, &json::value::is_array).get_array()) {
        BOOST_TEST_REQUIRE(a.is_string(), at << ": an argument is not a string");
        p.arguments.emplace_back(a.get_string());
        // The harness passes a YAML list's words as arguments of their own (README.md here).
        const std::string& text = p.arguments.back();
        BOOST_TEST(!(text.size() > 2 && text.front() == '[' && text.back() == ']'),
                   at << ": argument '" << text
                      << "' is a YAML list: the harness passes its words as several arguments");
    }
    p.world_size = static_cast<std::uint32_t>(count_field(o, "world_size", at));
    const json::object& source = field(o, "source", at, &json::value::is_object).get_object();
    p.compute_capability =
        static_cast<std::uint32_t>(count_field(source, "compute_capability", at));
    p.hardware = string_field(source, "hardware", at);
    for (const char* key : {"repository", "path", "commit", "config_path", "config_commit"})
        BOOST_TEST(!string_field(source, key, at).empty(), at << ": source." << key);

    const json::object& measured = field(o, "measured", at, &json::value::is_object).get_object();
    BOOST_TEST_REQUIRE(string_field(measured, "metric", at) == "max_allocated", at);
    // The figure of Megatron's TensorBoard writer, on the last rank, or of its log line
    // (report_memory's "max allocated", printed by data-parallel rank 0 of each stage): a rank of
    // the last pipeline stage (in Megatron's rank order the pipeline rank varies slowest).
    const std::string field_name = string_field(measured, "field", at);
    BOOST_TEST((field_name == "mem-max-allocated-bytes" || field_name == "max allocated"), at);
    const json::value& rank_value = field(measured, "rank", at, &json::value::is_number);
    BOOST_TEST_REQUIRE((!rank_value.is_double() && json::value_to<std::int64_t>(rank_value) >= 0),
                       at << ": 'rank' is not a rank");
    const auto rank = json::value_to<std::uint64_t>(rank_value);
    const std::uint64_t stages =
        count_flag(p.arguments, "--pipeline-model-parallel-size", at).value_or(1);
    BOOST_TEST_REQUIRE((stages > 0 && p.world_size % stages == 0), at);
    BOOST_TEST(rank < p.world_size, at << ": the measured rank is not one of the run's");
    BOOST_TEST(rank / (p.world_size / stages) + 1 == stages,
               at << ": the measured rank is not on the last pipeline stage");
    if (field_name == "mem-max-allocated-bytes") {
        BOOST_TEST(rank + 1 == p.world_size,
                   at << ": TensorBoard's figures are the last rank's, not " << rank);
    }
    BOOST_TEST(string_field(measured, "stage", at) == "last", at);
    (void)count_field(measured, "iteration", at);
    p.measured_mb = bytes_in_mb(measured, at);
    if (const json::value* after = measured.if_contains("after_step")) {
        BOOST_TEST_REQUIRE(after->is_object(), at << ": measured.after_step is not an object");
        const std::string after_field = string_field(after->get_object(), "field", at);
        BOOST_TEST((after_field == "mem-allocated-bytes" || after_field == "allocated"), at);
        p.after_step_mb = bytes_in_mb(after->get_object(), at + ": after_step");
        BOOST_TEST(*p.after_step_mb <= p.measured_mb,
                   at << ": memory after the step is above the peak");
    }
    if (const json::value* env = o.if_contains("env_vars")) {
        BOOST_TEST_REQUIRE(env->is_object(), at << ": env_vars is not an object");
        for (const auto& [key, value] : env->get_object())
            BOOST_TEST(value.is_string(), at << ": env_vars." << key << " is not a string");
    }
    if (const json::value* flags = o.if_contains("megatron_flags")) {
        BOOST_TEST_REQUIRE(flags->is_array(), at << ": megatron_flags is not an array");
        for (const auto& f : flags->get_array()) {
            BOOST_TEST_REQUIRE(f.is_string(), at << ": a megatron_flags entry is not a string");
            p.megatron_flags.emplace_back(f.get_string());
        }
    }
    if (o.contains("megatron_version"))
        p.megatron_version = string_field(o, "megatron_version", at);
    if (const json::value* expect = o.if_contains("expect")) {
        BOOST_TEST_REQUIRE(expect->is_string(), at << ": expect");
        BOOST_TEST_REQUIRE(expect->get_string() == "refused", at << ": expect");
        BOOST_TEST_REQUIRE(p.set != "features",
                           at << ": a features point says nothing of how ppb takes it");
        p.refused_flag = string_field(o, "refused_flag", at);
    }

    // Feature tags: each made by its flags; in the features set, every feature the flags turn
    // on is tagged.
    if (const json::value* tags = o.if_contains("features")) {
        BOOST_TEST_REQUIRE(tags->is_array(), at << ": features is not an array");
        for (const auto& t : tags->get_array()) {
            BOOST_TEST_REQUIRE(t.is_string(), at << ": a feature is not a string");
            p.features.emplace_back(t.get_string());
        }
    }
    const std::vector<std::string> made = feature_tags(p.arguments, at);
    for (const std::string& tag : p.features)
        BOOST_TEST(std::ranges::count(made, tag) == 1,
                   at << ": feature '" << tag << "' is not what its arguments turn on");
    if (p.set == "features") {
        BOOST_TEST(!p.features.empty(), at << ": a features point without features");
        for (const std::string& tag : made)
            BOOST_TEST(std::ranges::count(p.features, tag) == 1,
                       at << ": its arguments turn on '" << tag << "', which it does not list");
    }

    // The schedule is the one the layout flags give (a refused point's layout is never used):
    // interleaved with chunks, combined-1f1b with --overlap-moe-expert-parallel-comm.
    const std::string schedule = string_field(o, "schedule", at);
    BOOST_TEST_REQUIRE(
        (schedule == "1f1b" || schedule == "interleaved" || schedule == "combined-1f1b"),
        at << ": " << schedule);
    if (!p.refused_flag) {
        const imp::PipelineLayout layout = megatron_layout_of(p);
        BOOST_TEST(schedule == ::ppb::schedule_name(layout.schedule),
                   at << ": schedule " << schedule << ", but the layout flags give "
                      << ::ppb::schedule_name(layout.schedule) << " with " << layout.num_chunks
                      << " chunks per stage");
    }
    return p;
}

}  // namespace

std::optional<std::string> flag_value(const std::vector<std::string>& arguments,
                                      const std::string& flag) {
    std::optional<std::string> found;
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        if (arguments[i] != flag)
            continue;
        std::string values;
        for (std::size_t j = i + 1; j < arguments.size() && !arguments[j].starts_with("--"); ++j)
            values += (values.empty() ? "" : " ") + arguments[j];
        found = values;
    }
    return found;
}

std::vector<Point> read_all(const std::string& directory) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(directory)) {
        if (e.path().extension() == ".json")
            files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    std::vector<Point> points;
    for (const auto& f : files)
        points.push_back(read_point(f));
    return points;
}

std::vector<std::string> measured_stage_placement(const Point& point) {
    const imp::PipelineLayout layout = megatron_layout_of(point);
    const std::uint32_t stage = layout.num_stages - 1;
    std::vector<std::string> out{"--stages",        std::to_string(layout.num_stages),
                                 "--stage",         std::to_string(stage),
                                 "--micro-batches", std::to_string(*layout.micro_batches)};
    const auto chunk = [&](std::uint32_t c) -> std::vector<imp::KindCounts> {
        if (!layout.groups.empty())
            return layout.group_layers[stage][c];
        return {layout.num_chunks == 1 ? layout.stages[stage] : layout.chunks[stage][c]};
    };
    if (layout.num_chunks == 1 && layout.schedule == ::ppb::Schedule::one_f_one_b) {
        out.insert(out.end(), {"--layers", kinds_text(chunk(0), layout.groups)});
        return out;
    }
    out.insert(out.end(), {"--schedule", std::string(::ppb::schedule_name(layout.schedule))});
    for (std::uint32_t c = 0; c < layout.num_chunks; ++c)
        out.insert(out.end(), {"--chunk", kinds_text(chunk(c), layout.groups)});
    return out;
}

}  // namespace real_points
