#include <ppb/partition/search.hpp>

#include <ppb/errors.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/schedule_order.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

namespace ppb::partition {
namespace {

// Every divisor of n, ascending.
std::vector<std::uint32_t> divisors(std::uint32_t n) {
    std::vector<std::uint32_t> low, high;
    for (std::uint32_t d = 1; static_cast<std::uint64_t>(d) * d <= n; ++d) {
        if (n % d == 0) {
            low.push_back(d);
            if (d != n / d)
                high.push_back(n / d);
        }
    }
    low.insert(low.end(), high.rbegin(), high.rend());
    return low;
}

// Fewest body layers P stages of v chunks need: every chunk one, but the model's first and last
// blocks (beside the embedding and the LM head), which may be empty.
std::uint32_t layers_needed(std::uint32_t stages, std::uint32_t chunks) {
    const std::uint64_t positions = static_cast<std::uint64_t>(stages) * chunks;
    return positions <= 2 ? 0 : static_cast<std::uint32_t>(positions - 2);
}

void check_space(const SearchSpace& space) {
    if (space.global_batch == 0)
        throw InputError("the global batch: expected at least 1 sample");
    if (space.micro_batch_size == 0)
        throw InputError("the micro-batch size: expected at least 1 sample");
    if (space.tensor_parallel == 0)
        throw InputError("the tensor-parallel degree: expected at least 1");
    if (space.context_parallel == 0)
        throw InputError("the context-parallel degree: expected at least 1");
    if (space.schedules.empty())
        throw InputError("the search space is empty: no schedule to consider");
    if (space.recompute.empty())
        throw InputError("the search space is empty: no recompute policy to consider");
    for (const ScheduleChoice& choice : space.schedules) {
        const std::uint32_t v = choice.chunks;
        // The chunk count alone, in the schedule's own words: one stage and two micro-batches
        // are a shape every schedule runs.
        const std::string problem =
            limits::chunks.contains(v)
                ? schedule_shape_problem(choice.schedule, 1, v, 2)
                : "chunks per stage: " + limits::out_of_range(std::to_string(v), limits::chunks);
        if (!problem.empty()) {
            throw InputError(
                fmt::format("schedule '{}': {}", schedule_name(choice.schedule), problem));
        }
    }
    if (space.devices) {
        if (*space.devices == 0)
            throw InputError("the device count: expected at least 1");
        const std::uint32_t group = space.tensor_parallel * space.context_parallel;
        if (space.tensor_parallel_degrees.empty() && space.context_parallel_degrees.empty() &&
            *space.devices % group != 0) {
            throw InputError(fmt::format(
                "the {} devices cannot be split into {} groups of {}: {} is not a multiple of {}",
                *space.devices,
                space.context_parallel > 1 ? "tensor- x context-parallel" : "tensor-parallel",
                group, *space.devices, group));
        }
    } else {
        if (space.pipeline_degrees.empty()) {
            throw InputError(
                "nothing to search: give the device count (every pipeline degree dividing it is "
                "considered) or the pipeline degrees");
        }
        if (space.data_parallel == 0)
            throw InputError("the data-parallel degree: expected at least 1");
    }
}

}  // namespace

RecomputePolicy recompute_policy(std::string_view name) {
    if (name == "any")
        return RecomputePolicy{"any", PPB_ALL_KINDS};
    RecomputePolicy policy{std::string(name), 0};
    std::string_view rest = name;
    while (true) {
        const std::size_t plus = rest.find('+');
        const std::string_view part = rest.substr(0, plus);
        const auto kind = kind_from_name(part);
        if (!kind) {
            throw InputError(fmt::format(
                "recompute policy '{}': unknown recompute kind '{}' (expected 'any', or kinds of "
                "none, select, comm, both, full joined by '+', e.g. none+full)",
                name, part));
        }
        policy.kinds |= 1u << static_cast<unsigned>(*kind);
        if (plus == std::string_view::npos)
            break;
        rest = rest.substr(plus + 1);
    }
    return policy;
}

std::string describe(const ScheduleChoice& choice) {
    if (choice.schedule == Schedule::one_f_one_b || choice.schedule == Schedule::dualpipe_v ||
        splits_backward(choice.schedule))
        return std::string(schedule_name(choice.schedule));
    return fmt::format("{} v={}", schedule_name(choice.schedule), choice.chunks);
}

std::string describe(const Configuration& c) {
    return fmt::format(
        "P={} d={} M={} {} recompute {}{}{}", c.pipeline, c.data_parallel, c.micro_batches,
        describe(c.schedule), c.recompute.name,
        (c.expert_parallel ? fmt::format(" ep={}", *c.expert_parallel) : std::string()) +
            (c.expert_tensor_parallel ? fmt::format(" etp={}", *c.expert_tensor_parallel)
                                      : std::string()),
        c.sharding ? fmt::format(" sharding {}", sharding_name(*c.sharding)) : std::string());
}

// The configurations of one tensor-parallel degree `tp`, context-parallel degree `cp` and
// micro-batch size `b`, added to `out`; `label` ("" or " t=8 cp=1 b=1") names them in the skipped
// combinations. A listed pipeline degree the devices or the batch cannot take is an error when it
// is the only combination searched, and left out with its reason among several (another t, cp or
// b may take it); `fitted` collects the listed degrees some combination takes.
void add_configurations(const SearchSpace& space, const TimeModel& time, std::uint32_t tp,
                        std::uint32_t cp, std::uint32_t b, const std::string& label,
                        SearchPlan& out, std::set<std::uint32_t>& fitted) {
    // The devices of one stage's replica: t x cp.
    const std::uint32_t t = tp * cp;
    const bool listed = !space.pipeline_degrees.empty();
    const bool strict = listed && label.empty();
    std::vector<std::uint32_t> degrees = space.pipeline_degrees;
    if (listed) {
        std::sort(degrees.begin(), degrees.end());
        degrees.erase(std::unique(degrees.begin(), degrees.end()), degrees.end());
    } else {
        // Every degree dividing N / t that leaves each 1F1B stage a body layer (the first and
        // last may hold none).
        for (const std::uint32_t p : divisors(*space.devices / t)) {
            if (limits::stages.contains(p) && layers_needed(p, 1) <= time.body_layers)
                degrees.push_back(p);
        }
    }

    const auto skip = [&](std::string what, std::string reason) {
        out.skipped.push_back({std::move(what), std::move(reason)});
    };
    for (const std::uint32_t p : degrees) {
        if (p == 0 || !limits::stages.contains(p)) {
            throw InputError("pipeline degree: " +
                             limits::out_of_range(std::to_string(p), limits::stages));
        }
        std::uint32_t d = space.data_parallel;
        if (space.devices) {
            const std::uint64_t grid = static_cast<std::uint64_t>(p) * t;
            if (*space.devices % grid != 0) {
                const std::string reason = fmt::format(
                    "pipeline degree {} does not divide the {} devices: {} stages x tensor "
                    "parallel {}{} = {} devices per data-parallel replica, and {} is not a "
                    "multiple of {}",
                    p, *space.devices, p, tp,
                    cp > 1 ? fmt::format(" x context parallel {}", cp) : std::string(), grid,
                    *space.devices, grid);
                if (strict)
                    throw InputError(reason);
                skip(fmt::format("P={}{}", p, label), reason);
                continue;
            }
            d = static_cast<std::uint32_t>(*space.devices / grid);
        }
        const std::uint64_t per_step = static_cast<std::uint64_t>(b) * d;
        const std::string at = fmt::format("P={} d={}{}", p, d, label);
        if (space.one_stage && p > 1) {
            skip(at, space.limits_why);
            continue;
        }
        if (space.global_batch % per_step != 0) {
            const std::string reason = fmt::format(
                "the global batch of {} samples is not divisible by micro-batch size {} x "
                "data-parallel degree {} = {}",
                space.global_batch, b, d, per_step);
            if (strict)
                throw InputError(fmt::format("pipeline degree {}: {}", p, reason));
            skip(at, reason);
            continue;
        }
        const std::uint64_t m = space.global_batch / per_step;
        if (!limits::micro_batches.contains(m)) {
            const std::string reason = fmt::format(
                "{} micro-batches (global batch {} / ({} x {})): {}", m, space.global_batch, b, d,
                limits::out_of_range(std::to_string(m), limits::micro_batches));
            if (strict)
                throw InputError(fmt::format("pipeline degree {}: {}", p, reason));
            skip(at, reason);
            continue;
        }
        fitted.insert(p);
        for (const ScheduleChoice& choice : space.schedules) {
            Configuration c{p, d, static_cast<std::uint32_t>(m), choice, {}, tp, b, cp};
            const std::string what =
                fmt::format("P={} d={} M={} {}{}", p, d, m, describe(choice), label);
            if (std::string shape =
                    schedule_shape_problem(choice.schedule, p, choice.chunks, c.micro_batches);
                !shape.empty()) {
                skip(what, std::move(shape));
                continue;
            }
            if (p == 1 && choice.chunks > 1) {
                skip(what,
                     "one stage has no pipeline to fill: its chunks would run one after "
                     "the other, as 1f1b runs the stage");
                continue;
            }
            if (const std::uint32_t needed = layers_needed(p, choice.chunks);
                needed > time.body_layers) {
                skip(what, fmt::format("{} stages of {} chunks need at least {} body layers, the "
                                       "model has {}",
                                       p, choice.chunks, needed, time.body_layers));
                continue;
            }
            for (const RecomputePolicy& policy : space.recompute) {
                c.recompute = policy;
                // The kinds the schedule runs (combined-1f1b: no full recomputation).
                c.recompute.kinds = schedule_kinds(choice.schedule, policy.kinds);
                if (c.recompute.kinds == 0) {
                    skip(fmt::format("{} recompute {}", what, policy.name),
                         full_recompute_refusal(choice.schedule));
                    continue;
                }
                // The model's own settings' kinds ('any' keeps what they allow).
                c.recompute.kinds &= space.kinds;
                if (c.recompute.kinds == 0) {
                    skip(fmt::format("{} recompute {}", what, policy.name), space.limits_why);
                    continue;
                }
                out.configurations.push_back(c);
            }
        }
    }
}

SearchPlan search_configurations(const SearchSpace& space, const TimeModel& time) {
    check_space(space);
    const std::vector<std::uint32_t> tps = space.tensor_parallel_degrees.empty()
                                               ? std::vector<std::uint32_t>{space.tensor_parallel}
                                               : space.tensor_parallel_degrees;
    const std::vector<std::uint32_t> sizes =
        space.micro_batch_sizes.empty() ? std::vector<std::uint32_t>{space.micro_batch_size}
                                        : space.micro_batch_sizes;
    const std::vector<std::uint32_t> cps = space.context_parallel_degrees.empty()
                                               ? std::vector<std::uint32_t>{space.context_parallel}
                                               : space.context_parallel_degrees;
    const bool several = tps.size() > 1 || sizes.size() > 1 || cps.size() > 1;
    SearchPlan out;
    std::set<std::uint32_t> fitted;
    for (const std::uint32_t cp : cps) {
        if (cp == 0)
            throw InputError("the context-parallel degree: expected at least 1");
        for (const std::uint32_t tp : tps) {
            if (tp == 0)
                throw InputError("the tensor-parallel degree: expected at least 1");
            if (space.devices && *space.devices % (tp * cp) != 0) {
                if (!several) {
                    throw InputError(fmt::format("the {} devices cannot be split into groups of {}",
                                                 *space.devices, tp * cp));
                }
                out.skipped.push_back(
                    {fmt::format("t={} cp={}", tp, cp),
                     fmt::format("the {} devices are not a multiple of t x cp = {}", *space.devices,
                                 tp * cp)});
                continue;
            }
            for (const std::uint32_t b : sizes) {
                if (b == 0)
                    throw InputError("the micro-batch size: expected at least 1 sample");
                add_configurations(
                    space, time, tp, cp, b,
                    several ? fmt::format(" t={} cp={} b={}", tp, cp, b) : std::string(), out,
                    fitted);
            }
        }
    }
    // A listed degree that no combination takes is a mistake in the list, as with one combination.
    for (const std::uint32_t p : space.pipeline_degrees) {
        if (several && !fitted.contains(p)) {
            const auto first =
                std::ranges::find_if(out.skipped, [&](const SkippedConfiguration& s) {
                    return s.configuration.starts_with(fmt::format("P={} ", p));
                });
            throw InputError(fmt::format(
                "pipeline degree {} fits none of the tensor-parallel and context-parallel degrees "
                "and micro-batch sizes searched{}{}",
                p, first == out.skipped.end() ? "" : ": ",
                first == out.skipped.end() ? std::string() : first->reason));
        }
    }
    if ((!space.shardings.empty() || !space.expert_parallel_degrees.empty() ||
         !space.expert_tensor_parallel_degrees.empty()) &&
        !out.configurations.empty()) {
        // Each configuration once per expert-parallel and expert-tensor-parallel degree that fold
        // into its stage's ranks and per sharding, next to each other.
        std::vector<std::optional<std::uint32_t>> eps(space.expert_parallel_degrees.begin(),
                                                      space.expert_parallel_degrees.end());
        if (eps.empty())
            eps.emplace_back(std::nullopt);
        std::vector<std::optional<std::uint32_t>> etps(space.expert_tensor_parallel_degrees.begin(),
                                                       space.expert_tensor_parallel_degrees.end());
        if (etps.empty())
            etps.emplace_back(std::nullopt);
        std::vector<std::optional<DataParallelSharding>> shardings(space.shardings.begin(),
                                                                   space.shardings.end());
        if (shardings.empty())
            shardings.emplace_back(std::nullopt);
        std::vector<Configuration> each;
        for (const Configuration& c : out.configurations) {
            for (const std::optional<std::uint32_t>& ep : eps) {
                for (const std::optional<std::uint32_t>& etp : etps) {
                    if ((ep && *ep == 0) || (etp && *etp == 0))
                        throw InputError(
                            fmt::format("the expert-{}parallel degree: expected at "
                                        "least 1",
                                        ep && *ep == 0 ? "" : "tensor-"));
                    // The degrees the expert layers fold a stage's ranks into: the searched ones,
                    // else the model's (its ETP defaulting to t, as Megatron-LM's does).
                    const std::uint64_t experts = ep ? *ep : space.expert_parallel;
                    const std::uint64_t slices = etp ? *etp
                                                 : space.expert_tensor_parallel == 0
                                                     ? c.tensor_parallel
                                                     : space.expert_tensor_parallel;
                    const std::uint64_t stage = static_cast<std::uint64_t>(c.tensor_parallel) *
                                                c.context_parallel * c.data_parallel;
                    if ((ep || etp) && experts > 0 && stage % (experts * slices) != 0) {
                        Configuration skipped = c;
                        skipped.expert_parallel = ep;
                        skipped.expert_tensor_parallel = etp;
                        out.skipped.push_back(
                            {describe(skipped),
                             fmt::format("expert parallel {} x expert tensor parallel {} does "
                                         "not divide the {} ranks of a stage (t x cp x d)",
                                         experts, slices, stage)});
                        continue;
                    }
                    for (const std::optional<DataParallelSharding>& sharding : shardings) {
                        each.push_back(c);
                        each.back().expert_parallel = ep;
                        each.back().expert_tensor_parallel = etp;
                        each.back().sharding = sharding;
                    }
                }
            }
        }
        out.configurations = std::move(each);
    }
    if (out.configurations.empty()) {
        std::string reasons;
        for (const SkippedConfiguration& s : out.skipped)
            reasons += fmt::format("\n  {}: {}", s.configuration, s.reason);
        throw InputError(fmt::format(
            "the search space is empty: no combination of pipeline degree and schedule can "
            "run{}{}",
            reasons.empty() ? "" : ":", reasons));
    }
    return out;
}

double SearchOutcome::iteration_time() const {
    return planned ? planned->simulation.makespan + data_parallel_sync
                   : std::numeric_limits<double>::infinity();
}

SearchOutcome plan_configuration(const Problem& base, const Configuration& configuration,
                                 const MemorySource& memory, bool refine, bool bound,
                                 const SearchOutcome* before, const AddedToIteration& added) {
    Problem problem = base;
    problem.num_stages = configuration.pipeline;
    problem.micro_batches = configuration.micro_batches;
    problem.schedule = configuration.schedule.schedule;
    problem.chunks = configuration.schedule.chunks;
    problem.kinds = configuration.recompute.kinds;
    SearchOutcome out;
    out.configuration = configuration;
    try {
        out.planned = plan_with_memory(
            std::move(problem), memory,
            {.choose_objective = true,
             .refine = refine,
             .lower_bound = refine || bound,
             .simulate_memory = false,
             .solved = before != nullptr && before->planned ? &*before->planned : nullptr,
             .added_to_iteration = added});
        out.status = SearchOutcome::Status::planned;
        // What is ranked and printed is the simulation's makespan, bubble and transfers, not
        // its operations: tens of thousands a plan, over a gigabyte in a search of thousands of
        // configurations, allocated and kept for nothing (`--report` simulates its best plan
        // again for the timeline).
        std::vector<SimulatedOperation>().swap(out.planned->simulation.operations);
        double peak = 0.0;
        for (const StagePlan& stage : out.planned->plan.stages)
            peak = std::max(peak, stage.memory_mb + stage.margin_mb);
        out.peak_memory_mb = peak;
        out.headroom_mb = base.memory_limit_mb - peak;
    } catch (const Infeasible& e) {
        out.status = SearchOutcome::Status::infeasible;
        out.smallest_feasible_limit_mb = e.smallest_feasible_limit_mb();
        out.message = e.what();
    } catch (const InputError& e) {
        out.status = SearchOutcome::Status::invalid;
        out.message = e.what();
    } catch (const ModelError& e) {
        // The model refusing this configuration's placements is this configuration's problem;
        // a plugin failing is everyone's.
        if (!e.is_input_error())
            throw;
        out.status = SearchOutcome::Status::invalid;
        out.message = e.what();
    }
    return out;
}

SearchResult run_search(const std::vector<Configuration>& configurations,
                        const std::function<SearchOutcome(const Configuration&)>& plan_one,
                        const SearchRunOptions& options) {
    const std::size_t total = configurations.size();
    unsigned jobs = options.jobs != 0 ? options.jobs : std::thread::hardware_concurrency();
    jobs = static_cast<unsigned>(std::clamp<std::size_t>(jobs, 1, std::max<std::size_t>(total, 1)));

    std::vector<std::optional<SearchOutcome>> slots(total);
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> done{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex mutex;
    std::condition_variable changed;
    const auto stopping = [&] {
        return failed.load() || (options.stop != nullptr && options.stop->load());
    };
    const auto work = [&] {
        while (!stopping()) {
            const std::size_t i = next.fetch_add(1);
            if (i >= total)
                break;
            try {
                slots[i] = plan_one(configurations[i]);
            } catch (...) {
                const std::lock_guard lock(mutex);
                if (!error)
                    error = std::current_exception();
                failed = true;
            }
            done.fetch_add(1);
            changed.notify_all();
        }
    };
    std::size_t finished_workers = 0;
    {
        std::vector<std::jthread> workers;
        workers.reserve(jobs);
        for (unsigned j = 0; j < jobs; ++j) {
            workers.emplace_back([&] {
                work();
                const std::lock_guard lock(mutex);
                ++finished_workers;
                changed.notify_all();
            });
        }
        std::unique_lock lock(mutex);
        while (finished_workers < jobs) {
            changed.wait_for(lock, std::chrono::milliseconds(options.progress_interval_ms));
            if (options.on_progress) {
                lock.unlock();
                options.on_progress(SearchProgress{done.load(), total});
                lock.lock();
            }
        }
    }  // the workers have returned: join
    if (options.on_progress)
        options.on_progress(SearchProgress{done.load(), total});  // the final count
    if (error)
        std::rethrow_exception(error);
    SearchResult result;
    for (std::optional<SearchOutcome>& slot : slots) {
        if (slot)
            result.outcomes.push_back(std::move(*slot));
        else
            result.stopped = true;
    }
    return result;
}

SearchCounts count_outcomes(const SearchResult& result) {
    SearchCounts out;
    for (const SearchOutcome& o : result.outcomes) {
        switch (o.status) {
            case SearchOutcome::Status::planned:
                ++out.planned;
                break;
            case SearchOutcome::Status::infeasible:
                ++out.infeasible;
                break;
            case SearchOutcome::Status::invalid:
                ++out.invalid;
                break;
        }
    }
    return out;
}

std::size_t refine_best(SearchResult& result, std::size_t count,
                        const std::function<SearchOutcome(const Configuration&)>& plan_refined,
                        const SearchRunOptions& options) {
    return refine_best(
        result, count,
        [&](const Configuration& c, const SearchOutcome&) { return plan_refined(c); }, options);
}

std::size_t refine_best(
    SearchResult& result, std::size_t count,
    const std::function<SearchOutcome(const Configuration&, const SearchOutcome& before)>&
        plan_refined,
    const SearchRunOptions& options) {
    // A plan's local search only shortens it, and never below the plan's proven bound (no plan
    // of its configuration that fits simulates faster) plus the least synchronisation of any of
    // its plans (SearchOutcome::data_parallel_sync_bound). So once the `count` fastest are planned
    // again, a configuration can only enter them if its bound is below the count-th iteration of
    // today; those are planned again with them, in one batch (the count-th iteration can only
    // fall). A plan without a bound (several groups of layers) is planned again when it is among
    // the `count` fastest, as before.
    const std::vector<const SearchOutcome*> order = ranked(result);
    const double threshold = order.size() >= count && count > 0
                                 ? order[count - 1]->iteration_time()
                                 : std::numeric_limits<double>::infinity();
    std::vector<std::size_t> chosen;
    for (std::size_t place = 0; place < order.size(); ++place) {
        const SearchOutcome& outcome = *order[place];
        if (!outcome.planned->problem.chunked())
            continue;
        const std::optional<double>& bound = outcome.planned->lower_bound;
        if (place < count || (bound && *bound + outcome.data_parallel_sync_bound < threshold))
            chosen.push_back(static_cast<std::size_t>(&outcome - result.outcomes.data()));
    }
    // In configuration order, as the first planning ran them.
    std::sort(chosen.begin(), chosen.end());
    std::vector<Configuration> configurations;
    for (const std::size_t i : chosen)
        configurations.push_back(result.outcomes[i].configuration);
    // Each configuration with its outcome so far (run_search plans configurations[i] as given).
    SearchResult again = run_search(
        configurations,
        [&](const Configuration& c) {
            const auto i = static_cast<std::size_t>(&c - configurations.data());
            return plan_refined(c, result.outcomes[chosen.at(i)]);
        },
        options);
    // A stopped run leaves out the configurations it did not start: match by configuration.
    std::size_t next = 0;
    for (SearchOutcome& after : again.outcomes) {
        while (next < chosen.size() &&
               describe(configurations[next]) != describe(after.configuration))
            ++next;
        if (next == chosen.size())
            break;
        SearchOutcome& before = result.outcomes[chosen[next++]];
        if (after.status == SearchOutcome::Status::planned &&
            after.iteration_time() <= before.iteration_time())
            before = std::move(after);
    }
    result.stopped = result.stopped || again.stopped;
    return again.outcomes.size();
}

std::vector<const SearchOutcome*> ranked(const SearchResult& result) {
    std::vector<const SearchOutcome*> out;
    for (const SearchOutcome& outcome : result.outcomes) {
        if (outcome.status == SearchOutcome::Status::planned)
            out.push_back(&outcome);
    }
    std::stable_sort(out.begin(), out.end(), [](const SearchOutcome* a, const SearchOutcome* b) {
        return a->iteration_time() < b->iteration_time();
    });
    return out;
}

}  // namespace ppb::partition
