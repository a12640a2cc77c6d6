// ppb partition: how many body layers each stage holds and which recompute kind each layer
// uses, so that no stage exceeds the memory limit and the iteration is as fast as possible.
#include "commands.hpp"
#include "partition_output.hpp"
#include "plugin_session.hpp"

#include <ppb/json_output.hpp>
#include <ppb/kinds.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/time_model.hpp>

#include <fmt/format.h>

#include <iterator>

namespace ppb::cli {
namespace {

constexpr std::string_view usage =
    R"(Usage: ppb partition --model-desc FILE --stages P --memory-limit-mb X [options]

Chooses how many body layers each pipeline stage holds and which recompute kind each layer
uses so that every stage's predicted peak memory stays within X - Y MB and the 1F1B iteration
estimate, sum of stage times + (M - 1) x the slowest stage, is as small as possible. The
answer is the optimum of that model, not a heuristic's.

Options:
  --model-desc FILE            layer file in the SAPP shape ({"layers_description": [...]}:
                               HEAD / BODY / TAIL entries with nb_layer and times)
  --stages P                   pipeline degree (required)
  --micro-batches M            micro-batches per iteration (default: the dry-run file's)
  --memory-limit-mb X          device memory available to a stage, MB (required)
  --memory-margin-mb Y         plan against X - Y (default 0)
  --kinds KIND,...             recompute kinds allowed (default: all the model predicts)
  --model NAME[@VERSION]       memory model plugin (default dryrun-lsq)
  --dryrun FILE                dry-run observations to fit the model to (ppb.dryrun/1), for
                               models fitted to them (dryrun-lsq)
  --model-options JSON|FILE    options for the model (table: a SAPP layer file with memory;
                               analytic: the model's shape)
  --duplicate-tolerance X      see 'ppb fit --help'
  --plugin-path DIR            search DIR for plugins first (repeatable)
  --json                       print ppb.partition/1 JSON instead of a table
  -h, --help                   show this help

Exit status: 0 partitioned, 2 invalid input or usage, 3 plugin not found or failed,
4 no placement fits the memory limit (stderr says why, and the smallest limit that fits),
1 other errors.
)";

std::uint32_t parse_kinds(const std::string& text) {
    std::uint32_t mask = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string name =
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const auto kind = kind_from_name(name);
        if (!kind) {
            throw UsageError(fmt::format(
                "--kinds: unknown recompute kind '{}' (expected none, select, comm, both or full)",
                name));
        }
        mask |= PPB_KIND_BIT(*kind);
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return mask;
}

double parse_mb(const Args& args, std::string_view name, bool required) {
    const auto value = args.double_value(name);
    if (!value) {
        if (required)
            throw UsageError(fmt::format("missing --{} X", name));
        return 0.0;
    }
    return *value;
}

}  // namespace

int run_partition(std::span<const std::string> words) {
    std::vector<OptionSpec> specs(std::begin(plugin_option_specs), std::end(plugin_option_specs));
    specs.insert(specs.end(), {{"json"},
                               {"help"},
                               {"duplicate-tolerance", true},
                               {"model-desc", true},
                               {"dryrun", true},
                               {"stages", true},
                               {"micro-batches", true},
                               {"memory-limit-mb", true},
                               {"memory-margin-mb", true},
                               {"kinds", true}});
    const Args args(words, specs);
    if (args.flag("help")) {
        fmt::print("{}", usage);
        return 0;
    }
    if (!args.positional().empty()) {
        throw UsageError(fmt::format("unexpected argument '{}'", args.positional().front()));
    }
    // Everything the user typed is checked before any plugin is loaded.
    const auto model_desc = args.value("model-desc");
    if (!model_desc)
        throw UsageError("missing --model-desc FILE (a SAPP layer file)");
    const auto stages = args.uint_value("stages", 1);
    if (!stages)
        throw UsageError("missing --stages P");
    partition::Problem problem;
    problem.num_stages = *stages;
    problem.memory_limit_mb = parse_mb(args, "memory-limit-mb", true);
    problem.memory_margin_mb = parse_mb(args, "memory-margin-mb", false);
    if (problem.memory_limit_mb <= 0.0)
        throw UsageError("--memory-limit-mb: expected a positive number of MB");
    if (problem.memory_margin_mb < 0.0 || problem.memory_margin_mb >= problem.memory_limit_mb) {
        throw UsageError("--memory-margin-mb: expected at least 0 and less than --memory-limit-mb");
    }
    if (const auto kinds = args.value("kinds"))
        problem.kinds = parse_kinds(*kinds);
    const auto micro_batches = args.uint_value("micro-batches", 1);
    problem.time = partition::read_time_model(*model_desc);

    std::optional<DryRunSet> dryrun;
    const auto dryrun_path = args.value("dryrun");
    if (dryrun_path)
        dryrun = read_dryrun(args, *dryrun_path);
    problem.micro_batches = micro_batches.value_or(dryrun ? dryrun->micro_batches : 0);
    if (problem.micro_batches == 0) {
        throw UsageError(
            "missing --micro-batches M (the dry-run file does not give micro_batches)");
    }

    PreparedModel prepared = prepare_model(open_selected_model(args), dryrun ? &*dryrun : nullptr,
                                           dryrun_path.value_or(""), "--dryrun FILE");
    MemoryModel& model = prepared.model;
    const PartitionContext context{model.name(), model.version(), prepared.source};
    partition::MemorySource memory;
    memory.linear = model.parameters();
    memory.kinds = model.kinds();
    memory.predict_batch = [&model](std::span<const ppb_placement> placements) {
        return model.predict_batch(placements);
    };
    const partition::Plan plan = partition::solve(problem, memory);
    const std::string out = args.flag("json")
                                ? to_pretty_json(partition_document(problem, plan, context))
                                : render_partition(problem, plan, context);
    fmt::print("{}", out);
    return 0;
}

}  // namespace ppb::cli
