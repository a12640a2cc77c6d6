// ppb design: which dry runs to run. The fewest dry runs whose stages identify every coefficient
// of the dryrun-lsq model for the kinds named, each expressible under the recompute rule, the most
// precise of them (ppb/partition/design.hpp; host_api/docs/design.md, "Designing the dry runs"),
// optionally keeping every stage under a memory limit by a prior model's predictions.
#include "commands.hpp"
#include "design_output.hpp"
#include "plugin_session.hpp"

#include <ppb/json_output.hpp>
#include <ppb/partition/design.hpp>
#include <ppb/partition/design_document.hpp>

#include <fmt/format.h>

#include <limits>
#include <memory>
#include <optional>

namespace ppb::cli {
namespace {

struct DesignArgs {
    std::vector<std::uint32_t> stages;
    std::uint32_t num_layers = 0;
    std::vector<std::string> kinds = {"none"};
    std::string recompute_rule = "mindformers";
    std::optional<std::uint32_t> micro_batches;
    std::uint32_t runs = 0;
    double noise_mb = 1.0;
    double memory_limit_mb = 0.0;
    ModelChoice choice;
    std::string dryrun;
    DryRunReadOptions read;
    bool json = false;
    std::uint32_t world_size = 0;
    CLI::Option* model_option = nullptr;
};

int run_design(DesignArgs& args) {
    partition::DesignRequest request;
    request.stages = args.stages;
    request.num_layers = args.num_layers;
    request.kinds = kind_mask(args.kinds);
    request.rule = *partition::design_rule_from_name(args.recompute_rule);  // checked by CLI11
    request.micro_batches = args.micro_batches.value_or(0);
    request.runs = args.runs;
    request.noise_mb = args.noise_mb;
    request.memory_limit_mb = args.memory_limit_mb;
    request.world_size = args.world_size;
    for (const std::uint32_t p : args.stages) {
        if (args.world_size != 0 && args.world_size % p != 0) {
            throw UsageError(fmt::format(
                "--world-size {}: a job's ranks split evenly over its pipeline stages, and {} is "
                "not a multiple of {} (--stages)",
                args.world_size, args.world_size, p));
        }
    }

    const bool prior_given = args.model_option->count() > 0 || !args.dryrun.empty();
    if (args.memory_limit_mb > 0.0 && !prior_given)
        throw UsageError(
            "--memory-limit-mb needs a prior model to predict each stage: --model NAME "
            "(e.g. analytic with --model-options) or --dryrun FILE (an earlier fit)",
            "ppb design");
    std::optional<PreparedModel> prepared;
    std::string prior_name;
    if (prior_given) {
        const std::optional<DryRunSet> dryrun = read_optional_dryrun(args.dryrun, args.read);
        prepared.emplace(prepare_selected_model(args.choice, dryrun, args.dryrun, "--dryrun FILE"));
        prior_name = fmt::format("{} {} ({})", prepared->model.name(), prepared->model.version(),
                                 prepared->source);
        const MemoryModel* model = &prepared->model;
        request.prior = [model](std::span<const ppb_placement> placements) {
            return model->predict_batch(placements);
        };
    }
    const partition::Design design = partition::design_dry_runs(request, partition::flag_name);
    write_stdout(args.json ? to_pretty_json(partition::design_document(request, design, prior_name))
                           : render_design(request, design, prior_name));
    return 0;
}

}  // namespace

void add_design_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<DesignArgs>();
    CLI::App* design = add_command(
        app, "design", "which dry runs to run: the fewest that identify the memory model",
        "Proposes the fewest dry runs whose stages identify every coefficient of the dryrun-lsq\n"
        "memory model for the kinds named (const, head, tail, per-layer and one activation per\n"
        "kind), each stage's layers and kinds expressible under the recompute rule, and among\n"
        "such designs the most precise: the smallest worst-case standard error of a predicted\n"
        "stage memory over every stage of every degree holding 1 to L - P + 1 layers of one\n"
        "kind (the placements a plan can take; the worst case is at those extremes). The search\n"
        "is coordinate exchange from several random designs with a fixed seed, so the answer is\n"
        "the same every time. Every run is printed with its stages, MindFormers' arrays,\n"
        "Megatron-LM's flags and a SAPP -init skeleton; import each run's results with its\n"
        "label (ppb import ... --label run-1, --append FILE for the others). With\n"
        "--memory-limit-mb and a prior model every stage of every run is predicted under the\n"
        "limit, so that the dry runs can be real runs."
        "\n\n"
        "Exit status: 0 designed, 2 invalid input or usage, 3 plugin not found or failed,\n"
        "4 no design identifies every coefficient (within the limit): stderr says which\n"
        "coefficient and what would, 1 other errors.");
    as_comma_list(design->add_option("--stages", args->stages,
                                     "pipeline degrees the dry runs may have (P, or P1,P2,...\n"
                                     "when one degree cannot identify everything)"))
        ->type_name("P,...")
        ->required()
        ->check(count_in(limits::stages));
    design->add_option("--num-layers", args->num_layers, "body layers of the model")
        ->type_name("L")
        ->required()
        ->check(count_in(limits::layers));
    as_comma_list(design->add_option("--kinds", args->kinds,
                                     "recompute kinds to identify an activation coefficient for"))
        ->type_name("KIND,...")
        ->capture_default_str()
        ->check(recompute_kind());
    design
        ->add_option("--recompute-rule", args->recompute_rule,
                     "how a run may set recompute: 'mindformers' (per-stage prefix counts:\n"
                     "no stage mixes 'select' and 'comm'), 'megatron' (one setting for the\n"
                     "whole run: none, selective, or full on the first N layers of every\n"
                     "stage), 'torchtitan' (one activation-checkpointing mode for the whole\n"
                     "run: none, selective or full), or 'any' (every mix)")
        ->type_name("RULE")
        ->capture_default_str()
        ->check(CLI::IsMember({"mindformers", "megatron", "torchtitan", "any"}));
    design
        ->add_option("--micro-batches", args->micro_batches,
                     "micro-batches per dry run (default: the largest degree; 1F1B holds\n"
                     "min(P - s, M) of them on stage s)")
        ->type_name("M")
        ->check(count_in(limits::micro_batches));
    design
        ->add_option("--runs", args->runs,
                     "dry runs to design (default: the fewest that identify everything)")
        ->type_name("N")
        ->check(count_in({1, 64, "dry runs"}));
    design
        ->add_option("--noise-mb", args->noise_mb,
                     "standard deviation of one measured peak, MB: the standard errors\n"
                     "printed are for it")
        ->type_name("S")
        ->capture_default_str()
        ->check(number_in(limits::positive_memory_mb));
    design
        ->add_option("--memory-limit-mb", args->memory_limit_mb,
                     "keep every stage of every run under X MB by the prior model\n"
                     "(--model, or --dryrun FILE for an earlier fit)")
        ->type_name("X")
        ->check(number_in(limits::positive_memory_mb));
    add_model_options(*design, args->choice);
    args->model_option = design->get_option("--model");
    design
        ->add_option("--dryrun", args->dryrun,
                     "earlier dry runs to fit the prior model to (dryrun-lsq)")
        ->type_name("FILE");
    add_duplicate_tolerance_option(*design, args->read);
    design
        ->add_option("--world-size", args->world_size,
                     "the job's ranks: also print, for each run, the commands that make it\n"
                     "on one GPU per rank (Megatron-LM's --fake-process-group, torchtitan's\n"
                     "COMM_MODE=fake_backend) with memory snapshots, and their import")
        ->type_name("N")
        ->check(count_in({1, std::numeric_limits<std::uint32_t>::max(), "ranks"}));
    design->add_flag("--json", args->json, "print ppb.design/1 JSON instead of text");
    commands.push_back({design, [args] { return run_design(*args); }, {}});
}

}  // namespace ppb::cli
