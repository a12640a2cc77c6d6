// A plan as other frameworks' flags (ppb/partition/framework_args.hpp says what each expresses).
#include <ppb/partition/framework_args.hpp>

#include <ppb/kinds.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <string_view>

namespace ppb::partition {
namespace {

std::uint32_t sum(const KindCounts& layers) {
    return std::accumulate(layers.begin(), layers.end(), 0u);
}

std::string mix_text(const KindCounts& layers) {
    std::string out;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (layers[k] != 0) {
            out += fmt::format("{}{} {}", out.empty() ? "" : ", ", layers[k],
                               kind_name(static_cast<ppb_kind>(k)));
        }
    }
    return out.empty() ? std::string("no layer") : out;
}

// Why no one setting builds the plan's chunks: the chunks, by mix, as far as four of them.
std::string no_setting_reason(const Problem& problem, const Plan& plan, std::string_view who) {
    std::string chunks;
    std::size_t shown = 0;
    std::size_t all = 0;
    for (const StagePlan& s : plan.stages) {
        for (const ChunkPlan& c : s.chunks) {
            ++all;
            if (shown == 4)
                continue;
            ++shown;
            chunks += fmt::format("{}stage {}{}: {}", chunks.empty() ? "" : "; ", s.stage,
                                  problem.chunks > 1 ? fmt::format(" chunk {}", c.chunk) : "",
                                  mix_text(c.layers));
        }
    }
    return fmt::format(
        "{} applies one recompute setting to every chunk (none, selective, or full of the first N "
        "layers of every chunk or of every layer), and none builds this plan's chunks ({}{}); "
        "plan under the recompute rule '{}' for a plan it can run",
        who, chunks, all > shown ? "; ..." : "", who == "torchtitan" ? "torchtitan" : "megatron");
}

std::string count_list(const std::vector<std::uint32_t>& counts) {
    return fmt::format("{}", fmt::join(counts, ","));
}

void append(std::vector<std::string>& to, const std::vector<std::string>& more) {
    to.insert(to.end(), more.begin(), more.end());
}

// The pipeline size and layer count every flag list starts with.
std::vector<std::string> size_args(const Problem& problem) {
    return {"--pipeline-model-parallel-size", std::to_string(problem.num_stages), "--num-layers",
            std::to_string(problem.time.body_layers)};
}

// Megatron-LM runs 1F1B, its interleaved order and, with --overlap-moe-expert-parallel-comm,
// the combined 1F1B (`combined`: whether `who` does); empty when it runs this schedule.
std::string megatron_schedule_refusal(const Problem& problem, std::string_view who, bool combined) {
    if (problem.schedule == Schedule::one_f_one_b && problem.chunks == 1)
        return {};
    if (problem.schedule == Schedule::interleaved)
        return {};
    if (problem.schedule == Schedule::combined_1f1b && combined)
        return {};
    return fmt::format(
        "{} runs 1F1B{} interleaved 1F1B{}; this plan is for {} (its in-flight "
        "counts and layer order are that schedule's)",
        who, combined ? "," : " and", combined ? " and combined-1f1b" : "",
        schedule_name(problem.schedule));
}

// The flags that make Megatron-LM run the combined 1F1B (megatron/training/arguments.py at
// d98e8a64dd), where the plan's schedule is it: the overlap, and the token dispatcher the plan
// was timed with, since Megatron-LM's default, allgather, is refused with it
// (transformer_config.py at d98e8a64dd, __post_init__).
std::vector<std::string> combined_args(const Problem& problem) {
    if (problem.schedule != Schedule::combined_1f1b)
        return {};
    return {"--moe-token-dispatcher-type", problem.token_dispatcher,
            "--overlap-moe-expert-parallel-comm"};
}

// The stage totals and, with chunks, whether every stage's chunks hold equal counts.
std::vector<std::uint32_t> stage_totals(const Plan& plan) {
    std::vector<std::uint32_t> totals;
    for (const StagePlan& s : plan.stages)
        totals.push_back(s.total_layers());
    return totals;
}

}  // namespace

std::vector<std::uint32_t> layers_per_position(const Problem& problem, const Plan& plan) {
    std::vector<std::uint32_t> out(std::size_t{problem.num_stages} * problem.chunks, 0);
    for (const StagePlan& s : plan.stages) {
        for (const ChunkPlan& c : s.chunks) {
            out.at(model_position(problem.schedule, problem.num_stages, problem.chunks,
                                  {s.stage, c.chunk})) = sum(c.layers);
        }
    }
    return out;
}

std::string megatron_layout_string(const std::vector<std::uint32_t>& positions,
                                   std::uint32_t mtp_layers, std::size_t mtp_at) {
    const auto layers = [](char kind, std::uint32_t n) {
        return n == 0   ? std::string()
               : n == 1 ? std::string(1, kind)
                        : fmt::format("{}*{}", kind, n);
    };
    const std::size_t q = positions.size();
    std::vector<std::string> stages;
    for (std::size_t i = 0; i < q; ++i) {
        std::string text = (i == 0 ? "E" : "") + layers('t', positions[i]);
        if (i == mtp_at)
            text += layers('m', mtp_layers);
        if (i + 1 == q)
            text += "L";
        stages.push_back(std::move(text));
    }
    if (q == 1)
        return stages.front();
    // "t0|t1|...|t(q-1)", a run of k >= 2 equal virtual stages between the first and the last
    // written "(x|)*k": the group carries the '|' after each copy.
    std::string out = stages.front() + "|";
    std::size_t i = 1;
    while (i + 1 < q) {
        std::size_t end = i + 1;
        while (end + 1 < q && stages[end] == stages[i])
            ++end;
        if (end - i >= 2 && !stages[i].empty()) {
            out += fmt::format("({}|)*{}", stages[i], end - i);
            i = end;
        } else {
            out += stages[i] + "|";
            ++i;
        }
    }
    return out + stages.back();
}

std::vector<std::string> megatron_recompute_args(const MegatronRecompute& setting) {
    using Method = MegatronRecompute::Method;
    switch (setting.method) {
        case Method::none:
            return {};
        case Method::selective:
            return {"--recompute-granularity", "selective"};
        case Method::uniform:
            return {"--recompute-granularity", "full", "--recompute-method", "uniform",
                    "--recompute-num-layers",  "1"};
        case Method::block:
            return {"--recompute-granularity", "full",
                    "--recompute-method",      "block",
                    "--recompute-num-layers",  std::to_string(setting.num_layers)};
    }
    return {};
}

MegatronArgs megatron_args(const Problem& problem, const Plan& plan) {
    MegatronArgs out;
    const std::string refusal = megatron_schedule_refusal(problem, "Megatron-LM", true);
    if (!refusal.empty()) {
        out.args.why_not = refusal;
        out.legacy_args.why_not = refusal;
        return out;
    }
    const std::vector<std::uint32_t> positions = layers_per_position(problem, plan);
    const std::uint32_t p = problem.num_stages;
    const std::uint32_t v = problem.chunks;
    // The multi-token prediction layers: in the last chunk of their stage, after every decoder
    // layer (Megatron-LM refuses a layout that puts one after them).
    const MtpLayers& mtp = problem.mtp;
    std::size_t mtp_at = 0;
    if (mtp.layers > 0) {
        if (mtp.stage_offset >= p) {
            out.args.why_not = fmt::format(
                "the model's multi-token prediction layers are {} stages before the last "
                "(mtp_stage_offset), but the pipeline has {} stages",
                mtp.stage_offset, p);
            out.legacy_args.why_not = out.args.why_not;
            return out;
        }
        mtp_at = static_cast<std::size_t>(v - 1) * p + (p - 1 - mtp.stage_offset);
        const auto after = std::find_if(positions.begin() + static_cast<std::ptrdiff_t>(mtp_at) + 1,
                                        positions.end(), [](std::uint32_t n) { return n > 0; });
        if (after != positions.end()) {
            const auto at = static_cast<std::uint32_t>(after - positions.begin());
            out.args.why_not = fmt::format(
                "Megatron-LM places the {} multi-token prediction layer{} after every decoder "
                "layer, in the last chunk of stage {} (mtp_stage_offset {}), but the plan puts "
                "{} decoder layer{} on stage {} chunk {}, after it",
                mtp.layers, mtp.layers == 1 ? "" : "s", p - 1 - mtp.stage_offset, mtp.stage_offset,
                *after, *after == 1 ? "" : "s", at % p, at / p);
            out.legacy_args.why_not = out.args.why_not;
            return out;
        }
    }
    out.layout = megatron_layout_string(positions, mtp.layers, mtp_at);
    const auto setting = megatron_recompute_of(plan);
    if (!setting) {
        out.args.why_not = no_setting_reason(problem, plan, "Megatron-LM");
        out.legacy_args.why_not = out.args.why_not;
        return out;
    }
    const auto recompute = megatron_recompute_args(*setting);
    out.args.args = size_args(problem);
    append(out.args.args, {"--pipeline-model-parallel-layout", *out.layout});
    append(out.args.args, recompute);
    append(out.args.args, combined_args(problem));

    // The legacy flags: every stage's chunks equal, and the stages between the first and the last
    // equal; without a layout Megatron-LM puts the multi-token prediction layers on the last
    // stage (megatron/core/transformer/multi_token_prediction.py, mtp_on_this_rank).
    if (mtp.layers > 0 && mtp.stage_offset > 0) {
        out.legacy_args.why_not = fmt::format(
            "without the layout flag Megatron-LM puts the multi-token prediction layers on the "
            "last stage, not {} before it (mtp_stage_offset); use the layout flag",
            mtp.stage_offset);
        return out;
    }
    const auto totals = stage_totals(plan);
    for (const StagePlan& s : plan.stages) {
        for (const ChunkPlan& c : s.chunks) {
            if (sum(c.layers) * v != s.total_layers()) {
                std::string counts;
                for (const ChunkPlan& each : s.chunks)
                    counts += fmt::format("{}{}", counts.empty() ? "" : ", ", sum(each.layers));
                out.legacy_args.why_not = fmt::format(
                    "the legacy flags split each stage's layers evenly over its chunks, but stage "
                    "{} holds {} layers as {} in its {} chunks; use the layout flag",
                    s.stage, s.total_layers(), counts, v);
                return out;
            }
        }
    }
    std::optional<std::uint32_t> first;
    std::optional<std::uint32_t> last;
    const bool even = std::all_of(totals.begin(), totals.end(),
                                  [&](std::uint32_t n) { return n == totals.front(); });
    if (!even) {
        if (p == 2) {
            first = totals.front();
        } else {
            const std::uint32_t middle = totals[1];
            for (std::uint32_t s = 1; s + 1 < p; ++s) {
                if (totals[s] != middle) {
                    out.legacy_args.why_not = fmt::format(
                        "--decoder-first/last-pipeline-num-layers leave the other stages an even "
                        "share, but the stages between the first and the last hold {} layers; "
                        "use the layout flag",
                        fmt::join(totals.begin() + 1, totals.end() - 1, ", "));
                    return out;
                }
            }
            if (totals.front() != middle)
                first = totals.front();
            if (totals.back() != middle)
                last = totals.back();
        }
    }
    const auto zero = std::find(totals.begin(), totals.end(), 0u);
    if (zero != totals.end()) {
        out.legacy_args.why_not = fmt::format(
            "stage {} holds no decoder layer; ppb gives the legacy flags only for plans whose "
            "every stage holds some (use the layout flag, which has empty stages)",
            zero - totals.begin());
        return out;
    }
    out.legacy_args.args = size_args(problem);
    if (first)
        append(out.legacy_args.args,
               {"--decoder-first-pipeline-num-layers", std::to_string(*first)});
    if (last)
        append(out.legacy_args.args, {"--decoder-last-pipeline-num-layers", std::to_string(*last)});
    if (v > 1)
        append(out.legacy_args.args, {"--num-virtual-stages-per-pipeline-rank", std::to_string(v)});
    append(out.legacy_args.args, recompute);
    append(out.legacy_args.args, combined_args(problem));
    return out;
}

FrameworkFlags mindspeed_args(const Problem& problem, const Plan& plan) {
    FrameworkFlags out;
    out.why_not = megatron_schedule_refusal(problem, "MindSpeed-LLM", false);
    if (!out.expressible())
        return out;
    const auto setting = megatron_recompute_of(plan);
    if (!setting) {
        out.why_not = no_setting_reason(problem, plan, "MindSpeed-LLM");
        return out;
    }
    const auto positions = layers_per_position(problem, plan);
    if (problem.chunks == 1) {
        const auto zero = std::find(positions.begin(), positions.end(), 0u);
        if (zero != positions.end()) {
            out.why_not =
                fmt::format("stage {} holds no layer, and --num-layer-list gives every stage some",
                            zero - positions.begin());
            return out;
        }
        out.args = size_args(problem);
        // One stage holds every layer; MindSpeed-LLM refuses --num-layer-list without a pipeline
        // (NumLayerListFeature.validate_args: "Dynamic pipeline model should work with pipeline
        // parallel").
        if (problem.num_stages > 1)
            append(out.args, {"--num-layer-list", count_list(positions)});
    } else {
        // Every chunk padded to the largest with no-op layers at its end (0-based indices of the
        // padded model), so that the real layers keep their places and block recompute still
        // starts at a chunk's first layer.
        const std::uint32_t widest = *std::max_element(positions.begin(), positions.end());
        std::vector<std::uint32_t> noop;
        for (std::size_t q = 0; q < positions.size(); ++q) {
            for (std::uint32_t i = positions[q]; i < widest; ++i)
                noop.push_back(static_cast<std::uint32_t>(q) * widest + i);
        }
        out.args = {"--pipeline-model-parallel-size", std::to_string(problem.num_stages),
                    "--num-layers", std::to_string(widest * positions.size())};
        if (!noop.empty())
            append(out.args, {"--noop-layers", count_list(noop)});
        append(out.args, {"--num-layers-per-virtual-pipeline-stage", std::to_string(widest)});
    }
    append(out.args, megatron_recompute_args(*setting));
    return out;
}

TorchtitanPlan torchtitan_plan(const Problem& problem, const Plan& plan) {
    TorchtitanPlan out;
    switch (problem.schedule) {
        case Schedule::one_f_one_b:
            out.schedule = "1F1B";
            break;
        case Schedule::interleaved:
            out.schedule = "Interleaved1F1B";
            break;
        case Schedule::dualpipe_v:
            out.schedule = "DualPipeV";  // ZBVZeroBubble places the stages the same way
            break;
        case Schedule::zb_v:
            out.schedule = "ZBVZeroBubble";
            break;
        case Schedule::interleaved_less_memory:
        case Schedule::zb_h1:  // torchtitan's zero-bubble schedules need several stages per rank
        case Schedule::combined_1f1b:
            break;
    }
    if (out.schedule.empty()) {
        out.parts_why_not = fmt::format(
            "torchtitan has no {} schedule; its looped schedules (Interleaved1F1B) place the "
            "parts the same way but hold other in-flight counts",
            schedule_name(problem.schedule));
    } else {
        out.module_fqns_per_model_part = torchtitan_module_fqns(layers_per_position(problem, plan));
    }
    const auto setting = megatron_recompute_of(plan);
    if (!setting) {
        out.ac_why_not = no_setting_reason(problem, plan, "torchtitan");
        return out;
    }
    if (const auto checkpoint = torchtitan_checkpoint(*setting)) {
        out.ac_mode = checkpoint->mode;
        out.ac_option = checkpoint->option;
    } else {
        out.ac_why_not = fmt::format(
            "the plan recomputes the first {} layer{} of every chunk (Megatron's block "
            "method), and torchtitan's [activation_checkpoint] applies one setting to every "
            "layer; plan under the recompute rule 'torchtitan' for a plan it can run",
            setting->num_layers, setting->num_layers == 1 ? "" : "s");
    }
    return out;
}

std::vector<std::vector<std::string>> torchtitan_module_fqns(
    const std::vector<std::uint32_t>& positions) {
    std::vector<std::vector<std::string>> out;
    std::uint32_t next = 0;
    for (std::size_t q = 0; q < positions.size(); ++q) {
        std::vector<std::string> part;
        if (q == 0)
            part.emplace_back("tok_embeddings");
        for (std::uint32_t i = 0; i < positions[q]; ++i)
            part.push_back(fmt::format("layers.{}", next++));
        if (q + 1 == positions.size()) {
            part.emplace_back("norm");
            part.emplace_back("output");
        }
        out.push_back(std::move(part));
    }
    return out;
}

std::optional<TorchtitanCheckpoint> torchtitan_checkpoint(const MegatronRecompute& setting) {
    switch (setting.method) {
        case MegatronRecompute::Method::none:
            return TorchtitanCheckpoint{"none", ""};
        case MegatronRecompute::Method::selective:
            return TorchtitanCheckpoint{"selective", "op"};
        case MegatronRecompute::Method::uniform:
            return TorchtitanCheckpoint{"full", ""};
        case MegatronRecompute::Method::block:
            break;
    }
    return std::nullopt;
}

std::string shell_line(const std::vector<std::string>& args) {
    std::string out;
    for (const std::string& a : args) {
        const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
                   std::string_view("-_,./=:+").find(c) != std::string_view::npos;
        });
        out += (out.empty() ? "" : " ") + (plain ? a : "\"" + a + "\"");
    }
    return out;
}

}  // namespace ppb::partition
