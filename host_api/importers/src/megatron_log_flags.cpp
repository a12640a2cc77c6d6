// The flags of a Megatron-LM run: the command line's, completed and checked by what the run's logs
// state (megatron_flags_from_logs in megatron.hpp). One rule for every flag: absent, the log's
// value is taken and said; given, it must be the log's, or the import is refused naming both.
#include <ppb/importers/megatron.hpp>
#include <ppb/importers/megatron_layout.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

namespace ppb::importers {
namespace {

constexpr limits::CountRange ranks{1, std::numeric_limits<std::uint32_t>::max(), "ranks"};
constexpr limits::CountRange samples{1, std::numeric_limits<std::uint32_t>::max(), "samples"};
constexpr limits::CountRange experts{1, std::numeric_limits<std::uint32_t>::max(), "experts"};

// A statement the flags are held to: its value read as the flag reads it.
class Reconciler {
  public:
    Reconciler(const MegatronArgumentDump& stated, Messages& messages)
        : stated_(stated), messages_(messages) {}

    // The first of `keys` the logs state (an older name after the current one).
    [[nodiscard]] const StatedValue* find(std::initializer_list<std::string_view> keys) const {
        for (const std::string_view key : keys) {
            if (const StatedValue* value = stated_.find(key))
                return value;
        }
        return nullptr;
    }

    // A whole number, or nullopt for None.
    static std::optional<std::uint32_t> count_of(const StatedValue& value,
                                                 const limits::CountRange& range) {
        if (value.is_none())
            return std::nullopt;
        std::uint64_t n = 0;
        const std::string& text = value.text;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (text.empty() || end != text.data() + text.size() ||
            (ec != std::errc{} && ec != std::errc::result_out_of_range)) {
            throw InputError(fmt::format("{}: {} '{}': expected a whole number or None",
                                         value.where(), value.label, text));
        }
        if (ec == std::errc::result_out_of_range || !range.contains(n)) {
            throw InputError(fmt::format("{}: {}: {}", value.where(), value.label,
                                         limits::out_of_range(text, range)));
        }
        return static_cast<std::uint32_t>(n);
    }

    static bool bool_of(const StatedValue& value) {
        if (value.text == "True")
            return true;
        if (value.text == "False" || value.is_none())
            return false;
        throw InputError(fmt::format("{}: {} '{}': expected True or False", value.where(),
                                     value.label, value.text));
    }

    static std::optional<std::string> text_of(const StatedValue& value,
                                              std::initializer_list<std::string_view> choices) {
        if (value.is_none())
            return std::nullopt;
        if (choices.size() > 0 &&
            std::find(choices.begin(), choices.end(), value.text) == choices.end()) {
            throw InputError(fmt::format("{}: {} '{}': expected {} or None", value.where(),
                                         value.label, value.text, fmt::join(choices, ", ")));
        }
        return value.text;
    }

    [[noreturn]] static void contradiction(std::string_view given, const StatedValue& value) {
        throw InputError(fmt::format(
            "{} (command line) contradicts {} {} ({}){}: leave the flag out to take the log's "
            "value, or import the logs of the run the flag describes",
            given, value.label, value.text, value.where(),
            value.is_none() ? ", unset in that run" : ""));
    }

    void taken(std::string_view flag_text, const StatedValue& value) {
        add_note(messages_, fmt::format("{} from {}", flag_text, value.where()));
    }

    void count(std::optional<std::uint32_t>& flag, std::string_view name,
               std::initializer_list<std::string_view> keys, const limits::CountRange& range) {
        const StatedValue* value = find(keys);
        if (value == nullptr)
            return;
        const std::optional<std::uint32_t> n = count_of(*value, range);
        if (flag) {
            if (n != flag)
                contradiction(fmt::format("{} {}", name, *flag), *value);
            return;
        }
        if (n) {
            flag = n;
            taken(fmt::format("{} {}", name, *n), *value);
        }
    }

    void text(std::optional<std::string>& flag, std::string_view name, std::string_view key,
              std::initializer_list<std::string_view> choices) {
        const StatedValue* value = find({key});
        if (value == nullptr)
            return;
        const std::optional<std::string> t = text_of(*value, choices);
        if (flag) {
            if (t != flag)
                contradiction(fmt::format("{} {}", name, *flag), *value);
            return;
        }
        if (t) {
            flag = t;
            taken(fmt::format("{} {}", name, *t), *value);
        }
    }

    // A switch: given it must be True in the log; left out it takes a True.
    void on_off(bool& flag, std::string_view name, std::string_view key) {
        const StatedValue* value = find({key});
        if (value == nullptr)
            return;
        const bool on = bool_of(*value);
        if (flag && !on)
            contradiction(name, *value);
        if (!flag && on) {
            flag = true;
            taken(name, *value);
        }
    }

    // A value compared by what it means: `read(text, source)` reads the flag's and the log's
    // alike (FlagError from the log's value is rethrown naming its line), and a value taken from
    // the log is read at once, so that a malformed one is named where it is.
    template <typename Read>
    void meaning(std::optional<std::string>& flag, std::string_view name, std::string_view key,
                 Read read) {
        const StatedValue* value = find({key});
        if (value == nullptr)
            return;
        if (!flag && value->is_none())
            return;
        if (flag && value->is_none())
            contradiction(fmt::format("{} '{}'", name, *flag), *value);
        const auto stated = [&] {
            try {
                return read(value->text, value->where());
            } catch (const FlagError& e) {
                throw InputError(fmt::format("{}: {}", value->where(), e.what()));
            }
        }();
        if (!flag) {
            flag = value->text;
            taken(fmt::format("{} '{}'", name, value->text), *value);
            return;
        }
        if (read(*flag, name) != stated)
            contradiction(fmt::format("{} '{}'", name, *flag), *value);
    }

  private:
    const MegatronArgumentDump& stated_;
    Messages& messages_;
};

// Runs 'ppb import megatron' does not read, refused by what the log states.
void refuse_other_runs(const Reconciler& r) {
    if (const StatedValue* v = r.find({"schedules_method"}); v != nullptr && !v->is_none()) {
        throw InputError(fmt::format(
            "{}: {} {}: ppb import megatron reads runs of Megatron-LM's 1F1B and interleaved "
            "schedules, whose in-flight counts it knows; this run used another schedule",
            v->where(), v->label, v->text));
    }
    if (const StatedValue* v = r.find({"hybrid_layer_pattern", "hybrid_override_pattern"});
        v != nullptr && !v->is_none()) {
        throw InputError(fmt::format(
            "{}: {} {}: a hybrid model's layers are not all transformer layers, and its stages are "
            "the pattern's segments; ppb import megatron reads transformer (GPT) runs",
            v->where(), v->label, v->text));
    }
}

// The micro-batch count the logs state: the micro-batch line, else as Megatron derives it
// (global_batch_size / (micro_batch_size x data_parallel_size x gtp_weight_remat_size)).
struct StatedMicroBatches {
    std::uint32_t count = 0;
    std::string from;  // for the note: "a.log:17", or the derivation
    std::string how;   // the statement(s) and the count, for a contradiction
};

std::optional<StatedMicroBatches> stated_micro_batches(const Reconciler& r, Messages& messages) {
    std::optional<StatedMicroBatches> line;
    if (const StatedValue* v = r.find({"num_microbatches"})) {
        line = StatedMicroBatches{*Reconciler::count_of(*v, limits::micro_batches),
                                  fmt::format("from {}", v->where()),
                                  fmt::format("'{} {}' ({})", v->label, v->text, v->where())};
    }
    // A batch-size ramp-up or schedule changes the count from iteration to iteration.
    for (const std::string_view key : {"rampup_batch_size", "step_batch_size_schedule"}) {
        if (const StatedValue* v = r.find({key}); v != nullptr && !v->is_none()) {
            if (!line) {
                add_note(messages,
                         fmt::format("{}: the run changes its batch size ({} {}), so the logs "
                                     "give no one micro-batch count",
                                     v->where(), v->label, v->text));
            }
            return line;
        }
    }
    const StatedValue* gbs = r.find({"global_batch_size"});
    const StatedValue* mbs = r.find({"micro_batch_size"});
    const StatedValue* dp = r.find({"data_parallel_size"});
    if (gbs == nullptr || mbs == nullptr || dp == nullptr || gbs->is_none() || mbs->is_none() ||
        dp->is_none()) {
        return line;
    }
    const std::uint64_t global = *Reconciler::count_of(*gbs, samples);
    const std::uint64_t micro = *Reconciler::count_of(*mbs, samples);
    const std::uint64_t data = *Reconciler::count_of(*dp, ranks);
    std::uint64_t remat = 1;
    std::string remat_text;
    if (const StatedValue* g = r.find({"gtp_weight_remat_size"}); g != nullptr && !g->is_none()) {
        remat = *Reconciler::count_of(*g, ranks);
        remat_text = fmt::format(" x {}", g->described());
    }
    const std::uint64_t per = micro * data * remat;
    const StatedValue* decrease = r.find({"decrease_batch_size_if_needed"});
    const bool rounds_down = decrease != nullptr && Reconciler::bool_of(*decrease);
    const std::string expression = fmt::format("{} / ({} x {}{})", gbs->described(),
                                               mbs->described(), dp->described(), remat_text);
    if (global % per != 0 && !rounds_down) {
        throw InputError(fmt::format(
            "{}: global_batch_size {} is not a multiple of the {} samples of one micro-batch on "
            "every data-parallel rank ({}), as Megatron requires: are these logs of one run?",
            gbs->where(), global, per, expression));
    }
    const std::uint64_t derived = global / per;
    if (!limits::micro_batches.contains(derived)) {
        throw InputError(
            fmt::format("{}: {} = {} micro-batches: {}", gbs->where(), expression, derived,
                        limits::out_of_range(std::to_string(derived), limits::micro_batches)));
    }
    if (line && line->count != derived) {
        throw InputError(fmt::format("{}, but {} = {} micro-batches: are these logs of one run?",
                                     line->how, expression, derived));
    }
    if (line)
        return line;
    return StatedMicroBatches{static_cast<std::uint32_t>(derived),
                              fmt::format("= {}, as Megatron derives it", expression),
                              fmt::format("{} = {} micro-batches", expression, derived)};
}

}  // namespace

MegatronFlags megatron_flags_from_logs(const MegatronFlags& given,
                                       const MegatronArgumentDump& stated, Messages& messages) {
    MegatronFlags flags = given;
    if (stated.empty())
        return flags;
    Reconciler r(stated, messages);
    refuse_other_runs(r);

    r.count(flags.pipeline_size, "--pipeline-model-parallel-size", {"pipeline_model_parallel_size"},
            limits::stages);
    r.count(flags.num_layers, "--num-layers", {"num_layers"}, limits::layers);
    r.count(flags.world_size, "--world-size", {"world_size"}, ranks);
    r.count(flags.first_stage_layers, "--decoder-first-pipeline-num-layers",
            {"decoder_first_pipeline_num_layers", "num_layers_in_first_pipeline_stage"},
            limits::layers_or_none);
    r.count(flags.last_stage_layers, "--decoder-last-pipeline-num-layers",
            {"decoder_last_pipeline_num_layers", "num_layers_in_last_pipeline_stage"},
            limits::layers_or_none);
    r.count(flags.layers_per_virtual_stage, "--num-layers-per-virtual-pipeline-stage",
            {"num_layers_per_virtual_pipeline_stage"}, limits::layers);
    r.count(flags.virtual_stages, "--num-virtual-stages-per-pipeline-rank",
            {"num_virtual_stages_per_pipeline_rank"}, limits::chunks);
    r.meaning(flags.layout, "--pipeline-model-parallel-layout", "pipeline_model_parallel_layout",
              [](std::string_view text, std::string_view) { return parse_megatron_layout(text); });
    r.on_off(flags.account_for_embedding, "--account-for-embedding-in-pipeline-split",
             "account_for_embedding_in_pipeline_split");
    r.on_off(flags.account_for_loss, "--account-for-loss-in-pipeline-split",
             "account_for_loss_in_pipeline_split");
    r.count(flags.mtp_layers, "--mtp-num-layers", {"mtp_num_layers"}, limits::layers_or_none);
    r.text(flags.recompute_granularity, "--recompute-granularity", "recompute_granularity",
           {"full", "selective"});
    r.text(flags.recompute_method, "--recompute-method", "recompute_method", {"uniform", "block"});
    r.count(flags.recompute_num_layers, "--recompute-num-layers", {"recompute_num_layers"},
            limits::layers);
    r.on_off(flags.overlap_moe_expert_parallel_comm, "--overlap-moe-expert-parallel-comm",
             "overlap_moe_expert_parallel_comm");
    r.meaning(flags.num_layer_list, "--num-layer-list", "num_layer_list",
              [](std::string_view text, std::string_view source) {
                  return parse_num_layer_list(text, source);
              });
    if (flags.num_layers) {
        const std::uint32_t layers = *flags.num_layers;
        r.meaning(flags.noop_layers, "--noop-layers", "noop_layers",
                  [layers](std::string_view text, std::string_view source) {
                      return parse_noop_layers(text, layers, source);
                  });
    }

    // MoE: the layer pattern means something only with experts (Megatron's moe_layer_freq is 1
    // in every dump).
    r.count(flags.num_experts, "--num-experts", {"num_experts"}, experts);
    r.count(flags.first_k_dense_replace, "--first-k-dense-replace", {"first_k_dense_replace"},
            limits::layers_or_none);
    if (flags.num_experts && flags.num_layers) {
        const std::uint32_t layers = *flags.num_layers;
        const StatedValue* freq = r.find({"moe_layer_freq"});
        if (freq != nullptr && !flags.moe_layer_freq && freq->text == "1") {
            // Megatron's default: every layer an MoE layer, as without the flag.
        } else {
            r.meaning(flags.moe_layer_freq, "--moe-layer-freq", "moe_layer_freq",
                      [layers](std::string_view text, std::string_view) {
                          return moe_layer_pattern(text, layers);
                      });
        }
    }

    // The micro-batch count.
    if (const auto m = stated_micro_batches(r, messages)) {
        if (flags.micro_batches && *flags.micro_batches != m->count) {
            throw InputError(fmt::format(
                "--num-microbatches {} (command line) contradicts {}: leave the flag out to take "
                "the log's value, or import the logs of the run the flag describes",
                *flags.micro_batches, m->how));
        }
        if (!flags.micro_batches) {
            flags.micro_batches = m->count;
            add_note(messages, fmt::format("--num-microbatches {} {}", m->count, m->from));
        }
    }
    return flags;
}

}  // namespace ppb::importers
