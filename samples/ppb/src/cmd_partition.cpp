// ppb partition: how many body layers each stage holds and which recompute kind each layer
// uses, so that no stage exceeds the memory limit and the iteration is as fast as possible.
#include "breakdown_output.hpp"
#include "commands.hpp"
#include "layer_times.hpp"
#include "partition_output.hpp"
#include "plugin_session.hpp"
#include "report_html.hpp"
#include "sapp_config.hpp"

#include <ppb/importers/sapp_problem.hpp>
#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/number_text.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/partition/plan_warnings.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/request.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/simulator.hpp>
#include <ppb/timeline_svg.hpp>

#include <fmt/format.h>

#include <memory>
#include <optional>

namespace ppb::cli {
namespace {

// `build()`, its request's errors (partition::RequestError, naming flags) as usage errors.
template <typename Build>
auto usage_checked(Build build) {
    try {
        return build();
    } catch (const partition::RequestError& e) {
        throw UsageError(e.what());
    }
}

struct PartitionArgs {
    std::string model_desc;
    std::string time_convention{partition::name_of(partition::TimeConvention::hyper_parallel)};
    std::string dryrun;
    ModelChoice choice;
    bool model_chosen = false;  // --model or --model-options given
    DryRunReadOptions read;
    bool json = false;
    std::string sapp_config;
    std::optional<std::uint32_t> stages;
    std::optional<std::uint32_t> micro_batches;
    std::optional<double> memory_limit_mb;
    std::optional<double> memory_margin_mb;
    double memory_margin_sigma = 0.0;
    std::vector<std::string> kinds;
    std::string recompute_rule = "mindformers";
    std::optional<std::string> schedule;
    std::optional<std::uint32_t> chunks;
    std::string timeline;
    std::string report;
    std::string objective = "auto";
    bool refine = false;
    bool fast = false;
    DeviceOptions device;
    std::vector<double> comm_time;
    bool breakdown = false;
    BasisChoice memory = BasisChoice::automatic;
    double weight_grad_share = 0.5;
};

int run_partition(const PartitionArgs& args) {
    // Everything the user typed is checked before any plugin is loaded.
    PartitionSettings settings{args.stages,           args.micro_batches, args.memory_limit_mb,
                               args.memory_margin_mb, args.schedule,      args.chunks};
    std::optional<SappSettings> sapp;
    if (!args.sapp_config.empty()) {
        sapp = sapp_partition_settings(importers::read_sapp_problem(args.sapp_config), settings);
        settings = sapp->settings;
    }
    if (!settings.stages) {
        throw UsageError(
            "--stages is required (or --sapp-config FILE, whose pipeline_num gives it)");
    }
    const std::optional<partition::Cluster> cluster = chosen_cluster(args.device);
    partition::PartitionRequest request;
    request.stages = *settings.stages;
    request.memory_limit_mb = memory_limit_of(settings.memory_limit_mb, cluster,
                                              ", or --sapp-config FILE, whose memory_limit does");
    request.memory_margin_mb = settings.memory_margin_mb.value_or(0.0);
    request.memory_margin_sigma = args.memory_margin_sigma;
    request.kinds = args.kinds;
    request.recompute_rule = args.recompute_rule;
    request.schedule = settings.schedule.value_or("1f1b");
    request.chunks = settings.chunks;
    request.objective = args.objective;
    request.weight_grad_share = args.weight_grad_share;
    request.refine = args.refine;
    request.fast = args.fast;
    request.comm_time = args.comm_time;
    if (request.comm_time.empty() && sapp && sapp->problem.sim_comm_time.value > 0.0)
        request.comm_time = {sapp->problem.sim_comm_time.value};  // SAPP's simulator's
    partition::Problem problem =
        usage_checked([&] { return partition::problem_of(request, partition::flag_name); });
    // SAPP plans with its layer file alone: with --sapp-config and neither --dryrun nor a model
    // chosen, the layer file's memory is the model (the table model of it), read with its times
    // (hyper-parallel, hyper_parallel/auto_parallel/sapp_ppb/pp_optimizer.py at commit
    // 4ebc546b4b0d9e39f6135784fce5e9d896f7d65e: PPOptimizer.optimize takes the -init YAML and
    // the layer file, and its LayerBuilder the layers' memory from that file).
    const bool layer_file_memory =
        sapp && args.dryrun.empty() && !args.model_chosen && !args.model_desc.empty();
    std::optional<ModelOptions> layer_file_options;
    // The layer file's times, or the model shape's (--model-options) from its FLOPs.
    const ModelOptions shape_options = args.choice.options.empty()
                                           ? ModelOptions{}
                                           : options_text(args.choice.options, "--model-options");
    // A model shape's layers on a cluster: its links time the transfers between stages, unless
    // --comm-time gives them, and the data-parallel synchronisation after the iteration
    // (ppb/partition/communication.hpp), over the shape's data_parallel replicas.
    partition::TimesRequest times_request = times_request_of(args.model_desc, args.time_convention,
                                                             shape_options, args.device, cluster);
    times_request.expert_overlap = problem.schedule == Schedule::combined_1f1b;
    const partition::RequestTimes times = [&] {
        if (layer_file_memory) {
            LayerFileModel read = read_layer_file_model(args.model_desc, args.time_convention);
            layer_file_options = std::move(read.options);
            return partition::RequestTimes{std::move(read.times.time), read.times.source,
                                           read.times.unit};
        }
        return usage_checked(
            [&] { return partition::times_of(times_request, partition::flag_name); });
    }();
    usage_checked([&] {
        partition::set_times(problem, times, cluster ? &*cluster : nullptr, !args.comm_time.empty(),
                             partition::flag_name);
        return 0;
    });
    for (const std::string& warning : problem.time.warnings)
        fmt::print(stderr, "ppb: warning: {}\n", warning);
    if (sapp) {
        std::vector<std::string> body_names;
        if (problem.time.grouped()) {
            for (const auto& group : problem.time.groups)
                body_names.push_back(group.name);
        } else {
            body_names.push_back(problem.time.body_name);
        }
        check_sapp_layers(
            *sapp, problem.time.body_layers, body_names,
            args.model_desc.empty() ? std::string("the model shape's layers") : args.model_desc);
        for (const std::string& note : sapp->notes)
            fmt::print(stderr, "ppb: note: {}\n", note);
        if (layer_file_memory) {
            fmt::print(stderr,
                       "ppb: note: no --dryrun or --model: planning with the memory the layer "
                       "file {} holds, as SAPP does (the same as --model table --model-options "
                       "{})\n",
                       args.model_desc, args.model_desc);
        }
    }

    const std::optional<DryRunSet> dryrun = read_optional_dryrun(args.dryrun, args.read);
    problem.micro_batches = usage_checked([&] {
        return partition::micro_batches_of(
            settings.micro_batches,
            dryrun ? std::optional<std::uint32_t>(dryrun->micro_batches) : std::nullopt,
            partition::flag_name);
    });

    const partition::PlanWithModelOptions plan_options = usage_checked(
        [&] { return partition::plan_options_of(request, problem, partition::flag_name); });
    PreparedModel prepared =
        layer_file_options
            ? prepare_model(open_model_spec(discover_from_args(args.choice.plugin_paths), "table",
                                            *layer_file_options),
                            nullptr, "", "--dryrun FILE")
            : prepare_selected_model(args.choice, dryrun, args.dryrun, "--dryrun FILE",
                                     args.memory);
    const MemoryModel& model = prepared.model;
    PartitionContext context{model.name(), model.version(), prepared.source, times.unit,
                             model.allocator_reserve()};
    const partition::PlannedPartition planned =
        partition::plan_with_model(problem, model, plan_options);
    const Simulation& simulation = planned.simulation;
    for (const std::string& warning :
         partition::plan_warnings(planned.problem, planned.plan, simulation))
        fmt::print(stderr, "ppb: warning: {}\n", warning);
    // A model shape's layers on a cluster: the data-parallel synchronisation after the
    // iteration, over the shape's replicas, what the overlaps leave (what ppb search adds).
    const std::optional<double> sync =
        partition::data_parallel_sync_of(times, times_request, planned.problem, planned.plan);
    const std::uint32_t replicas = times.replicas;
    if (sync)
        context.data_parallel = PartitionContext::DataParallelSync{replicas, *sync};
    const auto document = [&] {
        auto doc = partition::partition_document(planned.problem, planned.plan, context, simulation,
                                                 planned.breakdown, planned.lower_bound);
        if (sapp)
            doc["sapp_config"] = sapp->report;
        return doc;
    };
    std::string after_simulation;
    if (!args.json && (args.breakdown || !problem.comm_time.empty())) {
        const double comm = partition::communication_estimate(planned.problem, planned.plan);
        after_simulation = fmt::format(
            "Communication between stages: {}; it adds {} to the partitioner objective ({} with "
            "it: what it costs evenly loaded stages, simulated)\n",
            comm_time_text(simulation.comm_time, problem.num_stages, times.unit),
            format_time(comm, times.unit),
            format_time(planned.plan.iteration_time + comm, times.unit));
        after_simulation += render_iteration_breakdown(
            partition::plan_iteration_breakdown(planned.problem, planned.plan, simulation),
            times.unit);
    }
    if (sync && !args.json) {
        after_simulation += fmt::format(
            "Data-parallel synchronisation: {} after the iteration, over the shape's {} "
            "replicas{} (the iteration with it: {}, as ppb search ranks it)\n",
            format_time(*sync, times.unit), replicas,
            args.device.overlap_grad_reduce || args.device.overlap_param_gather
                ? ", what its overlaps leave"
                : "",
            format_time(simulation.makespan + *sync, times.unit));
    }
    const std::string out =
        args.json ? to_pretty_json(document())
                  : render_partition(planned.problem, planned.plan, context, simulation,
                                     planned.lower_bound, after_simulation);
    if (!args.timeline.empty())
        write_output_file(args.timeline, timeline_svg(simulation));
    if (!args.report.empty()) {
        write_output_file(
            args.report,
            plan_report_html(document(), timeline_svg(simulation, report_timeline_options()),
                             {context.source, times.unit}));
    }
    write_stdout(out);
    return 0;
}

}  // namespace

void add_partition_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<PartitionArgs>();
    CLI::App* partition = add_command(
        app, "partition", "choose layers and recompute kinds per stage under a memory limit",
        "Chooses how many body layers each pipeline stage holds and which recompute kind each\n"
        "layer uses so that every stage's predicted peak memory stays within X - Y MB and the\n"
        "1F1B iteration estimate, sum of stage times + (M - 1) x the slowest stage, is as small\n"
        "as possible. The answer is the optimum of that model, not a heuristic's.\n"
        "With --schedule interleaved, interleaved-less-memory or dualpipe-v each stage holds\n"
        "--chunks blocks of layers (model order: chunk c of stage s is block c x P + s; under\n"
        "dualpipe-v chunk 1 comes back up, so stage 0 holds the first and last blocks), and the\n"
        "estimate is M x the busiest stage + the other stages' slowest chunks. Every plan is\n"
        "also timed by the schedule's own order (the simulated iteration).\n"
        "A layer file of several BODY names (dense and MoE layers, an encoder and a decoder) is a\n"
        "model of several groups of layers: each stage takes a contiguous range of the layers in\n"
        "model order, and the memory model must know the groups by those names (1F1B).\n"
        "--sapp-config INIT.yaml takes the problem from SAPP's -init YAML, as SAPP's own\n"
        "validator reads it; stderr and the JSON's \"sapp_config\" say which keys flags\n"
        "overrode and which have no ppb setting. Without --dryrun and --model it plans, as\n"
        "SAPP does, with the memory the --model-desc layer file holds (the table model)."
        "\n\n"
        "Exit status: 0 partitioned, 2 invalid input or usage, 3 plugin not found or failed,\n"
        "4 no placement fits the memory limit (stderr says why, and the smallest limit that\n"
        "fits), 1 other errors.");
    partition
        ->add_option("--model-desc", args->model_desc,
                     "layer file in the SAPP shape ({\"layers_description\": [...]}:\n"
                     "HEAD / BODY / TAIL entries with nb_layer and times); without it, the\n"
                     "model shape of --model-options is timed from its FLOPs (ms at\n"
                     "--device-tflops)")
        ->type_name("FILE");
    add_device_options(*partition, args->device);
    add_time_convention_option(*partition, args->time_convention);
    partition
        ->add_option("--sapp-config", args->sapp_config,
                     "SAPP's -init YAML: its pipeline_config is the problem\n"
                     "(pipeline_num, micro_batch_num, num_of_interleave,\n"
                     "vpp_less_memory, memory_limit, constant_memory as the margin;\n"
                     "num_layer checked); each flag given as well overrides its key\n"
                     "or gives it; without --dryrun and --model, the memory is the\n"
                     "--model-desc layer file's (--model table)")
        ->type_name("INIT.yaml")
        ->check(CLI::ExistingFile);
    partition
        ->add_option("--stages", args->stages, "pipeline degree (required without --sapp-config)")
        ->type_name("P")
        ->check(count_in(limits::stages));
    partition
        ->add_option("--micro-batches", args->micro_batches,
                     "micro-batches per iteration (default: the dry-run file's)")
        ->type_name("M")
        ->check(count_in(limits::micro_batches));
    partition
        ->add_option("--memory-limit-mb", args->memory_limit_mb,
                     "device memory available to a stage, MB (default: what the allocator can\n"
                     "reserve on --device or --cluster, the memory the runtime reports less\n"
                     "what a process keeps outside the allocator; or --sapp-config's\n"
                     "memory_limit)")
        ->type_name("X")
        ->check(number_in(limits::positive_memory_mb));
    partition
        ->add_option("--memory-margin-mb", args->memory_margin_mb, "plan against X - Y (default 0)")
        ->type_name("Y")
        ->check(number_in(limits::memory_mb));
    add_memory_basis_option(*partition, args->memory, " (the peak of the live tensors)");
    as_comma_list(
        partition->add_option("--kinds", args->kinds,
                              "recompute kinds allowed (default: all the model predicts)"))
        ->type_name("KIND,...")
        ->check(recompute_kind());
    partition
        ->add_option("--recompute-rule", args->recompute_rule,
                     "mixes of recompute kinds a stage may hold: 'mindformers', what\n"
                     "MindFormers' per-stage counts can build (no stage mixes 'select'\n"
                     "and 'comm' layers; the arrays printed rebuild the plan exactly), or\n"
                     "'any', every mix (for runtimes that set recompute layer by layer;\n"
                     "arrays are printed only if the plan happens to be expressible), or\n"
                     "'megatron', one recompute setting for the whole model as Megatron-LM\n"
                     "applies it (none, selective, full block N or uniform), or\n"
                     "'torchtitan', the same without block (torchtitan's\n"
                     "activation_checkpoint); both exact, with the framework's flags")
        ->type_name("RULE")
        ->capture_default_str()
        ->check(CLI::IsMember({"mindformers", "any", "megatron", "torchtitan"}));
    partition
        ->add_option("--memory-margin-sigma", args->memory_margin_sigma,
                     "plan each stage against its predicted memory + K standard\n"
                     "errors of that prediction (the fit's uncertainty; K = 2: about\n"
                     "97.7% one-sided per stage under normal errors); subtracted\n"
                     "along with --memory-margin-mb")
        ->type_name("K")
        ->capture_default_str()
        ->check(number_in(limits::margin_sigma));
    partition
        ->add_option("--schedule", args->schedule,
                     "pipeline schedule: 1f1b (the default), interleaved (Megatron's\n"
                     "virtual pipeline, MindFormers' pp_interleave_num),\n"
                     "interleaved-less-memory, dualpipe-v, the zero-bubble zb-h1 (one\n"
                     "chunk) and zb-v (two, in a V), whose backwards run as an input\n"
                     "gradient B and a weight gradient W (--weight-grad-share), or\n"
                     "combined-1f1b (Megatron's --overlap-moe-expert-parallel-comm:\n"
                     "interleaved's order, each MoE layer's all-to-all overlapped)")
        ->type_name("NAME")
        ->check(schedule_choice());
    partition
        ->add_option("--chunks", args->chunks,
                     "chunks per stage (default: 1 for 1f1b and for combined-1f1b on one\n"
                     "stage, 2 otherwise; dualpipe-v has 2)")
        ->type_name("V")
        ->check(count_in(limits::chunks));
    partition
        ->add_option("--objective", args->objective,
                     "the estimate minimised with chunks: 'stages' (M x the busiest stage +\n"
                     "the other stages' slowest chunks), 'slots' ((M v - 1) x the slowest\n"
                     "chunk + every stage's slowest chunk), or 'auto': the exact optimum of\n"
                     "each, keeping the one whose iteration simulates faster")
        ->type_name("NAME")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "stages", "slots"}));
    as_comma_list(partition->add_option(
                      "--comm-time", args->comm_time,
                      "point-to-point time of one transfer between neighbouring stages, in\n"
                      "the layer times' unit (the layer file's; ms for times from a model\n"
                      "shape): one value for every boundary, or one per boundary (P - 1;\n"
                      "the interleaved schedules also cross from the last stage back to\n"
                      "stage 0: P). The simulated iteration waits for it; the partitioner\n"
                      "objective adds what it costs evenly loaded stages. Default: SAPP's\n"
                      "sim_comm_time with --sapp-config, else none"))
        ->type_name("T,...");
    partition
        ->add_option("--weight-grad-share", args->weight_grad_share,
                     "zb-h1 and zb-v: the share of each backward (without its\n"
                     "recomputation) that is the weight gradient W; the input gradient B\n"
                     "takes the rest and the recomputation (the layer file gives no split)")
        ->type_name("S")
        ->capture_default_str();
    partition->add_flag("--breakdown", args->breakdown,
                        "also print the simulated iteration broken down as SAPP reads it:\n"
                        "work + ideal bubble + imbalance + communication + recompute\n"
                        "(always with --comm-time; always in --json)");
    partition->add_flag("--refine", args->refine,
                        "the default with chunks, accepted: improve the plan on the simulated\n"
                        "iteration, a local search from the optimum (at most 100 moves; the\n"
                        "estimate is then no longer the minimum, the simulated iteration is\n"
                        "lower)");
    partition->add_flag("--fast", args->fast,
                        "with chunks, skip the local search: the exact optimum of the estimate\n"
                        "alone (milliseconds; its simulated iteration is often a few % slower)");
    partition
        ->add_option("--timeline", args->timeline,
                     "also draw the plan's simulated iteration as SVG to FILE")
        ->type_name("FILE.svg");
    partition
        ->add_option("--report", args->report,
                     "also write the plan as one self-contained HTML page to FILE: each\n"
                     "stage's memory against the limit, the timeline, the configuration")
        ->type_name("FILE.html");
    add_model_options(*partition, args->choice);
    partition
        ->add_option("--dryrun", args->dryrun,
                     "dry-run observations to fit the model to (ppb.dryrun/1), for\n"
                     "models fitted to them (dryrun-lsq)")
        ->type_name("FILE");
    add_duplicate_tolerance_option(*partition, args->read);
    partition->add_flag("--json", args->json, "print ppb.partition/1 JSON instead of a table");
    commands.push_back({partition,
                        [args, partition] {
                            args->model_chosen = partition->count("--model") > 0 ||
                                                 partition->count("--model-options") > 0;
                            return run_partition(*args);
                        },
                        {}});
}

}  // namespace ppb::cli
