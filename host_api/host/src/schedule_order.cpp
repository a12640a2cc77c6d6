// The per-stage orders of the four schedules (host_api/docs/design.md, "In-flight micro-batch
// counts per schedule"), written from the public descriptions of Megatron-LM's interleaved
// schedule, MindFormers' pipeline simulator and DeepSeek's DualPipe-V.
#include <ppb/errors.hpp>
#include <ppb/schedule_order.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ppb {
namespace {

// (micro-batch, chunk) in the order a stage runs its forwards under an interleaved schedule:
// micro-batches go in groups of P, each group through chunk 0, then chunk 1, ..., then the next
// group. The backwards run the same table with the chunks mirrored (v − 1 − c).
struct TableEntry {
    std::uint32_t micro_batch;
    std::uint32_t chunk;
};

void add_group(std::vector<TableEntry>& table, std::uint32_t first, std::uint32_t end,
               std::uint32_t num_chunks) {
    for (std::uint32_t c = 0; c < num_chunks; ++c) {
        for (std::uint32_t m = first; m < end; ++m)
            table.push_back({m, c});
    }
}

// Groups of P micro-batches from micro-batch 0 (M is a multiple of P).
std::vector<TableEntry> interleaved_table(std::uint32_t p, std::uint32_t v, std::uint32_t m) {
    std::vector<TableEntry> table;
    table.reserve(static_cast<std::size_t>(m) * v);
    for (std::uint32_t first = 0; first < m; first += p)
        add_group(table, first, std::min(first + p, m), v);
    return table;
}

// warm-up forwards, then one forward and one backward in turn, then the remaining backwards.
std::vector<StageStep> one_forward_one_backward(const std::vector<TableEntry>& table,
                                                std::uint32_t num_chunks, std::size_t warm_up) {
    const std::size_t total = table.size();
    warm_up = std::min(warm_up, total);
    const auto forward = [&](std::size_t k) {
        return StageStep{table[k].chunk, table[k].micro_batch, Pass::forward};
    };
    const auto backward = [&](std::size_t k) {
        return StageStep{num_chunks - 1 - table[k].chunk, table[k].micro_batch, Pass::backward};
    };
    std::vector<StageStep> order;
    order.reserve(2 * total);
    for (std::size_t k = 0; k < warm_up; ++k)
        order.push_back(forward(k));
    for (std::size_t k = 0; k + warm_up < total; ++k) {
        order.push_back(forward(k + warm_up));
        order.push_back(backward(k));
    }
    for (std::size_t k = total - warm_up; k < total; ++k)
        order.push_back(backward(k));
    return order;
}

// DualPipe-V (DeepSeek, dualpipev.py): chunk 0 runs down the stages, chunk 1 back up. The order
// of a stage is a fixed pattern of (pass, chunk) in eight steps; micro-batches are taken in
// order per (pass, chunk). An overlapped forward-and-backward pair appears as its forward then
// its backward. The zero-bubble split of a backward into its input and weight gradients is not
// modelled: each backward is whole, where its input-gradient part runs.
std::vector<StageStep> dualpipe_v(std::uint32_t p, std::uint32_t m, std::uint32_t s) {
    std::vector<StageStep> order;
    order.reserve(4 * static_cast<std::size_t>(m));
    std::uint32_t next[2][2] = {};  // [pass][chunk] → next micro-batch
    const auto add = [&](Pass pass, std::uint32_t chunk) {
        order.push_back({chunk, next[static_cast<int>(pass)][chunk]++, pass});
    };
    constexpr Pass f = Pass::forward;
    constexpr Pass b = Pass::backward;
    const std::uint32_t below = p - s - 1;         // stages after this one
    for (std::uint32_t i = 0; i < 2 * below; ++i)  // 1: forwards of chunk 0
        add(f, 0);
    for (std::uint32_t i = 0; i < s + 1; ++i) {  // 2: chunk 0 and chunk 1 forwards in turn
        add(f, 0);
        add(f, 1);
    }
    for (std::uint32_t i = 0; i < below; ++i) {  // 3: backward then forward of chunk 1
        add(b, 1);
        add(f, 1);
    }
    for (std::uint32_t i = 0; i < m - 2 * p + s + 1; ++i) {  // 4: the steady state, two pairs
        add(f, 0);
        add(b, 1);
        add(f, 1);
        add(b, 0);
    }
    for (std::uint32_t i = 0; i < below; ++i) {  // 5: chunk 1 backward, then a pair
        add(b, 1);
        add(f, 1);
        add(b, 0);
    }
    for (std::uint32_t i = 0; i < s + 1; ++i) {  // 6: backwards of both chunks in turn
        add(b, 1);
        add(b, 0);
    }
    for (std::uint32_t i = 0; i < below; ++i)  // 7: the last backwards of chunk 0
        add(b, 0);
    return order;
}

// ZB-H1 (PyTorch's ScheduleInterleavedZeroBubble with one stage per rank, _get_1f1b_rank_ops
// with enable_zero_bubble, pytorch/pytorch torch/distributed/pipelining/schedules.py at
// 00722e648b740f91d0e71494baa17891749fd291): 1F1B's P − s − 1 warm-up forwards, then per
// micro-batch k a forward (while any is left) and the input gradient B of k, and once k ≥ s the
// oldest pending weight gradient W; the remaining W at the end. So stage s defers s weight passes.
std::vector<StageStep> zb_h1(std::uint32_t p, std::uint32_t m, std::uint32_t s) {
    std::vector<StageStep> order;
    order.reserve(3 * static_cast<std::size_t>(m));
    const std::uint32_t warm_up = std::min(p - s - 1, m);
    std::uint32_t weights = 0;
    for (std::uint32_t k = 0; k < warm_up; ++k)
        order.push_back({0, k, Pass::forward});
    for (std::uint32_t k = 0; k < m; ++k) {
        if (k + warm_up < m)
            order.push_back({0, k + warm_up, Pass::forward});
        order.push_back({0, k, Pass::backward});
        if (k >= s)
            order.push_back({0, weights++, Pass::weight});
    }
    while (weights < m)
        order.push_back({0, weights++, Pass::weight});
    return order;
}

// ZB-V (PyTorch's ScheduleZBVZeroBubble._calculate_single_rank_operations, same file and
// commit): chunk 0 down the stages, chunk 1 back up. Built for max(2P − 1, M) micro-batches, the
// operations of micro-batches ≥ M then dropped, as PyTorch does.
std::vector<StageStep> zb_v(std::uint32_t p, std::uint32_t m, std::uint32_t r) {
    const std::uint32_t n = std::max(2 * p - 1, m);
    std::vector<StageStep> order;
    order.reserve(6 * static_cast<std::size_t>(n));
    std::uint32_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    const auto add = [&](Pass pass, std::uint32_t chunk, std::uint32_t micro_batch) {
        order.push_back({chunk, micro_batch, pass});
    };
    for (std::uint32_t i = 0; i < 2 * (p - r) - 1; ++i)
        add(Pass::forward, 0, f0++);
    for (std::uint32_t i = 0; i < r; ++i) {
        add(Pass::forward, 1, f1++);
        add(Pass::forward, 0, f0++);
    }
    for (std::uint32_t i = 0; i < p - r; ++i) {
        add(Pass::forward, 1, f1++);
        add(Pass::backward, 1, b1);
        add(Pass::weight, 1, b1++);
    }
    while (f1 < f0 || f0 < n) {
        if (f0 < n)
            add(Pass::forward, 0, f0++);
        add(Pass::backward, 0, b0);
        add(Pass::weight, 0, b0++);
        add(Pass::forward, 1, f1++);
        add(Pass::backward, 1, b1);
        add(Pass::weight, 1, b1++);
    }
    std::uint32_t w0 = b0, w1 = b1;
    for (std::uint32_t i = 0; i < r; ++i) {
        add(Pass::backward, 0, b0++);
        add(Pass::backward, 1, b1++);
    }
    for (std::uint32_t i = 0; i < p - r; ++i) {
        add(Pass::backward, 0, b0++);
        add(Pass::weight, 0, w0++);
    }
    while (w1 < b1)
        add(Pass::weight, 1, w1++);
    while (w0 < b0)
        add(Pass::weight, 0, w0++);
    std::erase_if(order, [&](const StageStep& step) { return step.micro_batch >= m; });
    return order;
}

}  // namespace

std::string schedule_shape_problem(Schedule schedule, std::uint32_t num_stages,
                                   std::uint32_t num_chunks, std::uint32_t micro_batches) {
    const std::string_view name = schedule_name(schedule);
    if (num_stages == 0)
        return "a pipeline has at least one stage, got 0";
    switch (schedule) {
        case Schedule::one_f_one_b:
            if (num_chunks != 1)
                return fmt::format("1f1b runs one chunk per stage, got {}", num_chunks);
            break;
        case Schedule::combined_1f1b:
            if (num_chunks == 0 || (num_chunks == 1 && num_stages > 1)) {
                return fmt::format(
                    "combined-1f1b runs at least two chunks per stage (one only without a "
                    "pipeline: Megatron-LM overlaps the expert all-to-all of a pipeline only in "
                    "its interleaved schedule), got {} with {} stages",
                    num_chunks, num_stages);
            }
            break;
        case Schedule::interleaved:
        case Schedule::interleaved_less_memory:
            if (num_chunks < 2) {
                return fmt::format("{} runs at least two chunks per stage, got {}", name,
                                   num_chunks);
            }
            break;
        case Schedule::dualpipe_v:
            if (num_chunks != 2)
                return fmt::format("dualpipe-v runs two chunks per stage, got {}", num_chunks);
            break;
        case Schedule::zb_h1:
            if (num_chunks != 1)
                return fmt::format("zb-h1 runs one chunk per stage, got {}", num_chunks);
            break;
        case Schedule::zb_v:
            if (num_chunks != 2)
                return fmt::format("zb-v runs two chunks per stage, got {}", num_chunks);
            break;
    }
    const std::uint32_t p = num_stages;
    const std::uint32_t m = micro_batches;
    switch (schedule) {
        case Schedule::one_f_one_b:
        case Schedule::zb_h1:
        case Schedule::zb_v:
            if (m == 0)
                return fmt::format("{} needs at least one micro-batch, got 0", name);
            break;
        case Schedule::interleaved:
        case Schedule::interleaved_less_memory:
        case Schedule::combined_1f1b:
            // Micro-batches go through the chunks in groups of P. Megatron-LM's newer releases and
            // MindFormers also run a shorter or longer group for M mod P left-over micro-batches;
            // those orders are not modelled (Megatron's shorter last group makes the stages wait
            // on each other in a cycle under the execution model of ppb/simulator.hpp).
            if (m < p || m % p != 0) {
                return fmt::format(
                    "{} needs a multiple of the {} stages as micro-batches ({}, {}, {}, ...: "
                    "groups of {} go through the chunks in turn), got {}",
                    name, p, p, 2 * p, 3 * p, p, m);
            }
            break;
        case Schedule::dualpipe_v:
            if (m < 2 * p) {
                return fmt::format(
                    "dualpipe-v needs at least twice as many micro-batches as stages (2 x {} = "
                    "{}), got {}",
                    p, 2 * p, m);
            }
            break;
    }
    return {};
}

std::uint32_t pipeline_position(Schedule schedule, std::uint32_t num_stages, std::uint32_t stage,
                                std::uint32_t chunk) {
    if (v_shaped(schedule))
        return chunk == 0 ? stage : 2 * num_stages - 1 - stage;
    return chunk * num_stages + stage;
}

std::vector<StageStep> stage_order(Schedule schedule, std::uint32_t num_stages,
                                   std::uint32_t num_chunks, std::uint32_t micro_batches,
                                   std::uint32_t stage) {
    if (auto problem = schedule_shape_problem(schedule, num_stages, num_chunks, micro_batches);
        !problem.empty()) {
        throw InputError(problem);
    }
    if (stage >= num_stages) {
        throw InputError(
            fmt::format("stage {} is not a stage of a {}-stage pipeline", stage, num_stages));
    }
    const std::uint32_t p = num_stages;
    const std::uint32_t v = num_chunks;
    const std::uint32_t s = stage;
    switch (schedule) {
        case Schedule::one_f_one_b:
            // Each stage runs P − s − 1 forwards before its first backward.
            return one_forward_one_backward(interleaved_table(p, 1, micro_batches), 1, p - s - 1);
        case Schedule::interleaved:
        case Schedule::combined_1f1b:
            // Megatron-LM: 2(P − s − 1) + (v − 1)·P warm-up forwards. With
            // --overlap-moe-expert-parallel-comm one more, then pairs that run a backward beside
            // the next forward, the backward first (combined_1f1b.py: "microbatch backward + next
            // microbatch forward"): the extra forward is the first pair's, and the order is
            // interleaved's (1F1B's on one stage).
            return one_forward_one_backward(
                interleaved_table(p, v, micro_batches), v,
                2 * static_cast<std::size_t>(p - s - 1) + static_cast<std::size_t>(v - 1) * p);
        case Schedule::interleaved_less_memory:
            // MindFormers' less-memory variant: v·P − s − 1 warm-up forwards, the fewest that
            // let the last stage's chunk v − 1 start its first backward straight away.
            return one_forward_one_backward(interleaved_table(p, v, micro_batches), v,
                                            static_cast<std::size_t>(v) * p - s - 1);
        case Schedule::dualpipe_v:
            return dualpipe_v(p, micro_batches, s);
        case Schedule::zb_h1:
            return zb_h1(p, micro_batches, s);
        case Schedule::zb_v:
            return zb_v(p, micro_batches, s);
    }
    return {};
}

Pass releasing_pass(const std::vector<StageStep>& order) {
    const bool split = std::any_of(order.begin(), order.end(),
                                   [](const StageStep& step) { return step.pass == Pass::weight; });
    return split ? Pass::weight : Pass::backward;
}

std::vector<std::uint32_t> peak_in_flight(const std::vector<StageStep>& order,
                                          std::uint32_t num_chunks) {
    std::vector<std::uint32_t> held(num_chunks, 0);
    std::vector<std::uint32_t> peak(num_chunks, 0);
    const Pass release = releasing_pass(order);
    for (const StageStep& step : order) {
        std::uint32_t& h = held.at(step.chunk);
        if (step.pass == Pass::forward) {
            ++h;
            peak[step.chunk] = std::max(peak[step.chunk], h);
        } else if (step.pass == release) {
            --h;
        }
    }
    return peak;
}

}  // namespace ppb
