// MindSpore / MindFormers dry runs: layout from the training YAML (yaml-cpp), memory from logs.
#include "yaml_config.hpp"

#include <ppb/importers/mindspore.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>

namespace ppb::importers {
namespace {

using detail::boolean_of;
using detail::Config;
using detail::count_in;
using detail::describe;
using detail::integer_of;
using detail::Origin;
using detail::positive_integer;
using detail::Setting;

constexpr std::string_view used_marker = "Used peak memory usage (without fragments):";
constexpr std::string_view actual_marker = "Actual peak memory usage (with fragments):";

// The settings of a layout: the flag when given, else the configuration's value, else absent.
class Settings {
  public:
    explicit Settings(const std::optional<std::filesystem::path>& config) {
        if (config)
            config_.emplace(*config, "a MindFormers training configuration");
    }

    [[nodiscard]] const std::optional<Config>& config() const noexcept { return config_; }

    Setting get(const std::optional<std::string>& flag_value, std::string_view flag,
                std::initializer_list<std::string_view> keys) {
        if (flag_value) {
            auto& origin = flag_origins_.emplace_back(std::make_unique<Origin>());
            origin->name = std::string(flag);
            origin->flag = true;
            std::string text = *flag_value;
            const auto first = text.find_first_not_of(" \t");
            if (text.find(',') != std::string::npos && first != std::string::npos &&
                text[first] != '[' && text[first] != '{') {
                text = "[" + text + "]";
            }
            YAML::Node node;
            try {
                node.reset(YAML::Load(text));
            } catch (const YAML::Exception& e) {
                throw FlagError(fmt::format("{}: cannot read '{}' as a YAML value: {}", flag,
                                            *flag_value, e.msg));
            }
            return Setting(origin.get(), node, std::string(flag));
        }
        return config_ ? config_->lookup(keys) : Setting{};
    }

    // The value at `keys` in the configuration file, or an absent setting.
    [[nodiscard]] Setting file(std::initializer_list<std::string_view> keys) const {
        return config_ ? config_->lookup(keys) : Setting{};
    }

  private:
    std::optional<Config> config_;
    std::vector<std::unique_ptr<Origin>> flag_origins_;
};

[[noreturn]] void missing_setting(const std::optional<Config>& config, std::string_view key,
                                  std::string_view flag) {
    if (config) {
        throw InputError(
            fmt::format("{}: no {} (give it in the file or as {})", config->name(), key, flag));
    }
    throw FlagError(fmt::format(
        "missing {} (or --config CONFIG.yaml, a MindFormers training configuration that gives {})",
        flag, key));
}

[[noreturn]] void interleaving_refused(const Setting& setting, std::string_view what) {
    setting.fail(fmt::format(
        "{}; ppb.dryrun/1 has one chunk per stage; interleaved layouts are not supported yet",
        what));
}

// The per-stage entries of a setting: a scalar repeated for every stage, a flat list of one per
// stage, or the single row of a nested list (MindFormers' one-row-per-chunk form).
std::vector<Setting> stage_entries(const Setting& setting, std::uint32_t stages,
                                   std::string_view stages_from) {
    const YAML::Node& node = setting.node();
    if (node.IsScalar())
        return std::vector<Setting>(stages, setting);
    if (!node.IsSequence())
        setting.fail(
            fmt::format("expected a list with one entry per stage, got {}", describe(node)));
    std::size_t rows = 0;
    for (std::size_t i = 0; i < node.size(); ++i) {
        if (node[i].IsSequence())
            ++rows;
    }
    Setting row = setting;
    if (rows > 0) {
        if (rows != node.size()) {
            setting.fail(
                "mixes lists and single values (expected one entry per stage, or one row of "
                "them)");
        }
        if (rows > 1) {
            interleaving_refused(
                setting, fmt::format("has {} rows, one per interleaved pipeline chunk", rows));
        }
        row = setting.element(0);
        for (std::size_t i = 0; i < row.node().size(); ++i) {
            if (!row.node()[i].IsScalar() && !row.node()[i].IsNull())
                row.element(i).fail("expected a single value, got " + describe(row.node()[i]));
        }
    }
    if (row.node().size() != stages) {
        row.fail(fmt::format(
            "has {} entr{} but the pipeline has {} stages ({}): give one per stage",
            row.node().size(), row.node().size() == 1 ? "y" : "ies", stages, stages_from));
    }
    std::vector<Setting> entries;
    for (std::size_t i = 0; i < stages; ++i)
        entries.push_back(row.element(i));
    return entries;
}

std::vector<std::int64_t> stage_offsets(const Setting& setting, std::uint32_t stages,
                                        std::string_view stages_from) {
    if (!setting.present() || setting.node().IsNull())
        return std::vector<std::int64_t>(stages, 0);
    std::vector<std::int64_t> offsets;
    for (const Setting& entry : stage_entries(setting, stages, stages_from)) {
        const auto value = integer_of(entry.node());
        if (!value)
            entry.fail("expected an integer offset (layers), got " + describe(entry.node()));
        offsets.push_back(*value);
    }
    return offsets;
}

// Layers per stage covered by a recompute setting, each at most the stage's layers.
std::vector<std::uint32_t> recompute_counts(const Setting& setting,
                                            const std::vector<std::uint32_t>& layers,
                                            std::string_view stages_from, bool allow_patterns) {
    const auto stages = static_cast<std::uint32_t>(layers.size());
    const YAML::Node& node = setting.node();
    if (!setting.present() || node.IsNull())
        return std::vector<std::uint32_t>(stages, 0);
    if (node.IsMap()) {
        if (!allow_patterns)
            setting.fail("expected a count of layers, true or false, got a mapping");
        std::optional<std::vector<std::uint32_t>> common;
        std::string common_pattern;
        for (const auto& member : node) {
            const std::string pattern = member.first.IsScalar() ? member.first.Scalar() : "?";
            const Setting value = setting.member(member.second, pattern);
            auto counts = recompute_counts(value, layers, stages_from, false);
            if (!common) {
                common = std::move(counts);
                common_pattern = pattern;
            } else if (counts != *common) {
                setting.fail(fmt::format(
                    "the patterns '{}' and '{}' cover different layers ({} and {} layers per "
                    "stage); ppb counts a layer as recomputed this way only as a whole, so give "
                    "every pattern the same layers",
                    common_pattern, pattern, fmt::join(*common, ", "), fmt::join(counts, ", ")));
            }
        }
        return common.value_or(std::vector<std::uint32_t>(stages, 0));
    }
    if (node.IsSequence()) {
        if (node.size() == 0)
            return std::vector<std::uint32_t>(stages, 0);  // as MindFormers reads []
        bool patterns = true;
        for (std::size_t i = 0; i < node.size(); ++i) {
            const YAML::Node& item = node[i];
            if (!item.IsScalar() || (integer_of(item) || boolean_of(item)))
                patterns = false;
        }
        if (patterns) {
            if (!allow_patterns)
                setting.fail("expected a count of layers, true or false, got a list of names");
            return layers;  // operator patterns: every layer, as MindFormers applies them
        }
    }
    return detail::layer_counts(stage_entries(setting, stages, stages_from), layers);
}

bool given(const Setting& setting) {
    return setting.present() && !setting.node().IsNull();
}

[[noreturn]] void layouts_disagree(const Setting& classic, std::string_view classic_value,
                                   const Setting& newer, std::string_view newer_value) {
    throw InputError(fmt::format(
        "{} is {}, but {} is {}: the classic and the newer MindFormers layout disagree; give "
        "one of them, or make them agree",
        classic.where(), classic_value, newer.where(), newer_value));
}

// A count that the classic layout (or its flag) and the newer layout both may give: whichever is
// given, and when both are, they must agree.
Setting agreed_count(const Setting& classic, const Setting& newer,
                     const limits::CountRange& range) {
    if (!given(classic) || classic.from_flag() || !given(newer))
        return given(classic) || !given(newer) ? classic : newer;
    const std::uint32_t a = count_in(classic, range);
    const std::uint32_t b = count_in(newer, range);
    if (a != b)
        layouts_disagree(classic, std::to_string(a), newer, std::to_string(b));
    return classic;
}

std::string source_of(const Setting& setting) {
    return setting.from_flag() ? setting.path() : setting.where();
}

double parse_megabytes(std::string_view rest, const LogFile& log, std::size_t line,
                       std::string_view marker, std::string_view text) {
    const std::size_t start = rest.find_first_not_of(" \t");
    const std::string_view number = start == std::string_view::npos ? "" : rest.substr(start);
    double mb = 0.0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), mb);
    const std::string_view unit = number.substr(static_cast<std::size_t>(end - number.data()));
    if (number.empty() || ec != std::errc{} || !(unit.starts_with('M'))) {
        throw InputError(fmt::format(
            "{}:{}: malformed memory line: expected a number of MB such as '23716M' after '{}', "
            "got {}",
            log.name, line, marker, quote_excerpt(text)));
    }
    if (!std::isfinite(mb) || !(mb > 0.0)) {
        throw InputError(fmt::format(
            "{}:{}: the memory line says {}M, which is not a measured peak (expected a positive "
            "number of MB)",
            log.name, line, number.substr(0, static_cast<std::size_t>(end - number.data()))));
    }
    return mb;
}

}  // namespace

std::optional<MindSporeMemory> mindspore_memory_from_name(std::string_view name) {
    if (name == "used")
        return MindSporeMemory::used;
    if (name == "actual")
        return MindSporeMemory::actual;
    return std::nullopt;
}

std::string_view mindspore_memory_marker(MindSporeMemory memory) {
    return memory == MindSporeMemory::used ? used_marker : actual_marker;
}

PipelineLayout mindspore_layout(const std::optional<std::filesystem::path>& config,
                                const MindSporeFlags& flags, Messages& messages) {
    Settings settings(config);

    PipelineLayout layout;
    // MindFormers' newer layout (LLMTrainer) keeps the parallel settings here.
    const Setting distributed = settings.file({"distribute_parallel_config"});
    const bool newer_layout = given(distributed);
    const auto newer = [&](std::initializer_list<std::string_view> keys) {
        if (!newer_layout)
            return Setting{};
        Setting at = distributed;
        for (const std::string_view key : keys) {
            if (!given(at))
                return Setting{};
            if (!at.node().IsMap()) {
                at.fail(fmt::format("expected a mapping (holding '{}'), got {}", key,
                                    describe(at.node())));
            }
            const auto member = detail::find_member(at.node(), key);
            if (!member)
                return Setting{};
            at = at.member(*member, key);
        }
        return at;
    };

    const Setting pipeline = agreed_count(settings.get(flags.pipeline_stage, "--pipeline-stage",
                                                       {"parallel_config", "pipeline_stage"}),
                                          newer({"pipeline_model_parallel_size"}), limits::stages);
    if (!given(pipeline)) {
        missing_setting(settings.config(),
                        "parallel_config.pipeline_stage (or "
                        "distribute_parallel_config.pipeline_model_parallel_size)",
                        "--pipeline-stage P");
    }
    layout.num_stages = count_in(pipeline, limits::stages);

    for (const Setting& interleave :
         {settings.file({"model", "model_config", "pp_interleave_num"}),
          settings.file({"model_config", "pp_interleave_num"}),
          newer({"pipeline_parallel_config", "virtual_pipeline_model_parallel_size"})}) {
        if (given(interleave) && positive_integer(interleave) > 1) {
            const std::string_view path = interleave.path();
            interleave.fail(fmt::format(
                "interleaved ({} {}) dry runs are not supported yet: ppb.dryrun/1 has one chunk "
                "per stage",
                path.substr(path.rfind('.') + 1), interleave.node().Scalar()));
        }
    }

    std::uint64_t ranks = 1;
    struct Dimension {
        const std::optional<std::string>* flag_value;
        std::string_view flag;
        std::string_view classic;
        std::string_view newer;
    };
    const Dimension dimensions[] = {
        {&flags.data_parallel, "--data-parallel", "data_parallel", "data_parallel_size"},
        {&flags.model_parallel, "--model-parallel", "model_parallel", "tensor_model_parallel_size"},
        {&flags.context_parallel, "--context-parallel", "context_parallel",
         "context_parallel_size"}};
    std::optional<std::uint32_t> data_parallel;
    for (const Dimension& d : dimensions) {
        const Setting classic = settings.get(*d.flag_value, d.flag, {"parallel_config", d.classic});
        const Setting from_newer = newer({d.newer});
        const Setting setting = agreed_count(
            classic, from_newer, {1, std::numeric_limits<std::uint32_t>::max(), "ranks"});
        if (!given(setting)) {
            if (d.classic == "data_parallel" && newer_layout) {
                const Setting& at = from_newer.present() ? from_newer : distributed;
                at.fail(fmt::format(
                    "{}data_parallel_size is not given: MindFormers then uses the devices that "
                    "tensor, pipeline and context parallelism leave, which the configuration "
                    "does not tell; give --data-parallel N",
                    from_newer.present() ? "" : "no "));
            }
            if (d.classic != "context_parallel") {
                layout.ranks_explained += fmt::format(
                    "{}{} 1 (default)", layout.ranks_explained.empty() ? "" : " x ", d.classic);
            }
            if (d.classic == "data_parallel")
                data_parallel = 1;
            continue;
        }
        const std::uint32_t value = positive_integer(setting);
        if (d.classic == "data_parallel")
            data_parallel = value;
        ranks *= value;
        if (ranks > std::numeric_limits<std::uint32_t>::max())
            setting.fail("too many ranks per stage");
        layout.ranks_explained +=
            fmt::format("{}{} {}", layout.ranks_explained.empty() ? "" : " x ", d.classic, value);
    }
    layout.ranks_per_stage = static_cast<std::uint32_t>(ranks);

    const Setting micro = agreed_count(settings.get(flags.micro_batch_num, "--micro-batch-num",
                                                    {"parallel_config", "micro_batch_num"}),
                                       newer({"micro_batch_num"}), limits::micro_batches);
    const Setting global_batch = settings.file({"training_args", "global_batch_size"});
    if (given(micro)) {
        layout.micro_batches = count_in(micro, limits::micro_batches);
    } else if (newer_layout && given(global_batch)) {
        // The newer layout derives it: global_batch_size // (data_parallel_size x
        // micro_batch_size x micro_batch_interleave_num).
        const Setting micro_size = settings.file({"training_args", "micro_batch_size"});
        const Setting interleave_num = newer({"micro_batch_interleave_num"});
        const std::uint64_t gbs = positive_integer(global_batch);
        const std::uint64_t mbs = given(micro_size) ? positive_integer(micro_size) : 1;
        const std::uint64_t mbi = given(interleave_num) ? positive_integer(interleave_num) : 1;
        const std::uint64_t per_micro_batch = *data_parallel * mbs * mbi;
        if (gbs % per_micro_batch != 0) {
            global_batch.fail(
                fmt::format("{} is not a multiple of data_parallel_size {} x micro_batch_size {} x "
                            "micro_batch_interleave_num {} = {}, as MindFormers requires",
                            gbs, *data_parallel, mbs, mbi, per_micro_batch));
        }
        const std::uint64_t m = gbs / per_micro_batch;
        if (!limits::micro_batches.contains(m))
            global_batch.fail(limits::out_of_range(std::to_string(m), limits::micro_batches));
        layout.micro_batches = static_cast<std::uint32_t>(m);
        add_note(messages,
                 fmt::format("micro-batches: {} = global_batch_size {} // (data_parallel_size {} "
                             "x micro_batch_size {} x micro_batch_interleave_num {}), as "
                             "MindFormers derives it ({})",
                             m, gbs, *data_parallel, mbs, mbi, global_batch.where()));
    } else {
        add_note(messages,
                 "no micro_batch_num (parallel_config.micro_batch_num or --micro-batch-num): the "
                 "dry-run file gives no micro-batch count, so each stage's in-flight count is "
                 "taken as pipeline_stage - stage");
    }

    const Setting num_layers_setting = agreed_count(
        settings.get(flags.num_layers, "--num-layers", {"model", "model_config", "num_layers"}),
        settings.file({"model_config", "num_layers"}), limits::layers);
    if (!num_layers_setting.present())
        missing_setting(settings.config(), "model.model_config.num_layers", "--num-layers L");
    const std::uint32_t num_layers = count_in(num_layers_setting, limits::layers);

    const std::string stages_from =
        fmt::format("pipeline_stage {} from {}", layout.num_stages, source_of(pipeline));
    Setting offset_setting =
        settings.get(flags.offset, "--offset", {"model", "model_config", "offset"});
    if (!given(offset_setting) && !offset_setting.from_flag())
        offset_setting = settings.file({"model_config", "offset"});
    std::vector<std::int64_t> offsets =
        stage_offsets(offset_setting, layout.num_stages, stages_from);
    if (const Setting stage_offset = newer({"pipeline_parallel_config", "pipeline_stage_offset"});
        given(stage_offset) && !offset_setting.from_flag()) {
        const auto newer_offsets = stage_offsets(stage_offset, layout.num_stages, stages_from);
        if (given(offset_setting) && newer_offsets != offsets) {
            layouts_disagree(offset_setting, fmt::format("[{}]", fmt::join(offsets, ", ")),
                             stage_offset, fmt::format("[{}]", fmt::join(newer_offsets, ", ")));
        }
        offsets = newer_offsets;
        offset_setting = stage_offset;
    }
    const std::int64_t base = num_layers / layout.num_stages;
    std::vector<std::uint32_t> layers;
    std::int64_t sum = 0;
    std::string terms;
    for (std::uint32_t s = 0; s < layout.num_stages; ++s) {
        // Checked before the sum so that no offset, however large, can overflow it: each stage
        // then holds 0 .. num_layers layers.
        if (offsets[s] > static_cast<std::int64_t>(num_layers)) {
            offset_setting.fail(fmt::format(
                "stage {} would hold {} + {} layers, more than the model's {} (num_layers {} // "
                "pipeline_stage {} = {} plus its offset)",
                s, base, offsets[s], num_layers, num_layers, layout.num_stages, base));
        }
        const std::int64_t n = base + offsets[s];
        if (n < 0) {
            offset_setting.fail(fmt::format(
                "stage {} would hold {} + ({}) = {} layers (num_layers {} // pipeline_stage {} = "
                "{} plus its offset)",
                s, base, offsets[s], n, num_layers, layout.num_stages, base));
        }
        layers.push_back(static_cast<std::uint32_t>(n));
        sum += n;
        terms += fmt::format("{}{}", terms.empty() ? "" : " + ", n);
    }
    if (sum != num_layers) {
        const std::string message = fmt::format(
            "the stages hold {} = {} layers, but num_layers is {} (from {}): each stage holds "
            "num_layers // pipeline_stage = {} plus its offset, so the offsets must sum to {}, "
            "not {}",
            terms, sum, num_layers, source_of(num_layers_setting), base,
            num_layers - base * layout.num_stages, sum - base * layout.num_stages);
        if (offset_setting.present())
            offset_setting.fail(message);
        num_layers_setting.fail(message);
    }

    const Setting full =
        settings.get(flags.recompute, "--recompute", {"recompute_config", "recompute"});
    const Setting select = settings.get(flags.select_recompute, "--select-recompute",
                                        {"recompute_config", "select_recompute"});
    const Setting comm = settings.get(flags.select_comm_recompute, "--select-comm-recompute",
                                      {"recompute_config", "select_comm_recompute"});
    const auto full_counts = recompute_counts(full, layers, stages_from, true);
    const auto select_counts = recompute_counts(select, layers, stages_from, true);
    const auto comm_counts = recompute_counts(comm, layers, stages_from, true);
    for (std::uint32_t s = 0; s < layout.num_stages; ++s) {
        layout.stages.push_back(
            split_recompute(layers[s], full_counts[s], select_counts[s], comm_counts[s]));
    }
    return layout;
}

std::vector<MemoryReading> scan_mindspore_logs(std::span<const LogFile> logs,
                                               MindSporeMemory memory, Messages& messages) {
    const std::string_view marker = mindspore_memory_marker(memory);
    const std::string_view other = mindspore_memory_marker(
        memory == MindSporeMemory::used ? MindSporeMemory::actual : MindSporeMemory::used);
    const std::string_view option = memory == MindSporeMemory::used ? "actual" : "used";

    std::vector<MemoryReading> readings;
    std::vector<std::string> skipped;
    std::map<std::uint32_t, std::vector<std::string>> files_without;
    std::set<std::uint32_t> ranks_read;
    for (const LogFile& log : logs) {
        if (!log.rank) {
            if (log.named) {
                throw InputError(fmt::format(
                    "{}: cannot tell which rank wrote this log: name it rank_<id>.log or "
                    "worker_<id>.log, put it in a rank_<id>/ directory, or give --rank {}=ID",
                    log.name, log.name));
            }
            skipped.push_back(log.name);
            continue;
        }
        std::size_t found = 0;
        bool other_found = false;
        bool nul_found = false;
        for_each_line(log, [&](std::size_t line, std::string_view text) {
            nul_found = nul_found || text.find('\0') != std::string_view::npos;
            const std::size_t at = text.find(marker);
            if (at == std::string_view::npos) {
                other_found = other_found || text.find(other) != std::string_view::npos;
                return;
            }
            require_utf8(text, log.name, line, "the memory line");
            const double mb =
                parse_megabytes(text.substr(at + marker.size()), log, line, marker, text);
            readings.push_back(MemoryReading{*log.rank, mb, log.name, line});
            ++found;
        });
        if (found > 0) {
            ranks_read.insert(*log.rank);
            continue;
        }
        if (!log.named) {
            files_without[*log.rank].push_back(log.name);
            continue;
        }
        std::string hint =
            other_found ? fmt::format(" (it has '{}' lines: --memory {}?)", other, option)
            : nul_found ? " (it holds NUL bytes: is it UTF-16 text or a binary file? ppb "
                          "reads logs as UTF-8 text)"
                        : " (MindSpore prints it when a dry run ends, with "
                          "MS_MEMORY_STATISTIC=1 or GLOG_v=1; did the run finish?)";
        throw InputError(fmt::format("{}: no '{} NNNNM' line{}", log.name, marker, hint));
    }
    for (const auto& [rank, files] : files_without) {
        if (ranks_read.count(rank) == 0) {
            throw InputError(fmt::format(
                "rank {}: no '{} NNNNM' line in {} (did the dry run of this rank finish?)", rank,
                marker, fmt::join(files, ", ")));
        }
    }
    if (!skipped.empty()) {
        add_note(
            messages,
            fmt::format("skipped {} log{} found in directories whose path does not tell the "
                        "rank ({}); name them rank_<id>.log or worker_<id>.log, or give "
                        "--rank FILE=ID",
                        skipped.size(), skipped.size() == 1 ? "" : "s", fmt::join(skipped, ", ")));
    }
    if (readings.empty()) {
        throw InputError(
            fmt::format("none of the logs read has a '{}' line, or tells its rank", marker));
    }
    return last_reading_per_rank(
        readings,
        fmt::format("'{}' lines",
                    memory == MindSporeMemory::used ? "Used peak memory" : "Actual peak memory"),
        messages);
}

}  // namespace ppb::importers
