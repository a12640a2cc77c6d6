#include "design_output.hpp"

#include "text_table.hpp"

#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/partition/design_document.hpp>
#include <ppb/partition/design_megatron.hpp>
#include <ppb/partition/design_one_gpu.hpp>
#include <ppb/partition/framework_args.hpp>

#include <fmt/format.h>

namespace ppb::cli {

namespace {

std::string shell_word(const std::string& word) {
    if (word.find_first_of("|*() ") == std::string::npos)
        return word;
    return "'" + word + "'";
}

std::string indented(const std::string& text, std::string_view indent) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        const std::size_t stop = end == std::string::npos ? text.size() : end;
        out += fmt::format("{}{}\n", indent, std::string_view(text).substr(start, stop - start));
        start = stop + 1;
    }
    return out;
}

}  // namespace

namespace {

// How a designed run is made on one GPU per rank (ppb/partition/design_one_gpu.hpp).
std::string render_one_gpu(const partition::OneGpuRuns& runs, const std::string& label,
                           std::uint32_t micro_batches, bool first) {
    const std::string ranks = fmt::format("{}", fmt::join(runs.ranks, " "));
    std::string out = fmt::format(
        "  One GPU per rank ({} ranks, {} per stage; the first of each stage measures it; {} "
        "micro-batches per iteration), for RANK in {}:\n",
        runs.world_size, runs.ranks_per_stage, micro_batches, ranks);
    if (runs.megatron_args) {
        out += fmt::format(
            "    Megatron-LM (core 0.16 or newer):\n      RANK=$RANK WORLD_SIZE={} LOCAL_RANK=0 "
            "python pretrain_gpt.py YOUR_ARGS {}\n",
            runs.world_size, partition::shell_line(*runs.megatron_args));
    } else {
        out += "    Megatron-LM: none (its one recompute setting cannot give these stages)\n";
    }
    std::string parts;
    for (const auto& part : runs.torchtitan_parts) {
        std::vector<std::string> quoted;
        for (const auto& name : part)
            quoted.push_back(fmt::format("\"{}\"", name));
        parts += fmt::format("{}[{}]", parts.empty() ? "" : ", ", fmt::join(quoted, ", "));
    }
    if (runs.torchtitan_checkpoint) {
        const auto& c = *runs.torchtitan_checkpoint;
        out += fmt::format(
            "    torchtitan, with parallelism.module_fqns_per_model_part = [{}] and "
            "activation_checkpoint.mode = \"{}\"{} in the job's configuration:\n      NGPU={} "
            "RANK=$RANK COMM_MODE=fake_backend ./run_train.sh YOUR_ARGS {}\n",
            parts, c.mode,
            c.option.empty() ? "" : fmt::format(", selective_ac_option = \"{}\"", c.option),
            runs.world_size, partition::shell_line(runs.torchtitan_args));
    } else {
        out += fmt::format("    torchtitan: none ({})\n", runs.torchtitan_why_not);
    }
    if (!runs.import_args.empty()) {
        out += fmt::format(
            "    then: ppb import snapshot {} {} {} dryruns.json   (torchtitan's: outputs/{} under "
            "its dump folder, in place of {})\n",
            partition::shell_line(runs.import_args), runs.megatron_snapshots,
            first ? "-o" : "--append", label, runs.megatron_snapshots);
    }
    return out;
}

}  // namespace

std::string render_design(const partition::DesignRequest& request, const partition::Design& design,
                          const std::string& prior_model) {
    std::vector<std::size_t> kinds;
    std::vector<std::string> kind_words;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if ((request.kinds & PPB_KIND_BIT(k)) != 0) {
            kinds.push_back(k);
            kind_words.emplace_back(kind_names[k]);
        }
    }
    std::string out = fmt::format(
        "{} dry run{} of {} layers (1F1B, {} micro-batches; kinds {}; recompute rule {}) "
        "identif{} every coefficient",
        design.runs.size(), design.runs.size() == 1 ? "" : "s", request.num_layers,
        design.micro_batches, fmt::join(kind_words, ", "),
        partition::design_rule_name(request.rule), design.runs.size() == 1 ? "ies" : "y");
    if (design.runs.size() > design.fewest_runs)
        out += fmt::format(" ({} would; --runs asked for more)", design.fewest_runs);
    out += ".\n";
    if (!prior_model.empty()) {
        out += fmt::format("Prior model: {}", prior_model);
        if (request.memory_limit_mb > 0.0)
            out += fmt::format("; every stage under {}", format_mb(request.memory_limit_mb));
        out += ".\n";
    }
    for (const partition::DesignRun& run : design.runs) {
        out += fmt::format("\n{}: {} stage{}\n", run.label, run.num_stages,
                           run.num_stages == 1 ? "" : "s");
        std::vector<std::string> header = {"stage", "layers"};
        std::vector<TextTable::Align> align = {TextTable::Align::right, TextTable::Align::right};
        for (const std::size_t k : kinds) {
            header.emplace_back(kind_names[k]);
            align.push_back(TextTable::Align::right);
        }
        header.emplace_back("in flight");
        align.push_back(TextTable::Align::right);
        const bool prior = !run.stages.empty() && run.stages.front().prior_mb.has_value();
        if (prior) {
            header.emplace_back("prior memory");
            align.push_back(TextTable::Align::right);
        }
        TextTable table(header, align);
        for (const partition::DesignStage& s : run.stages) {
            std::vector<std::string> row = {std::to_string(s.stage),
                                            std::to_string(s.total_layers())};
            for (const std::size_t k : kinds)
                row.push_back(std::to_string(s.layers[k]));
            row.push_back(std::to_string(s.in_flight));
            if (prior)
                row.push_back(format_mb(*s.prior_mb));
            table.add_row(std::move(row));
        }
        out += table.render(2);
        if (const auto arrays = partition::design_mindformers_arrays(run, request.num_layers)) {
            out += "  MindFormers:";
            for (const auto& [key, value] : *arrays)
                out += fmt::format(" {}: {}", std::string_view(key), to_compact_json(value));
            out += "\n";
        } else {
            out += "  MindFormers: none (a stage holds both 'select' and 'comm' layers)\n";
        }
        if (const auto args = partition::megatron_design_args(run, request.num_layers)) {
            std::vector<std::string> words;
            for (const auto& a : *args)
                words.push_back(shell_word(a));
            out += fmt::format("  Megatron-LM: {}\n", fmt::join(words, " "));
        } else {
            out +=
                "  Megatron-LM: none (its one recompute setting per run cannot give these "
                "stages)\n";
        }
        if (const auto init = partition::design_sapp_init(run, request.num_layers))
            out += "  SAPP -init:\n" + indented(*init, "    ");
        if (request.world_size != 0)
            out += render_one_gpu(partition::one_gpu_runs(run, request.num_layers,
                                                          design.micro_batches, request.world_size),
                                  run.label, design.micro_batches, &run == &design.runs.front());
    }
    out += fmt::format("\nExpected standard errors at {} of noise per measured peak:\n",
                       format_mb(request.noise_mb));
    TextTable errors({"coefficient", "std error"},
                     {TextTable::Align::left, TextTable::Align::right});
    for (const partition::CoefficientError& e : design.std_errors)
        errors.add_row({e.name, fmt::format("{:.3f} MB", e.std_error_mb)});
    out += errors.render(2);
    out += fmt::format(
        "  worst standard error of a predicted stage memory: {:.3f} MB (over {} placements: every "
        "stage of every degree holding 1 or L - P + 1 layers of one kind)\n",
        design.worst_prediction_std_error_mb, design.placements);
    out += design.runs.size() == 1
               ? "\nImport the run's results with its label: ppb import ... --label run-1 -o "
                 "dryruns.json\n"
               : "\nImport each run's results with its label: ppb import ... --label run-1 -o "
                 "dryruns.json, then --label run-2 --append dryruns.json, ...\n";
    return out;
}

}  // namespace ppb::cli
