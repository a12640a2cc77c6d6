// The schedule simulator: each stage's fixed order, timed by its data dependencies.
#include <ppb/errors.hpp>
#include <ppb/simulator.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppb {
namespace {

void check_value(double value, std::string_view what, std::uint32_t stage, std::uint32_t chunk) {
    if (!std::isfinite(value) || value < 0.0) {
        throw InputError(
            fmt::format("stage {} chunk {}: {} is {}: it must be a finite number, at least 0",
                        stage, chunk, what, value));
    }
}

void check_input(const SimulationInput& in) {
    if (auto problem =
            schedule_shape_problem(in.schedule, in.num_stages, in.num_chunks, in.micro_batches);
        !problem.empty()) {
        throw InputError(problem);
    }
    if (in.costs.size() != in.num_stages) {
        throw InputError(fmt::format("costs are given for {} stages, the pipeline has {}",
                                     in.costs.size(), in.num_stages));
    }
    for (std::uint32_t s = 0; s < in.num_stages; ++s) {
        if (in.costs[s].size() != in.num_chunks) {
            throw InputError(
                fmt::format("stage {}: costs are given for {} chunks, the {} "
                            "schedule here runs {}",
                            s, in.costs[s].size(), schedule_name(in.schedule), in.num_chunks));
        }
        for (std::uint32_t c = 0; c < in.num_chunks; ++c) {
            const ChunkCost& cost = in.costs[s][c];
            check_value(cost.forward_time, "forward time", s, c);
            check_value(cost.backward_time, "backward time", s, c);
            check_value(cost.recompute_time, "recompute time", s, c);
            if (cost.recompute_time > cost.backward_time) {
                throw InputError(fmt::format(
                    "stage {} chunk {}: recompute time {} exceeds the backward time {} that "
                    "includes it",
                    s, c, cost.recompute_time, cost.backward_time));
            }
            if (in.with_memory)
                check_value(cost.activation_mb, "activation memory", s, c);
            check_value(cost.weight_time, "weight-gradient time", s, c);
            if (splits_backward(in.schedule) &&
                cost.weight_time > cost.backward_time - cost.recompute_time) {
                throw InputError(fmt::format(
                    "stage {} chunk {}: weight-gradient time {} exceeds the backward time {} less "
                    "its recomputation {}",
                    s, c, cost.weight_time, cost.backward_time, cost.recompute_time));
            }
        }
    }
    if (in.with_memory && !in.static_mb.empty()) {
        if (in.static_mb.size() != in.num_stages) {
            throw InputError(
                fmt::format("static memory is given for {} stages, the pipeline has {}",
                            in.static_mb.size(), in.num_stages));
        }
        for (std::uint32_t s = 0; s < in.num_stages; ++s) {
            if (!std::isfinite(in.static_mb[s])) {
                throw InputError(fmt::format("stage {}: static memory is {}: it must be finite", s,
                                             in.static_mb[s]));
            }
        }
    }
}

constexpr double not_done = std::numeric_limits<double>::quiet_NaN();

// The end times of every forward and backward, by pipeline position and micro-batch.
class Timetable {
  public:
    Timetable(std::size_t positions, std::size_t micro_batches)
        : micro_batches_(micro_batches),
          forward_(positions * micro_batches, not_done),
          backward_(positions * micro_batches, not_done) {}
    double& end(Pass pass, std::uint32_t position, std::uint32_t micro_batch) {
        auto& table = pass == Pass::forward ? forward_ : backward_;
        return table[position * micro_batches_ + micro_batch];
    }

  private:
    std::size_t micro_batches_;
    std::vector<double> forward_;
    std::vector<double> backward_;
};

void add_memory_curve(const SimulationInput& in, std::uint32_t s, const SimulatedOperation* first,
                      std::size_t count, StageSimulation& out) {
    double mb = in.static_mb.empty() ? 0.0 : in.static_mb[s];
    out.memory.reserve(count + 1);
    out.memory.push_back({0.0, mb});
    out.peak_memory_mb = mb;
    std::vector<std::uint32_t> held(in.num_chunks, 0);
    out.peak_memory_time = 0.0;
    out.in_flight_at_peak = held;
    for (std::size_t i = 0; i < count; ++i) {
        const SimulatedOperation& op = first[i];
        const double a = in.costs[s][op.chunk].activation_mb;
        // A forward's activations grow while it runs: counted from its start. A backward frees
        // them when it ends — under the zero-bubble schedules its weight gradient W does.
        const bool forward = op.pass == Pass::forward;
        if (!forward && op.pass != (splits_backward(in.schedule) ? Pass::weight : Pass::backward))
            continue;
        mb += forward ? a : -a;
        if (forward)
            ++held[op.chunk];
        else
            --held[op.chunk];
        const double at = forward ? op.start : op.end;
        if (out.memory.back().time == at)
            out.memory.back().mb = mb;
        else
            out.memory.push_back({at, mb});
        if (mb > out.peak_memory_mb) {
            out.peak_memory_mb = mb;
            out.peak_memory_time = at;
            out.in_flight_at_peak = held;
        }
    }
}

}  // namespace

std::uint32_t comm_boundaries(Schedule schedule, std::uint32_t num_stages) {
    const bool wraps = schedule == Schedule::interleaved ||
                       schedule == Schedule::interleaved_less_memory ||
                       schedule == Schedule::combined_1f1b;
    return wraps ? num_stages : (num_stages == 0 ? 0 : num_stages - 1);
}

std::vector<double> boundary_comm_times(Schedule schedule, std::uint32_t num_stages,
                                        const std::vector<double>& comm_time) {
    const std::uint32_t n = comm_boundaries(schedule, num_stages);
    for (std::size_t i = 0; i < comm_time.size(); ++i) {
        if (!std::isfinite(comm_time[i]) || comm_time[i] < 0.0) {
            throw InputError(
                fmt::format("communication time {} is {}: it must be a finite number, at least 0",
                            i + 1, comm_time[i]));
        }
    }
    if (comm_time.empty())
        return std::vector<double>(n, 0.0);
    if (comm_time.size() == 1)
        return std::vector<double>(n, comm_time[0]);
    if (comm_time.size() != n) {
        throw InputError(fmt::format(
            "{} communication times given: {} on {} stages takes one for every boundary or one "
            "per boundary, {}{}",
            comm_time.size(), schedule_name(schedule), num_stages, n,
            n == num_stages ? " (between stages s and s + 1, then from the last stage back to "
                              "stage 0 between chunks)"
                            : " (between stages s and s + 1)"));
    }
    return comm_time;
}

std::vector<double> position_hop_times(Schedule schedule, std::uint32_t p, std::uint32_t v,
                                       const std::vector<double>& comm_time) {
    const std::vector<double> boundary = boundary_comm_times(schedule, p, comm_time);
    const std::uint32_t positions = p * v;
    std::vector<std::uint32_t> stage_of_position(positions);
    for (std::uint32_t s = 0; s < p; ++s) {
        for (std::uint32_t c = 0; c < v; ++c)
            stage_of_position[pipeline_position(schedule, p, s, c)] = s;
    }
    std::vector<double> hop(positions, 0.0);
    for (std::uint32_t q = 0; q + 1 < positions; ++q) {
        const std::uint32_t a = stage_of_position[q];
        const std::uint32_t b = stage_of_position[q + 1];
        if (a == b)
            continue;
        if (!v_shaped(schedule) && (q + 1) % p == 0)
            hop[q] = boundary[p - 1];  // interleaved: from stage P − 1 back to stage 0
        else
            hop[q] = boundary[std::min(a, b)];
    }
    return hop;
}

Simulation simulate(const SimulationInput& in) {
    check_input(in);
    const std::uint32_t p = in.num_stages;
    const std::uint32_t v = in.num_chunks;
    const std::uint32_t m = in.micro_batches;
    const std::uint32_t positions = p * v;
    // Every stage runs 2·v·M operations, 3·v·M when each backward is split into B and W.
    const std::size_t per_stage =
        (splits_backward(in.schedule) ? 3 : 2) * static_cast<std::size_t>(v) * m;

    Simulation sim;
    sim.schedule = in.schedule;
    sim.num_stages = p;
    sim.num_chunks = v;
    sim.micro_batches = m;
    sim.with_memory = in.with_memory;
    sim.operations.resize(per_stage * p);
    std::vector<std::uint32_t> stage_of_position(positions);
    for (std::uint32_t s = 0; s < p; ++s) {
        const std::vector<StageStep> order = stage_order(in.schedule, p, v, m, s);
        if (order.size() != per_stage)
            throw std::logic_error("a stage's order does not run every operation once");
        for (std::size_t i = 0; i < order.size(); ++i) {
            SimulatedOperation& op = sim.operations[s * per_stage + i];
            op.stage = s;
            op.chunk = order[i].chunk;
            op.micro_batch = order[i].micro_batch;
            op.pass = order[i].pass;
        }
        for (std::uint32_t c = 0; c < v; ++c)
            stage_of_position[pipeline_position(in.schedule, p, s, c)] = s;
    }

    // Advance each stage as far as its data allows; a stage that finishes an operation wakes the
    // stage that waits for it. Every stage runs to its end unless the orders wait on each other
    // in a cycle, which no schedule here does.
    sim.comm_time = boundary_comm_times(in.schedule, p, in.comm_time);
    // hop[q]: the transfer between positions q and q + 1.
    const std::vector<double> hop = position_hop_times(in.schedule, p, v, in.comm_time);
    Timetable done(positions, m);
    std::vector<std::size_t> next(p, 0);
    std::vector<double> free_at(p, 0.0);
    std::vector<std::uint32_t> pending;
    std::vector<char> is_pending(p, 1);
    for (std::uint32_t s = p; s-- > 0;)
        pending.push_back(s);
    const auto wake = [&](std::uint32_t s) {
        if (!is_pending[s]) {
            is_pending[s] = 1;
            pending.push_back(s);
        }
    };
    while (!pending.empty()) {
        const std::uint32_t s = pending.back();
        pending.pop_back();
        is_pending[s] = 0;
        while (next[s] < per_stage) {
            SimulatedOperation& op = sim.operations[s * per_stage + next[s]];
            const std::uint32_t q = pipeline_position(in.schedule, p, s, op.chunk);
            double ready = free_at[s];
            bool waiting = false;
            DataWait waits[2];
            const std::uint32_t n_waits = data_waits(op.pass, q, positions, hop, waits);
            for (std::uint32_t w = 0; w < n_waits; ++w) {
                const double end = done.end(waits[w].pass, waits[w].position, op.micro_batch);
                if (std::isnan(end))
                    waiting = true;
                else
                    ready = std::max(ready, end + waits[w].transfer);
            }
            if (waiting)
                break;
            const ChunkCost& cost = in.costs[s][op.chunk];
            const bool split = splits_backward(in.schedule);
            op.start = ready;
            op.end = ready + (op.pass == Pass::forward  ? cost.forward_time
                              : op.pass == Pass::weight ? cost.weight_time
                              : split                   ? cost.backward_time - cost.weight_time
                                                        : cost.backward_time);
            op.recompute_time = op.pass == Pass::backward ? cost.recompute_time : 0.0;
            free_at[s] = op.end;
            if (op.pass != Pass::weight)
                done.end(op.pass, q, op.micro_batch) = op.end;
            ++next[s];
            if (op.pass == Pass::forward && q + 1 < positions)
                wake(stage_of_position[q + 1]);
            if (op.pass == Pass::backward && q > 0)
                wake(stage_of_position[q - 1]);
        }
    }
    for (std::uint32_t s = 0; s < p; ++s) {
        if (next[s] < per_stage) {
            const SimulatedOperation& op = sim.operations[s * per_stage + next[s]];
            throw std::logic_error(fmt::format(
                "{} order deadlocks: stage {} waits forever at its {} of micro-batch {} chunk {}",
                schedule_name(in.schedule), s, op.pass == Pass::forward ? "forward" : "backward",
                op.micro_batch, op.chunk));
        }
    }

    sim.stages.resize(p);
    for (std::uint32_t s = 0; s < p; ++s)
        sim.makespan = std::max(sim.makespan, free_at[s]);
    double idle = 0.0;
    for (std::uint32_t s = 0; s < p; ++s) {
        StageSimulation& st = sim.stages[s];
        const SimulatedOperation* first = &sim.operations[s * per_stage];
        std::vector<StageStep> order(per_stage);
        for (std::size_t i = 0; i < per_stage; ++i) {
            st.busy_time += first[i].end - first[i].start;
            order[i] = {first[i].chunk, first[i].micro_batch, first[i].pass};
        }
        st.idle_time = sim.makespan - st.busy_time;
        idle += st.idle_time;
        st.peak_in_flight = peak_in_flight(order, v);
        if (in.with_memory)
            add_memory_curve(in, s, first, per_stage, st);
    }
    sim.bubble_fraction = sim.makespan > 0.0 ? idle / (p * sim.makespan) : 0.0;
    return sim;
}

}  // namespace ppb
