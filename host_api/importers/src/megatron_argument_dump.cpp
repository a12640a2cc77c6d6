// What a Megatron-LM log says about its run: see megatron_argument_dump.hpp.
#include <ppb/importers/logs.hpp>
#include <ppb/importers/megatron_argument_dump.hpp>

#include <ppb/errors.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>

namespace ppb::importers {
namespace {

// The dump's keys 'ppb import megatron' reads: its flags' (megatron.hpp, MegatronFlags), the
// sizes the micro-batch count derives from, the chunk count Megatron derives, and what tells a
// run ppb cannot import.
constexpr std::string_view read_keys[] = {
    "pipeline_model_parallel_size",
    "num_layers",
    "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers",
    "num_layers_in_first_pipeline_stage",
    "num_layers_in_last_pipeline_stage",
    "num_layers_per_virtual_pipeline_stage",
    "num_virtual_stages_per_pipeline_rank",
    "virtual_pipeline_model_parallel_size",
    "pipeline_model_parallel_layout",
    "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
    "mtp_num_layers",
    "recompute_granularity",
    "recompute_method",
    "recompute_num_layers",
    "overlap_moe_expert_parallel_comm",
    "world_size",
    "data_parallel_size",
    "tensor_model_parallel_size",
    "context_parallel_size",
    "global_batch_size",
    "micro_batch_size",
    "rampup_batch_size",
    "step_batch_size_schedule",
    "decrease_batch_size_if_needed",
    "gtp_weight_remat_size",
    "num_experts",
    "moe_layer_freq",
    "first_k_dense_replace",
    "num_layer_list",
    "noop_layers",
    "schedules_method",
    "hybrid_layer_pattern",
    "hybrid_override_pattern",
};

std::string_view trim_right(std::string_view text) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
        text.remove_suffix(1);
    return text;
}

bool is_name_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::size_t trailing_dashes(std::string_view text) {
    std::size_t n = 0;
    while (n < text.size() && text[text.size() - 1 - n] == '-')
        ++n;
    return n;
}

// A dump's opening line, "<prefix>" + N dashes + " <title> " + N dashes, N 24 (current) or 20
// (old): the title and the name + dots width, 48 or 32.
struct Header {
    std::string title;
    std::size_t width = 48;
};

std::optional<Header> dump_header(std::string_view line) {
    const std::string_view text = trim_right(line);
    const std::size_t dashes = trailing_dashes(text);
    if (dashes != 24 && dashes != 20)
        return std::nullopt;
    const std::string run(dashes, '-');
    const std::size_t title_end = text.size() - dashes;
    if (title_end < 2 || text[title_end - 1] != ' ')
        return std::nullopt;
    // The opening run: exactly `dashes` dashes followed by a space.
    std::size_t at = text.find(run + " ");
    while (at != std::string_view::npos && at > 0 && text[at - 1] == '-')
        at = text.find(run + " ", at + 1);
    if (at == std::string_view::npos || at + dashes + 1 >= title_end - 1)
        return std::nullopt;
    const std::string_view title = text.substr(at + dashes + 1, title_end - 1 - (at + dashes + 1));
    if (title.empty() || title.starts_with("end of ") || title.front() == ' ' ||
        title.find("--") != std::string_view::npos) {
        return std::nullopt;
    }
    return Header{std::string(title), dashes == 24 ? 48U : 32U};
}

bool dump_end(std::string_view line, std::string_view title) {
    const std::string_view text = trim_right(line);
    const std::string wanted = fmt::format("- end of {} -", title);
    return trailing_dashes(text) > 0 && text.find(wanted) != std::string_view::npos;
}

// "  name ....... value" (or "  name  value" for a name of `width` characters or more)
// anywhere in `line`: the name and the value.
std::optional<std::pair<std::string_view, std::string_view>> dump_entry(std::string_view line,
                                                                        std::size_t width) {
    const std::string_view text = trim_right(line);
    for (std::size_t at = text.find("  "); at != std::string_view::npos;
         at = text.find("  ", at + 1)) {
        std::size_t i = at + 2;
        if (i >= text.size() || !is_name_start(text[i]))
            continue;
        const std::size_t name_start = i;
        while (i < text.size() && is_name_char(text[i]))
            ++i;
        const std::string_view name = text.substr(name_start, i - name_start);
        if (i >= text.size() || text[i] != ' ')
            continue;
        ++i;
        if (name.size() < width) {
            const std::size_t dots = width - name.size();
            if (text.size() < i + dots || text.substr(i, dots) != std::string(dots, '.'))
                continue;
            i += dots;
            if (i < text.size() && text[i] == '.')
                continue;  // more dots than the format prints
        } else if (i >= text.size() || text[i] != ' ') {
            continue;
        }
        // The space before the value (an empty string's line may end without it).
        if (i < text.size()) {
            if (text[i] != ' ')
                continue;
            ++i;
        }
        return std::pair{name, text.substr(i)};
    }
    return std::nullopt;
}

// The whole number after `label` in `text` when `label` starts a field (not after a letter,
// digit or '-': "encoder-pipeline-model-parallel size" is not "pipeline-model-parallel size";
// a prefix such as "[default0]:" may precede it).
std::optional<std::string_view> field_value(std::string_view text, std::string_view label) {
    for (std::size_t at = text.find(label); at != std::string_view::npos;
         at = text.find(label, at + 1)) {
        if (at > 0 && (text[at - 1] == '-' || is_name_char(text[at - 1])))
            continue;
        const std::size_t start = at + label.size();
        std::size_t end = start;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0)
            ++end;
        if (end == start)
            continue;
        return text.substr(start, end - start);
    }
    return std::nullopt;
}

}  // namespace

std::string StatedValue::where() const {
    return fmt::format("{}:{}", file, line);
}

std::string StatedValue::described() const {
    return fmt::format("{} {} ({})", label, text, where());
}

bool MegatronArgumentDump::is_read_key(std::string_view key) {
    return std::ranges::find(read_keys, key) != std::end(read_keys);
}

const StatedValue* MegatronArgumentDump::find(std::string_view key) const {
    const auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second;
}

void MegatronArgumentDump::state(std::string key, StatedValue value) {
    const auto [it, added] = values_.try_emplace(std::move(key), value);
    if (added || it->second.text == value.text)
        return;
    throw InputError(fmt::format("{}: {} {}, but {} says {} {}: are these logs of one run?",
                                 value.where(), value.label, value.text, it->second.where(),
                                 it->second.label, it->second.text));
}

void MegatronArgumentDump::end_of_file() {
    open_.reset();
}

void MegatronArgumentDump::read_line(std::string_view file, std::size_t line,
                                     std::string_view text) {
    if (open_) {
        if (dump_end(text, open_->title)) {
            open_.reset();
            return;
        }
        if (const auto entry = dump_entry(text, open_->width)) {
            const auto [name, value] = *entry;
            if (is_read_key(name)) {
                require_utf8(text, file, line, "the argument line");
                state(std::string(name),
                      StatedValue{std::string(value), std::string(name), std::string(file), line});
            }
            return;
        }
    }
    if (auto header = dump_header(text)) {
        open_ = OpenDump{std::move(header->title), header->width};
        return;
    }

    // "using world size: 8, data-parallel size: 1, ..., pipeline-model-parallel size: 4".
    if (text.find("using world size: ") != std::string_view::npos) {
        struct Field {
            std::string_view label;
            std::string_view key;
        };
        constexpr Field fields[] = {
            {"using world size: ", "world_size"},
            {"data-parallel size: ", "data_parallel_size"},
            {"data-parallel-size: ", "data_parallel_size"},
            {"context-parallel size: ", "context_parallel_size"},
            {"tensor-model-parallel size: ", "tensor_model_parallel_size"},
            {"pipeline-model-parallel size: ", "pipeline_model_parallel_size"},
        };
        bool checked = false;
        for (const Field& f : fields) {
            const auto value = field_value(text, f.label);
            if (!value)
                continue;
            if (!checked) {
                require_utf8(text, file, line, "the 'using world size' line");
                checked = true;
            }
            std::string label(f.label.substr(0, f.label.size() - 2));  // without ": "
            if (label.starts_with("using "))
                label = label.substr(6);
            state(std::string(f.key),
                  StatedValue{std::string(*value), label, std::string(file), line});
        }
        return;
    }

    // "setting number of microbatches to constant 32" (or "micro-batches").
    for (const std::string_view marker : {"setting number of microbatches to constant ",
                                          "setting number of micro-batches to constant "}) {
        const std::size_t at = text.find(marker);
        if (at == std::string_view::npos)
            continue;
        const auto value = field_value(text.substr(at), marker);
        if (!value)
            continue;
        require_utf8(text, file, line, "the micro-batch line");
        state("num_microbatches", StatedValue{std::string(*value), std::string(trim_right(marker)),
                                              std::string(file), line});
        return;
    }
}

}  // namespace ppb::importers
