#include <ppb/partition/model_plan.hpp>

#include "chunk_tables.hpp"
#include "grouped_envelope.hpp"

#include <ppb/errors.hpp>
#include <ppb/partition/lower_bound.hpp>
#include <ppb/partition/refine.hpp>
#include <ppb/partition/request_error.hpp>
#include <ppb/partition/simulate_plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ppb::partition {
namespace {

std::string quoted_list(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
        out += fmt::format("{}'{}'", out.empty() ? "" : ", ", n);
    return out;
}

// `p`'s layers per group (the time model's groups) as the model counts them: time-model group t
// is model group model_index[t] of model_count (a model group the time model lacks holds none).
std::vector<std::uint32_t> layers_in_model_order(const ppb_grouped_placement& p,
                                                 const std::vector<std::uint32_t>& model_index,
                                                 std::size_t model_count) {
    std::vector<std::uint32_t> layers(p.placement.num_chunks * model_count * PPB_KIND_COUNT, 0);
    for (std::uint32_t c = 0; c < p.placement.num_chunks; ++c) {
        for (std::uint32_t t = 0; t < p.num_groups; ++t) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                layers[(c * model_count + model_index[t]) * PPB_KIND_COUNT + k] =
                    p.group_layers[(c * p.num_groups + t) * PPB_KIND_COUNT + k];
            }
        }
    }
    return layers;
}

// The model's group of each of the time model's groups (by name; a one-group model's one group
// for a one-group time model whatever the names), or nullopt when one is not the model's.
std::optional<std::vector<std::uint32_t>> model_groups_of(const Problem& problem,
                                                          const std::vector<std::string>& model) {
    std::vector<std::string> names;
    if (problem.time.grouped()) {
        for (const auto& g : problem.time.groups)
            names.push_back(g.name);
    } else if (model.size() == 1) {
        return std::vector<std::uint32_t>{0};
    } else {
        names.push_back(problem.time.body_name);
    }
    std::vector<std::uint32_t> index;
    for (const auto& name : names) {
        const auto it = std::find(model.begin(), model.end(), name);
        if (it == model.end())
            return std::nullopt;
        index.push_back(static_cast<std::uint32_t>(it - model.begin()));
    }
    return index;
}

// The memory model's groups of body layers matched to the layer file's by name: each group's
// coefficients into memory.group_linear in the layer file's order, or (one group in the file)
// the coefficients to plan with as one group.
std::optional<ppb_linear_parameters> connect_groups(const Problem& problem,
                                                    const MemoryModel& model,
                                                    MemorySource& memory) {
    const auto& time = problem.time;
    std::vector<std::string> file_groups;
    for (const auto& g : time.groups)
        file_groups.push_back(g.name);
    if (time.grouped() && !model.supports_groups()) {
        throw InputError(fmt::format(
            "the layer file has {} groups of body layers ({}), but the memory model '{}' {} is "
            "built for plugin API {}.{}, which knows one group; groups need a plugin built for "
            "API 1.3 or newer",
            file_groups.size(), quoted_list(file_groups), model.name(), model.version(),
            model.api().abi_major, model.api_minor()));
    }
    const std::vector<std::string> model_groups = model.groups();
    const auto index_of = [&](const std::string& name) -> std::optional<std::uint32_t> {
        const auto it = std::find(model_groups.begin(), model_groups.end(), name);
        if (it == model_groups.end())
            return std::nullopt;
        return static_cast<std::uint32_t>(it - model_groups.begin());
    };
    if (!time.grouped()) {
        if (model_groups.size() == 1)
            return model.parameters();
        const auto g = index_of(time.body_name);
        if (!g) {
            throw InputError(fmt::format(
                "the layer file's BODY entry '{}' is not one of the memory model's groups of body "
                "layers ({}): name the BODY entry after the group its layers are, or give one "
                "BODY entry per group",
                time.body_name, quoted_list(model_groups)));
        }
        auto coefficients = model.group_parameters(*g);
        if (!coefficients) {
            throw InputError(
                fmt::format("the memory model '{}' {} has several groups of body "
                            "layers and is not linear: ppb plans groups with linear "
                            "models",
                            model.name(), model.version()));
        }
        return coefficients;
    }
    std::vector<std::uint32_t> model_index;
    for (const auto& name : file_groups) {
        const auto g = index_of(name);
        if (!g) {
            const std::string hint =
                model_groups.size() == 1
                    ? " (it knows one group: fit it to dry runs that count layers per group, "
                      "ppb.dryrun/3, or configure a model with these groups)"
                    : "";
            throw InputError(fmt::format(
                "the layer file's group of body layers '{}' is not a group of the memory model "
                "'{}' {} (its groups: {}){}; the layer file's groups are {}",
                name, model.name(), model.version(), quoted_list(model_groups), hint,
                quoted_list(file_groups)));
        }
        model_index.push_back(*g);
    }
    for (const std::uint32_t g : model_index) {
        auto coefficients = model.group_parameters(g);
        if (!coefficients) {
            // Not linear: the partitioner probes it through grouped predictions, the layer
            // file's groups put in the model's order (a group the file lacks holds none).
            memory.group_linear.clear();
            const std::size_t model_count = model_groups.size();
            memory.predict_grouped_batch = [&model, model_index, model_count](
                                               std::span<const ppb_grouped_placement> placements) {
                std::vector<std::vector<std::uint32_t>> counts;
                counts.reserve(placements.size());
                std::vector<ppb_grouped_placement> in_model_order;
                in_model_order.reserve(placements.size());
                for (const auto& p : placements) {
                    counts.push_back(layers_in_model_order(p, model_index, model_count));
                    in_model_order.push_back(
                        ppb_grouped_placement{p.placement, static_cast<std::uint32_t>(model_count),
                                              counts.back().data()});
                }
                return model.predict_grouped_batch(in_model_order);
            };
            return std::nullopt;
        }
        memory.group_linear.push_back(*coefficients);
    }
    return std::nullopt;
}

// A 1F1B plan of a model without coefficients leaves each stage's activation per micro-batch
// unknown (its solver asks the model about each stage at its one in-flight count only). The
// model's slope there, its prediction with one micro-batch more less its prediction, is that
// activation: with it the simulator draws the stage's memory over time, and its peak is the
// plan's memory (one vector per stage, the plan's own). Plans with chunks carry theirs already.
void add_slope_activations(const Problem& problem, Plan& plan, const MemorySource& memory) {
    if (plan.activations_known || problem.chunked())
        return;
    const bool grouped = problem.time.grouped();
    if (grouped ? !memory.predict_grouped_batch : !memory.predict_batch)
        return;
    std::vector<ppb_chunk> chunks;
    std::vector<std::uint32_t> group_counts;
    const std::size_t per_stage = grouped ? problem.time.groups.size() * PPB_KIND_COUNT : 0;
    for (const StagePlan& stage : plan.stages) {
        for (std::uint32_t more = 0; more < 2; ++more) {
            ppb_chunk chunk{};
            std::copy(stage.layers.begin(), stage.layers.end(), chunk.layers);
            chunk.in_flight = stage.in_flight + more;
            chunks.push_back(chunk);
            for (const KindCounts& kinds : stage.group_layers)
                group_counts.insert(group_counts.end(), kinds.begin(), kinds.end());
        }
    }
    std::vector<double> predicted;
    if (grouped) {
        std::vector<ppb_grouped_placement> placements;
        for (std::size_t i = 0; i < chunks.size(); ++i) {
            placements.push_back(ppb_grouped_placement{
                ppb_placement{problem.num_stages, static_cast<std::uint32_t>(i / 2), 1, &chunks[i]},
                static_cast<std::uint32_t>(problem.time.groups.size()),
                group_counts.data() + i * per_stage});
        }
        predicted = memory.predict_grouped_batch(placements);
    } else {
        std::vector<ppb_placement> placements;
        for (std::size_t i = 0; i < chunks.size(); ++i) {
            placements.push_back(ppb_placement{problem.num_stages,
                                               static_cast<std::uint32_t>(i / 2), 1, &chunks[i]});
        }
        predicted = memory.predict_batch(placements);
    }
    for (std::size_t s = 0; s < plan.stages.size(); ++s)
        plan.stages[s].chunks.front().activation_mb = predicted[2 * s + 1] - predicted[2 * s];
    plan.activations_known = true;
}

}  // namespace

MemorySource model_memory_source(const Problem& problem, const MemoryModel& model) {
    MemorySource memory;
    memory.kinds = model.kinds();
    memory.linear = connect_groups(problem, model, memory);
    memory.reserve = model.allocator_reserve();
    memory.predict_batch = [&model](std::span<const ppb_placement> placements) {
        return model.predict_batch(placements);
    };
    // Asked only with K > 0. A model without an estimate (a table or analytic model, a fit with
    // no degrees of freedom, a plugin older than API 1.2) cannot be planned against one.
    memory.std_error = [&model](std::span<const ppb_placement> placements) {
        std::vector<double> out;
        out.reserve(placements.size());
        for (const ppb_placement& placement : placements) {
            const std::optional<double> se = model.predict_std_error(placement);
            if (!se) {
                throw RequestError(
                    "memory_margin_sigma",
                    fmt::format(
                        "the memory model '{}' {} has no uncertainty estimate for a margin of "
                        "standard errors (no standard error of its predictions{}); give the "
                        "margin in MB instead",
                        model.name(), model.version(),
                        model.api_minor() < 2 ? ": its plugin is older than API 1.2" : ""));
            }
            out.push_back(*se);
        }
        return out;
    };
    // The model's terms, for showing a plan's memory (plugin API 1.4).
    if (model.supports_parts()) {
        const std::vector<std::string> model_groups = model.groups();
        if (const auto index = model_groups_of(problem, model_groups)) {
            const std::size_t model_count = model_groups.size();
            memory.predict_parts = [&model, index = *index,
                                    model_count](const ppb_grouped_placement& p) {
                const std::vector<std::uint32_t> layers =
                    layers_in_model_order(p, index, model_count);
                const ppb_grouped_placement in_model_order{
                    p.placement, static_cast<std::uint32_t>(model_count), layers.data()};
                return model.predict_parts(in_model_order);
            };
        }
    }
    return memory;
}

PlannedPartition plan_with_model(Problem problem, const MemoryModel& model,
                                 const PlanWithModelOptions& options) {
    const MemorySource memory = model_memory_source(problem, model);
    return plan_with_memory(std::move(problem), memory, options);
}

PlannedPartition plan_with_memory(Problem problem, const MemorySource& memory,
                                  const PlanWithModelOptions& options) {
    // Every solve below, the local search and the bound weigh the same stages of `memory`.
    const detail::ScopedAffineStages remembered(memory);
    const auto added = [&](const Problem& p, const Plan& candidate) {
        return options.added_to_iteration ? options.added_to_iteration(p, candidate) : 0.0;
    };
    Plan plan;
    if (options.solved != nullptr && problem.chunked()) {
        const Problem& before = options.solved->problem;
        if (before.num_stages != problem.num_stages ||
            before.micro_batches != problem.micro_batches || before.schedule != problem.schedule ||
            before.chunks != problem.chunks || before.kinds != problem.kinds ||
            before.rule != problem.rule || before.memory_limit_mb != problem.memory_limit_mb ||
            before.time.body_layers != problem.time.body_layers ||
            (!options.choose_objective && before.objective != problem.objective)) {
            throw std::invalid_argument(
                "plan_with_memory: the plan given as solved is of another problem");
        }
        problem = before;
        // The local search starts from the estimate's optimum, as it would have without the
        // first call.
        plan = options.solved->estimate_plan.value_or(options.solved->plan);
    } else if (problem.chunked() && options.choose_objective) {
        // Both estimates' exact optima, and the one whose iteration simulates faster
        // (host_api/docs/schedules.md, "Every schedule": neither estimate wins on every instance; a
        // tie keeps 'stages').
        Problem by_stages = problem;
        by_stages.objective = ChunkObjective::stages;
        Problem by_slots = problem;
        by_slots.objective = ChunkObjective::slots;
        // The two estimates weigh the same options of each stage, built once (one group of
        // layers: the grouped planners build problems of their own).
        std::optional<detail::ScopedChunkedStageOptions> built_once;
        if (!problem.time.grouped())
            built_once.emplace(memory);
        Plan stages_plan = solve(by_stages, memory);
        // Both estimates weigh the same stage options: when they were too many for one, the
        // other plans the smaller problem at once. (Several groups with more than two chunks are
        // never planned exactly, and fall back within their own planner: grouped_envelope.hpp.)
        Plan slots_plan;
        if (stages_plan.not_exact_because.empty() || problem.time.grouped()) {
            slots_plan = solve(by_slots, memory);
        } else {
            slots_plan = solve(smaller_to_plan_exactly(by_slots), memory);
            slots_plan.not_exact_because = stages_plan.not_exact_because;
        }
        const auto makespan = [&](const Problem& p, const Plan& candidate) {
            SimulationInput input = simulation_input(p, candidate);
            input.with_memory = false;  // the makespan alone
            return simulate(input).makespan + added(p, candidate);
        };
        if (makespan(by_slots, slots_plan) < makespan(by_stages, stages_plan)) {
            problem = std::move(by_slots);
            plan = std::move(slots_plan);
        } else {
            problem = std::move(by_stages);
            plan = std::move(stages_plan);
        }
    } else {
        plan = solve(problem, memory);
    }
    // The local search and the bound move layers between stages of one group (refine.cpp,
    // lower_bound.cpp); a plan of several groups (the exact optimum of its estimate with two
    // chunks, planned through one group that bounds them with more or a zero-bubble schedule) is
    // searched and bounded through one group that bounds them (grouped_envelope.hpp).
    const bool one_group = !problem.time.grouped();
    const bool grouped_with_chunks = !one_group && problem.chunked();
    if (options.refine && problem.chunked() && one_group) {
        std::string not_exact_because = std::move(plan.not_exact_because);
        plan = refine_by_simulation(problem, memory, plan, refine_moves);
        plan.not_exact_because = std::move(not_exact_because);
    } else if (options.refine && grouped_with_chunks) {
        plan = detail::refine_grouped_through_envelope(problem, memory, plan, refine_moves);
    }
    add_slope_activations(problem, plan, memory);
    SimulationInput input = simulation_input(problem, plan);
    input.with_memory = input.with_memory && options.simulate_memory;
    Simulation simulation = simulate(input);
    // Megatron-LM's default layout, where it fits and simulates faster: neither estimate nor the
    // local search sees the whole schedule, and no plan handed on should be slower than the one
    // the framework runs by default (design.md, "The default plan with chunks"). The estimate's
    // optimum is kept for a later call to start its local search from.
    std::optional<Plan> estimate_plan;
    if (options.choose_objective && problem.chunked()) {
        if (std::optional<Plan> even = detail::even_layout_plan(problem, memory)) {
            add_slope_activations(problem, *even, memory);
            SimulationInput even_input = simulation_input(problem, *even);
            even_input.with_memory = even_input.with_memory && options.simulate_memory;
            Simulation even_simulation = simulate(even_input);
            if (even_simulation.makespan + added(problem, *even) <
                simulation.makespan + added(problem, plan)) {
                even->not_exact_because = plan.not_exact_because;
                if (!options.refine)
                    estimate_plan = std::move(plan);
                plan = std::move(*even);
                simulation = std::move(even_simulation);
            }
        }
    }
    std::vector<MemoryBreakdown> breakdown = memory_breakdown(problem, plan, memory);
    std::optional<double> bound;
    if (options.lower_bound && problem.chunked() && one_group)
        bound = simulated_lower_bound(problem, memory, simulation.makespan);
    else if (options.lower_bound && grouped_with_chunks)
        bound = detail::grouped_simulated_lower_bound(problem, memory, simulation.makespan);
    return PlannedPartition{std::move(problem),   std::move(plan), std::move(simulation),
                            std::move(breakdown), bound,           std::move(estimate_plan)};
}

}  // namespace ppb::partition
