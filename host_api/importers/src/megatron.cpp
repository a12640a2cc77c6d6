// Megatron-LM runs: layout from Megatron's flags, memory from report_memory() lines.
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_layout.hpp>
#include <ppb/limits.hpp>
#include <ppb/schedule_order.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ppb::importers {
namespace {

constexpr std::string_view rank_marker = "[Rank ";
constexpr std::string_view memory_marker = "memory (MB)";

std::string_view trim(std::string_view text) {
    const std::size_t first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos)
        return {};
    const std::size_t last = text.find_last_not_of(" \t");
    return text.substr(first, last - first + 1);
}

// "[Rank 12]" at the start of `text`: 12 and the length of the marker.
std::optional<std::pair<std::uint32_t, std::size_t>> rank_prefix(std::string_view text) {
    if (!text.starts_with(rank_marker))
        return std::nullopt;
    const std::string_view rest = text.substr(rank_marker.size());
    std::uint32_t rank = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), rank);
    if (ec != std::errc{} || end == rest.data() + rest.size() || *end != ']')
        return std::nullopt;
    return std::pair{rank, rank_marker.size() + static_cast<std::size_t>(end - rest.data()) + 1};
}

// --moe-layer-freq's list expressions: the small part of Python that Megatron's scripts use.
//   expression := term ('+' term)*
//   term       := integer '*' atom | atom ('*' integer)*
//   atom       := '[' [bit (',' bit)*] ']' | '(' expression ')'
//   bit        := '0' | '1'
class PatternParser {
  public:
    PatternParser(std::string_view text, std::string_view given) : text_(text), given_(given) {}

    std::vector<bool> parse() {
        std::vector<bool> pattern = expression();
        skip_spaces();
        if (at_ < text_.size())
            fail("unexpected '" + std::string(1, text_[at_]) + "'");
        return pattern;
    }

  private:
    // Longer than any model: refused before repetition could exhaust memory.
    static constexpr std::size_t max_length = limits::layers.max;

    [[noreturn]] void fail(const std::string& problem) const {
        throw FlagError(fmt::format(
            "--moe-layer-freq '{}': {} at character {}; expected an integer N (every N-th layer "
            "is an MoE layer) or a list expression of 0 (dense) and 1 (MoE) per layer, such as "
            "[0]*3+[1]*58 or ([1]*3+[0])*2",
            given_, problem, at_ + 1));
    }
    void skip_spaces() {
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t'))
            ++at_;
    }
    bool accept(char c) {
        skip_spaces();
        if (at_ < text_.size() && text_[at_] == c) {
            ++at_;
            return true;
        }
        return false;
    }
    bool at_digit() {
        skip_spaces();
        return at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9';
    }
    std::uint64_t integer() {
        if (!at_digit())
            fail("expected an integer");
        std::uint64_t value = 0;
        const auto [end, ec] =
            std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
        if (ec != std::errc{})
            fail("the integer is too large");
        at_ = static_cast<std::size_t>(end - text_.data());
        return value;
    }
    std::vector<bool> repeated(const std::vector<bool>& pattern, std::uint64_t times) {
        if (!pattern.empty() && times > max_length / pattern.size())
            fail(fmt::format("the list is longer than {} layers", max_length));
        std::vector<bool> out;
        out.reserve(pattern.size() * times);
        for (std::uint64_t i = 0; i < times; ++i)
            out.insert(out.end(), pattern.begin(), pattern.end());
        return out;
    }
    std::vector<bool> expression() {
        std::vector<bool> pattern = term();
        while (accept('+')) {
            const std::vector<bool> next = term();
            if (pattern.size() + next.size() > max_length)
                fail(fmt::format("the list is longer than {} layers", max_length));
            pattern.insert(pattern.end(), next.begin(), next.end());
        }
        return pattern;
    }
    std::vector<bool> term() {
        if (at_digit()) {
            const std::uint64_t times = integer();
            if (!accept('*'))
                fail("expected '*' after an integer in a list expression");
            return repeated(atom(), times);
        }
        std::vector<bool> pattern = atom();
        while (accept('*'))
            pattern = repeated(pattern, integer());
        return pattern;
    }
    std::vector<bool> atom() {
        if (accept('(')) {
            std::vector<bool> inner = expression();
            if (!accept(')'))
                fail("expected ')'");
            return inner;
        }
        if (!accept('['))
            fail("expected '[' or '('");
        std::vector<bool> list;
        if (accept(']'))
            return list;
        do {
            const std::uint64_t bit = integer();
            if (bit > 1)
                fail(fmt::format("{} is neither 0 (dense) nor 1 (MoE)", bit));
            list.push_back(bit == 1);
        } while (accept(','));
        if (!accept(']'))
            fail("expected ',' or ']'");
        return list;
    }

    std::string_view text_;
    std::string_view given_;
    std::size_t at_ = 0;
};

struct MemoryRecord {
    std::optional<std::uint32_t> rank;  // from "[Rank N]"
    std::string_view fields;            // the text after "memory (MB)"
    std::string_view text;              // the record, for messages
};

// The memory records of one line: each "[Rank N] ... memory (MB) | ..." up to the next
// "[Rank " (two ranks' prints can share a line), or one record without a rank.
std::vector<MemoryRecord> memory_records(std::string_view line) {
    std::vector<MemoryRecord> records;
    if (line.find(memory_marker) == std::string_view::npos)
        return records;
    std::size_t at = line.find(rank_marker);
    bool any_rank = false;
    while (at != std::string_view::npos) {
        const std::size_t next = line.find(rank_marker, at + 1);
        const std::string_view segment =
            line.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at);
        const auto prefix = rank_prefix(segment);
        const std::size_t memory = segment.find(memory_marker);
        if (prefix && memory != std::string_view::npos &&
            segment.find('|', memory) != std::string_view::npos) {
            records.push_back(MemoryRecord{prefix->first,
                                           segment.substr(memory + memory_marker.size()), segment});
        }
        any_rank = any_rank || prefix.has_value();
        at = next;
    }
    if (!any_rank) {
        const std::size_t memory = line.find(memory_marker);
        if (line.find('|', memory) != std::string_view::npos) {
            records.push_back(
                MemoryRecord{std::nullopt, line.substr(memory + memory_marker.size()), line});
        }
    }
    return records;
}

// The figure `wanted` of the record, or nullopt when it has none (`names` then lists the fields
// it has). Throws InputError for a figure that is not a positive number of MB.
std::optional<double> record_field(const MemoryRecord& record, std::string_view wanted,
                                   const LogFile& log, std::size_t line,
                                   std::vector<std::string_view>& names) {
    std::string_view rest = record.fields;
    while (!rest.empty()) {
        const std::size_t bar = rest.find('|');
        const std::string_view field = rest.substr(0, bar);
        rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
        const std::size_t colon = field.find(':');
        if (colon == std::string_view::npos)
            continue;
        const std::string_view name = trim(field.substr(0, colon));
        if (name != wanted) {
            if (!name.empty())
                names.push_back(name);
            continue;
        }
        const std::string_view value = trim(field.substr(colon + 1));
        double mb = 0.0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mb);
        if (value.empty() || ec != std::errc{} || end != value.data() + value.size() ||
            !std::isfinite(mb)) {
            throw InputError(fmt::format(
                "{}:{}: malformed memory line: expected a number of MB after '{}:', got {}",
                log.name, line, wanted, quote_excerpt(value, 40)));
        }
        if (!(mb > 0.0)) {
            throw InputError(fmt::format(
                "{}:{}: '{}' is {} MB, which is not a measured peak (expected a positive number)",
                log.name, line, wanted, value));
        }
        return mb;
    }
    return std::nullopt;
}

// The reading of one record: the figure `memory` and, when the line has it, "max reserved" (at
// least that figure: PyTorch reserves at least what it allocates).
MemoryReading record_reading(const MemoryRecord& record, std::uint32_t rank, MegatronMemory memory,
                             const LogFile& log, std::size_t line) {
    const std::string_view wanted = megatron_memory_field(memory);
    std::vector<std::string_view> names;
    const std::optional<double> mb = record_field(record, wanted, log, line, names);
    if (!mb) {
        throw InputError(fmt::format(
            "{}:{}: the memory line has no '{}' figure (it has: {}); choose another with --memory",
            log.name, line, wanted,
            names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
    }
    MemoryReading reading{rank, *mb, log.name, line, std::nullopt, {}};
    const std::string_view reserved_field = megatron_memory_field(MegatronMemory::max_reserved);
    std::vector<std::string_view> ignored;
    reading.reserved_mb = record_field(record, reserved_field, log, line, ignored);
    if (reading.reserved_mb && *reading.reserved_mb < *mb) {
        throw InputError(fmt::format(
            "{}:{}: '{}' is {:.1f} MB, less than '{}' {:.1f} MB: PyTorch reserves at least what it "
            "allocates, so the line is damaged",
            log.name, line, reserved_field, *reading.reserved_mb, wanted, *mb));
    }
    return reading;
}

}  // namespace

std::optional<MegatronMemory> megatron_memory_from_name(std::string_view name) {
    std::string normal(name);
    std::replace(normal.begin(), normal.end(), '-', ' ');
    std::replace(normal.begin(), normal.end(), '_', ' ');
    if (normal == "allocated")
        return MegatronMemory::allocated;
    if (normal == "max allocated")
        return MegatronMemory::max_allocated;
    if (normal == "reserved")
        return MegatronMemory::reserved;
    if (normal == "max reserved")
        return MegatronMemory::max_reserved;
    return std::nullopt;
}

std::string_view megatron_memory_field(MegatronMemory memory) {
    switch (memory) {
        case MegatronMemory::allocated:
            return "allocated";
        case MegatronMemory::max_allocated:
            return "max allocated";
        case MegatronMemory::reserved:
            return "reserved";
        case MegatronMemory::max_reserved:
            return "max reserved";
    }
    return "max allocated";
}

MegatronScan scan_megatron_logs(std::span<const LogFile> logs, MegatronMemory memory,
                                Messages& messages) {
    MegatronScan scan;
    std::vector<MemoryReading> readings;
    std::vector<std::string> skipped;
    for (const LogFile& log : logs) {
        std::size_t found = 0;
        bool nul_found = false;
        for_each_line(log, [&](std::size_t line, std::string_view text) {
            nul_found = nul_found || text.find('\0') != std::string_view::npos;
            scan.arguments.read_line(log.name, line, text);
            for (const MemoryRecord& record : memory_records(text)) {
                require_utf8(record.text, log.name, line, "the memory line");
                std::uint32_t rank = 0;
                if (record.rank) {
                    rank = *record.rank;
                } else if (log.rank) {
                    rank = *log.rank;
                } else {
                    throw InputError(fmt::format(
                        "{}:{}: a memory line without '[Rank N]', and the log's rank is not known: "
                        "give --rank {}=ID",
                        log.name, line, log.name));
                }
                readings.push_back(record_reading(record, rank, memory, log, line));
                ++found;
            }
        });
        scan.arguments.end_of_file();
        if (found > 0)
            continue;
        if (!log.named) {
            skipped.push_back(log.name);
            continue;
        }
        throw InputError(fmt::format(
            "{}: no Megatron memory line ('[Rank N] (after K iterations) memory (MB) | allocated: "
            "... | max allocated: ...'){}",
            log.name,
            nul_found ? " (it holds NUL bytes: is it UTF-16 text or a binary file? ppb reads "
                        "logs as UTF-8 text)"
                      : " (Megatron prints it once, at the first --log-interval iteration: did "
                        "the run get that far?)"));
    }
    if (!skipped.empty()) {
        add_note(messages,
                 fmt::format("skipped {} log{} without Megatron memory lines: {}", skipped.size(),
                             skipped.size() == 1 ? "" : "s", fmt::join(skipped, ", ")));
    }
    if (readings.empty())
        throw InputError("none of the logs read has a Megatron memory line");
    scan.readings = last_reading_per_rank(readings, "memory lines", messages);
    return scan;
}

std::vector<bool> moe_layer_pattern(std::string_view given, std::uint32_t num_layers) {
    std::string_view text = trim(given);
    // Quotes a shell left in place ("'([1]*48)'"), possibly nested.
    while (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') &&
           text.back() == text.front()) {
        text = trim(text.substr(1, text.size() - 2));
    }
    if (!text.empty() &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        std::uint64_t every = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), every);
        if (ec != std::errc{} || every == 0) {
            throw FlagError(fmt::format(
                "--moe-layer-freq {}: expected an integer N of at least 1 (every N-th layer is an "
                "MoE layer) or a list expression such as [0]*3+[1]*58",
                given));
        }
        // Megatron: layer i is an MoE layer when i % N == 0.
        std::vector<bool> pattern(num_layers);
        for (std::uint32_t i = 0; i < num_layers; ++i)
            pattern[i] = i % every == 0;
        return pattern;
    }
    std::vector<bool> pattern = PatternParser(text, given).parse();
    if (pattern.size() != num_layers) {
        throw FlagError(fmt::format(
            "--moe-layer-freq '{}' gives {} layer{}, but --num-layers is {}: the list needs one "
            "entry per layer (Megatron refuses it otherwise)",
            given, pattern.size(), pattern.size() == 1 ? "" : "s", num_layers));
    }
    return pattern;
}

namespace {

// Megatron's layers per (stage, chunk) without the layout flags: --num-layers split evenly, or
// with --decoder-first- / --decoder-last-pipeline-num-layers the other stages sharing the rest;
// each stage's layers split evenly over its virtual-pipeline chunks.
std::vector<std::vector<std::uint32_t>> even_split_counts(const MegatronFlags& flags) {
    const std::uint32_t p = *flags.pipeline_size;
    const std::uint32_t layers = *flags.num_layers;
    std::vector<std::uint32_t> per_stage(p, 0);
    const auto& first = flags.first_stage_layers;
    const auto& last = flags.last_stage_layers;
    if (first || last) {
        if (p < 2) {
            throw FlagError(
                "--decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers need "
                "a pipeline of at least 2 stages");
        }
        const std::uint64_t given = std::uint64_t{first.value_or(0)} + last.value_or(0);
        if (given > layers) {
            throw FlagError(fmt::format(
                "the first and last stages' layers ({}) exceed --num-layers {}", given, layers));
        }
        const std::uint32_t rest = layers - static_cast<std::uint32_t>(given);
        const std::uint32_t others = p - (first ? 1 : 0) - (last ? 1 : 0);
        if (others == 0 ? rest != 0 : rest % others != 0) {
            throw FlagError(
                fmt::format("--num-layers {} leaves {} layers for the other {} stage{} after the "
                            "first and last "
                            "stages' layers, which {} (Megatron requires an even split)",
                            layers, rest, others, others == 1 ? "" : "s",
                            others == 0 ? "no stage can hold" : "do not divide evenly"));
        }
        std::fill(per_stage.begin(), per_stage.end(), others == 0 ? 0 : rest / others);
        if (first)
            per_stage.front() = *first;
        if (last)
            per_stage.back() = *last;
    } else {
        if (layers % p != 0) {
            throw FlagError(fmt::format(
                "--num-layers {} does not divide into {} stages (Megatron requires it, unless "
                "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers say "
                "otherwise)",
                layers, p));
        }
        std::fill(per_stage.begin(), per_stage.end(), layers / p);
    }

    // Virtual pipeline chunks: each stage's layers split evenly over them.
    const auto& per_virtual = flags.layers_per_virtual_stage;
    const auto& virtual_stages = flags.virtual_stages;
    if (per_virtual && virtual_stages) {
        throw FlagError(
            "--num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank "
            "must not be given together (Megatron refuses it): give one");
    }
    std::uint32_t chunks = 1;
    if (per_virtual) {
        if (first || last) {
            throw FlagError(
                "--num-layers-per-virtual-pipeline-stage cannot be combined with "
                "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers "
                "(Megatron refuses it): give --num-virtual-stages-per-pipeline-rank instead");
        }
        const std::uint32_t stage_layers = layers / p;  // layers % p == 0 checked above
        if (*per_virtual == 0 || stage_layers % *per_virtual != 0) {
            throw FlagError(fmt::format(
                "--num-layers-per-virtual-pipeline-stage {} does not divide the {} layers of "
                "each stage (--num-layers {} / --pipeline-model-parallel-size {}), as Megatron "
                "requires",
                *per_virtual, stage_layers, layers, p));
        }
        chunks = stage_layers / *per_virtual;
        if (!limits::chunks.contains(chunks)) {
            throw FlagError(fmt::format(
                "--num-layers-per-virtual-pipeline-stage {} gives {} chunks per stage: {}",
                *per_virtual, chunks,
                limits::out_of_range(std::to_string(chunks), limits::chunks)));
        }
    } else if (virtual_stages) {
        chunks = *virtual_stages;
        for (std::uint32_t s = 0; s < p; ++s) {
            if (per_stage[s] % chunks != 0) {
                throw FlagError(fmt::format(
                    "--num-virtual-stages-per-pipeline-rank {}: stage {} holds {} layers, which "
                    "do not split evenly into {} chunks (Megatron requires it)",
                    chunks, s, per_stage[s], chunks));
            }
        }
    }
    std::vector<std::vector<std::uint32_t>> counts;
    for (const std::uint32_t n : per_stage)
        counts.emplace_back(chunks, n / chunks);
    return counts;
}

}  // namespace

namespace {

PipelineLayout layout_of(MegatronFlags flags, const MegatronScan& scan, Messages& messages) {
    const char* no_dump = scan.arguments.empty() && scan.logs_read
                              ? " (the logs state none of the run's arguments)"
                              : "";
    if (!flags.pipeline_size)
        throw FlagError(fmt::format("missing --pipeline-model-parallel-size P{}", no_dump));
    if (!flags.num_layers)
        throw FlagError(fmt::format("missing --num-layers L{}", no_dump));
    const std::uint32_t p = *flags.pipeline_size;
    const std::uint32_t layers = *flags.num_layers;
    if (!limits::stages.contains(p)) {
        throw FlagError("--pipeline-model-parallel-size: " +
                        limits::out_of_range(std::to_string(p), limits::stages));
    }
    if (!limits::layers.contains(layers))
        throw FlagError("--num-layers: " +
                        limits::out_of_range(std::to_string(layers), limits::layers));
    if (flags.micro_batches && !limits::micro_batches.contains(*flags.micro_batches)) {
        throw FlagError(
            "--num-microbatches: " +
            limits::out_of_range(std::to_string(*flags.micro_batches), limits::micro_batches));
    }

    PipelineLayout layout;
    layout.num_stages = p;
    layout.micro_batches = flags.micro_batches;
    if (!flags.micro_batches) {
        add_note(messages,
                 "no --num-microbatches: the dry-run file gives no micro-batch count, so each "
                 "stage's in-flight count is taken as P - stage");
    }

    // World size and rank order.
    if (!flags.world_size) {
        throw FlagError(scan.logs_read ? "missing --world-size N (the number of ranks; the logs "
                                         "have no 'using world size' line)"
                                       : "missing --world-size N (the number of ranks)");
    }
    const std::uint32_t world = *flags.world_size;
    if (world == 0 || world % p != 0) {
        throw FlagError(fmt::format(
            "world size {} is not a multiple of --pipeline-model-parallel-size {}", world, p));
    }
    layout.ranks_per_stage = world / p;
    layout.ranks_explained =
        fmt::format("world size {} / pipeline-model-parallel-size {}", world, p);

    // MindSpeed-LLM's no-op layers (megatron_layout.hpp); beside them MindSpeed-LLM drops
    // --num-layer-list (NumLayerListFeature.validate_args).
    std::vector<bool> is_noop(layers, false);
    std::vector<std::uint32_t> noop;
    if (flags.noop_layers) {
        noop = parse_noop_layers(*flags.noop_layers, layers, "--noop-layers");
        for (const std::uint32_t i : noop)
            is_noop[i] = true;
        if (flags.num_layer_list) {
            add_warning(messages,
                        fmt::format("--num-layer-list '{}' is not used: MindSpeed-LLM drops it "
                                    "when --noop-layers is given (\"num layer list would be "
                                    "disabled when noop-layer is activated\"), and so does this "
                                    "import",
                                    *flags.num_layer_list));
            flags.num_layer_list.reset();
        }
    }

    // Layers per (stage, chunk): from the layout flags, or Megatron's even split below.
    std::vector<std::vector<std::uint32_t>> chunk_counts;
    if (auto counts = megatron_layout_flag_counts(flags, messages))
        chunk_counts = std::move(*counts);
    else
        chunk_counts = even_split_counts(flags);
    const auto chunks = static_cast<std::uint32_t>(chunk_counts.front().size());
    if (chunks > 1) {
        if (p < 2) {
            throw FlagError(fmt::format(
                "{} virtual pipeline chunks per stage need --pipeline-model-parallel-size 2 or "
                "more",
                chunks));
        }
        if (!limits::chunks.contains(chunks)) {
            throw FlagError(
                fmt::format("{} virtual pipeline chunks per stage: {}", chunks,
                            limits::out_of_range(std::to_string(chunks), limits::chunks)));
        }
        layout.schedule = Schedule::interleaved;
        layout.num_chunks = chunks;
    }
    // --overlap-moe-expert-parallel-comm: the combined 1F1B, which Megatron-LM runs with a
    // pipeline only interleaved (transformer_config.py at d98e8a64dd).
    if (flags.overlap_moe_expert_parallel_comm) {
        if (!schedule_shape_problem(Schedule::combined_1f1b, p, chunks, p).empty()) {
            throw FlagError(fmt::format(
                "--overlap-moe-expert-parallel-comm with --pipeline-model-parallel-size {} needs "
                "a virtual pipeline (--num-layers-per-virtual-pipeline-stage, "
                "--num-virtual-stages-per-pipeline-rank or a layout of several chunks): "
                "Megatron-LM refuses it otherwise",
                p));
        }
        layout.schedule = Schedule::combined_1f1b;
    }
    const std::vector<std::vector<std::uint32_t>>& per_chunk = chunk_counts;

    // Recompute kinds.
    enum class Recompute { none, select, full_uniform, full_block };
    Recompute recompute = Recompute::none;
    const auto& granularity = flags.recompute_granularity;
    const auto& method = flags.recompute_method;
    if (!granularity) {
        if (method || flags.recompute_num_layers) {
            add_warning(messages,
                        fmt::format("{} has no effect without --recompute-granularity (Megatron "
                                    "then recomputes nothing)",
                                    method ? "--recompute-method" : "--recompute-num-layers"));
        }
    } else if (*granularity == "selective") {
        if (flags.recompute_num_layers) {
            throw FlagError(
                "--recompute-num-layers must not be given with --recompute-granularity "
                "selective (Megatron refuses it)");
        }
        recompute = Recompute::select;
    } else if (*granularity == "full") {
        if (!method) {
            throw FlagError(
                "--recompute-granularity full needs --recompute-method uniform or block (as "
                "Megatron does)");
        }
        if (*method != "uniform" && *method != "block") {
            throw FlagError(
                fmt::format("--recompute-method: expected uniform or block, got '{}'", *method));
        }
        if (!flags.recompute_num_layers) {
            throw FlagError(
                "--recompute-granularity full needs --recompute-num-layers N (as Megatron does)");
        }
        recompute = *method == "uniform" ? Recompute::full_uniform : Recompute::full_block;
    } else {
        throw FlagError(fmt::format("--recompute-granularity: expected full or selective, got '{}'",
                                    *granularity));
    }
    if (method && *method != "uniform" && *method != "block") {
        throw FlagError(
            fmt::format("--recompute-method: expected uniform or block, got '{}'", *method));
    }

    // The kind of the layer at position i of its chunk: each chunk is a transformer block of its
    // own, and the block method recomputes its first N layers.
    const auto kind_at = [&](std::uint32_t i) {
        switch (recompute) {
            case Recompute::none:
                return PPB_KIND_NONE;
            case Recompute::select:
                return PPB_KIND_SELECT;
            case Recompute::full_uniform:
                return PPB_KIND_FULL;
            case Recompute::full_block:
                return i < *flags.recompute_num_layers ? PPB_KIND_FULL : PPB_KIND_NONE;
        }
        return PPB_KIND_NONE;
    };
    // Chunk c of stage s holds the layers after those of chunk c of the stages before it and of
    // every stage's earlier chunks (Megatron's model order); its no-op layers are not counted.
    std::vector<std::vector<std::uint32_t>> first(p, std::vector<std::uint32_t>(chunks, 0));
    std::uint32_t position = 0;
    for (std::uint32_t c = 0; c < chunks; ++c) {
        for (std::uint32_t s = 0; s < p; ++s) {
            first[s][c] = position;
            position += per_chunk[s][c];
        }
    }
    std::vector<std::uint32_t> real_per_stage;
    for (std::uint32_t s = 0; s < p; ++s) {
        KindCounts total{};
        std::vector<KindCounts> each;
        for (std::uint32_t c = 0; c < chunks; ++c) {
            KindCounts counts{};
            for (std::uint32_t i = 0; i < per_chunk[s][c]; ++i) {
                if (!is_noop[first[s][c] + i])
                    ++counts[kind_at(i)];
            }
            for (std::size_t k = 0; k < total.size(); ++k)
                total[k] += counts[k];
            each.push_back(counts);
        }
        real_per_stage.push_back(total_layers(total));
        layout.stages.push_back(total);
        if (chunks > 1)
            layout.chunks.push_back(std::move(each));
    }
    if (!noop.empty()) {
        add_note(messages,
                 fmt::format("--noop-layers: {} of the {} layers are MindSpeed-LLM's no-op layers "
                             "({}), which hold no transformer block and no memory: the stages "
                             "count only their {} real layers ({})",
                             noop.size(), layers, describe_numbers(noop), layers - noop.size(),
                             fmt::join(real_per_stage, ", ")));
    }

    // The chunk count the run had, where its logs state it (Megatron derives it from the
    // virtual-pipeline or layout flags; None is one chunk per stage).
    if (const StatedValue* v = scan.arguments.find("virtual_pipeline_model_parallel_size")) {
        std::uint32_t stated = 1;
        if (!v->is_none()) {
            const auto [end, ec] =
                std::from_chars(v->text.data(), v->text.data() + v->text.size(), stated);
            if (ec != std::errc{} || end != v->text.data() + v->text.size() || stated == 0) {
                throw InputError(fmt::format("{}: {} '{}': expected a whole number or None",
                                             v->where(), v->label, v->text));
            }
        }
        if (stated != chunks) {
            throw InputError(fmt::format(
                "the flags give {} chunk{} per stage, but {} says {} {} ({} per stage in that "
                "run): give the virtual-pipeline or layout flags the run had",
                chunks, chunks == 1 ? "" : "s", v->where(), v->label, v->text, stated));
        }
    }

    // MoE layers: which layers are, from --num-experts and --moe-layer-freq or
    // --first-k-dense-replace; then each chunk's layers by group.
    if (!flags.num_experts) {
        if (flags.moe_layer_freq || flags.first_k_dense_replace) {
            throw FlagError(fmt::format(
                "{} describes MoE layers, but --num-experts is not given (without it Megatron "
                "builds no MoE layer): give --num-experts N",
                flags.moe_layer_freq ? "--moe-layer-freq" : "--first-k-dense-replace"));
        }
        return layout;
    }
    std::vector<bool> is_moe;
    std::string pattern_from;
    if (flags.first_k_dense_replace) {
        const std::uint32_t k = *flags.first_k_dense_replace;
        if (flags.moe_layer_freq && trim(*flags.moe_layer_freq) != "1") {
            throw FlagError(fmt::format(
                "--first-k-dense-replace {} and --moe-layer-freq '{}' both say which layers are "
                "MoE layers: give one (MindSpeed-LLM refuses --first-k-dense-replace with a "
                "--moe-layer-freq other than 1)",
                k, *flags.moe_layer_freq));
        }
        if (k >= layers) {
            throw FlagError(fmt::format(
                "--first-k-dense-replace {} leaves no MoE layer of the --num-layers {}, but "
                "--num-experts {} is given: the first K layers are dense, so K must be below {}",
                k, layers, *flags.num_experts, layers));
        }
        is_moe.assign(layers, true);
        std::fill(is_moe.begin(), is_moe.begin() + k, false);
        pattern_from = fmt::format("--first-k-dense-replace {}", k);
    } else {
        const std::string freq = flags.moe_layer_freq.value_or("1");
        is_moe = moe_layer_pattern(freq, layers);
        pattern_from = flags.moe_layer_freq
                           ? fmt::format("--moe-layer-freq '{}'", freq)
                           : std::string("--moe-layer-freq 1 (Megatron's default)");
    }
    // No-op layers hold no block, so no MoE layer either: the groups count the real layers.
    std::vector<bool> real_is_moe;
    for (std::uint32_t i = 0; i < layers; ++i) {
        if (!is_noop[i])
            real_is_moe.push_back(is_moe[i]);
    }
    is_moe = std::move(real_is_moe);
    const auto moe_count =
        static_cast<std::uint32_t>(std::count(is_moe.begin(), is_moe.end(), true));
    if (moe_count == 0) {
        throw FlagError(fmt::format(
            "{} makes no layer an MoE layer, but --num-experts {} is given: give a pattern with "
            "MoE layers (1), or leave --num-experts out for a dense model",
            pattern_from, *flags.num_experts));
    }
    split_into_groups(layout, moe_groups(is_moe));
    if (layout.groups.empty()) {
        add_note(messages, fmt::format("MoE: every one of the {} layers is an MoE layer ({}, "
                                       "--num-experts {}): one group of body layers",
                                       is_moe.size(), pattern_from, *flags.num_experts));
    } else {
        add_note(messages,
                 fmt::format("MoE: {} dense and {} MoE layers ({}, --num-experts {}): the layers "
                             "are counted per group, {}",
                             is_moe.size() - moe_count, moe_count, pattern_from, *flags.num_experts,
                             fmt::join(layout.groups, " and ")));
    }
    return layout;
}

}  // namespace

PipelineLayout megatron_layout(const MegatronFlags& given, const MegatronScan& scan,
                               Messages& messages) {
    const std::size_t before = messages.size();
    const MegatronFlags flags = megatron_flags_from_logs(given, scan.arguments, messages);
    std::vector<std::string> taken;
    for (std::size_t i = before; i < messages.size(); ++i)
        taken.push_back(messages[i].text);
    try {
        return layout_of(flags, scan, messages);
    } catch (const FlagError& e) {
        // A flag the message names may be one the logs gave: say which.
        if (taken.empty())
            throw;
        throw FlagError(fmt::format("{} (with {})", e.what(), fmt::join(taken, "; ")));
    }
}

}  // namespace ppb::importers
