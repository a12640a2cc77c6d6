// MindSpore / MindFormers dry runs: layout from the training YAML (yaml-cpp), memory from logs.
#include "mindformers_keys.hpp"
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
using detail::source_of;
namespace spellings = detail::spellings;

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

    // The flag when given, else the setting any of `names` gives in `sections` of the file
    // (mindformers_keys.hpp: several that disagree are refused).
    Setting spelled(const std::optional<std::string>& flag_value, std::string_view flag,
                    std::span<const detail::KeyPath> sections,
                    std::span<const std::string_view> names, std::string_view meaning) {
        if (flag_value)
            return get(flag_value, flag, {});
        return config_ ? detail::spelled(*config_, sections, names, meaning) : Setting{};
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

// [chunk][stage]: MindFormers' layout of per-chunk settings, one row per chunk.
template <typename T>
using Grid = std::vector<std::vector<T>>;

// Where the chunk count and the stage count come from, for messages.
struct Shape {
    std::uint32_t chunks = 1;
    std::uint32_t stages = 1;
    std::string stages_from;  // "pipeline_stage 4 from llama.yaml:3: parallel_config..."
    std::string chunks_from;  // "pp_interleave_num 2 from ..." (empty with one chunk)
};

// The entries of a setting: a scalar or a flat list give one entry per stage (per_stage, one
// row), a nested list one row of entries per chunk (MindFormers' per-chunk form).
struct Entries {
    bool per_stage = true;
    Grid<Setting> rows;
};

Entries setting_entries(const Setting& setting, const Shape& shape) {
    const YAML::Node& node = setting.node();
    if (node.IsScalar())
        return {true, {std::vector<Setting>(shape.stages, setting)}};
    if (!node.IsSequence()) {
        setting.fail(fmt::format("expected a list with one entry per stage{}, got {}",
                                 shape.chunks > 1 ? " (or one such row per chunk)" : "",
                                 describe(node)));
    }
    std::size_t rows = 0;
    for (std::size_t i = 0; i < node.size(); ++i) {
        if (node[i].IsSequence())
            ++rows;
    }
    if (rows > 0 && rows != node.size()) {
        setting.fail(
            "mixes lists and single values (expected one entry per stage, or one row of them per "
            "chunk)");
    }
    if (rows > 0 && rows != shape.chunks) {
        setting.fail(fmt::format(
            "has {} row{} (one per pipeline chunk) but {}: give {}", rows, rows == 1 ? "" : "s",
            shape.chunks == 1 ? std::string("the layout has one chunk per stage (no "
                                            "pp_interleave_num above 1)")
                              : fmt::format("there are {} chunks per stage ({})", shape.chunks,
                                            shape.chunks_from),
            shape.chunks == 1 ? std::string("one row, or a flat list")
                              : fmt::format("{} rows", shape.chunks)));
    }
    Entries entries{rows == 0, {}};
    const std::vector<Setting> row_settings = rows == 0 ? std::vector<Setting>{setting} : [&] {
        std::vector<Setting> out;
        for (std::size_t i = 0; i < rows; ++i)
            out.push_back(setting.element(i));
        return out;
    }();
    for (const Setting& row : row_settings) {
        for (std::size_t i = 0; i < row.node().size(); ++i) {
            if (!row.node()[i].IsScalar() && !row.node()[i].IsNull())
                row.element(i).fail("expected a single value, got " + describe(row.node()[i]));
        }
        if (row.node().size() != shape.stages) {
            row.fail(
                fmt::format("has {} entr{} but the pipeline has {} stages ({}): give one per stage",
                            row.node().size(), row.node().size() == 1 ? "y" : "ies", shape.stages,
                            shape.stages_from));
        }
        std::vector<Setting> cells;
        for (std::size_t i = 0; i < shape.stages; ++i)
            cells.push_back(row.element(i));
        entries.rows.push_back(std::move(cells));
    }
    return entries;
}

// Offsets per (chunk, stage). One entry per stage applies to every chunk, as MindFormers
// broadcasts it.
Grid<std::int64_t> cell_offsets(const Setting& setting, const Shape& shape) {
    if (!setting.present() || setting.node().IsNull())
        return Grid<std::int64_t>(shape.chunks, std::vector<std::int64_t>(shape.stages, 0));
    const Entries entries = setting_entries(setting, shape);
    Grid<std::int64_t> offsets;
    for (const auto& row : entries.rows) {
        std::vector<std::int64_t> values;
        for (const Setting& entry : row) {
            const auto value = integer_of(entry.node());
            if (!value)
                entry.fail("expected an integer offset (layers), got " + describe(entry.node()));
            values.push_back(*value);
        }
        offsets.push_back(std::move(values));
    }
    if (entries.per_stage)
        offsets.resize(shape.chunks, offsets.front());
    return offsets;
}

// A stage's count spread over its chunks one layer at a time, chunk 0 first, skipping full
// chunks: how MindFormers allocates a per-stage recompute count when the stage has several.
std::vector<std::uint32_t> spread_over_chunks(std::uint32_t count,
                                              const std::vector<std::uint32_t>& chunk_layers) {
    std::vector<std::uint32_t> out(chunk_layers.size(), 0);
    std::uint64_t room = 0;
    for (const auto n : chunk_layers)
        room += n;
    std::uint64_t left = std::min<std::uint64_t>(count, room);
    while (left > 0) {
        for (std::size_t c = 0; c < out.size() && left > 0; ++c) {
            if (out[c] < chunk_layers[c]) {
                ++out[c];
                --left;
            }
        }
    }
    return out;
}

std::string grid_text(const Grid<std::uint32_t>& grid) {
    if (grid.size() == 1)
        return fmt::format("{}", fmt::join(grid.front(), ", "));
    std::string text;
    for (const auto& row : grid)
        text += fmt::format("{}[{}]", text.empty() ? "" : ", ", fmt::join(row, ", "));
    return text;
}

// Layers per (chunk, stage) covered by a recompute setting, each at most the cell's layers:
// the first layers of each chunk of each stage, as MindFormers applies them.
Grid<std::uint32_t> recompute_counts(const Setting& setting, const Grid<std::uint32_t>& layers,
                                     const Shape& shape, bool allow_patterns) {
    const YAML::Node& node = setting.node();
    const Grid<std::uint32_t> none(shape.chunks, std::vector<std::uint32_t>(shape.stages, 0));
    if (!setting.present() || node.IsNull())
        return none;
    if (node.IsMap()) {
        if (!allow_patterns)
            setting.fail("expected a count of layers, true or false, got a mapping");
        std::optional<Grid<std::uint32_t>> common;
        std::string common_pattern;
        for (const auto& member : node) {
            const std::string pattern = member.first.IsScalar() ? member.first.Scalar() : "?";
            const Setting value = setting.member(member.second, pattern);
            auto counts = recompute_counts(value, layers, shape, false);
            if (!common) {
                common = std::move(counts);
                common_pattern = pattern;
            } else if (counts != *common) {
                setting.fail(fmt::format(
                    "the patterns '{}' and '{}' cover different layers ({} and {} layers per "
                    "stage{}); ppb counts a layer as recomputed this way only as a whole, so give "
                    "every pattern the same layers",
                    common_pattern, pattern, grid_text(*common), grid_text(counts),
                    shape.chunks > 1 ? " and chunk" : ""));
            }
        }
        return common.value_or(none);
    }
    if (node.IsSequence()) {
        if (node.size() == 0)
            return none;  // as MindFormers reads []
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
    const Entries entries = setting_entries(setting, shape);
    if (!entries.per_stage) {
        Grid<std::uint32_t> counts;
        for (std::size_t c = 0; c < shape.chunks; ++c)
            counts.push_back(detail::layer_counts(entries.rows[c], layers[c]));
        return counts;
    }
    // One count per stage: of the stage's layers, spread over its chunks.
    std::vector<std::uint32_t> stage_layers(shape.stages, 0);
    for (const auto& row : layers) {
        for (std::size_t s = 0; s < shape.stages; ++s)
            stage_layers[s] += row[s];
    }
    const auto per_stage = detail::layer_counts(entries.rows.front(), stage_layers);
    Grid<std::uint32_t> counts = none;
    for (std::size_t s = 0; s < shape.stages; ++s) {
        std::vector<std::uint32_t> chunk_layers;
        for (const auto& row : layers)
            chunk_layers.push_back(row[s]);
        const auto spread = spread_over_chunks(per_stage[s], chunk_layers);
        for (std::size_t c = 0; c < shape.chunks; ++c)
            counts[c][s] = spread[c];
    }
    return counts;
}

bool given_not_null(const Setting& setting) {
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
    if (!given_not_null(classic) || classic.from_flag() || !given_not_null(newer))
        return given_not_null(classic) || !given_not_null(newer) ? classic : newer;
    const std::uint32_t a = count_in(classic, range);
    const std::uint32_t b = count_in(newer, range);
    if (a != b)
        layouts_disagree(classic, std::to_string(a), newer, std::to_string(b));
    return classic;
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

// MindFormers' MoE layers, in groups: whether the model has experts and which layers are MoE
// layers are mindformers_keys.hpp's rules.
void add_moe_groups(Settings& settings, const MindSporeFlags& flags, std::uint32_t num_layers,
                    PipelineLayout& layout, Messages& messages) {
    const auto sections = detail::moe_sections();
    const Setting count = settings.spelled(flags.expert_num, "--expert-num", sections,
                                           spellings::experts, "the experts per MoE layer");
    const Setting chosen =
        settings.spelled(flags.num_experts_chosen, "--num-experts-chosen", sections,
                         spellings::experts_chosen, "the experts chosen per token");
    const Setting first_k =
        settings.spelled(flags.first_k_dense_replace, "--first-k-dense-replace", sections,
                         spellings::first_k_dense, "the dense layers before the MoE layers");
    const Setting freq = settings.spelled(std::nullopt, "", sections, spellings::moe_layer_freq,
                                          "which layers are MoE layers");
    const detail::Experts experts =
        detail::model_experts(settings.config() ? &*settings.config() : nullptr, count);
    // The expert count as messages give it: "expert_num is 4 (--expert-num)".
    const std::string count_text = experts.count
                                       ? fmt::format("{} is {} ({})", experts.count_name,
                                                     *experts.count, source_of(experts.because))
                                       : std::string("expert_num is not given");
    if (given_not_null(chosen)) {
        const std::uint32_t n = positive_integer(chosen);
        // Without a count, a dense model has MoEConfig's expert_num 1.
        const std::optional<std::uint32_t> limit =
            experts.count ? experts.count
                          : (experts.moe ? std::nullopt : std::optional<std::uint32_t>(1));
        if (limit && n > *limit) {
            chosen.fail(fmt::format(
                "{} experts chosen per token, but {}: the experts chosen must "
                "not exceed the experts (MindFormers refuses it)",
                n, experts.count ? count_text : std::string("expert_num is 1 (not given)")));
        }
    }
    const std::array<std::string_view, 1> sparse_step = {"decoder_sparse_step"};
    const std::array<std::string_view, 1> mlp_only = {"mlp_only_layers"};
    const Setting ignored[] = {
        settings.spelled(std::nullopt, "", detail::model_sections(), sparse_step,
                         "decoder_sparse_step"),
        settings.spelled(std::nullopt, "", detail::model_sections(), mlp_only, "mlp_only_layers")};
    const detail::MoeLayers layers =
        detail::moe_layers(experts, first_k, freq, ignored, num_layers, count_text);
    for (const std::string& note : layers.notes)
        add_note(messages, note);
    if (!experts.moe)
        return;
    const std::vector<bool>& is_moe = layers.is_moe;
    const std::string& placement = layers.placement;
    split_into_groups(layout, moe_groups(is_moe));
    const std::string from = fmt::format("{}: {}", source_of(experts.because), experts.why);
    if (layout.groups.empty()) {
        add_note(messages, fmt::format("MoE: all {} layers are MoE layers ({}): one group of body "
                                       "layers",
                                       num_layers, from));
    } else {
        add_note(messages, fmt::format("MoE: {} ({}): the layers are counted per group, dense and "
                                       "moe",
                                       placement, from));
    }
}

constexpr std::string_view layers_marker = "num_layers per stage: ";
constexpr std::string_view stages_marker = "pipeline_stages = ";

// "[9, 10, 10, 11]" or "[[4, 5], [5, 4]]": rows of counts (one row for a flat list), or nullopt.
std::optional<std::pair<std::vector<std::vector<std::uint32_t>>, bool>> count_rows(
    std::string_view text) {
    std::vector<std::vector<std::uint32_t>> rows;
    std::size_t at = 0;
    const auto skip = [&] {
        while (at < text.size() && text[at] == ' ')
            ++at;
    };
    const auto accept = [&](char c) {
        skip();
        if (at < text.size() && text[at] == c) {
            ++at;
            return true;
        }
        return false;
    };
    const auto row = [&]() -> std::optional<std::vector<std::uint32_t>> {
        std::vector<std::uint32_t> counts;
        if (!accept('['))
            return std::nullopt;
        if (accept(']'))
            return counts;
        do {
            skip();
            std::uint32_t n = 0;
            const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), n);
            if (ec != std::errc{} || n > limits::layers.max)
                return std::nullopt;
            at = static_cast<std::size_t>(end - text.data());
            counts.push_back(n);
        } while (accept(','));
        if (!accept(']'))
            return std::nullopt;
        return counts;
    };
    skip();
    const std::size_t inner = text.find_first_not_of(' ', at + 1);
    const bool nested = at < text.size() && text[at] == '[' && inner != std::string_view::npos &&
                        text[inner] == '[';
    if (!nested) {
        auto flat = row();
        if (!flat || flat->empty())
            return std::nullopt;
        rows.push_back(std::move(*flat));
    } else {
        accept('[');
        do {
            auto next = row();
            if (!next || next->empty() || (!rows.empty() && next->size() != rows.front().size()))
                return std::nullopt;
            rows.push_back(std::move(*next));
        } while (accept(','));
        if (!accept(']'))
            return std::nullopt;
    }
    skip();
    if (at != text.size())
        return std::nullopt;
    return std::pair{std::move(rows), nested};
}

// MindFormers' statements of the layout on one log line (MindSporeLogLayout); every rank's log
// states the same, or the logs are of different runs.
void read_layout_statement(MindSporeLogLayout& stated, const LogFile& log, std::size_t line,
                           std::string_view text) {
    const std::string where = fmt::format("{}:{}", log.name, line);
    if (const std::size_t at = text.find(layers_marker);
        at != std::string_view::npos && !text.substr(0, at).ends_with("Accumulated ")) {
        require_utf8(text, log.name, line, "the 'num_layers per stage' line");
        std::string_view value = text.substr(at + layers_marker.size());
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.remove_suffix(1);
        auto rows = count_rows(value);
        if (!rows) {
            throw InputError(fmt::format(
                "{}: cannot read MindFormers' 'num_layers per stage' line: expected a list of "
                "per-stage layer counts, or one such list per chunk, got {}",
                where, quote_excerpt(value)));
        }
        if (stated.layers.empty()) {
            stated.layers = std::move(rows->first);
            stated.per_chunk = rows->second;
            stated.layers_text = std::string(value);
            stated.layers_where = where;
        } else if (stated.layers != rows->first || stated.per_chunk != rows->second) {
            throw InputError(fmt::format(
                "{}: num_layers per stage: {}, but {} says num_layers per stage: {}: are these "
                "logs of one run?",
                where, value, stated.layers_where, stated.layers_text));
        }
        return;
    }
    if (const std::size_t at = text.find(stages_marker);
        at != std::string_view::npos &&
        text.find("Pipeline parallel was opened") != std::string_view::npos) {
        const std::string_view rest = text.substr(at + stages_marker.size());
        std::uint32_t n = 0;
        const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
        if (ec != std::errc{} || n == 0)
            return;
        if (!stated.stages) {
            stated.stages = n;
            stated.stages_where = where;
        } else if (*stated.stages != n) {
            throw InputError(fmt::format(
                "{}: pipeline_stages = {}, but {} says pipeline_stages = {}: are these logs of one "
                "run?",
                where, n, stated.stages_where, *stated.stages));
        }
    }
}

// Rows as YAML writes a per-chunk setting: "[-1, 0, 0, 1]" for one row, "[[...], [...]]".
std::string rows_text(const std::vector<std::vector<std::int64_t>>& rows) {
    std::vector<std::string> each;
    for (const auto& row : rows)
        each.push_back(fmt::format("[{}]", fmt::join(row, ", ")));
    return each.size() == 1 ? each.front() : fmt::format("[{}]", fmt::join(each, ", "));
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
                                const MindSporeFlags& given, Messages& messages,
                                const MindSporeLogLayout& stated) {
    Settings settings(config);
    MindSporeFlags flags = given;

    PipelineLayout layout;
    // MindFormers' newer layout (LLMTrainer) keeps the parallel settings here.
    const Setting distributed = settings.file({"distribute_parallel_config"});
    const bool newer_layout = given_not_null(distributed);
    const auto newer = [&](std::initializer_list<std::string_view> keys) {
        if (!newer_layout)
            return Setting{};
        Setting at = distributed;
        for (const std::string_view key : keys) {
            if (!given_not_null(at))
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

    // What neither a flag nor the configuration gives is taken from what the logs state, as a
    // flag would give it (and said).
    const auto absent = [&](const std::optional<std::string>& flag,
                            std::initializer_list<Setting> in_file) {
        return !flag && std::none_of(in_file.begin(), in_file.end(), given_not_null);
    };
    const auto take = [&](std::optional<std::string>& flag, std::string_view name,
                          std::string value, const std::string& where) {
        add_note(messages, fmt::format("{} {} from {}", name, value, where));
        flag = std::move(value);
    };
    const auto absent_offset = [&] {
        return absent(flags.offset, {settings.file({"model", "model_config", "offset"}),
                                     settings.file({"model_config", "offset"}),
                                     newer({"pipeline_parallel_config", "pipeline_stage_offset"})});
    };
    std::uint64_t stated_sum = 0;
    for (const auto& row : stated.layers) {
        for (const std::uint32_t n : row)
            stated_sum += n;
    }
    const bool pipeline_absent =
        absent(flags.pipeline_stage, {settings.file({"parallel_config", "pipeline_stage"}),
                                      newer({"pipeline_model_parallel_size"})});
    if (!stated.layers.empty()) {
        if (pipeline_absent) {
            take(flags.pipeline_stage, "--pipeline-stage",
                 std::to_string(stated.layers.front().size()), stated.layers_where);
        }
        if (absent(flags.num_layers, {settings.file({"model", "model_config", "num_layers"}),
                                      settings.file({"model_config", "num_layers"})})) {
            take(flags.num_layers, "--num-layers", std::to_string(stated_sum), stated.layers_where);
        }
        if (stated.per_chunk && stated.layers.size() > 1 &&
            absent(flags.pp_interleave_num,
                   {settings.file({"model", "model_config", "pp_interleave_num"}),
                    settings.file({"model_config", "pp_interleave_num"}),
                    newer({"pipeline_parallel_config", "virtual_pipeline_model_parallel_size"})})) {
            take(flags.pp_interleave_num, "--pp-interleave-num",
                 std::to_string(stated.layers.size()), stated.layers_where);
        }
    } else if (stated.stages && pipeline_absent) {
        take(flags.pipeline_stage, "--pipeline-stage", std::to_string(*stated.stages),
             stated.stages_where);
    }

    const Setting pipeline = agreed_count(settings.get(flags.pipeline_stage, "--pipeline-stage",
                                                       {"parallel_config", "pipeline_stage"}),
                                          newer({"pipeline_model_parallel_size"}), limits::stages);
    if (!given_not_null(pipeline)) {
        missing_setting(settings.config(),
                        "parallel_config.pipeline_stage (or "
                        "distribute_parallel_config.pipeline_model_parallel_size)",
                        "--pipeline-stage P");
    }
    layout.num_stages = count_in(pipeline, limits::stages);

    // Chunks per stage: MindFormers' pp_interleave_num (the classic layout keeps it in the
    // model's configuration) or the newer layout's virtual pipeline size; they must agree.
    Setting interleave =
        settings.spelled(flags.pp_interleave_num, "--pp-interleave-num", detail::model_sections(),
                         spellings::chunks, "the chunks per stage");
    interleave = agreed_count(
        interleave, newer({"pipeline_parallel_config", "virtual_pipeline_model_parallel_size"}),
        limits::chunks);
    if (given_not_null(interleave))
        layout.num_chunks = count_in(interleave, limits::chunks);
    // MindFormers runs the chunks only when MindSpore's pipeline_interleave is on, and
    // otherwise takes pp_interleave_num as 1; a configuration that says so explicitly is obeyed.
    if (const Setting switch_on =
            settings.file({"parallel", "pipeline_config", "pipeline_interleave"});
        layout.num_chunks > 1 && given_not_null(switch_on) &&
        boolean_of(switch_on.node()) == false && !interleave.from_flag()) {
        add_note(messages,
                 fmt::format("{} is {}, but {} is false: MindFormers then runs one chunk per "
                             "stage, and so does this import",
                             interleave.where(), layout.num_chunks, switch_on.where()));
        layout.num_chunks = 1;
    }
    if (layout.num_chunks > 1) {
        layout.schedule = Schedule::interleaved;
        if (layout.num_stages < 2) {
            interleave.fail(fmt::format(
                "{} chunks per stage need a pipeline of at least 2 stages (pipeline_stage is 1)",
                layout.num_chunks));
        }
    }
    // MindSpore's pipeline scheduler: "1f1b" (the default) as above; "zero_bubble_v" is ZB-V
    // (two chunks in a V, each backward split into its input and weight gradients: ppb's zb-v);
    // the sequence-pipelining schedulers split each micro-batch along the sequence, which no
    // ppb schedule models, and are refused by name.
    if (const Setting scheduler =
            settings.file({"parallel", "pipeline_config", "pipeline_scheduler"});
        given_not_null(scheduler) && scheduler.node().IsScalar()) {
        const std::string name = scheduler.node().Scalar();
        if (name == "zero_bubble_v") {
            if (layout.num_chunks != 2) {
                scheduler.fail(fmt::format(
                    "'zero_bubble_v' runs two chunks per stage in a V (pp_interleave_num 2 with "
                    "pipeline_interleave on), but this configuration has {}",
                    layout.num_chunks));
            }
            layout.schedule = Schedule::zb_v;
        } else if (name == "seqpipe" || name == "seqvpp" || name == "seqsmartvpp" ||
                   name == "gpipe") {
            scheduler.fail(fmt::format(
                "'{}' is not modelled by ppb: {}; ppb reads dry runs of '1f1b' (with or without "
                "pp_interleave_num) and 'zero_bubble_v'",
                name,
                name == "gpipe" ? "GPipe runs every forward before any backward, which holds "
                                  "other in-flight counts"
                                : "sequence pipelining splits each micro-batch into "
                                  "seq_split_num parts along the sequence, whose in-flight "
                                  "activations ppb has no counts for"));
        } else if (name != "1f1b") {
            scheduler.fail(fmt::format(
                "unknown pipeline_scheduler '{}' (ppb reads '1f1b' and 'zero_bubble_v')", name));
        }
    }
    if (const Setting split = settings.file({"parallel_config", "seq_split_num"});
        given_not_null(split) && split.node().IsScalar() && split.node().Scalar() != "1") {
        split.fail(fmt::format(
            "{}: SeqPipe (each micro-batch split into parts along the sequence) is not "
            "modelled by ppb, whose schedules hold whole micro-batches; import dry runs with "
            "seq_split_num 1",
            split.node().Scalar()));
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
        if (!given_not_null(setting)) {
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
    if (given_not_null(micro)) {
        layout.micro_batches = count_in(micro, limits::micro_batches);
    } else if (newer_layout && given_not_null(global_batch)) {
        // The newer layout derives it: global_batch_size // (data_parallel_size x
        // micro_batch_size x micro_batch_interleave_num).
        const Setting micro_size = settings.file({"training_args", "micro_batch_size"});
        const Setting interleave_num = newer({"micro_batch_interleave_num"});
        const std::uint64_t gbs = positive_integer(global_batch);
        const std::uint64_t mbs = given_not_null(micro_size) ? positive_integer(micro_size) : 1;
        const std::uint64_t mbi =
            given_not_null(interleave_num) ? positive_integer(interleave_num) : 1;
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

    // Any of MindFormers' names of the layer count, in the classic and the newer layout alike.
    const Setting num_layers_setting =
        settings.spelled(flags.num_layers, "--num-layers", detail::model_sections(),
                         spellings::num_layers, "the number of layers");
    if (!num_layers_setting.present()) {
        missing_setting(settings.config(), detail::spelled_path(spellings::num_layers),
                        "--num-layers L");
    }
    const std::uint32_t num_layers = count_in(num_layers_setting, limits::layers);

    Shape shape;
    shape.chunks = layout.num_chunks;
    shape.stages = layout.num_stages;
    shape.stages_from =
        fmt::format("pipeline_stage {} from {}", layout.num_stages, source_of(pipeline));
    if (shape.chunks > 1) {
        shape.chunks_from =
            fmt::format("pp_interleave_num {} from {}", shape.chunks, source_of(interleave));
    }
    // The offsets the logs' layers per stage mean, when nothing else gives them and the logs'
    // shape is this layout's.
    const std::uint32_t cells = layout.num_stages * layout.num_chunks;
    if (!stated.layers.empty() && absent_offset() &&
        stated.layers.front().size() == layout.num_stages &&
        (stated.per_chunk ? stated.layers.size() == layout.num_chunks : layout.num_chunks == 1) &&
        stated_sum == num_layers) {
        const std::int64_t cell = num_layers / cells;
        std::vector<std::vector<std::int64_t>> rows;
        bool uneven = false;
        for (const auto& row : stated.layers) {
            auto& offsets_row = rows.emplace_back();
            for (const std::uint32_t n : row) {
                offsets_row.push_back(static_cast<std::int64_t>(n) - cell);
                uneven = uneven || offsets_row.back() != 0;
            }
        }
        if (uneven)
            take(flags.offset, "--offset", rows_text(rows), stated.layers_where);
    }
    Setting offset_setting =
        settings.get(flags.offset, "--offset", {"model", "model_config", "offset"});
    if (!given_not_null(offset_setting) && !offset_setting.from_flag())
        offset_setting = settings.file({"model_config", "offset"});
    Grid<std::int64_t> offsets = cell_offsets(offset_setting, shape);
    if (const Setting stage_offset = newer({"pipeline_parallel_config", "pipeline_stage_offset"});
        given_not_null(stage_offset) && !offset_setting.from_flag()) {
        const auto newer_offsets = cell_offsets(stage_offset, shape);
        if (given_not_null(offset_setting) && newer_offsets != offsets) {
            const auto text = [](const Grid<std::int64_t>& grid) {
                std::vector<std::string> rows;
                for (const auto& row : grid)
                    rows.push_back(fmt::format("[{}]", fmt::join(row, ", ")));
                return rows.size() == 1 ? rows.front() : fmt::format("[{}]", fmt::join(rows, ", "));
            };
            layouts_disagree(offset_setting, text(offsets), stage_offset, text(newer_offsets));
        }
        offsets = newer_offsets;
        offset_setting = stage_offset;
    }
    // MindFormers gives chunk c of stage s num_layers // (pipeline_stage x pp_interleave_num)
    // layers plus its offset; chunk 0 of every stage first, then chunk 1, ...
    const std::int64_t base = num_layers / cells;
    const std::string base_text =
        layout.num_chunks == 1
            ? fmt::format("num_layers {} // pipeline_stage {} = {}", num_layers, layout.num_stages,
                          base)
            : fmt::format("num_layers {} // (pipeline_stage {} x pp_interleave_num {}) = {}",
                          num_layers, layout.num_stages, layout.num_chunks, base);
    Grid<std::uint32_t> layers(layout.num_chunks);
    std::int64_t sum = 0;
    std::string terms;
    for (std::uint32_t c = 0; c < layout.num_chunks; ++c) {
        for (std::uint32_t s = 0; s < layout.num_stages; ++s) {
            const std::string cell = layout.num_chunks == 1
                                         ? fmt::format("stage {}", s)
                                         : fmt::format("chunk {} of stage {}", c, s);
            // Checked before the sum so that no offset, however large, can overflow it: each
            // cell then holds 0 .. num_layers layers.
            const std::int64_t offset = offsets[c][s];
            if (offset > static_cast<std::int64_t>(num_layers)) {
                offset_setting.fail(fmt::format(
                    "{} would hold {} + {} layers, more than the model's {} ({} plus its offset)",
                    cell, base, offset, num_layers, base_text));
            }
            const std::int64_t n = base + offset;
            if (n < 0) {
                offset_setting.fail(
                    fmt::format("{} would hold {} + ({}) = {} layers ({} plus its "
                                "offset)",
                                cell, base, offset, n, base_text));
            }
            layers[c].push_back(static_cast<std::uint32_t>(n));
            sum += n;
            terms += fmt::format("{}{}", terms.empty() ? "" : " + ", n);
        }
    }
    if (sum != num_layers) {
        const std::string message = fmt::format(
            "the {} hold {} = {} layers, but num_layers is {} (from {}): each {} holds {} plus "
            "its offset, so the offsets must sum to {}, not {}{}",
            layout.num_chunks == 1 ? "stages" : "chunks of the stages", terms, sum, num_layers,
            source_of(num_layers_setting), layout.num_chunks == 1 ? "stage" : "chunk of a stage",
            base_text, num_layers - base * cells, sum - base * cells,
            layout.num_chunks > 1 && offsets.size() > 1 && offset_setting.present() &&
                    setting_entries(offset_setting, shape).per_stage
                ? " (one offset per stage applies to every chunk)"
                : "");
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
    const auto full_counts = recompute_counts(full, layers, shape, true);
    const auto select_counts = recompute_counts(select, layers, shape, true);
    const auto comm_counts = recompute_counts(comm, layers, shape, true);
    for (std::uint32_t s = 0; s < layout.num_stages; ++s) {
        KindCounts total{};
        std::vector<KindCounts> chunks;
        for (std::uint32_t c = 0; c < layout.num_chunks; ++c) {
            const KindCounts kinds = split_recompute(layers[c][s], full_counts[c][s],
                                                     select_counts[c][s], comm_counts[c][s]);
            for (std::size_t k = 0; k < kinds.size(); ++k)
                total[k] += kinds[k];
            chunks.push_back(kinds);
        }
        layout.stages.push_back(total);
        if (layout.num_chunks > 1)
            layout.chunks.push_back(std::move(chunks));
    }
    // What the logs state the run had.
    if (!stated.layers.empty()) {
        bool same = stated.layers.front().size() == layout.num_stages;
        if (same && stated.per_chunk) {
            same = stated.layers == layers;
        } else if (same) {
            for (std::uint32_t s = 0; s < layout.num_stages; ++s)
                same = same && total_layers(layout.stages[s]) == stated.layers.front()[s];
        }
        if (!same) {
            std::vector<std::vector<std::int64_t>> rows;
            for (const auto& row : layers)
                rows.emplace_back(row.begin(), row.end());
            throw InputError(fmt::format(
                "the layout gives {} layers per {} ({}; {}), but {} says 'num_layers per stage: "
                "{}': are these the logs of this configuration's run?",
                rows_text(rows), layout.num_chunks > 1 ? "chunk and stage" : "stage", base_text,
                offset_setting.present() ? "offsets from " + source_of(offset_setting)
                                         : std::string("no offset"),
                stated.layers_where, stated.layers_text));
        }
    }
    if (stated.stages && *stated.stages != layout.num_stages) {
        throw InputError(fmt::format(
            "the layout has {} stages (pipeline_stage from {}), but {} says pipeline_stages = "
            "{}: are these the logs of this configuration's run?",
            layout.num_stages, source_of(pipeline), stated.stages_where, *stated.stages));
    }
    add_moe_groups(settings, flags, num_layers, layout, messages);
    return layout;
}

MindSporeLogLayout mindspore_log_layout(std::span<const LogFile> logs) {
    MindSporeLogLayout stated;
    for (const LogFile& log : logs) {
        for_each_line(log, [&](std::size_t line, std::string_view text) {
            read_layout_statement(stated, log, line, text);
        });
    }
    return stated;
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
        // The reading the next "with fragments" line belongs to: MindSpore prints it right
        // after the "without fragments" line of the same run.
        std::optional<std::size_t> waiting;
        for_each_line(log, [&](std::size_t line, std::string_view text) {
            nul_found = nul_found || text.find('\0') != std::string_view::npos;
            const std::size_t at = text.find(marker);
            if (at == std::string_view::npos) {
                const std::size_t other_at = text.find(other);
                if (other_at == std::string_view::npos)
                    return;
                other_found = true;
                if (memory != MindSporeMemory::used || !waiting)
                    return;
                require_utf8(text, log.name, line, "the memory line");
                MemoryReading& used = readings[*waiting];
                waiting.reset();
                const double actual =
                    parse_megabytes(text.substr(other_at + other.size()), log, line, other, text);
                if (actual < used.mb) {
                    throw InputError(fmt::format(
                        "{}:{}: the peak with fragments, {}M, is less than the peak without "
                        "them on line {}, {}M: the allocator's fragments only add to it, so the "
                        "log is damaged",
                        log.name, line, actual, used.line, used.mb));
                }
                used.reserved_mb = actual;
                used.reserved_where = fmt::format("{}:{}", log.name, line);
                return;
            }
            require_utf8(text, log.name, line, "the memory line");
            const double mb =
                parse_megabytes(text.substr(at + marker.size()), log, line, marker, text);
            MemoryReading reading{*log.rank, mb, log.name, line, std::nullopt, {}};
            // --memory actual: the figure is the peak with fragments itself.
            if (memory == MindSporeMemory::actual)
                reading.reserved_mb = mb;
            readings.push_back(std::move(reading));
            waiting = readings.size() - 1;
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
