// ppb search: which pipeline configuration to run. Every combination of pipeline degree (with
// the micro-batch count a fixed global batch gives it), schedule and chunks, and recompute
// policy is planned exactly on a pool of threads and ranked by its simulated iteration time.
#include "commands.hpp"
#include "layer_times.hpp"
#include "plugin_session.hpp"
#include "report_html.hpp"
#include "search_output.hpp"
#include "search_progress.hpp"

#include <ppb/json_output.hpp>
#include <ppb/partition/communication.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/partition/search.hpp>
#include <ppb/partition/search_document.hpp>
#include <ppb/partition/search_request.hpp>
#include <ppb/partition/shape_time.hpp>
#include <ppb/partition/simulate_plan.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/timeline_svg.hpp>

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <optional>

namespace ppb::cli {
namespace {

struct SearchArgs {
    std::string model_desc;
    std::string time_convention{partition::name_of(partition::TimeConvention::hyper_parallel)};
    std::string dryrun;
    ModelChoice choice;
    DryRunReadOptions read;
    std::optional<std::uint32_t> devices;
    std::vector<std::uint32_t> pipeline_degrees;
    std::vector<std::uint32_t> tensor_parallel;
    std::optional<std::uint32_t> data_parallel;
    std::uint64_t global_batch = 0;
    std::vector<std::uint32_t> micro_batch_size;
    std::vector<std::uint32_t> context_parallel;
    std::vector<std::string> sharding;
    std::vector<std::uint32_t> expert_parallel;
    std::vector<std::uint32_t> expert_tensor_parallel;
    std::vector<std::string> schedules;  // none: the library's default
    std::vector<std::uint32_t> chunks = {2};
    std::vector<std::string> recompute = {"any"};
    std::string recompute_rule = "mindformers";
    std::optional<double> memory_limit_mb;
    double memory_margin_mb = 0.0;
    double memory_margin_sigma = 0.0;
    std::size_t top = 10;
    bool show_infeasible = false;
    bool json = false;
    std::string report;
    unsigned jobs = 0;
    bool fast = false;
    std::string progress = "auto";
    DeviceOptions device;
    std::optional<double> comm_time;
};

// Set by SIGINT: the search stops taking configurations. A second SIGINT ends the process the
// default way.
std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_interrupt(int) {
    if (interrupted.exchange(true)) {
        std::signal(SIGINT, SIG_DFL);
        std::raise(SIGINT);
    }
}

// SIGINT handled by on_interrupt while it lives; the previous handler restored after.
class InterruptScope {
  public:
    InterruptScope() {
        interrupted = false;
        struct sigaction action {};
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &previous_);
    }
    ~InterruptScope() { sigaction(SIGINT, &previous_, nullptr); }
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

  private:
    struct sigaction previous_ {};
};

int run_search_command(const SearchArgs& args) {
    // Everything the user typed is checked before any plugin is loaded.
    const std::optional<partition::Cluster> cluster = chosen_cluster(args.device);
    const ModelOptions options = args.choice.options.empty()
                                     ? ModelOptions{}
                                     : options_text(args.choice.options, "--model-options");
    partition::SearchRequest request;
    request.times =
        times_request_of(args.model_desc, args.time_convention, options, args.device, cluster);
    request.model_options = options.json;
    request.devices = args.devices;
    request.pipeline_degrees = args.pipeline_degrees;
    request.tensor_parallel = args.tensor_parallel;
    request.data_parallel = args.data_parallel;
    request.global_batch = args.global_batch;
    request.micro_batch_size = args.micro_batch_size;
    request.context_parallel = args.context_parallel;
    request.data_parallel_sharding = args.sharding;
    request.expert_parallel = args.expert_parallel;
    request.expert_tensor_parallel = args.expert_tensor_parallel;
    request.schedules = args.schedules;
    request.chunks = args.chunks;
    request.recompute = args.recompute;
    request.recompute_rule = args.recompute_rule;
    request.memory_limit_mb = args.memory_limit_mb;  // else the cluster's, said on stderr
    request.memory_margin_mb = args.memory_margin_mb;
    request.memory_margin_sigma = args.memory_margin_sigma;
    request.comm_time = args.comm_time;
    request.top = args.top;
    request.show_infeasible = args.show_infeasible;
    request.fast = args.fast;

    // Each memory model the search needs, opened and fitted as ppb partition prepares one.
    const std::optional<DryRunSet> dryrun = read_optional_dryrun(args.dryrun, args.read);
    std::optional<std::vector<PluginCandidate>> candidates;
    const partition::ModelMaker make = [&](const std::string& options_json) {
        if (!candidates)
            candidates = discover_from_args(args.choice.plugin_paths);
        PreparedModel prepared =
            prepare_model(open_model_spec(*candidates, args.choice.model,
                                          ModelOptions{options_json, options.file}),
                          dryrun ? &*dryrun : nullptr, args.dryrun, "--dryrun FILE");
        return partition::SearchModel{std::move(prepared.model), std::move(prepared.source)};
    };
    ProgressBar bar(progress_mode(args.progress), "configurations");
    partition::SearchAnswer answer;
    {
        const InterruptScope scope;
        try {
            answer = partition::search_request(
                request, make, partition::flag_name,
                {.jobs = args.jobs,
                 .on_progress =
                     [&](const partition::SearchProgress& p) { bar.update(p.done, p.total); },
                 .stop = &interrupted},
                {.warning =
                     [](const std::string& w) { fmt::print(stderr, "ppb: warning: {}\n", w); },
                 .note = [](const std::string& n) { fmt::print(stderr, "ppb: note: {}\n", n); }});
        } catch (const partition::RequestError& e) {
            throw UsageError(e.what());
        }
        bar.finish();
    }
    const partition::SearchContext& context = answer.context;
    if (!args.report.empty()) {
        // Every planned configuration on the page (the chart has one point each), and the best
        // plan's timeline with its memory, which the search did not trace.
        partition::SearchContext all = context;
        all.top = 0;
        std::string timeline;
        if (const partition::PlannedPartition* best = answer.best()) {
            timeline =
                timeline_svg(simulate(partition::simulation_input(best->problem, best->plan)),
                             report_timeline_options());
        }
        write_output_file(
            args.report,
            search_report_html(partition::search_document(answer.space, answer.base, answer.plan,
                                                          answer.result, all),
                               timeline, {context.model.source, context.time_unit}));
    }
    write_stdout(
        args.json ? to_pretty_json(partition::search_document(answer.space, answer.base,
                                                              answer.plan, answer.result, context))
                  : render_search(answer.space, answer.base, answer.plan, answer.result, context));
    if (answer.result.stopped) {
        fmt::print(stderr,
                   "ppb: interrupted: planned {} of {} configurations; the ranking covers those\n",
                   answer.result.outcomes.size(), answer.plan.configurations.size());
        return 128 + SIGINT;
    }
    return 0;
}

}  // namespace

void add_search_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<SearchArgs>();
    CLI::App* search = add_command(
        app, "search", "rank pipeline configurations by their planned iteration time",
        "Plans every combination of pipeline degree P, schedule (and chunks) and recompute\n"
        "policy exactly, as 'ppb partition' does, and ranks them by the simulated iteration\n"
        "time of their optimal plans (one iteration processes the global batch B): with N\n"
        "devices and tensor parallel t, P makes d = N / (P t) data-parallel replicas, each\n"
        "running M = B / (b d) micro-batches of b samples; with a model shape, several t and b\n"
        "(--tensor-parallel 2,4,8 --micro-batch-size 1,2) are searched too. Each line shows the "
        "memory headroom\n"
        "of the plan's fullest stage. The layer times are the layer file's, for its micro-batch\n"
        "size and tensor parallel (the times do not change with P). With --device or --cluster\n"
        "and a model shape, the transfers between stages and the data-parallel gradient\n"
        "synchronisation are timed on the cluster's links (host_api/docs/cluster.md); otherwise\n"
        "--comm-time alone. A model configured by a shape\n"
        "(options holding tensor_parallel, like the analytic model's) is given each\n"
        "configuration's data_parallel; a model fitted to dry runs predicts as it was fitted.\n"
        "Configurations are planned on every core (--jobs); the results do not depend on it.\n"
        "A progress bar shows on a terminal after a second; Ctrl-C stops the search and prints\n"
        "the ranking of the configurations planned so far (exit status 130)."
        "\n\n"
        "Exit status: 0 ranked, 2 invalid input or usage (a global batch the micro-batch size\n"
        "and data-parallel degree do not divide, pipeline degrees that do not divide the\n"
        "devices, an empty search space), 3 plugin not found or failed, 4 no configuration fits\n"
        "the memory limit (stderr gives the smallest limit that fits one), 130 interrupted, 1\n"
        "other errors.");
    search
        ->add_option("--model-desc", args->model_desc,
                     "layer file in the SAPP shape (HEAD / BODY / TAIL entries with nb_layer\n"
                     "and times); without it, the model shape of --model-options is timed\n"
                     "from its FLOPs (ms at --device-tflops)")
        ->type_name("FILE");
    add_device_options(*search, args->device);
    add_time_convention_option(*search, args->time_convention);
    search->add_option("--devices", args->devices, "devices in all, N (every P dividing N / t)")
        ->type_name("N")
        ->check(count_in({1, 1'000'000, "devices"}));
    as_comma_list(search->add_option("--pipeline-degrees,--stages", args->pipeline_degrees,
                                     "the pipeline degrees to consider (default: every P\n"
                                     "dividing N / t that leaves each stage a layer)"))
        ->type_name("P,...")
        ->check(count_in(limits::stages));
    as_comma_list(
        search->add_option("--tensor-parallel", args->tensor_parallel,
                           "tensor-parallel degrees t to consider (default: the model options'\n"
                           "tensor_parallel, or 1); several need a model shape (--model-options)"))
        ->type_name("T,...")
        ->check(count_in({1, 1'000'000, "devices"}));
    search
        ->add_option("--data-parallel", args->data_parallel,
                     "data-parallel degree without --devices (default: the model options'\n"
                     "data_parallel, or 1)")
        ->type_name("D")
        ->check(count_in({1, 1'000'000, "replicas"}));
    search
        ->add_option("--global-batch,--global-batch-size", args->global_batch,
                     "samples per iteration, B")
        ->type_name("B")
        ->required()
        ->check(count_in({1, 1'000'000'000, "samples"}));
    as_comma_list(
        search->add_option("--micro-batch-size", args->micro_batch_size,
                           "samples per micro-batch b to consider (default: the model options'\n"
                           "micro_batch_size, or 1); several need a model shape"))
        ->type_name("b,...")
        ->check(count_in({1, 1'000'000, "samples"}));
    as_comma_list(
        search->add_option("--context-parallel", args->context_parallel,
                           "context-parallel degrees cp to consider (default: the model options'\n"
                           "context_parallel, or 1); several need a model shape"))
        ->type_name("CP,...")
        ->check(count_in({1, 1'000'000, "devices"}));
    as_comma_list(search->add_option(
                      "--expert-parallel", args->expert_parallel,
                      "expert-parallel degrees EP of an MoE shape to consider, each a\n"
                      "configuration (default: the model options' moe.expert_parallel); EP x ETP\n"
                      "must divide t x cp x d"))
        ->type_name("EP,...")
        ->check(count_in({1, 1'000'000, "devices"}));
    as_comma_list(search->add_option(
                      "--expert-tensor-parallel", args->expert_tensor_parallel,
                      "expert-tensor-parallel degrees ETP of an MoE shape to consider, each a\n"
                      "configuration with each EP (default: the model options'\n"
                      "moe.expert_tensor_parallel, else t); EP x ETP must divide t x cp x d"))
        ->type_name("ETP,...")
        ->check(count_in({1, 1'000'000, "devices"}));
    as_comma_list(
        search->add_option(
            "--data-parallel-sharding", args->sharding,
            "what data parallelism shards, each a configuration (default: the model options'):\n"
            "no_shard, optim (the distributed optimizer), optim_grads, optim_grads_params\n"
            "(Megatron-FSDP, FSDP2); needs a model shape"))
        ->type_name("S,...")
        ->check(CLI::IsMember(std::vector<std::string>(partition::sharding_names.begin(),
                                                       partition::sharding_names.end())));
    as_comma_list(
        search->add_option("--schedules,--schedule", args->schedules,
                           "schedules to consider (default: 1f1b,interleaved,dualpipe-v, and\n"
                           "combined-1f1b for an MoE model shape on a cluster where Megatron-LM\n"
                           "runs it)"))
        ->type_name("NAME,...")
        ->check(schedule_choice());
    as_comma_list(search->add_option("--chunks", args->chunks,
                                     "chunks per stage to consider for the interleaved schedules\n"
                                     "(and combined-1f1b, which also runs 1 on one stage)"))
        ->type_name("V,...")
        ->capture_default_str()
        ->check(count_in({2, limits::chunks.max, "chunks"}));
    as_comma_list(search->add_option(
                      "--recompute", args->recompute,
                      "recompute policies to consider: 'any' (the best kind per layer among\n"
                      "all the model predicts), a kind (every layer: none, select, comm, both,\n"
                      "full) or kinds joined by '+' (none+full)"))
        ->type_name("POLICY,...")
        ->capture_default_str();
    search
        ->add_option("--recompute-rule", args->recompute_rule,
                     "mixes of kinds a stage may hold (as for 'ppb partition')")
        ->type_name("RULE")
        ->capture_default_str()
        ->check(CLI::IsMember({"mindformers", "any", "megatron", "torchtitan"}));
    search
        ->add_option("--memory-limit-mb", args->memory_limit_mb,
                     "device memory available to a stage, MB (default: what the allocator can\n"
                     "reserve on --device or --cluster: the memory the runtime reports less\n"
                     "what a process keeps outside the allocator)")
        ->type_name("X")
        ->check(number_in(limits::positive_memory_mb));
    search->add_option("--memory-margin-mb", args->memory_margin_mb, "plan against X - Y")
        ->type_name("Y")
        ->capture_default_str()
        ->check(number_in(limits::memory_mb));
    search
        ->add_option("--memory-margin-sigma", args->memory_margin_sigma,
                     "plan against the prediction + K standard errors (1f1b)")
        ->type_name("K")
        ->capture_default_str()
        ->check(number_in(limits::margin_sigma));
    add_model_options(*search, args->choice);
    search
        ->add_option("--dryrun", args->dryrun,
                     "dry-run observations to fit the model to (dryrun-lsq)")
        ->type_name("FILE");
    add_duplicate_tolerance_option(*search, args->read);
    search->add_option("--top", args->top, "configurations listed (0: all)")
        ->type_name("N")
        ->capture_default_str()
        ->check(count_in({0, 1'000'000, "configurations"}));
    search->add_flag("--show-infeasible", args->show_infeasible,
                     "also list the configurations that do not fit, with the smallest\n"
                     "limit that would, and the combinations left out and why");
    search
        ->add_option("--jobs", args->jobs,
                     "threads planning configurations (default 0: one per core)")
        ->type_name("J")
        ->capture_default_str()
        ->check(count_in({0, 1024, "threads"}));
    search
        ->add_option("--progress", args->progress,
                     "progress bar on stderr: 'auto' (on a terminal, after a second),\n"
                     "'always' or 'never'")
        ->type_name("WHEN")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "always", "never"}));
    search
        ->add_option("--comm-time", args->comm_time,
                     "point-to-point time of one transfer between neighbouring stages, in\n"
                     "the layer times' unit (the layer file's; ms for times from a model\n"
                     "shape), on every boundary of every configuration:\n"
                     "each plan's simulated iteration (the ranking) waits for it")
        ->type_name("T");
    search->add_flag("--fast", args->fast,
                     "skip the local search on the simulated iteration that plans again the 8\n"
                     "best configurations with chunks and every other that could still be among\n"
                     "them (each configuration is then the exact optimum of the better\n"
                     "estimate, as ppb partition --fast)");
    search->add_flag("--json", args->json, "print ppb.search/1 JSON instead of a table");
    search
        ->add_option("--report", args->report,
                     "also write the search as one self-contained HTML page to FILE: the\n"
                     "ranking, iteration time against headroom, the best plan")
        ->type_name("FILE.html");
    commands.push_back({search, [args] { return run_search_command(*args); }, {}});
}

}  // namespace ppb::cli
